//! TLS listeners end to end: certificates chosen by SNI from a list signed by a test CA, the
//! first for clients that send no name, and certificates renewed on disk while clients keep
//! connecting: the new one is served without a restart, a bad one is reported and the old one
//! keeps serving, and no handshake fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use openssl::nid::Nid;
use openssl::x509::X509;
use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The names clients ask for: `a.test` and `www.a.test` are on the first certificate,
/// `x.b.test` under the second's wildcard, `other.test` on neither.
const HOSTS: [&str; 4] = ["a.test", "www.a.test", "x.b.test", "other.test"];

/// A proxy with one TLS listener serving `a.crt` (the default) and `b.crt` (written by the
/// caller), and its TLS port.
fn proxy_with_certs(origin: &Origin, files: &[(&str, String)]) -> (Proxy, u16) {
    let tls_port = free_port();
    let template = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 2}}
tls_listen:
  - addr: "127.0.0.1:{tls_port}"
    certs:
      - {{cert: a.crt, key: a.key}}
      - {{cert: b.crt, key: b.key}}
sites:
  - name: a
    hosts: [a.test, www.a.test, other.test]
    upstream: "{origin}"
    robots: {{inline: "User-agent: GPTBot\nDisallow: /\n"}}
  - name: b
    hosts: [x.b.test]
    upstream: "{origin}"
    robots: {{inline: "User-agent: GPTBot\nDisallow: /private/\n"}}
"#,
        origin = origin.addr
    );
    let mut builder = ProxyBuilder::new(&template);
    for (name, content) in files {
        builder = builder.file(name, content);
    }
    let proxy = builder.start();
    wait_for("the TLS listener", || {
        TcpStream::connect(("127.0.0.1", tls_port)).ok()
    });
    (proxy, tls_port)
}

/// The files of the two certificates: `a` for `a.test` and `www.a.test` (serial `a_serial`),
/// `b` for `*.b.test` (serial 100).
fn cert_files(ca: &TestCa, a_serial: u64) -> Vec<(&'static str, String)> {
    let (a_cert, a_key) = ca.issue(&["a.test", "www.a.test"], a_serial);
    let (b_cert, b_key) = ca.issue(&["*.b.test"], 100);
    vec![
        ("a.crt", a_cert),
        ("a.key", a_key),
        ("b.crt", b_cert),
        ("b.key", b_key),
    ]
}

/// An HTTPS client trusting `ca`, resolving [`HOSTS`] to the listener, as `configure` adjusts
/// it.
fn https_with(
    ca: &TestCa,
    port: u16,
    configure: impl FnOnce(reqwest::blocking::ClientBuilder) -> reqwest::blocking::ClientBuilder,
) -> reqwest::blocking::Client {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut builder = reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .add_root_certificate(reqwest::Certificate::from_pem(ca.pem().as_bytes()).unwrap())
        .tls_info(true);
    for host in HOSTS {
        builder = builder.resolve(host, addr);
    }
    configure(builder).build().unwrap()
}

/// An HTTPS client that makes a new connection, so a new handshake, for every request.
fn https(ca: &TestCa, port: u16) -> reqwest::blocking::Client {
    https_with(ca, port, |b| b.pool_max_idle_per_host(0))
}

/// The common name of the certificate the server presented (`crawlgate test leaf SERIAL`).
fn served(response: &reqwest::blocking::Response) -> String {
    let info = response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .unwrap();
    let cert = X509::from_der(info.peer_certificate().unwrap()).unwrap();
    let name = cert.subject_name().entries_by_nid(Nid::COMMONNAME).next();
    name.unwrap().data().to_string().unwrap()
}

fn leaf(serial: u64) -> String {
    format!("crawlgate test leaf {serial}")
}

#[test]
fn sni_picks_each_certificate_by_its_names_and_the_first_for_clients_without_one() {
    let origin = Origin::start();
    let ca = TestCa::new();
    let (proxy, port) = proxy_with_certs(&origin, &cert_files(&ca, 1));
    let client = https(&ca, port);
    let get = |client: &reqwest::blocking::Client, host: &str, path: &str, ua: &str| {
        let url = format!("https://{host}:{port}{path}");
        let response = client.get(url).header("user-agent", ua).send().unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_2, "{host}");
        (response.status().as_u16(), served(&response))
    };
    assert_eq!(get(&client, "a.test", "/x", FIREFOX), (200, leaf(1)));
    assert_eq!(get(&client, "www.a.test", "/x", GPTBOT), (403, leaf(1)));
    // The wildcard answers for x.b.test, and that site's robots.txt judges.
    assert_eq!(get(&client, "x.b.test", "/x", GPTBOT), (200, leaf(100)));
    assert_eq!(
        get(&client, "x.b.test", "/private/x", GPTBOT),
        (403, leaf(100))
    );
    // No name at all, and a name no certificate carries: the first certificate.
    let unnamed = https_with(&ca, port, |b| b.tls_sni(false));
    assert_eq!(get(&unnamed, "a.test", "/x", FIREFOX), (200, leaf(1)));
    let any_name = https_with(&ca, port, |b| b.tls_danger_accept_invalid_hostnames(true));
    assert_eq!(get(&any_name, "other.test", "/x", FIREFOX), (200, leaf(1)));
    // A client that checks names refuses it for other.test: the certificate does not say
    // other.test, and crawlgate does not pretend it does.
    let error = client
        .get(format!("https://other.test:{port}/"))
        .send()
        .unwrap_err();
    assert!(format!("{error:?}").contains("certificate"), "{error:?}");
    let expiry = format!(
        r#"crawlgate_tls_certificate_expiry_timestamp_seconds{{cert="{}",listener="127.0.0.1:{port}"}}"#,
        proxy.path("b.crt").display()
    );
    assert!(proxy.metric(&expiry).unwrap() > 2e9, "{}", proxy.metrics());
}

#[test]
fn certificates_rotate_under_load_without_a_failed_handshake() {
    let origin = Origin::start();
    let ca = TestCa::new();
    let (proxy, port) = proxy_with_certs(&origin, &cert_files(&ca, 1));
    let stop = Arc::new(AtomicBool::new(false));
    let seen: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let handshakes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let clients: Vec<_> = (0..3)
        .map(|n| {
            let (stop, seen, failures) = (stop.clone(), seen.clone(), failures.clone());
            let handshakes = handshakes.clone();
            let client = https(&ca, port);
            std::thread::spawn(move || {
                let host = ["a.test", "www.a.test", "x.b.test"][n % 3];
                while !stop.load(Ordering::Relaxed) {
                    let url = format!("https://{host}:{port}/page");
                    match client.get(url).header("user-agent", FIREFOX).send() {
                        Ok(response) if response.status() == 200 => {
                            handshakes.fetch_add(1, Ordering::Relaxed);
                            seen.lock().unwrap().insert(served(&response));
                        }
                        Ok(response) => failures
                            .lock()
                            .unwrap()
                            .push(format!("{host}: {}", response.status())),
                        Err(e) => failures.lock().unwrap().push(format!("{host}: {e:?}")),
                    }
                }
            })
        })
        .collect();
    let observed = |name: String| {
        wait_for(&format!("clients to be served {name}"), || {
            seen.lock().unwrap().contains(&name).then_some(())
        })
    };
    observed(leaf(1));
    // Renewals as certbot writes them: the key, then the certificate, each replaced by rename.
    for serial in 2..=4 {
        let (cert, key) = ca.issue(&["a.test", "www.a.test"], serial);
        write_atomically(&proxy.path("a.key"), key.as_bytes());
        write_atomically(&proxy.path("a.crt"), cert.as_bytes());
        observed(leaf(serial));
    }
    // A bad renewal (a certificate without its key) is reported, and the last good pair
    // keeps serving.
    let (stray, _) = ca.issue(&["a.test"], 99);
    write_atomically(&proxy.path("a.crt"), stray.as_bytes());
    let errors = format!(
        r#"crawlgate_tls_certificate_reloads_total{{listener="127.0.0.1:{port}",result="error"}}"#
    );
    wait_for("the bad pair to be reported", || proxy.metric(&errors));
    let before = handshakes.load(Ordering::Relaxed);
    wait_for("more handshakes after the bad pair", || {
        (handshakes.load(Ordering::Relaxed) > before + 20).then_some(())
    });
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} failed: {failures:?}",
        failures.len()
    );
    let seen = seen.lock().unwrap();
    assert!(!seen.contains(&leaf(99)), "{seen:?}");
    let ok = format!(
        r#"crawlgate_tls_certificate_reloads_total{{listener="127.0.0.1:{port}",result="ok"}}"#
    );
    assert!(proxy.metric(&ok).unwrap() >= 3.0, "{}", proxy.metrics());
    assert!(
        proxy
            .logs()
            .contains("certificate not reloaded, the old one keeps serving"),
        "{}",
        proxy.logs()
    );
    // The last good certificate is the one served.
    let response = https(&ca, port)
        .get(format!("https://a.test:{port}/"))
        .send()
        .unwrap();
    assert_eq!(served(&response), leaf(4));
    println!(
        "{} handshakes across 3 renewals and a bad one, none failed",
        handshakes.load(Ordering::Relaxed)
    );
}

#[test]
fn sighup_reloads_certificates_at_once() {
    let origin = Origin::start();
    let ca = TestCa::new();
    let (proxy, port) = proxy_with_certs(&origin, &cert_files(&ca, 1));
    let unchanged = format!(
        r#"crawlgate_tls_certificate_reloads_total{{listener="127.0.0.1:{port}",result="unchanged"}}"#
    );
    assert_eq!(proxy.metric(&unchanged), None);
    // Nothing changed on disk, so only the signal reads the pairs again: both, unchanged.
    proxy.signal("HUP");
    wait_for("the pairs to be read again", || {
        (proxy.metric(&unchanged) == Some(2.0)).then_some(())
    });
    let response = https(&ca, port)
        .get(format!("https://a.test:{port}/"))
        .send()
        .unwrap();
    assert_eq!(served(&response), leaf(1));
}

#[test]
fn validate_prints_each_certificates_names_and_names_the_file_of_a_bad_pair() {
    let ca = TestCa::new();
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in cert_files(&ca, 1) {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let config = dir.path().join("crawlgate.yaml");
    std::fs::write(
        &config,
        r#"listen: ["127.0.0.1:8080"]
tls_listen:
  - addr: "127.0.0.1:8443"
    certs: [{cert: a.crt, key: a.key}, {cert: b.crt, key: b.key}]
sites:
  - name: a
    upstream: "127.0.0.1:8000"
    robots: {inline: "User-agent: *\nDisallow:\n"}
"#,
    )
    .unwrap();
    let validate = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_crawlgate"))
            .args(["validate", "--config", config.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let output = validate();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let a = format!(
        "tls_listen 127.0.0.1:8443: {} for a.test, www.a.test (h2, http/1.1)",
        dir.path().join("a.crt").display()
    );
    assert!(stdout.contains(&a), "{stdout}");
    assert!(stdout.contains("b.crt for *.b.test"), "{stdout}");
    // b's key given for a: refused, naming both files.
    std::fs::copy(dir.path().join("b.key"), dir.path().join("a.key")).unwrap();
    let output = validate();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("a.key is not the private key of"),
        "{stderr}"
    );
}
