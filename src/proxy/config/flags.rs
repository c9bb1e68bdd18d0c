//! The command-line flags of `serve`, written as the configuration they stand for.

use super::*;
use crate::policy::{Action, Enforcement};
use std::path::PathBuf;

/// The command-line flags that describe (or override) a configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteFlags {
    /// `--listen`
    pub listen: Vec<String>,
    /// `--upstream`
    pub upstream: Option<String>,
    /// `--robots FILE` (absent: fetched from the origin)
    pub robots: Option<PathBuf>,
    /// `--metrics-listen`
    pub metrics_listen: Option<String>,
    /// `--action`
    pub action: Option<Action>,
    /// `--access-log FILE` (`-`: standard output)
    pub access_log: Option<String>,
    /// `--observe`: every site refuses nothing and records what it would have refused.
    pub observe: bool,
}

impl SiteFlags {
    /// Whether any flag is given.
    pub fn any(&self) -> bool {
        *self != SiteFlags::default()
    }

    /// The flags as a one-site configuration file (so flags and files share one validator).
    pub(super) fn to_yaml(&self) -> Option<String> {
        let upstream = self.upstream.as_ref()?;
        let listen = if self.listen.is_empty() {
            vec!["0.0.0.0:8080".to_owned()]
        } else {
            self.listen.clone()
        };
        let robots = match &self.robots {
            Some(path) => serde_json::json!({ "file": path }),
            None => serde_json::json!({ "origin": true }),
        };
        let mut config = serde_json::json!({
            "listen": listen,
            "sites": [{
                "name": "default",
                "upstream": upstream,
                "robots": robots,
                "action": self.action.unwrap_or(Action::Block),
            }],
        });
        if let Some(metrics) = &self.metrics_listen {
            config["metrics"] = serde_json::json!({ "listen": metrics });
        }
        if let Some(log) = &self.access_log {
            config["access_log"] = serde_json::json!(log);
        }
        if self.observe {
            config["mode"] = serde_json::json!(Enforcement::Observe);
        }
        // JSON is YAML: one validator serves flags and files.
        Some(config.to_string())
    }

    /// Applies the flags on top of settings read from a file.
    pub fn apply(&self, settings: &mut Settings) -> Result<(), ConfigError> {
        let flag_error = |message: String| ConfigError {
            origin: "flags".into(),
            line: None,
            message,
        };
        if !self.listen.is_empty() {
            settings.listen = self
                .listen
                .iter()
                .map(|a| {
                    a.parse()
                        .map_err(|_| flag_error(format!("--listen `{a}` is not IP:PORT")))
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(metrics) = &self.metrics_listen {
            let addr = metrics
                .parse()
                .map_err(|_| flag_error(format!("--metrics-listen `{metrics}` is not IP:PORT")))?;
            settings.metrics_listen = Some(addr);
        }
        if let Some(log) = &self.access_log {
            settings.access_log = Some(match log.as_str() {
                "-" => AccessLogTarget::Stdout,
                path => AccessLogTarget::File(PathBuf::from(path)),
            });
        }
        if self.observe {
            for site in &mut settings.sites {
                site.enforcement = Enforcement::Observe;
            }
        }
        let site_flags = self.upstream.is_some() || self.robots.is_some() || self.action.is_some();
        if site_flags {
            let [site] = settings.sites.as_mut_slice() else {
                return Err(flag_error(
                    "--upstream, --robots and --action apply to a configuration with exactly one site".into(),
                ));
            };
            if let Some(upstream) = &self.upstream {
                let one = Self {
                    upstream: Some(upstream.clone()),
                    ..Self::default()
                };
                let parsed = Settings::from_flags(&one)?;
                if let Some(parsed) = parsed.sites.into_iter().next() {
                    site.upstream = parsed.upstream;
                }
            }
            if let Some(robots) = &self.robots {
                site.robots.source = RobotsSource::File(robots.clone());
            }
            if let Some(action) = self.action {
                site.action = action;
            }
        }
        Ok(())
    }
}
