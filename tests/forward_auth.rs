//! Forward-auth beside a real nginx: nginx at the edge asks crawlgate about each request
//! (`auth_request`, configured by `conf/nginx/crawlgate-forward-auth.conf` as shipped) and
//! proxies what crawlgate lets through to a real origin; a real HTTP client asks nginx.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::nginx::Nginx;
use harness::*;

/// GPTBot may not fetch `/private/`; CCBot (tagged) neither; everyone is asked to wait 30 s.
const ROBOTS: &str = "User-agent: GPTBot\nDisallow: /private/\n\nUser-agent: CCBot\nDisallow: /private/\nCrawl-delay: 30\n";

const CCBOT: &str = "CCBot/2.0 (https://commoncrawl.org/faq/)";

struct Edge {
    nginx: Nginx,
    crawlgate: Proxy,
    origin: Origin,
}

impl Edge {
    fn start() -> Edge {
        let origin = Origin::start();
        origin.set_robots(200, ROBOTS, std::time::Duration::ZERO);
        let auth_port = free_port();
        let template = format!(
            "listen: []\nforward_auth: {{listen: [\"127.0.0.1:{auth_port}\"]}}\ntrusted_proxies: [127.0.0.1/32]\n{}",
            sites_template(
                true,
                &[format!(
                    "  - name: shop\n    upstream: \"{}\"\n    robots: {{origin: true}}\n    action: block\n    bots: {{CCBot: tag}}\n    crawl_delay: enforce\n",
                    origin.addr
                )],
            )
            .replace("listen: [\"{listen}\"]\n", "")
        );
        let crawlgate = ProxyBuilder::new(&template).listening_on(auth_port).start();
        let snippet = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/conf/nginx/crawlgate-forward-auth.conf"
        ))
        .unwrap()
        .replace("CRAWLGATE", &format!("127.0.0.1:{auth_port}"))
        .replace("ORIGIN", &origin.addr.to_string());
        let nginx = Nginx::with_locations(&snippet);
        wait_for("crawlgate to fetch robots.txt", || {
            crawlgate
                .metric(r#"crawlgate_robots_rules{site="shop"}"#)
                .filter(|rules| *rules > 0.0)
        });
        Edge {
            nginx,
            crawlgate,
            origin,
        }
    }

    fn get(&self, path: &str, user_agent: &str) -> (u16, String, reqwest::header::HeaderMap) {
        get(
            &format!("http://127.0.0.1:{}{path}", self.nginx.port),
            user_agent,
            None,
        )
    }
}

#[test]
fn nginx_refuses_what_crawlgate_refuses_and_passes_people_and_tags() {
    let edge = Edge::start();
    // GPTBot on a disallowed path: refused at the edge, the origin never asked.
    let (status, _, headers) = edge.get("/private/report", GPTBOT);
    assert_eq!(status, 403, "{}", edge.nginx.log());
    assert_eq!(headers["x-crawlgate-status"], "403");
    assert!(edge.origin.last("/private/report").is_none());
    // A person on the same path passes, and no verdict header reaches the origin.
    let (status, body, _) = edge.get("/private/report", FIREFOX);
    assert_eq!((status, body.as_str()), (200, "origin: /private/report"));
    let seen = edge.origin.last("/private/report").unwrap();
    assert!(
        !seen.headers.contains_key("x-crawlgate-verdict"),
        "{seen:?}"
    );
    // GPTBot on an allowed path passes.
    assert_eq!(edge.get("/public", GPTBOT).0, 200);
    // CCBot is tagged: the origin gets the verdict and the rule through nginx.
    let (status, _, _) = edge.get("/private/x", CCBOT);
    assert_eq!(status, 200);
    let seen = edge.origin.last("/private/x").unwrap();
    assert_eq!(
        seen.headers["x-crawlgate-verdict"], "disallowed",
        "{seen:?}"
    );
    assert_eq!(seen.headers["x-crawlgate-bot"], "CCBot");
    assert_eq!(
        seen.headers["x-crawlgate-rule"],
        "disallow /private/ line 5"
    );
    // Within its crawl-delay: crawlgate's 429 rides on nginx's 403, with Retry-After.
    let (status, _, headers) = edge.get("/public/2", CCBOT);
    assert_eq!(status, 403);
    assert_eq!(headers["x-crawlgate-status"], "429");
    let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=30).contains(&wait), "{wait}");
    // robots.txt is the edge's: the origin's file, to everyone.
    let (status, robots, _) = edge.get("/robots.txt", GPTBOT);
    assert_eq!((status, robots.as_str()), (200, ROBOTS));

    let metrics = edge.crawlgate.metrics();
    for series in [
        r#"crawlgate_requests_total{action="blocked",bot="GPTBot",category="ai-training",site="shop",verdict="disallowed",verified="unverifiable"} 1"#,
        r#"crawlgate_requests_total{action="tagged",bot="CCBot",category="ai-training",site="shop",verdict="disallowed",verified="unverifiable"} 1"#,
        r#"crawlgate_requests_total{action="throttled",bot="CCBot",category="ai-training",site="shop",verdict="allowed",verified="unverifiable"} 1"#,
        r#"crawlgate_robots_fetches_total{bot="GPTBot",site="shop"} 1"#,
    ] {
        assert!(metrics.contains(series), "{series}\n{metrics}");
    }
    // The access log names the original request, not the subrequest.
    let log = std::fs::read_to_string(edge.crawlgate.path("access.jsonl")).unwrap_or_default();
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(
        (
            first["path"].as_str(),
            first["method"].as_str(),
            first["action"].as_str()
        ),
        (Some("/private/report"), Some("GET"), Some("blocked"))
    );
}

#[test]
fn only_a_trusted_edge_may_ask_and_it_must_name_the_target() {
    let edge = Edge::start();
    let auth = format!("http://127.0.0.1:{}/", edge.crawlgate.port);
    // From 127.0.0.2 (loopback, but not a trusted proxy): refused, whatever it says.
    let untrusted = reqwest::blocking::Client::builder()
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    let response = untrusted
        .get(&auth)
        .header("user-agent", FIREFOX)
        .header("x-forwarded-uri", "/")
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    assert!(response
        .text()
        .unwrap()
        .contains("only trusted_proxies may ask"));
    // Trusted, but no original target.
    let (status, body, _) = get(&auth, FIREFOX, None);
    assert_eq!(status, 400);
    assert!(body.contains("names no original target"), "{body}");
    // Traefik's and Caddy's form: the refusal's own status and body, passed on by those edges.
    let response = client()
        .get(&auth)
        .header("user-agent", GPTBOT)
        .header("x-forwarded-uri", "/private/a")
        .header("x-forwarded-method", "GET")
        .header("x-forwarded-host", "shop.example")
        .header("x-forwarded-for", "192.0.2.7")
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    assert!(response
        .text()
        .unwrap()
        .contains("disallows /private/a for GPTBot"));
    let metrics = edge.crawlgate.metrics();
    for reason in ["forward_auth_untrusted", "forward_auth_no_target"] {
        let series = format!(r#"crawlgate_bad_requests_total{{reason="{reason}"}} 1"#);
        assert!(metrics.contains(&series), "{series}\n{metrics}");
    }
}

/// A running Caddy with `conf/caddy/Caddyfile` as shipped, or `None` (and a message) when Caddy
/// is not installed; `.ci/run` installs it and sets `CRAWLGATE_REQUIRE_EDGES`, which makes its
/// absence a failure.
struct Caddy {
    port: u16,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Caddy {
    fn start(crawlgate: u16, origin: std::net::SocketAddr) -> Option<Caddy> {
        let binary = ["/usr/bin/caddy", "/usr/local/bin/caddy"]
            .into_iter()
            .find(|path| std::path::Path::new(path).exists());
        let Some(binary) = binary else {
            assert!(
                std::env::var_os("CRAWLGATE_REQUIRE_EDGES").is_none(),
                "Caddy is required here (apt-get install caddy)"
            );
            eprintln!("skipped: Caddy is not installed (apt-get install caddy)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let shipped =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/conf/caddy/Caddyfile"))
                .unwrap()
                .replace("SITE", &format!("http://127.0.0.1:{port}"))
                .replace("CRAWLGATE", &format!("127.0.0.1:{crawlgate}"))
                .replace("ORIGIN", &origin.to_string());
        let file = dir.path().join("Caddyfile");
        std::fs::write(
            &file,
            format!("{{\n\tadmin off\n\tauto_https off\n}}\n\n{shipped}"),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("caddy.log")).unwrap();
        let child = std::process::Command::new(binary)
            .args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&file)
            .env("XDG_DATA_HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .env("HOME", dir.path())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        wait_for("Caddy to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", port))
                .ok()
                .map(drop)
        });
        Some(Caddy {
            port,
            child,
            _dir: dir,
        })
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn caddy_passes_crawlgates_refusals_whole_and_its_tags_to_the_origin() {
    let edge = Edge::start();
    let Some(caddy) = Caddy::start(edge.crawlgate.port, edge.origin.addr) else {
        return;
    };
    let url = |path: &str| format!("http://127.0.0.1:{}{path}", caddy.port);
    let (status, body, _) = get(&url("/private/report"), GPTBOT, None);
    assert_eq!(status, 403);
    assert!(
        body.contains("disallows /private/report for GPTBot"),
        "{body}"
    );
    assert!(edge.origin.last("/private/report").is_none());
    // A person passes, and a verdict it forges never reaches the origin.
    let response = client()
        .get(url("/private/report"))
        .header("user-agent", FIREFOX)
        .header("x-crawlgate-verdict", "allowed")
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let seen = edge.origin.last("/private/report").unwrap();
    assert!(
        !seen.headers.contains_key("x-crawlgate-verdict"),
        "{seen:?}"
    );
    // Tagged: the verdict reaches the origin.
    assert_eq!(get(&url("/private/x"), CCBOT, None).0, 200);
    let seen = edge.origin.last("/private/x").unwrap();
    assert_eq!(
        seen.headers["x-crawlgate-verdict"], "disallowed",
        "{seen:?}"
    );
    // Within the crawl-delay: crawlgate's own 429 and Retry-After.
    let (status, body, headers) = get(&url("/public/2"), CCBOT, None);
    assert_eq!(status, 429, "{body}");
    assert!(headers.contains_key("retry-after"));
    assert!(body.contains("crawl-delay"), "{body}");
}
