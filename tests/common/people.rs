//! Real, labelled User-Agents (`tests/fixtures/ua/SOURCE.md`): people's browsers and apps from
//! ua-parser/uap-core's fixtures, labelled by uap-core, and crawlers from
//! monperrus/crawler-user-agents.

use std::path::Path;

/// The folder of the vendored User-Agents.
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ua");

/// One header of uap-core's fixtures, with uap-core's labels.
pub struct Labelled {
    /// `person`, `spider` or `downloader`.
    pub label: String,
    /// uap-core's family.
    pub family: String,
    /// The header.
    pub user_agent: String,
}

/// Every header of `uap-core.tsv`, with its labels.
pub fn uap_core() -> Vec<Labelled> {
    let text = std::fs::read_to_string(Path::new(FIXTURES).join("uap-core.tsv")).unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let fields: Vec<&str> = line.splitn(5, '\t').collect();
            assert_eq!(fields.len(), 5, "{line}");
            Labelled {
                label: fields[0].to_owned(),
                family: fields[2].to_owned(),
                user_agent: fields[4].to_owned(),
            }
        })
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

/// Headers uap-core labels people (it names a device, or no bot rule matches) whose own text
/// says they are crawlers, monitors or automation: reading them as crawlers is no mistake.
/// Matched as a substring; printed with the rates.
pub const NOT_PEOPLE: &[(&str, &str)] = &[
    ("HeadlessChrome", "headless Chrome, driven by a program (uap-core family HeadlessChrome)"),
    ("PhantomJS/", "a headless browser driven by a program (uap-core family PhantomJS)"),
    ("HTTrack", "a website copier (uap-core family HTTrack)"),
    ("monitis - premium monitoring service", "a monitoring service, so its header says"),
    ("Http Connector Spider", "a search appliance's crawler (uap-core read the device `Alcatel Lucent` from its text)"),
    ("symantecspider", "a crawler (uap-core read a Huawei device from its name)"),
    ("WordPress/", "a WordPress server's pingback (uap-core read a Samsung device from the blog's URL; its user-agent parser lists WordPress as a bot)"),
    ("Rackspace Monitoring/", "a monitoring service (uap-core family RackspaceBot)"),
    ("Mediapartners-Google", "Google's AdSense crawler (uap-core's user-agent parser lists it as a bot)"),
    ("moba-crawler", "a crawler posing as a DoCoMo phone"),
    ("(for mobile crawler)", "a crawler posing as a Nokia phone"),
    ("Push Notification Scanner", "RSSRadio's feed scanner, so its header says"),
];

/// Why a header uap-core labels a person is not one, if it is in [`NOT_PEOPLE`].
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

/// The headers of people (uap-core's `person` label, less [`NOT_PEOPLE`]).
pub fn people() -> Vec<String> {
    uap_core()
        .into_iter()
        .filter(|p| p.label == "person" && not_a_person(&p.user_agent).is_none())
        .map(|p| p.user_agent)
        .collect()
}
