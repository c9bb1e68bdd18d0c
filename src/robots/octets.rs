//! Finding octets of a byte string many at a time: a bit per octet, 64 octets to a block. The
//! paths this runs on are attacker-chosen and can be dense with the octet sought, where a
//! vectorised search per occurrence costs more than one scan that finds them all.

use wide::u8x16;

/// Octets looked at together: one bit each in a `u64`.
pub(super) const BLOCK: usize = 64;

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
