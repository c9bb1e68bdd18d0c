//! The User-Agent classifier with the embedded catalog, on arbitrary header bytes.
//!
//! `classify` never panics, and its answer is the one a naive reading gives: split the header
//! into its maximal runs of `[A-Za-z_-]` (a known token matches only such a whole run), look each
//! run up case-insensitively among the catalog's tokens, and
//! - a `Crawler` is the longest run that is a catalog token (the first such run in the header
//!   when several have that length), and the identity's index points at that agent;
//! - `Unnamed` means no run is a catalog token and the header contains `bot`, `crawler`,
//!   `spider` or `scraper` (anywhere, case-insensitively);
//! - `Person` means no run is a catalog token and none of those words occurs.
#![no_main]

use crawlgate::agent::{Classifier, Identity};
use crawlgate::catalog::Catalog;
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;
use std::sync::LazyLock;

struct Setup {
    classifier: Classifier,
    /// Lower-cased token → index in `classifier.agents()`.
    tokens: HashMap<String, usize>,
}

static SETUP: LazyLock<Setup> = LazyLock::new(|| {
    let catalog = Catalog::embedded().expect("the embedded catalog loads");
    let classifier = Classifier::new(catalog.known_agents()).expect("the classifier builds");
    let tokens = classifier
        .agents()
        .iter()
        .enumerate()
        .map(|(index, agent)| (agent.token.to_ascii_lowercase(), index))
        .collect();
    Setup { classifier, tokens }
});

const CRAWLER_WORDS: [&[u8]; 4] = [b"bot", b"crawler", b"spider", b"scraper"];

fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'-' || byte == b'_'
}

/// The maximal runs of token bytes.
fn runs(header: &[u8]) -> impl Iterator<Item = &[u8]> {
    header
        .split(|&b| !is_token_byte(b))
        .filter(|run| !run.is_empty())
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle))
}

fuzz_target!(|data: &[u8]| {
    let setup = &*SETUP;
    let identity = setup.classifier.classify(data);

    // The naive reading.
    let mut expected: Option<(usize, &[u8])> = None;
    for run in runs(data) {
        let lower = String::from_utf8_lossy(run).to_ascii_lowercase();
        if let Some(&index) = setup.tokens.get(&lower) {
            if expected.is_none_or(|(_, best)| run.len() > best.len()) {
                expected = Some((index, run));
            }
        }
    }
    let crawler_word = CRAWLER_WORDS
        .iter()
        .any(|word| contains_ignore_case(data, word));

    match (identity, expected) {
        (Identity::Crawler { index, agent }, Some((want, run))) => {
            assert_eq!(
                setup.classifier.agents().get(index),
                Some(agent),
                "index {index} is not the agent's"
            );
            assert!(
                agent.token.as_bytes().eq_ignore_ascii_case(run),
                "classified as {:?}, but the longest whole catalog token is {:?} in {:?}",
                agent.token,
                String::from_utf8_lossy(run),
                String::from_utf8_lossy(data)
            );
            assert_eq!(index, want);
            // The token occurs in the input as a whole token.
            let found = data
                .windows(agent.token.len())
                .enumerate()
                .any(|(start, window)| {
                    window.eq_ignore_ascii_case(agent.token.as_bytes())
                        && (start == 0 || !is_token_byte(data[start - 1]))
                        && data
                            .get(start + agent.token.len())
                            .is_none_or(|&b| !is_token_byte(b))
                });
            assert!(found, "{:?} not found as a whole token", agent.token);
        }
        (Identity::Crawler { agent, .. }, None) => panic!(
            "classified as {:?}, but no catalog token occurs as a whole token in {:?}",
            agent.token,
            String::from_utf8_lossy(data)
        ),
        (other, Some((_, run))) => panic!(
            "classified as {other:?}, but {:?} is a catalog token in {:?}",
            String::from_utf8_lossy(run),
            String::from_utf8_lossy(data)
        ),
        (Identity::Unnamed, None) => assert!(
            crawler_word,
            "unnamed without bot/crawler/spider/scraper in {:?}",
            String::from_utf8_lossy(data)
        ),
        (Identity::Person, None) => assert!(
            !crawler_word,
            "a person, but a crawler word occurs in {:?}",
            String::from_utf8_lossy(data)
        ),
    }
});
