//! One group's rules, compiled rule by rule into the cheapest strategy that can answer each.
//!
//! As ripgrep's globset does with globs, every rule is sorted by its shape ([`Shape`]) into a
//! strategy of its own, so that one hard pattern never drags thousands of easy ones into a slow
//! path:
//!
//! - **prefixes** (`/private/`, `/fish*`): one anchored leftmost-longest Aho-Corasick automaton
//!   finds the longest rule body that starts the path; every other body that starts the path is
//!   a prefix of that one, reached through a precomputed parent link, and each body knows the
//!   best rule over itself and all its parents, so the best literal rule costs one search;
//! - **whole paths** (`/index.html$`): a hash map, one lookup;
//! - **globs** (`/store/*.js$`, `/*?sort=`): found through a literal piece they cannot match
//!   without — their first piece (a prefix, in the same automaton as the literal prefixes),
//!   their last piece when they end with `$` (a suffix, in an automaton over reversed suffixes),
//!   or one of their inner pieces (in one unanchored automaton over the group's inner pieces),
//!   whichever is longest — and checked, greedily piece by piece, only when that piece is there.
//!
//! Rules are ranked by their [`Key`] (RFC 9309 precedence: most octets, then allow), and every
//! strategy stops as soon as it cannot beat the best rule found so far: a glob is checked only
//! when it would outrank every literal rule that matches. A query is therefore a few automaton
//! searches over the path plus the glob checks that could change the answer, whatever the
//! number of rules.
//!
//! The inner-piece automaton is searched with overlapping matches, and its pieces are made
//! *suffix-free* first (a glob indexed by `abc` is indexed by `bc` instead when `bc` is another
//! glob's piece; wherever `abc` occurs, `bc` does too): then at most one piece ends at any octet
//! of the path, and a search reports at most one match per octet, whatever the file.

use super::pattern::{Glob, Key, Prepared, Shape};
use super::problem::{Problem, ProblemKind};
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Anchored, Input, MatchKind, StartKind};
use memchr::memmem::Finder;
use smallvec::SmallVec;
use std::collections::HashMap;

/// The globs a query checks: on the stack, unless there are many.
type Candidates = SmallVec<[GlobId; 32]>;

/// Globs sharing a first piece beyond this many are found through another of their pieces.
const MAX_GLOBS_PER_FIRST_PIECE: usize = 4;

/// A glob's place in [`GroupMatcher::globs`]: globs are stored in precedence order, so a lower
/// id is a better rule.
type GlobId = u32;

/// A glob, compiled: its pieces, and where it stands in precedence order.
#[derive(Debug)]
struct CompiledGlob {
    /// Position in [`GroupMatcher::order`].
    position: u32,
    first: Box<[u8]>,
    middle: Box<[Finder<'static>]>,
    last: Option<Box<[u8]>>,
}

impl CompiledGlob {
    fn new(position: u32, glob: &Glob<'_>) -> Self {
        CompiledGlob {
            position,
            first: glob.first.into(),
            middle: glob
                .middle
                .iter()
                .map(|piece| Finder::new(piece).into_owned())
                .collect(),
            last: glob.last.map(Into::into),
        }
    }

    /// Whether the glob matches `path`. Taking each inner piece at its earliest place after the
    /// previous one is never wrong for `*`-only patterns: a later place leaves less room for the
    /// pieces after it. Linear in the path.
    fn matches(&self, path: &[u8]) -> bool {
        let last = self.last.as_deref().unwrap_or_default();
        if !path.starts_with(&self.first)
            || path.len() < self.first.len() + last.len()
            || !path.ends_with(last)
        {
            return false;
        }
        let end = path.len() - last.len();
        let mut at = self.first.len();
        for piece in self.middle.iter() {
            match path.get(at..end).and_then(|rest| piece.find(rest)) {
                Some(found) => at += found + piece.needle().len(),
                None => return false,
            }
        }
        true
    }
}

/// A string of an index, with what it leads to.
#[derive(Debug, Clone, Copy, Default)]
struct Node {
    /// The longest other string of the index that is a proper prefix of this one.
    parent: Option<u32>,
    /// The best literal rule (position) over this string and its parents.
    chain_literal: Option<u32>,
    /// The globs indexed by this string: a range of [`PrefixIndex::globs`].
    globs: (u32, u32),
    /// The best glob over this string and its parents.
    chain_glob: Option<GlobId>,
}

/// Strings of which those that start a haystack are wanted, longest first: literal prefix rules
/// and globs' first pieces, or (reversed) globs' last pieces.
#[derive(Debug)]
struct PrefixIndex {
    /// Anchored, leftmost-longest: the longest string that starts the haystack.
    automaton: AhoCorasick,
    /// Per pattern of the automaton.
    nodes: Vec<Node>,
    /// The globs of every node, node after node, each node's in precedence order.
    globs: Vec<GlobId>,
}

/// What one string of an index stands for, before the index is built.
#[derive(Debug, Default)]
struct Entry {
    literal: Option<u32>,
    globs: Vec<GlobId>,
}

fn min_option(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl PrefixIndex {
    /// Builds the index; `None` when there is nothing to index or the automaton cannot be built
    /// (the caller reports the rules it could not index).
    fn build(entries: HashMap<Vec<u8>, Entry>) -> Option<PrefixIndex> {
        if entries.is_empty() {
            return None;
        }
        // Shorter strings first, so that a parent is finished before its children.
        let mut entries: Vec<(Vec<u8>, Entry)> = entries.into_iter().collect();
        entries.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then_with(|| a.0.cmp(&b.0)));
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .start_kind(StartKind::Anchored)
            .build(entries.iter().map(|(string, _)| string))
            .ok()?;
        let mut nodes: Vec<Node> = Vec::with_capacity(entries.len());
        let mut globs = Vec::new();
        for (string, entry) in &entries {
            let parent = string
                .split_last()
                .and_then(|(_, shorter)| longest(&automaton, shorter))
                .and_then(|id| u32::try_from(id).ok());
            let from_parent = parent.and_then(|p| nodes.get(p as usize)).copied();
            let start = u32::try_from(globs.len()).ok()?;
            globs.extend_from_slice(&entry.globs);
            let end = u32::try_from(globs.len()).ok()?;
            nodes.push(Node {
                parent,
                chain_literal: min_option(
                    entry.literal,
                    from_parent.and_then(|node| node.chain_literal),
                ),
                globs: (start, end),
                chain_glob: min_option(
                    entry.globs.first().copied(),
                    from_parent.and_then(|node| node.chain_glob),
                ),
            });
        }
        Some(PrefixIndex {
            automaton,
            nodes,
            globs,
        })
    }

    /// The node of the longest string that starts `haystack`.
    fn find(&self, haystack: &[u8]) -> Option<&Node> {
        longest(&self.automaton, haystack).and_then(|id| self.nodes.get(id))
    }

    /// Adds to `candidates` the globs of `node` and its parents that come before `bound`.
    fn globs_before<'a>(
        &'a self,
        mut node: Option<&'a Node>,
        bound: u32,
        globs: &[CompiledGlob],
        candidates: &mut Candidates,
    ) {
        let before = |id: GlobId| globs.get(id as usize).is_some_and(|g| g.position < bound);
        while let Some(current) = node {
            if !current.chain_glob.is_some_and(before) {
                return;
            }
            let (start, end) = current.globs;
            let own = self.globs.get(start as usize..end as usize).unwrap_or_default();
            candidates.extend(own.iter().copied().take_while(|&id| before(id)));
            node = current.parent.and_then(|p| self.nodes.get(p as usize));
        }
    }
}

/// The pattern id of the longest pattern that starts `haystack`, in an anchored automaton.
fn longest(automaton: &AhoCorasick, haystack: &[u8]) -> Option<usize> {
    let input = Input::new(haystack).anchored(Anchored::Yes);
    automaton
        .try_find(input)
        .ok()
        .flatten()
        .map(|found| found.pattern().as_usize())
}

/// Globs found through one of their inner pieces, anywhere in the path.
#[derive(Debug)]
struct PieceIndex {
    /// Unanchored, overlapping; its pieces are suffix-free, so at most one matches per octet.
    automaton: AhoCorasick,
    /// Per piece: its globs, a range of `globs`.
    ranges: Vec<(u32, u32)>,
    globs: Vec<GlobId>,
}

impl PieceIndex {
    fn build(entries: HashMap<Vec<u8>, Vec<GlobId>>) -> Option<PieceIndex> {
        if entries.is_empty() {
            return None;
        }
        let entries: Vec<(Vec<u8>, Vec<GlobId>)> = entries.into_iter().collect();
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::Standard)
            .build(entries.iter().map(|(piece, _)| piece))
            .ok()?;
        let mut ranges = Vec::with_capacity(entries.len());
        let mut globs = Vec::new();
        for (_, ids) in entries {
            let start = u32::try_from(globs.len()).ok()?;
            globs.extend(ids);
            ranges.push((start, u32::try_from(globs.len()).ok()?));
        }
        Some(PieceIndex {
            automaton,
            ranges,
            globs,
        })
    }

    /// Adds to `candidates` the globs, before `bound`, of every piece that occurs in `path`.
    fn globs_before(
        &self,
        path: &[u8],
        bound: u32,
        globs: &[CompiledGlob],
        candidates: &mut Candidates,
    ) {
        // Each piece's globs are added once, however often it occurs.
        let mut seen: SmallVec<[u64; 8]> = smallvec::smallvec![0; self.ranges.len().div_ceil(64)];
        let Ok(found) = self.automaton.try_find_overlapping_iter(path) else {
            return;
        };
        for found in found {
            let piece = found.pattern().as_usize();
            let (word, bit) = (piece / 64, 1u64 << (piece % 64));
            match seen.get_mut(word) {
                Some(w) if *w & bit == 0 => *w |= bit,
                _ => continue,
            }
            let Some(&(start, end)) = self.ranges.get(piece) else {
                continue;
            };
            let own = self.globs.get(start as usize..end as usize).unwrap_or_default();
            candidates.extend(
                own.iter()
                    .copied()
                    .take_while(|&id| globs.get(id as usize).is_some_and(|g| g.position < bound)),
            );
        }
    }
}

/// For each piece, the shortest of the pieces that is a suffix of it (itself when none is):
/// indexing each glob by that one makes the set of indexed pieces suffix-free.
fn shortest_suffixes(pieces: &[&[u8]]) -> Option<HashMap<Vec<u8>, Vec<u8>>> {
    let reversed: Vec<Vec<u8>> = pieces
        .iter()
        .map(|piece| piece.iter().rev().copied().collect())
        .collect();
    // Anchored and standard: the first match is the one that ends first, the shortest.
    let automaton = AhoCorasickBuilder::new()
        .match_kind(MatchKind::Standard)
        .start_kind(StartKind::Anchored)
        .build(&reversed)
        .ok()?;
    let mut shortest = HashMap::with_capacity(pieces.len());
    for (piece, reversed) in pieces.iter().zip(&reversed) {
        let input = Input::new(reversed).anchored(Anchored::Yes);
        let end = automaton
            .try_find(input)
            .ok()
            .flatten()
            .map_or(piece.len(), |found| found.end());
        shortest.insert(piece.to_vec(), piece[piece.len() - end..].to_vec());
    }
    Some(shortest)
}

/// The rule that decides for a path: its rank and its index in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub key: Key,
    pub rule: usize,
}

/// The compiled rules of one group (or of several merged groups).
#[derive(Debug, Default)]
pub(crate) struct GroupMatcher {
    /// Rule indices (into the file's rules) in precedence order.
    order: Vec<usize>,
    /// The key of each rule of `order`, descending.
    keys: Vec<Key>,
    /// The best rule whose pattern matches every path (`*`).
    always: Option<u32>,
    /// Literal prefixes and globs' first pieces.
    prefixes: Option<PrefixIndex>,
    /// Whole-path rules → position.
    whole: foldhash::HashMap<Box<[u8]>, u32>,
    /// Globs' last pieces, reversed, for globs that end with `$`.
    suffixes: Option<PrefixIndex>,
    /// Globs' inner pieces.
    pieces: Option<PieceIndex>,
    /// The best glob of `suffixes` and of `pieces`: a search that cannot beat the rule found so
    /// far is skipped.
    best_suffix_glob: Option<u32>,
    best_piece_glob: Option<u32>,
    /// Every glob, in precedence order.
    globs: Vec<CompiledGlob>,
}

/// Which index a glob is found through.
enum Via<'a> {
    First,
    Last(&'a [u8]),
    Piece(Vec<u8>),
}

impl GroupMatcher {
    /// Compiles the given rules. Rules that cannot be compiled (an automaton over the size
    /// limits) are reported in `problems` and left out; the rest still apply.
    pub fn build(mut rules: Vec<Prepared>, problems: &mut Vec<Problem>) -> Self {
        rules.sort_by(Prepared::precedence);
        rules.dedup_by(|later, earlier| later.same_as(earlier));
        let mut matcher = GroupMatcher {
            order: rules.iter().map(|rule| rule.rule).collect(),
            keys: rules.iter().map(Prepared::key).collect(),
            ..GroupMatcher::default()
        };
        let shapes: Vec<Shape<'_>> = rules.iter().map(Prepared::shape).collect();
        let inner: Vec<&[u8]> = shapes
            .iter()
            .filter_map(|shape| match shape {
                Shape::Glob(glob) => Some(glob.middle.iter().copied()),
                _ => None,
            })
            .flatten()
            .collect();
        let shortest = if inner.is_empty() {
            Some(HashMap::new())
        } else {
            shortest_suffixes(&inner)
        };
        let mut firsts: HashMap<&[u8], usize> = HashMap::new();
        for shape in &shapes {
            if let Shape::Glob(glob) = shape {
                *firsts.entry(glob.first).or_default() += 1;
            }
        }
        let mut prefixes: HashMap<Vec<u8>, Entry> = HashMap::new();
        let mut suffixes: HashMap<Vec<u8>, Entry> = HashMap::new();
        let mut pieces: HashMap<Vec<u8>, Vec<GlobId>> = HashMap::new();
        let mut unindexed = Vec::new();
        for (position, shape) in shapes.iter().enumerate() {
            let Ok(position) = u32::try_from(position) else {
                unindexed.push(position);
                continue;
            };
            match shape {
                Shape::Prefix(body) if body.is_empty() => {
                    matcher.always = min_option(matcher.always, Some(position));
                }
                Shape::Prefix(body) => {
                    let entry = prefixes.entry(body.to_vec()).or_default();
                    entry.literal = min_option(entry.literal, Some(position));
                }
                Shape::Whole(body) => {
                    matcher.whole.entry((*body).into()).or_insert(position);
                }
                Shape::Glob(glob) => {
                    let Some(shortest) = shortest.as_ref() else {
                        unindexed.push(position as usize);
                        continue;
                    };
                    let Ok(id) = GlobId::try_from(matcher.globs.len()) else {
                        unindexed.push(position as usize);
                        continue;
                    };
                    matcher.globs.push(CompiledGlob::new(position, glob));
                    let sharing = firsts.get(glob.first).copied().unwrap_or(0);
                    match Self::index_for(glob, shortest, sharing) {
                        Via::First => prefixes
                            .entry(glob.first.to_vec())
                            .or_default()
                            .globs
                            .push(id),
                        Via::Last(last) => {
                            let reversed = last.iter().rev().copied().collect();
                            suffixes.entry(reversed).or_default().globs.push(id);
                            matcher.best_suffix_glob = min_option(matcher.best_suffix_glob, Some(id));
                        }
                        Via::Piece(piece) => {
                            pieces.entry(piece).or_default().push(id);
                            matcher.best_piece_glob = min_option(matcher.best_piece_glob, Some(id));
                        }
                    }
                }
            }
        }
        let (has_prefixes, has_suffixes, has_pieces) =
            (!prefixes.is_empty(), !suffixes.is_empty(), !pieces.is_empty());
        matcher.prefixes = PrefixIndex::build(prefixes);
        matcher.suffixes = PrefixIndex::build(suffixes);
        matcher.pieces = PieceIndex::build(pieces);
        let failed = (has_prefixes && matcher.prefixes.is_none())
            || (has_suffixes && matcher.suffixes.is_none())
            || (has_pieces && matcher.pieces.is_none());
        if failed || !unindexed.is_empty() {
            // Only an automaton beyond aho-corasick's limits gets here: say so rather than
            // silently drop rules.
            let first = unindexed.first().copied().unwrap_or(0);
            if let Some(rule) = rules.get(first) {
                problems.push(Problem {
                    line: rule.line,
                    text: String::from_utf8_lossy(&rule.normalized).into_owned(),
                    kind: ProblemKind::TooComplex,
                });
            }
        }
        matcher
    }

    /// The index a glob is found through: the longest of its first piece, its last piece (when
    /// it ends with `$`) and its inner pieces (each counted as the suffix it is indexed by). A
    /// first piece that many globs share (`/uk/` in `/uk/*color=*`, `/uk/*min=*`, …) is a poor
    /// index: every path under it would check them all, each with a substring search, so such
    /// globs are found through another piece, and the first piece becomes a cheap check.
    fn index_for<'g>(
        glob: &Glob<'g>,
        shortest: &HashMap<Vec<u8>, Vec<u8>>,
        sharing_first: usize,
    ) -> Via<'g> {
        let piece = glob
            .middle
            .iter()
            .map(|piece| shortest.get(*piece).cloned().unwrap_or_else(|| piece.to_vec()))
            .max_by_key(Vec::len);
        let piece_len = piece.as_ref().map_or(0, Vec::len);
        let last_len = glob.last.map_or(0, <[u8]>::len);
        let first_is_selective = sharing_first <= MAX_GLOBS_PER_FIRST_PIECE
            || (piece_len == 0 && last_len <= 1);
        if !glob.first.is_empty()
            && first_is_selective
            && glob.first.len() >= last_len
            && glob.first.len() >= piece_len
        {
            Via::First
        } else if let Some(last) = glob.last.filter(|_| last_len >= piece_len) {
            Via::Last(last)
        } else {
            match piece {
                Some(piece) if !piece.is_empty() => Via::Piece(piece),
                // A glob has a non-empty inner or last piece, so this is a glob without inner
                // pieces whose last piece is empty: impossible, but the last index holds it.
                _ => Via::Last(glob.last.unwrap_or_default()),
            }
        }
    }

    /// The best rule for `path` (normalised) whose key is above `floor`, if any matches.
    pub fn decide(&self, path: &[u8], floor: Option<Key>) -> Option<Found> {
        // Positions before `bound` are the rules that beat `floor`; then the best found so far.
        let mut bound = match floor {
            Some(floor) => u32::try_from(self.keys.partition_point(|&key| key > floor))
                .unwrap_or(u32::MAX),
            None => u32::try_from(self.keys.len()).unwrap_or(u32::MAX),
        };
        let limit = bound;
        if let Some(position) = self.always {
            bound = bound.min(position);
        }
        if let Some(&position) = self.whole.get(path) {
            bound = bound.min(position);
        }
        let mut candidates = Candidates::new();
        if let Some(prefixes) = &self.prefixes {
            let node = prefixes.find(path);
            if let Some(position) = node.and_then(|node| node.chain_literal) {
                bound = bound.min(position);
            }
            prefixes.globs_before(node, bound, &self.globs, &mut candidates);
        }
        if let Some(suffixes) = self.suffixes.as_ref().filter(|_| self.beats(self.best_suffix_glob, bound)) {
            let reversed: SmallVec<[u8; 256]> = path.iter().rev().copied().collect();
            suffixes.globs_before(suffixes.find(&reversed), bound, &self.globs, &mut candidates);
        }
        if let Some(pieces) = self.pieces.as_ref().filter(|_| self.beats(self.best_piece_glob, bound)) {
            pieces.globs_before(path, bound, &self.globs, &mut candidates);
        }
        if !candidates.is_empty() {
            candidates.sort_unstable();
            candidates.dedup();
            for id in candidates {
                let Some(glob) = self.globs.get(id as usize) else {
                    continue;
                };
                if glob.position >= bound {
                    break;
                }
                if glob.matches(path) {
                    bound = glob.position;
                    break;
                }
            }
        }
        if bound >= limit {
            return None;
        }
        let position = bound as usize;
        Some(Found {
            key: *self.keys.get(position)?,
            rule: *self.order.get(position)?,
        })
    }

    /// Whether the glob `best` (the best of an index) comes before `bound`.
    fn beats(&self, best: Option<GlobId>, bound: u32) -> bool {
        best.and_then(|id| self.globs.get(id as usize))
            .is_some_and(|glob| glob.position < bound)
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

    fn prepared(rules: &[(bool, &str)]) -> Vec<Prepared> {
        rules
            .iter()
            .enumerate()
            .map(|(index, (allow, pattern))| {
                let kind = if *allow {
                    RuleKind::Allow
                } else {
                    RuleKind::Disallow
                };
                let rule = Rule {
                    kind,
                    pattern: (*pattern).to_owned(),
                    line: u32::try_from(index).unwrap() + 1,
                };
                Prepared::new(index, &rule)
            })
            .collect()
    }

    /// The obvious answer: try every rule, keep the greatest key that matches.
    fn naive(rules: &[Prepared], path: &[u8]) -> Option<usize> {
        let matches = |rule: &Prepared| match rule.shape() {
            Shape::Prefix(body) => path.starts_with(body),
            Shape::Whole(body) => path == body,
            Shape::Glob(glob) => CompiledGlob::new(0, &glob).matches(path),
        };
        rules
            .iter()
            .filter(|rule| matches(rule))
            .max_by_key(|rule| rule.key())
            .map(|rule| rule.rule)
    }

    fn decide(rules: &[(bool, &str)], path: &str) -> Option<usize> {
        let matcher = GroupMatcher::build(prepared(rules), &mut Vec::new());
        matcher.decide(path.as_bytes(), None).map(|found| found.rule)
    }

    #[test]
    fn each_shape_is_answered() {
        let rules = [
            (false, "/a"),
            (true, "/a/b$"),
            (false, "/a/*.pdf$"),
            (true, "/*?ok"),
            (false, "*.gif$"),
            (true, "*"),
        ];
        assert_eq!(decide(&rules, "/a/x"), Some(0));
        assert_eq!(decide(&rules, "/a/b"), Some(1));
        assert_eq!(decide(&rules, "/a/b/c.pdf"), Some(2));
        assert_eq!(decide(&rules, "/a/b/c.pdf?ok"), Some(3));
        assert_eq!(decide(&rules, "/z.gif"), Some(4));
        assert_eq!(decide(&rules, "/z"), Some(5));
    }

    #[test]
    fn a_floor_hides_rules_that_do_not_beat_it() {
        let rules = prepared(&[(false, "/a"), (false, "/abc*x")]);
        let floor = rules[0].key();
        let matcher = GroupMatcher::build(rules, &mut Vec::new());
        assert_eq!(matcher.decide(b"/abcx", None).map(|f| f.rule), Some(1));
        assert_eq!(matcher.decide(b"/abcx", Some(floor)).map(|f| f.rule), Some(1));
        assert_eq!(matcher.decide(b"/ab", Some(floor)), None);
    }

    #[test]
    fn globs_check_pieces_in_order_and_the_suffix_at_the_end() {
        let glob = |p: &str| {
            let rule = &prepared(&[(false, p)])[0];
            match rule.shape() {
                Shape::Glob(glob) => CompiledGlob::new(0, &glob),
                other => panic!("{other:?}"),
            }
        };
        assert!(glob("/a*b*c").matches(b"/a-b-c-"));
        assert!(!glob("/a*b*c").matches(b"/a-c-b"));
        assert!(glob("/*ab*ab$").matches(b"/abab"));
        assert!(!glob("/*ab*ab$").matches(b"/ab"));
        assert!(!glob("/*aba$").matches(b"/ab"));
        assert!(glob("*.gif$").matches(b"/x.gif"));
    }

    #[test]
    fn inner_pieces_are_made_suffix_free() {
        let shortest = shortest_suffixes(&[b"abc", b"bc", b"c", b"xy"]).unwrap();
        assert_eq!(shortest[&b"abc"[..]], b"c");
        assert_eq!(shortest[&b"bc"[..]], b"c");
        assert_eq!(shortest[&b"xy"[..]], b"xy");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Every strategy together decides as trying every rule does.
        #[test]
        fn the_strategies_agree_with_trying_every_rule(
            rules in prop::collection::vec((any::<bool>(), "[*]?/[ab/*]{0,5}[$]?"), 1..16),
            paths in prop::collection::vec("/[ab/]{0,8}", 1..16),
        ) {
            let rules: Vec<(bool, &str)> = rules.iter().map(|(a, p)| (*a, p.as_str())).collect();
            let prepared = prepared(&rules);
            let matcher = GroupMatcher::build(prepared.clone(), &mut Vec::new());
            for path in &paths {
                let want = naive(&prepared, path.as_bytes());
                let got = matcher.decide(path.as_bytes(), None).map(|f| f.rule);
                prop_assert_eq!(got, want, "{}", path);
            }
        }
    }
}
