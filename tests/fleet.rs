//! A fleet of crawlgates behaves as one: two instances on loopback share a real `redis-server`
//! (or `valkey-server`) started by the test in its own folder. A crawler alternating between
//! them is held to one request per crawl-delay, a robots.txt fetch through one counts on the
//! other (for "robots_unread" and for grace), a reverse-DNS outcome learned by one is used by
//! the other, a signature used through one is a replay through the other, the store killed, wiped
//! and restarted mid-test fails no request, and a store that stops answering (SIGSTOP) is
//! decided around within the budget and reported until it answers again.
//!
//! The tests print a note and pass only when neither server binary is installed; `.ci/run`
//! installs `redis-server`, so CI always runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::dns::{a, ptr, DnsServer};
use harness::signer::{Signer, Signing};
use harness::store::StoreServer;
use harness::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// One instance of the fleet: the site (`action` for crawlers that break its rules; `tag` lets
/// the origin see the verdict headers), behind a trusted proxy (the load balancer, here the
/// test), keeping its state in `store`. The budget is generous so that a busy machine never
/// turns a verdict into a fallback: the fallback is tested by killing the store.
fn instance(origin: &Origin, store: &str, robots: &str, extra: &str, action: &str) -> Proxy {
    instance_with_budget(origin, store, robots, extra, action, "1s")
}

/// [`instance`] with another `state.budget`.
fn instance_with_budget(
    origin: &Origin,
    store: &str,
    robots: &str,
    extra: &str,
    action: &str,
    budget: &str,
) -> Proxy {
    let config = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
trusted_proxies: [127.0.0.1/32]
state: {{redis: "{store}", budget: {budget}}}
{extra}
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "{robots}"}}
    action: {action}
    crawl_delay: enforce
"#,
        origin.addr
    );
    ProxyBuilder::new(&config).start()
}

/// A GET from `client` (by X-Forwarded-For) with a User-Agent: its status, or 0 when no
/// response came.
fn status(proxy: &Proxy, path: &str, ua: &str, client: &str) -> u16 {
    harness::client()
        .get(proxy.url(path))
        .header("user-agent", ua)
        .header("x-forwarded-for", client)
        .send()
        .map_or(0, |r| r.status().as_u16())
}

const BOT: &str = "FooBot/1.0 (+https://foo.example/bot)";

#[test]
fn a_crawler_alternating_between_instances_is_held_to_one_request_per_crawl_delay() {
    let Some(store) = StoreServer::start() else {
        return;
    };
    let origin = Origin::start();
    let robots = "User-agent: *\\nCrawl-delay: 3\\n";
    let a = instance(&origin, &store.url(), robots, "", "block");
    let b = instance(&origin, &store.url(), robots, "", "block");
    let bot = "198.51.100.1";
    assert_eq!(status(&a, "/one", BOT, bot), 200);
    // The other instance knows the slot is taken: 429 with the fleet's wait.
    let response = harness::client()
        .get(b.url("/two"))
        .header("user-agent", BOT)
        .header("x-forwarded-for", bot)
        .send()
        .unwrap();
    assert_eq!(response.status(), 429, "{}", b.logs());
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3).contains(&retry), "Retry-After: {retry}");
    assert_eq!(status(&a, "/three", BOT, bot), 429);
    assert!(origin.last("/two").is_none() && origin.last("/three").is_none());
    // Once the delay has passed, whichever instance it comes to lets it in, and the other one
    // then refuses it again.
    wait_for("the crawl-delay to pass", || {
        (status(&b, "/four", BOT, bot) == 200).then_some(())
    });
    assert_eq!(status(&a, "/five", BOT, bot), 429);
    // Another client of the same unnamed crawler has its own slot, fleet-wide too.
    assert_eq!(status(&b, "/six", BOT, "198.51.100.2"), 200);
    assert_eq!(status(&a, "/seven", BOT, "198.51.100.2"), 429);
    // People never wait.
    for proxy in [&a, &b, &a] {
        assert_eq!(status(proxy, "/page", FIREFOX, bot), 200);
    }
    let forwarded = origin.seen().iter().filter(|s| s.path != "/page").count();
    assert_eq!(forwarded, 3, "{:?}", origin.seen());
    for proxy in [&a, &b] {
        let errors = proxy
            .metrics()
            .lines()
            .filter(|l| l.starts_with("crawlgate_state_store_errors_total"))
            .count();
        assert_eq!(errors, 0, "{}", proxy.metrics());
        assert_eq!(proxy.health(), (200, "ok\n".to_owned()));
    }
}

#[test]
fn a_robots_txt_fetch_through_one_instance_counts_on_the_other() {
    let Some(store) = StoreServer::start() else {
        return;
    };
    let origin = Origin::start();
    let robots = "User-agent: *\\nDisallow: /private/\\n";
    let a = instance(&origin, &store.url(), robots, "", "tag");
    let b = instance(&origin, &store.url(), robots, "", "tag");
    let unread = |seen: Option<Seen>| {
        seen.unwrap()
            .headers
            .get("x-crawlgate-robots-unread")
            .cloned()
    };
    // Not read yet: both instances say so.
    assert_eq!(status(&b, "/before", BOT, "192.0.2.10"), 200);
    assert_eq!(unread(origin.last("/before")).as_deref(), Some("1"));
    assert_eq!(status(&a, "/robots.txt", BOT, "192.0.2.10"), 200);
    // Read through a: b knows.
    assert_eq!(status(&b, "/after", BOT, "192.0.2.10"), 200);
    assert_eq!(unread(origin.last("/after")), None);
    let metric = r#"crawlgate_requests_without_robots_fetch_total{bot="unnamed",site="site"}"#;
    assert_eq!(b.metric(metric), Some(1.0), "{}", b.metrics());
    assert_eq!(a.metric(metric), None, "{}", a.metrics());
    // An unnamed crawler's fetch is its own address's: another address has not read it.
    assert_eq!(status(&b, "/other", BOT, "192.0.2.11"), 200);
    assert_eq!(unread(origin.last("/other")).as_deref(), Some("1"));
}

#[test]
fn a_robots_txt_fetch_through_one_instance_earns_grace_on_the_other() {
    let Some(store) = StoreServer::start() else {
        return;
    };
    let origin = Origin::start();
    let config = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
trusted_proxies: [127.0.0.1/32]
state: {{redis: "{}", budget: 1s}}
sites:
  - name: site
    upstream: "{}"
    robots: {{file: robots.txt}}
"#,
        store.url(),
        origin.addr
    );
    let old = "User-agent: *\nDisallow: /private/\n";
    let a = ProxyBuilder::new(&config).file("robots.txt", old).start();
    let b = ProxyBuilder::new(&config).file("robots.txt", old).start();
    let bot = "192.0.2.20";
    // The crawler reads the file through a.
    assert_eq!(status(&a, "/robots.txt", BOT, bot), 200);
    for proxy in [&a, &b] {
        write_atomically(&proxy.path("robots.txt"), b"User-agent: *\nDisallow: /\n");
    }
    for proxy in [&a, &b] {
        wait_for("the new file", || {
            (status(proxy, "/blog", BOT, "192.0.2.21") == 403).then_some(())
        });
    }
    // b never saw it read robots.txt, yet judges it by the file it read: grace.
    assert_eq!(status(&b, "/blog", BOT, bot), 200);
    let grace = r#"crawlgate_requests_total{action="forwarded",bot="unnamed",category="unnamed",site="site",verdict="grace",verified="unverifiable"}"#;
    assert_eq!(b.metric(grace), Some(1.0), "{}", b.metrics());
    assert_eq!(status(&b, "/private/x", BOT, bot), 403);
}

#[test]
fn a_reverse_dns_outcome_learned_by_one_instance_is_used_by_the_other() {
    let Some(store) = StoreServer::start() else {
        return;
    };
    let origin = Origin::start();
    let dns = DnsServer::start(
        vec![
            ptr("66.249.66.1", "crawl-66-249-66-1.googlebot.com."),
            a("crawl-66-249-66-1.googlebot.com.", "66.249.66.1"),
        ],
        Vec::new(),
    );
    let verification = format!(
        "verification:\n  reverse_dns: {{Googlebot: [googlebot.com]}}\n  dns: {{server: \"{}\", budget: 5s, timeout: 5s}}\n",
        dns.addr
    );
    let robots = "User-agent: *\\nDisallow: /private/\\n";
    let a = instance(&origin, &store.url(), robots, &verification, "tag");
    let b = instance(&origin, &store.url(), robots, &verification, "tag");
    let verified = |path: &str| origin.last(path).unwrap().headers["x-crawlgate-verified"].clone();
    assert_eq!(status(&a, "/a", GOOGLEBOT, "66.249.66.1"), 200);
    assert_eq!(verified("/a"), "verified");
    let asked = dns.questions();
    assert!(asked >= 2, "a PTR and an A question: {asked}");
    // b has never seen this address: it takes a's outcome from the store, asks no DNS.
    assert_eq!(status(&b, "/b", GOOGLEBOT, "66.249.66.1"), 200);
    assert_eq!(verified("/b"), "verified");
    assert_eq!(dns.questions(), asked);
    let shared = r#"crawlgate_dns_lookups_total{result="shared"}"#;
    assert_eq!(b.metric(shared), Some(1.0), "{}", b.metrics());
}

/// A signed GET on the shared Host both instances serve, from `client`: its status.
fn signed(proxy: &Proxy, path: &str, ua: &str, client: &str, headers: &[(&str, String)]) -> u16 {
    let mut request = harness::client()
        .get(proxy.url(path))
        .header("host", "shop.example")
        .header("user-agent", ua)
        .header("x-forwarded-for", client);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request.send().map_or(0, |r| r.status().as_u16())
}

/// Issue 22: a signature's use is shared through the store, so that a signature captured from
/// a request through one instance is a replay through the other, and a nonce is used once in
/// the whole fleet.
#[test]
fn a_signature_used_through_one_instance_is_a_replay_through_the_other() {
    let Some(store) = StoreServer::start() else {
        return;
    };
    let origin = Origin::start();
    let signer = Signer::new(41);
    let keys = tempfile::tempdir().unwrap();
    let jwks = keys.path().join("signer.json");
    std::fs::write(&jwks, signer.jwks()).unwrap();
    let verification = format!(
        "verification:\n  signatures:\n    directories:\n      - {{url: \"https://agent.example\", bot: ChatGPT-User, jwks: \"{}\"}}\n",
        jwks.display()
    );
    let robots = "User-agent: *\\nDisallow: /private/\\n";
    let a = instance(&origin, &store.url(), robots, &verification, "tag");
    let b = instance(&origin, &store.url(), robots, &verification, "tag");
    let chatgpt = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot";
    let verified = |path: &str| origin.last(path).unwrap().headers["x-crawlgate-verified"].clone();
    let (real, forger) = ("198.51.100.7", "203.0.113.66");

    let mut bare = Signing::new(&signer, "shop.example", "https://agent.example");
    bare.nonce = None;
    let bare = bare.headers();
    assert_eq!(signed(&a, "/a1", chatgpt, real, &bare), 200, "{}", a.logs());
    assert_eq!(verified("/a1"), "verified");
    // Through the other instance, from another client: a replay.
    assert_eq!(signed(&b, "/b1", chatgpt, forger, &bare), 429);
    // Its first user, through the other instance: still its own.
    assert_eq!(signed(&b, "/b2", chatgpt, real, &bare), 200);
    assert_eq!(verified("/b2"), "verified");

    // A nonce used through one instance is used for the whole fleet.
    let once = Signing::new(&signer, "shop.example", "https://agent.example").headers();
    assert_eq!(signed(&a, "/a2", chatgpt, real, &once), 200);
    assert_eq!(signed(&b, "/b3", chatgpt, real, &once), 429);
    let replayed =
        r#"crawlgate_signatures_total{bot="ChatGPT-User",result="replayed",site="site"}"#;
    assert_eq!(b.metric(replayed), Some(2.0), "{}", b.metrics());
    // Two uses in the store, each a digest under crawlgate:sig:.
    assert_eq!(
        store
            .command("EVAL \"return #redis.call('KEYS', 'crawlgate:sig:*')\" 0")
            .as_deref(),
        Some(":2")
    );
}

#[test]
fn the_store_killed_wiped_and_restarted_fails_no_request() {
    let Some(mut store) = StoreServer::start() else {
        return;
    };
    let origin = Origin::start();
    let robots = "User-agent: *\\nCrawl-delay: 60\\nDisallow: /private/\\n";
    let a = Arc::new(instance(&origin, &store.url(), robots, "", "block"));
    let b = Arc::new(instance(&origin, &store.url(), robots, "", "block"));
    let stop = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicU64::new(0));
    let total = Arc::new(AtomicU64::new(0));
    // Load through both instances all along: people (always 200) and crawlers from many
    // addresses (200 for a first visit, 429 within the delay; never anything else).
    let workers: Vec<_> = (0..2)
        .map(|worker| {
            let (a, b) = (a.clone(), b.clone());
            let (stop, failures, total) = (stop.clone(), failures.clone(), total.clone());
            std::thread::spawn(move || {
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let proxy = if i % 2 == 0 { &a } else { &b };
                    let client = format!("203.0.113.{}", (i / 2) % 50 + worker * 100);
                    let person = status(proxy, "/page", FIREFOX, &client);
                    let bot = status(proxy, "/crawl", BOT, &client);
                    if person != 200 {
                        failures.fetch_add(1, Ordering::Relaxed);
                        eprintln!("person: {person}");
                    }
                    if bot != 200 && bot != 429 {
                        failures.fetch_add(1, Ordering::Relaxed);
                        eprintln!("crawler: {bot}");
                    }
                    total.fetch_add(2, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let sent = |at_least: u64| {
        let from = total.load(Ordering::Relaxed);
        wait_for("requests to go through", || {
            (total.load(Ordering::Relaxed) >= from + at_least).then_some(())
        });
    };
    sent(40);
    store.kill();
    for proxy in [&a, &b] {
        let body = wait_for("/healthz to report the store down", || {
            let (status, body) = proxy.health();
            body.starts_with("degraded").then_some((status, body))
        });
        assert_eq!(body.0, 200, "degraded is not failing: {}", body.1);
        assert!(body.1.contains("state store"), "{}", body.1);
    }
    sent(40);
    store.spawn();
    for proxy in [&a, &b] {
        wait_for("/healthz to report the store back", || {
            (proxy.health() == (200, "ok\n".to_owned())).then_some(())
        });
    }
    sent(40);
    // Wiped: every slot and fetch forgotten at once.
    assert_eq!(store.command("FLUSHALL").as_deref(), Some("+OK"));
    sent(40);
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "of {} requests",
        total.load(Ordering::Relaxed)
    );
    for proxy in [&a, &b] {
        let errors: f64 = proxy
            .metrics()
            .lines()
            .filter(|l| l.starts_with("crawlgate_state_store_errors_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        assert!(errors >= 1.0, "{}", proxy.metrics());
        assert_eq!(
            proxy.metric(r#"crawlgate_state_store_up{store="redis"}"#),
            Some(1.0)
        );
    }
    // Sharing resumed: a new crawler is held fleet-wide again.
    assert_eq!(status(&a, "/resumed", BOT, "192.0.2.200"), 200);
    assert_eq!(status(&b, "/resumed", BOT, "192.0.2.200"), 429);
}

#[test]
fn a_store_slower_than_the_budget_is_decided_around_and_reported() {
    let Some(store) = StoreServer::start() else {
        return;
    };
    let origin = Origin::start();
    let robots = "User-agent: *\\nCrawl-delay: 60\\n";
    let a = instance_with_budget(&origin, &store.url(), robots, "", "block", "200ms");
    assert_eq!(status(&a, "/first", BOT, "192.0.2.1"), 200);
    store.signal("STOP");
    // The store holds the request: after the budget, the instance decides from its own memory,
    // which the store's answers were copied into. One late answer is not the store down.
    assert_eq!(status(&a, "/slow", BOT, "192.0.2.1"), 429);
    assert_eq!(status(&a, "/slow", BOT, "192.0.2.2"), 200);
    assert_eq!(status(&a, "/slow", FIREFOX, "192.0.2.3"), 200);
    let timeout = r#"crawlgate_state_store_errors_total{reason="timeout"}"#;
    assert!(
        a.metric(timeout).is_some_and(|n| n >= 1.0),
        "{}",
        a.metrics()
    );
    // Three in a row are: no more waiting, until a probe gets an answer.
    let unavailable = r#"crawlgate_state_store_errors_total{reason="unavailable"}"#;
    wait_for("the store to count as down", || {
        assert_eq!(status(&a, "/slow", BOT, "192.0.2.2"), 429);
        a.metric(unavailable).filter(|n| *n >= 1.0)
    });
    let (code, body) = a.health();
    assert_eq!(code, 200, "{body}");
    assert!(
        body.starts_with("degraded\n") && body.contains("state store"),
        "{body}"
    );
    store.signal("CONT");
    wait_for("/healthz to report the store back", || {
        (a.health() == (200, "ok\n".to_owned())).then_some(())
    });
    assert_eq!(
        a.metric(r#"crawlgate_state_store_up{store="redis"}"#),
        Some(1.0)
    );
}
