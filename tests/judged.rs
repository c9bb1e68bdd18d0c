//! Issue 11, "judge the right party", end to end: the real crawlgate binary on loopback in
//! front of a real origin. People and apps are never refused (cases 1, 2, 3), actions are set
//! per category, compliant crawlers are judged by the group they obey (case 4's fallback part),
//! and crawlers carry the name operators know (case 6).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;

use harness::*;

/// The groups of mastercard.com's, hotels.com's and healthline.com's robots.txt that once made
/// every browser a crawler (`Mozilla`), Microsoft Office one (`Microsoft`) and old phone
/// browsers one (`Java`), and the everyday rules a shop has.
const SHOP: &str = "User-agent: Mozilla/4.0 (compatible; BullsEye; Windows 95)\n\
Disallow: /\n\
\n\
User-agent: Microsoft URL Control\n\
Disallow: /\n\
\n\
User-agent: Java/1.4\n\
Disallow: /\n\
\n\
User-agent: *\n\
Disallow: /checkout\n\
Disallow: /api/\n";

/// Googlebot may fetch everything, nobody else anything; MJ12bot has a group of its own.
const GOOGLE: &str = "User-agent: Googlebot\n\
Allow: /\n\
\n\
User-agent: *\n\
Disallow: /\n\
\n\
User-agent: MJ12bot\n\
Disallow: /private/\n";

const CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const SAFARI: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1";
const OFFICE: &str = "Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.4266; Pro)";
const JAVA_PHONE: &str =
    "Mozilla/5.0 (Java; U; en-us; nokia201) UCBrowser8.3.0.154/70/355/UCWEB Mobile";
const CUBOT: &str = "Mozilla/5.0 (Linux; Android 14; Cubot X50) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.6099.144 Mobile Safari/537.36";
const SPIDER_PHONE: &str = "Mozilla/5.0 (Linux; Android 8.1.0; Spider 8 Build/O11019) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.110 Mobile Safari/537.36";
const OKHTTP: &str = "okhttp/4.12.0";
const DART: &str = "Dart/3.2 (dart:io)";
const SHOP_APP: &str = "ShopApp/5.1 (Linux; U; Android 14; Pixel 8) okhttp/4.12.0";

fn proxy(origin: &Origin) -> Proxy {
    let up = origin.addr;
    let template = sites_template(
        false,
        &[
            site("shop", &["shop.test"], up, "shop.txt", &[]),
            site(
                "strict",
                &["strict.test"],
                up,
                "shop.txt",
                &[
                    "categories: {http-library: block, seo: tag, ai-training: count}",
                    "bots: {CCBot: block}",
                ],
            ),
            site("google", &["google.test"], up, "google.txt", &[]),
        ],
    );
    ProxyBuilder::new(&template)
        .file("shop.txt", SHOP)
        .file("google.txt", GOOGLE)
        .start()
}

fn status(proxy: &Proxy, host: &str, path: &str, user_agent: &str) -> u16 {
    get(&proxy.url(path), user_agent, Some(host)).0
}

#[test]
fn people_and_apps_are_never_refused_crawlers_are_judged_by_their_group() {
    let origin = Origin::start();
    let proxy = proxy(&origin);

    // 1. Browser vocabulary in robots.txt never makes a browser or an app a crawler.
    for person in [CHROME, SAFARI, FIREFOX, OFFICE, JAVA_PHONE] {
        for path in ["/", "/products/1"] {
            assert_eq!(
                status(&proxy, "shop.test", path, person),
                200,
                "{person} {path}"
            );
        }
    }
    // Java's own HTTP client is the catalog's `Java`, judged by the Java group and counted.
    assert_eq!(status(&proxy, "shop.test", "/", "Java/17.0.6"), 200);

    // 2. Phones whose model holds a crawler word are people.
    for phone in [CUBOT, SPIDER_PHONE] {
        assert_eq!(
            status(&proxy, "shop.test", "/checkout", phone),
            200,
            "{phone}"
        );
    }
    // A crawler word that names a product still makes an (unnamed) crawler, which follows `*`.
    assert_eq!(status(&proxy, "shop.test", "/checkout", "FooBot/1.0"), 403);

    // 3. Apps are counted, not refused, under the default configuration.
    for app in [OKHTTP, DART, SHOP_APP] {
        assert_eq!(status(&proxy, "shop.test", "/api/cart", app), 200, "{app}");
    }
    let metrics = proxy.metrics();
    let counted = r#"crawlgate_requests_total{action="counted",bot="okhttp",category="http-library",site="shop",verdict="disallowed",verified="unverifiable"}"#;
    assert_eq!(metric_value(&metrics, counted), Some(2.0), "{metrics}");
    let people = r#"crawlgate_requests_total{action="forwarded",bot="person",category="person",site="shop",verdict="exempt",verified="none"}"#;
    assert_eq!(metric_value(&metrics, people), Some(12.0), "{metrics}");
    assert!(!metrics.contains(r#"bot="Mozilla""#), "{metrics}");
    assert!(!metrics.contains(r#"bot="Microsoft""#), "{metrics}");

    // Actions per category, a crawler's own override winning.
    assert_eq!(status(&proxy, "strict.test", "/api/cart", OKHTTP), 403);
    let (code, _, headers) = get(
        &proxy.url("/checkout"),
        "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
        Some("strict.test"),
    );
    assert_eq!(code, 200);
    let seen = origin.last("/checkout").unwrap();
    assert_eq!(
        seen.headers["x-crawlgate-verdict"], "disallowed",
        "{headers:?}"
    );
    assert_eq!(
        status(&proxy, "strict.test", "/checkout", "GPTBot/1.2"),
        200
    );
    assert_eq!(status(&proxy, "strict.test", "/checkout", "CCBot/2.0"), 403);

    // 4. Googlebot-Image, -News and -Video obey Googlebot's group when none names them.
    for google in [
        "Googlebot-Image/1.0",
        "Googlebot-News",
        "Googlebot-Video/1.0",
    ] {
        assert_eq!(
            status(&proxy, "google.test", "/photo.jpg", google),
            200,
            "{google}"
        );
    }
    // Storebot-Google documents no fallback: `*` applies to it.
    let store = "Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36";
    assert_eq!(status(&proxy, "google.test", "/photo.jpg", store), 403);
    // AdsBot ignores `*`, as Google documents: with no group of its own, nothing restricts it.
    let ads = "AdsBot-Google (+http://www.google.com/adsbot.html)";
    assert_eq!(status(&proxy, "google.test", "/landing", ads), 200);

    // What the site's own operator set up (a certificate's domain validation, a payment
    // provider's webhook) is counted, not refused by a `Disallow: /` written for crawlers.
    let validation = "/.well-known/pki-validation/0A1B2C.txt";
    for service in [
        "Sectigo DCV",
        "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
    ] {
        assert_eq!(
            status(&proxy, "google.test", validation, service),
            200,
            "{service}"
        );
    }
    // A proxy fetching for a person as they look (Gmail showing a newsletter's tracking pixel,
    // a CloudFront distribution that does not forward its viewer's header) is counted too.
    for proxied in [
        "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)",
        "Amazon CloudFront",
    ] {
        assert_eq!(
            status(&proxy, "google.test", "/open.gif?id=42", proxied),
            200,
            "{proxied}"
        );
    }
    let metrics = proxy.metrics();
    let counted = r#"crawlgate_requests_total{action="counted",bot="DCV",category="site-service",site="google",verdict="disallowed",verified="unverifiable"}"#;
    assert_eq!(metric_value(&metrics, counted), Some(1.0), "{metrics}");
    let proxied = r#"crawlgate_requests_total{action="counted",bot="GoogleImageProxy",category="proxy",site="google",verdict="disallowed",verified="unverifiable"}"#;
    assert_eq!(metric_value(&metrics, proxied), Some(1.0), "{metrics}");

    // 6. MJ12bot is MJ12bot in the block message and in metrics (robots.txt reads it as MJ).
    let mj = "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)";
    let (code, body, _) = get(&proxy.url("/private/a"), mj, Some("google.test"));
    assert_eq!(code, 403);
    assert_eq!(
        body,
        "robots.txt line 8 (Disallow: /private/) disallows /private/a for MJ12bot\n"
    );
    assert_eq!(status(&proxy, "google.test", "/public", mj), 200);
    let metrics = proxy.metrics();
    let blocked = r#"crawlgate_requests_total{action="blocked",bot="MJ12bot",category="seo",site="google",verdict="disallowed",verified="unverifiable"}"#;
    assert_eq!(metric_value(&metrics, blocked), Some(1.0), "{metrics}");
    assert!(!metrics.contains(r#"bot="MJ""#), "{metrics}");
}

#[test]
fn explain_names_the_group_a_crawler_obeys() {
    let origin = Origin::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("google.txt"), GOOGLE).unwrap();
    let config = dir.path().join("crawlgate.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: [\"127.0.0.1:1\"]\nsites:\n  - name: google\n    upstream: \"{}\"\n    robots: {{file: google.txt}}\n",
            origin.addr
        ),
    )
    .unwrap();
    let explain = |ua: &str, url: &str| {
        let (code, out) = explain(&config, &["--ip", "10.0.0.1", "--no-dns", "--ua", ua, url]);
        assert_eq!(code, 0, "{out}");
        out
    };
    let out = explain("Googlebot-Image/1.0", "https://example.com/photo.jpg");
    assert!(
        out.contains("crawler:       Googlebot-Image (search)"),
        "{out}"
    );
    assert!(
        out.contains("read as Googlebot-Image: Googlebot's group at line 1 (Googlebot-Image obeys Googlebot's group when no group names it)"),
        "{out}"
    );
    assert!(out.contains("verdict:       allowed"), "{out}");
    let out = explain(
        "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)",
        "https://example.com/private/x",
    );
    assert!(out.contains("crawler:       MJ12bot (seo)"), "{out}");
    assert!(out.contains("read as MJ: its own group at line 7"), "{out}");
    let out = explain(CUBOT, "https://example.com/");
    assert!(out.contains("requester:     a person"), "{out}");
    let out = explain("AdsBot-Google (+http://www.google.com/adsbot.html)", "/x");
    assert!(
        out.contains("no group names it, and its operator says it ignores *"),
        "{out}"
    );
}
