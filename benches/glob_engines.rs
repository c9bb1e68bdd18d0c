//! How one glob rule is best checked against a path, measured for `docs/decisions/matcher.md`:
//! one regex-automata automaton per glob (`meta::Regex`, anchored, with size limits: it runs a
//! lazy DFA, one-pass DFA, bounded backtracker or PikeVM, each linear in the path) against the
//! matcher's own check (each piece at its first place after the one before, memchr's substring
//! search, also linear). On the globs of every corpus file, each checked against the paths made
//! from its own file's rules, and on the two shapes made mostly of globs: the time to compile
//! every glob, the heap each engine keeps, and the time per check. Both must agree on every
//! check, or the benchmark stops. Run: `cargo bench --no-default-features --bench glob_engines`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crawlgate::robots::path;
use criterion::{Criterion, Throughput};
use memchr::memmem::Finder;
use regex_automata::meta::{self, Regex};
use regex_automata::{util::syntax, Anchored, Input};
use std::hint::black_box;
use std::time::Duration;

mod common;
#[allow(dead_code)]
#[path = "../tests/common/rng.rs"]
mod rng;
#[allow(dead_code)]
#[path = "../tests/common/shapes.rs"]
mod shapes;

/// A glob as the matcher checks it: first piece, inner pieces, and the last when it ends in `$`.
struct Pieces {
    first: Vec<u8>,
    middle: Vec<Finder<'static>>,
    last: Option<Vec<u8>>,
}

impl Pieces {
    fn new(normalized: &[u8]) -> Pieces {
        let (body, anchored) = match normalized.strip_suffix(b"$") {
            Some(body) => (body, true),
            None => (normalized, false),
        };
        let mut pieces: Vec<&[u8]> = body.split(|&b| b == b'*').collect();
        let last = if anchored { pieces.pop() } else { None };
        let first = pieces.remove(0).to_vec();
        Pieces {
            first,
            middle: pieces
                .into_iter()
                .filter(|piece| !piece.is_empty())
                .map(|piece| Finder::new(piece).into_owned())
                .collect(),
            last: last.map(<[u8]>::to_vec),
        }
    }

    fn matches(&self, path: &[u8]) -> bool {
        let last = self.last.as_deref().unwrap_or_default();
        if !path.starts_with(&self.first)
            || path.len() < self.first.len() + last.len()
            || !path.ends_with(last)
        {
            return false;
        }
        let end = path.len() - last.len();
        let mut at = self.first.len();
        for finder in &self.middle {
            match finder.find(&path[at..end]) {
                Some(found) => at += found + finder.needle().len(),
                None => return false,
            }
        }
        true
    }
}

/// The regular expression of a normalised glob: `*` any run of octets, a final `$` the end,
/// every other octet itself; matched from the path's first octet.
fn regex(normalized: &[u8]) -> Regex {
    let (body, anchored) = match normalized.strip_suffix(b"$") {
        Some(body) => (body, true),
        None => (normalized, false),
    };
    let mut pattern = String::from("(?s-u)");
    for &octet in body {
        if octet == b'*' {
            pattern.push_str(".*");
        } else {
            pattern.push_str(&format!("\\x{octet:02X}"));
        }
    }
    if anchored {
        pattern.push('$');
    }
    Regex::builder()
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .configure(
            meta::Config::new()
                .utf8_empty(false)
                .nfa_size_limit(Some(1 << 20))
                .dfa_size_limit(Some(1 << 20))
                .hybrid_cache_capacity(1 << 20),
        )
        .build(&pattern)
        .unwrap()
}

/// Globs of one file (normalised), and the paths to check them against (normalised).
struct File {
    globs: Vec<Vec<u8>>,
    paths: Vec<Vec<u8>>,
}

/// A normalised pattern with a `*` before its last literal octet: what the matcher checks as a
/// glob (`/a*` and `/a*$` are prefixes).
fn is_glob(normalized: &[u8]) -> bool {
    let body = normalized.strip_suffix(b"$").unwrap_or(normalized);
    let end = body.iter().rposition(|&b| b != b'*').map_or(0, |i| i + 1);
    body[..end].contains(&b'*')
}

fn file(text: &[u8], paths: usize) -> File {
    let robots = crawlgate::Robots::parse(text);
    let mut globs: Vec<Vec<u8>> = robots
        .file()
        .rules
        .iter()
        .map(|rule| path::normalize_pattern(rule.pattern.as_bytes()).into_owned())
        .filter(|pattern| is_glob(pattern))
        .collect();
    globs.sort();
    globs.dedup();
    let paths = shapes::paths_from_rules(text, paths)
        .iter()
        .map(|p| path::normalize(path::path_and_query(p).as_bytes()).into_owned())
        .collect();
    File { globs, paths }
}

fn sets() -> Vec<(&'static str, Vec<File>)> {
    let dir = common::corpus_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with("robots.txt"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let corpus: Vec<File> = names
        .iter()
        .filter_map(|name| common::corpus_file(name, crawlgate::robots::DEFAULT_MAX_BYTES))
        .map(|text| file(&text, 400))
        .filter(|file| !file.globs.is_empty())
        .collect();
    vec![
        ("corpus", corpus),
        (
            "synthetic-third-wildcards",
            vec![file(&shapes::single_group_third_wildcards().text, 100)],
        ),
        (
            "many-wildcards",
            vec![file(&shapes::many_wildcards().text, 20)],
        ),
    ]
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    for (name, files) in sets() {
        let globs: usize = files.iter().map(|f| f.globs.len()).sum();
        let checks: u64 = files
            .iter()
            .map(|f| (f.globs.len() * f.paths.len()) as u64)
            .sum();
        let regexes: Vec<Vec<Regex>> = files
            .iter()
            .map(|f| f.globs.iter().map(|g| regex(g)).collect())
            .collect();
        let pieces: Vec<Vec<Pieces>> = files
            .iter()
            .map(|f| f.globs.iter().map(|g| Pieces::new(g)).collect())
            .collect();
        let mut agreed = 0;
        for ((file, regexes), pieces) in files.iter().zip(&regexes).zip(&pieces) {
            for path in &file.paths {
                for (regex, glob) in regexes.iter().zip(pieces) {
                    let input = Input::new(path).anchored(Anchored::Yes);
                    assert_eq!(regex.is_match(input), glob.matches(path), "{name}");
                    agreed += 1;
                }
            }
        }
        let regex_heap: usize = regexes.iter().flatten().map(Regex::memory_usage).sum();
        println!(
            "{name}: {} files, {globs} globs, {agreed} checks agreed; regex-automata keeps {:.1} MiB after them",
            files.len(),
            regex_heap as f64 / 1048576.0
        );
        let mut group = criterion.benchmark_group(format!("globs/{name}"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        group.throughput(Throughput::Elements(globs as u64));
        group.bench_function("compile/regex-automata", |b| {
            b.iter(|| {
                for file in &files {
                    for glob in &file.globs {
                        black_box(regex(glob));
                    }
                }
            })
        });
        group.bench_function("compile/pieces", |b| {
            b.iter(|| {
                for file in &files {
                    for glob in &file.globs {
                        black_box(Pieces::new(glob));
                    }
                }
            })
        });
        group.throughput(Throughput::Elements(checks));
        group.bench_function("check/regex-automata", |b| {
            b.iter(|| {
                let mut matched = 0;
                for (file, regexes) in files.iter().zip(&regexes) {
                    for path in &file.paths {
                        for regex in regexes {
                            let input = Input::new(black_box(path)).anchored(Anchored::Yes);
                            matched += usize::from(regex.is_match(input));
                        }
                    }
                }
                matched
            })
        });
        group.bench_function("check/pieces", |b| {
            b.iter(|| {
                let mut matched = 0;
                for (file, pieces) in files.iter().zip(&pieces) {
                    for path in &file.paths {
                        for glob in pieces {
                            matched += usize::from(glob.matches(black_box(path)));
                        }
                    }
                }
                matched
            })
        });
        group.finish();
    }
    criterion.final_summary();
}
