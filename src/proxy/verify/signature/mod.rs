//! Web Bot Auth: crawlers that sign their requests (draft-ietf-webbotauth-httpsig-protocol, on
//! HTTP Message Signatures, RFC 9421).
//!
//! A signed request carries `Signature-Input`, `Signature` and usually `Signature-Agent`, the
//! URL of the signer's key directory. Checking one is pure ([`check`]): parse, check the
//! times, look the key up by (directory, key id) in the keys crawlgate holds ([`keys`]), verify
//! the Ed25519 signature. Which directories are believed, and for which crawler, is
//! [`directory`]; their keys are fetched off the request path ([`fetch`]) and kept in the state
//! directory. The headers' sizes and labels are checked before anything parses them
//! ([`limits`]); the directory a signature names is the `Signature-Agent` member it covers
//! ([`agent`]). A valid signature comes with its use ([`reuse`]), which the decision checks
//! against the state store, so that a replay is not verified.

pub mod agent;
pub mod check;
pub mod directory;
pub mod fetch;
pub mod keys;
pub mod limits;
pub mod reuse;

use arc_swap::ArcSwap;
use check::{Checked, RequestView};
use directory::{Directory, Trust};
use keys::KeyStore;
use reuse::{Partition, SignatureUse};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The longest a signature may be valid (`expires - created`): the draft's 24 hours.
pub const MAX_VALIDITY: Duration = Duration::from_secs(24 * 3600);

/// A key directory named by the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectorySettings {
    /// Its URL, in the normal form of [`directory::normalise`].
    pub url: String,
    /// The product token of the crawler its keys speak for (default: the catalog's entry whose
    /// `signature_agent` it is).
    pub bot: Option<String>,
    /// Keys from this JWKS file instead of fetching them.
    pub jwks: Option<PathBuf>,
}

/// How signatures are checked and key directories fetched, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureSettings {
    /// Believe the catalog's `signature_agent` directories.
    pub catalog: bool,
    /// The configuration's directories.
    pub directories: Vec<DirectorySettings>,
    /// Fetch a directory that neither the catalog nor the configuration names (a signature it
    /// verifies proves no crawler's identity, only that the signer holds the key).
    pub fetch_unlisted: bool,
    /// Fetch directories on loopback, private and link-local addresses (tests, an internal
    /// signer); refused by default, since a directory URL comes from a request header.
    pub allow_private: bool,
    /// A PEM file of CA certificates trusted for directory fetches beside the system's.
    pub ca_file: Option<PathBuf>,
    /// How long fetched keys are used before they are fetched again.
    pub refresh: Duration,
    /// How long a directory fetch may take.
    pub timeout: Duration,
    /// The largest directory accepted.
    pub max_bytes: usize,
    /// The most keys a directory may list.
    pub max_keys: usize,
    /// How far in the future `created` may be (the signer's clock running ahead).
    pub skew: Duration,
    /// Signature uses of listed directories remembered (nonces, and nonce-less signatures).
    pub nonces: u64,
    /// Signature uses of unlisted directories remembered, apart from the listed ones'.
    pub unlisted_nonces: u64,
    /// The signature headers' size and label limits, and the nonce's size.
    pub limits: limits::Limits,
    /// Directory fetches running at once, for listed directories and, apart, for unlisted ones.
    pub max_fetches: usize,
}

impl Default for SignatureSettings {
    fn default() -> Self {
        SignatureSettings {
            catalog: true,
            directories: Vec::new(),
            fetch_unlisted: false,
            allow_private: false,
            ca_file: None,
            refresh: Duration::from_secs(3600),
            timeout: Duration::from_secs(5),
            max_bytes: 64 * 1024,
            max_keys: 32,
            skew: Duration::from_secs(60),
            nonces: 100_000,
            unlisted_nonces: 10_000,
            limits: limits::Limits::default(),
            max_fetches: 4,
        }
    }
}

/// What a request's signature says about who sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureVerdict {
    /// No Web Bot Auth signature (none at all, or only signatures for other purposes).
    Unsigned,
    /// Verified with a key of `directory`, if this use of it is not a replay (which the
    /// decision asks the state store about).
    Verified {
        /// The directory whose key verified it.
        directory: Arc<Directory>,
        /// The key's id (its JWK thumbprint).
        keyid: String,
        /// What identifies this use of the signature.
        reuse: SignatureUse,
        /// The pay-per-crawl price headers it covers.
        covers: crate::pricing::Covers,
    },
    /// A Web Bot Auth signature that does not verify: expired, future-dated, not covering
    /// what it must, signed by a key the directory does not hold, or tampered with.
    Invalid {
        /// The directory it names, when crawlgate believes it.
        directory: Option<Arc<Directory>>,
        /// Why.
        why: String,
    },
    /// A valid signature used before by someone else, or its nonce seen before: a replay.
    Replayed {
        /// The directory whose key verified it.
        directory: Arc<Directory>,
    },
    /// Signed, but crawlgate cannot check it: an unlisted directory, or keys not fetched yet.
    Unverifiable {
        /// Why.
        why: String,
    },
}

/// What a request's Web Bot Auth signature came to, without the details: the `result` label
/// of `crawlgate_signatures_total` (`unsigned` is not counted there) and the access log's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureOutcome {
    /// No `Signature-Input` tagged `web-bot-auth`.
    Unsigned,
    /// Verified.
    Verified,
    /// Does not verify.
    Invalid,
    /// A valid signature seen before.
    Replayed,
    /// Signed, but not checkable.
    Unverifiable,
}

impl SignatureOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            SignatureOutcome::Unsigned => "unsigned",
            SignatureOutcome::Verified => "verified",
            SignatureOutcome::Invalid => "invalid",
            SignatureOutcome::Replayed => "replayed",
            SignatureOutcome::Unverifiable => "unverifiable",
        }
    }
}

impl SignatureVerdict {
    /// What it came to, for labels.
    pub fn outcome(&self) -> SignatureOutcome {
        match self {
            SignatureVerdict::Unsigned => SignatureOutcome::Unsigned,
            SignatureVerdict::Verified { .. } => SignatureOutcome::Verified,
            SignatureVerdict::Invalid { .. } => SignatureOutcome::Invalid,
            SignatureVerdict::Replayed { .. } => SignatureOutcome::Replayed,
            SignatureVerdict::Unverifiable { .. } => SignatureOutcome::Unverifiable,
        }
    }
}

/// Signature checking of one process: the directories believed (replaced on a reload) and the
/// keys held (kept across reloads, and across restarts in the state directory). The uses of
/// signatures are the state store's.
#[derive(Debug)]
pub struct Signatures {
    trust: ArcSwap<Trust>,
    /// The keys of every directory fetched or read.
    pub keys: KeyStore,
}

impl Signatures {
    /// Signature checking with `trust`, keys kept in `state_dir` (read now).
    pub fn new(trust: Trust, state_dir: Option<PathBuf>) -> Signatures {
        let keys = KeyStore::new(state_dir);
        keys.restore(&trust);
        Signatures {
            trust: ArcSwap::from_pointee(trust),
            keys,
        }
    }

    /// The directories believed.
    pub fn trust(&self) -> Arc<Trust> {
        self.trust.load_full()
    }

    /// Replaces the directories believed (a configuration reload); keys stay.
    pub fn set_trust(&self, trust: Trust) {
        self.keys.restore(&trust);
        self.trust.store(Arc::new(trust));
    }

    /// Checks a request's signature. `claimed` is the lower-cased product token its User-Agent
    /// claims, whose directory is used when the request names none. A request that names a
    /// directory whose keys are not held yet asks for them ([`KeyStore::want`]) and is
    /// unverifiable meanwhile: nothing is fetched on the request path. Headers over the
    /// limits are invalid before anything parses them.
    pub fn check(
        &self,
        request: &RequestView<'_>,
        claimed: Option<&str>,
        now: SystemTime,
    ) -> SignatureVerdict {
        if !check::is_signed(request.headers) {
            return SignatureVerdict::Unsigned;
        }
        let trust = self.trust.load();
        let claimed_directory = || claimed.and_then(|token| trust.of_bot(token)).cloned();
        let limits = &trust.settings.limits;
        if let Err(why) = limits::check(request.headers, limits) {
            return SignatureVerdict::Invalid {
                directory: claimed_directory(),
                why,
            };
        }
        let parsed = match check::parse(request) {
            Checked::Parsed(parsed) => parsed,
            Checked::NotWebBotAuth => return SignatureVerdict::Unsigned,
            Checked::Invalid(why) => {
                return SignatureVerdict::Invalid {
                    directory: claimed_directory(),
                    why,
                };
            }
        };
        if let Some(Err(why)) = parsed
            .nonce
            .as_deref()
            .map(|n| limits::check_nonce(n, limits))
        {
            return SignatureVerdict::Invalid {
                directory: claimed_directory(),
                why,
            };
        }
        // The directory: the first one named that is believed (or, with `fetch_unlisted`, the
        // first one named), else the claimed crawler's.
        let named = parsed.agents.iter().find_map(|url| trust.get(url).cloned());
        let directory = match (named, parsed.agents.first()) {
            (Some(directory), _) => directory,
            (None, Some(url)) if trust.settings.fetch_unlisted => {
                Arc::new(Directory::new(url, None, false))
            }
            (None, Some(url)) => {
                return SignatureVerdict::Unverifiable {
                    why: format!("signed for the key directory {url}, which neither the catalog nor the configuration names (verification.signatures.fetch_unlisted is off)"),
                };
            }
            (None, None) => match claimed.and_then(|token| trust.of_bot(token)) {
                Some(directory) => directory.clone(),
                None => return SignatureVerdict::Unverifiable {
                    why: "signed without Signature-Agent, by a crawler with no known key directory"
                        .into(),
                },
            },
        };
        if let Err(why) = parsed.check_times(now, trust.settings.skew) {
            return SignatureVerdict::Invalid {
                directory: Some(directory),
                why,
            };
        }
        let Some(keys) = self.keys.get(&directory.url) else {
            self.keys.want(&directory);
            return SignatureVerdict::Unverifiable {
                why: format!("the keys of {} have not been fetched yet", directory.url),
            };
        };
        let keyid = parsed.keyid.clone();
        let covers = parsed.covers;
        let reuse = parsed.reuse(&directory, trust.settings.skew);
        if let Err(why) = parsed.verify(&keys) {
            return SignatureVerdict::Invalid {
                directory: Some(directory),
                why,
            };
        }
        SignatureVerdict::Verified {
            directory,
            keyid,
            reuse,
            covers,
        }
    }
}

impl check::Parsed {
    /// What identifies this use of the signature, for `directory`: its nonce, or without one
    /// the signature itself; remembered until it expires (and the skew allowed after).
    fn reuse(&self, directory: &Directory, skew: Duration) -> SignatureUse {
        let partition = if directory.listed {
            Partition::Listed
        } else {
            Partition::Unlisted
        };
        let skew = i64::try_from(skew.as_secs()).unwrap_or(i64::MAX);
        let until = self.expires.saturating_add(skew);
        match &self.nonce {
            Some(nonce) => SignatureUse::with_nonce(&directory.url, nonce, partition, until),
            None => SignatureUse::without_nonce(&self.signature, partition, until),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};
    use std::time::UNIX_EPOCH;

    /// The draft's test vector (no `Signature-Agent`): RFC 8037's key signs `@authority`
    /// example.com, with a nonce.
    fn draft_request() -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("signature", HeaderValue::from_static("sig1=:uz2SAv+VIemw+Oo890bhYh6Xf5qZdLUgv6/PbiQfCFXcX/vt1A8Pf7OcgL2yUDUYXFtffNpkEr5W6dldqFrkDg==:"));
        headers.insert("signature-input", HeaderValue::from_static(r#"sig1=("@authority");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="gubxywVx7hzbYKatLgzuKDllDAIXAkz41PydU7aOY7vT+Mb3GJNxW0qD4zJ+IOQ1NVtg+BNbTCRUMt1Ojr5BgA==";tag="web-bot-auth""#));
        headers
    }

    fn signatures() -> Signatures {
        let settings = SignatureSettings {
            directories: vec![DirectorySettings {
                url: "https://signer.example".into(),
                bot: Some("ExampleBot".into()),
                jwks: None,
            }],
            ..SignatureSettings::default()
        };
        let trust = Trust::new(&settings, &crate::catalog::Catalog::default());
        Signatures::new(trust, None)
    }

    #[test]
    fn a_request_naming_no_directory_is_checked_against_its_claimed_crawlers() {
        let signatures = signatures();
        let headers = draft_request();
        let view = RequestView {
            headers: &headers,
            method: "GET",
            authority: "example.com",
            path_and_query: "/",
            scheme: "https",
        };
        let during = UNIX_EPOCH + Duration::from_secs(1735690000);
        // Claiming no crawler with a directory: nothing to check it against.
        assert!(matches!(
            signatures.check(&view, Some("otherbot"), during),
            SignatureVerdict::Unverifiable { .. }
        ));
        // The claimed crawler's directory, before its keys are held: asked for, unverifiable.
        assert!(matches!(
            signatures.check(&view, Some("examplebot"), during),
            SignatureVerdict::Unverifiable { .. }
        ));
        assert_eq!(signatures.keys.wanted().len(), 1);
        let jwks = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"}]}"#;
        signatures.keys.put(
            &Arc::from("https://signer.example"),
            keys::KeySet::from_jwks(jwks, 8).unwrap(),
            false,
        );
        assert!(signatures.keys.wanted().is_empty());
        let first = match signatures.check(&view, Some("examplebot"), during) {
            SignatureVerdict::Verified {
                directory,
                keyid,
                reuse,
                ..
            } => {
                assert_eq!(directory.bot.as_deref(), Some("ExampleBot"));
                assert_eq!(keyid, "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U");
                assert!(reuse.nonce && reuse.partition == Partition::Listed);
                // Remembered until it expires, and the skew after.
                assert_eq!(reuse.until, 1735693200 + 60);
                reuse
            }
            other => panic!("{other:?}"),
        };
        // Checking is pure: the same request is the same use, which the store judges.
        match signatures.check(&view, Some("examplebot"), during) {
            SignatureVerdict::Verified { reuse, .. } => assert_eq!(reuse, first),
            other => panic!("{other:?}"),
        }
        // After it expired: invalid, and a false claim to be ExampleBot.
        let after = UNIX_EPOCH + Duration::from_secs(1735693200 + 3600);
        match signatures.check(&view, Some("examplebot"), after) {
            SignatureVerdict::Invalid { directory, why } => {
                assert!(directory.is_some() && why.contains("expired"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        let unsigned = HeaderMap::new();
        let view = RequestView {
            headers: &unsigned,
            ..view
        };
        assert_eq!(
            signatures.check(&view, None, during),
            SignatureVerdict::Unsigned
        );
    }
}
