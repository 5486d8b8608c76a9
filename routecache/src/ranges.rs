//! The IPv6 range tree: a published IPv6 table flattened into the runs of
//! equal answers over the top 64 bits of the address, searched with a
//! static 8-ary tree of 64-byte blocks.
//!
//! The trie of [`crate::lpm`] costs a /48 lookup five dependent loads
//! spread over a table of 100+ MiB (nearly all DRAM misses on random
//! destinations). Here the same table is the sorted starts of its runs
//! (about two per route): the tree's upper levels (a few hundred KiB)
//! stay in the caches, and a lookup misses at most on its leaf block and
//! the answer beside it. A burst descends all its addresses level by
//! level, so their loads overlap, prefetching the next level's blocks;
//! counting the starts at or below an address in a block is one vector
//! compare (AVX-512), four (AVX2), or eight scalar ones.
//!
//! Only routes up to /64 fit: a top-64 value under which some route is
//! longer answers [`RUN_LONG`], and that address goes to the trie. The
//! tree is built from the trie ([`LpmTable::runs64`]), off the fast path,
//! after a snapshot is published (see [`crate::fib::FibSnapshot::prepare`]);
//! until then lookups use the trie.
#![allow(unsafe_code)]

use crate::lpm::{LpmTable, RUN_LONG, RUN_NONE};
use pages::prefetch;

/// Starts per block: one cache line of `u64`.
const FANOUT: usize = 8;
/// Addresses a burst descends together.
const BURST: usize = 32;
/// Levels of at most this many blocks (64 KiB) are not prefetched: they
/// stay cached, and the prefetch would only cost its instruction.
const CACHED_BLOCKS: usize = 1024;

/// Eight sorted run starts, padded with `u64::MAX`.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Block([u64; FANOUT]);

/// Counts the starts of `b` at or below `x`, eight scalar compares.
#[inline(always)]
fn count_le(b: &Block, x: u64) -> u32 {
    b.0.iter().map(|&v| (v <= x) as u32).sum()
}

/// Eight run starts and, beside them, the answers of the runs they
/// start: one 128-byte pair of cache lines.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(128))]
struct Leaf {
    starts: Block,
    /// `vals[c - 1]`: the answer for an address with `c` of the starts at
    /// or below it (padding repeats the last run's answer).
    vals: [u32; FANOUT],
}

/// A published IPv6 table as a search tree over its runs.
#[derive(Debug)]
pub struct RangeTree {
    /// Inner levels, root first: each entry the first start of a block
    /// (or leaf) of the level below. Empty when there is one leaf.
    upper: Vec<Vec<Block>>,
    /// The run starts after the first (which is always 0), in order.
    leaves: Vec<Leaf>,
    /// The answer of the first run, below every start in the leaves.
    first: u32,
    /// Number of runs.
    runs: usize,
}

/// What a lookup in the tree says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The route's target, or none.
    Found(Option<u32>),
    /// A route longer than /64 lies under these 64 bits: ask the trie.
    Long,
}

impl RangeTree {
    /// The tree of an IPv6 table.
    pub fn build(table: &LpmTable) -> RangeTree {
        RangeTree::from_runs(&table.runs64())
    }

    /// The tree of runs `(first, value)`, sorted by `first`, the first at
    /// 0 (as [`LpmTable::runs64`] gives them).
    fn from_runs(runs: &[(u64, u32)]) -> RangeTree {
        assert!(runs.first().is_some_and(|r| r.0 == 0), "runs start at 0");
        let rest = &runs[1..];
        let last = runs[runs.len() - 1].1;
        let mut leaves: Vec<Leaf> = rest
            .chunks(FANOUT)
            .map(|c| {
                let mut l = Leaf {
                    starts: Block([u64::MAX; FANOUT]),
                    vals: [last; FANOUT],
                };
                for (i, &(start, v)) in c.iter().enumerate() {
                    l.starts.0[i] = start;
                    l.vals[i] = v;
                }
                l
            })
            .collect();
        if leaves.is_empty() {
            leaves.push(Leaf {
                starts: Block([u64::MAX; FANOUT]),
                vals: [last; FANOUT],
            });
        }
        let blocks = |v: &[u64]| -> Vec<Block> {
            v.chunks(FANOUT)
                .map(|c| {
                    let mut b = Block([u64::MAX; FANOUT]);
                    b.0[..c.len()].copy_from_slice(c);
                    b
                })
                .collect()
        };
        let mut upper: Vec<Vec<Block>> = Vec::new();
        let mut firsts: Vec<u64> = leaves.iter().map(|l| l.starts.0[0]).collect();
        while firsts.len() > 1 {
            let level = blocks(&firsts);
            firsts = level.iter().map(|b| b.0[0]).collect();
            upper.push(level);
        }
        upper.reverse();
        RangeTree {
            upper,
            leaves,
            first: runs[0].1,
            runs: runs.len(),
        }
    }

    /// Bytes of the tree and its answers.
    pub fn memory_usage(&self) -> usize {
        self.upper
            .iter()
            .map(|l| l.len() * std::mem::size_of::<Block>())
            .sum::<usize>()
            + self.leaves.len() * std::mem::size_of::<Leaf>()
    }

    /// The number of runs.
    pub fn runs(&self) -> usize {
        self.runs
    }

    /// The answers of `xs` into `out`, level by level across all of them,
    /// counting the starts at or below each in a block with `count` (one
    /// of [`count_le`] or its vector forms, which must agree with it).
    #[inline(always)]
    fn descend(&self, xs: &[u64], out: &mut [u32], count: impl Fn(&Block, u64) -> u32) {
        let n = xs.len().min(out.len()).min(BURST);
        let mut pos = [0u32; BURST];
        let depth = self.upper.len();
        for (l, level) in self.upper.iter().enumerate() {
            // The block below: the last whose first start is at or below
            // x (block 0 when none is), clamped past padding.
            let leaves = l + 1 == depth;
            let below = if leaves {
                self.leaves.len()
            } else {
                self.upper[l + 1].len()
            };
            let last = below as u32 - 1;
            if leaves {
                for (p, &x) in pos[..n].iter_mut().zip(xs) {
                    let c = *p * FANOUT as u32 + count(&level[*p as usize], x);
                    *p = c.saturating_sub(1).min(last);
                    let leaf = &self.leaves[*p as usize];
                    prefetch(&leaf.starts);
                    prefetch(&leaf.vals);
                }
            } else if below > CACHED_BLOCKS {
                let next = &self.upper[l + 1];
                for (p, &x) in pos[..n].iter_mut().zip(xs) {
                    let c = *p * FANOUT as u32 + count(&level[*p as usize], x);
                    *p = c.saturating_sub(1).min(last);
                    prefetch(&next[*p as usize]);
                }
            } else {
                // A level this small stays in the caches: no prefetch.
                for (p, &x) in pos[..n].iter_mut().zip(xs) {
                    let c = *p * FANOUT as u32 + count(&level[*p as usize], x);
                    *p = c.saturating_sub(1).min(last);
                }
            }
        }
        for ((o, &p), &x) in out[..n].iter_mut().zip(&pos[..n]).zip(xs) {
            let leaf = &self.leaves[p as usize];
            let c = count(&leaf.starts, x) as usize;
            // No start at or below x: only in leaf 0, below every start.
            *o = if c == 0 { self.first } else { leaf.vals[c - 1] };
        }
    }

    /// What a run's value says.
    #[inline(always)]
    fn answer(v: u32) -> Answer {
        match v {
            RUN_LONG => Answer::Long,
            RUN_NONE => Answer::Found(None),
            t => Answer::Found(Some(t)),
        }
    }

    /// Looks up a burst of addresses' top 64 bits, with the widest
    /// vectors this CPU has.
    pub fn lookup_burst(&self, xs: &[u64], out: &mut [Answer]) {
        let mut vals = [0u32; BURST];
        for (xs, out) in xs.chunks(BURST).zip(out.chunks_mut(BURST)) {
            let n = xs.len().min(out.len());
            self.values(&xs[..n], &mut vals[..n]);
            for (o, &v) in out.iter_mut().zip(&vals[..n]) {
                *o = RangeTree::answer(v);
            }
        }
    }

    /// [`RangeTree::descend`] with the kernel this CPU runs best.
    #[inline]
    fn values(&self, xs: &[u64], ranks: &mut [u32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: the CPU has AVX-512F and POPCNT.
                return unsafe { x86::descend_avx512(self, xs, ranks) };
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("popcnt")
            {
                // SAFETY: the CPU has AVX2 and POPCNT.
                return unsafe { x86::descend_avx2(self, xs, ranks) };
            }
        }
        self.descend(xs, ranks, count_le)
    }

    /// [`RangeTree::lookup_burst`] with the scalar count (for tests).
    pub fn lookup_burst_scalar(&self, xs: &[u64], out: &mut [Answer]) {
        let mut vals = [0u32; BURST];
        for (xs, out) in xs.chunks(BURST).zip(out.chunks_mut(BURST)) {
            let n = xs.len().min(out.len());
            self.descend(&xs[..n], &mut vals[..n], count_le);
            for (o, &v) in out.iter_mut().zip(&vals[..n]) {
                *o = RangeTree::answer(v);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Block, RangeTree};
    use std::arch::x86_64::*;

    /// [`RangeTree::descend`] counting a block with one 512-bit unsigned
    /// compare into a mask.
    ///
    /// SAFETY: the CPU has AVX-512F and POPCNT.
    #[target_feature(enable = "avx512f,popcnt")]
    #[inline(never)]
    pub(super) unsafe fn descend_avx512(t: &RangeTree, xs: &[u64], ranks: &mut [u32]) {
        t.descend(xs, ranks, |b: &Block, x: u64| {
            // SAFETY: a block is eight `u64`, one 64-byte load.
            let v = unsafe { _mm512_loadu_si512(b.0.as_ptr().cast()) };
            let m = _mm512_cmple_epu64_mask(v, _mm512_set1_epi64(x as i64));
            (m as u32).count_ones()
        })
    }

    /// [`RangeTree::descend`] counting a block with two 256-bit signed
    /// compares of sign-flipped values (AVX2 has no unsigned 64-bit
    /// compare): the starts above `x`, taken from eight.
    ///
    /// SAFETY: the CPU has AVX2 and POPCNT.
    #[target_feature(enable = "avx2,popcnt")]
    #[inline(never)]
    pub(super) unsafe fn descend_avx2(t: &RangeTree, xs: &[u64], ranks: &mut [u32]) {
        t.descend(xs, ranks, |b: &Block, x: u64| {
            let flip = _mm256_set1_epi64x(i64::MIN);
            let xv = _mm256_xor_si256(_mm256_set1_epi64x(x as i64), flip);
            let p = b.0.as_ptr();
            // SAFETY: a block is eight `u64`, two 32-byte loads.
            let (lo, hi) = unsafe {
                (
                    _mm256_loadu_si256(p.cast()),
                    _mm256_loadu_si256(p.add(4).cast()),
                )
            };
            let gt_lo = _mm256_cmpgt_epi64(_mm256_xor_si256(lo, flip), xv);
            let gt_hi = _mm256_cmpgt_epi64(_mm256_xor_si256(hi, flip), xv);
            let m = _mm256_movemask_pd(_mm256_castsi256_pd(gt_lo)) as u32
                | (_mm256_movemask_pd(_mm256_castsi256_pd(gt_hi)) as u32) << 4;
            8 - m.count_ones()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::Rng;

    /// The answer of `x` by a scan of the runs.
    fn scan(runs: &[(u64, u32)], x: u64) -> u32 {
        runs.iter().rev().find(|r| r.0 <= x).unwrap().1
    }

    fn answers(t: &RangeTree, xs: &[u64]) -> Vec<Vec<Answer>> {
        let mut a = vec![Answer::Long; xs.len()];
        t.lookup_burst(xs, &mut a);
        let mut b = vec![Answer::Long; xs.len()];
        t.lookup_burst_scalar(xs, &mut b);
        let mut kernels = vec![a, b];
        #[cfg(target_arch = "x86_64")]
        for (ok, f) in [
            (
                std::arch::is_x86_feature_detected!("avx2"),
                x86::descend_avx2 as unsafe fn(&RangeTree, &[u64], &mut [u32]),
            ),
            (
                std::arch::is_x86_feature_detected!("avx512f"),
                x86::descend_avx512,
            ),
        ] {
            if ok && std::arch::is_x86_feature_detected!("popcnt") {
                let mut ranks = vec![0u32; xs.len()];
                for (c, r) in xs.chunks(BURST).zip(ranks.chunks_mut(BURST)) {
                    // SAFETY: the feature was detected just above.
                    unsafe { f(t, c, r) };
                }
                kernels.push(ranks.iter().map(|&v| RangeTree::answer(v)).collect());
            }
        }
        kernels
    }

    #[test]
    fn every_kernel_finds_the_run_of_a_scan() {
        let mut rng = Rng(3);
        let mut next = move || rng.next_u64();
        for round in 0..200 {
            let n = 1 + next() as usize % [1, 9, 70, 3000][round % 4];
            let mut starts: Vec<u64> = (0..n).map(|_| next() >> (next() % 64)).collect();
            if round % 5 == 0 {
                starts.push(u64::MAX);
            }
            starts.push(0);
            starts.sort_unstable();
            starts.dedup();
            let runs: Vec<(u64, u32)> = starts
                .iter()
                .map(|&a| {
                    (
                        a,
                        [RUN_NONE, RUN_LONG, next() as u32 & 0xffff][next() as usize % 3],
                    )
                })
                .collect();
            let t = RangeTree::from_runs(&runs);
            let mut xs = vec![0, u64::MAX, 1, u64::MAX - 1];
            for &(a, _) in &runs {
                xs.extend([a, a.wrapping_sub(1), a.wrapping_add(1)]);
            }
            for _ in 0..100 {
                xs.push(next());
            }
            for got in answers(&t, &xs) {
                for (&x, g) in xs.iter().zip(got) {
                    let want = match scan(&runs, x) {
                        RUN_LONG => Answer::Long,
                        RUN_NONE => Answer::Found(None),
                        v => Answer::Found(Some(v)),
                    };
                    assert_eq!(g, want, "x {x:#x}, {} runs", runs.len());
                }
            }
        }
    }
}
