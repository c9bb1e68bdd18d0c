//! HTTP/2 as clients negotiate it: ALPN on TLS listeners offers `h2` and `http/1.1` (a client
//! that offers only HTTP/1.1 gets it), h2c on plain listeners only when configured, and curl
//! `--http2` (when installed) judged like any other client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::net::SocketAddr;
use std::process::Command;

fn one_site(origin: &Origin) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
sites:
  - name: site
    hosts: [site.test]
    upstream: "{}"
    robots: {{inline: "User-agent: GPTBot\nDisallow: /\n"}}
"#,
        origin.addr
    )
}

#[test]
fn tls_listeners_offer_h2_and_http1_by_alpn() {
    let origin = Origin::start();
    let proxy = ProxyBuilder::new(&one_site(&origin))
        .wire(Wire::H2, &["site.test"])
        .start();
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.tls_port.unwrap()));
    let hosts = ["site.test".to_owned()];
    // The h2 client was checked by `send`; a client offering only http/1.1 gets HTTP/1.1.
    assert_eq!(proxy.get_on("site.test", "/x", GPTBOT).0, 403);
    let http1 = wire_client(Wire::Http1, &hosts, addr, proxy.ca.as_deref());
    for (ua, status) in [(GPTBOT, 403), (FIREFOX, 200)] {
        let response = http1
            .get(proxy.site_url("site.test", "/x"))
            .header("user-agent", ua)
            .send()
            .unwrap();
        assert_eq!(response.version(), reqwest::Version::HTTP_11);
        assert_eq!(response.status().as_u16(), status);
    }
    // Both protocols are counted in the same series.
    let blocked = r#"crawlgate_requests_total{action="blocked",bot="GPTBot",category="ai-training",site="site",verdict="disallowed",verified="unverifiable"}"#;
    assert_eq!(proxy.metric(blocked), Some(2.0));
}

#[test]
fn h2c_is_off_unless_configured() {
    let origin = Origin::start();
    let proxy = ProxyBuilder::new(&one_site(&origin))
        .wire(Wire::Http1, &["site.test"])
        .start();
    let addr = SocketAddr::from(([127, 0, 0, 1], proxy.port));
    let hosts = ["site.test".to_owned()];
    assert_eq!(proxy.get_on("site.test", "/x", FIREFOX).0, 200);
    let h2c = wire_client(Wire::H2c, &hosts, addr, None);
    let refused = h2c
        .get(proxy.site_url("site.test", "/x"))
        .header("user-agent", FIREFOX)
        .send();
    assert!(refused.is_err(), "{refused:?}");
}

/// curl, when installed and built with HTTP/2; `None` (and a note) otherwise.
fn curl() -> Option<()> {
    let Ok(version) = Command::new("curl").arg("--version").output() else {
        println!("note: curl is not installed; the curl checks are skipped");
        return None;
    };
    let text = String::from_utf8_lossy(&version.stdout);
    if text.contains("HTTP2") {
        Some(())
    } else {
        println!("note: curl has no HTTP/2 support here; the curl checks are skipped");
        None
    }
}

/// `curl ARGS URL` printing the HTTP version and status, e.g. `2 403`.
fn curl_status(args: &[&str], url: &str, user_agent: &str) -> String {
    let output = Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
        ])
        .args(["-A", user_agent])
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn curl_http2_is_judged_like_any_client() {
    if curl().is_none() {
        return;
    }
    let origin = Origin::start();
    let proxy = ProxyBuilder::new(&one_site(&origin))
        .wire(Wire::H2, &["site.test"])
        .start();
    let dir = proxy.dir.path();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, proxy.ca.as_deref().unwrap()).unwrap();
    let port = proxy.tls_port.unwrap();
    let resolve = format!("site.test:{port}:127.0.0.1");
    let tls = [
        "--cacert",
        ca.to_str().unwrap(),
        "--resolve",
        resolve.as_str(),
    ];
    let url = proxy.site_url("site.test", "/x");
    let over = |extra: &str, ua: &str| {
        let mut args = tls.to_vec();
        args.push(extra);
        curl_status(&args, &url, ua)
    };
    assert_eq!(over("--http2", GPTBOT), "2 403");
    assert_eq!(over("--http2", FIREFOX), "2 200");
    assert_eq!(over("--http1.1", GPTBOT), "1.1 403");
    // h2c with prior knowledge on a plain listener configured for it.
    let plain = ProxyBuilder::new(&one_site(&origin))
        .wire(Wire::H2c, &["site.test"])
        .start();
    let resolve = format!("site.test:{}:127.0.0.1", plain.port);
    let url = plain.site_url("site.test", "/x");
    let h2c = ["--http2-prior-knowledge", "--resolve", resolve.as_str()];
    assert_eq!(curl_status(&h2c, &url, GPTBOT), "2 403");
    assert_eq!(curl_status(&h2c[1..], &url, FIREFOX), "1.1 200");
}
