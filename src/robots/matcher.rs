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

use super::pattern::Prepared;
use super::problem::{Problem, ProblemKind};
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::util::pool::Pool;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, MatchKind};
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

/// The compiled rules of one group (or of several merged groups).
#[derive(Debug, Default)]
pub(crate) struct GroupMatcher {
    /// Rule indices (into the file's rules) in precedence order.
    order: Vec<usize>,
    /// Automata over consecutive runs of `order`: usually one.
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
