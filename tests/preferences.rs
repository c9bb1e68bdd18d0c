//! Content-use preferences end to end: the real crawlgate binary on loopback in front of a real
//! origin, with a robots.txt that states `Content-Signal` and `Content-Usage` preferences.
//! Enforcement on and off, the announced `Content-Usage` header, the tag headers, the metric,
//! the access log, `explain`, and `audit` over a log of the same requests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::process::Command;

/// Line 4 refuses training and AI input everywhere; line 5 allows training under `/open/`.
const ROBOTS: &str = "User-agent: *\n\
Allow: /\n\
Disallow: /never/\n\
Content-Signal: search=yes, ai-input=no, ai-train=no\n\
Content-Usage: /open/ train-ai=y\n";

const CHATGPT_USER: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot";

fn sites(origin: &Origin) -> Proxy {
    let template = sites_template(
        true,
        &[
            site(
                "enforcing",
                &["enforce.test"],
                origin.addr,
                "robots.txt",
                &[
                    "action: block",
                    "content_usage: {enforce: true, announce: true}",
                ],
            ),
            site(
                "tagging",
                &["tag.test"],
                origin.addr,
                "robots.txt",
                &["action: tag", "content_usage: {enforce: true}"],
            ),
            site(
                "plain",
                &["plain.test"],
                origin.addr,
                "robots.txt",
                &["action: block"],
            ),
        ],
    );
    ProxyBuilder::new(&template)
        .file("robots.txt", ROBOTS)
        .start()
}

#[test]
fn an_enforcing_site_refuses_the_uses_its_preferences_refuse() {
    let origin = Origin::start();
    let proxy = sites(&origin);
    let host = Some("enforce.test");

    // A training crawler on a path robots.txt allows, where `ai-train=no` applies.
    let (status, body, _) = get(&proxy.url("/page"), GPTBOT, host);
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body,
        "robots.txt line 4 (Content-Signal: search=yes, ai-input=no, ai-train=no) refuses train-ai use, which GPTBot (ai-training) is for; /page was not fetched\n"
    );
    assert!(origin.last("/page").is_none(), "the origin saw it");
    // Where a longer rule allows training, it is fetched.
    let (status, body, _) = get(&proxy.url("/open/data"), GPTBOT, host);
    assert_eq!((status, body.as_str()), (200, "origin: /open/data"));
    // An assistant fetching for a user is AI input, refused by `ai-input=no`.
    let (status, body, _) = get(&proxy.url("/page"), CHATGPT_USER, host);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("refuses ai-input use"), "{body}");
    // Search is allowed; people are never refused.
    let (status, _, _) = get(&proxy.url("/page"), GOOGLEBOT, host);
    assert_eq!(status, 200);
    let (status, _, _) = get(&proxy.url("/page"), FIREFOX, host);
    assert_eq!(status, 200);
    // A disallowed path stays a robots.txt verdict.
    let (status, body, _) = get(&proxy.url("/never/x"), GPTBOT, host);
    assert_eq!(status, 403);
    assert!(body.contains("Disallow: /never/"), "{body}");

    let metrics = proxy.metrics();
    let series = r#"crawlgate_content_usage_total{action="blocked",bot="GPTBot",site="enforcing",usage="train-ai"}"#;
    assert_eq!(metric_value(&metrics, series), Some(1.0), "{metrics}");
    let series = r#"crawlgate_content_usage_total{action="blocked",bot="ChatGPT-User",site="enforcing",usage="ai-input"}"#;
    assert_eq!(metric_value(&metrics, series), Some(1.0), "{metrics}");
    let requests = r#"crawlgate_requests_total{action="blocked",bot="GPTBot",category="ai-training",site="enforcing",verdict="content-usage",verified="unverifiable"}"#;
    assert_eq!(metric_value(&metrics, requests), Some(1.0), "{metrics}");

    // The access log names the verdict and the preference's line.
    let entry = wait_for("the access log line", || {
        let text = std::fs::read_to_string(proxy.path("access.jsonl")).ok()?;
        text.lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .find(|entry| entry["path"] == "/page" && entry["bot"] == "GPTBot")
    });
    assert_eq!(entry["verdict"], "content-usage");
    assert_eq!(entry["rule_line"], 4);
    assert_eq!(entry["action"], "blocked");
}

#[test]
fn without_enforcement_preferences_change_nothing() {
    let origin = Origin::start();
    let proxy = sites(&origin);
    let (status, body, headers) = get(&proxy.url("/page"), GPTBOT, Some("plain.test"));
    assert_eq!((status, body.as_str()), (200, "origin: /page"));
    assert!(headers.get("content-usage").is_none(), "{headers:?}");
    let metrics = proxy.metrics();
    assert!(
        !metrics.contains("crawlgate_content_usage_total{"),
        "{metrics}"
    );
    let allowed = r#"crawlgate_requests_total{action="forwarded",bot="GPTBot",category="ai-training",site="plain",verdict="allowed",verified="unverifiable"}"#;
    assert_eq!(metric_value(&metrics, allowed), Some(1.0), "{metrics}");
}

#[test]
fn a_tagging_site_tells_the_origin_which_preference_refused() {
    let origin = Origin::start();
    let proxy = sites(&origin);
    let (status, _, _) = get(&proxy.url("/page"), GPTBOT, Some("tag.test"));
    assert_eq!(status, 200);
    let seen = origin.last("/page").unwrap();
    assert_eq!(seen.headers["x-crawlgate-verdict"], "content-usage");
    assert_eq!(
        seen.headers["x-crawlgate-rule"],
        "Content-Signal: search=yes, ai-input=no, ai-train=no line 4"
    );
    let series = r#"crawlgate_content_usage_total{action="tagged",bot="GPTBot",site="tagging",usage="train-ai"}"#;
    assert_eq!(proxy.metric(series), Some(1.0));
}

#[test]
fn the_preference_for_the_path_is_announced_in_content_usage() {
    let origin = Origin::start();
    let proxy = sites(&origin);
    let host = Some("enforce.test");
    let header = |path: &str, agent: &str| {
        let (status, _, headers) = get(&proxy.url(path), agent, host);
        assert_eq!(status, 200, "{path}");
        headers
            .get("content-usage")
            .map(|v| v.to_str().unwrap().to_owned())
    };
    // aipref's vocabulary: `ai-input` has no label in it, so it is not announced.
    assert_eq!(
        header("/page", FIREFOX).as_deref(),
        Some("train-ai=n, search=y")
    );
    assert_eq!(
        header("/open/x", FIREFOX).as_deref(),
        Some("train-ai=y, search=y")
    );
    assert_eq!(
        header("/open/x", GPTBOT).as_deref(),
        Some("train-ai=y, search=y")
    );
    assert_eq!(
        header("/page", GOOGLEBOT).as_deref(),
        Some("train-ai=n, search=y")
    );
    // robots.txt itself carries no preference; a site that does not announce adds nothing.
    assert_eq!(header("/robots.txt", FIREFOX), None);
    let (_, _, headers) = get(&proxy.url("/page"), FIREFOX, Some("tag.test"));
    assert!(headers.get("content-usage").is_none(), "{headers:?}");
}

#[test]
fn explain_shows_the_preference_and_the_verdict() {
    let origin = Origin::start();
    let proxy = sites(&origin);
    let (code, out) = explain(
        &proxy.config,
        &[
            "--ua",
            GPTBOT,
            "--ip",
            "127.0.0.1",
            "http://enforce.test/page",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("verdict:       content-usage: line 4 (Content-Signal: search=yes, ai-input=no, ai-train=no) refuses train-ai, which ai-training crawlers are for, for /page"),
        "{out}"
    );
    assert!(
        out.contains("preference:    train-ai=n (line 4: Content-Signal: search=yes, ai-input=no, ai-train=no); search=y (line 4: Content-Signal: search=yes, ai-input=no, ai-train=no); ai-input=n (line 4: Content-Signal: search=yes, ai-input=no, ai-train=no) (enforced and announced)"),
        "{out}"
    );
    let (code, out) = explain(
        &proxy.config,
        &[
            "--ua",
            GPTBOT,
            "--ip",
            "127.0.0.1",
            "--json",
            "http://plain.test/open/x",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let json: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["verdict"], "allowed");
    let usage = &json["content_usage"];
    assert_eq!(usage["enforce"], false);
    assert_eq!(usage["header"], "train-ai=y, search=y");
    assert_eq!(usage["preference"][0]["usage"], "train-ai");
    assert_eq!(usage["preference"][0]["stance"], "allowed");
    assert_eq!(usage["preference"][0]["rule"]["line"], 5);
    assert_eq!(usage["refused"], serde_json::Value::Null);
}

/// `audit` replays a server's log against the same robots.txt: the requests that went against
/// a stated preference are reported beside those that broke a rule.
#[test]
fn audit_reports_requests_against_a_preference_beside_rule_violations() {
    let dir = tempfile::tempdir().unwrap();
    let robots = dir.path().join("robots.txt");
    std::fs::write(&robots, ROBOTS).unwrap();
    let log = dir.path().join("access.log");
    let line = |path: &str, agent: &str| {
        format!("203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] \"GET {path} HTTP/1.1\" 200 5 \"-\" \"{agent}\"\n")
    };
    let text = [
        line("/page", GPTBOT),
        line("/other", GPTBOT),
        line("/open/x", GPTBOT),
        line("/never/x", GPTBOT),
        line("/page", GOOGLEBOT),
        line("/page", FIREFOX),
    ]
    .concat();
    std::fs::write(&log, text).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(["audit", "--robots"])
        .arg(&robots)
        .args(["--json"])
        .arg(&log)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    let report: serde_json::Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("{e}: {out}\n{}", String::from_utf8_lossy(&output.stderr)));
    let crawler = |bot: &str| {
        report["crawlers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["bot"] == bot)
            .cloned()
            .unwrap_or_else(|| panic!("{bot} in {report}"))
    };
    let gptbot = crawler("GPTBot");
    assert_eq!(gptbot["requests"], 4);
    assert_eq!(gptbot["disallowed"], 1);
    assert_eq!(gptbot["against_preference"], 2);
    // Absent where nothing went against a preference (reports without any read as before).
    assert!(crawler("Googlebot").get("against_preference").is_none());
    assert_eq!(report["against_preference"], 2);
    let rules = report["preference_rules"].as_array().unwrap();
    assert_eq!(rules[0]["line"], 4);
    assert_eq!(rules[0]["requests"], 2);

    // The table and the page say the same.
    let html = dir.path().join("report.html");
    let output = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(["audit", "--robots"])
        .arg(&robots)
        .arg("--html")
        .arg(&html)
        .arg(&log)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        table.contains("2 crawler requests robots.txt allows went against its stated content-use preference:\n  line 4 (Content-Signal: search=yes, ai-input=no, ai-train=no): 2\n"),
        "{table}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<b>2</b><span>allowed, but against a stated content-use preference</span>"),
        "{page}"
    );
}

/// An origin that states its own `Content-Usage` on every response: a plain HTTP/1.1 server on
/// loopback, one thread, one response per connection.
fn origin_stating(content_usage: &'static str) -> std::net::SocketAddr {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            // The request head ends with an empty line.
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if line == "\r\n" {
                    break;
                }
                line.clear();
            }
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Usage: {content_usage}\r\nConnection: close\r\n\r\nok"
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    addr
}

#[test]
fn an_origins_own_content_usage_is_kept_and_robots_txt_adds_what_is_stricter() {
    let origin = origin_stating("train-ai=y;src=cms");
    let template = sites_template(
        false,
        &[site(
            "announcing",
            &[],
            origin,
            "robots.txt",
            &["content_usage: {announce: true}"],
        )],
    );
    let proxy = ProxyBuilder::new(&template)
        .file("robots.txt", ROBOTS)
        .start();
    let header = |path: &str| {
        let (status, body, headers) = get(&proxy.url(path), FIREFOX, None);
        assert_eq!((status, body.as_str()), (200, "ok"), "{path}");
        let values: Vec<String> = headers
            .get_all("content-usage")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        values
    };
    // robots.txt refuses training here: its `train-ai=n` comes last, and a dictionary keeps
    // the last of a key.
    assert_eq!(
        header("/page"),
        ["train-ai=y;src=cms, train-ai=n, search=y"]
    );
    // Here both allow training: only what the origin does not say is added.
    assert_eq!(header("/open/x"), ["train-ai=y;src=cms, search=y"]);
}
