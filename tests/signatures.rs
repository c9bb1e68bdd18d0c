//! Web Bot Auth through the real proxy on loopback: a test signer with its own Ed25519 key signs
//! requests by hand (RFC 9421's signature base, written here independently of the verifier);
//! its key directory is served over HTTPS by a server this test starts, with a certificate from
//! a test CA the configuration trusts. Valid, expired, future-dated, wrong tag, wrong key,
//! tampered authority, replayed nonce, the directory down (the keys held, and those kept in the
//! state directory across a restart, still verify), and a loopback directory refused unless
//! `allow_private` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ed25519_dalek::{Signer as _, SigningKey};
use harness::*;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

const MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";

/// A signer: an Ed25519 key, its JWK and RFC 7638 thumbprint.
struct Signer {
    key: SigningKey,
}

impl Signer {
    fn new(seed: u8) -> Signer {
        Signer {
            key: SigningKey::from_bytes(&[seed; 32]),
        }
    }

    fn x(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.key.verifying_key().to_bytes())
    }

    fn keyid(&self) -> String {
        let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#, self.x());
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }

    fn jwks(&self) -> String {
        format!(
            r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","kid":"{}","x":"{}"}}]}}"#,
            self.keyid(),
            self.x()
        )
    }
}

/// What to sign, and how.
struct Signing<'a> {
    signer: &'a Signer,
    /// The keyid sent (normally the signer's own).
    keyid: String,
    /// The @authority signed.
    authority: String,
    agent: String,
    created: i64,
    expires: i64,
    tag: &'a str,
    nonce: String,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A change to a valid signing that makes it invalid.
type Change = fn(&mut Signing);

static NONCES: AtomicU64 = AtomicU64::new(0);

impl<'a> Signing<'a> {
    fn new(signer: &'a Signer, authority: &str, agent: &str) -> Signing<'a> {
        Signing {
            signer,
            keyid: signer.keyid(),
            authority: authority.into(),
            agent: agent.into(),
            created: now() - 5,
            expires: now() + 300,
            tag: "web-bot-auth",
            nonce: format!("nonce-{}", NONCES.fetch_add(1, Ordering::Relaxed)),
        }
    }

    /// The three headers, in the dictionary form of `Signature-Agent`.
    fn headers(&self) -> Vec<(&'static str, String)> {
        let params = format!(
            r#"("@authority" "signature-agent";key="sig1");created={};expires={};keyid="{}";alg="ed25519";nonce="{}";tag="{}""#,
            self.created, self.expires, self.keyid, self.nonce, self.tag
        );
        let agent = format!("\"{}\"", self.agent);
        let base = format!(
            "\"@authority\": {}\n\"signature-agent\";key=\"sig1\": {agent}\n\"@signature-params\": {params}",
            self.authority
        );
        let signature = STANDARD.encode(self.signer.key.sign(base.as_bytes()).to_bytes());
        vec![
            ("signature-input", format!("sig1={params}")),
            ("signature", format!("sig1=:{signature}:")),
            ("signature-agent", format!("sig1={agent}")),
        ]
    }
}

/// A test CA and an HTTPS server of one signer's key directory on loopback.
struct Directory {
    port: u16,
    ca_pem: String,
    up: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
    _runtime: tokio::runtime::Runtime,
}

impl Directory {
    fn start(jwks: String) -> Directory {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "crawlgate test CA");
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
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let served = Arc::new(AtomicU64::new(0));
        let (up_flag, count) = (up.clone(), served.clone());
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, jwks, up, count) = (
                    acceptor.clone(),
                    jwks.clone(),
                    up_flag.clone(),
                    count.clone(),
                );
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                        let (jwks, up, count) = (jwks.clone(), up.clone(), count.clone());
                        async move {
                            let path = request.uri().path();
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
            ca_pem: ca_cert.pem(),
            up,
            served,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        format!("https://localhost:{}", self.port)
    }

    fn label(&self) -> String {
        format!("localhost:{}", self.port)
    }
}

const ROBOTS: &str =
    "User-agent: ChatGPT-User\\nDisallow: /agent-no/\\n\\nUser-agent: *\\nDisallow: /private/\\n";

fn config(origin: &Origin, directory: &Directory, state_dir: &str, allow_private: bool) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
access_log: "{{dir}}/access.jsonl"
pingora: {{threads: 1}}
state_dir: "{state_dir}"
verification:
  signatures:
    allow_private: {allow_private}
    ca_file: ca.pem
    refresh: 1s
    directories:
      - url: "{}"
        bot: ChatGPT-User
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "{ROBOTS}"}}
    action: tag
"#,
        directory.url(),
        origin.addr
    )
}

/// A GET with a browser's User-Agent and these headers: status, body.
fn send(proxy: &Proxy, path: &str, headers: &[(&'static str, String)]) -> (u16, String) {
    let mut request = client().get(proxy.url(path)).header("user-agent", FIREFOX);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    (status, response.text().unwrap())
}

fn authority(proxy: &Proxy) -> String {
    format!("127.0.0.1:{}", proxy.port)
}

fn wait_for_keys(proxy: &Proxy, directory: &Directory) {
    let series = format!(
        r#"crawlgate_signature_keys{{directory="{}"}}"#,
        directory.label()
    );
    wait_for("the directory's keys", || {
        (proxy.metric(&series) == Some(1.0)).then_some(())
    });
}

fn signatures(proxy: &Proxy, result: &str) -> f64 {
    let series = format!(
        r#"crawlgate_signatures_total{{bot="ChatGPT-User",result="{result}",site="site"}}"#
    );
    proxy.metric(&series).unwrap_or(0.0)
}

#[test]
fn signed_requests_are_verified_and_bad_signatures_refused() {
    let origin = Origin::start();
    let signer = Signer::new(7);
    let directory = Directory::start(signer.jwks());
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().display().to_string();
    let proxy = ProxyBuilder::new(&config(&origin, &directory, &state_dir, true))
        .file("ca.pem", &directory.ca_pem)
        .start();
    wait_for_keys(&proxy, &directory);
    let authority = authority(&proxy);

    // Valid: a browser's User-Agent, but the signature makes it ChatGPT-User, judged by its
    // group (tagged, as the site's action is tag) and tagged as verified by signature. The
    // signature headers reach the origin unchanged.
    let valid = Signing::new(&signer, &authority, &directory.url()).headers();
    let (status, _) = send(&proxy, "/agent-no/page", &valid);
    assert_eq!(status, 200, "{}", proxy.logs());
    let seen = origin.last("/agent-no/page").unwrap();
    assert_eq!(
        seen.headers.get("x-crawlgate-bot").map(String::as_str),
        Some("ChatGPT-User")
    );
    assert_eq!(
        seen.headers.get("x-crawlgate-verdict").map(String::as_str),
        Some("disallowed")
    );
    assert_eq!(
        seen.headers.get("x-crawlgate-verified").map(String::as_str),
        Some("verified")
    );
    assert_eq!(
        seen.headers
            .get("x-crawlgate-verified-by")
            .map(String::as_str),
        Some("signature")
    );
    for (name, value) in &valid {
        assert_eq!(
            seen.headers.get(*name),
            Some(value),
            "{name} passes unchanged"
        );
    }
    assert_eq!(signatures(&proxy, "verified"), 1.0);
    let by_signature = r#"crawlgate_verifications_total{bot="ChatGPT-User",method="signature",result="verified",site="site"}"#;
    assert_eq!(proxy.metric(by_signature), Some(1.0));
    // Unsigned, the same browser is a person: not judged at all.
    let (status, _) = send(&proxy, "/agent-no/page2", &[]);
    assert_eq!(status, 200);
    assert!(!origin
        .last("/agent-no/page2")
        .unwrap()
        .headers
        .contains_key("x-crawlgate-bot"));

    // Replayed: the same signature again is refused with 429.
    let (status, body) = send(&proxy, "/agent-no/page", &valid);
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("replayed"), "{body}");

    // Bad signatures on a request naming ChatGPT-User's directory are a false claim: spoofed,
    // blocked (on_spoofed's default), with the reason.
    let cases: [(&str, Change); 4] = [
        ("expired", |s: &mut Signing| {
            s.created = now() - 7200;
            s.expires = now() - 3600;
        }),
        ("in the future", |s: &mut Signing| {
            s.created = now() + 3600;
            s.expires = now() + 7200;
        }),
        ("does not verify", |s: &mut Signing| {
            s.authority = "example.org".into()
        }),
        ("24 hours", |s: &mut Signing| {
            s.expires = s.created + 24 * 3600 + 1
        }),
    ];
    for (why, change) in cases {
        let mut signing = Signing::new(&signer, &authority, &directory.url());
        change(&mut signing);
        let (status, body) = send(&proxy, "/page", &signing.headers());
        assert_eq!(status, 403, "{why}: {body}");
        assert!(body.contains(why), "{why}: {body}");
        assert!(body.contains("ChatGPT-User"), "{body}");
    }
    // A key the directory does not hold (its own thumbprint as keyid, or the real keyid).
    let stranger = Signer::new(9);
    let (status, body) = send(
        &proxy,
        "/page",
        &Signing::new(&stranger, &authority, &directory.url()).headers(),
    );
    assert_eq!(status, 403);
    assert!(body.contains("not in the directory's keys"), "{body}");
    let mut impostor = Signing::new(&stranger, &authority, &directory.url());
    impostor.keyid = signer.keyid();
    let (status, body) = send(&proxy, "/page", &impostor.headers());
    assert_eq!(status, 403);
    assert!(body.contains("does not verify"), "{body}");
    assert_eq!(signatures(&proxy, "invalid"), 6.0);

    // Another tag is not a Web Bot Auth signature: not judged (a person here).
    let mut other = Signing::new(&signer, &authority, &directory.url());
    other.tag = "something-else";
    let (status, _) = send(&proxy, "/agent-no/other-tag", &other.headers());
    assert_eq!(status, 200);
    assert!(!origin
        .last("/agent-no/other-tag")
        .unwrap()
        .headers
        .contains_key("x-crawlgate-bot"));

    // The access log says how the crawler was verified.
    let log = wait_for("the access log", || {
        let text = std::fs::read_to_string(proxy.path("access.jsonl")).ok()?;
        text.contains("\"verified_by\":\"signature\"")
            .then_some(text)
    });
    assert!(log.contains("\"verified\":\"verified\""), "{log}");

    // The directory goes down: fetches fail (refresh is 1s), the keys held still verify.
    directory.up.store(false, Ordering::SeqCst);
    let failed = format!(
        r#"crawlgate_signature_directory_fetches_total{{directory="{}",result="error"}}"#,
        directory.label()
    );
    wait_for("a failed directory fetch", || {
        proxy.metric(&failed).filter(|n| *n >= 1.0)
    });
    let (status, _) = send(
        &proxy,
        "/agent-no/down",
        &Signing::new(&signer, &authority, &directory.url()).headers(),
    );
    assert_eq!(status, 200);
    assert_eq!(
        origin
            .last("/agent-no/down")
            .unwrap()
            .headers
            .get("x-crawlgate-verified-by")
            .map(String::as_str),
        Some("signature")
    );
    drop(proxy);

    // After a restart with the directory still down, the keys kept in the state directory
    // verify.
    let proxy = ProxyBuilder::new(&config(&origin, &directory, &state_dir, true))
        .file("ca.pem", &directory.ca_pem)
        .start();
    let authority = format!("127.0.0.1:{}", proxy.port);
    let (status, _) = send(
        &proxy,
        "/agent-no/restarted",
        &Signing::new(&signer, &authority, &directory.url()).headers(),
    );
    assert_eq!(status, 200, "{}", proxy.logs());
    assert_eq!(
        origin
            .last("/agent-no/restarted")
            .unwrap()
            .headers
            .get("x-crawlgate-verified")
            .map(String::as_str),
        Some("verified"),
        "{}",
        proxy.logs()
    );
}

#[test]
fn a_loopback_directory_is_refused_unless_allowed() {
    let origin = Origin::start();
    let signer = Signer::new(11);
    let directory = Directory::start(signer.jwks());
    let state = tempfile::tempdir().unwrap();
    let proxy = ProxyBuilder::new(&config(
        &origin,
        &directory,
        &state.path().display().to_string(),
        false,
    ))
    .file("ca.pem", &directory.ca_pem)
    .start();
    let refused = format!(
        r#"crawlgate_signature_directory_fetches_total{{directory="{}",result="refused"}}"#,
        directory.label()
    );
    wait_for("a refused directory fetch", || {
        proxy.metric(&refused).filter(|n| *n >= 1.0)
    });
    assert_eq!(
        directory.served.load(Ordering::SeqCst),
        0,
        "nothing was fetched"
    );
    assert!(proxy.logs().contains("allow_private"), "{}", proxy.logs());
    // Its signatures cannot be checked: the browser stays a person, not ChatGPT-User.
    let headers = Signing::new(&signer, &authority(&proxy), &directory.url()).headers();
    let (status, _) = send(&proxy, "/agent-no/x", &headers);
    assert_eq!(status, 200);
    assert!(!origin
        .last("/agent-no/x")
        .unwrap()
        .headers
        .contains_key("x-crawlgate-bot"));
}

#[test]
fn explain_checks_a_signature_with_the_keys_of_a_jwks_file() {
    let signer = Signer::new(13);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("signer.json"), signer.jwks()).unwrap();
    let config = dir.path().join("crawlgate.yaml");
    std::fs::write(
        &config,
        format!(
            r#"listen: ["127.0.0.1:1"]
verification:
  signatures:
    directories:
      - url: "https://agent.example"
        bot: ChatGPT-User
        jwks: signer.json
sites:
  - name: site
    upstream: "127.0.0.1:9"
    robots: {{inline: "{ROBOTS}"}}
"#
        ),
    )
    .unwrap();
    // explain, for a browser's User-Agent on a signed request.
    let explain_signed = |signing: Signing| {
        let mut args = vec![
            "--ua".to_owned(),
            FIREFOX.to_owned(),
            "--ip".to_owned(),
            "192.0.2.1".to_owned(),
            "--no-dns".to_owned(),
            "https://site.example/agent-no/x".to_owned(),
        ];
        for (name, value) in &signing.headers() {
            args.push("--header".into());
            args.push(format!("{name}: {value}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        explain(&config, &args)
    };
    let (code, out) = explain_signed(Signing::new(
        &signer,
        "site.example",
        "https://agent.example",
    ));
    assert!(
        out.contains("verification:  verified by signature"),
        "{code}: {out}"
    );
    assert!(out.contains("ChatGPT-User"), "{out}");
    // Tampered (signed for another host), it is a false claim to be ChatGPT-User.
    let (_, out) = explain_signed(Signing::new(
        &signer,
        "other.example",
        "https://agent.example",
    ));
    assert!(out.contains("verification:  spoofed by signature"), "{out}");
}

#[test]
fn a_jwks_file_replaced_is_read_again_and_a_broken_one_keeps_the_keys() {
    let origin = Origin::start();
    let (old, new) = (Signer::new(21), Signer::new(22));
    let config = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
verification:
  signatures:
    directories:
      - url: "https://agent.example"
        bot: ChatGPT-User
        jwks: signer.json
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "{ROBOTS}"}}
    action: tag
"#,
        origin.addr
    );
    let proxy = ProxyBuilder::new(&config)
        .file("signer.json", old.jwks())
        .start();
    let authority = authority(&proxy);
    let verified_by = |signer: &Signer, path: &str| {
        let headers = Signing::new(signer, &authority, "https://agent.example").headers();
        let (status, body) = send(&proxy, path, &headers);
        (status, body, origin.last(path))
    };
    let (status, _, seen) = verified_by(&old, "/agent-no/old");
    assert_eq!(status, 200, "{}", proxy.logs());
    assert_eq!(seen.unwrap().headers["x-crawlgate-verified"], "verified");

    // The operator rotates the key: the file is replaced (written beside it, renamed over it).
    let file = proxy.path("signer.json");
    let replace = |body: &[u8]| {
        let next = file.with_extension("json.new");
        std::fs::write(&next, body).unwrap();
        std::fs::rename(&next, &file).unwrap();
    };
    replace(new.jwks().as_bytes());
    let mut attempt = 0;
    wait_for("the new key to verify", || {
        attempt += 1;
        let path = format!("/agent-no/new-{attempt}");
        let (status, _, seen) = verified_by(&new, &path);
        (status == 200 && seen?.headers.get("x-crawlgate-verified")? == "verified").then_some(())
    });
    // The old key is gone with the old file: a signature made with it is a false claim.
    let (status, body, _) = verified_by(&old, "/agent-no/old-again");
    assert_eq!(status, 403, "{body}");

    // A broken file is reported and the keys read before keep verifying.
    replace(b"{\"keys\": [");
    let (status, _, seen) = verified_by(&new, "/agent-no/after-broken");
    assert_eq!(status, 200);
    assert_eq!(seen.unwrap().headers["x-crawlgate-verified"], "verified");
    wait_for("the broken file to be reported", || {
        proxy.logs().contains("cannot use").then_some(())
    });
    let (status, _, seen) = verified_by(&new, "/agent-no/still");
    assert_eq!(status, 200);
    assert_eq!(seen.unwrap().headers["x-crawlgate-verified"], "verified");
}
