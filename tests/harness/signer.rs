//! A Web Bot Auth test signer and its key directory: an Ed25519 key that signs requests by hand
//! (RFC 9421's signature base, written here independently of the verifier), an HTTPS server of
//! its JWKS on loopback with a certificate from a test CA, and a server that accepts
//! connections and never answers (a hanging directory).

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

pub const MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";

/// A signer: an Ed25519 key, its JWK and RFC 7638 thumbprint.
pub struct Signer {
    key: SigningKey,
}

impl Signer {
    pub fn new(seed: u8) -> Signer {
        Signer {
            key: SigningKey::from_bytes(&[seed; 32]),
        }
    }

    fn x(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.key.verifying_key().to_bytes())
    }

    pub fn keyid(&self) -> String {
        let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, self.x());
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }

    pub fn jwks(&self) -> String {
        format!(
            r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","kid":"{}","x":"{}"}}]}}"#,
            self.keyid(),
            self.x()
        )
    }
}

pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

static NONCES: AtomicU64 = AtomicU64::new(0);

/// What to sign, and how.
pub struct Signing<'a> {
    pub signer: &'a Signer,
    /// The keyid sent (normally the signer's own).
    pub keyid: String,
    /// The @authority signed.
    pub authority: String,
    /// The directory URL of the `Signature-Agent` member.
    pub agent: String,
    /// Parameters after the member's string (`;type=directory`), signed with it.
    pub agent_params: String,
    pub created: i64,
    pub expires: i64,
    pub tag: &'a str,
    /// A fresh one by default; `None` signs without a nonce.
    pub nonce: Option<String>,
    /// Header fields covered besides `@authority` and `signature-agent` (pay per crawl's
    /// `crawler-exact-price`), sent with the signature headers.
    pub covered: Vec<(&'static str, String)>,
}

impl<'a> Signing<'a> {
    pub fn new(signer: &'a Signer, authority: &str, agent: &str) -> Signing<'a> {
        Signing {
            signer,
            keyid: signer.keyid(),
            authority: authority.into(),
            agent: agent.into(),
            agent_params: String::new(),
            created: now() - 5,
            expires: now() + 300,
            tag: "web-bot-auth",
            nonce: Some(format!("nonce-{}", NONCES.fetch_add(1, Ordering::Relaxed))),
            covered: Vec::new(),
        }
    }

    /// Covers the header `name` with `value` too (and sends it).
    pub fn covering(mut self, name: &'static str, value: &str) -> Signing<'a> {
        self.covered.push((name, value.to_owned()));
        self
    }

    /// The three headers, in the dictionary form of `Signature-Agent`. The member covered is
    /// serialized with its parameters, as RFC 9421 §2.1.2 has it.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let nonce = self
            .nonce
            .as_ref()
            .map_or(String::new(), |n| format!(r#";nonce="{n}""#));
        let extra: String = self
            .covered
            .iter()
            .map(|(name, _)| format!(" \"{name}\""))
            .collect();
        let params = format!(
            r#"("@authority" "signature-agent";key="sig1"{extra});created={};expires={};keyid="{}";alg="ed25519"{nonce};tag="{}""#,
            self.created, self.expires, self.keyid, self.tag
        );
        let member = format!("\"{}\"{}", self.agent, self.agent_params);
        let extra_lines: String = self
            .covered
            .iter()
            .map(|(name, value)| format!("\"{name}\": {value}\n"))
            .collect();
        let base = format!(
            "\"@authority\": {}\n\"signature-agent\";key=\"sig1\": {member}\n{extra_lines}\"@signature-params\": {params}",
            self.authority
        );
        let signature = STANDARD.encode(self.signer.key.sign(base.as_bytes()).to_bytes());
        let mut headers = vec![
            ("signature-input", format!("sig1={params}")),
            ("signature", format!("sig1=:{signature}:")),
            ("signature-agent", format!("sig1={member}")),
        ];
        headers.extend(self.covered.iter().cloned());
        headers
    }
}

static CAS: AtomicU64 = AtomicU64::new(0);

/// A test CA's certificate for `localhost`, and an acceptor serving it. Each CA has a name of
/// its own, so that a client trusting several finds the right one.
fn tls() -> (String, tokio_native_tls::TlsAcceptor) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(
        DnType::CommonName,
        format!("crawlgate test CA {}", CAS.fetch_add(1, Ordering::Relaxed)),
    );
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let identity = tokio_native_tls::native_tls::Identity::from_pkcs8(
        leaf.pem().as_bytes(),
        leaf_key.serialize_pem().as_bytes(),
    )
    .unwrap();
    let acceptor = tokio_native_tls::TlsAcceptor::from(
        tokio_native_tls::native_tls::TlsAcceptor::builder(identity)
            .build()
            .unwrap(),
    );
    (ca_cert.pem(), acceptor)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// An HTTPS server of one signer's key directory on loopback: the well-known path answers the
/// JWKS, every other path 404; it counts what it was asked, by path.
pub struct Directory {
    pub port: u16,
    pub ca_pem: String,
    pub up: Arc<AtomicBool>,
    pub served: Arc<AtomicU64>,
    asked: Arc<Mutex<HashMap<String, u64>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Directory {
    pub fn start(jwks: String) -> Directory {
        let (ca_pem, acceptor) = tls();
        let runtime = runtime();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let served = Arc::new(AtomicU64::new(0));
        let asked = Arc::new(Mutex::new(HashMap::new()));
        let (up_flag, count, asked_by_path) = (up.clone(), served.clone(), asked.clone());
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, jwks, up, count, asked) = (
                    acceptor.clone(),
                    jwks.clone(),
                    up_flag.clone(),
                    count.clone(),
                    asked_by_path.clone(),
                );
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                        let (jwks, up, count, asked) =
                            (jwks.clone(), up.clone(), count.clone(), asked.clone());
                        async move {
                            let path = request.uri().path().to_owned();
                            *asked.lock().unwrap().entry(path.clone()).or_insert(0) += 1;
                            let response = if !up.load(Ordering::SeqCst) {
                                Response::builder()
                                    .status(503)
                                    .body(Full::new(Bytes::new()))
                            } else if path == "/.well-known/http-message-signatures-directory" {
                                count.fetch_add(1, Ordering::SeqCst);
                                Response::builder()
                                    .header("content-type", MEDIA_TYPE)
                                    .body(Full::new(Bytes::from(jwks)))
                            } else {
                                Response::builder()
                                    .status(404)
                                    .body(Full::new(Bytes::new()))
                            };
                            Ok::<_, Infallible>(response.unwrap())
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Directory {
            port,
            ca_pem,
            up,
            served,
            asked,
            _runtime: runtime,
        }
    }

    pub fn url(&self) -> String {
        format!("https://localhost:{}", self.port)
    }

    pub fn label(&self) -> String {
        format!("localhost:{}", self.port)
    }

    /// How many times each path was asked for.
    pub fn asked(&self) -> HashMap<String, u64> {
        self.asked.lock().unwrap().clone()
    }
}

/// A server that accepts TCP connections and never answers, as a directory that hangs does;
/// it counts the connections open now and the most open at once.
pub struct Hanging {
    pub port: u16,
    open: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    _runtime: tokio::runtime::Runtime,
}

impl Hanging {
    pub fn start() -> Hanging {
        let runtime = runtime();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let (open, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (open_now, most_at_once) = (open.clone(), most.clone());
        runtime.spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    continue;
                };
                let now = open_now.fetch_add(1, Ordering::SeqCst) + 1;
                most_at_once.fetch_max(now, Ordering::SeqCst);
                let open = open_now.clone();
                tokio::spawn(async move {
                    // Read until the peer gives up; never write.
                    let mut buffer = [0u8; 1024];
                    use tokio::io::AsyncReadExt;
                    while matches!(stream.read(&mut buffer).await, Ok(n) if n > 0) {}
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Hanging {
            port,
            open,
            most,
            _runtime: runtime,
        }
    }

    /// A directory URL on it (`https://localhost:PORT/NAME`).
    pub fn url(&self, name: &str) -> String {
        format!("https://localhost:{}/{name}", self.port)
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    pub fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }
}

/// Waits until `proxy` holds the keys of `directory` (its `crawlgate_signature_keys` series).
pub fn wait_for_keys(proxy: &super::Proxy, directory: &Directory) {
    let series = format!(
        r#"crawlgate_signature_keys{{directory="{}"}}"#,
        directory.label()
    );
    super::wait_for("the directory's keys", || {
        (proxy.metric(&series) == Some(1.0)).then_some(())
    });
}
