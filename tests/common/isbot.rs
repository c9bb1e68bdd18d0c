//! The peer: isbot's pattern (`tests/fixtures/isbot/patterns.json`, its `src/patterns.json`),
//! run as isbot runs it (`new RegExp(list.join("|"), "i")`) with the `regex` crate.
//!
//! JavaScript's `\w`, `\d` and `\b` are ASCII, so the pattern is compiled without Unicode. The
//! `regex` crate has no look-around (its matching is linear by design), and six alternatives
//! of isbot's use it, all in one shape: a negative look-behind of literals, a core, a negative
//! look-ahead (`(?<! cu)bots?(?:\b|_)`, `java(?!;)`). Those are run as their core, and a match
//! counts when the text before it ends in none of the literals and the look-ahead does not match
//! after it, tried at every place the core matches. An alternative in any other shape fails the
//! build of the peer, so that a new isbot pattern is looked at rather than misread.

use regex::bytes::{Regex, RegexBuilder};

/// An alternative with look-around.
struct LookAround {
    /// Lower-cased literals the text before a match must not end with.
    behind: Vec<Vec<u8>>,
    core: Regex,
    /// Must not match right after the core's match.
    ahead: Option<Regex>,
}

impl LookAround {
    fn is_match(&self, header: &[u8]) -> bool {
        let mut from = 0;
        while let Some(found) = self.core.find_at(header, from) {
            let before = header[..found.start()].to_ascii_lowercase();
            let behind_ok = !self.behind.iter().any(|lit| before.ends_with(lit));
            let ahead_ok = self
                .ahead
                .as_ref()
                .is_none_or(|ahead| !ahead.is_match(&header[found.end()..]));
            if behind_ok && ahead_ok {
                return true;
            }
            if found.start() >= header.len() {
                return false;
            }
            from = found.start() + 1;
        }
        false
    }
}

/// isbot's pattern.
pub struct IsBot {
    /// The alternatives without look-around, joined (`None` when there are none).
    plain: Option<Regex>,
    plain_list: Vec<(String, Regex)>,
    look_around: Vec<(String, LookAround)>,
}

/// JavaScript's syntax where the `regex` crate's differs: in a class, a `-` after a class
/// escape (`[\w\d-.]`) is a literal `-` in JavaScript and an error here.
fn from_javascript(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        out.push(c);
        match c {
            '\\' => {
                let Some(escaped) = chars.next() else { break };
                out.push(escaped);
                if in_class && "wdsWDS".contains(escaped) && chars.peek() == Some(&'-') {
                    chars.next();
                    if chars.peek() == Some(&']') {
                        out.push('-');
                    } else {
                        out.push_str("\\-");
                    }
                }
            }
            '[' => in_class = true,
            ']' => in_class = false,
            _ => {}
        }
    }
    out
}

fn compile(pattern: &str) -> Regex {
    RegexBuilder::new(&from_javascript(pattern))
        .case_insensitive(true)
        .unicode(false)
        .build()
        .unwrap_or_else(|e| panic!("isbot pattern {pattern:?}: {e}"))
}

/// `(?<!a|b)` at the start: the literals and the rest.
fn split_behind(pattern: &str) -> (Vec<Vec<u8>>, &str) {
    let Some(rest) = pattern.strip_prefix("(?<!") else {
        return (Vec::new(), pattern);
    };
    let close = rest.find(')').expect("a closed look-behind");
    let literals = rest[..close]
        .split('|')
        .map(|lit| {
            assert!(
                lit.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b" /_-".contains(&b)),
                "look-behind {lit:?} is not a literal"
            );
            lit.to_ascii_lowercase().into_bytes()
        })
        .collect();
    (literals, &rest[close + 1..])
}

/// `(?!…)` at the end: the core and the look-ahead's inside.
fn split_ahead(pattern: &str) -> (&str, Option<&str>) {
    match pattern.find("(?!") {
        Some(at) => {
            let inside = pattern[at + 3..]
                .strip_suffix(')')
                .expect("a look-ahead that ends the alternative");
            (&pattern[..at], Some(inside))
        }
        None => (pattern, None),
    }
}

impl IsBot {
    /// Builds the pattern from isbot's list.
    pub fn from_list(list: &[String]) -> IsBot {
        let (fancy, plain): (Vec<&String>, Vec<&String>) = list
            .iter()
            .partition(|p| p.contains("(?<") || p.contains("(?!"));
        let joined = plain
            .iter()
            .map(|p| format!("(?:{p})"))
            .collect::<Vec<_>>()
            .join("|");
        let look_around = fancy
            .into_iter()
            .map(|pattern| {
                let (behind, rest) = split_behind(pattern);
                let (core, ahead) = split_ahead(rest);
                assert!(
                    !core.contains("(?<") && !core.contains("(?!") && !core.contains("(?="),
                    "isbot pattern {pattern:?} has look-around crawlgate's peer cannot run"
                );
                let parts = LookAround {
                    behind,
                    core: compile(core),
                    ahead: ahead.map(|a| compile(&format!("^(?:{a})"))),
                };
                (pattern.clone(), parts)
            })
            .collect();
        IsBot {
            plain: (!plain.is_empty()).then(|| compile(&joined)),
            plain_list: plain.iter().map(|p| ((*p).clone(), compile(p))).collect(),
            look_around,
        }
    }

    /// The vendored pattern.
    pub fn vendored() -> IsBot {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/isbot/patterns.json"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let list: Vec<String> = serde_json::from_str(&text).unwrap();
        IsBot::from_list(&list)
    }

    /// Whether isbot calls the header a bot (isbot answers `false` for an empty header).
    pub fn is_bot(&self, header: &str) -> bool {
        let h = header.as_bytes();
        !h.is_empty()
            && (self.plain.as_ref().is_some_and(|re| re.is_match(h))
                || self.look_around.iter().any(|(_, p)| p.is_match(h)))
    }

    /// The first alternative that matches, for explanations.
    pub fn why(&self, header: &str) -> Option<&str> {
        let h = header.as_bytes();
        self.plain_list
            .iter()
            .find(|(_, re)| re.is_match(h))
            .map(|(p, _)| p.as_str())
            .or_else(|| {
                self.look_around
                    .iter()
                    .find(|(_, p)| p.is_match(h))
                    .map(|(p, _)| p.as_str())
            })
    }
}
