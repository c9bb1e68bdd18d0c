//! Lines per second of `crawlgate audit`'s whole replay — parse, classify, check, aggregate —
//! on a generated, realistic access log: people with browser User-Agents, crawlers from the
//! catalog, unnamed bots, robots.txt fetches; paths drawn from the robots.txt's rules and from
//! elsewhere. Against a small and a ~500 KiB real robots.txt (from `../shared/corpus/real`, or
//! the folder in `CRAWLGATE_CORPUS`; generated stand-ins where it is absent), in the combined
//! and the JSON-lines formats.
//!
//! Run: `cargo bench --bench audit` (criterion reports the throughput in elements = lines).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crawlgate::audit::{replay_bytes, robots_options, Audit, Format};
use crawlgate::catalog::Catalog;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

mod common;
use common::{corpus_file, generated};
#[allow(dead_code)]
#[path = "../tests/common/rng.rs"]
mod rng;
use rng::Rng;

/// Lines in the generated log.
const LINES: usize = 200_000;

/// Concrete paths that the file's rules match: each pattern with its wildcards filled in.
fn rule_paths(robots: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(robots);
    let mut paths: Vec<String> = text
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(key, _)| {
            key.trim().eq_ignore_ascii_case("disallow") || key.trim().eq_ignore_ascii_case("allow")
        })
        .map(|(_, value)| value.split('#').next().unwrap_or("").trim())
        .filter(|value| value.starts_with('/'))
        .map(|p| format!("{}page-1.html", p.trim_end_matches('$').replace('*', "x")))
        .collect();
    if paths.is_empty() {
        paths.push("/private/page.html".into());
    }
    paths
}

/// Browser User-Agents (people), a few hundred distinct ones as in real logs.
fn people_agents() -> Vec<String> {
    let mut agents = Vec::new();
    for version in 110..150 {
        agents.push(format!("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{version}.0.0.0 Safari/537.36"));
        agents.push(format!(
            "Mozilla/5.0 (X11; Linux x86_64; rv:{version}.0) Gecko/20100101 Firefox/{version}.0"
        ));
        agents.push(format!("Mozilla/5.0 (iPhone; CPU iPhone OS 17_{} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", version % 7));
        agents.push(format!("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/{}.1 Safari/605.1.15", version % 20));
    }
    agents
}

/// Crawler User-Agents: catalog crawlers as they announce themselves, and unnamed bots.
fn crawler_agents(catalog: &Catalog) -> (Vec<String>, Vec<String>) {
    let known = catalog
        .bots
        .iter()
        .step_by(3)
        .map(|bot| {
            format!(
                "Mozilla/5.0 (compatible; {}/2.1; +https://bots.example/{})",
                bot.token,
                bot.token.to_ascii_lowercase()
            )
        })
        .collect();
    let unnamed = (0..40)
        .map(|i| format!("Mozilla/5.0 (compatible; Zq{i}xBot/1.{i})"))
        .collect();
    (known, unnamed)
}

/// The log: `LINES` lines, about 60% people, 30% catalog crawlers, 7% unnamed bots and 3%
/// robots.txt fetches, a second apart every few lines; half the paths hit the file's rules.
/// With `distinct`, every path is asked for once only (a unique query), which defeats the
/// replay's memo of verdicts: the worst case.
fn log(robots: &[u8], catalog: &Catalog, json: bool, distinct: bool) -> Vec<u8> {
    let mut rng = Rng::new(0x5EED);
    let rules = rule_paths(robots);
    let people = people_agents();
    let (known, unnamed) = crawler_agents(catalog);
    let sections = ["blog", "news", "products", "search", "static/css", "img"];
    let mut out = Vec::with_capacity(LINES * 220);
    let start = 1_714_521_600i64; // 2024-05-01T00:00:00Z
    for i in 0..LINES {
        let kind = rng.below(100);
        let agent = match kind {
            0..=59 => rng.pick(&people),
            60..=89 | 97..=99 => rng.pick(&known),
            _ => rng.pick(&unnamed),
        };
        let path = if kind >= 97 {
            "/robots.txt".to_owned()
        } else if distinct {
            let base = if rng.below(2) == 0 {
                rng.pick(&rules).as_str()
            } else {
                "/blog/post.html"
            };
            format!("{base}?v={i}")
        } else if rng.below(2) == 0 {
            rng.pick(&rules).clone()
        } else {
            format!(
                "/{}/{}/item-{}.html?ref={}",
                rng.pick(&sections),
                2000 + rng.below(25),
                rng.below(5000),
                rng.below(10)
            )
        };
        let seconds = start + (i / 3) as i64;
        let ip = format!("203.0.{}.{}", rng.below(256), rng.below(256));
        let status = [200, 200, 200, 304, 404][rng.below(5)];
        let bytes = rng.below(90_000);
        if json {
            let line = serde_json::json!({
                "time": format!("2024-05-01T{:02}:{:02}:{:02}Z", (seconds - start) / 3600 % 24, (seconds - start) / 60 % 60, (seconds - start) % 60),
                "remote_addr": ip,
                "request": format!("GET {path} HTTP/1.1"),
                "status": status,
                "body_bytes_sent": bytes,
                "http_referer": "-",
                "http_user_agent": agent,
            });
            out.extend_from_slice(line.to_string().as_bytes());
        } else {
            let t = seconds - start;
            let stamp = format!(
                "{:02}/May/2024:{:02}:{:02}:{:02} +0000",
                1 + t / 86_400,
                t / 3600 % 24,
                t / 60 % 60,
                t % 60
            );
            out.extend_from_slice(
                format!(
                    "{ip} - - [{stamp}] \"GET {path} HTTP/1.1\" {status} {bytes} \"-\" \"{agent}\""
                )
                .as_bytes(),
            );
        }
        out.push(b'\n');
    }
    out
}

fn replay(c: &mut Criterion) {
    let catalog = Catalog::embedded().unwrap();
    let small = corpus_file("Smerity__texting_robots__twitter__robots.txt", usize::MAX)
        .unwrap_or_else(|| generated("User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\n", 3_000));
    let large = corpus_file(
        "vladimir-buzuev-org__robots-top-1m__gobankingrates.com__robots.txt",
        500 * 1024,
    )
    .unwrap_or_else(|| {
        generated(
            "User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\n",
            500 * 1024,
        )
    });
    let mut group = c.benchmark_group("audit");
    group.sample_size(10);
    group.throughput(Throughput::Elements(LINES as u64));
    for (name, robots) in [("small", &small), ("500KiB", &large)] {
        // As `crawlgate audit` parses it.
        let options = robots_options(crawlgate::robots::DEFAULT_MAX_BYTES);
        let audit = Audit::new(crawlgate::Robots::parse_with(robots, options), &catalog).unwrap();
        let variants = [
            ("combined", false, false),
            ("json", true, false),
            ("combined-distinct-paths", false, true),
        ];
        for (format, json, distinct) in variants {
            let log = log(robots, &catalog, json, distinct);
            // The numbers must be those of a real replay, not of an empty one.
            let report = replay_bytes(&audit, &log, Format::Auto, 10).unwrap();
            assert_eq!((report.lines, report.skipped), (LINES as u64, 0));
            assert!(report.disallowed > 0, "{name}: nothing disallowed");
            group.bench_with_input(BenchmarkId::new(format, name), &log, |b, log: &Vec<u8>| {
                b.iter(|| replay_bytes(&audit, black_box(log), Format::Auto, 10).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
