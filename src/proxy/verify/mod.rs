//! Is a crawler who it says it is? A User-Agent is a claim; a crawler whose operator publishes
//! IP ranges or reverse-DNS domains is **verified** when the client address checks out,
//! **spoofed** when it does not, and **unverifiable** when no method is configured for it or DNS
//! gave no answer in time.
//!
//! Published ranges, once loaded, are the authority: an address outside them is spoofed, whatever
//! its reverse DNS says (a PTR record is whatever the address's owner writes, and forward
//! confirmation only proves that the owner controls both zones). Only an address of a family the
//! list has no prefix of (an IPv6 client of an IPv4-only list) goes on to reverse DNS. Reverse DNS
//! is not asked about loopback and private addresses: their names come from the local network,
//! not from the crawler's operator.

pub mod dns;
pub mod limit;
pub mod ranges;
pub mod signature;

use arc_swap::ArcSwapOption;
use dns::{DnsOutcome, DnsVerifier};
use ranges::RangeSet;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The verdict on a crawler's identity, as labels and logs write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verified {
    /// The address is the operator's.
    Verified,
    /// The address is not the operator's: the User-Agent lies.
    Spoofed,
    /// No method, or no answer in time.
    Unverifiable,
    /// Not a crawler: nothing to verify.
    None,
}

impl Verified {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Verified::Verified => "verified",
            Verified::Spoofed => "spoofed",
            Verified::Unverifiable => "unverifiable",
            Verified::None => "none",
        }
    }
}

/// How a verdict on a crawler's identity was reached, as labels and logs write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Its published IP ranges.
    Ranges,
    /// Forward-confirmed reverse DNS.
    ReverseDns,
    /// A Web Bot Auth signature.
    Signature,
    /// No method: nothing looked (people, unnamed crawlers, crawlers with none configured).
    None,
}

impl Method {
    /// The label value: `ranges`, `reverse-dns`, `signature`, `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Ranges => "ranges",
            Method::ReverseDns => "reverse-dns",
            Method::Signature => "signature",
            Method::None => "none",
        }
    }
}

/// A verification and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// The verdict.
    pub result: Verified,
    /// How it was reached.
    pub method: Method,
    /// Why, for people: `66.249.66.1 is in Googlebot's published ranges`.
    pub detail: Cow<'static, str>,
}

impl Verification {
    fn new(result: Verified, method: Method, detail: String) -> Verification {
        Verification {
            result,
            method,
            detail: Cow::Owned(detail),
        }
    }

    /// A verdict of `method`, with its reason.
    pub fn by(result: Verified, method: Method, detail: String) -> Verification {
        Verification::new(result, method, detail)
    }

    /// Nothing to verify (people).
    pub fn none() -> Verification {
        Verification::fixed(Verified::None, "")
    }

    /// A verdict reached without looking, with a fixed reason (no allocation on the request path).
    pub fn fixed(result: Verified, detail: &'static str) -> Verification {
        Self::fixed_by(result, Method::None, detail)
    }

    /// A verdict of `method` with a fixed reason.
    fn fixed_by(result: Verified, method: Method, detail: &'static str) -> Verification {
        Verification {
            result,
            method,
            detail: Cow::Borrowed(detail),
        }
    }
}

/// A crawler's published ranges: the file they are read from, and the set in force.
#[derive(Debug)]
pub struct RangesEntry {
    /// The crawler's token as configured.
    pub token: String,
    /// The JSON file.
    pub file: PathBuf,
    /// Where `crawlgate ranges update` downloads it from.
    pub url: Option<String>,
    /// The set in force (none until the file is read).
    pub set: ArcSwapOption<RangeSet>,
}

/// How crawlers are verified.
#[derive(Debug, Default)]
pub struct Verifier {
    /// By lower-cased token.
    ranges: foldhash::HashMap<String, Arc<RangesEntry>>,
    /// By lower-cased token: the domains its reverse DNS names end in.
    reverse_dns: foldhash::HashMap<String, Arc<[String]>>,
    dns: Option<DnsVerifier>,
}

impl Verifier {
    /// A verifier with these range files (not read yet), reverse-DNS domains and resolver.
    pub fn new(
        ranges: Vec<RangesEntry>,
        reverse_dns: HashMap<String, Vec<String>>,
        dns: Option<DnsVerifier>,
    ) -> Verifier {
        Verifier {
            ranges: ranges
                .into_iter()
                .map(|entry| (entry.token.to_ascii_lowercase(), Arc::new(entry)))
                .collect(),
            reverse_dns: reverse_dns
                .into_iter()
                .map(|(token, domains)| (token.to_ascii_lowercase(), Arc::from(domains)))
                .collect(),
            dns,
        }
    }

    /// The range files, for the reload service and `crawlgate ranges update`.
    pub fn ranges(&self) -> impl Iterator<Item = &Arc<RangesEntry>> {
        self.ranges.values()
    }

    /// The DNS verifier, if reverse DNS is configured.
    pub fn dns(&self) -> Option<&DnsVerifier> {
        self.dns.as_ref()
    }

    /// Verifies that `addr` belongs to the crawler `token` (as the catalog writes it; `key` is
    /// the same lower-cased). With `use_dns` false, reverse DNS is skipped and counts as
    /// unverifiable. A crawler with no method, or a private address, costs two lookups and no
    /// allocation.
    pub async fn verify(
        &self,
        token: &str,
        key: &str,
        addr: IpAddr,
        use_dns: bool,
    ) -> Verification {
        let ranges = self.ranges.get(key);
        let domains = self.reverse_dns.get(key);
        if ranges.is_none() && domains.is_none() {
            return Verification::fixed(
                Verified::Unverifiable,
                "no published ranges or reverse DNS are known for this crawler",
            );
        }
        // Why the ranges did not decide, when they are configured.
        let mut ranges_said = None;
        if let Some(entry) = ranges {
            match entry.set.load_full() {
                Some(set) if set.contains(addr) => {
                    return Verification::new(
                        Verified::Verified,
                        Method::Ranges,
                        format!(
                            "{addr} is in {token}'s published ranges ({})",
                            entry.file.display()
                        ),
                    );
                }
                Some(set) if set.covers_family(addr) => {
                    return Verification::new(
                        Verified::Spoofed,
                        Method::Ranges,
                        format!(
                            "{addr} is outside {token}'s published ranges ({})",
                            entry.file.display()
                        ),
                    );
                }
                Some(_) => {
                    ranges_said = Some(format!(
                        "{token}'s published ranges list no {} prefixes",
                        if addr.is_ipv4() { "IPv4" } else { "IPv6" }
                    ))
                }
                None => ranges_said = Some(format!("{token}'s ranges file has not been read")),
            }
        }
        let Some(domains) = domains else {
            let detail = ranges_said.unwrap_or_default();
            return Verification::new(Verified::Unverifiable, Method::Ranges, detail);
        };
        if !reverse_dns_can_vouch(addr) {
            return Verification::fixed_by(
                Verified::Unverifiable,
                Method::ReverseDns,
                "a loopback or private address: no reverse DNS name can vouch for it (is the proxy in front of crawlgate in trusted_proxies?)",
            );
        }
        let Some(dns) = self.dns.as_ref() else {
            return Verification::fixed_by(
                Verified::Unverifiable,
                Method::ReverseDns,
                "no DNS resolver could be set up",
            );
        };
        if !use_dns {
            let why = ranges_said.map_or(String::new(), |d| format!("{d}; "));
            return Verification::new(
                Verified::Unverifiable,
                Method::ReverseDns,
                format!("{why}reverse DNS skipped"),
            );
        }
        let crawler: Arc<str> = Arc::from(key);
        let (outcome, cached) = dns.verify(addr, &crawler, domains).await;
        let cached = if cached { " (cached)" } else { "" };
        match outcome {
            DnsOutcome::Verified(name) => Verification::new(
                Verified::Verified,
                Method::ReverseDns,
                format!("{addr} is {name}, which resolves back to it{cached}"),
            ),
            DnsOutcome::Spoofed(why) => Verification::new(
                Verified::Spoofed,
                Method::ReverseDns,
                format!("{why}{cached}"),
            ),
            DnsOutcome::Unverifiable(why) => Verification::new(
                Verified::Unverifiable,
                Method::ReverseDns,
                format!("{why}{cached}"),
            ),
        }
    }
}

/// Whether reverse DNS can say anything about `addr`: not for loopback, unspecified,
/// private (RFC 1918, RFC 4193), link-local or shared (RFC 6598) addresses, whose PTR records
/// the local network writes. A crawler never comes from one; a request that seems to usually
/// came through a proxy that is not in `trusted_proxies`.
pub fn reverse_dns_can_vouch(addr: IpAddr) -> bool {
    match addr.to_canonical() {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || (a == 100 && (64..128).contains(&b)))
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(token: &str, json: &str) -> RangesEntry {
        RangesEntry {
            token: token.into(),
            file: format!("{}.json", token.to_ascii_lowercase()).into(),
            url: None,
            set: ArcSwapOption::from_pointee(RangeSet::from_json(json.as_bytes()).unwrap()),
        }
    }

    fn verifier_with_ranges(json: &str) -> Verifier {
        Verifier::new(vec![entry("Googlebot", json)], HashMap::new(), None)
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[tokio::test]
    async fn ranges_verify_and_refute() {
        let v = verifier_with_ranges(
            r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/19"}, {"ipv6Prefix": "2001:4860:4801::/48"}]}"#,
        );
        let ok = v
            .verify("Googlebot", "googlebot", ip("66.249.66.1"), true)
            .await;
        assert_eq!((ok.result, ok.method), (Verified::Verified, Method::Ranges));
        let ok6 = v
            .verify("Googlebot", "googlebot", ip("2001:4860:4801:10::1"), true)
            .await;
        assert_eq!(ok6.result, Verified::Verified);
        let fake = v
            .verify("Googlebot", "googlebot", ip("203.0.113.9"), true)
            .await;
        assert_eq!(fake.result, Verified::Spoofed);
        assert!(
            fake.detail.contains("outside Googlebot's published ranges"),
            "{}",
            fake.detail
        );
        let other = v
            .verify("Bingbot", "bingbot", ip("203.0.113.9"), true)
            .await;
        assert_eq!(
            (other.result, other.method),
            (Verified::Unverifiable, Method::None)
        );
    }

    #[tokio::test]
    async fn loaded_ranges_are_the_authority_over_reverse_dns() {
        // Domains configured too, and no resolver needed: outside the ranges is spoofed
        // before any lookup could vouch for the address.
        let domains = HashMap::from([("Googlebot".to_owned(), vec!["googlebot.com".to_owned()])]);
        let ranges = entry(
            "Googlebot",
            r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/19"}]}"#,
        );
        let v = Verifier::new(vec![ranges], domains, None);
        let outside = v
            .verify("Googlebot", "googlebot", ip("35.1.2.3"), true)
            .await;
        assert_eq!(
            (outside.result, outside.method),
            (Verified::Spoofed, Method::Ranges)
        );
        // An IPv6 client of an IPv4-only list is not refuted by it: reverse DNS decides (here
        // there is no resolver, so it is unverifiable).
        let v6 = v
            .verify("Googlebot", "googlebot", ip("2001:db8::1"), true)
            .await;
        assert_eq!(
            (v6.result, v6.method),
            (Verified::Unverifiable, Method::ReverseDns)
        );
    }

    #[tokio::test]
    async fn private_addresses_are_not_looked_up() {
        let domains = HashMap::from([("Googlebot".to_owned(), vec!["googlebot.com".to_owned()])]);
        let v = Verifier::new(Vec::new(), domains, None);
        for addr in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.9",
            "::1",
            "fd00::1",
            "100.64.0.1",
        ] {
            let answer = v.verify("Googlebot", "googlebot", ip(addr), true).await;
            assert_eq!(answer.result, Verified::Unverifiable, "{addr}");
            assert!(
                answer.detail.contains("private"),
                "{addr}: {}",
                answer.detail
            );
        }
        for addr in [
            "66.249.66.1",
            "192.0.2.7",
            "2001:4860::1",
            "::ffff:66.249.66.1",
        ] {
            assert!(reverse_dns_can_vouch(ip(addr)), "{addr}");
        }
        for addr in ["::ffff:10.0.0.1", "169.254.1.1", "fe80::1", "0.0.0.0"] {
            assert!(!reverse_dns_can_vouch(ip(addr)), "{addr}");
        }
    }
}
