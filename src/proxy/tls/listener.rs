//! A TLS listener's certificates in force, and the pingora settings that serve them: the
//! certificate is picked per handshake from the client's SNI, so a reload swaps the set without
//! touching the listening socket or the connections on it.

use super::certs::{CertError, CertStore, Certified};
use crate::proxy::config::{CertPair, TlsListen};
use arc_swap::ArcSwap;
use async_trait::async_trait;
use openssl::ssl::NameType;
use pingora::listeners::tls::TlsSettings;
use pingora::listeners::TlsAccept;
use pingora::protocols::tls::TlsRef;
use std::net::SocketAddr;
use std::sync::Arc;

/// A TLS listener: its address, the files of its certificates and the set in force.
#[derive(Debug, Clone)]
pub struct TlsListener {
    /// The address.
    pub addr: SocketAddr,
    /// The certificate files, in the configuration's order (the first is the default).
    pub pairs: Vec<CertPair>,
    /// The certificates handshakes use; the reload service replaces it.
    pub store: Arc<ArcSwap<CertStore>>,
}

impl TlsListener {
    /// Loads every certificate of a configured listener; any bad pair fails (at start there is
    /// no old one to keep serving).
    pub fn load(tls: &TlsListen) -> Result<TlsListener, CertError> {
        let certs = (tls.certs.iter())
            .map(|pair| Certified::load(pair).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TlsListener {
            addr: tls.addr,
            pairs: tls.certs.clone(),
            store: Arc::new(ArcSwap::from_pointee(CertStore::new(certs))),
        })
    }

    /// pingora's settings for this listener: Mozilla's intermediate profile, `h2` preferred
    /// to `http/1.1` by ALPN (a client offering neither gets HTTP/1.1), and the certificate
    /// chosen per handshake.
    pub fn settings(&self) -> pingora::Result<TlsSettings> {
        let callback = SniCallback {
            addr: self.addr,
            store: self.store.clone(),
        };
        let mut settings = TlsSettings::with_callbacks(Box::new(callback))?;
        settings.enable_h2();
        Ok(settings)
    }
}

/// Installs, in the middle of a handshake, the certificate for the name the client asked for.
struct SniCallback {
    addr: SocketAddr,
    store: Arc<ArcSwap<CertStore>>,
}

#[async_trait]
impl TlsAccept for SniCallback {
    async fn certificate_callback(&self, ssl: &mut TlsRef) {
        let store = self.store.load();
        let name = ssl.servername(NameType::HOST_NAME).map(str::to_owned);
        // The store always holds a certificate (a listener has at least one); without one the
        // handshake fails for want of a certificate, which is all that could happen anyway.
        let Some(cert) = store.select(name.as_deref()) else {
            log::error!("tls_listen {}: no certificate to offer", self.addr);
            return;
        };
        if let Err(e) = cert.install(ssl) {
            log::error!(
                "tls_listen {}: cannot use {} for a handshake: {e}",
                self.addr,
                cert.pair.cert.display()
            );
        }
    }
}
