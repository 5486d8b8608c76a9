//! Tags compared four at a time in a word: the flow cache's buckets and
//! connection tracking's keep 16-bit tags side by side, and a lookup
//! wants the ways whose tag is its own without a compare and a branch
//! per way. And a connection's key, five words, compared at once.

/// Bit `w` set for each 16-bit lane `w` of `tags` equal to `tag`: the
/// lanes of `tags ^ tag×4` that are zero, found without a branch or a
/// carry between lanes, then their top bits gathered into four by one
/// multiply (the product's terms land on distinct bits).
#[inline(always)]
pub fn lanes_equal(tags: u64, tag: u16) -> u32 {
    const LOW: u64 = 0x7fff_7fff_7fff_7fff;
    let x = tags ^ (tag as u64 * 0x0001_0001_0001_0001);
    let zero = !(((x & LOW) + LOW) | x | LOW);
    const GATHER: u64 = 1 << 48 | 1 << 33 | 1 << 18 | 1 << 3;
    ((zero >> 15).wrapping_mul(GATHER) >> 48) as u32 & 0xf
}

/// Bit `w` set for each of the eight 16-bit lanes of `tags` (lanes 0-3 in
/// the first word) equal to `tag`. With SSE2 (every x86-64): one compare
/// of all eight, packed to bytes and their top bits taken, about a third
/// of the instructions of two [`lanes_equal`]s (connection tracking's
/// lookups read a bucket of eight ways or two).
#[inline(always)]
pub fn lanes8_equal(tags: [u64; 2], tag: u16) -> u32 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use std::arch::x86_64::{
            _mm_cmpeq_epi16, _mm_movemask_epi8, _mm_packs_epi16, _mm_set1_epi16, _mm_set_epi64x,
            _mm_setzero_si128,
        };
        // SAFETY: SSE2 is enabled (the `cfg` above; it is part of
        // x86-64's baseline), and these intrinsics touch no memory, only
        // their arguments.
        #[allow(unsafe_code)]
        unsafe {
            let t = _mm_set_epi64x(tags[1] as i64, tags[0] as i64);
            let eq = _mm_cmpeq_epi16(t, _mm_set1_epi16(tag as i16));
            // Lanes of all ones or zeros: packing to bytes keeps them so.
            _mm_movemask_epi8(_mm_packs_epi16(eq, _mm_setzero_si128())) as u32
        }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        lanes_equal(tags[0], tag) | lanes_equal(tags[1], tag) << 4
    }
}

/// Whether `a` and `b` hold the same five words (a connection's key):
/// with SSE2, the first four as two vectors compared byte by byte, the
/// results' top bits gathered and tested at once, then the fifth: 11
/// instructions and two branches, where LLVM made of the words' XOR-OR
/// a compare and a branch each (15).
#[inline(always)]
pub fn words5_equal(a: &[u64; 5], b: &[u64; 5]) -> bool {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use std::arch::x86_64::{_mm_and_si128, _mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set_epi64x};
        // SAFETY: SSE2 is enabled (the `cfg` above; it is part of
        // x86-64's baseline), and these intrinsics touch no memory, only
        // their arguments.
        #[allow(unsafe_code)]
        let low = unsafe {
            let v = |w: &[u64; 5], i: usize| _mm_set_epi64x(w[i + 1] as i64, w[i] as i64);
            let eq = |i| _mm_cmpeq_epi8(v(a, i), v(b, i));
            _mm_movemask_epi8(_mm_and_si128(eq(0), eq(2))) == 0xffff
        };
        low & (a[4] == b[4])
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        let mut d = 0;
        for (x, y) in a.iter().zip(b) {
            d |= x ^ y;
        }
        d == 0
    }
}

#[cfg(test)]
mod tests {
    use routecache::gen::Rng;

    #[test]
    fn agrees_with_lane_by_lane() {
        let mut rng = Rng(5);
        for _ in 0..100_000 {
            let mut tags = rng.next_u64();
            let tag = rng.next_u64() as u16;
            // Some lanes equal to the tag, some one bit off.
            for l in 0..4 {
                match rng.below(4) {
                    0 => tags = tags & !(0xffff << (16 * l)) | (tag as u64) << (16 * l),
                    1 => {
                        tags = tags & !(0xffff << (16 * l))
                            | ((tag ^ 1 << rng.below(16)) as u64) << (16 * l)
                    }
                    _ => {}
                }
            }
            let want = (0..4)
                .filter(|l| (tags >> (16 * l)) as u16 == tag)
                .fold(0, |m, l| m | 1 << l);
            assert_eq!(super::lanes_equal(tags, tag), want, "{tags:#x} {tag:#x}");
            let other = rng.next_u64() & !0xffff_0000 | (tag as u64) << 16;
            let want8 = want | (super::lanes_equal(other, tag) << 4);
            assert_eq!(super::lanes8_equal([tags, other], tag), want8);
            assert_eq!(want8 >> 4 & 2, 2);
        }
    }

    /// Five words compared with SSE2 are equal exactly when each is:
    /// arrays alike, or apart by one bit anywhere.
    #[test]
    fn five_words_agree_with_word_by_word() {
        let mut rng = Rng(11);
        for _ in 0..100_000 {
            let a: [u64; 5] = std::array::from_fn(|_| rng.next_u64());
            let mut b = a;
            if rng.below(2) == 0 {
                b[rng.below(5) as usize] ^= 1 << rng.below(64);
            }
            assert_eq!(super::words5_equal(&a, &b), a == b, "{a:x?} {b:x?}");
        }
    }
}
