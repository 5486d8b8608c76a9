//! One field's lookup table and mapping table, and the operations that
//! change them: appending rules, cutting a run of rules out
//! (`bitmap_cut`), and switching between 8-bit and 4-bit groups.

use crate::field::Prefix;
use bytemuck::{Pod, Zeroable};

/// 512 bits, aligned to a cache line: the unit every bucket is padded to,
/// so that a 512-bit (AVX-512) or 256-bit (AVX2) load never straddles a
/// line or runs past a bucket.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct Chunk(pub [u64; 8]);

/// Bits in a chunk.
pub const CHUNK_BITS: usize = 512;
/// 64-bit words in a chunk.
pub const CHUNK_WORDS: usize = 8;

/// Where a rule leads: in a field that is not the last, the run of rules
/// `to .. to + n` of the next field; in the last field, `to` is the
/// element's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Mapping {
    /// First rule of the next field, or the element id in the last field.
    pub to: u32,
    /// Number of rules in the run (1 in the last field).
    pub n: u32,
}

/// The tables of one field.
#[derive(Clone, Debug)]
pub struct FieldTable {
    /// Field width in bits.
    pub(crate) bits: u32,
    /// Bits per group: 4 or 8.
    pub(crate) bb: u32,
    /// Groups in the field: `bits / bb`.
    pub(crate) groups: u32,
    /// Rules (bits) in every bucket.
    pub(crate) rules: usize,
    /// Chunks per bucket, padding included (at least enough for `rules`).
    pub(crate) stride: usize,
    /// `groups * (1 << bb)` buckets of `stride` chunks each.
    pub(crate) lt: Vec<Chunk>,
    /// One mapping per rule.
    pub(crate) mt: Vec<Mapping>,
    /// Per bucket, the window of words holding its set bits: first word,
    /// last word + 1 (`(0, 0)` when empty). Computed for committed
    /// snapshots only ([`FieldTable::compute_bounds`]).
    pub(crate) bounds: Vec<(u32, u32)>,
    /// Per bucket, whether every rule is set in it: ANDing such a bucket
    /// changes nothing, so lookups skip it (an IPv6 field whose elements
    /// share a /96 has 24 of its 32 four-bit groups full for most keys).
    pub(crate) full: Vec<bool>,
    /// For 4-bit fields, the window of every byte: the AND of the two
    /// nibble buckets that byte selects, per pair of groups (256 per
    /// pair). Tighter than intersecting the two nibbles' windows, whose
    /// rules interleave.
    pub(crate) pair_bounds: Vec<(u32, u32)>,
}

impl FieldTable {
    /// An empty field of `bits` bits; empty sets start with 8-bit groups.
    pub(crate) fn new(bits: u32) -> FieldTable {
        FieldTable {
            bits,
            bb: 8,
            groups: bits / 8,
            rules: 0,
            stride: 0,
            lt: Vec::new(),
            mt: Vec::new(),
            bounds: Vec::new(),
            full: Vec::new(),
            pair_bounds: Vec::new(),
        }
    }

    /// Computes every bucket's window of non-zero words, which lookups use
    /// to skip the words no selected bucket can contribute to.
    pub(crate) fn compute_bounds(&mut self) {
        let buckets = self.groups as usize * self.buckets();
        let sw = self.stride_words();
        let words = self.words();
        let lt: &[u64] = bytemuck::cast_slice(&self.lt);
        let rules = self.rules;
        let is_full = |w: &[u64]| {
            w.iter().enumerate().all(|(i, &x)| {
                let bits = (rules - i * 64).min(64);
                let want = if bits == 64 { !0 } else { (1u64 << bits) - 1 };
                x == want
            })
        };
        self.full = (0..buckets)
            .map(|b| words > 0 && is_full(&lt[b * sw..b * sw + words]))
            .collect();
        self.pair_bounds = Vec::new();
        if self.bb == 4 {
            for p in 0..self.groups as usize / 2 {
                for v in 0..256 {
                    let hi = &lt[((2 * p) * 16 + (v >> 4)) * sw..][..words];
                    let lo = &lt[((2 * p + 1) * 16 + (v & 15)) * sw..][..words];
                    let nz = |i: &usize| hi[*i] & lo[*i] != 0;
                    let first = (0..words).find(nz);
                    let last = (0..words).rev().find(nz);
                    self.pair_bounds.push(match (first, last) {
                        (Some(a), Some(b)) => (a as u32, b as u32 + 1),
                        _ => (0, 0),
                    });
                }
            }
        }
        self.bounds = (0..buckets)
            .map(|b| {
                let w = &lt[b * sw..b * sw + words];
                match w.iter().position(|&x| x != 0) {
                    None => (0, 0),
                    Some(first) => {
                        let last = w.iter().rposition(|&x| x != 0).unwrap_or(first);
                        (first as u32, last as u32 + 1)
                    }
                }
            })
            .collect();
    }

    /// Bits per group (4 or 8).
    pub fn group_bits(&self) -> u32 {
        self.bb
    }

    /// Number of groups.
    pub fn groups(&self) -> u32 {
        self.groups
    }

    /// Number of rules.
    pub fn rules(&self) -> usize {
        self.rules
    }

    /// Buckets per group.
    #[inline]
    pub fn buckets(&self) -> usize {
        1 << self.bb
    }

    /// 64-bit words holding the rules' bits (`bsize` in the kernel).
    #[inline]
    pub fn words(&self) -> usize {
        self.rules.div_ceil(64)
    }

    /// 64-bit words per bucket, padding included.
    #[inline]
    pub fn stride_words(&self) -> usize {
        self.stride * CHUNK_WORDS
    }

    /// The window of words holding bucket `(g, v)`'s set bits: first word,
    /// last word + 1; `(0, 0)` when empty (committed snapshots only).
    pub fn bucket_window(&self, g: usize, v: usize) -> (usize, usize) {
        let (lo, hi) = self.bounds[g * self.buckets() + v];
        (lo as usize, hi as usize)
    }

    /// The lookup table as words.
    #[inline]
    pub fn lt_words(&self) -> &[u64] {
        bytemuck::cast_slice(&self.lt)
    }

    /// The mapping table.
    #[inline]
    pub fn mt(&self) -> &[Mapping] {
        &self.mt
    }

    /// The bucket of group `g` for group value `v`, padding included.
    #[inline]
    pub fn bucket(&self, g: usize, v: usize) -> &[u64] {
        let sw = self.stride_words();
        let at = (g * self.buckets() + v) * sw;
        &self.lt_words()[at..at + sw]
    }

    fn bucket_mut(&mut self, g: usize, v: usize) -> &mut [u64] {
        let sw = self.stride_words();
        let at = (g * self.buckets() + v) * sw;
        let words: &mut [u64] = bytemuck::cast_slice_mut(&mut self.lt);
        &mut words[at..at + sw]
    }

    /// Size in bytes the lookup table would have with `bb`-bit groups and
    /// no padding, as the kernel counts it for the 8/4-bit switch.
    pub(crate) fn lt_size(&self, bb: u32) -> usize {
        (self.bits / bb) as usize * (1usize << bb) * self.words() * 8
    }

    /// Bytes held by the lookup and mapping tables.
    pub fn memory_usage(&self) -> usize {
        self.lt.capacity() * std::mem::size_of::<Chunk>()
            + self.mt.capacity() * std::mem::size_of::<Mapping>()
            + self.bounds.capacity() * 8
            + self.full.capacity()
            + self.pair_bounds.capacity() * 8
    }

    /// Re-lays the lookup table out with `stride` chunks per bucket.
    fn restride(&mut self, stride: usize) {
        let buckets = self.groups as usize * self.buckets();
        let mut lt = vec![Chunk::default(); buckets * stride];
        let keep = self.stride.min(stride);
        for b in 0..buckets {
            lt[b * stride..b * stride + keep]
                .copy_from_slice(&self.lt[b * self.stride..b * self.stride + keep]);
        }
        self.lt = lt;
        self.stride = stride;
    }

    /// Appends one rule per prefix, returning the first new rule's index.
    /// The mapping entries are the caller's to push.
    pub(crate) fn append_rules(&mut self, prefixes: &[Prefix]) -> usize {
        let first = self.rules;
        let need = (self.rules + prefixes.len()).div_ceil(CHUNK_BITS);
        if need > self.stride {
            // Grow by a quarter at least, so that a bulk load copies the
            // table a logarithmic number of times, not once per 512 rules.
            let grown = self.stride + self.stride / 4;
            self.restride(need.max(grown));
        }
        for (i, p) in prefixes.iter().enumerate() {
            self.set_rule(first + i, *p);
        }
        self.rules += prefixes.len();
        first
    }

    /// The group values a prefix accepts in group `g`: `lo ..= hi`.
    fn group_span(&self, p: Prefix, g: u32) -> (usize, usize) {
        let bb = self.bb;
        let shift = self.bits - (g + 1) * bb;
        let mask = (1u128 << bb) - 1;
        let v = ((p.value >> shift) & mask) as usize;
        let fixed_before = g * bb;
        if p.len >= fixed_before + bb {
            (v, v)
        } else if p.len <= fixed_before {
            (0, (1 << bb) - 1)
        } else {
            let free = fixed_before + bb - p.len;
            let lo = v & !((1usize << free) - 1);
            (lo, lo + (1usize << free) - 1)
        }
    }

    fn set_rule(&mut self, rule: usize, p: Prefix) {
        let (w, bit) = (rule / 64, 1u64 << (rule % 64));
        for g in 0..self.groups {
            let (lo, hi) = self.group_span(p, g);
            for v in lo..=hi {
                self.bucket_mut(g as usize, v)[w] |= bit;
            }
        }
    }

    /// Removes rules `start .. start + n` from every bucket and from the
    /// mapping table, shifting the rules above them down.
    pub(crate) fn cut(&mut self, start: usize, n: usize) {
        let total = self.rules;
        debug_assert!(start + n <= total);
        let buckets = self.groups as usize * self.buckets();
        let sw = self.stride_words();
        let words: &mut [u64] = bytemuck::cast_slice_mut(&mut self.lt);
        for b in 0..buckets {
            bitmap_cut(&mut words[b * sw..(b + 1) * sw], start, n, total);
        }
        self.mt.drain(start..start + n);
        self.rules -= n;
        // Give memory back when the table has shrunk well below its size.
        let need = self.rules.div_ceil(CHUNK_BITS);
        if need * 2 < self.stride {
            self.restride(need);
            self.lt.shrink_to_fit();
            self.mt.shrink_to_fit();
        }
    }

    /// After the next field lost rules `start .. start + n`, moves the
    /// mappings that pointed above them down by `n`.
    pub(crate) fn fix_mappings_after_cut(&mut self, start: u32, n: u32) {
        for m in &mut self.mt {
            if m.to > start {
                debug_assert!(m.to >= start + n);
                m.to -= n;
            }
        }
    }

    /// Converts the lookup table to `bb`-bit groups (4 or 8). Lookups give
    /// the same answers before and after: a prefix constrains each nibble
    /// of a byte independently, so a 4-bit bucket is the OR of the 8-bit
    /// buckets sharing that nibble, and an 8-bit bucket is the AND of its
    /// two nibbles' buckets.
    pub(crate) fn switch_groups(&mut self, bb: u32) {
        if bb == self.bb {
            return;
        }
        let stride = self.stride;
        let old = std::mem::take(&mut self.lt);
        let old_buckets = self.buckets();
        let old_words: &[u64] = bytemuck::cast_slice(&old);
        let sw = stride * CHUNK_WORDS;
        let old_bucket = |g: usize, v: usize| {
            let at = (g * old_buckets + v) * sw;
            &old_words[at..at + sw]
        };
        let (old_bb, old_groups) = (self.bb, self.groups);
        self.bb = bb;
        self.groups = self.bits / bb;
        self.lt = vec![Chunk::default(); self.groups as usize * self.buckets() * stride];
        if old_bb == 8 {
            for g in 0..old_groups as usize {
                for v in 0..256 {
                    let (h, l) = (v >> 4, v & 15);
                    let src = old_bucket(g, v);
                    for (d, s) in self.bucket_mut(2 * g, h).iter_mut().zip(src) {
                        *d |= s;
                    }
                    for (d, s) in self.bucket_mut(2 * g + 1, l).iter_mut().zip(src) {
                        *d |= s;
                    }
                }
            }
        } else {
            for g in 0..self.groups as usize {
                for v in 0..256 {
                    let (hi, lo) = (old_bucket(2 * g, v >> 4), old_bucket(2 * g + 1, v & 15));
                    for ((d, a), b) in self.bucket_mut(g, v).iter_mut().zip(hi).zip(lo) {
                        *d = a & b;
                    }
                }
            }
        }
    }

    /// Applies the kernel's hysteresis: switch to 4-bit groups when the
    /// 8-bit table grows above `high`, back to 8-bit when it would be
    /// smaller than `low`.
    pub(crate) fn adjust_group_bits(&mut self, high: usize, low: usize) {
        if self.bb == 8 && self.lt_size(8) > high {
            self.switch_groups(4);
        } else if self.bb == 4 && self.lt_size(8) < low {
            self.switch_groups(8);
        }
    }

    /// The group value of group `g` in the field's key bytes.
    #[inline(always)]
    pub fn group_value(&self, key: &[u8], g: usize) -> usize {
        if self.bb == 8 {
            key[g] as usize
        } else {
            let b = key[g / 2];
            (if g.is_multiple_of(2) { b >> 4 } else { b & 15 }) as usize
        }
    }
}

/// Reads 64 bits of `w` starting at bit `pos`; bits past the end read 0.
#[inline]
fn read64(w: &[u64], pos: usize) -> u64 {
    let (i, s) = (pos / 64, pos % 64);
    let lo = w.get(i).copied().unwrap_or(0);
    if s == 0 {
        return lo;
    }
    let hi = w.get(i + 1).copied().unwrap_or(0);
    (lo >> s) | (hi << (64 - s))
}

/// Removes bits `start .. start + n` of a bitmap of `total` bits, moving
/// the bits above them down by `n` (the kernel's `bitmap_cut`). Bits past
/// `total` must be zero; they stay zero, and so do the `n` freed at the top.
pub(crate) fn bitmap_cut(w: &mut [u64], start: usize, n: usize, total: usize) {
    if n == 0 {
        return;
    }
    let first = start / 64;
    let last = total.div_ceil(64);
    for d in first..last {
        // Reads only words >= d, so moving upwards never reads a word
        // already rewritten.
        let moved = read64(w, d * 64 + n);
        w[d] = if d == first {
            let keep = (1u64 << (start % 64)) - 1;
            (w[d] & keep) | (moved & !keep)
        } else {
            moved
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(w: &[u64], i: usize) -> bool {
        w[i / 64] >> (i % 64) & 1 == 1
    }

    #[test]
    fn bitmap_cut_matches_a_vec_of_bools() {
        let mut x = 7u64;
        for total in [1usize, 5, 63, 64, 65, 127, 128, 129, 300] {
            for _ in 0..40 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let start = (x >> 33) as usize % total;
                let n = 1 + (x >> 13) as usize % (total - start);
                let mut w = vec![0u64; total.div_ceil(64) + 1];
                let mut bits = Vec::new();
                for i in 0..total {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let b = x >> 63 == 1;
                    bits.push(b);
                    if b {
                        w[i / 64] |= 1 << (i % 64);
                    }
                }
                bitmap_cut(&mut w, start, n, total);
                bits.drain(start..start + n);
                for (i, &b) in bits.iter().enumerate() {
                    assert_eq!(get(&w, i), b, "total {total} start {start} n {n} bit {i}");
                }
                for i in bits.len()..w.len() * 64 {
                    assert!(!get(&w, i), "bit {i} left set past the end");
                }
            }
        }
    }
}
