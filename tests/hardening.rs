//! No client can starve crawlgate or hide from it: slow and silent connections are cut off and
//! bounded, a crawler cannot hide behind a second User-Agent or a Host that is not one, and a
//! body's length means one thing to crawlgate and to the origin. Real sockets on loopback; every
//! wait is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::raw_origin::RawOrigin;
use harness::*;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

/// crawlgate in front of a raw origin with a catch-all site and a named one, and `clients`.
fn guarded(clients: &str) -> (RawOrigin, Proxy) {
    let origin = RawOrigin::start();
    let template = format!(
        "{}{clients}",
        sites_template(
            false,
            &[
                site("closed", &["a.test"], origin.addr, "closed.txt", &[]),
                site("open", &[], origin.addr, "open.txt", &[]),
            ]
        )
    );
    let proxy = ProxyBuilder::new(&template)
        .file("closed.txt", "User-agent: GPTBot\nDisallow: /\n")
        .file("open.txt", "User-agent: *\nAllow: /\n")
        .wire(Wire::H2c, &["a.test", "b.test"])
        .start();
    (origin, proxy)
}

/// A person's request from `source` (a loopback address of its own), by curl: its status and
/// how long it took.
fn person_from(source: &str, port: u16) -> (u16, Duration) {
    let started = Instant::now();
    let output = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "10",
        ])
        .args(["--interface", source, "-A", FIREFOX])
        .arg(format!("http://127.0.0.1:{port}/echo"))
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&output.stdout).parse().unwrap_or(0);
    (status, started.elapsed())
}

/// Descriptors the process holds.
fn descriptors(proxy: &Proxy) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", proxy.child.id()))
        .unwrap()
        .count()
}

/// Opens `count` connections from `source`, each sending only a request line, on a runtime the
/// caller keeps; returns them.
fn silent_connections(
    runtime: &tokio::runtime::Runtime,
    source: IpAddr,
    port: u16,
    count: usize,
) -> Vec<tokio::net::TcpStream> {
    runtime.block_on(async {
        let mut streams = Vec::new();
        for _ in 0..count {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(SocketAddr::new(source, 0)).unwrap();
            let Ok(mut stream) = socket.connect(([127, 0, 0, 1], port).into()).await else {
                continue;
            };
            use tokio::io::AsyncWriteExt;
            let _ = stream.write_all(b"GET / HTTP/1.1\r\n").await;
            streams.push(stream);
        }
        streams
    })
}

/// How many of `streams` the server has closed, waiting at most `within` for all of them.
fn closed_within(
    runtime: &tokio::runtime::Runtime,
    streams: Vec<tokio::net::TcpStream>,
    within: Duration,
) -> usize {
    runtime.block_on(async {
        let reads = streams.into_iter().map(|mut stream| async move {
            use tokio::io::AsyncReadExt;
            let mut buf = [0u8; 1024];
            loop {
                match tokio::time::timeout(within, stream.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => return true,
                    Ok(Ok(_)) => continue,
                    Err(_) => return false,
                }
            }
        });
        let mut closed = 0;
        for read in reads {
            // Each has had `within` since the first began: they run one after another, but a
            // closed one answers at once.
            if read.await {
                closed += 1;
            }
        }
        closed
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn thousands_of_silent_connections_from_one_address_neither_starve_people_nor_stay() {
    let (_origin, proxy) = guarded("clients: {header_timeout: 3s}\n");
    let runtime = runtime();
    let before = descriptors(&proxy);
    let attack = silent_connections(&runtime, [127, 0, 0, 1].into(), proxy.port, 3000);
    assert!(attack.len() >= 2000, "{} connections opened", attack.len());
    // The address holds its share (1024 by default); the rest were closed at once.
    let held = descriptors(&proxy) - before;
    assert!(held <= 1024 + 16, "{held} descriptors held for one address");
    let (status, took) = person_from("127.0.0.2", proxy.port);
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(5), "a person waited {took:?}");
    // Every silent connection is closed by the header timeout, not held for ever.
    let total = attack.len();
    let closed = closed_within(&runtime, attack, Duration::from_secs(15));
    assert_eq!(closed, total);
    let metrics = proxy.metrics();
    assert!(
        metric_value(
            &metrics,
            "crawlgate_client_timeouts_total{phase=\"header\"}"
        )
        .is_some_and(|n| n >= 1000.0),
        "{metrics}"
    );
    assert!(
        metric_value(
            &metrics,
            "crawlgate_client_connections_refused_total{reason=\"per_address\"}"
        )
        .is_some_and(|n| n >= 900.0),
        "{metrics}"
    );
    wait_for("the connections to be given back", || {
        (metric_value(&proxy.metrics(), "crawlgate_client_connections") == Some(0.0)).then_some(())
    });
}

#[test]
fn at_the_connection_limit_accepting_waits_and_people_get_in_when_slots_free() {
    let (_origin, proxy) = guarded("clients: {header_timeout: 2s, max_connections: 300}\n");
    let runtime = runtime();
    let mut attack = Vec::new();
    for i in 2..8u8 {
        attack.extend(silent_connections(
            &runtime,
            [127, 0, 1, i].into(),
            proxy.port,
            100,
        ));
    }
    // At most the limit is held, however many addresses ask.
    let open = metric_value(&proxy.metrics(), "crawlgate_client_connections").unwrap();
    assert!(open <= 300.0, "{open} open");
    // A person waits in the backlog until the silent ones time out, then is answered.
    let (status, _) = person_from("127.0.2.1", proxy.port);
    assert_eq!(status, 200);
    assert!(
        metric_value(&proxy.metrics(), "crawlgate_accept_waits_total").is_some_and(|n| n >= 1.0)
    );
    drop(attack);
    assert!(!proxy.logs().contains("Too many open files"));
}

#[test]
fn idle_and_half_sent_keep_alive_connections_are_closed() {
    let (_origin, proxy) = guarded("clients: {header_timeout: 2s, idle_timeout: 2s}\n");
    let mut idle = TcpStream::connect(("127.0.0.1", proxy.port)).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    idle.write_all(b"GET /echo HTTP/1.1\r\nHost: b.test\r\nUser-Agent: Firefox\r\n\r\n")
        .unwrap();
    let mut half = TcpStream::connect(("127.0.0.1", proxy.port)).unwrap();
    half.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    half.write_all(b"GET /echo HTTP/1.1\r\nHost: b.test\r\nUser-Agent: Firefox\r\n\r\n")
        .unwrap();
    let mut answer = [0u8; 15];
    half.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"HTTP/1.1 200 OK");
    // The next request's header, begun and never finished.
    half.write_all(b"GET /echo HTTP/1.1\r\nHost: b").unwrap();
    let read_to_close = |stream: &mut TcpStream| {
        let started = Instant::now();
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => {
                    return (
                        String::from_utf8_lossy(&all).into_owned(),
                        started.elapsed(),
                    )
                }
                Ok(n) => all.extend_from_slice(&buf[..n]),
                Err(e) => panic!("the connection was not closed: {e}"),
            }
        }
    };
    // Each gets its answer and is closed by a timeout, the half-sent request unanswered.
    let (text, took) = read_to_close(&mut idle);
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 1, "{text}");
    assert!(took < Duration::from_secs(14), "{took:?}");
    let (text, took) = read_to_close(&mut half);
    assert!(
        !text.contains("HTTP/1.1 200"),
        "the half-sent request was answered: {text}"
    );
    assert!(took < Duration::from_secs(14), "{took:?}");
    let metrics = proxy.metrics();
    assert!(metric_value(&metrics, "crawlgate_client_timeouts_total{phase=\"idle\"}").is_some());
    assert!(metric_value(
        &metrics,
        "crawlgate_client_timeouts_total{phase=\"header\"}"
    )
    .is_some());
}

/// Sends `request` raw and returns the status.
fn status_of(port: u16, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[test]
fn a_crawler_cannot_hide_behind_a_second_user_agent() {
    let (origin, proxy) = guarded("");
    let crawler_behind_browser = format!(
        "GET /hidden HTTP/1.1\r\nHost: a.test\r\nUser-Agent: {FIREFOX}\r\nUser-Agent: GPTBot/1.2\r\nConnection: close\r\n\r\n"
    );
    let (status, body) = status_of(proxy.port, &crawler_behind_browser);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("names several"), "{body}");
    assert!(origin.last("/hidden").is_none());
    // Over HTTP/2 too.
    let response = proxy
        .wire_client()
        .get(proxy.site_url("a.test", "/hidden-h2"))
        .header("user-agent", FIREFOX)
        .header("user-agent", "GPTBot/1.2")
        .send()
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(origin.last("/hidden-h2").is_none());
    // Two people's User-Agents: a person is never refused, and the origin gets both.
    let two_people = format!(
        "GET /people HTTP/1.1\r\nHost: a.test\r\nUser-Agent: {FIREFOX}\r\nUser-Agent: MyApp/2.3 (iPhone; iOS 17.1)\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(status_of(proxy.port, &two_people).0, 200);
    assert_eq!(
        origin.last("/people").unwrap().values("user-agent").len(),
        2
    );
    // A CGI-style spelling never reaches the origin, whatever its case and separators.
    let underscore = format!(
        "GET /underscore HTTP/1.1\r\nHost: a.test\r\nUser-Agent: {FIREFOX}\r\nUser_Agent: GPTBot/1.2\r\nuser.agent: GPTBot/1.2\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(status_of(proxy.port, &underscore).0, 200);
    let seen = origin.last("/underscore").unwrap();
    assert_eq!(seen.values("user-agent"), [FIREFOX]);
    assert!(seen.values("user_agent").is_empty() && seen.values("user.agent").is_empty());
    assert!(
        metric_value(
            &proxy.metrics(),
            "crawlgate_bad_requests_total{reason=\"several_user_agents\"}"
        ) == Some(2.0)
    );
}

#[test]
fn a_host_that_is_not_one_is_refused_before_any_site_is_chosen() {
    let (origin, proxy) = guarded("");
    for host in [
        "a.test:abc",
        "a.test:80:80",
        "a.test:+80",
        "a.test:-1",
        "a.test/x",
    ] {
        let request = format!(
            "GET /host HTTP/1.1\r\nHost: {host}\r\nUser-Agent: GPTBot/1.2\r\nConnection: close\r\n\r\n"
        );
        let (status, body) = status_of(proxy.port, &request);
        assert_eq!(status, 400, "{host}: {body}");
    }
    assert!(
        origin.last("/host").is_none(),
        "an invalid Host reached the origin"
    );
    // A valid one with a port chooses its site; the origin reads the Host that chose it.
    let request = "GET /host HTTP/1.1\r\nHost: A.test:8080\r\nUser-Agent: GPTBot/1.2\r\nConnection: close\r\n\r\n";
    assert_eq!(status_of(proxy.port, request).0, 403);
    let absolute =
        "GET http://b.test/host-abs HTTP/1.1\r\nUser-Agent: Firefox\r\nConnection: close\r\n\r\n";
    let (status, body) = status_of(proxy.port, absolute);
    assert_eq!(status, 400, "{body}");
    let absolute = "GET http://b.test/host-abs HTTP/1.0\r\nUser-Agent: Firefox\r\n\r\n";
    assert_eq!(status_of(proxy.port, absolute).0, 200);
    assert_eq!(origin.last("/host-abs").unwrap().values("host"), ["b.test"]);
    assert!(metric_value(
        &proxy.metrics(),
        "crawlgate_bad_requests_total{reason=\"invalid_host\"}"
    )
    .is_some_and(|n| n >= 5.0));
}

#[test]
fn a_bodys_length_means_one_thing_to_crawlgate_and_the_origin() {
    let (origin, proxy) = guarded("");
    // A body that is itself a request: an origin reading `72, 72` as 0 would serve it unjudged.
    let smuggled = "GET /private/ HTTP/1.1\r\nHost: a.test\r\nUser-Agent: GPTBot/1.2\r\n\r\n";
    for lengths in [
        format!("Content-Length: {0}, {0}\r\n", smuggled.len()),
        format!(
            "Content-Length: {0}\r\nContent-Length: {0}\r\n",
            smuggled.len()
        ),
    ] {
        let request = format!(
            "POST /upload HTTP/1.1\r\nHost: b.test\r\nUser-Agent: {FIREFOX}\r\n{lengths}Connection: close\r\n\r\n{smuggled}"
        );
        let (status, body) = status_of(proxy.port, &request);
        assert_eq!(status, 200, "{body}");
        let seen = origin.last("/upload").unwrap();
        assert_eq!(seen.values("content-length"), [smuggled.len().to_string()]);
        assert_eq!(seen.body_len, smuggled.len());
    }
    assert!(origin.last("/private/").is_none());
    // Lengths that disagree are refused, and say why.
    let request = "POST /upload-2 HTTP/1.1\r\nHost: b.test\r\nContent-Length: 5\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello!";
    let (status, body) = status_of(proxy.port, request);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Content-Length values disagree"), "{body}");
    assert!(origin.last("/upload-2").is_none());
}

#[test]
fn a_request_shorter_than_the_http2_preface_is_answered_on_an_h2c_listener() {
    // pingora waits for 24 bytes to tell HTTP/2's preface; this request has 22.
    let (origin, proxy) = guarded("");
    let (status, text) = status_of(proxy.port, "GET /short HTTP/1.0\r\n\r\n");
    assert_eq!(status, 200, "{text}");
    assert!(origin.last("/short").is_some());
}

#[test]
fn a_client_that_never_reads_its_response_is_cut_off_by_the_send_timeout() {
    // An origin that answers with more than any socket buffer holds.
    let origin = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = origin.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in origin.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut head = [0u8; 4096];
                let _ = stream.read(&mut head);
                let size = 64 << 20;
                let _ = stream.write_all(
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n").as_bytes(),
                );
                let chunk = vec![b'x'; 1 << 20];
                for _ in 0..64 {
                    if stream.write_all(&chunk).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let template = format!(
        "{}clients: {{send_timeout: 2s}}\n",
        sites_template(false, &[site("s", &[], addr, "robots.txt", &[])])
    );
    let proxy = ProxyBuilder::new(&template)
        .file("robots.txt", "User-agent: *\nAllow: /\n")
        .start();
    let mut stream = TcpStream::connect(("127.0.0.1", proxy.port)).unwrap();
    stream
        .write_all(b"GET /big HTTP/1.1\r\nHost: a\r\nUser-Agent: Firefox\r\n\r\n")
        .unwrap();
    // Reads nothing; crawlgate gives up on it.
    wait_for("the send timeout", || {
        metric_value(
            &proxy.metrics(),
            "crawlgate_client_timeouts_total{phase=\"send\"}",
        )
        .map(drop)
    });
    // The connection was closed: what is left to read ends, short of 64 MiB.
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut total = 0usize;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("the connection stayed open: {e}"),
        }
    }
    assert!(total < 64 << 20, "{total}");
}
