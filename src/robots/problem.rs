//! What the parser could not use, or read leniently: one [`Problem`] per line that needs a look.

use serde::ser::{Serialize, SerializeStruct, Serializer};
use std::fmt;

/// A line of robots.txt that was not understood, or was understood only by a leniency.
///
/// The parser never refuses a file: it lists what it skipped or reinterpreted and goes on.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The 1-based line number.
    pub line: u32,
    /// The line as written (lossily decoded, cut at 200 characters).
    pub text: String,
    /// What is wrong with it.
    pub kind: ProblemKind,
}

/// What is wrong with a line. Its `Display` is the message a person reads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProblemKind {
    /// A line that is neither blank, a comment, nor `key: value`.
    #[error("no colon")]
    NoColon,
    /// `disallow /x`: two words and no colon, read as `disallow: /x` (as Google does).
    #[error("no colon; read as `{key}: {value}`")]
    NoColonTwoWords {
        /// The directive as read.
        key: String,
        /// The value as read.
        value: String,
    },
    /// A misspelled directive that is read as the one it was meant to be.
    #[error("`{found}` read as `{meant}`")]
    Misspelled {
        /// The directive as written.
        found: String,
        /// The directive it is read as.
        meant: &'static str,
    },
    /// A directive nobody defined.
    #[error("unknown directive `{0}`")]
    UnknownDirective(String),
    /// A directive some crawlers know but RFC 9309 does not define (`noindex`, `host`, ...).
    #[error("`{0}` is not part of RFC 9309; ignored")]
    Unsupported(String),
    /// An `allow` or `disallow` whose value starts with neither `/` nor `*`.
    #[error("path does not start with / or *")]
    BadPath,
    /// An `allow`, `disallow`, `crawl-delay`, `content-usage` or `content-signal` before the
    /// first `user-agent`.
    #[error("rule before any user-agent is ignored")]
    RuleOutsideGroup,
    /// `user-agent: Googlebot/2.1`: the value is cut at the first character outside `[A-Za-z_-]`.
    #[error("user-agent `{found}` read as `{token}`")]
    AgentTrimmed {
        /// The value as written.
        found: String,
        /// The product token it is read as.
        token: String,
    },
    /// `user-agent: * something`: read as `*`.
    #[error("user-agent `{0}` read as `*`")]
    StarWithSuffix(String),
    /// A user-agent value that starts with no product-token character; it names no crawler.
    #[error("user-agent `{0}` names no product token")]
    NoToken(String),
    /// A crawl-delay that is not a non-negative number of seconds.
    #[error("crawl-delay `{0}` is not a number of seconds")]
    BadCrawlDelay(String),
    /// A crawl-delay longer than a day ([`super::parse::MAX_CRAWL_DELAY_SECONDS`]): read as a day.
    #[error("crawl-delay `{0}` is more than a day; read as one day")]
    CrawlDelayTooLong(String),
    /// A second crawl-delay in one group; the larger one is kept.
    #[error("group already has a crawl-delay; the larger is kept")]
    DuplicateCrawlDelay,
    /// A sitemap that is not an absolute `http(s)://` URL (it is kept, but crawlers skip it).
    #[error("sitemap `{0}` is not an absolute http(s) URL")]
    RelativeSitemap(String),
    /// A directive with an empty value where a value is needed.
    #[error("`{0}` has no value")]
    EmptyValue(String),
    /// A line that is not valid UTF-8 (RFC 9309 requires UTF-8); it is still parsed.
    #[error("line is not valid UTF-8")]
    InvalidUtf8,
    /// The file is larger than the parse limit; the rest, from this line on, is ignored.
    #[error("content past the parse limit of {limit} bytes is ignored ({ignored} bytes)")]
    PastLimit {
        /// The parse limit in bytes.
        limit: usize,
        /// How many bytes were not parsed.
        ignored: usize,
    },
    /// A pattern that could not be compiled within the matcher's size limits; the rule is ignored.
    #[error("pattern is too large to compile; rule ignored")]
    TooComplex,
    /// A `Content-Usage` or `Content-Signal` statement that is not a structured-field
    /// dictionary (RFC 9651): it states nothing (aipref vocab §6.5).
    #[error("`{directive}` value is not a structured-field dictionary ({error}); no preference is read from it")]
    PreferenceSyntax {
        /// `Content-Usage` or `Content-Signal`.
        directive: &'static str,
        /// What the structured-field parser says, with a hint.
        error: String,
    },
    /// A key the line's vocabulary does not define: ignored (vocab §6.4).
    #[error("`{directive}` key `{key}` is not known; ignored{}", hint_text(.hint))]
    PreferenceUnknownKey {
        /// `Content-Usage` or `Content-Signal`.
        directive: &'static str,
        /// The key as written.
        key: String,
        /// What was probably meant.
        hint: Option<&'static str>,
    },
    /// A known key whose value is not one of its tokens: read as no preference.
    #[error("`{directive}` `{key}` has {value}: it takes {expected}; read as no preference")]
    PreferenceBadValue {
        /// `Content-Usage` or `Content-Signal`.
        directive: &'static str,
        /// The key.
        key: String,
        /// The value, described.
        value: String,
        /// The values it takes.
        expected: &'static str,
    },
    /// A key given twice in one statement: the last one counts (RFC 9651 §4.2.2).
    #[error("`{key}` is given twice in `{directive}`; the last one counts")]
    PreferenceDuplicateKey {
        /// `Content-Usage` or `Content-Signal`.
        directive: &'static str,
        /// The key.
        key: String,
    },
    /// A `Content-Usage` or `Content-Signal` line with a path and nothing else.
    #[error("`{0}` gives no preference")]
    PreferenceEmpty(&'static str),
}

/// A hint in parentheses, or nothing.
fn hint_text(hint: &Option<&'static str>) -> String {
    hint.map(|hint| format!(" ({hint})")).unwrap_or_default()
}

impl ProblemKind {
    /// A stable name for the kind of problem, for machines (`lint --json`, metrics).
    pub fn code(&self) -> &'static str {
        match self {
            ProblemKind::NoColon => "no_colon",
            ProblemKind::NoColonTwoWords { .. } => "no_colon_two_words",
            ProblemKind::Misspelled { .. } => "misspelled",
            ProblemKind::UnknownDirective(_) => "unknown_directive",
            ProblemKind::Unsupported(_) => "unsupported",
            ProblemKind::BadPath => "bad_path",
            ProblemKind::RuleOutsideGroup => "rule_outside_group",
            ProblemKind::AgentTrimmed { .. } => "agent_trimmed",
            ProblemKind::StarWithSuffix(_) => "star_with_suffix",
            ProblemKind::NoToken(_) => "no_token",
            ProblemKind::BadCrawlDelay(_) => "bad_crawl_delay",
            ProblemKind::CrawlDelayTooLong(_) => "crawl_delay_too_long",
            ProblemKind::DuplicateCrawlDelay => "duplicate_crawl_delay",
            ProblemKind::RelativeSitemap(_) => "relative_sitemap",
            ProblemKind::EmptyValue(_) => "empty_value",
            ProblemKind::InvalidUtf8 => "invalid_utf8",
            ProblemKind::PastLimit { .. } => "past_limit",
            ProblemKind::TooComplex => "too_complex",
            ProblemKind::PreferenceSyntax { .. } => "preference_syntax",
            ProblemKind::PreferenceUnknownKey { .. } => "preference_unknown_key",
            ProblemKind::PreferenceBadValue { .. } => "preference_bad_value",
            ProblemKind::PreferenceDuplicateKey { .. } => "preference_duplicate_key",
            ProblemKind::PreferenceEmpty(_) => "preference_empty",
        }
    }
}

/// `{"line": 3, "text": "Noindex: /b", "code": "unsupported", "message": "..."}`
impl Serialize for Problem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Problem", 4)?;
        out.serialize_field("line", &self.line)?;
        out.serialize_field("text", &self.text)?;
        out.serialize_field("code", self.kind.code())?;
        out.serialize_field("message", &self.kind.to_string())?;
        out.end()
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {} ({})", self.line, self.kind, self.text)
    }
}

/// The longest excerpt of a line that a problem keeps, so that a 1 MB line costs 200 bytes.
const EXCERPT_CHARS: usize = 200;

/// The line as a problem quotes it: lossily decoded and cut.
pub(crate) fn excerpt(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    match text.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.into_owned(),
    }
}
