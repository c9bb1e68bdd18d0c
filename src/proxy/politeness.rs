//! Politeness state: when each crawler may come next (crawl-delay) and when it last read
//! robots.txt. Kept per site and crawler: one state for a verified crawler, whatever its
//! address; per claimed name *and* client address for a named crawler that could not be
//! verified, so that anyone sending `ClaudeBot` uses up only their own slot, never the real
//! ClaudeBot's; per client address for unnamed and spoofed crawlers. Bounded caches whose entries
//! expire as soon as they no longer matter, kept apart from robots.txt snapshots and
//! configuration so that they survive reloads.

use moka::sync::Cache;
use moka::Expiry;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Whom politeness state is kept for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// A verified crawler (lower-cased token): all its addresses share one state.
    Crawler(Arc<str>),
    /// A named crawler that could not be verified: one state per name and client address.
    Claim(Arc<str>, IpAddr),
    /// An unnamed or spoofed crawler: one state per client address.
    Client(IpAddr),
}

type Key = (Arc<str>, Subject);

/// The crawl-delay verdict of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Within the crawl-delay (or none applies).
    Ok,
    /// Sooner than the crawl-delay allows: the crawler may come back after this long.
    TooSoon(Duration),
}

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

/// Crawl-delay and robots.txt-fetch memory for every site.
pub struct Politeness {
    next_allowed: Cache<Key, Instant>,
    robots_fetched: Cache<Key, SystemTime>,
}

impl std::fmt::Debug for Politeness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Politeness")
            .field("crawl_delay_entries", &self.next_allowed.entry_count())
            .field("robots_fetch_entries", &self.robots_fetched.entry_count())
            .finish()
    }
}

impl Politeness {
    /// Remembers at most `max_entries` crawlers and clients for each of the two kinds of state;
    /// robots.txt fetches are forgotten after `remember_fetches` (the longer of the read window
    /// and the grace period).
    pub fn new(max_entries: u64, remember_fetches: Duration) -> Politeness {
        Politeness {
            next_allowed: Cache::builder()
                .max_capacity(max_entries)
                .expire_after(UntilNextAllowed)
                .build(),
            robots_fetched: Cache::builder()
                .max_capacity(max_entries)
                .time_to_live(remember_fetches)
                .build(),
        }
    }

    /// Checks a request against a crawl-delay, and when `record`, counts it: one request per
    /// `delay` (a token bucket of one token that refills every `delay`). A request that comes too
    /// soon does not use up the next slot.
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
            return match self.next_allowed.get(&key) {
                Some(next) if next > now => Pace::TooSoon(next - now),
                _ => Pace::Ok,
            };
        }
        let mut pace = Pace::Ok;
        self.next_allowed
            .entry(key)
            .and_compute_with(|entry| match entry {
                Some(entry) if *entry.value() > now => {
                    pace = Pace::TooSoon(*entry.value() - now);
                    moka::ops::compute::Op::Nop
                }
                // robots.txt delays are at most a day; the check keeps any other input harmless.
                _ => moka::ops::compute::Op::Put(now.checked_add(delay).unwrap_or(now)),
            });
        pace
    }

    /// Remembers that `subject` fetched robots.txt at `at`.
    pub fn robots_fetched(&self, site: &Arc<str>, subject: &Subject, at: SystemTime) {
        self.robots_fetched
            .insert((site.clone(), subject.clone()), at);
    }

    /// When `subject` last fetched robots.txt, if it is remembered.
    pub fn last_robots_fetch(&self, site: &Arc<str>, subject: &Subject) -> Option<SystemTime> {
        self.robots_fetched.get(&(site.clone(), subject.clone()))
    }

    /// How many crawlers and clients are remembered: (crawl-delay, robots.txt fetches).
    pub fn entries(&self) -> (u64, u64) {
        self.next_allowed.run_pending_tasks();
        self.robots_fetched.run_pending_tasks();
        (
            self.next_allowed.entry_count(),
            self.robots_fetched.entry_count(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Arc<str> {
        Arc::from("s")
    }

    #[test]
    fn one_request_per_delay() {
        let p = Politeness::new(100, Duration::from_secs(60));
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
        assert_eq!(
            p.pace(
                &site(),
                &other,
                delay,
                start + Duration::from_secs(11),
                true
            ),
            Pace::Ok
        );
        assert_eq!(
            p.pace(
                &Arc::from("t"),
                &bot,
                delay,
                start + Duration::from_secs(11),
                true
            ),
            Pace::Ok
        );
    }

    #[test]
    fn an_unverified_claim_uses_only_its_own_slot() {
        let p = Politeness::new(100, Duration::from_secs(60));
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
        p.robots_fetched(&site(), &forger, SystemTime::now());
        assert!(p.last_robots_fetch(&site(), &real).is_none());
    }

    #[test]
    fn looking_does_not_count() {
        let p = Politeness::new(100, Duration::from_secs(60));
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
    fn robots_fetches_are_remembered() {
        let p = Politeness::new(100, Duration::from_secs(60));
        let bot = Subject::Crawler(Arc::from("gptbot"));
        assert_eq!(p.last_robots_fetch(&site(), &bot), None);
        let at = SystemTime::now();
        p.robots_fetched(&site(), &bot, at);
        assert_eq!(p.last_robots_fetch(&site(), &bot), Some(at));
    }

    #[test]
    fn memory_is_bounded() {
        let p = Politeness::new(50, Duration::from_secs(60));
        let now = Instant::now();
        for i in 0..5000u32 {
            let client = Subject::Client(IpAddr::from(i.to_be_bytes()));
            p.pace(&site(), &client, Duration::from_secs(60), now, true);
            p.robots_fetched(&site(), &client, SystemTime::now());
        }
        let (delays, fetches) = p.entries();
        assert!(delays <= 50, "{delays}");
        assert!(fetches <= 50, "{fetches}");
    }
}
