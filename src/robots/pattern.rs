//! One rule's pattern, made ready to compile: normalised, ranked, and sorted into the cheapest
//! shape that can answer it.
//!
//! RFC 9309 §2.2.2: a pattern matches from the first octet of the path, `*` matches any run of
//! octets, and `$` anchors the end only when it is the pattern's last character. The rule whose
//! pattern has the most octets wins, and `allow` wins a tie: [`Prepared::key`] ranks rules so
//! that the matching rule with the greatest key is the one that decides.

use super::parse::{Rule, RuleKind};
use super::path::normalize_pattern;

/// A rule's rank: the matching rule with the greatest key decides. It orders by the pattern's
/// length in octets, then allow before disallow, then the earlier line (so that a verdict names
/// the first of two equal rules). Keys of different rules of one file are different.
pub(crate) type Key = u64;

/// A rule ready for compilation: the index of the rule in the file, and its normalised pattern.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// Index into [`super::parse::ParsedFile::rules`].
    pub rule: usize,
    pub kind: RuleKind,
    pub line: u32,
    /// The pattern in normal form (see [`normalize_pattern`]): raw `*` is the wildcard, a final
    /// raw `$` the end anchor, every other octet literal.
    pub normalized: Vec<u8>,
    /// The pattern's length in octets, as RFC 9309 counts them for precedence: the normalised
    /// pattern, where a literal `$` that was written raw counts once.
    pub length: u32,
}

impl Prepared {
    pub fn new(index: usize, rule: &Rule) -> Self {
        let normalized = normalize_pattern(rule.pattern.as_bytes()).into_owned();
        // A raw `$` before the end is normalised to the three octets `%24`; it was one.
        let body = rule.pattern.strip_suffix('$').unwrap_or(&rule.pattern);
        let inner_dollars = memchr::memchr_iter(b'$', body.as_bytes()).count();
        let length = normalized.len().saturating_sub(2 * inner_dollars);
        Prepared {
            rule: index,
            kind: rule.kind,
            line: rule.line,
            normalized,
            length: u32::try_from(length).unwrap_or(u32::MAX),
        }
    }

    /// The rank of this rule (see [`Key`]).
    pub fn key(&self) -> Key {
        let allow = u64::from(self.kind == RuleKind::Allow);
        (u64::from(self.length) << 33) | (allow << 32) | u64::from(u32::MAX - self.line)
    }

    /// Whether two rules are the same rule twice (RFC 9309: duplicates MAY be deduplicated).
    pub fn same_as(&self, other: &Self) -> bool {
        self.kind == other.kind && self.normalized == other.normalized
    }

    /// The cheapest shape that answers this pattern.
    ///
    /// `/fish`, `/fish*` and `/fish*$` are prefixes, `/fish$` a whole path, and anything with a
    /// `*` before its last literal octet a [`Glob`].
    pub fn shape(&self) -> Shape<'_> {
        let (body, mut anchored) = match self.normalized.split_last() {
            Some((b'$', body)) => (body, true),
            _ => (&self.normalized[..], false),
        };
        let mut end = body.len();
        while end > 0 && body[end - 1] == b'*' {
            end -= 1;
            anchored = false;
        }
        let body = &body[..end];
        let mut pieces = body.split(|&b| b == b'*');
        let first = pieces.next().unwrap_or_default();
        let mut middle: Vec<&[u8]> = pieces.filter(|piece| !piece.is_empty()).collect();
        if middle.is_empty() {
            return match anchored {
                true => Shape::Whole(first),
                false => Shape::Prefix(first),
            };
        }
        let last = if anchored { middle.pop() } else { None };
        Shape::Glob(Glob {
            first,
            middle,
            last,
        })
    }
}

/// What a pattern is, for the matcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape<'a> {
    /// Matches every path that starts with these octets (empty: every path).
    Prefix(&'a [u8]),
    /// Matches exactly this path.
    Whole(&'a [u8]),
    /// A pattern with wildcards inside.
    Glob(Glob<'a>),
}

/// A pattern with wildcards: `first`, then each of `middle` in order with anything between,
/// then, when the pattern ends with `$`, `last` at the very end. `/a/*/b*c$` is first `/a/`,
/// middle `[b]`, last `c`; `*.pdf` is first ``, middle `[.pdf]`, no last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob<'a> {
    pub first: &'a [u8],
    pub middle: Vec<&'a [u8]>,
    pub last: Option<&'a [u8]>,
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

    fn shape(pattern: &str) -> String {
        format!("{:?}", prepared(RuleKind::Disallow, pattern, 1).shape())
    }

    fn glob(first: &str, middle: &[&str], last: Option<&str>) -> String {
        format!(
            "{:?}",
            Shape::Glob(Glob {
                first: first.as_bytes(),
                middle: middle.iter().map(|m| m.as_bytes()).collect(),
                last: last.map(str::as_bytes),
            })
        )
    }

    #[test]
    fn shapes() {
        let prefix = |b: &str| format!("{:?}", Shape::Prefix(b.as_bytes()));
        let whole = |b: &str| format!("{:?}", Shape::Whole(b.as_bytes()));
        assert_eq!(shape("/fish"), prefix("/fish"));
        assert_eq!(shape("/fish*"), prefix("/fish"));
        assert_eq!(shape("/fish**$"), prefix("/fish"));
        assert_eq!(shape("*"), prefix(""));
        assert_eq!(shape("/a$"), whole("/a"));
        assert_eq!(shape("/a$b"), prefix("/a%24b"));
        assert_eq!(shape("/$"), whole("/"));
        assert_eq!(shape("/*.php$"), glob("/", &[], Some(".php")));
        assert_eq!(shape("/*.php"), glob("/", &[".php"], None));
        assert_eq!(shape("*.gif$"), glob("", &[], Some(".gif")));
        assert_eq!(shape("/a/**/b*c$"), glob("/a/", &["/b"], Some("c")));
        assert_eq!(shape("/a*b*"), glob("/a", &["b"], None));
        // `%2A` is the literal octet, not a wildcard.
        assert_eq!(shape("/file-%2A.html"), prefix("/file-%2A.html"));
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
        rules.sort_by_key(|rule| std::cmp::Reverse(rule.key()));
        let lines: Vec<u32> = rules.iter().map(|r| r.line).collect();
        assert_eq!(lines, vec![2, 3, 5, 4, 1]);
    }

    #[test]
    fn length_is_counted_after_normalisation() {
        let encoded = prepared(RuleKind::Disallow, "/%62%61%7A", 1);
        assert_eq!(encoded.normalized, b"/baz");
        assert_eq!(encoded.length, 4);
        assert!(encoded.same_as(&prepared(RuleKind::Disallow, "/baz", 2)));
        // A raw `$` inside a pattern is one octet, though it is compared as `%24`.
        let dollar = prepared(RuleKind::Disallow, "/a$b", 1);
        assert_eq!(
            (dollar.normalized.as_slice(), dollar.length),
            (&b"/a%24b"[..], 4)
        );
        assert_eq!(prepared(RuleKind::Disallow, "/a%24b", 1).length, 6);
        assert_eq!(prepared(RuleKind::Disallow, "/a*$", 1).length, 4);
    }

    #[test]
    fn keys_rank_length_then_allow_then_line() {
        let long = prepared(RuleKind::Disallow, "/abc", 9).key();
        let allow = prepared(RuleKind::Allow, "/ab", 9).key();
        let early = prepared(RuleKind::Disallow, "/ab", 1).key();
        let late = prepared(RuleKind::Disallow, "/xy", 2).key();
        assert!(long > allow && allow > early && early > late);
    }
}
