//! A robots.txt the site manages at the edge, through the real proxy: the origin's file composed
//! with the operator's groups is what `/robots.txt` serves and what is enforced, before and
//! after the origin changes its file, and over an origin that has none.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::time::Duration;

const CCBOT: &str = "CCBot/2.0 (https://commoncrawl.org/faq/)";

fn managed_site(origin: &Origin) -> String {
    site_managing(
        origin,
        r#"{categories: {ai-training: disallow}, crawlers: {CCBot: origin}, content_signal: "search=yes, ai-train=no"}"#,
    )
}

/// The site `shop` in front of `origin`, whose robots.txt it fetches, with these managed groups
/// (flow-style YAML).
fn site_managing(origin: &Origin, managed: &str) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1, grace_period_seconds: 1}}
sites:
  - name: shop
    upstream: "{}"
    robots:
      origin: true
      refresh: 1h
      timeout: 2s
      managed: {managed}
    action: block
"#,
        origin.addr
    )
}

fn status(proxy: &Proxy, path: &str, user_agent: &str) -> u16 {
    get(&proxy.url(path), user_agent, None).0
}

#[test]
fn the_composed_file_is_served_and_enforced_through_an_origin_change() {
    let origin = Origin::start();
    // The origin's file lets GPTBot in everywhere; the site's operator manages AI training.
    origin.set_robots(
        200,
        "User-agent: GPTBot\nAllow: /\n\nUser-agent: *\nDisallow: /private/\n",
        Duration::ZERO,
    );
    let proxy = ProxyBuilder::new(&managed_site(&origin)).start();
    let robots = || get(&proxy.url("/robots.txt"), GOOGLEBOT, None);
    wait_for("the composed file", || {
        robots().1.contains("Disallow: /private/").then_some(())
    });
    let (code, served, _) = robots();
    assert_eq!(code, 200);
    // What is served: the managed block first, then the origin's lines, overridden ones
    // commented out.
    assert!(served.starts_with("# Managed by crawlgate"), "{served}");
    assert!(served.contains("\nUser-agent: GPTBot\n"), "{served}");
    assert!(
        served.contains("\nContent-Signal: search=yes, ai-train=no\n"),
        "{served}"
    );
    assert!(
        served.contains(
            "# managed by crawlgate: User-agent: GPTBot\n# managed by crawlgate: Allow: /\n"
        ),
        "{served}"
    );
    assert!(
        !served.contains("\nUser-agent: CCBot\n"),
        "CCBot is left to the origin: {served}"
    );
    // What is enforced is what it says.
    let parsed = crawlgate::Robots::parse(served.as_bytes());
    for (agent, path) in [
        (GPTBOT, "/page"),
        (CCBOT, "/page"),
        (GOOGLEBOT, "/page"),
        (GPTBOT, "/private/x"),
        (GOOGLEBOT, "/private/x"),
    ] {
        let token = if agent == GPTBOT {
            "GPTBot"
        } else if agent == CCBOT {
            "CCBot"
        } else {
            "Googlebot"
        };
        let expected = if parsed.is_allowed(token, path) {
            200
        } else {
            403
        };
        assert_eq!(
            status(&proxy, path, agent),
            expected,
            "{token} {path}\n{served}"
        );
    }
    assert_eq!(status(&proxy, "/page", GPTBOT), 403);
    assert_eq!(status(&proxy, "/page", CCBOT), 200);
    assert_eq!(status(&proxy, "/page", FIREFOX), 200);

    // The origin changes its file under the managed block: the block still holds.
    origin.set_robots(200, "User-agent: *\nAllow: /\n", Duration::ZERO);
    proxy.signal("HUP");
    wait_for("the changed file", || {
        robots().1.contains("\nAllow: /\n").then_some(())
    });
    assert_eq!(status(&proxy, "/private/x", GOOGLEBOT), 200);
    assert_eq!(status(&proxy, "/private/x", GPTBOT), 403);

    // No file at the origin (404): the managed groups are served and enforced, alone.
    origin.set_robots(404, "not found", Duration::ZERO);
    proxy.signal("HUP");
    wait_for("the 404 under the block", || {
        let (code, body, _) = robots();
        (code == 200 && !body.contains("Allow: /\n")).then_some(())
    });
    let (_, served, _) = robots();
    assert!(served.contains("User-agent: GPTBot\n"), "{served}");
    assert_eq!(status(&proxy, "/page", GPTBOT), 403);
    assert_eq!(status(&proxy, "/page", GOOGLEBOT), 200);
}

/// A crawler judged by the composed file keeps RFC 9309's grace when the operator changes the
/// managed groups: one that read the file before the change is judged by the file it read, for
/// the grace period; one that did not is judged by the new file at once. The change needs no
/// fetch: the origin's file in memory is composed anew.
#[test]
fn a_crawler_that_read_the_file_before_a_managed_change_keeps_its_grace() {
    let origin = Origin::start();
    origin.set_robots(200, "User-agent: *\nDisallow: /private/\n", Duration::ZERO);
    let config = |managed: &str| site_managing(&origin, managed);
    let proxy = ProxyBuilder::new(&config("{crawlers: {Bytespider: disallow}}")).start();
    let robots = || get(&proxy.url("/robots.txt"), GOOGLEBOT, None).1;
    wait_for("the composed file", || {
        robots().contains("Disallow: /private/").then_some(())
    });
    // GPTBot reads the file in force, which lets it fetch /page.
    assert_eq!(get(&proxy.url("/robots.txt"), GPTBOT, None).0, 200);
    assert_eq!(status(&proxy, "/page", GPTBOT), 200);
    let fetches = || {
        origin
            .seen()
            .iter()
            .filter(|seen| seen.path == "/robots.txt")
            .count()
    };
    let before = fetches();

    // The operator disallows AI training at the edge.
    proxy.reconfigure(&config("{categories: {ai-training: disallow}}"));
    wait_for("the new managed block", || {
        robots().contains("\nUser-agent: GPTBot\n").then_some(())
    });
    // GPTBot read the file before: judged by it (grace), forwarded.
    assert_eq!(status(&proxy, "/page", GPTBOT), 200);
    let grace = r#"crawlgate_requests_total{action="forwarded",bot="GPTBot",category="ai-training",site="shop",verdict="grace",verified="unverifiable"}"#;
    assert_eq!(proxy.metric(grace), Some(1.0), "{}", proxy.metrics());
    // CCBot read nothing: the new file holds.
    assert_eq!(status(&proxy, "/page", CCBOT), 403);
    // Once GPTBot reads the new file, it is judged by it.
    assert_eq!(get(&proxy.url("/robots.txt"), GPTBOT, None).0, 200);
    assert_eq!(status(&proxy, "/page", GPTBOT), 403);
    // The managed groups were composed anew over the file in memory: the origin's file was
    // fetched again only by the reload's own fetch, if at all.
    assert!(fetches() <= before + 1, "{} fetches", fetches() - before);
}

#[test]
fn a_content_signal_that_would_write_lines_of_its_own_is_refused() {
    let origin = Origin::start();
    let config = managed_site(&origin).replace(
        "content_signal: \"search=yes, ai-train=no\"",
        "content_signal: \"search=yes\\nUser-agent: GPTBot\\nAllow: /\"",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crawlgate.yaml");
    let config = config
        .replace("{listen}", "127.0.0.1:1")
        .replace("{metrics}", "127.0.0.1:2");
    std::fs::write(&path, config).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(["validate", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("content_signal"), "{stderr}");
}

/// `crawlgate robots compose` prints what the proxy would serve, each line with its source,
/// fetching the origin's file once as the proxy does.
#[test]
fn compose_prints_the_served_file_with_where_each_line_comes_from() {
    let origin = Origin::start();
    origin.set_robots(
        200,
        "User-agent: GPTBot\nAllow: /\n\nUser-agent: *\nDisallow: /private/\n",
        Duration::ZERO,
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crawlgate.yaml");
    let config = managed_site(&origin)
        .replace("{listen}", "127.0.0.1:1")
        .replace("{metrics}", "127.0.0.1:2");
    std::fs::write(&path, config).unwrap();
    let compose = |more: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_crawlgate"))
            .args(["robots", "compose", "--config"])
            .arg(&path)
            .args(more)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        String::from_utf8(output.stdout).unwrap()
    };
    let plain = compose(&[]);
    assert!(plain.starts_with("# Managed by crawlgate"), "{plain}");
    assert!(
        plain.ends_with("User-agent: *\nDisallow: /private/\n"),
        "{plain}"
    );
    let annotated = compose(&["--sources", "--site", "shop"]);
    for line in [
        "managed        | User-agent: GPTBot\n",
        "managed        | Content-Signal: search=yes, ai-train=no\n",
        "overridden 1   | # managed by crawlgate: User-agent: GPTBot\n",
        "overridden 2   | # managed by crawlgate: Allow: /\n",
        "origin 4       | User-agent: *\n",
        "origin 5       | Disallow: /private/\n",
    ] {
        assert!(annotated.contains(line), "{line:?}\n{annotated}");
    }
    assert_eq!(annotated.lines().count(), plain.lines().count());

    // explain judges by the composed file, and says which side a deciding line is from.
    for (agent, url, verdict, source) in [
        (
            GPTBOT,
            "http://shop.example/page",
            "disallowed",
            "managed by crawlgate",
        ),
        (
            GOOGLEBOT,
            "http://shop.example/private/x",
            "disallowed",
            "the origin's line 5",
        ),
    ] {
        let (code, out) = explain(
            &path,
            &["--ua", agent, "--ip", "203.0.113.9", "--json", url],
        );
        assert_eq!(code, 0, "{out}");
        let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(json["verdict"], verdict, "{out}");
        assert_eq!(json["rule"]["source"], source, "{out}");
    }

    // check and lint read the same composed file, each line with its source.
    let run = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_crawlgate"))
            .args(args)
            .arg("--config")
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
            stderr,
        )
    };
    let (code, out, err) = run(&["check", "--agent", "GPTBot", "/page", "/private/x"]);
    assert_eq!(code, Some(1), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("disallowed /page") && lines[0].ends_with("(Disallow: /) [managed]"),
        "{out}"
    );
    let (_, out, _) = run(&["check", "--agent", "Googlebot", "--json", "/private/x"]);
    let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["allowed"], false, "{out}");
    assert_eq!(
        json["source"],
        serde_json::json!({"from": "origin", "line": 5}),
        "{out}"
    );
    // A problem of the origin's file is reported at its line in the served file, with the
    // origin's own line number beside it.
    origin.set_robots(
        200,
        "User-agent: *\nDisallow: /private/\nNoindex: /x\n",
        Duration::ZERO,
    );
    let (code, out, err) = run(&["lint", "--strict"]);
    assert_eq!(code, Some(1), "{out}{err}");
    let problem = out
        .lines()
        .find(|l| l.contains("noindex"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        problem.starts_with("site shop:") && problem.contains(" (origin 3): "),
        "{out}"
    );
    let (_, out, _) = run(&["lint", "--json", "--site", "shop"]);
    let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["file"], "site shop");
    assert_eq!(
        json["sources"][0]["source"],
        serde_json::json!({"from": "origin", "line": 3}),
        "{out}"
    );
    // A file and --config are one or the other.
    let (code, _, err) = run(&["lint", "robots.txt"]);
    assert_eq!(code, Some(2), "{err}");
}
