//! A valid signature used again: what is remembered of each use, so that a signature captured
//! from one request cannot verify someone else's (RFC 9421 §7.2.2, which the draft defers to).
//!
//! - With a `nonce`, the signer promised one use: the nonce (with its directory: a nonce is the
//!   signer's, two signers may pick the same) is remembered, and any second use is a replay.
//! - Without one (the draft allows it: "a reused signature already has token semantics until
//!   expires"), the signature is remembered with its holder, the client address, site and
//!   User-Agent that first used it. The holder may use it again, on any path, as the draft
//!   lets a signer do; anyone else is replaying it.
//!
//! Only digests are kept (SHA-256, 32 bytes, whatever the nonce's or signature's size), each
//! until the signature expires (plus the clock skew allowed), in two bounded memories: one for
//! the directories crawlgate lists (catalog, configuration), one for the directories nobody
//! listed (`fetch_unlisted`), whose signatures anyone can make, so that they can never push a
//! real crawler's out. The memories are the state store's ([`crate::proxy::store`]): this
//! instance's, and with a shared store every instance's (listed directories only).

use sha2::{Digest as _, Sha256};
use std::net::IpAddr;

/// A digest of a nonce, a signature or a holder.
pub type Digest = [u8; 32];

/// Which memory a use is kept in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Partition {
    /// A directory the catalog or the configuration names.
    Listed,
    /// A directory nobody named (`fetch_unlisted`).
    Unlisted,
}

/// One use of a valid signature, to be checked against the uses before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureUse {
    /// The digest of its nonce and directory, or of the signature itself.
    pub key: Digest,
    /// Whether it carries a nonce: then it is used once, by anybody.
    pub nonce: bool,
    /// The memory it is kept in.
    pub partition: Partition,
    /// Until when it is remembered, in seconds since the epoch: its `expires` plus the clock
    /// skew allowed, after which it no longer verifies anyway.
    pub until: i64,
}

fn digest(kind: &[u8], parts: &[&[u8]]) -> Digest {
    let mut hasher = Sha256::new();
    hasher.update(kind);
    for part in parts {
        // Each part's length first, so that no two sequences of parts hash alike.
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finalize().into()
}

impl SignatureUse {
    /// A signature with `nonce`, valid with a key of `directory`.
    pub fn with_nonce(directory: &str, nonce: &str, partition: Partition, until: i64) -> Self {
        SignatureUse {
            key: digest(b"nonce", &[directory.as_bytes(), nonce.as_bytes()]),
            nonce: true,
            partition,
            until,
        }
    }

    /// A signature without a nonce, by its bytes (the signature value decoded).
    pub fn without_nonce(signature: &[u8], partition: Partition, until: i64) -> Self {
        SignatureUse {
            key: digest(b"signature", &[signature]),
            nonce: false,
            partition,
            until,
        }
    }
}

/// Who uses a signature: the client address, the site and the User-Agent.
pub fn holder(client: IpAddr, site: &str, user_agent: &[u8]) -> Digest {
    let client = client.to_canonical().to_string();
    digest(b"holder", &[client.as_bytes(), site.as_bytes(), user_agent])
}

/// Lower-case hexadecimal, for the shared store's keys and values.
pub fn hex(digest: &Digest) -> String {
    use std::fmt::Write as _;
    digest.iter().fold(String::with_capacity(64), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_fixed_size_and_tell_their_parts_apart() {
        let big = "n".repeat(800 * 1024);
        let a = SignatureUse::with_nonce("https://a.example", &big, Partition::Listed, 0);
        assert_eq!(a.key.len(), 32);
        // Another directory's nonce, and the same bytes split otherwise, differ.
        let b = SignatureUse::with_nonce("https://b.example", &big, Partition::Listed, 0);
        assert_ne!(a.key, b.key);
        let x = SignatureUse::with_nonce("https://a.example", "bc", Partition::Listed, 0);
        let y = SignatureUse::with_nonce("https://a.exampleb", "c", Partition::Listed, 0);
        assert_ne!(x.key, y.key);
        // A signature is not a nonce.
        let s = SignatureUse::without_nonce(b"bc", Partition::Listed, 0);
        assert_ne!(s.key, x.key);
        assert!(x.nonce && !s.nonce);
        let ip = |t: &str| t.parse::<IpAddr>().unwrap();
        let h = holder(ip("192.0.2.1"), "site", b"UA");
        assert_eq!(h, holder(ip("::ffff:192.0.2.1"), "site", b"UA"));
        assert_ne!(h, holder(ip("192.0.2.2"), "site", b"UA"));
        assert_ne!(h, holder(ip("192.0.2.1"), "other", b"UA"));
        assert_ne!(h, holder(ip("192.0.2.1"), "site", b"UA2"));
        assert_eq!(hex(&[0xab; 32]).len(), 64);
        assert!(hex(&[0x0f; 32]).starts_with("0f0f"));
    }
}
