//! The certificate reload service: polls every TLS listener's certificate and key files and,
//! when a pair has changed and held still (or on SIGHUP), loads it and swaps it in. A pair that
//! cannot be loaded is reported (log and `crawlgate_tls_certificate_reloads_total{result=
//! "error"}`) and the one in force keeps serving: a renewal half written never breaks
//! handshakes.

use super::certs::{CertError, CertStore, Certified};
use super::listener::TlsListener;
use crate::proxy::metrics::Metrics;
use crate::proxy::source::{FilePoll, FileWatch, FILE_POLL};
use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use std::sync::Arc;

/// What loading a pair's files again does to a listener's certificates.
#[derive(Debug)]
pub enum Reload {
    /// The files hold a new, good pair: this store serves from now on.
    Replaced(CertStore),
    /// The files hold the pair in force.
    Unchanged,
    /// The files hold no servable pair: the one in force stays.
    Failed(CertError),
}

impl Reload {
    /// The `result` label of `crawlgate_tls_certificate_reloads_total`.
    pub fn result(&self) -> &'static str {
        match self {
            Reload::Replaced(_) => "ok",
            Reload::Unchanged => "unchanged",
            Reload::Failed(_) => "error",
        }
    }
}

/// Decides what a fresh load of the `index`-th pair does to `store`.
pub fn reload(store: &CertStore, index: usize, loaded: Result<Certified, CertError>) -> Reload {
    match loaded {
        Err(e) => Reload::Failed(e),
        Ok(cert) => match store.certs().get(index) {
            Some(current) if current.same_files(&cert) => Reload::Unchanged,
            _ => Reload::Replaced(store.replaced(index, Arc::new(cert))),
        },
    }
}

/// The background service that keeps TLS listeners' certificates fresh.
pub struct CertReloader {
    listeners: Vec<TlsListener>,
    metrics: Metrics,
}

impl CertReloader {
    /// A reloader for `listeners`, recording into `metrics` (their expiry is set at once).
    pub fn new(listeners: Vec<TlsListener>, metrics: Metrics) -> CertReloader {
        let reloader = CertReloader { listeners, metrics };
        for listener in &reloader.listeners {
            for cert in listener.store.load().certs() {
                reloader.set_expiry(listener, cert);
            }
        }
        reloader
    }

    fn set_expiry(&self, listener: &TlsListener, cert: &Certified) {
        let addr = listener.addr.to_string();
        let file = cert.pair.cert.display().to_string();
        self.metrics
            .tls_certificate_expiry
            .with_label_values(&[addr.as_str(), file.as_str()])
            .set(cert.not_after);
    }

    /// Loads the `index`-th pair of `listener` again and applies the outcome.
    fn load(&self, listener: &TlsListener, index: usize) {
        let Some(pair) = listener.pairs.get(index) else {
            return;
        };
        let addr = listener.addr.to_string();
        let current = listener.store.load_full();
        let outcome = reload(&current, index, Certified::load(pair));
        self.metrics
            .tls_certificate_reloads
            .with_label_values(&[addr.as_str(), outcome.result()])
            .inc();
        match outcome {
            Reload::Replaced(store) => {
                if let Some(cert) = store.certs().get(index) {
                    log::info!(
                        "tls_listen {addr}: loaded {} for {} (expires at Unix time {})",
                        pair.cert.display(),
                        cert.names.join(", "),
                        cert.not_after
                    );
                    self.set_expiry(listener, cert);
                }
                listener.store.store(Arc::new(store));
            }
            Reload::Unchanged => {}
            Reload::Failed(e) => {
                log::error!(
                    "tls_listen {addr}: certificate not reloaded, the old one keeps serving: {e}"
                );
            }
        }
    }

    async fn run(&self, mut shutdown: ShutdownWatch) {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangup = match signal(SignalKind::hangup()) {
            Ok(signal) => Some(signal),
            Err(e) => {
                log::error!("cannot watch SIGHUP, certificates reload on file changes only: {e}");
                None
            }
        };
        let mut watches: Vec<Vec<FileWatch>> = (self.listeners.iter())
            .map(|listener| {
                (listener.pairs.iter())
                    .map(|pair| FileWatch::loaded_all(&[&pair.cert, &pair.key]))
                    .collect()
            })
            .collect();
        let mut tick = tokio::time::interval(FILE_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                Some(()) = async { match hangup.as_mut() { Some(h) => h.recv().await, None => None } } => {
                    for (listener, watches) in self.listeners.iter().zip(&mut watches) {
                        for (index, (pair, watch)) in listener.pairs.iter().zip(watches).enumerate() {
                            watch.mark_loaded_all(&[&pair.cert, &pair.key]);
                            self.load(listener, index);
                        }
                    }
                }
                _ = tick.tick() => {
                    for (listener, watches) in self.listeners.iter().zip(&mut watches) {
                        for (index, (pair, watch)) in listener.pairs.iter().zip(watches).enumerate() {
                            match watch.poll_all(&[&pair.cert, &pair.key]) {
                                FilePoll::Unchanged => {}
                                FilePoll::Ready => {
                                    watch.mark_loaded_all(&[&pair.cert, &pair.key]);
                                    self.load(listener, index);
                                }
                                FilePoll::Gone => self.load(listener, index),
                            }
                        }
                    }
                }
            }
        }
    }
}

#[async_trait]
impl BackgroundService for CertReloader {
    async fn start(&self, shutdown: ShutdownWatch) {
        self.run(shutdown).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::config::CertPair;
    use crate::proxy::tls::certs::tests::self_signed;

    fn pair() -> CertPair {
        CertPair {
            cert: "a.crt".into(),
            key: "a.key".into(),
        }
    }

    fn from_pem(cert: &str, key: &str) -> Result<Certified, CertError> {
        Certified::from_pem(pair(), cert.as_bytes().to_vec(), key.as_bytes().to_vec())
    }

    fn certified(names: &[&str]) -> Certified {
        let (cert, key) = self_signed(names);
        from_pem(&cert, &key).unwrap()
    }

    #[test]
    fn a_new_pair_replaces_the_old_and_a_bad_one_keeps_it() {
        let (cert, key) = self_signed(&["a.test"]);
        let first = from_pem(&cert, &key).unwrap();
        let same = from_pem(&cert, &key).unwrap();
        let store = CertStore::new(vec![Arc::new(first)]);
        let outcome = reload(&store, 0, Ok(same));
        assert!(matches!(outcome, Reload::Unchanged), "{outcome:?}");
        assert_eq!(outcome.result(), "unchanged");

        let outcome = reload(&store, 0, Ok(certified(&["a.test", "b.test"])));
        assert_eq!(outcome.result(), "ok");
        let Reload::Replaced(renewed) = outcome else {
            panic!("not replaced");
        };
        assert_eq!(renewed.select(Some("b.test")).unwrap().names.len(), 2);

        let broken = from_pem("half written", &key);
        let outcome = reload(&renewed, 0, broken);
        assert_eq!(outcome.result(), "error");
        assert!(matches!(
            outcome,
            Reload::Failed(CertError::Certificate { .. })
        ));
    }
}
