//! Classification measured on real, labelled User-Agents nobody working on crawlgate wrote
//! (`tests/fixtures/ua/SOURCE.md`, `tests/fixtures/isbot/SOURCE.md`), beside the peer, isbot's
//! pattern, on the same corpora: people's browsers and apps (uap-core's fixtures, real traffic
//! from the npm package `user-agents`, isbot's browser fixtures) and crawlers
//! (monperrus/crawler-user-agents, isbot's crawler fixtures, uap-core's spiders). Every header
//! the issue that asked for this reading quoted is a regression test here.
//!
//! Prints the rates side by side (`cargo test --test classification -- --nocapture`), the
//! people either reads as crawlers, and the crawlers isbot recognises and crawlgate does not,
//! with why; holds the targets (see `docs/decisions/classifier-grammar.md` for the ones the
//! measurement does not reach, and why).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::isbot::IsBot;
use common::people::{
    self, apps_labelled, crawler_instances, isbot_crawlers, not_a_person, uap_core,
};
use crawlgate::agent::{grammar, is_token_byte, Category, Matching, Who};
use crawlgate::catalog::{Catalog, EMBEDDED_CATALOG};
use crawlgate::crawlers::{CatalogIndex, Crawler, Crawlers};
use crawlgate::policy::{Action, Actions};
use crawlgate::Robots;
use std::collections::{HashMap, HashSet};

/// The default configuration's table: the embedded catalog, no site tokens, the site's action
/// `block`, the default per category.
fn table(catalog: Catalog) -> Crawlers {
    let index = CatalogIndex::new(catalog).unwrap();
    let robots = Robots::parse(b"User-agent: *\nDisallow: /\n");
    Crawlers::build(&index, &robots, &Actions::for_site(Action::Block), &[]).unwrap()
}

fn row<'a>(crawlers: &'a Crawlers, header: &str) -> Option<Crawler<'a>> {
    crawlers.row(crawlers.classify(header.as_bytes()))
}

fn per_100k(part: usize, whole: usize) -> f64 {
    part as f64 * 100_000.0 / whole.max(1) as f64
}

fn percent(part: usize, whole: usize) -> f64 {
    part as f64 * 100.0 / whole.max(1) as f64
}

/// The people's headers the issue quoted (or, where it named an app without its header, the
/// app's header from isbot's browser fixtures): each is a person.
const PEOPLE: &[&str] = &[
    "Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 10; CUBOT_P20) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 9; S222 Build/CUBOT) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
    "Mozilla/5.0 (Linux; Android 12; HTC Desire 22 pro Build/SKQ1.211006.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/110.0.5481.153 Mobile Safari/537.36 Instagram 267.0.0.18.93 Android (31/12; 480dpi; 1080x2132; HTC; HTC Desire 22 pro; htc_botdugls; qcom; de_DE; 440638617)",
    "Mozilla/5.0 (Linux; Android 9; S550 Pro Build/PPR1.180610.011; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/110.0.5481.153 Mobile Safari/537.36 Instagram 267.0.0.18.93 Android (28/9; 320dpi; 720x1440; CUBOT; S550 Pro; hct6735_35gu_l1; mt6735; de_DE; 440638617)",
    "Mozilla/5.0 (Linux; Android 9; ATV R1) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/87.0.4280.101 Safari/537.36 HbbTV/1.5.1 (+DRM;BOTECH;ATV R1;Demo 1.0;;) FVC/5.0 (BOTECH;TVs;)",
    "Mozilla/5.0 (Web0S; Linux/SmartTV) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.79 Safari/537.36 WebAppManager",
    "MyApp/2.3 (Windows NT 10.0; support@myapp.com)",
    "Mozilla/5.0 (Linux; Android 8.0.0; Expanse) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
    // The old Mac browser wrapper.
    "Mozilla/5.0 (Macintosh; U; Intel Mac OS X 10_5_6; en-us) AppleWebKit/528.16 (KHTML, like Gecko) Fluid/0.9.6 Safari/528.16",
    // The Viber app (isbot's browser fixtures).
    "Viber/12.8.0.1 CFNetwork/1121.2.2 Darwin/19.3.0",
    "Mozilla/5.0 (Linux; Android 7.1.2; G011A Build/N2G48H; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/66.0.3359.158 Safari/537.36 Viber/11.9.5.8",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_4) AppleWebKit/537.36 (KHTML, like Gecko) QtWebEngine/5.6.0 Chrome/45.0.2454.101 Safari/537.36 Viber",
    // The Podimo app, in the form apps built on Apple's and Android's HTTP stacks write
    // (`Name/version (platform; …)`): its catalog entry counts only with a crawler signal.
    "Podimo/2.38.0 (iPhone; iOS 17.5; Scale/3.00)",
    "Podimo/2.38.0 (Linux; U; Android 14; Pixel 8 Build/AP2A.240805.005)",
    // Overcast's iOS app, beside its server's podcast sync below.
    "Overcast/2.0 (+http://overcast.fm/; iOS podcast app)",
];

/// The crawlers' headers the issue quoted, with who each must be (`None`: an unnamed crawler).
const CRAWLERS: &[(&str, Option<&str>)] = &[
    ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; MistralAI-Index/1.0; +https://docs.mistral.ai/robots)", None),
    ("Mozilla/5.0 (compatible; NetScope-DomainScanner/1.0; security research scanner)", None),
    ("fhms-its-research-scanner/1.0 (+https://fb02itsscan02.fh-muenster.de)", None),
    ("BoardReader Blog Indexer(http://boardreader.com)", None),
    ("PunkMap (https://github.com/openeasm/punkmap)", None),
    ("Mozilla/5.0 (compatible; Google-Youtube-Links)", None),
    ("Overcast/1.0 Podcast Sync (123 subscribers; feed-id=456789; +http://overcast.fm/)", None),
    ("008/0.83 (http://www.advancedwebranking.com)", None),
    ("2ip.ru CMS Detector (https://2ip.ru/cms/)", None),
    ("Scrapy/2.11.2 (+https://scrapy.org)", Some("Scrapy")),
    ("Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0.3945.88 Safari/537.36", Some("Storebot-Google")),
    ("Podimo/1.0 (+https://podimo.com/)", Some("Podimo")),
    ("Expanse, a Palo Alto Networks company, searches across the global IPv4 space multiple times per day to identify customers&#39; presences on the Internet.", Some("Expanse")),
];

#[test]
fn the_headers_the_issue_quoted() {
    let crawlers = table(Catalog::embedded().unwrap());
    for person in PEOPLE {
        let read = crawlers.read(person.as_bytes());
        assert_eq!(read.who, Who::Person, "{person}: {read:?}");
    }
    for (header, name) in CRAWLERS {
        let who = crawlers.classify(header.as_bytes());
        let crawler = crawlers
            .row(who)
            .unwrap_or_else(|| panic!("{header}: a person"));
        match name {
            Some(name) => assert_eq!(&*crawler.name, *name, "{header}"),
            None => assert_eq!(who, Who::Unnamed, "{header}: {}", crawler.name),
        }
    }
}

/// Crawlers and tools the catalog's curated entries recognise since the cost and recall pass (from crawler-user-agents and isbot's crawler fixtures), with the name
/// each must be read as (`None`: an unnamed crawler) and its category.
const NAMED_SINCE_THE_RECALL_PASS: &[(&str, Option<&str>, Category)] = &[
    ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/107.0 Safari/537.36 Ghost Inspector (63c85ddbde52d6697f57c623)", Some("Ghost Inspector"), Category::Monitoring),
    ("Mozilla/5.0 (iPhone; CPU iPhone OS 11_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Hotjar Version/11.0 Mobile/15E148 Safari/604.1", Some("Hotjar"), Category::Other),
    ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/602.1 (KHTML, like Gecko) splash Version/10.0 Safari/602.1", Some("splash Version"), Category::HttpLibrary),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 newsai/1.0 Safari/537.36", Some("newsai"), Category::AiTraining),
    ("Mozilla/5.0 (Linux; Android 15; GEC77) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 Nitro-Optimizer-Agent", Some("Nitro-Optimizer-Agent"), Category::Other),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36 CloudflareObservatory/1.0", Some("CloudflareObservatory"), Category::Monitoring),
    ("Mozilla/5.0 (X11; Linux x86_64; rv:52.0) Gecko/20100101 Firefox/52.0 DejaClick/2.9.7.2", Some("DejaClick"), Category::Monitoring),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) TagInspector/500.1 Chrome/90.0.4430.72 Safari/537.36 Edg/90.0.818.39", Some("TagInspector"), Category::Monitoring),
    ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Cypress/3.3.2 Chrome/61.0.3163.100 Electron/2.0.18 Safari/537.36", Some("Cypress"), Category::HttpLibrary),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_6) AppleWebKit/537.36 (KHTML, like Gecko) Sparkler/0.2.0-SNAPSHOT", Some("Sparkler"), Category::CrawlerFramework),
    ("kube-probe/1.15", Some("kube-probe"), Category::Monitoring),
    ("prometheus/2.18.1", Some("Prometheus"), Category::Monitoring),
    ("collectd/5.5.1", Some("collectd"), Category::Monitoring),
    ("Monit/5.23.0", Some("Monit"), Category::Monitoring),
    ("munin/http_loadtime", Some("munin"), Category::Monitoring),
    ("Hexometer", Some("Hexometer"), Category::Monitoring),
    ("RestSharp/106.5.4.0", Some("RestSharp"), Category::HttpLibrary),
    ("undici", Some("undici"), Category::HttpLibrary),
    ("grpc-java-netty/1.28.1", Some("grpc-java-netty"), Category::HttpLibrary),
    ("grpc-node/1.24.2 grpc-c/8.0.0 (linux; chttp2; ganges)", Some("grpc-node"), Category::HttpLibrary),
    ("grpc-ruby/1.21.0 grpc-c/7.0.0 (linux; chttp2; gandalf)", Some("grpc-ruby"), Category::HttpLibrary),
    ("http-kit/2.0", Some("http-kit"), Category::HttpLibrary),
    ("scalaj-http/2.4.2", Some("scalaj-http"), Category::HttpLibrary),
    ("lua-resty-http/0.10 (Lua) ngx_lua/10000", Some("lua-resty-http"), Category::HttpLibrary),
    ("Request-Promise", Some("Request-Promise"), Category::HttpLibrary),
    ("WinHTTP", Some("WinHTTP"), Category::HttpLibrary),
    ("ApacheBench/2.3", Some("ApacheBench"), Category::HttpLibrary),
    ("Jakarta Commons-HttpClient/3.1", Some("Jakarta Commons-HttpClient"), Category::HttpLibrary),
    ("PHP/5.2.14", Some("PHP"), Category::HttpLibrary),
    ("Arachni/v1.5.1", Some("Arachni"), Category::Scanner),
    ("Fuzz Faster U Fool v1.5.0-dev", Some("Fuzz Faster U Fool"), Category::Scanner),
    ("Mozilla/5.0 xtate/2.12.4", Some("xtate"), Category::Scanner),
    ("Mozilla/5.0 (Morningscore/1.0)", Some("Morningscore"), Category::Seo),
    ("Browsershots", Some("Browsershots"), Category::Other),
    ("Google-Cloud-Scheduler", Some("Google-Cloud-Scheduler"), Category::Other),
    ("Google-Cloud-Tasks", Some("Google-Cloud-Tasks"), Category::Other),
    ("azure-logic-apps/1.0 (workflow 971b5bea643343dfa00318ee752abce5; version 08584442669960581077) microsoft-flow/1.0", Some("azure-logic-apps"), Category::Other),
    ("IFTTT-Protocol/v1", Some("IFTTT-Protocol"), Category::Other),
    // Crawlers posing as browsers that write a URL, an address or a site in the browser's
    // platform comment, or a site between it and the engine; an address written `[at]`.
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64; trendictionbot0.5.0; trendiction search; http://www.trendiction.de/bot; please let us know of any problems; web at trendiction.com) Gecko/20170101 Firefox/67.0", None, Category::Unnamed),
    ("Mozilla/5.0 (Windows NT 6.1; WOW64; https://top.mail.ru/passremind) AppleWebKit/537.22 (KHTML, like Gecko)", None, Category::Unnamed),
    ("Mozilla/5.0 (iPhone; Y!J-BRY/YATSH crawler; http://help.yahoo.co.jp/help/jp/search/indexing/indexing-15.html)", None, Category::Unnamed),
    ("Mozilla/5.0 (X11; Linux x86_64; HubSpot Single Page link check; web-crawlers+links@hubspot.com) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/51.0.2704.103 Safari/537.36", None, Category::Unnamed),
    ("Mozilla/5.0 (Windows NT 10.0; cludo.com bot) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", None, Category::Unnamed),
    ("Mozilla/5.0 (feeder.co; Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/106.0.0.0 Safari/537.36", None, Category::Unnamed),
    ("Mozilla/5.0 (iPad; CPU OS 15_3_1 like Mac OS X) adbeat.com/policy AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.3.1 Mobile/15E148 Safari/604.1", None, Category::Unnamed),
    ("Mozilla/5.0 (compatible; +centuryb.o.t9[at]gmail.com)", None, Category::Unnamed),
    ("Mozilla/4.0 (compatible; Netcraft Web Server Survey)", Some("Netcraft"), Category::Scanner),
    ("Thumbor/6.7.5, Mozilla/5.0 (Linux; Android 9; RAZER Phone Build/NMF26F) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/76.0.3809.111 Mobile Safari/537.36", Some("Thumbor"), Category::Other),
    // Named tools whose name holds a digit (the token is its leading run, the rest must
    // follow), a page-audit browser after the engine, `audit` as a word of its own, and a URL
    // held in a posing browser's platform comment.
    ("Site24x7", Some("Site24x7"), Category::Monitoring),
    ("mozilla/5.0 (windows nt 6.1; wow64; rv:101.0) gecko/20100101 firefox/101.0 site24x7", Some("Site24x7"), Category::Monitoring),
    ("W3C_Unicorn/1.0", Some("W3C_Unicorn"), Category::Monitoring),
    ("l9explore/1.2.2", Some("l9explore"), Category::Scanner),
    ("ds9 2.004.ec2", Some("ds9"), Category::Other),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_6) AppleWebKit/537.36 (KHTML, like Gecko) YLT Chrome/85.0.4183.121 Safari/537.36", Some("YLT"), Category::Monitoring),
    ("Feed Image Audit -- App", None, Category::Unnamed),
    ("Mozilla/5.0 (X11; Linux x86_64; GTmetrix https://gtmetrix.com/) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/75.0.3770.100 Safari/537.36", None, Category::Unnamed),
    // Named tools of isbot's crawler fixtures, each with its project's page in the catalog.
    ("Mozilla/4.0 (Hydra)", Some("Hydra"), Category::Scanner),
    ("Mozilla/5.0 (Hydra Proxy)", Some("Hydra"), Category::Scanner),
    ("webcollage/1.182", Some("webcollage"), Category::Other),
    ("Xymon xymonnet/4.3.17", Some("xymonnet"), Category::Monitoring),
    ("Hobbit bbtest-net/4.3.0-0.beta2", Some("bbtest-net"), Category::Monitoring),
    ("ClamAV/0.101.5 (OS: linux-gnu, ARCH: x86_64, CPU: x86_64)", Some("ClamAV"), Category::HttpLibrary),
    ("Go 1.1 package http", Some("Go 1.1 package http"), Category::HttpLibrary),
    // Fetches a site's own operator set up (decision 15), and named tools of isbot's crawler
    // fixtures, each with its operator's page but Jorgee's and Webster Pro's.
    ("COMODO DCV", Some("DCV"), Category::SiteService),
    ("Sectigo DCV", Some("DCV"), Category::SiteService),
    ("Cloudflare Custom Hostname Verification", Some("Cloudflare Custom Hostname Verification"), Category::SiteService),
    ("PerimeterX Integration Services", Some("PerimeterX"), Category::SiteService),
    ("nginx-ssl early hints", Some("nginx-ssl early hints"), Category::SiteService),
    ("Braze Sender f3c381e4920fede7f46d83610f0abf15fdc10433", Some("Braze Sender"), Category::SiteService),
    ("Zoom Marketplace/1.0a", Some("Zoom Marketplace"), Category::SiteService),
    ("WebPurify(callback)", Some("WebPurify"), Category::SiteService),
    ("algoliarecommend/lookingsimilar", Some("algoliarecommend"), Category::SiteService),
    ("placid.app/v1", Some("placid.app"), Category::SiteService),
    ("ROI Hunter; https://api-dev.roihunter.com", Some("ROI Hunter"), Category::SiteService),
    ("Mozilla/5.0 (compatible; Google-Site-Verification/1.0)", Some("Google-Site-Verification"), Category::SiteService),
    ("Stripe/1.0 (+https://stripe.com/docs/webhooks)", Some("Stripe"), Category::SiteService),
    ("Shopify-Captain-Hook", Some("Shopify-Captain-Hook"), Category::SiteService),
    ("Discourse/2.6.0.beta3", Some("Discourse"), Category::Social),
    ("Invision Community 4", Some("Invision Community"), Category::Social),
    ("nibbler", Some("nibbler"), Category::Seo),
    ("SeopultContentAnalyzer/1.0", Some("SeopultContentAnalyzer"), Category::Seo),
    ("Feedspot http://www.feedspot.com", Some("Feedspot"), Category::Feed),
    ("SilverReader/1.0; http://silverreader.com", Some("SilverReader"), Category::Feed),
    ("Mozilla/4.7 (compatible; OffByOne; Windows 2000) Webster Pro V3.4", Some("Webster Pro"), Category::HttpLibrary),
    ("OpenAI/JS 4.77.0", Some("OpenAI/JS"), Category::HttpLibrary),
    ("Mozilla/5.0 Jorgee", Some("Jorgee"), Category::Scanner),
    ("Mozilla/5.0 (compatible; MSIE or Firefox mutant;) Daum 4.1", Some("Daum"), Category::Search),
    ("Mozilla/5.0 (compatible; MSIE 10.0; Windows NT 6.1; WOW64; Trident/6.0) DMBrowser/2.1 (UV)", Some("DMBrowser"), Category::Monitoring),
    ("Mozilla/5.0 (Windows NT 10.0; WOW64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/66.0.3359.117 Safari/537.36 DMBrowser/2.1 (BV; LV)", Some("DMBrowser"), Category::Monitoring),
    ("Mozilla/5.0 (Linux; U; Android 2.2; en-us; SCH-I800 Build/FROYO) AppleWebKit/533.1 (KHTML, like Gecko) Version/4.0 Mobile Safari/533.1 DMBrowser-BV", Some("DMBrowser-BV"), Category::Monitoring),
    ("PritTorrent/1.0", Some("PritTorrent"), Category::Feed),
    ("Mozilla/5.0 (Windows NT 6.1; WOW64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/40.0.2214.93 Safari/537.36 XaxisSemanticsClassifier/1.0", Some("XaxisSemanticsClassifier"), Category::Other),
    ("Mozilla/5.0 (Linux; Android 8.0; Pixel 2 Build/OPD3.170816.012; DuplexWeb-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/74.0.3729.131 Mobile Safari/537.36", Some("DuplexWeb-Google"), Category::Other),
    // A hyphen before a digit separates a name from its version, as `/` does: Nutch's own
    // default (`http.agent.version` is `Nutch-1.x`, after the operator's name), mnoGoSearch's
    // indexer, Wordup's crawler (imported).
    ("your sipder name/Nutch-1.7", Some("Nutch"), Category::CrawlerFramework),
    ("agent6/Nutch-1.1", Some("Nutch"), Category::CrawlerFramework),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/139.0.0.0 Safari/537.36/Nutch-1.21-SNAPSHOT", Some("Nutch"), Category::CrawlerFramework),
    ("Mnogosearch-3.1.21", Some("Mnogosearch"), Category::CrawlerFramework),
    ("Wordup-1", Some("Wordup"), Category::Seo),
    // Proxies and CDNs fetching for a person as they look (decision 17): counted, not judged.
    ("Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)", Some("GoogleImageProxy"), Category::Proxy),
    ("YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html", Some("YahooMailProxy"), Category::Proxy),
    ("StartpagePrivateImageProxy/2.0 (https://www.startpage.com/; support@startpage.com) requests/2.25.1", Some("StartpagePrivateImageProxy"), Category::Proxy),
    ("Dalvik/2.1.0 (Linux; U; Android 5.1.1_r1; Samsung Galaxy S4 Build/SGH-I337M)(googleweblight)", Some("googleweblight"), Category::Proxy),
    ("Amazon CloudFront", Some("Amazon CloudFront"), Category::Proxy),
    ("HWCDN/GFS v1.80.995-4.38.2369.el7 CDS/AT2", Some("HWCDN"), Category::Proxy),
    ("Slack-ImgProxy 0.59 (+https://api.slack.com/robots)", Some("Slack-ImgProxy"), Category::Proxy),
    ("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", Some("Slackbot-LinkExpanding"), Category::Social),
    ("Mozilla/5.0 SeznamEmailProxy/2.0.174", Some("SeznamEmailProxy"), Category::Proxy),
    // Crawlers that Matomo's device-detector fixtures label bots, named in their own header,
    // most of them in isbot's crawler fixtures too (decision 20); each entry has the page
    // Matomo's regexes/bots.yml gives, where it gives one.
    ("The Knowledge AI", Some("The Knowledge AI"), Category::Other),
    ("EMail Exractor", Some("EMail Exractor"), Category::Other),
    ("NetLyzer FastProbe", Some("NetLyzer"), Category::Other),
    ("Research JLU", Some("Research JLU"), Category::Other),
    ("Barracuda Sentinel (EE)", Some("Barracuda Sentinel"), Category::Other),
    ("Simbiat Software", Some("Simbiat Software"), Category::Other),
    ("ScamadviserExternalHit/1.0", Some("ScamadviserExternalHit"), Category::Other),
    ("Sprinklr 2.0", Some("Sprinklr"), Category::Other),
    ("blackboardally", Some("blackboardally"), Category::Other),
    ("NetTrack Anonymous Web Statistics https://nettrack.info/support.php", Some("NetTrack"), Category::Other),
    ("Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:66.0) WhatCMS/1.0", Some("WhatCMS"), Category::Other),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36 CybaaAgent", Some("CybaaAgent"), Category::Other),
    ("Yahoo:LinkExpander:Slingstone", Some("Yahoo:LinkExpander:Slingstone"), Category::Social),
    ("facebookexternalua", Some("facebookexternalua"), Category::Social),
    ("SubstackContentFetch/1.0; https://substack.com", Some("SubstackContentFetch"), Category::Social),
    ("Trackable/0.1 NNjCeA", Some("Trackable"), Category::Monitoring),
    ("Mozilla/5.0 (X11; Windows x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Safari/537.36 Functionize", Some("Functionize"), Category::Monitoring),
    ("iTMS", Some("iTMS"), Category::Feed),
    ("Castopod/1.0", Some("Castopod"), Category::Feed),
    ("hackermention <https://hackermention.appspot.com/>", Some("hackermention"), Category::Feed),
    ("sfFeedReader/0.9", Some("sfFeedReader"), Category::Feed),
    ("Rainmeter WebParser plugin", Some("Rainmeter"), Category::HttpLibrary),
    ("LWP Network", Some("LWP"), Category::HttpLibrary),
    ("Test Certificate Info", Some("Test Certificate Info"), Category::HttpLibrary),
    ("ApplicationHealthService/1.0", Some("ApplicationHealthService"), Category::SiteService),
    ("httpx - Open-source project (github.com/projectdiscovery/httpx)", Some("httpx"), Category::Scanner),
    ("ivre-masscan/1.3 https://github.com/robertdavidgraham/", Some("ivre-masscan"), Category::Scanner),
    ("bitdiscovery-suggestions", Some("bitdiscovery-suggestions"), Category::Scanner),
    ("RootEvidence/1.0", Some("RootEvidence"), Category::Scanner),
    ("Matomo/4.15.1", Some("Matomo"), Category::SiteService),
    ("RamblerMail/6.0 (incompatible; ImageProxy/6.0)", Some("RamblerMail"), Category::Proxy),
    ("Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/55.0.2883.87 Safari/537.36 (via secureurl.fwdcdn.com - mail.ukr.net proxy)", Some("fwdcdn"), Category::Proxy),
    ("Pompos/1.2 http://pompos.iliad.fr", Some("Pompos"), Category::Search),
    ("Seobility", Some("Seobility"), Category::Seo),
];

#[test]
fn the_recall_pass_names_these() {
    let crawlers = table(Catalog::embedded().unwrap());
    for (header, name, category) in NAMED_SINCE_THE_RECALL_PASS {
        let who = crawlers.classify(header.as_bytes());
        let crawler = crawlers
            .row(who)
            .unwrap_or_else(|| panic!("{header}: a person"));
        match name {
            Some(name) => assert_eq!(&*crawler.name, *name, "{header}"),
            None => assert_eq!(who, Who::Unnamed, "{header}: {}", crawler.name),
        }
        assert_eq!(crawler.category, *category, "{header}");
    }
    // Still people: a survey app (`survey` was tried as a crawler word for `Netcraft Web Server
    // Survey` and dropped: the camel-case rule reads `SurveyMonkey` as the word), and a browser
    // whose name starts with a catalog token.
    for person in [
        "SurveyMonkey/5.4.1 (iPhone; iOS 17.5; Scale/3.00)",
        "Mozilla/5.0 (Linux; Android 13; SM-A536B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36 GhostBrowser/2.1",
        // An app owns the page and the address in its platform comment; a phone's user owns
        // the site or address in its browser's; a device's model is no site.
        "Liferea/1.10 (Linux; en_US.UTF-8; http://liferea.sf.net/)",
        "MyApp/2.3 (Windows NT 10.0; support@myapp.com)",
        "Mozilla/5.0 (Linux; Android 10; someone@example.com) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
        "Mozilla/5.0 (Linux; U; Android 2.2; en-us; LG-P500.RU Build/FRF91) AppleWebKit/533.1 (KHTML, like Gecko) Version/4.0 Mobile Safari/533.1",
        "Mozilla/5.0 (Linux; U; Android 2.3.3; GT-S5830 - Forum: http://example.org/forum Build/GRWK74) AppleWebKit/533.1 (KHTML, like Gecko) Version/4.0 Mobile Safari/533.1",
        "Mozilla/5.0 (Linux; U; Android 4.1.2; GT-I9300de_DE Build/JZO54K) AppleWebKit/ (KHTML, like Gecko) Version/ Mobile Safari/ Wetter.de/1.7",
        // A name's leading run alone is no crawler's (Site24x7's token is `Site`, the W3C
        // validator's `W`), nor is an app's name that starts with `Audit`.
        "SiteKiosk/9.0 (Windows NT 10.0; Win64; x64)",
        "Site 24 App/1.0",
        "W/1.0 (Linux; Android 14)",
        "AuditBoard/3.1 (iPhone; iOS 17.5; Scale/3.00)",
        // `Go` alone, as a phone's browser writes it, is no Go client.
        "Go.Web/6.5 (Nokia; U; en)",
        "Go/2.0 (iPhone; iOS 17.5; Scale/3.00)",
        // The new tokens of several words or a common head name nothing alone: Zoom's and
        // Cloudflare's own apps, an app named ROI, OpenAI's ChatGPT app.
        "Zoom/5.17.0 (iPhone; iOS 17.5; Scale/3.00)",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) ZoomApps/1.0 Chrome/120.0 Safari/537.36",
        "Cloudflare WARP/2024.6 (iPhone; iOS 17.5)",
        "ROI Calculator/1.2 (iPhone; iOS 17.5; Scale/3.00)",
        "ChatGPT/1.2024.122 (iOS 17.5; iPhone15,3; build 1234)",
        // Daum's own apps, whose names start with the crawler's.
        "Mozilla/5.0 (Linux; Android 4.4.2; IM-A900L Build/KOT49H) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/30.0.0.0 Mobile Safari/537.36 DaumApps/4.6.1",
        "DaumMobileApp (LG-KU5400; U; Android 2.3.7|10; ko-kr) DaumMail/1.0.8",
        // A name before a version's hyphen counts only where a name would: in a phone's model
        // (`LYF-F300B-001`, `M6 Note`), in an app's own name with a version (`DDG-Android-3.1`,
        // a person's app that no entry names).
        "Mozilla/5.0 (Mobile; LYF/F300B/LYF-F300B-001-01-34-070519; Android; rv:48.0) Gecko/48.0 Firefox/48.0 KAIOS/2.5",
        "Mozilla/5.0 (Linux; Android 7.1.2; M6 Note Build/N2G47H; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/105.0.0.0 Mobile Safari/537.36",
        "DDG-Android-3.1.0",
        // `Amazon` alone is a Kindle's platform word, not CloudFront.
        "Mozilla/5.0 (Linux; Android 4.2.1; Amazon Kindle Fire2 Build/JOP40D) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/28.0.1500.94 Safari/537.36",
        "Amazon Shopping/24.1 (iPhone; iOS 17.5; Scale/3.00)",
        // The common heads of decision 20's names name nothing alone: an e-mail app, a
        // research app, a mail client, Yahoo's apps, Matomo's app SDK and an app named Test.
        "The Bat! 4.0.0.22",
        "EMail/1.4 (iPhone; iOS 17.5; Scale/3.00)",
        "Research/2.1 (iPad; iOS 16.0; Scale/2.00)",
        "Barracuda/3.0 (Windows NT 10.0)",
        "YahooMobile/1.0 (mail; 6.3.0); (Linux; U; Android 13; Pixel 7 Build/TQ3A.230805.001)",
        "Yahoo/1.0 (iPhone; iOS 17.5; Scale/3.00)",
        "Darwin/24.5.0 (Watch7,8; watchOS 11.4) MatomoTrackerSDK/7.7.0",
        "Test/1.0 (iPhone; iOS 17.5; Scale/3.00)",
    ] {
        assert_eq!(crawlers.classify(person.as_bytes()), Who::Person, "{person}");
    }
}

/// People's apps whose headers read like crawlers' until the second look the labelled app
/// corpora (Matomo's device-detector fixtures, OPAWG's podcast list) and real clients gave:
/// each is a person, or counted as the HTTP client it is.
const APPS: &[(&str, Option<Category>)] = &[
    // Apple's URL-loading stack: every app on an iPhone, iPad or Mac.
    ("Tweetbot/53300 CFNetwork/1335.0.3 Darwin/21.6.0", None),
    ("feedly/81.0.1 CFNetwork/1206 Darwin/20.1.0", None),
    ("IFTTT/550 CFNetwork/758.5.3 Darwin/15.6.0", None),
    ("capsule.fm/1 CFNetwork/976 Darwin/18.2.0", None),
    // Android's media player.
    ("radio.de/5.10.5.3 (Linux; 13) ExoPlayerLib/2.18.2", None),
    // An app that names the phone or the computer it runs on, and its own page.
    ("Turtlecast/0.7.7; (Android 13); +https://www.turtlecast.app", None),
    ("Podcast Overhaul/4.1.1 iOS/16.1.1 +https://www.podcastoverhaul.com/", None),
    ("ThePodcastApp/6.28.1 (iPhone; iOS 16.0.2; ) player (build 6391; +https://podcast.app/)", None),
    ("Podbean/Android App 8.3.2 (http://podbean.com)", None),
    ("iPhone (compatible; Smartphone2.0) NRC Digitale Editie, nl.nrc.nrcapp 10.0.7 (197) / iOS 16.6", None),
    ("Doughnut/2.0.1.1666453501 ( https://doughnutapp.com/; Podcast Client; macOS Version 10.15.7 (Build 19H2026))", None),
    ("FeedDemon/4.5 (http://www.feeddemon.com/; Microsoft Windows XP)", None),
    ("RssBandit/1.9.0.1002 (.NET CLR 2.0.50727.7512; WinNT 6.2.9200.0; http://www.rssbandit.org)", None),
    // The catalog's people's apps, in the crawler's form they chose.
    ("Bullhorn/1.0 (+http://bullhorn.fm/)", None),
    ("Mozilla/5.0 (compatible; Metacast/1.0 +metacast.app)", None),
    ("audiobookshelf (+https://audiobookshelf.org)", None),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Battle.net/2.30.0", None),
    ("qBittorrent/4.3.9 ProgramUpdater (www.qbittorrent.org)", None),
    ("Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 5.1; i-NavFourF; TuneUp HTML Client Embedded Web Browser from: http://bsalsa.com/; .NET CLR 1.1.4322)", None),
    ("NewsBlur iPhone App v3.6", None),
    // Television and console browsers.
    ("HbbTV/1.1.1 (;;;;) Mozilla/5.0 (compatible; ANTGalio/3.0.2.1.22.43.08; Linux2.6.18-7.1/7405d0-smp)", None),
    ("Mozilla/4.0 (compatible; Gecko/20041115) Maple 5.0.0 Navi", None),
    ("Mozilla/5.0 (PlayStation 4 PRO) AppleWebKit/531.3 (KHTML, like Gecko, HEVC, HDR, UHD) SCEE/1.0 Nuanti/2.0", None),
    // Platforms' HTTP clients, which games and hosted apps call: counted, never refused.
    ("Valve/Steam HTTP Client 1.0 (4000)", Some(Category::HttpLibrary)),
    ("Valve/Steam HTTP Client 1.0 (730)", Some(Category::HttpLibrary)),
    ("AppEngine-Google; (+http://code.google.com/appengine; appid: s~snapchat-proxy)", Some(Category::HttpLibrary)),
];

#[test]
fn apps_that_read_like_crawlers_are_people() {
    let crawlers = table(Catalog::embedded().unwrap());
    for (header, counted) in APPS {
        let who = crawlers.classify(header.as_bytes());
        match counted {
            None => assert_eq!(who, Who::Person, "{header}"),
            Some(category) => {
                let crawler = crawlers.row(who).unwrap_or_else(|| panic!("{header}"));
                assert_eq!(crawler.category, *category, "{header}");
                assert_eq!(crawler.action, Action::Count, "{header}");
            }
        }
    }
    // What the same names still judge: Steam chat's link previews, NewsBlur's fetchers.
    for (header, name) in [
        (
            "Valve/Steam HTTP Client 1.0 (SteamChatURLLookup)",
            "SteamChatURLLookup",
        ),
        (
            "NewsBlur Feed Fetcher - 12 subscribers - http://www.newsblur.com/site/1/example",
            "NewsBlur",
        ),
    ] {
        let crawler = row(&crawlers, header).unwrap_or_else(|| panic!("{header}"));
        assert_eq!(&*crawler.name, name, "{header}");
        assert_eq!(crawler.action, Action::Block, "{header}");
    }
}

#[test]
fn crawling_frameworks_are_judged_with_the_sites_action() {
    let crawlers = table(Catalog::embedded().unwrap());
    for header in [
        "Scrapy/2.11.2 (+https://scrapy.org)",
        "Mozilla/5.0 (compatible; heritrix/3.4.0 +https://example.org/crawler)",
        "Apache Nutch/1.19",
        "colly - https://github.com/gocolly/colly",
        "crawler4j (https://github.com/yasserg/crawler4j/)",
    ] {
        let crawler = row(&crawlers, header).unwrap_or_else(|| panic!("{header}"));
        assert_eq!(crawler.category, Category::CrawlerFramework, "{header}");
        assert_eq!(crawler.action, Action::Block, "{header}");
    }
    // The clients apps are built on are still counted, and so is what the site's own operator
    // set up.
    for (header, category) in [
        ("curl/8.4.0", Category::HttpLibrary),
        ("Sectigo DCV", Category::SiteService),
    ] {
        let client = row(&crawlers, header).unwrap_or_else(|| panic!("{header}"));
        assert_eq!((client.category, client.action), (category, Action::Count));
    }
}

#[test]
fn the_peer_runs_isbots_look_around_as_isbot_writes_it() {
    let bot = IsBot::from_list(&[
        "(?<! cu)bots?(?:\\b|_)".into(),
        "java(?!;)".into(),
        "(?<! channel/|google/)google(?!(?:wv|app|/google| pixel))".into(),
    ]);
    assert!(bot.is_bot("FooBot/1.0") && !bot.is_bot("Phone CUBOT X30"));
    assert!(bot.is_bot("Java/17") && !bot.is_bot("(Java; U; en-us)"));
    assert!(bot.is_bot("Google-InspectionTool"));
    assert!(!bot.is_bot("Pixel GoogleApp") && !bot.is_bot("Google Pixel"));
    // A later place where the core matches counts when the first does not.
    assert!(bot.is_bot("CUBOT robot"));
    // The vendored pattern builds, and matches what isbot's own fixtures say it does.
    let isbot = IsBot::vendored();
    assert!(
        isbot.is_bot("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
    );
    assert!(!isbot.is_bot("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"));
}

/// `header` with a plain platform in its first comment (`Mozilla/5.0 (X11; Linux x86_64)
/// AppleWebKit/…`): what isbot would say of a browser's header if its platform comment named
/// nothing.
fn without_platform_comment(header: &str) -> String {
    let Some(open) = header.find('(') else {
        return header.to_owned();
    };
    let close = header[open..]
        .find(')')
        .map_or(header.len(), |at| open + at);
    format!("{}X11; Linux x86_64{}", &header[..=open], &header[close..])
}

/// Why crawlgate reads a header isbot calls a bot as a person.
fn why_missed(crawlers: &Crawlers, never: &HashSet<String>, header: &str) -> String {
    let read = crawlers.read(header.as_bytes());
    let app = header
        .split(|c: char| !(c.is_ascii() && is_token_byte(c as u8)))
        .find(|run| never.contains(&run.to_ascii_lowercase()));
    if let Some(app) = app {
        return format!("the catalog calls {app} a person's app");
    }
    let Some(shape) = read.shape else {
        return "nothing in it can name a crawler: no catalog name, crawler word, `compatible`, URL, address or site name".into();
    };
    if shape.browser {
        return "a browser's header: no product after its engine, `compatible` or engine comment names a crawler".into();
    }
    if shape.app_shell {
        return "an app shell's header: its comments describe the device".into();
    }
    if shape.platform {
        return "an app's header: its platform comment names the device".into();
    }
    "no crawler word, catalog name, crawler form, URL or e-mail address where a header names its client".into()
}

#[test]
fn classification_rates_on_real_labelled_user_agents() {
    let catalog = Catalog::embedded().unwrap();
    let never: HashSet<String> = catalog
        .known_agents()
        .filter(|agent| agent.matching == Matching::PersonsApp)
        .map(|agent| agent.token.to_ascii_lowercase())
        .collect();
    let crawlers = table(catalog);
    let curated = table(Catalog::from_yaml(EMBEDDED_CATALOG, "curated").unwrap());
    let isbot = IsBot::vendored();

    println!("classification on real, labelled User-Agents (tests/fixtures/ua/SOURCE.md, tests/fixtures/isbot/SOURCE.md)");
    println!(
        "  people left out because their own header names a crawler, a monitor or automation ({}):",
        people::NOT_PEOPLE.len()
    );
    for (text, why) in people::NOT_PEOPLE {
        println!("      {text:<40} {why}");
    }
    println!(
        "\n  {:<30} {:>8} {:>22} {:>10} {:>8} {:>18}",
        "people", "headers", "crawlgate: crawlers", "(counted)", "refused", "isbot: bots"
    );
    let corpora = people::people_corpora();
    // Each person's header, with the first corpus that labels it.
    let mut all: HashMap<&str, &str> = HashMap::new();
    let (mut misread_all, mut refused_all, mut isbot_all) =
        (HashSet::new(), HashSet::new(), HashSet::new());
    let mut misread_lines = Vec::new();
    for corpus in &corpora {
        let (mut misread, mut counted, mut refused, mut flagged) = (0, 0, 0, 0);
        for header in &corpus.headers {
            all.entry(header.as_str()).or_insert(corpus.name);
            if isbot.is_bot(header) {
                flagged += 1;
                isbot_all.insert(header.as_str());
            }
            let Some(crawler) = row(&crawlers, header) else {
                continue;
            };
            if crawler.action == Action::Block {
                refused += 1;
                refused_all.insert(header.as_str());
            }
            if crawler.category == Category::HttpLibrary {
                counted += 1;
            } else {
                misread += 1;
                misread_all.insert(header.as_str());
            }
            misread_lines.push(format!(
                "      {:<40} [{}] {header}",
                format!(
                    "{} ({}, {:?})",
                    crawler.name, crawler.category, crawler.action
                ),
                corpus.name
            ));
        }
        let n = corpus.headers.len();
        println!(
            "  {:<30} {:>8} {:>12} ({:>5.1}/100k) {:>10} {:>8} {:>8} ({:>6.0}/100k)",
            corpus.name,
            n,
            misread,
            per_100k(misread, n),
            counted,
            refused,
            flagged,
            per_100k(flagged, n)
        );
    }
    let total = all.len();
    println!(
        "  {:<30} {:>8} {:>12} ({:>5.1}/100k) {:>10} {:>8} {:>8} ({:>6.0}/100k)",
        "all people, distinct",
        total,
        misread_all.len(),
        per_100k(misread_all.len(), total),
        "",
        refused_all.len(),
        isbot_all.len(),
        per_100k(isbot_all.len(), total)
    );
    println!("  (the user-agents sample's collector dropped what isbot matched at the time: isbot's rate there is low by construction)");
    println!("  people crawlgate reads as crawlers (HTTP libraries are counted, never refused by default):");
    for line in &misread_lines {
        println!("{line}");
    }

    let uap = uap_core();
    let spiders: Vec<String> = uap
        .iter()
        .filter(|p| p.label == "spider")
        .map(|p| p.user_agent.clone())
        .collect();
    let relabelled: Vec<String> = uap
        .iter()
        .filter(|p| p.label == "person" && not_a_person(&p.user_agent).is_some())
        .map(|p| p.user_agent.clone())
        .collect();
    let crawler_corpora: [(&str, Vec<String>); 5] = [
        ("crawler-user-agents", crawler_instances()),
        ("isbot crawlers", isbot_crawlers()),
        ("uap-core spiders", spiders),
        (
            "device-detector bots",
            apps_labelled("device-detector.tsv.gz", "crawler"),
        ),
        ("OPAWG bots", apps_labelled("opawg.tsv", "crawler")),
    ];
    println!(
        "\n  {:<22} {:>8} {:>20} {:>14} {:>16}",
        "crawlers", "headers", "crawlgate", "isbot", "curated only"
    );
    let mut rates = Vec::new();
    let mut missed_lines = Vec::new();
    for (name, list) in &crawler_corpora {
        let found = list
            .iter()
            .filter(|h| crawlers.classify(h.as_bytes()) != Who::Person)
            .count();
        let flagged = list.iter().filter(|h| isbot.is_bot(h)).count();
        let by_curated = list
            .iter()
            .filter(|h| curated.classify(h.as_bytes()) != Who::Person)
            .count();
        println!(
            "  {:<22} {:>8} {:>12} ({:>5.1}%) {:>6} ({:>5.1}%) {:>8} ({:>5.1}%)",
            name,
            list.len(),
            found,
            percent(found, list.len()),
            flagged,
            percent(flagged, list.len()),
            by_curated,
            percent(by_curated, list.len())
        );
        rates.push((
            *name,
            percent(found, list.len()),
            percent(flagged, list.len()),
        ));
        for header in list {
            if isbot.is_bot(header) && crawlers.classify(header.as_bytes()) == Who::Person {
                missed_lines.push(format!(
                    "      [{name}] {header}\n          isbot: `{}`; crawlgate: {}",
                    isbot.why(header).unwrap_or("?"),
                    why_missed(&crawlers, &never, header)
                ));
            }
        }
    }
    println!(
        "  (\"curated only\": the hand-written catalog without the imported entries, which were imported from crawler-user-agents itself; uap-core spiders and isbot's crawlers were not)"
    );
    println!(
        "  uap-core people relabelled above, read as crawlers: {} of {}",
        relabelled
            .iter()
            .filter(|h| crawlers.classify(h.as_bytes()) != Who::Person)
            .count(),
        relabelled.len()
    );
    println!(
        "\n  crawlers isbot recognises and crawlgate reads as people ({}):",
        missed_lines.len()
    );
    for line in &missed_lines {
        println!("{line}");
    }

    // What no reading within the issue's rules can recognise on isbot's list: headers a
    // people's corpus holds byte for byte as a person's client (the people bound, 1 in
    // 100,000, lets that many of them be read as crawlers), and headers whose only text isbot
    // calls a bot's is the platform comment of a browser's header, which the issue says never
    // names a crawler (isbot no longer flags them with a plain platform there). HTTP libraries,
    // counted on both sides, are left out.
    let (_, isbot_list) = crawler_corpora
        .iter()
        .find(|(name, _)| *name == "isbot crawlers")
        .unwrap();
    let missed: Vec<&str> = isbot_list
        .iter()
        .map(String::as_str)
        .filter(|h| crawlers.classify(h.as_bytes()) == Who::Person)
        .collect();
    let contested: Vec<(&str, &str)> = missed
        .iter()
        .filter_map(|h| all.get(h).map(|corpus| (*h, *corpus)))
        .collect();
    let platform_only: Vec<&str> = missed
        .iter()
        .copied()
        .filter(|h| !all.contains_key(h))
        .filter(|h| {
            grammar::read(h.as_bytes()).shape.browser && !isbot.is_bot(&without_platform_comment(h))
        })
        .collect();
    let bound = total / 100_000;
    let forced = contested.len().saturating_sub(bound) + platform_only.len();
    let reachable = isbot_list.len() - forced;
    println!(
        "\n  isbot's crawlers that a people's corpus holds as a person's client, byte for byte ({}):",
        contested.len()
    );
    for (header, corpus) in &contested {
        println!("      [{corpus}] {header}");
    }
    println!(
        "  isbot's crawlers named only in a browser's platform comment ({}):",
        platform_only.len()
    );
    for header in &platform_only {
        println!("      {header}");
    }
    println!(
        "  so a reading within the people bound ({bound} of {total}) and the issue's platform rule recognises at most {reachable} of isbot's {} crawlers ({:.1}%)",
        isbot_list.len(),
        percent(reachable, isbot_list.len())
    );

    // No person is ever refused, in any corpus, and none is read as a crawler but as an HTTP
    // library (counted): the issue's target is at most 1 in 100,000, and none is what the
    // classifier reaches.
    assert!(refused_all.is_empty(), "people refused: {refused_all:?}");
    assert!(
        misread_all.is_empty(),
        "{} people read as crawlers ({:.1} per 100,000): {misread_all:?}",
        misread_all.len(),
        per_100k(misread_all.len(), total)
    );
    assert!(misread_all.len() * 100 < isbot_all.len());
    // Recall: the issue asks for 95% on crawler-user-agents and on isbot's crawlers, and for
    // crawler-user-agents within 2 points of isbot's. This reading reaches the first (97.8%)
    // and the last (isbot's 99.6%, less 2 points, is 97.57%), not the second: isbot's list
    // holds people's apps, and no reading within the people bound and the issue's platform
    // rule reaches 95% there (printed above: 591 of 623; docs/decisions/classifier-grammar.md,
    // decisions 19 and 20). WhatsApp, a person's app by design, is 25 of crawler-user-agents'
    // instances too. The floors held are what it reaches, so that a change can only keep or
    // raise them. device-detector's and OPAWG's bots have no target: they are
    // printed beside isbot's rate on them, and held where they are.
    let rate = |name: &str| rates.iter().find(|(n, _, _)| *n == name).unwrap();
    for (name, floor) in [
        ("crawler-user-agents", 97.8),
        ("isbot crawlers", 86.3),
        ("uap-core spiders", 96.3),
        ("device-detector bots", 89.6),
        ("OPAWG bots", 57.6),
    ] {
        assert!(
            rate(name).1 >= floor,
            "{name}: {:.1}% < {floor}%",
            rate(name).1
        );
    }
    let cua = rate("crawler-user-agents");
    assert!(
        cua.2 - cua.1 <= 2.0,
        "crawler-user-agents: {:.2}% against isbot's {:.2}%",
        cua.1,
        cua.2
    );
}
