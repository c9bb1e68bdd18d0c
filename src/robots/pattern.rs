//! One rule's pattern, made ready to compile: normalised, ranked, and turned into a regex.
//!
//! RFC 9309 §2.2.2: a pattern matches from the first octet of the path, `*` matches any run of
//! octets, and `$` anchors the end only when it is the pattern's last character. The rule whose
//! pattern has the most octets wins, and `allow` wins a tie: [`Prepared::precedence`] orders rules
//! so that the first one that matches is the one that decides.

use super::parse::{Rule, RuleKind};
use super::path::normalize;
use std::cmp::Ordering;

/// A rule ready for compilation: the index of the rule in the file, and its normalised pattern.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// Index into [`super::parse::ParsedFile::rules`].
    pub rule: usize,
    pub kind: RuleKind,
    pub line: u32,
    /// The pattern after percent-encoding normalisation: what is compared, and what is counted.
    pub normalized: Vec<u8>,
}

impl Prepared {
    pub fn new(index: usize, rule: &Rule) -> Self {
        Prepared {
            rule: index,
            kind: rule.kind,
            line: rule.line,
            normalized: normalize(rule.pattern.as_bytes()).into_owned(),
        }
    }

    /// The order in which rules are tried: most octets first, then allow before disallow, then
    /// file order. The first rule in this order that matches a path decides for it.
    pub fn precedence(&self, other: &Self) -> Ordering {
        let allow_first = |kind| matches!(kind, RuleKind::Disallow);
        other
            .normalized
            .len()
            .cmp(&self.normalized.len())
            .then_with(|| allow_first(self.kind).cmp(&allow_first(other.kind)))
            .then_with(|| self.line.cmp(&other.line))
    }

    /// Whether two rules are the same rule twice (RFC 9309: duplicates MAY be deduplicated).
    pub fn same_as(&self, other: &Self) -> bool {
        self.kind == other.kind && self.normalized == other.normalized
    }

    /// The pattern's body (without a final `$` or trailing `*`s) and whether it must match the
    /// whole path: `/fish*` is (`/fish`, prefix), `/a$` is (`/a`, whole), `/a*$` is (`/a`, prefix).
    fn body(&self) -> (&[u8], bool) {
        let (body, mut whole) = match self.normalized.split_last() {
            Some((b'$', body)) => (body, true),
            _ => (&self.normalized[..], false),
        };
        let mut end = body.len();
        while end > 0 && body[end - 1] == b'*' {
            end -= 1;
            whole = false;
        }
        (&body[..end], whole)
    }

    /// What the pattern is, when it has no `*` at all: a literal prefix of the path, or (with a
    /// final `$`) the whole path. A trailing `*` is excluded too although it matches like a
    /// prefix: it counts in the pattern's length, so the longest body would no longer be the
    /// rule that takes precedence (`allow: *` ties with `disallow: /`, and allow wins).
    pub fn literal(&self) -> Option<Literal<'_>> {
        if self.normalized.contains(&b'*') {
            return None;
        }
        let (body, whole) = self.body();
        Some(if whole {
            Literal::Whole(body)
        } else {
            Literal::Prefix(body)
        })
    }

    /// The pattern as a regex over bytes, for a search anchored at the path's first octet.
    ///
    /// `*` runs become `.*` (with `.` matching any byte); a trailing `*` or `*$` is dropped since
    /// matching is by prefix anyway; a final `$` becomes the end-of-input anchor.
    pub fn regex(&self) -> String {
        let (body, anchored) = self.body();
        let mut regex = String::with_capacity(body.len() + 8);
        let mut previous_star = false;
        for &byte in body {
            if byte == b'*' {
                if !previous_star {
                    regex.push_str(".*");
                }
                previous_star = true;
                continue;
            }
            previous_star = false;
            if is_regex_meta(byte) {
                regex.push('\\');
            }
            // Normalised patterns are ASCII: every other octet was percent-encoded.
            regex.push(char::from(byte));
        }
        if anchored {
            regex.push('$');
        }
        regex
    }
}

/// A pattern without wildcards, as the literal matcher uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Literal<'a> {
    /// Matches every path that starts with these bytes.
    Prefix(&'a [u8]),
    /// Matches exactly this path.
    Whole(&'a [u8]),
}

/// The characters regex-syntax gives a meaning to, which must be escaped to stand for themselves.
fn is_regex_meta(byte: u8) -> bool {
    matches!(
        byte,
        b'\\'
            | b'.'
            | b'+'
            | b'*'
            | b'?'
            | b'('
            | b')'
            | b'|'
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'^'
            | b'$'
            | b'#'
            | b'&'
            | b'-'
            | b'~'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(kind: RuleKind, pattern: &str, line: u32) -> Prepared {
        let rule = Rule {
            kind,
            pattern: pattern.into(),
            line,
        };
        Prepared::new(0, &rule)
    }

    fn regex(pattern: &str) -> String {
        prepared(RuleKind::Disallow, pattern, 1).regex()
    }

    #[test]
    fn patterns_become_anchored_prefix_regexes() {
        assert_eq!(regex("/fish"), "/fish");
        assert_eq!(regex("/*.php$"), "/.*\\.php$");
        assert_eq!(regex("/fish*"), "/fish");
        assert_eq!(regex("/fish**$"), "/fish");
        assert_eq!(regex("/a**b"), "/a.*b");
        assert_eq!(regex("/a$b"), "/a\\$b");
        assert_eq!(regex("/$"), "/$");
        assert_eq!(regex("/a?b=(c)|[d]"), "/a\\?b=\\(c\\)%7C\\[d\\]");
        assert_eq!(regex("/caf\u{e9}"), "/caf%C3%A9");
    }

    #[test]
    fn literal_shapes() {
        let shape = |p: &str| {
            prepared(RuleKind::Disallow, p, 1)
                .literal()
                .map(|l| format!("{l:?}"))
        };
        let prefix = |b: &[u8]| Some(format!("{:?}", Literal::Prefix(b)));
        let whole = |b: &[u8]| Some(format!("{:?}", Literal::Whole(b)));
        assert_eq!(shape("/fish"), prefix(b"/fish"));
        assert_eq!(shape("/a$"), whole(b"/a"));
        assert_eq!(shape("/a$b"), prefix(b"/a$b"));
        assert_eq!(shape("/fish*"), None);
        assert_eq!(shape("/*.php"), None);
        assert_eq!(shape("*"), None);
    }

    #[test]
    fn longer_patterns_come_first_and_allow_wins_ties() {
        let mut rules = [
            prepared(RuleKind::Disallow, "/a", 1),
            prepared(RuleKind::Disallow, "/abc", 2),
            prepared(RuleKind::Allow, "/ab", 3),
            prepared(RuleKind::Disallow, "/ab", 4),
            prepared(RuleKind::Allow, "/xy", 5),
        ];
        rules.sort_by(Prepared::precedence);
        let lines: Vec<u32> = rules.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![2, 3, 5, 4, 1]);
    }

    #[test]
    fn length_is_counted_after_normalisation() {
        let encoded = prepared(RuleKind::Disallow, "/%62%61%7A", 1);
        assert_eq!(encoded.normalized, b"/baz");
        assert!(encoded.same_as(&prepared(RuleKind::Disallow, "/baz", 2)));
    }
}
