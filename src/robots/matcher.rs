//! A group's rules compiled into one automaton that names the deciding rule in one pass.
//!
//! The rules are sorted by precedence (most octets first, allow before disallow) and compiled by
//! `regex_automata` into one multi-pattern Thompson NFA, searched by a lazy DFA with
//! leftmost-first semantics and an anchored start. With every match starting at the path's first
//! octet, leftmost-first reports the earliest pattern in that order that matches at all — the rule
//! RFC 9309 says decides. A query is therefore one forward scan of the path, whatever the number
//! of rules.
//!
//! The lazy DFA is used directly rather than through `meta::Regex`: we need no match start (so no
//! reverse automaton, which halves compile time) and, above all, no fallback to the PikeVM, whose
//! scratch memory grows with states × patterns and reached tens of gigabytes on real 512 KiB
//! files. The lazy DFA is told never to give up: when its cache fills it is cleared and rebuilt,
//! which is slower but bounded in memory.
//!
//! Groups whose patterns have no `*` inside (most large files: thousands of plain paths) take a
//! faster path that never builds states at query time: the longest literal prefix of the path
//! comes from one anchored leftmost-longest Aho-Corasick search, whole-path (`$`) patterns from a
//! hash map, and the earlier of the two in precedence order decides. A crawler that walks a site
//! visits new paths all the time; a lazy DFA over thousands of long literals then spends its time
//! building states (measured in `benches/matcher.rs`, group `cache`).

use super::pattern::{Literal, Prepared};
use super::problem::{Problem, ProblemKind};
use aho_corasick::{
    AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind as AcMatchKind, StartKind,
};
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::util::pool::Pool;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};
use std::collections::HashMap;
use std::fmt;

/// The most memory one compiled NFA may take. A 512 KiB file of plain prefixes needs a few MiB;
/// a group that needs more is split into several automata rather than refused.
const NFA_SIZE_LIMIT: usize = 64 << 20;

/// The lazy DFA's cache, per automaton and per thread that queries it, unless configured. It
/// grows only as queries need states, so small groups never take this much. `benches/matcher.rs`
/// measures it against regex-automata's default (2 MiB), which thrashes on thousands of patterns.
pub const DEFAULT_LAZY_DFA_CACHE: usize = 8 << 20;

type CachePool = Pool<Cache, Box<dyn Fn() -> Cache + Send + Sync>>;

/// One automaton over a run of rules in precedence order.
struct Chunk {
    dfa: DFA,
    caches: CachePool,
    /// Position in [`GroupMatcher::order`] of this automaton's pattern 0.
    offset: usize,
}

impl fmt::Debug for Chunk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chunk")
            .field("patterns", &self.dfa.pattern_len())
            .field("offset", &self.offset)
            .finish()
    }
}

/// Groups without wildcards: literal prefixes and whole paths.
#[derive(Debug)]
struct Literals {
    /// Anchored, leftmost-longest: the longest prefix pattern of a path.
    prefixes: Option<AhoCorasick>,
    /// Pattern id → position in [`GroupMatcher::order`].
    prefix_position: Vec<usize>,
    /// Whole-path patterns → position in [`GroupMatcher::order`].
    whole: foldhash::HashMap<Box<[u8]>, usize>,
}

impl Literals {
    /// Builds the literal matcher when every rule is literal (`rules` in precedence order, one
    /// per distinct pattern and kind); `None` when one is not, or the automaton cannot be built.
    fn build(rules: &[Prepared]) -> Option<Literals> {
        let mut prefixes: Vec<&[u8]> = Vec::new();
        let mut prefix_position = Vec::new();
        let mut seen_prefix: HashMap<&[u8], ()> = HashMap::new();
        let mut whole: foldhash::HashMap<Box<[u8]>, usize> = foldhash::HashMap::default();
        for (position, rule) in rules.iter().enumerate() {
            // The first rule in precedence order for a pattern is the one that can decide: an
            // `allow` beats a `disallow` of the same pattern.
            match rule.literal()? {
                Literal::Prefix(body) => {
                    if seen_prefix.insert(body, ()).is_none() {
                        prefixes.push(body);
                        prefix_position.push(position);
                    }
                }
                Literal::Whole(body) => {
                    whole.entry(body.into()).or_insert(position);
                }
            }
        }
        let prefixes = if prefixes.is_empty() {
            None
        } else {
            let automaton = AhoCorasickBuilder::new()
                .match_kind(AcMatchKind::LeftmostLongest)
                .start_kind(StartKind::Anchored)
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .build(&prefixes)
                .ok()?;
            Some(automaton)
        };
        Some(Literals {
            prefixes,
            prefix_position,
            whole,
        })
    }

    /// The position in precedence order of the rule that decides for `path`, if any matches.
    fn decide(&self, path: &[u8]) -> Option<usize> {
        let prefix = self.prefixes.as_ref().and_then(|automaton| {
            let input = aho_corasick::Input::new(path).anchored(aho_corasick::Anchored::Yes);
            let found = automaton.find(input)?;
            self.prefix_position
                .get(found.pattern().as_usize())
                .copied()
        });
        let whole = self.whole.get(path).copied();
        match (prefix, whole) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The compiled rules of one group (or of several merged groups).
#[derive(Debug, Default)]
pub(crate) struct GroupMatcher {
    /// Rule indices (into the file's rules) in precedence order.
    order: Vec<usize>,
    /// The literal fast path, when every rule is literal.
    literals: Option<Literals>,
    /// Otherwise: automata over consecutive runs of `order`, usually one.
    chunks: Vec<Chunk>,
}

/// Compiles patterns into one lazy DFA, or `None` when they exceed the size limits.
fn build_dfa(regexes: &[String], cache_capacity: usize) -> Option<DFA> {
    let nfa = thompson::Compiler::new()
        .syntax(
            syntax::Config::new()
                .unicode(false)
                .utf8(false)
                .dot_matches_new_line(true),
        )
        .configure(
            thompson::Config::new()
                .which_captures(WhichCaptures::None)
                .nfa_size_limit(Some(NFA_SIZE_LIMIT))
                .shrink(false),
        )
        .build_many(regexes)
        .ok()?;
    // The DFA keeps two sparse sets of NFA state ids in its cache: room for them comes on top
    // of the configured capacity, so that large groups still have room for states.
    let capacity = cache_capacity.saturating_add(nfa.states().len().saturating_mul(16));
    DFA::builder()
        .configure(
            DFA::config()
                .match_kind(MatchKind::LeftmostFirst)
                .cache_capacity(capacity)
                .skip_cache_capacity_check(true)
                .minimum_cache_clear_count(None),
        )
        .build_from_nfa(nfa)
        .ok()
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
        if let Some(literals) = Literals::build(&rules) {
            matcher.order = rules.iter().map(|rule| rule.rule).collect();
            matcher.literals = Some(literals);
            return matcher;
        }
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
        match build_dfa(regexes, cache_capacity) {
            Some(dfa) => {
                let for_pool = dfa.clone();
                let create: Box<dyn Fn() -> Cache + Send + Sync> =
                    Box::new(move || for_pool.create_cache());
                self.chunks.push(Chunk {
                    dfa,
                    caches: Pool::new(create),
                    offset: self.order.len(),
                });
                self.order.extend(rules.iter().map(|rule| rule.rule));
            }
            None if rules.len() > 1 => {
                let half = rules.len() / 2;
                self.compile(&rules[..half], &regexes[..half], cache_capacity, problems);
                self.compile(&rules[half..], &regexes[half..], cache_capacity, problems);
            }
            None => problems.push(Problem {
                line: rules[0].line,
                text: String::from_utf8_lossy(&rules[0].normalized).into_owned(),
                kind: ProblemKind::TooComplex,
            }),
        }
    }

    /// The index of the rule that decides for `path` (normalised), if any rule matches.
    pub fn decide(&self, path: &[u8]) -> Option<usize> {
        if let Some(literals) = &self.literals {
            return literals
                .decide(path)
                .and_then(|position| self.order.get(position).copied());
        }
        let input = Input::new(path).anchored(Anchored::Yes);
        // Chunks are in precedence order too: the first chunk with a match holds the winner.
        self.chunks.iter().find_map(|chunk| {
            let mut cache = chunk.caches.get();
            // Errors are impossible here: the DFA never gives up (no minimum clear count), has no
            // quit bytes (no Unicode word boundaries), and is searched with a supported anchor.
            let found = chunk.dfa.try_search_fwd(&mut cache, &input).ok()??;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robots::parse::{Rule, RuleKind};
    use proptest::prelude::*;

    /// The rules as `build` prepares them: sorted by precedence, duplicates removed.
    fn prepared(rules: &[(bool, String)]) -> Vec<Prepared> {
        let mut prepared: Vec<Prepared> = rules
            .iter()
            .enumerate()
            .map(|(index, (allow, pattern))| {
                let kind = if *allow {
                    RuleKind::Allow
                } else {
                    RuleKind::Disallow
                };
                let line = u32::try_from(index).unwrap() + 1;
                let rule = Rule {
                    kind,
                    pattern: pattern.clone(),
                    line,
                };
                Prepared::new(index, &rule)
            })
            .collect();
        prepared.sort_by(Prepared::precedence);
        prepared.dedup_by(|later, earlier| later.same_as(earlier));
        prepared
    }

    fn automaton_only(rules: &[Prepared]) -> GroupMatcher {
        let mut matcher = GroupMatcher::default();
        let regexes: Vec<String> = rules.iter().map(Prepared::regex).collect();
        matcher.compile(rules, &regexes, DEFAULT_LAZY_DFA_CACHE, &mut Vec::new());
        matcher
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        /// The literal fast path decides exactly as the automaton does, ties and `$` included.
        #[test]
        fn the_literal_path_agrees_with_the_automaton(
            rules in prop::collection::vec((any::<bool>(), "/[ab./]{0,4}\\$?"), 1..12),
            paths in prop::collection::vec("/[ab./]{0,6}", 1..12),
        ) {
            let rules = prepared(&rules);
            let literal = GroupMatcher::build(rules.clone(), DEFAULT_LAZY_DFA_CACHE, &mut Vec::new());
            prop_assert!(literal.literals.is_some());
            let automaton = automaton_only(&rules);
            for path in &paths {
                prop_assert_eq!(literal.decide(path.as_bytes()), automaton.decide(path.as_bytes()), "{}", path);
            }
        }
    }

    #[test]
    fn wildcards_take_the_automaton() {
        let rules = prepared(&[(false, "/a".into()), (true, "/a*".into())]);
        let matcher = GroupMatcher::build(rules, DEFAULT_LAZY_DFA_CACHE, &mut Vec::new());
        assert!(matcher.literals.is_none());
        assert_eq!(matcher.chunks.len(), 1);
    }
}
