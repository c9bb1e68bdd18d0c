//! The shared store: a Redis or Valkey server that every crawlgate of a fleet points at.
//!
//! Each crawler request asks it once, within a budget (5 ms by default): one script reads the
//! crawler's robots.txt fetch and updates its crawl-delay slot atomically, against the server's
//! own clock, so that two instances cannot both let a crawler in within one delay. Every answer
//! is copied into the instance's own [`MemoryStore`]; when the store errs or is slower than the
//! budget, the instance decides from that memory and counts it
//! (`crawlgate_state_store_errors_total`). After an error, or three late answers in a row, it
//! reports itself degraded and stops asking until a probe (every half second, off the request
//! path) gets an answer within the budget again.
//!
//! Keys (see docs/manual.md for their sizes and lifetimes): `crawlgate:SITE:delay:SUBJECT` (the
//! next allowed time, expiring then), `crawlgate:SITE:fetch:SUBJECT` (the last robots.txt fetch,
//! expiring after the longer of the read window and grace) and `crawlgate:dns:TOKEN:ADDRESS`
//! (an outcome, expiring after its TTL), and `crawlgate:sig:DIGEST` (a listed directory's
//! signature used: its holder's digest, or empty for a nonce, expiring with the signature).
//! A subject is `bot:TOKEN` (a verified crawler),
//! `claim:TOKEN:ADDRESS` (an unverified claim) or `ip:ADDRESS`. Site names and tokens hold no
//! `:`, so no two subjects share a key.

use super::memory::MemoryStore;
use super::{DnsKey, Entries, MemoryLimits, StateStore};
use crate::proxy::politeness::{Pace, PaceQuery, Subject, Visit};
use crate::proxy::verify::dns::DnsOutcome;
use crate::proxy::verify::signature::reuse::{hex, Digest, Partition, SignatureUse};
use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The crawl-delay update, one round trip. KEYS[1]: the subject's last robots.txt fetch
/// (milliseconds since the epoch, by the instances' clocks); KEYS[2]: when it may come next
/// (milliseconds, by this server's clock, which every instance shares). ARGV[1]: the delay in
/// milliseconds, 0 when none is asked; ARGV[2] and ARGV[3]: pace only when the fetch is in
/// [ARGV[2], ARGV[3]) (empty: always); ARGV[4]: `1` when the request takes the slot. Returns
/// the fetch (or `''`) and the wait in milliseconds: -1 when not paced, 0 when within the delay.
/// The rule is [`crate::proxy::politeness::slot`]'s.
const VISIT: &str = r"
local fetched = redis.call('GET', KEYS[1]) or ''
local delay = tonumber(ARGV[1])
if delay == 0 then return {fetched, -1} end
if ARGV[2] ~= '' then
  local at = tonumber(fetched)
  if at == nil or at < tonumber(ARGV[2]) or at >= tonumber(ARGV[3]) then return {fetched, -1} end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local next = tonumber(redis.call('GET', KEYS[2]) or '')
if next ~= nil and next > now then return {fetched, next - now} end
if ARGV[4] == '1' then
  redis.call('SET', KEYS[2], string.format('%.0f', now + delay), 'PX', delay)
end
return {fetched, 0}
";

/// A signature's use, one round trip. KEYS[1]: the use's key; ARGV[1]: the holder's digest
/// (empty for a nonce, which nobody may use again); ARGV[2]: how long to remember it, in
/// milliseconds. Returns 1 when the use may be accepted (its first, or its holder's again).
const SIGNATURE_USE: &str = r"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
";

/// How often a store that failed is asked whether it is back.
const PROBE_EVERY: Duration = Duration::from_millis(500);

/// How many answers in a row may come later than the budget before the store counts as down:
/// one late answer on a busy host costs only its own request the fleet's view, not the next
/// half second's requests.
const LATE_IN_A_ROW: u32 = 3;

/// The shared store cannot be set up (its URL is checked when the configuration is read, so
/// this is rare: no thread for the connection, say).
#[derive(Debug, thiserror::Error)]
#[error("state store {url}: {message}")]
pub struct StoreError {
    /// The store's URL, password hidden.
    pub url: String,
    /// Why.
    pub message: String,
}

/// Checks a store URL as the configuration gives it: `redis://`, `valkey://`,
/// `redis+unix://` or `unix://`; `rediss://` is refused, as this build has no TLS to the store.
pub fn check_url(url: &str) -> Result<(), String> {
    if url.starts_with("rediss://") || url.starts_with("valkeys://") {
        return Err(format!(
            "`{}`: TLS to the store is not supported; keep the store on loopback or a private network and use redis://",
            shown(url)
        ));
    }
    redis::Client::open(url).map(drop).map_err(|e| {
        format!(
            "`{}` is not a store URL ({e}); write it like redis://127.0.0.1:6379/0",
            shown(url)
        )
    })
}

/// A URL with its password hidden, for logs and `/healthz`.
pub fn shown(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}"),
        None => url.to_owned(),
    }
}

/// Whether the store answers, and why not; shared by the request path and the probe.
struct Status {
    up: AtomicBool,
    /// Answers later than the budget since the last one in time.
    late: AtomicU32,
    why: Mutex<String>,
    /// `crawlgate_state_store_errors_total{reason}`.
    errors: prometheus::IntCounterVec,
    /// `crawlgate_state_store_up`.
    gauge: prometheus::IntGauge,
    url: String,
}

impl Status {
    fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    /// A request decided from the instance's memory, and why.
    fn fell_back(&self, reason: &'static str) {
        self.errors.with_label_values(&[reason]).inc();
    }

    fn down(&self, why: String) {
        if let Ok(mut slot) = self.why.lock() {
            *slot = why.clone();
        }
        if self.up.swap(false, Ordering::Relaxed) {
            self.gauge.set(0);
            log::warn!(
                "state store {}: {why}; deciding from this instance's memory until it answers",
                self.url
            );
        }
    }

    /// An answer within the budget.
    fn answered(&self) {
        self.late.store(0, Ordering::Relaxed);
        self.back();
    }

    /// An answer later than the budget: down after [`LATE_IN_A_ROW`] of them.
    fn late(&self, what: &str, budget: Duration) {
        if self.late.fetch_add(1, Ordering::Relaxed) + 1 >= LATE_IN_A_ROW {
            self.down(format!(
                "{what}: no answer within the {} ms budget, {LATE_IN_A_ROW} times in a row",
                budget.as_millis()
            ));
        }
    }

    fn back(&self) {
        if !self.up.swap(true, Ordering::Relaxed) {
            self.gauge.set(1);
            log::info!("state store {} answers again", self.url);
        }
    }

    fn why(&self) -> String {
        match self.why.lock() {
            Ok(why) => why.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// The metrics the shared store reports in.
#[derive(Debug, Clone)]
pub struct StoreMetrics {
    /// `crawlgate_state_store_errors_total{reason}`: requests decided from the instance's
    /// memory because the store erred (`error`), was slower than the budget (`timeout`) or was
    /// known to be down (`unavailable`).
    pub errors: prometheus::IntCounterVec,
    /// `crawlgate_state_store_up`: 1 while the store answers.
    pub up: prometheus::IntGauge,
}

/// Politeness and DNS state in Redis or Valkey, with this instance's memory as the fallback.
pub struct RedisStore {
    local: MemoryStore,
    connection: ConnectionManager,
    script: Arc<redis::Script>,
    signature_script: Arc<redis::Script>,
    /// Where every command runs: see `runtime`.
    handle: tokio::runtime::Handle,
    budget: Duration,
    remember_fetches_ms: u64,
    status: Arc<Status>,
    /// The runtime that owns the connection's tasks and the probe, and runs every command: the
    /// connection's driver is spawned on the runtime its first command runs on, and the proxy's
    /// runtimes come and go with pingora's services (`explain`'s with the command); this one
    /// lives as long as the store.
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.status.url)
            .field("budget", &self.budget)
            .field("up", &self.status.is_up())
            .field("local", &self.local)
            .finish()
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        // Dropping a runtime waits for its tasks, which a caller on another runtime may not do.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// At least one millisecond: Redis expiries are whole milliseconds and must be positive.
fn whole_millis(d: Duration) -> u64 {
    u64::try_from(d.as_micros().div_ceil(1000))
        .unwrap_or(u64::MAX)
        .max(1)
}

fn subject_key(out: &mut String, subject: &Subject) {
    let _ = match subject {
        Subject::Crawler(token) => write!(out, "bot:{token}"),
        Subject::Claim(token, addr) => write!(out, "claim:{token}:{addr}"),
        Subject::Client(addr) => write!(out, "ip:{addr}"),
    };
}

fn politeness_key(site: &str, kind: &str, subject: &Subject) -> String {
    let mut key = format!("crawlgate:{site}:{kind}:");
    subject_key(&mut key, subject);
    key
}

fn dns_key(key: &DnsKey) -> String {
    format!("crawlgate:dns:{}:{}", key.1, key.0)
}

fn signature_key(signature: &SignatureUse) -> String {
    format!("crawlgate:sig:{}", hex(&signature.key))
}

/// How long a use is remembered from now: until its signature expires, at least a second.
fn remember_for_ms(signature: &SignatureUse) -> u64 {
    until_ms(signature.until)
}

/// Milliseconds from now until `until` (seconds since the epoch): at least a second, a year at
/// most.
fn until_ms(until: i64) -> u64 {
    let now = millis(SystemTime::now()) / 1000;
    let left = u64::try_from(until).unwrap_or(0).saturating_sub(now);
    left.clamp(1, 365 * 24 * 3600) * 1000
}

fn charge_key(id: &Digest) -> String {
    format!("crawlgate:charge:{}", hex(id))
}

/// The stream every instance's ledger lines meet in.
pub const LEDGER_STREAM: &str = "crawlgate:ledger";

/// About how many lines the stream keeps (`XADD … MAXLEN ~`): a feed for a fleet's dashboards
/// and billing jobs to read, bounded so that nobody reading it never fills the store; the
/// instances' files are the record.
pub const LEDGER_STREAM_MAX: u64 = 1_000_000;

fn encode(outcome: &DnsOutcome) -> String {
    match outcome {
        DnsOutcome::Verified(text) => format!("verified\n{text}"),
        DnsOutcome::Spoofed(text) => format!("spoofed\n{text}"),
        DnsOutcome::Unverifiable(text) => format!("unverifiable\n{text}"),
    }
}

fn decode(value: &str) -> Option<DnsOutcome> {
    let (kind, text) = value.split_once('\n')?;
    let text = text.to_owned();
    match kind {
        "verified" => Some(DnsOutcome::Verified(text)),
        "spoofed" => Some(DnsOutcome::Spoofed(text)),
        "unverifiable" => Some(DnsOutcome::Unverifiable(text)),
        _ => None,
    }
}

impl RedisStore {
    /// A store at `url` (checked by [`check_url`]) that waits at most `budget` for an answer,
    /// with this instance's memory within `limits`. Connects lazily: a store that is down now
    /// is reported and retried, never fatal.
    pub fn new(
        url: &str,
        budget: Duration,
        limits: MemoryLimits,
        metrics: StoreMetrics,
    ) -> Result<RedisStore, StoreError> {
        let error = |message: String| StoreError {
            url: shown(url),
            message,
        };
        let client = redis::Client::open(url).map_err(|e| error(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("crawlgate-store")
            .enable_all()
            .build()
            .map_err(|e| error(format!("cannot start its thread: {e}")))?;
        // The connection's own timeouts only bound what the budget has given up on: a reply
        // that never comes must not hold memory forever.
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(1)))
            .set_response_timeout(Some(Duration::from_secs(1)))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50));
        let connection = {
            let _inside = runtime.enter();
            ConnectionManager::new_lazy_with_config(client, config)
        };
        let connection = match connection {
            Ok(connection) => connection,
            Err(e) => {
                // Dropped here, the runtime would wait for its threads, which a caller on a
                // runtime of its own (explain) may not do.
                runtime.shutdown_background();
                return Err(error(e.to_string()));
            }
        };
        metrics.up.set(1);
        let status = Arc::new(Status {
            up: AtomicBool::new(true),
            late: AtomicU32::new(0),
            why: Mutex::new(String::new()),
            errors: metrics.errors,
            gauge: metrics.up,
            url: shown(url),
        });
        runtime.spawn(probe(connection.clone(), status.clone(), budget));
        Ok(RedisStore {
            local: MemoryStore::new(limits),
            connection,
            script: Arc::new(redis::Script::new(VISIT)),
            signature_script: Arc::new(redis::Script::new(SIGNATURE_USE)),
            handle: runtime.handle().clone(),
            budget,
            remember_fetches_ms: whole_millis(limits.remember_fetches),
            status,
            runtime: Some(runtime),
        })
    }

    /// Runs one request to the store, on the store's runtime, within the budget; `None`
    /// (counted) when it fails (the store is then down), is too slow (down after
    /// [`LATE_IN_A_ROW`] such) or is known to be down.
    /// A request the budget gave up on finishes in the background (bounded by the connection's
    /// response timeout).
    async fn ask<T: Send + 'static>(
        &self,
        what: &str,
        request: impl Future<Output = redis::RedisResult<T>> + Send + 'static,
    ) -> Option<T> {
        if !self.status.is_up() {
            self.status.fell_back("unavailable");
            return None;
        }
        match tokio::time::timeout(self.budget, self.handle.spawn(request)).await {
            Ok(Ok(Ok(value))) => {
                self.status.answered();
                Some(value)
            }
            Ok(Ok(Err(e))) => {
                self.status.fell_back("error");
                self.status.down(format!("{what}: {e}"));
                None
            }
            Ok(Err(e)) => {
                self.status.fell_back("error");
                self.status.down(format!("{what}: {e}"));
                None
            }
            Err(_) => {
                self.status.fell_back("timeout");
                self.status.late(what, self.budget);
                None
            }
        }
    }
}

/// Pings the store every [`PROBE_EVERY`]: a store that answers within the budget is up.
async fn probe(mut connection: ConnectionManager, status: Arc<Status>, budget: Duration) {
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        let ping = redis::cmd("PING");
        match tokio::time::timeout(budget, ping.query_async::<String>(&mut connection)).await {
            Ok(Ok(_)) => status.answered(),
            Ok(Err(e)) => status.down(format!("ping: {e}")),
            Err(_) => status.late("ping", budget),
        }
    }
}

#[async_trait]
impl StateStore for RedisStore {
    async fn visit(
        &self,
        site: &Arc<str>,
        subject: &Subject,
        pace: Option<PaceQuery>,
        record: bool,
    ) -> Visit {
        let keys = [
            politeness_key(site, "fetch", subject),
            politeness_key(site, "delay", subject),
        ];
        let delay = pace.map_or(0, |q| whole_millis(q.delay));
        let window = pace
            .and_then(|q| q.only_if_fetched)
            .map(|(from, until)| (millis(from), millis(until)));
        let (script, mut connection) = (self.script.clone(), self.connection.clone());
        let request = async move {
            let mut invocation = script.prepare_invoke();
            invocation.key(&keys[0]).key(&keys[1]).arg(delay);
            match window {
                Some((from, until)) => invocation.arg(from).arg(until),
                None => invocation.arg("").arg(""),
            };
            invocation.arg(if record { "1" } else { "0" });
            invocation
                .invoke_async::<(String, i64)>(&mut connection)
                .await
        };
        let sent = Instant::now();
        let answer = self.ask("crawl-delay update", request).await;
        let Some((fetched, wait)) = answer else {
            return self.local.visit_now(site, subject, pace, record);
        };
        // Copy the fleet's answer into this instance's memory, so that falling back to it later
        // is as strict as the store was.
        let last_fetch = fetched
            .parse::<u64>()
            .ok()
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms));
        if let Some(at) = last_fetch {
            self.local.remember_fetch(site, subject, at);
        }
        let pace = match (u64::try_from(wait), pace) {
            (Ok(0), Some(query)) => {
                if record {
                    self.local.hold_until(site, subject, sent + query.delay);
                }
                Some(Pace::Ok)
            }
            (Ok(wait), Some(_)) => {
                let wait = Duration::from_millis(wait);
                self.local.hold_until(site, subject, sent + wait);
                Some(Pace::TooSoon(wait))
            }
            _ => None,
        };
        Visit { last_fetch, pace }
    }

    async fn robots_fetched(&self, site: &Arc<str>, subject: &Subject, at: SystemTime) {
        self.local.remember_fetch(site, subject, at);
        let mut connection = self.connection.clone();
        let mut set = redis::cmd("SET");
        set.arg(politeness_key(site, "fetch", subject))
            .arg(millis(at))
            .arg("PX")
            .arg(self.remember_fetches_ms);
        let request = async move { set.query_async::<()>(&mut connection).await };
        self.ask("robots.txt fetch", request).await;
    }

    fn recall_dns(&self, key: &DnsKey) -> Option<DnsOutcome> {
        self.local.recall_dns(key)
    }

    async fn lookup_dns(&self, key: &DnsKey) -> Option<DnsOutcome> {
        if let Some(outcome) = self.local.recall_dns(key) {
            return Some(outcome);
        }
        let name = dns_key(key);
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(&name).cmd("PTTL").arg(&name);
        let mut connection = self.connection.clone();
        let request = async move {
            pipe.query_async::<(Option<String>, i64)>(&mut connection)
                .await
        };
        let (value, ttl) = self.ask("DNS outcome", request).await?;
        let outcome = decode(&value?)?;
        let ttl = Duration::from_millis(u64::try_from(ttl).ok().filter(|&ms| ms > 0)?);
        self.local.keep_dns(key, &outcome, ttl);
        Some(outcome)
    }

    async fn remember_dns(&self, key: &DnsKey, outcome: &DnsOutcome, ttl: Duration) {
        self.local.keep_dns(key, outcome, ttl);
        let mut connection = self.connection.clone();
        let mut set = redis::cmd("SET");
        set.arg(dns_key(key))
            .arg(encode(outcome))
            .arg("PX")
            .arg(whole_millis(ttl));
        let request = async move { set.query_async::<()>(&mut connection).await };
        self.ask("DNS outcome", request).await;
    }

    async fn use_signature(&self, signature: &SignatureUse, holder: &Digest) -> bool {
        // Signatures of directories nobody listed stay in this instance: they prove no
        // crawler's identity, and anybody can make them by the million.
        if signature.partition == Partition::Unlisted {
            return self.local.use_signature_now(signature, holder);
        }
        // What this instance saw already needs no round trip: a replay stays one, and the
        // store accepted this holder's use before.
        if let Some(known) = self.local.recall_signature(signature, holder) {
            return known;
        }
        let key = signature_key(signature);
        let mine = if signature.nonce {
            String::new()
        } else {
            hex(holder)
        };
        let ttl = remember_for_ms(signature);
        let (script, mut connection) = (self.signature_script.clone(), self.connection.clone());
        let request = async move {
            let mut invocation = script.prepare_invoke();
            invocation.key(key).arg(mine).arg(ttl);
            invocation.invoke_async::<i64>(&mut connection).await
        };
        match self.ask("signature use", request).await {
            Some(1) => {
                self.local.keep_signature(signature, holder);
                true
            }
            // Another holder's (or a used nonce): not remembered here, so that the holder it
            // belongs to is still accepted by this instance.
            Some(_) => false,
            None => self.local.use_signature_now(signature, holder),
        }
    }

    async fn claim_charge(&self, id: &Digest, until: i64) -> Result<bool, String> {
        let mut set = redis::cmd("SET");
        set.arg(charge_key(id))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(until_ms(until));
        let mut connection = self.connection.clone();
        let request = async move { set.query_async::<Option<String>>(&mut connection).await };
        match self.ask("charge claim", request).await {
            Some(set) => Ok(set.is_some()),
            None if self.status.is_up() => Err(format!(
                "no answer within the {} ms budget",
                self.budget.as_millis()
            )),
            None => Err(self.status.why()),
        }
    }

    async fn release_charge(&self, id: &Digest) {
        let mut del = redis::cmd("DEL");
        del.arg(charge_key(id));
        let mut connection = self.connection.clone();
        let request = async move { del.query_async::<i64>(&mut connection).await };
        self.ask("charge release", request).await;
    }

    async fn record_charge(&self, line: &[u8]) {
        let mut add = redis::cmd("XADD");
        let line = line.strip_suffix(b"\n").unwrap_or(line).to_vec();
        add.arg(LEDGER_STREAM)
            .arg("MAXLEN")
            .arg("~")
            .arg(LEDGER_STREAM_MAX)
            .arg("*")
            .arg("line")
            .arg(line);
        let mut connection = self.connection.clone();
        let request = async move { add.query_async::<String>(&mut connection).await };
        if self.ask("ledger line", request).await.is_none() {
            log::warn!("state store: a ledger line did not reach {LEDGER_STREAM}; it is in this instance's file");
        }
    }

    fn entries(&self) -> Entries {
        self.local.entries()
    }

    fn health(&self) -> Result<(), String> {
        if self.status.is_up() {
            Ok(())
        } else {
            Err(format!(
                "state store {}: {}; deciding from this instance's memory",
                self.status.url,
                self.status.why()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_site_the_kind_and_the_subject() {
        let token: Arc<str> = Arc::from("gptbot");
        let addr = "2001:db8::1".parse().unwrap();
        assert_eq!(
            politeness_key("shop", "delay", &Subject::Crawler(token.clone())),
            "crawlgate:shop:delay:bot:gptbot"
        );
        assert_eq!(
            politeness_key("shop", "fetch", &Subject::Claim(token.clone(), addr)),
            "crawlgate:shop:fetch:claim:gptbot:2001:db8::1"
        );
        assert_eq!(
            politeness_key("shop", "fetch", &Subject::Client(addr)),
            "crawlgate:shop:fetch:ip:2001:db8::1"
        );
        assert_eq!(dns_key(&(addr, token)), "crawlgate:dns:gptbot:2001:db8::1");
        let used = SignatureUse::without_nonce(b"s", Partition::Listed, 0);
        let key = signature_key(&used);
        assert!(
            key.starts_with("crawlgate:sig:") && key.len() == 14 + 64,
            "{key}"
        );
        assert_eq!(remember_for_ms(&used), 1000, "at least a second");
    }

    #[test]
    fn dns_outcomes_survive_the_round_trip() {
        for outcome in [
            DnsOutcome::Verified("crawl-1.googlebot.com".into()),
            DnsOutcome::Spoofed("203.0.113.5 is x.example, not under googlebot.com".into()),
            DnsOutcome::Unverifiable("reverse DNS failed:\nservfail".into()),
        ] {
            assert_eq!(decode(&encode(&outcome)), Some(outcome));
        }
        assert_eq!(decode("maybe\nx"), None);
        assert_eq!(decode(""), None);
    }

    #[test]
    fn urls_are_checked_and_passwords_hidden() {
        assert!(check_url("redis://127.0.0.1:6379/0").is_ok());
        assert!(check_url("redis://:secret@127.0.0.1:6379/2").is_ok());
        let tls = check_url("rediss://:secret@cache.internal:6380").unwrap_err();
        assert!(tls.contains("TLS") && !tls.contains("secret"), "{tls}");
        assert!(check_url("http://127.0.0.1:6379").is_err());
        assert_eq!(
            shown("redis://user:secret@10.0.0.5:6379/0"),
            "redis://***@10.0.0.5:6379/0"
        );
        assert_eq!(shown("redis://10.0.0.5"), "redis://10.0.0.5");
    }

    #[test]
    fn expiries_are_whole_positive_milliseconds() {
        assert_eq!(whole_millis(Duration::from_micros(1)), 1);
        assert_eq!(whole_millis(Duration::ZERO), 1);
        assert_eq!(whole_millis(Duration::from_millis(1500)), 1500);
        assert_eq!(whole_millis(Duration::from_micros(1500)), 2);
    }
}
