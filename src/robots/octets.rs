//! Finding octets of a byte string many at a time, with plain integer arithmetic: a bit per
//! octet, eight octets to a word and 64 to a block. The paths this runs on are attacker-chosen
//! and can be dense with the octet sought, where a vectorised search per occurrence costs more
//! than one scan that finds them all.

use wide::u8x16;

/// Octets looked at together: one bit each in a `u64`.
pub(super) const BLOCK: usize = 64;

/// The offsets of one octet in a byte string, in order, found eight octets at a time with no
/// branch per octet. Where the octet is dense (a path of `%2F`s), one call of a vectorised
/// search per occurrence costs more than this whole scan.
pub(super) struct Octets<'a> {
    bytes: &'a [u8],
    octet: u64,
    /// The offset of the eight octets `mask` covers.
    base: usize,
    /// A bit per occurrence among those eight octets not yet yielded.
    mask: u64,
}

impl<'a> Octets<'a> {
    /// The offsets of `octet` in `bytes` from `from` on.
    pub(super) fn new(bytes: &'a [u8], octet: u8, from: usize) -> Self {
        let mut octets = Octets {
            bytes,
            octet: u64::from_ne_bytes([octet; 8]),
            base: from,
            mask: 0,
        };
        octets.mask = octets.mask_at(from);
        octets
    }

    fn mask_at(&self, base: usize) -> u64 {
        let mut word = [0u8; 8];
        let eight = self.bytes.get(base..).unwrap_or_default();
        let eight = eight.get(..8).unwrap_or(eight);
        if let Some(head) = word.get_mut(..eight.len()) {
            head.copy_from_slice(eight);
        }
        // The padding's zeros never count: `octet` is not 0 where this is used.
        gathered_zeros(u64::from_le_bytes(word) ^ self.octet)
    }
}

impl Iterator for Octets<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            self.base += 8;
            if self.base >= self.bytes.len() {
                return None;
            }
            self.mask = self.mask_at(self.base);
        }
        let at = self.base + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1;
        Some(at)
    }
}

/// Bit `i` set where octet `i` (little-endian) of `x` is zero: the exact zero-octet test (0x80
/// in each zero octet, no false positives), gathered into the low eight bits.
#[inline(always)]
fn gathered_zeros(x: u64) -> u64 {
    const LOW7: u64 = u64::from_ne_bytes([0x7F; 8]);
    // Bit 8i to bit 56 + i: each product lands in a bit of its own, so none carries.
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let zeros = (!(((x & LOW7) + LOW7) | x) & !LOW7) >> 7;
    zeros.wrapping_mul(GATHER) >> 56
}

/// Per octet of `wanted`, the mask with bit `i` set where octet `i` of `block` (at most 64
/// octets) is that octet. None of them may be 0 (the padding after a short block's end).
///
/// Sixteen octets are compared at once (`wide`: SSE2 on x86-64, NEON on aarch64): on a path an
/// attacker fills with separators, this is most of the cost of reading it.
pub(super) fn octet_masks<const N: usize>(block: &[u8], wanted: [u8; N]) -> [u64; N] {
    let mut padded = [0u8; BLOCK];
    let octets = match block.first_chunk::<BLOCK>() {
        Some(full) => full,
        None => {
            // The zeros after the end are none of them.
            if let Some(head) = padded.get_mut(..block.len()) {
                head.copy_from_slice(block);
            }
            &padded
        }
    };
    let needles = wanted.map(u8x16::splat);
    let mut masks = [0u64; N];
    for (lane, sixteen) in octets.chunks_exact(16).enumerate() {
        let mut lanes = [0u8; 16];
        lanes.copy_from_slice(sixteen);
        let lanes = u8x16::new(lanes);
        for (mask, needle) in masks.iter_mut().zip(needles) {
            // One bit per lane, the sixteen low bits of the move mask.
            let found = lanes.cmp_eq(needle).move_mask() as u16;
            *mask |= u64::from(found) << (16 * lane);
        }
    }
    masks
}
