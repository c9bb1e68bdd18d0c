//! Web Bot Auth through the real proxy on loopback: a test signer with its own Ed25519 key signs
//! requests by hand (RFC 9421's signature base, written here independently of the verifier,
//! `harness::signer`); its key directory is served over HTTPS by a server this test starts,
//! with a certificate from a test CA the configuration trusts. Valid, expired, future-dated,
//! wrong tag, wrong key, tampered authority, replayed nonce, the directory down (the keys held,
//! and those kept in the state directory across a restart, still verify), and a loopback
//! directory refused unless `allow_private` is set. Then issue 22's cases: a nonce-less
//! signature replayed from another client, User-Agent or path; a person's invalid signature;
//! `Signature-Agent` parameters and case; nonce and header limits; the nonce memory and the
//! directory fetch queue partitioned from unlisted directories; fetches run concurrently.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::signer::*;
use harness::*;
use std::sync::atomic::Ordering;

/// A change to a valid signing that makes it invalid.
type Change = fn(&mut Signing);

const ROBOTS: &str =
    "User-agent: ChatGPT-User\\nDisallow: /agent-no/\\n\\nUser-agent: *\\nDisallow: /private/\\n";

fn config(origin: &Origin, directory: &Directory, state_dir: &str, allow_private: bool) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
access_log: "{{dir}}/access.jsonl"
pingora: {{threads: 1}}
state_dir: "{state_dir}"
verification:
  signatures:
    allow_private: {allow_private}
    ca_file: ca.pem
    refresh: 1s
    directories:
      - url: "{}"
        bot: ChatGPT-User
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "{ROBOTS}"}}
    action: tag
"#,
        directory.url(),
        origin.addr
    )
}

/// ChatGPT's agent, as its User-Agent names it (its browser agent sends a browser's).
const CHATGPT_USER: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot";

/// A GET with a browser's User-Agent and these headers: status, body.
fn send(proxy: &Proxy, path: &str, headers: &[(&'static str, String)]) -> (u16, String) {
    send_as(proxy, FIREFOX, None, path, headers)
}

/// A GET with this User-Agent, from `client` (through a trusted proxy's X-Forwarded-For) when
/// given, and these headers: status, body.
fn send_as(
    proxy: &Proxy,
    user_agent: &str,
    client: Option<&str>,
    path: &str,
    headers: &[(&'static str, String)],
) -> (u16, String) {
    // One client for the whole test binary: building one per request is most of the cost of
    // the tests that send thousands.
    static CLIENT: std::sync::OnceLock<reqwest::blocking::Client> = std::sync::OnceLock::new();
    let mut request = CLIENT
        .get_or_init(harness::client)
        .get(proxy.url(path))
        .header("user-agent", user_agent);
    if let Some(client) = client {
        request = request.header("x-forwarded-for", client);
    }
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    (status, response.text().unwrap())
}

fn authority(proxy: &Proxy) -> String {
    format!("127.0.0.1:{}", proxy.port)
}

fn signatures(proxy: &Proxy, result: &str) -> f64 {
    signatures_of(proxy, "ChatGPT-User", result)
}

fn signatures_of(proxy: &Proxy, bot: &str, result: &str) -> f64 {
    let series =
        format!(r#"crawlgate_signatures_total{{bot="{bot}",result="{result}",site="site"}}"#);
    proxy.metric(&series).unwrap_or(0.0)
}

/// Whether the origin's last request for `path` came judged as a crawler.
fn judged(origin: &Origin, path: &str) -> bool {
    origin
        .last(path)
        .unwrap()
        .headers
        .contains_key("x-crawlgate-bot")
}

#[test]
fn signed_requests_are_verified_and_bad_signatures_refused() {
    let origin = Origin::start();
    let signer = Signer::new(7);
    let directory = Directory::start(signer.jwks());
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().display().to_string();
    let proxy = ProxyBuilder::new(&config(&origin, &directory, &state_dir, true))
        .file("ca.pem", &directory.ca_pem)
        .start();
    wait_for_keys(&proxy, &directory);
    let authority = authority(&proxy);

    // Valid: a browser's User-Agent, but the signature makes it ChatGPT-User, judged by its
    // group (tagged, as the site's action is tag) and tagged as verified by signature. The
    // signature headers reach the origin unchanged.
    let valid = Signing::new(&signer, &authority, &directory.url()).headers();
    let (status, _) = send(&proxy, "/agent-no/page", &valid);
    assert_eq!(status, 200, "{}", proxy.logs());
    let seen = origin.last("/agent-no/page").unwrap();
    assert_eq!(
        seen.headers.get("x-crawlgate-bot").map(String::as_str),
        Some("ChatGPT-User")
    );
    assert_eq!(
        seen.headers.get("x-crawlgate-verdict").map(String::as_str),
        Some("disallowed")
    );
    assert_eq!(
        seen.headers.get("x-crawlgate-verified").map(String::as_str),
        Some("verified")
    );
    assert_eq!(
        seen.headers
            .get("x-crawlgate-verified-by")
            .map(String::as_str),
        Some("signature")
    );
    for (name, value) in &valid {
        assert_eq!(
            seen.headers.get(*name),
            Some(value),
            "{name} passes unchanged"
        );
    }
    assert_eq!(signatures(&proxy, "verified"), 1.0);
    let by_signature = r#"crawlgate_verifications_total{bot="ChatGPT-User",method="signature",result="verified",site="site"}"#;
    assert_eq!(proxy.metric(by_signature), Some(1.0));
    // Unsigned, the same browser is a person: not judged at all.
    let (status, _) = send(&proxy, "/agent-no/page2", &[]);
    assert_eq!(status, 200);
    assert!(!origin
        .last("/agent-no/page2")
        .unwrap()
        .headers
        .contains_key("x-crawlgate-bot"));

    // Replayed: the same signature again, with the User-Agent of the crawler it speaks for, is
    // refused with 429; with a browser's, it proves nothing and the browser stays a person
    // (counted, never refused).
    let (status, body) = send_as(&proxy, CHATGPT_USER, None, "/agent-no/page", &valid);
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("replayed"), "{body}");
    let (status, body) = send(&proxy, "/agent-no/replayed", &valid);
    assert_eq!(status, 200, "{body}");
    assert!(!judged(&origin, "/agent-no/replayed"));
    assert_eq!(signatures(&proxy, "replayed"), 1.0);
    assert_eq!(signatures_of(&proxy, "person", "replayed"), 1.0);

    // Bad signatures on a request whose User-Agent claims ChatGPT-User are a false claim:
    // spoofed, blocked (on_spoofed's default), with the reason. With a browser's User-Agent
    // the same signatures leave a person a person: forwarded untouched, counted as invalid.
    let cases: [(&str, Change); 4] = [
        ("expired", |s: &mut Signing| {
            s.created = now() - 7200;
            s.expires = now() - 3600;
        }),
        ("in the future", |s: &mut Signing| {
            s.created = now() + 3600;
            s.expires = now() + 7200;
        }),
        ("does not verify", |s: &mut Signing| {
            s.authority = "example.org".into()
        }),
        ("24 hours", |s: &mut Signing| {
            s.expires = s.created + 24 * 3600 + 1
        }),
    ];
    for (i, (why, change)) in cases.into_iter().enumerate() {
        let mut signing = Signing::new(&signer, &authority, &directory.url());
        change(&mut signing);
        let (status, body) = send_as(&proxy, CHATGPT_USER, None, "/page", &signing.headers());
        assert_eq!(status, 403, "{why}: {body}");
        assert!(body.contains(why), "{why}: {body}");
        assert!(body.contains("ChatGPT-User"), "{body}");
        let path = format!("/agent-no/person-{i}");
        let (status, body) = send(&proxy, &path, &signing.headers());
        assert_eq!(status, 200, "{why}: {body}");
        assert!(!judged(&origin, &path), "{why}: a person is not judged");
    }
    // A key the directory does not hold (its own thumbprint as keyid, or the real keyid).
    let stranger = Signer::new(9);
    let (status, body) = send_as(
        &proxy,
        CHATGPT_USER,
        None,
        "/page",
        &Signing::new(&stranger, &authority, &directory.url()).headers(),
    );
    assert_eq!(status, 403);
    assert!(body.contains("not in the directory's keys"), "{body}");
    let mut impostor = Signing::new(&stranger, &authority, &directory.url());
    impostor.keyid = signer.keyid();
    let (status, body) = send_as(&proxy, CHATGPT_USER, None, "/page", &impostor.headers());
    assert_eq!(status, 403);
    assert!(body.contains("does not verify"), "{body}");
    assert_eq!(signatures(&proxy, "invalid"), 6.0);
    assert_eq!(signatures_of(&proxy, "person", "invalid"), 4.0);

    // Another tag is not a Web Bot Auth signature: not judged (a person here).
    let mut other = Signing::new(&signer, &authority, &directory.url());
    other.tag = "something-else";
    let (status, _) = send(&proxy, "/agent-no/other-tag", &other.headers());
    assert_eq!(status, 200);
    assert!(!origin
        .last("/agent-no/other-tag")
        .unwrap()
        .headers
        .contains_key("x-crawlgate-bot"));

    // The access log says how the crawler was verified.
    let log = wait_for("the access log", || {
        let text = std::fs::read_to_string(proxy.path("access.jsonl")).ok()?;
        text.contains("\"verified_by\":\"signature\"")
            .then_some(text)
    });
    assert!(log.contains("\"verified\":\"verified\""), "{log}");

    // The directory goes down: fetches fail (refresh is 1s), the keys held still verify.
    directory.up.store(false, Ordering::SeqCst);
    let failed = format!(
        r#"crawlgate_signature_directory_fetches_total{{directory="{}",result="error"}}"#,
        directory.label()
    );
    wait_for("a failed directory fetch", || {
        proxy.metric(&failed).filter(|n| *n >= 1.0)
    });
    let (status, _) = send(
        &proxy,
        "/agent-no/down",
        &Signing::new(&signer, &authority, &directory.url()).headers(),
    );
    assert_eq!(status, 200);
    assert_eq!(
        origin
            .last("/agent-no/down")
            .unwrap()
            .headers
            .get("x-crawlgate-verified-by")
            .map(String::as_str),
        Some("signature")
    );
    drop(proxy);

    // After a restart with the directory still down, the keys kept in the state directory
    // verify.
    let proxy = ProxyBuilder::new(&config(&origin, &directory, &state_dir, true))
        .file("ca.pem", &directory.ca_pem)
        .start();
    let authority = format!("127.0.0.1:{}", proxy.port);
    let (status, _) = send(
        &proxy,
        "/agent-no/restarted",
        &Signing::new(&signer, &authority, &directory.url()).headers(),
    );
    assert_eq!(status, 200, "{}", proxy.logs());
    assert_eq!(
        origin
            .last("/agent-no/restarted")
            .unwrap()
            .headers
            .get("x-crawlgate-verified")
            .map(String::as_str),
        Some("verified"),
        "{}",
        proxy.logs()
    );
}

#[test]
fn a_loopback_directory_is_refused_unless_allowed() {
    let origin = Origin::start();
    let signer = Signer::new(11);
    let directory = Directory::start(signer.jwks());
    let state = tempfile::tempdir().unwrap();
    let proxy = ProxyBuilder::new(&config(
        &origin,
        &directory,
        &state.path().display().to_string(),
        false,
    ))
    .file("ca.pem", &directory.ca_pem)
    .start();
    let refused = format!(
        r#"crawlgate_signature_directory_fetches_total{{directory="{}",result="refused"}}"#,
        directory.label()
    );
    wait_for("a refused directory fetch", || {
        proxy.metric(&refused).filter(|n| *n >= 1.0)
    });
    assert_eq!(
        directory.served.load(Ordering::SeqCst),
        0,
        "nothing was fetched"
    );
    assert!(proxy.logs().contains("allow_private"), "{}", proxy.logs());
    // Its signatures cannot be checked: the browser stays a person, not ChatGPT-User.
    let headers = Signing::new(&signer, &authority(&proxy), &directory.url()).headers();
    let (status, _) = send(&proxy, "/agent-no/x", &headers);
    assert_eq!(status, 200);
    assert!(!origin
        .last("/agent-no/x")
        .unwrap()
        .headers
        .contains_key("x-crawlgate-bot"));
}

#[test]
fn explain_checks_a_signature_with_the_keys_of_a_jwks_file() {
    let signer = Signer::new(13);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("signer.json"), signer.jwks()).unwrap();
    let config = dir.path().join("crawlgate.yaml");
    std::fs::write(
        &config,
        format!(
            r#"listen: ["127.0.0.1:1"]
verification:
  signatures:
    directories:
      - url: "https://agent.example"
        bot: ChatGPT-User
        jwks: signer.json
sites:
  - name: site
    upstream: "127.0.0.1:9"
    robots: {{inline: "{ROBOTS}"}}
"#
        ),
    )
    .unwrap();
    // explain, for a browser's (or ChatGPT-User's) User-Agent on a signed request.
    let explain_as = |ua: &str, signing: Signing| {
        let mut args = vec![
            "--ua".to_owned(),
            ua.to_owned(),
            "--ip".to_owned(),
            "192.0.2.1".to_owned(),
            "--no-dns".to_owned(),
            "https://site.example/agent-no/x".to_owned(),
        ];
        for (name, value) in &signing.headers() {
            args.push("--header".into());
            args.push(format!("{name}: {value}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        explain(&config, &args)
    };
    let explain_signed = |signing: Signing| explain_as(FIREFOX, signing);
    let (code, out) = explain_signed(Signing::new(
        &signer,
        "site.example",
        "https://agent.example",
    ));
    assert!(
        out.contains("verification:  verified by signature"),
        "{code}: {out}"
    );
    assert!(out.contains("ChatGPT-User"), "{out}");
    // Tampered (signed for another host), it proves nothing: a browser stays a person, and a
    // request whose User-Agent says ChatGPT-User makes a false claim to be it.
    let (_, out) = explain_signed(Signing::new(
        &signer,
        "other.example",
        "https://agent.example",
    ));
    assert!(out.contains("requester:     a person"), "{out}");
    let (_, out) = explain_as(
        CHATGPT_USER,
        Signing::new(&signer, "other.example", "https://agent.example"),
    );
    assert!(out.contains("verification:  spoofed by signature"), "{out}");
}

#[test]
fn a_jwks_file_replaced_is_read_again_and_a_broken_one_keeps_the_keys() {
    let origin = Origin::start();
    let (old, new) = (Signer::new(21), Signer::new(22));
    let config = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
verification:
  signatures:
    directories:
      - url: "https://agent.example"
        bot: ChatGPT-User
        jwks: signer.json
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "{ROBOTS}"}}
    action: tag
"#,
        origin.addr
    );
    let proxy = ProxyBuilder::new(&config)
        .file("signer.json", old.jwks())
        .start();
    let authority = authority(&proxy);
    let verified_by = |signer: &Signer, path: &str| {
        let headers = Signing::new(signer, &authority, "https://agent.example").headers();
        let (status, body) = send(&proxy, path, &headers);
        (status, body, origin.last(path))
    };
    let claimed_by = |signer: &Signer, path: &str| {
        let headers = Signing::new(signer, &authority, "https://agent.example").headers();
        send_as(&proxy, CHATGPT_USER, None, path, &headers)
    };
    let (status, _, seen) = verified_by(&old, "/agent-no/old");
    assert_eq!(status, 200, "{}", proxy.logs());
    assert_eq!(seen.unwrap().headers["x-crawlgate-verified"], "verified");

    // The operator rotates the key: the file is replaced (written beside it, renamed over it).
    let file = proxy.path("signer.json");
    let replace = |body: &[u8]| {
        let next = file.with_extension("json.new");
        std::fs::write(&next, body).unwrap();
        std::fs::rename(&next, &file).unwrap();
    };
    replace(new.jwks().as_bytes());
    let mut attempt = 0;
    wait_for("the new key to verify", || {
        attempt += 1;
        let path = format!("/agent-no/new-{attempt}");
        let (status, _, seen) = verified_by(&new, &path);
        (status == 200 && seen?.headers.get("x-crawlgate-verified")? == "verified").then_some(())
    });
    // The old key is gone with the old file: a signature made with it is a false claim to be
    // ChatGPT-User (and proves nothing for a browser, which stays a person).
    let (status, body) = claimed_by(&old, "/agent-no/old-again");
    assert_eq!(status, 403, "{body}");
    let (status, body, seen) = verified_by(&old, "/agent-no/old-person");
    assert_eq!(status, 200, "{body}");
    assert!(!seen.unwrap().headers.contains_key("x-crawlgate-bot"));

    // A broken file is reported and the keys read before keep verifying.
    replace(b"{\"keys\": [");
    let (status, _, seen) = verified_by(&new, "/agent-no/after-broken");
    assert_eq!(status, 200);
    assert_eq!(seen.unwrap().headers["x-crawlgate-verified"], "verified");
    wait_for("the broken file to be reported", || {
        proxy.logs().contains("cannot use").then_some(())
    });
    let (status, _, seen) = verified_by(&new, "/agent-no/still");
    assert_eq!(status, 200);
    assert_eq!(seen.unwrap().headers["x-crawlgate-verified"], "verified");
}

// ---------------------------------------------------------------------------------------------
// Issue 22: signatures that cannot be replayed or turned against people.

/// A site behind a trusted proxy (the test, writing X-Forwarded-For) that believes one key
/// directory for ChatGPT-User; `signatures` adds keys under `verification.signatures`, `site`
/// under the site.
fn issue_config(
    origin: &Origin,
    directory: &str,
    robots: &str,
    signatures: &str,
    site: &str,
) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
trusted_proxies: [127.0.0.1/32]
verification:
  signatures:
    allow_private: true
    ca_file: ca.pem
    directories:
      - url: "{directory}"
        bot: ChatGPT-User
{signatures}
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "{robots}"}}
{site}
"#,
        origin.addr
    )
}

fn start_issue_proxy(
    origin: &Origin,
    directory: &Directory,
    robots: &str,
    signatures: &str,
    site: &str,
) -> Proxy {
    let config = issue_config(origin, &directory.url(), robots, signatures, site);
    let proxy = ProxyBuilder::new(&config)
        .file("ca.pem", &directory.ca_pem)
        .start();
    wait_for_keys(&proxy, directory);
    proxy
}

/// The header the origin received for `path` (its last request), if any.
fn seen_header(origin: &Origin, path: &str, name: &str) -> Option<String> {
    origin.last(path)?.headers.get(name).cloned()
}

/// Regression (issue 22): a valid signature without a nonce, captured, was verified for
/// anyone who sent it, from any address, with any User-Agent, on any path, and used up the
/// real crawler's crawl-delay slot. It is its first user's alone: the client, site and
/// User-Agent that first sent it.
#[test]
fn a_signature_without_a_nonce_verifies_its_first_user_alone() {
    let origin = Origin::start();
    let signer = Signer::new(31);
    let directory = Directory::start(signer.jwks());
    let robots = "User-agent: ChatGPT-User\\nCrawl-delay: 60\\nDisallow: /agent-no/\\n";
    let proxy = start_issue_proxy(
        &origin,
        &directory,
        robots,
        "",
        "    action: tag\n    crawl_delay: enforce",
    );
    let mut signing = Signing::new(&signer, &authority(&proxy), &directory.url());
    signing.nonce = None;
    let captured = signing.headers();
    let (real, forger) = ("198.51.100.7", "203.0.113.66");

    // The real crawler reads robots.txt first (which takes no crawl-delay slot).
    let (status, _) = send_as(&proxy, CHATGPT_USER, Some(real), "/robots.txt", &captured);
    assert_eq!(status, 200);
    assert_eq!(signatures(&proxy, "verified"), 1.0);

    // A forger replays it from another address, with the crawler's User-Agent: a replay,
    // refused with 429, judged on its own address (no slot of the crawler's is taken).
    let (status, body) = send_as(&proxy, CHATGPT_USER, Some(forger), "/page", &captured);
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("replayed"), "{body}");
    // With a browser's User-Agent, from elsewhere or from the crawler's own address, it proves
    // nothing: a person, forwarded unjudged.
    for (from, path) in [(forger, "/agent-no/f"), (real, "/agent-no/ua")] {
        let (status, _) = send_as(&proxy, FIREFOX, Some(from), path, &captured);
        assert_eq!(status, 200);
        assert_eq!(
            seen_header(&origin, path, "x-crawlgate-bot"),
            None,
            "{path}"
        );
    }
    assert_eq!(signatures(&proxy, "replayed"), 1.0);
    assert_eq!(signatures_of(&proxy, "person", "replayed"), 2.0);

    // The real crawler uses it again, on another path: verified, and its slot was free.
    let (status, body) = send_as(&proxy, CHATGPT_USER, Some(real), "/page", &captured);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        seen_header(&origin, "/page", "x-crawlgate-verified").as_deref(),
        Some("verified")
    );
    // Its next request is within its own crawl-delay.
    let (status, body) = send_as(&proxy, CHATGPT_USER, Some(real), "/page2", &captured);
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("crawl-delay"), "{body}");
    assert_eq!(signatures(&proxy, "verified"), 3.0);
}

/// Regression (issue 22): a browser whose signature is expired or wrongly scoped (a clock off,
/// a Host a CDN rewrote) was refused as a spoofed crawler. It stays a person, never refused:
/// a forger gains nothing it could not get by sending no signature. Only a request whose
/// User-Agent claims the crawler is `spoofed`.
#[test]
fn an_invalid_signature_leaves_a_person_a_person() {
    let origin = Origin::start();
    let signer = Signer::new(32);
    let directory = Directory::start(signer.jwks());
    let robots = "User-agent: ChatGPT-User\\nDisallow: /\\n";
    let proxy = start_issue_proxy(&origin, &directory, robots, "", "    action: block");
    let chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    let mut expired = Signing::new(&signer, &authority(&proxy), &directory.url());
    expired.created = now() - 7200;
    expired.expires = now() - 3600;
    let mut rescoped = Signing::new(&signer, "cdn.example", &directory.url());
    rescoped.nonce = None;
    for (i, signing) in [expired, rescoped].iter().enumerate() {
        let path = format!("/account-{i}");
        let (status, body) = send_as(&proxy, chrome, None, &path, &signing.headers());
        assert_eq!(status, 200, "{body}");
        assert_eq!(origin.last(&path).unwrap().path, path);
        let (status, body) = send_as(&proxy, CHATGPT_USER, None, &path, &signing.headers());
        assert_eq!(status, 403, "{body}");
        assert!(body.contains("does not prove it is ChatGPT-User"), "{body}");
    }
    assert_eq!(signatures_of(&proxy, "person", "invalid"), 2.0);
    assert_eq!(signatures(&proxy, "invalid"), 2.0);
    let people = r#"crawlgate_requests_total{action="forwarded",bot="person",category="person",site="site",verdict="exempt",verified="none"}"#;
    assert_eq!(proxy.metric(people), Some(2.0), "{}", proxy.metrics());
}

/// Regression (issue 22): `sig1="https://…";type=directory` (a parameter the draft defines, and
/// the member's only one that names anything) made a request a spoofed crawler, and
/// `"HTTPS://agent.example"` was not the directory `https://agent.example`.
#[test]
fn signature_agent_parameters_are_ignored_and_its_url_compared_case_insensitively() {
    let origin = Origin::start();
    let signer = Signer::new(33);
    let directory = Directory::start(signer.jwks());
    let proxy = start_issue_proxy(&origin, &directory, ROBOTS, "", "    action: tag");
    let authority = authority(&proxy);
    let upper = directory
        .url()
        .replace("https://localhost", "HTTPS://LocalHost");
    for (i, (agent, params)) in [
        (directory.url(), ";type=directory"),
        (directory.url(), ";type=directory;purpose=\"search\""),
        (upper.clone(), ""),
        (format!("{upper}/"), ";type=directory"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut signing = Signing::new(&signer, &authority, &agent);
        signing.agent_params = params.into();
        let path = format!("/agent-no/{i}");
        let (status, body) = send(&proxy, &path, &signing.headers());
        assert_eq!(status, 200, "{agent}{params}: {body}");
        assert_eq!(
            seen_header(&origin, &path, "x-crawlgate-verified").as_deref(),
            Some("verified"),
            "{agent}{params}"
        );
    }
    // A type crawlgate cannot resolve (a Client ID Metadata Document) is ignored, as the draft
    // requires: the signature names no directory, and the browser stays a person.
    let mut cimd = Signing::new(&signer, &authority, &directory.url());
    cimd.agent_params = ";type=cimd".into();
    let (status, _) = send(&proxy, "/agent-no/cimd", &cimd.headers());
    assert_eq!(status, 200);
    assert_eq!(
        seen_header(&origin, "/agent-no/cimd", "x-crawlgate-bot"),
        None
    );
    assert_eq!(signatures_of(&proxy, "person", "unverifiable"), 1.0);
}

/// Regression (issue 22): a 1 MB `Signature-Input` of 10,000 labels cost 35 ms of CPU per
/// request, and nonces were kept at full size. The headers' size and labels are checked
/// before parsing, and a nonce's size after.
#[test]
fn header_and_nonce_limits_are_checked_before_parsing() {
    let origin = Origin::start();
    let signer = Signer::new(34);
    let directory = Directory::start(signer.jwks());
    let proxy = start_issue_proxy(&origin, &directory, ROBOTS, "", "    action: tag");
    let authority = authority(&proxy);

    let mut long_nonce = Signing::new(&signer, &authority, &directory.url());
    long_nonce.nonce = Some("n".repeat(300));
    let (status, body) = send_as(&proxy, CHATGPT_USER, None, "/a", &long_nonce.headers());
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("max_nonce_bytes"), "{body}");

    let valid = Signing::new(&signer, &authority, &directory.url()).headers();
    let with_input = |input: String| -> Vec<(&'static str, String)> {
        valid
            .iter()
            .map(|(name, value)| match *name {
                "signature-input" => (*name, input.clone()),
                _ => (*name, value.clone()),
            })
            .collect()
    };
    let labels = |n: usize, padding: usize| -> String {
        (0..n)
            .map(|i| {
                format!(
                    r#"l{i}=("@authority");created=1;expires=2;keyid="{}";tag="web-bot-auth""#,
                    "k".repeat(padding)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let huge = with_input(labels(10_000, 33));
    assert!(huge[0].1.len() > 1_000_000);
    let (status, body) = send_as(&proxy, CHATGPT_USER, None, "/b", &huge);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("max_header_bytes"), "{body}");
    let (status, _) = send(&proxy, "/agent-no/huge", &huge);
    assert_eq!(status, 200, "a person's request is forwarded");
    assert_eq!(
        seen_header(&origin, "/agent-no/huge", "x-crawlgate-bot"),
        None
    );
    let (status, body) = send_as(&proxy, CHATGPT_USER, None, "/c", &with_input(labels(9, 1)));
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("9 labels") && body.contains("max_labels"),
        "{body}"
    );
    assert_eq!(signatures(&proxy, "invalid"), 3.0);
    assert_eq!(signatures_of(&proxy, "person", "invalid"), 1.0);
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Regression (issue 22): 400 requests with valid signatures and 800 KB nonces grew the
/// process by 317 MB, each nonce kept whole. They are refused by the header limit before
/// parsing, and whatever is remembered of a nonce is a 32-byte digest.
#[test]
fn four_hundred_800_kb_nonces_leave_memory_flat() {
    let origin = Origin::start();
    let signer = Signer::new(35);
    let directory = Directory::start(signer.jwks());
    let proxy = start_issue_proxy(&origin, &directory, ROBOTS, "", "    action: tag");
    let authority = authority(&proxy);
    let pid = proxy.child.id();
    // Warm: the first requests grow the allocator's pools whatever they carry.
    for _ in 0..3 {
        send(
            &proxy,
            "/warm",
            &Signing::new(&signer, &authority, &directory.url()).headers(),
        );
    }
    let before = rss_kib(pid);
    // The requests are written whole beforehand (and sent as raw bytes), so that the test's
    // own HTTP client does not spend its time on megabyte headers.
    let requests: Vec<Vec<u8>> = std::thread::scope(|scope| {
        let parts: Vec<_> = (0..4)
            .map(|part| {
                let (signer, authority, url) = (&signer, &authority, directory.url());
                scope.spawn(move || {
                    (0..100)
                        .map(|i| {
                            let mut signing = Signing::new(signer, authority, &url);
                            let nonce = format!("{part}-{i}-");
                            signing.nonce = Some(format!("{nonce}{}", "n".repeat(800 * 1024)));
                            let mut request = format!(
                                "GET /n HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: {CHATGPT_USER}\r\n"
                            );
                            for (name, value) in signing.headers() {
                                request.push_str(&format!("{name}: {value}\r\n"));
                            }
                            request.push_str("\r\n");
                            request.into_bytes()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts.into_iter().flat_map(|p| p.join().unwrap()).collect()
    });
    // As ChatGPT-User, so that what is refused stays in the proxy (a person's request would be
    // forwarded, nonce and all, to the origin). One connection, kept alive.
    use std::io::{BufRead, BufReader, Read, Write};
    let stream = std::net::TcpStream::connect(("127.0.0.1", proxy.port)).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    for request in &requests {
        writer.write_all(request).unwrap();
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 403"), "{status}");
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains("max_header_bytes"), "{body}");
    }
    let after = rss_kib(pid);
    let grown_mib = after.saturating_sub(before) as f64 / 1024.0;
    eprintln!(
        "400 requests with 800 KB nonces: RSS {:.1} MiB before, {:.1} MiB after (+{grown_mib:.1} MiB)",
        before as f64 / 1024.0,
        after as f64 / 1024.0
    );
    assert!(grown_mib < 64.0, "+{grown_mib:.1} MiB");
    assert_eq!(signatures(&proxy, "invalid"), 400.0);
    let tracked = proxy.metric(r#"crawlgate_tracked_entries{kind="signature_uses"}"#);
    assert_eq!(
        tracked,
        Some(3.0),
        "only the three warm-up nonces are remembered"
    );
}

/// Regression (issue 22): the nonce memory was one LRU for every directory, so with
/// `fetch_unlisted` an attacker's own directory could flush a real crawler's nonces and replay
/// them. Listed and unlisted directories' uses are remembered apart.
#[test]
fn unlisted_signatures_never_push_a_listed_nonce_out() {
    let origin = Origin::start();
    let (real, attacker) = (Signer::new(36), Signer::new(37));
    let directory = Directory::start(real.jwks());
    let own = Directory::start(attacker.jwks());
    // Each test directory's certificate comes from its own test CA: the proxy trusts both.
    let config = issue_config(
        &origin,
        &directory.url(),
        ROBOTS,
        "    fetch_unlisted: true\n    nonces: 10\n    unlisted_nonces: 10",
        "    action: tag",
    );
    let proxy = ProxyBuilder::new(&config)
        .file("ca.pem", format!("{}{}", directory.ca_pem, own.ca_pem))
        .start();
    wait_for_keys(&proxy, &directory);
    let authority = authority(&proxy);
    let captured = Signing::new(&real, &authority, &directory.url()).headers();
    let (status, _) = send_as(&proxy, CHATGPT_USER, None, "/first", &captured);
    assert_eq!(status, 200);
    assert_eq!(signatures(&proxy, "verified"), 1.0);

    // The attacker's own directory, nobody's: fetched once a request names it.
    let fetched =
        r#"crawlgate_signature_directory_fetches_total{directory="unlisted",result="ok"}"#;
    wait_for("the unlisted directory's keys", || {
        let headers = Signing::new(&attacker, &authority, &own.url()).headers();
        send(&proxy, "/agent-no/probe", &headers);
        proxy.metric(fetched).filter(|n| *n >= 1.0)
    });
    for i in 0..200 {
        let headers = Signing::new(&attacker, &authority, &own.url()).headers();
        let (status, _) = send(&proxy, &format!("/agent-no/flush-{i}"), &headers);
        assert_eq!(status, 200);
    }
    assert!(signatures_of(&proxy, "person", "verified") >= 200.0);
    // The real crawler's nonce is still remembered: its replay is one.
    let (status, body) = send_as(&proxy, CHATGPT_USER, None, "/replay", &captured);
    assert_eq!(status, 429, "{body}");
    assert_eq!(signatures(&proxy, "replayed"), 1.0);
}

/// A catalog of one crawler whose key directory is `url` (the catalog's directories are
/// fetched only once a request names them, unlike the configuration's).
fn catalog_naming(url: &str) -> String {
    format!(
        "bots:\n  - token: ChatGPT-User\n    operator: OpenAI\n    category: ai-assistant\n    verify:\n      signature_agent: {url}\n"
    )
}

fn catalog_config(origin: &Origin, signatures: &str) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
catalog: catalog.yaml
verification:
  signatures:
    fetch_unlisted: true
    allow_private: true
    ca_file: ca.pem
{signatures}
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "{ROBOTS}"}}
    action: tag
"#,
        origin.addr
    )
}

/// Sends fresh signatures for the listed directory until one verifies (its keys are fetched
/// once the first names it).
fn wait_until_verified(proxy: &Proxy, origin: &Origin, signer: &Signer, directory: &Directory) {
    let mut attempt = 0;
    wait_for("the listed directory's keys", || {
        attempt += 1;
        let path = format!("/agent-no/listed-{attempt}");
        let headers = Signing::new(signer, &authority(proxy), &directory.url()).headers();
        send(proxy, &path, &headers);
        (seen_header(origin, &path, "x-crawlgate-verified")? == "verified").then_some(())
    });
}

/// Regression (issue 22): fetches ran one at a time, so hanging directories delayed a real one
/// by tens of seconds. Fetches run concurrently, at most `max_fetches` for unlisted directories
/// and as many again, apart, for listed ones.
#[test]
fn hanging_unlisted_directories_never_delay_a_listed_one() {
    let origin = Origin::start();
    let signer = Signer::new(38);
    let directory = Directory::start(signer.jwks());
    let hanging = Hanging::start();
    let proxy = ProxyBuilder::new(&catalog_config(
        &origin,
        "    max_fetches: 2\n    timeout: 120s",
    ))
    .file("catalog.yaml", catalog_naming(&directory.url()))
    .file("ca.pem", &directory.ca_pem)
    .start();
    let authority = authority(&proxy);
    // Four directories that accept and never answer: two fetches run at once, and hang.
    for i in 0..4 {
        let headers = Signing::new(&signer, &authority, &hanging.url(&format!("h{i}"))).headers();
        send(&proxy, &format!("/agent-no/h{i}"), &headers);
    }
    wait_for("two fetches of hanging directories at once", || {
        (hanging.open() == 2).then_some(())
    });
    // The listed directory is fetched at once, beside them.
    wait_until_verified(&proxy, &origin, &signer, &directory);
    assert_eq!(
        hanging.open(),
        2,
        "still hanging: the listed one did not wait for them"
    );
    assert_eq!(hanging.most(), 2, "never more than max_fetches at once");
}

/// Regression (issue 22): 1,200 unlisted directories that answer 404 jammed the fetch queue,
/// were fetched again and again, and the catalog's directory was never fetched. Unlisted
/// directories wait apart and a failed one is not fetched again for a while.
#[test]
fn many_failing_unlisted_directories_never_crowd_out_a_listed_one() {
    let origin = Origin::start();
    let signer = Signer::new(39);
    let directory = Directory::start(signer.jwks());
    let proxy = ProxyBuilder::new(&catalog_config(&origin, "    max_fetches: 2"))
        .file("catalog.yaml", catalog_naming(&directory.url()))
        .file("ca.pem", &directory.ca_pem)
        .start();
    let authority = authority(&proxy);
    let name_all = || {
        for i in 0..1200 {
            let url = format!("{}/u{i}", directory.url());
            let headers = Signing::new(&signer, &authority, &url).headers();
            send(&proxy, "/agent-no/u", &headers);
        }
    };
    name_all();
    wait_until_verified(&proxy, &origin, &signer, &directory);
    name_all();
    let failed =
        r#"crawlgate_signature_directory_fetches_total{directory="unlisted",result="error"}"#;
    wait_for("unlisted directories fetched too", || {
        proxy.metric(failed).filter(|n| *n >= 1.0)
    });
    let asked = directory.asked();
    let again: Vec<_> = asked
        .iter()
        .filter(|(path, n)| path.starts_with("/u") && **n > 1)
        .collect();
    assert!(again.is_empty(), "fetched again: {again:?}");
}
