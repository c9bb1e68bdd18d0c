//! What the shared state store adds to a crawler's request: the latency of one
//! [`StateStore::visit`] (the robots.txt fetch read and the crawl-delay update, one round trip)
//! against a `redis-server` (or `valkey-server`) this benchmark starts on a loopback port, beside
//! the same call on the embedded memory store. People's requests never call it.
//!
//!   cargo bench --bench state_store            # CALLS=20000 SUBJECTS=1000 TASKS="1 8"
//!
//! Each call is timed on its own (a current-thread runtime, as a pingora worker thread has); the
//! table gives the median, the 99th percentile and the worst call, and how many calls took longer
//! than the default 5 ms budget (with the budget, those would be decided from the instance's
//! memory instead). The budget here is 1 s so that the store's own distribution is measured.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crawlgate::proxy::metrics::Metrics;
use crawlgate::proxy::politeness::{PaceQuery, Subject};
use crawlgate::proxy::store::memory::MemoryStore;
use crawlgate::proxy::store::redis::{RedisStore, StoreMetrics};
use crawlgate::proxy::store::{MemoryLimits, StateStore};
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BUDGET: Duration = Duration::from_millis(5);

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A store server on a free loopback port, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(dir: &std::path::Path) -> Option<(Server, u16)> {
    let binary = ["redis-server", "valkey-server"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })?;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(binary)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server(child);
    let start = Instant::now();
    loop {
        let pong = TcpStream::connect(("127.0.0.1", port))
            .ok()
            .and_then(|mut s| {
                s.write_all(b"PING\r\n").ok()?;
                let mut reply = [0u8; 16];
                let n = s.read(&mut reply).ok()?;
                Some(reply[..n].starts_with(b"+PONG"))
            });
        if pong == Some(true) {
            return Some((server, port));
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{binary} never answered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Times `calls` visits by `tasks` concurrent tasks over `subjects` clients of one crawler.
fn measure(
    store: Arc<dyn StateStore>,
    calls: usize,
    subjects: usize,
    tasks: usize,
) -> Vec<Duration> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let site: Arc<str> = Arc::from("bench");
    let query = PaceQuery {
        delay: Duration::from_secs(10),
        only_if_fetched: None,
    };
    runtime.block_on(async {
        // Warm-up: connect, load the script.
        for i in 0..200u32 {
            let subject = Subject::Client(IpAddr::from((0xC633_6400 + i).to_be_bytes()));
            store.visit(&site, &subject, Some(query), true).await;
        }
        let per_task = calls / tasks;
        let mut handles = Vec::new();
        let local = tokio::task::LocalSet::new();
        for task in 0..tasks {
            let (store, site) = (store.clone(), site.clone());
            handles.push(local.spawn_local(async move {
                let mut times = Vec::with_capacity(per_task);
                for i in 0..per_task {
                    let n = u32::try_from((task * per_task + i) % subjects).unwrap();
                    let subject = Subject::Client(IpAddr::from((0xCB00_7100 + n).to_be_bytes()));
                    let start = Instant::now();
                    std::hint::black_box(store.visit(&site, &subject, Some(query), true).await);
                    times.push(start.elapsed());
                }
                times
            }));
        }
        local
            .run_until(async {
                let mut all = Vec::new();
                for handle in handles {
                    all.extend(handle.await.unwrap());
                }
                all
            })
            .await
    })
}

fn micros(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn row(name: &str, mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let n = times.len();
    let (median, p99, worst) = (times[n / 2], times[n * 99 / 100], times[n - 1]);
    let over = times.iter().filter(|t| **t > BUDGET).count();
    println!(
        "{name:<24} {n:>7} {:>11} {:>11} {:>11} {over:>9}",
        micros(median),
        micros(p99),
        micros(worst)
    );
    (median, p99)
}

fn main() {
    let calls = env_number("CALLS", 20_000);
    let subjects = env_number("SUBJECTS", 1_000);
    let tasks: Vec<usize> = std::env::var("TASKS")
        .unwrap_or_else(|_| "1 8".into())
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let Some((_server, port)) = start_server(dir.path()) else {
        println!(
            "state_store: neither redis-server nor valkey-server is installed; nothing measured"
        );
        return;
    };
    let limits = MemoryLimits {
        max_tracked: 100_000,
        remember_fetches: Duration::from_secs(24 * 3600),
        dns_entries: 100_000,
        signature_uses: 100_000,
        unlisted_signature_uses: 10_000,
    };
    let metrics = Metrics::new().unwrap();
    let redis: Arc<dyn StateStore> = Arc::new(
        RedisStore::new(
            &format!("redis://127.0.0.1:{port}/0"),
            Duration::from_secs(1),
            limits,
            StoreMetrics {
                errors: metrics.state_store_errors.clone(),
                up: metrics.state_store_up.with_label_values(&["redis"]),
            },
        )
        .unwrap(),
    );
    println!(
        "one crawler request's store call (visit: fetch read + crawl-delay update), {calls} calls over {subjects} clients; microseconds"
    );
    println!(
        "{:<24} {:>7} {:>11} {:>11} {:>11} {:>9}",
        "store", "calls", "median", "p99", "worst", ">5ms"
    );
    for &n in &tasks {
        let memory: Arc<dyn StateStore> = Arc::new(MemoryStore::new(limits));
        let (m50, m99) = row(
            &format!("memory, {n} task(s)"),
            measure(memory, calls, subjects, n),
        );
        let (r50, r99) = row(
            &format!("redis, {n} task(s)"),
            measure(redis.clone(), calls, subjects, n),
        );
        if let Err(why) = redis.health() {
            println!("  the store was not answering at the end: {why}");
        }
        println!(
            "{:<24} {:>7} {:>11} {:>11}",
            "  added by redis",
            "",
            micros(r50.saturating_sub(m50)),
            micros(r99.saturating_sub(m99))
        );
    }
    let errors: Vec<String> = ["error", "timeout", "unavailable"]
        .iter()
        .map(|r| {
            format!(
                "{r} {}",
                metrics.state_store_errors.with_label_values(&[r]).get()
            )
        })
        .collect();
    println!("fallbacks to the instance's memory: {}", errors.join(", "));
}
