//! What tells, at a checkpoint of a long path's scan, that a piece is not in the rest of the
//! path (its octet pairs, or its few octets), and a search for the few pieces that may be.
//!
//! A scan walks the path an octet at a time; these read the rest of it at a fraction of that
//! cost, so that a path an attacker writes over a few octets (`/a/..`, `/a%5C%5C..`) against
//! pieces that need others is not walked to its last octet.

use wide::u8x16;

/// The pairs of adjacent octets of a text, hashed into 4096 slots: where a pair's slot is
/// empty, the pair is not in the text, nor any piece that holds it.
pub(super) struct Pairs(Box<[bool; PAIR_SLOTS]>);

/// [`Pairs`]' slots: a slot is an octet, so that adding a pair is one store.
const PAIR_SLOTS: usize = 4096;

/// The runs of eight octets [`Pairs::add`] remembers (a power of two): more than the periods
/// of the units an attacker repeats.
const ADDED_WORDS: usize = 32;

/// The runs of eight octets [`Pairs::add`] looks up before it stops looking, unless half of
/// them were added already.
const WORDS_TRIED: usize = 64;

/// The mark of a place of [`Pairs::add`]'s memory that holds nothing: no octet before.
const NOT_ADDED: u16 = u16::MAX;

impl Pairs {
    fn slot(first: u8, second: u8) -> usize {
        (usize::from(first) << 4 ^ usize::from(second)) & (PAIR_SLOTS - 1)
    }

    /// The pairs of `text`.
    pub(super) fn of(text: &[u8]) -> Pairs {
        let mut pairs = Pairs(Box::new([false; PAIR_SLOTS]));
        pairs.add(text);
        pairs
    }

    /// Adds the pairs of `text`: a few instructions an octet, a fraction of an automaton walk's.
    /// Eight octets with the one before them, once added, are remembered, so that a text that
    /// repeats itself (`/a/a/a…`, `/a/../a/..…`: an attacker's long path) costs a lookup per
    /// eight octets after its first period; one that has not repeated itself in its first
    /// [`WORDS_TRIED`] eights is read on without looking.
    pub(super) fn add(&mut self, text: &[u8]) {
        // Nine octets hold eight pairs; each nine starts where the one before ends, so that no
        // step waits on the one before.
        let mut added = [(0u64, NOT_ADDED); ADDED_WORDS];
        let (mut looking, mut skipped) = (true, 0);
        let mut nines = 0;
        for (index, nine) in text.windows(9).step_by(8).enumerate() {
            nines = index + 1;
            if index == WORDS_TRIED && skipped < WORDS_TRIED / 2 {
                looking = false;
            }
            if let (true, Some((&before, eight))) = (looking, nine.split_first()) {
                let word = eight
                    .first_chunk::<8>()
                    .map_or(0, |eight| u64::from_le_bytes(*eight));
                let key = (word, u16::from(before));
                let slot = &mut added[Self::word_slot(word, before)];
                if *slot == key {
                    skipped += 1;
                    continue;
                }
                *slot = key;
            }
            self.add_each(nine);
        }
        self.add_each(text.get(nines * 8..).unwrap_or_default());
    }

    /// Adds the pairs of `text` one by one.
    fn add_each(&mut self, text: &[u8]) {
        for pair in text.windows(2) {
            self.0[Self::slot(pair[0], pair[1])] = true;
        }
    }

    /// Where [`Pairs::add`] remembers eight octets and the one before them.
    fn word_slot(word: u64, before: u8) -> usize {
        let mixed = (word ^ u64::from(before)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (mixed >> (64 - ADDED_WORDS.trailing_zeros())) as usize
    }

    /// Whether `piece` may be in the text: every pair of it may be.
    pub(super) fn may_hold(&self, piece: &[u8]) -> bool {
        piece
            .windows(2)
            .all(|pair| self.0[Self::slot(pair[0], pair[1])])
    }
}

/// The octets of a text that is written with few (at most [`ALPHABET`]): a piece with any other
/// octet is not in it. A path an attacker fills with `/a%5C%5C..` or `/a/..` is over a handful of
/// octets, and against a file whose pieces need others this rules nearly all of them out at
/// about an instruction an octet, several times less than [`Pairs`].
pub(super) struct Alphabet([bool; 256]);

/// The most octets an [`Alphabet`] is kept for: each is one compare per sixteen octets.
const ALPHABET: usize = 8;

impl Alphabet {
    /// The octets of `text`, or `None` if it has more than [`ALPHABET`]. Sixteen octets at a time
    /// are compared with every octet found so far; only sixteen that hold a new one are looked at
    /// one by one.
    pub(super) fn of(text: &[u8]) -> Option<Alphabet> {
        let &first = text.first()?;
        let mut found = [false; 256];
        let mut count = 0;
        // Unused places repeat the first octet, so that every compare is of a known octet.
        let mut known = [u8x16::splat(first); ALPHABET];
        for sixteen in text.chunks(16) {
            if let Some(lanes) = sixteen.first_chunk::<16>() {
                let lanes = u8x16::new(*lanes);
                let hits = known
                    .iter()
                    .fold(u8x16::splat(0), |hits, &octet| hits | lanes.cmp_eq(octet));
                if hits.move_mask() == 0xFFFF {
                    continue;
                }
            }
            for &octet in sixteen {
                let new = found.get_mut(usize::from(octet))?;
                if !*new {
                    *new = true;
                    *known.get_mut(count)? = u8x16::splat(octet);
                    count += 1;
                }
            }
        }
        Some(Alphabet(found))
    }

    /// Whether `piece` may be in the text: it has no octet the text lacks.
    pub(super) fn may_hold(&self, piece: &[u8]) -> bool {
        piece.iter().all(|&octet| self.0[usize::from(octet)])
    }
}

/// What tells that a piece is not in the rest of a path.
#[derive(Clone, Copy)]
pub(super) enum Narrowing<'a> {
    /// The rest's pairs of adjacent octets.
    Pairs(&'a Pairs),
    /// The rest's octets, when they are few.
    Octets(&'a Alphabet),
}

impl Narrowing<'_> {
    /// Whether `piece` may be in the text.
    pub(super) fn may_hold(self, piece: &[u8]) -> bool {
        match self {
            Narrowing::Pairs(pairs) => pairs.may_hold(piece),
            Narrowing::Octets(alphabet) => alphabet.may_hold(piece),
        }
    }
}

/// The stretches of a text [`find_few`] reads side by side: each step waits on the one before,
/// so independent ones run in the time of one.
const LANES: usize = 4;

/// The bits of [`find_few`]'s state: an octet of a piece each, and one before each piece.
const SHIFT_AND_BITS: usize = 64;

/// Which of `pieces` (none empty, and their octets and one more each at most
/// [`SHIFT_AND_BITS`] in all) are in `text`: bit `k` of the answer for `pieces[k]`, `None` if
/// they do not fit. One pass over `text` for all of them, a few instructions an octet whatever
/// the text: a search per piece that skips to its rarer octets finds a candidate at nearly every
/// octet of a text where every octet is common, which is what a path over a few octets is.
///
/// Shift-and: bit `j` of the state says whether the text read so far ends with a piece's octets
/// up to the one at bit `j`. Each piece has a bit before it that is never set, so that moving
/// the state up a bit never reaches a piece's first bit, and adding the first bits is an addition
/// (one instruction with the move). Each step waits on the one before; the text is read as
/// [`LANES`] stretches side by side, each from a piece's length before where the one before it
/// ends, so that a step of each runs in about the time of one.
pub(super) fn find_few(pieces: &[&[u8]], text: &[u8]) -> Option<u64> {
    let bits: usize = pieces.iter().map(|piece| piece.len() + 1).sum();
    if bits > SHIFT_AND_BITS || pieces.contains(&&b""[..]) {
        return None;
    }
    // Per octet, the places in the pieces that hold it.
    let mut places = [0u64; 256];
    let (mut firsts, mut ends, mut at) = (0u64, 0u64, 0);
    for piece in pieces {
        // The bit before the piece, never set.
        at += 1;
        firsts |= 1 << at;
        for &octet in *piece {
            places[usize::from(octet)] |= 1 << at;
            at += 1;
        }
        ends |= 1 << (at - 1);
    }
    let longest = pieces.iter().map(|piece| piece.len()).max().unwrap_or(0);
    // Lane `k` reads from a piece's length before the `k`th quarter (to find what crosses into
    // it) to the end of that quarter.
    let quarter = text.len() / LANES;
    let lanes: [&[u8]; LANES] = std::array::from_fn(|k| {
        let from = (k * quarter).saturating_sub(longest.saturating_sub(1));
        let to = if k + 1 == LANES {
            text.len()
        } else {
            (k + 1) * quarter
        };
        text.get(from..to).unwrap_or_default()
    });
    let step =
        |state: u64, octet: u8| (state << 1).wrapping_add(firsts) & places[usize::from(octet)];
    // The first lane is the shortest: all are read side by side over its length, and then what
    // the others have left (their warm-up, and the odd octets of the last).
    let together = lanes[0].len();
    let [one, two, three, four] = lanes.map(|lane| {
        lane.get(..together)
            .unwrap_or_default()
            .chunks(SHIFT_AND_BITS)
    });
    let (mut states, mut reached) = ([0u64; LANES], 0u64);
    for (((one, two), three), four) in one.zip(two).zip(three).zip(four) {
        let [mut a, mut b, mut c, mut d] = states;
        for (((&w, &x), &y), &z) in one.iter().zip(two).zip(three).zip(four) {
            (a, b, c, d) = (step(a, w), step(b, x), step(c, y), step(d, z));
            reached |= a | b | c | d;
        }
        states = [a, b, c, d];
        if reached & ends == ends {
            break;
        }
    }
    if reached & ends != ends {
        for (state, lane) in states.iter_mut().zip(&lanes).skip(1) {
            for &octet in lane.get(together..).unwrap_or_default() {
                *state = step(*state, octet);
                reached |= *state;
            }
        }
    }
    let found = reached & ends;
    // From the end of each piece found to the piece.
    let mut answer = 0;
    let mut end = 0;
    for (k, piece) in pieces.iter().enumerate() {
        end += piece.len() + 1;
        if found >> (end - 1) & 1 == 1 {
            answer |= 1 << k;
        }
    }
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The slots of every pair of adjacent octets of `text`, one by one.
    fn pair_slots(text: &[u8]) -> Vec<bool> {
        let mut slots = vec![false; PAIR_SLOTS];
        for pair in text.windows(2) {
            slots[Pairs::slot(pair[0], pair[1])] = true;
        }
        slots
    }

    proptest! {
        /// The pairs of a text are those of its octets one by one, however it repeats itself
        /// (runs of eight remembered are skipped, unless it starts without repeating) and
        /// however it is read in two stretches (the later first, as a long path's lookups read
        /// it, and the earlier to one octet past).
        #[test]
        fn pairs_are_every_pair_of_adjacent_octets(
            noise in proptest::collection::vec(any::<u8>(), 0..800),
            unit in proptest::collection::vec(prop::sample::select(b"/a.%2F\\b".to_vec()), 1..12),
            repeats in 0usize..60,
            changes in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
            split in any::<prop::sample::Index>(),
        ) {
            let mut text = unit.repeat(repeats);
            if noise.len() % 2 == 0 {
                text.splice(0..0, noise);
            }
            if !text.is_empty() {
                for (at, octet) in changes {
                    let at = at.index(text.len());
                    text[at] = octet;
                }
            }
            let want = pair_slots(&text);
            prop_assert_eq!(Pairs::of(&text).0.to_vec(), want.clone());
            let split = split.index(text.len() + 1);
            let mut pairs = Pairs::of(&text[split..]);
            pairs.add(&text[..text.len().min(split + 1)]);
            prop_assert_eq!(pairs.0.to_vec(), want);
        }
    }

    /// An alphabet holds exactly the octets of its text, wherever in a block of sixteen (or the
    /// short last one) a new octet first shows, and there is none for a text of too many.
    #[test]
    fn alphabets_hold_exactly_the_octets_of_their_text() {
        let mut text = b"/a/..".repeat(40);
        for (at, octet) in [(37, b'x'), (170, b'%'), (199, b'Z')] {
            text[at] = octet;
        }
        let alphabet = Alphabet::of(&text).unwrap();
        for octet in 0..=255u8 {
            assert_eq!(
                alphabet.may_hold(&[octet]),
                text.contains(&octet),
                "{octet}"
            );
        }
        assert!(alphabet.may_hold(b"x/Z%") && !alphabet.may_hold(b"a/b"));
        assert!(Alphabet::of(b"abcdefgh").is_some());
        assert!(Alphabet::of(&b"abcdefghi".repeat(5)).is_none());
        assert!(Alphabet::of(b"").is_none());
    }

    /// Each piece is reported found exactly when it is in the text, pieces that share octets and
    /// prefixes included; pieces that do not fit are not looked for.
    #[test]
    fn a_few_pieces_are_found_in_one_pass() {
        let text = b"/a/../a/../a/..//x";
        let pieces: [&[u8]; 6] = [b"/a/", b"../a", b"/./", b"a/a", b"//x", b"x"];
        let found = find_few(&pieces, text).unwrap();
        for (k, piece) in pieces.iter().enumerate() {
            let present = text.windows(piece.len()).any(|w| w == *piece);
            assert_eq!(
                found >> k & 1 == 1,
                present,
                "{}",
                String::from_utf8_lossy(piece)
            );
        }
        assert_eq!(find_few(&[b"ab"], b"xxab"), Some(1));
        assert_eq!(find_few(&[b"ab"], b"xxa"), Some(0));
        assert_eq!(find_few(&[&[b'a'; 64][..]], b"a"), None);
        let long = [b'a'; 63];
        assert_eq!(find_few(&[&long[..]], &[b'a'; 100]), Some(1));
        assert_eq!(find_few(&[&long[..]], &[b'a'; 62]), Some(0));
        assert_eq!(find_few(&[b""], b"a"), None);
    }

    /// A piece across the border of two of the stretches read side by side is found, whatever
    /// the text's length (odd ones make the last stretch longer).
    #[test]
    fn pieces_across_the_stretches_read_side_by_side_are_found() {
        let pieces: [&[u8]; 2] = [b"xyzw", b"q"];
        for len in [9, 64, 257, 1003, 4096] {
            let quarter = len / LANES;
            for border in 1..LANES {
                let middle = border * quarter;
                for at in middle.saturating_sub(4)..=(middle + 1).min(len - 4) {
                    let mut text = vec![b'a'; len];
                    text[at..at + 4].copy_from_slice(b"xyzw");
                    assert_eq!(find_few(&pieces, &text), Some(1), "{len} {at}");
                }
            }
            let mut text = vec![b'a'; len];
            text[len - 1] = b'q';
            assert_eq!(find_few(&pieces, &text), Some(2), "{len}");
        }
    }
}
