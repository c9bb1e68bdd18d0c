//! The command line as an operator meets it on the first day: the real binary, its exit
//! status and what it prints (`check` on standard input, `validate`'s refusals, `ranges update`'s
//! causes, the demo and flags-only mode on chosen addresses with an access log).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn crawlgate(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `check --robots -` reads robots.txt from standard input (it used to wait forever on the
/// lock of the standard input its caller held).
#[test]
fn check_reads_robots_txt_from_standard_input() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args([
            "check",
            "--robots",
            "-",
            "--agent",
            "GPTBot",
            "/private/x",
            "/public",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"User-agent: GPTBot\nDisallow: /private/\n")
        .unwrap();
    drop(stdin);
    // A hang is the bug: the deadline only stops the test from hanging with it.
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("check --robots - did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let out = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(out.contains("disallowed /private/x"), "{out}");
    assert!(out.contains("allowed    /public"), "{out}");
}

#[test]
fn check_will_not_read_standard_input_twice() {
    let dir = tempfile::tempdir().unwrap();
    let output = crawlgate(&["check", "--robots", "-", "--jsonl"], dir.path());
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("both read standard input"));
}

const SITE: &str = "listen: [\"127.0.0.1:1\"]\nsites:\n  - name: shop\n    upstream: \"127.0.0.1:9\"\n    robots: {inline: \"User-agent: *\\nDisallow: /x\\n\"}\n";

fn validate(config: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain"), b"").unwrap();
    std::fs::write(dir.path().join("crawlgate.yaml"), config).unwrap();
    crawlgate(&["validate", "--config", "crawlgate.yaml"], dir.path())
}

#[test]
fn validate_refuses_a_bots_key_that_could_never_apply() {
    let output = validate(&format!(
        "{SITE}    bots:\n      GPTBot: count\n      NoSuchBot123: block\n"
    ));
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`NoSuchBot123` (line 8) names no crawler"),
        "{err}"
    );
    // A catalog name and a crawler of the site's own (a product token) are fine.
    let output = validate(&format!(
        "{SITE}    bots: {{MJ12bot: tag, OwnCrawler: block}}\n"
    ));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
}

#[test]
fn validate_refuses_a_state_dir_nothing_can_be_written_in() {
    // Under a plain file: nobody (root included) can create it.
    let output = validate(&format!("state_dir: plain/state\n{SITE}"));
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("state_dir") && err.contains("cannot create files in"),
        "{err}"
    );
    let output = validate(&format!("state_dir: state\n{SITE}"));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
}

#[test]
fn ranges_update_says_why_a_fetch_failed() {
    let dir = tempfile::tempdir().unwrap();
    // A loopback port nothing listens on: refused at once.
    let closed = free_port();
    let config = format!(
        "{SITE}verification:\n  ranges:\n    Googlebot: {{file: googlebot.json, url: \"http://127.0.0.1:{closed}/googlebot.json\"}}\n"
    );
    std::fs::write(dir.path().join("crawlgate.yaml"), config).unwrap();
    let output = crawlgate(
        &["ranges", "update", "--config", "crawlgate.yaml"],
        dir.path(),
    );
    let out = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(out.contains("Connection refused"), "{out}");
}

/// Waits until `port` takes connections, or the process ends.
fn wait_listening(child: &mut std::process::Child, port: u16, logs: &std::path::Path) {
    wait_for("crawlgate to listen", || {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr = std::fs::read_to_string(logs.join("stderr.log")).unwrap_or_default();
            panic!("crawlgate exited with {status}:\n{stderr}");
        }
        std::net::TcpStream::connect(("127.0.0.1", port))
            .ok()
            .map(drop)
    });
}

#[test]
fn the_demo_listens_where_it_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let (port, metrics) = (free_port(), free_port());
    let listen = format!("127.0.0.1:{port}");
    let metrics_listen = format!("127.0.0.1:{metrics}");
    let mut child = spawn_crawlgate(
        &[
            "serve",
            "--listen",
            &listen,
            "--metrics-listen",
            &metrics_listen,
        ],
        dir.path(),
    );
    wait_listening(&mut child, port, dir.path());
    wait_listening(&mut child, metrics, dir.path());
    let url = |path: &str| format!("http://{listen}{path}");
    let (status, home, _) = get(&url("/"), FIREFOX, None);
    assert_eq!(status, 200);
    assert!(home.contains(&format!("http://{listen}/")), "{home}");
    assert_eq!(get(&url("/blog/"), GPTBOT, None).0, 403);
    let (_, robots, _) = get(&url("/robots.txt"), GPTBOT, None);
    assert!(
        robots.contains(&format!("Sitemap: http://{listen}/sitemap.xml")),
        "{robots}"
    );
    let (status, metrics, _) = get(&format!("http://{metrics_listen}/metrics"), FIREFOX, None);
    assert_eq!(status, 200);
    assert!(
        metrics.contains(r#"action="blocked",bot="GPTBot""#),
        "{metrics}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn flags_alone_can_write_an_access_log() {
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("robots.txt"),
        "User-agent: GPTBot\nDisallow: /\n",
    )
    .unwrap();
    let (port, metrics) = (free_port(), free_port());
    let listen = format!("127.0.0.1:{port}");
    let log = dir.path().join("access.jsonl");
    let mut child = spawn_crawlgate(
        &[
            "serve",
            "--upstream",
            &origin.addr.to_string(),
            "--robots",
            dir.path().join("robots.txt").to_str().unwrap(),
            "--listen",
            &listen,
            "--metrics-listen",
            &format!("127.0.0.1:{metrics}"),
            "--access-log",
            log.to_str().unwrap(),
        ],
        dir.path(),
    );
    wait_listening(&mut child, port, dir.path());
    assert_eq!(get(&format!("http://{listen}/page"), GPTBOT, None).0, 403);
    let line = wait_for("the access log line", || {
        let text = std::fs::read_to_string(&log).ok()?;
        text.lines().next().map(str::to_owned)
    });
    let entry: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        (entry["path"].as_str(), entry["action"].as_str()),
        (Some("/page"), Some("blocked"))
    );
    child.kill().unwrap();
    child.wait().unwrap();
}
