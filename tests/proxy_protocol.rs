//! Behind a TCP load balancer: a real HAProxy (`mode tcp`, `send-proxy-v2` and `send-proxy`)
//! in front of crawlgate's plain and TLS listeners that expect the PROXY protocol, a real
//! origin behind, and real clients connecting from another loopback address, so that the
//! address HAProxy names is not the one crawlgate's socket sees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::process::{Child, Command, Stdio};

/// Googlebot's published ranges, for this test: the client's loopback address.
const RANGES: &str = r#"{"creationTime": "2026-11-01T00:00:00.000000", "prefixes": [{"ipv4Prefix": "127.0.0.2/32"}]}"#;
const CLIENT: &str = "127.0.0.2";

struct HaProxy {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// HAProxy passing each of `routes` (its port, crawlgate's port, `send-proxy-v2` or
/// `send-proxy`) on at the TCP level.
fn haproxy(routes: &[(u16, u16, &str)]) -> HaProxy {
    let dir = tempfile::tempdir().unwrap();
    let mut config = String::from(
        "global\n  maxconn 256\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n",
    );
    for (i, (front, back, send)) in routes.iter().enumerate() {
        config.push_str(&format!(
            "listen route{i}\n  bind 127.0.0.1:{front}\n  server crawlgate 127.0.0.1:{back} {send}\n"
        ));
    }
    let file = dir.path().join("haproxy.cfg");
    std::fs::write(&file, config).unwrap();
    let binary = ["/usr/sbin/haproxy", "/usr/local/sbin/haproxy"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("haproxy");
    let child = Command::new(binary)
        .arg("-db")
        .arg("-f")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect(
            "HAProxy is the load balancer of these tests: install it (apt-get install haproxy)",
        );
    for (front, _, _) in routes {
        let front = *front;
        wait_for("HAProxy to listen", || {
            TcpStream::connect(("127.0.0.1", front)).ok().map(drop)
        });
    }
    HaProxy { child, _dir: dir }
}

/// Waits until the listeners of the PROXY-protocol service (started beside the one
/// `ProxyBuilder` waits for) take connections.
fn wait_listening(ports: &[u16]) {
    for port in ports {
        wait_for("the PROXY protocol listener", || {
            TcpStream::connect(("127.0.0.1", *port)).ok().map(drop)
        });
    }
}

/// A client that connects from [`CLIENT`].
fn from_client(ca: Option<&str>) -> reqwest::blocking::Client {
    let mut builder = reqwest::blocking::Client::builder()
        .local_address(CLIENT.parse::<IpAddr>().unwrap())
        .pool_max_idle_per_host(0);
    if let Some(ca) = ca {
        builder = builder
            .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
            .https_only(true);
    }
    builder.build().unwrap()
}

#[test]
fn behind_haproxy_the_client_is_the_one_haproxy_names_over_plain_and_tls() {
    let origin = Origin::start();
    let (plain, tls, v1) = (free_port(), free_port(), free_port());
    let ca = TestCa::new();
    let (cert, key) = ca.issue(&["localhost"], 1);
    let template = format!(
        "listen: [\"{{listen}}\", {{addr: \"127.0.0.1:{plain}\", proxy_protocol: true}}, {{addr: \"127.0.0.1:{v1}\", proxy_protocol: true}}]\n\
         tls_listen: [{{addr: \"127.0.0.1:{tls}\", cert: lb.crt, key: lb.key, proxy_protocol: true}}]\n\
         trusted_proxies: [127.0.0.1/32]\n\
         verification:\n  ranges: {{Googlebot: googlebot.json}}\n  on_spoofed: block\n{}",
        sites_template(
            false,
            &[site(
                "shop",
                &[],
                origin.addr,
                "robots.txt",
                &["action: block", "forwarding: {x_real_ip: true}"],
            )],
        )
        .replace("listen: [\"{listen}\"]\n", "")
    );
    let proxy = ProxyBuilder::new(&template)
        .file("robots.txt", "User-agent: *\nDisallow: /private/\n")
        .file("googlebot.json", RANGES)
        .file("lb.crt", cert)
        .file("lb.key", key)
        .start();
    wait_listening(&[plain, tls, v1]);
    let (front_plain, front_tls, front_v1) = (free_port(), free_port(), free_port());
    let _haproxy = haproxy(&[
        (front_plain, plain, "send-proxy-v2"),
        (front_tls, tls, "send-proxy-v2"),
        (front_v1, v1, "send-proxy"),
    ]);

    // A person through each route: the origin is told the client HAProxy named.
    let client = from_client(None);
    for (route, front) in [("v2", front_plain), ("v1", front_v1)] {
        let path = format!("/page-{route}");
        let response = client
            .get(format!("http://127.0.0.1:{front}{path}"))
            .header("user-agent", FIREFOX)
            .send()
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{route}");
        let seen = origin.last(&path).unwrap();
        assert_eq!(seen.headers["x-forwarded-for"], CLIENT, "{route}: {seen:?}");
        assert_eq!(seen.headers["x-real-ip"], CLIENT, "{route}");
    }
    let tls_client = from_client(Some(&ca.pem()));
    let response = tls_client
        .get(format!("https://localhost:{front_tls}/page-tls"))
        .header("user-agent", FIREFOX)
        .send();
    // reqwest resolves `localhost` to 127.0.0.1, where HAProxy listens.
    let response = response.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let seen = origin.last("/page-tls").unwrap();
    assert_eq!(seen.headers["x-forwarded-for"], CLIENT, "{seen:?}");
    assert_eq!(seen.headers["x-forwarded-proto"], "https");

    // Googlebot from its published range is verified: crawlgate sees its address, not HAProxy's.
    let response = client
        .get(format!("http://127.0.0.1:{front_plain}/private/x"))
        .header(
            "user-agent",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        )
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    let metrics = proxy.metrics();
    let verified = r#"crawlgate_verifications_total{bot="Googlebot",method="ranges",result="verified",site="shop"} 1"#;
    assert!(metrics.contains(verified), "{metrics}");
}

/// Writes `bytes` to the port from the address `from` and reads until the connection ends.
fn exchange(from: &str, port: u16, bytes: &[u8]) -> Vec<u8> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let stream = socket
            .connect(format!("127.0.0.1:{port}").parse().unwrap())
            .await
            .unwrap();
        stream.into_std().unwrap()
    });
    let mut stream: TcpStream = stream;
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    stream.write_all(bytes).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    answer
}

#[test]
fn a_listener_that_expects_the_header_closes_a_connection_without_it_or_from_the_untrusted() {
    let origin = Origin::start();
    let expects = free_port();
    let template = format!(
        "listen: [\"{{listen}}\", {{addr: \"127.0.0.1:{expects}\", proxy_protocol: true}}]\n\
         trusted_proxies: [127.0.0.1/32]\n{}",
        sites_template(false, &[site("shop", &[], origin.addr, "robots.txt", &[])])
            .replace("listen: [\"{listen}\"]\n", "")
    );
    let proxy = ProxyBuilder::new(&template)
        .file("robots.txt", "User-agent: *\nDisallow: /private/\n")
        .start();
    wait_listening(&[expects]);
    // Plain HTTP where a PROXY header belongs, from the trusted balancer: closed, unanswered.
    let request = b"GET / HTTP/1.1\r\nHost: shop\r\nUser-Agent: curl/8\r\n\r\n";
    assert_eq!(exchange("127.0.0.1", expects, request), b"");
    // A valid header, but from 127.0.0.2, which is not a trusted proxy: closed too.
    let mut forged = b"PROXY TCP4 66.249.66.1 127.0.0.1 40000 80\r\n".to_vec();
    forged.extend_from_slice(request);
    assert_eq!(exchange(CLIENT, expects, &forged), b"");
    assert!(origin.seen().is_empty());
    // The same header from the balancer is believed.
    let mut believed = b"PROXY TCP4 192.0.2.9 127.0.0.1 40000 80\r\n".to_vec();
    believed.extend_from_slice(
        b"GET /believed HTTP/1.1\r\nHost: shop\r\nUser-Agent: curl/8\r\nConnection: close\r\n\r\n",
    );
    let answer = exchange("127.0.0.1", expects, &believed);
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(
        origin.last("/believed").unwrap().headers["x-forwarded-for"],
        "192.0.2.9"
    );
    // The plain listener beside it is unaffected.
    assert_eq!(get(&proxy.url("/"), FIREFOX, None).0, 200);
    let logs = proxy.logs();
    assert!(logs.contains("no PROXY protocol header"), "{logs}");
    assert!(logs.contains("not in trusted_proxies"), "{logs}");
}
