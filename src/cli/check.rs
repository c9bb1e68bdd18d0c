//! `crawlgate check`: may this crawler fetch these URLs, and which line of robots.txt says so?

use super::{read_input, CliError, ExitStatus};
use crate::catalog::Catalog;
use crate::robots::{
    Options, Preference, Reason, Robots, Rule, Selected, StatedView, Verdict, DEFAULT_MAX_BYTES,
};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// Arguments of `crawlgate check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The robots.txt file (`-` for standard input). Required unless `--jsonl` inputs carry it.
    #[arg(long, value_name = "FILE")]
    pub robots: Option<PathBuf>,
    /// The crawler's product token, such as GPTBot (a full User-Agent is cut to its first token).
    #[arg(long, value_name = "TOKEN")]
    pub agent: Option<String>,
    /// Print one JSON object per URL instead of text.
    #[arg(long)]
    pub json: bool,
    /// Read JSON lines on standard input ({"robots", "agent", "url", "id"}) and answer each with
    /// one JSON line, in order.
    #[arg(long, conflicts_with = "json")]
    pub jsonl: bool,
    /// The parse limit in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES)]
    pub max_bytes: usize,
    /// Check against what a site of this configuration serves instead of `--robots`: its
    /// robots.txt (an origin's fetched once) with the groups it manages composed; the deciding
    /// line says where it comes from (`managed`, `origin N`).
    #[cfg(feature = "proxy")]
    #[arg(long, value_name = "FILE", conflicts_with_all = ["robots", "jsonl"])]
    pub config: Option<PathBuf>,
    /// With `--config`: the site (needed when it has several).
    #[cfg(feature = "proxy")]
    #[arg(long, value_name = "NAME", requires = "config")]
    pub site: Option<String>,
    /// URLs or paths to check.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
}

/// One answer, as `--json` and `--jsonl` print it.
#[derive(Debug, Serialize)]
struct Answer<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a serde_json::Value>,
    url: &'a str,
    agent: &'a str,
    allowed: bool,
    rule: Option<&'a Rule>,
    group: crate::robots::GroupKind,
    reason: Reason,
    /// The form of the path that decided (`as_sent`, `resolved`, `decoded`).
    form: crate::robots::Form,
    /// The content-use preference that applies (`Content-Usage`, `Content-Signal`), when the
    /// path may be fetched and the file states one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    preference: Vec<StatedView<'a>>,
    /// The same in aipref's `Content-Usage` header form, as the proxy announces it.
    #[serde(skip_serializing_if = "Option::is_none")]
    content_usage: Option<&'static str>,
    /// Where the deciding rule's line comes from, for a site that manages groups of its own
    /// (`--config`).
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<crate::managed::Source>,
    /// The verdict the query expected, when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<Expected>,
    /// Whether the verdict is the expected one, when the query said what it expected.
    #[serde(skip_serializing_if = "Option::is_none")]
    ok: Option<bool>,
}

impl<'a> Answer<'a> {
    fn new(
        id: Option<&'a serde_json::Value>,
        url: &'a str,
        agent: &'a str,
        v: Verdict<'a>,
        preference: (Preference, &'a Robots),
    ) -> Self {
        let (preference, robots) = preference;
        Answer {
            preference: preference.view(&robots.file().preferences),
            content_usage: preference.header_value(),
            id,
            url,
            agent,
            allowed: v.allowed,
            rule: v.rule,
            group: v.group,
            reason: v.reason,
            form: v.form,
            source: None,
            expected: None,
            ok: None,
        }
    }
}

/// What a `--jsonl` query expects robots.txt to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Expected {
    Allowed,
    Disallowed,
}

/// One input line of `--jsonl`. Fields it does not know are ignored, so that a site can keep
/// its own notes beside its questions.
#[derive(Debug, Deserialize)]
struct Query {
    robots: Option<String>,
    agent: Option<String>,
    url: String,
    id: Option<serde_json::Value>,
    expect: Option<Expected>,
}

/// Runs `check`: answers on `out`, `--jsonl` queries from `input`, and a summary of `--jsonl`
/// expectations (each one that failed, then a count) on `err`.
pub fn run_check(
    args: &CheckArgs,
    mut input: impl BufRead,
    out: impl Write,
    err: impl Write,
) -> Result<ExitStatus, CliError> {
    let options = Options {
        max_bytes: args.max_bytes,
    };
    #[cfg(feature = "proxy")]
    if let Some(config) = &args.config {
        let mut served = super::robots::served(config, args.site.as_deref())?;
        if served.len() > 1 {
            let names: Vec<&str> = served.iter().map(|(name, _)| name.as_str()).collect();
            return Err(CliError::Usage(format!(
                "the configuration has {} sites ({}): name one with --site",
                names.len(),
                names.join(", ")
            )));
        }
        let Some((_, snapshot)) = served.pop() else {
            return Err(CliError::Usage("the configuration has no site".into()));
        };
        let sources = |line| snapshot.line_source(line);
        return check_urls(args, &snapshot.robots, &sources, out);
    }
    let file_robots = match &args.robots {
        // Standard input is `input` (the caller holds its lock: reading `std::io::stdin()` here
        // would wait for that lock forever).
        Some(path) if path.as_os_str() == "-" => {
            if args.jsonl {
                return Err(CliError::Usage(
                    "--robots - and --jsonl both read standard input: give --robots a file".into(),
                ));
            }
            let mut bytes = Vec::new();
            input
                .read_to_end(&mut bytes)
                .map_err(|source| CliError::Read {
                    path: path.clone(),
                    source,
                })?;
            Some(Robots::parse_with(&bytes, options))
        }
        Some(path) => Some(Robots::parse_with(&read_input(path)?, options)),
        None => None,
    };
    if args.jsonl {
        return check_jsonl(args, file_robots.as_ref(), options, input, out, err);
    }
    let robots = file_robots
        .ok_or_else(|| CliError::Usage("--robots FILE is required (or use --jsonl)".into()))?;
    check_urls(args, &robots, &|_| None, out)
}

/// Answers `--agent` on each URL of the command line against `robots`, whose lines come from
/// `sources` (a composed file's; nothing for a file as it is).
fn check_urls(
    args: &CheckArgs,
    robots: &Robots,
    sources: &dyn Fn(u32) -> Option<crate::managed::Source>,
    mut out: impl Write,
) -> Result<ExitStatus, CliError> {
    let agent = args
        .agent
        .as_deref()
        .ok_or_else(|| CliError::Usage("--agent TOKEN is required".into()))?;
    if args.urls.is_empty() {
        return Err(CliError::Usage("give at least one URL to check".into()));
    }
    let catalog = catalog()?;
    let selected = catalog.select_in(robots, agent);
    let mut status = ExitStatus::Success;
    for url in &args.urls {
        let verdict = robots.check_selected(selected, url);
        if !verdict.allowed {
            status = ExitStatus::Failure;
        }
        let preference = preference_of(robots, selected, &verdict, url);
        let source = verdict.rule.and_then(|rule| sources(rule.line));
        if args.json {
            let mut answer = Answer::new(None, url, agent, verdict, (preference, robots));
            answer.source = source;
            writeln!(out, "{}", to_json(&answer))?;
        } else {
            let mut line = describe(url, agent, &verdict);
            if let Some(source) = source {
                line.push_str(&format!(" [{}]", source.label()));
            }
            if !preference.is_unknown() {
                line.push_str("; preference: ");
                line.push_str(&preference.describe(&robots.file().preferences));
            }
            writeln!(out, "{line}")?;
        }
    }
    Ok(status)
}

/// The preference on `url` once `verdict` is known: none where the path may not be fetched.
fn preference_of(
    robots: &Robots,
    selected: Selected,
    verdict: &Verdict<'_>,
    url: &str,
) -> Preference {
    if verdict.allowed {
        robots.stated_preference(selected, url)
    } else {
        Preference::UNKNOWN
    }
}

/// The embedded catalog: a catalog crawler is judged by the groups it obeys (its operator's
/// documented fallbacks, and whether it ignores `*`), as the proxy judges it.
fn catalog() -> Result<Catalog, CliError> {
    Catalog::embedded().map_err(|e| CliError::Usage(e.to_string()))
}

fn to_json(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// One line of text for a verdict: the verdict, the URL, and what decided it.
pub(crate) fn describe(url: &str, agent: &str, verdict: &Verdict<'_>) -> String {
    let word = if verdict.allowed {
        "allowed"
    } else {
        "disallowed"
    };
    let why = match (verdict.reason, verdict.rule) {
        (Reason::Rule, Some(rule)) => format!(
            "line {} ({}: {})",
            rule.line,
            rule.kind.directive(),
            rule.pattern
        ),
        (Reason::RobotsTxt, _) => "/robots.txt is always allowed".to_owned(),
        (Reason::NoGroup, _) => format!("no group applies to {agent}"),
        (Reason::OverBudget, _) => "too long or too costly to judge: disallowed".to_owned(),
        _ => "no rule matches".to_owned(),
    };
    format!("{word:<10} {url}  {why}")
}

/// `--jsonl`: one answer line per query line, in order. A bad line gets an error object in its
/// place (and exit status 2 at the end) so that the output stays aligned with the input.
fn check_jsonl(
    args: &CheckArgs,
    file_robots: Option<&Robots>,
    options: Options,
    input: impl BufRead,
    mut out: impl Write,
    mut err: impl Write,
) -> Result<ExitStatus, CliError> {
    let catalog = catalog()?;
    // Consecutive queries usually share one file: compile it once.
    let mut last: Option<(String, Robots)> = None;
    let mut status = ExitStatus::Success;
    let mut first_error = None;
    let mut expectations = Expectations::default();
    for (index, line) in input.lines().enumerate() {
        let line = line.map_err(|source| CliError::Read {
            path: "-".into(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let query: Query = match serde_json::from_str(&line) {
            Ok(query) => query,
            Err(e) => {
                let message = e.to_string();
                writeln!(out, "{}", to_json(&serde_json::json!({ "error": message })))?;
                first_error.get_or_insert(CliError::Input {
                    line: index + 1,
                    message,
                });
                continue;
            }
        };
        let Some(agent) = query.agent.as_deref().or(args.agent.as_deref()) else {
            let message = "no \"agent\" and no --agent".to_owned();
            let error = serde_json::json!({ "id": query.id, "error": message });
            writeln!(out, "{}", to_json(&error))?;
            first_error.get_or_insert(CliError::Input {
                line: index + 1,
                message,
            });
            continue;
        };
        let robots = match (&query.robots, file_robots) {
            (Some(text), _) => {
                if last.as_ref().is_none_or(|(known, _)| known != text) {
                    last = Some((text.clone(), Robots::parse_with(text.as_bytes(), options)));
                }
                last.as_ref().map(|(_, robots)| robots)
            }
            (None, Some(robots)) => Some(robots),
            (None, None) => None,
        };
        let Some(robots) = robots else {
            let message = "no \"robots\" and no --robots".to_owned();
            let error = serde_json::json!({ "id": query.id, "error": message });
            writeln!(out, "{}", to_json(&error))?;
            first_error.get_or_insert(CliError::Input {
                line: index + 1,
                message,
            });
            continue;
        };
        let selected = catalog.select_in(robots, agent);
        let verdict = robots.check_selected(selected, &query.url);
        if !verdict.allowed {
            status = ExitStatus::Failure;
        }
        let preference = preference_of(robots, selected, &verdict, &query.url);
        let mut answer = Answer::new(
            query.id.as_ref(),
            &query.url,
            agent,
            verdict,
            (preference, robots),
        );
        if let Some(expected) = query.expect {
            let ok = (expected == Expected::Allowed) == answer.allowed;
            answer.expected = Some(expected);
            answer.ok = Some(ok);
            expectations.checked += 1;
            if !ok {
                expectations.failed.push(format!(
                    "line {}: {} {} is {} (expected {})",
                    index + 1,
                    agent,
                    query.url,
                    if answer.allowed {
                        "allowed"
                    } else {
                        "disallowed"
                    },
                    match expected {
                        Expected::Allowed => "allowed",
                        Expected::Disallowed => "disallowed",
                    },
                ));
            }
        }
        writeln!(out, "{}", to_json(&answer))?;
    }
    if expectations.checked > 0 {
        // With expectations, the exit status says whether they all held, not whether anything
        // is disallowed: a robots.txt test runner for a site's CI.
        for failure in &expectations.failed {
            writeln!(err, "{failure}")?;
        }
        writeln!(
            err,
            "{} of {} expectations held",
            expectations.checked - expectations.failed.len(),
            expectations.checked
        )?;
        status = if expectations.failed.is_empty() {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        };
    }
    match first_error {
        Some(error) => Err(error),
        None => Ok(status),
    }
}

/// The expectations `--jsonl` queries carried, and those that failed.
#[derive(Debug, Default)]
struct Expectations {
    checked: usize,
    failed: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> CheckArgs {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: CheckArgs,
        }
        let argv = std::iter::once("check").chain(extra.iter().copied());
        Wrapper::parse_from(argv).args
    }

    fn robots_file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    fn run(args: &CheckArgs, stdin: &str) -> (Result<ExitStatus, CliError>, String) {
        let (result, out, _) = run_with_errors(args, stdin);
        (result, out)
    }

    fn run_with_errors(
        args: &CheckArgs,
        stdin: &str,
    ) -> (Result<ExitStatus, CliError>, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let result = run_check(args, stdin.as_bytes(), &mut out, &mut err);
        (
            result,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn jsonl_expectations_decide_the_exit_status() {
        let file = robots_file("User-agent: *\nDisallow: /private/\n");
        let path = file.path().to_str().unwrap();
        let stdin = "{\"agent\": \"a\", \"url\": \"/private/x\", \"expect\": \"disallowed\", \"note\": \"kept out\"}\n\
                     {\"agent\": \"a\", \"url\": \"/public\", \"expect\": \"allowed\"}\n";
        let (result, out, err) = run_with_errors(&args(&["--jsonl", "--robots", path]), stdin);
        // Something is disallowed, as expected: the expectations held.
        assert_eq!(result.unwrap(), ExitStatus::Success);
        let answers: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers[0]["ok"], true);
        assert_eq!(answers[0]["expected"], "disallowed");
        assert_eq!(err.trim(), "2 of 2 expectations held");
        let failing = format!("{stdin}{{\"agent\": \"a\", \"url\": \"/public%2F..%2Fprivate/x\", \"expect\": \"allowed\", \"id\": 7}}\n");
        let (result, out, err) = run_with_errors(&args(&["--jsonl", "--robots", path]), &failing);
        assert_eq!(result.unwrap(), ExitStatus::Failure);
        let last: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(
            (last["ok"].clone(), last["form"].clone()),
            (false.into(), "decoded".into())
        );
        assert!(
            err.contains("line 3: a /public%2F..%2Fprivate/x is disallowed (expected allowed)"),
            "{err}"
        );
        assert!(err.contains("2 of 3 expectations held"), "{err}");
    }

    #[test]
    fn text_output_names_the_rule_and_sets_the_status() {
        let file = robots_file("User-agent: GPTBot\nDisallow: /private/\n");
        let path = file.path().to_str().unwrap();
        let a = args(&[
            "--robots",
            path,
            "--agent",
            "GPTBot",
            "/public",
            "/private/x",
        ]);
        let (result, out) = run(&a, "");
        assert_eq!(result.unwrap(), ExitStatus::Failure);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "allowed    /public  no rule matches");
        assert_eq!(
            lines[1],
            "disallowed /private/x  line 2 (Disallow: /private/)"
        );
        let a = args(&["--robots", path, "--agent", "CCBot", "/private/x"]);
        let (result, out) = run(&a, "");
        assert_eq!(result.unwrap(), ExitStatus::Success);
        assert!(out.contains("no group applies to CCBot"));
    }

    #[test]
    fn the_preference_for_a_path_is_shown_in_text_and_json() {
        let file = robots_file(
            "User-agent: *\nDisallow: /never/\nContent-Signal: search=yes, ai-train=no\nContent-Usage: /ai-ok/ train-ai=y\n",
        );
        let path = file.path().to_str().unwrap();
        let a = args(&[
            "--robots", path, "--agent", "GPTBot", "/a", "/ai-ok/b", "/never/c",
        ]);
        let (_, out) = run(&a, "");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "allowed    /a  no rule matches; preference: train-ai=n (line 3: Content-Signal: search=yes, ai-train=no); search=y (line 3: Content-Signal: search=yes, ai-train=no); ai-input unknown"
        );
        assert!(lines[1].contains("train-ai=y (line 4: Content-Usage: /ai-ok/ train-ai=y)"));
        assert_eq!(lines[2], "disallowed /never/c  line 2 (Disallow: /never/)");
        let a = args(&[
            "--robots", path, "--agent", "GPTBot", "--json", "/a", "/never/c",
        ]);
        let (_, out) = run(&a, "");
        let answers: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let first = &answers[0]["preference"][0];
        assert_eq!(first["usage"], "train-ai");
        assert_eq!(first["stance"], "disallowed");
        assert_eq!(first["rule"]["line"], 3);
        assert_eq!(first["rule"]["form"], "content-signal");
        assert_eq!(answers[0]["content_usage"], "train-ai=n, search=y");
        // Not crawlable: no preference (attach draft §3.1), and no key at all.
        assert!(answers[1].get("preference").is_none(), "{}", answers[1]);
    }

    #[test]
    fn json_output_is_one_object_per_url() {
        let file = robots_file("User-agent: *\nDisallow: /x\n");
        let path = file.path().to_str().unwrap();
        let a = args(&["--robots", path, "--agent", "a", "--json", "/x/1", "/y"]);
        let (_, out) = run(&a, "");
        let answers: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers[0]["allowed"], false);
        assert_eq!(answers[0]["rule"]["pattern"], "/x");
        assert_eq!(answers[0]["rule"]["kind"], "disallow");
        assert_eq!(answers[0]["rule"]["line"], 2);
        assert_eq!(answers[1]["rule"], serde_json::Value::Null);
    }

    #[test]
    fn jsonl_answers_each_line_in_order_with_ids() {
        let mut stdin = Vec::new();
        for (i, url) in ["/a", "/b/c", "/robots.txt"].iter().enumerate() {
            let query = serde_json::json!({"robots": "user-agent: *\ndisallow: /b\n", "agent": "x", "url": url, "id": i});
            writeln!(stdin, "{query}").unwrap();
        }
        let (result, out) = run(&args(&["--jsonl"]), std::str::from_utf8(&stdin).unwrap());
        assert_eq!(result.unwrap(), ExitStatus::Failure);
        let answers: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let allowed: Vec<bool> = answers
            .iter()
            .map(|a| a["allowed"].as_bool().unwrap())
            .collect();
        assert_eq!(allowed, vec![true, false, true]);
        assert_eq!(answers[1]["id"], 1);
        assert_eq!(answers[1]["rule"]["line"], 2);
    }

    #[test]
    fn jsonl_uses_the_robots_file_and_reports_bad_lines_in_place() {
        let file = robots_file("User-agent: *\nDisallow: /x\n");
        let path = file.path().to_str().unwrap();
        let stdin = "{\"agent\": \"a\", \"url\": \"/x\"}\nnot json\n{\"url\": \"/y\"}\n{\"agent\": \"a\", \"url\": \"/y\"}\n";
        let (result, out) = run(&args(&["--jsonl", "--robots", path]), stdin);
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["allowed"], false);
        assert!(lines[1]["error"].is_string());
        assert!(lines[2]["error"].as_str().unwrap().contains("agent"));
        assert_eq!(lines[3]["allowed"], true);
        assert!(matches!(result, Err(CliError::Input { line: 2, .. })));
    }

    #[test]
    fn missing_arguments_and_files_are_usage_errors() {
        assert!(matches!(run(&args(&["/x"]), "").0, Err(CliError::Usage(_))));
        let missing = args(&["--robots", "/nonexistent/robots.txt", "--agent", "a", "/x"]);
        assert!(matches!(run(&missing, "").0, Err(CliError::Read { .. })));
    }
}
