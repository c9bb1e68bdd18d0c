//! What a replay found, as data (serialised by `--json`) and as a table for a terminal.

use super::replay::{Replay, Tally};
use super::time::format_rfc3339;
use crate::robots::{GroupKind, RuleKind};
use serde::Serialize;
use std::io::{self, Write};

/// How many disallowed paths per crawler the table shows at most.
pub const TABLE_PATHS: usize = 5;

/// How many rule lines a crawler's entry lists (its most used).
const RULES_PER_CRAWLER: usize = 20;

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The robots.txt replayed against.
    pub robots: RobotsSummary,
    /// Crawler requests robots.txt allows but its content-use preference refuses (the proxy's
    /// `content-usage` verdict, were it enforced); absent when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub against_preference: u64,
    /// The preference rules that refused requests, in file order; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preference_rules: Vec<PreferenceRuleReport>,
    /// Each input, in the order read.
    pub inputs: Vec<InputReport>,
    /// Non-empty lines read.
    pub lines: u64,
    /// Lines that were not log lines of their format (malformed), skipped.
    pub skipped: u64,
    /// Lines whose request can be replayed (`lines - skipped - invalid_requests`).
    pub requests: u64,
    /// Log lines whose request has no path (`"-"`, garbage sent to the port, `CONNECT`).
    pub invalid_requests: u64,
    /// Requests by people (never checked).
    pub people: u64,
    /// Requests by crawlers, named or not.
    pub crawler_requests: u64,
    /// Crawler requests robots.txt disallows.
    pub disallowed: u64,
    /// Requests whose line carries no User-Agent (common log format; read as people).
    pub without_user_agent: u64,
    /// Requests whose line carries no time.
    pub without_time: u64,
    /// The earliest request, RFC 3339.
    pub first_seen: Option<String>,
    /// The latest request, RFC 3339.
    pub last_seen: Option<String>,
    /// Per crawler, most requests first; unnamed crawlers together as `unnamed`.
    pub crawlers: Vec<CrawlerReport>,
    /// Every rule line that decided at least one request, in file order.
    pub rules: Vec<RuleReport>,
    /// How many rule lines decided no request.
    pub rules_unused: usize,
    /// Requests over time.
    pub timeline: TimelineReport,
    /// The first malformed lines, as examples.
    pub malformed: Vec<MalformedReport>,
    /// Per operator the catalog lists referrer hosts for and the log shows: its crawlers'
    /// requests against the people its products sent, most crawls first; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub operators: Vec<OperatorReport>,
}

/// What one operator's crawlers took, and the people its products sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OperatorReport {
    /// The operator (`OpenAI`).
    pub operator: String,
    /// Its crawlers' requests.
    pub crawls: u64,
    /// People's requests whose Referer is one of its products' hosts.
    pub referrals: u64,
    /// `crawls / referrals`; absent when it referred nobody.
    pub crawls_per_referral: Option<f64>,
}

/// The robots.txt replayed against.
#[derive(Debug, Clone, Serialize)]
pub struct RobotsSummary {
    /// Its name (the file given).
    pub file: String,
    /// Bytes parsed.
    pub bytes: usize,
    /// Groups.
    pub groups: usize,
    /// Allow and disallow rules.
    pub rules: usize,
}

/// One input.
#[derive(Debug, Clone, Serialize)]
pub struct InputReport {
    /// The file (`-` for standard input).
    pub file: String,
    /// The format it was read as.
    pub format: &'static str,
    /// Non-empty lines.
    pub lines: u64,
    /// Malformed lines.
    pub skipped: u64,
}

/// What one crawler did.
#[derive(Debug, Clone, Serialize)]
pub struct CrawlerReport {
    /// Its product token, or `unnamed`.
    pub bot: String,
    /// Its category (`unlisted` for a token only robots.txt names, `unnamed` for the rest).
    pub category: String,
    /// Who runs it, when the catalog says.
    pub operator: Option<String>,
    /// Which groups of robots.txt it follows: `agent` (a group names it), `star` or `none`.
    pub group: GroupKind,
    /// All its requests, robots.txt fetches included.
    pub requests: u64,
    /// Requests robots.txt allows (robots.txt fetches excluded).
    pub allowed: u64,
    /// Requests robots.txt disallows.
    pub disallowed: u64,
    /// Requests robots.txt allows but its content-use preference refuses for this crawler's
    /// category (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub against_preference: u64,
    /// `disallowed / requests`.
    pub share: f64,
    /// `requests / all requests`: its share of the traffic.
    pub traffic_share: f64,
    /// Whether it fetched /robots.txt at all.
    pub fetched_robots: bool,
    /// How often it fetched /robots.txt.
    pub robots_fetches: u64,
    /// When it first fetched /robots.txt.
    pub robots_first_fetch: Option<String>,
    /// Its first request.
    pub first_seen: Option<String>,
    /// Its last request.
    pub last_seen: Option<String>,
    /// The paths it was most often disallowed, most first.
    pub top_disallowed: Vec<PathCount>,
    /// Whether the counts of `top_disallowed` are exact (else each is an upper bound, at most
    /// its `error` too high: the crawler asked for too many distinct paths to keep them all).
    pub top_disallowed_exact: bool,
    /// Checked requests that no rule decided (allowed).
    pub no_rule: u64,
    /// The rule lines that decided its requests, most requests first.
    pub rules: Vec<RuleReport>,
    /// For `unnamed`: the User-Agents, most requests first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub user_agents: Vec<AgentCount>,
}

/// A path and how often it was disallowed.
#[derive(Debug, Clone, Serialize)]
pub struct PathCount {
    /// The path and query, as requested.
    pub path: String,
    /// How many requests (an upper bound when `error` is not 0).
    pub requests: u64,
    /// By how much `requests` may exceed the true count.
    #[serde(skip_serializing_if = "is_zero")]
    pub error: u64,
}

/// A User-Agent and how many requests carried it.
#[derive(Debug, Clone, Serialize)]
pub struct AgentCount {
    /// The header, as logged.
    pub user_agent: String,
    /// How many requests (an upper bound when `error` is not 0).
    pub requests: u64,
    /// By how much `requests` may exceed the true count.
    #[serde(skip_serializing_if = "is_zero")]
    pub error: u64,
}

/// How many requests one rule line decided.
#[derive(Debug, Clone, Serialize)]
pub struct RuleReport {
    /// The line in robots.txt.
    pub line: u32,
    /// `allow` or `disallow`.
    pub kind: RuleKind,
    /// The pattern as written.
    pub pattern: String,
    /// Requests it allowed.
    pub allowed: u64,
    /// Requests it disallowed.
    pub disallowed: u64,
}

/// How many requests one `Content-Usage` or `Content-Signal` line refused.
#[derive(Debug, Clone, Serialize)]
pub struct PreferenceRuleReport {
    /// The line in robots.txt.
    pub line: u32,
    /// The line as read (`Content-Signal: ai-train=no`).
    pub text: String,
    /// Requests it refused.
    pub requests: u64,
}

/// Requests over time.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineReport {
    /// The width of a bucket.
    pub bucket_seconds: i64,
    /// The buckets, oldest first, empty ones included.
    pub buckets: Vec<BucketReport>,
}

/// One bucket of the timeline.
#[derive(Debug, Clone, Serialize)]
pub struct BucketReport {
    /// Its start, RFC 3339.
    pub start: String,
    /// Crawler requests allowed (robots.txt fetches included).
    pub allowed: u64,
    /// Crawler requests disallowed.
    pub disallowed: u64,
    /// Requests by people.
    pub people: u64,
}

/// A malformed line.
#[derive(Debug, Clone, Serialize)]
pub struct MalformedReport {
    /// The input.
    pub file: String,
    /// Its line number.
    pub line: u64,
    /// What is wrong.
    pub reason: String,
    /// The beginning of the line.
    pub text: String,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The beginning of a line, lossily decoded, for messages.
pub fn excerpt(text: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(text);
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.into_owned(),
    }
}

#[allow(clippy::cast_precision_loss)] // a ratio for people to read
fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    (part as f64 / whole as f64 * 10_000.0).round() / 10_000.0
}

fn stamp(time: Option<i64>) -> Option<String> {
    time.map(format_rfc3339)
}

/// Builds the report of a finished replay.
pub(super) fn build(replay: &Replay<'_>, top: usize) -> Report {
    let audit = replay.audit();
    let robots = audit.robots();
    let file = robots.file();
    let crawlers_table = audit.crawlers();
    let totals = replay.totals;
    let rule_report = |index: usize, counts: [u64; 2]| {
        file.rules.get(index).map(|rule| RuleReport {
            line: rule.line,
            kind: rule.kind,
            pattern: rule.pattern.clone(),
            allowed: counts[0],
            disallowed: counts[1],
        })
    };
    let mut crawlers: Vec<CrawlerReport> = replay
        .tallies
        .iter()
        .enumerate()
        .filter_map(|(slot, tally)| tally.as_deref().map(|tally| (slot, tally)))
        .map(|(slot, tally)| {
            let row = crawlers_table.get(slot);
            let selected = row.unwrap_or(crawlers_table.unnamed()).selected;
            crawler_report(
                row.map(|c| {
                    (
                        c.name.to_string(),
                        c.category.as_str(),
                        c.operator.as_deref().map(str::to_owned),
                    )
                }),
                selected.group(),
                tally,
                totals.requests,
                top,
                &rule_report,
            )
        })
        .collect();
    crawlers.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.bot.cmp(&b.bot)));
    let rules: Vec<RuleReport> = replay
        .rules
        .iter()
        .enumerate()
        .filter(|(_, counts)| counts[0] + counts[1] > 0)
        .filter_map(|(index, counts)| rule_report(index, *counts))
        .collect();
    let crawler_requests = crawlers.iter().map(|c| c.requests).sum();
    let disallowed = crawlers.iter().map(|c| c.disallowed).sum();
    let against_preference = crawlers.iter().map(|c| c.against_preference).sum();
    let preference_rules = replay
        .preference_rules
        .iter()
        .enumerate()
        .filter(|(_, &count)| count > 0)
        .filter_map(|(index, &requests)| {
            file.preferences
                .get(index)
                .map(|rule| PreferenceRuleReport {
                    line: rule.line,
                    text: rule.text(),
                    requests,
                })
        })
        .collect();
    Report {
        against_preference,
        preference_rules,
        robots: RobotsSummary {
            file: audit.name().to_owned(),
            bytes: file.bytes,
            groups: file.groups.len(),
            rules: file.rules.len(),
        },
        inputs: replay
            .inputs
            .iter()
            .map(|input| InputReport {
                file: input.name.clone(),
                format: input.format.as_str(),
                lines: input.lines,
                skipped: input.skipped,
            })
            .collect(),
        lines: totals.lines,
        skipped: totals.skipped,
        requests: totals.requests,
        invalid_requests: totals.invalid_requests,
        people: totals.people,
        crawler_requests,
        disallowed,
        without_user_agent: totals.without_user_agent,
        without_time: totals.without_time,
        first_seen: stamp(totals.first_seen),
        last_seen: stamp(totals.last_seen),
        crawlers,
        rules_unused: file.rules.len() - rules.len(),
        rules,
        timeline: TimelineReport {
            bucket_seconds: replay.timeline.width(),
            buckets: replay
                .timeline
                .buckets()
                .map(|(start, counts)| BucketReport {
                    start: format_rfc3339(start),
                    allowed: counts.allowed,
                    disallowed: counts.disallowed,
                    people: counts.people,
                })
                .collect(),
        },
        malformed: replay
            .malformed
            .iter()
            .map(|m| MalformedReport {
                file: m.input.clone(),
                line: m.line,
                reason: m.reason.clone(),
                text: m.text.clone(),
            })
            .collect(),
        operators: operator_reports(replay),
    }
}

/// Each operator's crawls against its referrals, most crawls first.
fn operator_reports(replay: &Replay<'_>) -> Vec<OperatorReport> {
    let mut operators: Vec<OperatorReport> = replay
        .operators
        .iter()
        .map(|(operator, &[crawls, referrals])| OperatorReport {
            operator: operator.to_string(),
            crawls,
            referrals,
            crawls_per_referral: (referrals > 0).then(|| crawls as f64 / referrals as f64),
        })
        .collect();
    operators.sort_by(|a, b| {
        (b.crawls, b.referrals)
            .cmp(&(a.crawls, a.referrals))
            .then_with(|| a.operator.cmp(&b.operator))
    });
    operators
}

/// One crawler's entry; `known` is its name, category and operator (`None`: unnamed).
fn crawler_report(
    known: Option<(String, &str, Option<String>)>,
    group: GroupKind,
    tally: &Tally,
    all_requests: u64,
    top: usize,
    rule_report: &dyn Fn(usize, [u64; 2]) -> Option<RuleReport>,
) -> CrawlerReport {
    let (bot, category, operator) =
        known.unwrap_or_else(|| ("unnamed".to_owned(), "unnamed", None));
    let mut rules: Vec<RuleReport> = tally
        .rules
        .iter()
        .filter_map(|(&index, &counts)| rule_report(index as usize, counts))
        .collect();
    rules.sort_by(|a, b| {
        (b.allowed + b.disallowed)
            .cmp(&(a.allowed + a.disallowed))
            .then(a.line.cmp(&b.line))
    });
    rules.truncate(RULES_PER_CRAWLER);
    CrawlerReport {
        bot,
        category: category.to_owned(),
        operator,
        group,
        requests: tally.requests,
        allowed: tally.requests - tally.disallowed - tally.robots_fetches,
        disallowed: tally.disallowed,
        against_preference: tally.against_preference,
        share: ratio(tally.disallowed, tally.requests),
        traffic_share: ratio(tally.requests, all_requests),
        fetched_robots: tally.robots_fetches > 0,
        robots_fetches: tally.robots_fetches,
        robots_first_fetch: stamp(tally.robots_first_fetch),
        first_seen: stamp(tally.first_seen),
        last_seen: stamp(tally.last_seen),
        top_disallowed: tally
            .top_disallowed
            .top(top)
            .into_iter()
            .map(|c| PathCount {
                path: String::from_utf8_lossy(&c.key).into_owned(),
                requests: c.count,
                error: c.error,
            })
            .collect(),
        top_disallowed_exact: tally.top_disallowed.is_exact(),
        no_rule: tally.no_rule,
        rules,
        user_agents: tally
            .user_agents
            .as_ref()
            .map(|users| {
                users
                    .top(top)
                    .into_iter()
                    .map(|c| AgentCount {
                        user_agent: String::from_utf8_lossy(&c.key).into_owned(),
                        requests: c.count,
                        error: c.error,
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Text from a log made safe for a terminal: control characters (an escape sequence in a
/// User-Agent could rewrite the screen) are shown as `\xNN`, and it is cut at `max` characters.
pub fn printable(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for (count, c) in text.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.push_str(&format!("\\x{:02X}", u32::from(c) & 0xFF));
        } else {
            out.push(c);
        }
    }
    out
}

/// `12345678` → `12,345,678`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// Writes the report as a table for a terminal.
pub fn write_table(report: &Report, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let span = match (&report.first_seen, &report.last_seen) {
        (Some(first), Some(last)) => format!(", {first} to {last}"),
        _ => String::new(),
    };
    writeln!(
        out,
        "{} lines in {} input{} ({} skipped as malformed){span}",
        thousands(report.lines),
        report.inputs.len(),
        if report.inputs.len() == 1 { "" } else { "s" },
        thousands(report.skipped),
    )?;
    writeln!(
        out,
        "replayed against {} ({} groups, {} rules)",
        printable(&report.robots.file, 80),
        report.robots.groups,
        report.robots.rules
    )?;
    writeln!(
        out,
        "{} requests by people, {} by {} crawlers, {} of them disallowed ({})",
        thousands(report.people),
        thousands(report.crawler_requests),
        report.crawlers.len(),
        thousands(report.disallowed),
        percent(ratio(report.disallowed, report.crawler_requests)),
    )?;
    if report.against_preference > 0 {
        writeln!(
            out,
            "{} crawler requests robots.txt allows went against its stated content-use preference:",
            thousands(report.against_preference),
        )?;
        for rule in &report.preference_rules {
            writeln!(
                out,
                "  line {} ({}): {}",
                rule.line,
                printable(&rule.text, 120),
                thousands(rule.requests)
            )?;
        }
    }
    if report.requests > 0 && report.without_user_agent == report.requests {
        writeln!(
            out,
            "note: no line carries a User-Agent (common log format?): every request reads as a person"
        )?;
    }
    if !report.operators.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "Crawls per referral (people sent by each operator's products)"
        )?;
        for o in &report.operators {
            let per = o
                .crawls_per_referral
                .map_or("no referral".to_owned(), |per| {
                    format!("{per:.1} per referral")
                });
            writeln!(
                out,
                "  {:<24} {:>10} crawls {:>10} referrals  {per}",
                printable(&o.operator, 24),
                thousands(o.crawls),
                thousands(o.referrals),
            )?;
        }
    }
    if report.crawlers.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    let row = |out: &mut dyn Write, cells: [&str; 8]| {
        let line = format!(
            "{:<24} {:<13} {:>10} {:>10} {:>6}  {:<20}  {:<20}  {}",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7]
        );
        writeln!(out, "{}", line.trim_end())
    };
    row(
        out,
        [
            "CRAWLER",
            "CATEGORY",
            "REQUESTS",
            "DISALLOWED",
            "SHARE",
            "ROBOTS.TXT FETCHED",
            "FIRST SEEN",
            "LAST SEEN",
        ],
    )?;
    let never = "never".to_owned();
    let unknown = "-".to_owned();
    for c in &report.crawlers {
        let robots = match (&c.robots_first_fetch, c.fetched_robots) {
            (Some(first), _) => first,
            (None, true) => &unknown,
            (None, false) => &never,
        };
        row(
            out,
            [
                &printable(&c.bot, 24),
                &c.category,
                &thousands(c.requests),
                &thousands(c.disallowed),
                &percent(c.share),
                robots,
                c.first_seen.as_ref().unwrap_or(&unknown),
                c.last_seen.as_ref().unwrap_or(&unknown),
            ],
        )?;
    }
    let offenders: Vec<&CrawlerReport> = report
        .crawlers
        .iter()
        .filter(|c| !c.top_disallowed.is_empty())
        .collect();
    // The table stays short; `--json` and `--html` list all `top`.
    let shown = top.min(TABLE_PATHS);
    if !offenders.is_empty() && shown > 0 {
        writeln!(out)?;
        writeln!(out, "Most disallowed paths")?;
        for c in offenders {
            writeln!(out, "  {}", printable(&c.bot, 60))?;
            for path in c.top_disallowed.iter().take(shown) {
                let approx = if path.error > 0 { "≤" } else { " " };
                writeln!(
                    out,
                    "    {approx}{:>9}  {}",
                    thousands(path.requests),
                    printable(&path.path, 100)
                )?;
            }
        }
    }
    if !report.rules.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "Rule lines that decided requests ({} never did)",
            report.rules_unused
        )?;
        writeln!(
            out,
            "  {:>6}  {:<48} {:>10} {:>10}",
            "LINE", "RULE", "ALLOWED", "DISALLOWED"
        )?;
        const SHOWN: usize = 40;
        for rule in report.rules.iter().take(SHOWN) {
            let text = format!("{}: {}", rule.kind.directive(), rule.pattern);
            writeln!(
                out,
                "  {:>6}  {:<48} {:>10} {:>10}",
                rule.line,
                printable(&text, 48),
                thousands(rule.allowed),
                thousands(rule.disallowed)
            )?;
        }
        if report.rules.len() > SHOWN {
            writeln!(
                out,
                "  … and {} more rule lines (see --json)",
                report.rules.len() - SHOWN
            )?;
        }
    }
    if !report.malformed.is_empty() {
        writeln!(out)?;
    }
    for m in &report.malformed {
        writeln!(
            out,
            "skipped {}:{}: {}: {}",
            printable(&m.file, 80),
            m.line,
            m.reason,
            printable(&m.text, 80)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_text_are_made_readable() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
        assert_eq!(printable("a\u{1b}[2Jb", 10), "a\\x1B[2Jb");
        assert_eq!(printable("abcdef", 3), "abc…");
        assert_eq!(excerpt("é".repeat(5).as_bytes(), 2), "éé…");
        assert_eq!(ratio(1, 3), 0.3333);
        assert_eq!(ratio(1, 0), 0.0);
    }
}
