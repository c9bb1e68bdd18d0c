//! Every metric crawlgate exports, in one place, with its help text.
//!
//! Labels take bounded values only: site names from the configuration, bot labels from the
//! catalog and robots.txt (capped per site), categories, verdicts and actions from fixed sets.
//! Never a raw header or path.

use prometheus::{
    Encoder, GaugeVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The metrics of one crawlgate process, in their own registry.
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Registry,
    /// `crawlgate_requests_total{site, bot, category, verdict, action}`
    pub requests: IntCounterVec,
    /// `crawlgate_robots_fetches_total{site, bot}`: crawlers (and people) fetching /robots.txt.
    pub robots_fetches: IntCounterVec,
    /// `crawlgate_robots_reloads_total{site, result}`
    pub robots_reloads: IntCounterVec,
    /// `crawlgate_robots_rules{site}`
    pub robots_rules: IntGaugeVec,
    /// `crawlgate_robots_problems{site}`
    pub robots_problems: IntGaugeVec,
    /// `crawlgate_robots_last_reload_timestamp_seconds{site}`
    pub robots_last_reload: GaugeVec,
    /// `crawlgate_robots_info{site, sha256, state}`: 1 for the file in force.
    robots_info: IntGaugeVec,
    /// The label values of each site's info series, so that a new file replaces the old series.
    robots_info_labels: Arc<Mutex<HashMap<String, [String; 2]>>>,
    /// `crawlgate_upstream_errors_total{site, kind}`
    pub upstream_errors: IntCounterVec,
    /// `crawlgate_unknown_host_requests_total`
    pub unknown_host: IntCounter,
    /// `crawlgate_access_log_dropped_total`
    pub access_log_dropped: IntCounter,
    /// `crawlgate_config_reloads_total{result}`
    pub config_reloads: IntCounterVec,
}

/// A metric that could not be registered: a programming error, reported at startup.
#[derive(Debug, thiserror::Error)]
#[error("cannot register metric: {0}")]
pub struct MetricsError(#[from] prometheus::Error);

fn counter(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntCounterVec, MetricsError> {
    let metric = IntCounterVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn gauge(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntGaugeVec, MetricsError> {
    let metric = IntGaugeVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

impl Metrics {
    /// Registers every metric in a new registry.
    pub fn new() -> Result<Metrics, MetricsError> {
        let registry = Registry::new();
        let r = &registry;
        let robots_last_reload = GaugeVec::new(
            Opts::new(
                "crawlgate_robots_last_reload_timestamp_seconds",
                "When the robots.txt in force was loaded (Unix time).",
            ),
            &["site"],
        )?;
        registry.register(Box::new(robots_last_reload.clone()))?;
        let unknown_host = IntCounter::new(
            "crawlgate_unknown_host_requests_total",
            "Requests for a Host no site is configured for (answered 421).",
        )?;
        registry.register(Box::new(unknown_host.clone()))?;
        let access_log_dropped = IntCounter::new(
            "crawlgate_access_log_dropped_total",
            "Access log lines dropped because the writer could not keep up.",
        )?;
        registry.register(Box::new(access_log_dropped.clone()))?;
        Ok(Metrics {
            requests: counter(
                r,
                "crawlgate_requests_total",
                "Requests by site, crawler, category, robots.txt verdict and action taken.",
                &["site", "bot", "category", "verdict", "action"],
            )?,
            robots_fetches: counter(
                r,
                "crawlgate_robots_fetches_total",
                "Fetches of /robots.txt, by site and crawler.",
                &["site", "bot"],
            )?,
            robots_reloads: counter(
                r,
                "crawlgate_robots_reloads_total",
                "robots.txt loads by result: ok, unchanged, unavailable (4xx), unreachable (5xx or network), error (unreadable file).",
                &["site", "result"],
            )?,
            robots_rules: gauge(r, "crawlgate_robots_rules", "Rules in the robots.txt in force.", &["site"])?,
            robots_problems: gauge(
                r,
                "crawlgate_robots_problems",
                "Lines of the robots.txt in force that were not understood or read leniently.",
                &["site"],
            )?,
            robots_last_reload,
            robots_info_labels: Arc::default(),
            robots_info: gauge(
                r,
                "crawlgate_robots_info",
                "The robots.txt in force: its SHA-256 and state (loaded, unavailable, unreachable, inline).",
                &["site", "sha256", "state"],
            )?,
            upstream_errors: counter(
                r,
                "crawlgate_upstream_errors_total",
                "Requests that failed at the origin, by kind (connect, timeout, other).",
                &["site", "kind"],
            )?,
            unknown_host,
            access_log_dropped,
            config_reloads: counter(
                r,
                "crawlgate_config_reloads_total",
                "Configuration reloads on SIGHUP, by result (ok, error).",
                &["result"],
            )?,
            registry,
        })
    }

    /// Sets `crawlgate_robots_info` for a site, removing its previous series.
    pub fn set_robots_info(&self, site: &str, sha256: &str, state: &str) {
        let mut labels = match self.robots_info_labels.lock() {
            Ok(labels) => labels,
            Err(poisoned) => poisoned.into_inner(),
        };
        let new = [sha256.to_owned(), state.to_owned()];
        if let Some(old) = labels.insert(site.to_owned(), new) {
            let _ = self
                .robots_info
                .remove_label_values(&[site, &old[0], &old[1]]);
        }
        self.robots_info
            .with_label_values(&[site, sha256, state])
            .set(1);
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let families = self.registry.gather();
        if let Err(e) = TextEncoder::new().encode(&families, &mut out) {
            log::error!("cannot encode metrics: {e}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_prefixed_and_rendered() {
        let metrics = Metrics::new().unwrap();
        metrics
            .requests
            .with_label_values(&["example", "GPTBot", "ai-training", "disallowed", "blocked"])
            .inc();
        metrics.robots_rules.with_label_values(&["example"]).set(3);
        let text = String::from_utf8(metrics.render()).unwrap();
        assert!(text.contains(
            "crawlgate_requests_total{action=\"blocked\",bot=\"GPTBot\",category=\"ai-training\",site=\"example\",verdict=\"disallowed\"} 1"
        ), "{text}");
        assert!(text.contains("crawlgate_robots_rules{site=\"example\"} 3"));
        metrics.set_robots_info("example", "aa", "loaded");
        metrics.set_robots_info("example", "bb", "loaded");
        let text = String::from_utf8(metrics.render()).unwrap();
        assert!(!text.contains("sha256=\"aa\""), "{text}");
        assert!(
            text.contains(
                "crawlgate_robots_info{sha256=\"bb\",site=\"example\",state=\"loaded\"} 1"
            ),
            "{text}"
        );
        for line in text.lines().filter(|l| l.starts_with("# TYPE")) {
            assert!(line.starts_with("# TYPE crawlgate_"), "{line}");
        }
    }
}
