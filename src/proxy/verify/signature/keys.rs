//! The keys of each key directory: parsed from a JWKS (fetched, read from a file, or kept in the
//! state directory), looked up by (directory, key id). A key is found under its RFC 7638 JWK
//! SHA-256 thumbprint, which is what Web Bot Auth's `keyid` is, whatever `kid` the directory
//! writes. A directory that cannot be fetched keeps the keys it had.

use super::directory::{Directory, Trust};
use arc_swap::ArcSwap;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use web_bot_auth::keyring::{KeyRing, Thumbprintable};

/// A key set that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeysError {
    /// Not a JWKS.
    #[error("not a JSON Web Key Set ({0}): expected {{\"keys\": [{{\"kty\": \"OKP\", \"crv\": \"Ed25519\", \"x\": \"...\"}}]}}")]
    Format(String),
    /// More keys than allowed.
    #[error("{count} keys, more than the {max} allowed (verification.signatures.max_keys)")]
    TooMany {
        /// How many it lists.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// No Ed25519 key.
    #[error("no usable Ed25519 key")]
    Empty,
}

#[derive(Deserialize)]
struct LooseSet {
    keys: Vec<serde_json::Value>,
}

/// One directory's keys.
#[derive(Debug, Clone)]
pub struct KeySet {
    /// The keys, by thumbprint.
    pub ring: KeyRing,
    /// Their thumbprints.
    pub ids: Vec<String>,
    /// When they were fetched (or read).
    pub fetched_at: SystemTime,
    /// The JWKS as received, for the state directory.
    pub body: Vec<u8>,
}

impl KeySet {
    /// Parses a JWKS, keeping its Ed25519 keys; other keys (RSA, EC, …) are skipped, as the
    /// signatures crawlgate checks are Ed25519.
    pub fn from_jwks(body: &[u8], max_keys: usize) -> Result<KeySet, KeysError> {
        let set: LooseSet =
            serde_json::from_slice(body).map_err(|e| KeysError::Format(e.to_string()))?;
        if set.keys.len() > max_keys {
            return Err(KeysError::TooMany {
                count: set.keys.len(),
                max: max_keys,
            });
        }
        let mut ring = KeyRing::default();
        let mut ids = Vec::new();
        for key in set.keys {
            let Ok(key) = serde_json::from_value::<Thumbprintable>(key) else {
                continue;
            };
            if ring.try_import_jwk(&key).is_ok() {
                ids.push(key.b64_thumbprint());
            }
        }
        if ids.is_empty() {
            return Err(KeysError::Empty);
        }
        Ok(KeySet {
            ring,
            ids,
            fetched_at: SystemTime::now(),
            body: body.to_vec(),
        })
    }

    /// How old the keys are.
    pub fn age(&self) -> Duration {
        SystemTime::now()
            .duration_since(self.fetched_at)
            .unwrap_or_default()
    }
}

/// The most listed directories waiting for a fetch at once (they are few: the catalog's and
/// the configuration's).
pub const MAX_WANTED: usize = 1000;

/// The most unlisted directories waiting for a fetch at once (with `fetch_unlisted`): kept
/// apart from the listed ones, which they can never crowd out.
pub const MAX_WANTED_UNLISTED: usize = 100;

/// How long an unlisted directory whose fetch failed is not asked for again, however many
/// requests name it: a made-up URL costs one fetch, not one every few seconds.
pub const UNLISTED_BACKOFF: Duration = Duration::from_secs(600);

/// The most unlisted directories remembered as failed (the oldest are forgotten first).
const MAX_FAILED_UNLISTED: u64 = 10_000;

/// The directories requests named whose keys are not held: the fetcher's queue, in two parts.
#[derive(Debug, Default)]
struct Wanted {
    listed: HashSet<Arc<str>>,
    unlisted: HashSet<Arc<str>>,
}

/// A directory's keys as the state directory keeps them.
#[derive(Serialize, Deserialize)]
struct Kept {
    url: String,
    fetched_at: u64,
    jwks: serde_json::Value,
}

/// The keys of every directory, and the directories a request asked for.
#[derive(Debug)]
pub struct KeyStore {
    sets: ArcSwap<HashMap<Arc<str>, Arc<KeySet>>>,
    /// Directories named by requests whose keys are not held: the fetcher's queue.
    wanted: Mutex<Wanted>,
    /// Unlisted directories whose fetch failed lately: not wanted again until they expire.
    failed_unlisted: moka::sync::Cache<Arc<str>, ()>,
    /// Wakes the fetcher when a directory is wanted.
    pub wake: tokio::sync::Notify,
    /// `<state_dir>/signature-directories`, when there is a state directory.
    folder: Option<PathBuf>,
}

/// The file a directory's keys are kept in: its URL with everything but letters and digits as
/// `_`, so that no URL can name a path outside the folder.
fn kept_name(url: &str) -> String {
    let mut name: String = url
        .strip_prefix("https://")
        .unwrap_or(url)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(200)
        .collect();
    name.push_str(".json");
    name
}

impl KeyStore {
    /// An empty store keeping keys in `state_dir`.
    pub fn new(state_dir: Option<PathBuf>) -> KeyStore {
        KeyStore {
            sets: ArcSwap::from_pointee(HashMap::new()),
            wanted: Mutex::new(Wanted::default()),
            failed_unlisted: moka::sync::Cache::builder()
                .max_capacity(MAX_FAILED_UNLISTED)
                .time_to_live(UNLISTED_BACKOFF)
                .build(),
            wake: tokio::sync::Notify::new(),
            folder: state_dir.map(|dir| dir.join("signature-directories")),
        }
    }

    /// The keys of the directory `url` (normal form).
    pub fn get(&self, url: &str) -> Option<Arc<KeySet>> {
        self.sets.load().get(url).cloned()
    }

    /// Every directory's keys.
    pub fn all(&self) -> Arc<HashMap<Arc<str>, Arc<KeySet>>> {
        self.sets.load_full()
    }

    /// Holds `keys` for `url`, and keeps them in the state directory when `keep`.
    pub fn put(&self, url: &Arc<str>, keys: KeySet, keep: bool) {
        if keep {
            self.keep(url, &keys);
        }
        let keys = Arc::new(keys);
        self.sets.rcu(|sets| {
            let mut sets = HashMap::clone(sets);
            sets.insert(url.clone(), keys.clone());
            sets
        });
        self.unwant(url);
    }

    fn lock_wanted(&self) -> std::sync::MutexGuard<'_, Wanted> {
        match self.wanted.lock() {
            Ok(wanted) => wanted,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Asks the fetcher for a directory's keys (a request named it and none are held). Listed
    /// and unlisted directories wait apart, at most [`MAX_WANTED`] and [`MAX_WANTED_UNLISTED`]:
    /// requests naming more are not heard until some are fetched, so that no stream of made-up
    /// directory URLs can grow the queue or keep a listed directory out of it. An unlisted
    /// directory that failed lately is not wanted again ([`UNLISTED_BACKOFF`]).
    pub fn want(&self, directory: &Directory) {
        if !directory.listed && self.failed_unlisted.contains_key(&directory.url) {
            return;
        }
        let mut wanted = self.lock_wanted();
        let (queue, max) = if directory.listed {
            (&mut wanted.listed, MAX_WANTED)
        } else {
            (&mut wanted.unlisted, MAX_WANTED_UNLISTED)
        };
        if queue.len() < max && queue.insert(directory.url.clone()) {
            drop(wanted);
            self.wake.notify_one();
        }
    }

    /// The directories requests asked for, listed ones first.
    pub fn wanted(&self) -> Vec<Arc<str>> {
        let wanted = self.lock_wanted();
        wanted
            .listed
            .iter()
            .chain(wanted.unlisted.iter())
            .cloned()
            .collect()
    }

    /// Whether a request asked for the listed directory `url`.
    pub fn is_wanted(&self, url: &str) -> bool {
        self.lock_wanted().listed.contains(url)
    }

    /// The unlisted directories requests asked for.
    pub fn wanted_unlisted(&self) -> Vec<Arc<str>> {
        self.lock_wanted().unlisted.iter().cloned().collect()
    }

    /// Forgets that a directory was asked for (it cannot be fetched, or was).
    pub fn unwant(&self, url: &str) {
        let mut wanted = self.lock_wanted();
        wanted.listed.remove(url);
        wanted.unlisted.remove(url);
    }

    /// An unlisted directory's fetch failed: it leaves the queue and is not wanted again for
    /// [`UNLISTED_BACKOFF`].
    pub fn unlisted_failed(&self, url: &Arc<str>) {
        self.failed_unlisted.insert(url.clone(), ());
        self.unwant(url);
    }

    fn keep(&self, url: &str, keys: &KeySet) {
        let Some(folder) = &self.folder else {
            return;
        };
        let Ok(jwks) = serde_json::from_slice::<serde_json::Value>(&keys.body) else {
            return;
        };
        let kept = Kept {
            url: url.to_owned(),
            fetched_at: keys
                .fetched_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            jwks,
        };
        let path = folder.join(kept_name(url));
        let written = serde_json::to_vec_pretty(&kept)
            .map_err(std::io::Error::other)
            .and_then(|bytes| crate::proxy::atomic::write_atomically(&path, &bytes));
        if let Err(e) = written {
            log::warn!(
                "signatures: cannot keep the keys of {url} in {}: {e}",
                path.display()
            );
        }
    }

    /// Holds the keys of the JWKS file `file` as `url`'s, and says whether it could. A file that
    /// cannot be read or used is logged, and the keys held before are kept.
    pub fn load_jwks_file(&self, url: &Arc<str>, file: &Path, max_keys: usize) -> bool {
        let read = std::fs::read(file)
            .map_err(|e| e.to_string())
            .and_then(|body| KeySet::from_jwks(&body, max_keys).map_err(|e| e.to_string()));
        match read {
            Ok(keys) => {
                self.put(url, keys, false);
                true
            }
            Err(e) => {
                log::warn!("signatures: {url}: cannot use {}: {e}", file.display());
                false
            }
        }
    }

    /// Reads the kept keys of `trust`'s fetched directories that are not held yet, and each
    /// directory's JWKS file. A kept file that cannot be used is logged and left alone.
    pub fn restore(&self, trust: &Trust) {
        for directory in trust.directories() {
            if let Some(file) = &directory.jwks {
                self.load_jwks_file(&directory.url, file, trust.settings.max_keys);
                continue;
            }
            if self.get(&directory.url).is_some() {
                continue;
            }
            let Some(folder) = &self.folder else {
                continue;
            };
            let path = folder.join(kept_name(&directory.url));
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let restored = serde_json::from_slice::<Kept>(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|kept| {
                    if kept.url != *directory.url {
                        return Err(format!("it holds the keys of {}", kept.url));
                    }
                    let body = serde_json::to_vec(&kept.jwks).map_err(|e| e.to_string())?;
                    let mut keys = KeySet::from_jwks(&body, trust.settings.max_keys)
                        .map_err(|e| e.to_string())?;
                    keys.fetched_at = UNIX_EPOCH + Duration::from_secs(kept.fetched_at);
                    Ok(keys)
                });
            match restored {
                Ok(keys) => {
                    log::info!(
                        "signatures: {} keys of {} restored from {}",
                        keys.ids.len(),
                        directory.url,
                        path.display()
                    );
                    self.put(&directory.url, keys, false);
                }
                Err(e) => log::warn!("signatures: cannot use {}: {e}", path.display()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_by_thumbprint_and_sets_are_bounded() {
        // RFC 8037 §A.1's key, whose RFC 7638 thumbprint is §A.3's.
        let jwks = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"whatever","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},{"kty":"RSA","e":"AQAB","n":"x"}]}"#;
        let keys = KeySet::from_jwks(jwks, 8).unwrap();
        assert_eq!(
            keys.ids,
            vec!["kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k".to_owned()]
        );
        assert!(keys.ring.get(&keys.ids[0]).is_some());
        assert_eq!(
            KeySet::from_jwks(jwks, 1).unwrap_err(),
            KeysError::TooMany { count: 2, max: 1 }
        );
        assert_eq!(
            KeySet::from_jwks(br#"{"keys":[]}"#, 8).unwrap_err(),
            KeysError::Empty
        );
        assert!(matches!(
            KeySet::from_jwks(b"<html>", 8),
            Err(KeysError::Format(_))
        ));
    }

    #[test]
    fn kept_keys_come_back_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let settings = super::super::SignatureSettings {
            directories: vec![super::super::DirectorySettings {
                url: "https://signer.example".into(),
                bot: Some("ExampleAgent".into()),
                jwks: None,
            }],
            ..Default::default()
        };
        let catalog = crate::catalog::Catalog::default();
        let trust = Trust::new(&settings, &catalog);
        let jwks = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
        let store = KeyStore::new(Some(dir.path().to_owned()));
        let url: Arc<str> = Arc::from("https://signer.example");
        store.put(&url, KeySet::from_jwks(jwks, 8).unwrap(), true);
        let after = KeyStore::new(Some(dir.path().to_owned()));
        assert!(after.get(&url).is_none());
        after.restore(&trust);
        assert_eq!(after.get(&url).unwrap().ids.len(), 1);
        assert_eq!(
            kept_name("https://a.example:8443/../x"),
            "a_example_8443____x.json"
        );
    }

    #[test]
    fn unlisted_directories_wait_apart_and_a_failed_one_is_not_wanted_again() {
        let store = KeyStore::new(None);
        for i in 0..5000 {
            store.want(&Directory::new(
                &format!("https://a{i}.example"),
                None,
                false,
            ));
        }
        assert_eq!(store.wanted_unlisted().len(), MAX_WANTED_UNLISTED);
        // A listed directory is still heard, and comes first.
        let listed = Directory::new("https://chatgpt.com", Some(Arc::from("ChatGPT-User")), true);
        store.want(&listed);
        assert!(store.is_wanted("https://chatgpt.com"));
        assert_eq!(&*store.wanted()[0], "https://chatgpt.com");
        // A failed unlisted directory leaves the queue and is not wanted again.
        let failed = store.wanted_unlisted()[0].clone();
        store.unlisted_failed(&failed);
        assert!(!store.wanted_unlisted().contains(&failed));
        store.want(&Directory::new(&failed, None, false));
        assert!(!store.wanted_unlisted().contains(&failed));
        // Keys put for a directory take it off the queue.
        let jwks = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
        store.put(&listed.url, KeySet::from_jwks(jwks, 8).unwrap(), false);
        assert!(!store.is_wanted("https://chatgpt.com"));
    }
}
