//! What ships beside the binary: every configuration in `conf/` and the README's validates, and
//! the systemd unit passes `systemd-analyze verify` and rates 2.0 or better in
//! `systemd-analyze security`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

mod unit_files;

fn crate_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

#[test]
fn every_shipped_configuration_validates() {
    let mut checked = 0;
    for entry in std::fs::read_dir(crate_path("conf")).unwrap() {
        let path = entry.unwrap().path();
        let is_yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        // The crawler catalog is YAML too, but not a configuration (it has its own test).
        if !is_yaml || path.file_name().is_some_and(|n| n == "bots.yaml") {
            continue;
        }
        let output = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
            .args(["validate", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}: {}{}",
            path.display(),
            stdout,
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains(": ok"), "{stdout}");
        checked += 1;
    }
    assert!(checked >= 1, "no configuration in conf/");
}

/// The README's one-site configuration is the one a newcomer copies: it validates as written.
#[test]
fn the_readmes_site_configuration_validates() {
    let readme = std::fs::read_to_string(crate_path("README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```yaml\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .filter(|block| block.contains("sites:"))
        .collect();
    assert!(!blocks.is_empty(), "README.md has no configuration block");
    let dir = tempfile::tempdir().unwrap();
    for (i, block) in blocks.iter().enumerate() {
        let path = dir.path().join(format!("readme-{i}.yaml"));
        std::fs::write(&path, block).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
            .args(["validate", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "README block {i}:\n{block}\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn a_bad_configuration_is_reported_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.yaml");
    std::fs::write(
        &config,
        "listen: [\"127.0.0.1:1\"]\nsites:\n  - name: a\n    upstream: \"127.0.0.1:1\"\n    robots: {inline: x}\n    action: blok\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(["validate", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.yaml:6:"), "{stderr}");
    assert!(
        stderr.contains("unknown variant `blok`, expected one of `block`, `tag`, `count`"),
        "{stderr}"
    );
}

/// The unit, with its ExecStart pointing at the binary under test (verify checks it exists).
fn unit_under_test(dir: &Path) -> PathBuf {
    let unit = std::fs::read_to_string(crate_path("systemd/crawlgate.service")).unwrap();
    let unit = unit_files::running(&unit, Path::new(env!("CARGO_BIN_EXE_crawlgate")));
    assert!(!unit_files::runs_bare_name(&unit));
    let path = dir.join("crawlgate.service");
    std::fs::write(&path, unit).unwrap();
    path
}

fn systemd_analyze() -> Option<&'static str> {
    let found = Command::new("systemd-analyze").arg("--version").output();
    if found.is_ok_and(|o| o.status.success()) {
        Some("systemd-analyze")
    } else {
        eprintln!("skipped: systemd-analyze is not installed");
        None
    }
}

#[test]
fn the_systemd_unit_verifies() {
    let Some(tool) = systemd_analyze() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_under_test(dir.path());
    let output = Command::new(tool)
        .arg("verify")
        .arg(&unit)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        !stderr.contains("crawlgate.service:"),
        "warnings about the unit: {stderr}"
    );
}

#[test]
fn the_systemd_unit_is_hardened() {
    if systemd_analyze().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_under_test(dir.path());
    let (score, report) = unit_files::exposure(dir.path(), &unit);
    assert!(score <= 2.0, "exposure {score}:\n{report}");
}

#[test]
fn the_unit_and_the_configuration_agree_on_the_grace_period() {
    let unit = std::fs::read_to_string(crate_path("systemd/crawlgate.service")).unwrap();
    let stop: u64 = unit
        .lines()
        .find_map(|l| l.strip_prefix("TimeoutStopSec="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    let config = std::fs::read_to_string(crate_path("conf/crawlgate.yaml")).unwrap();
    let grace: u64 = config
        .lines()
        .find_map(|l| l.trim().strip_prefix("grace_period_seconds:"))
        .and_then(|v| v.split('#').next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!(
        stop > grace,
        "TimeoutStopSec={stop} must exceed grace_period_seconds={grace}"
    );
}
