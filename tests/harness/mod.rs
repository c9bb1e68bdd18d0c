//! Test harness: a real origin server (hyper) and the real crawlgate binary, both on loopback,
//! and a real HTTP client. No fixed ports; waits poll with a deadline.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod dns;
pub mod nginx;
pub mod raw_origin;
pub mod signer;
pub mod store;
mod wire;
pub use wire::*;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any wait may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Polls `check` until it returns `Some`, or panics with `what` after the deadline.
pub fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(start.elapsed() < DEADLINE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A port nobody listens on right now, and that no other test of this process was given
/// (pingora listens with SO_REUSEPORT, so two proxies given one port would share it).
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap();
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// A request the origin received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: HashMap<String, String>,
}

/// How the origin answers `/robots.txt`.
#[derive(Debug, Clone)]
pub struct RobotsAnswer {
    pub status: u16,
    pub body: String,
    pub delay: Duration,
}

#[derive(Debug)]
struct OriginState {
    seen: Vec<Seen>,
    robots: RobotsAnswer,
    /// Other paths with a fixed answer (status, body).
    routes: HashMap<String, (u16, String)>,
    /// While set, `/robots.txt` requests are held after they are recorded and their answer is
    /// chosen, until the test closes it.
    robots_hold: Option<Arc<tokio::sync::Semaphore>>,
}

/// A real HTTP origin on loopback: answers `/robots.txt` as told, every other path with
/// `origin: PATH`, and records what it received.
pub struct Origin {
    pub addr: SocketAddr,
    state: Arc<Mutex<OriginState>>,
    _runtime: tokio::runtime::Runtime,
}

impl Origin {
    pub fn start() -> Origin {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let state = Arc::new(Mutex::new(OriginState {
            seen: Vec::new(),
            robots: RobotsAnswer {
                status: 200,
                body: "User-agent: *\nDisallow: /private/\n".into(),
                delay: Duration::ZERO,
            },
            routes: HashMap::new(),
            robots_hold: None,
        }));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = state.clone();
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(answer(&state, request).await) }
                    });
                    // Room for request headers up to pingora's own limit (1 MiB).
                    let _ = hyper::server::conn::http1::Builder::new()
                        .max_buf_size(2 << 20)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Origin {
            addr,
            state,
            _runtime: runtime,
        }
    }

    /// Sets how `/robots.txt` is answered.
    pub fn set_robots(&self, status: u16, body: &str, delay: Duration) {
        self.state.lock().unwrap().robots = RobotsAnswer {
            status,
            body: body.into(),
            delay,
        };
    }

    /// Holds the `/robots.txt` requests that arrive from now on (each answered as set when it
    /// arrived) until [`Origin::release_robots`].
    pub fn hold_robots(&self) {
        self.state.lock().unwrap().robots_hold = Some(Arc::new(tokio::sync::Semaphore::new(0)));
    }

    /// Lets the held `/robots.txt` requests be answered, and stops holding new ones.
    pub fn release_robots(&self) {
        if let Some(hold) = self.state.lock().unwrap().robots_hold.take() {
            hold.close();
        }
    }

    /// Answers `path` with `status` and `body` from now on.
    pub fn set_route(&self, path: &str, status: u16, body: &str) {
        self.state
            .lock()
            .unwrap()
            .routes
            .insert(path.into(), (status, body.into()));
    }

    /// What the origin received so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// The last request for `path`.
    pub fn last(&self, path: &str) -> Option<Seen> {
        self.seen().into_iter().rev().find(|s| s.path == path)
    }
}

async fn answer(
    state: &Mutex<OriginState>,
    request: Request<hyper::body::Incoming>,
) -> Response<Full<Bytes>> {
    let path = request
        .uri()
        .path_and_query()
        .map_or("/".to_owned(), |p| p.as_str().to_owned());
    let headers = request
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let (robots, route, hold) = {
        let mut state = state.lock().unwrap();
        state.seen.push(Seen {
            path: path.clone(),
            headers,
        });
        (
            state.robots.clone(),
            state.routes.get(&path).cloned(),
            state.robots_hold.clone(),
        )
    };
    if let Some((status, body)) = route {
        return Response::builder()
            .status(status)
            .body(Full::new(Bytes::from(body)))
            .unwrap();
    }
    if path == "/robots.txt" {
        if let Some(hold) = hold {
            // Closed on release: the wait ends then.
            let _ = hold.acquire().await;
        }
        tokio::time::sleep(robots.delay).await;
        return Response::builder()
            .status(robots.status)
            .header("content-type", "text/plain")
            .body(Full::new(Bytes::from(robots.body)))
            .unwrap();
    }
    Response::builder()
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from(format!("origin: {path}"))))
        .unwrap()
}

/// A running crawlgate process with its own folder, configuration and ports.
pub struct Proxy {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub metrics_port: u16,
    pub config: PathBuf,
    /// How [`Proxy::send`] talks to it.
    pub wire: Wire,
    /// The TLS listener's port, for [`Wire::H2`].
    pub tls_port: Option<u16>,
    /// The CA that signed the TLS listener's certificate, PEM.
    pub ca: Option<String>,
    /// The host names [`Proxy::send`] may ask for.
    hosts: Vec<String>,
    client: std::sync::OnceLock<reqwest::blocking::Client>,
}

/// `{listen}` and `{metrics}` in a configuration template become free ports' addresses;
/// `{dir}` the proxy's folder.
pub struct ProxyBuilder {
    template: String,
    files: Vec<(String, Vec<u8>)>,
    wire: Wire,
    hosts: Vec<String>,
    args: Vec<String>,
    port: Option<u16>,
}

impl ProxyBuilder {
    pub fn new(template: &str) -> ProxyBuilder {
        ProxyBuilder {
            template: template.into(),
            files: Vec::new(),
            wire: Wire::Http1,
            hosts: Vec::new(),
            args: Vec::new(),
            port: None,
        }
    }

    /// Uses `port` as the proxy's (`{listen}`'s) port: for a configuration whose listener is
    /// another kind (`forward_auth`), the one [`ProxyBuilder::start`] waits for.
    pub fn listening_on(mut self, port: u16) -> ProxyBuilder {
        self.port = Some(port);
        self
    }

    /// Adds `serve` flags after `--config`.
    pub fn args(mut self, args: &[&str]) -> ProxyBuilder {
        self.args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// Talks to the proxy over `wire` for requests to `hosts`: [`Wire::H2c`] adds `h2c: true`
    /// to the configuration, [`Wire::H2`] a TLS listener with a certificate for `hosts` from a
    /// test CA.
    pub fn wire(mut self, wire: Wire, hosts: &[&str]) -> ProxyBuilder {
        self.wire = wire;
        self.hosts = hosts.iter().map(|h| (*h).to_owned()).collect();
        self
    }

    /// Writes a file into the proxy's folder before it starts.
    pub fn file(mut self, name: &str, content: impl AsRef<[u8]>) -> ProxyBuilder {
        self.files.push((name.into(), content.as_ref().to_vec()));
        self
    }

    pub fn start(self) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in &self.files {
            std::fs::write(dir.path().join(name), content).unwrap();
        }
        let port = self.port.unwrap_or_else(free_port);
        let metrics_port = free_port();
        let config = dir.path().join("crawlgate.yaml");
        let mut template = self.template.clone();
        let (mut tls_port, mut ca_pem) = (None, None);
        match self.wire {
            Wire::Http1 => {}
            Wire::H2c => template.push_str("\nh2c: true\n"),
            Wire::H2 => {
                let ca = TestCa::new();
                let hosts: Vec<&str> = self.hosts.iter().map(String::as_str).collect();
                let (cert, key) = ca.issue(&hosts, 1);
                std::fs::write(dir.path().join("wire.crt"), cert).unwrap();
                std::fs::write(dir.path().join("wire.key"), key).unwrap();
                let port = free_port();
                template.push_str(&format!(
                    "\ntls_listen: [{{addr: \"127.0.0.1:{port}\", cert: wire.crt, key: wire.key}}]\n"
                ));
                tls_port = Some(port);
                ca_pem = Some(ca.pem());
            }
        }
        let text = template
            .replace("{listen}", &format!("127.0.0.1:{port}"))
            .replace("{metrics}", &format!("127.0.0.1:{metrics_port}"))
            .replace("{dir}", &dir.path().display().to_string());
        std::fs::write(&config, text).unwrap();
        let mut args = vec!["serve", "--config", config.to_str().unwrap()];
        args.extend(self.args.iter().map(String::as_str));
        let child = spawn_crawlgate(&args, dir.path());
        let mut proxy = Proxy {
            child,
            dir,
            port,
            metrics_port,
            config,
            wire: self.wire,
            tls_port,
            ca: ca_pem,
            hosts: self.hosts,
            client: std::sync::OnceLock::new(),
        };
        proxy.wait_ready();
        proxy
    }
}

/// A configuration template for [`ProxyBuilder`] serving `sites` (each made by [`site`]): the
/// listener, metrics, one pingora thread with a short grace period, and an access log in the
/// proxy's folder (`access.jsonl`) when `access_log`.
pub fn sites_template(access_log: bool, sites: &[String]) -> String {
    let log = if access_log {
        "access_log: \"{dir}/access.jsonl\"\n"
    } else {
        ""
    };
    format!(
        "listen: [\"{{listen}}\"]\nmetrics: {{listen: \"{{metrics}}\"}}\n{log}pingora: {{threads: 1, grace_period_seconds: 2}}\nsites:\n{}",
        sites.concat()
    )
}

/// One entry of `sites:` for [`sites_template`]: `name`, for `hosts` (none: any host), in front
/// of `upstream`, with its robots.txt from the file `robots` in the proxy's folder and the
/// `more` lines (`key: value`) besides.
pub fn site(
    name: &str,
    hosts: &[&str],
    upstream: SocketAddr,
    robots: &str,
    more: &[&str],
) -> String {
    let mut entry = format!("  - name: {name}\n");
    if !hosts.is_empty() {
        entry.push_str(&format!("    hosts: [{}]\n", hosts.join(", ")));
    }
    entry.push_str(&format!(
        "    upstream: \"{upstream}\"\n    robots: {{file: {robots}}}\n"
    ));
    for line in more {
        entry.push_str(&format!("    {line}\n"));
    }
    entry
}

/// The crawlgate binary, with its output going to files in `dir`.
pub fn spawn_crawlgate(args: &[&str], dir: &Path) -> Child {
    let stdout = std::fs::File::create(dir.join("stdout.log")).unwrap();
    let stderr = std::fs::File::create(dir.join("stderr.log")).unwrap();
    Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .args(args)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap()
}

impl Proxy {
    fn wait_ready(&mut self) {
        let port = self.port;
        let metrics = self.metrics_port;
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("crawlgate exited with {status}:\n{}", self.logs());
            }
            let up = |p: u16| TcpStream::connect(("127.0.0.1", p)).is_ok();
            if up(port) && up(metrics) && self.tls_port.is_none_or(up) {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "crawlgate did not start:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What the process logged so far.
    pub fn logs(&self) -> String {
        let read =
            |name: &str| std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        format!(
            "--- stderr\n{}--- stdout\n{}",
            read("stderr.log"),
            read("stdout.log")
        )
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The URL of `path` on `host` over the proxy's wire.
    pub fn site_url(&self, host: &str, path: &str) -> String {
        match self.tls_port {
            Some(port) => format!("https://{host}:{port}{path}"),
            None => format!("http://{host}:{}{path}", self.port),
        }
    }

    /// A client speaking the proxy's wire, for the hosts it was built with.
    pub fn wire_client(&self) -> &reqwest::blocking::Client {
        self.client.get_or_init(|| {
            let port = self.tls_port.unwrap_or(self.port);
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            wire_client(self.wire, &self.hosts, addr, self.ca.as_deref())
        })
    }

    /// Sends `request` (built with [`Proxy::wire_client`]) and checks that the answer came over
    /// the proxy's wire: its status, body and headers.
    pub fn send(
        &self,
        request: reqwest::blocking::RequestBuilder,
    ) -> (u16, String, reqwest::header::HeaderMap) {
        let response = request.send().unwrap();
        assert_eq!(response.version(), self.wire.version(), "{:?}", self.wire);
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, response.text().unwrap(), headers)
    }

    /// A GET of `path` on `host` with a User-Agent, over the proxy's wire.
    pub fn get_on(
        &self,
        host: &str,
        path: &str,
        user_agent: &str,
    ) -> (u16, String, reqwest::header::HeaderMap) {
        let request = self
            .wire_client()
            .get(self.site_url(host, path))
            .header("user-agent", user_agent);
        self.send(request)
    }

    /// The metrics text.
    pub fn metrics(&self) -> String {
        let url = format!("http://127.0.0.1:{}/metrics", self.metrics_port);
        client().get(url).send().unwrap().text().unwrap()
    }

    /// The health endpoint's status and body.
    pub fn health(&self) -> (u16, String) {
        let (status, body, _) = get(
            &format!("http://127.0.0.1:{}/healthz", self.metrics_port),
            "x",
            None,
        );
        (status, body)
    }

    /// The value of one metric series, by its exact text before the value.
    pub fn metric(&self, series: &str) -> Option<f64> {
        metric_value(&self.metrics(), series)
    }

    pub fn signal(&self, signal: &str) {
        if signal == "HUP" {
            // Until the reload service handles it, SIGHUP's default would end the proxy: a
            // loaded machine can answer requests before that service has started.
            wait_for("the proxy to handle SIGHUP", || {
                self.logs().contains("reload: SIGHUP reloads").then_some(())
            });
        }
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Rewrites the configuration (placeholders as at start) and sends SIGHUP.
    pub fn reconfigure(&self, template: &str) {
        let text = template
            .replace("{listen}", &format!("127.0.0.1:{}", self.port))
            .replace("{metrics}", &format!("127.0.0.1:{}", self.metrics_port))
            .replace("{dir}", &self.dir.path().display().to_string());
        write_atomically(&self.config, text.as_bytes());
        self.signal("HUP");
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Finds `series value` in a metrics text.
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        line.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// Replaces a file the way editors and deploy tools do: write aside, then rename.
pub fn write_atomically(path: &Path, content: &[u8]) {
    let aside = path.with_extension("tmp");
    let mut file = std::fs::File::create(&aside).unwrap();
    file.write_all(content).unwrap();
    file.sync_all().unwrap();
    std::fs::rename(&aside, path).unwrap();
}

/// A real HTTP client that never goes through a proxy and never follows redirects.
pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// A GET with a User-Agent (and a Host, when given).
pub fn get(
    url: &str,
    user_agent: &str,
    host: Option<&str>,
) -> (u16, String, reqwest::header::HeaderMap) {
    let mut request = client().get(url).header("user-agent", user_agent);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, response.text().unwrap(), headers)
}

pub const GPTBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
pub const GOOGLEBOT: &str =
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
pub const FIREFOX: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

/// Runs `crawlgate explain --config CONFIG ARGS...`: its exit status and standard output (logs
/// go to standard error, the explanation alone to standard output).
pub fn explain(config: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_crawlgate"))
        .arg("explain")
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// Sends a request target exactly as given (HTTP clients resolve `..` before sending) and
/// returns the status code.
pub fn raw_get(port: u16, target: &str, host: &str, user_agent: &str) -> u16 {
    use std::io::Read;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {user_agent}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    text.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}
