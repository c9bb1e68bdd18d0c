//! The robots.txt core on every file of the shared corpus and on the synthetic and adversarial
//! shapes (`tests/common/shapes.rs`), side by side with `texting_robots`, in the same run.
//!
//! For each file: compile time (crawlgate `Robots::parse`, texting_robots `Robot::new` for each
//! agent), memory (peak and retained bytes allocated while compiling, counted by this binary's
//! allocator), and query time — 3 agents (the two named by most rules of the file, and one that
//! only `*` applies to) × the file's paths (4,000 made from its own rules), and for the shapes
//! paths as long as any judged (`MAX_JUDGED_PATH`, 8 KiB) on their own: a random one over the
//! shape's alphabet, the paths of `shapes::crafted_long_paths` shaped against the path's handling
//! (crawlgate only), and the random one stretched to pingora's request-header limit (1 MiB, over
//! the work budget at once; crawlgate only). Both engines
//! get the same bytes: files over the parse limit (512 KiB) are cut at the last line end within
//! it, as crawlgate reads them. crawlgate is asked exactly as the RFC reads
//! a path (`check_exact`, one form, like texting_robots) and as the proxy asks (`check`, every
//! form an origin may read).
//!
//! At the end a table is printed from criterion's own estimates: ns per query and µs per compile,
//! the ratio to texting_robots, and the median and worst file. Run:
//! `cargo bench --no-default-features --bench matcher` (a filter such as `-- ipwatchdog` runs a
//! subset; `CRAWLGATE_CORPUS` points at another corpus folder).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

mod common;
#[allow(dead_code)]
#[path = "../tests/common/counting.rs"]
mod counting;
#[allow(dead_code)]
#[path = "../tests/common/rng.rs"]
mod rng;
#[path = "../tests/common/shapes.rs"]
mod shapes;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// A file under test.
struct Case {
    /// `corpus/<site>` or `synthetic/…` / `adversarial/…`.
    name: String,
    text: Vec<u8>,
    agents: Vec<String>,
    paths: Vec<String>,
    rules: usize,
}

const PARSE_LIMIT: usize = crawlgate::robots::DEFAULT_MAX_BYTES;

/// The product tokens named by the most rules of a file, most first.
fn busiest_agents(robots: &crawlgate::Robots) -> Vec<String> {
    let file = robots.file();
    let mut counts: Vec<(usize, &str)> = file
        .groups
        .iter()
        .flat_map(|group| {
            group
                .agents
                .iter()
                .map(move |a| (group.rules.len(), a.as_str()))
        })
        .collect();
    counts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let mut agents: Vec<String> = Vec::new();
    for (_, agent) in counts {
        if !agents.iter().any(|a| a.eq_ignore_ascii_case(agent)) {
            agents.push(agent.to_owned());
        }
        if agents.len() == 2 {
            break;
        }
    }
    agents
}

fn corpus_cases() -> Vec<Case> {
    let dir = common::corpus_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "no corpus at {}: only the generated shapes run",
            dir.display()
        );
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.to_string_lossy().ends_with("robots.txt"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = common::corpus_file(&name, PARSE_LIMIT).unwrap();
            let robots = crawlgate::Robots::parse(&text);
            let mut agents = busiest_agents(&robots);
            agents.push("crawlgate-test".into());
            let short = name
                .trim_end_matches("__robots.txt")
                .rsplit("__")
                .next()
                .unwrap_or(&name)
                .to_owned();
            Case {
                name: format!("corpus/{short}"),
                paths: shapes::paths_from_rules(&text, 4000),
                rules: robots.file().rules.len(),
                text,
                agents,
            }
        })
        .collect()
}

fn shape_cases() -> Vec<Case> {
    shapes::all()
        .into_iter()
        .map(|shape| Case {
            name: shape.name.to_owned(),
            rules: crawlgate::Robots::parse(&shape.text).file().rules.len(),
            text: shape.text,
            agents: shape.agents,
            paths: shape.paths,
        })
        .collect()
}

fn bench_case(c: &mut Criterion, case: &Case) {
    let mut group = c.benchmark_group(&case.name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    group.bench_function("compile/crawlgate", |b| {
        b.iter(|| crawlgate::Robots::parse(black_box(&case.text)))
    });
    group.bench_function("compile/texting_robots", |b| {
        b.iter(|| {
            for agent in &case.agents {
                black_box(texting_robots::Robot::new(agent, black_box(&case.text)).ok());
            }
        })
    });
    // The long path of the shapes is measured on its own (below), not averaged in.
    let paths: Vec<&String> = case.paths.iter().filter(|p| p.len() < LONG).collect();
    let queries = (case.agents.len() * paths.len()) as u64;
    group.throughput(Throughput::Elements(queries));
    let ours = crawlgate::Robots::parse(&case.text);
    for (id, strict) in [
        ("query/crawlgate", false),
        ("query/crawlgate-every-form", true),
    ] {
        group.bench_function(BenchmarkId::from_parameter(id), |b| {
            b.iter(|| {
                let mut allowed = 0;
                for agent in &case.agents {
                    for path in &paths {
                        let verdict = if strict {
                            ours.check(agent, black_box(path))
                        } else {
                            ours.check_exact(agent, black_box(path))
                        };
                        allowed += usize::from(verdict.allowed);
                    }
                }
                allowed
            })
        });
    }
    // The shapes carry a path as long as any judged: the query an attacker would send.
    let long = case.paths.iter().find(|path| path.len() >= LONG);
    if let Some(long) = long {
        let agent = &case.agents[0];
        group.throughput(Throughput::Elements(1));
        group.bench_function("long-path/crawlgate", |b| {
            b.iter(|| ours.check(agent, black_box(long)).allowed)
        });
        if let Ok(robot) = texting_robots::Robot::new(agent, &case.text) {
            group.bench_function("long-path/texting_robots", |b| {
                b.iter(|| robot.allowed(black_box(long)))
            });
        }
        // Paths shaped against the path's own handling (resolution, escapes, the scan), on the
        // same file. texting_robots is left out: it takes up to a minute per query here.
        for (shape, path) in shapes::crafted_long_paths() {
            group.bench_function(format!("long-path/{shape}/crawlgate"), |b| {
                b.iter(|| ours.check(agent, black_box(&path)).allowed)
            });
        }
        // The random path stretched to the request-header limit: over the work budget at once.
        let path = stretched(long, HEADER_LIMIT);
        group.bench_function(AT_HEADER_LIMIT, |b| {
            b.iter(|| ours.check(agent, black_box(&path)).allowed)
        });
        group.throughput(Throughput::Elements(queries));
    }
    let theirs: Vec<texting_robots::Robot> = case
        .agents
        .iter()
        .filter_map(|agent| texting_robots::Robot::new(agent, &case.text).ok())
        .collect();
    if theirs.len() == case.agents.len() {
        group.bench_function("query/texting_robots", |b| {
            b.iter(|| {
                let mut allowed = 0;
                for robot in &theirs {
                    for path in &paths {
                        allowed += usize::from(robot.allowed(black_box(path)));
                    }
                }
                allowed
            })
        });
    }
    group.finish();
}

/// pingora's limit on a request's header, request line included (`MAX_HEADER_SIZE`): the
/// longest path a crawler can send, less room for the rest of the request.
const HEADER_LIMIT: usize = (1 << 20) - 1024;

/// The benchmark of the random long path stretched to the header limit.
const AT_HEADER_LIMIT: &str = "long-path/header-limit/crawlgate";

/// How long a shape's long path is: the longest path judged.
const LONG: usize = crawlgate::robots::MAX_JUDGED_PATH;

/// `path` repeated to `len` octets (the shapes' long paths are ASCII).
fn stretched(path: &str, len: usize) -> String {
    let mut long = path.repeat(len / path.len() + 1);
    long.truncate(len);
    long
}

/// Peak and retained bytes allocated while compiling `text`.
fn compile_memory(text: &[u8]) -> (usize, usize) {
    let (_, peak, retained) = counting::measure(|| crawlgate::Robots::parse(text));
    (peak, retained)
}

/// The mean time in ns of a benchmark, from criterion's `estimates.json`.
fn estimate(group: &str, id: &str) -> Option<f64> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let dir = |s: &str| s.replace(['/', ' '], "_");
    let path = target
        .join("criterion")
        .join(dir(group))
        .join(dir(id))
        .join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    json["mean"]["point_estimate"].as_f64()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn print_table(cases: &[Case], filter: &[String]) {
    println!("\n| file | KiB | rules | crawlgate ns/query | every form | texting_robots ns/query | ratio | compile µs | texting_robots compile µs | peak / retained MiB |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut ours_all = Vec::new();
    let mut worst: (f64, &str) = (0.0, "");
    for case in cases {
        // The filter is criterion's regex; alternatives (`a|b`) are read as substrings.
        let wanted = |f: &String| f.split('|').any(|part| case.name.contains(part));
        if !filter.is_empty() && !filter.iter().any(wanted) {
            continue;
        }
        let short = case.paths.iter().filter(|p| p.len() < LONG).count();
        let queries = (case.agents.len() * short) as f64;
        let per = |id: &str| estimate(&case.name, id).map(|ns| ns / queries);
        let (Some(ours), Some(every)) = (per("query/crawlgate"), per("query/crawlgate-every-form"))
        else {
            continue;
        };
        let theirs = per("query/texting_robots");
        let compile = estimate(&case.name, "compile/crawlgate").map(|ns| ns / 1000.0);
        let their_compile = estimate(&case.name, "compile/texting_robots").map(|ns| ns / 1000.0);
        let (peak, retained) = compile_memory(&case.text);
        ours_all.push(every);
        if every > worst.0 {
            worst = (every, &case.name);
        }
        let show = |v: Option<f64>| v.map_or("—".to_owned(), |v| format!("{v:.0}"));
        println!(
            "| {} | {:.0} | {} | {ours:.0} | {every:.0} | {} | {} | {} | {} | {:.1} / {:.1} |",
            case.name,
            case.text.len() as f64 / 1024.0,
            case.rules,
            show(theirs),
            theirs.map_or("—".to_owned(), |t| format!("{:.1}x", t / ours)),
            show(compile),
            show(their_compile),
            peak as f64 / 1048576.0,
            retained as f64 / 1048576.0,
        );
    }
    if !ours_all.is_empty() {
        println!(
            "\ncrawlgate (every form), per query: median {:.0} ns, worst {:.0} ns ({})",
            median(&mut ours_all),
            worst.0,
            worst.1
        );
    }
    let crafted = shapes::crafted_long_paths();
    let names: Vec<&str> = crafted.iter().map(|(name, _)| *name).collect();
    println!(
        "\n{} KiB paths, µs per query (crawlgate, every form):\n\n| file | random | {} | worst | texting_robots, random | at the header limit |\n|---|---|{}---|---|---|",
        LONG >> 10,
        names.join(" | "),
        "---|".repeat(names.len())
    );
    for case in cases {
        let Some(ours) = estimate(&case.name, "long-path/crawlgate") else {
            continue;
        };
        let theirs = estimate(&case.name, "long-path/texting_robots")
            .map_or("— (does not compile)".to_owned(), |ns| {
                format!("{:.1}", ns / 1000.0)
            });
        let shaped: Vec<Option<f64>> = names
            .iter()
            .map(|name| estimate(&case.name, &format!("long-path/{name}/crawlgate")))
            .collect();
        let worst = shaped
            .iter()
            .flatten()
            .fold(ours, |worst, &ns| worst.max(ns));
        let cells: Vec<String> = shaped
            .iter()
            .map(|ns| ns.map_or("—".to_owned(), |ns| format!("{:.1}", ns / 1000.0)))
            .collect();
        let stretched = estimate(&case.name, AT_HEADER_LIMIT)
            .map_or("—".to_owned(), |ns| format!("{:.1}", ns / 1000.0));
        println!(
            "| {} | {:.1} | {} | {:.1} | {theirs} | {} |",
            case.name,
            ours / 1000.0,
            cells.join(" | "),
            worst / 1000.0,
            stretched
        );
    }
}

fn main() {
    let mut cases = corpus_cases();
    cases.extend(shape_cases());
    let mut criterion = Criterion::default().configure_from_args();
    for case in &cases {
        bench_case(&mut criterion, case);
    }
    criterion.final_summary();
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    print_table(&cases, &filter);
}
