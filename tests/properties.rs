//! Property tests of the compiled matcher against a naive reference of RFC 9309 §2.2.2.
//!
//! Random robots.txt files are generated as structures (groups of user-agents and rules, with
//! sitemaps, crawl-delays and unknown lines among them), rendered to text with random cosmetic
//! variation (case of directive names, white space around the colon, comments, blank lines,
//! LF/CRLF/CR line endings, a byte order mark, the misspellings and colon-less lines the parser
//! accepts), parsed by the crate, and queried with crawler names and paths chosen to be near the
//! patterns. Each verdict is compared with the reference in `common/reference.rs`, which works on
//! the structure and never sees the text: the allow/disallow answer, the reason, the groups, and
//! that the named rule matches, is one of the longest that match, and agrees with the verdict.
//! The parsed groups and rules are also compared with the structure.
//!
//! Other properties: parsing never panics on arbitrary bytes or on mixtures of valid lines and
//! garbage (whose verdicts are compared with the reference on the groups as parsed), and `check`
//! never panics on arbitrary crawler names and URLs.
//!
//! The proptest seed is fixed (see [`config`]), so every run tries the same cases; set
//! `rng_seed` to `RngSeed::Random` locally to explore further. A failure is shrunk and saved in
//! `tests/properties.proptest-regressions`, which is replayed first on the next run: commit it
//! with the fix, or delete it once the case is covered by a unit test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::reference::{self, RefFile, RefGroup, RefRule, Rng};
use crawlgate::{Options, Reason, Robots, RuleKind};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::RngSeed;

/// Product tokens that files name: some differ only in case, some extend another.
const TOKENS: &[&str] = &[
    "FooBot",
    "foobot",
    "FooBot-News",
    "bar_bot",
    "Baz",
    "b",
    "GPTBot",
    "-x",
];

/// Crawler names that files do not name (or name only as a prefix).
const STRANGERS: &[&str] = &[
    "crawlgate-test",
    "FooBo",
    "FooBotX",
    "Mozilla/5.0 (compatible; FooBot/1.0)",
    "*",
    "",
    "  ",
    "123",
    "bar",
];

/// Lines that are neither rules nor user-agent lines: they never end a group.
const NEUTRAL: &[&str] = &[
    "Sitemap: https://example.com/sitemap.xml",
    "site-map: /relative.xml",
    "Noindex: /a",
    "Host: example.com",
    "Foo: bar",
    "Clean-param: ref /a",
    "this line has no colon at all",
    "Sitemap:",
    // Content-use preferences: rules of their group for what they state, but they never end a
    // run of user-agent lines nor change what any group allows (RFC 9309 §2.2.4), which the
    // main property checks by reading them as neutral.
    "Content-Usage: train-ai=n",
    "content-usage: /a/ train-ai=y, search=n",
    "Content-Signal: search=yes, ai-input=no, ai-train=no",
    "Content-Signal: /*.pdf$ ai-train=no",
    "Content-Usage: Train-AI=maybe",
];

/// One user-agent line.
#[derive(Debug, Clone)]
enum Agent {
    /// `*`, or `* text` (read as `*`).
    Star { suffix: bool },
    /// A product token, perhaps followed by a version (`FooBot/2.1`), read as the token.
    Token {
        name: &'static str,
        suffix: Option<&'static str>,
    },
    /// A value that names no product token (`123bot`, empty): the line still opens a group.
    Invalid(&'static str),
}

/// One line after a group's user-agent lines.
#[derive(Debug, Clone)]
enum Line {
    /// An allow or disallow line; an empty or non-`/` pattern is not a rule, but ends the
    /// user-agent run all the same.
    Rule(RuleKind, String),
    /// A crawl-delay (valid or not): an "other record" (RFC 9309 §2.2.4) that belongs to the
    /// group it stands in and, unlike a rule, does not end the user-agent run.
    CrawlDelay(&'static str),
    /// A sitemap, unknown or unparsable line: it does not end the run.
    Neutral(&'static str),
}

/// A group as written: user-agent lines (each perhaps followed by a neutral line), then lines.
#[derive(Debug, Clone)]
struct GroupSpec {
    agents: Vec<(Agent, Option<&'static str>)>,
    lines: Vec<Line>,
}

#[derive(Debug, Clone)]
struct Model {
    /// Lines before the first user-agent line: rules there are ignored.
    preamble: Vec<Line>,
    groups: Vec<GroupSpec>,
}

fn pattern() -> impl Strategy<Value = String> {
    let start = prop_oneof![
        14 => Just("/"),
        3 => Just("*"),
        1 => Just(""),
        1 => Just("a"),
        1 => Just("%2F"),
    ];
    (
        start,
        prop::collection::vec(select(reference::PIECES), 0..7),
    )
        .prop_map(|(start, pieces)| {
            let mut pattern = String::from(start);
            if !start.is_empty() {
                pieces.iter().for_each(|piece| pattern.push_str(piece));
            }
            // The parser trims the value; the structure holds the pattern as it will be read.
            pattern.trim_end().to_owned()
        })
}

fn kind() -> impl Strategy<Value = RuleKind> {
    prop_oneof![Just(RuleKind::Allow), Just(RuleKind::Disallow)]
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        12 => (kind(), pattern()).prop_map(|(kind, pattern)| Line::Rule(kind, pattern)),
        1 => select(&["1", "0.5", "soon"][..]).prop_map(Line::CrawlDelay),
        2 => select(NEUTRAL).prop_map(Line::Neutral),
    ]
}

fn agent() -> impl Strategy<Value = Agent> {
    prop_oneof![
        4 => Just(Agent::Star { suffix: false }),
        1 => Just(Agent::Star { suffix: true }),
        12 => (
            select(TOKENS),
            prop::option::weighted(0.2, select(&["/2.1", " (compatible)", "1"][..]))
        )
            .prop_map(|(name, suffix)| Agent::Token { name, suffix }),
        1 => select(&["123bot", "", "/x"][..]).prop_map(Agent::Invalid),
    ]
}

fn group() -> impl Strategy<Value = GroupSpec> {
    (
        prop::collection::vec(
            (agent(), prop::option::weighted(0.1, select(NEUTRAL))),
            1..4,
        ),
        prop::collection::vec(line(), 0..7),
    )
        .prop_map(|(agents, lines)| GroupSpec { agents, lines })
}

fn model() -> impl Strategy<Value = Model> {
    let preamble = prop_oneof![
        4 => Just(Vec::new()),
        1 => prop::collection::vec(line(), 1..3),
    ];
    (preamble, prop::collection::vec(group(), 0..6))
        .prop_map(|(preamble, groups)| Model { preamble, groups })
}

/// A robots.txt rendered from a model, and what the reference reads in it.
struct Rendered {
    bytes: Vec<u8>,
    reference: RefFile,
}

/// Writes lines with random blank and comment lines among them, and records line numbers.
struct Writer {
    rng: Rng,
    lines: Vec<String>,
}

impl Writer {
    /// Adds a line and returns its 1-based number.
    fn push(&mut self, line: String) -> u32 {
        while self.rng.chance(12) {
            let filler = *self.rng.pick(&[
                "",
                "   ",
                "\t",
                "# a comment",
                "#",
                "  # User-agent: FooBot",
                "# Disallow: /",
            ]);
            self.lines.push(filler.to_owned());
        }
        self.lines.push(line);
        u32::try_from(self.lines.len()).unwrap()
    }

    /// A directive line: `name: value` with random case, white space and trailing comment.
    fn directive(&mut self, spellings: &[&str], value: &str) -> u32 {
        let rng = &mut self.rng;
        let name = if rng.chance(85) {
            spellings[0]
        } else {
            *rng.pick(spellings)
        };
        let name: String = match rng.below(4) {
            0 => name.to_owned(),
            1 => name.to_ascii_lowercase(),
            2 => name.to_ascii_uppercase(),
            _ => name
                .chars()
                .map(|c| {
                    if rng.chance(50) {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect(),
        };
        let indent = *rng.pick(&["", "", "", " ", "\t", "  "]);
        let one_word = !name.contains(' ');
        let plain_value = !value.is_empty() && !value.contains([' ', '\t']);
        let mut text = if one_word && plain_value && rng.chance(5) {
            // Google's reading of `disallow /x`: two words without a colon.
            format!("{indent}{name} {value}")
        } else {
            let before = *rng.pick(&["", "", "", " ", "\t", "  "]);
            let after = *rng.pick(&["", " ", " ", " ", "\t", "   "]);
            format!("{indent}{name}{before}:{after}{value}")
        };
        let suffix = *rng.pick(&[
            "",
            "",
            "",
            "",
            " ",
            "\t",
            " # comment: with a colon",
            "# é",
            "  #",
        ]);
        text.push_str(suffix);
        self.push(text)
    }
}

const USER_AGENT: &[&str] = &["User-agent", "useragent", "user agent"];
const ALLOW: &[&str] = &["Allow"];
const DISALLOW: &[&str] = &["Disallow", "dissallow", "disalow", "disallaw"];
const CRAWL_DELAY: &[&str] = &["Crawl-delay"];

/// Renders a body line; returns its line number.
fn render_line(writer: &mut Writer, line: &Line) -> u32 {
    match line {
        Line::Rule(RuleKind::Allow, pattern) => writer.directive(ALLOW, pattern),
        Line::Rule(RuleKind::Disallow, pattern) => writer.directive(DISALLOW, pattern),
        Line::CrawlDelay(value) => writer.directive(CRAWL_DELAY, value),
        Line::Neutral(text) => writer.push((*text).to_owned()),
    }
}

fn render(model: &Model, seed: u64) -> Rendered {
    let mut writer = Writer {
        rng: Rng::new(seed),
        lines: Vec::new(),
    };
    for line in &model.preamble {
        render_line(&mut writer, line);
    }
    let mut reference = RefFile::default();
    // The group being read: user-agent lines join it until a rule line.
    let mut open: Option<RefGroup> = None;
    for spec in &model.groups {
        for (agent, neutral) in &spec.agents {
            let value = match agent {
                Agent::Star { suffix: false } => "*".to_owned(),
                Agent::Star { suffix: true } => "* (everyone)".to_owned(),
                Agent::Token { name, suffix } => {
                    let mut value = (*name).to_owned();
                    if writer.rng.chance(30) {
                        value = reference::vary_agent(&mut writer.rng, name);
                        value = reference::product_token(&value).to_owned();
                    }
                    value + suffix.unwrap_or("")
                }
                Agent::Invalid(value) => (*value).to_owned(),
            };
            let number = writer.directive(USER_AGENT, &value);
            let group = open.get_or_insert_with(|| RefGroup {
                line: number,
                ..RefGroup::default()
            });
            match agent {
                Agent::Star { .. } => group.star = true,
                Agent::Token { name, .. } => group.agents.push((*name).to_owned()),
                Agent::Invalid(_) => {}
            }
            if let Some(neutral) = neutral {
                writer.push((*neutral).to_owned());
            }
        }
        let mut ends_run = false;
        for line in &spec.lines {
            let number = render_line(&mut writer, line);
            match line {
                Line::Rule(kind, pattern) => {
                    ends_run = true;
                    if reference::is_rule_pattern(pattern) {
                        if let Some(group) = open.as_mut() {
                            group.rules.push(RefRule {
                                kind: *kind,
                                pattern: pattern.clone(),
                                line: number,
                            });
                        }
                    }
                }
                Line::CrawlDelay(_) | Line::Neutral(_) => {}
            }
        }
        if ends_run {
            reference.groups.extend(open.take());
        }
    }
    reference.groups.extend(open.take());

    let Writer { mut rng, lines } = writer;
    let mut bytes = Vec::new();
    if rng.chance(20) {
        bytes.extend_from_slice(b"\xEF\xBB\xBF");
    }
    // LF, CRLF, CR, or a mixture.
    let ending = rng.below(4);
    let mut previous_cr = false;
    for (index, line) in lines.iter().enumerate() {
        bytes.extend_from_slice(line.as_bytes());
        if index + 1 == lines.len() && rng.chance(30) {
            break;
        }
        let mut terminator = match ending {
            0 => "\n",
            1 => "\r\n",
            2 => "\r",
            _ => *rng.pick(&["\n", "\r\n", "\r"]),
        };
        // A lone CR, then an empty line ended by LF, would read as one CR LF.
        if previous_cr && line.is_empty() && terminator == "\n" {
            terminator = "\r\n";
        }
        previous_cr = terminator == "\r";
        bytes.extend_from_slice(terminator.as_bytes());
    }
    Rendered { bytes, reference }
}

/// Queries made of each generated file.
const QUERIES: usize = 24;

/// A crawler name: mostly one the file names (in another case, perhaps with a version),
/// sometimes one it does not.
fn query_agent(rng: &mut Rng, model: &Model) -> String {
    let named: Vec<&str> = model
        .groups
        .iter()
        .flat_map(|group| group.agents.iter())
        .filter_map(|(agent, _)| match agent {
            Agent::Token { name, .. } => Some(*name),
            _ => None,
        })
        .collect();
    match rng.below(10) {
        0..=5 if !named.is_empty() => {
            let token = *rng.pick(&named);
            reference::vary_agent(rng, token)
        }
        0..=7 => {
            let token = *rng.pick(TOKENS);
            reference::vary_agent(rng, token)
        }
        _ => (*rng.pick(STRANGERS)).to_owned(),
    }
}

/// A path: mostly derived from one of the file's patterns, sometimes random or `/robots.txt`.
fn query_path(rng: &mut Rng, patterns: &[&str]) -> String {
    match rng.below(20) {
        0 => (*rng.pick(&[
            "/robots.txt",
            "/robots.txt?x",
            "/%72obots.txt",
            "/robots%2Etxt",
            "/robots.txt/",
            "/ROBOTS.TXT",
        ]))
        .to_owned(),
        1..=4 => reference::random_path(rng),
        _ if !patterns.is_empty() => {
            let pattern = *rng.pick(patterns);
            reference::derive_path(rng, pattern)
        }
        _ => reference::random_path(rng),
    }
}

/// The file with agent names lower-cased, to compare structures whatever the case written.
fn lower_agents(mut file: RefFile) -> RefFile {
    for group in &mut file.groups {
        for agent in &mut group.agents {
            agent.make_ascii_lowercase();
        }
    }
    file
}

/// `cases` cases from a fixed seed, so that every run tries the same inputs (proptest's default
/// seed is random).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(0x0C4A_317B_0BB0_7705),
        ..ProptestConfig::default()
    }
}

fn fail(message: String) -> Result<(), TestCaseError> {
    Err(TestCaseError::fail(message))
}

proptest! {
    #![proptest_config(config(2000))]

    /// The main property: on generated files, the crate's verdicts are the reference's.
    #[test]
    fn matcher_agrees_with_the_reference(
        model in model(),
        render_seed in any::<u64>(),
        query_seed in any::<u64>(),
    ) {
        let rendered = render(&model, render_seed);
        let text = String::from_utf8_lossy(&rendered.bytes).into_owned();
        let robots = Robots::parse(&rendered.bytes);
        let parsed = lower_agents(RefFile::from_parsed(robots.file()));
        let expected = lower_agents(rendered.reference.clone());
        prop_assert_eq!(parsed, expected, "the parsed groups differ from the model in {:?}", text);

        let mut patterns: Vec<&str> = model
            .groups
            .iter()
            .flat_map(|group| group.lines.iter())
            .chain(model.preamble.iter())
            .filter_map(|line| match line {
                Line::Rule(_, pattern) => Some(pattern.as_str()),
                _ => None,
            })
            .collect();
        patterns.sort_unstable();
        patterns.dedup();
        let mut rng = Rng::new(query_seed);
        for _ in 0..QUERIES {
            let agent = query_agent(&mut rng, &model);
            let path = query_path(&mut rng, &patterns);
            let url = reference::url_for(&mut rng, &path);
            if let Err(difference) =
                reference::compare(&robots, &rendered.reference, &agent, &url, &path)
            {
                return fail(format!("{difference}\nin robots.txt {text:?}"));
            }
        }
    }
}

/// Checks what must hold of any parse, whatever the input.
fn check_invariants(robots: &Robots, limit: usize) -> Result<(), TestCaseError> {
    let file = robots.file();
    prop_assert!(
        file.bytes <= limit,
        "{} bytes parsed past a limit of {limit}",
        file.bytes
    );
    for problem in robots.problems() {
        prop_assert!(
            (1..=file.lines + 1).contains(&problem.line),
            "problem {problem} is not within {} lines",
            file.lines
        );
    }
    let mut previous = 0;
    for (index, rule) in file.rules.iter().enumerate() {
        prop_assert!(
            (1..=file.lines).contains(&rule.line),
            "rule {index} on line {}",
            rule.line
        );
        prop_assert!(rule.line > previous, "rules out of order");
        prop_assert!(
            reference::is_rule_pattern(&rule.pattern),
            "rule {rule:?} is no pattern"
        );
        previous = rule.line;
    }
    for group in &file.groups {
        prop_assert!(
            (1..=file.lines).contains(&group.line),
            "group on line {}",
            group.line
        );
        prop_assert!(group.rules.iter().all(|&rule| rule < file.rules.len()));
        prop_assert!(group.agents.iter().all(|agent| !agent.is_empty()
            && agent
                .bytes()
                .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')));
    }
    Ok(())
}

/// Queries a parsed file with names it uses and paths near its rules, comparing with the
/// reference run on the groups as parsed.
fn query_parsed(bytes: &[u8], robots: &Robots, seed: u64) -> Result<(), TestCaseError> {
    let reference = RefFile::from_parsed(robots.file());
    let patterns: Vec<&str> = reference
        .rules()
        .map(|rule| rule.pattern.as_str())
        .collect();
    let agents: Vec<&str> = robots.agents().chain(["crawlgate-test"]).collect();
    let mut rng = Rng::new(seed);
    for _ in 0..8 {
        let token = *rng.pick(&agents);
        let agent = reference::vary_agent(&mut rng, token);
        let path = if patterns.is_empty() || rng.chance(20) {
            reference::random_path(&mut rng)
        } else {
            let pattern = *rng.pick(&patterns);
            reference::derive_path(&mut rng, pattern)
        };
        let url = reference::url_for(&mut rng, &path);
        if let Err(difference) = reference::compare(robots, &reference, &agent, &url, &path) {
            return fail(format!(
                "{difference}\nin robots.txt {:?}",
                String::from_utf8_lossy(bytes)
            ));
        }
    }
    Ok(())
}

fn parse_limited(bytes: &[u8], limit: usize) -> Robots {
    let options = Options { max_bytes: limit };
    Robots::parse_with(bytes, options)
}

/// A line that is almost a directive: known and unknown names, odd separators, odd values.
fn almost_line() -> impl Strategy<Value = Vec<u8>> {
    let name = select(
        &[
            "user-agent",
            "User-Agent",
            "useragent",
            "user agent",
            "disallow",
            "Allow",
            "dissallow",
            "crawl-delay",
            "sitemap",
            "noindex",
            "content-usage",
            "Content-Signal",
            "",
            "#",
            "*",
        ][..],
    );
    let separator = select(&[":", " : ", ":\t", " ", "", "::", ":#"][..]);
    let value = prop_oneof![
        4 => pattern(),
        2 => select(TOKENS).prop_map(str::to_owned),
        1 => select(&[
            "*", "/*a*a*a*a*a*a*a*a*b$", "/$$$", "**", "*$", "$", "/%", "/%%%41", "/a%", "/\u{0}",
            "/é*é$", "1e308", "-1", "NaN", "inf", "/a # b", "\u{feff}/x", "/\u{200b}", "/a\tb",
            "train-ai=n", "/a train-ai=y, search=n", "ai-train=no, use=full", "/ search=?0;x",
        ][..]).prop_map(str::to_owned),
        1 => ".{0,20}",
    ];
    (name, separator, value)
        .prop_map(|(name, separator, value)| format!("{name}{separator}{value}").into_bytes())
}

const ENDINGS: &[&str] = &["\n", "\r\n", "\r", "\n\r", "\0\n"];

fn garbage_line() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..40)
}

proptest! {
    #![proptest_config(config(300))]

    /// Arbitrary bytes parse without panicking, with any limit, and queries do not panic.
    #[test]
    fn parsing_arbitrary_bytes_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..1500),
        limit in 0usize..1600,
        seed in any::<u64>(),
    ) {
        let robots = Robots::parse(&bytes);
        check_invariants(&robots, crawlgate::robots::DEFAULT_MAX_BYTES)?;
        check_invariants(&parse_limited(&bytes, limit), limit)?;
        query_parsed(&bytes, &robots, seed)?;
    }

    /// Mixtures of valid lines, near misses and garbage, with any line endings, parse without
    /// panicking, and their verdicts agree with the reference on the groups as parsed.
    #[test]
    fn mixed_lines_parse_and_match_like_the_reference(
        lines in prop::collection::vec(prop_oneof![6 => almost_line(), 1 => garbage_line()], 0..30),
        endings in prop::collection::vec(select(ENDINGS), 1..4),
        bom in any::<bool>(),
        limit in 0usize..600,
        seed in any::<u64>(),
    ) {
        let mut bytes = Vec::new();
        if bom {
            bytes.extend_from_slice(b"\xEF\xBB\xBF");
        }
        for (index, line) in lines.iter().enumerate() {
            bytes.extend_from_slice(line);
            bytes.extend_from_slice(endings[index % endings.len()].as_bytes());
        }
        let robots = Robots::parse(&bytes);
        check_invariants(&robots, crawlgate::robots::DEFAULT_MAX_BYTES)?;
        check_invariants(&parse_limited(&bytes, limit), limit)?;
        query_parsed(&bytes, &robots, seed)?;
    }
}

/// A statement near the structured-field syntax: keys, values, parameters, separators.
fn statement() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "(/[a-z*$%]{0,5}[ \t]{1,2})?([a-z*-]{1,9}(=[a-z0-9\"?*]{0,4})?(;[a-z]{1,2}(=[a-z0-9]{0,2})?)?,[ \t]?){0,4}[a-z-]{0,9}(=[ynoes]{0,3})?",
        1 => any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config(500))]

    /// Preference lines with arbitrary values never panic; what a preference states for a path
    /// is stated by a rule of the file that says so, and the groups' verdicts are those of the
    /// same file without the preference lines.
    #[test]
    fn preferences_never_panic_and_name_the_rule_that_states_them(
        values in prop::collection::vec((any::<bool>(), statement()), 0..8),
        url in "[/a-z%*$?.]{0,20}",
        agent in select(&["FooBot", "other", ""][..]),
    ) {
        use crawlgate::robots::{Stance, Usage};
        let rules = "User-agent: FooBot\nDisallow: /a\nAllow: /a/b\n\nUser-agent: *\nDisallow: /p\n";
        let mut text = String::from("User-agent: FooBot\n");
        let mut star = String::from("User-agent: *\n");
        for (index, (signal, value)) in values.iter().enumerate() {
            let directive = if *signal { "Content-Signal" } else { "Content-Usage" };
            // One line each: a line break in the value would start a line of its own.
            let value = value.replace(['\n', '\r'], " ");
            let line = format!("{directive}: {value}\n");
            if index % 2 == 0 { text.push_str(&line) } else { star.push_str(&line) }
        }
        text.push_str("Disallow: /a\nAllow: /a/b\n\n");
        text.push_str(&star);
        text.push_str("Disallow: /p\n");
        let with = Robots::parse(text.as_bytes());
        let without = Robots::parse(rules.as_bytes());
        check_invariants(&with, crawlgate::robots::DEFAULT_MAX_BYTES)?;
        let verdict = with.check(agent, &url);
        prop_assert_eq!(verdict.allowed, without.check(agent, &url).allowed, "{:?} {}", text, url);
        let preference = with.preference(agent, &url);
        if !verdict.allowed {
            prop_assert!(preference.is_unknown());
        }
        for usage in Usage::ALL {
            let stated = preference.get(usage);
            match stated.rule {
                None => prop_assert_eq!(stated.stance, Stance::Unknown),
                Some(index) => {
                    let rule = with.preference_rule(index);
                    prop_assert!(rule.is_some(), "rule {} of {:?}", index, text);
                    prop_assert_eq!(rule.map(|r| r.stance(usage)), Some(stated.stance));
                }
            }
        }
    }
}

/// A file with a bit of everything, for the queries with arbitrary strings.
const EVERYTHING: &str = "User-agent: FooBot\nDisallow: /\nAllow: /a*b$\n\nUser-agent: *\n\
    Disallow: /*?\nAllow: /%C3%A9\nDisallow: /é/\nDisallow: /x$y\nAllow: /$\n";

proptest! {
    #![proptest_config(config(500))]

    /// `check` never panics on arbitrary crawler names and URLs, and its answer is consistent.
    #[test]
    fn check_never_panics_on_arbitrary_strings(
        agent in prop_oneof![any::<String>(), "[ A-Za-z_-]{0,70}[/ ;]?.{0,5}"],
        url in prop_oneof![
            any::<String>(),
            "((https?|[a-z+.-]{1,5})://[a-z.:@]{0,12})?[/a-z%?#:é*$. ]{0,30}",
            "//?[a-z]{0,5}[/?#]?.{0,10}",
        ],
    ) {
        static ROBOTS: std::sync::LazyLock<Robots> =
            std::sync::LazyLock::new(|| Robots::parse(EVERYTHING.as_bytes()));
        let verdict = ROBOTS.check(&agent, &url);
        prop_assert_eq!(verdict.rule.is_some(), verdict.reason == Reason::Rule);
        if let Some(rule) = verdict.rule {
            prop_assert_eq!(rule.kind == RuleKind::Allow, verdict.allowed);
        } else {
            prop_assert!(verdict.allowed);
        }
        // The URL reduced by the crate, then matched by the reference.
        let path = crawlgate::robots::path::path_and_query(&url);
        let reference = RefFile::from_parsed(ROBOTS.file());
        if let Err(difference) = reference::compare(&ROBOTS, &reference, &agent, &url, &path) {
            return fail(difference);
        }
    }
}
