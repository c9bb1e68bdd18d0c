//! A plain, obviously-correct reading of RFC 9309 §2.2.2, to check the compiled matcher against.
//!
//! It shares no code with `src/`: groups are selected by a linear scan, paths and patterns are
//! normalised by a loop over bytes, and every rule is tried against the path with a dynamic
//! programme over bytes (no regex). It is slow on purpose and only has to be right:
//!
//! - group selection: the groups naming the crawler's product token (case-insensitively), merged;
//!   else the `*` groups, merged; else no group (everything allowed);
//! - a rule matches when its pattern matches a prefix of the path, `*` standing for any run of
//!   octets and a final `$` for the end of the path (a `$` anywhere else is literal);
//! - an empty pattern matches nothing (and a pattern that starts with neither `/` nor `*` is
//!   not a rule);
//! - the matching rule whose normalised pattern has the most octets decides; an allow wins a tie;
//! - `/robots.txt` is always allowed, with any query;
//! - paths and patterns are compared after percent-encoding normalisation: escapes of unreserved
//!   characters and of the reserved characters without a role (`:@!'(),;[]`, and `/?` in the
//!   query) are decoded, other escapes keep upper-case hex digits, octets that may not appear raw in a URI
//!   are encoded, invalid escapes (`%zz`, a trailing `%`) stay as they are; `*` and `$` in a
//!   path, and `%2A`/`%24` in a pattern, are the literal octets.
//!
//! It also holds what both test files need to make queries: a small seeded random number
//! generator and functions that derive paths from patterns.

use crawlgate::robots::{ParsedFile, MAX_JUDGED_PATH};
use crawlgate::{GroupKind, Reason, Robots, RuleKind};

/// One allow or disallow rule, with its pattern as written.
#[derive(Debug, Clone, PartialEq)]
pub struct RefRule {
    pub kind: RuleKind,
    pub pattern: String,
    pub line: u32,
}

/// One group: the product tokens it names, whether it names `*`, and its rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RefGroup {
    /// The line of the group's first user-agent line.
    pub line: u32,
    pub agents: Vec<String>,
    pub star: bool,
    pub rules: Vec<RefRule>,
}

/// A robots.txt file as the reference sees it: its groups in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RefFile {
    pub groups: Vec<RefGroup>,
}

impl RefFile {
    /// The groups and rules exactly as the crate's parser read them, so that only the matching
    /// is compared.
    pub fn from_parsed(file: &ParsedFile) -> RefFile {
        let groups = file
            .groups
            .iter()
            .map(|group| RefGroup {
                line: group.line,
                agents: group.agents.clone(),
                star: group.star,
                rules: group
                    .rules
                    .iter()
                    .map(|&index| {
                        let rule = &file.rules[index];
                        RefRule {
                            kind: rule.kind,
                            pattern: rule.pattern.clone(),
                            line: rule.line,
                        }
                    })
                    .collect(),
            })
            .collect();
        RefFile { groups }
    }

    /// Every rule of every group, in file order.
    pub fn rules(&self) -> impl Iterator<Item = &RefRule> {
        self.groups.iter().flat_map(|group| group.rules.iter())
    }
}

/// The reference's answer for one query.
#[derive(Debug, Clone, PartialEq)]
pub struct RefVerdict {
    pub allowed: bool,
    pub reason: Reason,
    pub group: GroupKind,
    pub group_lines: Vec<u32>,
    /// The normalised path that was compared.
    pub path: Vec<u8>,
    /// The matching rules of the greatest length (any of them may be named as the decider).
    pub best: Vec<RefRule>,
    /// Every rule that matches the path.
    pub matching: Vec<RefRule>,
}

/// RFC 3986 §2.3 unreserved characters.
fn unreserved(byte: u8) -> bool {
    matches!(byte, b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~')
}

/// Reserved characters with no role in a path or a pattern (and, in the query, `/` and `?`):
/// their escapes are decoded too, so that both spellings compare equal (RFC 9309 §2.2.2's table).
fn plain_reserved(byte: u8, in_query: bool) -> bool {
    b":@!'(),;[]".contains(&byte) || (in_query && b"/?".contains(&byte))
}

/// Octets that are always percent-encoded before comparison.
fn encoded(byte: u8) -> bool {
    !(0x20..0x7F).contains(&byte) || b" \"<>\\^`{|}".contains(&byte)
}

fn hex_digit(byte: u8) -> Option<u8> {
    char::from(byte)
        .to_digit(16)
        .and_then(|digit| u8::try_from(digit).ok())
}

/// Percent-encoding normalisation of a path (`pattern` false) or of a pattern. In a path, `*`
/// and `$` are literal and written `%2A` and `%24`; in a pattern, a raw `*` is the wildcard, a
/// final raw `$` the anchor, and any other `$` the literal `%24`.
pub fn normalize_as(input: &[u8], pattern: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < input.len() {
        let byte = input[i];
        let in_query = input[..i].contains(&b'?');
        if byte == b'%' && i + 2 < input.len() {
            if let (Some(high), Some(low)) = (hex_digit(input[i + 1]), hex_digit(input[i + 2])) {
                let value = high * 16 + low;
                if unreserved(value) || plain_reserved(value, in_query) {
                    out.push(value);
                } else {
                    out.push(b'%');
                    out.push(input[i + 1].to_ascii_uppercase());
                    out.push(input[i + 2].to_ascii_uppercase());
                }
                i += 3;
                continue;
            }
        }
        let literal_special = if pattern {
            byte == b'$' && i + 1 < input.len()
        } else {
            byte == b'*' || byte == b'$'
        };
        if encoded(byte) || literal_special {
            out.extend_from_slice(format!("%{byte:02X}").as_bytes());
        } else {
            out.push(byte);
        }
        i += 1;
    }
    out
}

/// Percent-encoding normalisation of a path.
pub fn normalize(input: &[u8]) -> Vec<u8> {
    normalize_as(input, false)
}

/// A pattern's length in octets for precedence: its normalised length, where a literal `$`
/// written raw counts once (it is compared as `%24`).
pub fn pattern_length(written: &str, normalised: &[u8]) -> usize {
    let inner = written.strip_suffix('$').unwrap_or(written);
    normalised.len() - 2 * inner.matches('$').count()
}

/// The product token of a crawler's name: its leading run of letters, `-` and `_`.
pub fn product_token(agent: &str) -> &str {
    let agent = agent.trim_start();
    let end = agent
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-' || c == '_'))
        .unwrap_or(agent.len());
    &agent[..end]
}

/// Whether `pattern` (normalised, `*` a wildcard, no `$` anchor) matches `text` from its first
/// octet: entirely when `anchored`, else some prefix of it.
fn glob(pattern: &[u8], text: &[u8], anchored: bool) -> bool {
    // matched[j]: the pattern read so far matches text[..j].
    let mut matched = vec![false; text.len() + 1];
    matched[0] = true;
    for &p in pattern {
        let mut next = vec![false; text.len() + 1];
        if p == b'*' {
            let mut any = false;
            for j in 0..=text.len() {
                any |= matched[j];
                next[j] = any;
            }
        } else {
            for j in 1..=text.len() {
                next[j] = matched[j - 1] && text[j - 1] == p;
            }
        }
        if !next.contains(&true) {
            return false;
        }
        matched = next;
    }
    if anchored {
        matched[text.len()]
    } else {
        matched.contains(&true)
    }
}

/// Whether a normalised pattern matches a normalised path.
pub fn pattern_matches(pattern: &[u8], path: &[u8]) -> bool {
    if pattern.is_empty() {
        return false;
    }
    let (body, anchored) = match pattern.split_last() {
        Some((b'$', body)) => (body, true),
        _ => (pattern, false),
    };
    // The literal text before the first `*` must be a prefix of the path: a quick rejection that
    // keeps files of thousands of rules fast, and changes nothing.
    let literal = body.iter().position(|&b| b == b'*').unwrap_or(body.len());
    if !path.starts_with(&body[..literal]) {
        return false;
    }
    glob(&body[literal..], &path[literal..], anchored)
}

/// Whether a rule line's value is a rule: a non-empty pattern starting with `/` or `*`.
pub fn is_rule_pattern(pattern: &str) -> bool {
    pattern.starts_with('/') || pattern.starts_with('*')
}

/// The reference verdict for `agent` and `path` (a path with its query, without a fragment).
pub fn decide(file: &RefFile, agent: &str, path: &str) -> RefVerdict {
    let path = normalize(path.as_bytes());
    let mut verdict = RefVerdict {
        allowed: true,
        reason: Reason::NoGroup,
        group: GroupKind::None,
        group_lines: Vec::new(),
        path,
        best: Vec::new(),
        matching: Vec::new(),
    };
    // `/robots.txt` is always allowed, whatever its query: it is the same file.
    if verdict.path.split(|&b| b == b'?').next() == Some(&b"/robots.txt"[..]) {
        verdict.reason = Reason::RobotsTxt;
        return verdict;
    }
    let token = product_token(agent);
    let mut groups: Vec<&RefGroup> = file
        .groups
        .iter()
        .filter(|group| {
            !token.is_empty()
                && group
                    .agents
                    .iter()
                    .any(|name| name.eq_ignore_ascii_case(token))
        })
        .collect();
    verdict.group = GroupKind::Agent;
    if groups.is_empty() {
        groups = file.groups.iter().filter(|group| group.star).collect();
        verdict.group = GroupKind::Star;
    }
    if groups.is_empty() {
        verdict.group = GroupKind::None;
        return verdict;
    }
    verdict.group_lines = groups.iter().map(|group| group.line).collect();
    let mut best_length = 0;
    for rule in groups.iter().flat_map(|group| group.rules.iter()) {
        if !is_rule_pattern(&rule.pattern) {
            continue;
        }
        let pattern = normalize_as(rule.pattern.as_bytes(), true);
        if !pattern_matches(&pattern, &verdict.path) {
            continue;
        }
        verdict.matching.push(rule.clone());
        let length = pattern_length(&rule.pattern, &pattern);
        if length > best_length {
            best_length = length;
            verdict.best.clear();
        }
        if length == best_length {
            verdict.best.push(rule.clone());
        }
    }
    if verdict.best.is_empty() {
        verdict.reason = Reason::NoMatchingRule;
    } else {
        verdict.reason = Reason::Rule;
        verdict.allowed = verdict.best.iter().any(|rule| rule.kind == RuleKind::Allow);
    }
    verdict
}

/// The path with `.`/`..` segments removed and runs of `/` merged (the query kept as it is), the
/// obvious way: a stack of segments.
pub fn resolve(normal: &[u8]) -> Vec<u8> {
    let end = normal
        .iter()
        .position(|&b| b == b'?')
        .unwrap_or(normal.len());
    let (path, query) = normal.split_at(end);
    let mut stack: Vec<&[u8]> = Vec::new();
    let segments: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let mut slash_at_end = false;
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            b"" => slash_at_end = last && i > 0,
            b"." => slash_at_end = last,
            b".." => {
                stack.pop();
                slash_at_end = last;
            }
            other => {
                stack.push(other);
                slash_at_end = false;
            }
        }
    }
    let mut out = Vec::new();
    for segment in &stack {
        out.push(b'/');
        out.extend_from_slice(segment);
    }
    if stack.is_empty() || slash_at_end {
        out.push(b'/');
    }
    out.extend_from_slice(query);
    out
}

/// Whether `path` is allowed in every form an origin may read it: as sent, resolved, and with
/// `%2F`/`%5C` in the path read as `/` and then resolved (what `Robots::check` enforces).
pub fn request_allowed(file: &RefFile, agent: &str, path: &str) -> bool {
    let normal = normalize(path.as_bytes());
    let end = normal
        .iter()
        .position(|&b| b == b'?')
        .unwrap_or(normal.len());
    let decoded = String::from_utf8_lossy(&normal[..end])
        .replace("%2F", "/")
        .replace("%5C", "/")
        + &String::from_utf8_lossy(&normal[end..]);
    let forms = [
        String::from_utf8_lossy(&normal).into_owned(),
        String::from_utf8_lossy(&resolve(&normal)).into_owned(),
        String::from_utf8_lossy(&resolve(decoded.as_bytes())).into_owned(),
    ];
    forms.iter().all(|form| decide(file, agent, form).allowed)
}

/// Compares `robots.check_exact(agent, url)` with the reference on `file` for `path` (what `url`
/// reduces to). Returns a description of the first difference.
pub fn compare(
    robots: &Robots,
    file: &RefFile,
    agent: &str,
    url: &str,
    path: &str,
) -> Result<(), String> {
    let got = robots.check_exact(agent, url);
    let want = decide(file, agent, path);
    let context = || {
        format!(
            "agent {agent:?}, url {url:?}, normalised path {:?}\n  crate: allowed={} reason={:?} \
             group={:?} group_lines={:?} rule={:?}\n  reference: allowed={} reason={:?} \
             group={:?} group_lines={:?} best={:?}",
            String::from_utf8_lossy(&want.path),
            got.allowed,
            got.reason,
            got.group,
            got.group_lines,
            got.rule,
            want.allowed,
            want.reason,
            want.group,
            want.group_lines,
            want.best,
        )
    };
    let unread = !matches!(want.reason, Reason::NoGroup | Reason::RobotsTxt);
    if unread && want.path.len().max(path.len()) > MAX_JUDGED_PATH {
        // Longer, as sent or normalised, than any path the crate judges: disallowed unread,
        // whatever the rules say.
        if got.allowed || got.reason != Reason::OverBudget {
            return Err(format!(
                "a path over the judged limit was judged: {}",
                context()
            ));
        }
        return Ok(());
    }
    if got.allowed != want.allowed {
        return Err(format!("verdicts differ: {}", context()));
    }
    if got.reason != want.reason {
        return Err(format!("reasons differ: {}", context()));
    }
    if got.group != want.group || got.group_lines != want.group_lines.as_slice() {
        return Err(format!("groups differ: {}", context()));
    }
    match got.rule {
        Some(rule) => {
            if got.reason != Reason::Rule {
                return Err(format!("a rule without reason `rule`: {}", context()));
            }
            let expected_kind = if got.allowed {
                RuleKind::Allow
            } else {
                RuleKind::Disallow
            };
            if rule.kind != expected_kind {
                return Err(format!("the rule's kind is not the verdict: {}", context()));
            }
            let named = RefRule {
                kind: rule.kind,
                pattern: rule.pattern.clone(),
                line: rule.line,
            };
            if !want.best.contains(&named) {
                let why = if want.matching.contains(&named) {
                    "matches but is not among the longest"
                } else {
                    "does not match (or is not in the selected groups)"
                };
                return Err(format!("the deciding rule {why}: {}", context()));
            }
        }
        None => {
            if got.reason == Reason::Rule {
                return Err(format!("reason `rule` without a rule: {}", context()));
            }
        }
    }
    if !got.allowed && got.rule.is_none() {
        return Err(format!("disallowed without a rule: {}", context()));
    }
    Ok(())
}

pub use super::rng::Rng;

/// The pieces paths and patterns are made of: few, so that patterns and paths overlap often,
/// with escapes of the same characters in both cases, and invalid escapes.
pub const PIECES: &[&str] = &[
    "/", "/", "a", "a", "b", "b", ".", "?", "=", "%", "*", "$", "-", "~", "é", "_", "ab", "/a",
    "%61", "%62", "%2e", "%2E", "%7e", "%7E", "%2F", "%2f", "%3F", "%c3%a9", "%C3%A9", "%zz", "%a",
    "%24", "%2A", " ", "|", "\"",
];

/// Pieces for what a `*` in a pattern stands for in a path, and for path suffixes.
const PATH_PIECES: &[&str] = &[
    "/", "a", "b", ".", "?", "=", "-", "~", "é", "_", "%61", "%2e", "%2F", "%c3%a9", "x", "$", "%",
];

/// Escapes and the characters they stand for, to swap in either direction.
const EQUIVALENT: &[(&str, &str)] = &[
    ("%61", "a"),
    ("%41", "A"),
    ("%62", "b"),
    ("%2e", "."),
    ("%2E", "."),
    ("%2d", "-"),
    ("%2D", "-"),
    ("%7e", "~"),
    ("%7E", "~"),
    ("%5F", "_"),
    ("%c3%a9", "é"),
    ("%C3%A9", "é"),
    ("%78", "x"),
    ("%2F", "/"),
    ("%3F", "?"),
    ("%24", "$"),
    ("%2A", "*"),
];

/// `count` random pieces from `pieces`.
pub fn pieces(rng: &mut Rng, pieces: &[&str], count: usize) -> String {
    (0..count).map(|_| *rng.pick(pieces)).collect()
}

/// A path made of random pieces.
pub fn random_path(rng: &mut Rng) -> String {
    let count = rng.below(8);
    format!("/{}", pieces(rng, PIECES, count))
}

/// Rewrites some characters as escapes, some escapes as characters, and changes the case of
/// some escapes' hex digits.
fn vary_encoding(rng: &mut Rng, text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    'outer: while let Some(c) = rest.chars().next() {
        if rng.chance(15) {
            for &(escape, plain) in EQUIVALENT {
                if rest.starts_with(plain) && rng.chance(50) {
                    out.push_str(escape);
                    rest = &rest[plain.len()..];
                    continue 'outer;
                }
                if rest.starts_with(escape) && rng.chance(50) {
                    out.push_str(plain);
                    rest = &rest[escape.len()..];
                    continue 'outer;
                }
            }
            if c == '%' && rest.len() >= 3 && rest.is_char_boundary(3) {
                let escape = &rest[..3];
                if rng.chance(50) {
                    out.push_str(&escape.to_ascii_lowercase());
                } else {
                    out.push_str(&escape.to_ascii_uppercase());
                }
                rest = &rest[3..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A path near `pattern`: its `*` replaced by random text, its `$` dropped or kept, then perhaps
/// cut, extended, given a query, and re-encoded. Always starts with `/`.
pub fn derive_path(rng: &mut Rng, pattern: &str) -> String {
    let mut path = String::new();
    let (body, dollar) = match pattern.strip_suffix('$') {
        Some(body) if !rng.chance(10) => (body, true),
        _ => (pattern, false),
    };
    for c in body.chars() {
        if c == '*' && !rng.chance(5) {
            let count = rng.below(4);
            path.push_str(&pieces(rng, PATH_PIECES, count));
        } else {
            path.push(c);
        }
    }
    if rng.chance(15) && !path.is_empty() {
        let mut cut = rng.below(path.len());
        while !path.is_char_boundary(cut) {
            cut -= 1;
        }
        path.truncate(cut);
    }
    if !dollar || rng.chance(25) {
        if rng.chance(50) {
            let count = 1 + rng.below(3);
            path.push_str(&pieces(rng, PATH_PIECES, count));
        }
        if rng.chance(20) {
            let suffix = *rng.pick(&["?", "?a=b", "?x", "?a=b&c=%7e", "?é"]);
            path.push_str(suffix);
        }
    }
    if rng.chance(40) {
        path = vary_encoding(rng, &path);
    }
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    path
}

/// A query for `path`: the path itself, or a full URL, sometimes with a fragment (which the
/// matcher must ignore). A path that starts with `//` is always given as a full URL, since on its
/// own it would read as a network-path reference (`//host/path`).
pub fn url_for(rng: &mut Rng, path: &str) -> String {
    let mut url = if path.starts_with("//") || rng.chance(20) {
        format!(
            "{}{path}",
            rng.pick(&["https://example.com", "http://a.b:8080"])
        )
    } else {
        path.to_owned()
    };
    if rng.chance(10) {
        let suffix = *rng.pick(&["#", "#frag", "#/a?b"]);
        url.push_str(suffix);
    }
    url
}

/// A crawler name that reduces to `token`, written in a random case, perhaps with a version.
pub fn vary_agent(rng: &mut Rng, token: &str) -> String {
    let mut agent: String = token
        .chars()
        .map(|c| {
            if rng.chance(30) {
                if c.is_ascii_lowercase() {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            } else {
                c
            }
        })
        .collect();
    if rng.chance(25) {
        let suffix = *rng.pick(&["/1.0", "/2.1 (+https://example.com/bot)", " 3", "; x"]);
        agent.push_str(suffix);
    }
    if rng.chance(5) {
        agent.insert(0, ' ');
    }
    agent
}
