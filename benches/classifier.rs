//! Per-header cost of classifying a User-Agent against the shipped crawler catalog (curated and
//! imported). Every proxied request whose header the worker's memo has not seen pays it once.
//! Run: `cargo bench --bench classifier`.
//!
//! - `classify/<shape>`: named headers, each a shape the reader treats differently (a browser,
//!   phones and in-app browsers whose device fields hold crawler words, apps, a smart TV, known
//!   and unnamed crawlers in each of the places a crawler writes its name), and a 64 KiB header;
//! - `corpus/<name>`: every header of a vendored corpus once per iteration (criterion's time
//!   divided by the count printed beside it is the mean per header);
//! - before the groups, a survey times every vendored header alone (the fastest of a few rounds
//!   of a few calls) and prints the median, the 99th percentile and the worst, and the five
//!   slowest headers; the slowest is then measured by criterion as `classify/slowest-corpus`.
//!
//! Before and after a change: `cargo bench --bench classifier -- --save-baseline before` on
//! the old code, then `cargo bench --bench classifier -- --baseline before` on the new.
//!
//! Instructions, which a shared machine's load does not move: `CLASSIFIER_COUNT=<corpus or
//! case>` classifies that corpus's headers (or that named header, 1,000 times) once and
//! leaves criterion out, so that
//! `valgrind --tool=callgrind --toggle-collect='*count_instructions*' <bench binary> --bench`
//! counts the classifier's instructions alone (`all`: every vendored header).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crawlgate::agent::{Classifier, Who};
use crawlgate::catalog::Catalog;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::time::Instant;

// The vendored corpora's readers, shared with the tests.
#[allow(dead_code)]
#[path = "../tests/common/people.rs"]
mod people;

const HEADERS: [(&str, &str); 16] = [
    (
        "person",
        "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    ),
    (
        "phone",
        "Mozilla/5.0 (Linux; Android 14; Cubot X50) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
    ),
    (
        "phone-cubot",
        "Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
    ),
    (
        "instagram",
        "Mozilla/5.0 (Linux; Android 12; HTC Desire 22 pro Build/SKQ1.211006.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/110.0.5481.153 Mobile Safari/537.36 Instagram 267.0.0.18.93 Android (31/12; 480dpi; 1080x2132; HTC; HTC Desire 22 pro; htc_botdugls; qcom; de_DE; 440638617)",
    ),
    (
        "facebook-ios",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/442.0.0.32.108;FBBV/551114950;FBDV/iPhone14,2;FBMD/iPhone;FBSN/iOS;FBSV/17.1;FBSS/3;FBCR/;FBID/phone;FBLC/de_DE;FBOP/80]",
    ),
    (
        "smart-tv",
        "Mozilla/5.0 (Linux; Android 9; ATV R1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/87.0.4280.101 Safari/537.36 HbbTV/1.5.1 (+DRM;BOTECH;ATV R1;Demo 1.0;;) FVC/5.0 (BOTECH;TVs;)",
    ),
    ("app", "ShopApp/5.1 (Linux; U; Android 14; Pixel 8) okhttp/4.12.0"),
    (
        "app-ios",
        "Viber/12.8.0.1 CFNetwork/1121.2.2 Darwin/19.3.0",
    ),
    (
        "googlebot",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    ),
    (
        "googlebot-smartphone",
        "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.204 Mobile Safari/537.36 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    ),
    (
        "gptbot",
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
    ),
    (
        "new-ai-crawler",
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-Index/1.0; +https://docs.mistral.ai/robots)",
    ),
    ("unnamed", "my-little-crawler/0.1 (+https://example.org)"),
    (
        "unnamed-url",
        "BoardReader Blog Indexer(http://boardreader.com)",
    ),
    (
        "feed-fetcher",
        "Overcast/1.0 Podcast Sync (123 subscribers; feed-id=456789; +http://overcast.fm/)",
    ),
    (
        "storebot",
        "Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36",
    ),
];

/// The vendored corpora, by name (see `tests/fixtures/ua/SOURCE.md` and
/// `tests/fixtures/isbot/SOURCE.md`): every header of each, people's and crawlers' alike.
fn corpora() -> Vec<(&'static str, Vec<String>)> {
    let isbot = |file: &str| -> Vec<String> {
        people::isbot_fixture(file)
            .into_iter()
            .map(|(_, header)| header)
            .collect()
    };
    let apps = |file: &str| -> Vec<String> {
        people::labelled_apps(file)
            .into_iter()
            .map(|(_, header)| header)
            .collect()
    };
    vec![
        (
            "uap-core",
            people::uap_core()
                .into_iter()
                .map(|labelled| labelled.user_agent)
                .collect(),
        ),
        ("user-agents", people::real_traffic()),
        ("isbot-browsers", isbot("browsers.yml")),
        ("crawler-user-agents", people::crawler_instances()),
        ("isbot-crawlers", isbot("crawlers.yml")),
        ("device-detector", apps("device-detector.tsv.gz")),
        ("opawg", apps("opawg.tsv")),
    ]
}

/// Nanoseconds one classification of `header` takes: the fastest of a few rounds of a few
/// calls, which leaves out most of what the machine's other work adds.
fn time_one(classifier: &Classifier, header: &[u8]) -> f64 {
    const CALLS: u32 = 8;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..CALLS {
            black_box(classifier.classify(black_box(header)));
        }
        best = best.min(start.elapsed().as_nanos() as f64 / f64::from(CALLS));
    }
    best
}

/// Times every vendored header alone and prints the distribution; returns the slowest.
fn survey(classifier: &Classifier, corpora: &[(&str, Vec<String>)]) -> String {
    let mut times: Vec<(f64, &str)> = corpora
        .iter()
        .flat_map(|(_, list)| list.iter())
        .map(|header| (time_one(classifier, header.as_bytes()), header.as_str()))
        .collect();
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].0;
    println!(
        "survey: {} headers, each timed alone (fastest of 5 rounds of 8 calls): median {:.0} ns, p99 {:.0} ns, worst {:.0} ns",
        times.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
    for (ns, header) in times.iter().rev().take(5) {
        println!("  {ns:>7.0} ns  {} bytes  {}", header.len(), header);
    }
    times.last().map(|(_, h)| h.to_string()).unwrap_or_default()
}

/// Classifies each header once: what callgrind's `--toggle-collect` counts (see the module's
/// documentation). Returns how many are crawlers, so that nothing is optimised away.
#[inline(never)]
fn count_instructions(classifier: &Classifier, headers: &[&[u8]]) -> usize {
    headers
        .iter()
        .filter(|header| classifier.classify(black_box(header)) != Who::Person)
        .count()
}

fn classify(c: &mut Criterion) {
    let catalog = Catalog::embedded().unwrap();
    let classifier = Classifier::new(catalog.known_agents()).unwrap();
    let corpora = corpora();
    if let Ok(which) = std::env::var("CLASSIFIER_COUNT") {
        let headers: Vec<&[u8]> = match HEADERS.iter().find(|(name, _)| *name == which) {
            Some((_, header)) => vec![header.as_bytes(); 1000],
            None => corpora
                .iter()
                .filter(|(name, _)| which == "all" || *name == which)
                .flat_map(|(_, list)| list.iter().map(|h| h.as_bytes()))
                .collect(),
        };
        let crawlers = count_instructions(&classifier, &headers);
        println!("{which}: {} headers, {crawlers} crawlers", headers.len());
        return;
    }
    // `CLASSIFIER_SURVEY=0` leaves the survey out (for a profile of one case).
    let slowest = if std::env::var_os("CLASSIFIER_SURVEY").is_some_and(|v| v == "0") {
        HEADERS[0].1.to_owned()
    } else {
        survey(&classifier, &corpora)
    };
    let mut group = c.benchmark_group("classify");
    let mut named: Vec<(&str, String)> = HEADERS
        .iter()
        .map(|(name, header)| (*name, header.to_string()))
        .collect();
    named.push(("slowest-corpus", slowest));
    for (name, header) in &named {
        group.throughput(Throughput::Bytes(header.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), header, |b, header| {
            b.iter(|| black_box(classifier.classify(black_box(header.as_bytes()))))
        });
    }
    // The gate alone (`plainly_a_person`: the plain pass, which stops at the first thing that
    // could name a crawler; no reading), for the same headers.
    for (name, header) in &named {
        group.bench_with_input(BenchmarkId::new("gate", name), header, |b, header| {
            b.iter(|| black_box(classifier.plainly_a_person(black_box(header.as_bytes()))))
        });
    }
    let long = format!("{}Googlebot/2.1", "Mozilla/5.0 (a; b; c) ".repeat(3000));
    group.throughput(Throughput::Bytes(long.len() as u64));
    group.bench_function("64KiB-header", |b| {
        b.iter(|| black_box(classifier.classify(black_box(long.as_bytes()))))
    });
    group.finish();

    let mut group = c.benchmark_group("corpus");
    group.sample_size(10);
    for (name, list) in &corpora {
        println!("corpus/{name}: {} headers per iteration", list.len());
        group.throughput(Throughput::Elements(list.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), list, |b, list| {
            b.iter(|| {
                for header in list {
                    black_box(classifier.classify(black_box(header.as_bytes())));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, classify);
criterion_main!(benches);
