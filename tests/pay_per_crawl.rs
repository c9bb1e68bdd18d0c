//! Pay per crawl through the real proxy on loopback, with the test signer of
//! `harness::signer` (its own Ed25519 key, its key directory served over HTTPS by this test):
//! a verified crawler that robots.txt allows is quoted `402` with `crawler-price`; a retry
//! carrying `crawler-exact-price` (or `crawler-max-price` at or above it) covered by its
//! signature is forwarded and answered with `crawler-charged`, and the charge is in the ledger;
//! a maximum too low, a price header the signature does not cover, an unsigned one and a
//! malformed one get `crawler-error`; an unverified crawler and a person are never offered a
//! price; robots.txt and sitemaps are free; an origin's error is not charged; one signed
//! request is charged once, across a kill and a restart; SIGHUP rotates the ledger. Then a
//! fleet: two instances on one `redis-server` charge a signed request once between them, and
//! both lines meet in the store's stream.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::signer::*;
use harness::store::StoreServer;
use harness::*;
use std::path::Path;

const ROBOTS: &str = "User-agent: *\\nDisallow: /private/\\nSitemap: /maps/pages.xml\\n";

const CHATGPT_USER: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot";
const GPTBOT: &str =
    "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.2; +https://openai.com/gptbot";
const BYTESPIDER: &str =
    "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)";

/// GPTBot's published ranges: loopback, so that the test's GPTBot is verified by them.
const GPTBOT_RANGES: &str = r#"{"prefixes": [{"ipv4Prefix": "127.0.0.1/32"}]}"#;

fn config(origin: &Origin, directory: &Directory, state_dir: &Path, store: &str) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1, grace_period_seconds: 1}}
access_log: "{{dir}}/access.jsonl"
state_dir: "{}"
{store}verification:
  ranges: {{GPTBot: gptbot.json}}
  signatures:
    allow_private: true
    ca_file: ca.pem
    refresh: 1s
    directories:
      - url: "{}"
        bot: ChatGPT-User
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "{ROBOTS}"}}
    pay_per_crawl: {{ai-training: "USD 0.05", ai-assistant: "USD 0.01"}}
"#,
        state_dir.display(),
        directory.url(),
        origin.addr
    )
}

fn start(origin: &Origin, directory: &Directory, state_dir: &Path, store: &str) -> Proxy {
    let proxy = ProxyBuilder::new(&config(origin, directory, state_dir, store))
        .file("ca.pem", &directory.ca_pem)
        .file("gptbot.json", GPTBOT_RANGES)
        .start();
    wait_for_keys(&proxy, directory);
    proxy
}

/// A GET of `path` as `user_agent` with these headers: status, body, the pay-per-crawl
/// response headers (`crawler-price`, `crawler-charged`, `crawler-error`).
struct Answer {
    status: u16,
    body: String,
    price: Option<String>,
    charged: Option<String>,
    error: Option<String>,
}

fn get(proxy: &Proxy, user_agent: &str, path: &str, headers: &[(&'static str, String)]) -> Answer {
    static CLIENT: std::sync::OnceLock<reqwest::blocking::Client> = std::sync::OnceLock::new();
    let mut request = CLIENT
        .get_or_init(harness::client)
        .get(proxy.url(path))
        .header("user-agent", user_agent);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (price, charged, error) = (
        header("crawler-price"),
        header("crawler-charged"),
        header("crawler-error"),
    );
    let status = response.status().as_u16();
    Answer {
        status,
        body: response.text().unwrap(),
        price,
        charged,
        error,
    }
}

/// The ledger's lines in `state_dir`, every file, as JSON.
fn ledger(state_dir: &Path) -> Vec<serde_json::Value> {
    let folder = state_dir.join("ledger");
    let mut names: Vec<_> = std::fs::read_dir(&folder)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .flat_map(|path| {
            std::fs::read_to_string(path)
                .unwrap()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn charges(state_dir: &Path) -> Vec<serde_json::Value> {
    ledger(state_dir)
        .into_iter()
        .filter(|line| line["type"] == "charge")
        .collect()
}

#[test]
fn verified_crawlers_are_priced_and_charged_once() {
    let origin = Origin::start();
    origin.set_route("/gone", 404, "not here");
    let signer = Signer::new(11);
    let directory = Directory::start(signer.jwks());
    let state = tempfile::tempdir().unwrap();
    let proxy = start(&origin, &directory, state.path(), "");
    let authority = format!("127.0.0.1:{}", proxy.port);
    let signing = || Signing::new(&signer, &authority, &directory.url());
    let seen = |path: &str| origin.seen().iter().filter(|s| s.path == path).count();

    // Signed, no price header: quoted, and the origin is not asked.
    let quoted = get(&proxy, CHATGPT_USER, "/article", &signing().headers());
    assert_eq!(quoted.status, 402, "{}\n{}", quoted.body, proxy.logs());
    assert_eq!(quoted.price.as_deref(), Some("USD 0.01"));
    assert_eq!((quoted.charged, quoted.error), (None, None));
    assert!(
        quoted.body.contains("this page costs USD 0.01"),
        "{}",
        quoted.body
    );
    assert_eq!(seen("/article"), 0);

    // Paid: the exact price, covered by the signature. Forwarded, charged, recorded.
    let paying = signing().covering("crawler-exact-price", "USD 0.01");
    let paid = get(&proxy, CHATGPT_USER, "/article", &paying.headers());
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert_eq!(paid.body, "origin: /article");
    assert_eq!(paid.charged.as_deref(), Some("USD 0.01"));
    assert_eq!(seen("/article"), 1);
    let lines = charges(state.path());
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(line["site"], "site");
    assert_eq!(line["path"], "/article");
    assert_eq!(line["bot"], "ChatGPT-User");
    assert_eq!(line["operator"], "OpenAI");
    assert_eq!(line["price"], "USD 0.01");
    assert_eq!(
        (line["currency"].as_str(), line["amount"].as_str()),
        (Some("USD"), Some("0.01"))
    );
    assert_eq!(line["status"], 200);
    assert_eq!(line["directory"], directory.url());
    assert_eq!(line["keyid"], signer.keyid());
    // The same signed request again is a replay of its nonce: refused, not charged.
    let replay = get(&proxy, CHATGPT_USER, "/article", &paying.headers());
    assert_eq!(replay.status, 429, "{}", replay.body);
    assert_eq!(charges(state.path()).len(), 1);

    // A maximum at or above the price pays it; the price charged is the page's.
    let max = signing().covering("crawler-max-price", "USD 0.50");
    let paid_max = get(&proxy, CHATGPT_USER, "/news", &max.headers());
    assert_eq!(paid_max.status, 200);
    assert_eq!(paid_max.charged.as_deref(), Some("USD 0.01"));

    // Refusals, each with its code, the price, and nothing forwarded or charged.
    let refusals = [
        (
            "crawler-max-price",
            "USD 0.005",
            true,
            402,
            "InvalidCrawlerMaxPrice",
        ),
        (
            "crawler-max-price",
            "EUR 5",
            true,
            402,
            "InvalidCrawlerMaxPrice",
        ),
        (
            "crawler-exact-price",
            "USD 0.02",
            true,
            402,
            "InvalidCrawlerExactPrice",
        ),
        (
            "crawler-exact-price",
            "0.01 USD",
            true,
            400,
            "InvalidCrawlerPriceValue",
        ),
        // Sent, but not covered by the signature: it could have been changed on the way.
        (
            "crawler-exact-price",
            "USD 0.01",
            false,
            400,
            "InvalidSignature",
        ),
    ];
    for (name, value, covered, status, code) in refusals {
        let mut headers = if covered {
            signing().covering(name, value).headers()
        } else {
            signing().headers()
        };
        if !covered {
            headers.push((name, value.to_owned()));
        }
        let answer = get(&proxy, CHATGPT_USER, "/refused", &headers);
        assert_eq!(answer.status, status, "{name}: {value}: {}", answer.body);
        assert_eq!(answer.error.as_deref(), Some(code), "{name}: {value}");
        assert_eq!(answer.price.as_deref(), Some("USD 0.01"));
        assert_eq!(answer.charged, None);
    }
    let both = signing()
        .covering("crawler-exact-price", "USD 0.01")
        .covering("crawler-max-price", "USD 0.01")
        .headers();
    let conflict = get(&proxy, CHATGPT_USER, "/refused", &both);
    assert_eq!(
        (conflict.status, conflict.error.as_deref()),
        (400, Some("ConflictingPriceHeaders"))
    );
    assert_eq!(seen("/refused"), 0);

    // GPTBot, verified by its published ranges, is quoted its own category's price; it cannot
    // pay without a signature.
    let gptbot = get(&proxy, GPTBOT, "/article", &[]);
    assert_eq!(
        (gptbot.status, gptbot.price.as_deref()),
        (402, Some("USD 0.05"))
    );
    let unsigned = [("crawler-exact-price", "USD 0.05".to_owned())];
    let gptbot_pays = get(&proxy, GPTBOT, "/article", &unsigned);
    assert_eq!(
        (gptbot_pays.status, gptbot_pays.error.as_deref()),
        (400, Some("StrongAuthRequired"))
    );
    // An unverified crawler of a priced category is judged as before: forwarded, free.
    let bytespider = get(&proxy, BYTESPIDER, "/article", &unsigned);
    assert_eq!(bytespider.status, 200);
    assert_eq!((bytespider.price, bytespider.charged), (None, None));
    // A person is never priced, whatever headers it sends.
    let person = get(&proxy, FIREFOX, "/article", &unsigned);
    assert_eq!(
        (person.status, person.price, person.charged),
        (200, None, None)
    );
    // A disallowed path is refused as before, never sold.
    let private = get(&proxy, CHATGPT_USER, "/private/x", &paying_fresh(&signing));
    assert_eq!((private.status, private.price), (403, None));
    // robots.txt and sitemaps are free to a verified crawler.
    for path in ["/robots.txt", "/maps/pages.xml", "/sitemap.xml"] {
        let free = get(&proxy, GPTBOT, path, &[]);
        assert_eq!(
            (free.status, free.price, free.charged),
            (200, None, None),
            "{path}"
        );
    }
    // An origin's error is not charged, and says nothing of a charge.
    let gone = get(&proxy, CHATGPT_USER, "/gone", &paying_fresh(&signing));
    assert_eq!((gone.status, gone.charged), (404, None));
    assert_eq!(charges(state.path()).len(), 2);

    // Counted: two charges, in USD.
    let metric = |result: &str| {
        proxy
            .metric(&format!(
                r#"crawlgate_payments_total{{bot="ChatGPT-User",result="{result}",site="site"}}"#
            ))
            .unwrap_or(0.0)
    };
    assert_eq!(metric("charged"), 2.0);
    assert_eq!(metric("quoted"), 1.0);
    assert_eq!(metric("not_charged"), 1.0);
    assert_eq!(metric("invalid_max_price"), 2.0);
    let charged = proxy
        .metric(r#"crawlgate_charged_total{bot="ChatGPT-User",currency="USD",site="site"}"#)
        .unwrap();
    assert!((charged - 0.02).abs() < 1e-9, "{charged}");

    // The access log says what each priced request came to.
    wait_for("the access log's charges", || {
        let log = std::fs::read_to_string(proxy.path("access.jsonl")).unwrap_or_default();
        let results: Vec<String> = log
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|l| l["payment"].as_str().map(str::to_owned))
            .collect();
        let count = |r: &str| results.iter().filter(|x| *x == r).count();
        (count("charged") == 2 && count("quoted") == 2 && count("not_charged") == 1).then_some(())
    });

    // explain gives the same judgement: the price, and what the request came to.
    let args = [
        "--ua",
        GPTBOT,
        "--ip",
        "127.0.0.1",
        "http://127.0.0.1/article",
    ];
    let (_, text) = explain(&proxy.config, &args);
    assert!(text.contains("pay per crawl: USD 0.05, quoted"), "{text}");
    let (_, json) = explain(&proxy.config, &[&args[..4], &["--json", args[4]]].concat());
    let json: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(json["payment"]["result"], "quoted");
    assert_eq!(
        (json["outcome"].as_str(), json["status"].as_u64()),
        (Some("payment_required"), Some(402))
    );
    let (_, sitemap) = explain(
        &proxy.config,
        &[
            "--ua",
            GPTBOT,
            "--ip",
            "127.0.0.1",
            "http://127.0.0.1/sitemap.xml",
        ],
    );
    assert!(!sitemap.contains("pay per crawl"), "{sitemap}");
}

/// A fresh signature covering the exact price of the test site's assistants.
fn paying_fresh<'a>(signing: &dyn Fn() -> Signing<'a>) -> Vec<(&'static str, String)> {
    signing()
        .covering("crawler-exact-price", "USD 0.01")
        .headers()
}

#[test]
fn one_signed_request_is_charged_once_across_a_kill_and_a_restart_and_sighup_rotates() {
    let origin = Origin::start();
    let signer = Signer::new(12);
    let directory = Directory::start(signer.jwks());
    let state = tempfile::tempdir().unwrap();
    let proxy = start(&origin, &directory, state.path(), "");
    let authority = format!("127.0.0.1:{}", proxy.port);
    // Without a nonce: the draft lets its holder use it again; the same page is one request.
    let mut signing = Signing::new(&signer, &authority, &directory.url());
    signing.nonce = None;
    let headers = signing
        .covering("crawler-exact-price", "USD 0.01")
        .headers();
    let first = get(&proxy, CHATGPT_USER, "/page", &headers);
    assert_eq!(first.charged.as_deref(), Some("USD 0.01"), "{}", first.body);
    // Again, on the same page: forwarded, not charged again.
    let again = get(&proxy, CHATGPT_USER, "/page", &headers);
    assert_eq!((again.status, again.charged), (200, None));
    // Another page with the same signature is another request.
    let other = get(&proxy, CHATGPT_USER, "/other", &headers);
    assert_eq!(other.charged.as_deref(), Some("USD 0.01"));
    assert_eq!(charges(state.path()).len(), 2);

    // Killed (no chance to flush anything), then started on the same state directory: the
    // lines are there, and the request charged before is still recognised.
    let port = proxy.port;
    drop(proxy);
    let proxy = ProxyBuilder::new(&config(&origin, &directory, state.path(), ""))
        .file("ca.pem", &directory.ca_pem)
        .file("gptbot.json", GPTBOT_RANGES)
        .listening_on(port)
        .start();
    wait_for_keys(&proxy, &directory);
    assert!(
        proxy
            .logs()
            .contains("2 charge(s) of signed requests still valid remembered"),
        "{}",
        proxy.logs()
    );
    let after = get(&proxy, CHATGPT_USER, "/page", &headers);
    assert_eq!((after.status, after.charged), (200, None), "{}", after.body);
    assert_eq!(charges(state.path()).len(), 2);

    // SIGHUP rotates: the file so far is set aside whole, the next charge starts a new one.
    proxy.signal("HUP");
    let folder = state.path().join("ledger");
    wait_for("the ledger to be rotated", || {
        let rotated = std::fs::read_dir(&folder)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with("ledger-"));
        rotated.then_some(())
    });
    let third = get(&proxy, CHATGPT_USER, "/third", &headers);
    assert_eq!(third.charged.as_deref(), Some("USD 0.01"));
    let current = std::fs::read_to_string(folder.join("ledger.jsonl")).unwrap();
    assert_eq!(current.lines().count(), 1, "{current}");
    assert_eq!(charges(state.path()).len(), 3);
}

#[test]
fn two_instances_on_one_store_charge_a_signed_request_once() {
    let Some(redis) = StoreServer::start() else {
        return;
    };
    let origin = Origin::start();
    let signer = Signer::new(13);
    let directory = Directory::start(signer.jwks());
    let store = format!("state: {{redis: \"{}\", budget: 1s}}\n", redis.url());
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = start(&origin, &directory, state_a.path(), &store);
    let b = start(&origin, &directory, state_b.path(), &store);
    // Both instances are one authority to the signer (a load balancer's name).
    let authority = "crawl.example";
    let host = [("host", authority.to_owned())];
    let mut signing = Signing::new(&signer, authority, &directory.url());
    signing.nonce = None;
    let mut headers = signing
        .covering("crawler-exact-price", "USD 0.01")
        .headers();
    headers.extend(host.iter().cloned());

    let through_a = get(&a, CHATGPT_USER, "/page", &headers);
    assert_eq!(
        through_a.charged.as_deref(),
        Some("USD 0.01"),
        "{}\n{}",
        through_a.body,
        a.logs()
    );
    // The same signed request through the other instance: forwarded, not charged again.
    let through_b = get(&b, CHATGPT_USER, "/page", &headers);
    assert_eq!(
        (through_b.status, through_b.charged),
        (200, None),
        "{}",
        through_b.body
    );
    assert_eq!(charges(state_a.path()).len(), 1);
    assert_eq!(charges(state_b.path()).len(), 0);
    // A new page through B is B's charge; both lines meet in the store's stream.
    let other = get(&b, CHATGPT_USER, "/other", &headers);
    assert_eq!(other.charged.as_deref(), Some("USD 0.01"));
    assert_eq!(charges(state_b.path()).len(), 1);
    assert_eq!(
        redis.command("XLEN crawlgate:ledger").as_deref(),
        Some(":2")
    );
    let stream = redis.reply("XRANGE crawlgate:ledger - +").unwrap();
    assert!(
        stream.contains(r#""path":"/page""#) && stream.contains(r#""path":"/other""#),
        "{stream}"
    );

    // The store down: a charge cannot be told apart from the fleet's, so none is made; the
    // crawler is told to try again, and nothing is forwarded as paid.
    drop(redis);
    let fresh = Signing::new(&signer, authority, &directory.url())
        .covering("crawler-exact-price", "USD 0.01");
    let mut fresh = fresh.headers();
    fresh.extend(host.iter().cloned());
    let down = get(&a, CHATGPT_USER, "/while-down", &fresh);
    assert_eq!(
        (down.status, down.error.as_deref(), down.charged),
        (503, Some("InternalError"), None),
        "{}",
        down.body
    );
    assert_eq!(charges(state_a.path()).len(), 1);
}
