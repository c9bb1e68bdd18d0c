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
    let mut request = harness::client()
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

fn wait_for_keys(proxy: &Proxy, directory: &Directory) {
    let series = format!(
        r#"crawlgate_signature_keys{{directory="{}"}}"#,
        directory.label()
    );
    wait_for("the directory's keys", || {
        (proxy.metric(&series) == Some(1.0)).then_some(())
    });
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
