//! `crawlgate ranges update`: downloads the published IP range lists the configuration names,
//! checks them, and replaces the files atomically (the running proxy picks them up by itself).

use super::{CliError, ExitStatus};
use crate::proxy::atomic::write_atomically;
use crate::proxy::config::Settings;
use crate::proxy::source::error_chain;
use crate::proxy::state::load_catalog;
use crate::proxy::verify::ranges::RangeSet;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `crawlgate ranges`.
#[derive(Debug, clap::Args)]
pub struct RangesArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: RangesCommand,
}

/// `crawlgate ranges` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RangesCommand {
    /// Fetch every configured range list and write it atomically.
    Update {
        /// The configuration naming the files (verification.ranges) and their URLs.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// Fetch and check, but write nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Runs `ranges`.
pub fn run_ranges(args: &RangesArgs, mut out: impl Write) -> Result<ExitStatus, CliError> {
    let RangesCommand::Update { config, dry_run } = &args.command;
    let settings = Settings::from_file(config).map_err(|e| CliError::Config(e.to_string()))?;
    let catalog = load_catalog(&settings).map_err(|e| CliError::Config(e.to_string()))?;
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .user_agent(concat!("crawlgate/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| CliError::Usage(format!("cannot build an HTTP client: {e}")))?;
    let mut status = ExitStatus::Success;
    if settings.verification.ranges.is_empty() {
        writeln!(out, "no range files are configured (verification.ranges)")?;
    }
    for (token, spec) in &settings.verification.ranges {
        let url = spec.url.clone().or_else(|| {
            catalog
                .get(token)
                .and_then(|entry| entry.verify.as_ref())
                .and_then(|verify| verify.ranges_url.clone())
        });
        let Some(url) = url else {
            writeln!(out, "{token}: no URL: set verification.ranges.{token}.url")?;
            status = ExitStatus::Failure;
            continue;
        };
        let fetched = client
            .get(&url)
            .send()
            .and_then(reqwest::blocking::Response::error_for_status)
            .and_then(|response| response.bytes());
        let bytes = match fetched {
            Ok(bytes) => bytes,
            Err(e) => {
                // reqwest's own message is `error sending request`: the cause is in its sources.
                writeln!(out, "{token}: cannot fetch {url}: {}", error_chain(&e))?;
                status = ExitStatus::Failure;
                continue;
            }
        };
        match RangeSet::from_json(&bytes) {
            Ok(set) if *dry_run => writeln!(
                out,
                "{token}: {} prefixes from {url} (dry run, not written)",
                set.len()
            )?,
            Ok(set) => match write_atomically(&spec.file, &bytes) {
                Ok(()) => writeln!(
                    out,
                    "{token}: {} prefixes from {url} → {}",
                    set.len(),
                    spec.file.display()
                )?,
                Err(e) => {
                    writeln!(out, "{token}: cannot write {}: {e}", spec.file.display())?;
                    status = ExitStatus::Failure;
                }
            },
            Err(e) => {
                writeln!(
                    out,
                    "{token}: {url} is not a usable range list, {} kept: {e}",
                    spec.file.display()
                )?;
                status = ExitStatus::Failure;
            }
        }
    }
    Ok(status)
}
