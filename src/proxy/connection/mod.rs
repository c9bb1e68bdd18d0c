//! Client connections: how many a client may hold, how long it may take, and how the process
//! stops. pingora reads a request header with a timeout that every read resets, leaves a
//! keep-alive connection's wait for its next request untimed, and fails `accept()` once
//! descriptors run out; one client trickling bytes could hold every descriptor people need.
//! Here:
//!
//! - [`Gate`] (pingora's connection filter, run in the accept loop before any TLS handshake)
//!   refuses a client address past `clients.max_connections_per_address` (an IPv6 /64 is one
//!   address; a `trusted_proxies` member carries many clients' connections and has no cap) and, at `clients.max_connections`, stops accepting until a connection closes:
//!   the kernel's backlog holds the rest, instead of accepts failing.
//! - [`Guarded`] wraps the proxy's app so that every connection it serves is [`Watched`]: the
//!   header timeout runs from a header's first byte to its end, and the idle timeout between
//!   requests.
//! - [`Stop`] stops the process on SIGTERM as soon as the requests in flight are answered
//!   (within the grace period), instead of always sleeping the whole period.
//!
//! Counts are taken when a connection is accepted and given back when it closes; a connection
//! whose TLS handshake never completes is given back once pingora's handshake timeout is past.

mod refusal;
mod stream;

pub use refusal::Refusal;
pub use stream::Watched;

use super::access_log::AccessLog;
use super::client::TrustedProxies;
use super::config::ClientSettings;
use super::metrics::Metrics;
use super::proxy_protocol;
use super::state::Shared;
use async_trait::async_trait;
use pingora::apps::ServerApp;
use pingora::listeners::ConnectionFilter;
use pingora::protocols::l4::stream::Stream as L4Stream;
use pingora::protocols::Stream;
use pingora::server::{ShutdownSignal, ShutdownSignalWatch, ShutdownWatch};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// pingora's TLS handshake timeout (pingora-core `services/listening.rs`), and a margin: a
/// connection accepted this long ago and never served was dropped by pingora.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(65);

/// Descriptors kept for everything that is not a client connection: origin connections beyond
/// the pairs, robots.txt and key fetches, DNS, files, the metrics listener.
const RESERVED_DESCRIPTORS: usize = 256;

/// The client connections that fit the process's descriptor limit: half of what is left after
/// a reserve, since each request in flight may hold an origin connection too.
pub fn default_max_connections() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limits into the struct it is given, and reads nothing else.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    };
    (soft.saturating_sub(RESERVED_DESCRIPTORS) / 2).max(16)
}

/// One client address as the per-address limit counts it: an IPv4 address, or an IPv6 /64
/// (one host's share of a network; an attacker has a whole /64 to pick addresses from).
fn address_key(ip: IpAddr) -> u128 {
    match ip.to_canonical() {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6) & !u128::from(u64::MAX) | 1 << 127,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Accepted connections not yet handed to the app (in their TLS handshake).
#[derive(Debug, Default)]
struct Pending {
    by_peer: HashMap<SocketAddr, Instant>,
    swept: Option<Instant>,
}

/// Every client connection of the process, counted; and its limits.
pub struct Registry {
    header_timeout_ms: AtomicU64,
    body_timeout_ms: AtomicU64,
    idle_timeout_ms: AtomicU64,
    send_timeout_ms: AtomicU64,
    max_connections: AtomicUsize,
    max_per_address: AtomicUsize,
    /// The proxies in front (a load balancer holds many clients' connections): no per-address
    /// cap for them.
    trusted: Mutex<Arc<TrustedProxies>>,
    open: AtomicUsize,
    /// The most connections open since memory was last handed back.
    peak: AtomicUsize,
    by_address: Mutex<HashMap<u128, u32>>,
    pending: Mutex<Pending>,
    /// A connection closed: the accept loop may go on.
    freed: Notify,
    in_flight: AtomicUsize,
    /// The last request in flight is answered.
    quiet: Notify,
    draining: AtomicBool,
    /// When a refusal was last logged (seconds since `started`): at most one line a second.
    logged: AtomicU64,
    started: Instant,
    metrics: Metrics,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("open", &self.open)
            .field("in_flight", &self.in_flight)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// A registry with these limits, counting into `metrics`.
    pub fn new(clients: &ClientSettings, trusted: &TrustedProxies, metrics: &Metrics) -> Registry {
        let registry = Registry {
            header_timeout_ms: AtomicU64::new(0),
            body_timeout_ms: AtomicU64::new(0),
            idle_timeout_ms: AtomicU64::new(0),
            send_timeout_ms: AtomicU64::new(0),
            max_connections: AtomicUsize::new(0),
            max_per_address: AtomicUsize::new(0),
            trusted: Mutex::new(Arc::new(trusted.clone())),
            open: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            by_address: Mutex::new(HashMap::new()),
            pending: Mutex::new(Pending::default()),
            freed: Notify::new(),
            in_flight: AtomicUsize::new(0),
            quiet: Notify::new(),
            draining: AtomicBool::new(false),
            logged: AtomicU64::new(u64::MAX),
            started: Instant::now(),
            metrics: metrics.clone(),
        };
        registry.configure(clients, trusted);
        registry
    }

    /// Applies new limits (a configuration reload); connections already open keep theirs.
    pub fn configure(&self, clients: &ClientSettings, trusted: &TrustedProxies) {
        *lock(&self.trusted) = Arc::new(trusted.clone());
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        self.header_timeout_ms
            .store(ms(clients.header_timeout), Ordering::Relaxed);
        self.idle_timeout_ms
            .store(ms(clients.idle_timeout), Ordering::Relaxed);
        self.body_timeout_ms
            .store(ms(clients.body_timeout), Ordering::Relaxed);
        self.send_timeout_ms
            .store(ms(clients.send_timeout), Ordering::Relaxed);
        let max = clients
            .max_connections
            .unwrap_or_else(default_max_connections);
        self.max_connections.store(max, Ordering::Relaxed);
        self.max_per_address
            .store(clients.max_connections_per_address, Ordering::Relaxed);
        self.freed.notify_waiters();
    }

    /// The client connections allowed at once.
    pub fn max_connections(&self) -> usize {
        self.max_connections.load(Ordering::Relaxed)
    }

    /// The client connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// The longest silence while a client sends a body.
    pub fn body_timeout(&self) -> Duration {
        Duration::from_millis(self.body_timeout_ms.load(Ordering::Relaxed))
    }

    /// How long a request header (and a PROXY protocol header) may take to arrive.
    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.header_timeout_ms.load(Ordering::Relaxed))
    }

    /// The longest wait of a keep-alive connection for its next request.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_millis(self.idle_timeout_ms.load(Ordering::Relaxed))
    }

    fn send_timeout(&self) -> Duration {
        Duration::from_millis(self.send_timeout_ms.load(Ordering::Relaxed))
    }

    /// Counts a client that took too long.
    pub fn timed_out(&self, phase: &'static str) {
        self.metrics
            .client_timeouts
            .with_label_values(&[phase])
            .inc();
    }

    /// Whether a refusal may be logged now (one line a second at most: a flood of refusals must
    /// not become a flood of log lines).
    fn may_log(&self) -> bool {
        let now = self.started.elapsed().as_secs();
        let last = self.logged.load(Ordering::Relaxed);
        last != now
            && self
                .logged
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Counts and logs a request pingora would not read, and returns crawlgate's answer to it.
    fn refused_request(&self, refusal: Refusal, peer: Option<IpAddr>) -> Vec<u8> {
        self.metrics
            .bad_requests
            .with_label_values(&[refusal.reason()])
            .inc();
        if self.may_log() {
            log::info!(
                "refused a request from {}: it cannot be read: {} ({})",
                peer.map_or_else(|| "?".to_owned(), |p| p.to_string()),
                refusal.explanation(),
                refusal.reason()
            );
        }
        refusal.response()
    }

    /// Whether the process is stopping: no new connection, no keep-alive.
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// A request is in flight until the guard is dropped.
    pub fn request_started(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// The requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Refuses new connections and waits until no request is in flight, or `grace` has passed;
    /// returns how many were still in flight.
    pub async fn drain(&self, grace: Duration) -> usize {
        self.draining.store(true, Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let quiet = self.quiet.notified();
            let left = self.in_flight();
            if left == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, quiet).await.is_err() {
                return self.in_flight();
            }
        }
    }

    /// Drops pending entries older than the handshake timeout, at most once a second.
    fn sweep(&self, pending: &mut Pending, now: Instant) {
        if pending
            .swept
            .is_some_and(|at| now.duration_since(at) < Duration::from_secs(1))
        {
            return;
        }
        pending.swept = Some(now);
        let stale: Vec<SocketAddr> = pending
            .by_peer
            .iter()
            .filter(|(_, at)| now.duration_since(**at) > HANDSHAKE_LIMIT)
            .map(|(peer, _)| *peer)
            .collect();
        for peer in stale {
            pending.by_peer.remove(&peer);
            self.release(address_key(peer.ip()));
        }
    }

    /// The accept loop's check of a new connection: `false` closes it at once. At the total
    /// limit it waits for a connection to close (the accept loop waits with it).
    async fn admit(&self, peer: Option<&SocketAddr>) -> bool {
        if self.draining() {
            self.refuse_connection("draining", peer);
            return false;
        }
        let mut waited = false;
        loop {
            let freed = self.freed.notified();
            if self.open() < self.max_connections() {
                break;
            }
            if !waited {
                waited = true;
                self.metrics.accept_waits.inc();
                if self.may_log() {
                    log::warn!(
                        "{} client connections are open, the most clients.max_connections allows: accepting waits until one closes",
                        self.open()
                    );
                }
            }
            freed.await;
        }
        let Some(peer) = peer else {
            self.count(0);
            return true;
        };
        let key = address_key(peer.ip());
        let now = Instant::now();
        self.sweep(&mut lock(&self.pending), now);
        let capped = !lock(&self.trusted).contains(peer.ip());
        {
            let mut by_address = lock(&self.by_address);
            let held = by_address.entry(key).or_insert(0);
            if capped && *held as usize >= self.max_per_address.load(Ordering::Relaxed) {
                drop(by_address);
                self.refuse_connection("per_address", Some(peer));
                return false;
            }
            *held += 1;
        }
        let open = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(open, Ordering::Relaxed);
        self.metrics.client_connections.inc();
        lock(&self.pending).by_peer.insert(*peer, now);
        true
    }

    fn refuse_connection(&self, reason: &'static str, peer: Option<&SocketAddr>) {
        self.metrics
            .connections_refused
            .with_label_values(&[reason])
            .inc();
        if self.may_log() {
            let peer = peer.map_or_else(|| "?".to_owned(), |p| p.ip().to_string());
            match reason {
                "per_address" => log::warn!(
                    "refused a connection from {peer}: it holds {} already, the most clients.max_connections_per_address allows",
                    self.max_per_address.load(Ordering::Relaxed)
                ),
                _ => log::info!("refused a connection from {peer}: crawlgate is stopping"),
            }
        }
    }

    /// Counts a connection under `key` without a limit (one the gate did not see).
    fn count(&self, key: u128) {
        *lock(&self.by_address).entry(key).or_insert(0) += 1;
        self.open.fetch_add(1, Ordering::Relaxed);
        self.metrics.client_connections.inc();
    }

    /// The app took a connection the gate admitted: from now on it is given back when the
    /// connection closes.
    fn claim(self: &Arc<Self>, peer: Option<SocketAddr>) -> Admission {
        let key = peer.map_or(0, |p| address_key(p.ip()));
        let admitted = peer.is_some_and(|p| lock(&self.pending).by_peer.remove(&p).is_some());
        if !admitted {
            // Swept while it shook hands, or from a listener without the gate: counted now.
            self.count(key);
        }
        Admission {
            registry: self.clone(),
            key,
        }
    }

    fn release(&self, key: u128) {
        {
            let mut by_address = lock(&self.by_address);
            if let Some(held) = by_address.get_mut(&key) {
                *held = held.saturating_sub(1);
                if *held == 0 {
                    by_address.remove(&key);
                }
            }
        }
        self.open.fetch_sub(1, Ordering::Relaxed);
        self.metrics.client_connections.dec();
        self.freed.notify_one();
    }
}

/// A client connection's place in the counts, given back when it closes.
#[derive(Debug)]
pub(crate) struct Admission {
    registry: Arc<Registry>,
    key: u128,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.registry.release(self.key);
    }
}

/// A request in flight, for a prompt and complete stop.
#[derive(Debug)]
pub struct InFlight(Arc<Registry>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.0.quiet.notify_waiters();
        }
    }
}

/// Connections that must have closed since the peak before memory is handed back: a storm, not
/// the ebb and flow of ordinary traffic.
const STORM: usize = 256;

/// Hands the memory of closed connections back to the system after a storm of them. glibc's
/// allocator keeps what every worker thread's arena once held: after 10,000 idle connections
/// closed, the process stayed at its peak (`benches/load/connections.sh`). `malloc_trim` gives
/// back the free pages of every arena; it runs here, off the request path, when the open
/// connections have fallen to half of their peak and by at least [`STORM`].
pub struct Trimmer(pub Arc<Registry>);

#[async_trait]
impl pingora::services::background::BackgroundService for Trimmer {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            tokio::select! {
                _ = every.tick() => {}
                _ = shutdown.changed() => return,
            }
            let (open, peak) = (self.0.open(), self.0.peak.load(Ordering::Relaxed));
            if peak >= open.saturating_mul(2) && peak - open >= STORM {
                self.0.peak.store(open, Ordering::Relaxed);
                let started = Instant::now();
                let released = trim();
                log::debug!(
                    "{peak} connections fell to {open}: memory handed back ({released}) in {} ms",
                    started.elapsed().as_millis()
                );
            }
        }
    }
}

/// Gives the allocator's free pages back to the system; whether any were.
#[cfg(target_env = "gnu")]
fn trim() -> bool {
    // SAFETY: malloc_trim only walks the allocator's own free lists; it takes no pointer.
    unsafe { libc::malloc_trim(0) == 1 }
}

/// Other allocators give memory back by themselves.
#[cfg(not(target_env = "gnu"))]
fn trim() -> bool {
    false
}

/// pingora's connection filter: the per-address limit and accept back-pressure.
#[derive(Debug)]
pub struct Gate(pub Arc<Registry>);

#[async_trait]
impl ConnectionFilter for Gate {
    async fn should_accept(&self, peer: Option<&SocketAddr>) -> bool {
        self.0.admit(peer).await
    }
}

/// The proxy's app, with every connection it serves [`Watched`].
pub struct Guarded<A> {
    inner: Arc<A>,
    registry: Arc<Registry>,
    /// Its plain connections start with a PROXY protocol header ([`proxy_protocol`]; TLS ones
    /// have had theirs read before the handshake).
    proxy_protocol: Option<Arc<Shared>>,
}

impl<A> Guarded<A> {
    /// Wraps `inner`.
    pub fn new(inner: A, registry: Arc<Registry>) -> Guarded<A> {
        Guarded {
            inner: Arc::new(inner),
            registry,
            proxy_protocol: None,
        }
    }

    /// Wraps `inner`, whose plain connections start with a PROXY protocol header.
    pub fn behind_proxy_protocol(inner: A, shared: Arc<Shared>) -> Guarded<A> {
        Guarded {
            inner: Arc::new(inner),
            registry: shared.connections.clone(),
            proxy_protocol: Some(shared),
        }
    }
}

#[async_trait]
impl<A: ServerApp + Send + Sync + 'static> ServerApp for Guarded<A> {
    async fn process_new(
        self: &Arc<Self>,
        stream: Stream,
        shutdown: &ShutdownWatch,
    ) -> Option<Stream> {
        let stream = match &self.proxy_protocol {
            Some(shared) if stream.get_ssl().is_none() => {
                let mut plain = stream.into_any().downcast::<L4Stream>().ok()?;
                proxy_protocol::accept_in_time(&mut plain, shared)
                    .await
                    .ok()?;
                plain
            }
            _ => stream,
        };
        // The peer is the client a PROXY protocol header named, where there was one.
        let peer = stream
            .get_socket_digest()
            .and_then(|d| d.peer_addr().and_then(|a| a.as_inet().copied()));
        let admission = self.registry.claim(peer);
        let watched: Stream = Box::new(Watched::new(stream, self.registry.clone(), admission));
        self.inner.process_new(watched, shutdown).await
    }

    async fn cleanup(&self) {
        self.inner.cleanup().await
    }
}

/// How the process stops: SIGTERM drains (new connections refused, keep-alive off) until the
/// requests in flight are answered or the grace period is over, then exits at once; SIGINT
/// exits at once; SIGQUIT hands the listeners to a new process, as pingora does.
pub struct Stop {
    /// The connections.
    pub registry: Arc<Registry>,
    /// The longest drain.
    pub grace: Duration,
    /// The access log, whose queued lines are written before exiting.
    pub access_log: Option<AccessLog>,
}

impl Stop {
    async fn drain(&self) {
        log::info!(
            "SIGTERM: stopping; {} request(s) in flight, {} connection(s) open; waiting up to {}s for them",
            self.registry.in_flight(),
            self.registry.open(),
            self.grace.as_secs()
        );
        let started = Instant::now();
        let left = self.registry.drain(self.grace).await;
        if let Some(log) = &self.access_log {
            let deadline = Instant::now() + Duration::from_secs(1);
            while log.queued() > 0 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        if left == 0 {
            log::info!(
                "stopped after {} ms: every request in flight was answered",
                started.elapsed().as_millis()
            );
        } else {
            log::warn!(
                "stopped after the {}s grace period with {left} request(s) unanswered",
                self.grace.as_secs()
            );
        }
    }
}

#[async_trait]
impl ShutdownSignalWatch for Stop {
    async fn recv(&self) -> ShutdownSignal {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int), Ok(mut quit)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::quit()),
        ) else {
            log::error!("cannot listen for SIGTERM, SIGINT and SIGQUIT: stop with SIGKILL");
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {
                self.drain().await;
                ShutdownSignal::FastShutdown
            }
            _ = int.recv() => {
                log::info!("SIGINT: stopping now");
                ShutdownSignal::FastShutdown
            }
            _ = quit.recv() => {
                log::info!("SIGQUIT: handing the listeners to the new process");
                ShutdownSignal::GracefulUpgrade
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(max: usize, per_address: usize) -> Arc<Registry> {
        let clients = ClientSettings {
            max_connections: Some(max),
            max_connections_per_address: per_address,
            ..ClientSettings::default()
        };
        Arc::new(Registry::new(
            &clients,
            &TrustedProxies::default(),
            &Metrics::new().unwrap(),
        ))
    }

    fn peer(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[tokio::test]
    async fn an_address_holds_at_most_its_share() {
        let registry = registry(100, 2);
        assert!(registry.admit(Some(&peer("192.0.2.1:1"))).await);
        assert!(registry.admit(Some(&peer("192.0.2.1:2"))).await);
        assert!(!registry.admit(Some(&peer("192.0.2.1:3"))).await);
        assert!(registry.admit(Some(&peer("192.0.2.2:1"))).await);
        // One IPv6 /64 is one address.
        assert!(registry.admit(Some(&peer("[2001:db8::1]:1"))).await);
        assert!(registry.admit(Some(&peer("[2001:db8::2]:1"))).await);
        assert!(!registry.admit(Some(&peer("[2001:db8::3]:1"))).await);
        assert!(registry.admit(Some(&peer("[2001:db8:0:1::3]:1"))).await);
        assert_eq!(registry.open(), 6);
        // A connection that closes gives its place back.
        let admission = registry.claim(Some(peer("192.0.2.1:1")));
        drop(admission);
        assert_eq!(registry.open(), 5);
        assert!(registry.admit(Some(&peer("192.0.2.1:4"))).await);
    }

    /// A load balancer in `trusted_proxies` carries many people's connections from one address:
    /// capping it would refuse them. The total limit still holds.
    #[tokio::test]
    async fn a_trusted_proxy_is_not_held_to_an_addresss_share() {
        let registry = registry(5, 2);
        let trusted = TrustedProxies::new(
            vec!["10.0.0.0/8".parse().unwrap()],
            crate::proxy::client::ForwardingHeader::default(),
        );
        registry.configure(
            &ClientSettings {
                max_connections: Some(5),
                max_connections_per_address: 2,
                ..ClientSettings::default()
            },
            &trusted,
        );
        for port in 1..=4 {
            assert!(
                registry
                    .admit(Some(&peer(&format!("10.0.0.2:{port}"))))
                    .await
            );
        }
        assert!(registry.admit(Some(&peer("192.0.2.1:1"))).await);
        assert_eq!(registry.open(), 5);
        let sixth = {
            let registry = registry.clone();
            tokio::spawn(async move { registry.admit(Some(&peer("10.0.0.2:5"))).await })
        };
        tokio::task::yield_now().await;
        assert!(
            !sixth.is_finished(),
            "the total limit holds for a trusted proxy too"
        );
        sixth.abort();
    }

    #[tokio::test]
    async fn at_the_limit_accepting_waits_for_a_connection_to_close() {
        let registry = registry(1, 10);
        assert!(registry.admit(Some(&peer("192.0.2.1:1"))).await);
        let first = registry.claim(Some(peer("192.0.2.1:1")));
        let waiting = {
            let registry = registry.clone();
            tokio::spawn(async move { registry.admit(Some(&peer("192.0.2.2:1"))).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        assert!(waiting.await.unwrap());
        assert_eq!(registry.open(), 1);
    }

    #[tokio::test]
    async fn a_handshake_that_never_ends_gives_its_place_back() {
        let registry = registry(10, 1);
        assert!(registry.admit(Some(&peer("192.0.2.1:1"))).await);
        assert!(!registry.admit(Some(&peer("192.0.2.1:2"))).await);
        let long_ago = Instant::now() - HANDSHAKE_LIMIT - Duration::from_secs(1);
        {
            let mut pending = lock(&registry.pending);
            pending.by_peer.insert(peer("192.0.2.1:1"), long_ago);
            pending.swept = None;
        }
        assert!(registry.admit(Some(&peer("192.0.2.1:3"))).await);
        assert_eq!(registry.open(), 1);
    }

    #[tokio::test]
    async fn a_drain_ends_when_the_last_request_is_answered() {
        let registry = registry(10, 10);
        let request = registry.request_started();
        let drained = {
            let registry = registry.clone();
            tokio::spawn(async move { registry.drain(Duration::from_secs(30)).await })
        };
        tokio::task::yield_now().await;
        assert!(registry.draining());
        assert!(!registry.admit(Some(&peer("192.0.2.1:1"))).await);
        drop(request);
        assert_eq!(drained.await.unwrap(), 0);
        // Nothing in flight: at once.
        assert_eq!(registry.drain(Duration::from_secs(30)).await, 0);
    }
}
