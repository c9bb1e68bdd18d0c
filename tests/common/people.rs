//! Real, labelled User-Agents (`tests/fixtures/ua/SOURCE.md`, `tests/fixtures/isbot/SOURCE.md`):
//! people's browsers and apps from ua-parser/uap-core's fixtures (labelled by uap-core), from
//! real traffic (the npm package `user-agents`), from isbot's browser fixtures, from Matomo's
//! device-detector fixtures and from OPAWG's podcast user-agent list; crawlers from
//! monperrus/crawler-user-agents, from isbot's crawler fixtures, uap-core's spiders,
//! device-detector's bots and OPAWG's bots.

use std::io::Read;
use std::path::Path;

/// The folder of the vendored User-Agents.
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ua");

/// The folder of isbot's pattern and fixtures.
pub const ISBOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/isbot");

/// One header of uap-core's fixtures, with uap-core's labels.
pub struct Labelled {
    /// `person`, `spider` or `downloader`.
    pub label: String,
    /// The fixture file it comes from (`tests/test_device.yaml`, ...).
    pub source: String,
    /// uap-core's family.
    pub family: String,
    /// The header.
    pub user_agent: String,
}

/// Every header of `uap-core.tsv`, with its labels.
pub fn uap_core() -> Vec<Labelled> {
    rows("uap-core.tsv")
        .into_iter()
        .map(|[label, source, family, _, user_agent]| Labelled {
            label,
            source,
            family,
            user_agent,
        })
        .collect()
}

/// The lines of a vendored table of five tab-separated columns, less its `#` comments.
fn rows(file: &str) -> Vec<[String; 5]> {
    read_text(file)
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let fields: Vec<&str> = line.splitn(5, '\t').collect();
            assert_eq!(fields.len(), 5, "{line}");
            std::array::from_fn(|i| fields[i].to_owned())
        })
        .collect()
}

/// The text of the vendored file `file`, gunzipped when its name ends `.gz`.
fn read_text(file: &str) -> String {
    let path = Path::new(FIXTURES).join(file);
    if !file.ends_with(".gz") {
        return std::fs::read_to_string(path).unwrap();
    }
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// Every header of `user-agents.txt.gz`: visitors' browsers, from real traffic.
pub fn real_traffic() -> Vec<String> {
    read_text("user-agents.txt.gz")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// isbot's fixture `file`: (group, header), in file order.
pub fn isbot_fixture(file: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(Path::new(ISBOT).join(file)).unwrap();
    // serde_yaml keeps a mapping's order in a Mapping.
    let groups: serde_yaml::Mapping = serde_yaml::from_str(&text).unwrap();
    let mut out = Vec::new();
    for (group, headers) in groups {
        let group = match group {
            serde_yaml::Value::String(s) => s,
            other => serde_yaml::to_string(&other).unwrap().trim().to_owned(),
        };
        let headers: Vec<String> = serde_yaml::from_value(headers).unwrap();
        out.extend(headers.into_iter().map(|h| (group.clone(), h)));
    }
    out
}

/// The group isbot's browser fixtures put crawlers in: by isbot's own label, not people.
pub const ISBOT_BOTS_GROUP: &str = "ZZZ Insignificat bots";

/// isbot's browser fixtures that isbot itself calls browsers (its `ZZZ Insignificat bots` group
/// left out), distinct.
pub fn isbot_browsers() -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    isbot_fixture("browsers.yml")
        .into_iter()
        .filter(|(group, _)| !group.starts_with(ISBOT_BOTS_GROUP))
        .map(|(_, header)| header)
        .filter(|header| seen.insert(header.clone()))
        .collect()
}

/// isbot's crawler fixtures, distinct.
pub fn isbot_crawlers() -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    isbot_fixture("crawlers.yml")
        .into_iter()
        .map(|(_, header)| header)
        .filter(|header| seen.insert(header.clone()))
        .collect()
}

/// A labelled file of `apps.py` (`device-detector.tsv.gz`, `opawg.tsv`): (label, header), in
/// file order; the label is `person` or `crawler`.
pub fn labelled_apps(file: &str) -> Vec<(String, String)> {
    rows(file)
        .into_iter()
        .map(|[label, _, _, _, user_agent]| (label, user_agent))
        .collect()
}

/// The distinct headers `file` labels `label`.
pub fn apps_labelled(file: &str, label: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    labelled_apps(file)
        .into_iter()
        .filter(|(l, _)| l == label)
        .map(|(_, header)| header)
        .filter(|header| seen.insert(header.clone()))
        .collect()
}

/// Every User-Agent instance of `crawler-user-agents.json`.
pub fn crawler_instances() -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(default)]
        instances: Vec<String>,
    }
    let text =
        std::fs::read_to_string(Path::new(FIXTURES).join("crawler-user-agents.json")).unwrap();
    let entries: Vec<Entry> = serde_json::from_str(&text).unwrap();
    entries.into_iter().flat_map(|e| e.instances).collect()
}

/// Headers a people's corpus labels people whose own text says they are crawlers, monitors or
/// automation: reading them as crawlers is no mistake. Matched as a substring; printed with the
/// rates.
pub const NOT_PEOPLE: &[(&str, &str)] = &[
    ("HeadlessChrome", "headless Chrome, driven by a program (uap-core family HeadlessChrome)"),
    ("PhantomJS/", "a headless browser driven by a program (uap-core family PhantomJS)"),
    ("HTTrack", "a website copier (uap-core family HTTrack)"),
    ("monitis - premium monitoring service", "a monitoring service, so its header says"),
    ("Http Connector Spider", "a search appliance's crawler (uap-core read the device `Alcatel Lucent` from its text)"),
    ("symantecspider", "a crawler (uap-core read a Huawei device from its name)"),
    ("WordPress/", "a WordPress server's pingback (uap-core read a Samsung device from the blog's URL; its user-agent parser lists WordPress as a bot)"),
    ("Ghost/", "a Ghost blog server's fetcher (oEmbed, webmentions), as WordPress's pingback is: a server, not a person's device"),
    ("Pinterest/0.2 (+http://www.pinterest.com/)", "Pinterest's link fetcher (crawler-user-agents lists it as `Pinterest/0.2 (+http://www.pinterest.com/bot.html)`)"),
    ("Rackspace Monitoring/", "a monitoring service (uap-core family RackspaceBot)"),
    ("Mediapartners-Google", "Google's AdSense crawler (uap-core's user-agent parser lists it as a bot)"),
    ("moba-crawler", "a crawler posing as a DoCoMo phone"),
    ("(for mobile crawler)", "a crawler posing as a Nokia phone"),
    ("FASTMobileCrawl", "FAST's mobile search crawler posing as a Nokia phone, so its product says"),
    ("Push Notification Scanner", "RSSRadio's feed scanner, so its header says"),
    ("SiteScoreBot", "an SEO crawler, so its header says (in the user-agents sample: its collector's isbot did not know it then)"),
    ("Mozilla/5.0 (feeder.co;", "Feeder's feed fetcher, which writes its site in the browser's platform comment (crawler-user-agents lists it)"),
    ("intoli.com Safari", "the user-agents collector's own headless fetcher, which writes its company's site in the browser's place"),
    // Labelled browsers by isbot's fixtures or the user-agents sample, whose own header is a
    // crawler's by the catalog or by its form: counted apart, and printed with the rates.
    ("Lucidworks-Anda/", "Lucidworks Fusion's Anda web crawler, in the crawler form `(compatible; Name/version; +…)` (isbot's browser fixtures: `Glitches and Misidentified Browsers`)"),
    ("Safari/537.36 GTmetrix", "GTmetrix's page-speed test agent, a monitoring service (crawler-user-agents lists it; isbot's browser fixtures: `Glitches and Misidentified Browsers`)"),
    ("compatible; Amzn-User/", "Amazon's user-triggered AI fetcher, which the catalog judges as an AI assistant like ChatGPT-User (isbot's browser fixtures: `Miscellaneous Browsers`)"),
    ("compatible; Shap-User/", "an AI assistant's fetcher by ai.robots.txt, in the crawler form `compatible; Name/version`"),
    ("Miniature.io/", "Miniature.io's website screenshot service, which names itself by its site"),
    ("Mozilla/5.0 (compatible; AGU/0.8.6)", "nothing but the crawler form `Mozilla/5.0 (compatible; Name/version)`; today's isbot calls it a bot too"),
    // Labelled people by Matomo's device-detector fixtures or OPAWG's podcast list
    // (`device-detector.tsv.gz`, `opawg.tsv`), whose own header is a crawler's.
    ("Iframely/", "Iframely's embed service, a server fetching pages to build its customers' link previews (crawler-user-agents lists it; OPAWG's list files it among apps)"),
    ("PTST/", "WebPageTest's test agent, a page-speed monitor (crawler-user-agents lists it; Matomo's fixtures give it no client)"),
    ("Scrapy/", "Scrapy, a crawling framework: the issue that asked for this reading names it (OPAWG's list files it among libraries)"),
    ("colly - https://github.com/gocolly/colly", "Colly, a crawling framework for Go (OPAWG's list files it among libraries)"),
    ("(subscribers=", "a feed fetcher giving the number of subscribers it fetches for: a server (Breaker's; Matomo's fixtures file it among feed readers)"),
    ("Podcast-Archiver/", "Podcast Archiver, a tool that downloads every episode of a feed: an archiver, so its name says (OPAWG's list files it among apps)"),
    ("Site24x7", "Zoho's Site24x7 website monitor (uap-core's family `Site24x7`, a rule its parser files under no bot heading; crawler-user-agents lists it)"),
    ("YLT Chrome/", "Yellow Lab Tools' page-audit browser, a monitoring tool like GTmetrix (crawler-user-agents lists it; isbot's browser fixtures: `Glitches and Misidentified Browsers`)"),
];

/// Why a header a corpus labels a person is not one, if it is in [`NOT_PEOPLE`].
pub fn not_a_person(user_agent: &str) -> Option<&'static str> {
    let lower = user_agent.to_ascii_lowercase();
    NOT_PEOPLE
        .iter()
        .find(|(text, _)| lower.contains(&text.to_ascii_lowercase()))
        .map(|(_, why)| *why)
}

/// A browser's header starts with the browsers' compatibility prefix; anything else a person
/// sends is an app's.
pub fn is_browser(user_agent: &str) -> bool {
    let lower = user_agent.trim_start().to_ascii_lowercase();
    lower.starts_with("mozilla/") || lower.starts_with("opera")
}

/// A people's corpus: its name and its headers (each labelled a person by its source, less
/// [`NOT_PEOPLE`]).
pub struct People {
    /// What it is, for the printed rates.
    pub name: &'static str,
    /// Its headers.
    pub headers: Vec<String>,
}

/// The people's corpora: uap-core's people (its device fixture apart from the rest), real
/// traffic, isbot's browsers, Matomo's device-detector fixtures, OPAWG's podcast apps.
pub fn people_corpora() -> Vec<People> {
    let uap = uap_core();
    let uap_people = |device: bool| -> Vec<String> {
        uap.iter()
            .filter(|p| p.label == "person" && (p.source == "tests/test_device.yaml") == device)
            .map(|p| p.user_agent.clone())
            .filter(|h| not_a_person(h).is_none())
            .collect()
    };
    let keep = |list: Vec<String>| -> Vec<String> {
        list.into_iter()
            .filter(|h| not_a_person(h).is_none())
            .collect()
    };
    vec![
        People {
            name: "uap-core test_device.yaml",
            headers: uap_people(true),
        },
        People {
            name: "uap-core other fixtures",
            headers: uap_people(false),
        },
        People {
            name: "user-agents (real traffic)",
            headers: keep(real_traffic()),
        },
        People {
            name: "isbot browsers",
            headers: keep(isbot_browsers()),
        },
        People {
            name: "device-detector (Matomo)",
            headers: keep(apps_labelled("device-detector.tsv.gz", "person")),
        },
        People {
            name: "OPAWG podcast apps",
            headers: keep(apps_labelled("opawg.tsv", "person")),
        },
    ]
}

/// Every person's header of every people's corpus, distinct, in corpus order.
pub fn people() -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    people_corpora()
        .into_iter()
        .flat_map(|corpus| corpus.headers)
        .filter(|h| seen.insert(h.clone()))
        .collect()
}
