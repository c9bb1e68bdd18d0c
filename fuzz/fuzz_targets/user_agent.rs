//! The User-Agent classifier with the embedded catalog, on arbitrary header bytes.
//!
//! `classify` never panics, and its answer agrees with the naive reading in
//! `tests/common/user_agent.rs`: a crawler is a whole run of `[A-Za-z_-]` that is a catalog token
//! where its matching lets it count, the longest of those; with no such run, an unnamed crawler
//! needs a crawler signal's raw material and a person is anything else.
#![no_main]

use crawlgate::agent::Classifier;
use crawlgate::catalog::Catalog;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

#[path = "../../tests/common/user_agent.rs"]
mod user_agent;

static CLASSIFIER: LazyLock<Classifier> = LazyLock::new(|| {
    let catalog = Catalog::embedded().expect("the embedded catalog loads");
    Classifier::new(catalog.known_agents()).expect("the classifier builds")
});

fuzz_target!(|data: &[u8]| {
    user_agent::check(&CLASSIFIER, data);
});
