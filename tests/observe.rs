//! Observe mode, the first week in front of a site: the real crawlgate binary refuses nothing,
//! and its metrics, access log and `explain` say what enforcing would have done.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::process::Command;

/// GPTBot may not fetch `/private/`, and asks everyone to wait 30 s between requests.
const ROBOTS: &str = "User-agent: GPTBot\nDisallow: /private/\nCrawl-delay: 30\n";

fn observing(origin: &Origin, mode: &str) -> Proxy {
    let template = sites_template(
        true,
        &[site(
            "shop",
            &[],
            origin.addr,
            "robots.txt",
            &["action: block", "crawl_delay: enforce", mode],
        )],
    );
    ProxyBuilder::new(&template)
        .file("robots.txt", ROBOTS)
        .start()
}

fn access_log(proxy: &Proxy, lines: usize) -> Vec<serde_json::Value> {
    let log = proxy.path("access.jsonl");
    wait_for("the access log lines", || {
        let text = std::fs::read_to_string(&log).ok()?;
        let entries: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        (entries.len() >= lines).then_some(entries)
    })
}

/// What enforcing would refuse reaches the origin, and is recorded as what it would have been.
fn refuses_nothing_and_records_what_it_would_have_refused(proxy: &Proxy, origin: &Origin) {
    let (status, body, _) = get(&proxy.url("/private/report"), GPTBOT, None);
    assert_eq!((status, body.as_str()), (200, "origin: /private/report"));
    // An allowed fetch, then another within its crawl-delay: enforcing would answer 429.
    for path in ["/public/page", "/public/other"] {
        let (status, body, _) = get(&proxy.url(path), GPTBOT, None);
        assert_eq!((status, body), (200, format!("origin: {path}")));
    }
    for path in ["/private/report", "/public/page", "/public/other"] {
        assert!(origin.last(path).is_some(), "{path}");
    }
    // robots.txt is still what crawlers are told, and people are untouched.
    let (status, robots, _) = get(&proxy.url("/robots.txt"), GPTBOT, None);
    assert_eq!((status, robots.as_str()), (200, ROBOTS));
    assert_eq!(get(&proxy.url("/private/x"), FIREFOX, None).0, 200);

    let would_block = r#"crawlgate_requests_total{action="would_block",bot="GPTBot",category="ai-training",site="shop",verdict="disallowed",verified="unverifiable"}"#;
    let would_throttle = r#"crawlgate_requests_total{action="would_throttle",bot="GPTBot",category="ai-training",site="shop",verdict="allowed",verified="unverifiable"}"#;
    // This one is labelled by the crawl-delay mode configured.
    let delay =
        r#"crawlgate_crawl_delay_exceeded_total{action="enforce",bot="GPTBot",site="shop"}"#;
    let metrics = proxy.metrics();
    for series in [would_block, would_throttle, delay] {
        assert!(
            metrics.contains(&format!("{series} 1")),
            "{series}:\n{metrics}"
        );
    }
    assert!(!metrics.contains(r#"action="blocked""#), "{metrics}");
    assert!(!metrics.contains(r#"action="throttled""#), "{metrics}");

    let entries = access_log(proxy, 4);
    let seen: Vec<(&str, &str, u64)> = entries
        .iter()
        .filter(|e| e["path"] != "/robots.txt")
        .map(|e| {
            (
                e["path"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("/private/report", "would_block", 200),
            ("/public/page", "forwarded", 200),
            ("/public/other", "would_throttle", 200)
        ]
    );
}

#[test]
fn mode_observe_in_the_configuration_refuses_nothing_and_says_what_it_would_have_done() {
    let origin = Origin::start();
    let proxy = observing(&origin, "mode: observe");
    refuses_nothing_and_records_what_it_would_have_refused(&proxy, &origin);

    // `explain` on the same configuration says the same.
    let output = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(["explain", "--config", proxy.config.to_str().unwrap()])
        .args(["--ua", GPTBOT, "--ip", "127.0.0.1", "--no-dns"])
        .arg("http://shop.test/private/report")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains(
            "block → would_block (mode observe: forwarded; enforcing, crawlgate answers 403)"
        ),
        "{text}"
    );
}

#[test]
fn serve_observe_overrides_a_configuration_that_blocks() {
    let origin = Origin::start();
    let template = sites_template(
        true,
        &[site(
            "shop",
            &[],
            origin.addr,
            "robots.txt",
            &[
                "action: block",
                "crawl_delay: enforce",
                "bots: {GPTBot: block}",
            ],
        )],
    );
    let proxy = ProxyBuilder::new(&template)
        .file("robots.txt", ROBOTS)
        .args(&["--observe"])
        .start();
    refuses_nothing_and_records_what_it_would_have_refused(&proxy, &origin);
}

#[test]
fn the_same_configuration_enforcing_refuses() {
    let origin = Origin::start();
    let proxy = observing(&origin, "mode: enforce");
    assert_eq!(get(&proxy.url("/private/report"), GPTBOT, None).0, 403);
    assert_eq!(get(&proxy.url("/public/page"), GPTBOT, None).0, 200);
    assert_eq!(get(&proxy.url("/public/other"), GPTBOT, None).0, 429);
    assert!(origin.last("/private/report").is_none());
}
