//! Politeness: when each crawler may come next (crawl-delay) and when it last read robots.txt.
//! Kept per site and crawler: one state for a verified crawler, whatever its address; per
//! claimed name *and* client address for a named crawler that could not be verified, so that
//! anyone sending `ClaudeBot` uses up only their own slot, never the real ClaudeBot's; per client
//! address for unnamed and spoofed crawlers.
//!
//! This module says what is asked of that state ([`Subject`], [`PaceQuery`], [`Visit`]); where it
//! is kept — this process's memory, or a store every instance of a fleet shares — is
//! [`super::store`]'s job. Both answer the same questions with the same rules ([`PaceQuery::applies`],
//! [`slot`]).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

// What the request path asks and is answered are the judgement's terms (pure, in
// [`crate::judge`]); this module keeps the rules of the state itself.
pub use crate::judge::{Pace, PaceQuery, Visit};

/// The crawl-delay rule, one request per `delay` (a token bucket of one token that refills every
/// `delay`: the GCRA with no burst): given when the crawler may come next (`next`, if
/// remembered), the verdict and, when the request counts, the new "next allowed" time. A request
/// that comes too soon does not use up the next slot. The memory store applies it to `Instant`s;
/// the Redis store's script applies the same rule to milliseconds of the store's own clock.
pub fn slot(next: Option<Instant>, now: Instant, delay: Duration) -> (Pace, Option<Instant>) {
    match next {
        Some(next) if next > now => (Pace::TooSoon(next - now), None),
        // robots.txt delays are at most a day; the check keeps any other input harmless.
        _ => (Pace::Ok, Some(now.checked_add(delay).unwrap_or(now))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_request_per_delay_and_a_refusal_keeps_the_slot() {
        let start = Instant::now();
        let delay = Duration::from_secs(10);
        let (pace, next) = slot(None, start, delay);
        assert_eq!((pace, next), (Pace::Ok, Some(start + delay)));
        let four = start + Duration::from_secs(4);
        assert_eq!(
            slot(next, four, delay),
            (Pace::TooSoon(Duration::from_secs(6)), None)
        );
        assert_eq!(slot(next, start + delay, delay).0, Pace::Ok);
    }

    #[test]
    fn grace_paces_only_a_crawler_that_read_the_previous_file() {
        let loaded = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let previous = loaded - Duration::from_secs(100);
        let query = PaceQuery {
            delay: Duration::from_secs(5),
            only_if_fetched: Some((previous, loaded)),
        };
        assert!(!query.applies(None));
        assert!(query.applies(Some(previous)));
        assert!(!query.applies(Some(loaded)));
        assert!(!query.applies(Some(previous - Duration::from_secs(1))));
        let always = PaceQuery {
            only_if_fetched: None,
            ..query
        };
        assert!(always.applies(None));
    }
}
