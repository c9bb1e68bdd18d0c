//! Which crawler operator sent a person: the host of a request's `Referer` (or `Origin`) matched
//! against the hosts the catalog names for each operator's products (`chatgpt.com` for OpenAI,
//! `google.*` for Google's search), so that what an operator's crawlers take can be set against
//! the visitors its products send back.
//!
//! A catalog host matches itself and its subdomains (`bing.com` matches `cn.bing.com`). A host
//! written `name.*` is a name under country suffixes: it matches `name.` or `www.name.` and one
//! or two labels of two or three letters (`google.de`, `www.google.co.uk`), and no other
//! subdomain, so that `mail.google.com` (a link opened from an e-mail) is no search referral.

use crate::catalog::OperatorEntry;
use std::sync::Arc;

/// One host of an operator's products, as the catalog writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// The host and its subdomains.
    Domain(String),
    /// `name.` (or `www.name.`) and a country suffix.
    Countries(String),
}

impl Pattern {
    /// The pattern a catalog host is written as, or `None` when it is no host.
    fn of(host: &str) -> Option<Pattern> {
        let host = host.to_ascii_lowercase();
        let (name, countries) = match host.strip_suffix(".*") {
            Some(name) => (name.to_owned(), true),
            None => (host, false),
        };
        let labels_ok = name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
        if !labels_ok || (!countries && !name.contains('.')) {
            return None;
        }
        Some(match countries {
            true => Pattern::Countries(name),
            false => Pattern::Domain(name),
        })
    }
}

/// `de`, `com`, `co.uk`, `com.au`: one or two labels of two or three letters.
fn is_country_suffix(suffix: &[u8]) -> bool {
    let mut labels = 0;
    suffix.split(|&b| b == b'.').all(|label| {
        labels += 1;
        labels <= 2 && (2..=3).contains(&label.len()) && label.iter().all(u8::is_ascii_lowercase)
    })
}

/// A host the catalog names that is no host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("operator {operator}: referrer `{host}` is not a host name (letters, digits, `-` and `.`, at least two labels, or `name.*`)")]
pub struct BadReferrer {
    /// The operator.
    pub operator: String,
    /// What was written.
    pub host: String,
}

/// The longest DNS name (RFC 1035): a longer host is nobody's.
const MAX_HOST: usize = 253;

/// The operators whose products send people to sites, and the hosts they send them from.
///
/// Looked up by hash, not pattern by pattern: a request's host is a handful of label-boundary
/// suffixes, each one look-up, however many hosts the catalog lists (a scan of the patterns
/// cost 1,600 instructions per referred request).
#[derive(Debug, Clone, Default)]
pub struct Referrers {
    /// The operators, in catalog order.
    names: Vec<Arc<str>>,
    /// A domain (`chatgpt.com`) → its operator's place in `names`.
    domains: foldhash::HashMap<Box<[u8]>, usize>,
    /// A name under country suffixes (`google`) → its operator's place in `names`.
    countries: foldhash::HashMap<Box<[u8]>, usize>,
}

impl Referrers {
    /// The table of the catalog's operators; a host two operators name is the first one's.
    pub fn new(entries: &[OperatorEntry]) -> Result<Referrers, BadReferrer> {
        let mut table = Referrers::default();
        for (index, entry) in entries.iter().enumerate() {
            table.names.push(Arc::from(entry.name.as_str()));
            for host in &entry.referrers {
                let pattern = Pattern::of(host).ok_or_else(|| BadReferrer {
                    operator: entry.name.clone(),
                    host: host.clone(),
                })?;
                let (map, key) = match pattern {
                    Pattern::Domain(domain) => (&mut table.domains, domain),
                    Pattern::Countries(name) => (&mut table.countries, name),
                };
                map.entry(key.into_bytes().into_boxed_slice())
                    .or_insert(index);
            }
        }
        Ok(table)
    }

    /// The operator `name` as this table spells it, if it is one of its operators: crawls are
    /// counted per operator only for these, so that the label stays a short, known list.
    pub fn operator(&self, name: &str) -> Option<&Arc<str>> {
        self.names.iter().find(|operator| operator.as_ref() == name)
    }

    /// The operator whose product a `Referer` or `Origin` value (`https://chatgpt.com/`)
    /// comes from. `None` for no URL, a host no operator names, or `own_host` itself (a
    /// site's own pages refer to each other on every click).
    pub fn operator_of(&self, referer: &[u8], own_host: Option<&[u8]>) -> Option<&Arc<str>> {
        let host = host_of(referer).filter(|host| host.len() <= MAX_HOST)?;
        if own_host.is_some_and(|own| strip_port(own).eq_ignore_ascii_case(host)) {
            return None;
        }
        let mut lower = [0u8; MAX_HOST];
        let lower = &mut lower[..host.len()];
        for (to, from) in lower.iter_mut().zip(host) {
            *to = from.to_ascii_lowercase();
        }
        let host = lower.strip_suffix(b".").unwrap_or(lower);
        self.index_of(host).and_then(|index| self.names.get(index))
    }

    /// The operator of a lower-case host: the longest of its domains the table has, else its
    /// name under a country suffix.
    fn index_of(&self, host: &[u8]) -> Option<usize> {
        let mut at = 0;
        loop {
            if let Some(&index) = self.domains.get(&host[at..]) {
                return Some(index);
            }
            match host[at..].iter().position(|&b| b == b'.') {
                Some(dot) => at += dot + 1,
                None => break,
            }
        }
        let bare = host.strip_prefix(b"www.").unwrap_or(host);
        let dot = bare.iter().position(|&b| b == b'.')?;
        let (name, suffix) = (&bare[..dot], &bare[dot + 1..]);
        if !is_country_suffix(suffix) {
            return None;
        }
        self.countries.get(name).copied()
    }
}

/// The host of an absolute `http(s)` URL, without user info or port. Read a byte at a time: a
/// host is a few dozen bytes, shorter than a vectorised search takes to set up.
fn host_of(url: &[u8]) -> Option<&[u8]> {
    let url = url.trim_ascii();
    let rest = [&b"https://"[..], b"http://"].iter().find_map(|scheme| {
        let head = url.get(..scheme.len())?;
        head.eq_ignore_ascii_case(scheme)
            .then(|| &url[scheme.len()..])
    })?;
    let end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = match authority.iter().rposition(|&b| b == b'@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    let host = strip_port(host);
    (!host.is_empty()).then_some(host)
}

/// A host without its `:port`; an IPv6 literal keeps its brackets (and is matched by nobody).
fn strip_port(host: &[u8]) -> &[u8] {
    if host.first() == Some(&b'[') {
        return match host.iter().position(|&b| b == b']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    match host.iter().rposition(|&b| b == b':') {
        Some(colon) => &host[..colon],
        None => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Referrers {
        let entry = |name: &str, hosts: &[&str]| OperatorEntry {
            name: name.to_owned(),
            referrers: hosts.iter().map(|h| (*h).to_owned()).collect(),
            source: String::new(),
        };
        Referrers::new(&[
            entry("OpenAI", &["chatgpt.com", "chat.openai.com"]),
            entry("Google", &["google.*", "gemini.google.com"]),
            entry("Microsoft", &["bing.com", "copilot.microsoft.com"]),
        ])
        .unwrap()
    }

    fn of(referer: &str) -> Option<String> {
        table()
            .operator_of(referer.as_bytes(), Some(b"example.org"))
            .map(|o| o.to_string())
    }

    #[test]
    fn a_products_host_and_its_subdomains_name_its_operator() {
        assert_eq!(of("https://chatgpt.com/").as_deref(), Some("OpenAI"));
        assert_eq!(of("https://chatgpt.com").as_deref(), Some("OpenAI"));
        assert_eq!(
            of("HTTPS://ChatGPT.com:443/c/1?x#y").as_deref(),
            Some("OpenAI")
        );
        assert_eq!(
            of("https://cn.bing.com/search?q=x").as_deref(),
            Some("Microsoft")
        );
        assert_eq!(
            of("https://copilot.microsoft.com/").as_deref(),
            Some("Microsoft")
        );
        assert_eq!(
            of("https://gemini.google.com/app").as_deref(),
            Some("Google")
        );
        assert_eq!(
            of("http://user@chat.openai.com./").as_deref(),
            Some("OpenAI")
        );
    }

    #[test]
    fn a_name_under_country_suffixes_is_only_that_name() {
        for google in [
            "https://www.google.com/",
            "https://google.de/url?q=x",
            "https://www.google.co.uk/",
            "https://www.google.com.au/search",
        ] {
            assert_eq!(of(google).as_deref(), Some("Google"), "{google}");
        }
        for not in [
            "https://mail.google.com/mail/u/0/",
            "https://docs.google.com/",
            "https://google.example.org/",
            "https://www.google.com.evil.example/",
            "https://notgoogle.com/",
        ] {
            assert_eq!(of(not), None, "{not}");
        }
    }

    #[test]
    fn no_url_a_foreign_host_or_the_site_itself_is_no_referral() {
        for not in [
            "",
            "android-app://com.google.android.gm/",
            "chatgpt.com",
            "https://",
            "https://evilchatgpt.com/",
            "https://chatgpt.com.evil.example/",
            "https://[::1]:8080/",
            "https://example.org/page",
            &format!("https://{}.chatgpt.com/", "a".repeat(260)),
        ] {
            assert_eq!(of(not), None, "{not:?}");
        }
        let table = table();
        let own = table.operator_of(b"https://chatgpt.com/x", Some(b"ChatGPT.com:8443"));
        assert_eq!(own, None, "a site's own host is never a referral");
    }

    #[test]
    fn hosts_that_are_no_hosts_are_refused() {
        for bad in [
            "",
            "com",
            "chat gpt.com",
            "*.google.com",
            "https://chatgpt.com",
            "a..b",
        ] {
            assert_eq!(Pattern::of(bad), None, "{bad:?}");
        }
        assert_eq!(
            Pattern::of("google.*"),
            Some(Pattern::Countries("google".into()))
        );
    }
}
