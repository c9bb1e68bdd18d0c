//! Crawls set against referrals, through the real proxy: people arriving from an operator's
//! product (`Referer`, else `Origin`) count as its referrals, its crawlers' requests (unless
//! proven false) as its crawls, and nothing else counts as either.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;

const GOOGLE_RANGES: &str = r#"{"creationTime": "2026-11-01T00:00:00.000000", "prefixes": [
  {"ipv4Prefix": "66.249.64.0/19"}]}"#;

fn referrals(operator: &str) -> String {
    format!(r#"crawlgate_referrals_total{{operator="{operator}",site="shop"}}"#)
}

fn crawls(operator: &str) -> String {
    format!(r#"crawlgate_crawls_total{{operator="{operator}",site="shop"}}"#)
}

/// A GET with extra headers; the status.
fn send(proxy: &Proxy, path: &str, user_agent: &str, headers: &[(&str, &str)]) -> u16 {
    let mut request = client()
        .get(proxy.url(path))
        .header("user-agent", user_agent);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().unwrap().status().as_u16()
}

#[test]
fn people_from_an_operators_products_are_its_referrals_and_its_crawlers_its_crawls() {
    let origin = Origin::start();
    let template = sites_template(
        false,
        &[site("shop", &[], origin.addr, "robots.txt", &["action: block"])],
    )
    .replace(
        "sites:\n",
        "trusted_proxies: [127.0.0.1/32]\nverification:\n  ranges: {Googlebot: googlebot.json}\n  on_spoofed: tag\nsites:\n",
    );
    let proxy = ProxyBuilder::new(&template)
        .file("robots.txt", "User-agent: GPTBot\nDisallow: /private/\n")
        .file("googlebot.json", GOOGLE_RANGES)
        .start();
    let own = proxy.url("/other-page");

    // People: three referrals, and five requests that are none.
    for (referer, origin_header) in [
        (Some("https://chatgpt.com/"), None),
        (Some("https://www.google.co.uk/search?q=shop"), None),
        (None, Some("https://www.perplexity.ai")),
        (Some("https://mail.google.com/mail/u/0/"), None),
        (Some("https://example.org/links"), None),
        (Some(own.as_str()), None),
        (Some("android-app://com.google.android.gm/"), None),
        (None, None),
    ] {
        let mut headers = Vec::new();
        headers.extend(referer.map(|r| ("referer", r)));
        headers.extend(origin_header.map(|o| ("origin", o)));
        assert_eq!(send(&proxy, "/page", FIREFOX, &headers), 200, "{headers:?}");
    }
    // GPTBot: allowed, refused, and one with a Referer (a crawler's is no referral).
    assert_eq!(send(&proxy, "/page", GPTBOT, &[]), 200);
    assert_eq!(send(&proxy, "/private/x", GPTBOT, &[]), 403);
    let from_chatgpt = [("referer", "https://chatgpt.com/")];
    assert_eq!(send(&proxy, "/page", GPTBOT, &from_chatgpt), 200);
    // Googlebot from its published ranges counts; a false claim (tagged, forwarded) does not.
    let verified = [("x-forwarded-for", "66.249.66.1")];
    assert_eq!(send(&proxy, "/page", GOOGLEBOT, &verified), 200);
    let spoofed = [("x-forwarded-for", "203.0.113.9")];
    assert_eq!(send(&proxy, "/page", GOOGLEBOT, &spoofed), 200);
    // A crawler whose operator the catalog lists no referrer hosts for has no crawls series.
    let ahrefs = "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)";
    assert_eq!(send(&proxy, "/page", ahrefs, &[]), 200);

    // Counted when each request is logged, after its response: wait for the last ones.
    wait_for("the crawls counted", || {
        (proxy.metric(&crawls("Google")) == Some(1.0)
            && proxy.metric(&crawls("OpenAI")) == Some(3.0))
        .then_some(())
    });
    let metrics = proxy.metrics();
    for (series, value) in [
        (referrals("OpenAI"), 1.0),
        (referrals("Google"), 1.0),
        (referrals("Perplexity"), 1.0),
        (crawls("OpenAI"), 3.0),
        (crawls("Google"), 1.0),
    ] {
        assert_eq!(
            metric_value(&metrics, &series),
            Some(value),
            "{series}\n{metrics}"
        );
    }
    let referral_series = metrics
        .lines()
        .filter(|line| line.starts_with("crawlgate_referrals_total{"))
        .count();
    let crawl_series = metrics
        .lines()
        .filter(|line| line.starts_with("crawlgate_crawls_total{"))
        .count();
    assert_eq!((referral_series, crawl_series), (3, 2), "{metrics}");
}
