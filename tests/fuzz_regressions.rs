//! Regression cases from fuzzing (`fuzz/`, see `fuzz/README.md`).
//!
//! The four cargo-fuzz targets (robots.txt parser and matcher against the reference in
//! `common/reference.rs`, the User-Agent classifier, the configuration loader, the access-log
//! reader) found no crash and no disagreement with the reference in their first runs. What they
//! did find is kept here: inputs that reach the deep paths (the fuzzer's own discoveries,
//! shortened by hand to what matters), each checked with the same properties the targets check
//! and with the behaviour asserted, and one place where configuration errors count lines
//! differently (a lone CR ends a line for YAML).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::combined::canonical_combined_line;
use common::reference::{self, RefFile};
use crawlgate::agent::Classifier;
use crawlgate::audit::logline::{self, Entry, JsonFields, Stamp};
use crawlgate::audit::{replay_bytes, time, Audit, Format};
use crawlgate::catalog::Catalog;
use crawlgate::proxy::config::Settings;
use crawlgate::robots::path;
use crawlgate::{Reason, Robots};
use std::borrow::Cow;
use std::path::Path;

// ---------------------------------------------------------------------------------------------
// robots.txt: the `robots_matcher` target's checks.

/// Checks one query as the `robots_matcher` target does: `check_exact` agrees with the
/// reference on the groups as parsed, and `check` is the strictest of the reference's verdicts
/// on every form of the path. Returns `check`'s verdict.
fn agrees(robots: &Robots, agent: &str, url: &str) -> bool {
    let reference = RefFile::from_parsed(robots.file());
    let path = path::path_and_query(url);
    if let Err(difference) = reference::compare(robots, &reference, agent, url, &path) {
        panic!("{difference}");
    }
    let request = robots.check(agent, url);
    assert_eq!(
        request.allowed,
        reference::request_allowed(&reference, agent, &path),
        "check({agent:?}, {url:?})"
    );
    request.allowed
}

/// Parses `robots`, checks `agent` and `url`; returns `(check_exact, check)` allowed.
fn robots_case(robots: &str, agent: &str, url: &str) -> (bool, bool) {
    let robots = Robots::parse(robots.as_bytes());
    let request = agrees(&robots, agent, url);
    (robots.check_exact(agent, url).allowed, request)
}

#[test]
fn a_fragment_is_dropped_before_an_anchored_pattern_matches() {
    let robots = "user-agent: *\ndisallow: /x$\n";
    assert_eq!(
        robots_case(robots, "a", "https://example.com/x#frag"),
        (false, false)
    );
    assert_eq!(robots_case(robots, "a", "/x#"), (false, false));
    assert_eq!(robots_case(robots, "a", "/x?#"), (true, true));
}

#[test]
fn a_url_whose_scheme_is_not_a_scheme_is_a_relative_path() {
    // `http*` is no scheme and `/rohttp` starts with a slash: both stay paths, `://` and all.
    let robots = "User-agent: *\nDisallow: /rohttp:/\nDisallow: /http*:\nAllow: /\n";
    assert_eq!(
        robots_case(robots, "x", "/rohttp://a.b:8080/x"),
        (false, false)
    );
    assert_eq!(robots_case(robots, "x", "http*:///exx"), (false, false));
    assert_eq!(
        robots_case(robots, "x", "http://a.b:8080/rohttp:/"),
        (false, false)
    );
    assert_eq!(
        robots_case(robots, "x", "https://example.com"),
        (true, true)
    );
}

#[test]
fn a_request_that_resolves_to_robots_txt_is_allowed() {
    let robots = "user-agent: *\ndisallow: /*.php\ndisallow: /..\n";
    // As sent, `/..//robots.txt` is under `/..`; resolved, it is /robots.txt, always allowed,
    // but the stricter verdict holds.
    assert_eq!(
        robots_case(robots, "Any", "/..//robots.txt"),
        (false, false)
    );
    let robots = "user-agent: *\ndisallow: /*.php\n";
    assert_eq!(robots_case(robots, "Any", "/..//robots.txt"), (true, true));
    // As sent, `/a/../%72obots.txt` is allowed by no rule: that verdict stands, although the
    // resolved path is robots.txt itself.
    let parsed = Robots::parse(robots.as_bytes());
    assert_eq!(
        parsed.check("Any", "/a/../%72obots.txt").reason,
        Reason::NoMatchingRule
    );
    assert_eq!(
        parsed.check_exact("Any", "/%72obots.txt").reason,
        Reason::RobotsTxt
    );
}

#[test]
fn dot_segments_and_escapes_resolve_before_the_stricter_verdict() {
    let robots = "User-agent: GPTBot\nDisallow: /private/\nAllow: /private/press/\n\n\
                  User-agent: *\nDisallow: /*.pdf$\n";
    assert_eq!(
        robots_case(robots, "GPTBot/1.2", "/public/%2e%2E/private/x"),
        (true, false)
    );
    assert_eq!(
        robots_case(robots, "GPTBot", "//private//press/../press/kit"),
        (true, true)
    );
    assert_eq!(
        robots_case(robots, "GPTBott", "//private/b"),
        (true, true),
        "GPTBott is not GPTBot"
    );
    assert_eq!(robots_case(robots, "x", "/a/./b.pdf"), (false, false));
    // A final `.` segment resolves to the folder, which `$` does not match.
    assert_eq!(robots_case(robots, "x", "/a/b.pdf/."), (true, true));
    assert_eq!(robots_case(robots, "x", "/a/b.pdf/x/.."), (true, true));
    assert_eq!(robots_case(robots, "x", "/a/b.pd%66"), (false, false));
    assert_eq!(robots_case(robots, "x", "/a/b.pdf?v=2"), (true, true));
}

#[test]
fn lines_the_fuzzer_mangled_are_read_as_the_reference_expects() {
    // A directive without a colon whose value starts with an escape is no rule; a CR-LF in the
    // middle of a directive name breaks it; the misspellings still count.
    let robots = "U\r\nser-agent: *\nDisallow%24\n";
    assert_eq!(robots_case(robots, "x", "/"), (true, true));
    assert!(Robots::parse(robots.as_bytes()).file().rules.is_empty());
    let robots = "useragent: a\r\ndisallow /x\r\nuser agent: b\rdissallow: /*.php$\n\n\
                  User-agent: *\nCrawl-delay: 2\nDisallow: /%2F\nAllow: /%2f*\n";
    assert_eq!(robots_case(robots, "a", "/x%2Fy"), (false, false));
    assert_eq!(robots_case(robots, "b", "/y.php"), (false, false));
    assert_eq!(robots_case(robots, "c", "/%2F"), (true, true));
    assert_eq!(robots_case(robots, "c", "/%2"), (true, true));
    // Patterns with `$` inside and `*` runs, against paths with raw bytes outside ASCII.
    let robots = "User-agent: *\nDisallow: /x$y\nDisallow: /**a**$\nAllow: /é*$\n";
    assert_eq!(robots_case(robots, "x", "/x$y"), (false, false));
    // RFC 9309 §2.2.3: `%24` is the literal `$`, in a path as in a pattern.
    assert_eq!(robots_case(robots, "x", "/x%24y"), (false, false));
    assert_eq!(robots_case(robots, "x", "/bba"), (false, false));
    assert_eq!(robots_case(robots, "x", "/%C3%A9a"), (true, true));
    assert_eq!(robots_case(robots, "x", "/\u{fffd}a"), (false, false));
}

// ---------------------------------------------------------------------------------------------
// User-Agent: the `user_agent` target's checks.

fn classifier() -> Classifier {
    let catalog = Catalog::embedded().unwrap();
    Classifier::new(catalog.known_agents()).unwrap()
}

/// The token a header is classified as, `"unnamed"` or `"person"`, after checking the
/// `user_agent` target's properties (`common/user_agent.rs`).
fn classify(classifier: &Classifier, header: &[u8]) -> String {
    common::user_agent::check(classifier, header)
}

#[test]
fn user_agents_the_fuzzer_found_classify_as_whole_tokens() {
    let c = classifier();
    let cases: [(&[u8], &str); 14] = [
        // `_` and `-` are token bytes: they extend a token into another one.
        (b"_OAI-SearchBot_OAI-SearchBot", "unnamed"),
        (b"OAI-SearchBot_", "unnamed"),
        (b"(OAI-SearchBot)", "OAI-SearchBot"),
        (b"-spiderG", "unnamed"),
        // Near misses of the crawler words are people.
        (b"XMoziGoocrawleGcrawleloeiGcrawlee", "person"),
        (b"crawlm ", "person"),
        (b"uu.cr0rap", "person"),
        (b"nbobo2", "person"),
        (b"scrcascrcapescsc", "person"),
        (b"MyCrawqMyCrawqcrapero", "person"),
        // Bytes outside ASCII are token boundaries, whatever they are.
        (b"\xffGPTBot\xfe", "GPTBot"),
        (b"\xc3\xa9gptbot\xc3\xa9/1.0", "GPTBot"),
        // The longest whole token wins, wherever it is.
        (
            b"Googlebot/2.1 (compatible; Googlebot-Image/1.0)",
            "Googlebot-Image",
        ),
        (b"XGooglebot/1.0", "unnamed"),
    ];
    for (header, want) in cases {
        assert_eq!(
            classify(&c, header),
            want,
            "{:?}",
            String::from_utf8_lossy(header)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Configuration: the `config` target's checks.

fn load(text: &str) -> Result<Settings, crawlgate::proxy::config::ConfigError> {
    Settings::from_yaml_offline(text, "fuzz", Path::new("/nonexistent"))
}

/// Found by the `config` target: YAML (libyaml) ends a line at a lone CR (and at NEL, LS, PS),
/// so a syntax error in a file with CR line endings names a line that `str::lines` (and
/// crawlgate's own placement of semantic errors, which counts LF) does not have. The target
/// counts lines as YAML does; this test keeps what serde_yaml reports.
#[test]
fn yaml_syntax_errors_count_a_lone_cr_as_a_line_break() {
    let text = "listen: [\"127.0.0.1:8080\"]\rsites:\r  - name: a\r    upstream: [\r";
    assert_eq!(text.lines().count(), 1);
    let error = load(text).unwrap_err();
    assert!(!error.message.is_empty());
    let line = error.line.expect("a syntax error has a line");
    assert!(line > 1 && line <= 5, "line {line}: {error}");
    // The same file with LF line endings puts the error on the same line.
    let unix = load(&text.replace('\r', "\n")).unwrap_err();
    assert_eq!(unix.line, Some(line), "{unix}");
    // crawlgate's own checks count lines the same way as the YAML parser.
    let semantic = "listen: [\"127.0.0.1:8080\"]\rsites:\r  - name: a\r    upstream: \"h\"\r    robots: {origin: true}\r";
    let error = load(semantic).unwrap_err();
    assert!(error.message.contains("HOST:PORT"), "{error}");
    assert_eq!(error.line, Some(4), "{error}");
}

#[test]
fn configurations_the_fuzzer_found_fail_with_a_message() {
    for text in [
        "!!FALr",
        "0b%t",
        ">    f",
        "9999999999999999)99999999997s.txt\n",
        "!!aw\ngttv: !!aw\n!:s.lla\n",
        "trusted_proxies: [\"10.0.0.0/8\",2001:db8::/32 \"::1\"]\n",
        "politeness:\n  max_tracked: 65520\n  isten: ro\n",
        "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    upstream: \":8000\"\n    robots: {origin: true}\n",
        "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    upstream: \"[::1]:99999\"\n    robots: {origin: true}\n",
        "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    upstream: \"h:1\"\n    robots: {origin: true, refresh: 999ms}\n",
        "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    upstream: \"h:1\"\n    robots: {origin: true, refresh: 99999999999999999999y}\n",
        "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    upstream: \"h:1\"\n    robots: {inline: x, max_bytes: 0}\n",
        "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    hosts: [\"[::1]\", \"a:b\"]\n    upstream: \"h:1\"\n    robots: {origin: true}\n",
        "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    upstream: \"h:1\"\n    robots: {origin: true}\npingora: {threads: 0}\n",
        "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    upstream: \"h:1\"\n    robots: {origin: true}\nverification: {reverse_dns: {Googlebot: [\"..\"]}}\n",
    ] {
        let error = load(text).unwrap_err();
        assert!(!error.message.is_empty(), "{text:?}");
        assert!(error.to_string().starts_with("fuzz"), "{error}");
    }
}

#[test]
fn configurations_the_fuzzer_found_load_offline() {
    // An upstream name is not resolved offline; a bracketed IPv6 host is a host.
    let text = "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    hosts: [\"[::1]\", A.example]\n    upstream: \"origin.invalid:1\"\n    robots: {origin: true, refresh: 1s}\n";
    let settings = load(text).unwrap();
    let site = &settings.sites[0];
    assert_eq!(site.hosts, ["[::1]", "a.example"]);
    assert_eq!(site.upstream.resolved, None);
    assert_eq!(site.upstream.sni, "origin.invalid");
    let example =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("conf/crawlgate.yaml"))
            .unwrap();
    assert!(load(&example).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Access logs: the `access_log` target's checks.

/// Parses a combined line and checks the `access_log` target's round trip.
fn combined(line: &[u8]) -> Option<Entry<'_>> {
    let entry = logline::parse_combined(line).ok()?;
    let again = canonical_combined_line(&entry).expect("a combined line's time is text");
    let reparsed = logline::parse_combined(&again).unwrap();
    assert_eq!(reparsed, entry, "{:?}", String::from_utf8_lossy(&again));
    Some(entry)
}

fn text(bytes: &Option<Cow<'_, [u8]>>) -> Option<String> {
    bytes
        .as_ref()
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

#[test]
fn combined_lines_the_fuzzer_found_round_trip() {
    // A target that ends in backslashes, before an escaped quote.
    let line =
        br#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a\\\" HTTP/1.1" 200 0 "-" "UA \\""#;
    let entry = combined(line).unwrap();
    assert_eq!(text(&entry.target).as_deref(), Some(r#"/a\\\""#));
    assert_eq!(text(&entry.user_agent).as_deref(), Some(r#"UA \\"#));
    // A `[` followed by a digit before the time is the time; anything else in brackets is not.
    let line = b"[x] [::1] - - [1] \"GET http://a/b\" 200";
    let entry = combined(line).unwrap();
    assert_eq!(entry.time, Stamp::Text(Cow::Borrowed(&b"1"[..])));
    assert_eq!(text(&entry.target).as_deref(), Some("http://a/b"));
    assert_eq!(entry.user_agent, None);
    // A referer with no User-Agent after it, and a method that is not letters.
    let line = b"h [10/Oct/2000:13:55:36 -0700] \"G3T /x\" 200 0 \"-\"x";
    let entry = combined(line).unwrap();
    assert_eq!((entry.target, entry.user_agent), (None, None));
    // `http://` alone is not a URL.
    assert_eq!(logline::request_target(b"GET http://"), None);
    assert_eq!(
        logline::request_target(b"GET HTTPS://x"),
        Some(&b"HTTPS://x"[..])
    );
}

#[test]
fn json_lines_the_fuzzer_found_round_trip() {
    let fields = JsonFields::default();
    // The most preferred name wins whatever the order; escapes are decoded; numbers are times.
    let line = br#"{"url":"/u","uri":"/v","path":"\/p","args":"-","query_string":"a=1","ts":971211336750,"agent":"x","ua":"\u0047PTBot"}"#;
    let entry = logline::parse_json(line, &fields).unwrap();
    assert_eq!(text(&entry.target).as_deref(), Some("/p"));
    assert_eq!(text(&entry.query).as_deref(), Some("a=1"));
    assert_eq!(text(&entry.user_agent).as_deref(), Some("GPTBot"));
    assert_eq!(entry.time, Stamp::Number(971_211_336_750.0));
    assert_eq!(time::from_number(971_211_336_750.0), Some(971_211_336));
    // A value of the wrong kind is no value: the next name is used.
    let line = br#"{"path":["/a"],"uri":"/b","time":{"t":1},"date":"2000-10-10T20:55:36Z"}"#;
    let entry = logline::parse_json(line, &fields).unwrap();
    assert_eq!(text(&entry.target).as_deref(), Some("/b"));
    assert_eq!(
        entry.time,
        Stamp::Text(Cow::Borrowed(&b"2000-10-10T20:55:36Z"[..]))
    );
    // A request line with an escaped target is owned, and read like a raw one.
    let line = br#"{"request":"GET \/x?y HTTP\/1.1"}"#;
    let entry = logline::parse_json(line, &fields).unwrap();
    assert_eq!(text(&entry.target).as_deref(), Some("/x?y"));
    assert!(logline::parse_json(br#"{"time":"x"}"#, &fields).is_err());
}

#[test]
fn timestamps_round_trip_through_rfc_3339_within_its_years() {
    for (stamp, seconds) in [
        (&b"31/Dec/9999:23:59:59 -0000"[..], 253_402_300_799),
        (b"01/Jan/0000:00:00:00 -0000", -62_167_219_200),
        (b"29/Feb/2000:23:59:60 +2359", 951_782_400 + 86_400 - 86_340),
        (b"0000-03-01 00:00:00.000000Z", -62_162_035_200),
        (b" [99999999999.9] ", 99_999_999_999),
        (b"900000000000000", 900_000_000_000),
    ] {
        assert_eq!(
            time::parse(stamp),
            Some(seconds),
            "{}",
            String::from_utf8_lossy(stamp)
        );
        let written = time::format_rfc3339(seconds);
        if (-62_167_219_200..=253_402_300_799).contains(&seconds) {
            assert_eq!(time::parse(written.as_bytes()), Some(seconds), "{written}");
        } else {
            // RFC 3339 has four-digit years: a time after 9999 (an epoch number may be up to
            // 10^12 seconds) is written with five, which the parser does not read back. The
            // `access_log` target checks the round trip for years 0000 to 9999 only.
            assert_eq!(time::parse(written.as_bytes()), None, "{written}");
        }
    }
}

#[test]
fn replays_of_logs_the_fuzzer_found_add_up() {
    let catalog = Catalog::embedded().unwrap();
    let robots = "User-agent: GPTBot\nDisallow: /\nAllow: /public/$\n\n\
                  User-agent: ExampleBot\nDisallow: /private/\nCrawl-delay: 1\n\n\
                  User-agent: *\nDisallow: /private/\nDisallow: /*.pdf$\nAllow: /private/press/\n";
    let audit = Audit::new(Robots::parse(robots.as_bytes()), &catalog).unwrap();
    let log = b"{\"when\":1}\n\
        1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET /private/x HTTP/1.1\" 200 5 \"-\" \"GPTBot/1.2\"\n\
        {\"path\":\"/x\",\"ua\":\"ExampleBot\",\"time\":1e300}\n\
        {\"path\":\"/public/\",\"ua\":\"GPTBot\",\"time\":\"2000-10-10T20:55:36Z\"}\n\
        {\"path\":\"/robots.txt?x\",\"ua\":\"a spider\"}\n\
        {\"request\":\"-\",\"ua\":\"GPTBot\"}\n\
        \n   \n\
        {\"path\":\"/a.pdf\",\"query\":\"v=1\",\"ua\":\"a spider\"}\n\
        {\"path\":\"/a.pdf\",\"ua\":\"Firefox\",\"time\":-1}\n\
        {\"path\":\"/private/x\",\"ua\":\"GPTBot/1.2\"}\n\
        {\"path\":\"/private/x\",\"ua\":\"Mozilla/5.0 Firefox/128.0\"}\n";
    let report = replay_bytes(&audit, log, Format::Auto, 3).unwrap();
    assert_eq!(
        report.lines,
        report.skipped + report.invalid_requests + report.requests
    );
    assert_eq!(report.requests, report.people + report.crawler_requests);
    // Blank lines are not lines; a line with no path field, the combined line in a JSON log
    // and the two times that are no times (1e300, -1) are skipped; `"request": "-"` is a line
    // but not a request.
    assert_eq!(
        (report.lines, report.skipped, report.invalid_requests),
        (10, 4, 1)
    );
    assert_eq!(
        (report.requests, report.people, report.crawler_requests),
        (5, 1, 4)
    );
    assert_eq!(report.disallowed, 1);
    let mut table = Vec::new();
    crawlgate::audit::report::write_table(&report, 3, &mut table).unwrap();
    assert!(crawlgate::audit::html::render(&report).starts_with("<!doctype html>"));
}
