//! Which address a request comes from.
//!
//! The TCP peer is the client, unless it is one of the `trusted_proxies`: then the client is
//! taken from the one header those proxies write ([`ForwardingHeader`]: `X-Forwarded-For` by
//! default, RFC 7239 `Forwarded`, or another such as `X-Real-IP`), read from the right (each proxy
//! appends the address it saw), skipping the addresses that are themselves trusted; the first
//! one that is not trusted is the client. No other forwarding header is read: a proxy that
//! writes `Forwarded` passes a client's own `X-Forwarded-For` through untouched, and believing
//! it would let anyone choose their address. An untrusted peer's headers are ignored: anybody
//! can write them. An entry that cannot be parsed ends the walk, and the last address known to
//! be reliable is used.

use http::header::{HeaderMap, HeaderName};
use ipnet::IpNet;
use std::net::IpAddr;

/// The header trusted proxies write the client's address in, and how to read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardingHeader {
    name: HeaderName,
    /// RFC 7239 `Forwarded` (`for=` parameters) rather than a list of addresses.
    rfc7239: bool,
}

impl Default for ForwardingHeader {
    fn default() -> Self {
        ForwardingHeader {
            name: HeaderName::from_static("x-forwarded-for"),
            rfc7239: false,
        }
    }
}

impl ForwardingHeader {
    /// The header named `name` (any case): `forwarded` is read as RFC 7239, any other as a
    /// comma-separated list of addresses (`X-Forwarded-For`, `X-Real-IP`, `True-Client-IP`, ...).
    /// `None` when `name` is not a header name.
    pub fn named(name: &str) -> Option<ForwardingHeader> {
        let name = HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
        let rfc7239 = name == http::header::FORWARDED;
        Some(ForwardingHeader { name, rfc7239 })
    }

    /// The header's name, lower-case.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }
}

/// Where a request's forwarding headers are: read only when its peer is a trusted proxy, so
/// that most requests never look them up.
#[derive(Debug, Clone, Copy)]
pub enum Forwarding<'a> {
    /// The request's own headers.
    Headers(&'a HeaderMap),
    /// Header lines given directly (`crawlgate explain --xff`), as (name, value), in order.
    Lines(&'a [(&'a str, &'a [u8])]),
}

/// The networks whose forwarding header is believed, and that header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    networks: Vec<IpNet>,
    header: ForwardingHeader,
}

impl TrustedProxies {
    /// Trusts these networks to write `header`.
    pub fn new(networks: Vec<IpNet>, header: ForwardingHeader) -> TrustedProxies {
        TrustedProxies { networks, header }
    }

    /// Whether `addr` is a trusted proxy (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, addr: IpAddr) -> bool {
        let addr = addr.to_canonical();
        self.networks.iter().any(|net| net.contains(&addr))
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.networks.is_empty()
    }

    /// The networks trusted.
    pub fn networks(&self) -> &[IpNet] {
        &self.networks
    }

    /// The one header read from them.
    pub fn header(&self) -> &ForwardingHeader {
        &self.header
    }

    /// The client of a request that came from `peer`, its forwarding header read only when
    /// `peer` is trusted. Nothing is allocated.
    pub fn client_of(&self, peer: IpAddr, forwarding: &Forwarding<'_>) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.contains(peer) {
            return peer;
        }
        match *forwarding {
            Forwarding::Headers(headers) => self.walk(
                peer,
                headers
                    .get_all(&self.header.name)
                    .iter()
                    .map(|v| v.as_bytes()),
            ),
            Forwarding::Lines(lines) => self.walk(
                peer,
                lines
                    .iter()
                    .filter(|(name, _)| name.trim().eq_ignore_ascii_case(self.header.name()))
                    .map(|(_, value)| *value),
            ),
        }
    }

    /// Walks the header's entries from the right: trusted hops are skipped, the first other
    /// address is the client, and an unreadable entry ends the walk at the last reliable one.
    fn walk<'v>(&self, peer: IpAddr, values: impl DoubleEndedIterator<Item = &'v [u8]>) -> IpAddr {
        let mut client = peer;
        for value in values.rev() {
            for element in value.rsplit(|&b| b == b',') {
                let hop = if self.header.rfc7239 {
                    // An element without `for=` says nothing about the client.
                    match forwarded_for_param(element) {
                        Some(hop) => hop,
                        None => continue,
                    }
                } else {
                    parse_xff_entry(element)
                };
                match hop {
                    Some(addr) if self.contains(addr) => client = addr,
                    Some(addr) => return addr,
                    None => return client,
                }
            }
        }
        client
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
        return Some(addr.to_canonical());
    }
    if let Some(rest) = text.strip_prefix('[') {
        let inside = rest.split(']').next()?;
        return inside.parse().ok().map(|addr: IpAddr| addr.to_canonical());
    }
    let (host, port) = text.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    host.parse().ok().map(|addr: IpAddr| addr.to_canonical())
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
        trusted_writing(nets, "x-forwarded-for")
    }

    fn trusted_writing(nets: &[&str], header: &str) -> TrustedProxies {
        TrustedProxies::new(
            nets.iter().map(|n| n.parse().unwrap()).collect(),
            ForwardingHeader::named(header).unwrap(),
        )
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// The client of a request from `peer` with these header lines.
    fn client(proxies: &TrustedProxies, peer: &str, lines: &[(&str, &str)]) -> IpAddr {
        let lines: Vec<(&str, &[u8])> = lines.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
        proxies.client_of(ip(peer), &Forwarding::Lines(&lines))
    }

    fn xff(proxies: &TrustedProxies, peer: &str, values: &[&str]) -> IpAddr {
        let lines: Vec<(&str, &str)> = values.iter().map(|v| ("X-Forwarded-For", *v)).collect();
        client(proxies, peer, &lines)
    }

    #[test]
    fn a_requests_own_headers_are_read_like_lines() {
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
        // Forwarded is not the header these proxies write: it is never read.
        headers.remove("x-forwarded-for");
        assert_eq!(
            proxies.client_of(ip("10.0.0.1"), &Forwarding::Headers(&headers)),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn only_the_header_the_proxies_write_is_read() {
        let forwarded = trusted_writing(&["10.0.0.0/8"], "Forwarded");
        // A client adds X-Forwarded-For; the proxy appends its own Forwarded element.
        let lines = [
            ("X-Forwarded-For", "66.249.66.1"),
            ("Forwarded", "for=203.0.113.9"),
        ];
        assert_eq!(client(&forwarded, "10.0.0.1", &lines), ip("203.0.113.9"));
        assert_eq!(
            client(
                &forwarded,
                "10.0.0.1",
                &[("X-Forwarded-For", "66.249.66.1")]
            ),
            ip("10.0.0.1")
        );
        let real_ip = trusted_writing(&["10.0.0.0/8"], "X-Real-IP");
        assert_eq!(real_ip.header().name(), "x-real-ip");
        let lines = [
            ("x-forwarded-for", "66.249.66.1"),
            ("X-REAL-IP", "198.51.100.4"),
        ];
        assert_eq!(client(&real_ip, "10.0.0.1", &lines), ip("198.51.100.4"));
        assert!(ForwardingHeader::named("not a header").is_none());
        assert_eq!(ForwardingHeader::default().name(), "x-forwarded-for");
    }

    #[test]
    fn an_untrusted_peers_headers_are_ignored() {
        let proxies = trusted(&["10.0.0.0/8"]);
        assert_eq!(
            xff(&proxies, "203.0.113.7", &["66.249.66.1"]),
            ip("203.0.113.7")
        );
        let none = TrustedProxies::default();
        assert!(none.is_empty());
        assert_eq!(
            xff(&none, "203.0.113.7", &["66.249.66.1"]),
            ip("203.0.113.7")
        );
    }

    #[test]
    fn the_rightmost_untrusted_address_is_the_client() {
        let proxies = trusted(&["10.0.0.0/8", "192.168.0.0/16"]);
        assert_eq!(
            xff(
                &proxies,
                "192.168.1.1",
                &["1.2.3.4, 66.249.66.1", "10.1.1.1"]
            ),
            ip("66.249.66.1")
        );
        // Only trusted hops: the leftmost of them.
        assert_eq!(
            xff(&proxies, "10.0.0.1", &["10.0.0.2, 10.0.0.3"]),
            ip("10.0.0.2")
        );
        // No header: the peer.
        assert_eq!(xff(&proxies, "10.0.0.1", &[]), ip("10.0.0.1"));
    }

    #[test]
    fn garbage_ends_the_walk_at_the_last_reliable_address() {
        let proxies = trusted(&["10.0.0.0/8"]);
        assert_eq!(
            xff(&proxies, "10.0.0.1", &["1.2.3.4, nonsense, 10.0.0.9"]),
            ip("10.0.0.9")
        );
        assert_eq!(
            xff(&proxies, "10.0.0.1", &["not an address"]),
            ip("10.0.0.1")
        );
    }

    #[test]
    fn ports_brackets_and_ipv6() {
        let proxies = trusted(&["::1/128", "127.0.0.0/8"]);
        assert_eq!(
            xff(&proxies, "::1", &["[2001:4860:4801:10::1]:443"]),
            ip("2001:4860:4801:10::1")
        );
        assert_eq!(
            xff(&proxies, "127.0.0.1", &["2001:db8::5"]),
            ip("2001:db8::5")
        );
        assert_eq!(
            xff(&proxies, "127.0.0.1", &["66.249.66.1:5555"]),
            ip("66.249.66.1")
        );
        // An IPv4-mapped peer is its IPv4 address.
        assert_eq!(
            xff(&proxies, "::ffff:127.0.0.1", &["8.8.8.8"]),
            ip("8.8.8.8")
        );
    }

    #[test]
    fn the_forwarded_header_is_read_by_rfc_7239() {
        let proxies = trusted_writing(&["10.0.0.0/8"], "forwarded");
        let forwarded =
            "for=192.0.2.60;proto=http;by=203.0.113.43, for=\"[2001:db8:cafe::17]:4711\"";
        assert_eq!(
            client(&proxies, "10.0.0.1", &[("Forwarded", forwarded)]),
            ip("2001:db8:cafe::17")
        );
        assert_eq!(
            client(&proxies, "10.0.0.1", &[("Forwarded", "for=unknown")]),
            ip("10.0.0.1")
        );
        assert_eq!(
            client(&proxies, "10.0.0.1", &[("Forwarded", "proto=https")]),
            ip("10.0.0.1")
        );
    }
}
