//! `crawlgate lint`: every problem in a robots.txt with its line, the user-agent lines crawlgate
//! never applies (browser vocabulary: they would name every person), and a summary of what it
//! holds.

use super::{read_input, CliError, ExitStatus};
use crate::agent::is_browser_vocabulary;
use crate::catalog::{Catalog, Matches};
use crate::robots::token::leading_token;
use crate::robots::{Options, Problem, ProblemKind, Robots, DEFAULT_MAX_BYTES};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `crawlgate lint`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// The robots.txt file (`-` for standard input); none with `--config`.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Lint what each site of this configuration serves instead: its robots.txt (an origin's
    /// fetched once) with the groups it manages composed, each problem with the source of its
    /// line (`managed`, `origin N`).
    #[cfg(feature = "proxy")]
    #[arg(long, value_name = "FILE", conflicts_with = "file")]
    pub config: Option<PathBuf>,
    /// With `--config`: only this site.
    #[cfg(feature = "proxy")]
    #[arg(long, value_name = "NAME", requires = "config")]
    pub site: Option<String>,
    /// Exit with status 1 when there is any problem.
    #[arg(long)]
    pub strict: bool,
    /// Print one JSON object: the problems and the summary.
    #[arg(long)]
    pub json: bool,
    /// The parse limit in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES)]
    pub max_bytes: usize,
    /// A crawler catalog instead of the embedded one.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
}

/// A user-agent line whose token crawlgate never judges a browser or an app by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unjudged {
    /// The line (of the user-agent line, or of its group's first one).
    pub line: u32,
    /// The value as written.
    pub agent: String,
    /// The product token it is read as.
    pub token: String,
    /// Whether the group applies to anyone: `false` for browser vocabulary and people's apps,
    /// `true` for a catalog crawler whose token browsers also carry (`Java`), which applies
    /// only to the crawler's own headers.
    pub applies: bool,
    /// Why, for a person to read.
    pub reason: String,
}

/// The line in `lines` (1-based numbers `from..to`) of the user-agent line that names `token`.
fn agent_line(bytes: &[u8], from: u32, to: u32, token: &str) -> Option<u32> {
    let lines = bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l));
    lines
        .filter(|(number, _)| (from as usize..to as usize).contains(number))
        .find_map(|(number, line)| {
            let line = String::from_utf8_lossy(line);
            let (key, value) = line.split_once(':')?;
            let names = key.to_ascii_lowercase().contains("agent")
                && leading_token(value.trim()).eq_ignore_ascii_case(token);
            names.then(|| u32::try_from(number).ok()).flatten()
        })
}

/// The user-agent lines of `robots` (parsed from `bytes`) that name browser vocabulary or a
/// person's app.
pub fn unjudged(bytes: &[u8], robots: &Robots, catalog: &Catalog) -> Vec<Unjudged> {
    let file = robots.file();
    let mut found = Vec::new();
    for (index, group) in file.groups.iter().enumerate() {
        let next = file.groups.get(index + 1).map_or(u32::MAX, |g| g.line);
        for token in &group.agents {
            let entry = catalog.get(token);
            let app = entry.is_some_and(|e| e.matches == Matches::Never);
            if !is_browser_vocabulary(token) && !app {
                continue;
            }
            // The trimmed value, and its own line, when the parser had to cut it.
            let trimmed = robots
                .problems()
                .into_iter()
                .find_map(|problem| match &problem.kind {
                    ProblemKind::AgentTrimmed { found, token: read }
                        if read == token && problem.line >= group.line && problem.line < next =>
                    {
                        Some((problem.line, found.clone()))
                    }
                    _ => None,
                });
            let (line, agent) = trimmed.unwrap_or_else(|| {
                let line = agent_line(bytes, group.line, next, token).unwrap_or(group.line);
                (line, token.clone())
            });
            let (applies, reason) = match entry {
                Some(e) if e.matches != Matches::Never => (
                    true,
                    format!("`{token}` is also in browsers' and apps' headers: crawlgate applies this group only to {}'s own requests, never to a person", e.display_name()),
                ),
                Some(e) => (
                    false,
                    format!("`{}` is a person's app: people are never judged, so this group never applies", e.display_name()),
                ),
                None => (
                    false,
                    format!("`{token}` is browser vocabulary, sent by people's browsers and apps: crawlgate never applies this group to anyone"),
                ),
            };
            found.push(Unjudged {
                line,
                agent,
                token: token.clone(),
                applies,
                reason,
            });
        }
    }
    found.sort_by_key(|u| u.line);
    found
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
    /// `Content-Usage` and `Content-Signal` lines that state a preference.
    pub preferences: usize,
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
            preferences: file.preferences.len(),
        }
    }
}

#[derive(Serialize)]
struct Report<'a> {
    file: String,
    summary: Summary,
    problems: Vec<&'a Problem>,
    unjudged: Vec<Unjudged>,
    /// Where each problem's line comes from, for a site that manages groups of its own
    /// (`--config`); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sources: Vec<LineSource>,
}

/// Where a line of a composed robots.txt comes from.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LineSource {
    /// The line of the file served.
    pub line: u32,
    /// Where it comes from.
    pub source: crate::managed::Source,
}

/// Where each line of a file comes from, when it is a composition: `None` for a file as it is.
type Sources<'a> = Option<&'a dyn Fn(u32) -> Option<crate::managed::Source>>;

/// Runs `lint` and writes its report on `out`: of the file, or of what each site of
/// `--config` serves.
pub fn run_lint(args: &LintArgs, mut out: impl Write) -> Result<ExitStatus, CliError> {
    let catalog = match &args.catalog {
        Some(path) => Catalog::from_file(path),
        None => Catalog::embedded(),
    }
    .map_err(|e| CliError::Config(e.to_string()))?;
    #[cfg(feature = "proxy")]
    if let Some(config) = &args.config {
        let mut failing = false;
        for (name, snapshot) in super::robots::served(config, args.site.as_deref())? {
            let sources = |line| snapshot.line_source(line);
            let sources: Sources<'_> = snapshot.managed.is_some().then_some(&sources);
            let name = format!("site {name}");
            failing |= lint_one(args, &catalog, &name, &snapshot.bytes, sources, &mut out)?;
        }
        return Ok(if args.strict && failing {
            ExitStatus::Failure
        } else {
            ExitStatus::Success
        });
    }
    let file = args
        .file
        .as_ref()
        .ok_or_else(|| CliError::Usage("give a robots.txt FILE (or --config)".into()))?;
    let bytes = read_input(file)?;
    let name = file.display().to_string();
    let failing = lint_one(args, &catalog, &name, &bytes, None, &mut out)?;
    Ok(if args.strict && failing {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Lints one file named `name` (with where its lines come from, for a composed one): its
/// report on `out`, and whether `--strict` fails it.
fn lint_one(
    args: &LintArgs,
    catalog: &Catalog,
    name: &str,
    bytes: &[u8],
    sources: Sources<'_>,
    out: &mut impl Write,
) -> Result<bool, CliError> {
    let options = Options {
        max_bytes: args.max_bytes,
    };
    let robots = Robots::parse_with(bytes, options);
    let problems = robots.problems();
    let unjudged = unjudged(bytes, &robots, catalog);
    let never = unjudged.iter().filter(|u| !u.applies).count();
    let summary = Summary::of(&robots);
    let failing = !problems.is_empty() || never > 0;
    let source_of = |line: u32| sources.and_then(|of| of(line));
    if args.json {
        let report = Report {
            file: name.to_owned(),
            summary,
            sources: problems
                .iter()
                .filter_map(|p| {
                    source_of(p.line).map(|source| LineSource {
                        line: p.line,
                        source,
                    })
                })
                .collect(),
            problems: problems.clone(),
            unjudged,
        };
        let json = serde_json::to_string(&report).unwrap_or_default();
        writeln!(out, "{json}")?;
    } else {
        for problem in &problems {
            let from = source_of(problem.line)
                .map_or(String::new(), |source| format!(" ({})", source.label()));
            writeln!(out, "{name}:{}{from}: {}", problem.line, problem.kind)?;
            writeln!(out, "    {}", problem.text)?;
        }
        for line in &unjudged {
            let read = if line.agent == line.token {
                String::new()
            } else {
                format!(" (read as `{}`)", line.token)
            };
            writeln!(
                out,
                "{name}:{}: user-agent{read}: {}",
                line.line, line.reason
            )?;
            writeln!(out, "    User-agent: {}", line.agent)?;
        }
        let never = if never > 0 {
            format!("; {never} user-agent lines never apply")
        } else {
            String::new()
        };
        // Said only where there are some, so that other files' summaries read as before.
        let preferences = if summary.preferences > 0 {
            format!(", {} content-use preferences", summary.preferences)
        } else {
            String::new()
        };
        writeln!(
            out,
            "{name}: {} lines, {} groups, {} agents, {} rules, {} sitemaps, {} crawl-delays{preferences}; {} problems{never}",
            summary.lines,
            summary.groups,
            summary.agents,
            summary.rules,
            summary.sitemaps,
            summary.crawl_delays,
            summary.problems
        )?;
    }
    Ok(failing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint(text: &str, flags: &[&str]) -> (ExitStatus, String) {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        let args = LintArgs {
            file: Some(file.path().to_owned()),
            #[cfg(feature = "proxy")]
            config: None,
            #[cfg(feature = "proxy")]
            site: None,
            strict: flags.contains(&"--strict"),
            json: flags.contains(&"--json"),
            max_bytes: DEFAULT_MAX_BYTES,
            catalog: None,
        };
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
    fn content_use_preferences_are_validated_with_their_lines() {
        let text = "Content-Usage: train-ai=n\nUser-agent: *\nContent-Usage: ai-train=n, train-ai=yes\nContent-Signal: Search=yes\nContent-Usage: /x/ train-ai=n, search=y;q=1, foo=y\nContent-Signal: search=yes, ai-train=no\n";
        let (status, out) = lint(text, &["--strict"]);
        assert_eq!(status, ExitStatus::Failure);
        let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with("    ")).collect();
        let at = |n: usize| {
            lines[n]
                .split_once(": ")
                .map(|(place, _)| place.rsplit(':').next().unwrap().to_owned())
                .unwrap()
        };
        assert_eq!(
            (0..5).map(at).collect::<Vec<_>>(),
            ["1", "3", "3", "4", "5"],
            "{out}"
        );
        assert!(lines[1].ends_with("`Content-Usage` key `ai-train` is not known; ignored (`ai-train` is Content-Signal's key; Content-Usage's is `train-ai`)"), "{out}");
        assert!(
            lines[2].contains("`train-ai` has `yes`: it takes `y` or `n`"),
            "{out}"
        );
        assert!(
            lines[3].contains("not a structured-field dictionary"),
            "{out}"
        );
        assert!(
            lines[4].ends_with("key `foo` is not known; ignored"),
            "{out}"
        );
        assert!(
            out.contains(", 2 content-use preferences; 5 problems"),
            "{out}"
        );
        let (_, out) = lint(text, &["--json"]);
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["summary"]["preferences"], 2);
        assert_eq!(report["problems"][3]["line"], 4);
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
    fn user_agent_lines_that_name_browser_vocabulary_never_apply() {
        let text = "User-agent: Mozilla/4.0 (compatible; BullsEye; Windows 95)\nUser-agent: Microsoft URL Control\nDisallow: /\n\nUser-agent: Java/1.4\nUser-agent: WhatsApp\nUser-agent: GPTBot\nDisallow: /\n";
        let (status, out) = lint(text, &["--strict"]);
        assert_eq!(status, ExitStatus::Failure);
        assert!(
            out.contains(":1: user-agent (read as `Mozilla`): `Mozilla` is browser vocabulary"),
            "{out}"
        );
        assert!(
            out.contains("    User-agent: Mozilla/4.0 (compatible; BullsEye; Windows 95)\n"),
            "{out}"
        );
        assert!(
            out.contains(":2: user-agent (read as `Microsoft`)"),
            "{out}"
        );
        assert!(
            out.contains(":5: user-agent (read as `Java`): `Java` is also in browsers'"),
            "{out}"
        );
        assert!(
            out.contains(":6: user-agent: `WhatsApp` is a person's app"),
            "{out}"
        );
        assert!(!out.contains("GPTBot"), "{out}");
        assert!(
            out.ends_with("; 3 problems; 3 user-agent lines never apply\n"),
            "{out}"
        );
        let (_, json) = lint(text, &["--json"]);
        let report: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(report["unjudged"][0]["token"], "Mozilla");
        assert_eq!(report["unjudged"][0]["applies"], false);
        assert_eq!(report["unjudged"][2]["applies"], true);
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
