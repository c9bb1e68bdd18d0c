//! The reload service: keeps every site's robots.txt fresh, off the request path.
//!
//! It polls watched files (a change is in force within two polls), fetches origins' files every
//! `refresh`, and on SIGHUP re-reads the configuration and every robots.txt at once. It parses
//! and compiles, then swaps the whole snapshot in; a load that fails keeps the last good one.
//! Each outcome is logged when it changes, not every time it repeats.

use super::config::{RobotsSource, Settings, SiteFlags};
use super::site::{CatalogIndex, Site, Sites, Snapshot, SourceState};
use super::source::{
    after_fetch, AfterFetch, Fetched, FilePoll, FileWatch, OriginClient, FILE_POLL,
};
use super::state::{load_catalog, load_ranges, Global, Shared};
use super::state_dir::{self, Kept, KeptAnswer, KEEP_REFRESH};
use super::verify::RangesEntry;
use async_trait::async_trait;
use bytes::Bytes;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Where the configuration comes from, so that SIGHUP can read it again.
#[derive(Debug, Clone)]
pub struct ConfigSource {
    /// The file, if any (without one, SIGHUP reloads robots.txt files only).
    pub path: Option<PathBuf>,
    /// Flags that override the file.
    pub flags: SiteFlags,
}

/// The reload background service.
pub struct Reloader {
    shared: Arc<Shared>,
    config: ConfigSource,
    /// The settings in force (to tell what a reload changes).
    settings: Mutex<Settings>,
}

/// Per-site reload state, kept across polls.
struct Watch {
    site: Arc<Site>,
    file: FileWatch,
    client: Option<OriginClient>,
    next_fetch: Instant,
    fetching: bool,
    /// A SIGHUP came while a fetch was under way: that fetch's answer may predate it, so
    /// another follows as soon as it ends.
    fetch_again: bool,
    /// The last outcome logged, so that a repeat is not logged again.
    last_outcome: String,
    /// What the state directory holds for the site: the answer's state and SHA-256, and its
    /// fetch time, so that an unchanged answer is written again only hourly.
    kept: Option<(SourceState, String, SystemTime)>,
}

impl Watch {
    fn new(site: Arc<Site>) -> Watch {
        let file = match &site.settings.robots.source {
            RobotsSource::File(path) => FileWatch::loaded(path),
            _ => FileWatch::default(),
        };
        let from_origin = site.settings.robots.source == RobotsSource::Origin;
        let client = match OriginClient::new(&site.settings) {
            Ok(client) if from_origin => client,
            Ok(_) => None,
            Err(e) => {
                log::error!("{e}");
                None
            }
        };
        let snapshot = site.snapshot.load();
        let pending = snapshot.state == SourceState::Pending;
        let kept = match snapshot.fetched_at {
            Some(at) if snapshot.restored => Some((snapshot.state, snapshot.sha256.clone(), at)),
            _ => None,
        };
        Watch {
            site,
            file,
            client,
            next_fetch: Instant::now(),
            fetching: false,
            fetch_again: false,
            last_outcome: if pending {
                String::new()
            } else {
                "loaded".into()
            },
            kept,
        }
    }
}

impl Reloader {
    /// A reloader for the sites in `shared`, configured by `settings` from `config`.
    pub fn new(shared: Arc<Shared>, config: ConfigSource, settings: Settings) -> Reloader {
        Reloader {
            shared,
            config,
            settings: Mutex::new(settings),
        }
    }

    fn watches(&self, keep: &mut HashMap<String, Watch>) {
        let sites = self.shared.sites.load();
        let mut fresh = HashMap::new();
        for site in &sites.all {
            let name = site.settings.name.clone();
            let watch = match keep.remove(&name) {
                Some(watch) if Arc::ptr_eq(&watch.site, site) => watch,
                _ => Watch::new(site.clone()),
            };
            fresh.insert(name, watch);
        }
        *keep = fresh;
    }

    /// Logs an outcome when it differs from the last one logged for the site.
    fn note(watch: &mut Watch, outcome: String, error: bool) {
        if watch.last_outcome != outcome {
            let site = &watch.site.settings.name;
            if error {
                log::warn!("site {site}: robots.txt {outcome}");
            } else {
                log::info!("site {site}: robots.txt {outcome}");
            }
            watch.last_outcome = outcome;
        }
    }

    /// Builds and swaps in a snapshot; `false` (and the old one kept) when it cannot be built.
    fn install(&self, watch: &mut Watch, bytes: Bytes, state: SourceState) -> bool {
        let site = &watch.site;
        let name = site.settings.name.as_str();
        let current = site.snapshot.load();
        // A restored answer that the origin confirms is rebuilt: it is no longer a copy from
        // before the restart.
        if current.state == state && current.source == bytes && !current.restored {
            self.shared
                .metrics
                .robots_reloads
                .with_label_values(&[name, "unchanged"])
                .inc();
            self.shared.touch(name);
            return true;
        }
        let catalog = self.shared.catalog.load();
        match Snapshot::build(&site.settings, &catalog, bytes, state) {
            Ok(mut snapshot) => {
                if site.settings.robots.source == RobotsSource::Origin
                    && state != SourceState::Unreachable
                {
                    snapshot.fetched_at = Some(SystemTime::now());
                }
                let result = match state {
                    SourceState::Loaded => "ok",
                    other => other.as_str(),
                };
                self.shared
                    .metrics
                    .robots_reloads
                    .with_label_values(&[name, result])
                    .inc();
                self.shared.publish(name, &snapshot);
                let outcome = (state == SourceState::Loaded).then(|| {
                    format!(
                        "loaded: {} rules, {} problems, sha256 {}",
                        snapshot.robots.file().rules.len(),
                        snapshot.robots.problems().len(),
                        snapshot.sha256.get(..12).unwrap_or_default()
                    )
                });
                site.replace(snapshot);
                // Stand-ins are logged by the caller, which knows why.
                if let Some(outcome) = outcome {
                    Self::note(watch, outcome, false);
                }
                true
            }
            Err(e) => {
                self.shared
                    .metrics
                    .robots_reloads
                    .with_label_values(&[name, "error"])
                    .inc();
                Self::note(watch, format!("not reloaded: {e}"), true);
                false
            }
        }
    }

    /// Reads a watched file and installs it; a file that cannot be read keeps the old one.
    fn load_file(&self, watch: &mut Watch) {
        let RobotsSource::File(path) = &watch.site.settings.robots.source else {
            return;
        };
        let path = path.clone();
        match std::fs::read(&path) {
            Ok(bytes) => {
                watch.file.mark_loaded(&path);
                self.install(watch, Bytes::from(bytes), SourceState::Loaded);
            }
            Err(e) => {
                let name = watch.site.settings.name.as_str();
                self.shared
                    .metrics
                    .robots_reloads
                    .with_label_values(&[name, "error"])
                    .inc();
                Self::note(
                    watch,
                    format!(
                        "cannot be read ({}): keeping the last good file: {e}",
                        path.display()
                    ),
                    true,
                );
            }
        }
    }

    /// Applies what a fetch from the origin found (RFC 9309 §2.3.1), and keeps a good answer
    /// in the state directory.
    fn apply_fetch(&self, watch: &mut Watch, fetched: Fetched) {
        watch.fetching = false;
        let robots = &watch.site.settings.robots;
        // `refresh` is at most 24 hours (the configuration checks it); the check keeps any
        // other value from overflowing.
        let now = Instant::now();
        watch.next_fetch = now.checked_add(robots.refresh).unwrap_or(now);
        let on_unreachable = robots.on_unreachable;
        let current = watch.site.snapshot.load().state;
        match (after_fetch(&fetched, current, on_unreachable), &fetched) {
            (AfterFetch::Keep, Fetched::Unreachable(why)) => {
                let name = watch.site.settings.name.clone();
                self.shared
                    .metrics
                    .robots_reloads
                    .with_label_values(&[&name, "unreachable"])
                    .inc();
                Self::note(
                    watch,
                    format!("unreachable ({why}): keeping the last good file"),
                    true,
                );
            }
            (AfterFetch::Keep, _) => {}
            (AfterFetch::Install(bytes, state), _) => {
                let installed = self.install(watch, bytes.clone(), state);
                match &fetched {
                    Fetched::Body(_) if installed => {
                        self.keep(watch, KeptAnswer::Body(bytes), state);
                    }
                    Fetched::Body(_) => {}
                    Fetched::Unavailable(why) => {
                        if installed {
                            self.keep(watch, KeptAnswer::Unavailable(why.clone()), state);
                        }
                        Self::note(watch, format!("unavailable ({why}): no restrictions"), true);
                    }
                    Fetched::Unreachable(why) => {
                        Self::note(
                            watch,
                            format!("unreachable ({why}): {on_unreachable:?}"),
                            true,
                        );
                    }
                }
            }
        }
    }

    /// Writes a site's answer to the state directory when it changed, or when the copy there is
    /// more than [`KEEP_REFRESH`] older than this fetch. A failed write is logged, and retried
    /// with the next fetch.
    fn keep(&self, watch: &mut Watch, answer: KeptAnswer, state: SourceState) {
        let Some(dir) = &self.shared.state_dir else {
            return;
        };
        let snapshot = watch.site.snapshot.load();
        let now = SystemTime::now();
        let fresh = watch.kept.as_ref().is_some_and(|(kept_state, sha, at)| {
            *kept_state == state
                && *sha == snapshot.sha256
                && now.duration_since(*at).unwrap_or_default() < KEEP_REFRESH
        });
        if fresh {
            return;
        }
        let kept = Kept {
            answer,
            url: watch
                .client
                .as_ref()
                .map_or_else(String::new, |c| c.url().to_owned()),
            fetched_at: now,
        };
        let name = watch.site.settings.name.clone();
        match dir.write(&name, &kept) {
            Ok(()) => watch.kept = Some((state, snapshot.sha256.clone(), now)),
            Err(e) => Self::note(watch, format!("not kept: {e}"), true),
        }
    }

    /// Starts the fetches that are due; results come back on `results`.
    fn start_fetches(
        &self,
        watches: &mut HashMap<String, Watch>,
        results: &mpsc::UnboundedSender<(String, Arc<Site>, Fetched)>,
        force: bool,
    ) {
        let now = Instant::now();
        for (name, watch) in watches.iter_mut() {
            let Some(client) = &watch.client else {
                continue;
            };
            if watch.fetching {
                watch.fetch_again |= force;
                continue;
            }
            if !(force || now >= watch.next_fetch) {
                continue;
            }
            watch.fetching = true;
            let client = client.clone();
            let results = results.clone();
            let (name, site) = (name.clone(), watch.site.clone());
            tokio::spawn(async move {
                let fetched = client.fetch().await;
                let _ = results.send((name, site, fetched));
            });
        }
    }

    /// Re-reads the configuration. A bad one is reported and the old one keeps serving.
    fn reload_config(&self) -> Result<(), String> {
        let Some(path) = &self.config.path else {
            return Ok(());
        };
        let mut settings = Settings::from_file(path).map_err(|e| e.to_string())?;
        self.config
            .flags
            .apply(&mut settings)
            .map_err(|e| e.to_string())?;
        let catalog = load_catalog(&settings).map_err(|e| e.to_string())?;
        let catalog = CatalogIndex::new(catalog).map_err(|e| e.to_string())?;
        let mut old = match self.settings.lock() {
            Ok(old) => old,
            Err(poisoned) => poisoned.into_inner(),
        };
        if settings.listen != old.listen
            || settings.tls_listen != old.tls_listen
            || settings.h2c != old.h2c
            || settings.metrics_listen != old.metrics_listen
            || settings.forward_auth_listen != old.forward_auth_listen
            || settings.proxy_protocol_listen != old.proxy_protocol_listen
            || settings.pingora != old.pingora
            || settings.access_log != old.access_log
            || settings.state_dir != old.state_dir
        {
            log::warn!("listeners, access log, state_dir and pingora settings change only on restart; the rest is applied");
        }
        if settings.state != old.state {
            log::warn!("the state store changes only on restart; the rest is applied");
        }
        // The ledger is opened at start, in the state directory in force then.
        if self.shared.ledger.is_none() {
            if let Some(site) = settings.sites.iter().find(|s| s.pay_per_crawl.is_some()) {
                return Err(format!(
                    "site {}: pay_per_crawl needs the ledger, which is opened at start in the state directory, and this process started without one: restart crawlgate with state_dir set",
                    site.name
                ));
            }
        }
        let global = Global::new(
            &settings,
            &catalog.catalog,
            &self.shared.metrics,
            &self.shared.store,
        )
        .map_err(|e| e.to_string())?;
        let catalog_changed = self.shared.catalog.load().catalog != catalog.catalog;
        let current = self.shared.sites.load();
        let mut sites = Vec::new();
        for site_settings in &settings.sites {
            let existing = current.by_name(&site_settings.name);
            if let Some(site) =
                existing.filter(|s| s.settings == *site_settings && !catalog_changed)
            {
                sites.push(site.clone());
                continue;
            }
            let site = Site::new(site_settings.clone(), &catalog).map_err(|e| e.to_string())?;
            // The file as loaded carries over to the new site while its source is the same
            // (its managed groups are composed anew with the new settings); without one in
            // memory, the state directory's. A crawler keeps what it read: the same file served
            // keeps its load time and the file before it; another one (the managed groups
            // changed) makes the old one the previous file, whose readers keep its grace.
            let mut carried = false;
            if let Some(old) = existing {
                let previous = old.snapshot.load_full();
                if old.settings.robots.source == site_settings.robots.source
                    && previous.state != SourceState::Pending
                {
                    if let Ok(mut snapshot) = Snapshot::build(
                        site_settings,
                        &catalog,
                        previous.source.clone(),
                        previous.state,
                    ) {
                        snapshot.fetched_at = previous.fetched_at;
                        snapshot.restored = previous.restored;
                        if snapshot.bytes == previous.bytes {
                            snapshot.loaded_at = previous.loaded_at;
                            site.previous.store(old.previous.load_full());
                        } else {
                            site.previous.store(Some(previous));
                        }
                        site.snapshot.store(Arc::new(snapshot));
                        carried = true;
                    }
                }
            }
            if !carried && site_settings.robots.source == RobotsSource::Origin {
                if let Some(dir) = &self.shared.state_dir {
                    state_dir::restore(&site, &catalog, dir);
                }
            }
            sites.push(Arc::new(site));
        }
        for site in &sites {
            self.shared
                .publish(&site.settings.name, &site.snapshot.load());
            self.shared.publish_refresh(&site.settings);
        }
        self.shared.catalog.store(Arc::new(catalog));
        self.shared.global.store(Arc::new(global));
        self.shared
            .connections
            .configure(&settings.clients, &settings.trusted_proxies);
        self.shared
            .signatures
            .set_trust(super::verify::signature::directory::Trust::new(
                &settings.verification.signatures,
                &self.shared.catalog.load().catalog,
            ));
        self.shared.sites.store(Arc::new(Sites::new(sites)));
        *old = settings;
        Ok(())
    }

    async fn run(&self, mut shutdown: ShutdownWatch) {
        let mut hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        {
            Ok(signal) => {
                // Said once the signal is handled: before, a SIGHUP would end the process.
                log::info!("reload: SIGHUP reloads the configuration and every robots.txt");
                Some(signal)
            }
            Err(e) => {
                log::error!("cannot watch SIGHUP, reload on signal is off: {e}");
                None
            }
        };
        let mut watches = HashMap::new();
        self.watches(&mut watches);
        let mut range_files = RangeWatches::default();
        let (results_tx, mut results) = mpsc::unbounded_channel();
        let mut tick = tokio::time::interval(FILE_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                Some(()) = async { match hangup.as_mut() { Some(h) => h.recv().await, None => None } } => {
                    log::info!("SIGHUP: reloading the configuration and every robots.txt");
                    match self.reload_config() {
                        Ok(()) => self.shared.metrics.config_reloads.with_label_values(&["ok"]).inc(),
                        Err(e) => {
                            self.shared.metrics.config_reloads.with_label_values(&["error"]).inc();
                            log::error!("configuration not reloaded, the old one keeps serving: {e}");
                        }
                    }
                    if let Some(log) = &self.shared.access_log {
                        log.reopen();
                    }
                    if let Some(ledger) = &self.shared.ledger {
                        ledger.rotate();
                    }
                    self.watches(&mut watches);
                    for watch in watches.values_mut() {
                        self.load_file(watch);
                    }
                    self.start_fetches(&mut watches, &results_tx, true);
                }
                Some((name, site, fetched)) = results.recv() => {
                    // A fetch for a site that was replaced meanwhile is dropped.
                    if let Some(watch) = watches.get_mut(&name).filter(|w| Arc::ptr_eq(&w.site, &site)) {
                        self.apply_fetch(watch, fetched);
                        if std::mem::take(&mut watch.fetch_again) {
                            watch.next_fetch = Instant::now();
                            self.start_fetches(&mut watches, &results_tx, false);
                        }
                    }
                }
                _ = tick.tick() => {
                    range_files.poll(&self.shared);
                    for watch in watches.values_mut() {
                        if let RobotsSource::File(path) = &watch.site.settings.robots.source {
                            let path = path.clone();
                            if watch.file.poll(&path) != FilePoll::Unchanged {
                                self.load_file(watch);
                            }
                        }
                    }
                    self.start_fetches(&mut watches, &results_tx, false);
                }
            }
        }
    }
}

/// The published range files of the verifier in force, watched like robots.txt files.
#[derive(Default)]
struct RangeWatches {
    /// The verifier they belong to (a configuration reload brings a new one).
    global: Option<Arc<Global>>,
    files: Vec<(Arc<RangesEntry>, FileWatch)>,
}

impl RangeWatches {
    fn poll(&mut self, shared: &Shared) {
        let global = shared.global.load_full();
        if !self
            .global
            .as_ref()
            .is_some_and(|g| Arc::ptr_eq(g, &global))
        {
            self.files = global
                .verifier
                .ranges()
                .map(|entry| (entry.clone(), FileWatch::loaded(&entry.file)))
                .collect();
            self.global = Some(global);
        }
        for (entry, watch) in &mut self.files {
            if watch.poll(&entry.file) != FilePoll::Unchanged && load_ranges(entry, &shared.metrics)
            {
                watch.mark_loaded(&entry.file);
            }
        }
    }
}

#[async_trait]
impl BackgroundService for Reloader {
    async fn start(&self, shutdown: ShutdownWatch) {
        self.run(shutdown).await;
    }
}
