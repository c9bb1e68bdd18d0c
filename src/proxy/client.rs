//! Which address a request comes from.
//!
//! The TCP peer is the client, unless it is one of the `trusted_proxies`: then the client is
//! taken from `X-Forwarded-For`, read from the right (each proxy appends the address it saw),
//! skipping the addresses that are themselves trusted; the first one that is not trusted is the
//! client. Without `X-Forwarded-For`, RFC 7239's `Forwarded: for=` is read the same way. An
//! untrusted peer's headers are ignored: anybody can write them. An entry that cannot be parsed
//! ends the walk, and the last address known to be reliable is used.

use http::header::{HeaderMap, HeaderName, FORWARDED};
use ipnet::IpNet;
use std::net::IpAddr;

/// Named once: a header looked up by a string is parsed on every request.
static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// Where a request's forwarding headers are: read only when its peer is a trusted proxy, so
/// that most requests never look them up.
#[derive(Debug, Clone, Copy)]
pub enum Forwarding<'a> {
    /// The request's own headers.
    Headers(&'a HeaderMap),
    /// Values given directly (`crawlgate explain --xff`), each header's in order.
    Values {
        /// `X-Forwarded-For` values.
        forwarded_for: &'a [&'a [u8]],
        /// `Forwarded` values.
        forwarded: &'a [&'a [u8]],
    },
}

impl<'a> Forwarding<'a> {
    /// The `X-Forwarded-For` and the `Forwarded` values, in order.
    fn values(&self) -> (Vec<&'a [u8]>, Vec<&'a [u8]>) {
        match *self {
            Forwarding::Headers(headers) => {
                let all = |name: &HeaderName| -> Vec<&'a [u8]> {
                    headers.get_all(name).iter().map(|v| v.as_bytes()).collect()
                };
                (all(&X_FORWARDED_FOR), all(&FORWARDED))
            }
            Forwarding::Values {
                forwarded_for,
                forwarded,
            } => (forwarded_for.to_vec(), forwarded.to_vec()),
        }
    }
}

/// The networks whose forwarding headers are believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    networks: Vec<IpNet>,
}

impl TrustedProxies {
    /// Trusts these networks.
    pub fn new(networks: Vec<IpNet>) -> TrustedProxies {
        TrustedProxies { networks }
    }

    /// Whether `addr` is a trusted proxy (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = canonical(addr);
        self.networks.iter().any(|net| net.contains(&addr))
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.networks.is_empty()
    }

    /// The client of a request that came from `peer` with these `X-Forwarded-For` and
    /// `Forwarded` header values (each header may appear several times; pass them in order).
    pub fn client(&self, peer: IpAddr, forwarded_for: &[&[u8]], forwarded: &[&[u8]]) -> IpAddr {
        self.client_of(
            peer,
            &Forwarding::Values {
                forwarded_for,
                forwarded,
            },
        )
    }

    /// The client of a request that came from `peer`, its forwarding headers read only when
    /// `peer` is trusted.
    pub fn client_of(&self, peer: IpAddr, forwarding: &Forwarding<'_>) -> IpAddr {
        let peer = canonical(peer);
        if !self.contains(peer) {
            return peer;
        }
        let (forwarded_for, forwarded) = forwarding.values();
        let hops: Vec<Option<IpAddr>> = if !forwarded_for.is_empty() {
            forwarded_for
                .iter()
                .flat_map(|value| value.split(|&b| b == b','))
                .map(parse_xff_entry)
                .collect()
        } else {
            forwarded
                .iter()
                .flat_map(|value| value.split(|&b| b == b','))
                .filter_map(forwarded_for_param)
                .collect()
        };
        let mut client = peer;
        for hop in hops.iter().rev() {
            match hop {
                Some(addr) if self.contains(*addr) => client = *addr,
                Some(addr) => return *addr,
                None => return client,
            }
        }
        client
    }
}

/// An IPv4-mapped IPv6 address is the IPv4 address it maps.
pub fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    }
}

/// One `X-Forwarded-For` entry: an address, possibly with a port or brackets.
fn parse_xff_entry(entry: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(entry).ok()?.trim();
    parse_node(text)
}

/// A node as RFC 7239 writes it: `192.0.2.60`, `192.0.2.60:4711`, `[2001:db8::1]`,
/// `[2001:db8::1]:4711`, or a bare IPv6 address.
fn parse_node(text: &str) -> Option<IpAddr> {
    let text = text.trim_matches('"');
    if let Ok(addr) = text.parse::<IpAddr>() {
        return Some(canonical(addr));
    }
    if let Some(rest) = text.strip_prefix('[') {
        let inside = rest.split(']').next()?;
        return inside.parse().ok().map(canonical);
    }
    let (host, port) = text.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse().ok().map(canonical)
}

/// The `for=` parameter of one `Forwarded` element (`for=192.0.2.60;proto=http`). An element
/// without `for=` is skipped; `for=unknown` or an obfuscated name is an unparsable hop.
fn forwarded_for_param(element: &[u8]) -> Option<Option<IpAddr>> {
    let text = std::str::from_utf8(element).ok()?;
    let value = text.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.trim().eq_ignore_ascii_case("for").then(|| value.trim())
    })?;
    Some(parse_node(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted(nets: &[&str]) -> TrustedProxies {
        TrustedProxies::new(nets.iter().map(|n| n.parse().unwrap()).collect())
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_requests_own_headers_are_read_like_values() {
        let proxies = trusted(&["10.0.0.0/8"]);
        let mut headers = HeaderMap::new();
        headers.append("x-forwarded-for", "66.249.66.1, 10.0.0.7".parse().unwrap());
        headers.append("forwarded", "for=192.0.2.60".parse().unwrap());
        let forwarding = Forwarding::Headers(&headers);
        assert_eq!(
            proxies.client_of(ip("10.0.0.1"), &forwarding),
            ip("66.249.66.1")
        );
        assert_eq!(
            proxies.client_of(ip("203.0.113.7"), &forwarding),
            ip("203.0.113.7")
        );
        headers.remove("x-forwarded-for");
        assert_eq!(
            proxies.client_of(ip("10.0.0.1"), &Forwarding::Headers(&headers)),
            ip("192.0.2.60")
        );
    }

    #[test]
    fn an_untrusted_peers_headers_are_ignored() {
        let proxies = trusted(&["10.0.0.0/8"]);
        let client = proxies.client(ip("203.0.113.7"), &[b"66.249.66.1"], &[]);
        assert_eq!(client, ip("203.0.113.7"));
        let none = TrustedProxies::default();
        assert_eq!(
            none.client(ip("203.0.113.7"), &[b"66.249.66.1"], &[]),
            ip("203.0.113.7")
        );
    }

    #[test]
    fn the_rightmost_untrusted_address_is_the_client() {
        let proxies = trusted(&["10.0.0.0/8", "192.168.0.0/16"]);
        let xff: &[&[u8]] = &[b"1.2.3.4, 66.249.66.1", b"10.1.1.1"];
        assert_eq!(
            proxies.client(ip("192.168.1.1"), xff, &[]),
            ip("66.249.66.1")
        );
        // Only trusted hops: the leftmost of them.
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &[b"10.0.0.2, 10.0.0.3"], &[]),
            ip("10.0.0.2")
        );
        // No header: the peer.
        assert_eq!(proxies.client(ip("10.0.0.1"), &[], &[]), ip("10.0.0.1"));
    }

    #[test]
    fn garbage_ends_the_walk_at_the_last_reliable_address() {
        let proxies = trusted(&["10.0.0.0/8"]);
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &[b"1.2.3.4, nonsense, 10.0.0.9"], &[]),
            ip("10.0.0.9")
        );
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &[b"not an address"], &[]),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn ports_brackets_and_ipv6() {
        let proxies = trusted(&["::1/128", "127.0.0.0/8"]);
        assert_eq!(
            proxies.client(ip("::1"), &[b"[2001:4860:4801:10::1]:443"], &[]),
            ip("2001:4860:4801:10::1")
        );
        assert_eq!(
            proxies.client(ip("127.0.0.1"), &[b"2001:db8::5"], &[]),
            ip("2001:db8::5")
        );
        assert_eq!(
            proxies.client(ip("127.0.0.1"), &[b"66.249.66.1:5555"], &[]),
            ip("66.249.66.1")
        );
        // An IPv4-mapped peer is its IPv4 address.
        assert_eq!(
            proxies.client(ip("::ffff:127.0.0.1"), &[b"8.8.8.8"], &[]),
            ip("8.8.8.8")
        );
    }

    #[test]
    fn the_forwarded_header_when_there_is_no_x_forwarded_for() {
        let proxies = trusted(&["10.0.0.0/8"]);
        let forwarded: &[&[u8]] =
            &[b"for=192.0.2.60;proto=http;by=203.0.113.43, for=\"[2001:db8:cafe::17]:4711\""];
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &[], forwarded),
            ip("2001:db8:cafe::17")
        );
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &[], &[b"for=unknown"]),
            ip("10.0.0.1")
        );
        assert_eq!(
            proxies.client(ip("10.0.0.1"), &[], &[b"proto=https"]),
            ip("10.0.0.1")
        );
    }
}
