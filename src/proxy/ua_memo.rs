//! A memo of recent User-Agent classifications ([`Who`]), one per worker thread.
//!
//! A site's traffic comes from a few hundred distinct User-Agent headers, repeated on every
//! request, and scanning one costs more than hashing it. Each thread keeps a small direct-mapped
//! table from (snapshot, header) to the classification; an entry is used only when both match
//! exactly, so a hit is the answer the classifier would give. Snapshots have unique ids, so a
//! reload can never be answered from an older file's table. Headers longer than
//! [`MAX_MEMO_LEN`] are classified every time; memory is bounded by `SLOTS × MAX_MEMO_LEN` per
//! thread, and a flood of distinct headers only evicts entries.

use crate::agent::Who;
use std::cell::RefCell;
use std::hash::BuildHasher;

/// Entries per thread (a power of two).
const SLOTS: usize = 256;

/// The longest header kept: real browsers' and crawlers' headers are well under it.
pub const MAX_MEMO_LEN: usize = 512;

#[derive(Default)]
struct Slot {
    /// Snapshot id; 0 marks an empty slot (ids start at 1).
    snapshot: u64,
    user_agent: Vec<u8>,
    who: Option<Who>,
}

thread_local! {
    static MEMO: RefCell<Vec<Slot>> = RefCell::new((0..SLOTS).map(|_| Slot::default()).collect());
}

/// The classification of `user_agent` under snapshot `snapshot` (a nonzero id unique to the
/// classifier), from this thread's memo or else from `classify`, which is then remembered.
pub fn classify_memoized(snapshot: u64, user_agent: &[u8], classify: impl FnOnce() -> Who) -> Who {
    if snapshot == 0 || user_agent.len() > MAX_MEMO_LEN {
        return classify();
    }
    // Fixed seed: the slot only spreads entries; an attacker who makes headers collide only
    // makes them miss.
    let hash = foldhash::fast::FixedState::with_seed(0x6372_6177_6c67_6174).hash_one(user_agent);
    let index = (hash as usize) & (SLOTS - 1);
    let found = MEMO.with(|memo| {
        let memo = memo.borrow();
        memo.get(index).and_then(|slot| {
            (slot.snapshot == snapshot && slot.user_agent == user_agent)
                .then_some(slot.who)
                .flatten()
        })
    });
    if let Some(who) = found {
        return who;
    }
    let who = classify();
    MEMO.with(|memo| {
        if let Some(slot) = memo.borrow_mut().get_mut(index) {
            slot.snapshot = snapshot;
            slot.user_agent.clear();
            slot.user_agent.extend_from_slice(user_agent);
            slot.who = Some(who);
        }
    });
    who
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn counted(calls: &Cell<usize>, who: Who) -> impl FnOnce() -> Who + '_ {
        move || {
            calls.set(calls.get() + 1);
            who
        }
    }

    #[test]
    fn a_repeated_header_is_classified_once() {
        let calls = Cell::new(0);
        let ua = b"Mozilla/5.0 (compatible; Googlebot/2.1)";
        for _ in 0..3 {
            let who = classify_memoized(7, ua, counted(&calls, Who::Crawler(3)));
            assert_eq!(who, Who::Crawler(3));
        }
        assert_eq!(calls.get(), 1);
    }

    #[test]
    fn another_snapshot_or_header_is_classified_afresh() {
        let calls = Cell::new(0);
        classify_memoized(11, b"FooBot", counted(&calls, Who::Unnamed));
        // The same header under another snapshot (a reload, another site).
        let who = classify_memoized(12, b"FooBot", counted(&calls, Who::Person));
        assert_eq!(who, Who::Person);
        // A header differing only in case is another header.
        let who = classify_memoized(12, b"foobot", counted(&calls, Who::Unnamed));
        assert_eq!(who, Who::Unnamed);
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn long_headers_and_unnumbered_snapshots_are_not_kept() {
        let calls = Cell::new(0);
        let long = vec![b'a'; MAX_MEMO_LEN + 1];
        classify_memoized(13, &long, counted(&calls, Who::Person));
        classify_memoized(13, &long, counted(&calls, Who::Person));
        classify_memoized(0, b"x", counted(&calls, Who::Person));
        classify_memoized(0, b"x", counted(&calls, Who::Person));
        assert_eq!(calls.get(), 4);
    }

    #[test]
    fn evictions_never_give_another_headers_answer() {
        // Far more headers than slots: many share a slot and evict each other.
        let headers: Vec<Vec<u8>> = (0..SLOTS * 4)
            .map(|i| format!("agent-{i}").into_bytes())
            .collect();
        let truth = |i: usize| Who::Crawler(i);
        for round in 0..3 {
            for (i, header) in headers.iter().enumerate().rev().skip(round) {
                assert_eq!(classify_memoized(21, header, || truth(i)), truth(i));
            }
        }
    }
}
