//! Configuration: the YAML a user writes ([`ConfigFile`], in `file`) apart from the validated
//! settings the proxy runs on ([`Settings`], in `settings`), built by the validator (`validate`)
//! that reports every error with its key and line, and what would be valid; `flags` turns the
//! command line into the same YAML.

mod file;
mod flags;
mod settings;
mod validate;

pub use file::*;
pub use flags::*;
pub use settings::*;

use std::path::Path;
use validate::{normalise_line_breaks, Validator};

/// A configuration that cannot be used: what is wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The file (or `flags`).
    pub origin: String,
    /// The 1-based line, when the error has one.
    pub line: Option<usize>,
    /// The key, what is wrong, and what would be valid.
    pub message: String,
}

impl Settings {
    /// Parses and validates a configuration's text. `origin` names it in errors; relative paths
    /// are taken from `base`.
    pub fn from_yaml(text: &str, origin: &str, base: &Path) -> Result<Settings, ConfigError> {
        Self::parse(text, origin, base, true)
    }

    /// Like [`Settings::from_yaml`], without resolving upstream host names (no network): an
    /// upstream that is not an IP address is left unresolved.
    pub fn from_yaml_offline(
        text: &str,
        origin: &str,
        base: &Path,
    ) -> Result<Settings, ConfigError> {
        Self::parse(text, origin, base, false)
    }

    fn parse(
        text: &str,
        origin: &str,
        base: &Path,
        resolve: bool,
    ) -> Result<Settings, ConfigError> {
        // YAML breaks lines at CR, NEL, LS and PS too: with one kind of line break, the lines
        // serde_yaml reports and the lines the checks below find are the same lines.
        let normalised = normalise_line_breaks(text);
        let text = normalised.as_ref();
        let file: ConfigFile = serde_yaml::from_str(text).map_err(|e| ConfigError {
            origin: origin.to_owned(),
            line: e.location().map(|l| l.line()),
            message: e.to_string(),
        })?;
        let validator = Validator {
            origin,
            text,
            base,
            resolve,
        };
        validator.settings(file)
    }

    /// Reads, parses and validates a configuration file.
    pub fn from_file(path: &Path) -> Result<Settings, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            line: None,
            message: format!("cannot read: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::from_yaml(&text, &origin, base)
    }

    /// Builds the site part of a configuration from command-line flags alone.
    pub fn from_flags(flags: &SiteFlags) -> Result<Settings, ConfigError> {
        let yaml = flags.to_yaml().ok_or_else(|| ConfigError {
            origin: "flags".into(),
            line: None,
            message: "--upstream HOST:PORT is needed to serve without --config".into(),
        })?;
        Self::from_yaml(&yaml, "flags", Path::new("."))
    }
}
