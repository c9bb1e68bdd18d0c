//! The forgiving, line-numbered parser: bytes of robots.txt → groups, rules, sitemaps, problems.
//!
//! It follows RFC 9309 §2 for the grammar and the grouping, and reads what RFC 9309 leaves open
//! the way Google's parser does (common misspellings, `disallow /x` without a colon, user-agent
//! values cut at the first character outside a product token). Every leniency and every line it
//! cannot use becomes a [`Problem`]; it never refuses a file.

use super::preferences::{self, PreferenceForm, PreferenceRule};
use super::problem::{excerpt, Problem, ProblemKind};
use super::token::leading_token;
use serde::Serialize;

/// RFC 9309 §2.5: "The parsing limit MUST be at least 500 kibibytes". We default to 512 KiB.
pub const DEFAULT_MAX_BYTES: usize = 512 * 1024;

/// The longest crawl-delay read from a file: one day, RFC 9309's longest cache period. A larger
/// value is read as this, so that no arithmetic on a delay can overflow.
pub const MAX_CRAWL_DELAY_SECONDS: f64 = 86_400.0;

/// Whether a rule lets a crawler in or keeps it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleKind {
    /// `allow: pattern`
    Allow,
    /// `disallow: pattern`
    Disallow,
}

impl RuleKind {
    /// The directive as it is written in a file: `Allow` or `Disallow`.
    pub fn directive(self) -> &'static str {
        match self {
            RuleKind::Allow => "Allow",
            RuleKind::Disallow => "Disallow",
        }
    }
}

/// One `allow` or `disallow` line that is a rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    /// Allow or disallow.
    pub kind: RuleKind,
    /// The pattern as written in the file (lossily decoded if it was not UTF-8).
    pub pattern: String,
    /// The 1-based line number.
    pub line: u32,
}

/// A group: the user-agent lines that open it and the rules that follow them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The line of the group's first user-agent line.
    pub line: u32,
    /// The product tokens the group names, as written (without any trimmed suffix).
    pub agents: Vec<String>,
    /// Whether the group names `*`.
    pub star: bool,
    /// Indices into [`ParsedFile::rules`].
    pub rules: Vec<usize>,
    /// The group's crawl-delay in seconds (at most [`MAX_CRAWL_DELAY_SECONDS`]), if it gives one.
    pub crawl_delay: Option<f64>,
    /// Indices into [`ParsedFile::preferences`]: its `Content-Usage` and `Content-Signal` rules.
    pub preferences: Vec<usize>,
}

/// A sitemap line: file-wide, not tied to any group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sitemap {
    /// The URL as written.
    pub url: String,
    /// The 1-based line number.
    pub line: u32,
}

/// The whole file as the parser read it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ParsedFile {
    /// The groups, in file order.
    pub groups: Vec<Group>,
    /// Every rule of every group, in file order.
    pub rules: Vec<Rule>,
    /// The sitemap lines, in file order.
    pub sitemaps: Vec<Sitemap>,
    /// Every `Content-Usage` and `Content-Signal` rule of every group that states something,
    /// in file order.
    pub preferences: Vec<PreferenceRule>,
    /// The lines that were not understood or were read leniently, in file order.
    pub problems: Vec<Problem>,
    /// How many lines were parsed.
    pub lines: u32,
    /// How many bytes were parsed (after the byte order mark, up to the parse limit).
    pub bytes: usize,
}

/// The directives the parser knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Directive {
    UserAgent,
    Allow,
    Disallow,
    Sitemap,
    CrawlDelay,
    /// A content-use preference: `content-usage` (IETF aipref) or `content-signal`.
    Preference(PreferenceForm),
}

/// Spellings read as a directive, with the name they are read as when they are misspellings.
/// The misspellings are those Google's parser accepts.
const SPELLINGS: &[(&str, Directive, Option<&str>)] = &[
    ("user-agent", Directive::UserAgent, None),
    ("useragent", Directive::UserAgent, Some("user-agent")),
    ("user agent", Directive::UserAgent, Some("user-agent")),
    ("allow", Directive::Allow, None),
    ("disallow", Directive::Disallow, None),
    ("dissallow", Directive::Disallow, Some("disallow")),
    ("dissalow", Directive::Disallow, Some("disallow")),
    ("disalow", Directive::Disallow, Some("disallow")),
    ("diasllow", Directive::Disallow, Some("disallow")),
    ("disallaw", Directive::Disallow, Some("disallow")),
    ("sitemap", Directive::Sitemap, None),
    ("site-map", Directive::Sitemap, Some("sitemap")),
    ("crawl-delay", Directive::CrawlDelay, None),
    (
        "content-usage",
        Directive::Preference(PreferenceForm::ContentUsage),
        None,
    ),
    (
        "content-signal",
        Directive::Preference(PreferenceForm::ContentSignal),
        None,
    ),
];

/// Directives that some crawlers read but RFC 9309 does not define: reported apart from typos.
const UNSUPPORTED: &[&str] = &[
    "noindex",
    "nofollow",
    "noarchive",
    "host",
    "clean-param",
    "request-rate",
    "visit-time",
    "cache-delay",
    "ai-train",
];

enum Key<'a> {
    Known(Directive, Option<&'static str>),
    Unsupported,
    Unknown(&'a str),
}

fn classify(key: &str) -> Key<'_> {
    for &(spelling, directive, meant) in SPELLINGS {
        if key.eq_ignore_ascii_case(spelling) {
            return Key::Known(directive, meant);
        }
    }
    if UNSUPPORTED.iter().any(|u| key.eq_ignore_ascii_case(u)) {
        Key::Unsupported
    } else {
        Key::Unknown(key)
    }
}

/// Splits bytes into lines at LF, CR LF or a lone CR. The last line needs no terminator.
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(end) => {
                let line = &rest[..end];
                let skip = if rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                rest = &rest[end + skip..];
                Some(line)
            }
            None => {
                let line = rest;
                rest = &[];
                Some(line)
            }
        }
    })
}

/// Where to cut a file at the parse limit: the end of the last whole line within `max_bytes`.
fn cut_at_line_boundary(bytes: &[u8], max_bytes: usize) -> usize {
    if bytes.len() <= max_bytes {
        return bytes.len();
    }
    bytes[..max_bytes]
        .iter()
        .rposition(|&b| b == b'\n' || b == b'\r')
        .map_or(0, |end| end + 1)
}

/// The product token a user-agent value names, as RFC 9309 and Google read it.
enum AgentValue<'a> {
    Star,
    Token(&'a str),
    Nothing,
}

struct Parser {
    file: ParsedFile,
    /// Whether the open group has had an allow or disallow line, so that a user-agent line opens
    /// a new group rather than adding a name to the open one.
    open_group_has_rules: bool,
}

impl Parser {
    fn problem(&mut self, line: u32, raw: &[u8], kind: ProblemKind) {
        self.file.problems.push(Problem {
            line,
            text: excerpt(raw),
            kind,
        });
    }

    fn parse_line(&mut self, number: u32, raw: &[u8]) {
        if std::str::from_utf8(raw).is_err() {
            self.problem(number, raw, ProblemKind::InvalidUtf8);
        }
        let content = match raw.iter().position(|&b| b == b'#') {
            Some(hash) => &raw[..hash],
            None => raw,
        };
        let content = String::from_utf8_lossy(content.trim_ascii());
        if content.is_empty() {
            return;
        }
        let (key, value) = match content.split_once(':') {
            Some((key, value)) => (key.trim_ascii(), value.trim_ascii()),
            None => {
                let mut words = content.split_ascii_whitespace();
                match (words.next(), words.next(), words.next()) {
                    (Some(key), Some(value), None) if matches!(classify(key), Key::Known(..)) => {
                        self.problem(
                            number,
                            raw,
                            ProblemKind::NoColonTwoWords {
                                key: key.to_owned(),
                                value: value.to_owned(),
                            },
                        );
                        (key, value)
                    }
                    _ => {
                        self.problem(number, raw, ProblemKind::NoColon);
                        return;
                    }
                }
            }
        };
        let directive = match classify(key) {
            Key::Known(directive, meant) => {
                if let Some(meant) = meant {
                    let found = key.to_owned();
                    self.problem(number, raw, ProblemKind::Misspelled { found, meant });
                }
                directive
            }
            Key::Unsupported => {
                let name = key.to_ascii_lowercase();
                return self.problem(number, raw, ProblemKind::Unsupported(name));
            }
            Key::Unknown(name) => {
                let name = name.to_owned();
                return self.problem(number, raw, ProblemKind::UnknownDirective(name));
            }
        };
        match directive {
            Directive::UserAgent => self.user_agent(number, raw, value),
            Directive::Allow => self.rule(number, raw, value, RuleKind::Allow),
            Directive::Disallow => self.rule(number, raw, value, RuleKind::Disallow),
            Directive::Sitemap => self.sitemap(number, raw, value),
            Directive::CrawlDelay => self.crawl_delay(number, raw, value),
            Directive::Preference(form) => self.preference(number, raw, value, form),
        }
    }

    fn agent_value<'v>(&mut self, number: u32, raw: &[u8], value: &'v str) -> AgentValue<'v> {
        if value.is_empty() {
            self.problem(number, raw, ProblemKind::EmptyValue("user-agent".into()));
            return AgentValue::Nothing;
        }
        if let Some(after) = value.strip_prefix('*') {
            if after.is_empty() {
                return AgentValue::Star;
            }
            if after.starts_with([' ', '\t']) {
                self.problem(number, raw, ProblemKind::StarWithSuffix(value.into()));
                return AgentValue::Star;
            }
        }
        let token = leading_token(value);
        if token.is_empty() {
            self.problem(number, raw, ProblemKind::NoToken(value.into()));
            return AgentValue::Nothing;
        }
        if token.len() < value.len() {
            let found = value.into();
            let kind = ProblemKind::AgentTrimmed {
                found,
                token: token.into(),
            };
            self.problem(number, raw, kind);
        }
        AgentValue::Token(token)
    }

    fn user_agent(&mut self, number: u32, raw: &[u8], value: &str) {
        let agent = self.agent_value(number, raw, value);
        if self.file.groups.is_empty() || self.open_group_has_rules {
            self.file.groups.push(Group {
                line: number,
                agents: Vec::new(),
                star: false,
                rules: Vec::new(),
                crawl_delay: None,
                preferences: Vec::new(),
            });
            self.open_group_has_rules = false;
        }
        let Some(group) = self.file.groups.last_mut() else {
            return;
        };
        match agent {
            AgentValue::Star => group.star = true,
            AgentValue::Token(token) => group.agents.push(token.to_owned()),
            AgentValue::Nothing => {}
        }
    }

    fn rule(&mut self, number: u32, raw: &[u8], value: &str, kind: RuleKind) {
        if self.file.groups.is_empty() {
            return self.problem(number, raw, ProblemKind::RuleOutsideGroup);
        }
        self.open_group_has_rules = true;
        if value.is_empty() {
            // RFC 9309: an empty disallow excludes nothing; an empty allow says nothing.
            return;
        }
        if !value.starts_with(['/', '*']) {
            return self.problem(number, raw, ProblemKind::BadPath);
        }
        let index = self.file.rules.len();
        self.file.rules.push(Rule {
            kind,
            pattern: value.to_owned(),
            line: number,
        });
        if let Some(group) = self.file.groups.last_mut() {
            group.rules.push(index);
        }
    }

    fn sitemap(&mut self, number: u32, raw: &[u8], value: &str) {
        if value.is_empty() {
            return self.problem(number, raw, ProblemKind::EmptyValue("sitemap".into()));
        }
        let lower = value.get(..8).unwrap_or(value).to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            self.problem(number, raw, ProblemKind::RelativeSitemap(value.into()));
        }
        self.file.sitemaps.push(Sitemap {
            url: value.to_owned(),
            line: number,
        });
    }

    fn crawl_delay(&mut self, number: u32, raw: &[u8], value: &str) {
        if self.file.groups.is_empty() {
            return self.problem(number, raw, ProblemKind::RuleOutsideGroup);
        }
        // RFC 9309 §2.2.4: records other than the protocol's must not interfere with groups. A
        // crawl-delay belongs to the group it stands in and does not end it: a user-agent line
        // after it still adds a name to the same group, which then gets the rules below.
        let seconds = match value.parse::<f64>() {
            Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => seconds,
            _ => return self.problem(number, raw, ProblemKind::BadCrawlDelay(value.into())),
        };
        let seconds = if seconds > MAX_CRAWL_DELAY_SECONDS {
            self.problem(number, raw, ProblemKind::CrawlDelayTooLong(value.into()));
            MAX_CRAWL_DELAY_SECONDS
        } else {
            seconds
        };
        let previous = self
            .file
            .groups
            .last_mut()
            .and_then(|group| group.crawl_delay.replace(seconds));
        if let Some(previous) = previous {
            if let Some(group) = self.file.groups.last_mut() {
                group.crawl_delay = Some(previous.max(seconds));
            }
            self.problem(number, raw, ProblemKind::DuplicateCrawlDelay);
        }
    }

    fn preference(&mut self, number: u32, raw: &[u8], value: &str, form: PreferenceForm) {
        if self.file.groups.is_empty() {
            return self.problem(number, raw, ProblemKind::RuleOutsideGroup);
        }
        if value.is_empty() {
            let name = form.directive().to_ascii_lowercase();
            return self.problem(number, raw, ProblemKind::EmptyValue(name));
        }
        // Like a crawl-delay, a preference belongs to the group it stands in and does not end
        // it (see `preferences`): `open_group_has_rules` is left as it is.
        let (rule, problems) = preferences::parse_rule(form, value, number);
        for kind in problems {
            self.problem(number, raw, kind);
        }
        let Some(rule) = rule else {
            return;
        };
        let index = self.file.preferences.len();
        self.file.preferences.push(rule);
        if let Some(group) = self.file.groups.last_mut() {
            group.preferences.push(index);
        }
    }
}

const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// Parses robots.txt bytes, reading at most `max_bytes` of them (cut at a line boundary).
pub fn parse(bytes: &[u8], max_bytes: usize) -> ParsedFile {
    let bytes = bytes.strip_prefix(BYTE_ORDER_MARK).unwrap_or(bytes);
    let cut = cut_at_line_boundary(bytes, max_bytes);
    let mut parser = Parser {
        file: ParsedFile {
            bytes: cut,
            ..ParsedFile::default()
        },
        open_group_has_rules: false,
    };
    let mut number = 0u32;
    for raw in lines(&bytes[..cut]) {
        number = number.saturating_add(1);
        parser.parse_line(number, raw);
    }
    parser.file.lines = number;
    if cut < bytes.len() {
        let first_ignored = lines(&bytes[cut..]).next().unwrap_or_default();
        let kind = ProblemKind::PastLimit {
            limit: max_bytes,
            ignored: bytes.len() - cut,
        };
        parser.problem(number.saturating_add(1), first_ignored, kind);
    }
    parser.file
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> ParsedFile {
        parse(text.as_bytes(), DEFAULT_MAX_BYTES)
    }

    fn kinds(file: &ParsedFile) -> Vec<(u32, String)> {
        file.problems
            .iter()
            .map(|p| (p.line, p.kind.to_string()))
            .collect()
    }

    #[test]
    fn line_endings_lf_crlf_and_lone_cr() {
        let all: Vec<&[u8]> = lines(b"a\nb\r\nc\rd").collect();
        assert_eq!(all, vec![&b"a"[..], b"b", b"c", b"d"]);
        let with_blank: Vec<&[u8]> = lines(b"a\r\rb\n\n").collect();
        assert_eq!(with_blank, vec![&b"a"[..], b"", b"b", b""]);
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        let file = parse(
            b"\xEF\xBB\xBFuser-agent: *\ndisallow: /x\n",
            DEFAULT_MAX_BYTES,
        );
        assert_eq!(file.groups.len(), 1);
        assert!(file.groups[0].star);
        assert!(file.problems.is_empty());
    }

    #[test]
    fn comments_and_white_space() {
        let file = parse_str("  User-Agent  :\tFooBot # hi\n# whole line\n\tDisallow : /a # x\n");
        assert_eq!(file.groups[0].agents, vec!["FooBot"]);
        assert_eq!(file.rules[0].pattern, "/a");
        assert_eq!(file.rules[0].line, 3);
        assert!(file.problems.is_empty());
    }

    #[test]
    fn consecutive_agents_form_one_group_and_a_rule_ends_it() {
        let file = parse_str("user-agent: a\n\n# c\nuser-agent: b\ndisallow: /x\nuser-agent: c\n");
        assert_eq!(file.groups.len(), 2);
        assert_eq!(file.groups[0].agents, vec!["a", "b"]);
        assert_eq!(file.groups[1].agents, vec!["c"]);
        assert!(file.groups[1].rules.is_empty());
    }

    #[test]
    fn sitemap_and_unknown_lines_do_not_end_a_group() {
        let file = parse_str(
            "user-agent: a\nsitemap: https://e.com/s.xml\nfoo: bar\nuser-agent: b\ndisallow: /\n",
        );
        assert_eq!(file.groups.len(), 1);
        assert_eq!(file.groups[0].agents, vec!["a", "b"]);
        assert_eq!(file.sitemaps[0].url, "https://e.com/s.xml");
        assert_eq!(kinds(&file), vec![(3, "unknown directive `foo`".into())]);
    }

    #[test]
    fn empty_disallow_ends_the_agent_run() {
        let file = parse_str("user-agent: a\ndisallow:\nuser-agent: b\ndisallow: /\n");
        assert_eq!(file.groups.len(), 2);
        assert!(file.groups[0].rules.is_empty());
    }

    #[test]
    fn rules_before_any_user_agent_are_problems() {
        let file = parse_str("disallow: /x\ncrawl-delay: 3\nuser-agent: *\n");
        assert!(file.rules.is_empty());
        assert_eq!(
            kinds(&file),
            vec![
                (1, "rule before any user-agent is ignored".into()),
                (2, "rule before any user-agent is ignored".into())
            ]
        );
    }

    #[test]
    fn misspellings_are_read_and_reported() {
        let file = parse_str("useragent: a\nuser agent: b\ndissallow: /1\ndissalow: /2\ndisalow: /3\ndiasllow: /4\ndisallaw: /5\nsite-map: https://e.com/s\n");
        assert_eq!(file.groups[0].agents, vec!["a", "b"]);
        assert_eq!(file.rules.len(), 5);
        assert!(file.rules.iter().all(|r| r.kind == RuleKind::Disallow));
        assert_eq!(file.sitemaps.len(), 1);
        assert_eq!(file.problems.len(), 8);
        assert_eq!(
            file.problems[2].kind.to_string(),
            "`dissallow` read as `disallow`"
        );
    }

    #[test]
    fn two_words_without_colon() {
        let file = parse_str("user-agent *\ndisallow /x\nthis line has no colon\nnoindex\n");
        assert!(file.groups[0].star);
        assert_eq!(file.rules[0].pattern, "/x");
        assert_eq!(
            kinds(&file),
            vec![
                (1, "no colon; read as `user-agent: *`".into()),
                (2, "no colon; read as `disallow: /x`".into()),
                (3, "no colon".into()),
                (4, "no colon".into()),
            ]
        );
    }

    #[test]
    fn agent_values_are_cut_to_the_product_token() {
        let file = parse_str(
            "user-agent: Googlebot/2.1\nuser-agent: * extra\nuser-agent: 123bot\nuser-agent: *x\n",
        );
        assert_eq!(file.groups[0].agents, vec!["Googlebot"]);
        assert!(file.groups[0].star);
        assert_eq!(
            kinds(&file),
            vec![
                (1, "user-agent `Googlebot/2.1` read as `Googlebot`".into()),
                (2, "user-agent `* extra` read as `*`".into()),
                (3, "user-agent `123bot` names no product token".into()),
                (4, "user-agent `*x` names no product token".into()),
            ]
        );
    }

    #[test]
    fn bad_paths_unknown_and_unsupported_directives() {
        let file =
            parse_str("user-agent: *\ndisallow: nopath\nnoindex: /x\nfoo: bar\nallow: *.css\n");
        assert_eq!(file.rules.len(), 1);
        assert_eq!(file.rules[0].pattern, "*.css");
        assert_eq!(
            kinds(&file),
            vec![
                (2, "path does not start with / or *".into()),
                (3, "`noindex` is not part of RFC 9309; ignored".into()),
                (4, "unknown directive `foo`".into()),
            ]
        );
    }

    #[test]
    fn crawl_delay_is_kept_per_group() {
        let file = parse_str("user-agent: a\ncrawl-delay: 2.5\nuser-agent: b\ndisallow: /\nuser-agent: c\ncrawl-delay: soon\ncrawl-delay: 1\ncrawl-delay: 4\n");
        assert_eq!(file.groups[0].crawl_delay, Some(2.5));
        assert_eq!(file.groups[1].crawl_delay, Some(4.0));
        assert_eq!(file.groups.len(), 2);
        let file = parse_str("user-agent: a\ndisallow: /\nuser-agent: b\ncrawl-delay: 1\ncrawl-delay: 4\nnot: x\ncrawl-delay: -1\n");
        assert_eq!(file.groups[1].crawl_delay, Some(4.0));
        assert_eq!(
            kinds(&file),
            vec![
                (
                    5,
                    "group already has a crawl-delay; the larger is kept".into()
                ),
                (6, "unknown directive `not`".into()),
                (7, "crawl-delay `-1` is not a number of seconds".into()),
            ]
        );
    }

    /// RFC 9309 §2.2.4: `User-agent: BarBot / Crawl-delay: 5 / User-agent: FooBot / Disallow: /`
    /// is one group, as Google reads it (aviation-safety.net's and sgppto's files do this).
    #[test]
    fn a_crawl_delay_does_not_end_a_group() {
        let file =
            parse_str("User-agent: BarBot\nCrawl-delay: 5\nUser-agent: FooBot\nDisallow: /\n");
        assert_eq!(file.groups.len(), 1);
        assert_eq!(file.groups[0].agents, vec!["BarBot", "FooBot"]);
        assert_eq!(file.groups[0].crawl_delay, Some(5.0));
        assert_eq!(file.groups[0].rules, vec![0]);
    }

    #[test]
    fn crawl_delays_past_a_day_are_read_as_a_day() {
        for value in ["1e300", "1e19", "86401", "1e309"] {
            let file = parse_str(&format!("user-agent: a\ncrawl-delay: {value}\n"));
            let delay = file.groups[0].crawl_delay;
            let kinds = kinds(&file);
            if value == "1e309" {
                // Not finite: not a number of seconds at all.
                assert_eq!(delay, None);
                assert_eq!(kinds[0].1, "crawl-delay `1e309` is not a number of seconds");
            } else {
                assert_eq!(delay, Some(MAX_CRAWL_DELAY_SECONDS), "{value}");
                assert_eq!(
                    kinds,
                    vec![(
                        2,
                        format!("crawl-delay `{value}` is more than a day; read as one day")
                    )]
                );
            }
        }
        let file = parse_str("user-agent: a\ncrawl-delay: 86400\n");
        assert!(file.problems.is_empty());
    }

    #[test]
    fn sitemaps_are_file_wide_and_checked() {
        let file =
            parse_str("sitemap: https://e.com/a.xml\nuser-agent: *\nsitemap: /b.xml\nSitemap:\n");
        let urls: Vec<_> = file.sitemaps.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(urls, vec!["https://e.com/a.xml", "/b.xml"]);
        assert_eq!(
            kinds(&file),
            vec![
                (3, "sitemap `/b.xml` is not an absolute http(s) URL".into()),
                (4, "`sitemap` has no value".into()),
            ]
        );
    }

    #[test]
    fn invalid_utf8_does_not_stop_parsing() {
        let file = parse(b"user-agent: *\ndisallow: /\xff\xfe\ndisallow: /ok\n", 1024);
        assert_eq!(file.rules.len(), 2);
        assert_eq!(kinds(&file), vec![(2, "line is not valid UTF-8".into())]);
    }

    #[test]
    fn parse_limit_cuts_at_a_line_boundary() {
        let text = "user-agent: *\ndisallow: /a\ndisallow: /bbbbbbbb\n";
        // The limit falls inside line 3: lines 1 and 2 are read, line 3 is ignored.
        let file = parse(text.as_bytes(), 30);
        assert_eq!(file.rules.len(), 1);
        assert_eq!(file.bytes, 27);
        assert_eq!(
            kinds(&file),
            vec![(
                3,
                "content past the parse limit of 30 bytes is ignored (20 bytes)".into()
            )]
        );
        assert_eq!(file.problems[0].text, "disallow: /bbbbbbbb");
        assert!(parse(text.as_bytes(), text.len()).problems.is_empty());
    }

    #[test]
    fn a_line_longer_than_the_limit_is_ignored_whole() {
        let file = parse(b"disallow: /aaaaaaaaaaaa", 8);
        assert_eq!(file.lines, 0);
        assert_eq!(file.problems.len(), 1);
    }

    #[test]
    fn problems_quote_at_most_an_excerpt() {
        let long = format!("x{}", "y".repeat(10_000));
        let file = parse_str(&long);
        assert!(file.problems[0].text.chars().count() <= 201);
    }
}
