//! The configuration file as written: every key, its type and its range, checked where it is
//! written (serde), so that an error carries the value's own line.

use crate::agent::Category;
use crate::managed::Choice;
use crate::policy::{Action, Enforcement};
use crate::robots::token::is_product_token;
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The YAML configuration file as written. Unknown keys are errors.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Plain-HTTP listening addresses (`IP:PORT`, or `{addr: IP:PORT, proxy_protocol: true}`).
    #[serde(default)]
    pub listen: Vec<ListenFile>,
    /// TLS listening addresses with their certificates.
    #[serde(default)]
    pub tls_listen: Vec<TlsListenFile>,
    /// Whether plain listeners also speak HTTP/2 without TLS (h2c, with prior knowledge), for
    /// a TLS-terminating load balancer in front. HTTP/1.1 is served on them either way.
    #[serde(default)]
    pub h2c: bool,
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
    /// Where crawler state is kept: absent, this process's memory; `{redis: URL}`, a store every
    /// instance of a fleet shares.
    pub state: Option<StateFile>,
    /// How long clients may take, and how many connections they may hold.
    #[serde(default)]
    pub clients: ClientsFile,
    /// `enforce` (the default) or `observe`: every site's, unless the site says otherwise.
    pub mode: Option<Enforcement>,
    /// Listeners that answer an edge proxy's forward-auth subrequests instead of proxying.
    pub forward_auth: Option<ForwardAuthFile>,
}

/// `forward_auth:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardAuthFile {
    /// Plain-HTTP addresses the edge's subrequests come to (loopback or a private network:
    /// only `trusted_proxies` may ask).
    pub listen: Vec<Addr>,
}

/// `clients:` as written: the timeouts and connection limits that keep one client from holding
/// what people need.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientsFile {
    /// How long a request header may take to arrive, in all (default 60s, nginx's
    /// `client_header_timeout`).
    pub header_timeout: Option<HumanDuration>,
    /// How long a client may stay silent while sending a body (default 60s, nginx's
    /// `client_body_timeout`).
    pub body_timeout: Option<HumanDuration>,
    /// How long a keep-alive connection may wait for its next request (default 75s, nginx's
    /// `keepalive_timeout`).
    pub idle_timeout: Option<HumanDuration>,
    /// How long a client may take to read what it is sent, between two writes (default 60s,
    /// nginx's `send_timeout`).
    pub send_timeout: Option<HumanDuration>,
    /// Client connections at most, in all (default: from the descriptor limit, half of it less
    /// a reserve, since each request may need an origin connection too).
    pub max_connections: Option<Bounded<1, 10_000_000>>,
    /// Client connections at most from one address (an IPv6 /64 counts as one; default 1024).
    pub max_connections_per_address: Option<Bounded<1, 10_000_000>>,
}

/// `state:` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateFile {
    /// A Redis or Valkey server: `redis://host:6379/0`.
    pub redis: String,
    /// How long a crawler's request waits for the store before deciding from the instance's
    /// own memory (default 5ms).
    pub budget: Option<HumanDuration>,
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
    /// Web Bot Auth: signed crawlers.
    #[serde(default)]
    pub signatures: SignaturesFile,
}

/// `verification.signatures:` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignaturesFile {
    /// Believe the catalog's `signature_agent` directories (default true).
    pub catalog: Option<bool>,
    /// More key directories: `{url, bot, jwks}`.
    #[serde(default)]
    pub directories: Vec<SignatureDirectoryFile>,
    /// Fetch directories nobody named (default false).
    pub fetch_unlisted: Option<bool>,
    /// Fetch directories on loopback and private addresses (default false).
    pub allow_private: Option<bool>,
    /// A PEM file of CA certificates trusted for directory fetches.
    pub ca_file: Option<PathBuf>,
    /// How long fetched keys are used (default 1h).
    pub refresh: Option<HumanDuration>,
    /// Directory fetch timeout (default 5s).
    pub timeout: Option<HumanDuration>,
    /// The largest directory (default 65536 bytes).
    pub max_bytes: Option<Bounded<256, 1_048_576>>,
    /// The most keys of a directory (default 32).
    pub max_keys: Option<Bounded<1, 1000>>,
    /// How far in the future `created` may be (default 60s).
    pub clock_skew: Option<HumanDuration>,
    /// Signature uses of listed directories remembered (default 100000).
    pub nonces: Option<Entries>,
    /// Signature uses of unlisted directories remembered, apart (default 10000).
    pub unlisted_nonces: Option<Entries>,
    /// The most bytes of each of `Signature-Input`, `Signature`, `Signature-Agent` (default
    /// 4096).
    pub max_header_bytes: Option<Bounded<256, 65_536>>,
    /// The most labels of each of them (default 8).
    pub max_labels: Option<Bounded<1, 64>>,
    /// The most bytes of a nonce (default 256).
    pub max_nonce_bytes: Option<Bounded<16, 4096>>,
    /// Directory fetches running at once, for listed and, apart, unlisted directories
    /// (default 4).
    pub max_fetches: Option<Bounded<1, 64>>,
}

/// One of `verification.signatures.directories:` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignatureDirectoryFile {
    /// The `Signature-Agent` URL, such as `https://chatgpt.com`.
    pub url: String,
    /// The crawler its keys speak for.
    pub bot: Option<Token>,
    /// Its keys from a JWKS file instead of fetching them.
    pub jwks: Option<PathBuf>,
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
    /// The most lookups running at once (default 256).
    pub max_lookups: Option<Bounded<1, 65_536>>,
    /// The most lookups running at once for one client network (default 4).
    pub max_lookups_per_client: Option<Bounded<1, 1024>>,
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

// The judgement reads it, and builds without the proxy.
pub use crate::judge::CrawlDelayMode;

/// The shortest and the longest `refresh` of a robots.txt fetched from the origin.
pub(super) const MIN_REFRESH: Duration = Duration::from_secs(1);
pub(super) const MAX_REFRESH: Duration = Duration::from_secs(24 * 3600);

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

/// A plain-HTTP listener as written: `"IP:PORT"`, or `{addr: "IP:PORT", proxy_protocol: true}`
/// for one behind a TCP load balancer that sends the PROXY protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenFile {
    /// The address.
    pub addr: SocketAddr,
    /// Each connection starts with a PROXY protocol header (v1 or v2).
    pub proxy_protocol: bool,
}

impl<'de> Deserialize<'de> for ListenFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Written {
            addr: Addr,
            #[serde(default)]
            proxy_protocol: bool,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Map(Written),
        }
        match Either::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "a listener is IP:PORT, such as 0.0.0.0:8080, or {addr: IP:PORT, proxy_protocol: true}",
            )
        })? {
            Either::Text(text) => text
                .parse()
                .map(|addr| ListenFile {
                    addr,
                    proxy_protocol: false,
                })
                .map_err(|_| {
                    serde::de::Error::custom(format!(
                        "`{text}` is not a listening address: expected IP:PORT, such as 0.0.0.0:8080 or [::]:8080"
                    ))
                }),
            Either::Map(written) => Ok(ListenFile {
                addr: written.addr.0,
                proxy_protocol: written.proxy_protocol,
            }),
        }
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

/// A TLS listener: `{addr, cert, key}` with one certificate, or `{addr, certs: [{cert, key}]}`
/// with certificates chosen by the name a client asks for (SNI), the first for clients that
/// name none.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsListenFile {
    /// The address.
    pub addr: Addr,
    /// PEM certificate chain (the one-certificate form).
    pub cert: Option<PathBuf>,
    /// PEM private key (the one-certificate form).
    pub key: Option<PathBuf>,
    /// Certificates chosen by SNI, each answering for the names it carries.
    #[serde(default)]
    pub certs: Vec<CertPairFile>,
    /// Each connection starts with a PROXY protocol header, before TLS.
    #[serde(default)]
    pub proxy_protocol: bool,
}

/// A certificate chain and its private key, PEM files.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertPairFile {
    /// PEM certificate chain: the certificate, then its intermediates (certbot's
    /// `fullchain.pem`).
    pub cert: PathBuf,
    /// PEM private key (certbot's `privkey.pem`).
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
    /// `enforce` or `observe` (refuse nothing, record what would have been refused); default
    /// the file's `mode`.
    pub mode: Option<Enforcement>,
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
    /// What robots.txt's content-use preferences do: nothing by default.
    #[serde(default)]
    pub content_usage: ContentUsage,
    /// Which forwarding headers tell the origin who the visitor is (default: nginx's common
    /// `X-Forwarded-For`, `X-Forwarded-Proto`, `X-Forwarded-Host`).
    #[serde(default)]
    pub forwarding: crate::proxy::forwarding::ForwardingSettings,
    /// PEM CA certificates a TLS origin's certificate is checked against, instead of the
    /// system's.
    pub upstream_ca: Option<PathBuf>,
    /// Pay per crawl: a price per category or crawler (`{ai-training: "USD 0.01", GPTBot:
    /// "USD 0.05"}`) that verified crawlers pay for the pages robots.txt lets them fetch.
    #[serde(default)]
    pub pay_per_crawl: BTreeMap<String, String>,
}

/// `content_usage:` of a site: what its robots.txt's `Content-Usage` and `Content-Signal` lines
/// do. Both are off by default: a preference is a wish about use, which a proxy cannot see, so
/// refusing requests on it is the operator's call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentUsage {
    /// Treat a crawler whose category is a use the path's preference refuses as disallowed
    /// (verdict `content-usage`), with the site's action for it.
    #[serde(default)]
    pub enforce: bool,
    /// Add the `Content-Usage` header that applies to the path to responses.
    #[serde(default)]
    pub announce: bool,
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
    /// Groups crawlgate adds to the file, overriding what it says of the crawlers they name.
    pub managed: Option<ManagedFile>,
}

/// `robots.managed:` of a site: the groups the operator manages at the edge (see
/// [`crate::managed`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedFile {
    /// Per category (`ai-training: disallow`): its catalog crawlers.
    #[serde(default)]
    pub categories: BTreeMap<Category, Choice>,
    /// Per crawler (`GPTBot: disallow`, `Googlebot: origin`): wins over its category.
    #[serde(default)]
    pub crawlers: BTreeMap<String, Choice>,
    /// A `Content-Signal` line for every crawler (`search=yes, ai-train=no`).
    pub content_signal: Option<String>,
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
    /// Whether idle worker threads steal tasks from busy ones (default: on with more than one
    /// thread).
    pub work_stealing: Option<bool>,
    /// Idle upstream connections kept for reuse (default 128).
    pub upstream_keepalive_pool_size: Option<Bounded<0, 1_000_000>>,
    /// Accept tasks per listening socket (default 1).
    pub listener_tasks_per_fd: Option<Bounded<1, 1024>>,
    /// Bytes of read buffer per plain-HTTP client connection (default 0: pingora's HTTP layer
    /// reads into buffers of its own; pingora's default is 65536).
    pub read_buffer_bytes: Option<Bounded<0, { 16 << 20 }>>,
    /// Bytes of read buffer per TLS client connection, under OpenSSL (default 16384).
    pub tls_read_buffer_bytes: Option<Bounded<0, { 16 << 20 }>>,
}
