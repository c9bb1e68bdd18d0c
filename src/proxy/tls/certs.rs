//! Certificates as a TLS listener serves them: a PEM pair loaded and checked ([`Certified`]),
//! and a listener's set of them indexed by the names each carries ([`CertStore`]), which picks
//! one for the name a client sends (SNI). Pure: no socket, no file watching.

use crate::proxy::config::CertPair;
use openssl::asn1::{Asn1Time, Asn1TimeRef};
use openssl::error::ErrorStack;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::ssl::SslRef;
use openssl::x509::X509;
use pingora::tls::ext;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The certificates of a PEM file (a CA bundle, say), in order.
pub fn pem_certificates(pem: &[u8]) -> Result<Vec<X509>, ErrorStack> {
    if !pem.windows(11).any(|w| w == b"-----BEGIN ") {
        return Ok(Vec::new());
    }
    X509::stack_from_pem(pem)
}

/// A certificate pair that cannot be served, with the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// A file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The certificate file holds no PEM certificate, or one OpenSSL cannot parse.
    #[error("{} is not a PEM certificate chain: {message}", path.display())]
    Certificate {
        /// The file.
        path: PathBuf,
        /// What OpenSSL says.
        message: String,
    },
    /// The key file holds no PEM private key, or one OpenSSL cannot parse.
    #[error("{} is not a PEM private key: {message}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// What OpenSSL says.
        message: String,
    },
    /// The key is not the certificate's (a renewal half done, or two files mixed up).
    #[error("{} is not the private key of {}", key.display(), cert.display())]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// The certificate names no host: nothing could be asked for by SNI.
    #[error("{} names no host (no DNS subject alternative name, no common name)", path.display())]
    NoNames {
        /// The certificate file.
        path: PathBuf,
    },
}

/// A certificate chain and its key, loaded, checked and ready for handshakes.
pub struct Certified {
    /// Where it was loaded from.
    pub pair: CertPair,
    /// The host names it answers for, lower-case, as the certificate writes them
    /// (`*.example.com` for a wildcard): its DNS subject alternative names, or, with none, its
    /// common name.
    pub names: Vec<String>,
    /// When it expires, Unix time in seconds.
    pub not_after: i64,
    leaf: X509,
    chain: Vec<X509>,
    key: PKey<Private>,
    /// The files' bytes, to tell a reload that changed nothing.
    pem: (Vec<u8>, Vec<u8>),
}

impl std::fmt::Debug for Certified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certified")
            .field("cert", &self.pair.cert)
            .field("names", &self.names)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl Certified {
    /// Reads and checks a pair from its files.
    pub fn load(pair: &CertPair) -> Result<Certified, CertError> {
        let read = |path: &PathBuf| {
            std::fs::read(path).map_err(|source| CertError::Read {
                path: path.clone(),
                source,
            })
        };
        Certified::from_pem(pair.clone(), read(&pair.cert)?, read(&pair.key)?)
    }

    /// Checks a pair from its files' contents: a chain whose first certificate names hosts,
    /// and the private key of that certificate.
    pub fn from_pem(pair: CertPair, cert: Vec<u8>, key: Vec<u8>) -> Result<Certified, CertError> {
        let cert_error = |message: String| CertError::Certificate {
            path: pair.cert.clone(),
            message,
        };
        let mut chain = X509::stack_from_pem(&cert).map_err(|e| cert_error(e.to_string()))?;
        if chain.is_empty() {
            return Err(cert_error("no CERTIFICATE block in it".into()));
        }
        let leaf = chain.remove(0);
        let private = PKey::private_key_from_pem(&key).map_err(|e| CertError::Key {
            path: pair.key.clone(),
            message: e.to_string(),
        })?;
        let matches = leaf
            .public_key()
            .is_ok_and(|public| public.public_eq(&private));
        if !matches {
            return Err(CertError::Mismatch {
                cert: pair.cert.clone(),
                key: pair.key.clone(),
            });
        }
        let names = host_names(&leaf);
        if names.is_empty() {
            return Err(CertError::NoNames {
                path: pair.cert.clone(),
            });
        }
        let not_after = unix_time(leaf.not_after()).map_err(|e| cert_error(e.to_string()))?;
        Ok(Certified {
            pair,
            names,
            not_after,
            leaf,
            chain,
            key: private,
            pem: (cert, key),
        })
    }

    /// Whether `other` was loaded from the same bytes (a reload that changed nothing).
    pub fn same_files(&self, other: &Certified) -> bool {
        self.pem == other.pem
    }

    /// Makes this the certificate of a handshake under way.
    pub fn install(&self, ssl: &mut SslRef) -> Result<(), ErrorStack> {
        ext::ssl_use_certificate(ssl, &self.leaf)?;
        ext::ssl_use_private_key(ssl, &self.key)?;
        for intermediate in &self.chain {
            ext::ssl_add_chain_cert(ssl, intermediate)?;
        }
        Ok(())
    }
}

/// The DNS subject alternative names, or, when there are none, the common names (a certificate
/// made by hand may carry only that).
fn host_names(leaf: &X509) -> Vec<String> {
    let alternative: Vec<String> = leaf
        .subject_alt_names()
        .iter()
        .flatten()
        .filter_map(|name| name.dnsname())
        .map(normalise)
        .collect();
    if !alternative.is_empty() {
        return alternative;
    }
    leaf.subject_name()
        .entries_by_nid(Nid::COMMONNAME)
        .filter_map(|entry| entry.data().to_string().ok())
        .map(|name| normalise(&name))
        .filter(|name| !name.is_empty())
        .collect()
}

/// A host name as names are compared: ASCII lower-case, without a final dot.
fn normalise(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn unix_time(time: &Asn1TimeRef) -> Result<i64, ErrorStack> {
    let epoch = Asn1Time::from_unix(0)?;
    let diff = epoch.diff(time)?;
    Ok(i64::from(diff.days) * 86_400 + i64::from(diff.secs))
}

/// A listener's certificates, indexed by name. The first is the default: for a client that
/// sends no SNI, or a name no certificate carries. Where two certificates carry one name, the
/// first listed answers for it.
#[derive(Debug, Clone)]
pub struct CertStore {
    certs: Vec<Arc<Certified>>,
    /// Exact names, to the index of the certificate answering for them.
    exact: HashMap<String, usize>,
    /// Wildcard names by the part after `*.` (`example.com` for `*.example.com`).
    wildcard: HashMap<String, usize>,
}

impl CertStore {
    /// A store over `certs`, in the order the configuration lists them.
    pub fn new(certs: Vec<Arc<Certified>>) -> CertStore {
        let mut exact = HashMap::new();
        let mut wildcard = HashMap::new();
        for (index, cert) in certs.iter().enumerate() {
            for name in &cert.names {
                match name.strip_prefix("*.") {
                    Some(parent) => wildcard.entry(parent.to_owned()).or_insert(index),
                    None => exact.entry(name.clone()).or_insert(index),
                };
            }
        }
        CertStore {
            certs,
            exact,
            wildcard,
        }
    }

    /// The certificates, in the configuration's order.
    pub fn certs(&self) -> &[Arc<Certified>] {
        &self.certs
    }

    /// The same store with the `index`-th certificate replaced (a reload of its files).
    pub fn replaced(&self, index: usize, cert: Arc<Certified>) -> CertStore {
        let mut certs = self.certs.clone();
        if let Some(slot) = certs.get_mut(index) {
            *slot = cert;
        }
        CertStore::new(certs)
    }

    /// The certificate for a client that asked for `server_name` (SNI): the one carrying the
    /// name, else one whose wildcard covers it (one label, as RFC 6125 §6.4.3 says), else the
    /// default. `None` only for a store without certificates.
    pub fn select(&self, server_name: Option<&str>) -> Option<&Arc<Certified>> {
        let index = server_name.and_then(|name| {
            let name = normalise(name);
            self.exact.get(&name).copied().or_else(|| {
                let (_, parent) = name.split_once('.')?;
                self.wildcard.get(parent).copied()
            })
        });
        self.certs.get(index.unwrap_or(0))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A self-signed certificate for `names` and its key, as PEM text.
    pub(crate) fn self_signed(names: &[&str]) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let cert = rcgen::CertificateParams::new(names)
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    fn pair(name: &str) -> CertPair {
        CertPair {
            cert: format!("{name}.crt").into(),
            key: format!("{name}.key").into(),
        }
    }

    fn certified(file: &str, names: &[&str]) -> Arc<Certified> {
        let (cert, key) = self_signed(names);
        Arc::new(Certified::from_pem(pair(file), cert.into_bytes(), key.into_bytes()).unwrap())
    }

    #[test]
    fn a_pair_is_read_with_its_names_and_expiry() {
        let cert = certified("a", &["Example.COM.", "*.example.com", "www.example.org"]);
        assert_eq!(
            cert.names,
            vec!["example.com", "*.example.com", "www.example.org"]
        );
        // rcgen's default validity runs to 4096.
        assert!(cert.not_after > 2_000_000_000, "{}", cert.not_after);
    }

    #[test]
    fn bad_pairs_say_which_file_is_wrong() {
        let (cert, key) = self_signed(&["a.test"]);
        let (_, other_key) = self_signed(&["a.test"]);
        let load = |cert: &str, key: &str| {
            Certified::from_pem(pair("a"), cert.as_bytes().to_vec(), key.as_bytes().to_vec())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            load(&cert, &other_key),
            "a.key is not the private key of a.crt"
        );
        assert!(
            load("not a certificate", &key).starts_with("a.crt is not a PEM certificate chain"),
            "{}",
            load("not a certificate", &key)
        );
        assert!(load(&cert, "garbage").starts_with("a.key is not a PEM private key"));
        // A key file given as the certificate: no certificate in it.
        assert!(load(&key, &key).starts_with("a.crt is not a PEM certificate chain"));
        let missing = Certified::load(&pair("/nonexistent/a")).unwrap_err();
        assert!(
            missing
                .to_string()
                .starts_with("cannot read /nonexistent/a.crt"),
            "{missing}"
        );
    }

    #[test]
    fn a_certificate_without_names_is_refused() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        let cert = params.self_signed(&key).unwrap();
        let error = Certified::from_pem(
            pair("bare"),
            cert.pem().into_bytes(),
            key.serialize_pem().into_bytes(),
        )
        .unwrap_err();
        assert!(matches!(error, CertError::NoNames { .. }), "{error}");
        // A common name alone is a name.
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "Legacy.Example");
        let cert = params.self_signed(&key).unwrap();
        let legacy = Certified::from_pem(
            pair("legacy"),
            cert.pem().into_bytes(),
            key.serialize_pem().into_bytes(),
        )
        .unwrap();
        assert_eq!(legacy.names, vec!["legacy.example"]);
    }

    #[test]
    fn sni_picks_the_certificate_carrying_the_name_else_the_first() {
        let store = CertStore::new(vec![
            certified("default", &["default.test"]),
            certified("shop", &["shop.example", "www.shop.example"]),
            certified("wild", &["*.shop.example", "blog.example"]),
            certified("late", &["blog.example"]),
        ]);
        let chosen =
            |name: Option<&str>| store.select(name).unwrap().pair.cert.display().to_string();
        assert_eq!(chosen(Some("shop.example")), "shop.crt");
        assert_eq!(chosen(Some("WWW.Shop.Example.")), "shop.crt");
        // An exact name wins over a wildcard; a wildcard covers one label only.
        assert_eq!(chosen(Some("api.shop.example")), "wild.crt");
        assert_eq!(chosen(Some("a.b.shop.example")), "default.crt");
        // The first listed answers for a name two carry.
        assert_eq!(chosen(Some("blog.example")), "wild.crt");
        // No SNI, or a name nobody carries: the default.
        assert_eq!(chosen(None), "default.crt");
        assert_eq!(chosen(Some("elsewhere.test")), "default.crt");
        assert_eq!(chosen(Some("")), "default.crt");
        // A renewal that adds a name answers for it.
        let renewed = store.replaced(3, certified("late", &["blog.example", "news.example"]));
        assert_eq!(
            renewed.select(Some("news.example")).unwrap().pair.cert,
            PathBuf::from("late.crt")
        );
        assert!(CertStore::new(Vec::new()).select(None).is_none());
    }
}
