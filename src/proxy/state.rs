//! The state the proxy's services share: the sites (swapped whole on a config reload), the
//! catalog, the metrics and the access log.

use super::access_log::AccessLog;
use super::config::Settings;
use super::metrics::Metrics;
use super::site::{Site, SiteError, Sites, Snapshot, SourceState};
use crate::catalog::{Catalog, CatalogError};
use arc_swap::ArcSwap;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

/// What every service of one crawlgate process shares.
#[derive(Debug)]
pub struct Shared {
    /// The sites in force.
    pub sites: ArcSwap<Sites>,
    /// The crawler catalog in force.
    pub catalog: ArcSwap<Catalog>,
    /// The metrics.
    pub metrics: Metrics,
    /// The access log, when configured.
    pub access_log: Option<AccessLog>,
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
        let catalog = load_catalog(settings)?;
        let mut sites = Vec::new();
        for site in &settings.sites {
            let site = Site::new(site.clone(), &catalog)?;
            sites.push(Arc::new(site));
        }
        let shared = Shared {
            sites: ArcSwap::from_pointee(Sites::new(sites)),
            catalog: ArcSwap::from_pointee(catalog),
            metrics,
            access_log,
        };
        for site in &shared.sites.load().all {
            shared.publish(&site.settings.name, &site.snapshot.load());
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

    /// `Ok` when every site enforces a robots.txt it actually has; else why not, per site.
    pub fn health(&self) -> Result<(), Vec<String>> {
        let problems: Vec<String> = self
            .sites
            .load()
            .all
            .iter()
            .filter_map(|site| {
                let snapshot = site.snapshot.load();
                match snapshot.state {
                    SourceState::Loaded | SourceState::Unavailable => None,
                    SourceState::Unreachable | SourceState::Pending => Some(format!(
                        "site {}: {}",
                        site.settings.name,
                        snapshot.stand_in_reason().unwrap_or("no robots.txt")
                    )),
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}
