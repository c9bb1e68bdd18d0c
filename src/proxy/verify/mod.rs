//! Is a crawler who it says it is? A User-Agent is a claim; a crawler whose operator publishes
//! IP ranges or reverse-DNS domains is **verified** when the client address checks out,
//! **spoofed** when it does not, and **unverifiable** when no method is configured for it or DNS
//! gave no answer in time.

pub mod dns;
pub mod ranges;

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

/// A verification and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// The verdict.
    pub result: Verified,
    /// How it was reached: `ranges`, `reverse-dns`, `none`.
    pub method: &'static str,
    /// Why, for people: `66.249.66.1 is in Googlebot's published ranges`.
    pub detail: Cow<'static, str>,
}

impl Verification {
    fn new(result: Verified, method: &'static str, detail: String) -> Verification {
        Verification {
            result,
            method,
            detail: Cow::Owned(detail),
        }
    }

    /// Nothing to verify (people).
    pub fn none() -> Verification {
        Verification::fixed(Verified::None, "")
    }

    /// A verdict reached without looking, with a fixed reason (no allocation on the request path).
    pub fn fixed(result: Verified, detail: &'static str) -> Verification {
        Verification {
            result,
            method: "none",
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
    ranges: HashMap<String, Arc<RangesEntry>>,
    /// By lower-cased token: the domains its reverse DNS names end in.
    reverse_dns: HashMap<String, Arc<[String]>>,
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

    /// Whether any method is configured for `token` (lower-cased).
    pub fn covers(&self, token: &str) -> bool {
        self.ranges.contains_key(token) || self.reverse_dns.contains_key(token)
    }

    /// Verifies that `addr` belongs to the crawler `token` (as the catalog writes it). With
    /// `use_dns` false, reverse DNS is skipped and counts as unverifiable.
    pub async fn verify(&self, token: &str, addr: IpAddr, use_dns: bool) -> Verification {
        let key = token.to_ascii_lowercase();
        let ranges = self.ranges.get(&key);
        let domains = self.reverse_dns.get(&key);
        if ranges.is_none() && domains.is_none() {
            return Verification::new(
                Verified::Unverifiable,
                "none",
                format!("no published ranges or reverse DNS are configured for {token}"),
            );
        }
        let mut not_in_ranges = None;
        if let Some(entry) = ranges {
            match entry.set.load_full() {
                Some(set) if set.contains(addr) => {
                    return Verification::new(
                        Verified::Verified,
                        "ranges",
                        format!(
                            "{addr} is in {token}'s published ranges ({})",
                            entry.file.display()
                        ),
                    );
                }
                Some(_) => {
                    not_in_ranges = Some(format!("{addr} is not in {token}'s published ranges"))
                }
                None => {}
            }
        }
        let (Some(domains), Some(dns)) = (domains, self.dns.as_ref()) else {
            return match not_in_ranges {
                Some(detail) => Verification::new(Verified::Spoofed, "ranges", detail),
                None => Verification::new(
                    Verified::Unverifiable,
                    "ranges",
                    format!("{token}'s ranges file has not been read"),
                ),
            };
        };
        if !use_dns {
            let why = not_in_ranges.map_or(String::new(), |d| format!("{d}; "));
            return Verification::new(
                Verified::Unverifiable,
                "reverse-dns",
                format!("{why}reverse DNS skipped"),
            );
        }
        let crawler: Arc<str> = Arc::from(key.as_str());
        let (outcome, cached) = dns.verify(addr, &crawler, domains).await;
        let cached = if cached { " (cached)" } else { "" };
        match outcome {
            DnsOutcome::Verified(name) => Verification::new(
                Verified::Verified,
                "reverse-dns",
                format!("{addr} is {name}, which resolves back to it{cached}"),
            ),
            DnsOutcome::Spoofed(why) => {
                Verification::new(Verified::Spoofed, "reverse-dns", format!("{why}{cached}"))
            }
            DnsOutcome::Unverifiable(why) => Verification::new(
                Verified::Unverifiable,
                "reverse-dns",
                format!("{why}{cached}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier_with_ranges(json: &str) -> Verifier {
        let entry = RangesEntry {
            token: "Googlebot".into(),
            file: "googlebot.json".into(),
            url: None,
            set: ArcSwapOption::from_pointee(RangeSet::from_json(json.as_bytes()).unwrap()),
        };
        Verifier::new(vec![entry], HashMap::new(), None)
    }

    #[tokio::test]
    async fn ranges_verify_and_refute() {
        let v = verifier_with_ranges(
            r#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/19"}, {"ipv6Prefix": "2001:4860:4801::/48"}]}"#,
        );
        let ok = v
            .verify("Googlebot", "66.249.66.1".parse().unwrap(), true)
            .await;
        assert_eq!((ok.result, ok.method), (Verified::Verified, "ranges"));
        let ok6 = v
            .verify("googlebot", "2001:4860:4801:10::1".parse().unwrap(), true)
            .await;
        assert_eq!(ok6.result, Verified::Verified);
        let fake = v
            .verify("Googlebot", "203.0.113.9".parse().unwrap(), true)
            .await;
        assert_eq!(fake.result, Verified::Spoofed);
        assert!(
            fake.detail.contains("not in Googlebot's published ranges"),
            "{}",
            fake.detail
        );
        let other = v
            .verify("Bingbot", "203.0.113.9".parse().unwrap(), true)
            .await;
        assert_eq!(other.result, Verified::Unverifiable);
        assert!(v.covers("googlebot") && !v.covers("bingbot"));
    }
}
