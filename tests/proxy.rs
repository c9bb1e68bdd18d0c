//! The proxy end to end: the real crawlgate binary on loopback, in front of a real origin
//! server, talked to with a real HTTP client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;
use std::time::Duration;

const ROBOTS: &str = "# test file\n\
User-agent: GPTBot\n\
Disallow: /\n\
\n\
User-agent: *\n\
Disallow: /private/\n\
Allow: /private/press/\n\
Disallow: /baz\n";

/// The hosts of [`three_sites`], and one no site is configured for.
const HOSTS: [&str; 4] = ["block.test", "tag.test", "count.test", "nobody.test"];

fn three_sites(origin: &Origin) -> Proxy {
    three_sites_over(origin, Wire::Http1)
}

fn three_sites_over(origin: &Origin, wire: Wire) -> Proxy {
    let on = |name: &str, host: &str, more: &[&str]| {
        site(name, &[host], origin.addr, "robots.txt", more)
    };
    let template = sites_template(
        true,
        &[
            on("blocking", "block.test", &["action: block"]),
            on("tagging", "tag.test", &["action: tag"]),
            on(
                "counting",
                "count.test",
                &[
                    "action: count",
                    "bots: {Googlebot: block}",
                    "block: {status: 451}",
                ],
            ),
        ],
    );
    ProxyBuilder::new(&template)
        .file("robots.txt", ROBOTS)
        .wire(wire, &HOSTS)
        .start()
}

/// Runs each case, a function of the [`Wire`], over HTTP/1.1, h2c and HTTP/2 over TLS, each as
/// a test of its own (`over_h2::CASE`): a request is judged the same whatever it came over.
macro_rules! over_every_wire {
    ($($case:ident),* $(,)?) => {
        mod over_http1 { $( #[test] fn $case() { super::$case(super::Wire::Http1) } )* }
        mod over_h2c { $( #[test] fn $case() { super::$case(super::Wire::H2c) } )* }
        mod over_h2 { $( #[test] fn $case() { super::$case(super::Wire::H2) } )* }
    };
}

over_every_wire!(
    block_mode_answers_with_the_rule_and_the_origin_never_sees_it,
    tag_mode_tells_the_origin_and_nobody_can_forge_it,
    count_mode_forwards_untouched_and_per_bot_overrides_apply,
    robots_txt_is_served_from_the_file_to_everyone,
    unknown_hosts_get_421_and_metrics_describe_the_file,
);

fn block_mode_answers_with_the_rule_and_the_origin_never_sees_it(wire: Wire) {
    let origin = Origin::start();
    let proxy = three_sites_over(&origin, wire);
    let host = "block.test";
    let (status, body, headers) = proxy.get_on(host, "/page", GPTBOT);
    assert_eq!(status, 403);
    assert_eq!(
        body,
        "robots.txt line 3 (Disallow: /) disallows /page for GPTBot\n"
    );
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert!(
        origin.last("/page").is_none(),
        "the origin saw a blocked request"
    );

    // A crawler with no group of its own follows `*`.
    let (status, body, _) = proxy.get_on(host, "/private/x?y=1", GOOGLEBOT);
    assert_eq!(status, 403);
    assert_eq!(
        body,
        "robots.txt line 6 (Disallow: /private/) disallows /private/x?y=1 for Googlebot\n"
    );
    let (status, body, _) = proxy.get_on(host, "/private/press/kit", GOOGLEBOT);
    assert_eq!((status, body.as_str()), (200, "origin: /private/press/kit"));
    // Percent-encoded unreserved characters are decoded before matching: /%62az is /baz.
    let (status, _, _) = proxy.get_on(host, "/%62az", GOOGLEBOT);
    assert_eq!(status, 403);
    // Paths that an origin resolves to a disallowed one are disallowed too (sent as written,
    // which only a raw HTTP/1.1 request does: clients resolve `..` themselves).
    if wire == Wire::Http1 {
        for target in [
            "/public/../private/x",
            "//private/x",
            "/public/%2e%2e/private/x",
        ] {
            assert_eq!(
                raw_get(proxy.port, target, "block.test", GOOGLEBOT),
                403,
                "{target}"
            );
        }
    }
    // An unnamed crawler follows `*` too.
    let foobot = "FooBot/1.0 (+https://foo.example/bot)";
    let (status, _, _) = proxy.get_on(host, "/private/a", foobot);
    assert_eq!(status, 403);
    // A person is never blocked.
    let (status, body, _) = proxy.get_on(host, "/private/x", FIREFOX);
    assert_eq!((status, body.as_str()), (200, "origin: /private/x"));
}

fn tag_mode_tells_the_origin_and_nobody_can_forge_it(wire: Wire) {
    let origin = Origin::start();
    let proxy = three_sites_over(&origin, wire);
    let forged = |path: &str, ua: &str| {
        let request = proxy
            .wire_client()
            .get(proxy.site_url("tag.test", path))
            .header("user-agent", ua)
            .header("X-Crawlgate-Verdict", "allowed")
            .header("x-crawlgate-rule", "none");
        assert_eq!(proxy.send(request).0, 200);
        origin.last(path).unwrap().headers
    };
    let seen = forged("/tagged", GPTBOT);
    assert_eq!(seen["x-crawlgate-bot"], "GPTBot");
    assert_eq!(seen["x-crawlgate-verdict"], "disallowed");
    assert_eq!(seen["x-crawlgate-rule"], "disallow / line 3");
    // Allowed crawlers are tagged too.
    let seen = forged("/blog/", GOOGLEBOT);
    assert_eq!(seen["x-crawlgate-verdict"], "allowed");
    assert!(!seen.contains_key("x-crawlgate-rule"));
    // People are not tagged, and what they send is stripped.
    let seen = forged("/from-a-person", FIREFOX);
    assert!(
        seen.keys().all(|k| !k.starts_with("x-crawlgate-")),
        "{seen:?}"
    );
}

fn count_mode_forwards_untouched_and_per_bot_overrides_apply(wire: Wire) {
    let origin = Origin::start();
    let proxy = three_sites_over(&origin, wire);
    let host = "count.test";
    let request = proxy
        .wire_client()
        .get(proxy.site_url(host, "/counted"))
        .header("user-agent", GPTBOT)
        .header("X-Crawlgate-Verdict", "allowed");
    assert_eq!(proxy.send(request).0, 200);
    let seen = origin.last("/counted").unwrap().headers;
    assert!(
        seen.keys().all(|k| !k.starts_with("x-crawlgate-")),
        "{seen:?}"
    );
    // Googlebot's override blocks, with the site's block status.
    let (status, _, _) = proxy.get_on(host, "/private/x", GOOGLEBOT);
    assert_eq!(status, 451);
    let metrics = proxy.metrics();
    let counted = r#"crawlgate_requests_total{action="counted",bot="GPTBot",category="ai-training",site="counting",verdict="disallowed",verified="unverifiable"}"#;
    assert_eq!(metric_value(&metrics, counted), Some(1.0), "{metrics}");
    let blocked = r#"crawlgate_requests_total{action="blocked",bot="Googlebot",category="search",site="counting",verdict="disallowed",verified="unverifiable"}"#;
    assert_eq!(metric_value(&metrics, blocked), Some(1.0), "{metrics}");
}

fn robots_txt_is_served_from_the_file_to_everyone(wire: Wire) {
    let origin = Origin::start();
    let proxy = three_sites_over(&origin, wire);
    for ua in [GPTBOT, FIREFOX] {
        let (status, body, headers) = proxy.get_on("block.test", "/robots.txt", ua);
        assert_eq!((status, body.as_str()), (200, ROBOTS));
        assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    }
    assert!(origin.last("/robots.txt").is_none());
    let fetches = r#"crawlgate_robots_fetches_total{bot="GPTBot",site="blocking"}"#;
    assert_eq!(proxy.metric(fetches), Some(1.0));
    let exempt = r#"crawlgate_requests_total{action="forwarded",bot="GPTBot",category="ai-training",site="blocking",verdict="exempt",verified="unverifiable"}"#;
    assert_eq!(proxy.metric(exempt), Some(1.0));
}

fn unknown_hosts_get_421_and_metrics_describe_the_file(wire: Wire) {
    let origin = Origin::start();
    let proxy = three_sites_over(&origin, wire);
    let (status, body, _) = proxy.get_on("nobody.test", "/", FIREFOX);
    assert_eq!(status, 421);
    // HTTP/1.1's Host carries the port; HTTP/2's authority is read without it.
    let port = format!(":{}", proxy.tls_port.unwrap_or(proxy.port));
    assert_eq!(
        body.replace(&port, ""),
        "crawlgate: no site is configured for host `nobody.test`\n"
    );
    let metrics = proxy.metrics();
    for line in [
        "crawlgate_unknown_host_requests_total 1",
        r#"crawlgate_robots_rules{site="blocking"} 4"#,
        r#"crawlgate_robots_problems{site="tagging"} 0"#,
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "missing `{line}` in\n{metrics}"
        );
    }
    let info = metrics
        .lines()
        .find(|l| {
            l.starts_with(r#"crawlgate_robots_info{sha256=""#) && l.contains(r#"site="blocking""#)
        })
        .unwrap();
    assert!(info.ends_with(r#"state="loaded"} 1"#), "{info}");
    let (status, body) = proxy.health();
    assert_eq!((status, body.as_str()), (200, "ok\n"));
}

#[test]
fn the_access_log_records_crawler_requests() {
    let origin = Origin::start();
    let proxy = three_sites(&origin);
    get(&proxy.url("/private/x"), GOOGLEBOT, Some("block.test"));
    get(&proxy.url("/not-a-crawler"), FIREFOX, Some("block.test"));
    let log = proxy.path("access.jsonl");
    let line = wait_for("the access log line", || {
        let text = std::fs::read_to_string(&log).ok()?;
        text.lines().next().map(str::to_owned)
    });
    let entry: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(entry["site"], "blocking");
    assert_eq!(entry["client"], "127.0.0.1");
    assert_eq!(entry["method"], "GET");
    assert_eq!(entry["path"], "/private/x");
    assert_eq!(entry["bot"], "Googlebot");
    assert_eq!(entry["category"], "search");
    assert_eq!(entry["verdict"], "disallowed");
    assert_eq!(entry["rule_line"], 6);
    assert_eq!(entry["action"], "blocked");
    assert_eq!(entry["status"], 403);
    assert!(entry["time"].as_str().unwrap().ends_with('Z'));
    // People are not in the access log.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("not-a-crawler"), "{text}");
}

const ONE_SITE: &str = r#"listen: ["{listen}"]
metrics: {listen: "{metrics}"}
pingora: {threads: 1, grace_period_seconds: 2}
sites:
  - name: site
    upstream: "ORIGIN"
    robots: {file: robots.txt}
    action: ACTION
"#;

fn one_site(origin: &Origin, action: &str) -> String {
    ONE_SITE
        .replace("ORIGIN", &origin.addr.to_string())
        .replace("ACTION", action)
}

fn status_of(proxy: &Proxy, path: &str, ua: &str) -> u16 {
    get(&proxy.url(path), ua, None).0
}

#[test]
fn a_rewritten_file_takes_effect_and_a_missing_one_keeps_the_last_good() {
    let origin = Origin::start();
    let proxy = ProxyBuilder::new(&one_site(&origin, "block"))
        .file("robots.txt", "User-agent: *\nDisallow: /a\n")
        .start();
    assert_eq!(status_of(&proxy, "/a", GOOGLEBOT), 403);
    assert_eq!(status_of(&proxy, "/b", GOOGLEBOT), 200);

    // Replaced by rename, as deploy tools do.
    write_atomically(&proxy.path("robots.txt"), b"User-agent: *\nDisallow: /b\n");
    wait_for("the renamed file", || {
        (status_of(&proxy, "/b", GOOGLEBOT) == 403).then_some(())
    });
    assert_eq!(status_of(&proxy, "/a", GOOGLEBOT), 200);

    // Rewritten in place.
    std::fs::write(proxy.path("robots.txt"), b"User-agent: *\nDisallow: /c\n").unwrap();
    wait_for("the rewritten file", || {
        (status_of(&proxy, "/c", GOOGLEBOT) == 403).then_some(())
    });

    // Gone: the last good file stays in force, and the failure is counted.
    std::fs::remove_file(proxy.path("robots.txt")).unwrap();
    let errors = r#"crawlgate_robots_reloads_total{result="error",site="site"}"#;
    wait_for("a failed reload", || {
        proxy.metric(errors).filter(|n| *n >= 1.0)
    });
    assert_eq!(status_of(&proxy, "/c", GOOGLEBOT), 403);
    assert_eq!(status_of(&proxy, "/a", GOOGLEBOT), 200);

    // Back again.
    write_atomically(&proxy.path("robots.txt"), b"User-agent: *\nDisallow: /d\n");
    wait_for("the restored file", || {
        (status_of(&proxy, "/d", GOOGLEBOT) == 403).then_some(())
    });
    assert_eq!(status_of(&proxy, "/c", GOOGLEBOT), 200);
}

#[test]
fn sighup_reloads_the_configuration_and_a_bad_one_keeps_the_old() {
    let origin = Origin::start();
    let proxy = ProxyBuilder::new(&one_site(&origin, "block"))
        .file("robots.txt", "User-agent: GPTBot\nDisallow: /\n")
        .start();
    assert_eq!(status_of(&proxy, "/x", GPTBOT), 403);

    proxy.reconfigure(&one_site(&origin, "count"));
    wait_for("the new action", || {
        (status_of(&proxy, "/x", GPTBOT) == 200).then_some(())
    });
    let ok = r#"crawlgate_config_reloads_total{result="ok"}"#;
    assert_eq!(proxy.metric(ok), Some(1.0));

    proxy.reconfigure(&format!("{}    colour: red\n", one_site(&origin, "block")));
    let error = r#"crawlgate_config_reloads_total{result="error"}"#;
    wait_for("the failed reload", || proxy.metric(error));
    assert_eq!(
        status_of(&proxy, "/x", GPTBOT),
        200,
        "the old configuration must keep serving"
    );
    let logs = proxy.logs();
    assert!(logs.contains("unknown field `colour`"), "{logs}");
}

#[test]
fn sighup_rereads_robots_txt_at_once() {
    let origin = Origin::start();
    let proxy = ProxyBuilder::new(&one_site(&origin, "block"))
        .file("robots.txt", "User-agent: *\nDisallow: /a\n")
        .start();
    assert_eq!(status_of(&proxy, "/a", GOOGLEBOT), 403);
    write_atomically(&proxy.path("robots.txt"), b"User-agent: *\nDisallow: /b\n");
    proxy.signal("HUP");
    wait_for("the reloaded file", || {
        (status_of(&proxy, "/b", GOOGLEBOT) == 403).then_some(())
    });
    assert_eq!(status_of(&proxy, "/a", GOOGLEBOT), 200);
}

fn origin_site(origin: &Origin, extra: &str) -> String {
    format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1, grace_period_seconds: 2}}
sites:
  - name: site
    upstream: "{}"
    robots:
      origin: true
      refresh: 1s
      timeout: 500ms
{extra}"#,
        origin.addr
    )
}

#[test]
fn robots_txt_from_the_origin_follows_rfc_9309_on_errors() {
    let origin = Origin::start();
    origin.set_robots(200, "User-agent: *\nDisallow: /private/\n", Duration::ZERO);
    let proxy = ProxyBuilder::new(&origin_site(&origin, "")).start();
    wait_for("the origin's file", || {
        (status_of(&proxy, "/private/x", GOOGLEBOT) == 403).then_some(())
    });
    assert_eq!(status_of(&proxy, "/blog", GOOGLEBOT), 200);
    // /robots.txt goes to the origin when the origin is the source.
    let (status, body, _) = get(&proxy.url("/robots.txt"), GOOGLEBOT, None);
    assert_eq!(
        (status, body.as_str()),
        (200, "User-agent: *\nDisallow: /private/\n")
    );

    // 5xx: unreachable; the last good file is kept (on_unreachable: keep-last).
    origin.set_robots(503, "down", Duration::ZERO);
    let unreachable = r#"crawlgate_robots_reloads_total{result="unreachable",site="site"}"#;
    wait_for("an unreachable fetch", || proxy.metric(unreachable));
    assert_eq!(status_of(&proxy, "/private/x", GOOGLEBOT), 403);
    assert_eq!(status_of(&proxy, "/blog", GOOGLEBOT), 200);

    // 4xx: unavailable, no restrictions.
    origin.set_robots(404, "not found", Duration::ZERO);
    wait_for("the 404", || {
        (status_of(&proxy, "/private/x", GOOGLEBOT) == 200).then_some(())
    });

    // 5xx with no good file at hand: complete disallow.
    origin.set_robots(500, "error", Duration::ZERO);
    wait_for("complete disallow", || {
        (status_of(&proxy, "/blog", GOOGLEBOT) == 403).then_some(())
    });
    let (_, body, _) = get(&proxy.url("/blog"), GOOGLEBOT, None);
    assert!(body.contains("unreachable"), "{body}");
    // The instance still serves (the stand-in is enforced): degraded, not down; the site's own
    // readiness says it is not ready.
    let (status, body) = proxy.health();
    assert_eq!(status, 200);
    assert!(
        body.starts_with("degraded\n") && body.contains("site site: robots.txt is unreachable"),
        "{body}"
    );
    let url = format!("http://127.0.0.1:{}/healthz/site/site", proxy.metrics_port);
    assert_eq!(client().get(url).send().unwrap().status(), 503);
    // People are never blocked, whatever robots.txt's state.
    assert_eq!(status_of(&proxy, "/blog", FIREFOX), 200);
}

#[test]
fn a_slow_origin_times_out_into_on_unreachable() {
    let origin = Origin::start();
    origin.set_robots(200, "User-agent: *\nDisallow: /x\n", Duration::from_secs(5));
    let proxy =
        ProxyBuilder::new(&origin_site(&origin, "      on_unreachable: allow-all\n")).start();
    let unreachable = r#"crawlgate_robots_reloads_total{result="unreachable",site="site"}"#;
    wait_for("a timed-out fetch", || proxy.metric(unreachable));
    assert_eq!(status_of(&proxy, "/x", GOOGLEBOT), 200);
    let info = proxy.metrics();
    assert!(info.contains(r#"state="unreachable"} 1"#), "{info}");
}

#[test]
fn a_dead_origin_gives_502_without_harming_other_sites() {
    let origin = Origin::start();
    let dead = free_port();
    let template = format!(
        r#"listen: ["{{listen}}"]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
sites:
  - name: dead
    hosts: [dead.test]
    upstream: "127.0.0.1:{dead}"
    robots: {{inline: "User-agent: *\nDisallow: /private/\n"}}
  - name: alive
    hosts: [alive.test]
    upstream: "{}"
    robots: {{inline: "User-agent: *\nDisallow: /private/\n"}}
"#,
        origin.addr
    );
    let proxy = ProxyBuilder::new(&template).start();
    for _ in 0..3 {
        assert_eq!(get(&proxy.url("/x"), FIREFOX, Some("dead.test")).0, 502);
        assert_eq!(get(&proxy.url("/x"), FIREFOX, Some("alive.test")).0, 200);
    }
    // Blocking needs no origin at all.
    assert_eq!(
        get(&proxy.url("/private/x"), GOOGLEBOT, Some("dead.test")).0,
        403
    );
    let errors = r#"crawlgate_upstream_errors_total{kind="connect",site="dead"}"#;
    assert_eq!(proxy.metric(errors), Some(3.0));
}

#[test]
fn tls_listeners_serve_with_the_configured_certificate() {
    let origin = Origin::start();
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let tls_port = free_port();
    let template = format!(
        r#"listen: ["{{listen}}"]
tls_listen: [{{addr: "127.0.0.1:{tls_port}", cert: cert.pem, key: key.pem}}]
metrics: {{listen: "{{metrics}}"}}
pingora: {{threads: 1}}
sites:
  - name: site
    upstream: "{}"
    robots: {{inline: "User-agent: GPTBot\nDisallow: /\n"}}
"#,
        origin.addr
    );
    let proxy = ProxyBuilder::new(&template)
        .file("cert.pem", cert.pem())
        .file("key.pem", key.serialize_pem())
        .start();
    let root = reqwest::Certificate::from_pem(cert.pem().as_bytes()).unwrap();
    let https = reqwest::blocking::Client::builder()
        .no_proxy()
        .add_root_certificate(root)
        .resolve(
            "localhost",
            format!("127.0.0.1:{tls_port}").parse().unwrap(),
        )
        .build()
        .unwrap();
    let url = format!("https://localhost:{tls_port}/page");
    let response = https.get(&url).header("user-agent", GPTBOT).send().unwrap();
    assert_eq!(response.status(), 403);
    let response = https
        .get(&url)
        .header("user-agent", FIREFOX)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().unwrap(), "origin: /page");
    drop(proxy);
}

#[test]
fn sigterm_drains_and_exits_within_the_grace_period() {
    let origin = Origin::start();
    let mut proxy = ProxyBuilder::new(&one_site(&origin, "block"))
        .file("robots.txt", "User-agent: *\nDisallow: /a\n")
        .start();
    assert_eq!(status_of(&proxy, "/b", GOOGLEBOT), 200);
    proxy.signal("TERM");
    // grace_period_seconds: 2; pingora's own default would keep it for 300 s, far past the
    // harness deadline.
    let status = wait_for("the process to exit", || proxy.child.try_wait().unwrap());
    assert!(status.success(), "{status}");
}
