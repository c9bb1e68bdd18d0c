//! Who is asking: a User-Agent header → a person, an unnamed crawler, or a named crawler
//! ([`Who`]).
//!
//! A person is a browser or an app; only a crawler is judged by robots.txt. The header is read
//! as RFC 9110 §10.1.5 writes it, products and comments ([`grammar`]), and a word counts by
//! where it stands: a crawler is named by a product, by the name a `compatible` comment gives
//! (or a product inside it), by what is written into a browser engine's comment, by the name a
//! comment that is not a platform's starts with, or by a `Name/version` product inside a
//! platform comment ([`Place`]). A browser's platform comment, an app's device comments and
//! `Build/…` values never name one, so a phone called `CUBOT_X30` or `Expanse` is a person.
//!
//! RFC 9309 identifies a crawler by its product token, the header's runs of `[A-Za-z_-]`. A known
//! token matches only a whole run, case-insensitively (`Googlebot` is not found inside
//! `Googlebot-Image`, nor `LCC` inside `SLCC1`), and only in a place that names the client; its
//! [`Matching`] narrows the places further. A header that no known token names is an unnamed
//! crawler when it carries a crawler [`Signal`]: a crawler word in one of those places, the
//! form crawlers write (`(compatible; Name)`, a name in the engine comment), a URL or an
//! e-mail address outside platform and app comments, a product or a comment named by a site,
//! a subscriber count. Anything else is a person.
//!
//! One pass over the header finds its whole-run tokens in a table of every known token, so a
//! header is scanned once whatever the size of the catalog ([`scan`], [`Classifier::classify`]).

pub mod grammar;
mod scan;
pub mod vocabulary;

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;

use crate::robots::token::is_product_token;
pub use crate::robots::token::is_token_byte;
pub use grammar::{Place, Shape};

/// What a crawler is for; a bounded set, so that it can label metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    /// Collects pages to train models.
    AiTraining,
    /// Indexes pages for AI search and answers.
    AiSearch,
    /// Fetches pages on a user's request inside an AI assistant.
    AiAssistant,
    /// A search engine's indexer.
    Search,
    /// SEO and marketing crawlers.
    Seo,
    /// Web archives.
    Archiver,
    /// Link previews for social networks and messengers.
    Social,
    /// Uptime and performance monitors.
    Monitoring,
    /// Feed readers.
    Feed,
    /// Generic HTTP clients, tools and headless browsers: what apps are built on, so counted
    /// rather than blocked unless a site says otherwise.
    HttpLibrary,
    /// Crawling frameworks (Scrapy, Nutch, Heritrix, Colly, crawler4j, ...): what crawlers are
    /// built on, so judged with the site's action like any crawler.
    CrawlerFramework,
    /// Security and internet-wide scanners.
    Scanner,
    /// Fetches a site's own operator set up: certificate authorities' domain validation,
    /// ownership checks, webhook and callback senders, the site's own vendors. Counted rather
    /// than judged unless a site says otherwise: a `Disallow: /` written for crawlers must not
    /// fail the site's own certificate renewal.
    SiteService,
    /// Proxies and CDNs fetching for a person as they look: mail image proxies, a CDN's
    /// requests to its origin, page transcoders. Counted rather than judged unless a site says
    /// otherwise: the person behind is not known, and refusing the fetch refuses them.
    Proxy,
    /// Known, but none of the above.
    Other,
    /// Not in the catalog: named only by the site's robots.txt or configuration.
    Unlisted,
    /// No known token, but a crawler signal: follows the `*` group.
    Unnamed,
}

impl Category {
    /// Every category, in declaration order.
    pub const ALL: [Category; 17] = [
        Category::AiTraining,
        Category::AiSearch,
        Category::AiAssistant,
        Category::Search,
        Category::Seo,
        Category::Archiver,
        Category::Social,
        Category::Monitoring,
        Category::Feed,
        Category::HttpLibrary,
        Category::CrawlerFramework,
        Category::Scanner,
        Category::SiteService,
        Category::Proxy,
        Category::Other,
        Category::Unlisted,
        Category::Unnamed,
    ];

    /// The label value, as written in the catalog: `ai-training`, `search`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Category::AiTraining => "ai-training",
            Category::AiSearch => "ai-search",
            Category::AiAssistant => "ai-assistant",
            Category::Search => "search",
            Category::Seo => "seo",
            Category::Archiver => "archiver",
            Category::Social => "social",
            Category::Monitoring => "monitoring",
            Category::Feed => "feed",
            Category::HttpLibrary => "http-library",
            Category::CrawlerFramework => "crawler-framework",
            Category::Scanner => "scanner",
            Category::SiteService => "site-service",
            Category::Proxy => "proxy",
            Category::Other => "other",
            Category::Unlisted => "unlisted",
            Category::Unnamed => "unnamed",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
/// Where a known token may name the client, among the [`Place`]s that name one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Matching {
    /// In every place that names the client (a crawler's own product name, vetted by hand).
    #[default]
    Anywhere,
    /// Only as the header's first product: a word that browsers and apps also carry elsewhere
    /// in their headers (`Java`, `Ruby`, `Dart`).
    FirstProduct,
    /// Every place but the products between a browser's engine and its last product, and in a
    /// header that is not a browser's, only with a version where it is neither the first nor
    /// the last product (`Name/1.0`): for names imported from public lists, which are less
    /// vetted than the curated ones (`Notion/3.4.2` inside an Electron app's header is the app).
    Product,
    /// In every place that names the client, but only in a header that also carries a crawler
    /// [`Signal`]: a token that only a site's robots.txt or configuration names, which must
    /// never turn a browser or an app into a crawler, or a catalog name that a person's app
    /// carries too (`Viber`, whose app writes `Viber/12.8` and whose link-preview fetcher is
    /// unnamed otherwise).
    WithSignal,
    /// Never: browser vocabulary (`Mozilla`, `Windows`, ...) that a site's robots.txt names.
    Never,
    /// Never, and more: a person's app (`WhatsApp`, `gPodder`). Named as a product of a header
    /// or as a `compatible` comment's name, it makes the header's URLs, e-mail addresses and
    /// site names its own (its home page, its support address), and the `compatible` form its
    /// own choice, not crawler signals; crawler words still count.
    PersonsApp,
}

/// A crawler the classifier knows by its product token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownAgent {
    /// The product token, as robots.txt names it (`GPTBot`, `MJ` for MJ12bot).
    pub token: String,
    /// The name operators know it by and its header carries (`MJ12bot`): the token, then
    /// possibly more that must follow it in the header (`12bot`).
    pub name: String,
    /// Who runs it, when known.
    pub operator: Option<String>,
    /// What it is for.
    pub category: Category,
    /// Where its token counts.
    pub matching: Matching,
}

impl KnownAgent {
    /// A crawler named by its token alone, matching anywhere.
    pub fn new(token: &str, operator: Option<&str>, category: Category) -> KnownAgent {
        KnownAgent {
            token: token.to_owned(),
            name: token.to_owned(),
            operator: operator.map(str::to_owned),
            category,
            matching: Matching::Anywhere,
        }
    }

    /// A token named only by a robots.txt or a configuration: operator unknown, `unlisted`,
    /// counting only in a header with a crawler signal, or never if it is browser vocabulary.
    pub fn unlisted(token: &str) -> KnownAgent {
        let matching = if is_browser_vocabulary(token) {
            Matching::Never
        } else {
            Matching::WithSignal
        };
        KnownAgent {
            matching,
            ..KnownAgent::new(token, None, Category::Unlisted)
        }
    }

    /// What must follow the token in a header: the rest of the name (`12bot` for MJ12bot).
    fn tail(&self) -> &[u8] {
        self.name.as_bytes().get(self.token.len()..).unwrap_or(&[])
    }
}
/// Words that browsers and platforms put in their User-Agent headers. A robots.txt group that
/// names one (`User-agent: Mozilla/4.0 (compatible; BullsEye; Windows 95)` is read as
/// `Mozilla`) would match every browser: a site's token that is one of these never classifies.
pub const BROWSER_VOCABULARY: &[&str] = &[
    "Android",
    "AppleWebKit",
    "BlackBerry",
    "Browser",
    "Build",
    "Camino",
    "CFNetwork",
    "Chrome",
    "Chromium",
    "CLDC",
    "compatible",
    "Configuration",
    "CPU",
    "CriOS",
    "Dalvik",
    "Darwin",
    "Dillo",
    "Dolphin",
    "Edg",
    "Edge",
    "EdgiOS",
    "ELinks",
    "en",
    "Epiphany",
    "Firefox",
    "FxiOS",
    "Gecko",
    "Iceweasel",
    "Intel",
    "iOS",
    "iPad",
    "iPhone",
    "iPod",
    "Java",
    "KHTML",
    "Konqueror",
    "like",
    "Links",
    "Linux",
    "Lynx",
    "Mac",
    "Macintosh",
    "Maxthon",
    "Microsoft",
    "Midori",
    "MIDP",
    "MiuiBrowser",
    "Mobile",
    "Mozilla",
    "MSIE",
    "NET",
    "NetFront",
    "Netscape",
    "NT",
    "Obigo",
    "Odin",
    "Opera",
    "OPR",
    "OS",
    "PaleMoon",
    "Profile",
    "Puffin",
    "QQBrowser",
    "rv",
    "Safari",
    "SamsungBrowser",
    "SeaMonkey",
    "Silk",
    "Sleipnir",
    "Trident",
    "U",
    "Ubuntu",
    "UCBrowser",
    "Version",
    "Vivaldi",
    "Waterfox",
    "WebKit",
    "Whale",
    "Win",
    "Windows",
    "WOW",
    "X",
    "YaBrowser",
];

/// Whether a product token is browser vocabulary ([`BROWSER_VOCABULARY`]), case-insensitively.
pub fn is_browser_vocabulary(token: &str) -> bool {
    BROWSER_VOCABULARY
        .iter()
        .any(|word| word.eq_ignore_ascii_case(token))
}
/// What makes a header that no known token names a crawler's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    /// A crawler word (*bot*, *crawler*, *spider*, ...) in a place that names the client.
    Word,
    /// A `compatible` comment that gives one name and no platform (`(compatible;
    /// Google-Youtube-Links)`, `(KHTML, like Gecko; compatible; MistralAI-Index/1.0)`): the form
    /// crawlers write, since a browser writes its platform there; not in an app's header that
    /// names its phone (`iPhone (compatible; Smartphone2.0) NRC Digitale Editie, …`).
    Compatible,
    /// A name written into a browser engine's comment (`(KHTML, like Gecko; Google Web
    /// Preview)`): browsers write nothing there.
    EngineComment,
    /// A URL in a comment that is not a platform's or an app's (`(+https://example.com/bot)`),
    /// a product `+http://…`, or an entry that holds a URL in the platform comment of a header
    /// that starts `Mozilla/x (…)` (a browser writes its device there), as crawlers give their
    /// operator's page; not in an app's header that names its phone or computer, which gives
    /// its own page (`Turtlecast/0.7.7; (Android 13); +https://www.turtlecast.app`).
    Url,
    /// An e-mail address (`@` or `[at]`) outside platform and app comments, or as an entry of
    /// the platform comment of a header that starts `Mozilla/x (…)`, in a header that names no
    /// phone (`ichiro/2.0 (ichiro@nttr.co.jp)`).
    Email,
    /// A product or a comment named by a site (`Salesforce.com`, `2ip.ru CMS Detector`,
    /// `PostRank/2.0 (postrank.com)`, `Mozilla/5.0 (feeder.co; …)`), in a header that names
    /// no phone; or a site's name where a browser writes nothing, between its platform comment
    /// and its engine (`… like Mac OS X) adbeat.com/policy AppleWebKit/…`), on any device.
    Domain,
    /// A subscriber count (`(12 subscribers; …)`), as feed fetchers give.
    Subscribers,
}

impl Signal {
    /// The signals a person's app named in its own header makes its own ([`Matching::PersonsApp`]):
    /// its page, its address, its site, and the `compatible` form it chose to write them in.
    pub const AN_APPS_OWN: [Signal; 4] = [
        Signal::Url,
        Signal::Email,
        Signal::Domain,
        Signal::Compatible,
    ];

    /// Every signal, the strongest first (the one an explanation names).
    pub const ALL: [Signal; 7] = [
        Signal::Word,
        Signal::Compatible,
        Signal::EngineComment,
        Signal::Url,
        Signal::Email,
        Signal::Domain,
        Signal::Subscribers,
    ];

    /// What the signal is, for explanations.
    pub fn describe(self) -> &'static str {
        match self {
            Signal::Word => "a crawler word (bot, crawler, spider, ...) naming a product",
            Signal::Compatible => "a `compatible` comment naming one client and no platform",
            Signal::EngineComment => "a name written into the browser engine's comment",
            Signal::Url => "a URL in a comment that is not an app's platform comment",
            Signal::Email => "an e-mail address outside an app's platform comment",
            Signal::Domain => "a product or a comment named by a site",
            Signal::Subscribers => "a subscriber count, as feed fetchers give",
        }
    }
}

/// Who is asking: the one answer the classifier, the proxy, `explain`, `audit` and the tests
/// share. Small and `Copy`, so that a worker's memo can keep it and a decision can carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Who {
    /// A person's browser or app: never judged by robots.txt, never blocked, never counted as a
    /// violation.
    Person,
    /// A crawler signal but no name: judged by the `*` group.
    Unnamed,
    /// A named crawler: its row in the table that classified it (a [`Classifier`]'s
    /// [`agents`](Classifier::agents), or a site's crawler table, `crate::crawlers::Crawlers`).
    Crawler(usize),
}

impl Who {
    /// Whether it is a crawler (named or not).
    pub fn is_crawler(self) -> bool {
        !matches!(self, Who::Person)
    }

    /// The row of a named crawler.
    pub fn row(self) -> Option<usize> {
        match self {
            Who::Crawler(row) => Some(row),
            Who::Person | Who::Unnamed => None,
        }
    }
}

/// What the classifier made of a header, and why: for explanations and the measurements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    /// Who is asking.
    pub who: Who,
    /// Where the deciding name stood, for a named crawler.
    pub place: Option<Place>,
    /// The strongest crawler signal the header carries (what made an unnamed crawler, or let a
    /// token that needs one count).
    pub signal: Option<Signal>,
    /// What kind of header it is; `None` when the header was not read because nothing in it can
    /// name a crawler (see [`Classifier::classify`]).
    pub shape: Option<Shape>,
    /// A person's app ([`Matching::PersonsApp`]) is named as a product or in a `compatible`
    /// comment: the header's URLs, addresses, site names and `compatible` form are its own,
    /// not crawler signals.
    pub persons_app: bool,
}

impl Classified {
    /// A person's header that was not read: nothing in it can name a crawler.
    pub const PERSON: Classified = Classified {
        who: Who::Person,
        place: None,
        signal: None,
        shape: None,
        persons_app: false,
    };
}

/// Classifies User-Agent headers against a fixed set of known tokens.
#[derive(Debug, Clone)]
pub struct Classifier {
    agents: Vec<KnownAgent>,
    /// The tokens (run `i` is `agents[i]`'s token) and the words people's headers are made of,
    /// for the one pass over a header ([`scan::Runs::scan`]).
    runs: scan::Runs,
}

/// Whether a `khtml` at `header[at..]` opens exactly `KHTML, like Gecko)`: an engine comment
/// with nothing else in it (`,` and spaces between the words may vary). Inlined into the plain
/// pass, which meets it in nearly every browser's header: called, it made the pass save and
/// restore its registers around it (62 more stores per header of real traffic, decision 19).
#[inline(always)]
pub(crate) fn plain_engine_comment(header: &[u8], at: usize) -> bool {
    let rest = header.get(at + 5..).unwrap_or_default();
    // As nearly every browser writes it: one comparison of thirteen bytes.
    if rest.starts_with(b", like Gecko)") {
        return true;
    }
    let gap = rest.iter().take_while(|&&b| b == b',' || b == b' ').count();
    rest.get(gap..gap + 11)
        .is_some_and(|words| words.eq_ignore_ascii_case(b"like gecko)"))
}

/// Errors building a classifier.
#[derive(Debug, thiserror::Error)]
pub enum ClassifierError {
    /// A token that is not a product token.
    #[error("`{0}` is not a product token: use only letters, `-` and `_`")]
    BadToken(String),
    /// A name that does not start with its token.
    #[error("the name `{name}` does not start with its product token `{token}`")]
    BadName {
        /// The name.
        name: String,
        /// The token.
        token: String,
    },
}

/// A crawler word at `header[start..end]` names the client when it begins or ends a word (a
/// neighbour that is not a letter: `FooBot`, `Bot-Name`, `web-crawler`, `crawl4ai`; not
/// `OrangeBotswana`; a word also ends where a capital follows a small letter:
/// `HeadOnlyScraperV2`, `DefaultCrawlTest`), or for some words only when it ends one
/// ([`vocabulary::only_at_word_end`]) or only when it is one, with no letter on either side
/// ([`vocabulary::only_as_word`]: the capital that ends a word elsewhere starts an app's name's
/// next word here, `AuditBoard`, `CheckPoint`).
fn word_counts(header: &[u8], start: usize, end: usize) -> bool {
    let word = &header[start..end];
    let begins = start == 0 || !header[start - 1].is_ascii_alphabetic();
    let ends = header.get(end).is_none_or(|b| {
        !b.is_ascii_alphabetic() || (b.is_ascii_uppercase() && header[end - 1].is_ascii_lowercase())
    });
    if vocabulary::only_as_word(word) {
        return begins && header.get(end).is_none_or(|b| !b.is_ascii_alphabetic());
    }
    ends || (begins && !vocabulary::only_at_word_end(word))
}

/// Whether a token's match, in a stretch at `place` of the header, names the client by its
/// [`Matching`] (the site-token rule, which needs a signal, is weighed by the caller).
fn counts_at(matching: Matching, place: Place, versioned: bool) -> bool {
    match matching {
        Matching::Anywhere | Matching::WithSignal => true,
        Matching::FirstProduct => place == Place::FirstProduct,
        Matching::Product => match place {
            Place::BrowserProduct => false,
            Place::Product => versioned,
            _ => true,
        },
        Matching::Never | Matching::PersonsApp => false,
    }
}

impl Classifier {
    /// Builds a classifier. Tokens are deduplicated case-insensitively; the first entry wins,
    /// so put the catalog before tokens found elsewhere.
    pub fn new(
        agents: impl IntoIterator<Item = KnownAgent>,
    ) -> Result<Classifier, ClassifierError> {
        let mut seen = HashSet::new();
        let mut unique = Vec::new();
        for agent in agents {
            if !is_product_token(&agent.token) {
                return Err(ClassifierError::BadToken(agent.token));
            }
            let starts = agent
                .name
                .get(..agent.token.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(&agent.token));
            if !starts {
                return Err(ClassifierError::BadName {
                    name: agent.name,
                    token: agent.token,
                });
            }
            if seen.insert(agent.token.to_ascii_lowercase()) {
                unique.push(agent);
            }
        }
        let tokens: Vec<(String, bool)> = unique
            .iter()
            .map(|agent| {
                let never = matches!(agent.matching, Matching::Never | Matching::PersonsApp);
                (agent.token.to_ascii_lowercase(), !never)
            })
            .collect();
        Ok(Classifier {
            runs: scan::Runs::new(tokens.iter().map(|(t, counts)| (t.as_str(), *counts))),
            agents: unique,
        })
    }

    /// The known agents, in the order given (without duplicates).
    pub fn agents(&self) -> &[KnownAgent] {
        &self.agents
    }

    /// The agent of a named crawler's row.
    pub fn agent(&self, who: Who) -> Option<&KnownAgent> {
        self.agents.get(who.row()?)
    }

    /// Classifies one User-Agent header value (bytes: headers need not be UTF-8).
    ///
    /// A pass over the header ([`scan`]) looks each run of `[A-Za-z_-]` up whole in a table (a
    /// token matches only a whole run) and looks for crawler words and the marks a crawler
    /// signal needs. Most headers are people's, and most of those hold nothing that could name
    /// a crawler: no catalog token, no crawler word, no mark. Such a header is a person without
    /// being read ([`Classifier::plainly_a_person`]); the answer is the one reading it would
    /// give. For any other header, the pass stops at the first thing that could name a crawler,
    /// and a second finds its whole-run tokens and crawler words from there on.
    ///
    /// Any other header is read once ([`grammar::read`]) into the stretches that name the client
    /// and the signals its form gives. A token counts when it lies in one of the stretches (they
    /// start where runs start; a name of several words, `Xenu Link Sleuth`, runs on over the
    /// products after it) and its [`Matching`] allows the place. Crawler words count only when
    /// no token decides.
    pub fn classify(&self, user_agent: &[u8]) -> Who {
        self.read(user_agent).who
    }

    /// [`Classifier::classify`], with where the name stood and the signal the header carries.
    pub fn read(&self, user_agent: &[u8]) -> Classified {
        self.read_keeping(user_agent).0
    }

    /// [`Classifier::read`], and the reading when the header was read, for another classifier of
    /// the same header (a site's own tokens) to share.
    pub fn read_keeping(&self, user_agent: &[u8]) -> (Classified, Option<grammar::Reading>) {
        let Some(from) = self.runs.plain_until(user_agent) else {
            return (Classified::PERSON, None);
        };
        let mut scan = scan::Scan::default();
        self.runs.scan_from(user_agent, from, &mut scan);
        let reading = grammar::read(user_agent);
        (self.decide(user_agent, &reading, &scan), Some(reading))
    }

    /// Whether `user_agent` holds nothing that could name a crawler: no run that is a token of
    /// this classifier, no crawler word, and none of the marks that every crawler signal needs
    /// ([`scan`]; a `KHTML` that opens exactly `KHTML, like Gecko)` is none). Such a header is a
    /// person's; a site's own tokens need a signal too, so none can name it either. (A token
    /// that never counts, a person's app, leaves the header to be read, to the same answer: its
    /// reading needs to know the app.)
    pub fn plainly_a_person(&self, user_agent: &[u8]) -> bool {
        self.runs.plain(user_agent)
    }

    /// [`Classifier::read`] of a header already read by [`grammar::read`]: classifiers of the
    /// same header (a site's catalog and its own tokens) share one reading.
    pub fn read_with(&self, user_agent: &[u8], reading: &grammar::Reading) -> Classified {
        let mut scan = scan::Scan::default();
        self.runs.scan_from(user_agent, 0, &mut scan);
        self.decide(user_agent, reading, &scan)
    }

    /// The classification of a read header, from what the pass over it found.
    fn decide(
        &self,
        user_agent: &[u8],
        reading: &grammar::Reading,
        scan: &scan::Scan,
    ) -> Classified {
        if reading.shape.device_app {
            return Classified {
                shape: Some(reading.shape),
                ..Classified::PERSON
            };
        }
        let spans = &reading.spans;
        // (row, name length, place) of the longest name that counts without a signal, and of
        // the longest that needs one.
        let mut best: Option<(usize, usize, Place)> = None;
        let mut best_with_signal: Option<(usize, usize, Place)> = None;
        let mut own_app = false;
        let mut at = 0;
        for &(index, start, end) in &scan.tokens {
            let Some(agent) = self.agents.get(index) else {
                continue;
            };
            if !tail_follows(user_agent, end, agent.tail()) {
                continue;
            }
            // The token must stand in a stretch that names the client; a name of several words
            // (`Xenu Link Sleuth`) runs on over the products after it.
            while spans.get(at).is_some_and(|span| span.end <= start) {
                at += 1;
            }
            let Some(span) = spans
                .get(at)
                .filter(|span| span.start <= start && end <= span.end)
            else {
                continue;
            };
            if agent.matching == Matching::PersonsApp {
                own_app |= span.place.is_product() || span.place == Place::Compatible;
                continue;
            }
            let end = end + agent.tail().len();
            if !counts_at(agent.matching, span.place, version_follows(user_agent, end)) {
                continue;
            }
            let slot = if agent.matching == Matching::WithSignal {
                &mut best_with_signal
            } else {
                &mut best
            };
            if slot.is_none_or(|(_, len, _)| agent.name.len() > len) {
                *slot = Some((index, agent.name.len(), span.place));
            }
        }
        let mut signals = reading.signals;
        if own_app {
            // `Mozilla/5.0 (compatible; Metacast/1.0 +metacast.app)`: the app's own.
            for signal in Signal::AN_APPS_OWN {
                signals.remove(signal);
            }
        }
        let signal_matters = best.is_none()
            || best_with_signal
                .is_some_and(|(_, own, _)| best.is_some_and(|(_, len, _)| own > len));
        if signal_matters && has_word(user_agent, spans, &scan.words) {
            signals.add(Signal::Word);
        }
        let signal = signals.first();
        let decided = match (best, best_with_signal) {
            (best, Some(own)) if signal.is_some() && best.is_none_or(|b| own.1 > b.1) => Some(own),
            (best, _) => best,
        };
        let (who, place) = match (decided, signal) {
            (Some((row, _, place)), _) => (Who::Crawler(row), Some(place)),
            (None, Some(_)) => (Who::Unnamed, None),
            (None, None) => (Who::Person, None),
        };
        Classified {
            who,
            place,
            signal,
            shape: Some(reading.shape),
            persons_app: own_app,
        }
    }
}

/// Whether one of the crawler words found in a header (`words`: start, end) stands in one of the
/// stretches that name the client (disjoint, in order) and counts there ([`word_counts`]).
fn has_word(header: &[u8], spans: &[grammar::Span], words: &[(usize, usize)]) -> bool {
    words.iter().any(|&(start, end)| {
        let at = spans.partition_point(|span| span.end < end);
        spans.get(at).is_some_and(|span| span.start <= start) && word_counts(header, start, end)
    })
}

/// Whether a version follows the name that ends at `header[end]`: `/` (`Name/1.0`), or a hyphen
/// before a digit (`Name-1.0`).
fn version_follows(header: &[u8], end: usize) -> bool {
    match header.get(end) {
        Some(b'/') => true,
        Some(b'-') => header.get(end + 1).is_some_and(u8::is_ascii_digit),
        _ => false,
    }
}

/// Whether `tail` (the rest of a name after its token) follows `header[..end]`, and ends where
/// a product name ends.
fn tail_follows(header: &[u8], end: usize, tail: &[u8]) -> bool {
    if tail.is_empty() {
        return true;
    }
    let Some(after) = header.get(end..end + tail.len()) else {
        return false;
    };
    after.eq_ignore_ascii_case(tail)
        && header
            .get(end + tail.len())
            .is_none_or(|&b| !(is_token_byte(b) || b.is_ascii_digit()))
}
#[cfg(test)]
mod tests {
    use super::*;

    fn known(token: &str, category: Category) -> KnownAgent {
        KnownAgent::new(token, None, category)
    }

    fn classifier() -> Classifier {
        Classifier::new([
            known("Googlebot", Category::Search),
            known("Googlebot-Image", Category::Search),
            known("GPTBot", Category::AiTraining),
            known("LCC", Category::Other),
            known("ChatGPT-User", Category::AiAssistant),
            known("gptbot", Category::Other),
        ])
        .unwrap()
    }

    fn token<'a>(c: &'a Classifier, header: &str) -> Option<&'a str> {
        c.agent(c.classify(header.as_bytes()))
            .map(|agent| agent.token.as_str())
    }

    #[test]
    fn whole_tokens_only_case_insensitive() {
        let c = classifier();
        let ua = |s: &str| token(&c, s);
        assert_eq!(
            ua("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"),
            Some("Googlebot")
        );
        assert_eq!(ua("Googlebot-Image/1.0"), Some("Googlebot-Image"));
        assert_eq!(ua("Mozilla/5.0 (compatible; gptbot/1.2)"), Some("GPTBot"));
        assert_eq!(ua("Mozilla/5.0 (Windows NT 6.1; SLCC1; .NET CLR)"), None);
        assert_eq!(ua("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot"), Some("ChatGPT-User"));
        assert_eq!(ua("XGooglebot/1.0"), None);
        assert_eq!(ua("Googlebot_x"), None);
    }

    #[test]
    fn a_hyphen_before_a_digit_starts_a_version() {
        let c = Classifier::new([
            known("Nutch", Category::CrawlerFramework),
            KnownAgent {
                matching: Matching::Product,
                ..known("Wordup", Category::Seo)
            },
        ])
        .unwrap();
        let ua = |s: &str| token(&c, s);
        assert_eq!(ua("Nutch-1.7"), Some("Nutch"));
        assert_eq!(ua("your crawler name/Nutch-1.7"), Some("Nutch"));
        // A hyphen before a letter, or at the end, is the run's own.
        assert_eq!(ua("Nutch-x/1.0"), None);
        assert_eq!(ua("Nutch-"), None);
        // An imported name between products needs a version, which the hyphen gives.
        assert_eq!(ua("ShopApp/5.1 Wordup-1 okhttp/4.12.0"), Some("Wordup"));
        assert_eq!(ua("ShopApp/5.1 Wordup okhttp/4.12.0"), None);
    }

    #[test]
    fn the_longest_known_token_wins() {
        let c = classifier();
        assert_eq!(
            token(&c, "Googlebot-Image/1.0 (compatible; Googlebot/2.1)"),
            Some("Googlebot-Image")
        );
        let c = Classifier::new([
            known("abc", Category::Other),
            known("bcd", Category::Other),
            known("cd", Category::Other),
        ])
        .unwrap();
        assert_eq!(token(&c, "abcd cd"), Some("cd"));
        assert_eq!(token(&c, "xabc abc-"), None);
        // Equal lengths: the first.
        assert_eq!(token(&c, "(abc)bcd;"), Some("abc"));
    }

    #[test]
    fn a_token_counts_only_where_it_names_the_client() {
        let c = Classifier::new([
            known("Expanse", Category::Scanner),
            known("Storebot-Google", Category::Search),
            known("Applebot", Category::Search),
        ])
        .unwrap();
        // A phone's model in a browser's platform comment.
        let phone = "Mozilla/5.0 (Linux; Android 8.0.0; Expanse) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36";
        assert_eq!(c.classify(phone.as_bytes()), Who::Person);
        // The scanner names itself by its first product.
        assert_eq!(
            token(
                &c,
                "Expanse, a Palo Alto Networks company, searches across the global IPv4 space"
            ),
            Some("Expanse")
        );
        // A product written inside a platform comment, and a trailing comment's name.
        assert_eq!(token(&c, "Mozilla/5.0 (X11; Linux x86_64; Storebot-Google/1.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/79.0 Safari/537.36"), Some("Storebot-Google"));
        let apple = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)";
        let read = c.read(apple.as_bytes());
        assert_eq!(
            c.agent(read.who).map(|a| a.token.as_str()),
            Some("Applebot")
        );
        assert_eq!(read.place, Some(Place::CommentName));
    }

    #[test]
    fn imported_names_count_only_where_they_name_a_product() {
        let c = Classifier::new([KnownAgent {
            matching: Matching::Product,
            ..known("Notion", Category::Social)
        }])
        .unwrap();
        assert_eq!(
            token(&c, "Notion/1.0 (https://notion.so; team@makenotion.com)"),
            Some("Notion")
        );
        // An Electron app's own product, before Chrome's.
        let app = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Notion/3.4.2 Chrome/122.0.6261.70 Electron/29.1.0 Safari/537.36";
        assert_eq!(c.classify(app.as_bytes()), Who::Person);
        // A bare word in the middle of an app's header.
        assert_eq!(
            c.classify(b"HTC Notion s (Android 4.3, SDK 18)"),
            Who::Person
        );
        assert_eq!(token(&c, "HTC Notion/2 (Android 4.3)"), Some("Notion"));
    }

    #[test]
    fn unnamed_crawlers_and_people() {
        let c = classifier();
        let who = |h: &str| c.classify(h.as_bytes());
        assert_eq!(who("FooBot/1.0"), Who::Unnamed);
        assert_eq!(who("my-web-CRAWLER"), Who::Unnamed);
        assert_eq!(who("SpiderMan scraper"), Who::Unnamed);
        assert_eq!(
            who("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
            Who::Person
        );
        assert_eq!(who(""), Who::Person);
        assert_eq!(who("\u{ff} bot"), Who::Unnamed);
        // A known token that is not whole still leaves its crawler word.
        assert_eq!(who("XGooglebot/1.0"), Who::Unnamed);
        assert_eq!(who("Abbott Labs App/1.0"), Who::Person);
        // A word that is also a token is that token.
        let c = Classifier::new([known("Spider", Category::Other)]).unwrap();
        assert_eq!(token(&c, "spider/2"), Some("Spider"));
        assert_eq!(c.classify(b"spiders/2"), Who::Unnamed);
    }

    #[test]
    fn a_name_of_several_words_runs_on_over_products() {
        let c = Classifier::new([
            KnownAgent {
                name: "Xenu Link Sleuth".into(),
                matching: Matching::Product,
                ..known("Xenu", Category::Seo)
            },
            KnownAgent {
                name: "ContextAd Bot".into(),
                matching: Matching::Product,
                ..known("ContextAd", Category::Other)
            },
        ])
        .unwrap();
        assert_eq!(token(&c, "Xenu Link Sleuth/1.3.8"), Some("Xenu"));
        assert_eq!(
            token(
                &c,
                "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.0;.NET CLR 1.0.3705; ContextAd Bot 1.0)"
            ),
            Some("ContextAd")
        );
        // The whole name, or nothing.
        assert_eq!(c.classify(b"Xenu Link/1.0"), Who::Person);
        assert_eq!(c.classify(b"Xenu Link Sleuths/1.0"), Who::Person);
    }

    #[test]
    fn tool_words_and_where_words_end() {
        let c = classifier();
        let who = |h: &str| c.classify(h.as_bytes());
        for crawler in [
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/49.0.2623.75 Safari/537.36 Google Favicon",
            "Mozilla/5.0 YottaaMonitor;",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/99.0 Safari/537.36 RuxitSynthetic/1.0 v1090987875435353284",
            "W3C_I18n-Checker/1.0",
            "Library Of Congress Web Archiving",
            "Google Web Preview",
            "Honeybadger Uptime Check",
            "Feed Image Audit -- App",
            "Mozilla/5.0 (HeadOnlyScraperV2)",
            "DefaultCrawlTest/0.6 (Ram Crawl Test; devarajaswami at yahoo dot com)",
        ] {
            assert_eq!(who(crawler), Who::Unnamed, "{crawler}");
        }
        for person in [
            "Mozilla/5.0 (Windows; U; Windows NT 6.1; en-US; rv:1.9.3a1) Gecko/20100208 MozillaDeveloperPreview/3.7a1 (.NET CLR 3.5.30729)",
            "Mozilla/5.0 (Linux; Android 13; 2201116SI Build/TKQ1.221114.001; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/125.0.6422.165 Mobile Safari/537.36 CamScanner/4.5.0.2305051722",
            "ShopApp/2.0 csh-store-checkout",
            "AuditBoard/3.1 (iPhone; iOS 17.5; Scale/3.00)",
            "CheckPoint Mobile/2.1",
        ] {
            assert_eq!(who(person), Who::Person, "{person}");
        }
    }

    #[test]
    fn crawler_words_never_count_in_device_fields() {
        let c = classifier();
        for person in [
            "Mozilla/5.0 (Linux; Android 14; Cubot X50) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
            "Mozilla/5.0 (Linux; Android 10; CUBOT_X30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
            "Mozilla/5.0 (Linux; Android 9; S222 Build/CUBOT) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Mobile Safari/537.36",
            "Mozilla/5.0 (Linux; Android 8.1.0; Spider 8 Build/O11019) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.110 Safari/537.36",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 11_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15G77 [FBAN/FBIOS;FBCR/OrangeBotswana;FBID/phone]",
            "Dalvik/2.1.0 (Linux; U; Android 11; CUBOT_X30 Build/RP1A.200720.011)",
        ] {
            assert_eq!(c.read(person.as_bytes()).who, Who::Person, "{person}");
        }
        // A product with a version inside a platform comment is one.
        assert_eq!(
            c.read(b"Mozilla/5.0 (Windows NT 10.0; Win64; x64; BDCbot/1.0; +http://bigweb.example/faq) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/69.0 Safari/537.36").signal,
            Some(Signal::Word)
        );
    }

    #[test]
    fn urls_and_addresses_are_signals_outside_platform_comments() {
        let c = classifier();
        let why = |h: &str| {
            let read = c.read(h.as_bytes());
            (read.who, read.signal)
        };
        assert_eq!(
            why("Mozilla/5.0 (compatible; Plukkie/1.6; http://www.plukkie.com/)"),
            (Who::Unnamed, Some(Signal::Compatible))
        );
        assert_eq!(
            why("ichiro/2.0 (ichiro@nttr.co.jp)"),
            (Who::Unnamed, Some(Signal::Email))
        );
        assert_eq!(
            why("008/0.83 (http://www.advancedwebranking.com)"),
            (Who::Unnamed, Some(Signal::Url))
        );
        for person in [
            "Mozilla/5.0 (Linux; U; Android WP7; de-de; GT-S5830 - Forum: http://forumgalaxyace.fora24.pl Build/GRWK74) AppleWebKit/533.1 (KHTML, like Gecko) Version/4.0 Mobile Safari/533.1",
            "Liferea/0.x.x (Linux; en_US.UTF-8; http://liferea.sf.net/)",
            "MyApp/2.3 (Windows NT 10.0; support@myapp.com)",
            "(Android)(15)(someone@gmail.com)(HTC Desire C)(com.example.app)",
            "user@localhost",
        ] {
            assert_eq!(why(person), (Who::Person, None), "{person}");
        }
    }

    #[test]
    fn a_persons_app_owns_its_home_page() {
        let c = Classifier::new([KnownAgent {
            matching: Matching::PersonsApp,
            ..known("gPodder", Category::Feed)
        }])
        .unwrap();
        assert_eq!(
            c.classify(b"gPodder/3.7.0 (+http://gpodder.org/)"),
            Who::Person
        );
        // Its crawler words still count.
        assert_eq!(
            c.classify(b"gPodder-bot/1.0 (+http://gpodder.org/)"),
            Who::Unnamed
        );
    }

    #[test]
    fn site_tokens_need_a_signal_and_browser_vocabulary_never_counts() {
        let c = Classifier::new([
            known("GPTBot", Category::AiTraining),
            KnownAgent::unlisted("Mozilla"),
            KnownAgent::unlisted("Microsoft"),
            KnownAgent::unlisted("FooCrawler"),
            KnownAgent::unlisted("BarAgent"),
        ])
        .unwrap();
        assert_eq!(c.agents()[1].matching, Matching::Never);
        let browser = b"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
        assert_eq!(c.classify(browser), Who::Person);
        assert_eq!(
            c.classify(
                b"Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.4266; Pro)"
            ),
            Who::Person
        );
        assert_eq!(token(&c, "FooCrawler/1.0"), Some("FooCrawler"));
        assert_eq!(c.classify(b"BarAgent/2.0"), Who::Person);
        assert_eq!(
            token(
                &c,
                "Mozilla/5.0 (compatible; BarAgent/2.0; +https://bar.example/agent)"
            ),
            Some("BarAgent")
        );
        // Mozilla never names a crawler, even one with a signal: an unnamed crawler follows `*`.
        assert_eq!(
            c.classify(b"Mozilla/5.0 (compatible; NewBot/1.0; +http://new.example)"),
            Who::Unnamed
        );
        // A site token longer than a catalog token in the same header wins.
        assert_eq!(token(&c, "GPTBot/1.0 FooCrawler/2.0"), Some("FooCrawler"));
        assert!(is_browser_vocabulary("mozilla") && !is_browser_vocabulary("GPTBot"));
    }

    #[test]
    fn first_product_tokens_and_names_with_a_tail() {
        let c = Classifier::new([
            KnownAgent {
                matching: Matching::FirstProduct,
                ..known("Java", Category::HttpLibrary)
            },
            KnownAgent {
                name: "MJ12bot".into(),
                ..known("MJ", Category::Seo)
            },
        ])
        .unwrap();
        assert_eq!(token(&c, "Java/17.0.6"), Some("Java"));
        assert_eq!(token(&c, "  Java1.4.0"), Some("Java"));
        assert_eq!(
            c.classify(
                b"Mozilla/5.0 (Java; U; en-us; nokia201) UCBrowser8.3.0.154/70/355/UCWEB Mobile"
            ),
            Who::Person
        );
        assert_eq!(
            token(
                &c,
                "Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)"
            ),
            Some("MJ")
        );
        assert_eq!(
            c.classify(b"Nokia6152/2.0 (MJ100V0600.nep) UP.Browser/6.2.3.8 MMP/2.0"),
            Who::Person
        );
        assert_eq!(c.classify(b"MJ12botx/1"), Who::Unnamed);
        assert!(matches!(
            Classifier::new([KnownAgent {
                name: "Other".into(),
                ..known("MJ", Category::Seo)
            }]),
            Err(ClassifierError::BadName { .. })
        ));
    }

    #[test]
    fn duplicates_keep_the_first_and_bad_tokens_are_refused() {
        let c = classifier();
        assert_eq!(c.agents().len(), 5);
        assert!(matches!(
            Classifier::new([known("Bot/1.0", Category::Other)]),
            Err(ClassifierError::BadToken(_))
        ));
        assert!(Classifier::new([]).is_ok());
        assert_eq!(Who::Crawler(3).row(), Some(3));
        assert!(Who::Unnamed.is_crawler() && !Who::Person.is_crawler());
    }

    /// The obvious reading of the rules, given the reader's stretches: split the header into
    /// runs of `[A-Za-z_-]`, keep the runs that are known tokens, lie in a stretch and whose
    /// [`Matching`] allows its place, take the longest (the first of equals); look for crawler
    /// words by walking every byte of every stretch.
    fn naive(c: &Classifier, ua: &[u8]) -> (Option<usize>, bool) {
        let reading = grammar::read(ua);
        if reading.shape.device_app {
            return (None, false);
        }
        let span_of = |start: usize, end: usize| {
            reading
                .spans
                .iter()
                .find(|s| s.start <= start && end <= s.end)
        };
        let mut word = false;
        for span in &reading.spans {
            let lower = ua[span.start..span.end].to_ascii_lowercase();
            for at in 0..lower.len() {
                for w in vocabulary::CRAWLER_WORDS {
                    if lower[at..].starts_with(w.as_bytes()) {
                        word |= word_counts(ua, span.start + at, span.start + at + w.len());
                    }
                }
            }
        }
        let (mut best, mut best_signal, mut own_app) = (None::<usize>, None::<usize>, false);
        let mut runs = Vec::new();
        let mut start = 0;
        for run in ua.split(|&b| !is_token_byte(b)) {
            runs.push((start, run));
            // A hyphen before a digit separates the name from its version.
            if run.len() > 1
                && run.ends_with(b"-")
                && ua.get(start + run.len()).is_some_and(u8::is_ascii_digit)
            {
                runs.push((start, &run[..run.len() - 1]));
            }
            start += run.len() + 1;
        }
        for (start, run) in runs {
            let run_end = start + run.len();
            let found = c
                .agents()
                .iter()
                .position(|a| !run.is_empty() && a.token.as_bytes().eq_ignore_ascii_case(run));
            if let Some(index) = found {
                let agent = &c.agents()[index];
                let end = run_end + agent.tail().len();
                if let (true, Some(span)) = (
                    tail_follows(ua, run_end, agent.tail()),
                    span_of(start, run_end),
                ) {
                    let versioned = ua.get(end) == Some(&b'/')
                        || (ua.get(end) == Some(&b'-')
                            && ua.get(end + 1).is_some_and(u8::is_ascii_digit));
                    if agent.matching == Matching::PersonsApp {
                        own_app |= span.place.is_product() || span.place == Place::Compatible;
                    } else if counts_at(agent.matching, span.place, versioned) {
                        let slot = if agent.matching == Matching::WithSignal {
                            &mut best_signal
                        } else {
                            &mut best
                        };
                        if slot.is_none_or(|b| agent.name.len() > c.agents()[b].name.len()) {
                            *slot = Some(index);
                        }
                    }
                }
            }
        }
        let mut signals = reading.signals;
        if own_app {
            signals.remove(Signal::Url);
            signals.remove(Signal::Email);
            signals.remove(Signal::Domain);
            signals.remove(Signal::Compatible);
        }
        let signal = !signals.is_empty() || word;
        let len = |i: Option<usize>| i.map(|i| c.agents()[i].name.len());
        let decided = match best_signal {
            Some(own) if signal && best.is_none_or(|b| len(Some(own)) > len(Some(b))) => Some(own),
            _ => best,
        };
        (decided, signal)
    }

    proptest::proptest! {
        #[test]
        fn one_scan_finds_what_splitting_into_runs_finds(
            tokens in proptest::collection::vec(("[abotAB_-]{1,4}", 0..6usize), 1..8),
            pieces in proptest::collection::vec(proptest::sample::select(
                vec!["a", "b", "o", "t", "A", "T", "_", "-", " ", "/", ";", "(", ")", "[", "1", "bot", "BoT", "ab",
                     "xbo", "Mozilla/5.0 (", "compatible", "; ", "http", "://", "@", "x.com", "ios", "Android",
                     "Linux", "AppleWebKit/1 (KHTML, like Gecko; ", "AppleWebKit/1 (KHTML, like Gecko) ",
                     "Instagram ", "Build/", "+http://x.com", "+x", ".com", "subscribers", "12 ", " CFNetwork/1"]
            ), 0..24),
        ) {
            let ua = pieces.concat().into_bytes();
            let matchings = [Matching::Anywhere, Matching::FirstProduct, Matching::WithSignal, Matching::Never, Matching::Product, Matching::PersonsApp];
            let agents = tokens.iter().map(|(t, m)| KnownAgent { matching: matchings[*m], ..known(t, Category::Other) });
            let c = Classifier::new(agents).unwrap();
            let (expected, signal) = naive(&c, &ua);
            let read = c.read(&ua);
            let found = read.who.row();
            // Equal-length names may be found in another order: compare lengths then.
            let len = |i: Option<usize>| i.map(|i| c.agents()[i].name.len());
            proptest::prop_assert_eq!(len(found), len(expected), "{:?}", String::from_utf8_lossy(&ua));
            let unnamed = read.who == Who::Unnamed;
            proptest::prop_assert_eq!(unnamed, expected.is_none() && signal, "{:?}", String::from_utf8_lossy(&ua));
        }
    }
}
