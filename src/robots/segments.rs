//! Which segments of a path survive resolving: `.` and `..` segments removed (RFC 3986 §5.2.4)
//! and runs of separators merged, worked out before anything is written.
//!
//! The separators are found a block of 64 octets at a time, and the segments are then read from
//! the last to the first with a count of the `..`s not yet matched: a segment is dropped when a
//! `..` after it takes it back, and the work per segment is a few comparisons and no write. A
//! path an attacker fills with `/a/..` (sixteen thousand octets that resolve to `/`) costs a look
//! at each separator, and only what is kept is copied, in runs of whole segments.

use super::octets::{octet_masks, BLOCK};
use smallvec::SmallVec;

/// Where the separators of a path start, a bit per octet in blocks of [`BLOCK`] octets, which of
/// them are encoded (`%2F` or `%5C`, three octets long) rather than a plain `/`, and where its
/// dots are. The block after the last one is there, empty but for the end of the path, which
/// ends a segment as a separator does.
pub(super) struct Separators {
    starts: SmallVec<[u64; 8]>,
    encoded: SmallVec<[u64; 8]>,
    dots: SmallVec<[u64; 8]>,
    len: usize,
}

impl Separators {
    /// Room for a path of `len` octets: its blocks, and one more for its end.
    fn zeroed(len: usize) -> Self {
        let blocks = len / BLOCK + 2;
        Separators {
            starts: zeroed_blocks(blocks),
            encoded: zeroed_blocks(blocks),
            dots: zeroed_blocks(blocks),
            len,
        }
    }

    /// The `/`s of `path`.
    pub(super) fn slashes(path: &[u8]) -> Self {
        let mut separators = Separators::zeroed(path.len());
        let blocks = separators.starts.iter_mut().zip(separators.dots.iter_mut());
        for (block, (starts, dots)) in path.chunks(BLOCK).zip(blocks) {
            [*starts, *dots] = octet_masks(block, [b'/', b'.']);
        }
        separators.end();
        separators
    }

    /// The `/`s of a normalised path and its `%2F`s and `%5C`s.
    pub(super) fn slashes_and_encoded(path: &[u8]) -> Self {
        let mut separators = Separators::zeroed(path.len());
        for (index, block) in path.chunks(BLOCK).enumerate() {
            let [slashes, percents, dots] = octet_masks(block, [b'/', b'%', b'.']);
            // The `%`s that start a separator (the others start escapes of other octets), told
            // by the two octets after each, compared a block at a time too.
            let encoded = if percents == 0 {
                0
            } else {
                let after = |k: usize| path.get(index * BLOCK + k..).unwrap_or_default();
                let [two, five] = octet_masks(after(1), [b'2', b'5']);
                let [f, c] = octet_masks(after(2), [b'F', b'C']);
                percents & (two & f | five & c)
            };
            let places = (
                separators.starts.get_mut(index),
                separators.encoded.get_mut(index),
                separators.dots.get_mut(index),
            );
            if let (Some(starts), Some(wide), Some(dotted)) = places {
                (*starts, *wide, *dotted) = (slashes | encoded, encoded, dots);
            }
        }
        separators.end();
        separators
    }

    /// Marks the end of the path as a separator that ends the last segment (which no segment
    /// then follows: it is never read as one).
    fn end(&mut self) {
        if let Some(block) = self.starts.get_mut(self.len / BLOCK) {
            *block |= 1 << (self.len % BLOCK);
        }
    }

    /// Calls `found` with where each encoded separator in `from..to` starts, in order.
    pub(super) fn encoded_within(&self, from: usize, to: usize, mut found: impl FnMut(usize)) {
        let blocks = self
            .encoded
            .get(from / BLOCK..to.div_ceil(BLOCK))
            .unwrap_or_default();
        for (index, &block) in (from / BLOCK..).zip(blocks) {
            let mut bits = block;
            if index == from / BLOCK {
                bits &= u64::MAX << (from % BLOCK);
            }
            while bits != 0 {
                let at = index * BLOCK + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if at >= to {
                    return;
                }
                found(at);
            }
        }
    }

    /// Whether the path starts with a separator.
    pub(super) fn rooted(&self) -> bool {
        self.len > 0 && self.starts.first().is_some_and(|block| block & 1 == 1)
    }
}

/// `blocks` zeroed blocks: a short path's (nearly every one) in place, without a loop.
fn zeroed_blocks(blocks: usize) -> SmallVec<[u64; 8]> {
    if blocks <= 8 {
        let mut zeroed = SmallVec::from_buf([0; 8]);
        zeroed.truncate(blocks);
        zeroed
    } else {
        smallvec::smallvec![0; blocks]
    }
}

/// What resolving keeps of a rooted path: runs of whole segments (each with the separator
/// before it), alternately kept and dropped.
pub(super) struct Kept {
    /// The kept octets, a bit each in blocks of [`BLOCK`].
    octets: SmallVec<[u64; 8]>,
    /// Whether any segment is dropped.
    pub(super) changed: bool,
    /// Whether the last segment is dropped: what is kept then names a directory, and is written
    /// with a `/` at its end.
    pub(super) dropped_last: bool,
    len: usize,
}

impl Kept {
    /// The segments that resolving keeps of a path that starts with a separator.
    ///
    /// Two passes over the blocks. The first, from the end, reads the segments that take part in
    /// resolving (`..`s, and the segments with octets they take back) with a count of the `..`s
    /// not yet matched, and marks the separator of each segment kept; `.` and empty segments,
    /// always dropped, are not visited. The second, from the start, spreads each mark over its
    /// segment's octets (an addition carries it up to the next separator) and reads where the
    /// kept octets start and stop.
    pub(super) fn of(separators: &Separators) -> Self {
        let len = separators.len;
        let (starts, encoded, dots) = (&separators.starts, &separators.encoded, &separators.dots);
        let blocks = starts.len() - 1;
        let end_block = len / BLOCK;
        let end_bit = 1u64 << (len % BLOCK);
        let mut kept = zeroed_blocks(blocks);
        // `..`s read that have not yet taken a segment back.
        let mut unmatched = 0u64;
        let mut changed = false;
        // Whether the last segment is dropped, once it has been read.
        let mut dropped_last = None;
        for index in (0..blocks).rev() {
            let (s, s_next) = (starts[index], starts[index + 1]);
            let (d, d_next) = (dots[index], dots[index + 1]);
            // Bit i: whether a separator starts (or the path ends) at octet i + k, and whether
            // octet i + k is a dot.
            let start_at = |k: u32| s >> k | s_next << (BLOCK as u32 - k);
            let dot_at = |k: u32| d >> k | d_next << (BLOCK as u32 - k);
            // Each at the separator before the segment, whose octets start `k` after it.
            let segments = |k: u32| {
                let empty = start_at(k);
                let dot = dot_at(k) & start_at(k + 1);
                let two_dots = dot_at(k) & dot_at(k + 1) & start_at(k + 2);
                (empty | dot, two_dots)
            };
            let wide = encoded[index];
            let ((plain_none, plain_up), (wide_none, wide_up)) = (segments(1), segments(3));
            // The end of the path ends the last segment but starts none.
            let separators = s & !if index == end_block { end_bit } else { 0 };
            let up = (plain_up & !wide | wide_up & wide) & separators;
            let none = (plain_none & !wide | wide_none & wide) & separators;
            // Segments with octets (not `.` or `..`): what a `..` after them takes back.
            let mut holds = separators & !up & !none;
            let mut last = 0;
            if dropped_last.is_none() && separators != 0 {
                // This block holds the last separator. An empty segment after it stays, for the
                // path names a directory (`/a/b/`).
                let bit = BLOCK as u32 - 1 - separators.leading_zeros();
                let k = if wide >> bit & 1 == 1 { 3 } else { 1 };
                last = 1 << bit;
                holds |= start_at(k) & last;
            }
            let (read, up) = cancel_pairs(holds | up, up);
            let block_kept = take_back(read, up, &mut unmatched);
            if last != 0 {
                dropped_last = Some(block_kept & last == 0);
            }
            changed |= separators & !block_kept != 0;
            kept[index] = block_kept;
        }
        // Spread each kept mark over its segment: added to itself in a mask that also holds every
        // octet that starts no segment, it carries up to the next separator, which stops it
        // unless it is kept too.
        let mut carry = 0u64;
        for (marks, &s) in kept.iter_mut().zip(starts.iter()) {
            let continues = !s | *marks;
            let (sum, over) = continues.overflowing_add(*marks);
            let (sum, over_too) = sum.overflowing_add(carry);
            let carried = sum ^ continues ^ *marks;
            *marks |= carried & !(s & !*marks);
            carry = u64::from(over | over_too);
        }
        Kept {
            octets: kept,
            changed,
            dropped_last: dropped_last.unwrap_or(false),
            len,
        }
    }

    /// Calls `write` with each kept run of octets, `(from, to)`, in order: where the kept
    /// octets' mask changes, found a block at a time.
    pub(super) fn runs(&self, mut write: impl FnMut(usize, usize)) {
        let mut start = None;
        let mut before = 0u64;
        for (index, &octets) in self.octets.iter().enumerate() {
            let mut changes = octets ^ (octets << 1 | before);
            before = octets >> (BLOCK - 1);
            while changes != 0 {
                let at = (index * BLOCK + changes.trailing_zeros() as usize).min(self.len);
                changes &= changes - 1;
                match start.take() {
                    Some(from) if at > from => write(from, at),
                    Some(_) => {}
                    None => start = Some(at),
                }
            }
        }
        if let Some(from) = start.filter(|&from| self.len > from) {
            write(from, self.len);
        }
    }
}

/// Drops, from the segments of one block that take part in resolving (`tokens`, a bit at each
/// one's separator; `ups` the `..`s among them), each segment with octets whose next one is a
/// `..`, and that `..`: it takes back exactly that segment, whatever comes before or after. A
/// round does it for every such pair in the block at once, so a path of `/a/..`s leaves a few
/// segments a block to read one by one. Returns what is left.
fn cancel_pairs(mut tokens: u64, mut ups: u64) -> (u64, u64) {
    // Rounds take nested pairs (`/a/b/../..`) from the inside out; past a few, reading the
    // segments one by one costs less.
    for _ in 0..4 {
        let holds = tokens & !ups;
        // The segment after each segment with octets: a carry from the octet after it runs
        // through every octet that is not a segment's separator, and stops at the next one. No
        // two segments' separators are next to each other (each has octets between), so the
        // carries never meet.
        let (gaps, from) = (!tokens, holds << 1);
        let reached = gaps.wrapping_add(from) ^ gaps ^ from;
        let taking = ups & reached;
        if taking == 0 {
            break;
        }
        // The segment before each of those `..`s, found the same way in the reversed block.
        let (gaps, from) = (!tokens.reverse_bits(), taking.reverse_bits() << 1);
        let taken = holds & (gaps.wrapping_add(from) ^ gaps ^ from).reverse_bits();
        tokens &= !(taking | taken);
        ups &= !taking;
    }
    (tokens, ups)
}

/// Reads the segments of one block that take part in resolving, from the last to the first, with
/// `unmatched` the `..`s after them that have not yet taken a segment back, and returns which of
/// them are kept. While no `..` is unmatched, every segment with octets down to the next `..` is
/// kept at once.
fn take_back(mut tokens: u64, ups: u64, unmatched: &mut u64) -> u64 {
    let mut kept = 0;
    while tokens != 0 {
        let up = ups & tokens;
        if *unmatched == 0 {
            if up == 0 {
                return kept | tokens;
            }
            let bit = BLOCK as u32 - 1 - up.leading_zeros();
            // The segments after the `..`, all with octets.
            let below = (1u64 << bit) - 1;
            kept |= tokens & !below & !(1 << bit);
            tokens &= below;
            *unmatched = 1;
            continue;
        }
        if tokens == up {
            // Only `..`s are left.
            *unmatched += u64::from(tokens.count_ones());
            return kept;
        }
        // The segments with octets after the last `..` left: as many as there are unmatched
        // `..`s are taken back at once.
        let (after, below) = match up {
            0 => (tokens, 0),
            _ => {
                let bit = BLOCK as u32 - 1 - up.leading_zeros();
                (tokens & !((2u64 << bit).wrapping_sub(1)), (1u64 << bit) - 1)
            }
        };
        let count = if after == 0 {
            0
        } else {
            u64::from(after.count_ones())
        };
        if count <= *unmatched {
            *unmatched -= count;
            if up == 0 {
                return kept;
            }
            // Then that `..`.
            *unmatched += 1;
            tokens &= below;
            continue;
        }
        // More of them than unmatched `..`s: the last ones are taken back one by one, and the
        // rest kept by the first branch.
        let bit = BLOCK as u32 - 1 - tokens.leading_zeros();
        tokens &= !(1 << bit);
        *unmatched -= 1;
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Kept` keeps of `path`, with its separators (of either spelling) written `/`.
    fn resolved_with(path: &str, separators: Separators) -> (bool, String) {
        let kept = Kept::of(&separators);
        let mut out = String::new();
        kept.runs(|from, to| out.push_str(&path[from..to]));
        if out.is_empty() || kept.dropped_last {
            out.push('/');
        }
        let out = out.replace("%2F", "/").replace("%5C", "/");
        (kept.changed, out)
    }

    fn resolved(path: &str) -> (bool, String) {
        resolved_with(path, Separators::slashes(path.as_bytes()))
    }

    #[test]
    fn segments_taken_back_by_later_dot_dots_are_dropped() {
        assert_eq!(resolved("/a/b/../../c"), (true, "/c".into()));
        assert_eq!(resolved("/a/b/c/../d/.."), (true, "/a/b/".into()));
        assert_eq!(resolved("/../a"), (true, "/a".into()));
        assert_eq!(resolved("/a/..".repeat(500).as_str()), (true, "/".into()));
    }

    /// Segments taken back by `..`s far after them, blocks away, in runs of every length.
    #[test]
    fn nested_segments_are_taken_back_across_blocks() {
        for (segments, ups) in [
            (1, 1),
            (40, 39),
            (100, 30),
            (100, 100),
            (100, 150),
            (700, 333),
        ] {
            let path = format!("{}{}", "/ab".repeat(segments), "/..".repeat(ups));
            let left = "/ab".repeat(segments.saturating_sub(ups));
            let expected = if left.is_empty() {
                "/".to_owned()
            } else {
                left + "/"
            };
            assert_eq!(resolved(&path), (true, expected), "{segments} {ups}");
        }
        let path = format!(
            "/x{}/y{}",
            "/ab/..".repeat(50),
            "/cd".repeat(30) + &"/..".repeat(31)
        );
        assert_eq!(resolved(&path), (true, "/x/".into()));
    }

    #[test]
    fn empty_and_dot_segments_are_dropped_but_a_last_empty_one_stays() {
        assert_eq!(resolved("/a//b/./c/"), (true, "/a/b/c/".into()));
        assert_eq!(resolved("/a/b/"), (false, "/a/b/".into()));
        assert_eq!(resolved("/a/."), (true, "/a/".into()));
        assert_eq!(resolved("/"), (false, "/".into()));
    }

    #[test]
    fn encoded_separators_separate() {
        let path = "/a%2Fb%5C..%2Fc%25%2F.";
        let separators = Separators::slashes_and_encoded(path.as_bytes());
        assert_eq!(resolved_with(path, separators), (true, "/a/c%25/".into()));
        let separators = Separators::slashes_and_encoded(b"%2Fa%2F");
        assert!(separators.rooted());
        assert!(!Separators::slashes_and_encoded(b"a%2F").rooted());
    }
}
