//! Tags compared four at a time in a word: the flow cache's buckets and
//! connection tracking's keep 16-bit tags side by side, and a lookup
//! wants the ways whose tag is its own without a compare and a branch
//! per way.

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
        }
    }
}
