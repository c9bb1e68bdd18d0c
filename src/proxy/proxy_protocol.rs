//! The PROXY protocol (HAProxy's, v1 text and v2 binary) on listeners that expect it: a TCP load
//! balancer in front (HAProxy `send-proxy-v2`, cloud network load balancers) writes the client's
//! address before the connection's first byte, and crawlgate takes it as the connection's peer,
//! as nginx's `real_ip_header proxy_protocol` does. Only a `trusted_proxies` member may send it;
//! a connection on such a listener without a valid header is closed.

use super::client::TrustedProxies;
use super::state::Shared;
use async_trait::async_trait;
use pingora::listeners::PreTlsProcess;
use pingora::protocols::l4::socket::SocketAddr as PeerAddr;
use pingora::protocols::l4::stream::Stream as L4Stream;
use pingora::protocols::GetSocketDigest;
use pingora::protocols::SocketDigest;
use pingora::{Error, ErrorType, OrErr};
use ppp::{HeaderResult, PartialResult};
use std::net::SocketAddr;
use std::os::unix::io::AsRawFd;
use std::sync::Arc;
use tokio::io::AsyncReadExt;

/// The longest header read: v1's is at most 107 octets; v2's carries TLVs, which HAProxy keeps
/// to a few dozen. A longer one is refused rather than buffered.
pub const MAX_HEADER: usize = 4096;

/// What a complete header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The client's address; `None` for v2 `LOCAL` (the balancer's own health check) and v1
    /// `UNKNOWN`, whose connection is the balancer's.
    pub client: Option<SocketAddr>,
    /// The header's length: what follows it is the client's first bytes.
    pub len: usize,
}

/// Why a connection's PROXY header is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Not a PROXY header at all (a client speaking HTTP or TLS straight away, say).
    #[error("no PROXY protocol header: {0}")]
    Invalid(String),
    /// Longer than [`MAX_HEADER`] without being complete.
    #[error("PROXY protocol header over {MAX_HEADER} bytes")]
    TooLong,
    /// The connection ended before the header did.
    #[error("the connection closed inside its PROXY protocol header")]
    Truncated,
    /// From an address that is not a trusted proxy.
    #[error("PROXY protocol header from {0}, which is not in trusted_proxies")]
    Untrusted(String),
}

/// Parses the start of a connection: `Ok(None)` while the header may still be incomplete.
pub fn parse(input: &[u8]) -> Result<Option<Header>, HeaderError> {
    let result = HeaderResult::parse(input);
    if result.is_incomplete() {
        return if input.len() >= MAX_HEADER {
            Err(HeaderError::TooLong)
        } else {
            Ok(None)
        };
    }
    match result {
        HeaderResult::V1(Ok(header)) => {
            let client = match header.addresses {
                ppp::v1::Addresses::Tcp4(ip) => {
                    Some(SocketAddr::from((ip.source_address, ip.source_port)))
                }
                ppp::v1::Addresses::Tcp6(ip) => {
                    Some(SocketAddr::from((ip.source_address, ip.source_port)))
                }
                ppp::v1::Addresses::Unknown => None,
            };
            Ok(Some(Header {
                client,
                len: header.header.len(),
            }))
        }
        HeaderResult::V2(Ok(header)) => {
            let client = match (header.command, header.addresses) {
                (ppp::v2::Command::Local, _) => None,
                (_, ppp::v2::Addresses::IPv4(ip)) => {
                    Some(SocketAddr::from((ip.source_address, ip.source_port)))
                }
                (_, ppp::v2::Addresses::IPv6(ip)) => {
                    Some(SocketAddr::from((ip.source_address, ip.source_port)))
                }
                (_, _) => None,
            };
            Ok(Some(Header {
                client,
                len: header.len(),
            }))
        }
        HeaderResult::V1(Err(e)) => Err(HeaderError::Invalid(e.to_string())),
        HeaderResult::V2(Err(e)) => Err(HeaderError::Invalid(e.to_string())),
    }
}

/// Reads the header at the start of `stream` (bytes read past it are put back), checks that the
/// TCP peer may send it, and makes the client's address the stream's peer address.
pub async fn accept(
    stream: &mut L4Stream,
    trusted: &TrustedProxies,
) -> Result<Option<SocketAddr>, HeaderError> {
    let digest = stream.get_socket_digest();
    let peer = digest
        .as_ref()
        .and_then(|d| d.peer_addr())
        .and_then(|a| a.as_inet().copied());
    if !peer.is_some_and(|peer| trusted.contains(peer.ip())) {
        let who = peer.map_or_else(|| "an unknown address".to_owned(), |p| p.ip().to_string());
        return Err(HeaderError::Untrusted(who));
    }
    let mut buffer = Vec::with_capacity(256);
    let header = loop {
        let mut chunk = [0u8; 512];
        let room = (MAX_HEADER - buffer.len()).min(chunk.len());
        let read = stream
            .read(&mut chunk[..room])
            .await
            .map_err(|_| HeaderError::Truncated)?;
        if read == 0 {
            return Err(HeaderError::Truncated);
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(header) = parse(&buffer)? {
            break header;
        }
    };
    stream.rewind(&buffer[header.len..]);
    if let Some(client) = header.client {
        let replaced = SocketDigest::from_raw_fd(stream.as_raw_fd());
        let _ = replaced.peer_addr.set(Some(PeerAddr::Inet(client)));
        if let Some(local) = digest.as_ref().and_then(|d| d.local_addr().cloned()) {
            let _ = replaced.local_addr.set(Some(local));
        }
        stream.set_socket_digest(replaced);
    }
    Ok(header.client)
}

/// [`accept`] within the request header's timeout (a balancer writes the header at once), with
/// the `trusted_proxies` in force: a refusal is logged and the connection closed.
pub async fn accept_in_time(stream: &mut L4Stream, shared: &Shared) -> pingora::Result<()> {
    let global = shared.global.load_full();
    let timeout = shared.connections.header_timeout();
    match tokio::time::timeout(timeout, accept(stream, &global.trusted)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => {
            log::info!("closed a connection: {e}");
            Err(e).or_err(ErrorType::AcceptError, "PROXY protocol")
        }
        Err(_) => Error::e_explain(ErrorType::ReadTimedout, "PROXY protocol header timed out"),
    }
}

/// Reads the header before the TLS handshake of a listener that expects it.
pub struct BeforeTls(pub Arc<Shared>);

#[async_trait]
impl PreTlsProcess for BeforeTls {
    async fn process(&self, stream: &mut L4Stream) -> pingora::Result<()> {
        accept_in_time(stream, &self.0).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_and_v2_headers_give_the_client_and_their_length() {
        let v1 = b"PROXY TCP4 192.0.2.7 10.0.0.1 51234 443\r\nGET / HTTP/1.1\r\n";
        assert_eq!(
            parse(v1),
            Ok(Some(Header {
                client: Some("192.0.2.7:51234".parse().unwrap()),
                len: 41,
            }))
        );
        let v1_unknown = b"PROXY UNKNOWN\r\n";
        assert_eq!(
            parse(v1_unknown),
            Ok(Some(Header {
                client: None,
                len: 15
            }))
        );
        let client: SocketAddr = "[2001:db8::7]:40000".parse().unwrap();
        let local: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        let v2 = ppp::v2::Builder::with_addresses(
            ppp::v2::Version::Two | ppp::v2::Command::Proxy,
            ppp::v2::Protocol::Stream,
            (client, local),
        )
        .build()
        .unwrap();
        let mut bytes = v2.clone();
        bytes.extend_from_slice(b"\x16\x03\x01");
        assert_eq!(
            parse(&bytes),
            Ok(Some(Header {
                client: Some(client),
                len: v2.len(),
            }))
        );
        // Incomplete: wait for more, whichever version.
        assert_eq!(parse(&v2[..10]), Ok(None));
        assert_eq!(parse(b"PROXY TCP4 192.0"), Ok(None));
    }

    #[test]
    fn a_connection_that_does_not_start_with_one_is_refused() {
        assert!(matches!(
            parse(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
            Err(HeaderError::Invalid(_))
        ));
        assert!(matches!(
            parse(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
            Err(HeaderError::Invalid(_))
        ));
    }
}
