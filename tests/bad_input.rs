//! Bad input, end to end: hostile and broken requests and origins through the real proxy. Each
//! gets a defined response, the process never dies, and the metrics count what reached crawlgate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How a broken origin misbehaves.
#[derive(Debug, Clone, Copy)]
enum Misbehaviour {
    /// Closes the connection without reading the request: the kernel answers with a reset.
    Reset,
    /// Reads the request and never answers.
    Stall,
    /// Answers with bytes that are not HTTP.
    Garbage,
}

/// An origin on loopback that misbehaves on every connection.
struct BrokenOrigin {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl BrokenOrigin {
    fn start(how: Misbehaviour) -> BrokenOrigin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stopped.load(Ordering::Relaxed) {
                let Ok((mut stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                match how {
                    Misbehaviour::Reset => {
                        // Let the request arrive, then close with it unread: that is a reset.
                        std::thread::sleep(Duration::from_millis(50));
                        drop(stream);
                    }
                    Misbehaviour::Stall => {
                        let mut buffer = [0u8; 4096];
                        let _ = stream.read(&mut buffer);
                        held.push(stream);
                    }
                    Misbehaviour::Garbage => {
                        let mut buffer = [0u8; 4096];
                        let _ = stream.read(&mut buffer);
                        let _ = stream.write_all(
                            b"SSH-2.0-OpenSSH_9.2\r\n\x00\x01\x02 this is not HTTP\r\n\r\n",
                        );
                    }
                }
            }
        });
        BrokenOrigin { port, stop }
    }
}

impl Drop for BrokenOrigin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Sends raw bytes as a request and returns the response's status code, or `None` when the
/// connection was closed without one.
fn raw(port: u16, request: &[u8]) -> Option<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    // A server may answer (and close) before the whole request is written: that is fine.
    let _ = stream.write_all(request);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    text.strip_prefix("HTTP/1.")?
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

fn request(target: &str, host: &str, ua: &str) -> Vec<u8> {
    format!(
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {ua}\r\nConnection: close\r\n\r\n"
    )
    .into_bytes()
}

struct Setup {
    proxy: Proxy,
    _origin: Origin,
    _broken: Vec<BrokenOrigin>,
}

fn setup() -> Setup {
    let origin = Origin::start();
    let reset = BrokenOrigin::start(Misbehaviour::Reset);
    let stall = BrokenOrigin::start(Misbehaviour::Stall);
    let garbage = BrokenOrigin::start(Misbehaviour::Garbage);
    let robots = "User-agent: *\\nDisallow: /private/\\n";
    let template = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 2}}
sites:
  - name: main
    upstream: "{origin}"
    robots: {{inline: "{robots}"}}
  - name: named
    hosts: [named.test]
    upstream: "{origin}"
    robots: {{inline: "{robots}"}}
  - name: reset
    hosts: [reset.test]
    upstream: "127.0.0.1:{reset}"
    robots: {{inline: "{robots}"}}
  - name: stall
    hosts: [stall.test]
    upstream: "127.0.0.1:{stall}"
    upstream_timeout: 1s
    robots: {{inline: "{robots}"}}
  - name: garbage
    hosts: [garbage.test]
    upstream: "127.0.0.1:{garbage}"
    robots: {{inline: "{robots}"}}
"#,
        origin = origin.addr,
        reset = reset.port,
        stall = stall.port,
        garbage = garbage.port,
    );
    let proxy = ProxyBuilder::new(&template).start();
    Setup {
        proxy,
        _origin: origin,
        _broken: vec![reset, stall, garbage],
    }
}

fn assert_alive(proxy: &mut Proxy) {
    assert!(
        proxy.child.try_wait().unwrap().is_none(),
        "crawlgate died:\n{}",
        proxy.logs()
    );
    let (status, body) = proxy.health();
    assert_eq!((status, body.as_str()), (200, "ok\n"));
}

#[test]
fn headers_at_and_past_the_limits() {
    let mut s = setup();
    let port = s.proxy.port;
    // pingora reads at most 1 MiB of request header and 256 header lines.
    let at_limit = format!(
        "GET /big HTTP/1.1\r\nHost: named.test\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "a".repeat(1_000_000)
    );
    assert_eq!(raw(port, at_limit.as_bytes()), Some(200));
    let past_limit = format!(
        "GET /big HTTP/1.1\r\nHost: named.test\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1_100_000)
    );
    let status = raw(port, past_limit.as_bytes());
    assert!(matches!(status, None | Some(400)), "{status:?}");
    let mut many = String::from("GET /many HTTP/1.1\r\nHost: named.test\r\nConnection: close\r\n");
    for i in 0..300 {
        many.push_str(&format!("X-H{i}: v\r\n"));
    }
    many.push_str("\r\n");
    let status = raw(port, many.as_bytes());
    assert!(matches!(status, None | Some(400)), "{status:?}");
    // A request target may be up to 64 KiB (the http crate's limit); past it pingora says 400.
    let long_line = request(&format!("/{}", "p".repeat(65_000)), "named.test", FIREFOX);
    assert_eq!(raw(port, &long_line), Some(200));
    let too_long = request(&format!("/{}", "p".repeat(70_000)), "named.test", FIREFOX);
    assert_eq!(raw(port, &too_long), Some(400));
    assert_alive(&mut s.proxy);
}

#[test]
fn a_64_kib_user_agent_is_classified_like_any_other() {
    let mut s = setup();
    let port = s.proxy.port;
    let padding = "x".repeat(64 * 1024);
    let crawler = format!("Mozilla/5.0 ({padding}) GPTBot/1.2");
    assert_eq!(
        raw(port, &request("/private/a", "named.test", &crawler)),
        Some(403)
    );
    let person = format!("Mozilla/5.0 ({padding}) Firefox/128.0");
    assert_eq!(
        raw(port, &request("/private/a", "named.test", &person)),
        Some(200)
    );
    assert_alive(&mut s.proxy);
}

#[test]
fn odd_paths_get_defined_answers() {
    let mut s = setup();
    let port = s.proxy.port;
    // Invalid percent-escapes are matched as they are.
    assert_eq!(
        raw(port, &request("/blog/%zz", "named.test", GOOGLEBOT)),
        Some(200)
    );
    assert_eq!(
        raw(port, &request("/blog/%", "named.test", GOOGLEBOT)),
        Some(200)
    );
    assert_eq!(
        raw(port, &request("/private/%zz", "named.test", GOOGLEBOT)),
        Some(403)
    );
    // Raw bytes outside ASCII are not a valid request target: pingora refuses them.
    let mut invalid =
        b"GET /private/\xff\xfe HTTP/1.1\r\nHost: named.test\r\nUser-Agent: ".to_vec();
    invalid.extend_from_slice(GOOGLEBOT.as_bytes());
    invalid.extend_from_slice(b"\r\nConnection: close\r\n\r\n");
    let status = raw(port, &invalid);
    assert!(matches!(status, Some(400) | Some(403)), "{status:?}");
    // Dot segments are resolved before matching.
    assert_eq!(
        raw(
            port,
            &request("/blog/../private/x", "named.test", GOOGLEBOT)
        ),
        Some(403)
    );
    // An absolute-form target chooses the site by its authority.
    let absolute = format!(
        "GET http://named.test/private/x HTTP/1.1\r\nHost: named.test\r\nUser-Agent: {GOOGLEBOT}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(raw(port, absolute.as_bytes()), Some(403));
    assert_alive(&mut s.proxy);
}

#[test]
fn ambiguous_or_missing_hosts() {
    let mut s = setup();
    let port = s.proxy.port;
    // pingora itself refuses two Host headers (crawlgate checks too, for HTTP/2's :authority).
    let duplicate =
        b"GET / HTTP/1.1\r\nHost: named.test\r\nHost: other.test\r\nConnection: close\r\n\r\n";
    assert_eq!(raw(port, duplicate), Some(400));
    let missing = b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n";
    assert_eq!(raw(port, missing), Some(400));
    // HTTP/1.0 may omit Host: it goes to the site that serves any host.
    let old = b"GET /old HTTP/1.0\r\nUser-Agent: Mozilla/5.0 Firefox/128.0\r\n\r\n";
    assert_eq!(raw(port, old), Some(200));
    let metrics = s.proxy.metrics();
    assert_eq!(
        metric_value(
            &metrics,
            r#"crawlgate_bad_requests_total{reason="missing_host"}"#
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_alive(&mut s.proxy);
}

#[test]
fn a_slow_client_holds_only_its_own_connection() {
    let mut s = setup();
    let port = s.proxy.port;
    let mut slow = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let whole = request("/slow", "named.test", FIREFOX);
    let (head, tail) = whole.split_at(20);
    slow.write_all(head).unwrap();
    // While it dribbles, everybody else is served.
    for _ in 0..5 {
        assert_eq!(
            get(&s.proxy.url("/fast"), FIREFOX, Some("named.test")).0,
            200
        );
    }
    for byte in tail {
        slow.write_all(std::slice::from_ref(byte)).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    slow.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    let mut response = Vec::new();
    let _ = slow.read_to_end(&mut response);
    assert!(
        response.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&response)
    );
    assert_alive(&mut s.proxy);
}

#[test]
fn broken_origins_get_502_or_504_and_are_counted() {
    let mut s = setup();
    let port = s.proxy.port;
    assert_eq!(raw(port, &request("/x", "reset.test", FIREFOX)), Some(502));
    assert_eq!(
        raw(port, &request("/x", "garbage.test", FIREFOX)),
        Some(502)
    );
    assert_eq!(raw(port, &request("/x", "stall.test", FIREFOX)), Some(504));
    // Other sites are unharmed.
    assert_eq!(raw(port, &request("/x", "named.test", FIREFOX)), Some(200));
    let metrics = s.proxy.metrics();
    let errors: f64 = ["reset", "garbage", "stall"]
        .iter()
        .map(|site| {
            metrics
                .lines()
                .filter(|l| {
                    l.starts_with("crawlgate_upstream_errors_total")
                        && l.contains(&format!("site=\"{site}\""))
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum::<f64>()
        })
        .sum();
    assert!(errors >= 3.0, "{metrics}");
    assert_eq!(
        metric_value(
            &metrics,
            r#"crawlgate_upstream_errors_total{kind="timeout",site="stall"}"#
        ),
        Some(1.0),
        "{metrics}"
    );
    assert_alive(&mut s.proxy);
}
