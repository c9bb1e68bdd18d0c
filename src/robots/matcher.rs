//! A group's rules compiled into one automaton that names the deciding rule in one pass.
//!
//! The rules are sorted by precedence (most octets first, allow before disallow) and given to
//! `regex_automata` as one multi-pattern regex with leftmost-first semantics and an anchored
//! search. With every match starting at the path's first octet, leftmost-first reports the
//! earliest pattern in that order that matches at all — the rule RFC 9309 says decides. A query
//! is therefore one forward scan of the path, whatever the number of rules.

use super::pattern::Prepared;
use super::problem::{Problem, ProblemKind};
use regex_automata::meta::{self, Regex};
use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};

/// The most memory one compiled NFA may take. A 512 KiB file of plain prefixes needs about a
/// tenth of it; a group that needs more is split into several automata rather than refused.
const NFA_SIZE_LIMIT: usize = 64 << 20;

/// The lazy DFA's cache, per automaton and per thread that queries it, unless configured. The
/// regex-automata default (2 MiB) thrashes on groups of thousands of patterns, which makes it fall
/// back to a much slower engine; `benches/matcher.rs` measures both. The cache grows only as
/// queries need states, so small groups never take this much.
pub const DEFAULT_LAZY_DFA_CACHE: usize = 8 << 20;

/// One automaton over a run of rules in precedence order.
#[derive(Debug)]
struct Chunk {
    regex: Regex,
    /// Position in [`GroupMatcher::order`] of this automaton's pattern 0.
    offset: usize,
}

/// The compiled rules of one group (or of several merged groups).
#[derive(Debug, Default)]
pub(crate) struct GroupMatcher {
    /// Rule indices (into the file's rules) in precedence order.
    order: Vec<usize>,
    /// Automata over consecutive runs of `order`: usually one.
    chunks: Vec<Chunk>,
}

fn builder(cache_capacity: usize) -> meta::Builder {
    let mut builder = Regex::builder();
    builder
        .syntax(
            syntax::Config::new()
                .unicode(false)
                .utf8(false)
                .dot_matches_new_line(true),
        )
        .configure(
            Regex::config()
                .match_kind(MatchKind::LeftmostFirst)
                .which_captures(WhichCaptures::Implicit)
                .utf8_empty(false)
                .auto_prefilter(false)
                .nfa_size_limit(Some(NFA_SIZE_LIMIT))
                .hybrid_cache_capacity(cache_capacity),
        );
    builder
}

impl GroupMatcher {
    /// Compiles the given rules. Rules that cannot be compiled (a pattern alone over the size
    /// limit) are reported in `problems` and left out; the rest still apply.
    pub fn build(
        mut rules: Vec<Prepared>,
        cache_capacity: usize,
        problems: &mut Vec<Problem>,
    ) -> Self {
        rules.sort_by(Prepared::precedence);
        rules.dedup_by(|later, earlier| later.same_as(earlier));
        let mut matcher = GroupMatcher::default();
        let regexes: Vec<String> = rules.iter().map(Prepared::regex).collect();
        matcher.compile(&rules, &regexes, cache_capacity, problems);
        matcher
    }

    /// Compiles `rules` into as few automata as the size limits allow, keeping their order.
    fn compile(
        &mut self,
        rules: &[Prepared],
        regexes: &[String],
        cache_capacity: usize,
        problems: &mut Vec<Problem>,
    ) {
        if rules.is_empty() {
            return;
        }
        match builder(cache_capacity).build_many(regexes) {
            Ok(regex) => {
                self.chunks.push(Chunk {
                    regex,
                    offset: self.order.len(),
                });
                self.order.extend(rules.iter().map(|rule| rule.rule));
            }
            Err(_) if rules.len() > 1 => {
                let half = rules.len() / 2;
                self.compile(&rules[..half], &regexes[..half], cache_capacity, problems);
                self.compile(&rules[half..], &regexes[half..], cache_capacity, problems);
            }
            Err(_) => problems.push(Problem {
                line: rules[0].line,
                text: String::from_utf8_lossy(&rules[0].normalized).into_owned(),
                kind: ProblemKind::TooComplex,
            }),
        }
    }

    /// The index of the rule that decides for `path` (normalised), if any rule matches.
    pub fn decide(&self, path: &[u8]) -> Option<usize> {
        let input = Input::new(path).anchored(Anchored::Yes);
        // Chunks are in precedence order too: the first chunk with a match holds the winner.
        self.chunks.iter().find_map(|chunk| {
            let found = chunk.regex.search_half(&input)?;
            self.order
                .get(chunk.offset + found.pattern().as_usize())
                .copied()
        })
    }

    /// How many distinct rules were compiled.
    pub fn len(&self) -> usize {
        self.order.len()
    }
}
