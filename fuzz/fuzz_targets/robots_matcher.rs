//! robots.txt parser + matcher against the naive reference of the property tests.
//!
//! Input: `ROBOTS 0xFF AGENT 0xFF URL [0xFF AGENT 0xFF URL]...` (0xFF never occurs in UTF-8, so
//! the body may hold any other byte; agent and URL are read as lossy UTF-8). A missing agent is
//! `""` and a missing URL is `/`. At most 8 queries are made per input.
//!
//! For each file: parsing never panics; the parsed structure is consistent (rule and group lines
//! in range and in order, rule indices valid, agents are product tokens); `problems`,
//! `sitemaps`, `agents`, `crawl_delay`, `groups_for` never panic. For each query,
//! `check_exact` agrees with `tests/common/reference.rs` run on the groups as parsed (verdict,
//! reason, groups, and the deciding rule is one of the longest matching rules), and `check`
//! (and `is_allowed`) is the strictest of the reference's verdicts on the path as sent, as an
//! origin resolves it, and with `%2F`/`%5C` read as separators. The content-use preference
//! for each query is none on a disallowed path and names the rule that states it.
//!
//! There is no documented difference to exclude: every disagreement is a bug.
#![no_main]

use crawlgate::robots::path;
use crawlgate::Robots;
use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../tests/common/reference.rs"]
mod reference;
#[allow(dead_code)]
#[path = "../../tests/common/rng.rs"]
mod rng;

use reference::RefFile;

const SEPARATOR: u8 = 0xFF;
const MAX_QUERIES: usize = 8;

fn structure(robots: &Robots) {
    let file = robots.file();
    let mut previous = 0;
    for rule in &file.rules {
        assert!(
            (1..=file.lines).contains(&rule.line) && rule.line > previous,
            "rule line {} out of place ({} lines)",
            rule.line,
            file.lines
        );
        assert!(
            reference::is_rule_pattern(&rule.pattern),
            "rule {rule:?} is no pattern"
        );
        previous = rule.line;
    }
    for group in &file.groups {
        assert!(
            (1..=file.lines).contains(&group.line),
            "group line {}",
            group.line
        );
        assert!(group.rules.iter().all(|&rule| rule < file.rules.len()));
        assert!(group.agents.iter().all(|agent| !agent.is_empty()
            && agent
                .bytes()
                .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')));
        if let Some(delay) = group.crawl_delay {
            assert!(delay >= 0.0, "negative crawl-delay {delay}");
        }
    }
    for problem in robots.problems() {
        assert!(problem.line >= 1 && problem.line <= file.lines + 1);
        assert!(!problem.to_string().is_empty());
    }
    assert!(file.bytes <= crawlgate::robots::DEFAULT_MAX_BYTES);
    let _ = robots.sitemaps().count();
    for agent in robots.agents() {
        let _ = robots.crawl_delay(agent);
        let _ = robots.groups_for(agent);
    }
}

fn query(robots: &Robots, reference: &RefFile, agent: &str, url: &str, what: &str) {
    let path = path::path_and_query(url);
    if let Err(difference) = reference::compare(robots, reference, agent, url, &path) {
        panic!("{what}: {difference}");
    }
    let _ = robots.check_exact(agent, url);
    let _ = robots.crawl_delay(agent);
    let _ = robots.groups_for(agent);

    // check: the strictest of the path as sent, resolved and with separators decoded.
    let request = robots.check(agent, url);
    assert_eq!(robots.is_allowed(agent, url), request.allowed);
    let want = reference::request_allowed(reference, agent, &path);
    assert_eq!(
        request.allowed, want,
        "{what}: check({agent:?}, {url:?}) = {}, reference {want}",
        request.allowed,
    );
    if !request.allowed {
        assert!(request.rule.is_some(), "disallowed without a rule");
    }

    // Content-use preferences: none where the path may not be fetched, and what is stated
    // names a rule of the file that states it.
    let preference = robots.preference(agent, url);
    if !request.allowed {
        assert!(
            preference.is_unknown(),
            "{what}: a preference on a disallowed path"
        );
    }
    for usage in crawlgate::robots::Usage::ALL {
        let stated = preference.get(usage);
        match stated.rule.map(|index| robots.preference_rule(index)) {
            None => assert_eq!(stated.stance, crawlgate::robots::Stance::Unknown),
            Some(rule) => assert_eq!(rule.map(|r| r.stance(usage)), Some(stated.stance)),
        }
    }
    let _ = preference.response_header(Some(url));
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&b| b == SEPARATOR);
    let body = parts.next().unwrap_or_default();
    let robots = Robots::parse(body);
    structure(&robots);
    let reference = RefFile::from_parsed(robots.file());
    let mut queries = 0;
    loop {
        let agent = parts.next();
        let url = parts.next();
        if (agent.is_none() && queries > 0) || queries == MAX_QUERIES {
            break;
        }
        let agent = String::from_utf8_lossy(agent.unwrap_or_default());
        let url = String::from_utf8_lossy(url.unwrap_or(b"/"));
        query(&robots, &reference, &agent, &url, "default");
        queries += 1;
    }
});
