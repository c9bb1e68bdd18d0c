//! Compile time and per-query time of crawlgate's matcher, side by side with `texting_robots` and
//! `robotstxt` (the crates.io port of Google's parser), on a small, a ~150 KiB and a ~500 KiB
//! robots.txt, measured in the same run.
//!
//! The files come from the shared corpus of real sites (`../shared/corpus/real`, or the folder in
//! `CRAWLGATE_CORPUS`); where it is absent, files of the same sizes are generated, so that the
//! benchmark always runs. Run: `cargo bench --bench matcher`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

mod common;
use common::{corpus_file, generated};

/// A robots.txt under test, the agent whose group is the large one, and paths to ask about.
struct Case {
    name: &'static str,
    text: Vec<u8>,
    agent: &'static str,
    paths: Vec<String>,
}

/// Paths that exercise the file: concrete instances of some of its rules, and paths no rule has.
fn paths_for(text: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(text);
    let patterns: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(key, _)| {
            key.trim().eq_ignore_ascii_case("disallow") || key.trim().eq_ignore_ascii_case("allow")
        })
        .map(|(_, value)| value.split('#').next().unwrap_or("").trim())
        .filter(|value| value.starts_with('/'))
        .collect();
    let step = (patterns.len() / 50).max(1);
    let mut paths: Vec<String> = patterns
        .iter()
        .step_by(step)
        .take(50)
        .map(|p| {
            format!(
                "{}page.html?id=7",
                p.trim_end_matches('$').replace('*', "abc")
            )
        })
        .collect();
    for i in 0..50 {
        paths.push(format!("/blog/{}/post-{i}/index.html?ref=home", 2000 + i));
    }
    paths
}

fn cases() -> Vec<Case> {
    let small = corpus_file("Smerity__texting_robots__twitter__robots.txt", usize::MAX)
        .unwrap_or_else(|| generated("User-agent: *\n", 3_000));
    let medium = corpus_file(
        "vladimir-buzuev-org__robots-top-1m__etsy.com__robots.txt",
        usize::MAX,
    )
    .unwrap_or_else(|| generated("User-agent: *\n", 150 * 1024));
    let large = corpus_file(
        "vladimir-buzuev-org__robots-top-1m__gobankingrates.com__robots.txt",
        500 * 1024,
    )
    .unwrap_or_else(|| generated("User-agent: *\n", 500 * 1024));
    [("small", small), ("150KiB", medium), ("500KiB", large)]
        .into_iter()
        .map(|(name, text)| Case {
            name,
            paths: paths_for(&text),
            text,
            agent: "ExampleBot",
        })
        .collect()
}

fn compile(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    group.sample_size(10);
    for case in cases() {
        group.throughput(Throughput::Bytes(case.text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("crawlgate", case.name),
            &case,
            |b, case| b.iter(|| crawlgate::Robots::parse(black_box(&case.text))),
        );
        group.bench_with_input(
            BenchmarkId::new("texting_robots", case.name),
            &case,
            |b, case| {
                b.iter(|| texting_robots::Robot::new(case.agent, black_box(&case.text)).unwrap())
            },
        );
    }
    group.finish();
}

fn query(c: &mut Criterion) {
    let mut group = c.benchmark_group("query");
    group.sample_size(20);
    for case in cases() {
        group.throughput(Throughput::Elements(case.paths.len() as u64));
        let ours = crawlgate::Robots::parse(&case.text);
        group.bench_with_input(
            BenchmarkId::new("crawlgate", case.name),
            &case,
            |b, case| {
                b.iter(|| {
                    case.paths
                        .iter()
                        .filter(|path| ours.is_allowed(case.agent, black_box(path)))
                        .count()
                })
            },
        );
        let theirs = texting_robots::Robot::new(case.agent, &case.text).unwrap();
        group.bench_with_input(
            BenchmarkId::new("texting_robots", case.name),
            &case,
            |b, case| {
                b.iter(|| {
                    case.paths
                        .iter()
                        .filter(|path| theirs.allowed(black_box(path)))
                        .count()
                })
            },
        );
        // robotstxt re-parses the whole file on every query: it has no compiled form.
        let body = String::from_utf8_lossy(&case.text).into_owned();
        group.bench_with_input(
            BenchmarkId::new("robotstxt", case.name),
            &case,
            |b, case| {
                b.iter(|| {
                    case.paths
                        .iter()
                        .filter(|path| {
                            let url = format!("https://example.com{path}");
                            let mut matcher = robotstxt::DefaultMatcher::default();
                            matcher.one_agent_allowed_by_robots(&body, case.agent, black_box(&url))
                        })
                        .count()
                })
            },
        );
    }
    group.finish();
}

/// The lazy DFA's cache capacity on a sweep that visits many states: every rule of a file as a
/// path, as a crawler that walks the whole site would. regex-automata's default (2 MiB) against
/// crawlgate's (8 MiB) and a tight 256 KiB, on the 150 KiB file (it has wildcards: the lazy DFA)
/// and the 500 KiB one (plain paths: the literal fast path, which builds no states).
fn cache_capacity(c: &mut Criterion) {
    let mut group = c.benchmark_group("cache");
    group.sample_size(10);
    for case in cases().into_iter().filter(|case| case.name != "small") {
        let text = String::from_utf8_lossy(&case.text).into_owned();
        let sweep: Vec<String> = text
            .lines()
            .filter_map(|line| line.split_once(':'))
            .filter(|(key, _)| key.trim().eq_ignore_ascii_case("disallow"))
            .map(|(_, value)| format!("{}x", value.trim().trim_end_matches('$').replace('*', "a")))
            .collect();
        group.throughput(Throughput::Elements(sweep.len() as u64));
        for (name, bytes) in [
            ("256KiB", 256 << 10),
            ("2MiB-default", 2 << 20),
            ("8MiB-crawlgate", 8 << 20),
        ] {
            let options = crawlgate::Options {
                lazy_dfa_cache_bytes: bytes,
                ..crawlgate::Options::default()
            };
            let robots = crawlgate::Robots::parse_with(&case.text, options);
            group.bench_function(
                BenchmarkId::new(format!("sweep-{}", case.name), name),
                |b| {
                    b.iter(|| {
                        sweep
                            .iter()
                            .filter(|p| robots.is_allowed(case.agent, black_box(p)))
                            .count()
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, compile, query, cache_capacity);
criterion_main!(benches);
