//! The state the proxy's services share: the sites (swapped whole on a config reload), the
//! catalog, the metrics, the access log and the state store.

use super::access_log::AccessLog;
use super::client::TrustedProxies;
use super::config::{ClientSettings, PolitenessSettings, RobotsSource, Settings};
use super::connection::Registry;
use super::metrics::Metrics;
use super::site::{CatalogIndex, Site, SiteError, Sites, Snapshot, SourceState};
use super::state_dir::{self, StateDir};
use super::store::{self, StateStore};
use super::verify::dns::{DnsError, DnsMetrics, DnsVerifier};
use super::verify::ranges::RangeSet;
use super::verify::signature::directory::Trust;
use super::verify::signature::Signatures;
use super::verify::{RangesEntry, Verifier};
use crate::catalog::{Catalog, CatalogError};
use crate::policy::Action;
use arc_swap::{ArcSwap, ArcSwapOption};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

/// The process-wide settings that a configuration reload replaces whole.
#[derive(Debug)]
pub struct Global {
    /// Whose forwarding headers are believed.
    pub trusted: TrustedProxies,
    /// How crawlers are verified.
    pub verifier: Verifier,
    /// What a spoofed crawler gets.
    pub on_spoofed: Action,
    /// Client timeouts (the connection limits are the connection guard's).
    pub clients: ClientSettings,
}

impl Global {
    /// Builds the global settings; range files are read now (a missing one is logged and left
    /// unread: its crawler is unverifiable by ranges until the file appears). Reverse-DNS
    /// outcomes are kept in `store`, which outlives every reload.
    pub fn new(
        settings: &Settings,
        catalog: &Catalog,
        metrics: &Metrics,
        store: &Arc<dyn StateStore>,
    ) -> Result<Global, DnsError> {
        let verification = &settings.verification;
        let ranges = verification
            .ranges
            .iter()
            .map(|(token, spec)| {
                let url = spec.url.clone().or_else(|| {
                    catalog
                        .get(token)
                        .and_then(|entry| entry.verify.as_ref())
                        .and_then(|verify| verify.ranges_url.clone())
                });
                let entry = RangesEntry {
                    token: token.clone(),
                    file: spec.file.clone(),
                    url,
                    set: ArcSwapOption::empty(),
                };
                load_ranges(&entry, metrics);
                entry
            })
            .collect();
        let reverse_dns = reverse_dns_domains(catalog, &verification.reverse_dns);
        let configured = verification
            .reverse_dns
            .iter()
            .any(|(_, domains)| !domains.is_empty());
        let dns = if reverse_dns.is_empty() {
            None
        } else {
            let dns_metrics = DnsMetrics::of(metrics);
            match DnsVerifier::new(verification.dns.clone(), dns_metrics, store.clone()) {
                Ok(dns) => Some(dns),
                Err(e) if configured => return Err(e),
                // The catalog's domains are a default: without a resolver they wait.
                Err(e) => {
                    log::warn!("{e}: crawlers are not verified by reverse DNS");
                    None
                }
            }
        };
        Ok(Global {
            trusted: settings.trusted_proxies.clone(),
            verifier: Verifier::new(ranges, reverse_dns, dns),
            on_spoofed: verification.on_spoofed,
            clients: settings.clients,
        })
    }
}

/// The reverse-DNS domains of every crawler: the catalog's (each operator's own documentation,
/// see `conf/bots.yaml`), each replaced by the configuration's list for that crawler, which may
/// be empty to turn it off. Keyed by the token as written.
pub fn reverse_dns_domains(
    catalog: &Catalog,
    configured: &[(String, Vec<String>)],
) -> HashMap<String, Vec<String>> {
    let mut domains: HashMap<String, Vec<String>> = catalog
        .bots
        .iter()
        .filter_map(|entry| {
            let verify = entry.verify.as_ref()?;
            (!verify.reverse_dns.is_empty())
                .then(|| (entry.token.clone(), verify.reverse_dns.clone()))
        })
        .collect();
    for (token, list) in configured {
        domains.retain(|known, _| !known.eq_ignore_ascii_case(token));
        if !list.is_empty() {
            domains.insert(token.clone(), list.clone());
        }
    }
    domains
}

/// Reads a crawler's range file into its entry; a file that cannot be used keeps the set in force.
pub fn load_ranges(entry: &RangesEntry, metrics: &Metrics) -> bool {
    let outcome = std::fs::read(&entry.file)
        .map_err(|e| e.to_string())
        .and_then(|bytes| RangeSet::from_json(&bytes).map_err(|e| e.to_string()));
    match outcome {
        Ok(set) => {
            log::info!(
                "{} ranges: {} prefixes from {}",
                entry.token,
                set.len(),
                entry.file.display()
            );
            entry.set.store(Some(Arc::new(set)));
            metrics
                .ranges_reloads
                .with_label_values(&[&entry.token, "ok"])
                .inc();
            true
        }
        Err(e) => {
            log::warn!(
                "{} ranges: cannot use {}: {e}",
                entry.token,
                entry.file.display()
            );
            metrics
                .ranges_reloads
                .with_label_values(&[&entry.token, "error"])
                .inc();
            false
        }
    }
}

/// What every service of one crawlgate process shares.
#[derive(Debug)]
pub struct Shared {
    /// The sites in force.
    pub sites: ArcSwap<Sites>,
    /// The crawler catalog in force, with its shared automaton.
    pub catalog: ArcSwap<CatalogIndex>,
    /// The metrics.
    pub metrics: Metrics,
    /// The access log, when configured.
    pub access_log: Option<AccessLog>,
    /// Trusted proxies and verification, replaced whole on a configuration reload.
    pub global: ArcSwap<Global>,
    /// Crawl-delay slots, robots.txt fetches and reverse-DNS outcomes: this process's memory or
    /// a store a fleet shares; survives every reload.
    pub store: Arc<dyn StateStore>,
    /// How long fetches count and grace lasts (set at startup).
    pub politeness_settings: PolitenessSettings,
    /// Where origins' last good robots.txt answers are kept (set at startup; none when
    /// `state_dir` is not set or cannot be used).
    pub state_dir: Option<StateDir>,
    /// Web Bot Auth: the directories believed (replaced on a reload), their keys and the
    /// nonces seen (kept across reloads).
    pub signatures: Arc<Signatures>,
    /// Client connections, their limits and the requests in flight.
    pub connections: Arc<Registry>,
    /// The ledger of pay-per-crawl charges, in the state directory (none without one: a site
    /// that prices pages needs one, which the configuration checks).
    pub ledger: Option<Arc<super::ledger::Ledger>>,
}

/// Startup failed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The catalog cannot be read.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// A site cannot be set up.
    #[error(transparent)]
    Site(#[from] SiteError),
    /// The DNS resolver cannot be set up.
    #[error(transparent)]
    Dns(#[from] DnsError),
    /// The catalog's automaton cannot be built.
    #[error("catalog: {0}")]
    Classifier(crate::agent::ClassifierError),
    /// The state store cannot be set up.
    #[error(transparent)]
    Store(#[from] store::redis::StoreError),
}

/// The state directory, when one is set (a folder that cannot be written is reported when an
/// answer cannot be kept).
fn open_state_dir(settings: &Settings) -> Option<StateDir> {
    let Some(path) = &settings.state_dir else {
        if settings
            .sites
            .iter()
            .any(|site| site.robots.source == RobotsSource::Origin)
        {
            log::info!(
                "no state_dir: origins' robots.txt is not kept across restarts (each such site disallows everything until its first fetch)"
            );
        }
        return None;
    };
    let dir = StateDir::new(path);
    if let Err(e) = dir.check_writable() {
        log::warn!(
            "state_dir {}: origins' robots.txt cannot be kept across restarts: {e}",
            path.display()
        );
    }
    Some(dir)
}

/// Reads the catalog the settings name, or the embedded one.
pub fn load_catalog(settings: &Settings) -> Result<Catalog, CatalogError> {
    match &settings.catalog {
        Some(path) => Catalog::from_file(path),
        None => Catalog::embedded(),
    }
}

impl Shared {
    /// Sets up every site of `settings`.
    pub fn new(
        settings: &Settings,
        metrics: Metrics,
        access_log: Option<AccessLog>,
    ) -> Result<Shared, StateError> {
        let catalog = CatalogIndex::new(load_catalog(settings)?).map_err(StateError::Classifier)?;
        let state_dir = open_state_dir(settings);
        let mut sites = Vec::new();
        for site in &settings.sites {
            let site = Site::new(site.clone(), &catalog)?;
            if let (RobotsSource::Origin, Some(dir)) = (&site.settings.robots.source, &state_dir) {
                state_dir::restore(&site, &catalog, dir);
            }
            sites.push(Arc::new(site));
        }
        let store = store::open(settings, &metrics)?;
        let global = Global::new(settings, &catalog.catalog, &metrics, &store)?;
        let trust = Trust::new(&settings.verification.signatures, &catalog.catalog);
        let signatures = Arc::new(Signatures::new(trust, settings.state_dir.clone()));
        let metrics_for_connections = metrics.clone();
        let ledger = settings
            .state_dir
            .as_deref()
            .map(|dir| Arc::new(super::ledger::Ledger::open(dir)));
        let shared = Shared {
            sites: ArcSwap::from_pointee(Sites::new(sites)),
            catalog: ArcSwap::from_pointee(catalog),
            metrics,
            access_log,
            global: ArcSwap::from_pointee(global),
            store,
            politeness_settings: settings.politeness,
            state_dir,
            signatures,
            connections: Arc::new(Registry::new(
                &settings.clients,
                &settings.trusted_proxies,
                &metrics_for_connections,
            )),
            ledger,
        };
        for site in &shared.sites.load().all {
            shared.publish(&site.settings.name, &site.snapshot.load());
            shared.publish_refresh(&site.settings);
        }
        Ok(shared)
    }

    /// Updates the gauges that describe a site's snapshot in force.
    pub fn publish(&self, site: &str, snapshot: &Snapshot) {
        let m = &self.metrics;
        let rules = i64::try_from(snapshot.robots.file().rules.len()).unwrap_or(i64::MAX);
        m.robots_rules.with_label_values(&[site]).set(rules);
        let problems = i64::try_from(snapshot.robots.problems().len()).unwrap_or(i64::MAX);
        m.robots_problems.with_label_values(&[site]).set(problems);
        let loaded = snapshot
            .loaded_at
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        m.robots_last_reload.with_label_values(&[site]).set(loaded);
        m.set_robots_info(site, &snapshot.sha256, snapshot.state.as_str());
    }

    /// Records that a site's robots.txt was (re)loaded now, changed or not: what the
    /// "not reloaded for longer than its refresh" alert watches.
    pub fn touch(&self, site: &str) {
        let now = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.metrics
            .robots_last_reload
            .with_label_values(&[site])
            .set(now);
    }

    /// Sets the expected reload period of an origin's robots.txt (files reload on change only).
    pub fn publish_refresh(&self, site: &super::config::SiteSettings) {
        if site.robots.source == super::config::RobotsSource::Origin {
            self.metrics
                .robots_refresh
                .with_label_values(&[&site.name])
                .set(site.robots.refresh.as_secs_f64());
        }
    }

    /// Updates the gauges of remembered state, before metrics are rendered.
    pub fn refresh_gauges(&self) {
        let live = i64::try_from(super::site::live_snapshots()).unwrap_or(i64::MAX);
        self.metrics.snapshots.set(live);
        let entries = self.store.entries();
        let tracked = &self.metrics.tracked;
        for (kind, count) in [
            ("crawl_delay", entries.crawl_delay),
            ("robots_fetch", entries.robots_fetch),
            ("dns", entries.dns),
            ("signature_uses", entries.signature_uses),
            (
                "charges",
                self.ledger
                    .as_ref()
                    .map_or(0, |ledger| ledger.remembered() as u64),
            ),
        ] {
            tracked
                .with_label_values(&[kind])
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }

    /// How the process is: stopping, or serving with what works less well than configured
    /// (a site that enforces a stand-in for a robots.txt it cannot fetch, a shared store that
    /// does not answer), and each site's own readiness.
    pub fn health(&self) -> Health {
        let sites = self
            .sites
            .load()
            .all
            .iter()
            .map(|site| SiteHealth {
                name: site.settings.name.clone(),
                hosts: site.settings.hosts.clone(),
                problem: site_problem(site),
            })
            .collect();
        Health {
            stopping: self.connections.draining(),
            sites,
            degraded: self.store.health().err().into_iter().collect(),
        }
    }
}

/// Why a site enforces a stand-in, if it does.
fn site_problem(site: &Site) -> Option<String> {
    let snapshot = site.snapshot.load();
    match snapshot.state {
        SourceState::Loaded | SourceState::Unavailable => None,
        SourceState::Unreachable | SourceState::Pending => Some(
            snapshot
                .stand_in_reason()
                .unwrap_or("no robots.txt")
                .to_owned(),
        ),
    }
}

/// One site's readiness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteHealth {
    /// The site's name.
    pub name: String,
    /// Its hosts (none: any host).
    pub hosts: Vec<String>,
    /// Why it is not ready: it enforces a stand-in for a robots.txt it cannot fetch.
    pub problem: Option<String>,
}

/// The health `/healthz` reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Health {
    /// The process is stopping (SIGTERM): load balancers must send it nothing new.
    pub stopping: bool,
    /// Each site's readiness.
    pub sites: Vec<SiteHealth>,
    /// What works less well than configured, process-wide.
    pub degraded: Vec<String>,
}

impl Health {
    /// Every reason the process works less well than configured, one line each.
    pub fn degraded_lines(&self) -> Vec<String> {
        self.sites
            .iter()
            .filter_map(|site| {
                let problem = site.problem.as_ref()?;
                Some(format!("site {}: {problem}", site.name))
            })
            .chain(self.degraded.iter().cloned())
            .collect()
    }

    /// The site with this name, or the one that serves this host.
    pub fn site(&self, name: Option<&str>, host: Option<&str>) -> Option<&SiteHealth> {
        if let Some(name) = name {
            return self.sites.iter().find(|s| s.name == name);
        }
        let host = host?.trim_end_matches('.').to_ascii_lowercase();
        self.sites
            .iter()
            .find(|s| s.hosts.contains(&host))
            .or_else(|| self.sites.iter().find(|s| s.hosts.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogs_reverse_dns_applies_unless_the_configuration_replaces_it() {
        let catalog = Catalog::embedded().unwrap();
        let defaults = reverse_dns_domains(&catalog, &[]);
        assert_eq!(defaults["Googlebot"], ["googlebot.com", "google.com"]);
        assert_eq!(
            defaults["FeedFetcher-Google"],
            ["google.com", "gae.googleusercontent.com"]
        );
        assert_eq!(defaults["bingbot"], ["search.msn.com"]);
        assert_eq!(defaults["Applebot"], ["applebot.apple.com"]);
        // No Google crawler trusts every googleusercontent.com name: any Cloud VM has one.
        for (token, domains) in &defaults {
            assert!(
                !domains.iter().any(|d| d == "googleusercontent.com"),
                "{token}: {domains:?}"
            );
        }
        let configured = [
            ("googlebot".to_owned(), vec!["googlebot.com".to_owned()]),
            ("Bingbot".to_owned(), Vec::new()),
        ];
        let replaced = reverse_dns_domains(&catalog, &configured);
        assert_eq!(replaced["googlebot"], ["googlebot.com"]);
        assert!(!replaced.contains_key("Googlebot"));
        assert!(!replaced.keys().any(|t| t.eq_ignore_ascii_case("bingbot")));
        assert_eq!(replaced["Applebot"], ["applebot.apple.com"]);
    }
}
