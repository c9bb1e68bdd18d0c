//! `crawlgate robots compose`: the robots.txt each site serves and enforces — its managed
//! groups composed with the origin's (or the file's) lines — printed for review before serving.

use super::{CliError, ExitStatus};
use crate::managed::Source;
use crate::proxy::config::{RobotsSource, Settings};
use crate::proxy::site::{CatalogIndex, Site, Snapshot};
use crate::proxy::source::{after_fetch, AfterFetch, OriginClient};
use crate::proxy::state::load_catalog;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Arguments of `crawlgate robots`.
#[derive(Debug, clap::Args)]
pub struct RobotsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: RobotsCommand,
}

/// `crawlgate robots` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RobotsCommand {
    /// Print the robots.txt a site serves: its managed groups (`robots.managed`) composed with
    /// the origin's file (fetched once) or the configured one.
    Compose {
        /// The configuration.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Only this site (by name); every site when left out.
        #[arg(long, value_name = "NAME")]
        site: Option<String>,
        /// Put where each line comes from before it: `managed`, `origin N` (the origin's line
        /// N) or `overridden N` (the origin's line N, commented out).
        #[arg(long)]
        sources: bool,
    },
}

/// Runs `robots`.
pub fn run_robots(args: &RobotsArgs, mut out: impl Write) -> Result<ExitStatus, CliError> {
    let RobotsCommand::Compose {
        config,
        site: only,
        sources,
    } = &args.command;
    let served = served(config, only.as_deref())?;
    for (name, snapshot) in &served {
        if served.len() > 1 {
            writeln!(out, "# crawlgate robots compose: site {name}")?;
        }
        if !*sources {
            out.write_all(&snapshot.bytes)?;
            continue;
        }
        let text = String::from_utf8_lossy(&snapshot.bytes);
        for (index, line) in text.lines().enumerate() {
            let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
            let source = match &snapshot.managed {
                Some(_) => snapshot.line_source(number).unwrap_or(Source::Managed),
                None => Source::Origin(number),
            };
            writeln!(out, "{:<15}| {line}", source.label())?;
        }
    }
    Ok(ExitStatus::Success)
}

/// The robots.txt each site of a configuration serves and enforces (every site, or the one
/// named): its snapshot as the proxy builds it, after one fetch of an origin's file, managed
/// groups composed. What `robots compose`, `lint --config` and `check --config` read.
pub fn served(config: &Path, only: Option<&str>) -> Result<Vec<(String, Arc<Snapshot>)>, CliError> {
    let config_error = |e: String| CliError::Config(e);
    let settings = Settings::from_file(config).map_err(|e| config_error(e.to_string()))?;
    let catalog = load_catalog(&settings).map_err(|e| config_error(e.to_string()))?;
    let catalog = CatalogIndex::new(catalog).map_err(|e| config_error(e.to_string()))?;
    let sites: Vec<_> = settings
        .sites
        .iter()
        .filter(|site| only.is_none_or(|name| name == site.name))
        .collect();
    if sites.is_empty() {
        let name = only.unwrap_or_default();
        return Err(CliError::Usage(format!("no site is named `{name}`")));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::Write)?;
    let mut served = Vec::new();
    for settings in sites {
        let site =
            Site::new(settings.clone(), &catalog).map_err(|e| config_error(e.to_string()))?;
        let snapshot = match settings.robots.source {
            RobotsSource::Origin => runtime.block_on(fetched(&site, &catalog))?,
            _ => site.snapshot.load_full(),
        };
        served.push((settings.name.clone(), snapshot));
    }
    Ok(served)
}

/// The site's snapshot after one fetch of its origin's robots.txt, by the proxy's own rule.
async fn fetched(site: &Site, catalog: &CatalogIndex) -> Result<Arc<Snapshot>, CliError> {
    let client = OriginClient::new(&site.settings)
        .map_err(|e| CliError::Config(e.to_string()))?
        .ok_or_else(|| {
            CliError::Config(format!(
                "site {}: no origin to fetch from",
                site.settings.name
            ))
        })?;
    let fetched = client.fetch().await;
    let current = site.snapshot.load().state;
    match after_fetch(&fetched, current, site.settings.robots.on_unreachable) {
        AfterFetch::Install(bytes, state) => {
            let snapshot = Snapshot::build(&site.settings, catalog, bytes, state)
                .map_err(|e| CliError::Config(e.to_string()))?;
            Ok(Arc::new(snapshot))
        }
        AfterFetch::Keep => Ok(site.snapshot.load_full()),
    }
}
