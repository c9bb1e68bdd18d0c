//! One group's rules, compiled rule by rule into the cheapest strategy that can answer each.
//!
//! As ripgrep's globset does with globs, every rule is sorted by its shape ([`Shape`]) into a
//! strategy of its own, so that one hard pattern never drags thousands of easy ones into a slow
//! path:
//!
//! - **prefixes** (`/private/`, `/fish*`) and **whole paths** (`/index.html$`) are strings of one
//!   radix tree ([`Radix`]); one walk down the path meets every string that starts it, so the
//!   best literal rule costs one walk, whatever the number of rules;
//! - **globs** (`/store/*.js$`, `/*?sort=`) are found through a literal piece they cannot match
//!   without, and checked (greedily, piece by piece) only when that piece is there. The piece is
//!   the longest of: the glob's first piece (a prefix, in the same tree as the literals), its
//!   last piece when it ends with `$` (a suffix, in a tree of reversed suffixes, walked from the
//!   path's end), or one of its inner pieces (in one unanchored Aho-Corasick automaton over the
//!   group's inner pieces). A glob found through its last or an inner piece is filed under that
//!   piece *and* its first piece, so that `/uk/*color=*` is a candidate only for paths that both
//!   start with `/uk/` and hold `color=` — files that repeat one glob under forty country
//!   prefixes stay cheap.
//!
//! Rules are ranked by their [`Key`] (RFC 9309 precedence: most octets, then allow), and a glob
//! is checked only when it would outrank every literal rule that matches, best first, until one
//! matches. A query is therefore one tree walk, at most one walk back and one automaton scan,
//! plus the glob checks that could change the answer.
//!
//! The inner-piece automaton is walked octet by octet and reports every piece that ends at each
//! octet; where more than a few pieces are suffixes of each other (`a`, `aa`, `aaa`, …), the long
//! ones are indexed by a shorter suffix instead (wherever `aaaa` occurs, `aa` does too), so that
//! a scan reports at most four matches per octet, whatever the file, and it stops as soon as
//! every piece has been seen. On a long path it also stops, at geometrically spaced checkpoints,
//! once the candidates found so far are settled and no piece not yet seen could bring a better
//! glob: a path's resolved form never holds `//` or `/./`, so pieces with them would otherwise
//! keep every such scan going to the path's last octet.

use super::narrowing::{find_few, Alphabet, Narrowing, Pairs};
use super::pattern::{Glob, Key, Prepared, Shape};
use super::problem::{Problem, ProblemKind};
use super::radix::Radix;
use aho_corasick::automaton::Automaton;
use aho_corasick::{Anchored, MatchKind, StartKind};
use memchr::memmem::Finder;
use smallvec::SmallVec;

/// The maps compiling uses, with a fast hash: a 512 KiB file makes hundreds of thousands of
/// lookups of short byte strings.
use foldhash::HashMap;

/// A glob's place in [`GroupMatcher::globs`]: globs are stored in precedence order, so a lower
/// id is a better rule.
type GlobId = u32;

/// The first pieces that start a path (as [`GroupMatcher::strings`] ids, sorted), and
/// [`ANY_FIRST`] for globs whose first piece is empty.
type Firsts = SmallVec<[u32; 16]>;

/// The "first piece" of globs that start with `*`: it starts every path.
const ANY_FIRST: u32 = u32::MAX;

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
    /// Whether the glob matches `path`. Taking each inner piece at its earliest place after the
    /// previous one is never wrong for `*`-only patterns: a later place leaves less room for the
    /// pieces after it. Linear in the path.
    fn matches(&self, path: &[u8], finders: &[Finder<'static>], lookups: &mut Lookups) -> bool {
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
            let len = finder.needle().len();
            let found = if end - at > LONG_STRETCH {
                // The first place from `at` on: if it does not end by `end`, no later one does.
                lookups.next(piece, finder, path, at)
            } else {
                path.get(at..end)
                    .and_then(|rest| find(rest, finder))
                    .map(|found| found + at)
            };
            match found {
                Some(found) if found + len <= end => at = found + len,
                _ => return false,
            }
        }
        true
    }
}

/// The stretch of a path from which [`CompiledGlob::matches`] asks [`Lookups`] where a piece is.
const LONG_STRETCH: usize = 1024;

/// What the glob checks of one query have found out about a long path, so that a stretch is
/// searched for a piece at most once whatever the number of globs that ask. On a long path of
/// common octets a search that finds nothing reads every octet of it, at a candidate nearly every
/// octet, and dozens of globs may fail on pieces that are not there.
#[derive(Default)]
struct Lookups {
    /// Per inner piece searched for (at most [`LOOKUPS`]): where from, and where it was found
    /// first from there ([`NOWHERE`]: not at all).
    found: SmallVec<[(u32, usize, usize); 8]>,
    /// The searches that found nothing.
    misses: usize,
    /// The path's octet pairs from an octet on, once [`PAIRS_AFTER_MISSES`] searches found
    /// nothing or a checkpoint narrowed the pieces down by them (or an earlier query read them):
    /// a piece with a pair the path lacks is not there, told at no cost of a search.
    pairs: PathPairs,
}

/// The most pieces [`Lookups`] remembers.
const LOOKUPS: usize = 64;

/// [`Lookups`]' mark of a piece not found.
const NOWHERE: usize = usize::MAX;

/// The searches that must find nothing before [`Lookups`] reads the path's pairs (which costs
/// about as much as a few searches).
const PAIRS_AFTER_MISSES: usize = 2;

impl Lookups {
    /// The first place of the inner piece `piece` (searched for by `finder`) in `path` from `at`.
    /// Out of line: it is for long paths only, and glob checks on the others stay small.
    #[inline(never)]
    fn next(&mut self, piece: u32, finder: &Finder<'_>, path: &[u8], at: usize) -> Option<usize> {
        // A glob's next piece is usually near: then nothing is remembered.
        let rest = path.get(at..).unwrap_or_default();
        let looked = match find_near(rest, finder.needle()) {
            Ok(found) => return found.map(|found| found + at),
            Err(looked) => looked,
        };
        let known = self.found.iter().find(|&&(known, from, found)| {
            known == piece && from <= at && (found == NOWHERE || found >= at)
        });
        if let Some(&(_, _, found)) = known {
            return (found != NOWHERE).then_some(found);
        }
        if self.pairs.is_read() && !self.pairs.read_from(path, at).may_hold(finder.needle()) {
            return None;
        }
        let found = finder
            .find(rest.get(looked..).unwrap_or_default())
            .map(|found| found + at + looked);
        if found.is_none() {
            self.misses += 1;
            if self.misses >= PAIRS_AFTER_MISSES {
                // This path's own, which may rule out more than another form's.
                self.pairs.forget_inherited();
                self.pairs.read_from(path, at);
            }
        }
        let entry = (piece, at, found.unwrap_or(NOWHERE));
        let room = self.found.len() < LOOKUPS;
        match self.found.iter_mut().find(|(known, ..)| *known == piece) {
            Some(slot) => *slot = entry,
            None if room => self.found.push(entry),
            None => {}
        }
        found
    }
}

/// The octet pairs of a path from an octet on, as a query read them, for the next query of a path
/// whose pairs are among them: the same path for another group, or its resolved form (see
/// [`PathPairs::for_resolved`]). A long path's pairs are then read once, not once a query.
#[derive(Default)]
pub struct PathPairs {
    pairs: Option<(usize, Pairs)>,
    /// Whether they were read of another form of the path (a superset of its own).
    inherited: bool,
}

impl PathPairs {
    /// Whether any pairs are held.
    fn is_read(&self) -> bool {
        self.pairs.is_some()
    }

    /// The octet pairs of `path` from `from` on: read the first time they are asked for, and
    /// then only extended to earlier octets.
    fn read_from(&mut self, path: &[u8], from: usize) -> &Pairs {
        let (read_from, pairs) = self
            .pairs
            .get_or_insert_with(|| (from, Pairs::of(path.get(from..).unwrap_or_default())));
        if from < *read_from {
            // To one octet past, for the pair across.
            let to = path.len().min(*read_from + 1);
            pairs.add(path.get(from..to).unwrap_or_default());
            *read_from = from;
        }
        pairs
    }

    /// Drops pairs read of another form of the path, so that this path's own are read next.
    fn forget_inherited(&mut self) {
        if self.inherited {
            *self = PathPairs::default();
        }
    }

    /// Holds `pairs`, this path's own from `from` on, unless its own are held already.
    fn keep_own(&mut self, from: usize, pairs: Pairs) {
        if !self.is_read() || self.inherited {
            *self = PathPairs {
                pairs: Some((from, pairs)),
                inherited: false,
            };
        }
    }

    /// The pairs for the resolved form of the path they were read of. Resolving only drops
    /// segments (each with the separator before it), and may add a `/` before the path or after
    /// what it keeps: every pair of the resolved form from an octet on is a pair of the path from
    /// the octet before on (the last octet of a kept segment was followed by a `/` there too),
    /// but for the added `/` before the query's `?`. A superset is all narrowing asks.
    pub fn for_resolved(self) -> PathPairs {
        let pairs = self.pairs.map(|(from, mut pairs)| {
            pairs.add(b"/?");
            (from + 1, pairs)
        });
        PathPairs {
            inherited: pairs.is_some(),
            pairs,
        }
    }
}

/// How far a piece is looked for octet by octet before the vectorised searcher takes over: a
/// glob's next piece is usually near, and then the searcher's set-up costs more than the search.
const NEAR: usize = 32;

/// The first place of `finder`'s needle in `haystack`.
#[inline(always)]
fn find(haystack: &[u8], finder: &Finder<'_>) -> Option<usize> {
    match find_near(haystack, finder.needle()) {
        Ok(found) => found,
        Err(looked) => finder
            .find(haystack.get(looked..).unwrap_or_default())
            .map(|found| found + looked),
    }
}

/// The first place of `needle` among the first [`NEAR`] places of `haystack`, looked for octet
/// by octet: `Ok` when that tells (found, or the haystack is no longer), else `Err` with how many
/// places were looked at.
#[inline(always)]
fn find_near(haystack: &[u8], needle: &[u8]) -> Result<Option<usize>, usize> {
    let Some((&head, tail)) = needle.split_first() else {
        return Ok(None);
    };
    let near = haystack.len().min(NEAR + needle.len());
    let starts = (near + 1).saturating_sub(needle.len());
    for at in 0..starts {
        if haystack[at] == head && same(&haystack[at + 1..at + needle.len()], tail) {
            return Ok(Some(at));
        }
    }
    if near == haystack.len() {
        return Ok(None);
    }
    Err(starts)
}

/// Where `key` is in `sorted`. A short list is counted through rather than halved: the count
/// of smaller ids is a vectorised loop with no branch, where each halving step waits on a load
/// (a piece's list is searched for a few first pieces, hundreds of times on a long path).
#[inline]
fn position_in(sorted: &[u32], key: u32) -> Option<usize> {
    if sorted.len() > LINEAR_SEARCH {
        return sorted.binary_search(&key).ok();
    }
    let below = sorted.iter().map(|&id| u32::from(id < key)).sum::<u32>() as usize;
    (sorted.get(below) == Some(&key)).then_some(below)
}

/// The longest list [`position_in`] counts through.
const LINEAR_SEARCH: usize = 128;

/// Whether two short byte strings are equal, without a call to `memcmp`: the pieces compared
/// here are a few octets long, and the call costs more than the comparison.
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// What a string of the prefix tree stands for.
#[derive(Debug, Clone, Copy, Default)]
struct Literal {
    /// The best prefix rule with this body (a position in precedence order).
    prefix: Option<u32>,
    /// The best whole-path rule with this body.
    whole: Option<u32>,
    /// The globs found through this first piece: a range of [`GroupMatcher::lists`].
    globs: (u32, u32),
}

/// Globs filed under each piece of an index (the suffixes, or the inner pieces), by first piece.
/// A piece's entries are `firsts[span]`, sorted (each a [`GroupMatcher::strings`] id, or
/// [`ANY_FIRST`]), and beside them `ranges[span]`, each the `(start, end)` of a list in
/// [`GroupMatcher::lists`]. The first pieces are searched hundreds of times on a long path, a
/// few per piece found, and the ranges read only when one is there: kept apart, the searched
/// ids of a whole file sit in a few cache lines per piece.
#[derive(Debug, Default)]
struct Filed {
    spans: Box<[(u32, u32)]>,
    firsts: Box<[u32]>,
    ranges: Box<[(u32, u32)]>,
    /// `(piece, first piece)` to the entry's place in `firsts` and `ranges`, for the pieces
    /// filed under more than [`LONG_FILED`] first pieces: one lookup per first piece of the
    /// path, where a search of the piece's list would go through tens of ids (a file of many
    /// globs repeats each inner piece under a hundred first pieces, and a long path meets
    /// hundreds of pieces). Boxed, and only where there are such pieces: a file of thousands of
    /// small groups keeps thousands of these.
    long: Option<Box<HashMap<(u32, u32), u32>>>,
}

/// The longest list of first pieces [`Filed::under`] searches rather than looks up by hash.
const LONG_FILED: usize = 16;

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
        let mut long = HashMap::default();
        for (piece, &(start, end)) in spans.iter().enumerate() {
            if (end - start) as usize > LONG_FILED {
                for at in start..end {
                    if let Some(&first) = firsts.get(at as usize) {
                        long.insert((piece as u32, first), at);
                    }
                }
            }
        }
        let long = (!long.is_empty()).then(|| Box::new(long));
        // Boxed at their length: a file of thousands of groups keeps thousands of these.
        Filed {
            spans: spans.into_boxed_slice(),
            firsts: firsts.into_boxed_slice(),
            ranges: ranges.into_boxed_slice(),
            long,
        }
    }

    /// Calls `push(start, end)` for the lists filed under `piece` whose first piece starts the
    /// path (is in `keys`, sorted). A short list of the piece's is searched for each key (or
    /// each of its first pieces in `keys`, when it is the shorter); a long one is looked up.
    /// Out of line, as the scan's callback must stay small to be inlined.
    #[inline(never)]
    fn under(&self, piece: usize, keys: &[u32], mut push: impl FnMut(u32, u32)) {
        let (filed, ranges) = self.of(piece);
        if filed.len() <= keys.len() {
            for (first, &(start, end)) in filed.iter().zip(ranges) {
                if keys.binary_search(first).is_ok() {
                    push(start, end);
                }
            }
        } else if let Some(long) = self.long.as_ref().filter(|_| filed.len() > LONG_FILED) {
            for &key in keys {
                let at = long.get(&(piece as u32, key));
                if let Some(&(start, end)) = at.and_then(|&at| self.ranges.get(at as usize)) {
                    push(start, end);
                }
            }
        } else {
            for &key in keys {
                if let Some(&(start, end)) = position_in(filed, key).and_then(|at| ranges.get(at)) {
                    push(start, end);
                }
            }
        }
    }

    /// How many pieces the index has.
    fn len(&self) -> usize {
        self.spans.len()
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

/// The automaton over a group's inner pieces, walked octet by octet: a DFA when it is small
/// enough, else a contiguous NFA.
#[derive(Debug)]
enum PieceAutomaton {
    Dfa(aho_corasick::dfa::DFA),
    Nfa(aho_corasick::nfa::contiguous::NFA),
}

impl PieceAutomaton {
    fn build(pieces: &[&[u8]]) -> Option<PieceAutomaton> {
        // A DFA has at most one state per octet of the pieces, each a row of up to 256
        // transitions: try it only when that bound fits, so that a large one is never built.
        let octets: usize = pieces.iter().map(|piece| piece.len()).sum();
        if octets.saturating_mul(256 * 4) <= MAX_PIECE_DFA_BYTES {
            let dfa = aho_corasick::dfa::Builder::new()
                .match_kind(MatchKind::Standard)
                .start_kind(StartKind::Unanchored)
                .build(pieces);
            if let Ok(dfa) = dfa {
                return Some(PieceAutomaton::Dfa(dfa));
            }
        }
        aho_corasick::nfa::contiguous::Builder::new()
            .match_kind(MatchKind::Standard)
            .build(pieces)
            .ok()
            .map(PieceAutomaton::Nfa)
    }

    /// The length of the longest piece.
    fn longest(&self) -> usize {
        match self {
            PieceAutomaton::Dfa(dfa) => dfa.max_pattern_len(),
            PieceAutomaton::Nfa(nfa) => nfa.max_pattern_len(),
        }
    }

    /// Calls `found(Event::Piece(piece))` for each piece that ends at an octet of `haystack`, in
    /// order, and `found(Event::Checkpoint(at))` at each of [`scan`]'s checkpoints, until it answers
    /// [`Heard::Stop`]. Pieces already answered [`Heard::Known`] may not be reported again.
    fn scan(&self, haystack: &[u8], found: impl FnMut(Event) -> Heard) {
        match self {
            PieceAutomaton::Dfa(dfa) => scan(dfa, haystack, found),
            PieceAutomaton::Nfa(nfa) => scan(nfa, haystack, found),
        }
    }
}

/// What a checkpoint finds of the pieces not yet seen that could still bring a better glob.
enum Unseen {
    /// None: the rest of the path cannot change the answer.
    None,
    /// A few, to look for in the rest of the path ([`GroupMatcher::search_rest`]).
    Few(SmallVec<[u32; FEW_UNSEEN]>),
    /// Too many to look for: the scan goes on.
    Many,
}

/// The most unseen pieces a checkpoint looks for in the rest of the path: as many as fit one
/// pass of [`find_few`] when they are short.
const FEW_UNSEEN: usize = 16;

/// The most pieces a checkpoint looks for one by one, each with a search of its own.
const SEARCHED_ONE_BY_ONE: usize = 8;

/// The octets of the rest of the path [`GroupMatcher::narrow`] reads before it tells whether
/// narrowing helps: if more than a few pieces still may be there, more octets only let more in.
const NARROW_FIRST_LOOK: usize = 2048;

/// The most pieces a narrowed look at the unseen ones goes through, most of them let go by
/// [`Pairs::may_hold`] at a few instructions each.
const NARROWED_PIECES: usize = 4096;

/// What a scan reports.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// A piece ends at the octet just read.
    Piece(usize),
    /// The scan has read [`FIRST_CHECKPOINT`] octets, or four times as many as at the previous
    /// checkpoint, and the path goes on: a chance to stop early. It carries where the scan is.
    Checkpoint(usize),
}

/// What the listener of a scan makes of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heard {
    /// A piece not seen before: go on.
    New,
    /// A piece seen before, or a checkpoint passed: go on.
    Known,
    /// The rest of the path cannot change the answer.
    Stop,
}

/// The walk of [`PieceAutomaton::scan`]: one transition per octet, and a look at the matches
/// only in match states (at most [`MAX_SUFFIX_CHAIN`] each). A match state whose pieces have all
/// been reported before is remembered (in a small direct-mapped table), and its matches are not
/// looked at again: on a path that repeats itself (`/aaaa…`, `////…`, `/ab/ab/…`) every octet
/// would otherwise report the same few pieces, several times the cost of the walk. Checkpoints
/// come at geometrically spaced octets, so that a long path can be given up on when the rest
/// cannot change the answer, at a cost (a few candidate checks each) that stays a small part of
/// the scan's.
///
/// A long stretch between checkpoints is walked as two halves side by side: each transition
/// waits on the one before, so one walk runs at the latency of a load per octet, and two
/// independent ones in the same loop at nearly the same speed. The second walk starts a piece's
/// length before the middle, which is enough for its state to be exact from the middle on (a
/// state stands for the longest piece prefix the text ends with), and reports only from there.
/// Pieces may then be reported out of order, which nothing that listens depends on.
fn scan<A: Automaton>(automaton: &A, haystack: &[u8], mut found: impl FnMut(Event) -> Heard) {
    let Ok(start) = automaton.start_state(Anchored::No) else {
        return;
    };
    if haystack.len() <= FIRST_CHECKPOINT {
        // Nearly every real path: one plain walk, with nothing to set up.
        let mut state = start;
        for &byte in haystack {
            state = automaton.next_state(Anchored::No, state, byte);
            if automaton.is_special(state) && automaton.is_match(state) {
                for index in 0..automaton.match_len(state) {
                    let piece = automaton.match_pattern(state, index).as_usize();
                    if found(Event::Piece(piece)) == Heard::Stop {
                        return;
                    }
                }
            }
        }
        return;
    }
    let mut state = start;
    let mut known = [usize::MAX; KNOWN_STATES];
    let longest = automaton.max_pattern_len().max(1);
    let mut from = 0;
    let mut until = haystack.len().min(FIRST_CHECKPOINT);
    loop {
        let window = haystack.get(from..until).unwrap_or_default();
        let mid = window.len() / 2;
        let mut walks = if window.len() >= SPLIT_WINDOW && longest <= window.len() / 4 {
            let warm = mid + 1 - longest;
            let second = Walk::new(window.get(warm..).unwrap_or_default(), start, longest - 1);
            [
                Walk::new(window.get(..mid).unwrap_or_default(), state, 0),
                second,
            ]
        } else {
            [Walk::new(window, state, 0), Walk::new(&[], start, 0)]
        };
        let [one, two] = &mut walks;
        while !one.done() && !two.done() {
            if one.step(automaton, &mut known, &mut found) == Heard::Stop
                || two.step(automaton, &mut known, &mut found) == Heard::Stop
            {
                return;
            }
        }
        for walk in [&mut *one, &mut *two] {
            while !walk.done() {
                if walk.step(automaton, &mut known, &mut found) == Heard::Stop {
                    return;
                }
            }
        }
        // The walk that read the window's end holds the state there.
        state = if two.text.is_empty() {
            one.state
        } else {
            two.state
        };
        if until >= haystack.len() || found(Event::Checkpoint(until)) == Heard::Stop {
            return;
        }
        from = until;
        until = haystack.len().min(until.saturating_mul(4));
    }
}

/// One walk of [`scan`] over a stretch of the path.
struct Walk<'t> {
    text: &'t [u8],
    /// The next octet to read.
    at: usize,
    state: aho_corasick::automaton::StateID,
    /// The first octet whose matches are reported: before it the state may be short of exact.
    report_from: usize,
}

impl<'t> Walk<'t> {
    fn new(text: &'t [u8], state: aho_corasick::automaton::StateID, report_from: usize) -> Self {
        Walk {
            text,
            at: 0,
            state,
            report_from,
        }
    }

    fn done(&self) -> bool {
        self.at >= self.text.len()
    }

    /// Reads one octet, or a run of one octet that the state loops on: the state stays, with the
    /// matches it reported when it came, through the whole run, so `/aaaa…` or `////…` cost a
    /// comparison per octet, not a transition. A state that came before `report_from` has not
    /// been reported, so the run is skipped only after it.
    #[inline(always)]
    fn step<A: Automaton>(
        &mut self,
        automaton: &A,
        known: &mut [usize; KNOWN_STATES],
        found: &mut impl FnMut(Event) -> Heard,
    ) -> Heard {
        let Some(&byte) = self.text.get(self.at) else {
            return Heard::Known;
        };
        let read = self.at;
        self.at += 1;
        let next = automaton.next_state(Anchored::No, self.state, byte);
        if next == self.state && read > self.report_from {
            let run = self.text.get(self.at..).unwrap_or_default();
            self.at += run.iter().take_while(|&&same| same == byte).count();
            return Heard::Known;
        }
        self.state = next;
        if read < self.report_from {
            return Heard::Known;
        }
        report(automaton, next, known, found)
    }
}

/// Reports the pieces of `state`, if it is a match state not remembered in `known` as holding
/// only pieces reported before; [`Heard::Stop`] when the listener says so.
#[inline(always)]
fn report<A: Automaton>(
    automaton: &A,
    state: aho_corasick::automaton::StateID,
    known: &mut [usize; KNOWN_STATES],
    found: &mut impl FnMut(Event) -> Heard,
) -> Heard {
    if !(automaton.is_special(state) && automaton.is_match(state)) {
        return Heard::Known;
    }
    let id = state.as_usize();
    let slot = known.get_mut(id % KNOWN_STATES);
    if slot.as_deref() == Some(&id) {
        return Heard::Known;
    }
    let mut all_known = true;
    for index in 0..automaton.match_len(state) {
        let piece = automaton.match_pattern(state, index).as_usize();
        match found(Event::Piece(piece)) {
            Heard::Stop => return Heard::Stop,
            Heard::New => all_known = false,
            Heard::Known => {}
        }
    }
    if let Some(slot) = slot.filter(|_| all_known) {
        *slot = id;
    }
    Heard::Known
}

/// The shortest stretch between checkpoints that [`scan`] walks as two halves.
const SPLIT_WINDOW: usize = 1024;

/// The match states a scan remembers as holding only pieces it has reported (a prime, so that
/// state ids, which are multiples of the automaton's stride, spread over the table).
const KNOWN_STATES: usize = 61;

/// The first checkpoint of a scan: paths shorter than this (nearly every real one) are scanned
/// to their end or until every piece is seen, as before checkpoints existed.
const FIRST_CHECKPOINT: usize = 512;

/// The most unseen pieces a checkpoint looks at before it gives up and lets the scan go on: a
/// file of many thousands of pieces cannot make a checkpoint cost more than the scan it saves.
const CHECKPOINT_PIECES: usize = 256;

/// The largest DFA over inner pieces; past it, the NFA (slower per octet, far smaller).
const MAX_PIECE_DFA_BYTES: usize = 4 << 20;

fn min_option(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
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
    /// Globs' inner pieces, and the globs filed under each.
    pieces: Option<PieceAutomaton>,
    piece_filed: Filed,
    /// Each piece's best glob (of any first piece), and the pieces in that order: a checkpoint
    /// looks at unseen pieces best first and stops at the first that cannot beat the answer.
    piece_best: Vec<GlobId>,
    pieces_by_best: Vec<u32>,
    /// Lists of globs (each sorted, so best first) that the indexes point into.
    lists: Vec<GlobId>,
    /// The best glob of `suffixes` and of `pieces`: a search that cannot beat the rule found so
    /// far is skipped.
    best_suffix_glob: Option<GlobId>,
    best_piece_glob: Option<GlobId>,
    /// Every glob, in precedence order, and one searcher per distinct inner piece.
    globs: Vec<CompiledGlob>,
    finders: Vec<Finder<'static>>,
    /// The indexed pieces' octets end to end, and where each ends (by piece id), for a
    /// checkpoint that looks for a few pieces in the rest of a long path instead of walking it
    /// (a searcher is made then: kept for every piece of every group, they would cost more
    /// memory than the rest of the index).
    piece_text: Box<[u8]>,
    piece_ends: Box<[u32]>,
}

/// Which index a glob is found through.
#[derive(Debug, Clone, Copy)]
enum Via<'a> {
    First,
    Last(&'a [u8]),
    Piece(&'a [u8]),
}

/// The index a glob is found through: the longer of its last piece (when it ends with `$`) and
/// its best inner piece (counted as the suffix it is indexed by), preferring the last piece on a
/// tie (a walk back is cheaper than a scan). Either way the glob is also filed under its first
/// piece, which makes the pair more selective than the first piece alone: a file that repeats
/// `/uk/*color=*` under forty prefixes would check forty globs on every `/uk/` path if they
/// were found through their first piece. Only a glob with neither (none: `Shape` makes those
/// prefixes) would be found through its first piece.
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
        (Some(last), None) => Via::Last(last),
        (None, None) => Via::First,
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

/// Lists of candidate globs, each sorted best first: the glob checked next is the best head; and
/// what checking them has found out about the path.
struct Cursors {
    /// `(next, end)` ranges of [`GroupMatcher::lists`].
    ranges: SmallVec<[(u32, u32); 16]>,
    lookups: Lookups,
}

impl GroupMatcher {
    /// Compiles the given rules. Rules that cannot be compiled (an index over the size limits)
    /// are reported in `problems` and left out; the rest still apply.
    pub fn build(mut rules: Vec<Prepared>, problems: &mut Vec<Problem>) -> Self {
        rules.sort_by(Prepared::precedence);
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
        let mut via_first: Vec<(&[u8], GlobId)> = Vec::new();
        let mut via_last: Vec<(&[u8], &[u8], GlobId)> = Vec::new();
        let mut via_piece: Vec<(&[u8], &[u8], GlobId)> = Vec::new();
        for (position, shape) in shapes.iter().enumerate() {
            let position = position as u32;
            match shape {
                Shape::Prefix([]) => {
                    matcher.always = min_option(matcher.always, Some(position));
                }
                Shape::Prefix(body) => {
                    let literal = literals.entry(body).or_default();
                    literal.prefix = min_option(literal.prefix, Some(position));
                }
                Shape::Whole(body) => {
                    let literal = literals.entry(body).or_default();
                    literal.whole = min_option(literal.whole, Some(position));
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
                        Via::First => via_first.push((glob.first, id)),
                        Via::Last(last) => {
                            via_last.push((last, glob.first, id));
                            matcher.best_suffix_glob =
                                min_option(matcher.best_suffix_glob, Some(id));
                        }
                        Via::Piece(piece) => {
                            via_piece.push((piece, glob.first, id));
                            matcher.best_piece_glob = min_option(matcher.best_piece_glob, Some(id));
                        }
                    }
                }
            }
        }

        // The prefix tree; globs found through their first piece are listed under it.
        let (strings, string_id) = ids(literals.keys().copied());
        via_first.sort_unstable();
        for string in &strings {
            let mut literal = literals.get(string).copied().unwrap_or_default();
            let start = matcher.lists.len() as u32;
            let from = via_first.partition_point(|(first, _)| first < string);
            let listed = via_first[from..]
                .iter()
                .take_while(|(first, _)| first == string);
            matcher.lists.extend(listed.map(|&(_, id)| id));
            literal.globs = (start, matcher.lists.len() as u32);
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
        let (mut text, mut ends) = (Vec::new(), Vec::with_capacity(pieces.len()));
        for piece in &pieces {
            text.extend_from_slice(piece);
            ends.push(text.len() as u32);
        }
        (matcher.piece_text, matcher.piece_ends) = (text.into_boxed_slice(), ends.into());
        let triples = via_piece
            .iter()
            .filter_map(|(piece, first, id)| Some((*piece_id.get(piece)?, first_of(first), *id)))
            .collect();
        matcher.piece_filed = Filed::build(pieces.len(), triples, &mut matcher.lists);
        matcher.piece_best = (0..matcher.piece_filed.len())
            .map(|piece| {
                let (_, ranges) = matcher.piece_filed.of(piece);
                ranges
                    .iter()
                    .filter_map(|&(start, _)| matcher.lists.get(start as usize).copied())
                    .min()
                    .unwrap_or(GlobId::MAX)
            })
            .collect();
        matcher.pieces_by_best = (0..matcher.piece_best.len() as u32).collect();
        matcher
            .pieces_by_best
            .sort_by_key(|&piece| matcher.piece_best.get(piece as usize).copied());

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
            match PieceAutomaton::build(&pieces) {
                Some(automaton) => matcher.pieces = Some(automaton),
                None => return matcher.unbuildable(&rules, problems),
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

    /// The best rule for `path` (normalised) whose key is above `floor`, if any matches.
    pub fn decide(&self, path: &[u8], floor: Option<Key>) -> Option<Found> {
        self.decide_noting(path, floor, &mut PathPairs::default())
    }

    /// [`GroupMatcher::decide`], with the octet pairs `pairs` holds of `path` (read by an earlier
    /// query), and leaving there those it holds after.
    pub fn decide_noting(
        &self,
        path: &[u8],
        floor: Option<Key>,
        pairs: &mut PathPairs,
    ) -> Option<Found> {
        // Positions before `bound` are the rules that beat `floor`, then the best found so far.
        let limit = match floor {
            Some(floor) => self.keys.partition_point(|&key| key > floor),
            None => self.keys.len(),
        } as u32;
        let mut bound = limit;
        if let Some(position) = self.always {
            bound = bound.min(position);
        }
        let mut firsts = Firsts::new();
        self.strings.walk(path, |value, length| {
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
        if self.globs.is_empty() || !self.beats(Some(0), bound) {
            return self.found(bound, limit);
        }
        let mut cursors = Cursors {
            ranges: SmallVec::new(),
            lookups: Lookups {
                pairs: std::mem::take(pairs),
                ..Lookups::default()
            },
        };
        for &first in &firsts {
            if let Some(literal) = self.literals.get(first as usize) {
                cursors.ranges.push(literal.globs);
            }
        }
        let suffixes = self.beats(self.best_suffix_glob, bound);
        let pieces = self.beats(self.best_piece_glob, bound);
        if suffixes || pieces {
            firsts.sort_unstable();
            firsts.push(ANY_FIRST);
        }
        if suffixes {
            self.suffixes.walk_back(path, |value, _| {
                self.suffix_filed
                    .under(value as usize, &firsts, |start, end| {
                        cursors.ranges.push((start, end));
                    });
            });
        }
        if let Some(automaton) = self.pieces.as_ref().filter(|_| pieces) {
            let total = self.piece_filed.len();
            let mut seen: SmallVec<[u64; 8]> = smallvec::smallvec![0; total.div_ceil(64)];
            let mut count = 0;
            let mut narrowed = false;
            automaton.scan(path, |event| match event {
                Event::Piece(piece) => {
                    if !self.see(piece, &mut seen, &firsts, &mut cursors) {
                        return Heard::Known;
                    }
                    count += 1;
                    // Once every piece has been seen, the rest of the path cannot add a glob.
                    if count < total {
                        Heard::New
                    } else {
                        Heard::Stop
                    }
                }
                Event::Checkpoint(at) => {
                    match self.checkpoint(&mut cursors, path, &mut bound, &seen, &firsts) {
                        Unseen::None => Heard::Stop,
                        Unseen::Few(few) => {
                            self.search_rest(&few, at, path, None, &mut seen, &firsts, &mut cursors)
                        }
                        Unseen::Many if !narrowed => {
                            // Once a path: later checkpoints have less of it left to gain.
                            narrowed = true;
                            self.narrow(at, path, bound, &mut seen, &firsts, &mut cursors)
                        }
                        Unseen::Many => Heard::Known,
                    }
                }
            });
        }
        if let Some(position) = self.first_matching(&mut cursors, path, bound) {
            bound = position;
        }
        *pairs = std::mem::take(&mut cursors.lookups.pairs);
        self.found(bound, limit)
    }

    /// Marks `piece` seen and files the lists under it that `firsts` (sorted) allow as
    /// candidates; false when it was seen before.
    fn see(&self, piece: usize, seen: &mut [u64], firsts: &[u32], cursors: &mut Cursors) -> bool {
        let (word, bit) = (piece / 64, 1u64 << (piece % 64));
        let Some(w) = seen.get_mut(word).filter(|w| **w & bit == 0) else {
            return false;
        };
        *w |= bit;
        self.piece_filed.under(piece, firsts, |start, end| {
            cursors.ranges.push((start, end));
        });
        true
    }

    /// At the checkpoint `at`, for the few pieces that could still matter: one vectorised search
    /// each in the rest of the path costs less than walking it, when the rest is long beside the
    /// pieces (each search has a set-up); then the walk stops ([`Heard::Stop`]), else it goes on.
    /// When the rest is over a few octets (`octets_of_rest`, as far as they are known), a search
    /// for a piece of those octets finds a candidate at nearly every octet: such pieces are
    /// looked for together, in one pass ([`find_few`]).
    #[allow(clippy::too_many_arguments)]
    fn search_rest(
        &self,
        few: &[u32],
        at: usize,
        path: &[u8],
        octets_of_rest: Option<&Alphabet>,
        seen: &mut [u64],
        firsts: &[u32],
        cursors: &mut Cursors,
    ) -> Heard {
        let pieces: SmallVec<[&[u8]; FEW_UNSEEN]> = few
            .iter()
            .map(|&piece| self.piece(piece as usize))
            .collect();
        let octets: usize = pieces.iter().map(|piece| piece.len()).sum();
        if octets * 16 > path.len().saturating_sub(at) {
            return Heard::Known;
        }
        // Pieces over the octets the rest is written with are searched in one pass; the others
        // have an octet it rarely holds, which a vectorised search skips to.
        let (dense, mut sparse): (SmallVec<[usize; FEW_UNSEEN]>, SmallVec<[usize; FEW_UNSEEN]>) =
            (0..few.len()).partition(|&k| {
                octets_of_rest.is_some_and(|alphabet| alphabet.may_hold(pieces[k]))
            });
        if sparse.len() > SEARCHED_ONE_BY_ONE {
            return Heard::Known;
        }
        // From early enough to find an occurrence across `at` (one that ends before it has been
        // seen by the walk).
        let longest = dense.iter().map(|&k| pieces[k].len()).max().unwrap_or(0);
        let rest = path
            .get((at + 1).saturating_sub(longest)..)
            .unwrap_or_default();
        let needles: SmallVec<[&[u8]; FEW_UNSEEN]> = dense.iter().map(|&k| pieces[k]).collect();
        // Alone, a piece costs less searched by itself.
        match (dense.len() > 1)
            .then(|| find_few(&needles, rest))
            .flatten()
        {
            Some(found) => {
                for (bit, &k) in dense.iter().enumerate() {
                    if found >> bit & 1 == 1 {
                        self.see(few[k] as usize, seen, firsts, cursors);
                    }
                }
            }
            None if sparse.len() + dense.len() > SEARCHED_ONE_BY_ONE => return Heard::Known,
            None => sparse.extend(dense),
        }
        // An octet the rest lacks rules out every piece that starts with it, at the cost of one
        // search for the octet (a path over a few octets lacks most), not one per piece.
        let longest = sparse.iter().map(|&k| pieces[k].len()).max().unwrap_or(0);
        let all_of_rest = path
            .get((at + 1).saturating_sub(longest)..)
            .unwrap_or_default();
        let mut octets_held: SmallVec<[(u8, bool); FEW_UNSEEN]> = SmallVec::new();
        for k in sparse {
            let needle = pieces[k];
            let Some(&first) = needle.first() else {
                continue;
            };
            let held = match octets_held.iter().find(|(octet, _)| *octet == first) {
                Some(&(_, held)) => held,
                None => {
                    let held = memchr::memchr(first, all_of_rest).is_some();
                    octets_held.push((first, held));
                    held
                }
            };
            let from = (at + 1).saturating_sub(needle.len());
            let rest = path.get(from..).unwrap_or_default();
            if held && memchr::memmem::find(rest, needle).is_some() {
                self.see(few[k] as usize, seen, firsts, cursors);
            }
        }
        Heard::Stop
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
    /// are checked best first, across all their lists, and the first that matches is the one.
    #[inline(always)]
    fn first_matching(&self, cursors: &mut Cursors, path: &[u8], bound: u32) -> Option<u32> {
        let head = |range: &(u32, u32)| {
            (range.0 < range.1)
                .then(|| self.lists.get(range.0 as usize))
                .flatten()
        };
        if cursors.ranges.len() > 16 {
            // Many lists: a heap of their heads.
            let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<(GlobId, u32, u32)>> =
                cursors
                    .ranges
                    .iter()
                    .filter_map(|range| {
                        head(range).map(|&id| std::cmp::Reverse((id, range.0, range.1)))
                    })
                    .collect();
            while let Some(std::cmp::Reverse((id, next, end))) = heap.pop() {
                let glob = self.globs.get(id as usize)?;
                if glob.position >= bound {
                    return None;
                }
                if glob.matches(path, &self.finders, &mut cursors.lookups) {
                    return Some(glob.position);
                }
                if let Some(&id) = head(&(next + 1, end)) {
                    heap.push(std::cmp::Reverse((id, next + 1, end)));
                }
            }
            return None;
        }
        loop {
            let (at, id) = cursors
                .ranges
                .iter()
                .enumerate()
                .filter_map(|(at, range)| head(range).map(|&id| (at, id)))
                .min_by_key(|&(_, id)| id)?;
            let glob = self.globs.get(id as usize)?;
            if glob.position >= bound {
                return None;
            }
            if glob.matches(path, &self.finders, &mut cursors.lookups) {
                return Some(glob.position);
            }
            if let Some(range) = cursors.ranges.get_mut(at) {
                range.0 += 1;
            }
        }
    }

    /// At a checkpoint of a long path's scan: settles the candidates found so far (the checks
    /// the end of the query would make of them anyway), and says whether to go on, which is only
    /// if a piece not yet seen could bring a glob that beats the answer. Pieces that a path's form
    /// can never hold (`//` in a resolved path) would otherwise keep the scan going to the last
    /// octet. Out of line: the scan's per-piece work stays small enough to be inlined.
    #[inline(never)]
    fn checkpoint(
        &self,
        cursors: &mut Cursors,
        path: &[u8],
        bound: &mut u32,
        seen: &[u64],
        firsts: &[u32],
    ) -> Unseen {
        if let Some(position) = self.first_matching(cursors, path, *bound) {
            *bound = position;
        }
        // Every candidate before `bound` has been checked and does not match.
        cursors.ranges.clear();
        self.unseen_that_could_beat(seen, firsts, *bound, None)
    }

    /// At the checkpoint `at`, when too many unseen pieces could still matter to look for one
    /// by one: those the rest of the path may hold, by its octet pairs ([`Pairs`]), are looked
    /// for if they are few ([`GroupMatcher::search_rest`]), and the walk stops; a path over a
    /// few octets (`/a/../a/..`, `/a%5C%5C..`) against pieces that need others would otherwise
    /// be walked to its last octet. The pairs of the first [`NARROW_FIRST_LOOK`] octets tell
    /// early when this cannot help, having cost a small part of the walk.
    #[inline(never)]
    fn narrow(
        &self,
        at: usize,
        path: &[u8],
        bound: u32,
        seen: &mut [u64],
        firsts: &[u32],
        cursors: &mut Cursors,
    ) -> Heard {
        let longest = self.pieces.as_ref().map_or(0, PieceAutomaton::longest);
        // From early enough to hold an occurrence across `at`.
        let from = (at + 1).saturating_sub(longest);
        let rest = path.get(from..).unwrap_or_default();
        // The pairs glob checks or an earlier query have read, at little more cost. Those of
        // another form of the path are a superset: when they do not rule every piece out, this
        // path's own may.
        let mut known = None;
        if cursors.lookups.pairs.is_read() {
            let inherited = cursors.lookups.pairs.inherited;
            let pairs = cursors.lookups.pairs.read_from(path, from);
            let narrowing = Some(Narrowing::Pairs(pairs));
            let unseen = self.unseen_that_could_beat(seen, firsts, bound, narrowing);
            if !inherited || matches!(unseen, Unseen::None) {
                known = Some(unseen);
            }
        }
        let unseen = match known {
            Some(unseen) => unseen,
            None => match self.narrowed_by_first_look(rest, bound, seen, firsts) {
                Ok(mut pairs) => {
                    let first_look = rest.len().min(NARROW_FIRST_LOOK);
                    // One octet back, for the pair across the two stretches.
                    pairs.add(rest.get(first_look.saturating_sub(1)..).unwrap_or_default());
                    let narrowing = Some(Narrowing::Pairs(&pairs));
                    let unseen = self.unseen_that_could_beat(seen, firsts, bound, narrowing);
                    cursors.lookups.pairs.keep_own(from, pairs);
                    unseen
                }
                Err(heard) => return heard,
            },
        };
        match unseen {
            Unseen::None => Heard::Stop,
            Unseen::Few(few) => {
                // Which pieces are over the octets the rest is written with.
                let octets = Alphabet::of(rest);
                self.search_rest(&few, at, path, octets.as_ref(), seen, firsts, cursors)
            }
            Unseen::Many => Heard::Known,
        }
    }

    /// The first look of [`GroupMatcher::narrow`] at the rest of a path: the pairs of its first
    /// [`NARROW_FIRST_LOOK`] octets, or what the walk is to do when they tell already that
    /// narrowing cannot help ([`Heard::Known`]: too many pieces may be there), or that the rest
    /// cannot change the answer ([`Heard::Stop`], by its few octets).
    fn narrowed_by_first_look(
        &self,
        rest: &[u8],
        bound: u32,
        seen: &[u64],
        firsts: &[u32],
    ) -> Result<Pairs, Heard> {
        let first_look = rest
            .get(..rest.len().min(NARROW_FIRST_LOOK))
            .unwrap_or_default();
        let pairs = Pairs::of(first_look);
        let narrowing = Some(Narrowing::Pairs(&pairs));
        if let Unseen::Many = self.unseen_that_could_beat(seen, firsts, bound, narrowing) {
            return Err(Heard::Known);
        }
        // A rest over a few octets, when none of them makes a piece that matters, is told at less
        // cost than by its pairs. The first look's octets are some of the rest's: if they make
        // one, so do the rest's.
        let rules_out = |alphabet: &Alphabet| {
            let narrowing = Some(Narrowing::Octets(alphabet));
            let unseen = self.unseen_that_could_beat(seen, firsts, bound, narrowing);
            matches!(unseen, Unseen::None)
        };
        if Alphabet::of(first_look).as_ref().is_some_and(rules_out)
            && Alphabet::of(rest).as_ref().is_some_and(rules_out)
        {
            return Err(Heard::Stop);
        }
        Ok(pairs)
    }

    /// The pieces not in `seen` that have a glob filed under one of `firsts` (sorted) that comes
    /// before `bound`: [`Unseen::Many`] when there are more than [`FEW_UNSEEN`], or when too
    /// many pieces would have to be looked at to tell.
    /// With `narrowing`, only pieces the rest of the path may hold count.
    fn unseen_that_could_beat(
        &self,
        seen: &[u64],
        firsts: &[u32],
        bound: u32,
        narrowing: Option<Narrowing>,
    ) -> Unseen {
        let mut looked = 0;
        let mut few = SmallVec::new();
        for (visited, &piece) in self.pieces_by_best.iter().enumerate() {
            if !self.beats(self.piece_best.get(piece as usize).copied(), bound) {
                // In order of their best glob: no piece after this one can beat `bound` either.
                break;
            }
            let index = piece as usize;
            if seen
                .get(index / 64)
                .is_some_and(|w| w & (1u64 << (index % 64)) != 0)
            {
                continue;
            }
            if let Some(narrowing) = narrowing {
                if visited >= NARROWED_PIECES {
                    return Unseen::Many;
                }
                if !narrowing.may_hold(self.piece(index)) {
                    continue;
                }
            }
            looked += 1;
            if looked > CHECKPOINT_PIECES {
                return Unseen::Many;
            }
            let mut better = false;
            self.piece_filed.under(index, firsts, |start, _| {
                better |= self.beats(self.lists.get(start as usize).copied(), bound);
            });
            if better {
                if few.len() == FEW_UNSEEN {
                    return Unseen::Many;
                }
                few.push(piece);
            }
        }
        if few.is_empty() {
            Unseen::None
        } else {
            Unseen::Few(few)
        }
    }

    /// The octets of the indexed piece `piece`.
    fn piece(&self, piece: usize) -> &[u8] {
        let end = self.piece_ends.get(piece).copied().unwrap_or(0) as usize;
        let start = match piece.checked_sub(1) {
            Some(before) => self.piece_ends.get(before).copied().unwrap_or(0) as usize,
            None => 0,
        };
        self.piece_text.get(start..end).unwrap_or_default()
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

    fn decide(rules: &[(bool, &str)], path: &str) -> Option<usize> {
        let matcher = GroupMatcher::build(prepared(rules), &mut Vec::new());
        matcher
            .decide(path.as_bytes(), None)
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
        assert!(matcher.piece_filed.long.is_some());
        let filler = "/a".repeat(600);
        for i in 0..3 * LONG_FILED {
            for path in [
                format!("/f{i}/x/middlepiece/y"),
                format!("/f{i}{filler}/middlepiece{filler}"),
            ] {
                let found = matcher.decide(path.as_bytes(), None).map(|f| f.rule);
                assert_eq!(found, Some(i), "{}", &path[..20]);
            }
            let without = format!("/f{i}/x/middle/piece");
            assert_eq!(matcher.decide(without.as_bytes(), None), None);
        }
        assert_eq!(matcher.decide(b"/g/middlepiece", None), None);
    }

    #[test]
    fn a_floor_hides_rules_that_do_not_beat_it() {
        let rules = prepared(&[(false, "/a"), (false, "/abc*x")]);
        let floor = rules[0].key();
        let matcher = GroupMatcher::build(rules, &mut Vec::new());
        assert_eq!(matcher.decide(b"/abcx", None).map(|f| f.rule), Some(1));
        assert_eq!(
            matcher.decide(b"/abcx", Some(floor)).map(|f| f.rule),
            Some(1)
        );
        assert_eq!(matcher.decide(b"/ab", Some(floor)), None);
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
        assert_eq!(matcher.decide(&path, None), None);
        path[3000] = b'q';
        let found = matcher.decide(&path, None).map(|found| found.rule);
        assert_eq!(found, Some(1));
    }

    /// What [`Lookups`] answers is what a search from the asked octet finds, in any order of
    /// asking and whether its pairs were read before (from a later octet, as a checkpoint reads
    /// them) or after the searches that found nothing.
    #[test]
    fn lookups_answer_as_a_search_from_where_they_are_asked() {
        let mut path = vec![b'a'; 4000];
        for (at, octet) in [(50, b'b'), (100, b'q'), (1500, b'q'), (3000, b'q')] {
            path[at] = octet;
        }
        let pieces: [&[u8]; 5] = [b"q", b"qa", b"aq", b"zz", b"ab"];
        let finders: Vec<Finder<'static>> = pieces
            .iter()
            .map(|piece| Finder::new(piece).into_owned())
            .collect();
        let ats = [0, 5, 99, 100, 101, 1499, 1501, 2999, 3001, 40, 60, 0, 3999];
        for pairs_first in [None, Some(600), Some(0)] {
            for order in [ats.to_vec(), ats.iter().rev().copied().collect()] {
                let mut lookups = Lookups::default();
                if let Some(from) = pairs_first {
                    lookups.pairs.read_from(&path, from);
                }
                for &at in &order {
                    for (piece, finder) in finders.iter().enumerate() {
                        let want = memchr::memmem::find(&path[at..], pieces[piece]);
                        let got = lookups.next(piece as u32, finder, &path, at);
                        assert_eq!(got, want.map(|found| found + at), "{piece} from {at}");
                    }
                }
            }
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
                let got = matcher.decide(path.as_bytes(), None).map(|f| f.rule);
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
                        let found = matcher.decide(&path, None).map(|found| found.rule);
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
            assert_eq!(matcher.decide(&path, None).map(|f| f.rule), Some(0));
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
        assert_eq!(matcher.decide(&path_with(len, "", 1), None), None);
        for checkpoint in [
            FIRST_CHECKPOINT,
            FIRST_CHECKPOINT * 4,
            FIRST_CHECKPOINT * 16,
        ] {
            let across = checkpoint - piece.len() - 1..=checkpoint + 1;
            let starts = across.chain(also.iter().map(|after| checkpoint + after));
            for start in starts.filter(|&start| start + piece.len() <= len) {
                let path = path_with(len, piece, start);
                let found = matcher.decide(&path, None).map(|found| found.rule);
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
            let found = matcher.decide(&path, None).map(|found| found.rule);
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
                let got = matcher.decide(path.as_bytes(), None).map(|f| f.rule);
                prop_assert_eq!(got, want, "{}", path);
            }
        }
    }
}
