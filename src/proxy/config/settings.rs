//! The settings the proxy runs on: validated, with defaults filled in.

use super::file::*;
use crate::agent::Category;
use crate::policy::{Action, Actions, Enforcement};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Its certificates, at least one: the first is the default, for clients that send no
    /// SNI or a name no certificate carries.
    pub certs: Vec<CertPair>,
    /// Each connection starts with a PROXY protocol header, before TLS.
    pub proxy_protocol: bool,
}

/// Where a certificate chain and its private key are (PEM files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertPair {
    /// The certificate chain.
    pub cert: PathBuf,
    /// The private key.
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
    /// The groups crawlgate adds to the file, if any.
    pub managed: Option<crate::managed::Managed>,
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
    /// PEM CA certificates trusted for a TLS origin instead of the system's (read and checked).
    pub ca: Option<PathBuf>,
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
    /// Whether refusals are made, or only recorded (`mode: observe`).
    pub enforcement: Enforcement,
    /// Per-category actions (`http-library`, `site-service` and `proxy` are `count` unless
    /// given here).
    pub category_actions: BTreeMap<Category, Action>,
    /// Per-crawler overrides, by lower-cased token or catalog name.
    pub bot_actions: HashMap<String, Action>,
    /// The product tokens of the overrides as written (they are known tokens even if nothing
    /// else names them).
    pub bot_tokens: Vec<String>,
    /// The overrides that are not product tokens (`MJ12bot`), with their lines: each must be a
    /// catalog crawler's name, or it could never apply (checked against the catalog when the
    /// site is set up, [`crate::proxy::site::Site::new`]).
    pub bot_names: Vec<(String, Option<usize>)>,
    /// The block status.
    pub block_status: u16,
    /// The tag header prefix.
    pub tag_prefix: String,
    /// What to do when a crawler comes sooner than its crawl-delay.
    pub crawl_delay: CrawlDelayMode,
    /// How long the origin may stay silent while answering.
    pub upstream_timeout: Duration,
    /// Whether robots.txt's content-use preferences are enforced and announced.
    pub content_usage: ContentUsage,
    /// Which forwarding headers the origin gets.
    pub forwarding: crate::proxy::forwarding::ForwardingSettings,
    /// What verified crawlers pay per page (pay per crawl), when the site prices pages.
    pub pay_per_crawl: Option<crate::pricing::Prices>,
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
    /// Bytes of read buffer per plain-HTTP client connection.
    pub read_buffer_bytes: usize,
    /// Bytes of read buffer per TLS client connection.
    pub tls_read_buffer_bytes: usize,
}

/// The read buffer of a plain-HTTP client connection: none. pingora's HTTP layer reads a header
/// into a buffer of its own and a body straight into its chunks, so a buffer below it only
/// copies; without one an idle keep-alive connection costs a fraction of the memory
/// (`benches/load/connections.sh`, benches/RESULTS.md "Memory per connection").
pub const DEFAULT_READ_BUFFER_BYTES: usize = 0;

/// The read buffer of a TLS client connection: one TLS record, so that OpenSSL reads a record
/// in one system call rather than its header and its body apart.
pub const DEFAULT_TLS_READ_BUFFER_BYTES: usize = 16 * 1024;

/// Everything the proxy runs on, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Plain-HTTP listeners.
    pub listen: Vec<SocketAddr>,
    /// TLS listeners.
    pub tls_listen: Vec<TlsListen>,
    /// Whether plain listeners also speak h2c (HTTP/2 with prior knowledge).
    pub h2c: bool,
    /// The metrics listener.
    pub metrics_listen: Option<SocketAddr>,
    /// Plain-HTTP listeners whose connections start with a PROXY protocol header.
    pub proxy_protocol_listen: Vec<SocketAddr>,
    /// Forward-auth listeners: they answer an edge's subrequests (see
    /// [`crate::proxy::forward_auth`]).
    pub forward_auth_listen: Vec<SocketAddr>,
    /// The access log.
    pub access_log: Option<AccessLogTarget>,
    /// A catalog file instead of the embedded one.
    pub catalog: Option<PathBuf>,
    /// The sites.
    pub sites: Vec<SiteSettings>,
    /// Pingora's settings.
    pub pingora: PingoraSettings,
    /// Proxies whose forwarding header is believed, and that header.
    pub trusted_proxies: crate::proxy::client::TrustedProxies,
    /// Where origins' last good robots.txt answers are kept (`None`: not kept).
    pub state_dir: Option<PathBuf>,
    /// How crawlers are verified.
    pub verification: VerificationSettings,
    /// Politeness memory.
    pub politeness: PolitenessSettings,
    /// The shared state store (`None`: this process's memory).
    pub state: Option<StateSettings>,
    /// Client timeouts and connection limits.
    pub clients: ClientSettings,
}

/// Client timeouts and connection limits, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSettings {
    /// A request header must arrive within this, from its first byte (from the connection's
    /// start for the first request).
    pub header_timeout: Duration,
    /// The longest silence while a client sends a body.
    pub body_timeout: Duration,
    /// The longest wait of a keep-alive connection for its next request.
    pub idle_timeout: Duration,
    /// The longest wait for a client to take what it is sent.
    pub send_timeout: Duration,
    /// Client connections at most (`None`: from the descriptor limit at start).
    pub max_connections: Option<usize>,
    /// Client connections at most per address (per /64 for IPv6).
    pub max_connections_per_address: usize,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            header_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(75),
            send_timeout: Duration::from_secs(60),
            max_connections: None,
            max_connections_per_address: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
        }
    }
}

/// Connections per client address: far above what a browser opens (six per host), room for a
/// large office or carrier NAT, far below a descriptor limit.
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: usize = 1024;

/// A shared state store, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateSettings {
    /// The Redis or Valkey URL (checked).
    pub redis: String,
    /// How long a crawler's request waits for it.
    pub budget: Duration,
}

/// A crawler's request waits this long for the shared store: a few round trips on a local
/// network, far less than an origin's answer takes.
pub const DEFAULT_STATE_BUDGET: Duration = Duration::from_millis(5);

/// The longest budget: past it, a slow store would be slower than no store.
pub const MAX_STATE_BUDGET: Duration = Duration::from_secs(5);

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
    pub dns: crate::proxy::verify::dns::DnsSettings,
    /// Web Bot Auth: signed crawlers.
    pub signatures: crate::proxy::verify::signature::SignatureSettings,
}

impl Default for VerificationSettings {
    fn default() -> Self {
        VerificationSettings {
            ranges: Vec::new(),
            reverse_dns: Vec::new(),
            on_spoofed: Action::Block,
            dns: crate::proxy::verify::dns::DnsSettings::default(),
            signatures: crate::proxy::verify::signature::SignatureSettings::default(),
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
