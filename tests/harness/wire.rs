//! The protocol a test speaks to the proxy: HTTP/1.1 on the plain listener, HTTP/2 with prior
//! knowledge (h2c) on it, or HTTP/2 negotiated by ALPN on a TLS listener whose certificate a
//! test CA signed. A suite's cases run over each, so the proxy is shown to judge the same
//! request the same way whatever it came over.

use std::net::SocketAddr;
use std::time::Duration;

/// How a test talks to the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// HTTP/1.1 on the plain listener.
    Http1,
    /// HTTP/2 with prior knowledge on the plain listener (`h2c: true`).
    H2c,
    /// HTTP/2 by ALPN on a TLS listener.
    H2,
}

impl Wire {
    /// Every wire, for suites that run their cases over each.
    pub const ALL: [Wire; 3] = [Wire::Http1, Wire::H2c, Wire::H2];

    /// The HTTP version a response over this wire must come with.
    pub fn version(self) -> reqwest::Version {
        match self {
            Wire::Http1 => reqwest::Version::HTTP_11,
            Wire::H2c | Wire::H2 => reqwest::Version::HTTP_2,
        }
    }
}

/// A certificate authority for tests: it signs leaf certificates that clients trusting
/// [`TestCa::pem`] accept.
pub struct TestCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Default for TestCa {
    fn default() -> TestCa {
        TestCa::new()
    }
}

impl TestCa {
    pub fn new() -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "crawlgate test CA");
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        TestCa {
            issuer: rcgen::CertifiedIssuer::self_signed(params, key).unwrap(),
        }
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A leaf certificate for `names` and its key, PEM; `serial` tells renewals apart.
    pub fn issue(&self, names: &[&str], serial: u64) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = rcgen::CertificateParams::new(names).unwrap();
        params.serial_number = Some(rcgen::SerialNumber::from(serial));
        params.distinguished_name.push(
            rcgen::DnType::CommonName,
            format!("crawlgate test leaf {serial}"),
        );
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// A client for `wire`, sending requests for each of `hosts` to `addr` (the TLS listener's for
/// [`Wire::H2`], trusting `ca`), never through a proxy, never following redirects.
pub fn wire_client(
    wire: Wire,
    hosts: &[String],
    addr: SocketAddr,
    ca: Option<&str>,
) -> reqwest::blocking::Client {
    let mut builder = reqwest::blocking::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10));
    for host in hosts {
        builder = builder.resolve(host, addr);
    }
    builder = match wire {
        Wire::Http1 => builder.http1_only(),
        Wire::H2c => builder.http2_prior_knowledge(),
        Wire::H2 => builder,
    };
    if let Some(ca) = ca {
        builder = builder
            .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
            .tls_info(true);
    }
    builder.build().unwrap()
}
