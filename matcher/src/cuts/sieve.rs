//! A tree's leaf sieves: per leaf, a 64-bit set of the values its
//! elements hold in one dimension (a bit by a hash of each value), so
//! that a key whose value has no bit there skips the leaf without reading
//! its groups. Kept for trees whose leaves hold few values of some
//! dimension, where the cuts could not separate them: ClassBench's
//! ipc1_100K's destination-port tree, whose leaves each hold a few ports
//! and fail most keys (74 -> 67 ns a lookup); no other ClassBench set or
//! `bench matcher` shape gets one.

use super::*;

/// A tree without sieves ([`Cuts::sieve_dim`]).
pub(crate) const NO_SIEVE: u8 = u8::MAX;

/// Ranges of at most this many values set a bit each of their values in
/// a leaf's sieve; a wider one sets every bit.
const SIEVE_SPAN: u32 = 16;

/// A tree's leaves get sieves where a sieve would pass at most this share
/// of its leaf groups' reads (its bits set, over the groups, for keys
/// whose values spread like the tree's rules': [`sieve_dim`]).
const SIEVE_PASS: f64 = 0.5;

/// The bit of a leaf's sieve that value `v` of the sieve's dimension
/// sets or tests: 6 bits of a multiplicative hash.
#[inline(always)]
pub(crate) fn sieve_bit(v: u32) -> u32 {
    v.wrapping_mul(0x9e37_79b1) >> 26
}

/// The sieve of dimension `d` of the elements `rules` (indices into
/// `all`): every bit where a range of at most [`SIEVE_SPAN`] values sets
/// one of its values', all of them past that.
pub(super) fn leaf_sieve(all: &[Entry], rules: &[u32], d: usize) -> u64 {
    let mut sieve = 0u64;
    for &r in rules {
        let (lo, hi) = all[r as usize].ranges[d];
        if hi - lo >= SIEVE_SPAN {
            return u64::MAX;
        }
        for v in lo..=hi {
            sieve |= 1 << sieve_bit(v);
        }
    }
    sieve
}

/// The dimension whose sieves a tree's `leaves` (of `rules`, indices into
/// `all`; `sieves`, each leaf's of each of `nd` dimensions, leaf by leaf)
/// keep: the one whose sieves would pass the fewest of their groups'
/// reads, if at most [`SIEVE_PASS`] of them; else [`NO_SIEVE`]. Keys'
/// values are taken as spread like the tree's rules' (a protocol most
/// rules name is most keys'; taken as spread evenly over the bits,
/// fw1_100K's first tree chose a protocol sieve that passed nearly every
/// key, 27.1 -> 28.6 ns). ClassBench's
/// ipc1_100K: its destination-port tree, whose leaves hold a few ports
/// each (of its 157,582 group reads over the trace, 110,042 find no
/// port of the key's): 74 -> 67 ns.
pub(super) fn sieve_dim(
    (all, rules): (&[Entry], &[u32]),
    leaves: &[Leaf],
    sieves: &[u64],
    nd: usize,
) -> u8 {
    let reads: f64 = leaves.iter().map(|l| l.groups as f64).sum();
    let pass = |d: usize| -> f64 {
        // How the rules' values of `d` spread over the sieve's bits.
        let mut spread = [0f64; 64];
        for &r in rules {
            let (lo, hi) = all[r as usize].ranges[d];
            if hi - lo < SIEVE_SPAN {
                let share = 1.0 / (hi - lo + 1) as f64;
                for v in lo..=hi {
                    spread[sieve_bit(v) as usize] += share;
                }
            }
        }
        let total: f64 = spread.iter().sum();
        if total == 0.0 {
            return reads;
        }
        leaves
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let s = sieves[i * nd + d];
                let p: f64 = (0..64).filter(|b| s >> b & 1 != 0).map(|b| spread[b]).sum();
                l.groups as f64 * p / total
            })
            .sum::<f64>()
    };
    (0..nd.min(BURST_DIMS))
        .map(|d| (pass(d), d))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .filter(|&(p, _)| reads > 0.0 && p <= SIEVE_PASS * reads)
        .map_or(NO_SIEVE, |(_, d)| d as u8)
}
