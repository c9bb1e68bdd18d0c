//! The replay: each log line is classified and checked as the proxy would have, and tallied per
//! crawler, per rule line and over time.
//!
//! The hot path allocates nothing for a line whose User-Agent was seen before and whose path is
//! valid UTF-8: lines are parsed where they lie in the read buffer, each distinct User-Agent is
//! classified once (a bounded cache), the last timestamp parsed is remembered, and tallies are
//! indexed by the classifier's crawler index and the rule's index.

use super::input::{self, Line};
use super::logline::{self, Entry, JsonFields, Malformed, Stamp};
use super::memo::Memo;
use super::report::{self, Report};
use super::time;
use super::timeline::{Kind, Timeline};
use super::topk::TopK;
use super::AuditError;
use crate::agent::{ClassifierError, Who};
use crate::catalog::Catalog;
use crate::crawlers::{CatalogIndex, Crawlers};
use crate::judge::{self, Law, Observed, Rules, Served, Visit};
use crate::policy::Actions;
use crate::robots::{path, Robots};
use std::io::BufRead;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::SystemTime;

/// Lines longer than this are malformed: no real request line is, and it bounds memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// The options to parse a robots.txt with for an audit: the parse limit.
pub fn robots_options(max_bytes: usize) -> crate::robots::Options {
    crate::robots::Options { max_bytes }
}

/// How many distinct disallowed paths (and unnamed User-Agents) a crawler's summary holds.
pub const TOP_CAPACITY: usize = 1000;

/// How many distinct User-Agents the classification cache holds before it starts over.
const UA_CACHE_ENTRIES: usize = 1 << 16;

/// User-Agents longer than this are classified every time rather than cached.
const UA_CACHE_MAX_BYTES: usize = 512;

/// How many malformed lines are kept as examples for the report.
const MALFORMED_EXAMPLES: usize = 10;

/// How often, in lines, the progress callback is called.
const PROGRESS_EVERY: u64 = 16 * 1024;

/// The classification of a person in the cache (crawlers are their slot).
const PERSON: u32 = u32::MAX;

/// The log format of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Decided per input by its first non-empty line: JSON when it starts with `{`.
    #[default]
    Auto,
    /// nginx/Apache combined, common log format, and vhost-prefixed variants.
    Combined,
    /// JSON lines.
    Json,
}

impl Format {
    /// The name, as on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Combined => "combined",
            Format::Json => "json",
        }
    }
}

/// What a replay is checked against: robots.txt and the crawler table the proxy would build
/// for it.
#[derive(Debug)]
pub struct Audit {
    robots: Robots,
    crawlers: Crawlers,
    name: String,
}

impl Audit {
    /// Builds the crawler table as the proxy does for a site: the catalog's crawlers, then every
    /// token the robots.txt names (as `unlisted`), each judged by the groups it obeys.
    pub fn new(robots: Robots, catalog: &Catalog) -> Result<Audit, ClassifierError> {
        let index = CatalogIndex::new(catalog.clone())?;
        let crawlers = Crawlers::build(&index, &robots, &Actions::default(), &[])?;
        Ok(Audit {
            robots,
            crawlers,
            name: "robots.txt".to_owned(),
        })
    }

    /// Names the robots.txt in reports (its file name).
    pub fn named(mut self, name: &str) -> Audit {
        name.clone_into(&mut self.name);
        self
    }

    /// The robots.txt replayed against.
    pub fn robots(&self) -> &Robots {
        &self.robots
    }

    /// The crawler table: the catalog and the file's tokens.
    pub fn crawlers(&self) -> &Crawlers {
        &self.crawlers
    }

    /// The name given with [`Audit::named`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What a replayed request is judged by: the file, the table, and the policy that tells
    /// apart what the proxy would refuse (preferences enforced; nothing answered, only counted).
    fn law(&self) -> Law<'_> {
        Law {
            robots: &self.robots,
            crawlers: &self.crawlers,
            loaded_at: SystemTime::UNIX_EPOCH,
            previous: None,
            served: Served::File,
            stand_in: None,
            rules: Rules {
                enforce_content_use: true,
                ..Rules::default()
            },
            answers: false,
            pricing: None,
        }
    }

    /// Starts a replay of logs in `format` (`fields` names the JSON fields).
    pub fn replay(&self, format: Format, fields: JsonFields) -> Replay<'_> {
        let slots = self.crawlers.len() + 1;
        Replay {
            audit: self,
            format,
            fields,
            strict: false,
            ua_cache: foldhash::HashMap::default(),
            tallies: std::iter::repeat_with(|| None).take(slots).collect(),
            memo: Memo::default(),
            rules: vec![[0; 2]; self.robots.file().rules.len()],
            preference_rules: vec![0; self.robots.file().preferences.len()],
            timeline: Timeline::default(),
            totals: Totals::default(),
            last_stamp: Vec::new(),
            last_time: None,
            scratch: Vec::new(),
            spill: Vec::new(),
            inputs: Vec::new(),
            malformed: Vec::new(),
            operators: foldhash::HashMap::default(),
        }
    }
}

/// Counts over all inputs.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Totals {
    pub lines: u64,
    pub skipped: u64,
    pub requests: u64,
    pub invalid_requests: u64,
    pub people: u64,
    pub without_user_agent: u64,
    pub without_time: u64,
    pub bytes: u64,
    pub first_seen: Option<i64>,
    pub last_seen: Option<i64>,
}

/// What one crawler (or all unnamed crawlers together) did.
#[derive(Debug)]
pub(super) struct Tally {
    /// Which groups it follows, as numbered by the replay's [`Memo`].
    pub selection: usize,
    pub requests: u64,
    pub disallowed: u64,
    pub robots_fetches: u64,
    pub robots_first_fetch: Option<i64>,
    pub first_seen: Option<i64>,
    pub last_seen: Option<i64>,
    /// Checked requests that no rule decided.
    pub no_rule: u64,
    pub top_disallowed: TopK,
    /// Rule index → [allowed, disallowed].
    pub rules: foldhash::HashMap<u32, [u64; 2]>,
    /// Requests robots.txt allows whose stated content-use preference refuses what the crawler
    /// is for ([`policy::uses_of`]): what the proxy's `content-usage` verdict would refuse.
    pub against_preference: u64,
    /// The User-Agents seen, for unnamed crawlers only.
    pub user_agents: Option<TopK>,
}

impl Tally {
    fn new(selection: usize, unnamed: bool) -> Tally {
        Tally {
            selection,
            requests: 0,
            disallowed: 0,
            robots_fetches: 0,
            robots_first_fetch: None,
            first_seen: None,
            last_seen: None,
            no_rule: 0,
            top_disallowed: TopK::new(TOP_CAPACITY),
            rules: foldhash::HashMap::default(),
            against_preference: 0,
            user_agents: unnamed.then(|| TopK::new(TOP_CAPACITY)),
        }
    }
}

/// One input as read.
#[derive(Debug, Clone)]
pub(super) struct InputTally {
    pub name: String,
    pub format: Format,
    pub lines: u64,
    pub skipped: u64,
}

/// A malformed line kept as an example.
#[derive(Debug, Clone)]
pub(super) struct MalformedLine {
    pub input: String,
    pub line: u64,
    pub reason: String,
    pub text: String,
}

/// How far a replay has got, for progress reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Lines read so far, in all inputs.
    pub lines: u64,
    /// Bytes read so far (decompressed), in all inputs.
    pub bytes: u64,
}

/// A replay in progress: feed it inputs with [`Replay::read`], then [`Replay::finish`] it.
#[derive(Debug)]
pub struct Replay<'a> {
    audit: &'a Audit,
    format: Format,
    fields: JsonFields,
    strict: bool,
    ua_cache: foldhash::HashMap<Box<[u8]>, u32>,
    /// By classifier index; the last slot is the unnamed crawlers'.
    pub(super) tallies: Vec<Option<Box<Tally>>>,
    memo: Memo,
    /// By rule index: [allowed, disallowed].
    pub(super) rules: Vec<[u64; 2]>,
    /// By preference rule index: the requests it refused.
    pub(super) preference_rules: Vec<u64>,
    pub(super) timeline: Timeline,
    pub(super) totals: Totals,
    last_stamp: Vec<u8>,
    last_time: Option<i64>,
    scratch: Vec<u8>,
    spill: Vec<u8>,
    pub(super) inputs: Vec<InputTally>,
    pub(super) malformed: Vec<MalformedLine>,
    /// Per operator the catalog lists referrer hosts for: [its crawlers' requests, people's
    /// requests its products referred].
    pub(super) operators: foldhash::HashMap<Arc<str>, [u64; 2]>,
}

impl<'a> Replay<'a> {
    /// Makes the first malformed line an error ([`AuditError::Malformed`]) instead of a count.
    pub fn strict(mut self, strict: bool) -> Replay<'a> {
        self.strict = strict;
        self
    }

    /// The audit this replay checks against.
    pub fn audit(&self) -> &'a Audit {
        self.audit
    }

    /// Replays every line of `reader`, named `name` in errors and reports. `progress` is called
    /// every few thousand lines with the totals so far.
    pub fn read<R: BufRead + ?Sized>(
        &mut self,
        reader: &mut R,
        name: &str,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), AuditError> {
        let mut current = InputTally {
            name: name.to_owned(),
            format: self.format,
            lines: 0,
            skipped: 0,
        };
        let mut spill = std::mem::take(&mut self.spill);
        let mut number = 0u64;
        let result = input::for_each_line(
            reader,
            &mut spill,
            MAX_LINE_BYTES,
            |source| AuditError::Read {
                input: name.to_owned(),
                source,
            },
            |line| {
                number += 1;
                self.totals.bytes += line.bytes as u64;
                let outcome = self.line(line, &mut current);
                if number % PROGRESS_EVERY == 0 {
                    progress(Progress {
                        lines: self.totals.lines,
                        bytes: self.totals.bytes,
                    });
                }
                match outcome {
                    Ok(()) => Ok(()),
                    Err(why) => self.malformed(name, number, line.text, why, &mut current),
                }
            },
        );
        self.spill = spill;
        progress(Progress {
            lines: self.totals.lines,
            bytes: self.totals.bytes,
        });
        self.inputs.push(current);
        result
    }

    /// Counts a malformed line, or fails on it when strict.
    fn malformed(
        &mut self,
        input: &str,
        line: u64,
        text: &[u8],
        why: Malformed,
        current: &mut InputTally,
    ) -> Result<(), AuditError> {
        let excerpt = report::excerpt(text, 160);
        if self.strict {
            return Err(AuditError::Malformed {
                input: input.to_owned(),
                line,
                reason: why,
                text: excerpt,
            });
        }
        self.totals.skipped += 1;
        current.skipped += 1;
        if self.malformed.len() < MALFORMED_EXAMPLES {
            self.malformed.push(MalformedLine {
                input: input.to_owned(),
                line,
                reason: why.to_string(),
                text: excerpt,
            });
        }
        Ok(())
    }

    /// Replays one line.
    fn line(&mut self, line: Line<'_>, current: &mut InputTally) -> Result<(), Malformed> {
        let text = line.text;
        if text.iter().all(u8::is_ascii_whitespace) && !line.too_long {
            return Ok(());
        }
        self.totals.lines += 1;
        current.lines += 1;
        if line.too_long {
            return Err(Malformed::TooLong(MAX_LINE_BYTES));
        }
        if current.format == Format::Auto {
            let first = text.iter().find(|b| !b.is_ascii_whitespace());
            current.format = if first == Some(&b'{') {
                Format::Json
            } else {
                Format::Combined
            };
        }
        let entry = match current.format {
            Format::Json => logline::parse_json(text, &self.fields)?,
            Format::Combined | Format::Auto => logline::parse_combined(text)?,
        };
        self.entry(entry)
    }

    /// Replays one parsed line.
    fn entry(&mut self, entry: Entry<'_>) -> Result<(), Malformed> {
        let time = self.time_of(&entry.time)?;
        let Some(target) = entry.target else {
            self.totals.invalid_requests += 1;
            return Ok(());
        };
        self.totals.requests += 1;
        if let Some(time) = time {
            seen(
                &mut self.totals.first_seen,
                &mut self.totals.last_seen,
                time,
            );
        }
        let user_agent = match &entry.user_agent {
            Some(user_agent) => user_agent,
            None => {
                self.totals.without_user_agent += 1;
                &b""[..]
            }
        };
        let slot = self.classify(user_agent);
        if slot == PERSON {
            self.totals.people += 1;
            let referrers = self.audit.crawlers.referrers();
            let operator = entry
                .referer
                .as_deref()
                .and_then(|r| referrers.operator_of(r, None));
            if let Some(operator) = operator {
                self.operators.entry(operator.clone()).or_default()[1] += 1;
            }
            if let Some(time) = time {
                self.timeline.add(time, Kind::Person);
            }
            return Ok(());
        }
        // A query logged apart from its path is put back where the proxy would see it.
        let mut scratch = std::mem::take(&mut self.scratch);
        let target: &[u8] = match &entry.query {
            Some(query) if !target.contains(&b'?') => {
                scratch.clear();
                scratch.extend_from_slice(&target);
                scratch.push(b'?');
                scratch.extend_from_slice(query);
                &scratch
            }
            _ => &target,
        };
        self.crawler(slot as usize, target, user_agent, time);
        self.scratch = scratch;
        Ok(())
    }

    /// Classifies a User-Agent: a crawler's slot, or [`PERSON`].
    fn classify(&mut self, user_agent: &[u8]) -> u32 {
        if let Some(&slot) = self.ua_cache.get(user_agent) {
            return slot;
        }
        let unnamed = self.audit.crawlers.len();
        let slot = match self.audit.crawlers.classify(user_agent) {
            Who::Crawler(index) => index,
            Who::Unnamed => unnamed,
            Who::Person => return self.remember(user_agent, PERSON),
        };
        self.remember(user_agent, u32::try_from(slot).unwrap_or(PERSON))
    }

    fn remember(&mut self, user_agent: &[u8], slot: u32) -> u32 {
        if user_agent.len() <= UA_CACHE_MAX_BYTES {
            // Starting over is crude but bounded, and a log has far fewer hot User-Agents.
            if self.ua_cache.len() >= UA_CACHE_ENTRIES {
                self.ua_cache.clear();
            }
            self.ua_cache.insert(user_agent.into(), slot);
        }
        slot
    }

    /// Checks and tallies one crawler request, as the proxy decides it.
    fn crawler(&mut self, slot: usize, target: &[u8], user_agent: &[u8], time: Option<i64>) {
        let audit = self.audit;
        let row = audit.crawlers.get(slot);
        let unnamed = row.is_none();
        if let Some(operator) = row.and_then(|crawler| crawler.row.referral_operator.clone()) {
            self.operators.entry(operator).or_default()[0] += 1;
        }
        // An unnamed crawler follows `*`; a named one the groups it obeys.
        let selected = row.unwrap_or(audit.crawlers.unnamed()).selected;
        let Some(tally) = self.tallies.get_mut(slot) else {
            return;
        };
        let memo = &mut self.memo;
        let tally = tally.get_or_insert_with(|| {
            Box::new(Tally::new(memo.selection(&audit.robots, selected), unnamed))
        });
        tally.requests += 1;
        if let Some(users) = &mut tally.user_agents {
            users.add(user_agent);
        }
        if let Some(time) = time {
            seen(&mut tally.first_seen, &mut tally.last_seen, time);
        }
        let target = String::from_utf8_lossy(target);
        let path = path::path_and_query(&target);
        let normal = path::normalize(path.as_bytes());
        // Judged as the proxy judges it, by the same judgement: no address is verified and no
        // file came before, so no claim is spoofed and no grace applies; a path whose
        // preference refuses what the crawler is for is told apart (`content-usage`).
        let who = if unnamed {
            Who::Unnamed
        } else {
            Who::Crawler(slot)
        };
        let observed = Observed {
            target: &path,
            path: &normal,
            who,
            client: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            spoofed: None,
            replayed: false,
            now: SystemTime::UNIX_EPOCH,
            verified: false,
            get: true,
            offer: None,
        };
        let law = audit.law();
        let selection = tally.selection;
        let memo = &mut self.memo;
        let reading = judge::read_with(&observed, &law, |selected, normal| {
            memo.check_normalized(&audit.robots, selection, selected, normal)
        });
        if reading.robots_txt {
            tally.robots_fetches += 1;
            if let Some(time) = time {
                tally.robots_first_fetch =
                    Some(tally.robots_first_fetch.map_or(time, |t| t.min(time)));
                self.timeline.add(time, Kind::Allowed);
            }
            return;
        }
        let judgement = judge::judge(&observed, &law, &reading, Visit::default());
        let column = usize::from(!reading.allowed);
        match reading.rule {
            Some(rule) => {
                if let Some(counts) = self.rules.get_mut(rule) {
                    counts[column] += 1;
                }
                let key = u32::try_from(rule).unwrap_or(u32::MAX);
                tally.rules.entry(key).or_default()[column] += 1;
            }
            None => tally.no_rule += 1,
        }
        if !reading.allowed {
            tally.disallowed += 1;
            tally.top_disallowed.add(path.as_bytes());
        } else if let Some(refusal) = judgement.content_usage {
            tally.against_preference += 1;
            if let Some(count) = self.preference_rules.get_mut(refusal.rule) {
                *count += 1;
            }
        }
        if let Some(time) = time {
            let kind = if reading.allowed {
                Kind::Allowed
            } else {
                Kind::Disallowed
            };
            self.timeline.add(time, kind);
        }
    }

    /// The time of a line, parsing a timestamp only when it differs from the previous line's.
    fn time_of(&mut self, stamp: &Stamp<'_>) -> Result<Option<i64>, Malformed> {
        match stamp {
            Stamp::Missing => {
                self.totals.without_time += 1;
                Ok(None)
            }
            Stamp::Number(number) => time::from_number(*number)
                .map(Some)
                .ok_or_else(|| Malformed::BadTime(number.to_string())),
            Stamp::Text(text) => {
                if self.last_time.is_some() && **text == *self.last_stamp {
                    return Ok(self.last_time);
                }
                let parsed = time::parse(text).ok_or_else(|| {
                    Malformed::BadTime(String::from_utf8_lossy(text).into_owned())
                })?;
                self.last_stamp.clear();
                self.last_stamp.extend_from_slice(text);
                self.last_time = Some(parsed);
                Ok(Some(parsed))
            }
        }
    }

    /// Ends the replay: the report, with the `top` most disallowed paths per crawler.
    pub fn finish(self, top: usize) -> Report {
        report::build(&self, top)
    }
}

fn seen(first: &mut Option<i64>, last: &mut Option<i64>, time: i64) {
    *first = Some(first.map_or(time, |t| t.min(time)));
    *last = Some(last.map_or(time, |t| t.max(time)));
}

/// Replays every line of one in-memory log, for benchmarks and tests.
pub fn replay_bytes(
    audit: &Audit,
    log: &[u8],
    format: Format,
    top: usize,
) -> Result<Report, AuditError> {
    let mut replay = audit.replay(format, JsonFields::default());
    let mut reader = log;
    replay.read(&mut reader, "memory", &mut |_| {})?;
    Ok(replay.finish(top))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit(robots: &str) -> Audit {
        let catalog = Catalog::embedded().unwrap();
        Audit::new(Robots::parse(robots.as_bytes()), &catalog).unwrap()
    }

    fn line(ua: &str, path: &str, time: &str) -> String {
        format!("1.2.3.4 - - [{time}] \"GET {path} HTTP/1.1\" 200 1 \"-\" \"{ua}\"\n")
    }

    const T: &str = "10/Oct/2000:13:55:36 -0700";

    #[test]
    fn crawlers_are_checked_as_the_proxy_checks_them() {
        let audit = audit("User-agent: GPTBot\nDisallow: /private/\n\nUser-agent: *\nDisallow: /tmp/\n\nUser-agent: ExampleBot\nDisallow: /\n");
        let log = [
            line("Mozilla/5.0 (compatible; GPTBot/1.2)", "/private/a", T),
            line("Mozilla/5.0 (compatible; GPTBot/1.2)", "/tmp/a", T),
            line("Mozilla/5.0 (compatible; GPTBot/1.2)", "/robots.txt", T),
            line("FooBot/1.0", "/tmp/x", T),
            line("ExampleBot/3", "/anything", T),
            line(
                "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0",
                "/private/a",
                T,
            ),
            line(
                "Mozilla/5.0 (compatible; GPTBot/1.2)",
                "/public/../private/b",
                T,
            ),
        ]
        .concat();
        let report = replay_bytes(&audit, log.as_bytes(), Format::Auto, 10).unwrap();
        assert_eq!((report.lines, report.skipped, report.people), (7, 0, 1));
        let gpt = report.crawlers.iter().find(|c| c.bot == "GPTBot").unwrap();
        assert_eq!(
            (gpt.requests, gpt.disallowed, gpt.robots_fetches),
            (4, 2, 1)
        );
        assert_eq!(gpt.top_disallowed.len(), 2);
        let unnamed = report.crawlers.iter().find(|c| c.bot == "unnamed").unwrap();
        assert_eq!((unnamed.requests, unnamed.disallowed), (1, 1));
        assert_eq!(unnamed.user_agents[0].user_agent, "FooBot/1.0");
        let example = report
            .crawlers
            .iter()
            .find(|c| c.bot == "ExampleBot")
            .unwrap();
        assert_eq!(example.category, "unlisted");
        assert_eq!(example.disallowed, 1);
        let lines: Vec<(u32, u64, u64)> = report
            .rules
            .iter()
            .map(|r| (r.line, r.allowed, r.disallowed))
            .collect();
        assert_eq!(lines, vec![(2, 0, 2), (5, 0, 1), (8, 0, 1)]);
    }

    #[test]
    fn json_queries_are_joined_to_their_paths() {
        let audit = audit("User-agent: *\nDisallow: /*?secret\n");
        let log = b"{\"uri\":\"/a\",\"args\":\"secret=1\",\"user_agent\":\"FooBot\",\"time\":\"2000-10-10T20:55:36Z\"}\n";
        let report = replay_bytes(&audit, log, Format::Auto, 10).unwrap();
        assert_eq!(report.crawlers[0].disallowed, 1);
        assert_eq!(report.crawlers[0].top_disallowed[0].path, "/a?secret=1");
    }

    #[test]
    fn malformed_lines_are_counted_or_fatal_when_strict() {
        let audit = audit("User-agent: *\nDisallow: /x\n");
        let log = format!(
            "{}garbage\n\n{}",
            line("FooBot", "/x", T),
            line("FooBot", "/y", T)
        );
        let report = replay_bytes(&audit, log.as_bytes(), Format::Combined, 10).unwrap();
        assert_eq!((report.lines, report.skipped), (3, 1));
        assert_eq!(report.malformed[0].line, 2);
        let mut replay = audit
            .replay(Format::Combined, JsonFields::default())
            .strict(true);
        let error = replay
            .read(&mut log.as_bytes(), "access.log", &mut |_| {})
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("access.log:2: no [time] field"),
            "{error}"
        );
    }

    #[test]
    fn the_user_agent_cache_gives_the_same_answers() {
        let audit = audit("User-agent: *\nDisallow: /\n");
        let mut replay = audit.replay(Format::Combined, JsonFields::default());
        for _ in 0..3 {
            assert_eq!(replay.classify(b"Mozilla/5.0 Firefox/128.0"), PERSON);
            assert_eq!(replay.classify(b"FooBot"), audit.crawlers().len() as u32);
        }
        assert_eq!(replay.ua_cache.len(), 2);
    }
}
