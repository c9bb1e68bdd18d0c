//! Published IP ranges: the JSON lists Google, Bing, OpenAI and others publish for their
//! crawlers (`{"prefixes": [{"ipv4Prefix": "66.249.64.0/27"}, {"ipv6Prefix": "..."}]}`),
//! merged into sorted intervals so that a lookup is one binary search.

use ipnet::IpNet;
use serde::Deserialize;
use std::net::IpAddr;

#[derive(Deserialize)]
struct RangesFile {
    prefixes: Vec<Prefix>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Prefix {
    ipv4_prefix: Option<String>,
    ipv6_prefix: Option<String>,
}

/// A range file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RangesError {
    /// Not the published JSON format.
    #[error("not a ranges file ({0}): expected {{\"prefixes\": [{{\"ipv4Prefix\": \"192.0.2.0/24\"}}, ...]}}")]
    Format(String),
    /// A prefix that is not an address/length.
    #[error("prefixes[{index}]: `{text}` is not a network such as 66.249.64.0/27 or 2001:4860:4801:10::/64")]
    Prefix {
        /// Its position.
        index: usize,
        /// As written.
        text: String,
    },
    /// No prefix at all: most likely a truncated download.
    #[error("no prefixes: refusing an empty list")]
    Empty,
}

/// A set of networks, as sorted, merged intervals of 128-bit addresses (IPv4 mapped into
/// `::ffff:0:0/96`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    intervals: Vec<(u128, u128)>,
    prefixes: usize,
    /// Whether the list has IPv4 and IPv6 prefixes: a list says nothing of a family it has none of.
    has_v4: bool,
    has_v6: bool,
}

fn as_u128(addr: IpAddr) -> u128 {
    match addr.to_canonical() {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

impl RangeSet {
    /// The set of these networks.
    pub fn from_networks(networks: &[IpNet]) -> RangeSet {
        let mut intervals: Vec<(u128, u128)> = networks
            .iter()
            .map(|net| (as_u128(net.network()), as_u128(net.broadcast())))
            .collect();
        intervals.sort_unstable();
        let mut merged: Vec<(u128, u128)> = Vec::with_capacity(intervals.len());
        for (start, end) in intervals {
            match merged.last_mut() {
                Some(last) if start <= last.1.saturating_add(1) => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        RangeSet {
            intervals: merged,
            prefixes: networks.len(),
            has_v4: networks.iter().any(|net| matches!(net, IpNet::V4(_))),
            has_v6: networks.iter().any(|net| matches!(net, IpNet::V6(_))),
        }
    }

    /// Parses a published ranges file.
    pub fn from_json(text: &[u8]) -> Result<RangeSet, RangesError> {
        let file: RangesFile =
            serde_json::from_slice(text).map_err(|e| RangesError::Format(e.to_string()))?;
        let mut networks = Vec::with_capacity(file.prefixes.len());
        for (index, prefix) in file.prefixes.iter().enumerate() {
            let Some(text) = prefix.ipv4_prefix.as_ref().or(prefix.ipv6_prefix.as_ref()) else {
                continue;
            };
            let net = text
                .trim()
                .parse::<IpNet>()
                .map_err(|_| RangesError::Prefix {
                    index,
                    text: text.clone(),
                })?;
            networks.push(net);
        }
        if networks.is_empty() {
            return Err(RangesError::Empty);
        }
        Ok(Self::from_networks(&networks))
    }

    /// Whether `addr` is in the set.
    pub fn contains(&self, addr: IpAddr) -> bool {
        let value = as_u128(addr);
        let after = self.intervals.partition_point(|&(start, _)| start <= value);
        after > 0 && self.intervals[after - 1].1 >= value
    }

    /// Whether the list speaks for `addr`'s family: Bing, for one, publishes IPv4 prefixes
    /// only, and an IPv6 address outside such a list is not thereby outside the crawler's
    /// addresses.
    pub fn covers_family(&self, addr: IpAddr) -> bool {
        match addr.to_canonical() {
            IpAddr::V4(_) => self.has_v4,
            IpAddr::V6(_) => self.has_v6,
        }
    }

    /// How many prefixes the file listed.
    pub fn len(&self) -> usize {
        self.prefixes
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOGLE_LIKE: &str = r#"{"creationTime": "2026-11-01T00:00:00.000000",
      "prefixes": [{"ipv6Prefix": "2001:4860:4801:10::/64"}, {"ipv4Prefix": "66.249.64.0/27"},
                   {"ipv4Prefix": "66.249.64.32/27"}, {"ipv4Prefix": "192.178.5.0/27"}]}"#;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn published_files_parse_and_answer() {
        let set = RangeSet::from_json(GOOGLE_LIKE.as_bytes()).unwrap();
        assert_eq!(set.len(), 4);
        assert!(set.contains(ip("66.249.64.0")));
        assert!(set.contains(ip("66.249.64.63")));
        assert!(!set.contains(ip("66.249.64.64")));
        assert!(set.contains(ip("192.178.5.31")));
        assert!(!set.contains(ip("192.178.5.32")));
        assert!(set.contains(ip("2001:4860:4801:10::abcd")));
        assert!(!set.contains(ip("2001:4860:4801:11::1")));
        assert!(set.contains(ip("::ffff:66.249.64.5")));
        assert!(!set.contains(ip("0.0.0.0")));
        assert!(set.covers_family(ip("203.0.113.1")) && set.covers_family(ip("2001:db8::1")));
        let v4_only =
            RangeSet::from_json(br#"{"prefixes": [{"ipv4Prefix": "157.55.39.0/24"}]}"#).unwrap();
        assert!(v4_only.covers_family(ip("203.0.113.1")));
        assert!(v4_only.covers_family(ip("::ffff:203.0.113.1")));
        assert!(!v4_only.covers_family(ip("2001:db8::1")));
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        assert!(matches!(
            RangeSet::from_json(b"{}"),
            Err(RangesError::Format(_))
        ));
        assert!(matches!(
            RangeSet::from_json(br#"{"prefixes": []}"#),
            Err(RangesError::Empty)
        ));
        let bad =
            br#"{"prefixes": [{"ipv4Prefix": "66.249.64.0/27"}, {"ipv4Prefix": "66.249.64/27"}]}"#;
        let error = RangeSet::from_json(bad).unwrap_err().to_string();
        assert!(error.contains("prefixes[1]"), "{error}");
    }

    #[test]
    fn merged_intervals_agree_with_a_scan() {
        let nets: Vec<IpNet> = [
            "10.0.0.0/8",
            "10.1.0.0/16",
            "10.255.255.255/32",
            "11.0.0.0/8",
            "::1/128",
        ]
        .iter()
        .map(|n| n.parse().unwrap())
        .collect();
        let set = RangeSet::from_networks(&nets);
        for probe in [
            "9.255.255.255",
            "10.0.0.0",
            "10.200.1.1",
            "11.255.255.255",
            "12.0.0.0",
            "::1",
            "::2",
        ] {
            let addr = ip(probe);
            let scan = nets.iter().any(|n| n.contains(&addr));
            assert_eq!(set.contains(addr), scan, "{probe}");
        }
    }
}
