//! The lookup: AND the buckets a key selects, group by group, then refill
//! the next field's bitmap from the mapping of every surviving rule.
//!
//! One algorithm, three ways of doing its bucket ANDs (the
//! [`crate::Impl`]s):
//! 64-bit words (scalar), 256-bit AVX2 vectors, 512-bit AVX-512 vectors,
//! in [`crate::simd`]. Everything else (the bounds, the refill, the early
//! exits) is this file's, shared by all three, so the scalar path gets the
//! same algorithmic tricks as the vector ones.
//!
//! Work per field is bounded to a window of words:
//! - every bucket knows its first and last non-zero word (computed when a
//!   snapshot is committed); a field's window is the intersection of its
//!   selected buckets' windows, so a key that no rule of some group accepts
//!   stops before loading any bitmap, and a narrow match in a wide field
//!   costs only the words it lands in;
//! - after the first field, the window is further cut to the words the
//!   previous refill set.

use crate::table::{Chunk, FieldTable, CHUNK_WORDS};
use crate::tree::{count_le, Intervals};

/// Per-worker scratch bitmaps, allocated once and reused for every lookup.
///
/// `fill` is all zeros between lookups: every lookup clears exactly the
/// words it set, so one scratch serves any number of sets without stale
/// bits leaking from one into another.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    res: Vec<Chunk>,
    fill: Vec<Chunk>,
}

impl Scratch {
    /// Scratch large enough for sets whose widest bucket has `words` words.
    pub fn with_words(words: usize) -> Scratch {
        let chunks = words.div_ceil(CHUNK_WORDS);
        Scratch {
            res: vec![Chunk::default(); chunks],
            fill: vec![Chunk::default(); chunks],
        }
    }

    /// Grows the scratch if a set needs more than it holds (outside the
    /// fast path: size it once with [`Scratch::with_words`]).
    #[inline]
    pub fn ensure(&mut self, words: usize) {
        let chunks = words.div_ceil(CHUNK_WORDS);
        if self.res.len() < chunks {
            self.res.resize(chunks, Chunk::default());
            self.fill.resize(chunks, Chunk::default());
        }
    }

    /// Words each bitmap holds.
    pub fn words(&self) -> usize {
        self.res.len() * CHUNK_WORDS
    }

    #[inline]
    pub(crate) fn bitmaps(&mut self) -> (&mut [u64], &mut [u64]) {
        (
            bytemuck::cast_slice_mut(&mut self.res),
            bytemuck::cast_slice_mut(&mut self.fill),
        )
    }
}

/// Sets bits `start .. start + n` of `w`.
#[inline]
pub(crate) fn set_run(w: &mut [u64], start: usize, n: usize) {
    let end = start + n;
    let (mut i, last) = (start / 64, (end - 1) / 64);
    let lo_mask = !0u64 << (start % 64);
    let hi_mask = !0u64 >> (63 - (end - 1) % 64);
    if i == last {
        w[i] |= lo_mask & hi_mask;
        return;
    }
    w[i] |= lo_mask;
    i += 1;
    while i < last {
        w[i] = !0;
        i += 1;
    }
    w[last] |= hi_mask;
}

/// The bucket ANDs of one field over a window of words, done `LANES`
/// words at a time.
pub(crate) trait AndKernel {
    /// Words per step; windows are rounded out to multiples of it.
    const LANES: usize;
    /// `res[w] = src[w] & lt[at[0] + w] & lt[at[1] + w] & ...` for every
    /// `w < res.len()` (`src` all ones when `None`); `res.len()` is a
    /// multiple of `LANES`, and so is every `at[g]`. Returns the words of
    /// `res` holding set bits, `first..last + 1` (empty when none), so the
    /// refill starts at the first non-zero word and stops after the last.
    fn and(res: &mut [u64], src: Option<&[u64]>, lt: &[u64], at: &[usize]) -> (usize, usize);
    /// The ranks of `xs` in a lead field's interval tree
    /// ([`Intervals::descend`] with this instruction set's block count).
    fn descend(t: &Intervals, xs: &[u32], ranks: &mut [u32]);
}

/// The scalar kernel.
pub(crate) struct Scalar;

impl AndKernel for Scalar {
    const LANES: usize = 1;
    #[inline(always)]
    fn and(res: &mut [u64], src: Option<&[u64]>, lt: &[u64], at: &[usize]) -> (usize, usize) {
        let (mut first, mut last) = (usize::MAX, 0);
        for (w, r) in res.iter_mut().enumerate() {
            let mut acc = match src {
                Some(s) => s[w],
                None => !0,
            };
            for &a in at {
                acc &= lt[a + w];
            }
            *r = acc;
            if acc != 0 {
                first = first.min(w);
                last = w + 1;
            }
        }
        (first, last)
    }
    #[inline(always)]
    fn descend(t: &Intervals, xs: &[u32], ranks: &mut [u32]) {
        t.descend(xs, ranks, count_le);
    }
}

/// What one field did to a key's lookup.
pub(crate) enum Step {
    /// No rule survived: no element matches.
    Miss,
    /// The last field named this element.
    Hit(u32),
    /// The next field's bitmap is refilled, within the given window.
    Next,
}

/// Calls `$call::<$K, BB, G>($args)` for the field's (group width, group
/// count): one instantiation per shape of the field widths we have (8,
/// 16, 32, 48 and 128 bits), as the kernel unrolls its lookups, so that
/// the per-group loops have constant trip counts, the group values come
/// out of the key without a branch on the width, and the bucket offsets
/// live in registers.
macro_rules! by_shape {
    ($f:expr, $call:ident :: <$K:ty> ($($arg:expr),*)) => {
        match ($f.bb, $f.groups) {
            (8, 1) => $call::<$K, 8, 1>($($arg),*),
            (8, 2) => $call::<$K, 8, 2>($($arg),*),
            (8, 4) => $call::<$K, 8, 4>($($arg),*),
            (8, 6) => $call::<$K, 8, 6>($($arg),*),
            (8, 16) => $call::<$K, 8, 16>($($arg),*),
            (4, 2) => $call::<$K, 4, 2>($($arg),*),
            (4, 4) => $call::<$K, 4, 4>($($arg),*),
            (4, 8) => $call::<$K, 4, 8>($($arg),*),
            (4, 12) => $call::<$K, 4, 12>($($arg),*),
            (4, 32) => $call::<$K, 4, 32>($($arg),*),
            _ => unreachable!("field widths are 8, 16, 32, 48 or 128 bits"),
        }
    };
}
pub(crate) use by_shape;

/// The bucket ANDs of one field: `res = src & buckets` over the field's
/// window, where `src` is the previous refill (`win`, its window of
/// words) or, for `None`, all ones (the field alone). Returns the words of
/// `res` holding set bits (empty when none). Leaves `fill` as it was.
#[inline(always)]
pub(crate) fn and_window<K: AndKernel, const BB: usize, const G: usize>(
    f: &FieldTable,
    k: &[u8],
    win: Option<(usize, usize)>,
    res: &mut [u64],
    fill: &[u64],
) -> (usize, usize) {
    const { assert!(BB == 4 || BB == 8) };
    let nb = 1usize << BB;
    let sw = f.stride_words();
    let (mut lo, mut hi) = win.unwrap_or((0, f.words()));
    let k = &k[..G * BB / 8];
    let bounds = &f.bounds[..G * nb];
    let full = &f.full[..G * nb];
    let mut at = [0usize; G];
    let mut m = 0;
    if BB == 4 {
        // Windows per byte (pair of nibble groups) are the tighter ones.
        let pairs = &f.pair_bounds[..G / 2 * 256];
        for p in 0..G / 2 {
            let (blo, bhi) = pairs[p * 256 + k[p] as usize];
            lo = lo.max(blo as usize);
            hi = hi.min(bhi as usize);
        }
    }
    for g in 0..G {
        let v = if BB == 8 {
            k[g] as usize
        } else {
            (k[g / 2] >> (4 * (1 - g % 2)) & 15) as usize
        };
        let b = g * nb + v;
        if BB == 8 {
            let (blo, bhi) = bounds[b];
            lo = lo.max(blo as usize);
            hi = hi.min(bhi as usize);
        }
        // A bucket holding every rule changes nothing in the AND.
        at[m] = b * sw;
        m += !full[b] as usize;
    }
    // Keep one bucket when all are full: it also clears the padding bits
    // past the last rule, which an all-ones start would leave set.
    m = m.max(1);
    if lo >= hi {
        return (0, 0);
    }
    // A window of a vector's width or less is ANDed a word at a time:
    // fewer loads, and no wide load of `fill` words the refill has just
    // written one by one (a store-forwarding stall). Wider windows are
    // rounded out to whole vectors: the words added are zero in the AND
    // anyway (outside some bucket's window, or outside the refill).
    let narrow = hi - lo <= K::LANES;
    let (lo, hi) = if narrow {
        (lo, hi)
    } else {
        (lo & !(K::LANES - 1), (hi + K::LANES - 1) & !(K::LANES - 1))
    };
    let at = &mut at[..m];
    for a in at.iter_mut() {
        *a += lo;
    }
    let src = win.map(|_| &fill[lo..hi]);
    let (first, end) = if narrow {
        Scalar::and(&mut res[lo..hi], src, f.lt_words(), at)
    } else {
        K::and(&mut res[lo..hi], src, f.lt_words(), at)
    };
    if first >= end {
        (0, 0)
    } else {
        (lo + first, lo + end)
    }
}

/// One field of one key's lookup. `k` is the key's bytes of this field;
/// `res` and `fill` are the scratch bitmaps; `win` is, for fields after
/// the first, the window of words the previous refill set in `fill`, and
/// receives this field's refill window.
#[inline(always)]
fn field_step<K: AndKernel, const BB: usize, const G: usize>(
    f: &FieldTable,
    k: &[u8],
    first: bool,
    last: bool,
    res: &mut [u64],
    fill: &mut [u64],
    win: &mut (usize, usize),
) -> Step {
    let (rlo, rhi) = *win;
    let src = if first { None } else { Some((rlo, rhi)) };
    let (lo, hi) = and_window::<K, BB, G>(f, k, src, res, fill);
    clear(&mut fill[rlo..rhi]);
    if lo >= hi {
        return Step::Miss;
    }
    let mt = f.mt();
    if last {
        // The first surviving rule of the last field names the element.
        let r = lo * 64 + res[lo].trailing_zeros() as usize;
        return Step::Hit(mt[r].to);
    }
    // Refill the next field from every surviving rule's run.
    let (mut nlo, mut nhi) = (usize::MAX, 0usize);
    let mut prev = (u32::MAX, 0u32);
    for (w, &x) in res[lo..hi].iter().enumerate() {
        let mut x = x;
        while x != 0 {
            let r = (lo + w) * 64 + x.trailing_zeros() as usize;
            x &= x - 1;
            let m = mt[r];
            // Rules of one element share one run: set it once.
            if prev == (m.to, m.n) {
                continue;
            }
            prev = (m.to, m.n);
            let (to, n) = (m.to as usize, m.n as usize);
            set_run(fill, to, n);
            nlo = nlo.min(to / 64);
            nhi = nhi.max((to + n).div_ceil(64));
        }
    }
    *win = (nlo, nhi);
    Step::Next
}

/// Zeroes `w` with plain stores: the windows are a few words, too short
/// to be worth a call to `memset`.
#[inline(always)]
fn clear(w: &mut [u64]) {
    for x in w {
        *x = 0;
    }
}

/// The full pipapo lookup of one key, field after field, generic over the
/// bucket-AND kernel. `res` and `fill` are scratch bitmaps at least as
/// long as the widest bucket.
#[inline(always)]
pub(crate) fn lookup_core<K: AndKernel>(
    fields: &[FieldTable],
    key: &[u8],
    res: &mut [u64],
    fill: &mut [u64],
) -> Option<u32> {
    let nfields = fields.len();
    let mut off = 0;
    let mut win = (0, 0);
    for (i, f) in fields.iter().enumerate() {
        let nbytes = (f.bits / 8) as usize;
        let k = &key[off..off + nbytes];
        off += nbytes;
        let step = by_shape!(
            f,
            field_step::<K>(f, k, i == 0, i + 1 == nfields, res, fill, &mut win)
        );
        match step {
            Step::Miss => return None,
            Step::Hit(id) => return Some(id),
            Step::Next => {}
        }
    }
    None
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_run_sets_exactly_the_run() {
        for start in 0..130 {
            for n in 1..140 {
                let mut w = vec![0u64; 5];
                set_run(&mut w, start, n);
                for i in 0..320 {
                    let want = i >= start && i < start + n;
                    assert_eq!(w[i / 64] >> (i % 64) & 1 == 1, want, "{start} {n} {i}");
                }
            }
        }
    }
}
