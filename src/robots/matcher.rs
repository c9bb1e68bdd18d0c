//! One group's rules, compiled rule by rule into the cheapest strategy that can answer each, and
//! a query's work bounded by a budget.
//!
//! As ripgrep's globset does with globs, every rule is sorted by its shape ([`Shape`]) into a
//! strategy of its own, so that one hard pattern never drags thousands of easy ones into a slow
//! path:
//!
//! - **prefixes** (`/private/`, `/fish*`) and **whole paths** (`/index.html$`) are strings of one
//!   radix tree ([`Radix`]); one walk down the path meets every string that starts it, so the
//!   best literal rule costs one walk, whatever the number of rules;
//! - **globs** (`/store/*.js$`, `/*?sort=`) are filed under a literal piece they cannot match
//!   without, and checked only when that piece is there. The piece is the longer of the glob's
//!   last piece when it ends with `$` (a suffix, in a tree of reversed suffixes walked from the
//!   path's end) and its longest inner piece (in one Aho-Corasick automaton over the group's inner
//!   pieces). Each is filed under the glob's first piece too, so that `/uk/*color=*` is a
//!   candidate only for paths that both start with `/uk/` and hold `color=`.
//!
//! Rules are ranked by their [`Key`] (RFC 9309 precedence: most octets, then allow), and a glob
//! is checked only when it would outrank every literal rule that matches, best first, until one
//! matches. A glob is checked piece by piece, each piece at its first place after the one before
//! (`memchr`'s substring search, linear in what it reads): for `*`-only patterns the earliest
//! place is never wrong, as a later one leaves less room for the pieces after it. A query is
//! therefore one tree walk, at most one walk back and one automaton scan, plus the glob checks
//! that could change the answer, and every octet any of them reads is paid from the query's
//! [`Budget`]: a query that runs out is given up on, and the caller judges it disallowed.

use super::pattern::{Glob, Key, Prepared, Shape};
use super::problem::{Problem, ProblemKind};
use super::radix::{same, Radix};
use aho_corasick::{AhoCorasick, MatchKind};
use memchr::memmem::Finder;
use smallvec::SmallVec;

/// The maps compiling uses, with a fast hash: a 512 KiB file makes hundreds of thousands of
/// lookups of short byte strings.
use foldhash::HashMap;

/// A glob's place in [`GroupMatcher::globs`]: globs are stored in precedence order, so a lower
/// id is a better rule.
type GlobId = u32;

/// What one match the piece automaton reports costs, in octets read: an overlapping search takes
/// 15 to 20 ns to report one (measured on `adversarial/many-wildcards`), a walk 1 ns an octet.
const MATCH_COST: usize = 16;

/// The "first piece" of globs that start with `*`: it starts every path.
const ANY_FIRST: u32 = u32::MAX;

/// The work one query may do: octets read by tree walks, automaton scans and substring searches,
/// and one unit per list of candidates. Shared by every group and every form of the path a query
/// asks about, so that no file and no path can make a query cost more than the budget allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    left: usize,
    exhausted: bool,
}

impl Budget {
    /// A budget of `units` octets read.
    pub fn new(units: usize) -> Self {
        Budget {
            left: units,
            exhausted: false,
        }
    }

    /// Pays `units`; false once the budget is exhausted (and from then on).
    fn spend(&mut self, units: usize) -> bool {
        match self.left.checked_sub(units) {
            Some(left) if !self.exhausted => {
                self.left = left;
                true
            }
            _ => {
                self.exhausted = true;
                false
            }
        }
    }

    /// Whether the query ran out: its answer is not to be trusted.
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }
}

/// A glob, compiled: its pieces, and where it stands in precedence order.
#[derive(Debug)]
struct CompiledGlob {
    /// Position in [`GroupMatcher::order`].
    position: u32,
    first: Box<[u8]>,
    /// The inner pieces, as indices into [`GroupMatcher::finders`] (one searcher per distinct
    /// piece: a file of long patterns repeats a handful of short pieces thousands of times).
    middle: Box<[u32]>,
    last: Option<Box<[u8]>>,
    /// The shortest path it can match: all its pieces end to end.
    min_len: usize,
}

impl CompiledGlob {
    /// Whether the glob matches `path`: each inner piece at its earliest place after the one
    /// before, the octets searched paid from `budget` (false once it is exhausted).
    fn matches(&self, path: &[u8], finders: &[Finder<'static>], budget: &mut Budget) -> bool {
        let last = self.last.as_deref().unwrap_or_default();
        if path.len() < self.min_len
            || !same(&path[..self.first.len()], &self.first)
            || !same(&path[path.len() - last.len()..], last)
        {
            return false;
        }
        let end = path.len() - last.len();
        let mut at = self.first.len();
        for &piece in self.middle.iter() {
            let Some(finder) = finders.get(piece as usize) else {
                return false;
            };
            let rest = path.get(at..end).unwrap_or_default();
            let needle = finder.needle();
            // On a short stretch the searcher's set-up costs more than looking octet by octet.
            let found = match rest.len() {
                0..=64 => rest.windows(needle.len()).position(|at| same(at, needle)),
                _ => finder.find(rest),
            };
            let read = found.map_or(rest.len(), |found| found + needle.len());
            if !budget.spend(read) {
                return false;
            }
            match found {
                Some(_) => at += read,
                None => return false,
            }
        }
        true
    }
}

/// What a string of the prefix tree stands for.
#[derive(Debug, Clone, Copy, Default)]
struct Literal {
    /// The best prefix rule with this body (a position in precedence order).
    prefix: Option<u32>,
    /// The best whole-path rule with this body.
    whole: Option<u32>,
}

/// Globs filed under each piece of an index (the suffixes, or the inner pieces), by first piece.
/// A piece's entries are `firsts[span]`, sorted (each a [`GroupMatcher::strings`] id, or
/// [`ANY_FIRST`]), and beside them `ranges[span]`, each the `(start, end)` of a list in
/// [`GroupMatcher::lists`].
#[derive(Debug, Default)]
struct Filed {
    spans: Box<[(u32, u32)]>,
    firsts: Box<[u32]>,
    ranges: Box<[(u32, u32)]>,
}

impl Filed {
    /// Files `(piece, first, glob)` triples for `pieces` pieces: per piece, one list of globs per
    /// first piece, appended to `lists`.
    fn build(pieces: usize, mut triples: Vec<(u32, u32, GlobId)>, lists: &mut Vec<GlobId>) -> Self {
        triples.sort_unstable();
        let mut spans = vec![(0, 0); pieces];
        let (mut firsts, mut ranges) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < triples.len() {
            let (piece, first, _) = triples[i];
            let start = lists.len() as u32;
            while i < triples.len() && triples[i].0 == piece && triples[i].1 == first {
                lists.push(triples[i].2);
                i += 1;
            }
            if let Some(span) = spans.get_mut(piece as usize) {
                if span.0 == span.1 {
                    *span = (firsts.len() as u32, firsts.len() as u32);
                }
                span.1 += 1;
                firsts.push(first);
                ranges.push((start, lists.len() as u32));
            }
        }
        // Boxed at their length: a file of thousands of groups keeps thousands of these.
        Filed {
            spans: spans.into_boxed_slice(),
            firsts: firsts.into_boxed_slice(),
            ranges: ranges.into_boxed_slice(),
        }
    }

    /// Calls `push(start, end)` for the lists filed under `piece` whose first piece starts the
    /// path (is in `keys`: a path starts with a few first pieces, a piece may be filed under
    /// hundreds).
    fn under(&self, piece: usize, keys: &[u32], mut push: impl FnMut(u32, u32)) {
        let (filed, ranges) = self.of(piece);
        for key in keys {
            if let Some(&(start, end)) = filed.binary_search(key).ok().and_then(|at| ranges.get(at))
            {
                push(start, end);
            }
        }
    }

    /// The first pieces filed under `piece`, sorted, and the list range of each.
    fn of(&self, piece: usize) -> (&[u32], &[(u32, u32)]) {
        let Some(&(start, end)) = self.spans.get(piece) else {
            return (&[], &[]);
        };
        let span = start as usize..end as usize;
        (
            self.firsts.get(span.clone()).unwrap_or_default(),
            self.ranges.get(span).unwrap_or_default(),
        )
    }
}

/// For each piece, the piece it is indexed by: itself, unless more than [`MAX_SUFFIX_CHAIN`]
/// of the pieces are suffixes of it (itself included), and then the longest suffix with no more
/// below it. Wherever a piece occurs, its suffixes do too, so indexing by one is still a
/// necessary condition; and in the set of indexed pieces at most [`MAX_SUFFIX_CHAIN`] end at any
/// octet of a path, so a scan reports at most that many matches per octet, whatever the file
/// (`a`, `aa`, `aaa`, … would otherwise all match at every octet of `/aaaa…`). Short pieces do
/// not swallow long ones: `/modulo/` stays itself beside `/`.
fn indexed_suffixes<'p>(pieces: &[&'p [u8]]) -> Option<HashMap<&'p [u8], &'p [u8]>> {
    let mut reversed: Vec<Vec<u8>> = pieces
        .iter()
        .map(|piece| piece.iter().rev().copied().collect())
        .collect();
    reversed.sort_unstable();
    reversed.dedup();
    let strings: Vec<(&[u8], u32)> = reversed.iter().map(|s| (s.as_slice(), 0)).collect();
    let tree = Radix::build(&strings).ok()?;
    let mut indexed = HashMap::with_capacity_and_hasher(pieces.len(), Default::default());
    for piece in pieces {
        // The pieces that are suffixes of this one, shortest first; this one is the last.
        let mut chain: SmallVec<[usize; 8]> = SmallVec::new();
        tree.walk_back(piece, |_, length| chain.push(length));
        let length = if chain.len() > MAX_SUFFIX_CHAIN {
            chain
                .get(MAX_SUFFIX_CHAIN - 1)
                .copied()
                .unwrap_or(piece.len())
        } else {
            piece.len()
        };
        indexed.insert(*piece, &piece[piece.len() - length..]);
    }
    Some(indexed)
}

/// The most indexed pieces that can end at one octet (see [`indexed_suffixes`]).
const MAX_SUFFIX_CHAIN: usize = 4;

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
    /// Literal rule bodies and globs' first pieces; values index `literals`.
    strings: Radix,
    literals: Vec<Literal>,
    /// Globs' last pieces, reversed; values index `suffix_filed`.
    suffixes: Radix,
    suffix_filed: Filed,
    /// Globs' inner pieces (every occurrence reported, overlapping), and the globs filed under
    /// each.
    pieces: Option<AhoCorasick>,
    piece_filed: Filed,
    /// Lists of globs (each sorted, so best first) that the indexes point into.
    lists: Vec<GlobId>,
    /// The best glob of `suffixes` and of `pieces`: a search that cannot beat the rule found so
    /// far is skipped.
    best_suffix_glob: Option<GlobId>,
    best_piece_glob: Option<GlobId>,
    /// Every glob, in precedence order, and one searcher per distinct inner piece.
    globs: Vec<CompiledGlob>,
    finders: Vec<Finder<'static>>,
}

/// Which index a glob is found through.
#[derive(Debug, Clone, Copy)]
enum Via<'a> {
    Last(&'a [u8]),
    Piece(&'a [u8]),
}

/// The index a glob is found through: the longer of its last piece (when it ends with `$`) and
/// its best inner piece (counted as the suffix it is indexed by), preferring the last piece on a
/// tie (a walk back is cheaper than a scan). Either way the glob is also filed under its first
/// piece, which makes the pair more selective than the first piece alone.
fn index_for<'g>(glob: &Glob<'g>, indexed: &HashMap<&'g [u8], &'g [u8]>) -> Via<'g> {
    let piece = glob
        .middle
        .iter()
        .map(|piece| indexed.get(piece).copied().unwrap_or(piece))
        .max_by_key(|piece| piece.len())
        .filter(|piece| !piece.is_empty());
    let piece_len = piece.map_or(0, <[u8]>::len);
    match (glob.last.filter(|last| !last.is_empty()), piece) {
        (Some(last), _) if last.len() >= piece_len => Via::Last(last),
        (_, Some(piece)) => Via::Piece(piece),
        // None has neither (`Shape` makes those prefixes): an empty suffix ends every path.
        (last, None) => Via::Last(last.unwrap_or_default()),
    }
}

/// Distinct byte strings, sorted, with their ids (their rank).
fn ids<'s>(strings: impl Iterator<Item = &'s [u8]>) -> (Vec<&'s [u8]>, HashMap<&'s [u8], u32>) {
    let mut sorted: Vec<&[u8]> = strings.collect();
    sorted.sort_unstable();
    sorted.dedup();
    let id = sorted
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, i as u32))
        .collect();
    (sorted, id)
}

/// Lists of candidate globs, `(next, end)` ranges of [`GroupMatcher::lists`], each sorted best
/// first: the glob checked next is the best head.
type Candidates = SmallVec<[(u32, u32); 16]>;

impl GroupMatcher {
    /// Compiles the given rules. Rules that cannot be compiled (an index over the size limits)
    /// are reported in `problems` and left out; the rest still apply.
    pub fn build(mut rules: Vec<Prepared>, problems: &mut Vec<Problem>) -> Self {
        rules.sort_by_key(|rule| std::cmp::Reverse(rule.key()));
        rules.dedup_by(|later, earlier| later.same_as(earlier));
        // Positions are u32: no file within a parse limit has that many rules.
        rules.truncate(u32::MAX as usize - 1);
        let mut matcher = GroupMatcher {
            order: rules.iter().map(|rule| rule.rule).collect(),
            keys: rules.iter().map(Prepared::key).collect(),
            ..GroupMatcher::default()
        };
        let shapes: Vec<Shape<'_>> = rules.iter().map(Prepared::shape).collect();
        let inner: foldhash::HashSet<&[u8]> = shapes
            .iter()
            .filter_map(|shape| match shape {
                Shape::Glob(glob) => Some(glob.middle.iter().copied()),
                _ => None,
            })
            .flatten()
            .collect();
        let (distinct_inner, finder_of) = ids(inner.into_iter());
        let Some(indexed) = indexed_suffixes(&distinct_inner) else {
            return matcher.unbuildable(&rules, problems);
        };
        matcher.finders = distinct_inner
            .iter()
            .map(|piece| Finder::new(piece).into_owned())
            .collect();

        // What each string of the prefix tree, each suffix and each piece stands for.
        let mut literals: HashMap<&[u8], Literal> = HashMap::default();
        let mut via_last: Vec<(&[u8], &[u8], GlobId)> = Vec::new();
        let mut via_piece: Vec<(&[u8], &[u8], GlobId)> = Vec::new();
        for (position, shape) in shapes.iter().enumerate() {
            let position = position as u32;
            match shape {
                Shape::Prefix([]) => {
                    matcher.always =
                        Some(matcher.always.map_or(position, |best| best.min(position)));
                }
                Shape::Prefix(body) => {
                    let literal = literals.entry(body).or_default();
                    literal.prefix =
                        Some(literal.prefix.map_or(position, |best| best.min(position)));
                }
                Shape::Whole(body) => {
                    let literal = literals.entry(body).or_default();
                    literal.whole = Some(literal.whole.map_or(position, |best| best.min(position)));
                }
                Shape::Glob(glob) => {
                    let id = matcher.globs.len() as GlobId;
                    matcher.globs.push(CompiledGlob {
                        position,
                        first: glob.first.into(),
                        middle: glob
                            .middle
                            .iter()
                            .filter_map(|piece| finder_of.get(piece).copied())
                            .collect(),
                        last: glob.last.map(Into::into),
                        min_len: glob.first.len()
                            + glob.middle.iter().map(|piece| piece.len()).sum::<usize>()
                            + glob.last.map_or(0, <[u8]>::len),
                    });
                    if !glob.first.is_empty() {
                        literals.entry(glob.first).or_default();
                    }
                    match index_for(glob, &indexed) {
                        Via::Last(last) => {
                            via_last.push((last, glob.first, id));
                            matcher.best_suffix_glob =
                                Some(matcher.best_suffix_glob.map_or(id, |best| best.min(id)));
                        }
                        Via::Piece(piece) => {
                            via_piece.push((piece, glob.first, id));
                            matcher.best_piece_glob =
                                Some(matcher.best_piece_glob.map_or(id, |best| best.min(id)));
                        }
                    }
                }
            }
        }

        // The prefix tree.
        let (strings, string_id) = ids(literals.keys().copied());
        for string in &strings {
            let literal = literals.get(string).copied().unwrap_or_default();
            matcher.literals.push(literal);
        }
        let first_of = |first: &[u8]| string_id.get(first).copied().unwrap_or(ANY_FIRST);

        // The suffix tree, over reversed last pieces.
        let reversed: Vec<Vec<u8>> = via_last
            .iter()
            .map(|(last, _, _)| last.iter().rev().copied().collect())
            .collect();
        let (suffixes, suffix_id) = ids(reversed.iter().map(Vec::as_slice));
        let triples = via_last
            .iter()
            .zip(&reversed)
            .filter_map(|((_, first, id), reversed)| {
                Some((*suffix_id.get(reversed.as_slice())?, first_of(first), *id))
            })
            .collect();
        matcher.suffix_filed = Filed::build(suffixes.len(), triples, &mut matcher.lists);

        // The piece automaton.
        let (pieces, piece_id) = ids(via_piece.iter().map(|(piece, _, _)| *piece));
        let triples = via_piece
            .iter()
            .filter_map(|(piece, first, id)| Some((*piece_id.get(piece)?, first_of(first), *id)))
            .collect();
        matcher.piece_filed = Filed::build(pieces.len(), triples, &mut matcher.lists);

        let valued: Vec<(&[u8], u32)> = strings.iter().map(|s| (*s, string_id[s])).collect();
        let suffix_valued: Vec<(&[u8], u32)> =
            suffixes.iter().map(|s| (*s, suffix_id[s])).collect();
        let (Ok(tree), Ok(suffix_tree)) = (Radix::build(&valued), Radix::build(&suffix_valued))
        else {
            return matcher.unbuildable(&rules, problems);
        };
        matcher.strings = tree;
        matcher.suffixes = suffix_tree;
        if !pieces.is_empty() {
            // aho-corasick picks a DFA when the pieces are few, else an NFA.
            match AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(&pieces)
            {
                Ok(automaton) => matcher.pieces = Some(automaton),
                Err(_) => return matcher.unbuildable(&rules, problems),
            }
        }
        matcher
    }

    /// A group whose indexes could not be built (beyond the limits of a `u32` index or of
    /// aho-corasick, which no file within a parse limit reaches): it is reported, and holds no
    /// rule rather than some of them.
    fn unbuildable(self, rules: &[Prepared], problems: &mut Vec<Problem>) -> Self {
        if let Some(rule) = rules.first() {
            problems.push(Problem {
                line: rule.line,
                text: String::from_utf8_lossy(&rule.normalized).into_owned(),
                kind: ProblemKind::TooComplex,
            });
        }
        GroupMatcher::default()
    }

    /// The best rule for `path` (normalised) whose key is above `floor`, if any matches, paying
    /// what it reads from `budget`. Once `budget` is exhausted the answer means nothing: the
    /// caller looks at [`Budget::exhausted`].
    pub fn decide(&self, path: &[u8], floor: Option<Key>, budget: &mut Budget) -> Option<Found> {
        // Positions before `bound` are the rules that beat `floor`, then the best found so far.
        let limit = match floor {
            Some(floor) => self.keys.partition_point(|&key| key > floor),
            None => self.keys.len(),
        } as u32;
        let mut bound = limit;
        if let Some(position) = self.always {
            bound = bound.min(position);
        }
        let mut firsts: SmallVec<[u32; 16]> = SmallVec::new();
        let walked = self.strings.walk(path, |value, length| {
            let Some(literal) = self.literals.get(value as usize) else {
                return;
            };
            if let Some(position) = literal.prefix {
                bound = bound.min(position);
            }
            if length == path.len() {
                if let Some(position) = literal.whole {
                    bound = bound.min(position);
                }
            }
            firsts.push(value);
        });
        if !budget.spend(walked + 1) {
            return None;
        }
        if self.globs.is_empty() || !self.beats(Some(0), bound) {
            return self.found(bound, limit);
        }
        let mut candidates = Candidates::new();
        let suffixes = self.beats(self.best_suffix_glob, bound);
        let pieces = self.beats(self.best_piece_glob, bound);
        firsts.push(ANY_FIRST);
        if suffixes {
            let walked = self.suffixes.walk_back(path, |value, _| {
                self.suffix_filed
                    .under(value as usize, &firsts, |start, end| {
                        candidates.push((start, end));
                    });
            });
            if !budget.spend(walked + candidates.len()) {
                return None;
            }
        }
        if let Some(automaton) = self.pieces.as_ref().filter(|_| pieces) {
            if !budget.spend(path.len()) {
                return None;
            }
            let total = self.piece_filed.spans.len();
            let mut seen: SmallVec<[u64; 8]> = smallvec::smallvec![0; total.div_ceil(64)];
            let mut count = 0;
            for found in automaton.find_overlapping_iter(path) {
                // Overlapping pieces can match many times an octet: each match is paid for.
                if !budget.spend(MATCH_COST) {
                    return None;
                }
                let piece = found.pattern().as_usize();
                let (word, bit) = (piece / 64, 1u64 << (piece % 64));
                if let Some(w) = seen.get_mut(word).filter(|w| **w & bit == 0) {
                    *w |= bit;
                    count += 1;
                    self.piece_filed.under(piece, &firsts, |start, end| {
                        candidates.push((start, end));
                    });
                }
                // Once every piece has been seen, the rest of the path cannot add a glob.
                if count == total {
                    break;
                }
            }
            if !budget.spend(candidates.len()) {
                return None;
            }
        }
        if let Some(position) = self.first_matching(&mut candidates, path, bound, budget) {
            bound = position;
        }
        self.found(bound, limit)
    }

    /// The answer for the best position found, if it beats the floor's limit.
    fn found(&self, bound: u32, limit: u32) -> Option<Found> {
        if bound >= limit {
            return None;
        }
        let position = bound as usize;
        Some(Found {
            key: *self.keys.get(position)?,
            rule: *self.order.get(position)?,
        })
    }

    /// The position of the best candidate glob before `bound` that matches `path`. Candidates
    /// are checked best first across all their lists, the best head found by a look at each
    /// (paid from the budget), and the first that matches is the one.
    fn first_matching(
        &self,
        candidates: &mut Candidates,
        path: &[u8],
        bound: u32,
        budget: &mut Budget,
    ) -> Option<u32> {
        loop {
            let heads = candidates.iter_mut().filter(|(next, end)| next < end);
            let (id, next) = heads
                .filter_map(|range| Some((*self.lists.get(range.0 as usize)?, range)))
                .min_by_key(|&(id, _)| id)?;
            next.0 += 1;
            let glob = self.globs.get(id as usize)?;
            if glob.position >= bound || !budget.spend(candidates.len()) {
                return None;
            }
            if glob.matches(path, &self.finders, budget) {
                return Some(glob.position);
            }
        }
    }

    /// Whether the glob `best` would come before `bound`.
    fn beats(&self, best: Option<GlobId>, bound: u32) -> bool {
        best.and_then(|id| self.globs.get(id as usize))
            .is_some_and(|glob| glob.position < bound)
    }

    /// How many distinct rules it holds.
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

    /// Whether a normalised pattern (`*` any run, a final `$` the end) matches a prefix of
    /// `path`, by trying every split: slow and obviously right.
    fn naive_match(pattern: &[u8], path: &[u8]) -> bool {
        match pattern.split_first() {
            None => true,
            Some((b'$', [])) => path.is_empty(),
            Some((b'*', rest)) => (0..=path.len()).any(|skip| naive_match(rest, &path[skip..])),
            Some((byte, rest)) => path.first() == Some(byte) && naive_match(rest, &path[1..]),
        }
    }

    /// The obvious answer: try every rule, keep the greatest key that matches.
    fn naive(rules: &[Prepared], path: &[u8]) -> Option<usize> {
        let matches = |rule: &Prepared| naive_match(&rule.normalized, path);
        rules
            .iter()
            .filter(|rule| matches(rule))
            .max_by_key(|rule| rule.key())
            .map(|rule| rule.rule)
    }

    /// A budget no test query runs out of.
    fn unlimited() -> Budget {
        Budget::new(usize::MAX)
    }

    /// Where the matcher before the work budget stopped to look at the rest of a long path (its
    /// checkpoints, its split walks, its searches of few pieces, its narrowing by octet pairs):
    /// the long-path tests below place pieces around them, and still hold.
    const FIRST_CHECKPOINT: usize = 512;
    const SPLIT_WINDOW: usize = 1024;
    const FEW_UNSEEN: usize = 16;
    const NARROW_FIRST_LOOK: usize = 2048;
    const LONG_FILED: usize = 16;

    fn decide(rules: &[(bool, &str)], path: &str) -> Option<usize> {
        let matcher = GroupMatcher::build(prepared(rules), &mut Vec::new());
        matcher
            .decide(path.as_bytes(), None, &mut unlimited())
            .map(|found| found.rule)
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
    fn globs_are_filed_under_their_first_piece_too() {
        let mut rules = Vec::new();
        let countries = ["uk", "de", "fr", "it", "es", "nl", "se"];
        let patterns: Vec<String> = countries
            .iter()
            .flat_map(|c| [format!("/{c}/*color=*"), format!("/{c}*/shop/*/sold")])
            .collect();
        for pattern in &patterns {
            rules.push((false, pattern.as_str()));
        }
        assert_eq!(decide(&rules, "/fr/x?color=red"), Some(4));
        assert_eq!(decide(&rules, "/se-en/shop/a/sold"), Some(13));
        assert_eq!(decide(&rules, "/us/x?color=red"), None);
    }

    /// A piece filed under more first pieces than are searched one by one is looked up by
    /// (piece, first piece), on short paths and on long ones.
    #[test]
    fn pieces_filed_under_many_first_pieces_are_looked_up() {
        let patterns: Vec<String> = (0..3 * LONG_FILED)
            .map(|i| format!("/f{i}/*middlepiece*"))
            .collect();
        let rules: Vec<(bool, &str)> = patterns.iter().map(|p| (false, p.as_str())).collect();
        let matcher = GroupMatcher::build(prepared(&rules), &mut Vec::new());
        let filler = "/a".repeat(600);
        for i in 0..3 * LONG_FILED {
            for path in [
                format!("/f{i}/x/middlepiece/y"),
                format!("/f{i}{filler}/middlepiece{filler}"),
            ] {
                let found = matcher
                    .decide(path.as_bytes(), None, &mut unlimited())
                    .map(|f| f.rule);
                assert_eq!(found, Some(i), "{}", &path[..20]);
            }
            let without = format!("/f{i}/x/middle/piece");
            assert_eq!(
                matcher.decide(without.as_bytes(), None, &mut unlimited()),
                None
            );
        }
        assert_eq!(
            matcher.decide(b"/g/middlepiece", None, &mut unlimited()),
            None
        );
    }

    #[test]
    fn a_floor_hides_rules_that_do_not_beat_it() {
        let rules = prepared(&[(false, "/a"), (false, "/abc*x")]);
        let floor = rules[0].key();
        let matcher = GroupMatcher::build(rules, &mut Vec::new());
        assert_eq!(
            matcher
                .decide(b"/abcx", None, &mut unlimited())
                .map(|f| f.rule),
            Some(1)
        );
        assert_eq!(
            matcher
                .decide(b"/abcx", Some(floor), &mut unlimited())
                .map(|f| f.rule),
            Some(1)
        );
        assert_eq!(matcher.decide(b"/ab", Some(floor), &mut unlimited()), None);
    }

    #[test]
    fn globs_check_pieces_in_order_and_the_suffix_at_the_end() {
        let glob = |p: &str, path: &str| decide(&[(false, p)], path).is_some();
        assert!(glob("/a*b*c", "/a-b-c-"));
        assert!(!glob("/a*b*c", "/a-c-b"));
        assert!(glob("/*ab*ab$", "/abab"));
        assert!(!glob("/*ab*ab$", "/ab"));
        assert!(!glob("/*aba$", "/ab"));
        assert!(glob("*.gif$", "/x.gif"));
    }

    /// On a long path, a glob that looks for a piece after where an earlier glob found it is told
    /// of the next place, not the one remembered: `/xxxx*rr*q` has no `q` after its `rr`, though
    /// `/xxxx*q*zz*w`, checked first, found one before it.
    #[test]
    fn globs_on_a_long_path_look_for_a_piece_from_where_they_are() {
        let mut path = b"/xxxx".to_vec();
        path.resize(4000, b'a');
        for (at, piece) in [(100, "q"), (2000, "rr"), (3500, "zz")] {
            path[at..at + piece.len()].copy_from_slice(piece.as_bytes());
        }
        let rules = [(false, "/xxxx*q*zz*w"), (false, "/xxxx*rr*q")];
        let matcher = GroupMatcher::build(prepared(&rules), &mut Vec::new());
        assert_eq!(matcher.decide(&path, None, &mut unlimited()), None);
        path[3000] = b'q';
        let found = matcher
            .decide(&path, None, &mut unlimited())
            .map(|found| found.rule);
        assert_eq!(found, Some(1));
    }

    /// A query that reads more than its budget is given up on, wherever the budget runs out: in
    /// the walk, the scan or a glob's check.
    #[test]
    fn a_query_over_its_budget_is_given_up_on() {
        // Found through `qq`, which is there: the check reads the path to its end for a `z`.
        let rules = [(false, "/*qq*z"), (true, "/a")];
        let matcher = GroupMatcher::build(prepared(&rules), &mut Vec::new());
        let path = path_with(4000, "qq", 10);
        let mut enough = Budget::new(3 * path.len());
        let found = matcher.decide(&path, None, &mut enough).map(|f| f.rule);
        assert_eq!(found, Some(1));
        assert!(!enough.exhausted());
        for units in [0, 1, 10, path.len(), path.len() + 100] {
            let mut short = Budget::new(units);
            matcher.decide(&path, None, &mut short);
            assert!(short.exhausted(), "{units}");
        }
    }

    #[test]
    fn long_suffix_chains_of_pieces_are_cut() {
        let pieces: Vec<&[u8]> = vec![
            b"a", b"aa", b"aaa", b"aaaa", b"aaaaa", b"aaaaaa", b"/x/", b"/",
        ];
        let indexed = indexed_suffixes(&pieces).unwrap();
        assert_eq!(indexed[&b"aaa"[..]], b"aaa");
        assert_eq!(indexed[&b"aaaa"[..]], b"aaaa");
        assert_eq!(indexed[&b"aaaaa"[..]], b"aaaa");
        assert_eq!(indexed[&b"aaaaaa"[..]], b"aaaa");
        assert_eq!(indexed[&b"/x/"[..]], b"/x/");
    }

    /// Whether a normalised pattern matches a prefix of `path`, by the set of path positions
    /// each step of the pattern can reach: linear in the path, for long paths.
    fn reach_match(pattern: &[u8], path: &[u8]) -> bool {
        let (pattern, anchored) = match pattern.split_last() {
            Some((b'$', rest)) => (rest, true),
            _ => (pattern, false),
        };
        let mut reach = vec![false; path.len() + 1];
        reach[0] = true;
        for &token in pattern {
            let mut next = vec![false; path.len() + 1];
            if token == b'*' {
                let mut any = false;
                for (at, slot) in next.iter_mut().enumerate() {
                    any |= reach[at];
                    *slot = any;
                }
            } else {
                for at in 0..path.len() {
                    next[at + 1] = reach[at] && path[at] == token;
                }
            }
            reach = next;
        }
        if anchored {
            reach[path.len()]
        } else {
            reach.contains(&true)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Paths long enough to reach the scan's checkpoints, where pieces with a `c` (rare in
        /// the paths) are unseen and the scan may stop early: the answer is still every rule's.
        #[test]
        fn long_paths_agree_with_trying_every_rule(
            rules in prop::collection::vec((any::<bool>(), "[*]?/[abc/*]{0,6}[$]?"), 1..24),
            paths in prop::collection::vec(("/[ab/]{0,4}", "[ab/]{400,2400}", "[abc/]{0,6}"), 1..6),
        ) {
            let rules: Vec<(bool, &str)> = rules.iter().map(|(a, p)| (*a, p.as_str())).collect();
            let prepared = prepared(&rules);
            let matcher = GroupMatcher::build(prepared.clone(), &mut Vec::new());
            for (head, body, tail) in &paths {
                let path = format!("{head}{body}{tail}");
                let want = prepared
                    .iter()
                    .filter(|rule| reach_match(&rule.normalized, path.as_bytes()))
                    .max_by_key(|rule| rule.key())
                    .map(|rule| rule.rule);
                let got = matcher.decide(path.as_bytes(), None, &mut unlimited()).map(|f| f.rule);
                prop_assert_eq!(got, want, "{}", path);
            }
        }
    }

    /// A path of `len` octets `a`, from `/`, with `piece` at `start`.
    fn path_with(len: usize, piece: &str, start: usize) -> Vec<u8> {
        let mut path = vec![b'a'; len];
        path[0] = b'/';
        path[start..start + piece.len()].copy_from_slice(piece.as_bytes());
        path
    }

    /// `len` octets over `a` and `b`, after a `/`, in an order of their own (xorshift).
    fn mixed(len: usize, seed: u64) -> Vec<u8> {
        let mut state = seed;
        let mut text = vec![b'/'];
        text.extend((1..len).map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if state & 1 == 0 {
                b'a'
            } else {
                b'b'
            }
        }));
        text
    }

    /// A piece that occurs once, across the middle of a stretch that the scan walks as two
    /// halves (or just before the middle, where the second walk is still warming up), is found.
    /// More pieces than a checkpoint looks for one by one are missing, and the path holds every
    /// pair of octets they are made of, so that narrowing them down cannot stop the walk.
    #[test]
    fn pieces_across_the_middle_of_a_split_walk_are_found() {
        let missing: Vec<String> = (0..=FEW_UNSEEN as u64)
            .map(|i| String::from_utf8(mixed(33, 1000 + i)[1..].to_vec()).unwrap())
            .collect();
        for piece in ["q", "qrst", "qrstuvwxyzqrstuvwxyz"] {
            let mut patterns = vec![format!("/*{piece}")];
            patterns.extend(missing.iter().map(|missing| format!("/*{missing}")));
            let rules: Vec<(bool, &str)> = patterns.iter().map(|p| (false, p.as_str())).collect();
            let matcher = GroupMatcher::build(prepared(&rules), &mut Vec::new());
            for len in [1600, 2047, 2600, 9000, 20000] {
                let mut mids = Vec::new();
                let (mut from, mut until) = (FIRST_CHECKPOINT, FIRST_CHECKPOINT * 4);
                while from < len {
                    let end = until.min(len);
                    if end - from >= SPLIT_WINDOW {
                        mids.push(from + (end - from) / 2);
                    }
                    (from, until) = (until, until * 4);
                }
                assert!(!mids.is_empty());
                let filler = mixed(len, 7);
                for missing in &missing {
                    let found = memchr::memmem::find(&filler, missing.as_bytes());
                    assert_eq!(found, None, "{missing} is in the path");
                }
                for mid in mids {
                    for start in mid - piece.len() - 2..=mid + 2 {
                        let mut path = filler.clone();
                        path[start..start + piece.len()].copy_from_slice(piece.as_bytes());
                        let found = matcher
                            .decide(&path, None, &mut unlimited())
                            .map(|found| found.rule);
                        assert_eq!(found, Some(0), "{piece} at {start} of {len}");
                    }
                }
            }
        }
    }

    /// A piece that occurs once, after a checkpoint or across it, is found by the checkpoint's
    /// search of the rest of the path; pieces that are not there are not.
    #[test]
    fn pieces_after_a_checkpoint_are_found_by_its_search() {
        for piece in ["q", "qrst", "qrstuvwxyzqrstuvwxyz"] {
            let pattern = format!("/*{piece}");
            let rules = [(false, pattern.as_str()), (true, "/*zz")];
            let matcher = GroupMatcher::build(prepared(&rules), &mut Vec::new());
            rule_zero_is_found_across_each_checkpoint(&matcher, piece, &[]);
            let path = path_with(CHECKPOINTED, piece, CHECKPOINTED - piece.len());
            assert_eq!(
                matcher
                    .decide(&path, None, &mut unlimited())
                    .map(|f| f.rule),
                Some(0)
            );
        }
    }

    /// The length of the paths placed across checkpoints: three of them, and more after.
    const CHECKPOINTED: usize = 20000;

    /// A path without `piece` matches nothing; with it once, across each of the first three
    /// checkpoints or `also` octets after one, it matches rule 0.
    fn rule_zero_is_found_across_each_checkpoint(
        matcher: &GroupMatcher,
        piece: &str,
        also: &[usize],
    ) {
        let len = CHECKPOINTED;
        assert_eq!(
            matcher.decide(&path_with(len, "", 1), None, &mut unlimited()),
            None
        );
        for checkpoint in [
            FIRST_CHECKPOINT,
            FIRST_CHECKPOINT * 4,
            FIRST_CHECKPOINT * 16,
        ] {
            let across = checkpoint - piece.len() - 1..=checkpoint + 1;
            let starts = across.chain(also.iter().map(|after| checkpoint + after));
            for start in starts.filter(|&start| start + piece.len() <= len) {
                let path = path_with(len, piece, start);
                let found = matcher
                    .decide(&path, None, &mut unlimited())
                    .map(|found| found.rule);
                assert_eq!(found, Some(0), "{piece} at {start}");
            }
        }
    }

    /// With more missing pieces than a checkpoint looks for one by one, a piece that occurs once,
    /// after a checkpoint or across it, is found once the pieces are narrowed down by the octet
    /// pairs of the rest of the path; the missing ones, made of pairs the path lacks, are not.
    #[test]
    fn pieces_are_found_once_the_rest_narrows_them_down() {
        for piece in ["q", "qr", "qrst", "qrstuvwxyzqrstuvwxyz"] {
            let mut patterns = vec![format!("/*{piece}")];
            patterns.extend((0..4 * FEW_UNSEEN).map(|i| format!("/*zz{i}")));
            let mut rules = vec![(false, patterns[0].as_str())];
            rules.extend(patterns[1..].iter().map(|p| (true, p.as_str())));
            let matcher = GroupMatcher::build(prepared(&rules), &mut Vec::new());
            // In and past the narrowing's first look, too.
            let after = [NARROW_FIRST_LOOK - 1, 3000];
            rule_zero_is_found_across_each_checkpoint(&matcher, piece, &after);
            // A missing piece that is there after all is found too.
            let path = path_with(CHECKPOINTED, "zz17", 5000);
            let found = matcher
                .decide(&path, None, &mut unlimited())
                .map(|found| found.rule);
            assert!(found.is_some_and(|rule| rule > 0), "{found:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

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
                let got = matcher.decide(path.as_bytes(), None, &mut unlimited()).map(|f| f.rule);
                prop_assert_eq!(got, want, "{}", path);
            }
        }
    }
}
