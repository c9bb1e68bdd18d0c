//! The embedded store: bounded caches in this process whose entries expire as soon as they no
//! longer matter. The whole state of a single instance, and the fallback of a shared one.

use super::{DnsKey, Entries, MemoryLimits, StateStore};
use crate::proxy::politeness::{slot, Pace, PaceQuery, Subject, Visit};
use crate::proxy::verify::dns::DnsOutcome;
use crate::proxy::verify::signature::reuse::{Digest, Partition, SignatureUse};
use async_trait::async_trait;
use moka::sync::Cache;
use moka::Expiry;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

type Key = (Arc<str>, Subject);

/// A crawl-delay entry lives until the crawler may come again: then it no longer matters.
struct UntilNextAllowed;

impl Expiry<Key, Instant> for UntilNextAllowed {
    fn expire_after_create(&self, _: &Key, next: &Instant, now: Instant) -> Option<Duration> {
        Some(next.saturating_duration_since(now))
    }

    fn expire_after_update(
        &self,
        _: &Key,
        next: &Instant,
        now: Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(next.saturating_duration_since(now))
    }
}

/// A DNS outcome lives as long as it was given (verified longer than spoofed, a failure briefly).
struct ForItsTtl;

impl Expiry<DnsKey, (DnsOutcome, Duration)> for ForItsTtl {
    fn expire_after_create(
        &self,
        _: &DnsKey,
        value: &(DnsOutcome, Duration),
        _: Instant,
    ) -> Option<Duration> {
        Some(value.1)
    }

    fn expire_after_update(
        &self,
        _: &DnsKey,
        value: &(DnsOutcome, Duration),
        _: Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(value.1)
    }
}

/// A signature use remembered: who first used it (none for a nonce: it is used once) and until
/// when it matters.
#[derive(Debug, Clone, Copy)]
struct Held {
    holder: Option<Digest>,
    until: Instant,
}

/// A signature use lives until the signature expires: then it no longer verifies.
struct UntilItExpires;

impl Expiry<Digest, Held> for UntilItExpires {
    fn expire_after_create(&self, _: &Digest, held: &Held, now: Instant) -> Option<Duration> {
        Some(held.until.saturating_duration_since(now))
    }
}

/// When a use's `until` (seconds since the epoch) comes, by this process's monotonic clock; at
/// least a second from now, so that a use is never forgotten before it is checked again.
fn instant_of(until: i64) -> Instant {
    let now_unix = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let left = u64::try_from(until.saturating_sub(now_unix))
        .unwrap_or(0)
        .max(1);
    // A year at most: `until` comes from a request (bounded by the validity checks already).
    let now = Instant::now();
    now.checked_add(Duration::from_secs(left.min(365 * 24 * 3600)))
        .unwrap_or(now)
}

/// Crawl-delay slots, robots.txt fetches, DNS outcomes and signature uses in this process's
/// memory.
pub struct MemoryStore {
    next_allowed: Cache<Key, Instant>,
    robots_fetched: Cache<Key, SystemTime>,
    dns: Cache<DnsKey, (DnsOutcome, Duration)>,
    /// Signature uses of listed directories.
    listed_uses: Cache<Digest, Held>,
    /// Signature uses of unlisted directories, apart: they can never push a listed one out.
    unlisted_uses: Cache<Digest, Held>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("crawl_delay_entries", &self.next_allowed.entry_count())
            .field("robots_fetch_entries", &self.robots_fetched.entry_count())
            .field("dns_entries", &self.dns.entry_count())
            .field("signature_uses", &self.listed_uses.entry_count())
            .field("unlisted_signature_uses", &self.unlisted_uses.entry_count())
            .finish()
    }
}

impl MemoryStore {
    /// A store within `limits`.
    pub fn new(limits: MemoryLimits) -> MemoryStore {
        MemoryStore {
            next_allowed: Cache::builder()
                .max_capacity(limits.max_tracked)
                .expire_after(UntilNextAllowed)
                .build(),
            robots_fetched: Cache::builder()
                .max_capacity(limits.max_tracked)
                .time_to_live(limits.remember_fetches)
                .build(),
            dns: Cache::builder()
                .max_capacity(limits.dns_entries)
                .expire_after(ForItsTtl)
                .build(),
            listed_uses: Cache::builder()
                .max_capacity(limits.signature_uses)
                .expire_after(UntilItExpires)
                .build(),
            unlisted_uses: Cache::builder()
                .max_capacity(limits.unlisted_signature_uses)
                .expire_after(UntilItExpires)
                .build(),
        }
    }

    fn uses(&self, partition: Partition) -> &Cache<Digest, Held> {
        match partition {
            Partition::Listed => &self.listed_uses,
            Partition::Unlisted => &self.unlisted_uses,
        }
    }

    /// The synchronous form of [`StateStore::use_signature`]: remembers a first use, and
    /// answers whether this use may be accepted.
    pub fn use_signature_now(&self, signature: &SignatureUse, holder: &Digest) -> bool {
        let mine = (!signature.nonce).then_some(*holder);
        let entry = self
            .uses(signature.partition)
            .entry(signature.key)
            .or_insert_with(|| Held {
                holder: mine,
                until: instant_of(signature.until),
            });
        entry.is_fresh() || (mine.is_some() && entry.value().holder == mine)
    }

    /// What this memory knows of a use, without remembering it: `Some(true)` when the same
    /// holder used it before, `Some(false)` when it would be a replay, `None` when unseen.
    pub fn recall_signature(&self, signature: &SignatureUse, holder: &Digest) -> Option<bool> {
        let held = self.uses(signature.partition).get(&signature.key)?;
        Some(!signature.nonce && held.holder == Some(*holder))
    }

    /// Remembers a use the shared store accepted for `holder`.
    pub fn keep_signature(&self, signature: &SignatureUse, holder: &Digest) {
        self.uses(signature.partition).insert(
            signature.key,
            Held {
                holder: (!signature.nonce).then_some(*holder),
                until: instant_of(signature.until),
            },
        );
    }

    /// Checks a request against a crawl-delay, and when `record`, counts it ([`slot`]).
    pub fn pace(
        &self,
        site: &Arc<str>,
        subject: &Subject,
        delay: Duration,
        now: Instant,
        record: bool,
    ) -> Pace {
        let key = (site.clone(), subject.clone());
        if !record {
            return slot(self.next_allowed.get(&key), now, delay).0;
        }
        let mut pace = Pace::Ok;
        self.next_allowed.entry(key).and_compute_with(|entry| {
            let (verdict, next) = slot(entry.map(|e| e.into_value()), now, delay);
            pace = verdict;
            match next {
                Some(next) => moka::ops::compute::Op::Put(next),
                None => moka::ops::compute::Op::Nop,
            }
        });
        pace
    }

    /// Makes the slot end after `wait` from now: what the shared store answered, so that the
    /// instance's own memory is as strict as the fleet's if the store goes away.
    pub fn hold_until(&self, site: &Arc<str>, subject: &Subject, until: Instant) {
        self.next_allowed
            .insert((site.clone(), subject.clone()), until);
    }

    /// The synchronous form of [`StateStore::visit`].
    pub fn visit_now(
        &self,
        site: &Arc<str>,
        subject: &Subject,
        pace: Option<PaceQuery>,
        record: bool,
    ) -> Visit {
        let last_fetch = self.last_robots_fetch(site, subject);
        let pace = pace
            .filter(|query| query.applies(last_fetch))
            .map(|query| self.pace(site, subject, query.delay, Instant::now(), record));
        Visit { last_fetch, pace }
    }

    /// Remembers that `subject` fetched robots.txt at `at`.
    pub fn remember_fetch(&self, site: &Arc<str>, subject: &Subject, at: SystemTime) {
        self.robots_fetched
            .insert((site.clone(), subject.clone()), at);
    }

    /// When `subject` last fetched robots.txt, if it is remembered.
    pub fn last_robots_fetch(&self, site: &Arc<str>, subject: &Subject) -> Option<SystemTime> {
        self.robots_fetched.get(&(site.clone(), subject.clone()))
    }

    /// Remembers a DNS outcome for `ttl`.
    pub fn keep_dns(&self, key: &DnsKey, outcome: &DnsOutcome, ttl: Duration) {
        self.dns.insert(key.clone(), (outcome.clone(), ttl));
    }
}

#[async_trait]
impl StateStore for MemoryStore {
    async fn visit(
        &self,
        site: &Arc<str>,
        subject: &Subject,
        pace: Option<PaceQuery>,
        record: bool,
    ) -> Visit {
        self.visit_now(site, subject, pace, record)
    }

    async fn robots_fetched(&self, site: &Arc<str>, subject: &Subject, at: SystemTime) {
        self.remember_fetch(site, subject, at);
    }

    fn recall_dns(&self, key: &DnsKey) -> Option<DnsOutcome> {
        self.dns.get(key).map(|(outcome, _)| outcome)
    }

    async fn lookup_dns(&self, key: &DnsKey) -> Option<DnsOutcome> {
        self.recall_dns(key)
    }

    async fn remember_dns(&self, key: &DnsKey, outcome: &DnsOutcome, ttl: Duration) {
        self.keep_dns(key, outcome, ttl);
    }

    async fn use_signature(&self, signature: &SignatureUse, holder: &Digest) -> bool {
        self.use_signature_now(signature, holder)
    }

    async fn claim_charge(&self, _id: &Digest, _until: i64) -> Result<bool, String> {
        Ok(true)
    }

    async fn release_charge(&self, _id: &Digest) {}

    async fn record_charge(&self, _line: &[u8]) {}

    fn entries(&self) -> Entries {
        self.next_allowed.run_pending_tasks();
        self.robots_fetched.run_pending_tasks();
        self.dns.run_pending_tasks();
        self.listed_uses.run_pending_tasks();
        self.unlisted_uses.run_pending_tasks();
        Entries {
            crawl_delay: self.next_allowed.entry_count(),
            robots_fetch: self.robots_fetched.entry_count(),
            dns: self.dns.entry_count(),
            signature_uses: self.listed_uses.entry_count() + self.unlisted_uses.entry_count(),
        }
    }

    fn health(&self) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::verify::signature::reuse::holder;
    use std::net::IpAddr;

    fn site() -> Arc<str> {
        Arc::from("s")
    }

    fn store(max: u64) -> MemoryStore {
        MemoryStore::new(MemoryLimits {
            max_tracked: max,
            remember_fetches: Duration::from_secs(60),
            dns_entries: max,
            signature_uses: max,
            unlisted_signature_uses: max,
        })
    }

    #[test]
    fn one_request_per_delay() {
        let p = store(100);
        let bot = Subject::Crawler(Arc::from("gptbot"));
        let start = Instant::now();
        let delay = Duration::from_secs(10);
        assert_eq!(p.pace(&site(), &bot, delay, start, true), Pace::Ok);
        assert_eq!(
            p.pace(&site(), &bot, delay, start + Duration::from_secs(4), true),
            Pace::TooSoon(Duration::from_secs(6))
        );
        // A refused request does not push the next slot back.
        assert_eq!(
            p.pace(&site(), &bot, delay, start + Duration::from_secs(9), true),
            Pace::TooSoon(Duration::from_secs(1))
        );
        assert_eq!(
            p.pace(&site(), &bot, delay, start + Duration::from_secs(10), true),
            Pace::Ok
        );
        // Another crawler, and another site, have their own slots.
        let other = Subject::Client("192.0.2.1".parse().unwrap());
        let later = start + Duration::from_secs(11);
        assert_eq!(p.pace(&site(), &other, delay, later, true), Pace::Ok);
        assert_eq!(p.pace(&Arc::from("t"), &bot, delay, later, true), Pace::Ok);
    }

    #[test]
    fn an_unverified_claim_uses_only_its_own_slot() {
        let p = store(100);
        let token: Arc<str> = Arc::from("claudebot");
        let real = Subject::Claim(token.clone(), "198.51.100.7".parse().unwrap());
        let forger = Subject::Claim(token.clone(), "203.0.113.66".parse().unwrap());
        let verified = Subject::Crawler(token);
        let now = Instant::now();
        let delay = Duration::from_secs(10);
        assert_eq!(p.pace(&site(), &forger, delay, now, true), Pace::Ok);
        assert!(matches!(
            p.pace(&site(), &forger, delay, now, true),
            Pace::TooSoon(_)
        ));
        assert_eq!(p.pace(&site(), &real, delay, now, true), Pace::Ok);
        assert_eq!(p.pace(&site(), &verified, delay, now, true), Pace::Ok);
        p.remember_fetch(&site(), &forger, SystemTime::now());
        assert!(p.last_robots_fetch(&site(), &real).is_none());
    }

    #[test]
    fn looking_does_not_count() {
        let p = store(100);
        let bot = Subject::Crawler(Arc::from("gptbot"));
        let now = Instant::now();
        let delay = Duration::from_secs(10);
        assert_eq!(p.pace(&site(), &bot, delay, now, false), Pace::Ok);
        assert_eq!(p.pace(&site(), &bot, delay, now, true), Pace::Ok);
        assert!(matches!(
            p.pace(&site(), &bot, delay, now, false),
            Pace::TooSoon(_)
        ));
    }

    #[test]
    fn a_visit_reads_the_fetch_and_paces_only_when_the_query_applies() {
        let p = store(100);
        let bot = Subject::Crawler(Arc::from("gptbot"));
        let at = SystemTime::now();
        let delay = Duration::from_secs(10);
        let grace_only = PaceQuery {
            delay,
            only_if_fetched: Some((at, at + Duration::from_secs(1))),
        };
        assert_eq!(
            p.visit_now(&site(), &bot, Some(grace_only), true),
            Visit::default()
        );
        p.remember_fetch(&site(), &bot, at);
        let visit = p.visit_now(&site(), &bot, Some(grace_only), true);
        assert_eq!((visit.last_fetch, visit.pace), (Some(at), Some(Pace::Ok)));
        let always = PaceQuery {
            delay,
            only_if_fetched: None,
        };
        let again = p.visit_now(&site(), &bot, Some(always), true);
        assert!(matches!(again.pace, Some(Pace::TooSoon(_))), "{again:?}");
    }

    #[test]
    fn memory_is_bounded() {
        let p = store(50);
        let now = Instant::now();
        for i in 0..5000u32 {
            let addr = IpAddr::from(i.to_be_bytes());
            let client = Subject::Client(addr);
            p.pace(&site(), &client, Duration::from_secs(60), now, true);
            p.remember_fetch(&site(), &client, SystemTime::now());
            let outcome = DnsOutcome::Spoofed("x".into());
            p.keep_dns(&(addr, Arc::from("b")), &outcome, Duration::from_secs(60));
        }
        let entries = p.entries();
        assert!(entries.crawl_delay <= 50, "{entries:?}");
        assert!(entries.robots_fetch <= 50, "{entries:?}");
        assert!(entries.dns <= 50, "{entries:?}");
    }

    #[test]
    fn a_signature_is_accepted_once_per_holder_and_a_nonce_once() {
        let p = store(100);
        let until = i64::MAX;
        let ip = |t: &str| t.parse::<IpAddr>().unwrap();
        let real = holder(ip("198.51.100.7"), "site", b"ChatGPT-User");
        let forger = holder(ip("203.0.113.66"), "site", b"ChatGPT-User");
        let bare = SignatureUse::without_nonce(b"sig", Partition::Listed, until);
        assert_eq!(p.recall_signature(&bare, &real), None);
        assert!(p.use_signature_now(&bare, &real));
        assert!(
            p.use_signature_now(&bare, &real),
            "its holder may use it again"
        );
        assert!(
            !p.use_signature_now(&bare, &forger),
            "anyone else replays it"
        );
        assert_eq!(p.recall_signature(&bare, &forger), Some(false));
        assert_eq!(p.recall_signature(&bare, &real), Some(true));
        let once = SignatureUse::with_nonce("https://a.example", "n1", Partition::Listed, until);
        assert!(p.use_signature_now(&once, &real));
        assert!(!p.use_signature_now(&once, &real), "a nonce is used once");
        assert_eq!(p.recall_signature(&once, &real), Some(false));
    }

    #[test]
    fn unlisted_uses_never_push_listed_ones_out() {
        let p = store(10);
        let real = holder("198.51.100.7".parse().unwrap(), "site", b"UA");
        let listed =
            SignatureUse::with_nonce("https://chatgpt.com", "n", Partition::Listed, i64::MAX);
        assert!(p.use_signature_now(&listed, &real));
        for i in 0..1000 {
            let own = SignatureUse::with_nonce(
                "https://attacker.example",
                &format!("n{i}"),
                Partition::Unlisted,
                i64::MAX,
            );
            p.use_signature_now(&own, &real);
        }
        let entries = p.entries();
        assert!(entries.signature_uses <= 11, "{entries:?}");
        assert!(
            !p.use_signature_now(&listed, &real),
            "still remembered: a replay"
        );
    }
}
