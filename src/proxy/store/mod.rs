//! The state store: what crawlgate remembers about crawlers between requests — crawl-delay
//! slots and robots.txt fetches ([`super::politeness`]), reverse-DNS outcomes
//! ([`super::verify::dns`]) and the signatures used ([`super::verify::signature::reuse`]) —
//! behind one trait, [`StateStore`], with two implementations:
//!
//! - [`memory::MemoryStore`] (no `state:` key): bounded caches in this process, as a single
//!   instance needs;
//! - [`redis::RedisStore`] (`state: {redis: URL}`): a Redis or Valkey server every instance of a
//!   fleet shares, so that a crawler alternating between instances is held to one crawl-delay
//!   and a robots.txt fetch through one instance counts on all. It keeps a `MemoryStore` of its
//!   own that every answer is copied into, and decides from it whenever the store fails or is
//!   slower than the budget: the store can be down, slow or wiped and no request is refused for
//!   it.
//!
//! People's requests never reach the store; a crawler's request asks it at most once
//! ([`StateStore::visit`] reads the robots.txt fetch and updates the crawl-delay slot in one
//! round trip).

pub mod memory;
pub mod redis;

use super::politeness::{PaceQuery, Subject, Visit};
use super::verify::dns::DnsOutcome;
use super::verify::signature::reuse::{Digest, SignatureUse};
use async_trait::async_trait;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Whose reverse-DNS outcome: the address and the crawler's lower-cased token.
pub type DnsKey = (IpAddr, Arc<str>);

/// How many crawlers and clients this instance remembers, by kind (each bounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Entries {
    /// Crawl-delay slots.
    pub crawl_delay: u64,
    /// robots.txt fetches.
    pub robots_fetch: u64,
    /// Reverse-DNS outcomes.
    pub dns: u64,
    /// Signature uses (nonces, and nonce-less signatures with their holders).
    pub signature_uses: u64,
}

/// Crawl-delay slots, robots.txt fetches and reverse-DNS outcomes, wherever they are kept.
/// Every method answers: a store that cannot be reached answers from this instance's memory.
#[async_trait]
pub trait StateStore: Send + Sync + std::fmt::Debug {
    /// A crawler's request for anything but robots.txt: when `subject` last fetched robots.txt
    /// on `site`, and, when `pace` is asked and applies, its crawl-delay verdict. When `record`,
    /// a request within the delay takes the next slot; otherwise (explain) nothing changes.
    async fn visit(
        &self,
        site: &Arc<str>,
        subject: &Subject,
        pace: Option<PaceQuery>,
        record: bool,
    ) -> Visit;

    /// Remembers that `subject` fetched robots.txt on `site` at `at`.
    async fn robots_fetched(&self, site: &Arc<str>, subject: &Subject, at: SystemTime);

    /// What this instance remembers of a reverse-DNS verification (no round trip): the request
    /// path asks this first.
    fn recall_dns(&self, key: &DnsKey) -> Option<DnsOutcome>;

    /// What any instance learned of it (a round trip to a shared store, whose answer is then
    /// remembered here too); asked before a lookup, so that a fleet resolves each address once.
    async fn lookup_dns(&self, key: &DnsKey) -> Option<DnsOutcome>;

    /// Remembers an outcome for `ttl`, for every instance.
    async fn remember_dns(&self, key: &DnsKey, outcome: &DnsOutcome, ttl: Duration);

    /// Whether a valid signature may be accepted for `holder` (the client, site and
    /// User-Agent, [`super::verify::signature::reuse::holder`]): its first use, or a nonce-less
    /// signature used again by the holder that first used it. Remembers the use. A shared
    /// store answers for every instance, listed directories only; when it cannot answer within
    /// the budget, the instance's own memory does.
    async fn use_signature(&self, signature: &SignatureUse, holder: &Digest) -> bool;

    /// Claims the charge of one signed request for this instance (pay per crawl, keyed as
    /// [`crate::proxy::ledger::Charge`] says), remembered until `until` (seconds since the
    /// epoch): `Ok(true)` when no instance charged it before, `Ok(false)` when one did. A
    /// shared store that cannot answer within the budget gives `Err`: the charge is then not
    /// made (charging twice is worse than charging later). This process's memory answers
    /// `Ok(true)`: the ledger remembers its own charges.
    async fn claim_charge(&self, id: &Digest, until: i64) -> Result<bool, String>;

    /// Gives back a claim whose charge could not be recorded.
    async fn release_charge(&self, id: &Digest);

    /// Hands one ledger line (JSON, with its line break) to the fleet: a shared store appends
    /// it to the `crawlgate:ledger` stream, where every instance's charges meet.
    async fn record_charge(&self, line: &[u8]);

    /// How many entries this instance's memory holds.
    fn entries(&self) -> Entries;

    /// `Ok`, or why the instance decides from its own memory for now (shown in `/healthz` as
    /// degraded: requests are still answered).
    fn health(&self) -> Result<(), String>;
}

/// The limits of the instance's own memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryLimits {
    /// Crawlers and clients remembered, per kind of politeness state.
    pub max_tracked: u64,
    /// How long a robots.txt fetch is remembered (the longer of the read window and grace).
    pub remember_fetches: Duration,
    /// Reverse-DNS outcomes remembered.
    pub dns_entries: u64,
    /// Signature uses of listed directories remembered (`verification.signatures.nonces`).
    pub signature_uses: u64,
    /// Signature uses of unlisted directories remembered, apart
    /// (`verification.signatures.unlisted_nonces`).
    pub unlisted_signature_uses: u64,
}

/// The store the settings name: Redis or Valkey with `state: {redis: URL}`, else this
/// process's memory. Politeness, reverse-DNS and signature memory are bounded by
/// `politeness.max_tracked`, `verification.dns.cache_size` and `verification.signatures.nonces`
/// (and `unlisted_nonces`); read once at start, like the store itself.
pub fn open(
    settings: &crate::proxy::config::Settings,
    metrics: &crate::proxy::metrics::Metrics,
) -> Result<Arc<dyn StateStore>, redis::StoreError> {
    let politeness = &settings.politeness;
    let limits = MemoryLimits {
        max_tracked: politeness.max_tracked,
        remember_fetches: politeness.robots_read_window.max(politeness.grace),
        dns_entries: settings.verification.dns.cache_size,
        signature_uses: settings.verification.signatures.nonces,
        unlisted_signature_uses: settings.verification.signatures.unlisted_nonces,
    };
    let Some(state) = &settings.state else {
        return Ok(Arc::new(memory::MemoryStore::new(limits)));
    };
    let store_metrics = redis::StoreMetrics {
        errors: metrics.state_store_errors.clone(),
        up: metrics.state_store_up.with_label_values(&["redis"]),
    };
    let store = redis::RedisStore::new(&state.redis, state.budget, limits, store_metrics)?;
    log::info!(
        "state store: {} (budget {} ms): crawl-delay, robots.txt fetches and reverse DNS are shared",
        redis::shown(&state.redis),
        state.budget.as_millis()
    );
    Ok(Arc::new(store))
}
