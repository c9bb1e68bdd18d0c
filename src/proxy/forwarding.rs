//! What the origin is told about the visitor, and what a client may not tell it.
//!
//! An application behind a proxy learns who the visitor is from forwarding headers
//! (`X-Forwarded-For`, `X-Forwarded-Proto`, `X-Forwarded-Host`, RFC 7239 `Forwarded`,
//! `X-Real-IP`). crawlgate writes them as the common nginx setup does (`proxy_set_header
//! X-Forwarded-For $proxy_add_x_forwarded_for` and friends), with one difference that matters:
//! nginx appends to whatever the client sent, so an application that trusts its proxy believes a
//! forged address; crawlgate keeps what the client sent only when the client is itself one of
//! the `trusted_proxies`, and replaces it otherwise.
//!
//! A backend need not read a header name as it was sent: CGI and FastCGI turn `X-Forwarded-For`
//! and `X_Forwarded_For` alike into `HTTP_X_FORWARDED_FOR`, and `User_Agent` into
//! `HTTP_USER_AGENT`. Names are therefore compared as such a backend reads them (ASCII case
//! ignored, every byte that is not a letter or digit read as `-`): a spelling other than the
//! canonical one of a header crawlgate reads or writes never reaches the origin, and neither
//! does anything that reads as crawlgate's own verdict headers.

use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, COOKIE, FORWARDED};
use pingora::http::RequestHeader;
use serde::Deserialize;
use std::fmt::Write as _;
use std::net::IpAddr;

/// `forwarding:` of a site: which forwarding headers the origin gets. The defaults are what the
/// common nginx reverse-proxy setup sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardingSettings {
    /// `X-Forwarded-For`: the addresses the request passed, the TCP peer last (default true).
    #[serde(default = "yes")]
    pub x_forwarded_for: bool,
    /// `X-Forwarded-Proto`: `https` on a TLS listener, else `http` (default true).
    #[serde(default = "yes")]
    pub x_forwarded_proto: bool,
    /// `X-Forwarded-Host`: the Host the visitor asked for (default true).
    #[serde(default = "yes")]
    pub x_forwarded_host: bool,
    /// RFC 7239 `Forwarded: for=…;host=…;proto=…` (default false).
    #[serde(default)]
    pub forwarded: bool,
    /// `X-Real-IP`: the client address crawlgate decided on (default false).
    #[serde(default)]
    pub x_real_ip: bool,
}

fn yes() -> bool {
    true
}

impl Default for ForwardingSettings {
    fn default() -> Self {
        ForwardingSettings {
            x_forwarded_for: true,
            x_forwarded_proto: true,
            x_forwarded_host: true,
            forwarded: false,
            x_real_ip: false,
        }
    }
}

/// The hop the request came over.
#[derive(Debug, Clone, Copy)]
pub struct Hop<'a> {
    /// The TCP peer.
    pub peer: IpAddr,
    /// Whether the peer is one of the `trusted_proxies`: only then is what it sent in
    /// forwarding headers kept.
    pub trusted: bool,
    /// The client address crawlgate decided on (the peer, or what a trusted proxy says).
    pub client: IpAddr,
    /// `https` on a TLS listener, else `http`.
    pub proto: &'static str,
    /// The Host that chose the site, as the visitor sent it.
    pub host: Option<&'a HeaderValue>,
}

/// Headers that tell an origin who the visitor is or how it came: written by proxies, never
/// believed from anyone else. `extra` is the header the trusted proxies write, when it is none
/// of these.
const FORWARDING: &[&str] = &[
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-host",
    "x-forwarded-port",
    "x-forwarded-ssl",
    "x-forwarded-scheme",
    "x-forwarded-server",
    "x-forwarded-prefix",
    "forwarded",
    "x-real-ip",
    "true-client-ip",
    "x-client-ip",
    "x-cluster-client-ip",
    "cf-connecting-ip",
    "fastly-client-ip",
    "front-end-https",
    "x-url-scheme",
];

/// Whether `name` (lower-case) is one of [`FORWARDING`]: a `match`, which the compiler turns
/// into a length test and a comparison or two.
fn is_forwarding(name: &str) -> bool {
    matches!(
        name,
        "x-forwarded-for"
            | "x-forwarded-proto"
            | "x-forwarded-host"
            | "x-forwarded-port"
            | "x-forwarded-ssl"
            | "x-forwarded-scheme"
            | "x-forwarded-server"
            | "x-forwarded-prefix"
            | "forwarded"
            | "x-real-ip"
            | "true-client-ip"
            | "x-client-ip"
            | "x-cluster-client-ip"
            | "cf-connecting-ip"
            | "fastly-client-ip"
            | "front-end-https"
            | "x-url-scheme"
    )
}

/// Headers crawlgate reads, whose other spellings a backend would read as them.
const READ: &[&str] = &["user-agent", "host", "content-length", "transfer-encoding"];

/// How a CGI-style backend reads a name byte: case ignored, anything but a letter or digit `-`.
fn fold(byte: u8) -> u8 {
    if byte.is_ascii_alphanumeric() {
        byte.to_ascii_lowercase()
    } else {
        b'-'
    }
}

/// Whether `name` reads as `canonical` to such a backend.
fn reads_as(name: &[u8], canonical: &[u8]) -> bool {
    name.len() == canonical.len() && name.iter().zip(canonical).all(|(&a, &b)| fold(a) == b)
}

/// Whether `name` starts with `prefix` as such a backend reads both.
fn reads_as_prefix(name: &[u8], prefix: &[u8]) -> bool {
    name.len() >= prefix.len() && name.iter().zip(prefix).all(|(&a, &b)| fold(a) == fold(b))
}

/// What the client may send of the headers crawlgate reads and writes.
#[derive(Debug, Clone, Copy)]
pub struct ClientHeaders<'a> {
    /// The site's verdict-header prefix (`X-Crawlgate-` or the site's own).
    pub tag_prefix: &'a str,
    /// Whether the peer is a trusted proxy, whose forwarding headers are kept.
    pub trusted: bool,
    /// The header the trusted proxies write the client's address in.
    pub trusted_header: &'a str,
}

impl ClientHeaders<'_> {
    /// Whether a header the client sent must not reach the origin.
    fn refuses(&self, name: &HeaderName) -> bool {
        let text = name.as_str();
        let bytes = text.as_bytes();
        // Header names are lower-case; one with no byte but [a-z0-9-] is in its canonical
        // spelling, which nearly all are: compared as it is, with no folding.
        let canonical = bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if canonical {
            let has_prefix = |prefix: &str| {
                bytes.len() >= prefix.len()
                    && bytes[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
            };
            return has_prefix(crate::proxy::config::DEFAULT_TAG_PREFIX)
                || has_prefix(self.tag_prefix)
                || (!self.trusted && (is_forwarding(text) || text == self.trusted_header));
        }
        // Another spelling of a header crawlgate reads or writes: nobody sends one by mistake.
        reads_as_prefix(bytes, crate::proxy::config::DEFAULT_TAG_PREFIX.as_bytes())
            || reads_as_prefix(bytes, self.tag_prefix.as_bytes())
            || READ
                .iter()
                .chain(FORWARDING)
                .chain(std::iter::once(&self.trusted_header))
                .any(|c| reads_as(bytes, c.as_bytes()))
    }

    /// Removes what the origin must not receive from the client. One pass over the names finds
    /// them; nothing is allocated unless one is there.
    pub fn strip(&self, request: &mut RequestHeader) {
        if !request.headers.keys().any(|name| self.refuses(name)) {
            return;
        }
        let names: Vec<HeaderName> = request
            .headers
            .keys()
            .filter(|name| self.refuses(name))
            .cloned()
            .collect();
        for name in names {
            request.remove_header(&name);
        }
    }
}

/// The values of `name` joined with `, ` (a list header's lines are one list).
fn joined(request: &RequestHeader, name: &str) -> Option<String> {
    let mut values = request.headers.get_all(name).iter();
    let first = values.next()?;
    let mut out = String::from_utf8_lossy(first.as_bytes()).into_owned();
    for value in values {
        out.push_str(", ");
        out.push_str(&String::from_utf8_lossy(value.as_bytes()));
    }
    Some(out)
}

/// Writes an address the way `Display` does, without the formatting machinery for the IPv4
/// address nearly every request has (this runs on every request).
fn push_address(addr: IpAddr, out: &mut Vec<u8>) {
    match addr {
        IpAddr::V4(v4) => {
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                if octet >= 100 {
                    out.push(b'0' + octet / 100);
                }
                if octet >= 10 {
                    out.push(b'0' + octet / 10 % 10);
                }
                out.push(b'0' + octet % 10);
            }
        }
        IpAddr::V6(v6) => out.extend_from_slice(v6.to_string().as_bytes()),
    }
}

/// An address as RFC 7239 writes a node: IPv6 in brackets, quoted.
fn rfc7239_node(addr: IpAddr, out: &mut String) {
    match addr {
        IpAddr::V4(v4) => {
            let _ = write!(out, "{v4}");
        }
        IpAddr::V6(v6) => {
            let _ = write!(out, "\"[{v6}]\"");
        }
    }
}

/// A value RFC 7239 may carry bare (a token), or quoted.
fn rfc7239_value(value: &str, out: &mut String) {
    let token = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if token {
        out.push_str(value);
    } else {
        out.push('"');
        for c in value.chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    }
}

/// Adds the forwarding headers `settings` asks for to the request sent upstream. What the client
/// sent in them is still there only when the peer is trusted ([`ClientHeaders::strip`] ran
/// first): then the peer is appended to it, as each proxy on the way does.
pub fn add(
    request: &mut RequestHeader,
    settings: &ForwardingSettings,
    hop: &Hop<'_>,
) -> pingora::Result<()> {
    if settings.x_forwarded_for {
        let chain = hop
            .trusted
            .then(|| joined(request, "x-forwarded-for"))
            .flatten();
        let mut value = match chain {
            Some(chain) => {
                let mut value = chain.into_bytes();
                value.extend_from_slice(b", ");
                value
            }
            _ => Vec::with_capacity(15),
        };
        push_address(hop.peer, &mut value);
        let value = HeaderValue::from_maybe_shared(bytes::Bytes::from(value)).map_err(|e| {
            pingora::Error::because(pingora::ErrorType::InternalError, "x-forwarded-for", e)
        })?;
        request.insert_header("x-forwarded-for", value)?;
    }
    let trusted_has =
        |request: &RequestHeader, name: &str| hop.trusted && request.headers.contains_key(name);
    if settings.x_forwarded_proto && !trusted_has(request, "x-forwarded-proto") {
        request.insert_header("x-forwarded-proto", HeaderValue::from_static(hop.proto))?;
    }
    if settings.x_forwarded_host && !trusted_has(request, "x-forwarded-host") {
        if let Some(host) = hop.host {
            request.insert_header("x-forwarded-host", host.clone())?;
        }
    }
    if settings.forwarded {
        let chain = hop.trusted.then(|| joined(request, "forwarded")).flatten();
        let mut value = match chain {
            Some(mut chain) => {
                chain.push_str(", ");
                chain
            }
            None => String::new(),
        };
        value.push_str("for=");
        rfc7239_node(hop.peer, &mut value);
        if let Some(host) = hop.host.and_then(|h| h.to_str().ok()) {
            value.push_str(";host=");
            rfc7239_value(host, &mut value);
        }
        value.push_str(";proto=");
        value.push_str(hop.proto);
        request.insert_header(FORWARDED, value)?;
    }
    if settings.x_real_ip {
        request.insert_header("x-real-ip", hop.client.to_string())?;
    }
    Ok(())
}

/// Joins HTTP/2 cookie crumbs into the one `Cookie` line HTTP/1.1 allows (RFC 9113 §8.2.3:
/// "they MUST be concatenated into a single octet string using the two-octet delimiter of
/// 0x3b, 0x20 (the ASCII string "; ")"), for origins that read only one.
pub fn join_cookie_crumbs(request: &mut RequestHeader) -> pingora::Result<()> {
    let mut crumbs = request.headers.get_all(COOKIE).iter();
    let (Some(first), Some(_)) = (crumbs.next(), crumbs.next()) else {
        return Ok(());
    };
    let mut joined = first.as_bytes().to_vec();
    for crumb in request.headers.get_all(COOKIE).iter().skip(1) {
        joined.extend_from_slice(b"; ");
        joined.extend_from_slice(crumb.as_bytes());
    }
    let value = HeaderValue::from_bytes(&joined)
        .map_err(|e| pingora::Error::because(pingora::ErrorType::InternalError, "cookie", e))?;
    request.insert_header(COOKIE, value)
}

/// One `Content-Length` for the origin. pingora has framed the body by the value that several
/// agreeing ones (`72, 72`, or two `72` lines) share, and refused disagreeing ones; an origin
/// that reads such a header otherwise (as 0, say) would read the body as a second request that
/// nobody judged.
pub fn single_content_length(request: &mut RequestHeader) -> pingora::Result<()> {
    let mut values = request.headers.get_all(CONTENT_LENGTH).iter();
    let Some(first) = values.next() else {
        return Ok(());
    };
    let several = values.next().is_some();
    if !several && !first.as_bytes().contains(&b',') {
        return Ok(());
    }
    let length = first
        .as_bytes()
        .split(|&b| b == b',')
        .map(|part| part.trim_ascii())
        .find(|part| !part.is_empty())
        .map(<[u8]>::to_vec);
    match length {
        Some(length) if length.iter().all(u8::is_ascii_digit) => {
            let value = HeaderValue::from_bytes(&length).map_err(|e| {
                pingora::Error::because(pingora::ErrorType::InternalError, "content-length", e)
            })?;
            request.insert_header(CONTENT_LENGTH, value)
        }
        _ => pingora::Error::e_explain(
            pingora::ErrorType::InvalidHTTPHeader,
            "a Content-Length that is not a number",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(lines: &[(&str, &str)]) -> RequestHeader {
        let mut request = RequestHeader::build("GET", b"/", None).unwrap();
        for (name, value) in lines {
            request.append_header(name.to_string(), *value).unwrap();
        }
        request
    }

    fn names(request: &RequestHeader) -> Vec<String> {
        let mut names: Vec<String> = request.headers.keys().map(|k| k.to_string()).collect();
        names.sort_unstable();
        names
    }

    fn values(request: &RequestHeader, name: &str) -> Vec<String> {
        request
            .headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    const UNTRUSTED: ClientHeaders<'static> = ClientHeaders {
        tag_prefix: "X-Mine-",
        trusted: false,
        trusted_header: "x-forwarded-for",
    };

    #[test]
    fn verdict_headers_are_stripped_in_every_spelling_a_backend_reads_alike() {
        let mut request = request(&[
            ("X-Crawlgate-Verdict", "forged"),
            ("x-crawlgate-bot", "forged"),
            ("X_Crawlgate_Verdict", "forged"),
            ("x_CRAWLGATE-verified", "forged"),
            ("X-CrawlGate_Rule", "forged"),
            ("x.crawlgate.robots-unread", "forged"),
            ("X-Mine-Rule", "forged"),
            ("X_MINE_Bot", "forged"),
            ("X-Other", "kept"),
            ("X-Crawlgatex", "kept"),
            ("X-Crawl", "kept"),
        ]);
        UNTRUSTED.strip(&mut request);
        assert_eq!(names(&request), ["x-crawl", "x-crawlgatex", "x-other"]);
        // Nothing to strip: nothing changes.
        let before = request.headers.clone();
        UNTRUSTED.strip(&mut request);
        assert_eq!(request.headers, before);
    }

    #[test]
    fn an_untrusted_clients_forwarding_headers_never_reach_the_origin() {
        let lines = [
            ("X-Forwarded-For", "6.6.6.6"),
            ("X-Forwarded-Proto", "https"),
            ("X-Forwarded-Host", "admin.internal"),
            ("X-Real-IP", "6.6.6.6"),
            ("Forwarded", "for=6.6.6.6"),
            ("True-Client-IP", "6.6.6.6"),
            ("Accept", "*/*"),
        ];
        let mut untrusted = request(&lines);
        UNTRUSTED.strip(&mut untrusted);
        assert_eq!(names(&untrusted), ["accept"]);
        // A trusted proxy's are kept, to be appended to.
        let mut trusted = request(&lines);
        ClientHeaders {
            trusted: true,
            ..UNTRUSTED
        }
        .strip(&mut trusted);
        assert_eq!(names(&trusted).len(), lines.len());
    }

    #[test]
    fn other_spellings_of_what_crawlgate_reads_are_stripped_even_from_trusted_proxies() {
        let lines = [
            ("User_Agent", "GPTBot/1.2"),
            ("user.agent", "GPTBot/1.2"),
            ("X_Forwarded_For", "6.6.6.6"),
            ("x-forwarded_proto", "https"),
            ("X_Real_IP", "6.6.6.6"),
            ("Content_Length", "5"),
            ("User-Agent", "Mozilla/5.0"),
            ("X-Forwarded-For", "192.0.2.1"),
            ("X-Useragent", "kept"),
        ];
        let mut request = request(&lines);
        ClientHeaders {
            trusted: true,
            ..UNTRUSTED
        }
        .strip(&mut request);
        assert_eq!(
            names(&request),
            ["user-agent", "x-forwarded-for", "x-useragent"]
        );
        assert_eq!(values(&request, "user-agent"), ["Mozilla/5.0"]);
    }

    static HOST: HeaderValue = HeaderValue::from_static("shop.example:8443");

    fn hop(trusted: bool) -> Hop<'static> {
        Hop {
            peer: "10.0.0.7".parse().unwrap(),
            trusted,
            client: "198.51.100.4".parse().unwrap(),
            proto: "https",
            host: Some(&HOST),
        }
    }

    #[test]
    fn addresses_are_written_as_display_writes_them() {
        for text in [
            "0.0.0.0",
            "9.10.99.100",
            "255.255.255.255",
            "127.0.0.1",
            "2001:db8::1",
        ] {
            let mut out = Vec::new();
            push_address(text.parse().unwrap(), &mut out);
            assert_eq!(out, text.as_bytes());
        }
    }

    const EVERYTHING: ForwardingSettings = ForwardingSettings {
        x_forwarded_for: true,
        x_forwarded_proto: true,
        x_forwarded_host: true,
        forwarded: true,
        x_real_ip: true,
    };

    #[test]
    fn the_origin_is_told_the_peer_the_scheme_and_the_host() {
        let mut request = request(&[]);
        add(&mut request, &EVERYTHING, &hop(false)).unwrap();
        assert_eq!(values(&request, "x-forwarded-for"), ["10.0.0.7"]);
        assert_eq!(values(&request, "x-forwarded-proto"), ["https"]);
        assert_eq!(values(&request, "x-forwarded-host"), ["shop.example:8443"]);
        assert_eq!(
            values(&request, "forwarded"),
            ["for=10.0.0.7;host=\"shop.example:8443\";proto=https"]
        );
        assert_eq!(values(&request, "x-real-ip"), ["198.51.100.4"]);
        // The defaults are nginx's common three.
        let mut request = self::request(&[]);
        add(&mut request, &ForwardingSettings::default(), &hop(false)).unwrap();
        assert_eq!(
            names(&request),
            ["x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"]
        );
    }

    #[test]
    fn a_trusted_proxys_chain_is_appended_to_and_its_scheme_kept() {
        let mut request = request(&[
            ("X-Forwarded-For", "203.0.113.9"),
            ("X-Forwarded-For", "198.51.100.4"),
            ("X-Forwarded-Proto", "http"),
            ("Forwarded", "for=203.0.113.9"),
        ]);
        add(&mut request, &EVERYTHING, &hop(true)).unwrap();
        assert_eq!(
            values(&request, "x-forwarded-for"),
            ["203.0.113.9, 198.51.100.4, 10.0.0.7"]
        );
        assert_eq!(values(&request, "x-forwarded-proto"), ["http"]);
        assert_eq!(
            values(&request, "forwarded"),
            ["for=203.0.113.9, for=10.0.0.7;host=\"shop.example:8443\";proto=https"]
        );
        // Not trusted: replaced (strip has removed them before add runs; add alone replaces).
        let mut request = self::request(&[("X-Forwarded-For", "6.6.6.6")]);
        add(&mut request, &EVERYTHING, &hop(false)).unwrap();
        assert_eq!(values(&request, "x-forwarded-for"), ["10.0.0.7"]);
    }

    #[test]
    fn ipv6_nodes_are_bracketed_and_quoted() {
        let mut value = String::new();
        rfc7239_node("2001:db8::1".parse().unwrap(), &mut value);
        assert_eq!(value, "\"[2001:db8::1]\"");
        let mut value = String::new();
        rfc7239_value("a\"b", &mut value);
        assert_eq!(value, "\"a\\\"b\"");
    }

    #[test]
    fn cookie_crumbs_become_one_line() {
        let mut request = request(&[("cookie", "a=1"), ("cookie", "b=2"), ("cookie", "c=3")]);
        join_cookie_crumbs(&mut request).unwrap();
        assert_eq!(values(&request, "cookie"), ["a=1; b=2; c=3"]);
        let mut one = self::request(&[("cookie", "a=1; b=2")]);
        join_cookie_crumbs(&mut one).unwrap();
        assert_eq!(values(&one, "cookie"), ["a=1; b=2"]);
    }

    #[test]
    fn agreeing_content_lengths_become_one() {
        let mut listed = request(&[("content-length", "72, 72")]);
        single_content_length(&mut listed).unwrap();
        assert_eq!(values(&listed, "content-length"), ["72"]);
        let mut lines = request(&[("content-length", "72"), ("content-length", "72")]);
        single_content_length(&mut lines).unwrap();
        assert_eq!(values(&lines, "content-length"), ["72"]);
        let mut one = request(&[("content-length", "5")]);
        single_content_length(&mut one).unwrap();
        assert_eq!(values(&one, "content-length"), ["5"]);
    }
}
