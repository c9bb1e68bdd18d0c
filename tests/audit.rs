//! `crawlgate audit` end to end: the real binary on the fixture logs in `tests/fixtures/audit/`
//! (combined with its variants, JSON lines, gzip, standard input), checked on its JSON output,
//! its exit statuses, its table and its HTML page.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/audit")
        .join(name)
}

fn path(name: &str) -> String {
    fixture(name).to_str().unwrap().to_owned()
}

/// Runs `crawlgate audit --robots robots.txt --catalog bots.yaml ARGS...` with `stdin`.
fn audit(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .arg("audit")
        .args([
            "--robots",
            &path("robots.txt"),
            "--catalog",
            &path("bots.yaml"),
        ])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// Runs it with `--json` and parses the report, requiring exit status 0.
fn report(args: &[&str], stdin: &[u8]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let output = audit(&all, stdin);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// What the combined fixture log holds, crawler by crawler.
fn expected_crawlers() -> Value {
    json!([
        {
            "bot": "GPTBot", "category": "ai-training", "operator": "OpenAI", "group": "agent",
            "requests": 5, "allowed": 0, "disallowed": 4, "share": 0.8, "traffic_share": 0.3125,
            "fetched_robots": true, "robots_fetches": 1,
            "robots_first_fetch": "2024-10-10T10:00:00Z",
            "first_seen": "2024-10-10T10:00:00Z", "last_seen": "2024-10-10T10:08:00Z",
            "top_disallowed": [
                {"path": "/blog/post-1", "requests": 2},
                {"path": "/blog/post-1?utm=x", "requests": 1},
                {"path": "/private/b", "requests": 1}
            ],
            "top_disallowed_exact": true,
            "no_rule": 0,
            "rules": [
                {"line": 2, "kind": "disallow", "pattern": "/", "allowed": 0, "disallowed": 4}
            ]
        },
        {
            "bot": "Googlebot", "category": "search", "operator": "Google", "group": "star",
            "requests": 5, "allowed": 2, "disallowed": 3, "share": 0.6, "traffic_share": 0.3125,
            "fetched_robots": false, "robots_fetches": 0, "robots_first_fetch": null,
            "first_seen": "2024-10-10T10:01:00Z", "last_seen": "2024-10-10T10:11:00Z",
            "top_disallowed": [
                {"path": "/docs/a.pdf", "requests": 1},
                {"path": "/private/a", "requests": 1},
                {"path": "/public/../private/c", "requests": 1}
            ],
            "top_disallowed_exact": true,
            "no_rule": 1,
            "rules": [
                {"line": 8, "kind": "disallow", "pattern": "/private/", "allowed": 0, "disallowed": 2},
                {"line": 9, "kind": "allow", "pattern": "/private/press/", "allowed": 1, "disallowed": 0},
                {"line": 10, "kind": "disallow", "pattern": "/*.pdf$", "allowed": 0, "disallowed": 1}
            ]
        },
        {
            "bot": "ExampleBot", "category": "unlisted", "operator": null, "group": "agent",
            "requests": 2, "allowed": 1, "disallowed": 1, "share": 0.5, "traffic_share": 0.125,
            "fetched_robots": false, "robots_fetches": 0, "robots_first_fetch": null,
            "first_seen": "2024-10-10T10:09:00Z", "last_seen": "2024-10-10T10:09:30Z",
            "top_disallowed": [{"path": "/tmp/cache", "requests": 1}],
            "top_disallowed_exact": true,
            "no_rule": 1,
            "rules": [
                {"line": 5, "kind": "disallow", "pattern": "/tmp/", "allowed": 0, "disallowed": 1}
            ]
        },
        {
            "bot": "unnamed", "category": "unnamed", "operator": null, "group": "star",
            "requests": 1, "allowed": 0, "disallowed": 1, "share": 1.0, "traffic_share": 0.0625,
            "fetched_robots": false, "robots_fetches": 0, "robots_first_fetch": null,
            "first_seen": "2024-10-10T10:05:00Z", "last_seen": "2024-10-10T10:05:00Z",
            "top_disallowed": [{"path": "/private/x", "requests": 1}],
            "top_disallowed_exact": true,
            "no_rule": 0,
            "rules": [
                {"line": 8, "kind": "disallow", "pattern": "/private/", "allowed": 0, "disallowed": 1}
            ],
            "user_agents": [{"user_agent": "FooBot/1.0 (+http://foo.example/bot)", "requests": 1}]
        }
    ])
}

#[test]
fn a_combined_log_is_reported_crawler_by_crawler() {
    let log = path("access.log");
    let report = report(&[&log], b"");
    assert_eq!(report["crawlers"], expected_crawlers());
    assert_eq!(report["lines"], 18);
    assert_eq!(report["skipped"], 1);
    assert_eq!(report["requests"], 16);
    assert_eq!(report["invalid_requests"], 1);
    assert_eq!(report["people"], 3);
    assert_eq!(report["crawler_requests"], 13);
    assert_eq!(report["disallowed"], 9);
    assert_eq!(report["without_user_agent"], 1);
    assert_eq!(report["without_time"], 0);
    assert_eq!(report["first_seen"], "2024-10-10T09:59:00Z");
    assert_eq!(report["last_seen"], "2024-10-10T10:11:00Z");
    assert_eq!(
        report["inputs"],
        json!([{"file": log, "format": "combined", "lines": 18, "skipped": 1}])
    );
    assert_eq!(
        report["robots"],
        json!({"file": path("robots.txt"), "bytes": 147, "groups": 3, "rules": 5})
    );
    assert_eq!(
        report["rules"],
        json!([
            {"line": 2, "kind": "disallow", "pattern": "/", "allowed": 0, "disallowed": 4},
            {"line": 5, "kind": "disallow", "pattern": "/tmp/", "allowed": 0, "disallowed": 1},
            {"line": 8, "kind": "disallow", "pattern": "/private/", "allowed": 0, "disallowed": 3},
            {"line": 9, "kind": "allow", "pattern": "/private/press/", "allowed": 1, "disallowed": 0},
            {"line": 10, "kind": "disallow", "pattern": "/*.pdf$", "allowed": 0, "disallowed": 1}
        ])
    );
    assert_eq!(report["rules_unused"], 0);
    assert_eq!(
        report["malformed"],
        json!([{"file": log, "line": 10, "reason": "no [time] field", "text": "this is not an access log line"}])
    );
    // One-minute buckets from 09:59 to 10:11; every request with a time is in one.
    let timeline = &report["timeline"];
    assert_eq!(timeline["bucket_seconds"], 60);
    let buckets = timeline["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 13);
    assert_eq!(
        buckets[0],
        json!({"start": "2024-10-10T09:59:00Z", "allowed": 0, "disallowed": 0, "people": 1})
    );
    assert_eq!(
        buckets[1],
        json!({"start": "2024-10-10T10:00:00Z", "allowed": 1, "disallowed": 3, "people": 0})
    );
    let sum = |key: &str| {
        buckets
            .iter()
            .map(|b| b[key].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(
        (sum("allowed"), sum("disallowed"), sum("people")),
        (4, 9, 3)
    );
}

#[test]
fn gzip_is_read_by_its_content_and_stdin_is_dash() {
    let plain = std::fs::read(fixture("access.log")).unwrap();
    let compressed = gzip(&plain);
    let dir = tempfile::tempdir().unwrap();
    // A rotated log keeps no `.gz` in its name: the magic bytes decide.
    let rotated = dir.path().join("access.log.1");
    std::fs::write(&rotated, &compressed).unwrap();
    let from_file = report(&[rotated.to_str().unwrap()], b"");
    assert_eq!(from_file["crawlers"], expected_crawlers());
    assert_eq!(from_file["lines"], 18);
    for stdin in [plain.clone(), compressed] {
        let from_stdin = report(&["-"], &stdin);
        assert_eq!(from_stdin["crawlers"], expected_crawlers());
        assert_eq!(from_stdin["inputs"][0]["file"], "-");
        assert_eq!(from_stdin["skipped"], 1);
    }
}

#[test]
fn several_inputs_add_up() {
    let log = path("access.log");
    let report = report(&[&log, &log], b"");
    assert_eq!(report["lines"], 36);
    assert_eq!(report["skipped"], 2);
    assert_eq!(report["crawlers"][0]["bot"], "GPTBot");
    assert_eq!(report["crawlers"][0]["requests"], 10);
    assert_eq!(report["crawlers"][0]["top_disallowed"][0]["requests"], 4);
    assert_eq!(report["inputs"].as_array().unwrap().len(), 2);
}

#[test]
fn json_lines_with_configured_field_names() {
    let report = report(
        &[
            "--format",
            "json",
            "--field",
            "path=u",
            "--field",
            "ua=who",
            "--field",
            "time=when",
            &path("custom.jsonl"),
        ],
        b"",
    );
    assert_eq!(
        (&report["lines"], &report["skipped"], &report["people"]),
        (&json!(6), &json!(2), &json!(1))
    );
    let reasons: Vec<&str> = report["malformed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["reason"].as_str().unwrap())
        .collect();
    assert!(reasons[0].starts_with("not a JSON object"), "{reasons:?}");
    assert_eq!(reasons[1], "no `u` or `request` field");
    let crawlers = report["crawlers"].as_array().unwrap();
    let google = &crawlers[0];
    assert_eq!(google["bot"], "Googlebot");
    assert_eq!(
        (&google["requests"], &google["disallowed"]),
        (&json!(2), &json!(1))
    );
    assert_eq!(google["robots_first_fetch"], "2024-10-10T10:04:00Z");
    let gpt = &crawlers[1];
    assert_eq!(gpt["bot"], "GPTBot");
    assert_eq!(gpt["first_seen"], "2024-10-10T10:01:00Z");
    assert_eq!(
        gpt["top_disallowed"],
        json!([{"path": "/blog/", "requests": 1}])
    );
    assert_eq!(report["first_seen"], "2024-10-10T10:00:00Z");
    assert_eq!(report["last_seen"], "2024-10-10T10:04:00Z");
}

#[test]
fn json_lines_are_detected_and_read_with_default_names() {
    let report = report(&[&path("nginx.jsonl")], b"");
    assert_eq!(report["inputs"][0]["format"], "json");
    assert_eq!(
        (&report["lines"], &report["skipped"]),
        (&json!(2), &json!(0))
    );
    let bots: Vec<(&str, u64, &str)> = report["crawlers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["bot"].as_str().unwrap(),
                c["disallowed"].as_u64().unwrap(),
                c["top_disallowed"][0]["path"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        bots,
        vec![
            ("GPTBot", 1, "/docs/x.pdf"),
            ("unnamed", 1, "/private/a?b=1")
        ]
    );
}

#[test]
fn strict_fails_on_the_first_malformed_line_with_its_place() {
    let log = path("access.log");
    let output = audit(&["--strict", &log], b"");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{log}:10: no [time] field")),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn unreadable_inputs_and_bad_arguments_exit_2() {
    let missing = audit(&["/nonexistent/access.log"], b"");
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("cannot read /nonexistent/access.log")
    );
    let bad_field = audit(&["--field", "colour=red", "-"], b"");
    assert_eq!(bad_field.status.code(), Some(2));
    let no_logs = audit(&[], b"");
    assert_eq!(no_logs.status.code(), Some(2));
    let corrupt =
        gzip(b"1.2.3.4 - - [10/Oct/2024:10:00:00 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"x\"\n");
    let truncated = &corrupt[..corrupt.len() - 12];
    let output = audit(&["-"], truncated);
    assert_eq!(
        output.status.code(),
        Some(2),
        "a truncated gzip stream is an I/O error"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read -"));
}

#[test]
fn the_table_names_crawlers_rules_and_paths() {
    let output = audit(&[&path("access.log")], b"");
    assert_eq!(output.status.code(), Some(0));
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.starts_with("18 lines in 1 input (1 skipped as malformed), 2024-10-10T09:59:00Z to 2024-10-10T10:11:00Z\n"), "{table}");
    assert!(table.contains("3 requests by people, 13 by 4 crawlers, 9 of them disallowed (69.2%)"));
    let gpt = table.lines().find(|l| l.starts_with("GPTBot ")).unwrap();
    let columns: Vec<&str> = gpt.split_whitespace().collect();
    assert_eq!(
        columns,
        vec![
            "GPTBot",
            "ai-training",
            "5",
            "4",
            "80.0%",
            "2024-10-10T10:00:00Z",
            "2024-10-10T10:00:00Z",
            "2024-10-10T10:08:00Z"
        ]
    );
    let google = table.lines().find(|l| l.starts_with("Googlebot ")).unwrap();
    assert!(google.contains(" never "), "{google}");
    assert!(table.contains("Disallow: /private/"));
    assert!(table.contains("/public/../private/c"));
    assert!(String::from_utf8_lossy(&output.stderr).contains("skipped 1 malformed line"));
}

#[test]
fn the_html_report_is_self_contained_and_escapes_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = dir.path().join("hostile.jsonl");
    std::fs::write(
        &hostile,
        concat!(
            r#"{"time":"2024-10-10T10:00:00Z","path":"/private/<img src=x onerror=alert(2)>","user_agent":"<script>alert(1)</script> EvilBot/1.0"}"#,
            "\n",
            r#"{"time":"2024-10-10T11:00:00Z","path":"/ok","user_agent":"Spider \"quoted\" & <marquee>"}"#,
            "\n",
        ),
    )
    .unwrap();
    let page = dir.path().join("report.html");
    let output = audit(
        &[
            "--html",
            page.to_str().unwrap(),
            &path("access.log"),
            hostile.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("Content-Security-Policy"));
    assert!(html.contains("default-src 'none'"));
    // Charts are inline SVG: bars per crawler and a timeline.
    assert!(html.contains("<svg id=\"bars\""));
    assert!(html.contains("crawler requests over time"));
    assert!(html.contains(">GPTBot</text>"));
    // Nothing is loaded from anywhere.
    let lower = html.to_ascii_lowercase();
    for attribute in ["src", "href", "action", "xlink:href"] {
        for quote in ["\"", "'", ""] {
            for scheme in ["http:", "https:", "//"] {
                let needle = format!("{attribute}={quote}{scheme}");
                assert!(!lower.contains(&needle), "found {needle}");
            }
        }
    }
    for forbidden in [
        "<link", "<iframe", "<img", "<object", "<embed", "@import", "url(",
    ] {
        assert!(!lower.contains(forbidden), "found {forbidden}");
    }
    // The log's markup is text, not markup: only crawlgate's own script element exists.
    assert_eq!(lower.matches("<script").count(), 1);
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; EvilBot/1.0"));
    assert!(html.contains("/private/&lt;img src=x onerror=alert(2)&gt;"));
    assert!(html.contains("Spider &quot;quoted&quot; &amp; &lt;marquee&gt;"));
    assert!(!lower.contains("<marquee"));
}

/// Crawls set against referrals: people whose Referer is an operator's product (nginx's
/// combined format logs it), and that operator's crawlers, by the embedded catalog.
#[test]
fn each_operators_crawls_are_set_against_the_people_its_products_sent() {
    let line = |referer: &str, agent: &str| {
        format!("203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] \"GET /page HTTP/1.1\" 200 512 \"{referer}\" \"{agent}\"\n")
    };
    let firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
    let gptbot = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
    let googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    let mut log = String::new();
    for _ in 0..6 {
        log += &line("-", gptbot);
    }
    log += &line("https://chatgpt.com/", gptbot); // a crawler's Referer is no referral
    log += &line("https://www.google.de/", googlebot);
    log += &line("https://chatgpt.com/c/123", firefox);
    log += &line("https://chatgpt.com/", firefox);
    log += &line("https://www.google.co.uk/", firefox);
    log += &line("https://www.google.co.uk/", firefox);
    log += &line("https://mail.google.com/mail/", firefox);
    log += &line("https://claude.ai/chat", firefox);
    log += &line("-", firefox);
    let robots =
        std::env::temp_dir().join(format!("crawlgate-referrals-{}.txt", std::process::id()));
    std::fs::write(&robots, "User-agent: *\nAllow: /\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(["audit", "--json", "--robots", robots.to_str().unwrap(), "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(log.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    std::fs::remove_file(&robots).unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["operators"],
        serde_json::json!([
            {"operator": "OpenAI", "crawls": 7, "referrals": 2, "crawls_per_referral": 3.5},
            {"operator": "Google", "crawls": 1, "referrals": 2, "crawls_per_referral": 0.5},
            {"operator": "Anthropic", "crawls": 0, "referrals": 1, "crawls_per_referral": 0.0},
        ]),
        "{report:#}"
    );
}
