//! The lookup: AND the buckets a key selects, group by group, then refill
//! the next field's bitmap from the mapping of every surviving rule.
//!
//! One algorithm, three ways of doing its bucket ANDs (the [`Impl`]s):
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
use std::sync::OnceLock;

/// Which implementation of the bucket ANDs a lookup uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Impl {
    /// 64-bit words: always available, always tested.
    Scalar,
    /// 256-bit vectors (x86-64 with AVX2).
    Avx2,
    /// 512-bit vectors (x86-64 with AVX-512F).
    Avx512,
}

impl Impl {
    /// All implementations.
    pub const ALL: [Impl; 3] = [Impl::Scalar, Impl::Avx2, Impl::Avx512];

    /// The name used by `MATCHER_IMPL` and `--impl`.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Scalar => "scalar",
            Impl::Avx2 => "avx2",
            Impl::Avx512 => "avx512",
        }
    }

    /// Parses a name (`scalar`, `avx2`, `avx512`).
    pub fn parse(s: &str) -> Result<Impl, String> {
        Impl::ALL
            .into_iter()
            .find(|i| i.name() == s)
            .ok_or_else(|| format!("unknown lookup implementation `{s}` (scalar, avx2, avx512)"))
    }

    /// Whether this CPU can run it.
    pub fn supported(self) -> bool {
        match self {
            Impl::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Impl::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Impl::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The implementations this CPU can run.
    pub fn available() -> Vec<Impl> {
        Impl::ALL.into_iter().filter(|i| i.supported()).collect()
    }

    /// The fastest implementation this CPU can run.
    pub fn detect() -> Impl {
        [Impl::Avx512, Impl::Avx2]
            .into_iter()
            .find(|i| i.supported())
            .unwrap_or(Impl::Scalar)
    }

    /// `MATCHER_IMPL` if set, else [`Impl::detect`]; an unknown name or one
    /// this CPU cannot run is an error.
    pub fn from_env() -> Result<Impl, String> {
        match std::env::var("MATCHER_IMPL") {
            Ok(s) if !s.is_empty() => {
                let i = Impl::parse(&s).map_err(|e| format!("MATCHER_IMPL: {e}"))?;
                if !i.supported() {
                    return Err(format!("MATCHER_IMPL: this CPU cannot run `{s}`"));
                }
                Ok(i)
            }
            _ => Ok(Impl::detect()),
        }
    }

    /// The implementation lookups use unless told otherwise: `MATCHER_IMPL`
    /// (if valid here) or the fastest available, decided once per process.
    pub fn default_impl() -> Impl {
        static DEFAULT: OnceLock<Impl> = OnceLock::new();
        *DEFAULT.get_or_init(|| Impl::from_env().unwrap_or_else(|_| Impl::detect()))
    }
}

impl std::fmt::Display for Impl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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
    /// Scratch large enough for sets whose widest bucket has `words` words
    /// (one pair of bitmaps per key a burst looks up at once).
    pub fn with_words(words: usize) -> Scratch {
        let chunks = words.div_ceil(CHUNK_WORDS) * INTERLEAVE;
        Scratch {
            res: vec![Chunk::default(); chunks],
            fill: vec![Chunk::default(); chunks],
        }
    }

    /// Grows the scratch if a set needs more than it holds (outside the
    /// fast path: size it once with [`Scratch::with_words`]).
    #[inline]
    pub fn ensure(&mut self, words: usize) {
        let chunks = words.div_ceil(CHUNK_WORDS) * INTERLEAVE;
        if self.res.len() < chunks {
            self.res.resize(chunks, Chunk::default());
            self.fill.resize(chunks, Chunk::default());
        }
    }

    /// Words each key's bitmaps hold.
    pub fn words(&self) -> usize {
        self.res.len() * CHUNK_WORDS / INTERLEAVE
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

/// Keys of a burst looked up together, field by field, so that their
/// chains of dependent loads (bucket windows, buckets, mappings) overlap.
pub(crate) const INTERLEAVE: usize = 8;

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

/// One field of one key's lookup. `k` is the key's bytes of this field;
/// `res` and `fill` are the key's scratch bitmaps; `win` is, for fields
/// after the first, the window of words the previous refill set in
/// `fill`, and receives this field's refill window.
///
/// Instantiated per (group width, group count) of every field width we
/// have (8, 16, 32, 48 and 128 bits), as the kernel unrolls its lookups:
/// the per-group loops then have constant trip counts, the group values
/// come out of the key without a branch on the width, and the bucket
/// offsets live in registers.
#[inline(always)]
pub(crate) fn field_step<K: AndKernel>(
    f: &FieldTable,
    k: &[u8],
    first: bool,
    last: bool,
    res: &mut [u64],
    fill: &mut [u64],
    win: &mut (usize, usize),
) -> Step {
    macro_rules! dispatch {
        ($(($bb:literal, $g:literal)),*) => {
            match (f.bb, f.groups) {
                $(($bb, $g) => field_step_n::<K, $bb, $g>(f, k, first, last, res, fill, win),)*
                _ => unreachable!("field widths are 8, 16, 32, 48 or 128 bits"),
            }
        };
    }
    dispatch!(
        (8, 1),
        (8, 2),
        (8, 4),
        (8, 6),
        (8, 16),
        (4, 2),
        (4, 4),
        (4, 8),
        (4, 12),
        (4, 32)
    )
}

/// Zeroes `w` with plain stores: the windows are a few words, too short
/// to be worth a call to `memset`.
#[inline(always)]
fn clear(w: &mut [u64]) {
    for x in w {
        *x = 0;
    }
}

#[inline(always)]
fn field_step_n<K: AndKernel, const BB: usize, const G: usize>(
    f: &FieldTable,
    k: &[u8],
    first: bool,
    last: bool,
    res: &mut [u64],
    fill: &mut [u64],
    win: &mut (usize, usize),
) -> Step {
    const { assert!(BB == 4 || BB == 8) };
    let nb = 1usize << BB;
    let sw = f.stride_words();
    let (rlo, rhi) = *win;
    let (mut lo, mut hi) = if first { (0, f.words()) } else { (rlo, rhi) };
    let k = &k[..G * BB / 8];
    let bounds = &f.bounds[..G * nb];
    let full = &f.full[..G * nb];
    let mut at = [0usize; G];
    let mut m = 0;
    for g in 0..G {
        let v = if BB == 8 {
            k[g] as usize
        } else {
            (k[g / 2] >> (4 * (1 - g % 2)) & 15) as usize
        };
        let b = g * nb + v;
        let (blo, bhi) = bounds[b];
        lo = lo.max(blo as usize);
        hi = hi.min(bhi as usize);
        // A bucket holding every rule changes nothing in the AND.
        at[m] = b * sw;
        m += !full[b] as usize;
    }
    // Keep one bucket when all are full: it also clears the padding bits
    // past the last rule, which an all-ones start would leave set.
    m = m.max(1);
    if lo >= hi {
        clear(&mut fill[rlo..rhi]);
        return Step::Miss;
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
    let src = if first { None } else { Some(&fill[lo..hi]) };
    let (first, end) = if narrow {
        Scalar::and(&mut res[lo..hi], src, f.lt_words(), at)
    } else {
        K::and(&mut res[lo..hi], src, f.lt_words(), at)
    };
    clear(&mut fill[rlo..rhi]);
    if first >= end {
        return Step::Miss;
    }
    let (lo, hi) = (lo + first, lo + end);
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

/// The lookup of one key, generic over the bucket-AND kernel. `res` and
/// `fill` are scratch bitmaps at least as long as the widest bucket.
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
        match field_step::<K>(f, k, i == 0, i + 1 == nfields, res, fill, &mut win) {
            Step::Miss => return None,
            Step::Hit(id) => return Some(id),
            Step::Next => {}
        }
    }
    None
}

/// Looks `key` up with the chosen implementation.
#[inline]
pub(crate) fn lookup(
    imp: Impl,
    fields: &[FieldTable],
    key: &[u8],
    scratch: &mut Scratch,
) -> Option<u32> {
    if fields[0].rules() == 0 {
        return None;
    }
    let (res, fill) = scratch.bitmaps();
    match imp {
        Impl::Scalar => lookup_core::<Scalar>(fields, key, res, fill),
        _ => crate::simd::lookup(imp, fields, key, res, fill),
    }
}

/// Looks up a burst of keys (`keys` holds them back to back, `stride`
/// bytes apart) into `out`, one result per key.
#[inline]
pub(crate) fn lookup_burst(
    imp: Impl,
    fields: &[FieldTable],
    keys: &[u8],
    stride: usize,
    out: &mut [Option<u32>],
    scratch: &mut Scratch,
) {
    if fields[0].rules() == 0 {
        out.fill(None);
        return;
    }
    let (res, fill) = scratch.bitmaps();
    match imp {
        Impl::Scalar => burst_core::<Scalar>(fields, keys, stride, out, res, fill),
        _ => crate::simd::lookup_burst(imp, fields, keys, stride, out, res, fill),
    }
}

/// The burst loop, generic over the kernel. Keys go through in groups of
/// [`INTERLEAVE`]: each field is done for every key of the group still
/// alive before the next field, so the loads of different keys, which do
/// not depend on each other, are in flight together. `res` and `fill`
/// hold `INTERLEAVE` bitmaps each, one per key of a group.
#[inline(always)]
pub(crate) fn burst_core<K: AndKernel>(
    fields: &[FieldTable],
    keys: &[u8],
    stride: usize,
    out: &mut [Option<u32>],
    res: &mut [u64],
    fill: &mut [u64],
) {
    let nfields = fields.len();
    let words = res.len() / INTERLEAVE;
    let mut base = 0;
    while base < out.len() {
        let n = (out.len() - base).min(INTERLEAVE);
        let mut wins = [(0usize, 0usize); INTERLEAVE];
        let mut alive: u32 = (1 << n) - 1;
        out[base..base + n].fill(None);
        let mut off = 0;
        for (i, f) in fields.iter().enumerate() {
            let nbytes = (f.bits / 8) as usize;
            let mut m = alive;
            while m != 0 {
                let j = m.trailing_zeros() as usize;
                m &= m - 1;
                let at = (base + j) * stride + off;
                let step = field_step::<K>(
                    f,
                    &keys[at..at + nbytes],
                    i == 0,
                    i + 1 == nfields,
                    &mut res[j * words..(j + 1) * words],
                    &mut fill[j * words..(j + 1) * words],
                    &mut wins[j],
                );
                match step {
                    Step::Next => {}
                    Step::Miss => alive &= !(1 << j),
                    Step::Hit(id) => {
                        out[base + j] = Some(id);
                        alive &= !(1 << j);
                    }
                }
            }
            if alive == 0 {
                break;
            }
            off += nbytes;
        }
        base += n;
    }
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

    #[test]
    fn impl_names() {
        for i in Impl::ALL {
            assert_eq!(Impl::parse(i.name()), Ok(i));
        }
        assert!(Impl::parse("sse").is_err());
        assert!(Impl::Scalar.supported());
        assert!(Impl::detect().supported());
    }
}
