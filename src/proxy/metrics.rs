//! Every metric crawlgate exports, in one place, with its help text.
//!
//! Labels take bounded values only: site names from the configuration, bot labels from the
//! catalog and robots.txt (capped per site), categories, verdicts and actions from fixed sets.
//! Never a raw header or path.

use prometheus::{
    CounterVec, Encoder, GaugeVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The name of every metric crawlgate exports, for dashboards, alert rules and their tests.
pub const METRIC_NAMES: &[&str] = &[
    "crawlgate_requests_total",
    "crawlgate_robots_fetches_total",
    "crawlgate_robots_reloads_total",
    "crawlgate_robots_rules",
    "crawlgate_robots_problems",
    "crawlgate_robots_last_reload_timestamp_seconds",
    "crawlgate_robots_info",
    "crawlgate_robots_refresh_seconds",
    "crawlgate_upstream_errors_total",
    "crawlgate_unknown_host_requests_total",
    "crawlgate_access_log_dropped_total",
    "crawlgate_config_reloads_total",
    "crawlgate_crawl_delay_exceeded_total",
    "crawlgate_requests_without_robots_fetch_total",
    "crawlgate_dns_lookups_total",
    "crawlgate_ranges_reloads_total",
    "crawlgate_tracked_entries",
    "crawlgate_bad_requests_total",
    "crawlgate_robots_snapshots",
    "crawlgate_content_usage_total",
    "crawlgate_requests_over_budget_total",
    "crawlgate_tls_certificate_reloads_total",
    "crawlgate_tls_certificate_expiry_timestamp_seconds",
    "crawlgate_state_store_errors_total",
    "crawlgate_state_store_up",
    "crawlgate_signatures_total",
    "crawlgate_signature_directory_fetches_total",
    "crawlgate_signature_keys",
    "crawlgate_verifications_total",
    "crawlgate_aborted_responses_total",
    "crawlgate_client_connections",
    "crawlgate_client_connections_refused_total",
    "crawlgate_accept_waits_total",
    "crawlgate_client_timeouts_total",
    "crawlgate_dns_lookups_shed_total",
    "crawlgate_dns_lookups_in_flight",
    "crawlgate_crawls_total",
    "crawlgate_referrals_total",
    "crawlgate_payments_total",
    "crawlgate_charged_total",
];

/// The metrics of one crawlgate process, in their own registry.
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Registry,
    /// `crawlgate_requests_total{site, bot, category, verdict, action, verified}`
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
    /// `crawlgate_robots_refresh_seconds{site}`: how often the file is expected to be reloaded.
    pub robots_refresh: GaugeVec,
    /// `crawlgate_crawl_delay_exceeded_total{site, bot, action}`
    pub crawl_delay_exceeded: IntCounterVec,
    /// `crawlgate_requests_without_robots_fetch_total{site, bot}`
    pub requests_without_robots_fetch: IntCounterVec,
    /// `crawlgate_dns_lookups_total{result}`: reverse-DNS verifications.
    pub dns_lookups: IntCounterVec,
    /// `crawlgate_dns_lookups_shed_total{limit}`: crawler claims decided `unverifiable` at once
    /// because a lookup limit was reached (`instance` or `client`).
    pub dns_lookups_shed: IntCounterVec,
    /// `crawlgate_dns_lookups_in_flight`: reverse-DNS lookups running (each holds a socket).
    pub dns_lookups_in_flight: prometheus::IntGauge,
    /// `crawlgate_ranges_reloads_total{bot, result}`: published IP range files loaded.
    pub ranges_reloads: IntCounterVec,
    /// `crawlgate_tracked_entries{kind}`: crawlers and clients remembered (bounded).
    pub tracked: IntGaugeVec,
    /// `crawlgate_bad_requests_total{reason}`: requests refused with 400 before any site judged
    /// them (a bounded set of reasons).
    pub bad_requests: IntCounterVec,
    /// `crawlgate_robots_snapshots`: compiled robots.txt snapshots alive.
    pub snapshots: prometheus::IntGauge,
    /// `crawlgate_content_usage_total{site, bot, usage, action}`: `content-usage` verdicts.
    pub content_usage: IntCounterVec,
    /// `crawlgate_crawls_total{site, operator}`: requests of the crawlers of an operator the
    /// catalog lists referrer hosts for, whose claim is not proven false.
    pub crawls: IntCounterVec,
    /// `crawlgate_referrals_total{site, operator}`: people's requests whose `Referer` (or
    /// `Origin`) is one of the operator's products.
    pub referrals: IntCounterVec,
    /// `crawlgate_payments_total{site, bot, result}`: priced requests (pay per crawl), by what
    /// they came to: quoted, charged, charged_before, not_charged (the origin's answer was no
    /// success), or the payment error.
    pub payments: IntCounterVec,
    /// `crawlgate_charged_total{site, bot, currency}`: what verified crawlers were charged, in
    /// the currency's unit.
    pub charged: CounterVec,
    /// `crawlgate_requests_over_budget_total{site, bot, action}`: crawler requests disallowed
    /// because judging their path took more work than a query may do.
    pub over_budget: IntCounterVec,
    /// `crawlgate_tls_certificate_reloads_total{listener, result}`: certificate pairs loaded
    /// again after their files changed or on SIGHUP.
    pub tls_certificate_reloads: IntCounterVec,
    /// `crawlgate_tls_certificate_expiry_timestamp_seconds{listener, cert}`: when each
    /// certificate in force expires.
    pub tls_certificate_expiry: IntGaugeVec,
    /// `crawlgate_state_store_errors_total{reason}`: crawler requests decided from the
    /// instance's own memory because the shared store erred, was slow or was down.
    pub state_store_errors: IntCounterVec,
    /// `crawlgate_state_store_up{store}`: 1 while the shared store answers (only with one).
    pub state_store_up: IntGaugeVec,
    /// `crawlgate_signatures_total{site, bot, result}`: signed requests by Web Bot Auth result
    /// (verified, invalid, replayed, unverifiable), people's too; unsigned ones are the rest of
    /// `crawlgate_requests_total`.
    pub signatures: IntCounterVec,
    /// `crawlgate_signature_directory_fetches_total{directory, result}`: key directory fetches
    /// (ok, error, refused).
    pub signature_directory_fetches: IntCounterVec,
    /// `crawlgate_signature_keys{directory}`: keys held per key directory.
    pub signature_keys: IntGaugeVec,
    /// `crawlgate_verifications_total{site, bot, result, method}`: crawler requests whose
    /// identity was checked, by verdict and by the method that reached it.
    pub verifications: IntCounterVec,
    /// `crawlgate_aborted_responses_total{site, cause}`: responses whose transfer to the client
    /// was aborted because the origin failed after their header was sent.
    pub aborted_responses: IntCounterVec,
    /// `crawlgate_client_connections`: client connections open (accepted, not yet closed).
    pub client_connections: prometheus::IntGauge,
    /// `crawlgate_client_connections_refused_total{reason}`: connections closed at once
    /// (`per_address`: the address holds its most; `draining`: the process is stopping).
    pub connections_refused: IntCounterVec,
    /// `crawlgate_accept_waits_total`: times accepting paused at `clients.max_connections`.
    pub accept_waits: IntCounter,
    /// `crawlgate_client_timeouts_total{phase}`: connections closed because a client took too
    /// long (`header`, `idle`, `body`, `send`).
    pub client_timeouts: IntCounterVec,
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
        // A sum of prices: a floating-point counter (Prometheus has no decimal one).
        let charged = CounterVec::new(
            Opts::new(
                "crawlgate_charged_total",
                "What verified crawlers were charged (pay per crawl), in the currency's unit; the ledger in the state directory is the exact record.",
            ),
            &["site", "bot", "currency"],
        )?;
        registry.register(Box::new(charged.clone()))?;
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
        let snapshots = prometheus::IntGauge::new(
            "crawlgate_robots_snapshots",
            "Compiled robots.txt snapshots alive: in force, previous (for grace) and held by requests in flight.",
        )?;
        registry.register(Box::new(snapshots.clone()))?;
        let robots_refresh = GaugeVec::new(
            Opts::new(
                "crawlgate_robots_refresh_seconds",
                "How often each site's robots.txt is re-fetched (origin) or checked (file), in seconds.",
            ),
            &["site"],
        )?;
        registry.register(Box::new(robots_refresh.clone()))?;
        let client_connections = prometheus::IntGauge::new(
            "crawlgate_client_connections",
            "Client connections open: accepted (TLS handshakes included) and not yet closed.",
        )?;
        registry.register(Box::new(client_connections.clone()))?;
        let accept_waits = IntCounter::new(
            "crawlgate_accept_waits_total",
            "Times accepting new connections paused because clients.max_connections were open (the kernel's backlog holds new ones meanwhile).",
        )?;
        registry.register(Box::new(accept_waits.clone()))?;
        let dns_lookups_in_flight = prometheus::IntGauge::new(
            "crawlgate_dns_lookups_in_flight",
            "Reverse-DNS lookups running now, each holding a socket; at most verification.dns.max_lookups.",
        )?;
        registry.register(Box::new(dns_lookups_in_flight.clone()))?;
        Ok(Metrics {
            client_connections,
            accept_waits,
            connections_refused: counter(
                r,
                "crawlgate_client_connections_refused_total",
                "Client connections closed as soon as accepted: per_address (the address, or IPv6 /64, holds clients.max_connections_per_address already) or draining (the process is stopping).",
                &["reason"],
            )?,
            client_timeouts: counter(
                r,
                "crawlgate_client_timeouts_total",
                "Client connections closed because the client took too long: header (a request header did not arrive within clients.header_timeout), idle (no next request within clients.idle_timeout), body (silent for clients.body_timeout while sending a body), send (did not read what it was sent for clients.send_timeout).",
                &["phase"],
            )?,
            aborted_responses: counter(
                r,
                "crawlgate_aborted_responses_total",
                "Responses whose transfer to the client was aborted (HTTP/1.1: closed short of its length or last chunk; HTTP/2: RST_STREAM) because the origin failed after their header was sent, by cause (timeout, closed, invalid).",
                &["site", "cause"],
            )?,
            dns_lookups_in_flight,
            dns_lookups_shed: counter(
                r,
                "crawlgate_dns_lookups_shed_total",
                "Crawler claims decided unverifiable at once, without a lookup, because the lookups running reached a limit: instance (verification.dns.max_lookups) or client (max_lookups_per_client).",
                &["limit"],
            )?,
            content_usage: counter(
                r,
                "crawlgate_content_usage_total",
                "Crawler requests robots.txt allows but its content-use preference refuses (verdict content-usage), by refused use (train-ai, search, ai-input) and action taken.",
                &["site", "bot", "usage", "action"],
            )?,
            crawls: counter(
                r,
                "crawlgate_crawls_total",
                "Requests of the crawlers of each operator whose referrer hosts the catalog lists (the operators of crawlgate_referrals_total), whatever their outcome, unless their claim was proven false: what the operator takes.",
                &["site", "operator"],
            )?,
            referrals: counter(
                r,
                "crawlgate_referrals_total",
                "People's requests whose Referer (or, without one, Origin) is a host of an operator's products (chatgpt.com, google.*, ...): the visitors the operator sends back.",
                &["site", "operator"],
            )?,
            payments: counter(
                r,
                "crawlgate_payments_total",
                "Priced requests of verified crawlers (pay per crawl), by result: quoted (402 with crawler-price), charged, charged_before (the same signed request, charged once), not_charged (the origin answered no success), or the error sent in crawler-error (invalid_exact_price, strong_auth_required, internal_error, ...).",
                &["site", "bot", "result"],
            )?,
            charged,
            over_budget: counter(
                r,
                "crawlgate_requests_over_budget_total",
                "Crawler requests disallowed with no rule because judging their path took more work than one query may do (a crafted path, or one over 8 KiB once normalised), by action taken; also counted in crawlgate_requests_total as disallowed.",
                &["site", "bot", "action"],
            )?,
            state_store_errors: counter(
                r,
                "crawlgate_state_store_errors_total",
                "Crawler requests decided from this instance's own memory because the shared state store failed (error), was slower than the budget (timeout) or was down (unavailable).",
                &["reason"],
            )?,
            state_store_up: gauge(
                r,
                "crawlgate_state_store_up",
                "1 while the shared state store answers within the budget, 0 while this instance decides from its own memory.",
                &["store"],
            )?,
            snapshots,
            robots_refresh,
            crawl_delay_exceeded: counter(
                r,
                "crawlgate_crawl_delay_exceeded_total",
                "Crawler requests that came sooner than robots.txt's crawl-delay allows, by action taken.",
                &["site", "bot", "action"],
            )?,
            requests_without_robots_fetch: counter(
                r,
                "crawlgate_requests_without_robots_fetch_total",
                "Crawler requests from crawlers that had not fetched robots.txt within the window.",
                &["site", "bot"],
            )?,
            dns_lookups: counter(
                r,
                "crawlgate_dns_lookups_total",
                "Forward-confirmed reverse DNS verifications by result (verified, spoofed, timeout, error, cached, shared).",
                &["result"],
            )?,
            bad_requests: counter(
                r,
                "crawlgate_bad_requests_total",
                "Requests refused with 400 before any site judged them, by reason: the Host (duplicate_host, missing_host, invalid_host), several_user_agents, unreadable_body, and what pingora would not read (invalid_request_line, invalid_header_line, too_many_headers, header_too_large, host_mismatch, invalid_content_length, invalid_transfer_encoding, unparsable).",
                &["reason"],
            )?,
            tracked: gauge(
                r,
                "crawlgate_tracked_entries",
                "Crawlers and clients remembered, by kind (crawl_delay, robots_fetch, dns, signature_uses); each is bounded.",
                &["kind"],
            )?,
            signatures: counter(
                r,
                "crawlgate_signatures_total",
                "Signed requests by Web Bot Auth result: verified, invalid, replayed, unverifiable (no keys); bot is person for a person's request, whose bad signature leaves it a person; unsigned ones are the rest of crawlgate_requests_total.",
                &["site", "bot", "result"],
            )?,
            signature_directory_fetches: counter(
                r,
                "crawlgate_signature_directory_fetches_total",
                "Key directory fetches by directory and result (ok, error, refused).",
                &["directory", "result"],
            )?,
            signature_keys: gauge(
                r,
                "crawlgate_signature_keys",
                "Ed25519 keys held per key directory.",
                &["directory"],
            )?,
            verifications: counter(
                r,
                "crawlgate_verifications_total",
                "Crawler requests whose identity was checked, by result (verified, spoofed, unverifiable) and the method that reached it (ranges, reverse-dns, signature, none).",
                &["site", "bot", "result", "method"],
            )?,
            ranges_reloads: counter(
                r,
                "crawlgate_ranges_reloads_total",
                "Loads of published IP range files by result (ok, error).",
                &["bot", "result"],
            )?,
            requests: counter(
                r,
                "crawlgate_requests_total",
                "Requests by site, crawler, category, robots.txt verdict, action taken and verification.",
                &["site", "bot", "category", "verdict", "action", "verified"],
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
            tls_certificate_reloads: counter(
                r,
                "crawlgate_tls_certificate_reloads_total",
                "TLS certificate pairs loaded again after their files changed or on SIGHUP, by result (ok, unchanged, error: the old pair keeps serving).",
                &["listener", "result"],
            )?,
            tls_certificate_expiry: gauge(
                r,
                "crawlgate_tls_certificate_expiry_timestamp_seconds",
                "When each TLS certificate in force expires (Unix time), by listener and certificate file.",
                &["listener", "cert"],
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
            .with_label_values(&[
                "example",
                "GPTBot",
                "ai-training",
                "disallowed",
                "blocked",
                "unverifiable",
            ])
            .inc();
        metrics.robots_rules.with_label_values(&["example"]).set(3);
        let text = String::from_utf8(metrics.render()).unwrap();
        assert!(text.contains(
            "crawlgate_requests_total{action=\"blocked\",bot=\"GPTBot\",category=\"ai-training\",site=\"example\",verdict=\"disallowed\",verified=\"unverifiable\"} 1"
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
        // Every registered family is in METRIC_NAMES, and every name is registered.
        let registered: Vec<String> = metrics
            .registry
            .gather()
            .iter()
            .map(|f| f.name().to_owned())
            .collect();
        let mut described: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# HELP "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        described.sort_unstable();
        for name in &registered {
            assert!(
                METRIC_NAMES.contains(&name.as_str()),
                "{name} is not in METRIC_NAMES"
            );
        }
        assert!(described.iter().all(|d| METRIC_NAMES.contains(d)));
    }
}
