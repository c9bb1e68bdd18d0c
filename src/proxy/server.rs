//! Assembling the pingora server: the proxy, the metrics listener, the reload and access-log
//! background services, and (for the embedded default) the demo site.

use super::access_log::access_log;
use super::admin::AdminApp;
use super::config::{
    AccessLogTarget, ConfigError, CrawlDelayMode, OnUnreachable, PingoraSettings,
    PolitenessSettings, RobotsSettings, RobotsSource, Settings, SiteFlags, SiteSettings, Upstream,
    UpstreamAddr, VerificationSettings, DEFAULT_READ_BUFFER_BYTES, DEFAULT_TAG_PREFIX,
    DEFAULT_TLS_READ_BUFFER_BYTES,
};
use super::connection::{Gate, Guarded, Stop, Trimmer};
use super::demo::{demo_robots, DemoApp, DEFAULT_ADDRESS};
use super::metrics::Metrics;
use super::proxy_protocol;
use super::reload::{ConfigSource, Reloader};
use super::service::CrawlGate;
use super::state::Shared;
use super::tls::listener::TlsListener;
use super::tls::reload::CertReloader;
use crate::policy::{Action, Enforcement};
use crate::robots::DEFAULT_MAX_BYTES;
use pingora::listeners::{L4BufferSettings, ListenerConfig};
use pingora::server::configuration::ServerConf;
use pingora::server::Server;
use pingora::services::background::background_service;
use pingora::services::listening::Service;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The proxy cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Setting up the shared state failed (catalog, a site's robots.txt).
    #[error(transparent)]
    State(#[from] super::state::StateError),
    /// The metrics cannot be registered.
    #[error(transparent)]
    Metrics(#[from] super::metrics::MetricsError),
    /// The access log cannot be opened.
    #[error(transparent)]
    AccessLog(#[from] super::access_log::AccessLogError),
    /// A listening address is taken or not ours.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A TLS listener cannot be set up.
    #[error("cannot listen with TLS on {addr}: {message}")]
    Tls {
        /// The address.
        addr: SocketAddr,
        /// Why.
        message: String,
    },
}

/// Where the embedded default listens.
pub const DEMO_LISTEN: &str = DEFAULT_ADDRESS;
/// Where the embedded default serves metrics.
pub const DEMO_METRICS: &str = "127.0.0.1:9464";

/// The settings of the embedded default: crawlgate in front of the demo site, which listens on
/// a Unix socket at `socket`, with `flags` applied (`--listen`, `--metrics-listen`, `--robots`,
/// `--action`, `--access-log`, `--observe`). The demo's robots.txt names its sitemap on the
/// address crawlgate listens on.
pub fn demo_settings(socket: PathBuf, flags: &SiteFlags) -> Result<Settings, ConfigError> {
    let mut settings = embedded_demo(socket);
    flags.apply(&mut settings)?;
    let address = settings
        .listen
        .first()
        .map_or(DEMO_LISTEN.to_owned(), ToString::to_string);
    for site in &mut settings.sites {
        if let RobotsSource::Inline(text) = &mut site.robots.source {
            *text = demo_robots(&address);
        }
    }
    Ok(settings)
}

fn embedded_demo(socket: PathBuf) -> Settings {
    let listen = DEMO_LISTEN.parse().ok().into_iter().collect();
    Settings {
        listen,
        tls_listen: Vec::new(),
        h2c: false,
        metrics_listen: DEMO_METRICS.parse().ok(),
        forward_auth_listen: Vec::new(),
        proxy_protocol_listen: Vec::new(),
        access_log: Some(AccessLogTarget::Stdout),
        catalog: None,
        sites: vec![SiteSettings {
            name: "demo".into(),
            hosts: Vec::new(),
            upstream: Upstream {
                addr: UpstreamAddr::Unix(socket),
                resolved: None,
                tls: false,
                sni: "localhost".into(),
                ca: None,
            },
            robots: RobotsSettings {
                source: RobotsSource::Inline(demo_robots(DEMO_LISTEN)),
                refresh: Duration::from_secs(60),
                timeout: Duration::from_secs(10),
                max_bytes: DEFAULT_MAX_BYTES,
                on_unreachable: OnUnreachable::KeepLast,
                managed: None,
            },
            action: Action::Block,
            enforcement: Enforcement::Enforce,
            category_actions: Default::default(),
            bot_actions: HashMap::new(),
            bot_tokens: Vec::new(),
            bot_names: Vec::new(),
            block_status: 403,
            tag_prefix: DEFAULT_TAG_PREFIX.into(),
            crawl_delay: CrawlDelayMode::Count,
            upstream_timeout: Duration::from_secs(60),
            content_usage: Default::default(),
            forwarding: Default::default(),
            pay_per_crawl: None,
        }],
        trusted_proxies: super::client::TrustedProxies::default(),
        state_dir: None,
        verification: VerificationSettings::default(),
        politeness: PolitenessSettings::default(),
        state: None,
        clients: Default::default(),
        pingora: PingoraSettings {
            threads: 2,
            grace_period_seconds: 5,
            work_stealing: true,
            upstream_keepalive_pool_size: 128,
            listener_tasks_per_fd: 1,
            read_buffer_bytes: DEFAULT_READ_BUFFER_BYTES,
            tls_read_buffer_bytes: DEFAULT_TLS_READ_BUFFER_BYTES,
        },
    }
}

/// Fails early, with a clear message, when a listening address cannot be bound (pingora would
/// only panic later).
fn check_listen(addr: SocketAddr) -> Result<(), ServeError> {
    std::net::TcpListener::bind(addr)
        .map(drop)
        .map_err(|source| ServeError::Listen { addr, source })
}

fn server_conf(pingora: &PingoraSettings) -> ServerConf {
    // pingora drains for the grace period, then gives runtimes a shutdown timeout: split the
    // configured period between the two so that SIGTERM exits within it.
    let grace = pingora.grace_period_seconds;
    ServerConf {
        threads: pingora.threads,
        work_stealing: pingora.work_stealing,
        upstream_keepalive_pool_size: pingora.upstream_keepalive_pool_size,
        listener_tasks_per_fd: pingora.listener_tasks_per_fd,
        grace_period_seconds: Some(grace.saturating_sub(1)),
        graceful_shutdown_timeout_seconds: Some(grace.min(1)),
        ..ServerConf::default()
    }
}

/// Runs the proxy until SIGTERM or SIGINT. `demo_socket` starts the embedded demo site there.
pub fn run(
    settings: Settings,
    config: ConfigSource,
    demo_socket: Option<PathBuf>,
) -> Result<(), ServeError> {
    let plain = (settings.listen.iter())
        .chain(&settings.proxy_protocol_listen)
        .chain(&settings.forward_auth_listen);
    for addr in plain.chain(settings.metrics_listen.iter()) {
        check_listen(*addr)?;
    }
    for tls in &settings.tls_listen {
        check_listen(tls.addr)?;
    }
    let metrics = Metrics::new()?;
    let (log, writer) = match &settings.access_log {
        Some(target) => {
            let (log, writer) = access_log(target.clone())?;
            (Some(log), Some(writer))
        }
        None => (None, None),
    };
    let shared = Arc::new(Shared::new(&settings, metrics, log)?);

    let mut server = Server::new_with_opt_and_conf(None, server_conf(&settings.pingora));
    server.bootstrap();

    let app = || {
        let mut app =
            pingora::proxy::http_proxy(&server.configuration, CrawlGate::new(shared.clone()));
        let mut options = pingora::apps::HttpServerOptions::default();
        options.h2c = settings.h2c;
        // An HTTP/2 connection with no stream open is idle: closed as an HTTP/1.1 one would be.
        options.h2_idle_timeout = Some(settings.clients.idle_timeout);
        app.server_options = Some(options);
        app
    };
    let registry = shared.connections.clone();
    let mut proxy = Service::new(
        "crawlgate proxy".into(),
        Guarded::new(app(), registry.clone()),
    );
    proxy.set_connection_filter(Arc::new(Gate(registry.clone())));
    // Listeners behind a TCP load balancer: the same proxy, whose connections start with a
    // PROXY protocol header (read before TLS on TLS listeners, pingora's pre-TLS hook).
    let mut behind = Service::new(
        "crawlgate proxy (PROXY protocol)".into(),
        Guarded::behind_proxy_protocol(app(), shared.clone()),
    );
    behind.set_connection_filter(Arc::new(Gate(registry.clone())));
    behind
        .endpoints()
        .set_pre_tls_callback(Arc::new(proxy_protocol::BeforeTls(shared.clone())));
    // Each connection gets a read buffer of this size, by listener kind (benches/RESULTS.md,
    // "Memory per connection"): pingora's 64 KiB default is most of an idle keep-alive
    // connection's memory.
    let buffers = L4BufferSettings::default().read(settings.pingora.read_buffer_bytes);
    let tls_buffers = L4BufferSettings::default().read(settings.pingora.tls_read_buffer_bytes);
    for addr in &settings.listen {
        let endpoint = ListenerConfig::tcp(addr.to_string()).l4_buffer(buffers);
        proxy.endpoints().add_listener(endpoint);
    }
    for addr in &settings.proxy_protocol_listen {
        let endpoint = ListenerConfig::tcp(addr.to_string()).l4_buffer(buffers);
        behind.endpoints().add_listener(endpoint);
    }
    let mut tls_listeners = Vec::new();
    for tls in &settings.tls_listen {
        let tls_error = |message: String| ServeError::Tls {
            addr: tls.addr,
            message,
        };
        let listener = TlsListener::load(tls).map_err(|e| tls_error(e.to_string()))?;
        let tls_settings = listener.settings().map_err(|e| tls_error(e.to_string()))?;
        let endpoint = ListenerConfig::tcp(tls.addr.to_string())
            .tls(tls_settings)
            .l4_buffer(tls_buffers);
        let service = if tls.proxy_protocol {
            &mut behind
        } else {
            &mut proxy
        };
        service.endpoints().add_listener(endpoint);
        tls_listeners.push(listener);
    }
    server.add_service(proxy);
    let behind_listeners = settings.proxy_protocol_listen.len()
        + settings
            .tls_listen
            .iter()
            .filter(|t| t.proxy_protocol)
            .count();
    if behind_listeners > 0 {
        server.add_service(behind);
    }

    if !settings.forward_auth_listen.is_empty() {
        let auth = CrawlGate::forward_auth(shared.clone());
        let app = pingora::proxy::http_proxy(&server.configuration, auth);
        let mut service = Service::new(
            "crawlgate forward-auth".into(),
            Guarded::new(app, registry.clone()),
        );
        service.set_connection_filter(Arc::new(Gate(registry.clone())));
        for addr in &settings.forward_auth_listen {
            let endpoint = ListenerConfig::tcp(addr.to_string()).l4_buffer(buffers);
            service.endpoints().add_listener(endpoint);
        }
        server.add_service(service);
    }

    if let Some(addr) = settings.metrics_listen {
        let mut admin = Service::new("crawlgate metrics".into(), AdminApp::server(shared.clone()));
        admin.add_tcp(&addr.to_string());
        server.add_service(admin);
    }
    if let Some(socket) = &demo_socket {
        let _ = std::fs::remove_file(socket);
        let mut demo = Service::new("crawlgate demo site".into(), DemoApp::server());
        demo.add_uds(&socket.to_string_lossy(), None);
        server.add_service(demo);
    }
    server.add_service(background_service(
        "crawlgate reload",
        Reloader::new(shared.clone(), config, settings.clone()),
    ));
    server.add_service(background_service(
        "crawlgate memory",
        Trimmer(shared.connections.clone()),
    ));
    if !tls_listeners.is_empty() {
        server.add_service(background_service(
            "crawlgate certificate reload",
            CertReloader::new(tls_listeners, shared.metrics.clone()),
        ));
    }
    server.add_service(background_service(
        "crawlgate signature directories",
        super::verify::signature::fetch::Fetcher::new(
            shared.signatures.clone(),
            shared.metrics.signature_directory_fetches.clone(),
            shared.metrics.signature_keys.clone(),
        ),
    ));
    if let Some(writer) = writer {
        server.add_service(background_service("crawlgate access log", writer));
    }
    log::info!(
        "accepting up to {} client connections ({} per address)",
        registry.max_connections(),
        settings.clients.max_connections_per_address
    );
    server.run(pingora::server::RunArgs {
        shutdown_signal: Box::new(Stop {
            registry,
            grace: Duration::from_secs(settings.pingora.grace_period_seconds),
            access_log: shared.access_log.clone(),
        }),
    });
    if let Some(socket) = &demo_socket {
        let _ = std::fs::remove_file(socket);
    }
    Ok(())
}
