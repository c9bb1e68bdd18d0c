//! `crawlgate lint`: every problem in a robots.txt with its line, and a summary of what it holds.

use super::{read_input, CliError, ExitStatus};
use crate::robots::{Options, Problem, Robots, DEFAULT_MAX_BYTES};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `crawlgate lint`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// The robots.txt file (`-` for standard input).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Exit with status 1 when there is any problem.
    #[arg(long)]
    pub strict: bool,
    /// Print one JSON object: the problems and the summary.
    #[arg(long)]
    pub json: bool,
    /// The parse limit in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES)]
    pub max_bytes: usize,
}

/// What a file holds, counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Lines read.
    pub lines: u32,
    /// Bytes read (up to the parse limit).
    pub bytes: usize,
    /// Groups.
    pub groups: usize,
    /// Distinct product tokens named (plus `*` when a group names it).
    pub agents: usize,
    /// Allow and disallow rules.
    pub rules: usize,
    /// Sitemap lines.
    pub sitemaps: usize,
    /// Groups that give a crawl-delay.
    pub crawl_delays: usize,
    /// Problems found.
    pub problems: usize,
}

impl Summary {
    /// Counts what `robots` holds.
    pub fn of(robots: &Robots) -> Summary {
        let file = robots.file();
        let star = usize::from(file.groups.iter().any(|g| g.star));
        Summary {
            lines: file.lines,
            bytes: file.bytes,
            groups: file.groups.len(),
            agents: robots.agents().count() + star,
            rules: file.rules.len(),
            sitemaps: file.sitemaps.len(),
            crawl_delays: file
                .groups
                .iter()
                .filter(|g| g.crawl_delay.is_some())
                .count(),
            problems: robots.problems().len(),
        }
    }
}

#[derive(Serialize)]
struct Report<'a> {
    file: String,
    summary: Summary,
    problems: Vec<&'a Problem>,
}

/// Runs `lint` and writes its report on `out`.
pub fn run_lint(args: &LintArgs, mut out: impl Write) -> Result<ExitStatus, CliError> {
    let bytes = read_input(&args.file)?;
    let options = Options {
        max_bytes: args.max_bytes,
    };
    let robots = Robots::parse_with(&bytes, options);
    let problems = robots.problems();
    let summary = Summary::of(&robots);
    let name = args.file.display().to_string();
    if args.json {
        let report = Report {
            file: name,
            summary,
            problems: problems.clone(),
        };
        let json = serde_json::to_string(&report).unwrap_or_default();
        writeln!(out, "{json}")?;
    } else {
        for problem in &problems {
            writeln!(out, "{name}:{}: {}", problem.line, problem.kind)?;
            writeln!(out, "    {}", problem.text)?;
        }
        writeln!(
            out,
            "{name}: {} lines, {} groups, {} agents, {} rules, {} sitemaps, {} crawl-delays; {} problems",
            summary.lines,
            summary.groups,
            summary.agents,
            summary.rules,
            summary.sitemaps,
            summary.crawl_delays,
            summary.problems
        )?;
    }
    Ok(if args.strict && !problems.is_empty() {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint(text: &str, flags: &[&str]) -> (ExitStatus, String) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let mut args = LintArgs {
            file: file.path().to_owned(),
            strict: flags.contains(&"--strict"),
            json: flags.contains(&"--json"),
            max_bytes: DEFAULT_MAX_BYTES,
        };
        args.file = file.path().to_owned();
        let mut out = Vec::new();
        let status = run_lint(&args, &mut out).unwrap();
        (status, String::from_utf8(out).unwrap())
    }

    const FILE: &str = "User-agent: *\nDisallow: /a\nNoindex: /b\n\nUser-agent: GPTBot\nUser-agent: CCBot\nDisallow: /\nCrawl-delay: 5\nSitemap: https://e.com/s.xml\n";

    #[test]
    fn lists_problems_with_lines_and_a_summary() {
        let (status, out) = lint(FILE, &[]);
        assert_eq!(status, ExitStatus::Success);
        assert!(out.contains(":3: `noindex` is not part of RFC 9309; ignored\n    Noindex: /b\n"));
        assert!(out.ends_with(
            ": 9 lines, 2 groups, 3 agents, 2 rules, 1 sitemaps, 1 crawl-delays; 1 problems\n"
        ));
    }

    #[test]
    fn strict_fails_on_any_problem() {
        assert_eq!(lint(FILE, &["--strict"]).0, ExitStatus::Failure);
        assert_eq!(
            lint("User-agent: *\nDisallow: /\n", &["--strict"]).0,
            ExitStatus::Success
        );
    }

    #[test]
    fn json_report() {
        let (_, out) = lint(FILE, &["--json"]);
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["summary"]["rules"], 2);
        assert_eq!(report["problems"][0]["line"], 3);
        assert_eq!(report["problems"][0]["code"], "unsupported");
        assert_eq!(report["problems"][0]["text"], "Noindex: /b");
    }
}
