//! Nonces of verified signatures, remembered so that a signature replayed by whoever captured
//! it is refused (the draft defers to RFC 9421 §7.2.2). Memory is bounded: the least recently
//! seen nonce is forgotten first, and none is kept longer than a signature can be valid.

use moka::policy::EvictionPolicy;
use moka::sync::Cache;
use std::sync::Arc;
use std::time::Duration;

/// The nonces seen, by directory.
#[derive(Debug)]
pub struct Nonces {
    seen: Cache<(Arc<str>, String), i64>,
}

impl Nonces {
    /// Remembers up to `capacity` nonces, each for `keep`.
    pub fn new(capacity: u64, keep: Duration) -> Nonces {
        Nonces {
            seen: Cache::builder()
                .max_capacity(capacity)
                .time_to_live(keep)
                .eviction_policy(EvictionPolicy::lru())
                .build(),
        }
    }

    /// Whether this is the first time `nonce` comes with a valid signature of `directory`'s
    /// key (and remembers it). A nonce is the signer's: two signers may pick the same one.
    pub fn first_use(&self, directory: &Arc<str>, nonce: &str, expires: i64) -> bool {
        self.seen
            .entry((directory.clone(), nonce.to_owned()))
            .or_insert(expires)
            .is_fresh()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_counts_once_per_directory_and_memory_is_bounded() {
        let nonces = Nonces::new(2, Duration::from_secs(60));
        let a: Arc<str> = Arc::from("https://a.example");
        let b: Arc<str> = Arc::from("https://b.example");
        assert!(nonces.first_use(&a, "n1", 0));
        assert!(!nonces.first_use(&a, "n1", 0));
        assert!(nonces.first_use(&b, "n1", 0), "another signer's nonce");
        for i in 0..100 {
            nonces.first_use(&a, &format!("x{i}"), 0);
        }
        nonces.seen.run_pending_tasks();
        assert!(nonces.seen.entry_count() <= 2);
    }
}
