//! The interval tree of a lead field: a static 16-ary search tree over the
//! boundaries of one field's ranges, built when a snapshot is committed.
//!
//! The boundaries of every element's range in the field (each start, and
//! each end + 1) cut the field's values into elementary intervals; every
//! interval is covered by the same elements throughout. A key's value
//! finds its interval by its *rank*, the number of boundaries at or below
//! it, and the interval names the few elements covering it, which are
//! then checked against the key's other fields. When elements' ranges in
//! the field are disjoint (the selftest's sets; port or address columns of
//! many rule sets) that is one candidate, or none.
//!
//! The rank comes from a search tree of 64-byte blocks of sixteen `u32`
//! values, the leaves being the sorted boundaries themselves and each
//! level above holding the first value of every block of the level below:
//! a key costs one block per level (three for 2,000 boundaries, the upper
//! two always cached), and counting the values at or below it in a block
//! is one vector compare (AVX-512), two (AVX2), or sixteen scalar ones
//! that the compiler vectorises. A burst descends level by level across
//! all of its keys, so their loads overlap instead of waiting on each
//! other, and no step branches on the key.
//!
//! Only fields of 1, 2 or 4 bytes (protocols, ports, IPv4 addresses,
//! marks) get a tree, and only when no interval is covered by more than
//! [`MAX_COVER`] elements; other sets keep the bitmap lead of
//! [`crate::lookup`].

/// Values per block, one 64-byte cache line.
pub(crate) const FANOUT: usize = 16;

/// Most elements one interval may name; past that, no tree.
pub(crate) const MAX_COVER: u32 = 4;

/// A slot naming a list of candidates (its offset in `lists`) rather
/// than one element.
const LIST: u32 = 1 << 31;

/// One node of the tree: sixteen sorted values, padded with `u32::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C, align(64))]
pub(crate) struct Block(pub(crate) [u32; FANOUT]);

// SAFETY: a block is sixteen `u32`s and nothing else (`repr(C)`, its
// padding none: 64 bytes, 64-aligned); all zero bytes is a valid block.
#[allow(unsafe_code)]
unsafe impl pages::Zeroable for Block {}

/// Counts the values of `b` at or below `x`, sixteen scalar compares.
#[inline(always)]
pub(crate) fn count_le(b: &Block, x: u32) -> u32 {
    b.0.iter().map(|&v| (v <= x) as u32).sum()
}

/// The tree of one field and the candidates of every interval.
#[derive(Clone, Debug)]
pub(crate) struct Intervals {
    /// The field, and its bytes in a key.
    field: usize,
    off: usize,
    len: usize,
    /// Root first, leaves (the sorted boundaries) last.
    levels: Vec<Vec<Block>>,
    /// Number of boundaries (the leaves without their padding).
    n: u32,
    /// Per rank `0..=n`: the one element covering the interval, `none` when
    /// no element does, or `LIST | offset` into `lists` (ids, `none`
    /// included, are below `LIST`).
    slots: Vec<u32>,
    /// Candidate lists: a count, then that many element ids.
    lists: Vec<u32>,
    /// The id that stands for "no element": a lookup checks it like a
    /// candidate (its ranges are empty) and discards it, so empty
    /// intervals take no branch of their own.
    none: u32,
}

impl Intervals {
    /// Builds the tree of field `field` (at `off`, `len` bytes in a key)
    /// from the live elements' ranges in it (`(start, end, id)`), if the
    /// field suits one: `None` when an interval is covered by more than
    /// [`MAX_COVER`] elements. `none` is an id no element has.
    pub(crate) fn build(
        field: usize,
        off: usize,
        len: usize,
        ranges: &[(u32, u32, u32)],
        none: u32,
    ) -> Option<Intervals> {
        if !matches!(len, 1 | 2 | 4) || ranges.is_empty() || none >= LIST {
            return None;
        }
        let top = if len == 4 {
            u32::MAX
        } else {
            (1u32 << (8 * len)) - 1
        };
        let mut bounds: Vec<u32> = Vec::with_capacity(2 * ranges.len());
        for &(s, e, _) in ranges {
            bounds.push(s);
            if e < top {
                bounds.push(e + 1);
            }
        }
        bounds.sort_unstable();
        bounds.dedup();
        let n = bounds.len();
        // Interval `r` holds the values from bounds[r - 1] (or 0) up to
        // bounds[r] - 1 (or the top); an element [s, e] covers ranks
        // rank(s) ..= rank(e + 1) - 1, where rank(v) of a boundary v is
        // its index + 1.
        let span = |s: u32, e: u32| {
            let lo = bounds.partition_point(|&b| b <= s);
            let hi = if e < top {
                bounds.partition_point(|&b| b <= e)
            } else {
                n
            };
            (lo, hi)
        };
        let spans: Vec<(usize, usize)> = ranges.iter().map(|&(s, e, _)| span(s, e)).collect();
        let mut cover = vec![0i64; n + 2];
        for &(lo, hi) in &spans {
            cover[lo] += 1;
            cover[hi + 1] -= 1;
        }
        let mut run = 0i64;
        let mut total = 0u64;
        for c in cover.iter_mut().take(n + 1) {
            run += *c;
            *c = run;
            if run > MAX_COVER as i64 {
                return None;
            }
            total += run as u64;
        }
        let mut slots = vec![none; n + 1];
        let mut lists = Vec::new();
        let mut fill = vec![0u32; n + 1];
        for (r, &c) in cover.iter().take(n + 1).enumerate() {
            if c > 1 {
                slots[r] = LIST | lists.len() as u32;
                lists.push(c as u32);
                lists.extend(std::iter::repeat_n(none, c as usize));
            }
        }
        debug_assert!(lists.len() as u64 <= 2 * total + 1);
        for (&(_, _, id), &(lo, hi)) in ranges.iter().zip(&spans) {
            for r in lo..=hi {
                let slot = slots[r];
                if slot & LIST != 0 {
                    let o = (slot & !LIST) as usize;
                    lists[o + 1 + fill[r] as usize] = id;
                    fill[r] += 1;
                } else {
                    slots[r] = id;
                }
            }
        }
        Some(Intervals {
            field,
            off,
            len,
            levels: levels(&bounds),
            n: n as u32,
            slots,
            lists,
            none,
        })
    }

    /// The field the tree is built on.
    pub(crate) fn field(&self) -> usize {
        self.field
    }

    /// How good a lead the tree makes, smaller is better: the candidate
    /// lists' length (0 when every interval names at most one element),
    /// then the levels a key descends.
    pub(crate) fn score(&self) -> (usize, usize) {
        (self.lists.len(), self.levels.len())
    }

    /// Bytes of the tree, its slots and lists.
    pub(crate) fn memory_usage(&self) -> usize {
        self.levels
            .iter()
            .map(|l| l.len() * std::mem::size_of::<Block>())
            .sum::<usize>()
            + 4 * (self.slots.len() + self.lists.len())
    }

    /// The field's value in `key`.
    #[inline(always)]
    pub(crate) fn value(&self, key: &[u8]) -> u32 {
        let k = &key[self.off..self.off + self.len];
        match self.len {
            1 => k[0] as u32,
            2 => u16::from_be_bytes([k[0], k[1]]) as u32,
            _ => u32::from_be_bytes([k[0], k[1], k[2], k[3]]),
        }
    }

    /// The ranks of `xs` (the number of boundaries at or below each) into
    /// `ranks`, level by level across all keys, counting within a block
    /// with `count` (one of [`count_le`] or its vector forms, which must
    /// agree with it).
    #[inline(always)]
    pub(crate) fn descend(
        &self,
        xs: &[u32],
        ranks: &mut [u32],
        count: impl Fn(&Block, u32) -> u32,
    ) {
        let ranks = &mut ranks[..xs.len()];
        let depth = self.levels.len();
        // Every key starts at the root, one block for all of them.
        let root = &self.levels[0][0];
        if depth == 1 {
            for (r, &x) in ranks.iter_mut().zip(xs) {
                *r = count(root, x).min(self.n);
            }
            return;
        }
        for (r, &x) in ranks.iter_mut().zip(xs) {
            *r = count(root, x)
                .saturating_sub(1)
                .min(self.levels[1].len() as u32 - 1);
        }
        for (l, level) in self.levels.iter().enumerate().skip(1) {
            if l + 1 == depth {
                for (r, &x) in ranks.iter_mut().zip(xs) {
                    let p = *r * FANOUT as u32 + count(&level[*r as usize], x);
                    // Padding counts only for x == u32::MAX, whose rank is n.
                    *r = p.min(self.n);
                }
            } else {
                // The block of the next level: the last whose first value
                // is at or below x (block 0 when none is). Padding may
                // point past the last block; clamp to it.
                let last = self.levels[l + 1].len() as u32 - 1;
                for (r, &x) in ranks.iter_mut().zip(xs) {
                    let p = *r * FANOUT as u32 + count(&level[*r as usize], x);
                    *r = p.saturating_sub(1).min(last);
                }
            }
        }
    }

    /// The candidates of the interval of rank `r`: one element (possibly
    /// the `none` id), or a list.
    #[inline(always)]
    pub(crate) fn candidates(&self, r: u32) -> Result<u32, &[u32]> {
        let s = self.slots[r as usize];
        if s & LIST == 0 {
            Ok(s)
        } else {
            let o = (s & !LIST) as usize;
            let c = self.lists[o] as usize;
            Err(&self.lists[o + 1..o + 1 + c])
        }
    }

    /// The id that stands for no element.
    #[inline(always)]
    pub(crate) fn none(&self) -> u32 {
        self.none
    }
}

/// The levels of the tree over the sorted `bounds`, root first.
fn levels(bounds: &[u32]) -> Vec<Vec<Block>> {
    let blocks = |vals: &[u32]| -> Vec<Block> {
        vals.chunks(FANOUT)
            .map(|c| {
                let mut b = Block([u32::MAX; FANOUT]);
                b.0[..c.len()].copy_from_slice(c);
                b
            })
            .collect()
    };
    let mut out = vec![blocks(bounds)];
    while out.last().is_some_and(|l| l.len() > 1) {
        let firsts: Vec<u32> = out.last().unwrap().iter().map(|b| b.0[0]).collect();
        out.push(blocks(&firsts));
    }
    out.reverse();
    out
}

/// The `(start, end, id)` of every live element's range in a field of
/// `len` bytes, from the elements' ranges (`nfields` per id, empty ranges
/// for free ids).
pub(crate) fn field_ranges(
    ranges: &[(u128, u128)],
    nfields: usize,
    field: usize,
) -> Vec<(u32, u32, u32)> {
    ranges
        .chunks_exact(nfields)
        .enumerate()
        .filter(|(_, r)| r[field].0 <= r[field].1)
        .map(|(id, r)| (r[field].0 as u32, r[field].1 as u32, id as u32))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use routecache::gen::Rng;

    /// The rank by a plain count, and the elements covering a value.
    fn reference(ranges: &[(u32, u32, u32)], x: u32) -> Vec<u32> {
        let mut v: Vec<u32> = ranges
            .iter()
            .filter(|r| r.0 <= x && x <= r.1)
            .map(|r| r.2)
            .collect();
        v.sort_unstable();
        v
    }

    fn found(t: &Intervals, x: u32) -> Vec<u32> {
        let mut rank = [0u32];
        t.descend(&[x], &mut rank, count_le);
        let mut v = match t.candidates(rank[0]) {
            Ok(e) if e == t.none() => vec![],
            Ok(e) => vec![e],
            Err(l) => l.to_vec(),
        };
        v.sort_unstable();
        v
    }

    #[test]
    fn candidates_are_the_covering_elements() {
        let mut rng = Rng(7);
        let mut next = move || rng.next_u64();
        for round in 0..300 {
            let len = [1usize, 2, 4][round % 3];
            let top: u64 = if len == 4 {
                u32::MAX as u64
            } else {
                (1 << (8 * len)) - 1
            };
            let n = 1 + next() as usize % [3, 40, 700][(round / 3) % 3];
            let mut ranges = Vec::new();
            for id in 0..n as u32 {
                let a = (next() % (top + 1)) as u32;
                let w = next() % [1, 4, 300, 1 << 20][next() as usize % 4];
                let b = (a as u64 + w).min(top) as u32;
                ranges.push((a, b, id));
            }
            // Sometimes the extremes.
            if round % 7 == 0 {
                ranges.push((0, 0, n as u32));
                ranges.push((top as u32, top as u32, n as u32 + 1));
            }
            let none = ranges.len() as u32 + 5;
            let Some(t) = Intervals::build(0, 0, len, &ranges, none) else {
                // Refused only when some value is covered too often.
                assert!(ranges
                    .iter()
                    .any(|r| reference(&ranges, r.0).len() > MAX_COVER as usize));
                continue;
            };
            let mut probes: Vec<u32> = vec![0, top as u32];
            for r in &ranges {
                probes.extend([r.0, r.1, r.0.wrapping_sub(1), r.1.wrapping_add(1)]);
            }
            for _ in 0..200 {
                probes.push((next() % (top + 1)) as u32);
            }
            for p in probes {
                if p as u64 > top {
                    continue;
                }
                assert_eq!(found(&t, p), reference(&ranges, p), "len {len} value {p}");
            }
        }
    }

    #[test]
    fn a_burst_descends_like_single_keys() {
        let ranges: Vec<(u32, u32, u32)> = (0..5000u32).map(|i| (i * 10, i * 10 + 3, i)).collect();
        let t = Intervals::build(0, 0, 4, &ranges, 1 << 20).unwrap();
        assert_eq!(t.levels.len(), 4);
        let xs: Vec<u32> = (0..64u32)
            .map(|i| i.wrapping_mul(2654435761) % 60000)
            .collect();
        let mut ranks = [0u32; 64];
        t.descend(&xs, &mut ranks, count_le);
        for (&x, &r) in xs.iter().zip(&ranks) {
            let mut one = [0u32];
            t.descend(&[x], &mut one, count_le);
            assert_eq!(r, one[0]);
            assert_eq!(
                r as usize,
                (0..5000u32)
                    .map(|i| (i * 10 <= x) as usize + (i * 10 + 4 <= x) as usize)
                    .sum::<usize>()
            );
        }
    }
}
