//! `crawlgate serve` and `crawlgate validate`.

use super::{CliError, ExitStatus};
use crate::policy::Action;
use crate::proxy::config::{Settings, SiteFlags, UpstreamAddr};
use crate::proxy::reload::ConfigSource;
use crate::proxy::server::{self, DEMO_LISTEN, DEMO_METRICS};
use crate::proxy::site::{CatalogIndex, Site};
use crate::proxy::state::load_catalog;
use crate::proxy::state_dir;
use crate::proxy::tls::certs::Certified;
use crate::proxy::verify::ranges::RangeSet;
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `crawlgate serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The YAML configuration. Without it and without flags, the embedded demo runs.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Listen on this address (repeatable; overrides the file's `listen`).
    #[arg(long, value_name = "ADDR")]
    pub listen: Vec<String>,
    /// The origin, HOST:PORT (for a one-site setup without a file).
    #[arg(long, value_name = "HOST:PORT")]
    pub upstream: Option<String>,
    /// The robots.txt file to enforce (default: fetched from the origin).
    #[arg(long, value_name = "FILE")]
    pub robots: Option<PathBuf>,
    /// Serve /metrics and /healthz on this address.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// What to do with crawler requests robots.txt disallows.
    #[arg(long, value_enum)]
    pub action: Option<ActionArg>,
    /// Write the JSON-lines access log of crawler requests to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<String>,
    /// Refuse nothing: every site forwards what it would block or throttle, and metrics, the
    /// access log and `explain` say `would_block` / `would_throttle` (a dry run).
    #[arg(long)]
    pub observe: bool,
}

/// `--action` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ActionArg {
    /// Answer 403; the origin never sees the request.
    Block,
    /// Forward with X-Crawlgate-* headers.
    Tag,
    /// Forward untouched; count it.
    Count,
}

impl From<ActionArg> for Action {
    fn from(action: ActionArg) -> Action {
        match action {
            ActionArg::Block => Action::Block,
            ActionArg::Tag => Action::Tag,
            ActionArg::Count => Action::Count,
        }
    }
}

/// Arguments of `crawlgate validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The YAML configuration to check.
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
}

impl ServeArgs {
    fn flags(&self) -> SiteFlags {
        SiteFlags {
            listen: self.listen.clone(),
            upstream: self.upstream.clone(),
            robots: self.robots.clone(),
            metrics_listen: self.metrics_listen.clone(),
            action: self.action.map(Action::from),
            access_log: self.access_log.clone(),
            observe: self.observe,
        }
    }
}

/// A configuration error is a failure of `serve`/`validate` (1), not a usage error.
fn config_error(e: impl std::fmt::Display) -> CliError {
    CliError::Config(e.to_string())
}

/// Runs `serve` until the proxy stops.
pub fn run_serve(args: &ServeArgs) -> Result<ExitStatus, CliError> {
    let flags = args.flags();
    let (settings, demo_socket) = match &args.config {
        Some(path) => {
            let mut settings = Settings::from_file(path).map_err(config_error)?;
            flags.apply(&mut settings).map_err(config_error)?;
            log::info!(
                "crawlgate: serving {} site(s) from {}",
                settings.sites.len(),
                path.display()
            );
            (settings, None)
        }
        None if flags.upstream.is_some() => {
            let settings = Settings::from_flags(&flags).map_err(config_error)?;
            log::info!("crawlgate: serving one site from command-line flags");
            (settings, None)
        }
        // No origin named: the embedded demo site is the origin; the other flags apply to it.
        None => {
            let socket =
                std::env::temp_dir().join(format!("crawlgate-demo-{}.sock", std::process::id()));
            let settings = server::demo_settings(socket.clone(), &flags).map_err(config_error)?;
            let listen = settings
                .listen
                .first()
                .map_or(DEMO_LISTEN.to_owned(), |a| a.to_string());
            let metrics = settings
                .metrics_listen
                .map_or(DEMO_METRICS.to_owned(), |a| a.to_string());
            log::info!(
                "crawlgate: no configuration given, serving the embedded demo site on http://{listen}/ \
                 (metrics on http://{metrics}/metrics); try: curl -A 'GPTBot/1.2' http://{listen}/"
            );
            (settings, Some(socket))
        }
    };
    let config = ConfigSource {
        path: args.config.clone(),
        flags,
    };
    server::run(settings, config, demo_socket).map_err(config_error)?;
    Ok(ExitStatus::Success)
}

/// Runs `validate`: the configuration, its catalog and every robots.txt file it names.
pub fn run_validate(args: &ValidateArgs, mut out: impl Write) -> Result<ExitStatus, CliError> {
    let settings = Settings::from_file(&args.config).map_err(config_error)?;
    let catalog = load_catalog(&settings).map_err(config_error)?;
    let catalog = CatalogIndex::new(catalog).map_err(config_error)?;
    if let Some(dir) = &settings.state_dir {
        // The unit runs `validate` as the service's user: what it cannot write, the proxy cannot.
        state_dir::StateDir::new(dir)
            .check_writable()
            .map_err(|e| config_error(format!("state_dir {}: {e}", dir.display())))?;
    }
    for site in &settings.sites {
        let site = Site::new(site.clone(), &catalog).map_err(config_error)?;
        let snapshot = site.snapshot.load();
        let upstream = match &site.settings.upstream.addr {
            UpstreamAddr::Tcp(addr) => addr.clone(),
            UpstreamAddr::Unix(path) => path.display().to_string(),
        };
        let robots = match snapshot.stand_in_reason() {
            None => format!(
                "robots.txt {} rules, {} problems",
                snapshot.robots.file().rules.len(),
                snapshot.robots.problems().len()
            ),
            Some(_) => match &settings.state_dir {
                Some(dir) => format!(
                    "robots.txt fetched from the origin once serving (the last good one kept in {})",
                    state_dir::kept_path(dir, &site.settings.name).display()
                ),
                None => "robots.txt fetched from the origin once serving (not kept across restarts: no state_dir)".to_owned(),
            },
        };
        writeln!(
            out,
            "site {}: upstream {upstream}, {robots}, action {}",
            site.settings.name,
            site.settings.action.as_str(),
        )?;
    }
    let trusted = &settings.trusted_proxies;
    if !trusted.is_empty() {
        writeln!(
            out,
            "trusted proxies: {} networks, client address read from {} only",
            trusted.networks().len(),
            trusted.header().name()
        )?;
    }
    for (token, spec) in &settings.verification.ranges {
        let used = std::fs::read(&spec.file)
            .map_err(|e| e.to_string())
            .and_then(|bytes| RangeSet::from_json(&bytes).map_err(|e| e.to_string()));
        match used {
            Ok(set) => writeln!(out, "ranges {token}: {} prefixes in {}", set.len(), spec.file.display())?,
            // Not an error: `crawlgate ranges update` writes the file, and until then the crawler
            // is unverifiable by ranges.
            Err(e) => writeln!(
                out,
                "ranges {token}: warning: {} cannot be used yet ({e}); run `crawlgate ranges update`",
                spec.file.display()
            )?,
        }
    }
    for tls in &settings.tls_listen {
        for pair in &tls.certs {
            let cert = Certified::load(pair).map_err(config_error)?;
            writeln!(
                out,
                "tls_listen {}: {} for {} (h2, http/1.1)",
                tls.addr,
                pair.cert.display(),
                cert.names.join(", ")
            )?;
        }
    }
    writeln!(out, "{}: ok", args.config.display())?;
    Ok(ExitStatus::Success)
}
