//! The User-Agent classifier's properties, checked by the `user_agent` fuzz target and its
//! regression tests: a naive reading of what a header must be classified as.
//!
//! Split the header into its maximal runs of `[A-Za-z_-]` (a known token matches only such a
//! whole run), and look each up case-insensitively among the classifier's tokens. A token
//! *counts* where its `Matching` lets it without looking at signals: anywhere (`Anywhere`), or
//! as the header's first product (`FirstProduct`), when the rest of its name follows it.
//! - a `Crawler` is a whole run that is a known token, never a `Never` one, and a
//!   `FirstProduct` one only at the first product; it is at least as long as every token that
//!   counts;
//! - `Unnamed` and `Person` mean no token counts; `Unnamed` needs a crawler signal's raw
//!   material (a crawler word, `://` or `@`).

use crawlgate::agent::{is_token_byte, Classifier, Identity, KnownAgent, Matching};

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

/// Whether the rest of `agent`'s name follows its token's run at `end`, up to a name's end.
fn tail_follows(header: &[u8], end: usize, agent: &KnownAgent) -> bool {
    let tail = &agent.name.as_bytes()[agent.token.len()..];
    header
        .get(end..end + tail.len())
        .is_some_and(|after| after.eq_ignore_ascii_case(tail))
        && header
            .get(end + tail.len())
            .is_none_or(|&b| !(is_token_byte(b) || b.is_ascii_digit()))
}

/// Classifies `header` and checks the answer against the naive reading; returns the crawler's
/// token, `"unnamed"` or `"person"`.
pub fn check(classifier: &Classifier, header: &[u8]) -> String {
    let first = header
        .iter()
        .position(|b| !matches!(b, b' ' | b'\t'))
        .unwrap_or(header.len());
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
        let counts = tail_follows(header, start + run.len(), agent)
            && match agent.matching {
                Matching::Anywhere => true,
                Matching::FirstProduct => start == first,
                _ => false,
            };
        if counts {
            longest_counting =
                Some(longest_counting.map_or(agent.name.len(), |l| l.max(agent.name.len())));
        }
    }
    let text = String::from_utf8_lossy(header);
    match classifier.classify(header) {
        Identity::Crawler { index, agent } => {
            assert_eq!(
                classifier.agents().get(index),
                Some(agent),
                "index {index} is not the agent's"
            );
            assert_ne!(
                agent.matching,
                Matching::Never,
                "{} never classifies: {text:?}",
                agent.token
            );
            let at = runs
                .iter()
                .filter(|(_, run)| run.eq_ignore_ascii_case(agent.token.as_bytes()))
                .map(|(start, _)| *start)
                .collect::<Vec<_>>();
            assert!(
                !at.is_empty(),
                "{:?} is not a whole token of {text:?}",
                agent.token
            );
            if agent.matching == Matching::FirstProduct {
                assert!(
                    at.contains(&first),
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
            let material = ["bot", "crawler", "spider", "scraper", "://", "@"]
                .iter()
                .any(|word| contains_ignore_case(header, word.as_bytes()));
            if other == Identity::Unnamed {
                assert!(material, "unnamed without a crawler signal in {text:?}");
                "unnamed".into()
            } else {
                "person".into()
            }
        }
    }
}
