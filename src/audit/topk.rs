//! The most frequent keys of an unbounded stream, in bounded memory.
//!
//! A Space-Saving summary (Metwally, Agrawal, El Abbadi, 2005) with evictions done in batches:
//! the table holds up to twice its capacity; when full, it keeps the `capacity` largest counters
//! and forgets the rest, remembering the largest count forgotten (the *floor*). A key seen for
//! the first time starts at `floor + 1` with an error of `floor`, so that every count is an upper
//! bound and `count - error` a lower bound of the key's true count; a key whose true count
//! exceeds the floor is never lost. A batch costs O(capacity), once per `capacity` new keys, so
//! an update is O(1) amortised, and no per-key allocation happens for keys already held.

use std::collections::HashMap;

/// Keys longer than this are cut: a log can hold paths of any length, a summary should not.
pub const MAX_KEY_BYTES: usize = 512;

/// One key with its estimated count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    /// The key (cut at [`MAX_KEY_BYTES`]).
    pub key: Vec<u8>,
    /// An upper bound of how often the key was seen (exact when `error` is 0).
    pub count: u64,
    /// By how much `count` may exceed the true count.
    pub error: u64,
}

#[derive(Debug, Clone, Copy)]
struct Counter {
    count: u64,
    error: u64,
}

/// A bounded summary of the most frequent keys.
#[derive(Debug, Clone)]
pub struct TopK {
    counters: foldhash::HashMap<Box<[u8]>, Counter>,
    capacity: usize,
    floor: u64,
}

impl TopK {
    /// A summary that keeps at least the `capacity` most frequent keys (at least 1).
    pub fn new(capacity: usize) -> TopK {
        TopK {
            counters: HashMap::default(),
            capacity: capacity.max(1),
            floor: 0,
        }
    }

    /// Counts one occurrence of `key`.
    pub fn add(&mut self, key: &[u8]) {
        let key = &key[..key.len().min(MAX_KEY_BYTES)];
        if let Some(counter) = self.counters.get_mut(key) {
            counter.count += 1;
            return;
        }
        if self.counters.len() >= 2 * self.capacity {
            self.evict();
        }
        self.counters.insert(
            key.into(),
            Counter {
                count: self.floor + 1,
                error: self.floor,
            },
        );
    }

    /// Keeps the `capacity` largest counters (fewer when counts tie at the cut).
    fn evict(&mut self) {
        let mut counts: Vec<u64> = self.counters.values().map(|c| c.count).collect();
        let Some(cut) = counts.len().checked_sub(self.capacity + 1) else {
            return;
        };
        let (_, &mut threshold, _) = counts.select_nth_unstable(cut);
        self.counters.retain(|_, counter| counter.count > threshold);
        self.floor = self.floor.max(threshold);
    }

    /// Whether no key was ever dropped, so that every count is exact.
    pub fn is_exact(&self) -> bool {
        self.floor == 0
    }

    /// How many keys are held.
    pub fn len(&self) -> usize {
        self.counters.len()
    }

    /// Whether no key was added.
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
    }

    /// The `n` most frequent keys, most frequent first (ties in key order).
    pub fn top(&self, n: usize) -> Vec<Counted> {
        let mut all: Vec<(&[u8], Counter)> = self
            .counters
            .iter()
            .map(|(key, counter)| (&**key, *counter))
            .collect();
        all.sort_unstable_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
        all.into_iter()
            .take(n)
            .map(|(key, counter)| Counted {
                key: key.to_vec(),
                count: counter.count,
                error: counter.error,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_streams_are_counted_exactly() {
        let mut top = TopK::new(10);
        for key in ["/a", "/b", "/a", "/c", "/a", "/b"] {
            top.add(key.as_bytes());
        }
        let counted: Vec<(String, u64)> = top
            .top(2)
            .into_iter()
            .map(|c| (String::from_utf8(c.key).unwrap(), c.count))
            .collect();
        assert_eq!(counted, vec![("/a".into(), 3), ("/b".into(), 2)]);
        assert!(top.is_exact());
    }

    #[test]
    fn heavy_hitters_survive_a_flood_of_distinct_keys() {
        let mut top = TopK::new(50);
        for i in 0..100_000u32 {
            top.add(format!("/unique/{i}").as_bytes());
            if i % 10 == 0 {
                top.add(b"/hot");
            }
            if i % 25 == 0 {
                top.add(b"/warm");
            }
        }
        assert!(top.len() <= 100);
        assert!(!top.is_exact());
        let best = top.top(2);
        assert_eq!(best[0].key, b"/hot");
        assert_eq!(best[1].key, b"/warm");
        // Bounds hold: count - error <= true <= count.
        assert!(best[0].count >= 10_000 && best[0].count - best[0].error <= 10_000);
        assert!(best[1].count >= 4_000 && best[1].count - best[1].error <= 4_000);
    }

    #[test]
    fn long_keys_are_cut() {
        let mut top = TopK::new(1);
        top.add(&[b'a'; 2000]);
        top.add(&[b'a'; 1000]);
        assert_eq!(top.top(1)[0].key.len(), MAX_KEY_BYTES);
        assert_eq!(top.top(1)[0].count, 2);
    }
}
