//! The conformance vectors taken from the source notes (RFC 9309 and Google's documentation),
//! copied from `shared/conformance/seed_vectors.jsonl` so that the project's tests stand alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crawlgate::Robots;
use serde_json::Value;

#[test]
fn every_seed_vector_passes() {
    let vectors = include_str!("fixtures/seed_vectors.jsonl");
    let mut failures = Vec::new();
    let mut count = 0;
    for line in vectors.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let text = case["robots"].as_str().unwrap();
        let agent = case["agent"].as_str().unwrap();
        let url = case["url"].as_str().unwrap();
        let expected = case["allowed"].as_bool().unwrap();
        let robots = Robots::parse(text.as_bytes());
        if robots.is_allowed(agent, url) != expected {
            failures.push(format!(
                "{}: {} for {agent} {url}",
                case["id"], case["note"]
            ));
        }
        count += 1;
    }
    assert!(count >= 120, "only {count} vectors were read");
    assert!(failures.is_empty(), "failed:\n{}", failures.join("\n"));
}
