//! Reverse-DNS lookups are bounded (issue 22, item 2): a flood of crawler claims from new
//! addresses, against a name server that never answers, through the real proxy on loopback.
//! Each lookup holds a socket until `dns.timeout` (here longer than the test), so every lookup
//! started stays running: the counts below are exact, whatever the machine's speed. Over the
//! limits a claim is `unverifiable` at once and counted; the process's descriptors stay
//! bounded; people are answered throughout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::dns::DnsServer;
use harness::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MAX_LOOKUPS: usize = 64;
const PER_CLIENT: usize = 2;
const FLOOD_THREADS: usize = 16;
const FLOOD_PER_THREAD: usize = 125;

/// The whole flood must be over within this (a bound on the test, not its verdict).
const FLOOD_BOUND: Duration = Duration::from_secs(90);

fn config(origin: &Origin, dns: &DnsServer) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
trusted_proxies: [127.0.0.1/32]
verification:
  on_spoofed: tag
  dns:
    server: "{}"
    budget: 50ms
    timeout: 300s
    max_lookups: {MAX_LOOKUPS}
    max_lookups_per_client: {PER_CLIENT}
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "User-agent: *\nDisallow: /private/\n"}}
    action: tag
"#,
        dns.addr, origin.addr
    )
}

/// Open descriptors of a process.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A crawler claim from `from` (through the trusted proxy): its status.
fn claim(client: &reqwest::blocking::Client, proxy: &Proxy, ua: &str, from: &str) -> u16 {
    let response = client
        .get(proxy.url("/flood"))
        .header("user-agent", ua)
        .header("x-forwarded-for", from)
        .send()
        .unwrap();
    let status = response.status().as_u16();
    let _ = response.text();
    status
}

#[test]
fn a_flood_of_claims_against_a_silent_resolver_is_bounded_and_people_are_answered() {
    let origin = Origin::start();
    let dns = DnsServer::blackhole();
    let proxy = ProxyBuilder::new(&config(&origin, &dns)).start();
    let pid = proxy.child.id();
    let shed = |limit: &str| {
        proxy
            .metric(&format!(
                r#"crawlgate_dns_lookups_shed_total{{limit="{limit}"}}"#
            ))
            .unwrap_or(0.0) as usize
    };

    // One address claims five crawlers with reverse-DNS domains: two lookups start (and never
    // end), the other three are shed at once for that client.
    let client = harness::client();
    for ua in [
        GOOGLEBOT,
        "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
        "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)",
        "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
    ] {
        assert_eq!(claim(&client, &proxy, ua, "11.0.0.1"), 200, "{ua}");
    }
    assert_eq!(shed("client"), 3, "{}", proxy.metrics());
    assert_eq!(shed("instance"), 0);

    // A warm connection for people, and the process at rest.
    let people = harness::client();
    assert_eq!(
        people
            .get(proxy.url("/"))
            .header("user-agent", FIREFOX)
            .send()
            .unwrap()
            .status(),
        200
    );
    let (fds_before, rss_before) = (descriptors(pid), rss_kib(pid));

    // The flood: 2,000 Googlebot claims, each from an address of its own, on 16 connections;
    // people ask all along; descriptors and memory are sampled.
    let flooding = Arc::new(AtomicBool::new(true));
    let peak = Arc::new(Mutex::new((fds_before, rss_before)));
    let sampler = {
        let (flooding, peak) = (flooding.clone(), peak.clone());
        std::thread::spawn(move || {
            while flooding.load(Ordering::Relaxed) {
                let (fds, rss) = (descriptors(pid), rss_kib(pid));
                let mut peak = peak.lock().unwrap();
                *peak = (peak.0.max(fds), peak.1.max(rss));
                drop(peak);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let person = {
        let flooding = flooding.clone();
        let url = proxy.url("/person");
        std::thread::spawn(move || {
            let mut answers = Vec::new();
            while flooding.load(Ordering::Relaxed) || answers.len() < 50 {
                let start = Instant::now();
                let status = people
                    .get(&url)
                    .header("user-agent", FIREFOX)
                    .send()
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0);
                answers.push((status, start.elapsed()));
            }
            answers
        })
    };
    let start = Instant::now();
    let floods: Vec<_> = (0..FLOOD_THREADS)
        .map(|t| {
            let url = proxy.url("/flood");
            std::thread::spawn(move || {
                let client = harness::client();
                let mut statuses = Vec::new();
                for i in 0..FLOOD_PER_THREAD {
                    let from = format!("11.1.{t}.{i}");
                    let status = client
                        .get(&url)
                        .header("user-agent", GOOGLEBOT)
                        .header("x-forwarded-for", &from)
                        .send()
                        .map(|r| r.status().as_u16())
                        .unwrap_or(0);
                    statuses.push(status);
                }
                statuses
            })
        })
        .collect();
    let statuses: Vec<u16> = floods.into_iter().flat_map(|f| f.join().unwrap()).collect();
    let flood_time = start.elapsed();
    flooding.store(false, Ordering::Relaxed);
    let answers = person.join().unwrap();
    sampler.join().unwrap();
    let (fds_peak, rss_peak) = *peak.lock().unwrap();
    let mut people_times: Vec<Duration> = answers.iter().map(|(_, t)| *t).collect();
    people_times.sort();
    let running = proxy
        .metric("crawlgate_dns_lookups_in_flight")
        .unwrap_or(0.0) as usize;
    eprintln!(
        "dns flood: {} claims in {:.2} s; descriptors {fds_before} before, {fds_peak} at most; \
         RSS {:.1} MiB before, {:.1} MiB at most; people: {} requests, {} not 200, p50 {:.2} ms, \
         p99 {:.2} ms, max {:.2} ms; lookups running {running}; shed: instance {}, client {}; \
         questions the name server got: {}",
        statuses.len(),
        flood_time.as_secs_f64(),
        rss_before as f64 / 1024.0,
        rss_peak as f64 / 1024.0,
        answers.len(),
        answers.iter().filter(|(s, _)| *s != 200).count(),
        percentile(&people_times, 0.50).as_secs_f64() * 1e3,
        percentile(&people_times, 0.99).as_secs_f64() * 1e3,
        percentile(&people_times, 1.0).as_secs_f64() * 1e3,
        shed("instance"),
        shed("client"),
        dns.questions(),
    );

    assert!(flood_time < FLOOD_BOUND, "the flood took {flood_time:?}");
    // Every claim and every person was answered.
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    // Exactly the limit's worth of lookups run (two of them the first client's); every other
    // claim was shed, and none is still waiting.
    assert_eq!(running, MAX_LOOKUPS, "{}", proxy.metrics());
    assert_eq!(
        shed("instance"),
        FLOOD_THREADS * FLOOD_PER_THREAD - (MAX_LOOKUPS - PER_CLIENT)
    );
    assert_eq!(shed("client"), 3);
    // Only the lookups that run asked the name server: hickory sends a query up to three times
    // (each from a new socket) while no answer comes.
    wait_for("every running lookup's question", || {
        (dns.questions() >= MAX_LOOKUPS as u64).then_some(())
    });
    assert!(
        dns.questions() <= 3 * MAX_LOOKUPS as u64,
        "{}",
        dns.questions()
    );
    // Descriptors: beside what the process held at rest, at most three sockets per lookup
    // started during the flood, and two per connection (the client's and its upstream's) of the
    // flood and of the person.
    let bound = fds_before + 3 * (MAX_LOOKUPS - PER_CLIENT) + 2 * (FLOOD_THREADS + 1) + 8;
    assert!(
        fds_peak <= bound,
        "{fds_peak} descriptors, more than {bound} (at rest: {fds_before})"
    );

    // A claim shed is told why, in explain's words and the tag sent upstream.
    assert_eq!(claim(&client, &proxy, GOOGLEBOT, "11.2.0.1"), 200);
    let seen = origin.last("/flood").unwrap();
    assert_eq!(seen.headers["x-crawlgate-verified"], "unverifiable");
    assert_eq!(seen.headers["x-crawlgate-verified-by"], "reverse-dns");
}
