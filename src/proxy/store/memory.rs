//! The embedded store: bounded caches in this process whose entries expire as soon as they no
//! longer matter. The whole state of a single instance, and the fallback of a shared one.

use super::{DnsKey, Entries, MemoryLimits, StateStore};
use crate::proxy::politeness::{slot, Pace, PaceQuery, Subject, Visit};
use crate::proxy::verify::dns::DnsOutcome;
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

/// Crawl-delay slots, robots.txt fetches and DNS outcomes in this process's memory.
pub struct MemoryStore {
    next_allowed: Cache<Key, Instant>,
    robots_fetched: Cache<Key, SystemTime>,
    dns: Cache<DnsKey, (DnsOutcome, Duration)>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("crawl_delay_entries", &self.next_allowed.entry_count())
            .field("robots_fetch_entries", &self.robots_fetched.entry_count())
            .field("dns_entries", &self.dns.entry_count())
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
        }
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

    fn entries(&self) -> Entries {
        self.next_allowed.run_pending_tasks();
        self.robots_fetched.run_pending_tasks();
        self.dns.run_pending_tasks();
        Entries {
            crawl_delay: self.next_allowed.entry_count(),
            robots_fetch: self.robots_fetched.entry_count(),
            dns: self.dns.entry_count(),
        }
    }

    fn health(&self) -> Result<(), String> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn site() -> Arc<str> {
        Arc::from("s")
    }

    fn store(max: u64) -> MemoryStore {
        MemoryStore::new(MemoryLimits {
            max_tracked: max,
            remember_fetches: Duration::from_secs(60),
            dns_entries: max,
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
}
