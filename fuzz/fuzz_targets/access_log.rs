//! The access-log reader (`crawlgate audit`) on arbitrary logs.
//!
//! Input: a log, one line per `\n` (the first 64 lines are also parsed one by one).
//!
//! For each line, both parsers (combined, and JSON lines with the default field names) never
//! panic, and what they return holds:
//! - combined: the target, User-Agent and time are slices of the line; the target is an
//!   origin-form path or an absolute `http(s)://` URL. Round trip: the entry written back as a
//!   canonical combined line (`192.0.2.1 - - [TIME] "GET TARGET HTTP/1.1" 200 0 "-" "UA"`) parses
//!   to the same entry.
//! - JSON: every text is UTF-8, an empty or `-` target or query is `None`. Round trip: the entry
//!   written back as a JSON object with the preferred field names (`path`, `query`,
//!   `user_agent`, `time`; `"request": "-"` for no target) parses to the same entry (a numeric
//!   time to within a few ulps: serde_json's default float parser is not exact).
//! - time: a timestamp that `time::parse` reads, written back as RFC 3339 (`format_rfc3339`),
//!   reads back as the same second, for the years RFC 3339 can write (0000 to 9999).
//!
//! Then the whole input is replayed (`replay_bytes`, format detected from the first line)
//! against a small robots.txt with the embedded catalog, never panicking, and the report's
//! counts add up (lines = skipped + invalid requests + requests; requests = people + crawler
//! requests; disallowed ≤ crawler requests); the table and the HTML report render.
#![no_main]

use crawlgate::audit::logline::{self, Entry, JsonFields, Stamp};

#[path = "../../tests/common/combined.rs"]
mod combined;
use crawlgate::audit::{html, replay_bytes, report, time, Audit, Format};
use crawlgate::catalog::Catalog;
use crawlgate::Robots;
use libfuzzer_sys::fuzz_target;
use std::borrow::Cow;
use std::sync::LazyLock;

const ROBOTS: &str = "User-agent: GPTBot\nDisallow: /\nAllow: /public/$\n\n\
    User-agent: ExampleBot\nDisallow: /private/\nCrawl-delay: 1\n\n\
    User-agent: *\nDisallow: /private/\nDisallow: /*.pdf$\nAllow: /private/press/\n";

const MAX_LINES: usize = 64;

/// RFC 3339 years 0000 to 9999, in Unix seconds. A documented difference, excluded: outside
/// them `time::format_rfc3339` writes a five-digit or signed year (an epoch number may reach
/// 10^12 seconds, the year 33658), which RFC 3339 cannot say and `time::parse` does not read
/// back, so the round trip is checked only within them.
const FIRST_SECOND: i64 = -62_167_219_200;
const LAST_SECOND: i64 = 253_402_300_799;

static AUDIT: LazyLock<Audit> = LazyLock::new(|| {
    let catalog = Catalog::embedded().expect("the embedded catalog loads");
    Audit::new(Robots::parse(ROBOTS.as_bytes()), &catalog).expect("the audit builds")
});

static FIELDS: LazyLock<JsonFields> = LazyLock::new(JsonFields::default);

fn is_within(part: &[u8], line: &[u8]) -> bool {
    let (start, end) = (line.as_ptr() as usize, line.as_ptr() as usize + line.len());
    let (p, q) = (part.as_ptr() as usize, part.as_ptr() as usize + part.len());
    p >= start && q <= end
}

fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

fn check_target(target: &[u8]) {
    let absolute = target.len() > 8
        && (target[..7].eq_ignore_ascii_case(b"http://")
            || target[..8].eq_ignore_ascii_case(b"https://"));
    assert!(
        target.first() == Some(&b'/') || absolute,
        "target {:?}",
        lossy(target)
    );
}

fn check_time(stamp: &Stamp<'_>) {
    match stamp {
        Stamp::Text(text) => {
            if let Some(seconds) = time::parse(text) {
                if (FIRST_SECOND..=LAST_SECOND).contains(&seconds) {
                    let written = time::format_rfc3339(seconds);
                    assert_eq!(written.len(), 20, "{written}");
                    assert_eq!(
                        time::parse(written.as_bytes()),
                        Some(seconds),
                        "{:?} → {seconds} → {written}",
                        lossy(text)
                    );
                }
            }
        }
        Stamp::Number(number) => {
            assert!(number.is_finite());
            if let Some(seconds) = time::from_number(*number) {
                assert!(seconds >= 0);
            }
        }
        Stamp::Missing => {}
    }
}

fn combined(line: &[u8]) {
    let Ok(entry) = logline::parse_combined(line) else {
        return;
    };
    let Stamp::Text(time) = &entry.time else {
        panic!("a combined line without its time: {:?}", entry.time);
    };
    assert!(is_within(time, line));
    assert_eq!(entry.query, None);
    if let Some(target) = &entry.target {
        assert!(is_within(target, line));
        check_target(target);
    }
    if let Some(user_agent) = &entry.user_agent {
        assert!(is_within(user_agent, line));
    }
    check_time(&entry.time);

    let again = combined::canonical_combined_line(&entry).expect("its time is text");
    let reparsed = logline::parse_combined(&again);
    assert_eq!(
        reparsed.as_ref(),
        Ok(&entry),
        "combined round trip: {:?} → {:?}",
        lossy(line),
        lossy(&again)
    );
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("JSON texts are UTF-8")
}

/// Whether two entries are the same, a numeric time to within a few ulps: a documented
/// difference, excluded, since serde_json's default float parser (without `float_roundtrip`)
/// may read the shortest representation it wrote back one ulp off.
fn same_entry(a: &Entry<'_>, b: &Entry<'_>) -> bool {
    let time = match (&a.time, &b.time) {
        (Stamp::Number(x), Stamp::Number(y)) => (x - y).abs() <= x.abs().max(y.abs()) * 1e-15,
        (x, y) => x == y,
    };
    time && a.target == b.target && a.query == b.query && a.user_agent == b.user_agent
}

fn json(line: &[u8]) {
    let Ok(entry) = logline::parse_json(line, &FIELDS) else {
        return;
    };
    let mut object = serde_json::Map::new();
    match &entry.target {
        Some(target) => {
            assert!(!target.is_empty() && **target != *b"-");
            object.insert("path".into(), text(target).into());
        }
        None => {
            object.insert("request".into(), "-".into());
        }
    }
    if let Some(query) = &entry.query {
        assert!(!query.is_empty() && **query != *b"-");
        object.insert("query".into(), text(query).into());
    }
    if let Some(user_agent) = &entry.user_agent {
        object.insert("user_agent".into(), text(user_agent).into());
    }
    match &entry.time {
        Stamp::Text(time) => {
            object.insert("time".into(), text(time).into());
        }
        Stamp::Number(number) => {
            let number = serde_json::Number::from_f64(*number).expect("a finite number");
            object.insert("time".into(), number.into());
        }
        Stamp::Missing => {}
    }
    check_time(&entry.time);
    let again = serde_json::Value::Object(object).to_string();
    let reparsed = logline::parse_json(again.as_bytes(), &FIELDS);
    let ok = reparsed
        .as_ref()
        .is_ok_and(|reparsed| same_entry(reparsed, &entry));
    assert!(
        ok,
        "JSON round trip: {:?} → {again} → {reparsed:?}, not {entry:?}",
        lossy(line)
    );
}

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n').take(MAX_LINES) {
        if let Some(target) = logline::request_target(line) {
            assert!(is_within(target, line));
            check_target(target);
        }
        combined(line);
        json(line);
    }

    let audit = &*AUDIT;
    let report = replay_bytes(audit, data, Format::Auto, 3).expect("an in-memory replay reads");
    assert_eq!(
        report.lines,
        report.skipped + report.invalid_requests + report.requests,
        "lines do not add up: {report:?}"
    );
    assert_eq!(
        report.requests,
        report.people + report.crawler_requests,
        "requests do not add up: {report:?}"
    );
    assert!(report.disallowed <= report.crawler_requests);
    assert!(report.without_time <= report.lines);
    let mut table = Vec::new();
    report::write_table(&report, 3, &mut table).expect("a table writes to memory");
    let page = html::render(&report);
    assert!(page.starts_with("<!doctype html>") || page.starts_with("<!DOCTYPE html>"));
});
