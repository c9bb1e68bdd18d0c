//! A site at run time: its settings, its origin, and the snapshot of robots.txt in force.
//!
//! A [`Snapshot`] is everything a request needs to be decided — the compiled robots.txt, the
//! classifier for its crawlers, the labels for metrics — built off the request path and swapped
//! in whole with arc-swap, so that no request ever sees half a reload.

use super::config::{OnUnreachable, RobotsSource, SiteSettings, UpstreamAddr};
use super::ua_memo::{self, Class};
use crate::agent::{Classifier, ClassifierError, Identity, KnownAgent};
use crate::catalog::Catalog;
use crate::policy::Action;
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

/// How many tokens named only by a site's robots.txt (or its `bots:` overrides) get a metric
/// label of their own; the rest are labelled `other`, so that a hostile file cannot blow up the
/// number of series.
pub const MAX_SITE_TOKEN_LABELS: usize = 100;

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

/// The catalog's crawlers, classified by one automaton that every site shares: a site pays only
/// for the tokens its own robots.txt and overrides add.
#[derive(Debug)]
pub struct CatalogIndex {
    /// The catalog.
    pub catalog: Catalog,
    classifier: Arc<Classifier>,
    /// Each catalog agent's token as written and lower-cased.
    tokens: Vec<(Arc<str>, Arc<str>)>,
}

impl CatalogIndex {
    /// Builds the shared automaton over a catalog.
    pub fn new(catalog: Catalog) -> Result<CatalogIndex, ClassifierError> {
        let classifier = Arc::new(Classifier::new(catalog.known_agents())?);
        let tokens = token_pairs(classifier.agents());
        Ok(CatalogIndex {
            catalog,
            classifier,
            tokens,
        })
    }

    fn knows(&self, token: &str) -> bool {
        self.tokens
            .iter()
            .any(|(written, _)| written.eq_ignore_ascii_case(token))
    }
}

fn token_pairs(agents: &[KnownAgent]) -> Vec<(Arc<str>, Arc<str>)> {
    agents
        .iter()
        .map(|agent| {
            (
                Arc::from(agent.token.as_str()),
                Arc::from(agent.token.to_ascii_lowercase()),
            )
        })
        .collect()
}

/// Everything a request of one site is decided with, built at once and swapped in whole.
#[derive(Debug)]
pub struct Snapshot {
    /// Unique in the process: the key of the User-Agent memo.
    id: u64,
    /// The compiled robots.txt in force (or its stand-in).
    pub robots: Robots,
    /// The catalog's crawlers (shared by every site).
    catalog: Arc<Classifier>,
    /// Tokens the file and the overrides name that the catalog does not: this site's own.
    extras: Option<Classifier>,
    /// Per agent, catalog first then extras: token as written and lower-cased, metric label,
    /// and action (its override, else the site's).
    tokens: Vec<(Arc<str>, Arc<str>)>,
    bot_labels: Vec<Arc<str>>,
    actions: Vec<Action>,
    /// The site's action, for unnamed crawlers.
    site_action: Action,
    unnamed_label: Arc<str>,
    person_label: Arc<str>,
    no_token: Arc<str>,
    /// The bytes as loaded (empty for a stand-in).
    pub bytes: Bytes,
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
        let robots = match state {
            SourceState::Loaded => Robots::parse_with(&bytes, options),
            SourceState::Unavailable => Robots::parse(b""),
            SourceState::Unreachable | SourceState::Pending if stand_in_disallows => {
                Robots::parse(DISALLOW_ALL)
            }
            SourceState::Unreachable | SourceState::Pending => Robots::parse(b""),
        };
        let named: Vec<KnownAgent> = robots
            .file()
            .groups
            .iter()
            .flat_map(|group| group.agents.iter())
            .chain(site.bot_tokens.iter())
            .filter(|token| !catalog.knows(token))
            .map(|token| KnownAgent::unlisted(token))
            .collect();
        let extras = if named.is_empty() {
            None
        } else {
            Some(Classifier::new(named)?)
        };
        let mut tokens = catalog.tokens.clone();
        if let Some(extras) = &extras {
            tokens.extend(token_pairs(extras.agents()));
        }
        let catalog_len = catalog.tokens.len();
        let other: Arc<str> = Arc::from("other");
        let bot_labels = tokens
            .iter()
            .enumerate()
            .map(|(index, (written, _))| {
                if index < catalog_len + MAX_SITE_TOKEN_LABELS {
                    written.clone()
                } else {
                    other.clone()
                }
            })
            .collect();
        let actions = tokens
            .iter()
            .map(|(_, lower)| site.action_for(lower))
            .collect();
        let sha256 = hex(&Sha256::digest(&bytes));
        LIVE_SNAPSHOTS.fetch_add(1, Ordering::Relaxed);
        Ok(Snapshot {
            id: NEXT_SNAPSHOT_ID.fetch_add(1, Ordering::Relaxed),
            robots,
            catalog: catalog.classifier.clone(),
            extras,
            tokens,
            bot_labels,
            actions,
            site_action: site.action,
            unnamed_label: Arc::from("unnamed"),
            person_label: Arc::from("person"),
            no_token: Arc::from(""),
            fetched_at: None,
            restored: false,
            bytes,
            sha256,
            loaded_at: SystemTime::now(),
            state,
        })
    }

    /// Classifies a User-Agent against the catalog and this site's own tokens: the longest
    /// known token wins, as within one automaton. Recent headers are answered from the worker
    /// thread's memo ([`ua_memo`]).
    pub fn classify<'a>(&'a self, user_agent: &[u8]) -> Identity<'a> {
        let class = ua_memo::classify_memoized(self.id, user_agent, || {
            match self.classify_afresh(user_agent) {
                Identity::Crawler { index, .. } => Class::Crawler(index),
                Identity::Unnamed => Class::Unnamed,
                Identity::Person => Class::Person,
            }
        });
        match class {
            Class::Crawler(index) => match self.agent(index) {
                Some(agent) => Identity::Crawler { index, agent },
                None => Identity::Unnamed,
            },
            Class::Unnamed => Identity::Unnamed,
            Class::Person => Identity::Person,
        }
    }

    /// Agent `index`: the catalog's first, then this site's own.
    fn agent(&self, index: usize) -> Option<&KnownAgent> {
        let catalog = self.catalog.agents();
        match catalog.get(index) {
            Some(agent) => Some(agent),
            None => self
                .extras
                .as_ref()
                .and_then(|extras| extras.agents().get(index - catalog.len())),
        }
    }

    /// [`Snapshot::classify`] without the memo.
    pub fn classify_afresh<'a>(&'a self, user_agent: &[u8]) -> Identity<'a> {
        let from_catalog = self.catalog.classify(user_agent);
        let Some(extras) = &self.extras else {
            return from_catalog;
        };
        let offset = self.catalog.agents().len();
        match (from_catalog, extras.classify(user_agent)) {
            (
                Identity::Crawler { index, agent },
                Identity::Crawler {
                    agent: own,
                    index: own_index,
                },
            ) if own.token.len() > agent.token.len() => {
                let _ = index;
                Identity::Crawler {
                    index: offset + own_index,
                    agent: own,
                }
            }
            (catalog @ Identity::Crawler { .. }, _) => catalog,
            (_, Identity::Crawler { index, agent }) => Identity::Crawler {
                index: offset + index,
                agent,
            },
            (Identity::Unnamed, _) | (_, Identity::Unnamed) => Identity::Unnamed,
            _ => Identity::Person,
        }
    }

    /// The metric label for an identity.
    pub fn bot_label(&self, identity: &Identity<'_>) -> &Arc<str> {
        match identity {
            Identity::Crawler { index, .. } => {
                self.bot_labels.get(*index).unwrap_or(&self.unnamed_label)
            }
            Identity::Unnamed => &self.unnamed_label,
            Identity::Person => &self.person_label,
        }
    }

    /// The token robots.txt is read with for an identity (`""` reads the `*` group), and its
    /// lower-cased form.
    pub fn token(&self, identity: &Identity<'_>) -> (&Arc<str>, &Arc<str>) {
        match identity {
            Identity::Crawler { index, .. } => match self.tokens.get(*index) {
                Some((written, lower)) => (written, lower),
                None => (&self.no_token, &self.no_token),
            },
            Identity::Unnamed | Identity::Person => (&self.no_token, &self.no_token),
        }
    }

    /// The action configured for an identity's disallowed requests.
    pub fn action(&self, identity: &Identity<'_>) -> Action {
        match identity {
            Identity::Crawler { index, .. } => self
                .actions
                .get(*index)
                .copied()
                .unwrap_or(self.site_action),
            Identity::Unnamed | Identity::Person => self.site_action,
        }
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

    /// The site for a Host header value (port, case and a trailing dot ignored).
    pub fn route(&self, host: Option<&[u8]>) -> Option<&Arc<Site>> {
        let named = host.and_then(|host| {
            let host = std::str::from_utf8(host).ok()?;
            let without_port = match host.rsplit_once(':') {
                Some((name, port)) if !name.ends_with(']') || host.starts_with('[') => {
                    if port.bytes().all(|b| b.is_ascii_digit()) {
                        name
                    } else {
                        host
                    }
                }
                _ => host,
            };
            let name = without_port.trim_end_matches('.');
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

    #[test]
    fn tokens_from_the_file_and_overrides_are_known_crawlers() {
        let site = settings(
            "inline: \"User-agent: FooCrawler\\nDisallow: /\\n\"",
            "    bots: {BarAgent: tag}\n",
        );
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let site = Site::new(site, &catalog).unwrap();
        let snapshot = site.snapshot.load();
        let identity = snapshot.classify(b"FooCrawler/1.0");
        assert_eq!(&**snapshot.bot_label(&identity), "FooCrawler");
        assert_eq!(snapshot.action(&identity), Action::Block);
        let identity = snapshot.classify(b"BarAgent");
        assert_eq!(&**snapshot.bot_label(&identity), "BarAgent");
        assert_eq!(snapshot.action(&identity), Action::Tag);
        let identity = snapshot.classify(b"Mozilla/5.0 (compatible; GPTBot/1.2)");
        assert_eq!(&**snapshot.bot_label(&identity), "GPTBot");
        // A site token longer than a catalog token in the same header wins, as in one automaton.
        let identity = snapshot.classify(b"GPTBot/1.0 FooCrawler/2.0");
        assert_eq!(&**snapshot.bot_label(&identity), "FooCrawler");
        assert_eq!(&**snapshot.bot_label(&Identity::Person), "person");
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
        let after = build("User-agent: FooCrawler-Pro\nUser-agent: Zed\nDisallow: /\n");
        let headers: [&[u8]; 6] = [
            b"FooCrawler-Pro/1.0",
            b"FooCrawler/1.0 Zed",
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
    fn labels_for_file_tokens_are_capped() {
        let mut text = String::new();
        for i in 0..(MAX_SITE_TOKEN_LABELS + 20) {
            let token: String = format!("{i:04}")
                .bytes()
                .map(|b| char::from(b'a' + b - b'0'))
                .collect();
            text.push_str(&format!("User-agent: zz{token}\n"));
        }
        text.push_str("Disallow: /\n");
        let catalog = CatalogIndex::new(Catalog::embedded().unwrap()).unwrap();
        let snapshot = Snapshot::build(
            &settings("origin: true", ""),
            &catalog,
            Bytes::from(text),
            SourceState::Loaded,
        )
        .unwrap();
        let first = snapshot.classify(b"zzaaaa");
        assert_eq!(&**snapshot.bot_label(&first), "zzaaaa");
        let last = snapshot.classify(b"zzabbj");
        assert_eq!(&**snapshot.bot_label(&last), "other");
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
        let only_a = Sites::new(vec![sites.all[0].clone()]);
        assert!(only_a.route(Some(b"other.example")).is_none());
    }
}
