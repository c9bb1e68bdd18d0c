//! The command line: argument types (clap) and the commands that need no proxy.
//!
//! Each command returns an [`ExitStatus`] or a [`CliError`]; `main` only maps them to the
//! process's exit code, so every command is testable without spawning a process.

mod audit;
mod check;
#[cfg(feature = "proxy")]
mod explain;
mod lint;
#[cfg(feature = "proxy")]
mod ranges;
#[cfg(feature = "proxy")]
mod robots;
#[cfg(feature = "proxy")]
mod serve;

pub use audit::{run_audit, AuditArgs};
pub use check::{run_check, CheckArgs};
#[cfg(feature = "proxy")]
pub use explain::{render as render_explanation, run_explain, ExplainArgs, Explained};
pub use lint::{run_lint, LintArgs};
#[cfg(feature = "proxy")]
pub use ranges::{run_ranges, RangesArgs};
#[cfg(feature = "proxy")]
pub use robots::{run_robots, RobotsArgs};
#[cfg(feature = "proxy")]
pub use serve::{run_serve, run_validate, ServeArgs, ValidateArgs};

use clap::{Parser, Subcommand};
use std::io::Read;
use std::path::{Path, PathBuf};

/// crawlgate: robots.txt, enforced.
#[derive(Debug, Parser)]
#[command(name = "crawlgate", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Say, per URL, whether a crawler may fetch it, and which robots.txt line decided.
    Check(CheckArgs),
    /// List the problems in a robots.txt, with line numbers, and summarise it.
    Lint(LintArgs),
    /// Replay access logs against a robots.txt: what each crawler fetched, and what it ignored.
    Audit(AuditArgs),
    /// Run the proxy (with no configuration and no flags: the embedded demo).
    #[cfg(feature = "proxy")]
    Serve(ServeArgs),
    /// Check a configuration (and every robots.txt it names) without serving.
    #[cfg(feature = "proxy")]
    Validate(ValidateArgs),
    /// Show the whole decision on one request: site, client, crawler, verification, rule, action.
    #[cfg(feature = "proxy")]
    Explain(ExplainArgs),
    /// Published IP range lists of crawlers: `crawlgate ranges update --config FILE`.
    #[cfg(feature = "proxy")]
    Ranges(RangesArgs),
    /// The robots.txt a site serves: `crawlgate robots compose --config FILE` prints its
    /// managed groups composed with the origin's file.
    #[cfg(feature = "proxy")]
    Robots(RobotsArgs),
}

/// How a command ended, as the process reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything asked about is allowed / the file has no problem (0).
    Success,
    /// Something is disallowed / `--strict` found problems (1).
    Failure,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
        }
    }
}

/// A usage or I/O error: exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file (`-` for standard input).
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Output could not be written.
    #[error("cannot write output: {0}")]
    Write(#[from] std::io::Error),
    /// The arguments do not make sense together.
    #[error("{0}")]
    Usage(String),
    /// A configuration that cannot be used (exit status 1).
    #[error("{0}")]
    Config(String),
    /// `audit` could not read or replay its inputs (exit status 2).
    #[error(transparent)]
    Audit(#[from] crate::audit::AuditError),
    /// An input line of `check --jsonl` is not what it should be.
    #[error("input line {line}: {message}")]
    Input {
        /// The 1-based input line.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

impl CliError {
    /// The process exit code: 1 for a configuration that cannot be used, 2 for usage and I/O.
    pub fn code(&self) -> u8 {
        match self {
            CliError::Config(_) => 1,
            _ => 2,
        }
    }
}

/// Reads a whole file, or standard input when `path` is `-`.
pub(crate) fn read_input(path: &Path) -> Result<Vec<u8>, CliError> {
    let mut bytes = Vec::new();
    let result = if path == Path::new("-") {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::read(path).map(|read| bytes = read)
    };
    result.map_err(|source| CliError::Read {
        path: path.to_owned(),
        source,
    })?;
    Ok(bytes)
}
