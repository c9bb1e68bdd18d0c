//! Per-header cost of classifying a User-Agent against the shipped crawler catalog (curated and
//! imported): a person's browser, a phone whose model holds a crawler word, an app, known
//! crawlers, an unnamed crawler and a long header. Every proxied request whose header the
//! worker's memo has not seen pays it once. Run: `cargo bench --bench classifier`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crawlgate::agent::Classifier;
use crawlgate::catalog::Catalog;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

const HEADERS: [(&str, &str); 6] = [
    (
        "person",
        "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
    ),
    (
        "phone",
        "Mozilla/5.0 (Linux; Android 14; Cubot X50) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36",
    ),
    ("app", "ShopApp/5.1 (Linux; U; Android 14; Pixel 8) okhttp/4.12.0"),
    (
        "googlebot",
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    ),
    (
        "gptbot",
        "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
    ),
    ("unnamed", "my-little-crawler/0.1 (+https://example.org)"),
];

fn classify(c: &mut Criterion) {
    let catalog = Catalog::embedded().unwrap();
    let classifier = Classifier::new(catalog.known_agents()).unwrap();
    let mut group = c.benchmark_group("classify");
    for (name, header) in HEADERS {
        group.throughput(Throughput::Bytes(header.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), header, |b, header| {
            b.iter(|| black_box(classifier.classify(black_box(header.as_bytes()))))
        });
    }
    let long = format!("{}Googlebot/2.1", "Mozilla/5.0 (a; b; c) ".repeat(3000));
    group.throughput(Throughput::Bytes(long.len() as u64));
    group.bench_function("64KiB-header", |b| {
        b.iter(|| black_box(classifier.classify(black_box(long.as_bytes()))))
    });
    group.finish();
}

criterion_group!(benches, classify);
criterion_main!(benches);
