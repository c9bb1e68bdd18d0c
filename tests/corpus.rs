//! The parser and matcher on the shared corpus of real robots.txt files.
//!
//! Every `.txt` file of the corpus folder (`CRAWLGATE_CORPUS`, else `../shared/corpus/real` next
//! to the crate) is parsed with the default options, a tiny parse limit (1000 bytes) and a huge
//! one (4 MiB), without panicking, and the result is checked: problems, rules and groups lie
//! within the lines read, a smaller limit reads a prefix of the rules, a file larger than the
//! limit reports exactly one past-limit problem, byte order marks and CR-only line endings are
//! read like any other file. Then each file is queried with paths derived from its own rules, for
//! a crawler it does not name and for the crawlers it names, and every verdict is compared with
//! the naive reference in `common/reference.rs` run on the groups as parsed (so that only the
//! matching is compared). Each test is skipped, with a message, when the folder is absent.
//!
//! Files that parse into more than 300 KiB are queried by `large_files_agree_with_the_reference`,
//! and `a_group_of_3000_long_rules_answers_without_exhausting_memory` builds a synthetic one:
//! both once made the regex-automata matcher of an earlier version ask for tens of GB. An
//! allocator that refuses any single allocation over 1 GiB makes such a regression abort at once
//! rather than exhaust the machine's memory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::reference::{self, RefFile, Rng};
use crawlgate::robots::{Reason, DEFAULT_MAX_BYTES, MAX_JUDGED_PATH};
use crawlgate::{Options, ProblemKind, Robots};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The largest single allocation these tests allow. Nothing here needs more than a few MB; a
/// larger request fails, which aborts the process at once ("memory allocation of N bytes
/// failed") instead of letting a runaway allocation fill the machine's memory.
const MAX_ALLOCATION: usize = 1 << 30;

/// The system allocator, refusing allocations over [`MAX_ALLOCATION`].
struct Bounded;

// SAFETY: every call is forwarded unchanged to `System`, or refused with a null pointer, which
// `GlobalAlloc` allows for any allocation.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `alloc`'s contract, which is `System.alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOCATION {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Bounded = Bounded;

const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// A tiny and a huge parse limit, besides the default.
const TINY_LIMIT: usize = 1000;
const HUGE_LIMIT: usize = 4 << 20;

/// Files that parse into more than this many bytes are queried by the large-file test only.
const LARGE: usize = 300 << 10;

/// Crawler names the file names, besides one it does not, at most this many.
const AGENTS_PER_FILE: usize = 6;
/// Paths derived from rules, and random paths, for each crawler name.
const DERIVED_PATHS: usize = 30;
const RANDOM_PATHS: usize = 5;

/// One corpus file, parsed with the default options.
struct Entry {
    name: String,
    bytes: Vec<u8>,
    robots: Robots,
}

struct Corpus {
    /// Whether the folder is the shared corpus (not one named by `CRAWLGATE_CORPUS`), whose
    /// contents are known: it has files with a byte order mark, CR-only files and large files.
    shared: bool,
    entries: Vec<Entry>,
}

fn corpus_dir() -> (PathBuf, bool) {
    match std::env::var_os("CRAWLGATE_CORPUS") {
        Some(dir) => (PathBuf::from(dir), false),
        None => (
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/real"),
            true,
        ),
    }
}

/// The corpus, read and parsed once for all the tests of this file.
static CORPUS: LazyLock<Option<Corpus>> = LazyLock::new(|| {
    let (dir, shared) = corpus_dir();
    if !dir.is_dir() {
        return None;
    }
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !path.is_file() || name == "SOURCES.tsv" || !name.ends_with(".txt") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let robots = Robots::parse(&bytes);
        entries.push(Entry {
            name,
            bytes,
            robots,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(!entries.is_empty(), "no .txt file in {}", dir.display());
    Some(Corpus { shared, entries })
});

/// The corpus, or `None` after saying why the test is skipped.
fn corpus(test: &str) -> Option<&'static Corpus> {
    let corpus = CORPUS.as_ref();
    if corpus.is_none() {
        let (dir, _) = corpus_dir();
        println!(
            "{test}: skipped, no corpus folder at {} (set CRAWLGATE_CORPUS)",
            dir.display()
        );
    }
    corpus
}

/// What the parser reads of a file: its bytes after a byte order mark.
fn content(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BYTE_ORDER_MARK).unwrap_or(bytes)
}

/// Checks what must hold of a file parsed with `limit`; returns the problems found.
fn invariants(name: &str, bytes: &[u8], robots: &Robots, limit: usize) -> Vec<String> {
    let mut errors = Vec::new();
    let file = robots.file();
    let lines = file.lines;
    if file.bytes > limit {
        errors.push(format!("{} bytes parsed past the limit", file.bytes));
    }
    for problem in robots.problems() {
        if problem.line == 0 || problem.line > lines + 1 {
            errors.push(format!("problem past the {lines} lines: {problem}"));
        }
    }
    let mut previous = 0;
    for rule in &file.rules {
        if rule.line == 0 || rule.line > lines || rule.line <= previous {
            errors.push(format!("rule line {} out of place: {rule:?}", rule.line));
        }
        previous = rule.line;
    }
    for group in &file.groups {
        if group.line == 0 || group.line > lines {
            errors.push(format!("group line {} past the {lines} lines", group.line));
        }
        if group.rules.iter().any(|&rule| rule >= file.rules.len()) {
            errors.push(format!("group on line {} names a missing rule", group.line));
        }
    }
    let past_limit: Vec<_> = robots
        .problems()
        .into_iter()
        .filter(|problem| matches!(problem.kind, ProblemKind::PastLimit { .. }))
        .collect();
    let size = content(bytes).len();
    if size > limit {
        match past_limit.as_slice() {
            [problem] => {
                let expected = ProblemKind::PastLimit {
                    limit,
                    ignored: size - file.bytes,
                };
                if problem.kind != expected || problem.line != lines + 1 {
                    errors.push(format!("wrong past-limit problem: {problem:?}"));
                }
            }
            _ => errors.push(format!(
                "{size} bytes over a limit of {limit}, {} past-limit problems",
                past_limit.len()
            )),
        }
    } else if !past_limit.is_empty() {
        errors.push(format!("{size} bytes within the limit, yet {past_limit:?}"));
    }
    // Queries do not panic, whatever was read. (Large files are queried by
    // `large_files_agree_with_the_reference`.)
    if file.bytes <= LARGE {
        for agent in ["crawlgate-test", "Googlebot", ""] {
            for url in ["/", "/robots.txt", "https://example.com/a?b#c", "/%zz/é"] {
                robots.check(agent, url);
            }
        }
    }
    errors
        .into_iter()
        .map(|error| format!("{name} (limit {limit}): {error}"))
        .collect()
}

#[test]
fn every_file_parses_within_its_limits() {
    let Some(corpus) = corpus("every_file_parses_within_its_limits") else {
        return;
    };
    let mut errors = Vec::new();
    let mut over_default = 0;
    for entry in &corpus.entries {
        let (name, bytes, robots) = (&entry.name, &entry.bytes, &entry.robots);
        errors.extend(invariants(name, bytes, robots, DEFAULT_MAX_BYTES));
        if content(bytes).len() > DEFAULT_MAX_BYTES {
            over_default += 1;
        }
        let parsed = robots.file();
        for limit in [TINY_LIMIT, HUGE_LIMIT] {
            let options = Options { max_bytes: limit };
            let limited = Robots::parse_with(bytes, options);
            errors.extend(invariants(name, bytes, &limited, limit));
            // Whatever the limit, the same lines are read the same way: the file read with the
            // smaller limit has a prefix of the rules of the other.
            let file = limited.file();
            let (short, long) = if limit < DEFAULT_MAX_BYTES {
                (&file.rules, &parsed.rules)
            } else {
                (&parsed.rules, &file.rules)
            };
            if long.get(..short.len()) != Some(short.as_slice()) {
                errors.push(format!(
                    "{name}: the rules read with a limit of {limit} and by default differ"
                ));
            }
            if limit == HUGE_LIMIT && content(bytes).len() <= DEFAULT_MAX_BYTES && file != parsed {
                errors.push(format!("{name}: a limit past its size changes the parse"));
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    if corpus.shared {
        assert!(over_default > 0, "the shared corpus has files over 512 KiB");
    }
    println!(
        "{} files parsed with 3 limits; {over_default} over the default limit",
        corpus.entries.len()
    );
}

#[test]
fn byte_order_marks_and_cr_only_files_parse_into_groups() {
    let Some(corpus) = corpus("byte_order_marks_and_cr_only_files_parse_into_groups") else {
        return;
    };
    let mut with_mark = 0;
    let mut cr_only = 0;
    for entry in &corpus.entries {
        let (name, bytes, robots) = (&entry.name, &entry.bytes, &entry.robots);
        let file = robots.file();
        if let Some(rest) = bytes.strip_prefix(BYTE_ORDER_MARK) {
            with_mark += 1;
            assert!(
                !file.groups.is_empty() && !file.rules.is_empty(),
                "{name}: a file with a byte order mark has no groups or no rules"
            );
            // The mark changes nothing: the file without it reads the same.
            assert_eq!(
                Robots::parse(rest).file(),
                file,
                "{name}: the byte order mark changes the parse"
            );
        }
        if bytes.contains(&b'\r') && !bytes.contains(&b'\n') {
            cr_only += 1;
            assert!(
                !file.groups.is_empty() && !file.rules.is_empty(),
                "{name}: a CR-only file has no groups or no rules"
            );
            let breaks = bytes.iter().filter(|&&b| b == b'\r').count();
            let expected = breaks + usize::from(!bytes.ends_with(b"\r"));
            assert_eq!(file.lines as usize, expected, "{name}: CR-only lines");
            // CR reads as LF does.
            let with_lf: Vec<u8> = bytes
                .iter()
                .map(|&b| if b == b'\r' { b'\n' } else { b })
                .collect();
            assert_eq!(
                Robots::parse(&with_lf).file(),
                file,
                "{name}: CR and LF read differently"
            );
        }
    }
    println!("{with_mark} files with a byte order mark, {cr_only} CR-only files");
    if corpus.shared {
        assert!(with_mark > 0, "the shared corpus has files with a BOM");
        assert!(cr_only > 0, "the shared corpus has CR-only files");
    } else if with_mark == 0 || cr_only == 0 {
        println!("note: this corpus lacks a BOM file or a CR-only file");
    }
}

/// Queries `robots` with crawler names it uses and paths derived from its rules, comparing
/// each verdict with the reference run on the groups as parsed. Returns the differences.
fn query_against_reference(
    name: &str,
    robots: &Robots,
    seed: u64,
    queries: &mut usize,
) -> Vec<String> {
    let mut failures = Vec::new();
    let reference = RefFile::from_parsed(robots.file());
    let mut rng = Rng::new(seed);
    let mut named: Vec<&str> = robots.agents().collect();
    named.sort_unstable();
    let mut agents = vec!["crawlgate-test"];
    while agents.len() <= AGENTS_PER_FILE && !named.is_empty() {
        let index = rng.below(named.len());
        agents.push(named.swap_remove(index));
    }
    let file = robots.file();
    let all: Vec<&str> = file
        .rules
        .iter()
        .map(|rule| rule.pattern.as_str())
        .collect();
    for token in agents {
        let agent = reference::vary_agent(&mut rng, token);
        // Paths near the rules that apply to this crawler, and near any rule of the file.
        let own: Vec<&str> = robots
            .groups_for(&agent)
            .iter()
            .flat_map(|&group| file.groups[group].rules.iter())
            .map(|&rule| file.rules[rule].pattern.as_str())
            .collect();
        for query in 0..DERIVED_PATHS + RANDOM_PATHS {
            let patterns = if rng.chance(75) { &own } else { &all };
            let path = if query < RANDOM_PATHS || patterns.is_empty() {
                reference::random_path(&mut rng)
            } else {
                let pattern = *rng.pick(patterns);
                reference::derive_path(&mut rng, pattern)
            };
            let url = reference::url_for(&mut rng, &path);
            *queries += 1;
            if let Err(difference) = reference::compare(robots, &reference, &agent, &url, &path) {
                failures.push(format!("{name}: {difference}"));
            }
            // The work budget bounds crafted queries only: no real one runs out of it.
            let normal = reference::normalize(path.as_bytes());
            let judged = normal.len().max(path.len()) <= MAX_JUDGED_PATH;
            if judged && robots.check(&agent, &url).reason == Reason::OverBudget {
                let start: String = url.chars().take(60).collect();
                let octets = url.len();
                failures.push(format!(
                    "{name}: {agent:?}, a {octets}-octet url {start:?}…, is over the work budget"
                ));
            }
        }
    }
    failures
}

fn assert_no_failures(failures: &[String], queries: usize) {
    assert!(
        failures.is_empty(),
        "{} of {queries} verdicts differ from the reference:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    println!("{queries} verdicts agree with the reference");
}

#[test]
fn verdicts_agree_with_the_reference() {
    let Some(corpus) = corpus("verdicts_agree_with_the_reference") else {
        return;
    };
    let mut failures = Vec::new();
    let mut queries = 0;
    for (number, entry) in corpus.entries.iter().enumerate() {
        if entry.robots.file().bytes <= LARGE {
            let seed = 0x00C0_FFEE ^ number as u64;
            failures.extend(query_against_reference(
                &entry.name,
                &entry.robots,
                seed,
                &mut queries,
            ));
        }
    }
    assert_no_failures(&failures, queries);
}

/// The files over [`LARGE`], read with the default limit and with a 4 MiB limit, queried like
/// the others.
///
/// A regression test: on `environment.sa.gov.au` an earlier matcher aborted the process. When a
/// large group's lazy DFA gave up, `meta::Regex` fell back to its PikeVM, whose cache holds
/// (NFA states × 2 × patterns) slots: 30 GB for the first 512 KiB of that file (3830 rules, the
/// path `/$5d334bfd-e60f-405d-9957-4d69b87c65ba$/Find_a_Park/Browse_by_region/Adelaide/`
/// `cobbler-creek-recreation-park/see-and-do/playground`, one of its own rules),
/// 463 GB for all of it (16571 rules, the path `/%zz/é`).
#[test]
fn large_files_agree_with_the_reference() {
    let Some(corpus) = corpus("large_files_agree_with_the_reference") else {
        return;
    };
    let mut failures = Vec::new();
    let mut queries = 0;
    for (number, entry) in corpus.entries.iter().enumerate() {
        if content(&entry.bytes).len() <= LARGE {
            continue;
        }
        let huge = Robots::parse_with(
            &entry.bytes,
            Options {
                max_bytes: HUGE_LIMIT,
            },
        );
        for (limit, robots) in [(DEFAULT_MAX_BYTES, &entry.robots), (HUGE_LIMIT, &huge)] {
            println!("{} (limit {limit}): querying", entry.name);
            for agent in ["crawlgate-test", "Googlebot", ""] {
                for url in ["/", "/robots.txt", "https://example.com/a?b#c", "/%zz/é"] {
                    robots.check(agent, url);
                }
            }
            let seed = 0x00C0_FFEE ^ number as u64 ^ limit as u64;
            failures.extend(query_against_reference(
                &entry.name,
                robots,
                seed,
                &mut queries,
            ));
        }
    }
    assert_no_failures(&failures, queries);
}

/// The same regression without the corpus: one group of 3000 plain rules of about 126 bytes
/// (a 380 KB file, within the default parse limit), queried with one of its own paths.
#[test]
fn a_group_of_3000_long_rules_answers_without_exhausting_memory() {
    let mut rng = Rng::new(1);
    let mut text = String::from("User-agent: *\n");
    let mut patterns = Vec::new();
    for number in 0..3000 {
        let letters: String = (0..120)
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect();
        let pattern = format!("/{number}/{letters}");
        text.push_str(&format!("Disallow: {pattern}\n"));
        patterns.push(pattern);
    }
    let robots = Robots::parse(text.as_bytes());
    assert_eq!(robots.file().rules.len(), 3000);
    let path = format!("{}/x", patterns[1500]);
    let verdict = robots.check("crawlgate-test", &path);
    assert!(!verdict.allowed);
    assert_eq!(verdict.rule.map(|rule| rule.line), Some(1502));
}

/// RFC 9309 §2.2.4 on real files: a crawl-delay between user-agent lines does not end the group.
/// aviation-safety.net names Yandex above `Crawl-delay: 10` and FemtosearchBot above
/// `Disallow: /`; sgppto names SemrushBot the same way. Google reads one group each time.
#[test]
fn real_files_that_put_a_crawl_delay_between_agents() {
    let Some(corpus) = corpus("real_files_that_put_a_crawl_delay_between_agents") else {
        return;
    };
    if !corpus.shared {
        return;
    }
    let find = |part: &str| {
        corpus
            .entries
            .iter()
            .find(|entry| entry.name.contains(part))
            .map(|entry| &entry.robots)
    };
    let aviation = find("aviation-safety").expect("aviation-safety.net is in the shared corpus");
    let yandex = aviation.check_exact("Yandex", "/database/");
    assert!(!yandex.allowed, "{yandex:?}");
    assert_eq!(yandex.rule.map(|rule| rule.pattern.as_str()), Some("/"));
    assert_eq!(
        aviation.crawl_delay("FemtosearchBot"),
        Some(std::time::Duration::from_secs(10))
    );
    // `User-agent: SemrushBot / Crawl-delay: 60 / User-agent: SemrushBot-BA / User-agent: * /
    // Disallow: /events/action~posterboard/ …`: one group, rules and delay shared.
    let sgppto = find("sgppto").expect("sgppto is in the shared corpus");
    let semrush = sgppto.check_exact("SemrushBot", "/events/action~posterboard/");
    assert!(!semrush.allowed, "{semrush:?}");
    assert_eq!(semrush.group_lines, &[3]);
    assert_eq!(
        sgppto.crawl_delay("AnyBot"),
        Some(std::time::Duration::from_secs(60))
    );
}

/// A managed block on every real file: the crawlers it names are disallowed everywhere, and
/// every other crawler the file names (and one it does not) is judged exactly as by the
/// origin's file, on paths made from the file's own rules. Both are read whole (no parse limit),
/// so that the block's length cannot move the cut.
#[test]
fn a_managed_block_changes_only_the_crawlers_it_names() {
    use crawlgate::managed::{Choice, Managed};
    let Some(corpus) = corpus("a_managed_block_changes_only_the_crawlers_it_names") else {
        return;
    };
    let managed = Managed {
        categories: Vec::new(),
        crawlers: vec![
            ("GPTBot".into(), Choice::Disallow),
            ("CCBot".into(), Choice::Disallow),
        ],
        content_signal: Some("search=yes, ai-train=no".into()),
    };
    let disallowed = managed.disallowed(&crawlgate::catalog::Catalog::default());
    let whole = Options {
        max_bytes: usize::MAX,
    };
    let mut checked = 0usize;
    for entry in &corpus.entries {
        let origin = Robots::parse_with(&entry.bytes, whole);
        let composed = managed.compose(&entry.bytes, &disallowed);
        let robots = Robots::parse_with(&composed.text, whole);
        let paths: Vec<String> = origin
            .file()
            .rules
            .iter()
            .take(300)
            .map(|rule| {
                rule.pattern
                    .replace('*', "x")
                    .trim_end_matches('$')
                    .to_owned()
            })
            .filter(|path| path.starts_with('/'))
            .chain(["/".to_owned(), "/some/page.html".to_owned()])
            .collect();
        let mut others: Vec<&str> = origin
            .agents()
            .filter(|agent| {
                !agent.eq_ignore_ascii_case("gptbot") && !agent.eq_ignore_ascii_case("ccbot")
            })
            .take(10)
            .collect();
        others.push("crawlgate-test");
        for path in &paths {
            for managed in ["GPTBot", "CCBot"] {
                assert!(
                    !robots.is_allowed(managed, path) || path.starts_with("/robots.txt"),
                    "{}: {managed} allowed {path}",
                    entry.name
                );
            }
            for agent in &others {
                assert_eq!(
                    robots.is_allowed(agent, path),
                    origin.is_allowed(agent, path),
                    "{}: {agent} {path}",
                    entry.name
                );
                checked += 1;
            }
        }
        assert!(
            robots.problems().len() <= origin.problems().len(),
            "{}: the composition added problems",
            entry.name
        );
    }
    println!("{checked} verdicts of crawlers the block does not name, unchanged");
}
