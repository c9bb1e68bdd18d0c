//! Fetching key directories, off the request path and hardened, since a directory's URL comes
//! from a request header: `https` only, no redirects, only a `200` with the directory media
//! type counts, no loopback, private or link-local address (unless `allow_private`), a size
//! and key-count limit and a timeout. A failed fetch keeps the keys held. The background
//! service fetches configured directories from the start, the others once a request names
//! them, and each again once its keys are `refresh` old.
//!
//! Fetches run concurrently, at most `max_fetches` at once for listed directories and as many
//! again, apart, for unlisted ones (`fetch_unlisted`), so that directories an attacker names,
//! however slow, never delay a listed one. An unlisted directory that cannot be fetched leaves
//! the queue for a while ([`super::keys::UNLISTED_BACKOFF`]) instead of being fetched again
//! every few seconds.

use super::directory::{Directory, Trust, MEDIA_TYPE};
use super::keys::{KeySet, KeysError};
use super::{SignatureSettings, Signatures};
use crate::proxy::source::{error_chain, FilePoll, FileWatch};
use crate::proxy::verify::reverse_dns_can_vouch;
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use prometheus::{IntCounterVec, IntGaugeVec};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How soon a directory that could not be fetched is tried again (or `refresh`, if sooner).
const RETRY: Duration = Duration::from_secs(10);

/// How many directories nobody named are held at most (with `fetch_unlisted`).
const MAX_UNLISTED: usize = 1000;

/// A directory fetch that failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Refused before or while connecting: a private address, or a limit.
    #[error("{url}: refused: {why}")]
    Refused {
        /// The directory's URL.
        url: String,
        /// Why.
        why: String,
    },
    /// The fetch failed or the answer is not a directory.
    #[error("{url}: {why}")]
    Failed {
        /// The directory's URL.
        url: String,
        /// Why.
        why: String,
    },
    /// The answer is not a usable key set.
    #[error("{url}: {source}")]
    Keys {
        /// The directory's URL.
        url: String,
        /// Why.
        source: KeysError,
    },
}

impl FetchError {
    /// The `result` label of `crawlgate_signature_directory_fetches_total`.
    pub fn label(&self) -> &'static str {
        match self {
            FetchError::Refused { .. } => "refused",
            FetchError::Failed { .. } | FetchError::Keys { .. } => "error",
        }
    }
}

/// A resolver that drops the addresses a directory may not be on.
struct Guarded {
    allow_private: bool,
}

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let allow_private = self.allow_private;
        Box::pin(async move {
            let lookup = tokio::task::spawn_blocking(move || {
                (host.as_str(), 0)
                    .to_socket_addrs()
                    .map(|a| a.collect::<Vec<_>>())
            })
            .await
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)??;
            let allowed: Vec<SocketAddr> = lookup
                .into_iter()
                .filter(|addr| allow_private || reverse_dns_can_vouch(addr.ip()))
                .collect();
            if allowed.is_empty() {
                return Err("the name resolves only to loopback, private or link-local addresses (verification.signatures.allow_private is off)".into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The directory client cannot be built.
#[derive(Debug, thiserror::Error)]
#[error("verification.signatures: cannot build the directory client: {0}")]
pub struct ClientError(pub String);

/// The HTTP client of directory fetches, built from the settings.
pub fn client(settings: &SignatureSettings) -> Result<reqwest::Client, ClientError> {
    let mut builder = reqwest::Client::builder()
        .https_only(true)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout)
        .user_agent(concat!("crawlgate/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Arc::new(Guarded {
            allow_private: settings.allow_private,
        }));
    if let Some(file) = &settings.ca_file {
        let pem = std::fs::read(file)
            .map_err(|e| ClientError(format!("ca_file {}: {e}", file.display())))?;
        let certificates = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| ClientError(format!("ca_file {}: {e}", file.display())))?;
        for certificate in certificates {
            builder = builder.add_root_certificate(certificate);
        }
    }
    builder.build().map_err(|e| ClientError(e.to_string()))
}

/// Fetches one directory's keys.
pub async fn fetch(
    client: &reqwest::Client,
    directory: &Directory,
    settings: &SignatureSettings,
) -> Result<KeySet, FetchError> {
    let url = directory.fetch_url.clone();
    let refused = |why: String| FetchError::Refused {
        url: url.clone(),
        why,
    };
    let failed = |why: String| FetchError::Failed {
        url: url.clone(),
        why,
    };
    let parsed = reqwest::Url::parse(&url).map_err(|e| refused(e.to_string()))?;
    if parsed.scheme() != "https" {
        return Err(refused("only https directories are fetched".into()));
    }
    // An address literal never reaches the resolver.
    if let Some(host) = parsed.host_str() {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            if !settings.allow_private && !reverse_dns_can_vouch(ip) {
                return Err(refused(format!(
                    "{ip} is a loopback, private or link-local address (verification.signatures.allow_private is off)"
                )));
            }
        }
    }
    let mut response = client
        .get(parsed)
        .header("accept", MEDIA_TYPE)
        .send()
        .await
        .map_err(|e| {
            let text = error_chain(&e);
            if text.contains("allow_private") {
                refused(text)
            } else {
                failed(text)
            }
        })?;
    if response.status().as_u16() != 200 {
        return Err(failed(format!(
            "answered {} (only 200 counts; redirects are not followed)",
            response.status().as_u16()
        )));
    }
    let media_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim)
        .unwrap_or_default()
        .to_ascii_lowercase();
    if media_type != MEDIA_TYPE {
        return Err(failed(format!(
            "served as `{media_type}`, not {MEDIA_TYPE}"
        )));
    }
    if response
        .content_length()
        .is_some_and(|length| length > settings.max_bytes as u64)
    {
        return Err(refused(format!(
            "larger than {} bytes (verification.signatures.max_bytes)",
            settings.max_bytes
        )));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| failed(error_chain(&e)))?
    {
        if body.len() + chunk.len() > settings.max_bytes {
            return Err(refused(format!(
                "larger than {} bytes (verification.signatures.max_bytes)",
                settings.max_bytes
            )));
        }
        body.extend_from_slice(&chunk);
    }
    KeySet::from_jwks(&body, settings.max_keys).map_err(|source| FetchError::Keys {
        url: url.clone(),
        source,
    })
}

/// The background service that keeps directories' keys fresh.
pub struct Fetcher {
    signatures: Arc<Signatures>,
    fetches: IntCounterVec,
    keys: IntGaugeVec,
}

/// The fetches running, by directory URL: a directory is fetched once at a time.
type Running = Arc<Mutex<HashSet<Arc<str>>>>;

fn lock(running: &Running) -> std::sync::MutexGuard<'_, HashSet<Arc<str>>> {
    match running.lock() {
        Ok(running) => running,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The fetch slots of listed directories, and apart, of unlisted ones.
struct Slots {
    listed: Arc<Semaphore>,
    unlisted: Arc<Semaphore>,
}

impl Slots {
    fn new(max: usize) -> Slots {
        Slots {
            listed: Arc::new(Semaphore::new(max)),
            unlisted: Arc::new(Semaphore::new(max)),
        }
    }

    fn of(&self, directory: &Directory) -> &Arc<Semaphore> {
        if directory.listed {
            &self.listed
        } else {
            &self.unlisted
        }
    }
}

/// What one fetch needs, moved into its task.
#[derive(Clone)]
struct Job {
    signatures: Arc<Signatures>,
    fetches: IntCounterVec,
    keys: IntGaugeVec,
    client: reqwest::Client,
    settings: SignatureSettings,
    running: Running,
}

impl Job {
    /// Fetches one directory and keeps what came back; frees its slot and wakes the fetcher.
    async fn run(self, directory: Arc<Directory>, slot: tokio::sync::OwnedSemaphorePermit) {
        let outcome = fetch(&self.client, &directory, &self.settings).await;
        let store = &self.signatures.keys;
        let result = match outcome {
            Ok(keys) => {
                log::info!(
                    "signatures: {} keys from {}",
                    keys.ids.len(),
                    directory.fetch_url
                );
                // The gauge after the keys are held: a reader that sees it can verify with them.
                let count = i64::try_from(keys.ids.len()).unwrap_or(i64::MAX);
                store.put(&directory.url, keys, true);
                self.keys.with_label_values(&[&directory.label]).set(count);
                "ok"
            }
            Err(e) => {
                let held = store.get(&directory.url).is_some();
                log::warn!(
                    "signatures: cannot fetch the key directory {e}{}",
                    if held {
                        " (the keys held are kept)"
                    } else {
                        ""
                    }
                );
                if !directory.listed {
                    store.unlisted_failed(&directory.url);
                }
                e.label()
            }
        };
        self.fetches
            .with_label_values(&[&directory.label, result])
            .inc();
        lock(&self.running).remove(&directory.url);
        drop(slot);
        store.wake.notify_one();
    }
}

impl Fetcher {
    /// A fetcher for `signatures`, counting in these metrics.
    pub fn new(signatures: Arc<Signatures>, fetches: IntCounterVec, keys: IntGaugeVec) -> Fetcher {
        Fetcher {
            signatures,
            fetches,
            keys,
        }
    }

    /// The directories due for a fetch now, listed ones first.
    fn due(&self, attempts: &HashMap<Arc<str>, Instant>) -> Vec<Arc<Directory>> {
        let trust = self.signatures.trust();
        let settings = &trust.settings;
        let store = &self.signatures.keys;
        let retry = RETRY.min(settings.refresh);
        let tried_lately =
            |url: &Arc<str>| attempts.get(url).is_some_and(|at| at.elapsed() < retry);
        let mut due = Vec::new();
        for directory in trust.directories() {
            if directory.jwks.is_some() || tried_lately(&directory.url) {
                continue;
            }
            let fetch = match store.get(&directory.url) {
                Some(keys) => keys.age() >= settings.refresh,
                None => directory.eager || store.is_wanted(&directory.url),
            };
            if fetch {
                due.push(directory.clone());
            }
        }
        let all = store.all();
        let unlisted_held = all.keys().filter(|url| trust.get(url).is_none()).count();
        for url in &store.wanted_unlisted() {
            if trust.get(url).is_some() {
                // Listed since a request named it: wanted as such next time.
                store.unwant(url);
                continue;
            }
            if !settings.fetch_unlisted || unlisted_held >= MAX_UNLISTED {
                store.unwant(url);
                continue;
            }
            if !tried_lately(url) {
                due.push(Arc::new(Directory::new(url, None, false)));
            }
        }
        // Unlisted directories held are refreshed too, while fetching them is on.
        if settings.fetch_unlisted {
            for (url, keys) in all.iter() {
                if trust.get(url).is_none() && keys.age() >= settings.refresh && !tried_lately(url)
                {
                    due.push(Arc::new(Directory::new(url, None, false)));
                }
            }
        }
        due
    }

    async fn run(&self, mut shutdown: ShutdownWatch) {
        let mut attempts: HashMap<Arc<str>, Instant> = HashMap::new();
        let mut built: Option<(SignatureSettings, reqwest::Client, Slots)> = None;
        let mut jwks_files = JwksWatches::default();
        let running: Running = Arc::default();
        loop {
            let trust = self.signatures.trust();
            let settings = &trust.settings;
            jwks_files.poll(&trust, &self.signatures);
            if built.as_ref().is_none_or(|(s, _, _)| s != settings) {
                match client(settings) {
                    Ok(client) => {
                        built = Some((settings.clone(), client, Slots::new(settings.max_fetches)))
                    }
                    Err(e) => {
                        log::error!("{e}");
                        built = None;
                    }
                }
            }
            // What was tried longer ago than any retry waits no longer matters.
            let forget = RETRY.max(settings.refresh);
            attempts.retain(|_, at| at.elapsed() < forget);
            if let Some((settings, client, slots)) = &built {
                let job = Job {
                    signatures: self.signatures.clone(),
                    fetches: self.fetches.clone(),
                    keys: self.keys.clone(),
                    client: client.clone(),
                    settings: settings.clone(),
                    running: running.clone(),
                };
                for directory in self.due(&attempts) {
                    if lock(&running).contains(&directory.url) {
                        continue;
                    }
                    // No slot free in its part: it waits for the next round.
                    let Ok(slot) = slots.of(&directory).clone().try_acquire_owned() else {
                        continue;
                    };
                    attempts.insert(directory.url.clone(), Instant::now());
                    lock(&running).insert(directory.url.clone());
                    tokio::spawn(job.clone().run(directory, slot));
                }
            }
            for directory in trust.directories() {
                if let Some(keys) = self.signatures.keys.get(&directory.url) {
                    self.keys
                        .with_label_values(&[&directory.label])
                        .set(i64::try_from(keys.ids.len()).unwrap_or(i64::MAX));
                }
            }
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = self.signatures.keys.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }
}

/// The JWKS files of the directories trusted, watched like the published-ranges files: a
/// file replaced or rewritten is read again once it holds still, and a file that cannot be used
/// keeps the keys read before.
#[derive(Default)]
struct JwksWatches {
    /// The trust the watches were made for: a reload makes new ones (files read then).
    trust: Option<Arc<Trust>>,
    files: Vec<(Arc<str>, PathBuf, FileWatch)>,
}

impl JwksWatches {
    fn poll(&mut self, trust: &Arc<Trust>, signatures: &Signatures) {
        if !self.trust.as_ref().is_some_and(|t| Arc::ptr_eq(t, trust)) {
            self.files = trust
                .directories()
                .filter_map(|directory| {
                    let file = directory.jwks.clone()?;
                    let watch = FileWatch::loaded(&file);
                    Some((directory.url.clone(), file, watch))
                })
                .collect();
            self.trust = Some(trust.clone());
        }
        for (url, file, watch) in &mut self.files {
            if watch.poll(file) != FilePoll::Unchanged
                && signatures
                    .keys
                    .load_jwks_file(url, file, trust.settings.max_keys)
            {
                log::info!("signatures: {url}: keys read again from {}", file.display());
                watch.mark_loaded(file);
            }
        }
    }
}

#[async_trait]
impl BackgroundService for Fetcher {
    async fn start(&self, shutdown: ShutdownWatch) {
        self.run(shutdown).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn private_and_plain_http_directories_are_refused_before_connecting() {
        let settings = SignatureSettings::default();
        let client = client(&settings).unwrap();
        for url in [
            "https://127.0.0.1:9",
            "https://[::1]:9",
            "https://10.0.0.1",
            "https://169.254.169.254",
        ] {
            let directory = Directory::new(url, None, true);
            let error = fetch(&client, &directory, &settings).await.unwrap_err();
            assert_eq!(error.label(), "refused", "{url}: {error}");
        }
        let localhost = Directory::new("https://localhost:9", None, true);
        let error = fetch(&client, &localhost, &settings).await.unwrap_err();
        assert!(error.to_string().contains("allow_private"), "{error}");
        let plain = Directory {
            fetch_url: "http://signer.example/".into(),
            ..Directory::new("https://signer.example", None, true)
        };
        assert_eq!(
            fetch(&client, &plain, &settings).await.unwrap_err().label(),
            "refused"
        );
    }
}
