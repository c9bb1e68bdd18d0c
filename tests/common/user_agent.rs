//! The User-Agent classifier's properties, checked by the `user_agent` fuzz target and its
//! regression tests: a naive reading of what a header must be classified as, given where the
//! header reader ([`grammar::read`]) says the client names itself.
//!
//! Split the header into its maximal runs of `[A-Za-z_-]` (a known token matches only such a
//! whole run), and look each up case-insensitively among the classifier's tokens. A token
//! *counts* where it lies inside one of the reader's stretches and, without looking at signals,
//! its `Matching` lets it: in any stretch (`Anywhere`), or as the header's first product
//! (`FirstProduct`), when the rest of its name follows it.
//! - a `Crawler` is a whole run that is a known token inside a stretch, never a `Never` one, and
//!   a `FirstProduct` one only at the first product; it is at least as long as every token that
//!   counts;
//! - `Unnamed` and `Person` mean no token counts; `Unnamed` needs a crawler signal: a crawler
//!   word's raw material or one of the signals the reader found.

use crawlgate::agent::grammar::{self, Place};
use crawlgate::agent::{is_token_byte, Classifier, KnownAgent, Matching, Who};

/// The maximal runs of token bytes, with where they start.
fn runs(header: &[u8]) -> Vec<(usize, &[u8])> {
    let mut found = Vec::new();
    let mut start = 0;
    for run in header.split(|&b| !is_token_byte(b)) {
        if !run.is_empty() {
            found.push((start, run));
        }
        start += run.len() + 1;
    }
    found
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle))
}

/// Where the rest of `agent`'s name ends after its token's run at `end`, if it follows up to a
/// name's end.
fn tail_end(header: &[u8], end: usize, agent: &KnownAgent) -> Option<usize> {
    let tail = &agent.name.as_bytes()[agent.token.len()..];
    let follows = header
        .get(end..end + tail.len())
        .is_some_and(|after| after.eq_ignore_ascii_case(tail))
        && header
            .get(end + tail.len())
            .is_none_or(|&b| !(is_token_byte(b) || b.is_ascii_digit()));
    follows.then_some(end + tail.len())
}

/// Classifies `header` and checks the answer against the naive reading; returns the crawler's
/// token, `"unnamed"` or `"person"`.
pub fn check(classifier: &Classifier, header: &[u8]) -> String {
    let reading = grammar::read(header);
    let place_of = |start: usize, end: usize| {
        reading
            .spans
            .iter()
            .find(|span| span.start <= start && end <= span.end)
            .map(|span| span.place)
    };
    let known = |run: &[u8]| {
        classifier
            .agents()
            .iter()
            .position(|agent| agent.token.as_bytes().eq_ignore_ascii_case(run))
    };
    let runs = runs(header);
    // The longest name among the tokens that count without a signal.
    let mut longest_counting: Option<usize> = None;
    for &(start, run) in &runs {
        let Some(index) = known(run) else { continue };
        let agent = &classifier.agents()[index];
        let Some(end) = tail_end(header, start + run.len(), agent) else {
            continue;
        };
        let counts = match (agent.matching, place_of(start, end)) {
            (_, None) => false,
            (Matching::Anywhere, Some(_)) => true,
            (Matching::FirstProduct, Some(place)) => place == Place::FirstProduct,
            _ => false,
        };
        if counts {
            longest_counting =
                Some(longest_counting.map_or(agent.name.len(), |l| l.max(agent.name.len())));
        }
    }
    let text = String::from_utf8_lossy(header);
    let who = classifier.classify(header);
    match who {
        Who::Crawler(index) => {
            let agent = classifier
                .agents()
                .get(index)
                .unwrap_or_else(|| panic!("row {index} is no agent's: {text:?}"));
            assert!(
                !matches!(agent.matching, Matching::Never | Matching::PersonsApp),
                "{} never classifies: {text:?}",
                agent.token
            );
            let at: Vec<usize> = runs
                .iter()
                .filter(|(_, run)| run.eq_ignore_ascii_case(agent.token.as_bytes()))
                .map(|(start, _)| *start)
                .collect();
            assert!(
                !at.is_empty(),
                "{:?} is not a whole token of {text:?}",
                agent.token
            );
            assert!(
                at.iter()
                    .any(|&start| place_of(start, start + agent.token.len()).is_some()),
                "{:?} is in no place that names the client in {text:?}",
                agent.token
            );
            if agent.matching == Matching::FirstProduct {
                assert!(
                    at.iter()
                        .any(|&start| place_of(start, start + agent.token.len())
                            == Some(Place::FirstProduct)),
                    "{:?} is not the first product of {text:?}",
                    agent.token
                );
            }
            assert!(
                longest_counting.is_none_or(|len| agent.name.len() >= len),
                "{:?} is shorter than a token that counts in {text:?}",
                agent.name
            );
            agent.token.clone()
        }
        other => {
            assert!(
                longest_counting.is_none(),
                "{other:?}, but a known token counts in {text:?}"
            );
            let material = [
                "bot",
                "crawl",
                "spider",
                "scraper",
                "robot",
                "indexer",
                "fetcher",
                "validator",
                "archiver",
            ]
            .iter()
            .any(|word| contains_ignore_case(header, word.as_bytes()))
                || !reading.signals.is_empty();
            if other == Who::Unnamed {
                assert!(material, "unnamed without a crawler signal in {text:?}");
                "unnamed".into()
            } else {
                "person".into()
            }
        }
    }
}
