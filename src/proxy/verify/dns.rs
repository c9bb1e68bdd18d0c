//! Forward-confirmed reverse DNS: the address's PTR name must end in one of the operator's
//! domains, and that name must resolve back to the address.
//!
//! Lookups never hold a request longer than the budget (50 ms by default): a lookup runs in its
//! own task, concurrent requests for the same address and crawler wait on the same lookup, and
//! its outcome is kept in the state store (verified for longer than spoofed, a failed lookup
//! briefly): this instance's bounded memory, and with a shared store every instance's, so that
//! a fleet resolves each address once. A lookup asks the shared store before DNS. A request
//! whose budget runs out is `unverifiable`; the lookup goes on and the next request gets its
//! answer from the store.
//!
//! Lookups are bounded ([`super::limit`]): at most `max_lookups` run at once, and
//! `max_lookups_per_client` for one client network; a claim over either is `unverifiable` at
//! once, is not remembered (the next request may find room), and is counted in
//! `crawlgate_dns_lookups_shed_total{limit}`.

use super::limit::{LookupLimit, Permit};
use crate::proxy::store::{DnsKey, StateStore};
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use hickory_resolver::TokioResolver;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// What DNS said about an address that claims to be a crawler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DnsOutcome {
    /// The PTR name (under one of the operator's domains) resolves back to the address.
    Verified(String),
    /// No PTR name under the operator's domains, or it does not resolve back.
    Spoofed(String),
    /// DNS failed or was too slow: no verdict.
    Unverifiable(String),
}

/// Reverse-DNS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsSettings {
    /// How long a request may wait for a lookup.
    pub budget: Duration,
    /// How long a lookup may take in all (it goes on after the budget).
    pub lookup_timeout: Duration,
    /// How long a verified address is believed.
    pub positive_ttl: Duration,
    /// How long a spoofed address is remembered.
    pub negative_ttl: Duration,
    /// How long a failed lookup is remembered before it is tried again.
    pub error_ttl: Duration,
    /// How many (address, crawler) answers this instance remembers (read at start).
    pub cache_size: u64,
    /// A name server to ask instead of the system's (`/etc/resolv.conf`).
    pub server: Option<SocketAddr>,
    /// The most lookups running at once in this instance.
    pub max_lookups: usize,
    /// The most lookups running at once for one client network (an IPv4 address, an IPv6 /64).
    pub max_lookups_per_client: usize,
}

impl Default for DnsSettings {
    fn default() -> Self {
        DnsSettings {
            budget: Duration::from_millis(50),
            lookup_timeout: Duration::from_secs(2),
            positive_ttl: Duration::from_secs(3600),
            negative_ttl: Duration::from_secs(600),
            error_ttl: Duration::from_secs(30),
            cache_size: 100_000,
            server: None,
            max_lookups: 256,
            max_lookups_per_client: 4,
        }
    }
}

type Key = DnsKey;

impl DnsSettings {
    /// How long an outcome is kept: verified for longer than spoofed, a failure briefly.
    pub fn ttl(&self, outcome: &DnsOutcome) -> Duration {
        match outcome {
            DnsOutcome::Verified(_) => self.positive_ttl,
            DnsOutcome::Spoofed(_) => self.negative_ttl,
            DnsOutcome::Unverifiable(_) => self.error_ttl,
        }
    }
}

/// A DNS verifier cannot be set up.
#[derive(Debug, thiserror::Error)]
#[error("cannot set up the DNS resolver: {0}")]
pub struct DnsError(String);

/// The metrics a DNS verifier reports in.
#[derive(Debug, Clone)]
pub struct DnsMetrics {
    /// `crawlgate_dns_lookups_total{result}`.
    pub lookups: prometheus::IntCounterVec,
    /// `crawlgate_dns_lookups_shed_total{limit}`: claims over a lookup limit.
    pub shed: prometheus::IntCounterVec,
    /// `crawlgate_dns_lookups_in_flight`: lookups running.
    pub in_flight: prometheus::IntGauge,
}

impl DnsMetrics {
    /// The DNS verifier's metrics among the process's.
    pub fn of(metrics: &crate::proxy::metrics::Metrics) -> DnsMetrics {
        DnsMetrics {
            lookups: metrics.dns_lookups.clone(),
            shed: metrics.dns_lookups_shed.clone(),
            in_flight: metrics.dns_lookups_in_flight.clone(),
        }
    }
}

/// Verifies crawlers by forward-confirmed reverse DNS, with a budget, the state store's memory
/// of outcomes, one lookup per address at a time and a bound on the lookups running.
pub struct DnsVerifier {
    resolver: TokioResolver,
    /// `crawlgate_dns_lookups_total{result}`.
    lookups: prometheus::IntCounterVec,
    /// `crawlgate_dns_lookups_shed_total{limit}`.
    shed: prometheus::IntCounterVec,
    /// The lookups running. A reload builds a new verifier and so a new count, while the old
    /// one's lookups finish within `dns.timeout`.
    limit: Arc<LookupLimit>,
    store: Arc<dyn StateStore>,
    in_flight: Arc<Mutex<HashMap<Key, watch::Receiver<Option<DnsOutcome>>>>>,
    settings: DnsSettings,
}

impl std::fmt::Debug for DnsVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsVerifier")
            .field("settings", &self.settings)
            .finish()
    }
}

/// Whether `name` is `domain` or under it (`crawl-1.googlebot.com.` is under `googlebot.com`).
fn is_under(name: &str, domain: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let domain = domain
        .trim_end_matches('.')
        .trim_start_matches('.')
        .to_ascii_lowercase();
    name == domain
        || name
            .strip_suffix(&domain)
            .is_some_and(|head| head.ends_with('.'))
}

impl DnsVerifier {
    /// A verifier asking the configured server, or the system's resolvers, that keeps outcomes
    /// in `store` and reports in `metrics`.
    pub fn new(
        settings: DnsSettings,
        metrics: DnsMetrics,
        store: Arc<dyn StateStore>,
    ) -> Result<DnsVerifier, DnsError> {
        let provider = TokioRuntimeProvider::default();
        let mut builder = match settings.server {
            Some(server) => {
                let mut udp = ConnectionConfig::udp();
                udp.port = server.port();
                let mut tcp = ConnectionConfig::tcp();
                tcp.port = server.port();
                let name_server = NameServerConfig::new(server.ip(), true, vec![udp, tcp]);
                let config = ResolverConfig::from_name_servers(vec![name_server]);
                TokioResolver::builder_with_config(config, provider)
            }
            None => TokioResolver::builder(provider).map_err(|e| DnsError(e.to_string()))?,
        };
        let options = builder.options_mut();
        options.timeout = settings.lookup_timeout;
        options.attempts = 1;
        // We cache outcomes ourselves; the resolver's cache would only hold the pieces.
        options.cache_size = 0;
        let resolver = builder.build().map_err(|e| DnsError(e.to_string()))?;
        let limit = LookupLimit::new(
            settings.max_lookups,
            settings.max_lookups_per_client,
            metrics.in_flight,
        );
        Ok(DnsVerifier {
            resolver,
            lookups: metrics.lookups,
            shed: metrics.shed,
            limit,
            store,
            in_flight: Arc::default(),
            settings,
        })
    }

    /// Verifies that `addr` belongs to `crawler`, whose reverse DNS names end in `domains`.
    /// Returns the outcome and whether it came from the cache.
    pub async fn verify(
        &self,
        addr: IpAddr,
        crawler: &Arc<str>,
        domains: &Arc<[String]>,
    ) -> (DnsOutcome, bool) {
        let key = (addr, crawler.clone());
        if let Some(outcome) = self.store.recall_dns(&key) {
            self.lookups.with_label_values(&["cached"]).inc();
            return (outcome, true);
        }
        let mut receiver = {
            let mut in_flight = match self.in_flight.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            match in_flight.get(&key) {
                // Joining a lookup that runs costs no socket: no permit is needed.
                Some(receiver) => receiver.clone(),
                None => {
                    let permit = match self.limit.try_acquire(addr) {
                        Ok(permit) => permit,
                        Err(over) => {
                            drop(in_flight);
                            self.shed.with_label_values(&[over.label()]).inc();
                            return (self.shed_outcome(over), false);
                        }
                    };
                    let (sender, receiver) = watch::channel(None);
                    in_flight.insert(key.clone(), receiver.clone());
                    self.spawn_lookup(key, domains.clone(), sender, permit);
                    receiver
                }
            }
        };
        let waited =
            tokio::time::timeout(self.settings.budget, receiver.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(outcome)) => match outcome.clone() {
                Some(outcome) => (outcome, false),
                None => (
                    DnsOutcome::Unverifiable("the lookup ended without an answer".into()),
                    false,
                ),
            },
            Ok(Err(_)) => (
                DnsOutcome::Unverifiable("the lookup was abandoned".into()),
                false,
            ),
            Err(_) => (
                DnsOutcome::Unverifiable(format!(
                    "reverse DNS took longer than the {} ms budget",
                    self.settings.budget.as_millis()
                )),
                false,
            ),
        }
    }

    /// Why a claim over a limit is unverifiable (not remembered: no lookup said anything).
    fn shed_outcome(&self, over: super::limit::Over) -> DnsOutcome {
        DnsOutcome::Unverifiable(match over {
            super::limit::Over::Instance => format!(
                "not looked up: {} reverse-DNS lookups are running, the most at once (verification.dns.max_lookups)",
                self.settings.max_lookups
            ),
            super::limit::Over::Client => format!(
                "not looked up: {} reverse-DNS lookups are running for this client, the most at once (verification.dns.max_lookups_per_client)",
                self.settings.max_lookups_per_client
            ),
        })
    }

    /// How many lookups run now.
    pub fn running(&self) -> usize {
        self.limit.running()
    }

    /// Starts the lookup of `key` in its own task, which holds `permit` until the lookup has
    /// ended and its outcome is stored.
    fn spawn_lookup(
        &self,
        key: Key,
        domains: Arc<[String]>,
        sender: watch::Sender<Option<DnsOutcome>>,
        permit: Permit,
    ) {
        let resolver = self.resolver.clone();
        let store = self.store.clone();
        let in_flight = self.in_flight.clone();
        let lookups = self.lookups.clone();
        let settings = self.settings.clone();
        let timeout = self.settings.lookup_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            let addr = key.0;
            // Another instance may have looked it up already.
            if let Some(outcome) = store.lookup_dns(&key).await {
                lookups.with_label_values(&["shared"]).inc();
                if let Ok(mut in_flight) = in_flight.lock() {
                    in_flight.remove(&key);
                }
                let _ = sender.send(Some(outcome));
                return;
            }
            let outcome =
                tokio::time::timeout(timeout, forward_confirmed(&resolver, addr, &domains)).await;
            let result = match &outcome {
                Ok(DnsOutcome::Verified(_)) => "verified",
                Ok(DnsOutcome::Spoofed(_)) => "spoofed",
                Ok(DnsOutcome::Unverifiable(_)) => "error",
                Err(_) => "timeout",
            };
            lookups.with_label_values(&[result]).inc();
            let outcome = outcome.unwrap_or_else(|_| {
                DnsOutcome::Unverifiable(format!(
                    "DNS did not answer within {} ms",
                    timeout.as_millis()
                ))
            });
            // Waiters get the answer first; the entry stays in flight until the store has it, so
            // that nobody starts the same lookup meanwhile.
            let _ = sender.send(Some(outcome.clone()));
            store
                .remember_dns(&key, &outcome, settings.ttl(&outcome))
                .await;
            if let Ok(mut in_flight) = in_flight.lock() {
                in_flight.remove(&key);
            }
        });
    }
}

/// The lookup itself: PTR, then A/AAAA of each name under the operator's domains.
async fn forward_confirmed(
    resolver: &TokioResolver,
    addr: IpAddr,
    domains: &[String],
) -> DnsOutcome {
    let names: Vec<String> = match resolver.lookup(Name::from(addr), RecordType::PTR).await {
        Ok(lookup) => lookup
            .answers()
            .iter()
            .filter_map(|record| match &record.data {
                RData::PTR(ptr) => Some(ptr.0.to_ascii()),
                _ => None,
            })
            .collect(),
        Err(e) if e.is_no_records_found() || e.is_nx_domain() => {
            return DnsOutcome::Spoofed(format!("{addr} has no reverse DNS name"));
        }
        Err(e) => return DnsOutcome::Unverifiable(format!("reverse DNS of {addr} failed: {e}")),
    };
    let candidates: Vec<&String> = names
        .iter()
        .filter(|name| domains.iter().any(|domain| is_under(name, domain)))
        .collect();
    let Some(first) = candidates.first() else {
        let shown = names.first().map_or("nothing", String::as_str);
        return DnsOutcome::Spoofed(format!(
            "{addr} is {shown}, not under {}",
            domains.join(", ")
        ));
    };
    let mut failure = None;
    for name in &candidates {
        match resolver.lookup_ip(name.as_str()).await {
            Ok(ips) if ips.iter().any(|ip| ip == addr) => {
                return DnsOutcome::Verified(name.trim_end_matches('.').to_owned());
            }
            Ok(_) => {}
            Err(e) if e.is_no_records_found() || e.is_nx_domain() => {}
            Err(e) => failure = Some(format!("forward DNS of {name} failed: {e}")),
        }
    }
    match failure {
        Some(failure) => DnsOutcome::Unverifiable(failure),
        None => DnsOutcome::Spoofed(format!(
            "{} does not resolve back to {addr}",
            first.trim_end_matches('.')
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_under_a_domain_at_a_label_boundary() {
        assert!(is_under(
            "crawl-66-249-66-1.googlebot.com.",
            "googlebot.com"
        ));
        assert!(is_under("GOOGLEBOT.COM", "googlebot.com."));
        assert!(is_under("a.b.search.msn.com", ".search.msn.com"));
        assert!(!is_under("evilgooglebot.com", "googlebot.com"));
        assert!(!is_under("googlebot.com.evil.net", "googlebot.com"));
    }
}
