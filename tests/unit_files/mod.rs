//! The systemd units as `systemd-analyze verify` can check them on a machine where crawlgate is
//! not installed: shared by tests/deploy.rs (the repository's unit) and tests/package.rs (the
//! installed ones).

use std::path::Path;

/// `unit` with each `Exec…=crawlgate …` line running `binary` instead. The units name the
/// program bare, for systemd to find in /usr/local/bin or the package's /usr/bin, and verify
/// checks that it exists.
pub fn running(unit: &str, binary: &Path) -> String {
    unit.lines()
        .map(|line| match line.split_once("=crawlgate ") {
            Some((key, args)) if key.starts_with("Exec") => {
                format!("{key}={} {args}\n", binary.display())
            }
            _ => format!("{line}\n"),
        })
        .collect()
}

/// Whether some `Exec…` line of `unit` still runs the bare name.
pub fn runs_bare_name(unit: &str) -> bool {
    unit.lines()
        .any(|line| line.starts_with("Exec") && line.contains("=crawlgate "))
}

/// `systemd-analyze security --offline`'s overall exposure of the unit file `unit` (run in
/// `dir`), with its report.
pub fn exposure(dir: &Path, unit: &Path) -> (f64, String) {
    let output = std::process::Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(unit)
        .current_dir(dir)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    let name = unit.file_name().unwrap().to_string_lossy();
    let score = report
        .lines()
        .find_map(|line| {
            line.split(&format!("Overall exposure level for {name}: "))
                .nth(1)
        })
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|score| score.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in:\n{report}"));
    (score, report)
}
