//! Who is asking: a User-Agent header → a known crawler, an unnamed crawler, or a person.
//!
//! A person is a browser or an app; only a crawler is judged by robots.txt. RFC 9309 identifies
//! a crawler by its product token, and the tokens in a User-Agent header are its runs of
//! `[A-Za-z_-]`. A known token matches only a whole run, case-insensitively: `Googlebot` is not
//! found inside `Googlebot-Image`, nor `LCC` inside `SLCC1`. How a known token may match is its
//! [`Matching`]: anywhere, only as the header's first product (`Java/17` is Java's HTTP client;
//! `(Java; U; en-us)` inside an old phone browser's header is not), only in a header that also
//! carries a [crawler signal](Signal) (a token only the site's robots.txt or configuration names
//! must never turn a browser or an app into a crawler), or never (browser vocabulary such as
//! `Mozilla`).
//!
//! A header with no known token is an unnamed crawler when it carries a crawler signal: a
//! crawler word (*bot*, *crawler*, *spider*, *scraper*) where it names a product, a URL, or an
//! e-mail address. A browser's platform comment (`Mozilla/5.0 (Linux; Android 14; Cubot X50)`)
//! names a device, not a product: words there count only in a product with a version
//! (`Yahoo-MMCrawler/4.0`), and URLs and addresses there not at all. Anything else is a person.
//!
//! One Aho-Corasick automaton holds every known token and every signal, so a header is scanned
//! once whatever the size of the catalog (see [`Classifier::classify`]).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;

use crate::robots::token::is_product_token;
pub use crate::robots::token::is_token_byte;

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
    /// Security and internet-wide scanners.
    Scanner,
    /// Known, but none of the above.
    Other,
    /// Not in the catalog: named only by the site's robots.txt or configuration.
    Unlisted,
    /// No known token, but a crawler signal: follows the `*` group.
    Unnamed,
}

impl Category {
    /// Every category, in declaration order.
    pub const ALL: [Category; 14] = [
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
        Category::Scanner,
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
            Category::Scanner => "scanner",
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

/// How a known token may turn a header into a crawler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Matching {
    /// Wherever it occurs as a whole token (a crawler's own product name).
    #[default]
    Anywhere,
    /// Only as the header's first product: a word that browsers and apps also carry elsewhere
    /// in their headers (`Java`, `Ruby`, `Dart`).
    FirstProduct,
    /// Only where it names a product: the header's first or last product, a product with a
    /// version (`Name/1.0`), or an item of a `compatible` comment (`(compatible; Name; …)`),
    /// never inside a browser's platform comment: for names imported from public lists, which
    /// are less vetted than the curated ones (`Butterfly` is a crawler and an HTC phone).
    Product,
    /// Only in a header that also carries a crawler [`Signal`]: a token that only a site's
    /// robots.txt or configuration names, which must never turn a browser or an app into a
    /// crawler.
    WithSignal,
    /// Never: browser vocabulary (`Mozilla`, `Windows`, ...), or a person's app.
    Never,
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

/// The words that betray a crawler where they name a product.
const CRAWLER_WORDS: [&str; 4] = ["bot", "crawler", "spider", "scraper"];

/// Words that name a phone's platform: an e-mail address in such a header is its user's
/// account (`(Android)(15)(someone@gmail.com)`), not a crawler operator's contact. Looked for
/// only in a header with an address (rare), so that they never hide a crawler word from the
/// scan (`ios` would hide `spider` in `iospider`).
const MOBILE_WORDS: [&str; 4] = ["android", "iphone", "ipad", "ios"];

/// Whether a whole run of the header is one of the [`MOBILE_WORDS`].
fn names_a_phone(header: &[u8]) -> bool {
    header.split(|&b| !is_token_byte(b)).any(|run| {
        MOBILE_WORDS
            .iter()
            .any(|word| run.eq_ignore_ascii_case(word.as_bytes()))
    })
}

/// What makes a header with no known token a crawler's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    /// A crawler word naming a product (`FooBot/1.0`, `my-web-crawler`).
    Word,
    /// A URL in a `compatible` comment (`(compatible; Name/1.0; +https://example.com/)`), as
    /// crawlers give for their operator.
    Url,
    /// An e-mail address (`crawler@example.com`), as crawlers give for their operator.
    Email,
}

impl Signal {
    /// What the signal is, for explanations.
    pub fn describe(self) -> &'static str {
        match self {
            Signal::Word => "a crawler word (bot, crawler, spider, scraper) naming a product",
            Signal::Url => "a URL in a `compatible` comment",
            Signal::Email => "an e-mail address",
        }
    }
}

/// What the classifier made of a User-Agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity<'a> {
    /// A known crawler: the most specific (longest) known name in the header, and its index
    /// in [`Classifier::agents`].
    Crawler {
        /// Position in [`Classifier::agents`].
        index: usize,
        /// The crawler.
        agent: &'a KnownAgent,
    },
    /// No known token, but a crawler signal: follows `*`.
    Unnamed,
    /// Anything else: a person's browser or app. Never blocked, never counted as a violation.
    Person,
}

/// How many places that may hold a signal one scan remembers; a header with more is scanned
/// again for signals alone, if they matter.
const MAX_CANDIDATES: usize = 8;

/// What one pattern of the automaton stands for.
#[derive(Debug, Clone)]
struct Pattern {
    /// The agent whose token it is (pattern `i` is `agents[i]`), if any.
    agent: Option<usize>,
    /// Offsets and lengths of the crawler words inside it.
    words: Box<[(usize, usize)]>,
    /// `://` or `@`.
    mark: Option<Mark>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Scheme,
    At,
}

/// Classifies User-Agent headers against a fixed set of known tokens.
#[derive(Debug, Clone)]
pub struct Classifier {
    agents: Vec<KnownAgent>,
    /// The tokens (pattern `i` is `agents[i]`), then the crawler words, `://` and
    /// `@` that are not tokens; leftmost-longest, so that one plain scan finds every
    /// whole-token match and, nearly always, every signal (see [`Classifier::classify`]).
    automaton: AhoCorasick,
    patterns: Vec<Pattern>,
    /// The signals alone, for the rare header where the first scan cannot tell.
    signals: AhoCorasick,
    signal_patterns: Vec<Pattern>,
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
    /// The automaton could not be built (too many or too long tokens).
    #[error("cannot build the User-Agent automaton: {0}")]
    Build(#[from] aho_corasick::BuildError),
}

fn word_offsets(text: &str) -> Box<[(usize, usize)]> {
    let mut found = Vec::new();
    for word in CRAWLER_WORDS {
        let mut from = 0;
        while let Some(at) = text.get(from..).and_then(|rest| rest.find(word)) {
            found.push((from + at, word.len()));
            from += at + 1;
        }
    }
    found.into_boxed_slice()
}

fn pattern_of(text: &str, agent: Option<usize>) -> Pattern {
    Pattern {
        agent,
        words: word_offsets(text),
        mark: match text {
            "://" => Some(Mark::Scheme),
            "@" => Some(Mark::At),
            _ => None,
        },
    }
}

fn build(kind: MatchKind, patterns: &[String]) -> Result<AhoCorasick, aho_corasick::BuildError> {
    // Full DFAs: the fastest searches, and a few thousand short tokens keep them small.
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(kind)
        .kind(Some(AhoCorasickKind::DFA))
        .prefilter(false)
        .build(patterns)
}

/// The signal-only patterns, in pattern order.
fn signal_texts() -> impl Iterator<Item = &'static str> {
    CRAWLER_WORDS.into_iter().chain(["://", "@"])
}

/// Where the header's parts are, found before the scan.
#[derive(Debug, Clone, Copy)]
struct Shape {
    /// Where the first product starts (after leading white space).
    first: usize,
    /// The platform comment of a `Mozilla/…` header (see [`platform_comment`]).
    platform: Option<(usize, usize)>,
}

/// Where the platform comment of a `Mozilla/x.y (…)` header whose first product starts at
/// `first` opens and closes: the comment right after the version, unless it is a crawler's
/// `(compatible; Googlebot/2.1; …)` (Internet Explorer's own is `(compatible; MSIE 8.0; …)`).
fn platform_comment(header: &[u8], first: usize) -> Option<(usize, usize)> {
    let rest = &header[first..];
    if !starts_with_ignore_case(rest, b"mozilla/") {
        return None;
    }
    let after_version = rest[8..]
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'.' || *b == b' '))?;
    let open = first + 8 + after_version;
    if header.get(open) != Some(&b'(') {
        return None;
    }
    let close = header[open..]
        .iter()
        .position(|&b| b == b')')
        .map_or(header.len(), |end| open + end);
    let inside = &header[open + 1..close];
    let crawlers = starts_with_ignore_case(trim_start(inside), b"compatible")
        && !contains_ignore_case(inside, b"msie");
    (!crawlers).then_some((open, close))
}

impl Shape {
    fn of(header: &[u8]) -> Shape {
        let first = header
            .iter()
            .position(|b| !matches!(b, b' ' | b'\t'))
            .unwrap_or(header.len());
        Shape {
            first,
            platform: platform_comment(header, first),
        }
    }

    /// Whether `header[start..end]` names a product (see [`Matching::Product`]).
    fn names_a_product(&self, header: &[u8], start: usize, end: usize) -> bool {
        if self.in_platform(start) {
            return false;
        }
        if start == self.first || header.get(end) == Some(&b'/') {
            return true;
        }
        // The last product of the header, outside any comment: `… Safari/537.36 Hardenize`.
        let last = header[end..].iter().all(|&b| b == b' ' || b == b';');
        if last && depth(&header[..start]) == 0 {
            return true;
        }
        // An item of a `compatible` comment: `(compatible; Name; …)`.
        let Some(open) = header[..start].iter().rposition(|&b| b == b'(') else {
            return false;
        };
        let inside = &header[open + 1..start];
        let before = inside.iter().rposition(|&b| b != b' ');
        let after = header[end..].iter().find(|&&b| b != b' ');
        before.is_some_and(|at| inside[at] == b';')
            && after.is_none_or(|b| matches!(b, b';' | b')' | b'+' | b','))
            && self.in_compatible_comment(header, start)
    }

    /// Whether `header[at]` is inside a comment that opens with `compatible` (and is not a
    /// browser's platform comment).
    fn in_compatible_comment(&self, header: &[u8], at: usize) -> bool {
        let Some(open) = header[..at].iter().rposition(|&b| b == b'(') else {
            return false;
        };
        let inside = &header[open + 1..at];
        !inside.contains(&b')')
            && starts_with_ignore_case(trim_start(inside), b"compatible")
            && !self.in_platform(at)
    }

    fn in_platform(&self, at: usize) -> bool {
        self.platform
            .is_some_and(|(open, close)| at > open && at < close)
    }
}

/// How many comments are open at the end of `text`.
fn depth(text: &[u8]) -> usize {
    text.iter().fold(0usize, |depth, &b| match b {
        b'(' => depth + 1,
        b')' => depth.saturating_sub(1),
        _ => depth,
    })
}

fn starts_with_ignore_case(text: &[u8], prefix: &[u8]) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

fn contains_ignore_case(text: &[u8], needle: &[u8]) -> bool {
    text.windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle))
}

fn trim_start(text: &[u8]) -> &[u8] {
    let start = text.iter().position(|&b| b != b' ').unwrap_or(text.len());
    &text[start..]
}

/// The signals a scan has seen so far.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    word: bool,
    url: bool,
    email: bool,
}

impl Seen {
    fn signal(&self, header: &[u8]) -> Option<Signal> {
        if self.word {
            Some(Signal::Word)
        } else if self.url {
            Some(Signal::Url)
        } else if self.email && !names_a_phone(header) {
            Some(Signal::Email)
        } else {
            None
        }
    }

    /// Records what a match of `pattern` at `header[start..]` shows.
    fn add(&mut self, pattern: &Pattern, header: &[u8], shape: &Shape, start: usize) {
        for &(offset, len) in pattern.words.iter() {
            self.word |= word_counts(header, shape, start + offset, start + offset + len);
        }
        match pattern.mark {
            Some(Mark::Scheme) => self.url |= url_at(header, shape, start),
            Some(Mark::At) => self.email |= email_at(header, shape, start),
            None => {}
        }
    }
}

/// Whether `header[start..end]` is a whole run of token bytes.
fn is_whole(header: &[u8], start: usize, end: usize) -> bool {
    (start == 0 || !is_token_byte(header[start - 1]))
        && header.get(end).is_none_or(|&b| !is_token_byte(b))
}

/// A crawler word at `header[start..end]` names a product when it begins or ends a word (a
/// neighbour that is not a letter: `FooBot`, `Bot-Name`, `web-crawler`, not `OrangeBotswana`),
/// and, inside a browser's platform comment, only when its product has a version or is a whole
/// item of the comment (`Yahoo-MMCrawler/4.0`, `; MSIECrawler)`; not the phones `Cubot X50` and
/// `Spider 8 Build/O11019`).
fn word_counts(header: &[u8], shape: &Shape, start: usize, end: usize) -> bool {
    let begins = start == 0 || !header[start - 1].is_ascii_alphabetic();
    let ends = header.get(end).is_none_or(|b| !b.is_ascii_alphabetic());
    if !(begins || ends) {
        return false;
    }
    if !shape.in_platform(start) {
        return true;
    }
    let product_end = header[end..]
        .iter()
        .position(|&b| !(is_token_byte(b) || b.is_ascii_digit()))
        .map_or(header.len(), |n| end + n);
    let after = header[product_end..].iter().find(|&&b| b != b' ');
    header.get(product_end) == Some(&b'/') || matches!(after, Some(b';' | b')'))
}

/// A URL: `http://` or `https://` whose `://` is at `at`, inside a `compatible` comment, as
/// crawlers give their operator's page (`(compatible; Name/1.0; +http://…)`). Apps put their
/// home page in their headers too (`gPodder/3.7.0 (+http://gpodder.org/)`), so a URL elsewhere
/// is no signal.
fn url_at(header: &[u8], shape: &Shape, at: usize) -> bool {
    let before = &header[..at];
    let scheme = if before.len() >= 5 && before[before.len() - 5..].eq_ignore_ascii_case(b"https") {
        5
    } else if before.len() >= 4 && before[before.len() - 4..].eq_ignore_ascii_case(b"http") {
        4
    } else {
        return false;
    };
    let start = at - scheme;
    start > shape.first
        && (start == 0 || !header[start - 1].is_ascii_alphanumeric())
        && !shape.in_platform(at)
        && shape.in_compatible_comment(header, start)
}

/// An e-mail address whose `@` is at `at`: a local part before it, a dotted domain after it,
/// not inside a browser's platform comment.
fn email_at(header: &[u8], shape: &Shape, at: usize) -> bool {
    let local = at > 0 && header[at - 1].is_ascii_alphanumeric() && !shape.in_platform(at);
    if !local {
        return false;
    }
    let domain = &header[at + 1..];
    let len = domain
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'-' || b == b'.'))
        .unwrap_or(domain.len());
    let domain = &domain[..len];
    match domain.iter().position(|&b| b == b'.') {
        Some(dot) => dot > 0 && domain.get(dot + 1).is_some_and(|b| b.is_ascii_alphabetic()),
        None => false,
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
        // A signal that is also a token is found as the token, which holds it.
        let texts: Vec<String> = unique
            .iter()
            .map(|agent| agent.token.to_ascii_lowercase())
            .chain(
                signal_texts()
                    .filter(|text| !seen.contains(*text))
                    .map(str::to_owned),
            )
            .collect();
        let patterns = texts
            .iter()
            .enumerate()
            .map(|(index, text)| pattern_of(text, (index < unique.len()).then_some(index)))
            .collect();
        let signal_list: Vec<String> = signal_texts().map(str::to_owned).collect();
        let signal_patterns = signal_list
            .iter()
            .map(|text| pattern_of(text, None))
            .collect();
        Ok(Classifier {
            automaton: build(MatchKind::LeftmostLongest, &texts)?,
            patterns,
            signals: build(MatchKind::LeftmostFirst, &signal_list)?,
            signal_patterns,
            agents: unique,
        })
    }

    /// The known agents, in the order given (without duplicates).
    pub fn agents(&self) -> &[KnownAgent] {
        &self.agents
    }

    /// Classifies one User-Agent header value (bytes: headers need not be UTF-8).
    ///
    /// One non-overlapping leftmost-longest scan finds every whole-token match: such a match
    /// starts where a run of `[A-Za-z_-]` starts, no match can straddle that start (token
    /// patterns hold no other character, and `://` and `@` hold none of these), and the longest
    /// pattern matching there is the token that spans the whole run, if any does. Matches that
    /// stop inside a run are not whole and are skipped.
    ///
    /// The same scan finds where signals may be; they are weighed only when they matter (no
    /// known token decides), and looked for again, alone, only when a token match that stops
    /// inside a run may hide a crawler word (`xbo` in `xbot`) or the header holds more such
    /// places than one scan remembers.
    pub fn classify(&self, user_agent: &[u8]) -> Identity<'_> {
        self.classify_why(user_agent).0
    }

    /// [`Classifier::classify`], and the signal that made an unnamed crawler (or let a site's
    /// token count).
    pub fn classify_why(&self, user_agent: &[u8]) -> (Identity<'_>, Option<Signal>) {
        let shape = Shape::of(user_agent);
        let mut best: Option<(usize, usize)> = None;
        let mut best_with_signal: Option<(usize, usize)> = None;
        // Where signals may be, weighed only if they turn out to matter (no known token decides).
        let mut candidates = [(0usize, 0usize); MAX_CANDIDATES];
        let mut count = 0;
        let mut rescan = false;
        for found in self.automaton.find_iter(user_agent) {
            let Some(pattern) = self.patterns.get(found.pattern().as_usize()) else {
                continue;
            };
            let (start, end) = (found.start(), found.end());
            if pattern.mark.is_some() || !pattern.words.is_empty() {
                match candidates.get_mut(count) {
                    Some(slot) => {
                        *slot = (found.pattern().as_usize(), start);
                        count += 1;
                    }
                    None => rescan = true,
                }
            }
            let Some(index) = pattern.agent else {
                continue;
            };
            if !is_whole(user_agent, start, end) {
                // A match that stops inside a run may hide a crawler word (`xbo` in `xbot`).
                rescan = true;
                continue;
            }
            let Some(agent) = self.agents.get(index) else {
                continue;
            };
            if !tail_follows(user_agent, end, agent.tail()) {
                continue;
            }
            let slot = match agent.matching {
                Matching::Anywhere => &mut best,
                Matching::FirstProduct if start == shape.first => &mut best,
                Matching::Product
                    if shape.names_a_product(user_agent, start, end + agent.tail().len()) =>
                {
                    &mut best
                }
                Matching::WithSignal => &mut best_with_signal,
                Matching::FirstProduct | Matching::Product | Matching::Never => continue,
            };
            let longer = slot.is_none_or(|(_, len)| agent.name.len() > len);
            if longer {
                *slot = Some((index, agent.name.len()));
            }
        }
        let signal_matters = best_with_signal
            .is_some_and(|(_, own)| best.is_none_or(|(_, len)| own > len))
            || best.is_none();
        if !signal_matters {
            return (self.crawler(best), None);
        }
        let seen = if rescan {
            self.rescan(user_agent, &shape)
        } else {
            let mut seen = Seen::default();
            for &(pattern, start) in &candidates[..count] {
                if let Some(pattern) = self.patterns.get(pattern) {
                    seen.add(pattern, user_agent, &shape, start);
                }
            }
            seen
        };
        let signal = seen.signal(user_agent);
        match (signal, best_with_signal) {
            (Some(signal), Some(own)) if best.is_none_or(|(_, len)| own.1 > len) => {
                (self.crawler(Some(own)), Some(signal))
            }
            _ if best.is_some() => (self.crawler(best), None),
            (Some(signal), _) => (Identity::Unnamed, Some(signal)),
            (None, _) => (Identity::Person, None),
        }
    }

    fn crawler(&self, best: Option<(usize, usize)>) -> Identity<'_> {
        match best.and_then(|(index, _)| self.agents.get(index).map(|agent| (index, agent))) {
            Some((index, agent)) => Identity::Crawler { index, agent },
            None => Identity::Person,
        }
    }

    /// The signals of a header, found by the signal automaton alone.
    fn rescan(&self, user_agent: &[u8], shape: &Shape) -> Seen {
        let mut seen = Seen::default();
        for found in self.signals.find_iter(user_agent) {
            if let Some(pattern) = self.signal_patterns.get(found.pattern().as_usize()) {
                seen.add(pattern, user_agent, shape, found.start());
            }
        }
        seen
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

    fn token(identity: Identity<'_>) -> Option<&str> {
        match identity {
            Identity::Crawler { agent, .. } => Some(agent.token.as_str()),
            _ => None,
        }
    }

    #[test]
    fn whole_tokens_only_case_insensitive() {
        let c = classifier();
        let ua = |s: &str| token(c.classify(s.as_bytes()));
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

    /// The obvious reading of the rules: split the header into runs of `[A-Za-z_-]`, keep the
    /// runs that are known tokens where their [`Matching`] lets them count, take the longest
    /// (the first of equals); look for signals by walking every byte.
    fn naive<'a>(c: &'a Classifier, ua: &[u8]) -> (Option<&'a str>, Option<Signal>) {
        let shape = Shape::of(ua);
        let lower = ua.to_ascii_lowercase();
        let mut seen = Seen::default();
        for at in 0..ua.len() {
            for word in CRAWLER_WORDS {
                if lower[at..].starts_with(word.as_bytes()) {
                    seen.word |= word_counts(ua, &shape, at, at + word.len());
                }
            }
            if lower[at..].starts_with(b"://") {
                seen.url |= url_at(ua, &shape, at);
            }
            if ua[at] == b'@' {
                seen.email |= email_at(ua, &shape, at);
            }
        }
        let signal = seen.signal(ua);
        let mut best: Option<&KnownAgent> = None;
        let mut start = 0;
        for run in ua.split(|&b| !is_token_byte(b)) {
            let end = start + run.len();
            let agent = c
                .agents()
                .iter()
                .find(|a| !run.is_empty() && a.token.as_bytes().eq_ignore_ascii_case(run));
            if let Some(agent) = agent {
                let counts = tail_follows(ua, end, agent.tail())
                    && match agent.matching {
                        Matching::Anywhere => true,
                        Matching::FirstProduct => start == shape.first,
                        Matching::Product => {
                            shape.names_a_product(ua, start, end + agent.tail().len())
                        }
                        Matching::WithSignal => signal.is_some(),
                        Matching::Never => false,
                    };
                if counts && best.is_none_or(|b| agent.name.len() > b.name.len()) {
                    best = Some(agent);
                }
            }
            start = end + 1;
        }
        (best.map(|agent| agent.token.as_str()), signal)
    }

    proptest::proptest! {
        #[test]
        fn one_scan_finds_what_splitting_into_runs_finds(
            tokens in proptest::collection::vec(("[abotAB_-]{1,4}", 0..5usize), 1..8),
            pieces in proptest::collection::vec(proptest::sample::select(
                vec!["a", "b", "o", "t", "A", "T", "_", "-", " ", "/", ";", "(", ")", "1", "bot", "BoT", "ab",
                     "xbo", "Mozilla/5.0 (", "compatible", "http", "://", "@", "x.com", "ios", "Android"]
            ), 0..20),
        ) {
            let ua = pieces.concat().into_bytes();
            let matchings = [Matching::Anywhere, Matching::FirstProduct, Matching::WithSignal, Matching::Never, Matching::Product];
            let agents = tokens.iter().map(|(t, m)| KnownAgent { matching: matchings[*m], ..known(t, Category::Other) });
            let c = Classifier::new(agents).unwrap();
            let (expected, signal) = naive(&c, &ua);
            let (identity, _) = c.classify_why(&ua);
            let found = token(identity);
            // Equal-length tokens may be found in another order: compare lengths then.
            proptest::prop_assert_eq!(found.map(str::len), expected.map(str::len), "{:?}", String::from_utf8_lossy(&ua));
            if let Some(found) = found {
                let whole = ua.split(|&b| !is_token_byte(b)).any(|run| run.eq_ignore_ascii_case(found.as_bytes()));
                proptest::prop_assert!(whole);
            }
            let unnamed = identity == Identity::Unnamed;
            proptest::prop_assert_eq!(unnamed, expected.is_none() && signal.is_some(), "{:?}", String::from_utf8_lossy(&ua));
        }
    }

    #[test]
    fn a_partial_match_does_not_hide_a_whole_one() {
        let c = Classifier::new([
            known("abc", Category::Other),
            known("bcd", Category::Other),
            known("cd", Category::Other),
        ])
        .unwrap();
        assert_eq!(token(c.classify(b"abcd cd")), Some("cd"));
        assert_eq!(token(c.classify(b"xabc abc-")), None);
        assert_eq!(token(c.classify(b"(abc)bcd;")), Some("abc"));
    }

    #[test]
    fn the_longest_known_token_wins() {
        let c = classifier();
        let both = c.classify(b"Googlebot-Image/1.0 (compatible; Googlebot/2.1)");
        assert_eq!(token(both), Some("Googlebot-Image"));
    }

    #[test]
    fn unnamed_crawlers_and_people() {
        let c = classifier();
        assert_eq!(c.classify(b"FooBot/1.0"), Identity::Unnamed);
        assert_eq!(c.classify(b"my-web-CRAWLER"), Identity::Unnamed);
        assert_eq!(c.classify(b"SpiderMan scraper"), Identity::Unnamed);
        assert_eq!(
            c.classify(b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
            Identity::Person
        );
        assert_eq!(c.classify(b""), Identity::Person);
        assert_eq!(c.classify(b"\xff\xfe bot"), Identity::Unnamed);
        // A known token that is not whole still leaves its crawler word.
        assert_eq!(c.classify(b"XGooglebot/1.0"), Identity::Unnamed);
        // A token match that stops inside a run, inside a crawler word.
        let c = Classifier::new([known("xbo", Category::Other)]).unwrap();
        assert_eq!(c.classify(b"xbot/1.0"), Identity::Unnamed);
        assert_eq!(c.classify(b"xboa/1.0"), Identity::Person);
        // A word that is also a token is that token.
        let c = Classifier::new([known("Spider", Category::Other)]).unwrap();
        assert_eq!(token(c.classify(b"spider/2")), Some("Spider"));
        assert_eq!(c.classify(b"spiders/2"), Identity::Unnamed);
    }

    #[test]
    fn crawler_words_count_where_they_name_a_product() {
        let c = classifier();
        let unnamed = |ua: &str| c.classify_why(ua.as_bytes());
        // Phones whose model holds a crawler word are people.
        for phone in [
            "Mozilla/5.0 (Linux; Android 14; Cubot X50) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36",
            "Mozilla/5.0 (Linux; U; Android 4.2.2; de-de; CUBOT C10+ Build/JDQ39) AppleWebKit/534.30 (KHTML, like Gecko) Version/4.0 Mobile Safari/534.30",
            "Mozilla/5.0 (Linux; Android 8.1.0; Spider 8 Build/O11019) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/70.0.3538.110 Safari/537.36",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 11_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15G77 [FBAN/FBIOS;FBCR/OrangeBotswana;FBID/phone]",
        ] {
            assert_eq!(unnamed(phone), (Identity::Person, None), "{phone}");
        }
        // A product with a version inside the platform comment is one.
        assert_eq!(
            unnamed(
                "Mozilla/5.0 (Yahoo-MMCrawler/4.0; mailto:vertical-crawl-support@yahoo-inc.com)"
            ),
            (Identity::Unnamed, Some(Signal::Word))
        );
        // A `compatible` comment is a crawler's, not a platform's.
        assert_eq!(
            unnamed("Mozilla/5.0 (compatible; Exabot-Thumbnails)").1,
            Some(Signal::Word)
        );
        assert_eq!(unnamed("MJ12bot/v1.4.8").1, Some(Signal::Word));
        assert_eq!(unnamed("Abbott Labs App/1.0"), (Identity::Person, None));
    }

    #[test]
    fn urls_and_addresses_are_crawler_signals_outside_a_platform_comment() {
        let c = classifier();
        let why = |ua: &str| c.classify_why(ua.as_bytes());
        assert_eq!(
            why("Mozilla/5.0 (compatible; Plukkie/1.6; http://www.plukkie.com/robots.html)"),
            (Identity::Unnamed, Some(Signal::Url))
        );
        assert_eq!(
            why("ichiro/2.0 (ichiro@nttr.co.jp)"),
            (Identity::Unnamed, Some(Signal::Email))
        );
        for person in [
            // A URL in a modified phone's platform comment, a phone's profile URL.
            "Mozilla/5.0 (Linux; U; Android WP7; de-de; GT-S5830 - Forum: http://forumgalaxyace.fora24.pl Build/GRWK74) AppleWebKit/533.1 (KHTML, like Gecko) Version/4.0 Mobile Safari/533.1",
            "Http://Atamg.wup.ru/SAMSUNG-GT-S5233T/S5233TXEJF1 SHP/VPP/R5 Jasmine/0.8",
            // Apps that give their home page.
            "gPodder/3.7.0 (+http://gpodder.org/)",
            "Liferea/0.x.x (Linux; en_US.UTF-8; http://liferea.sf.net/)",
            // An app's header carrying its user's account.
            "(Android)(15)(someone@gmail.com)(HTC Desire C)(com.example.app)",
            "user@localhost",
        ] {
            assert_eq!(why(person), (Identity::Person, None), "{person}");
        }
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
        assert_eq!(c.classify(browser), Identity::Person);
        assert_eq!(
            c.classify(
                b"Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.4266; Pro)"
            ),
            Identity::Person
        );
        assert_eq!(token(c.classify(b"FooCrawler/1.0")), Some("FooCrawler"));
        assert_eq!(c.classify(b"BarAgent/2.0"), Identity::Person);
        assert_eq!(
            token(
                c.classify(b"Mozilla/5.0 (compatible; BarAgent/2.0; +https://bar.example/agent)")
            ),
            Some("BarAgent")
        );
        // Mozilla never names a crawler, even one with a signal: an unnamed crawler follows `*`.
        assert_eq!(
            c.classify(b"Mozilla/5.0 (compatible; NewBot/1.0; +http://new.example)"),
            Identity::Unnamed
        );
        // A site token longer than a catalog token in the same header wins.
        assert_eq!(
            token(c.classify(b"GPTBot/1.0 FooCrawler/2.0")),
            Some("FooCrawler")
        );
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
        assert_eq!(token(c.classify(b"Java/17.0.6")), Some("Java"));
        assert_eq!(token(c.classify(b"  Java1.4.0")), Some("Java"));
        assert_eq!(
            c.classify(
                b"Mozilla/5.0 (Java; U; en-us; nokia201) UCBrowser8.3.0.154/70/355/UCWEB Mobile"
            ),
            Identity::Person
        );
        assert_eq!(
            token(c.classify(b"Mozilla/5.0 (compatible; MJ12bot/v1.4.8; http://mj12bot.com/)")),
            Some("MJ")
        );
        assert_eq!(
            c.classify(b"Nokia6152/2.0 (MJ100V0600.nep) UP.Browser/6.2.3.8 MMP/2.0"),
            Identity::Person
        );
        assert_eq!(c.classify(b"MJ12botx/1"), Identity::Unnamed);
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
    }
}
