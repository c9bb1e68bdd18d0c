//! Crawler identity and politeness through the real proxy on loopback: verification by
//! published ranges (IPv4 and IPv6) and by forward-confirmed reverse DNS against a DNS server
//! the test runs, the trusted-proxy rule, DNS timeouts, crawl-delay, the grace verdict across a
//! robots.txt change, "never read robots.txt", bounded memory, `explain` and `ranges update`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::dns::{a, aaaa, ptr, reverse, DnsServer};
use harness::*;
use std::time::Duration;

const GOOGLE_RANGES: &str = r#"{"creationTime": "2026-11-01T00:00:00.000000", "prefixes": [
  {"ipv4Prefix": "66.249.64.0/19"}, {"ipv6Prefix": "2001:4860:4801::/48"}]}"#;

/// A GET with extra headers; returns status, body and what the origin saw of it.
fn request(
    proxy: &Proxy,
    origin: &Origin,
    path: &str,
    ua: &str,
    xff: Option<&str>,
) -> (u16, String, Option<Seen>) {
    let mut builder = client().get(proxy.url(path)).header("user-agent", ua);
    if let Some(xff) = xff {
        builder = builder.header("x-forwarded-for", xff);
    }
    let response = builder.send().unwrap();
    let status = response.status().as_u16();
    let body = response.text().unwrap();
    (status, body, origin.last(path))
}

fn tagging_site(origin: &Origin, extra_top: &str, robots: &str) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
access_log: "{{dir}}/access.jsonl"
pingora: {{threads: 1}}
{extra_top}
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "{robots}"}}
    action: tag
"#,
        origin.addr
    )
}

#[test]
fn published_ranges_verify_or_refute_ipv4_and_ipv6_clients() {
    let origin = Origin::start();
    let config = tagging_site(
        &origin,
        "trusted_proxies: [127.0.0.1/32, \"::1\"]\nverification:\n  ranges: {Googlebot: googlebot.json}\n  on_spoofed: block\n",
        "User-agent: *\\nDisallow: /private/\\n",
    );
    let proxy = ProxyBuilder::new(&config)
        .file("googlebot.json", GOOGLE_RANGES)
        .start();
    for (xff, verified) in [
        ("66.249.66.1", true),
        ("203.0.113.9", false),
        ("2001:4860:4801:10::1", true),
        ("2001:db8::1", false),
    ] {
        let path = format!("/page-{}", xff.replace([':', '.'], "-"));
        let (status, body, seen) = request(&proxy, &origin, &path, GOOGLEBOT, Some(xff));
        if verified {
            assert_eq!(status, 200, "{xff}: {body}");
            assert_eq!(
                seen.unwrap().headers["x-crawlgate-verified"],
                "verified",
                "{xff}"
            );
        } else {
            assert_eq!(status, 403, "{xff}");
            assert!(
                body.contains(&format!("but {xff} is not Googlebot's")),
                "{body}"
            );
            assert!(seen.is_none(), "a spoofed request reached the origin");
        }
    }
    let spoofed = r#"crawlgate_requests_total{action="blocked",bot="Googlebot",category="search",site="site",verdict="allowed",verified="spoofed"}"#;
    assert_eq!(proxy.metric(spoofed), Some(2.0), "{}", proxy.metrics());
    for (result, count) in [("verified", 2.0), ("spoofed", 2.0)] {
        let by_ranges = format!(
            r#"crawlgate_verifications_total{{bot="Googlebot",method="ranges",result="{result}",site="site"}}"#
        );
        assert_eq!(proxy.metric(&by_ranges), Some(count), "{}", proxy.metrics());
    }
}

#[test]
fn an_ipv6_peer_is_verified_by_its_own_address() {
    let origin = Origin::start();
    let v6_port = free_port();
    let config = tagging_site(
        &origin,
        "verification:\n  ranges: {Googlebot: loopback.json}\n",
        "User-agent: *\\nDisallow: /private/\\n",
    )
    .replace(
        r#"listen: ["{listen}"]"#,
        &format!(r#"listen: ["{{listen}}", "[::1]:{v6_port}"]"#),
    );
    // An IPv4 prefix too: a list refutes only addresses of a family it lists.
    let loopback = r#"{"prefixes": [{"ipv6Prefix": "::1/128"}, {"ipv4Prefix": "192.0.2.0/24"}]}"#;
    let proxy = ProxyBuilder::new(&config)
        .file("loopback.json", loopback)
        .start();
    wait_for("the IPv6 listener", || {
        std::net::TcpStream::connect(("::1", v6_port)).ok()
    });
    let url = format!("http://[::1]:{v6_port}/v6");
    let response = client()
        .get(url)
        .header("user-agent", GOOGLEBOT)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        origin.last("/v6").unwrap().headers["x-crawlgate-verified"],
        "verified"
    );
    // Over IPv4 the same claim is refuted: 127.0.0.1 is outside the list.
    let (status, body, _) = request(&proxy, &origin, "/v4", GOOGLEBOT, None);
    assert_eq!(status, 403);
    assert!(
        body.contains("outside Googlebot's published ranges"),
        "{body}"
    );
}

#[test]
fn forwarded_headers_from_an_untrusted_peer_are_ignored() {
    let origin = Origin::start();
    let config = tagging_site(
        &origin,
        "trusted_proxies: [10.0.0.0/8]\nverification:\n  ranges: {Googlebot: googlebot.json}\n",
        "User-agent: *\\nDisallow: /private/\\n",
    );
    let proxy = ProxyBuilder::new(&config)
        .file("googlebot.json", GOOGLE_RANGES)
        .start();
    // 127.0.0.1 is not a trusted proxy: its X-Forwarded-For is a claim like any other.
    let (status, body, _) = request(&proxy, &origin, "/x", GOOGLEBOT, Some("66.249.66.1"));
    assert_eq!(status, 403);
    assert!(body.contains("but 127.0.0.1 is not Googlebot's"), "{body}");
}

fn dns_site(origin: &Origin, dns: &DnsServer, budget: &str) -> String {
    tagging_site(
        origin,
        &format!(
            "trusted_proxies: [127.0.0.1/32]\nverification:\n  reverse_dns: {{Googlebot: [googlebot.com, google.com]}}\n  on_spoofed: tag\n  dns: {{server: \"{}\", budget: {budget}, timeout: 5s}}\n",
            dns.addr
        ),
        "User-agent: *\\nDisallow: /private/\\n",
    )
}

#[test]
fn reverse_dns_verifies_forward_confirmed_names_only() {
    let origin = Origin::start();
    let dns = DnsServer::start(
        vec![
            ptr("66.249.66.1", "crawl-66-249-66-1.googlebot.com."),
            a("crawl-66-249-66-1.googlebot.com.", "66.249.66.1"),
            ptr("2001:4860:4801:10::7", "crawl-v6.googlebot.com."),
            aaaa("crawl-v6.googlebot.com.", "2001:4860:4801:10::7"),
            ptr("192.0.2.7", "fake.example.net."),
            a("fake.example.net.", "192.0.2.7"),
            // A PTR under googlebot.com that does not resolve back.
            ptr("192.0.2.8", "crawl-liar.googlebot.com."),
            a("crawl-liar.googlebot.com.", "192.0.2.99"),
        ],
        Vec::new(),
    );
    // A generous budget: this test is about the answers, not the clock.
    let proxy = ProxyBuilder::new(&dns_site(&origin, &dns, "5s")).start();
    for (xff, expected) in [
        ("66.249.66.1", "verified"),
        ("2001:4860:4801:10::7", "verified"),
        ("192.0.2.7", "spoofed"),
        ("192.0.2.8", "spoofed"),
        // No PTR record at all.
        ("192.0.2.9", "spoofed"),
    ] {
        let path = format!("/dns-{}", xff.replace([':', '.'], "-"));
        let (status, _, seen) = request(&proxy, &origin, &path, GOOGLEBOT, Some(xff));
        assert_eq!(status, 200, "on_spoofed: tag forwards");
        assert_eq!(
            seen.unwrap().headers["x-crawlgate-verified"],
            expected,
            "{xff}"
        );
    }
    // The second time, the answer comes from the cache.
    request(&proxy, &origin, "/again", GOOGLEBOT, Some("66.249.66.1"));
    let cached = r#"crawlgate_dns_lookups_total{result="cached"}"#;
    assert_eq!(proxy.metric(cached), Some(1.0), "{}", proxy.metrics());
    let by_dns = r#"crawlgate_verifications_total{bot="Googlebot",method="reverse-dns",result="verified",site="site"}"#;
    assert_eq!(proxy.metric(by_dns), Some(3.0), "{}", proxy.metrics());
}

#[test]
fn a_slow_dns_answer_is_unverifiable_until_it_arrives() {
    let origin = Origin::start();
    let dns = DnsServer::start(
        vec![
            ptr("66.249.66.2", "crawl-66-249-66-2.googlebot.com."),
            a("crawl-66-249-66-2.googlebot.com.", "66.249.66.2"),
        ],
        vec![(reverse("66.249.66.2"), Duration::from_millis(1500))],
    );
    let proxy = ProxyBuilder::new(&dns_site(&origin, &dns, "100ms")).start();
    let (status, _, seen) = request(&proxy, &origin, "/slow-1", GOOGLEBOT, Some("66.249.66.2"));
    assert_eq!(status, 200);
    assert_eq!(
        seen.unwrap().headers["x-crawlgate-verified"],
        "unverifiable"
    );
    // The lookup goes on in the background; a later request gets its answer from the cache.
    wait_for("the cached DNS answer", || {
        let (_, _, seen) = request(&proxy, &origin, "/slow-2", GOOGLEBOT, Some("66.249.66.2"));
        (seen?.headers["x-crawlgate-verified"] == "verified").then_some(())
    });
    // One lookup served every request: no second lookup was started while it ran.
    let lookups = proxy.metrics();
    assert_eq!(
        metric_value(
            &lookups,
            r#"crawlgate_dns_lookups_total{result="verified"}"#
        ),
        Some(1.0),
        "{lookups}"
    );
}

#[test]
fn crawl_delay_is_enforced_with_retry_after_and_recovers() {
    let origin = Origin::start();
    let config = tagging_site(
        &origin,
        "trusted_proxies: [127.0.0.1/32]\n",
        "User-agent: *\\nCrawl-delay: 2\\nDisallow: /private/\\n",
    )
    .replace(
        "    action: tag\n",
        "    action: block\n    crawl_delay: enforce\n",
    );
    let proxy = ProxyBuilder::new(&config).start();
    let bot = "FooBot/1.0 (+https://foo.example/bot)";
    let (status, _, _) = request(&proxy, &origin, "/one", bot, Some("198.51.100.1"));
    assert_eq!(status, 200);
    let response = client()
        .get(proxy.url("/two"))
        .header("user-agent", bot)
        .header("x-forwarded-for", "198.51.100.1")
        .send()
        .unwrap();
    assert_eq!(response.status(), 429);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry), "Retry-After: {retry}");
    assert!(origin.last("/two").is_none());
    // Another client of the same unnamed crawler has its own slot.
    assert_eq!(
        request(&proxy, &origin, "/three", bot, Some("198.51.100.2")).0,
        200
    );
    // And after the delay, the first one may come again.
    wait_for("the crawl-delay to pass", || {
        (request(&proxy, &origin, "/four", bot, Some("198.51.100.1")).0 == 200).then_some(())
    });
    let exceeded =
        r#"crawlgate_crawl_delay_exceeded_total{action="enforce",bot="unnamed",site="site"}"#;
    assert!(
        proxy.metric(exceeded).is_some_and(|n| n >= 1.0),
        "{}",
        proxy.metrics()
    );
}

#[test]
fn crawl_delay_never_paces_apps_proxies_for_a_person_or_the_sites_own_services() {
    let origin = Origin::start();
    let config = tagging_site(
        &origin,
        "trusted_proxies: [127.0.0.1/32]\n",
        "User-agent: *\\nCrawl-delay: 60\\n",
    )
    .replace(
        "    action: tag\n",
        "    action: block\n    crawl_delay: enforce\n",
    );
    let proxy = ProxyBuilder::new(&config).start();
    // Gmail opening a newsletter's images, every visitor of a CloudFront distribution that does
    // not forward User-Agent, a payment provider's webhooks, and apps on an HTTP client's
    // default header (Android's OkHttp, Flutter's Dart): one address each, one after the
    // other, well within the delay.
    for ua in [
        "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)",
        "Amazon CloudFront",
        "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
        "okhttp/4.12.0",
        "Dart/3.2 (dart:io)",
    ] {
        for path in ["/a.png", "/b.png", "/c.png"] {
            let (status, _, _) = request(&proxy, &origin, path, ua, Some("198.51.100.7"));
            assert_eq!(status, 200, "{ua} {path}");
        }
    }
    // A crawler from the same address is still paced.
    let bot = "FooBot/1.0 (+https://foo.example/bot)";
    assert_eq!(
        request(&proxy, &origin, "/one", bot, Some("198.51.100.7")).0,
        200
    );
    assert_eq!(
        request(&proxy, &origin, "/two", bot, Some("198.51.100.7")).0,
        429
    );
}

#[test]
fn crawl_delay_in_tag_mode_tells_the_origin() {
    let origin = Origin::start();
    let config = tagging_site(&origin, "", "User-agent: *\\nCrawl-delay: 30\\n").replace(
        "    action: tag\n",
        "    action: tag\n    crawl_delay: tag\n",
    );
    let proxy = ProxyBuilder::new(&config).start();
    let (_, _, first) = request(&proxy, &origin, "/t1", GOOGLEBOT, None);
    assert!(!first
        .unwrap()
        .headers
        .contains_key("x-crawlgate-crawl-delay"));
    let (status, _, second) = request(&proxy, &origin, "/t2", GOOGLEBOT, None);
    assert_eq!(status, 200);
    assert_eq!(
        second.unwrap().headers["x-crawlgate-crawl-delay"],
        "exceeded"
    );
}

#[test]
fn a_crawler_that_read_the_previous_file_gets_a_grace_verdict() {
    let origin = Origin::start();
    let config = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
sites:
  - name: site
    upstream: "{}"
    robots: {{file: robots.txt}}
"#,
        origin.addr
    );
    let proxy = ProxyBuilder::new(&config)
        .file("robots.txt", "User-agent: *\nDisallow: /private/\n")
        .start();
    // Googlebot reads the file in force.
    assert_eq!(get(&proxy.url("/robots.txt"), GOOGLEBOT, None).0, 200);
    write_atomically(&proxy.path("robots.txt"), b"User-agent: *\nDisallow: /\n");
    // A crawler that never read robots.txt sees the new rules at once.
    wait_for("the new file", || {
        (get(&proxy.url("/blog"), "CCBot/2.0", None).0 == 403).then_some(())
    });
    // Googlebot acts on the file it read, which allowed /blog: grace, not a violation.
    let (status, body, _) = get(&proxy.url("/blog"), GOOGLEBOT, None);
    assert_eq!(status, 200, "{body}");
    let grace = r#"crawlgate_requests_total{action="forwarded",bot="Googlebot",category="search",site="site",verdict="grace",verified="unverifiable"}"#;
    assert_eq!(proxy.metric(grace), Some(1.0), "{}", proxy.metrics());
    // What the old file disallowed stays disallowed.
    assert_eq!(get(&proxy.url("/private/x"), GOOGLEBOT, None).0, 403);
    // Once it reads the new file, the new rules apply.
    get(&proxy.url("/robots.txt"), GOOGLEBOT, None);
    assert_eq!(get(&proxy.url("/blog"), GOOGLEBOT, None).0, 403);
}

#[test]
fn crawlers_that_never_read_robots_txt_are_counted() {
    let origin = Origin::start();
    let config = tagging_site(&origin, "", "User-agent: *\\nDisallow: /private/\\n");
    let proxy = ProxyBuilder::new(&config).start();
    let (_, _, seen) = request(&proxy, &origin, "/unread", GOOGLEBOT, None);
    assert_eq!(seen.unwrap().headers["x-crawlgate-robots-unread"], "1");
    request(&proxy, &origin, "/robots.txt", GOOGLEBOT, None);
    let (_, _, seen) = request(&proxy, &origin, "/read", GOOGLEBOT, None);
    assert!(!seen
        .unwrap()
        .headers
        .contains_key("x-crawlgate-robots-unread"));
    let unread = r#"crawlgate_requests_without_robots_fetch_total{bot="Googlebot",site="site"}"#;
    assert_eq!(proxy.metric(unread), Some(1.0));
    let log = wait_for("the access log", || {
        let text = std::fs::read_to_string(proxy.path("access.jsonl")).ok()?;
        (text.lines().count() >= 3).then_some(text)
    });
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(first["robots_unread"], true);
    assert_eq!(first["verified"], "unverifiable");
}

#[test]
fn memory_stays_bounded_under_many_distinct_clients() {
    let origin = Origin::start();
    let config = tagging_site(
        &origin,
        "trusted_proxies: [127.0.0.1/32]\npoliteness: {max_tracked: 50}\n",
        "User-agent: *\\nCrawl-delay: 60\\n",
    )
    .replace(
        "    action: tag\n",
        "    action: count\n    crawl_delay: count\n",
    );
    let proxy = ProxyBuilder::new(&config).start();
    let http = client();
    for i in 0..600u32 {
        let xff = format!("198.18.{}.{}", i / 250, i % 250 + 1);
        let response = http
            .get(proxy.url("/p"))
            .header("user-agent", "SomeBot/1.0")
            .header("x-forwarded-for", xff)
            .send()
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let metrics = proxy.metrics();
    let tracked =
        metric_value(&metrics, r#"crawlgate_tracked_entries{kind="crawl_delay"}"#).unwrap();
    assert!(tracked <= 50.0, "{tracked} entries:\n{metrics}");
    assert!(tracked >= 1.0, "{metrics}");
}

#[test]
fn explain_prints_the_whole_decision() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("googlebot.json"), GOOGLE_RANGES).unwrap();
    std::fs::write(
        dir.path().join("robots.txt"),
        "User-agent: *\nDisallow: /private/\nCrawl-delay: 5\n",
    )
    .unwrap();
    let config = dir.path().join("crawlgate.yaml");
    std::fs::write(
        &config,
        "listen: [\"127.0.0.1:1\"]\ntrusted_proxies: [10.0.0.0/8]\nverification:\n  ranges: {Googlebot: googlebot.json}\nsites:\n  - name: example\n    hosts: [example.com]\n    upstream: \"127.0.0.1:9\"\n    robots: {file: robots.txt}\n    crawl_delay: enforce\n",
    )
    .unwrap();
    let (code, out) = explain(
        &config,
        &[
            "--ua",
            GOOGLEBOT,
            "--ip",
            "10.1.2.3",
            "--xff",
            "66.249.66.1",
            "--json",
            "https://example.com/private/x",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["site"], "example");
    assert_eq!(json["client"], "66.249.66.1");
    assert_eq!(json["bot"], "Googlebot");
    assert_eq!(json["category"], "search");
    assert_eq!(json["verification"]["result"], "verified");
    assert_eq!(json["verification"]["method"], "ranges");
    assert_eq!(json["verdict"], "disallowed");
    assert_eq!(json["rule"]["line"], 2);
    assert_eq!(json["rule"]["pattern"], "/private/");
    assert_eq!(json["outcome"], "blocked");
    assert_eq!(json["status"], 403);
    assert_eq!(json["robots_unread"], true);

    let (code, out) = explain(
        &config,
        &[
            "--ua",
            GOOGLEBOT,
            "--ip",
            "10.1.2.3",
            "--xff",
            "66.249.66.1",
            "https://example.com/blog",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "client:        66.249.66.1 (x-forwarded-for written by trusted proxy 10.1.2.3)"
        ),
        "{out}"
    );
    assert!(out.contains("verification:  verified by ranges"), "{out}");
    assert!(
        out.contains("verdict:       allowed: no rule matches for /blog"),
        "{out}"
    );
    assert!(
        out.contains("crawl-delay:   5 s (enforce): within it"),
        "{out}"
    );
    assert!(out.contains("action:        block → forwarded"), "{out}");

    let (code, out) = explain(
        &config,
        &[
            "--ua",
            GOOGLEBOT,
            "--ip",
            "203.0.113.5",
            "--no-dns",
            "https://example.com/blog",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("client:        203.0.113.5 (the TCP peer)"),
        "{out}"
    );
    assert!(
        out.contains(
            "verification:  spoofed by ranges: 203.0.113.5 is outside Googlebot's published ranges"
        ),
        "{out}"
    );
    assert!(
        out.contains("action:        block → blocked (403)"),
        "{out}"
    );
    assert!(out.contains("but 203.0.113.5 is not Googlebot's"), "{out}");

    let (code, out) = explain(
        &config,
        &[
            "--ua",
            FIREFOX,
            "--ip",
            "203.0.113.5",
            "https://other.example/",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("no site is configured for host `other.example`"),
        "{out}"
    );
}

#[test]
fn ranges_update_writes_atomically_and_the_proxy_picks_it_up() {
    let origin = Origin::start();
    origin.set_route("/googlebot.json", 200, GOOGLE_RANGES);
    origin.set_route("/broken.json", 200, "<html>not json</html>");
    let template = tagging_site(
        &origin,
        &format!(
            "trusted_proxies: [127.0.0.1/32]\nverification:\n  ranges:\n    Googlebot: {{file: ranges/googlebot.json, url: \"http://{0}/googlebot.json\"}}\n    Bingbot: {{file: ranges/bingbot.json, url: \"http://{0}/broken.json\"}}\n  reverse_dns: {{Googlebot: []}}\n  on_spoofed: tag\n",
            origin.addr
        ),
        "User-agent: *\\nDisallow: /private/\\n",
    );
    let proxy = ProxyBuilder::new(&template).start();
    // No file yet: unverifiable.
    let (_, _, seen) = request(&proxy, &origin, "/before", GOOGLEBOT, Some("66.249.66.1"));
    assert_eq!(
        seen.unwrap().headers["x-crawlgate-verified"],
        "unverifiable"
    );

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(["ranges", "update", "--config"])
        .arg(&proxy.config)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "the broken list fails the run: {out}"
    );
    assert!(out.contains("Googlebot: 2 prefixes from"), "{out}");
    assert!(
        out.contains("Bingbot: ") && out.contains("not a usable range list"),
        "{out}"
    );
    assert!(!proxy.path("ranges/bingbot.json").exists());
    wait_for("the new ranges", || {
        let (_, _, seen) = request(&proxy, &origin, "/after", GOOGLEBOT, Some("66.249.66.1"));
        (seen?.headers["x-crawlgate-verified"] == "verified").then_some(())
    });
}

/// A GET with any headers; returns status, body and what the origin saw of it.
fn request_with(
    proxy: &Proxy,
    origin: &Origin,
    path: &str,
    ua: &str,
    headers: &[(&str, &str)],
) -> (u16, String, Option<Seen>) {
    let mut builder = client().get(proxy.url(path)).header("user-agent", ua);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = builder.send().unwrap();
    let status = response.status().as_u16();
    let body = response.text().unwrap();
    (status, body, origin.last(path))
}

const FEEDFETCHER: &str = "FeedFetcher-Google; (+http://www.google.com/feedfetcher.html)";

/// Regression (issue 11): any Google Cloud VM has a PTR under googleusercontent.com that
/// resolves back to it. The catalog's domains, which apply without any `reverse_dns:` in the
/// configuration, are Google's own: googlebot.com and google.com for Googlebot, and only
/// gae.googleusercontent.com (with google.com) for its user-triggered fetchers.
#[test]
fn a_googleusercontent_name_does_not_verify_googlebot() {
    let origin = Origin::start();
    let dns = DnsServer::start(
        vec![
            ptr("34.118.1.2", "2.1.118.34.bc.googleusercontent.com."),
            a("2.1.118.34.bc.googleusercontent.com.", "34.118.1.2"),
            ptr("66.249.66.9", "crawl-66-249-66-9.googlebot.com."),
            a("crawl-66-249-66-9.googlebot.com.", "66.249.66.9"),
            ptr("35.187.1.2", "2-1-187-35.gae.googleusercontent.com."),
            a("2-1-187-35.gae.googleusercontent.com.", "35.187.1.2"),
        ],
        Vec::new(),
    );
    let config = tagging_site(
        &origin,
        &format!(
            "trusted_proxies: [127.0.0.1/32]\nverification:\n  on_spoofed: tag\n  dns: {{server: \"{}\", budget: 5s, timeout: 5s}}\n",
            dns.addr
        ),
        "User-agent: *\\nDisallow: /private/\\n",
    );
    let proxy = ProxyBuilder::new(&config).start();
    for (path, ua, xff, expected) in [
        ("/vm", GOOGLEBOT, "34.118.1.2", "spoofed"),
        ("/crawler", GOOGLEBOT, "66.249.66.9", "verified"),
        ("/fetcher", FEEDFETCHER, "35.187.1.2", "verified"),
        ("/fetcher-vm", FEEDFETCHER, "34.118.1.2", "spoofed"),
    ] {
        let (status, _, seen) = request(&proxy, &origin, path, ua, Some(xff));
        assert_eq!(status, 200, "on_spoofed: tag forwards");
        assert_eq!(
            seen.unwrap().headers["x-crawlgate-verified"],
            expected,
            "{ua} from {xff}"
        );
    }
    let log = wait_for("the access log", || {
        let text = std::fs::read_to_string(proxy.path("access.jsonl")).ok()?;
        (text.lines().count() >= 4).then_some(text)
    });
    assert!(log.contains(r#""verified":"spoofed""#), "{log}");
}

/// Regression (issue 11): loaded published ranges are the authority. An address outside them
/// is spoofed even when its reverse DNS is a forward-confirmed googlebot.com name, and no
/// lookup is made.
#[test]
fn an_address_outside_loaded_ranges_is_spoofed_whatever_its_reverse_dns() {
    let origin = Origin::start();
    let dns = DnsServer::start(
        vec![
            ptr("35.1.2.3", "crawl-35-1-2-3.googlebot.com."),
            a("crawl-35-1-2-3.googlebot.com.", "35.1.2.3"),
        ],
        Vec::new(),
    );
    let config = tagging_site(
        &origin,
        &format!(
            "trusted_proxies: [127.0.0.1/32]\nverification:\n  ranges: {{Googlebot: googlebot.json}}\n  reverse_dns: {{Googlebot: [googlebot.com, google.com]}}\n  on_spoofed: block\n  dns: {{server: \"{}\", budget: 5s, timeout: 5s}}\n",
            dns.addr
        ),
        "User-agent: *\\nDisallow: /private/\\n",
    );
    let proxy = ProxyBuilder::new(&config)
        .file("googlebot.json", GOOGLE_RANGES)
        .start();
    let (status, body, seen) = request(&proxy, &origin, "/outside", GOOGLEBOT, Some("35.1.2.3"));
    assert_eq!(status, 403, "{body}");
    assert!(seen.is_none());
    assert!(
        body.contains("outside Googlebot's published ranges"),
        "{body}"
    );
    let (status, _, seen) = request(&proxy, &origin, "/inside", GOOGLEBOT, Some("66.249.66.1"));
    assert_eq!(status, 200);
    assert_eq!(seen.unwrap().headers["x-crawlgate-verified"], "verified");
    let metrics = proxy.metrics();
    assert!(
        !metrics.contains("crawlgate_dns_lookups_total{"),
        "no lookup was needed:\n{metrics}"
    );
}

/// Regression (issue 11): a header a backend reads as one of crawlgate's never reaches the
/// origin, whatever its spelling: CGI and FastCGI read `X_Crawlgate_Verdict` as
/// HTTP_X_CRAWLGATE_VERDICT. In every mode, for people and crawlers alike.
#[test]
fn forged_verdict_headers_never_reach_the_origin_in_any_spelling() {
    let origin = Origin::start();
    let mut template =
        "listen: [\"{listen}\"]\nmetrics: {listen: \"{metrics}\"}\npingora: {threads: 1}\nsites:\n"
            .to_owned();
    for (name, host, action, extra) in [
        ("tagging", "tag.test", "tag", ""),
        ("counting", "count.test", "count", ""),
        (
            "blocking",
            "block.test",
            "block",
            "    tag: {prefix: \"X-Mine-\"}\n",
        ),
    ] {
        template.push_str(&format!(
            "  - name: {name}\n    hosts: [{host}]\n    upstream: \"{}\"\n    robots: {{inline: \"User-agent: *\\nDisallow: /private/\\n\"}}\n    action: {action}\n{extra}",
            origin.addr
        ));
    }
    let proxy = ProxyBuilder::new(&template).start();
    let forged = [
        ("X_Crawlgate_Verdict", "allowed"),
        ("x-CRAWLGATE-bot", "Googlebot"),
        ("X-Crawlgate_Verified", "verified"),
        ("x.crawlgate.rule", "allow / line 1"),
        ("X_MINE_Verdict", "allowed"),
    ];
    let mut checked = 0;
    for host in ["tag.test", "count.test", "block.test"] {
        for (ua, path) in [(FIREFOX, "/private/p"), (GPTBOT, "/blog")] {
            let path = format!("{path}-{host}");
            let mut headers = vec![("host", host)];
            headers.extend(forged);
            let (status, _, seen) = request_with(&proxy, &origin, &path, ua, &headers);
            assert_eq!(status, 200, "{host} {ua}");
            let seen = seen.unwrap();
            for name in seen.headers.keys() {
                let folded: String = name
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect();
                // X-Mine- is the blocking site's own prefix: the others pass it on.
                let mine = host == "block.test" && folded.starts_with("x-mine-");
                if folded.starts_with("x-crawlgate-") || mine {
                    // Only crawlgate's own tags, in its own spelling, with its own values.
                    assert!(host == "tag.test" && ua == GPTBOT, "{host} {ua}: {name}");
                    assert!(!name.contains(['_', '.']), "{name}");
                }
            }
            if host != "block.test" {
                assert_eq!(
                    seen.headers.get("x_mine_verdict").map(String::as_str),
                    Some("allowed")
                );
            }
            if host == "tag.test" && ua == GPTBOT {
                assert_eq!(seen.headers["x-crawlgate-verdict"], "allowed");
                assert_eq!(seen.headers["x-crawlgate-bot"], "GPTBot");
                assert_eq!(seen.headers["x-crawlgate-verified"], "unverifiable");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
}

/// Regression (issue 11): a trusted proxy that writes `Forwarded` passes a client's own
/// `X-Forwarded-For` through. With `header: forwarded`, that header is never read.
#[test]
fn x_forwarded_for_is_ignored_when_the_trusted_proxy_writes_forwarded() {
    let origin = Origin::start();
    let config = tagging_site(
        &origin,
        "trusted_proxies:\n  networks: [127.0.0.1/32]\n  header: forwarded\nverification:\n  ranges: {Googlebot: googlebot.json}\n  on_spoofed: block\n",
        "User-agent: *\\nDisallow: /private/\\n",
    );
    let proxy = ProxyBuilder::new(&config)
        .file("googlebot.json", GOOGLE_RANGES)
        .start();
    // The client's own X-Forwarded-For names a Googlebot address: not believed.
    let (status, body, seen) = request(&proxy, &origin, "/xff", GOOGLEBOT, Some("66.249.66.1"));
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("but 127.0.0.1 is not Googlebot's"), "{body}");
    assert!(seen.is_none());
    // What the proxy wrote in Forwarded is, even beside a forged X-Forwarded-For.
    let (status, _, seen) = request_with(
        &proxy,
        &origin,
        "/forwarded",
        GOOGLEBOT,
        &[
            ("x-forwarded-for", "203.0.113.9"),
            ("forwarded", "for=66.249.66.1;proto=https"),
        ],
    );
    assert_eq!(status, 200);
    assert_eq!(seen.unwrap().headers["x-crawlgate-verified"], "verified");

    // explain says which header it read, and which it ignored.
    let (code, out) = explain(
        &proxy.config,
        &[
            "--ua",
            GOOGLEBOT,
            "--ip",
            "127.0.0.1",
            "--xff",
            "66.249.66.1",
            "--forwarded",
            "for=66.249.66.7",
            "http://127.0.0.1/x",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("client:        66.249.66.7 (forwarded written by trusted proxy 127.0.0.1)"),
        "{out}"
    );
    assert!(
        out.contains("ignored:       x-forwarded-for (trusted proxies write forwarded only)"),
        "{out}"
    );
}

/// Regression (issue 11): anyone can send `ClaudeBot`. An unverified claim counts against its
/// own address, so a forger uses up only its own crawl-delay slot; a verified crawler keeps one
/// slot for all its addresses.
#[test]
fn a_forged_claudebot_does_not_use_up_the_real_ones_crawl_delay_slot() {
    let origin = Origin::start();
    let config = tagging_site(
        &origin,
        "trusted_proxies: [127.0.0.1/32]\nverification:\n  ranges: {Googlebot: googlebot.json}\n",
        "User-agent: *\\nCrawl-delay: 60\\nDisallow: /private/\\n",
    )
    .replace(
        "    action: tag\n",
        "    action: block\n    crawl_delay: enforce\n",
    );
    let proxy = ProxyBuilder::new(&config)
        .file("googlebot.json", GOOGLE_RANGES)
        .start();
    let claudebot = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)";
    // The forger comes first, twice: its second request is too soon for its own slot.
    assert_eq!(
        request(&proxy, &origin, "/f1", claudebot, Some("203.0.113.66")).0,
        200
    );
    assert_eq!(
        request(&proxy, &origin, "/f2", claudebot, Some("203.0.113.66")).0,
        429
    );
    // The real one's slot is untouched.
    assert_eq!(
        request(&proxy, &origin, "/r1", claudebot, Some("198.51.100.7")).0,
        200
    );
    // A verified crawler has one slot, whichever of its addresses it comes from.
    assert_eq!(
        request(&proxy, &origin, "/g1", GOOGLEBOT, Some("66.249.66.1")).0,
        200
    );
    assert_eq!(
        request(&proxy, &origin, "/g2", GOOGLEBOT, Some("66.249.66.2")).0,
        429
    );

    let (code, out) = explain(
        &proxy.config,
        &[
            "--ua",
            claudebot,
            "--ip",
            "127.0.0.1",
            "--xff",
            "203.0.113.66",
            "http://127.0.0.1/x",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "politeness:    203.0.113.66's own: an unverified ClaudeBot claim shares no one's slot"
        ),
        "{out}"
    );
}
