//! robots.txt from the origin, through the real proxy on loopback: the last good answer kept in
//! the state directory and in force from the first request after a restart, a corrupt kept file
//! ignored, `429` read as unreachable, and `/robots.txt` answered with the copy being enforced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::path::Path;
use std::time::Duration;

const ROBOTS: &str = "User-agent: *\nDisallow: /private/\n";

/// An origin site, fetched every `refresh`, keeping its answers in `state` (when given).
fn origin_site(origin: &Origin, refresh: &str, state: Option<&Path>) -> String {
    let state = state.map_or(String::new(), |dir| {
        format!("state_dir: \"{}\"\n", dir.display())
    });
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1, grace_period_seconds: 1}}
{state}sites:
  - name: shop
    upstream: "{}"
    robots: {{origin: true, refresh: {refresh}, timeout: 2s}}
"#,
        origin.addr
    )
}

fn status(proxy: &Proxy, path: &str) -> u16 {
    get(&proxy.url(path), GOOGLEBOT, None).0
}

/// Regression (issue 11): after a restart in `origin:` mode a site enforced "disallow all"
/// until its first fetch succeeded. With a state directory, the last good file is in force
/// from the first request, even when the origin is down.
#[test]
fn a_restart_enforces_the_kept_robots_txt_from_the_first_request() {
    let state = tempfile::tempdir().unwrap();
    let origin = Origin::start();
    origin.set_robots(200, ROBOTS, Duration::ZERO);
    let template = origin_site(&origin, "1h", Some(state.path()));
    let kept = state.path().join("robots").join("site.shop.txt");
    {
        let proxy = ProxyBuilder::new(&template).start();
        wait_for("the origin's file", || {
            (status(&proxy, "/private/x") == 403).then_some(())
        });
        let text = wait_for("the kept file", || std::fs::read_to_string(&kept).ok());
        assert!(
            text.starts_with("crawlgate kept robots.txt 1\nsite: shop\n"),
            "{text}"
        );
        assert!(text.ends_with(ROBOTS), "{text}");
    }
    // The origin is down when crawlgate comes back.
    origin.set_robots(503, "down", Duration::ZERO);
    let proxy = ProxyBuilder::new(&template).start();
    // The very first request is judged by the kept file: not "disallow all".
    assert_eq!(status(&proxy, "/blog"), 200, "{}", proxy.logs());
    assert_eq!(status(&proxy, "/private/x"), 403);
    // Crawlers read what they are judged by, though the origin answers 503.
    let (code, body, _) = get(&proxy.url("/robots.txt"), GOOGLEBOT, None);
    assert_eq!((code, body.as_str()), (200, ROBOTS));
    assert_eq!(proxy.health().0, 200, "{}", proxy.health().1);
    // The failed fetch keeps it (on_unreachable: keep-last).
    let unreachable = r#"crawlgate_robots_reloads_total{result="unreachable",site="shop"}"#;
    wait_for("the first fetch", || proxy.metric(unreachable));
    assert_eq!(status(&proxy, "/blog"), 200);
    assert!(
        proxy.logs().contains("enforcing the robots.txt kept in"),
        "{}",
        proxy.logs()
    );
    let (_, out) = explain(
        &proxy.config,
        &[
            "--no-dns",
            "--ua",
            GOOGLEBOT,
            "--ip",
            "127.0.0.1",
            "http://127.0.0.1/blog",
        ],
    );
    assert!(out.contains("loaded ("), "{out}");
    assert!(
        out.contains("kept in the state directory, fetched"),
        "{out}"
    );
    assert!(
        out.contains("origin now:    unreachable: 503 Service Unavailable"),
        "{out}"
    );

    let output = std::process::Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(["validate", "--config"])
        .arg(&proxy.config)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        out.contains(&format!("the last good one kept in {}", kept.display())),
        "{out}"
    );

    // Without a state directory, the same restart disallows everything until a fetch succeeds.
    drop(proxy);
    let forgetful = ProxyBuilder::new(&origin_site(&origin, "1h", None)).start();
    assert_eq!(status(&forgetful, "/blog"), 403);
}

/// A kept file that was damaged is reported and ignored: never fatal.
#[test]
fn a_corrupt_kept_file_is_reported_and_ignored() {
    let state = tempfile::tempdir().unwrap();
    let robots = state.path().join("robots");
    std::fs::create_dir_all(&robots).unwrap();
    let text = format!(
        "crawlgate kept robots.txt 1\nsite: shop\nurl: x\nfetched: 2026-01-01T00:00:00Z\nanswer: 200\nlength: 999\nsha256: 00\n\n{ROBOTS}"
    );
    std::fs::write(robots.join("site.shop.txt"), text).unwrap();
    let origin = Origin::start();
    origin.set_robots(503, "down", Duration::ZERO);
    let proxy = ProxyBuilder::new(&origin_site(&origin, "1h", Some(state.path()))).start();
    // Nothing good at hand: complete disallow, as without a state directory.
    assert_eq!(status(&proxy, "/blog"), 403);
    let logs = proxy.logs();
    assert!(logs.contains("kept robots.txt ignored"), "{logs}");
    assert!(logs.contains("site.shop.txt:6: length 999"), "{logs}");
    // Once the origin answers, its file is in force and kept again.
    origin.set_robots(200, ROBOTS, Duration::ZERO);
    proxy.signal("HUP");
    wait_for("the origin's file", || {
        (status(&proxy, "/blog") == 200).then_some(())
    });
    wait_for("the file kept again", || {
        let text = std::fs::read_to_string(robots.join("site.shop.txt")).ok()?;
        text.contains(&format!("length: {}", ROBOTS.len()))
            .then_some(())
    });
}

/// Regression: a SIGHUP that came while the site's fetch was under way was dropped (the fetch
/// already had its answer), so the origin's new file waited for the next `refresh`, an hour
/// here. Now the signal's fetch follows the one under way.
#[test]
fn a_sighup_during_a_fetch_fetches_again_after_it() {
    let origin = Origin::start();
    origin.set_robots(503, "down", Duration::ZERO);
    origin.hold_robots();
    let proxy = ProxyBuilder::new(&origin_site(&origin, "1h", None)).start();
    wait_for("the first fetch", || origin.last("/robots.txt"));
    // The fetch under way has its answer (503); the origin's file is fixed meanwhile.
    origin.set_robots(200, ROBOTS, Duration::ZERO);
    proxy.signal("HUP");
    wait_for("the SIGHUP handled", || {
        proxy.logs().contains("SIGHUP: reloading").then_some(())
    });
    origin.release_robots();
    wait_for("the origin's file", || {
        (status(&proxy, "/blog") == 200).then_some(())
    });
}

/// Regression (issue 11): a `429` for robots.txt was read as "unavailable", which lifts every
/// restriction. Google reads it as a server error: unreachable.
#[test]
fn a_429_for_robots_txt_is_unreachable() {
    let origin = Origin::start();
    origin.set_robots(429, "slow down", Duration::ZERO);
    let proxy = ProxyBuilder::new(&origin_site(&origin, "1s", None)).start();
    let unreachable = r#"crawlgate_robots_reloads_total{result="unreachable",site="shop"}"#;
    wait_for("a fetch", || proxy.metric(unreachable));
    // No good file at hand: complete disallow, not "no restrictions".
    assert_eq!(status(&proxy, "/blog"), 403);
    let metrics = proxy.metrics();
    assert!(
        !metrics.contains(r#"crawlgate_robots_reloads_total{result="unavailable""#),
        "{metrics}"
    );
    // With a good file at hand, a 429 keeps it.
    origin.set_robots(200, ROBOTS, Duration::ZERO);
    wait_for("the origin's file", || {
        (status(&proxy, "/blog") == 200).then_some(())
    });
    let before = proxy.metric(unreachable).unwrap();
    origin.set_robots(429, "slow down", Duration::ZERO);
    wait_for("another 429", || {
        proxy.metric(unreachable).filter(|n| *n > before)
    });
    assert_eq!(status(&proxy, "/blog"), 200);
    assert_eq!(status(&proxy, "/private/x"), 403);
}

/// Regression (issue 11): in `origin:` mode `/robots.txt` went to the origin, which may have
/// changed since the last fetch: crawlers read one file and were judged by another. It is
/// answered with the copy being enforced, whatever the state.
#[test]
fn robots_txt_is_answered_with_the_copy_being_enforced() {
    let origin = Origin::start();
    origin.set_robots(200, ROBOTS, Duration::ZERO);
    // Fetched at start, then only on SIGHUP: each change below is one fetch.
    let proxy = ProxyBuilder::new(&origin_site(&origin, "1h", None)).start();
    let robots = || get(&proxy.url("/robots.txt"), GPTBOT, None);
    wait_for("the origin's file", || (robots().1 == ROBOTS).then_some(()));

    // The origin changes; until crawlgate fetches it, crawlers read the file in force.
    let changed = "User-agent: *\nDisallow: /\n";
    origin.set_robots(200, changed, Duration::ZERO);
    assert_eq!(robots().1, ROBOTS);
    assert_eq!(status(&proxy, "/blog"), 200);
    proxy.signal("HUP");
    wait_for("the new file", || (robots().1 == changed).then_some(()));
    assert_eq!(status(&proxy, "/blog"), 403);

    // 4xx: crawlers read "no file", which is what is enforced.
    origin.set_robots(404, "<html>not found</html>", Duration::ZERO);
    proxy.signal("HUP");
    wait_for("the 404", || (robots().0 == 404).then_some(()));
    assert!(!robots().1.contains("<html>"));
    assert_eq!(status(&proxy, "/blog"), 200);

    // 5xx with no good file at hand: crawlers read "unreachable" and come back later.
    origin.set_robots(500, "error", Duration::ZERO);
    proxy.signal("HUP");
    wait_for("the 500", || (robots().0 == 503).then_some(()));
    let (_, _, headers) = robots();
    assert_eq!(headers["retry-after"], "3600");
    assert_eq!(status(&proxy, "/blog"), 403);

    // No crawler's request for /robots.txt reached the origin: only crawlgate's own fetches.
    for seen in origin.seen().iter().filter(|s| s.path == "/robots.txt") {
        assert!(
            seen.headers["user-agent"].starts_with("crawlgate/"),
            "{:?}",
            seen.headers
        );
    }
}
