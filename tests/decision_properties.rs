//! No input can crash the decision: arbitrary robots.txt bytes (and files made of the lines that
//! once hurt: huge crawl-delays, long and starred patterns, odd escapes), arbitrary User-Agent
//! headers, paths, hosts, peers and forwarding headers go through the proxy's whole decision
//! (`proxy::decide::decide`, recording politeness state as the proxy does) and through
//! `crawlgate explain`'s (the same decision without recording, then rendered as text and as
//! JSON). Every run must return, and what it returns must hang together.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use crawlgate::cli::{render_explanation, Explained};
use crawlgate::policy::Outcome;
use crawlgate::proxy::client::Forwarding;
use crawlgate::proxy::config::Settings;
use crawlgate::proxy::decide::{decide, Mode, RequestFacts};
use crawlgate::proxy::metrics::Metrics;
use crawlgate::proxy::site::{Snapshot, SourceState};
use crawlgate::proxy::state::Shared;
use proptest::prelude::*;
use std::net::IpAddr;
use std::path::Path;
use std::sync::LazyLock;

/// A site that enforces crawl-delays, blocks, trusts a proxy network and names crawlers of its
/// own: every branch of the decision is reachable. DNS is never used (the runs say so).
const CONFIG: &str = "listen: [\"127.0.0.1:1\"]
trusted_proxies: [10.0.0.0/8]
sites:
  - name: fuzzed
    upstream: \"127.0.0.1:2\"
    crawl_delay: enforce
    bots: {GPTBot: block, Googlebot: tag, MJ12bot: count}
    categories: {seo: tag, http-library: block}
    robots:
      inline: \"User-agent: *\\nDisallow: /\\n\"
";

struct World {
    shared: Shared,
    settings: Settings,
    runtime: tokio::runtime::Runtime,
}

static WORLD: LazyLock<World> = LazyLock::new(|| {
    let settings = Settings::from_yaml(CONFIG, "test", Path::new("/nonexistent")).unwrap();
    let shared = Shared::new(&settings, Metrics::new().unwrap(), None).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    World {
        shared,
        settings,
        runtime,
    }
});

/// Lines robots.txt files are made of, including the ones that once crashed or stalled a
/// query: numbers past any range, many wildcards, escapes of `*` and `$`, separators.
fn robots_line() -> impl Strategy<Value = String> {
    prop_oneof![
        "(User-agent|user-agent|Useragent): (\\*|GPTBot|Googlebot|Googlebot-Image|MJ|bot[a-c]|Mozilla/4\\.0)",
        "(Allow|Disallow|disallow): [/*$%a-c.?=&2AFf4]{0,24}",
        "Crawl-delay: (1e300|1e19|18446744073709551616|-1|NaN|inf|0\\.5|86401|[0-9]{1,25})",
        "(Sitemap|Content-Usage|foo): .{0,20}",
        Just("Disallow: /*a*a*a*a*a*a*a*a*a*a*a*a*a*b".to_owned()),
        ".{0,40}",
    ]
}

fn robots_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..600),
        prop::collection::vec(robots_line(), 0..24).prop_map(|lines| lines.join("\n").into_bytes()),
    ]
}

fn user_agent() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..120),
        "(Mozilla/5\\.0 \\(compatible; )?(GPTBot|Googlebot|Googlebot-Image|MJ12bot|botb|curl|okhttp|Dart)/[0-9.]{0,4}( \\+https://e\\.x)?\\)?"
            .prop_map(String::into_bytes),
        "Mozilla/5\\.0 \\(Linux; Android 14; (Cubot X50|Spider 8)\\) Chrome/120 Mobile Safari/537\\.36"
            .prop_map(String::into_bytes),
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "/[a-c/.%2FfA5C*$?=&#]{0,40}",
        "(https?://[a-z.]{1,10})?/(robots\\.txt|%72obots\\.txt|a/\\.\\./b|public%2F\\.\\.%2Fprivate/x)(\\?.{0,8})?",
    ]
}

fn peer() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        Just("10.1.2.3".parse().unwrap()),
        Just("127.0.0.1".parse().unwrap()),
        Just("66.249.66.1".parse().unwrap()),
        Just("::1".parse().unwrap()),
        any::<[u8; 16]>().prop_map(IpAddr::from),
        any::<[u8; 4]>().prop_map(IpAddr::from),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn no_robots_txt_or_request_can_crash_the_decision(
        robots in robots_bytes(),
        requests in prop::collection::vec(
            (user_agent(), path(), prop::option::of("[a-z.:0-9]{0,12}"), peer(), prop::collection::vec(".{0,30}", 0..3)),
            1..6,
        ),
    ) {
        let world = &*WORLD;
        let sites = world.shared.sites.load();
        let site = sites.by_name("fuzzed").unwrap();
        let catalog = world.shared.catalog.load();
        let snapshot = Snapshot::build(&site.settings, &catalog, Bytes::from(robots), SourceState::Loaded).unwrap();
        site.replace(snapshot);
        for (ua, path, host, peer, xff) in &requests {
            let lines: Vec<(&str, &[u8])> =
                xff.iter().map(|v| ("x-forwarded-for", v.as_bytes())).collect();
            let facts = RequestFacts {
                host: host.as_deref().map(str::as_bytes),
                path,
                user_agent: ua,
                peer: Some(*peer),
                forwarding: Forwarding::Lines(&lines),
                signature: None,
                method: "GET",
                payment_headers: None,
            };
            let proxy = Mode { record: true, use_dns: false };
            let explain = Mode { record: false, use_dns: false };
            for mode in [proxy, explain] {
                let Some(decision) = world.runtime.block_on(decide(&world.shared, &facts, mode)) else {
                    continue;
                };
                // What the decision says hangs together.
                if !decision.is_crawler() {
                    prop_assert_eq!(decision.judgement.outcome, Outcome::Forwarded, "a person is never refused");
                }
                if decision.judgement.outcome == Outcome::Blocked && decision.verification.result.as_str() != "spoofed" {
                    prop_assert!(decision.rule().is_some() || decision.snapshot.stand_in_reason().is_some());
                }
                if let Some(delay) = &decision.judgement.crawl_delay {
                    prop_assert!(delay.seconds <= 86_400.0, "{}", delay.seconds);
                    prop_assert!(delay.retry_after_seconds.is_none_or(|s| s <= 86_400));
                }
                let request = Explained { path, user_agent: ua, header_lines: &lines, origin_now: None };
                let text = render_explanation(&world.settings, &decision, &request, false).unwrap();
                prop_assert!(text.starts_with("site:"), "{}", text);
                let json = render_explanation(&world.settings, &decision, &request, true).unwrap();
                let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
                prop_assert_eq!(parsed["outcome"].as_str(), Some(decision.judgement.outcome.as_str()));
            }
        }
    }
}
