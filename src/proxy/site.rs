//! A site at run time: its settings, its origin, and the snapshot of robots.txt in force.
//!
//! A [`Snapshot`] is everything a request needs to be decided — the compiled robots.txt and the
//! site's crawler table judged by it ([`Crawlers`]: classifier, names, labels, actions, the
//! groups each crawler obeys) — built off the request path and swapped in whole with arc-swap,
//! so that no request ever sees half a reload.

use super::config::{OnUnreachable, RobotsSource, SiteSettings, UpstreamAddr};
use super::host::host_name;
use super::tls::certs::pem_certificates;
use super::ua_memo;
use crate::agent::{ClassifierError, Who};
use crate::crawlers::{Crawler, Crawlers};
use crate::robots::{Options, Robots};
use arc_swap::{ArcSwap, ArcSwapOption};
use bytes::Bytes;
use pingora::upstreams::peer::HttpPeer;
use prometheus::IntCounter;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

pub use crate::crawlers::{CatalogIndex, MAX_SITE_TOKEN_LABELS};

/// Where the robots.txt in force came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceState {
    /// Read from a file, from the configuration, or fetched from the origin (2xx).
    Loaded,
    /// The origin answered 4xx (or too many redirects): no restrictions (RFC 9309 §2.3.1.3).
    Unavailable,
    /// The origin answered 5xx or could not be reached, and no good file is at hand: per
    /// `on_unreachable`, everything is disallowed (or allowed) (RFC 9309 §2.3.1.4).
    Unreachable,
    /// Not fetched from the origin yet: treated as unreachable until the first fetch.
    Pending,
}

impl SourceState {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceState::Loaded => "loaded",
            SourceState::Unavailable => "unavailable",
            SourceState::Unreachable => "unreachable",
            SourceState::Pending => "pending",
        }
    }
}

/// Snapshots alive in this process: the proof that a reload frees the one it replaces (the
/// `crawlgate_robots_snapshots` gauge).
static LIVE_SNAPSHOTS: AtomicUsize = AtomicUsize::new(0);

/// The id of the next snapshot built: ids are unique in the process (and never 0), so that a
/// memo keyed by them can never answer for another file.
static NEXT_SNAPSHOT_ID: AtomicU64 = AtomicU64::new(1);

/// How many snapshots are alive (in force, previous, or held by requests in flight).
pub fn live_snapshots() -> usize {
    LIVE_SNAPSHOTS.load(Ordering::Relaxed)
}

/// The robots.txt text that stands in when the real one is unavailable or unreachable.
const DISALLOW_ALL: &[u8] = b"User-agent: *\nDisallow: /\n";

/// Everything a request of one site is decided with, built at once and swapped in whole.
#[derive(Debug)]
pub struct Snapshot {
    /// Unique in the process: the key of the User-Agent memo.
    id: u64,
    /// The compiled robots.txt in force (or its stand-in).
    pub robots: Robots,
    /// The site's crawlers, judged by this file.
    pub crawlers: Crawlers,
    /// The bytes served at `/robots.txt` and enforced: as loaded, or composed with the site's
    /// managed groups ([`crate::managed`]); empty for a stand-in.
    pub bytes: Bytes,
    /// The bytes as loaded (what a reload compares the next answer with).
    pub source: Bytes,
    /// Where each line of `bytes` comes from, when the site manages groups of its own.
    pub managed: Option<Arc<[crate::managed::Source]>>,
    /// When the origin gave this answer (`None` for files, inline text and stand-ins): the age
    /// RFC 9309's caching rules are about.
    pub fetched_at: Option<SystemTime>,
    /// Whether it was read back from the state directory and no fetch since the restart has
    /// confirmed or replaced it.
    pub restored: bool,
    /// SHA-256 of `bytes`, hex.
    pub sha256: String,
    /// When it was loaded.
    pub loaded_at: SystemTime,
    /// Where it came from.
    pub state: SourceState,
    /// The site's prices against this file (its sitemaps are free), when it prices pages.
    pub pricing: Option<crate::pricing::Pricing>,
}

impl Snapshot {
    /// Builds a snapshot from loaded bytes (or a stand-in for `state`).
    pub fn build(
        site: &SiteSettings,
        catalog: &CatalogIndex,
        bytes: Bytes,
        state: SourceState,
    ) -> Result<Snapshot, ClassifierError> {
        let options = Options {
            max_bytes: site.robots.max_bytes,
        };
        let stand_in_disallows = site.robots.on_unreachable != OnUnreachable::AllowAll;
        let source = bytes;
        // The managed groups hold over a loaded file and over none (an origin's 4xx); a
        // stand-in for an unreachable origin stays what it is.
        let composed = match (&site.robots.managed, state) {
            (Some(managed), SourceState::Loaded | SourceState::Unavailable) => {
                let origin: &[u8] = match state {
                    SourceState::Loaded => &source,
                    _ => b"",
                };
                let disallowed = managed.disallowed(&catalog.catalog);
                Some(managed.compose(origin, &disallowed))
            }
            _ => None,
        };
        let (bytes, managed) = match composed {
            Some(composed) => (
                Bytes::from(composed.text),
                Some(Arc::from(composed.sources)),
            ),
            None => (source.clone(), None),
        };
        let robots = match state {
            SourceState::Loaded => Robots::parse_with(&bytes, options),
            // Composed over an origin's 4xx: the managed groups alone.
            SourceState::Unavailable if managed.is_some() => Robots::parse_with(&bytes, options),
            SourceState::Unavailable => Robots::parse(b""),
            SourceState::Unreachable | SourceState::Pending if stand_in_disallows => {
                Robots::parse(DISALLOW_ALL)
            }
            SourceState::Unreachable | SourceState::Pending => Robots::parse(b""),
        };
        let crawlers = Crawlers::build(catalog, &robots, &site.actions(), &site.bot_tokens)?;
        let sha256 = hex(&Sha256::digest(&bytes));
        let pricing = site
            .pay_per_crawl
            .as_ref()
            .map(|prices| crate::pricing::Pricing::new(prices.clone(), &robots));
        LIVE_SNAPSHOTS.fetch_add(1, Ordering::Relaxed);
        Ok(Snapshot {
            id: NEXT_SNAPSHOT_ID.fetch_add(1, Ordering::Relaxed),
            robots,
            crawlers,
            fetched_at: None,
            restored: false,
            bytes,
            source,
            managed,
            sha256,
            loaded_at: SystemTime::now(),
            state,
            pricing,
        })
    }

    /// Classifies a User-Agent against the catalog and this site's own tokens (see
    /// [`Crawlers::classify`]). Recent headers are answered from the worker thread's memo
    /// ([`ua_memo`]).
    pub fn classify(&self, user_agent: &[u8]) -> Who {
        ua_memo::classify_memoized(self.id, user_agent, || self.crawlers.classify(user_agent))
    }

    /// [`Snapshot::classify`] without the memo.
    pub fn classify_afresh(&self, user_agent: &[u8]) -> Who {
        self.crawlers.classify(user_agent)
    }

    /// The crawler `who` is: its row of the site's table, or none for a person.
    pub fn crawler(&self, who: Who) -> Option<Crawler<'_>> {
        self.crawlers.row(who)
    }

    /// Why this snapshot is a stand-in, for block messages and logs.
    pub fn stand_in_reason(&self) -> Option<&'static str> {
        match self.state {
            SourceState::Loaded => None,
            SourceState::Unavailable => Some("robots.txt is unavailable (4xx): no restrictions"),
            SourceState::Unreachable => Some("robots.txt is unreachable (RFC 9309 §2.3.1.4)"),
            SourceState::Pending => Some("robots.txt has not been fetched yet"),
        }
    }

    /// Where line `line` (1-based) of the file served comes from, when the site manages groups
    /// of its own; `None` otherwise (every line is the file's own).
    pub fn line_source(&self, line: u32) -> Option<crate::managed::Source> {
        let index = usize::try_from(line.checked_sub(1)?).ok()?;
        self.managed.as_ref()?.get(index).copied()
    }

    /// How long ago it was loaded.
    pub fn age(&self) -> Duration {
        self.loaded_at.elapsed().unwrap_or_default()
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        LIVE_SNAPSHOTS.fetch_sub(1, Ordering::Relaxed);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A site at run time.
#[derive(Debug)]
pub struct Site {
    /// Its settings.
    pub settings: SiteSettings,
    /// Its name, shared (a politeness key part and a label).
    pub name: Arc<str>,
    /// The snapshot in force.
    pub snapshot: ArcSwap<Snapshot>,
    /// The snapshot it replaced, for crawlers that read that file within the grace period.
    pub previous: ArcSwapOption<Snapshot>,
    /// Where requests go.
    pub peer: HttpPeer,
    /// This site's `crawlgate_requests_total` series for people (most requests), looked up once
    /// rather than by its labels on every request.
    pub person_requests: OnceLock<IntCounter>,
}

/// A site that cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    /// The robots.txt file cannot be read at startup.
    #[error("site {site}: cannot read robots.txt {path}: {source}")]
    Robots {
        /// The site.
        site: String,
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The classifier cannot be built.
    #[error("site {site}: {source}")]
    Classifier {
        /// The site.
        site: String,
        /// Why.
        source: ClassifierError,
    },
    /// A `bots:` key that names no crawler: not a product token, not a catalog crawler's name.
    #[error(
        "site {site}: bots: `{key}`{} names no crawler: it is not a product token (letters, `_`, `-`: \
         a crawler of the site's own) and no crawler of the catalog has that name, so it would never apply",
        line.map(|l| format!(" (line {l})")).unwrap_or_default()
    )]
    UnknownBot {
        /// The site.
        site: String,
        /// The key as written.
        key: String,
        /// Its line in the configuration.
        line: Option<usize>,
    },
    /// The origin's address cannot be used.
    #[error("site {site}: upstream: {message}")]
    Upstream {
        /// The site.
        site: String,
        /// Why.
        message: String,
    },
}

/// How long to wait for a connection to the origin.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Site {
    /// Puts a new snapshot in force; the one it replaces becomes `previous`. Stand-ins count:
    /// a crawler that got a 404 was told "no restrictions", one that got a 5xx "disallow all".
    pub fn replace(&self, snapshot: Snapshot) {
        let old = self.snapshot.swap(Arc::new(snapshot));
        self.previous.store(Some(old));
    }

    /// Sets a site up: its peer, and its first snapshot (a file or inline text is read now; an
    /// origin's file is fetched by the reload service, and is `Pending` until then).
    pub fn new(settings: SiteSettings, catalog: &CatalogIndex) -> Result<Site, SiteError> {
        let name = settings.name.clone();
        if let Some((key, line)) = settings
            .bot_names
            .iter()
            .find(|(key, _)| !catalog.knows_name(key))
        {
            return Err(SiteError::UnknownBot {
                site: name,
                key: key.clone(),
                line: *line,
            });
        }
        let (bytes, state) = match &settings.robots.source {
            RobotsSource::File(path) => {
                let bytes = std::fs::read(path).map_err(|source| SiteError::Robots {
                    site: name.clone(),
                    path: path.display().to_string(),
                    source,
                })?;
                (Bytes::from(bytes), SourceState::Loaded)
            }
            RobotsSource::Inline(text) => (Bytes::from(text.clone()), SourceState::Loaded),
            RobotsSource::Origin => (Bytes::new(), SourceState::Pending),
        };
        let snapshot = Snapshot::build(&settings, catalog, bytes, state).map_err(|source| {
            SiteError::Classifier {
                site: name.clone(),
                source,
            }
        })?;
        let upstream = &settings.upstream;
        // The peer is cloned for every request: a plain-HTTP origin needs no SNI to copy.
        let sni = if upstream.tls {
            upstream.sni.clone()
        } else {
            String::new()
        };
        let mut peer = match (&upstream.addr, upstream.resolved) {
            (UpstreamAddr::Unix(path), _) => {
                HttpPeer::new_uds(&path.to_string_lossy(), upstream.tls, sni).map_err(|e| {
                    SiteError::Upstream {
                        site: name.clone(),
                        message: e.to_string(),
                    }
                })?
            }
            (UpstreamAddr::Tcp(_), Some(addr)) => HttpPeer::new(addr, upstream.tls, sni),
            (UpstreamAddr::Tcp(text), None) => {
                return Err(SiteError::Upstream {
                    site: name,
                    message: format!("`{text}` is not resolved"),
                })
            }
        };
        if let Some(file) = &upstream.ca {
            let certs = std::fs::read(file)
                .map_err(|e| e.to_string())
                .and_then(|pem| pem_certificates(&pem).map_err(|e| e.to_string()))
                .map_err(|message| SiteError::Upstream {
                    site: name.clone(),
                    message: format!("upstream_ca {}: {message}", file.display()),
                })?;
            peer.options.ca = Some(Arc::new(certs.into_boxed_slice()));
        }
        peer.options.connection_timeout = Some(CONNECT_TIMEOUT);
        peer.options.read_timeout = Some(settings.upstream_timeout);
        peer.options.write_timeout = Some(settings.upstream_timeout);
        Ok(Site {
            name: Arc::from(settings.name.as_str()),
            settings,
            snapshot: ArcSwap::from_pointee(snapshot),
            previous: ArcSwapOption::empty(),
            person_requests: OnceLock::new(),
            peer,
        })
    }
}

/// The sites, and which one serves which Host.
#[derive(Debug, Default)]
pub struct Sites {
    by_host: HashMap<String, Arc<Site>>,
    any_host: Option<Arc<Site>>,
    /// Every site, in configuration order.
    pub all: Vec<Arc<Site>>,
}

impl Sites {
    /// Indexes sites by their hosts.
    pub fn new(all: Vec<Arc<Site>>) -> Sites {
        let mut sites = Sites::default();
        for site in &all {
            if site.settings.hosts.is_empty() {
                sites.any_host = Some(site.clone());
            }
            for host in &site.settings.hosts {
                sites.by_host.insert(host.clone(), site.clone());
            }
        }
        sites.all = all;
        sites
    }

    /// The site for a Host header value (port, case and a trailing dot ignored). A value that
    /// is not a host ([`host_name`]) is no site's, not even the catch-all's.
    pub fn route(&self, host: Option<&[u8]>) -> Option<&Arc<Site>> {
        let name = match host.map(host_name) {
            Some(Err(_)) => return None,
            Some(Ok(name)) if !name.is_empty() => Some(name.trim_end_matches('.')),
            _ => None,
        };
        let named = name.and_then(|name| {
            if self.by_host.is_empty() {
                return None;
            }
            if name.bytes().any(|b| b.is_ascii_uppercase()) {
                self.by_host.get(&name.to_ascii_lowercase())
            } else {
                self.by_host.get(name)
            }
        });
        named.or(self.any_host.as_ref())
    }

    /// The site with this name.
    pub fn by_name(&self, name: &str) -> Option<&Arc<Site>> {
        self.all.iter().find(|site| site.settings.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::policy::Action;
    use crate::proxy::config::Settings;
    use std::path::Path;

    fn settings(robots: &str, extra: &str) -> SiteSettings {
        let yaml = format!(
            "listen: [\"127.0.0.1:1\"]\nsites:\n  - name: s\n    upstream: \"127.0.0.1:9\"\n{extra}    robots:\n      {robots}\n"
        );
        Settings::from_yaml(&yaml, "t", Path::new("/"))
            .unwrap()
            .sites
            .remove(0)
    }

    fn label(snapshot: &Snapshot, ua: &[u8]) -> Option<String> {
        snapshot
            .crawler(snapshot.classify(ua))
            .map(|crawler| crawler.label.to_string())
    }

    #[test]
    fn a_bots_key_that_names_no_crawler_is_refused_with_its_line() {
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let unknown = settings("inline: \"\"", "    bots:\n      NoSuchBot123: block\n");
        let error = Site::new(unknown, &catalog).unwrap_err();
        assert!(
            matches!(&error, SiteError::UnknownBot { key, line: Some(6), .. } if key == "NoSuchBot123"),
            "{error}"
        );
        assert!(error.to_string().contains("(line 6)"), "{error}");
        // A catalog crawler's name (not a product token) and a product token the catalog does
        // not know (a crawler of the site's own) both apply.
        let known = settings(
            "inline: \"\"",
            "    bots: {MJ12bot: tag, OwnCrawler: block}\n",
        );
        assert!(Site::new(known, &catalog).is_ok());
    }

    #[test]
    fn tokens_from_the_file_and_overrides_are_known_crawlers() {
        let site = settings(
            "inline: \"User-agent: FooCrawler\\nDisallow: /\\n\"",
            "    bots: {BarAgent: tag}\n    categories: {ai-training: count}\n",
        );
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let site = Site::new(site, &catalog).unwrap();
        let snapshot = site.snapshot.load();
        let row = |ua: &[u8]| {
            snapshot
                .crawler(snapshot.classify(ua))
                .map(|c| (c.label.clone(), c.action))
        };
        let foo = row(b"FooCrawler/1.0").unwrap();
        assert_eq!((&*foo.0, foo.1), ("FooCrawler", Action::Block));
        // A token only the configuration names needs a crawler signal, like any site token.
        assert!(row(b"BarAgent").is_none());
        let bar = row(b"BarAgent/1.0 (compatible; +https://bar.example)").unwrap();
        assert_eq!((&*bar.0, bar.1), ("BarAgent", Action::Tag));
        let gpt = row(b"Mozilla/5.0 (compatible; GPTBot/1.2)").unwrap();
        assert_eq!((&*gpt.0, gpt.1), ("GPTBot", Action::Count));
        // A site token longer than a catalog token in the same header wins, as in one automaton.
        assert_eq!(
            label(&snapshot, b"GPTBot/1.0 FooCrawler/2.0").as_deref(),
            Some("FooCrawler")
        );
        assert_eq!(
            label(&snapshot, b"Mozilla/5.0 Firefox/128.0").as_deref(),
            None
        );
        assert_eq!(snapshot.sha256.len(), 64);
    }

    #[test]
    fn the_memo_answers_as_the_classifier_does_across_snapshots() {
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let site = settings("origin: true", "");
        let build = |text: &'static str| {
            Snapshot::build(&site, &catalog, Bytes::from(text), SourceState::Loaded).unwrap()
        };
        // The same headers mean different crawlers under the two files.
        let before = build("User-agent: FooCrawler\nDisallow: /\n");
        let after = build("User-agent: FooCrawler-Pro\nUser-agent: Zedbot\nDisallow: /\n");
        let headers: [&[u8]; 6] = [
            b"FooCrawler-Pro/1.0",
            b"FooCrawler/1.0 Zedbot",
            b"Mozilla/5.0 (compatible; GPTBot/1.2)",
            b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
            b"some-spider",
            b"",
        ];
        for _ in 0..3 {
            for snapshot in [&before, &after] {
                for header in headers {
                    let memo = snapshot.classify(header);
                    let afresh = snapshot.classify_afresh(header);
                    assert_eq!(memo, afresh, "{}", String::from_utf8_lossy(header));
                }
            }
        }
        assert_ne!(
            before.classify(b"FooCrawler-Pro/1.0"),
            after.classify(b"FooCrawler-Pro/1.0")
        );
    }

    #[test]
    fn stand_ins_follow_on_unreachable() {
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let keep = settings("origin: true", "");
        let pending = Snapshot::build(&keep, &catalog, Bytes::new(), SourceState::Pending).unwrap();
        assert!(!pending.robots.is_allowed("x", "/a"));
        let unavailable =
            Snapshot::build(&keep, &catalog, Bytes::new(), SourceState::Unavailable).unwrap();
        assert!(unavailable.robots.is_allowed("x", "/a"));
        let open = settings("origin: true\n      on_unreachable: allow-all", "");
        let unreachable =
            Snapshot::build(&open, &catalog, Bytes::new(), SourceState::Unreachable).unwrap();
        assert!(unreachable.robots.is_allowed("x", "/a"));
    }

    #[test]
    fn routing_by_host() {
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let mut a = settings("inline: x", "    hosts: [a.example, www.a.example]\n");
        a.name = "a".into();
        let b = settings("inline: x", "");
        let sites = Sites::new(vec![
            Arc::new(Site::new(a, &catalog).unwrap()),
            Arc::new(Site::new(b, &catalog).unwrap()),
        ]);
        let name = |host: &[u8]| sites.route(Some(host)).map(|s| s.settings.name.clone());
        assert_eq!(name(b"a.example"), Some("a".into()));
        assert_eq!(name(b"WWW.A.example:8080"), Some("a".into()));
        assert_eq!(name(b"a.example."), Some("a".into()));
        assert_eq!(name(b"other.example"), Some("s".into()));
        assert_eq!(
            sites.route(None).map(|s| s.settings.name.as_str()),
            Some("s")
        );
        // Not a host: no site, not even the one for any host.
        for invalid in [
            &b"a.example:abc"[..],
            b"a.example:80:80",
            b"a.example:+80",
            b"a b",
        ] {
            assert_eq!(name(invalid), None);
        }
        let only_a = Sites::new(vec![sites.all[0].clone()]);
        assert!(only_a.route(Some(b"other.example")).is_none());
    }
}
