//! Configuration: the YAML a user writes ([`ConfigFile`]) apart from the validated settings the
//! proxy runs on ([`Settings`]), built by a function that reports every error with its key and
//! line, and what would be valid.

use crate::agent::Category;
use crate::policy::{Action, Actions};
use crate::robots::token::is_product_token;
use crate::robots::DEFAULT_MAX_BYTES;
use serde::{Deserialize, Deserializer};
use std::collections::{BTreeMap, HashMap};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A configuration that cannot be used: what is wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ConfigError {
    /// The file (or `flags`).
    pub origin: String,
    /// The 1-based line, when the error has one.
    pub line: Option<usize>,
    /// The key, what is wrong, and what would be valid.
    pub message: String,
}

// ---------------------------------------------------------------------------------------------
// The file as written.

/// The YAML configuration file as written. Unknown keys are errors.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Plain-HTTP listening addresses.
    #[serde(default)]
    pub listen: Vec<Addr>,
    /// TLS listening addresses with their certificate and key.
    #[serde(default)]
    pub tls_listen: Vec<TlsListenFile>,
    /// The metrics listener (`/metrics` and `/healthz`).
    pub metrics: Option<MetricsFile>,
    /// JSON-lines access log of crawler requests: a file, or `-` for standard output.
    pub access_log: Option<String>,
    /// A crawler catalog to use instead of the embedded one.
    pub catalog: Option<PathBuf>,
    /// The sites, chosen by Host header.
    #[serde(default)]
    pub sites: Vec<SiteFile>,
    /// Settings passed to pingora's server.
    #[serde(default)]
    pub pingora: PingoraFile,
    /// Proxies in front of crawlgate, and the one header they write the client's address in.
    #[serde(default, deserialize_with = "trusted_proxies_either")]
    pub trusted_proxies: TrustedProxiesFile,
    /// Where origins' last good robots.txt answers are kept across restarts.
    pub state_dir: Option<PathBuf>,
    /// How crawlers' claims are checked.
    pub verification: Option<VerificationFile>,
    /// Crawl-delay and robots.txt-reading memory.
    pub politeness: Option<PolitenessFile>,
}

/// A network in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`) or a single address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network(pub ipnet::IpNet);

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let parsed = text
            .parse::<ipnet::IpNet>()
            .or_else(|_| text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from));
        parsed.map(Network).map_err(|_| {
            serde::de::Error::custom(format!(
                "`{text}` is not a network: write it like 10.0.0.0/8, 192.0.2.1 or 2001:db8::/32"
            ))
        })
    }
}

/// `trusted_proxies:` as written: `{networks: [...], header: NAME}` naming the one header they
/// write, or a plain list of networks (whose proxies write `X-Forwarded-For`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedProxiesFile {
    /// The proxies' networks.
    pub networks: Vec<Network>,
    /// The header they write (default `x-forwarded-for`).
    pub header: Option<String>,
}

/// Reads `trusted_proxies:` in either form.
fn trusted_proxies_either<'de, D: Deserializer<'de>>(d: D) -> Result<TrustedProxiesFile, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = TrustedProxiesFile;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of networks, or {networks: [10.0.0.0/8], header: x-forwarded-for}")
        }
        fn visit_seq<S: serde::de::SeqAccess<'de>>(
            self,
            seq: S,
        ) -> Result<TrustedProxiesFile, S::Error> {
            let networks =
                Vec::<Network>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
            Ok(TrustedProxiesFile {
                networks,
                header: None,
            })
        }
        fn visit_map<M: serde::de::MapAccess<'de>>(
            self,
            map: M,
        ) -> Result<TrustedProxiesFile, M::Error> {
            TrustedProxiesFile::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(Visitor)
}

/// Where a crawler's published ranges are: a file, or `{file, url}` for `crawlgate ranges update`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangesSpec {
    /// The JSON file the proxy reads (and watches).
    pub file: PathBuf,
    /// Where `crawlgate ranges update` fetches it (default: the catalog's `ranges_url`).
    pub url: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RangesSpecMap {
    file: PathBuf,
    url: Option<String>,
}

impl<'de> Deserialize<'de> for RangesSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RangesSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a file path, or {file: PATH, url: URL}")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<RangesSpec, E> {
                Ok(RangesSpec {
                    file: PathBuf::from(text),
                    url: None,
                })
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                map: M,
            ) -> Result<RangesSpec, M::Error> {
                let spec =
                    RangesSpecMap::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RangesSpec {
                    file: spec.file,
                    url: spec.url,
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `verification:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerificationFile {
    /// Published IP ranges per crawler.
    #[serde(default)]
    pub ranges: BTreeMap<Token, RangesSpec>,
    /// Reverse-DNS domains per crawler (forward-confirmed). The catalog's apply without this;
    /// a list here replaces a crawler's, and `[]` turns them off.
    #[serde(default)]
    pub reverse_dns: BTreeMap<Token, Vec<String>>,
    /// What to do with a crawler whose claim is refuted (default block).
    pub on_spoofed: Option<Action>,
    /// The resolver.
    #[serde(default)]
    pub dns: DnsFile,
}

/// `verification.dns:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DnsFile {
    /// How long a request may wait for a lookup (default 50ms).
    pub budget: Option<HumanDuration>,
    /// How long a lookup may take in all (default 2s).
    pub timeout: Option<HumanDuration>,
    /// A name server `IP:PORT` instead of the system's.
    pub server: Option<Addr>,
    /// Answers cached (default 100000).
    pub cache_size: Option<Entries>,
    /// How long a verified address is believed (default 1h).
    pub positive_ttl: Option<HumanDuration>,
    /// How long a spoofed address is remembered (default 10m).
    pub negative_ttl: Option<HumanDuration>,
}

/// `politeness:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolitenessFile {
    /// Crawlers and clients remembered, per kind of state (default 100000).
    pub max_tracked: Option<Entries>,
    /// A crawler that has not fetched robots.txt for this long is `robots_unread` (default 24h).
    pub robots_read_window: Option<HumanDuration>,
    /// A crawler that read the previous robots.txt this recently is judged by it (default 24h).
    pub grace: Option<HumanDuration>,
}

/// What to do when a crawler comes sooner than its crawl-delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrawlDelayMode {
    /// Answer 429 with Retry-After.
    Enforce,
    /// Forward with `X-Crawlgate-Crawl-Delay: exceeded`.
    Tag,
    /// Forward; count it.
    Count,
    /// Do not look.
    Off,
}

impl CrawlDelayMode {
    /// The value as written.
    pub fn as_str(self) -> &'static str {
        match self {
            CrawlDelayMode::Enforce => "enforce",
            CrawlDelayMode::Tag => "tag",
            CrawlDelayMode::Count => "count",
            CrawlDelayMode::Off => "off",
        }
    }
}

/// The shortest and the longest `refresh` of a robots.txt fetched from the origin.
const MIN_REFRESH: Duration = Duration::from_secs(1);
const MAX_REFRESH: Duration = Duration::from_secs(24 * 3600);

/// A `host:port` or `ip:port` listening address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addr(pub SocketAddr);

impl<'de> Deserialize<'de> for Addr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map(Addr).map_err(|_| {
            serde::de::Error::custom(format!(
                "`{text}` is not a listening address: expected IP:PORT, such as 0.0.0.0:8080 or [::]:8080"
            ))
        })
    }
}

/// The longest duration any key takes: no arithmetic on a configured duration can overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// A duration written the human way: `60s`, `5m`, `1h 30m`, `250ms`; at most a year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Checked inside the visitor, so that the error carries the value's own line and key.
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = HumanDuration;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a duration such as 60s, 5m or 250ms")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<HumanDuration, E> {
                let duration = humantime::parse_duration(text).map_err(|e| {
                    E::custom(format!(
                        "`{text}` is not a duration ({e}): write it like 60s, 5m or 250ms"
                    ))
                })?;
                if duration > MAX_DURATION {
                    return Err(E::custom(format!(
                        "`{text}` is longer than a year, the longest duration any key takes"
                    )));
                }
                Ok(HumanDuration(duration))
            }
        }
        d.deserialize_str(Visitor)
    }
}

/// A whole number within `MIN..=MAX`, checked where it is written, so that no size or count
/// from a configuration can exhaust memory or overflow arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounded<const MIN: u64, const MAX: u64>(pub u64);

impl<const MIN: u64, const MAX: u64> Bounded<MIN, MAX> {
    /// The value as a `usize` (the bounds are chosen to fit one).
    pub fn get(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Bounded<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Checked inside the visitor, so that the error carries the value's own line and key.
        struct Visitor<const MIN: u64, const MAX: u64>;
        impl<const MIN: u64, const MAX: u64> serde::de::Visitor<'_> for Visitor<MIN, MAX> {
            type Value = Bounded<MIN, MAX>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "a whole number from {MIN} to {MAX}")
            }
            fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Self::Value, E> {
                if (MIN..=MAX).contains(&value) {
                    Ok(Bounded(value))
                } else {
                    Err(E::custom(format!(
                        "{value} is out of range: use {MIN} to {MAX}"
                    )))
                }
            }
            fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Self::Value, E> {
                match u64::try_from(value) {
                    Ok(value) => self.visit_u64(value),
                    Err(_) => Err(E::custom(format!(
                        "{value} is out of range: use {MIN} to {MAX}"
                    ))),
                }
            }
        }
        d.deserialize_u64(Visitor::<MIN, MAX>)
    }
}

/// Entries of a cache or table: up to a hundred million.
pub type Entries = Bounded<1, 100_000_000>;

/// A TLS listener.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsListenFile {
    /// The address.
    pub addr: Addr,
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// The metrics listener.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsFile {
    /// Where `/metrics` and `/healthz` are served.
    pub listen: Addr,
}

/// A crawler's product token (`GPTBot`), or the name a catalog gives it (`MJ12bot`), used as a
/// key (`bots:`, `verification:`), checked to be one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Token(pub String);

impl Token {
    /// Whether it is a product token (a name such as `MJ12bot` is not): only product tokens
    /// name crawlers the catalog does not know.
    pub fn is_product_token(&self) -> bool {
        is_product_token(&self.0)
    }
}

impl<'de> Deserialize<'de> for Token {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let name = text.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if is_product_token(&text) || name {
            Ok(Token(text))
        } else {
            Err(serde::de::Error::custom(format!(
                "`{text}` is not a product token: use letters, `-` and `_` only, such as GPTBot (or a catalog name such as MJ12bot)"
            )))
        }
    }
}

/// One site.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteFile {
    /// The site label in metrics: letters, digits, `.`, `_`, `-`.
    pub name: String,
    /// Host header values that select this site; absent means any host.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The origin, `host:port`.
    pub upstream: String,
    /// Whether the origin speaks TLS.
    #[serde(default)]
    pub tls: bool,
    /// The SNI (and certificate name) for a TLS origin; default the upstream's host.
    pub sni: Option<String>,
    /// Where robots.txt comes from and how it is kept fresh.
    pub robots: RobotsFile,
    /// What to do with crawler requests that robots.txt disallows.
    #[serde(default = "default_action")]
    pub action: Action,
    /// Per-category actions, such as `{ai-training: block, seo: tag, http-library: count}`.
    #[serde(default)]
    pub categories: BTreeMap<Category, Action>,
    /// Per-crawler overrides of `action` and `categories`.
    #[serde(default)]
    pub bots: BTreeMap<Token, Action>,
    /// The block response.
    #[serde(default)]
    pub block: BlockFile,
    /// The tag headers.
    #[serde(default)]
    pub tag: TagFile,
    /// What to do when a crawler comes sooner than robots.txt's crawl-delay (default count).
    pub crawl_delay: Option<CrawlDelayMode>,
    /// How long the origin may stay silent while answering (default 60s); then 504.
    pub upstream_timeout: Option<HumanDuration>,
}

fn default_action() -> Action {
    Action::Block
}

/// What to do when the origin's robots.txt is unreachable (5xx or network error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnUnreachable {
    /// Keep enforcing the last good file; with none yet, disallow everything (RFC 9309 §2.3.1.4).
    KeepLast,
    /// Disallow everything, as RFC 9309 says a crawler must assume.
    DisallowAll,
    /// Allow everything.
    AllowAll,
}

/// Where robots.txt comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotsFile {
    /// A file, watched for changes.
    pub file: Option<PathBuf>,
    /// `true`: fetched from the origin's `/robots.txt` every `refresh`.
    pub origin: Option<bool>,
    /// The text itself.
    pub inline: Option<String>,
    /// How often the origin's file is fetched again.
    pub refresh: Option<HumanDuration>,
    /// How long one fetch from the origin may take.
    pub timeout: Option<HumanDuration>,
    /// The parse limit in bytes (RFC 9309: at least 500 KiB).
    pub max_bytes: Option<Bounded<1, { 64 << 20 }>>,
    /// What an unreachable origin means.
    pub on_unreachable: Option<OnUnreachable>,
}

/// The block response.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockFile {
    /// The HTTP status: 4xx or 5xx, default 403.
    #[serde(default = "default_block_status")]
    pub status: u16,
}

impl Default for BlockFile {
    fn default() -> Self {
        BlockFile {
            status: default_block_status(),
        }
    }
}

fn default_block_status() -> u16 {
    403
}

/// The tag headers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagFile {
    /// The prefix of the verdict headers, default `X-Crawlgate-`.
    #[serde(default = "default_tag_prefix")]
    pub prefix: String,
}

impl Default for TagFile {
    fn default() -> Self {
        TagFile {
            prefix: default_tag_prefix(),
        }
    }
}

/// The prefix of crawlgate's own headers, which clients may never send upstream.
pub const DEFAULT_TAG_PREFIX: &str = "X-Crawlgate-";

fn default_tag_prefix() -> String {
    DEFAULT_TAG_PREFIX.to_owned()
}

/// Settings passed to pingora's server.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PingoraFile {
    /// Worker threads per service (default: the number of CPUs).
    pub threads: Option<Bounded<1, 1024>>,
    /// Seconds to drain connections on SIGTERM before exiting (default 5).
    pub grace_period_seconds: Option<Bounded<0, 3600>>,
    /// Whether idle worker threads steal tasks from busy ones (default true).
    pub work_stealing: Option<bool>,
    /// Idle upstream connections kept for reuse (default 128).
    pub upstream_keepalive_pool_size: Option<Bounded<0, 1_000_000>>,
    /// Accept tasks per listening socket (default 1).
    pub listener_tasks_per_fd: Option<Bounded<1, 1024>>,
    /// Bytes of read buffer per client connection (default 16384; pingora's own is 65536).
    pub read_buffer_bytes: Option<Bounded<1024, { 16 << 20 }>>,
}

// ---------------------------------------------------------------------------------------------
// The settings the proxy runs on.

/// Where the access log goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessLogTarget {
    /// Standard output.
    Stdout,
    /// A file, appended to.
    File(PathBuf),
}

/// A TLS listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsListen {
    /// The address.
    pub addr: SocketAddr,
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
}

/// Where a site's robots.txt comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RobotsSource {
    /// A file on disk, watched.
    File(PathBuf),
    /// The origin's `/robots.txt`, fetched every `refresh`.
    Origin,
    /// Text from the configuration.
    Inline(String),
}

/// How a site's robots.txt is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotsSettings {
    /// The source.
    pub source: RobotsSource,
    /// Origin re-fetch period.
    pub refresh: Duration,
    /// Origin fetch timeout.
    pub timeout: Duration,
    /// The parse limit.
    pub max_bytes: usize,
    /// What an unreachable origin means.
    pub on_unreachable: OnUnreachable,
}

/// How to reach a site's origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamAddr {
    /// `host:port`, resolved when the settings are built.
    Tcp(String),
    /// A Unix socket (the embedded demo site).
    Unix(PathBuf),
}

/// A site's origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Where it listens.
    pub addr: UpstreamAddr,
    /// The resolved socket address of a TCP origin.
    pub resolved: Option<SocketAddr>,
    /// Whether it speaks TLS.
    pub tls: bool,
    /// SNI and certificate name for TLS; the Host for robots.txt fetches.
    pub sni: String,
}

/// One site, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSettings {
    /// The metrics label.
    pub name: String,
    /// Host header values (lower-case, without port); empty means any host.
    pub hosts: Vec<String>,
    /// The origin.
    pub upstream: Upstream,
    /// The robots.txt source.
    pub robots: RobotsSettings,
    /// The action for disallowed crawler requests.
    pub action: Action,
    /// Per-category actions (`http-library` is `count` unless given here).
    pub category_actions: BTreeMap<Category, Action>,
    /// Per-crawler overrides, by lower-cased token or catalog name.
    pub bot_actions: HashMap<String, Action>,
    /// The product tokens of the overrides as written (they are known tokens even if nothing
    /// else names them).
    pub bot_tokens: Vec<String>,
    /// The block status.
    pub block_status: u16,
    /// The tag header prefix.
    pub tag_prefix: String,
    /// What to do when a crawler comes sooner than its crawl-delay.
    pub crawl_delay: CrawlDelayMode,
    /// How long the origin may stay silent while answering.
    pub upstream_timeout: Duration,
}

impl SiteSettings {
    /// The site's actions: per crawler, per category, and its own (see [`Actions`]).
    pub fn actions(&self) -> Actions {
        Actions {
            site: self.action,
            categories: self.category_actions.clone(),
            crawlers: self.bot_actions.clone(),
        }
    }
}

/// Pingora's server settings, with crawlgate's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PingoraSettings {
    /// Worker threads per service.
    pub threads: usize,
    /// SIGTERM drain period, seconds.
    pub grace_period_seconds: u64,
    /// Work stealing between worker threads.
    pub work_stealing: bool,
    /// Idle upstream connections kept.
    pub upstream_keepalive_pool_size: usize,
    /// Accept tasks per listening socket.
    pub listener_tasks_per_fd: usize,
    /// Bytes of read buffer per client connection.
    pub read_buffer_bytes: usize,
}

/// The read buffer of a client connection: one TLS record, and room for any ordinary request
/// header, at a quarter of pingora's default memory per idle connection.
pub const DEFAULT_READ_BUFFER_BYTES: usize = 16 * 1024;

/// Everything the proxy runs on, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Plain-HTTP listeners.
    pub listen: Vec<SocketAddr>,
    /// TLS listeners.
    pub tls_listen: Vec<TlsListen>,
    /// The metrics listener.
    pub metrics_listen: Option<SocketAddr>,
    /// The access log.
    pub access_log: Option<AccessLogTarget>,
    /// A catalog file instead of the embedded one.
    pub catalog: Option<PathBuf>,
    /// The sites.
    pub sites: Vec<SiteSettings>,
    /// Pingora's settings.
    pub pingora: PingoraSettings,
    /// Proxies whose forwarding header is believed, and that header.
    pub trusted_proxies: super::client::TrustedProxies,
    /// Where origins' last good robots.txt answers are kept (`None`: not kept).
    pub state_dir: Option<PathBuf>,
    /// How crawlers are verified.
    pub verification: VerificationSettings,
    /// Politeness memory.
    pub politeness: PolitenessSettings,
}

/// How crawlers are verified, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerificationSettings {
    /// Published ranges per crawler token (as written).
    pub ranges: Vec<(String, RangesSpec)>,
    /// Reverse-DNS domains per crawler token (as written), replacing the catalog's (an empty
    /// list turns them off).
    pub reverse_dns: Vec<(String, Vec<String>)>,
    /// What a spoofed crawler gets.
    pub on_spoofed: Action,
    /// The resolver.
    pub dns: super::verify::dns::DnsSettings,
}

impl Default for VerificationSettings {
    fn default() -> Self {
        VerificationSettings {
            ranges: Vec::new(),
            reverse_dns: Vec::new(),
            on_spoofed: Action::Block,
            dns: super::verify::dns::DnsSettings::default(),
        }
    }
}

/// Politeness memory, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolitenessSettings {
    /// Crawlers and clients remembered per kind of state.
    pub max_tracked: u64,
    /// How long a robots.txt fetch counts as "read".
    pub robots_read_window: Duration,
    /// How long a crawler that read the previous file is judged by it.
    pub grace: Duration,
}

impl Default for PolitenessSettings {
    fn default() -> Self {
        PolitenessSettings {
            max_tracked: 100_000,
            robots_read_window: Duration::from_secs(24 * 3600),
            grace: Duration::from_secs(24 * 3600),
        }
    }
}

const DEFAULT_REFRESH: Duration = Duration::from_secs(60);
const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// `text` with every YAML line break (CR LF, CR, NEL, LS, PS) written as LF.
fn normalise_line_breaks(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let unified = text
        .replace("\r\n", "\n")
        .replace(['\r', '\u{85}', '\u{2028}', '\u{2029}'], "\n");
    std::borrow::Cow::Owned(unified)
}

/// Finds the line of the `nth` (0-based) line of `text` that contains `needle`, for errors found
/// after parsing (serde_yaml keeps no positions in parsed values).
fn line_of(text: &str, needle: &str, nth: usize) -> Option<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.contains(needle))
        .nth(nth)
        .map(|(index, _)| index + 1)
}

/// Finds the line of `needle` within the `site`-th item of the block-style `sites:` list (or the
/// item's first line when the needle is not in it).
fn site_line(text: &str, site: usize, needle: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.starts_with("sites:"))?;
    let mut items = Vec::new();
    let mut item_indent = None;
    let mut end = lines.len();
    for (number, line) in lines.iter().enumerate().skip(start + 1) {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        if indent == 0 && !trimmed.starts_with('-') {
            end = number;
            break;
        }
        if trimmed.starts_with('-') && *item_indent.get_or_insert(indent) == indent {
            items.push(number);
        }
    }
    let from = *items.get(site)?;
    let to = items.get(site + 1).copied().unwrap_or(end);
    let offset = lines[from..to]
        .iter()
        .position(|l| l.contains(needle))
        .unwrap_or(0);
    Some(from + offset + 1)
}

/// Builds validated settings from a file's parsed content and text.
struct Validator<'a> {
    origin: &'a str,
    text: &'a str,
    base: &'a Path,
    /// Whether upstream host names are resolved (the proxy and `validate`), or only checked
    /// for their form (fuzzing, tools that must not touch the network).
    resolve: bool,
}

impl Validator<'_> {
    fn error(&self, needle: Option<(&str, usize)>, message: String) -> ConfigError {
        ConfigError {
            origin: self.origin.to_owned(),
            line: needle.and_then(|(needle, nth)| line_of(self.text, needle, nth)),
            message,
        }
    }

    /// An error about the `site`-th site, placed at the line of `needle` within it.
    fn site_error(&self, site: usize, needle: &str, message: String) -> ConfigError {
        ConfigError {
            origin: self.origin.to_owned(),
            line: site_line(self.text, site, needle),
            message,
        }
    }

    /// Relative paths in a configuration file are relative to the file's folder.
    fn path(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.base.join(path)
        }
    }

    fn settings(&self, file: ConfigFile) -> Result<Settings, ConfigError> {
        if file.sites.is_empty() {
            return Err(self.error(
                Some(("sites", 0)),
                "sites: at least one site is needed (name, upstream, robots)".into(),
            ));
        }
        if file.listen.is_empty() && file.tls_listen.is_empty() {
            return Err(self.error(
                None,
                "listen: give at least one address in `listen` or `tls_listen`, such as listen: [\"0.0.0.0:8080\"]".into(),
            ));
        }
        let mut tls_listen = Vec::new();
        for (i, tls) in file.tls_listen.iter().enumerate() {
            for (what, path) in [("cert", &tls.cert), ("key", &tls.key)] {
                let resolved = self.path(path);
                if let Err(e) = std::fs::metadata(&resolved) {
                    let shown = path.display().to_string();
                    return Err(self.error(
                        Some((&shown, 0)),
                        format!(
                            "tls_listen[{i}].{what}: cannot read `{}`: {e}",
                            resolved.display()
                        ),
                    ));
                }
            }
            tls_listen.push(TlsListen {
                addr: tls.addr.0,
                cert: self.path(&tls.cert),
                key: self.path(&tls.key),
            });
        }
        let access_log = file.access_log.as_deref().map(|target| match target {
            "-" => AccessLogTarget::Stdout,
            path => AccessLogTarget::File(self.path(Path::new(path))),
        });
        let mut sites = Vec::new();
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut hosts: HashMap<String, usize> = HashMap::new();
        let mut catch_all: Option<usize> = None;
        for (i, site) in file.sites.into_iter().enumerate() {
            let site = self.site(i, site)?;
            if let Some(first) = names.insert(site.name.clone(), i) {
                return Err(self.site_error(
                    i,
                    "name:",
                    format!("sites[{i}].name: `{}` is already the name of sites[{first}]; names label metrics and must differ", site.name),
                ));
            }
            if site.hosts.is_empty() {
                if let Some(first) = catch_all.replace(i) {
                    return Err(self.site_error(
                        i,
                        "name:",
                        format!("sites[{i}].hosts: sites[{first}] already serves any host; give this site `hosts`"),
                    ));
                }
            }
            for host in &site.hosts {
                if let Some(first) = hosts.insert(host.clone(), i) {
                    return Err(self.site_error(
                        i,
                        host,
                        format!("sites[{i}].hosts: `{host}` is already a host of sites[{first}]"),
                    ));
                }
            }
            sites.push(site);
        }
        let pingora = &file.pingora;
        let threads = pingora.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            Bounded::get,
        );
        let verification = self.verification(file.verification.unwrap_or_default())?;
        let politeness = file.politeness.unwrap_or_default();
        let defaults = PolitenessSettings::default();
        let politeness = PolitenessSettings {
            max_tracked: politeness.max_tracked.map_or(defaults.max_tracked, |n| n.0),
            robots_read_window: politeness
                .robots_read_window
                .map_or(defaults.robots_read_window, |d| d.0),
            grace: politeness.grace.map_or(defaults.grace, |d| d.0),
        };
        let trusted_proxies = self.trusted_proxies(&file.trusted_proxies)?;
        // systemd's StateDirectory= sets STATE_DIRECTORY (colon-separated when it names several).
        let state_dir = match &file.state_dir {
            Some(dir) => Some(self.path(dir)),
            None => std::env::var_os("STATE_DIRECTORY")
                .and_then(|dirs| std::env::split_paths(&dirs).next())
                .filter(|dir| dir.is_absolute()),
        };
        if let Some(dir) = &state_dir {
            if dir.exists() && !dir.is_dir() {
                return Err(self.error(
                    Some(("state_dir", 0)),
                    format!("state_dir: `{}` exists and is not a folder", dir.display()),
                ));
            }
        }
        Ok(Settings {
            trusted_proxies,
            state_dir,
            verification,
            politeness,
            listen: file.listen.iter().map(|a| a.0).collect(),
            tls_listen,
            metrics_listen: file.metrics.map(|m| m.listen.0),
            access_log,
            catalog: file.catalog.as_deref().map(|p| self.path(p)),
            sites,
            pingora: PingoraSettings {
                threads,
                grace_period_seconds: pingora.grace_period_seconds.map_or(5, |n| n.0),
                work_stealing: pingora.work_stealing.unwrap_or(true),
                upstream_keepalive_pool_size: pingora
                    .upstream_keepalive_pool_size
                    .map_or(128, Bounded::get),
                listener_tasks_per_fd: pingora.listener_tasks_per_fd.map_or(1, Bounded::get),
                read_buffer_bytes: pingora
                    .read_buffer_bytes
                    .map_or(DEFAULT_READ_BUFFER_BYTES, Bounded::get),
            },
        })
    }

    fn trusted_proxies(
        &self,
        file: &TrustedProxiesFile,
    ) -> Result<super::client::TrustedProxies, ConfigError> {
        let header = match &file.header {
            None => super::client::ForwardingHeader::default(),
            Some(name) => super::client::ForwardingHeader::named(name).ok_or_else(|| {
                self.error(
                    Some(("header:", 0)),
                    format!("trusted_proxies.header: `{name}` is not a header name: write the one your proxies set, such as x-forwarded-for, forwarded or x-real-ip"),
                )
            })?,
        };
        Ok(super::client::TrustedProxies::new(
            file.networks.iter().map(|n| n.0).collect(),
            header,
        ))
    }

    fn verification(&self, file: VerificationFile) -> Result<VerificationSettings, ConfigError> {
        let defaults = super::verify::dns::DnsSettings::default();
        let dns = super::verify::dns::DnsSettings {
            budget: file.dns.budget.map_or(defaults.budget, |d| d.0),
            lookup_timeout: file.dns.timeout.map_or(defaults.lookup_timeout, |d| d.0),
            positive_ttl: file.dns.positive_ttl.map_or(defaults.positive_ttl, |d| d.0),
            negative_ttl: file.dns.negative_ttl.map_or(defaults.negative_ttl, |d| d.0),
            error_ttl: defaults.error_ttl,
            cache_size: file.dns.cache_size.map_or(defaults.cache_size, |n| n.0),
            server: file.dns.server.map(|a| a.0),
        };
        for (token, domains) in &file.reverse_dns {
            // An empty list is allowed: it turns the catalog's domains off for that crawler.
            if domains
                .iter()
                .any(|d| d.trim_matches('.').is_empty() || d.contains(['/', ' ', ':']))
            {
                return Err(self.error(
                    Some((&token.0, 0)),
                    format!("verification.reverse_dns.{}: give domain names, such as [googlebot.com, google.com] ([] turns the catalog's off)", token.0),
                ));
            }
        }
        Ok(VerificationSettings {
            ranges: file
                .ranges
                .into_iter()
                .map(|(token, spec)| {
                    let file = self.path(&spec.file);
                    (
                        token.0,
                        RangesSpec {
                            file,
                            url: spec.url,
                        },
                    )
                })
                .collect(),
            reverse_dns: file
                .reverse_dns
                .into_iter()
                .map(|(t, d)| (t.0, d))
                .collect(),
            on_spoofed: file.on_spoofed.unwrap_or(Action::Block),
            dns,
        })
    }

    fn site(&self, i: usize, site: SiteFile) -> Result<SiteSettings, ConfigError> {
        if site.name.is_empty()
            || site.name.len() > 64
            || !site
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err(self.site_error(
                i,
                "name:",
                format!(
                    "sites[{i}].name: `{}` must be 1 to 64 letters, digits, `.`, `_` or `-`",
                    site.name
                ),
            ));
        }
        let mut hosts = Vec::new();
        for host in &site.hosts {
            let lower = host.trim().to_ascii_lowercase();
            if lower.is_empty() || lower.contains(['/', ' ', ':']) && !lower.starts_with('[') {
                return Err(self.site_error(
                    i,
                    host,
                    format!("sites[{i}].hosts: `{host}` is not a host name (no scheme, port or path: example.com)"),
                ));
            }
            hosts.push(lower);
        }
        let upstream = self.upstream(i, &site)?;
        let robots = self.robots(i, &site)?;
        if !(400..=599).contains(&site.block.status) {
            return Err(self.site_error(
                i,
                "status:",
                format!("sites[{i}].block.status: {} is not an error status: use 400 to 599 (403 by default)", site.block.status),
            ));
        }
        let prefix = &site.tag.prefix;
        if prefix.is_empty()
            || !prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(self.site_error(
                i,
                "prefix:",
                format!("sites[{i}].tag.prefix: `{prefix}` must be letters, digits and `-`, such as X-Crawlgate-"),
            ));
        }
        Ok(SiteSettings {
            name: site.name.clone(),
            hosts,
            upstream,
            robots,
            action: site.action,
            category_actions: site.categories.clone(),
            bot_actions: site
                .bots
                .iter()
                .map(|(token, action)| (token.0.to_ascii_lowercase(), *action))
                .collect(),
            bot_tokens: site
                .bots
                .keys()
                .filter(|token| token.is_product_token())
                .map(|t| t.0.clone())
                .collect(),
            block_status: site.block.status,
            tag_prefix: prefix.clone(),
            crawl_delay: site.crawl_delay.unwrap_or(CrawlDelayMode::Count),
            upstream_timeout: site
                .upstream_timeout
                .map_or(DEFAULT_UPSTREAM_TIMEOUT, |d| d.0),
        })
    }

    fn upstream(&self, i: usize, site: &SiteFile) -> Result<Upstream, ConfigError> {
        let host = match site.upstream.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                host.trim_start_matches('[').trim_end_matches(']')
            }
            _ => {
                return Err(self.site_error(
                    i,
                    "upstream:",
                    format!("sites[{i}].upstream: `{}` must be HOST:PORT, such as 127.0.0.1:8000 or origin.internal:443", site.upstream),
                ))
            }
        };
        if !self.resolve {
            return Ok(Upstream {
                addr: UpstreamAddr::Tcp(site.upstream.clone()),
                resolved: site.upstream.parse().ok(),
                tls: site.tls,
                sni: site.sni.clone().unwrap_or_else(|| host.to_owned()),
            });
        }
        let resolved = site
            .upstream
            .to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .ok_or_else(|| {
                self.site_error(
                    i,
                    "upstream:",
                    format!(
                        "sites[{i}].upstream: `{}` does not resolve to an address",
                        site.upstream
                    ),
                )
            })?;
        Ok(Upstream {
            addr: UpstreamAddr::Tcp(site.upstream.clone()),
            resolved: Some(resolved),
            tls: site.tls,
            sni: site.sni.clone().unwrap_or_else(|| host.to_owned()),
        })
    }

    fn robots(&self, i: usize, site: &SiteFile) -> Result<RobotsSettings, ConfigError> {
        let robots = &site.robots;
        let source = match (&robots.file, robots.origin, &robots.inline) {
            (Some(file), None | Some(false), None) => RobotsSource::File(self.path(file)),
            (None, Some(true), None) => RobotsSource::Origin,
            (None, None | Some(false), Some(text)) => RobotsSource::Inline(text.clone()),
            _ => {
                return Err(self.site_error(
                    i,
                    "robots:",
                    format!("sites[{i}].robots: give exactly one of `file: PATH`, `origin: true` or `inline: TEXT`"),
                ));
            }
        };
        let max_bytes = robots.max_bytes.map_or(DEFAULT_MAX_BYTES, Bounded::get);
        let refresh = robots.refresh.map_or(DEFAULT_REFRESH, |d| d.0);
        if !(MIN_REFRESH..=MAX_REFRESH).contains(&refresh) {
            return Err(self.site_error(
                i,
                "refresh:",
                format!(
                    "sites[{i}].robots.refresh: use 1s to 24h (RFC 9309: a copy SHOULD NOT be \
                     used for more than 24 hours)"
                ),
            ));
        }
        Ok(RobotsSettings {
            source,
            refresh,
            timeout: robots.timeout.map_or(DEFAULT_FETCH_TIMEOUT, |d| d.0),
            max_bytes,
            on_unreachable: robots.on_unreachable.unwrap_or(OnUnreachable::KeepLast),
        })
    }
}

impl Settings {
    /// Parses and validates a configuration's text. `origin` names it in errors; relative paths
    /// are taken from `base`.
    pub fn from_yaml(text: &str, origin: &str, base: &Path) -> Result<Settings, ConfigError> {
        Self::parse(text, origin, base, true)
    }

    /// Like [`Settings::from_yaml`], without resolving upstream host names (no network): an
    /// upstream that is not an IP address is left unresolved.
    pub fn from_yaml_offline(
        text: &str,
        origin: &str,
        base: &Path,
    ) -> Result<Settings, ConfigError> {
        Self::parse(text, origin, base, false)
    }

    fn parse(
        text: &str,
        origin: &str,
        base: &Path,
        resolve: bool,
    ) -> Result<Settings, ConfigError> {
        // YAML breaks lines at CR, NEL, LS and PS too: with one kind of line break, the lines
        // serde_yaml reports and the lines the checks below find are the same lines.
        let normalised = normalise_line_breaks(text);
        let text = normalised.as_ref();
        let file: ConfigFile = serde_yaml::from_str(text).map_err(|e| ConfigError {
            origin: origin.to_owned(),
            line: e.location().map(|l| l.line()),
            message: e.to_string(),
        })?;
        let validator = Validator {
            origin,
            text,
            base,
            resolve,
        };
        validator.settings(file)
    }

    /// Reads, parses and validates a configuration file.
    pub fn from_file(path: &Path) -> Result<Settings, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            line: None,
            message: format!("cannot read: {e}"),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::from_yaml(&text, &origin, base)
    }

    /// Builds the site part of a configuration from command-line flags alone.
    pub fn from_flags(flags: &SiteFlags) -> Result<Settings, ConfigError> {
        let yaml = flags.to_yaml().ok_or_else(|| ConfigError {
            origin: "flags".into(),
            line: None,
            message: "--upstream HOST:PORT is needed to serve without --config".into(),
        })?;
        Self::from_yaml(&yaml, "flags", Path::new("."))
    }
}

/// The command-line flags that describe (or override) a configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteFlags {
    /// `--listen`
    pub listen: Vec<String>,
    /// `--upstream`
    pub upstream: Option<String>,
    /// `--robots FILE` (absent: fetched from the origin)
    pub robots: Option<PathBuf>,
    /// `--metrics-listen`
    pub metrics_listen: Option<String>,
    /// `--action`
    pub action: Option<Action>,
}

impl SiteFlags {
    /// Whether any flag is given.
    pub fn any(&self) -> bool {
        *self != SiteFlags::default()
    }

    /// The flags as a one-site configuration file (so flags and files share one validator).
    fn to_yaml(&self) -> Option<String> {
        let upstream = self.upstream.as_ref()?;
        let listen = if self.listen.is_empty() {
            vec!["0.0.0.0:8080".to_owned()]
        } else {
            self.listen.clone()
        };
        let robots = match &self.robots {
            Some(path) => serde_json::json!({ "file": path }),
            None => serde_json::json!({ "origin": true }),
        };
        let mut config = serde_json::json!({
            "listen": listen,
            "sites": [{
                "name": "default",
                "upstream": upstream,
                "robots": robots,
                "action": self.action.unwrap_or(Action::Block),
            }],
        });
        if let Some(metrics) = &self.metrics_listen {
            config["metrics"] = serde_json::json!({ "listen": metrics });
        }
        // JSON is YAML: one validator serves flags and files.
        Some(config.to_string())
    }

    /// Applies the flags on top of settings read from a file.
    pub fn apply(&self, settings: &mut Settings) -> Result<(), ConfigError> {
        let flag_error = |message: String| ConfigError {
            origin: "flags".into(),
            line: None,
            message,
        };
        if !self.listen.is_empty() {
            settings.listen = self
                .listen
                .iter()
                .map(|a| {
                    a.parse()
                        .map_err(|_| flag_error(format!("--listen `{a}` is not IP:PORT")))
                })
                .collect::<Result<_, _>>()?;
        }
        if let Some(metrics) = &self.metrics_listen {
            let addr = metrics
                .parse()
                .map_err(|_| flag_error(format!("--metrics-listen `{metrics}` is not IP:PORT")))?;
            settings.metrics_listen = Some(addr);
        }
        let site_flags = self.upstream.is_some() || self.robots.is_some() || self.action.is_some();
        if site_flags {
            let [site] = settings.sites.as_mut_slice() else {
                return Err(flag_error(
                    "--upstream, --robots and --action apply to a configuration with exactly one site".into(),
                ));
            };
            if let Some(upstream) = &self.upstream {
                let one = Self {
                    upstream: Some(upstream.clone()),
                    ..Self::default()
                };
                let parsed = Settings::from_flags(&one)?;
                if let Some(parsed) = parsed.sites.into_iter().next() {
                    site.upstream = parsed.upstream;
                }
            }
            if let Some(robots) = &self.robots {
                site.robots.source = RobotsSource::File(robots.clone());
            }
            if let Some(action) = self.action {
                site.action = action;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Settings, ConfigError> {
        Settings::from_yaml(text, "test.yaml", Path::new("/etc/crawlgate"))
    }

    const MINIMAL: &str = "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: example\n    upstream: \"127.0.0.1:8000\"\n    robots:\n      file: robots.txt\n";

    #[test]
    fn a_minimal_file_gets_the_defaults() {
        let settings = parse(MINIMAL).unwrap();
        let site = &settings.sites[0];
        assert_eq!(site.action, Action::Block);
        assert_eq!(site.block_status, 403);
        assert_eq!(site.tag_prefix, "X-Crawlgate-");
        assert_eq!(
            site.robots.source,
            RobotsSource::File("/etc/crawlgate/robots.txt".into())
        );
        assert_eq!(site.robots.max_bytes, 512 * 1024);
        assert_eq!(site.robots.on_unreachable, OnUnreachable::KeepLast);
        assert_eq!(site.upstream.sni, "127.0.0.1");
        assert_eq!(settings.pingora.grace_period_seconds, 5);
        assert!(settings.metrics_listen.is_none());
    }

    #[test]
    fn unknown_keys_name_the_key_and_line() {
        let text = format!("{MINIMAL}    colour: red\n");
        let error = parse(&text).unwrap_err();
        assert_eq!(error.line, Some(7));
        assert!(error.message.contains("colour"), "{error}");
        assert!(error.message.contains("expected one of"), "{error}");
        assert!(error.to_string().starts_with("test.yaml:7: "), "{error}");
    }

    #[test]
    fn bad_values_say_what_would_be_valid() {
        let bad_action = MINIMAL.replace("    robots:", "    action: blok\n    robots:");
        let error = parse(&bad_action).unwrap_err();
        assert_eq!(error.line, Some(5));
        assert!(error.message.contains("`block`, `tag`, `count`"), "{error}");
        let bad_addr = MINIMAL.replace("127.0.0.1:8080", "localhost");
        let error = parse(&bad_addr).unwrap_err();
        assert!(error.message.contains("expected IP:PORT"), "{error}");
        assert_eq!(error.line, Some(1));
        let bad_duration = MINIMAL.replace("file: robots.txt", "origin: true\n      refresh: soon");
        let error = parse(&bad_duration).unwrap_err();
        assert!(error.message.contains("60s"), "{error}");
        let bad_token = MINIMAL.replace(
            "    robots:",
            "    bots: {\"GPTBot/1.0\": block}\n    robots:",
        );
        assert!(parse(&bad_token)
            .unwrap_err()
            .message
            .contains("product token"));
    }

    #[test]
    fn semantic_errors_have_lines_too() {
        let two_sources =
            MINIMAL.replace("file: robots.txt", "file: robots.txt\n      origin: true");
        let error = parse(&two_sources).unwrap_err();
        assert!(error.message.contains("exactly one of"), "{error}");
        assert_eq!(error.line, Some(5));
        let bad_upstream = MINIMAL.replace("127.0.0.1:8000", "127.0.0.1");
        let error = parse(&bad_upstream).unwrap_err();
        assert!(error.message.contains("HOST:PORT"), "{error}");
        assert_eq!(error.line, Some(4));
        let bad_status = MINIMAL.replace("    robots:", "    block: {status: 200}\n    robots:");
        assert!(parse(&bad_status)
            .unwrap_err()
            .message
            .contains("400 to 599"));
    }

    /// No number in a configuration can exhaust memory or overflow arithmetic: each is checked
    /// against its documented range where it is written.
    #[test]
    fn numbers_out_of_range_are_errors_with_their_line() {
        let cases = [
            (
                "file: robots.txt",
                "origin: true\n      refresh: 25h",
                "use 1s to 24h",
                7,
            ),
            (
                "file: robots.txt",
                "origin: true\n      refresh: 0s",
                "use 1s to 24h",
                7,
            ),
            (
                "file: robots.txt",
                "file: robots.txt\n      max_bytes: 0",
                "use 1 to",
                7,
            ),
            (
                "file: robots.txt",
                "file: robots.txt\n      max_bytes: 1000000000000",
                "out of range",
                7,
            ),
            (
                "    robots:",
                "    upstream_timeout: 400d\n    robots:",
                "longer than a year",
                5,
            ),
        ];
        for (from, to, message, line) in cases {
            let error = parse(&MINIMAL.replace(from, to)).unwrap_err();
            assert!(error.message.contains(message), "{to}: {error}");
            assert_eq!(error.line, Some(line), "{to}: {error}");
        }
        for pingora in [
            "threads: 0",
            "threads: 100000",
            "read_buffer_bytes: 10",
            "grace_period_seconds: 1e30",
        ] {
            let text = format!("{MINIMAL}pingora:\n  {pingora}\n");
            let error = parse(&text).unwrap_err();
            assert!(error.line.is_some(), "{pingora}: {error}");
        }
        let text = format!("{MINIMAL}politeness:\n  max_tracked: 18446744073709551615\n");
        assert!(parse(&text).unwrap_err().message.contains("out of range"));
    }

    #[test]
    fn sites_must_not_overlap() {
        let two = "listen: [\"127.0.0.1:8080\"]\nsites:\n  - name: a\n    hosts: [a.com]\n    upstream: \"127.0.0.1:1\"\n    robots: {origin: true}\n  - name: b\n    hosts: [b.com, A.com]\n    upstream: \"127.0.0.1:2\"\n    robots: {origin: true}\n";
        let error = parse(&two.replace("A.com", "c.com")).map(|s| s.sites.len());
        assert_eq!(error, Ok(2));
        let error = parse(&two.replace("A.com", "a.com")).unwrap_err();
        assert!(
            error.message.contains("already a host of sites[0]"),
            "{error}"
        );
        assert_eq!(error.line, Some(8));
        let error =
            parse(&two.replace("name: b", "name: a").replace("A.com", "c.com")).unwrap_err();
        assert!(error.message.contains("already the name"), "{error}");
        assert_eq!(error.line, Some(7));
        let catch_alls = two
            .replace("    hosts: [a.com]\n", "")
            .replace("    hosts: [b.com, A.com]\n", "");
        assert!(parse(&catch_alls).unwrap_err().message.contains("any host"));
    }

    #[test]
    fn no_sites_or_listeners_is_an_error() {
        assert!(parse("listen: [\"127.0.0.1:1\"]\n")
            .unwrap_err()
            .message
            .contains("at least one site"));
        let no_listen = MINIMAL.replace("listen: [\"127.0.0.1:8080\"]\n", "");
        assert!(parse(&no_listen).unwrap_err().message.contains("listen"));
    }

    #[test]
    fn flags_alone_make_a_site_and_override_a_file() {
        let flags = SiteFlags {
            upstream: Some("127.0.0.1:9000".into()),
            action: Some(Action::Tag),
            ..SiteFlags::default()
        };
        let settings = Settings::from_flags(&flags).unwrap();
        assert_eq!(settings.sites[0].robots.source, RobotsSource::Origin);
        assert_eq!(settings.sites[0].action, Action::Tag);
        let mut from_file = parse(MINIMAL).unwrap();
        let overrides = SiteFlags {
            listen: vec!["127.0.0.1:9999".into()],
            robots: Some("/srv/robots.txt".into()),
            ..flags
        };
        overrides.apply(&mut from_file).unwrap();
        assert_eq!(from_file.listen, vec!["127.0.0.1:9999".parse().unwrap()]);
        assert_eq!(
            from_file.sites[0].robots.source,
            RobotsSource::File("/srv/robots.txt".into())
        );
        assert_eq!(
            from_file.sites[0].upstream.resolved,
            Some("127.0.0.1:9000".parse().unwrap())
        );
        assert!(Settings::from_flags(&SiteFlags::default()).is_err());
    }

    #[test]
    fn verification_and_politeness() {
        let text = format!(
            "{MINIMAL}    crawl_delay: enforce\ntrusted_proxies: [10.0.0.0/8, \"192.0.2.1\"]\nverification:\n  ranges:\n    Googlebot: ranges/googlebot.json\n    Bingbot: {{file: /r/bing.json, url: \"https://www.bing.com/toolbox/bingbot.json\"}}\n  reverse_dns: {{Googlebot: [googlebot.com, google.com]}}\n  on_spoofed: tag\n  dns: {{budget: 20ms, server: \"127.0.0.1:5353\"}}\npoliteness: {{grace: 1h}}\n"
        );
        let settings = parse(&text).unwrap();
        assert_eq!(settings.sites[0].crawl_delay, CrawlDelayMode::Enforce);
        assert_eq!(settings.trusted_proxies.networks().len(), 2);
        assert_eq!(settings.trusted_proxies.header().name(), "x-forwarded-for");
        let v = &settings.verification;
        assert_eq!(v.on_spoofed, Action::Tag);
        assert_eq!(v.dns.budget, Duration::from_millis(20));
        assert_eq!(v.dns.server, Some("127.0.0.1:5353".parse().unwrap()));
        let google = &v.ranges.iter().find(|(t, _)| t == "Googlebot").unwrap().1;
        assert_eq!(
            google.file,
            PathBuf::from("/etc/crawlgate/ranges/googlebot.json")
        );
        let bing = &v.ranges.iter().find(|(t, _)| t == "Bingbot").unwrap().1;
        assert_eq!(
            bing.url.as_deref(),
            Some("https://www.bing.com/toolbox/bingbot.json")
        );
        assert_eq!(settings.politeness.grace, Duration::from_secs(3600));
        assert_eq!(
            settings.politeness.robots_read_window,
            Duration::from_secs(86400)
        );
        let bad = text.replace("10.0.0.0/8", "10.0.0.0/99");
        assert!(parse(&bad)
            .unwrap_err()
            .message
            .contains("is not a network"));
        let bad = text.replace("on_spoofed: tag", "on_spoofed: ignore");
        assert!(parse(&bad)
            .unwrap_err()
            .message
            .contains("`block`, `tag`, `count`"));
        assert_eq!(
            parse(MINIMAL).unwrap().sites[0].crawl_delay,
            CrawlDelayMode::Count
        );
    }

    /// Checks the actions the only site of `text` takes on crawlers (token, name, category);
    /// returns the site.
    fn assert_actions(text: &str, cases: &[(&str, &str, Category, Action)]) -> SiteSettings {
        let site = parse(text).unwrap().sites.remove(0);
        let actions = site.actions();
        for &(token, name, category, want) in cases {
            assert_eq!(actions.for_crawler(token, name, category), want, "{name}");
        }
        site
    }

    #[test]
    fn trusted_proxies_name_the_one_header_they_write() {
        let text =
            format!("{MINIMAL}trusted_proxies:\n  networks: [10.0.0.0/8]\n  header: Forwarded\n");
        let trusted = parse(&text).unwrap().trusted_proxies;
        assert_eq!(trusted.header().name(), "forwarded");
        assert!(trusted.contains("10.1.2.3".parse().unwrap()));
        let real_ip = text.replace("Forwarded", "X-Real-IP");
        assert_eq!(
            parse(&real_ip).unwrap().trusted_proxies.header().name(),
            "x-real-ip"
        );
        let bad = text.replace("header: Forwarded", "header: \"x forwarded\"");
        let error = parse(&bad).unwrap_err();
        assert_eq!(error.line, Some(9), "{error}");
        assert!(error.message.contains("is not a header name"), "{error}");
        let unknown = text.replace("header: Forwarded", "headers: Forwarded");
        let error = parse(&unknown).unwrap_err();
        assert_eq!(error.line, Some(9), "{error}");
        assert!(error.message.contains("headers"), "{error}");
        let bad_net = text.replace("10.0.0.0/8", "10.0.0.0/99");
        let error = parse(&bad_net).unwrap_err();
        assert_eq!(error.line, Some(8), "{error}");
        assert!(error.message.contains("is not a network"), "{error}");
        assert!(parse(MINIMAL).unwrap().trusted_proxies.is_empty());
    }

    #[test]
    fn the_state_dir_is_relative_to_the_file_and_must_be_a_folder() {
        let text = format!("{MINIMAL}state_dir: state\n");
        assert_eq!(
            parse(&text).unwrap().state_dir,
            Some(PathBuf::from("/etc/crawlgate/state"))
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let text = format!("{MINIMAL}state_dir: {}\n", file.display());
        let error = parse(&text).unwrap_err();
        assert_eq!(error.line, Some(7), "{error}");
        assert!(error.message.contains("not a folder"), "{error}");
    }

    #[test]
    fn an_empty_reverse_dns_list_turns_the_catalogs_off() {
        let text = format!("{MINIMAL}verification:\n  reverse_dns: {{Googlebot: []}}\n");
        let settings = parse(&text).unwrap();
        assert_eq!(
            settings.verification.reverse_dns,
            vec![("Googlebot".to_owned(), Vec::new())]
        );
        let bad = text.replace("[]", "[\"..\"]");
        assert_eq!(parse(&bad).unwrap_err().line, Some(8));
    }

    #[test]
    fn per_bot_actions_are_case_insensitive() {
        let text = MINIMAL.replace(
            "    robots:",
            "    action: count\n    bots: {GPTBot: block, MJ12bot: tag}\n    robots:",
        );
        let site = assert_actions(
            &text,
            &[
                ("gptbot", "GPTBot", Category::AiTraining, Action::Block),
                ("CCBot", "CCBot", Category::AiTraining, Action::Count),
                ("MJ", "MJ12bot", Category::Seo, Action::Tag),
            ],
        );
        // A catalog name is a key, but only product tokens name crawlers of the site's own.
        assert_eq!(site.bot_tokens, ["GPTBot"]);
    }

    #[test]
    fn actions_per_category() {
        let text = MINIMAL.replace(
            "    robots:",
            "    categories: {ai-training: block, seo: tag, http-library: count}\n    robots:",
        );
        assert_actions(
            &text,
            &[
                ("SemrushBot", "SemrushBot", Category::Seo, Action::Tag),
                ("curl", "curl", Category::HttpLibrary, Action::Count),
            ],
        );
        // The default: http-library is counted, everything else gets the site's action.
        let site = assert_actions(
            MINIMAL,
            &[
                ("okhttp", "okhttp", Category::HttpLibrary, Action::Count),
                ("GPTBot", "GPTBot", Category::AiTraining, Action::Block),
            ],
        );
        assert!(site.category_actions.is_empty());
        let bad = MINIMAL.replace(
            "    robots:",
            "    categories: {robots: block}\n    robots:",
        );
        let error = parse(&bad).unwrap_err();
        assert!(error.message.contains("ai-training"), "{error}");
        assert_eq!(error.line, Some(5));
    }
}
