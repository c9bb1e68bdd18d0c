//! Who is asking: a User-Agent header → a known crawler, an unnamed crawler, or a person.
//!
//! RFC 9309 identifies a crawler by its product token, and the tokens in a User-Agent header are
//! its runs of `[A-Za-z_-]`. A known token matches only a whole run, case-insensitively:
//! `Googlebot` is not found inside `Googlebot-Image`, nor `LCC` inside `SLCC1`. One Aho-Corasick
//! automaton holds every known token (and the words that betray an unnamed crawler), so a header
//! is scanned once whatever the size of the catalog.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;

/// What a crawler is for; a bounded set, so that it can label metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Generic HTTP clients, tools and headless browsers.
    HttpLibrary,
    /// Security and internet-wide scanners.
    Scanner,
    /// Known, but none of the above.
    Other,
    /// Not in the catalog: named only by the site's robots.txt or configuration.
    Unlisted,
}

impl Category {
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
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A crawler the classifier knows by its product token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownAgent {
    /// The product token as its operator writes it (`GPTBot`).
    pub token: String,
    /// Who runs it, when known.
    pub operator: Option<String>,
    /// What it is for.
    pub category: Category,
}

impl KnownAgent {
    /// A token named only by a robots.txt or a configuration: operator unknown, `unlisted`.
    pub fn unlisted(token: &str) -> KnownAgent {
        KnownAgent {
            token: token.to_owned(),
            operator: None,
            category: Category::Unlisted,
        }
    }
}

/// The words that make a User-Agent with no known token an unnamed crawler.
const CRAWLER_WORDS: [&str; 4] = ["bot", "crawler", "spider", "scraper"];

/// What the classifier made of a User-Agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity<'a> {
    /// A known crawler: the most specific (longest) known token in the header, and its index
    /// in [`Classifier::agents`].
    Crawler {
        /// Position in [`Classifier::agents`].
        index: usize,
        /// The crawler.
        agent: &'a KnownAgent,
    },
    /// No known token, but the header says bot, crawler, spider or scraper: follows `*`.
    Unnamed,
    /// Anything else: a person's browser. Never blocked, never counted as a violation.
    Person,
}

/// Classifies User-Agent headers against a fixed set of known tokens.
#[derive(Debug, Clone)]
pub struct Classifier {
    agents: Vec<KnownAgent>,
    /// The tokens (pattern `i` is `agents[i]`), then the [`CRAWLER_WORDS`] that are not tokens;
    /// leftmost-longest, so that one plain scan finds every whole-token match and, nearly
    /// always, tells whether a crawler word occurs (see [`Classifier::classify`]).
    automaton: AhoCorasick,
    /// Per pattern: whether its text holds a crawler word.
    holds_word: Vec<bool>,
    /// [`CRAWLER_WORDS`] alone, for the rare header where the scan cannot tell.
    words: AhoCorasick,
}

/// Errors building a classifier.
#[derive(Debug, thiserror::Error)]
pub enum ClassifierError {
    /// A token that is not a product token.
    #[error("`{0}` is not a product token: use only letters, `-` and `_`")]
    BadToken(String),
    /// The automaton could not be built (too many or too long tokens).
    #[error("cannot build the User-Agent automaton: {0}")]
    Build(#[from] aho_corasick::BuildError),
}

fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'-' || byte == b'_'
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
            if agent.token.is_empty() || !agent.token.bytes().all(is_token_byte) {
                return Err(ClassifierError::BadToken(agent.token));
            }
            if seen.insert(agent.token.to_ascii_lowercase()) {
                unique.push(agent);
            }
        }
        // Full DFAs: the fastest searches, and a few hundred short tokens keep them small.
        let build = |kind| {
            let mut builder = AhoCorasickBuilder::new();
            builder
                .ascii_case_insensitive(true)
                .match_kind(kind)
                .kind(Some(AhoCorasickKind::DFA))
                .prefilter(false);
            builder
        };
        // A word that is also a token is found as the token, which holds it.
        let patterns: Vec<String> = unique
            .iter()
            .map(|agent| agent.token.to_ascii_lowercase())
            .chain(
                CRAWLER_WORDS
                    .into_iter()
                    .filter(|word| !seen.contains(*word))
                    .map(str::to_owned),
            )
            .collect();
        let holds_word = patterns
            .iter()
            .map(|pattern| CRAWLER_WORDS.iter().any(|word| pattern.contains(word)))
            .collect();
        let automaton = build(MatchKind::LeftmostLongest).build(&patterns)?;
        let words = build(MatchKind::LeftmostFirst).build(CRAWLER_WORDS)?;
        Ok(Classifier {
            agents: unique,
            automaton,
            holds_word,
            words,
        })
    }

    /// The known agents, in the order given (without duplicates).
    pub fn agents(&self) -> &[KnownAgent] {
        &self.agents
    }

    /// Classifies one User-Agent header value (bytes: headers need not be UTF-8).
    ///
    /// One non-overlapping leftmost-longest scan finds every whole-token match: such a match
    /// starts where a run of `[A-Za-z_-]` starts, no match can straddle that start (patterns
    /// hold no other character), and the longest pattern matching there is the token that spans
    /// the whole run, if any does (a word as long as the run would be that token). Matches that
    /// stop inside a run are not whole and are skipped.
    ///
    /// The same scan sees a crawler word unless a token match that stops inside a run ends
    /// inside the word (`xbo` in `xbot`); only then are the words looked for again, alone.
    pub fn classify(&self, user_agent: &[u8]) -> Identity<'_> {
        let mut best: Option<(usize, &KnownAgent)> = None;
        let mut word_seen = false;
        let mut partial_match = false;
        for found in self.automaton.find_iter(user_agent) {
            let index = found.pattern().as_usize();
            word_seen |= self.holds_word.get(index).copied().unwrap_or(false);
            let Some(agent) = self.agents.get(index) else {
                continue;
            };
            let whole_token = (found.start() == 0 || !is_token_byte(user_agent[found.start() - 1]))
                && user_agent
                    .get(found.end())
                    .is_none_or(|&b| !is_token_byte(b));
            if !whole_token {
                partial_match = true;
            } else if best.is_none_or(|(_, b)| agent.token.len() > b.token.len()) {
                best = Some((index, agent));
            }
        }
        match best {
            Some((index, agent)) => Identity::Crawler { index, agent },
            None if word_seen => Identity::Unnamed,
            None if partial_match && self.words.is_match(user_agent) => Identity::Unnamed,
            None => Identity::Person,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(token: &str, category: Category) -> KnownAgent {
        KnownAgent {
            token: token.into(),
            operator: None,
            category,
        }
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

    /// The obvious reading: split the header into runs of `[A-Za-z_-]`, keep the runs that are
    /// known tokens, take the longest (the first of equals).
    fn naive<'a>(c: &'a Classifier, ua: &[u8]) -> Option<&'a str> {
        let mut best: Option<&KnownAgent> = None;
        for run in ua.split(|&b| !is_token_byte(b)) {
            let agent = c
                .agents()
                .iter()
                .find(|a| a.token.as_bytes().eq_ignore_ascii_case(run));
            if let Some(agent) = agent {
                if best.is_none_or(|b| agent.token.len() > b.token.len()) {
                    best = Some(agent);
                }
            }
        }
        best.map(|agent| agent.token.as_str())
    }

    /// The obvious reading of "an unnamed crawler": no known token, and a crawler word anywhere.
    fn naive_unnamed(c: &Classifier, ua: &[u8]) -> bool {
        let lower = ua.to_ascii_lowercase();
        naive(c, ua).is_none()
            && CRAWLER_WORDS
                .iter()
                .any(|word| lower.windows(word.len()).any(|w| w == word.as_bytes()))
    }

    proptest::proptest! {
        #[test]
        fn one_scan_finds_what_splitting_into_runs_finds(
            tokens in proptest::collection::vec("[abotAB_-]{1,4}", 1..8),
            pieces in proptest::collection::vec(proptest::sample::select(
                vec!["a", "b", "o", "t", "A", "T", "_", "-", " ", "/", ";", "(", "1", "bot", "BoT", "ab", "xbo"]
            ), 0..20),
        ) {
            let ua = pieces.concat().into_bytes();
            let agents = tokens.iter().map(|t| known(t, Category::Other));
            let c = Classifier::new(agents).unwrap();
            let expected = naive(&c, &ua);
            let found = token(c.classify(&ua));
            // Equal-length tokens may be found in another order: compare lengths then.
            proptest::prop_assert_eq!(found.map(str::len), expected.map(str::len), "{:?}", String::from_utf8_lossy(&ua));
            if let Some(found) = found {
                let whole = ua.split(|&b| !is_token_byte(b)).any(|run| run.eq_ignore_ascii_case(found.as_bytes()));
                proptest::prop_assert!(whole);
            }
            let unnamed = c.classify(&ua) == Identity::Unnamed;
            proptest::prop_assert_eq!(unnamed, naive_unnamed(&c, &ua), "{:?}", String::from_utf8_lossy(&ua));
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
