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

    /// Words held.
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

/// Most groups a field can have: 128 bits in 4-bit groups.
pub(crate) const MAX_GROUPS: usize = 32;

/// The bucket ANDs of one field over a window of words, done `LANES`
/// words at a time.
pub(crate) trait AndKernel {
    /// Words per step; windows are rounded out to multiples of it.
    const LANES: usize;
    /// `res = src & b[0] & b[1] & ...` (`src` all ones when `None`), over
    /// slices of one length, a multiple of `LANES`. Returns whether any bit
    /// of `res` is set.
    fn and(res: &mut [u64], src: Option<&[u64]>, b: &[&[u64]]) -> bool;
}

/// The scalar kernel.
pub(crate) struct Scalar;

impl AndKernel for Scalar {
    const LANES: usize = 1;
    #[inline(always)]
    fn and(res: &mut [u64], src: Option<&[u64]>, b: &[&[u64]]) -> bool {
        let mut any = 0;
        for (w, r) in res.iter_mut().enumerate() {
            let mut acc = match src {
                Some(s) => s[w],
                None => !0,
            };
            for bucket in b {
                acc &= bucket[w];
            }
            *r = acc;
            any |= acc;
        }
        any != 0
    }
}

/// The lookup of one key, generic over the bucket-AND kernel. `res` and
/// `fill` are the scratch bitmaps, at least as long as the widest bucket.
#[inline(always)]
pub(crate) fn lookup_core<K: AndKernel>(
    fields: &[FieldTable],
    key: &[u8],
    res: &mut [u64],
    fill: &mut [u64],
) -> Option<u32> {
    let nfields = fields.len();
    let mut off = 0;
    // The previous refill's window in `fill` (fields after the first).
    let (mut rlo, mut rhi) = (0usize, 0usize);
    let mut buckets: [&[u64]; MAX_GROUPS] = [&[]; MAX_GROUPS];
    for (i, f) in fields.iter().enumerate() {
        let nbytes = (f.bits / 8) as usize;
        let k = &key[off..off + nbytes];
        off += nbytes;
        let groups = f.groups as usize;
        let nb = f.buckets();
        let (mut lo, mut hi) = if i == 0 { (0, f.words()) } else { (rlo, rhi) };
        let mut at = [0usize; MAX_GROUPS];
        for (g, a) in at.iter_mut().enumerate().take(groups) {
            let b = g * nb + f.group_value(k, g);
            let (blo, bhi) = f.bounds[b];
            lo = lo.max(blo as usize);
            hi = hi.min(bhi as usize);
            *a = b;
        }
        if lo >= hi {
            fill[rlo..rhi].fill(0);
            return None;
        }
        // Round out to whole vectors: the words added are zero in the AND
        // anyway (outside some bucket's window, or outside the refill).
        let lo = lo & !(K::LANES - 1);
        let hi = (hi + K::LANES - 1) & !(K::LANES - 1);
        let lt = f.lt_words();
        let sw = f.stride_words();
        for g in 0..groups {
            buckets[g] = &lt[at[g] * sw + lo..at[g] * sw + hi];
        }
        let src = if i == 0 { None } else { Some(&fill[lo..hi]) };
        let any = K::and(&mut res[lo..hi], src, &buckets[..groups]);
        fill[rlo..rhi].fill(0);
        if !any {
            return None;
        }
        let mt = f.mt();
        if i + 1 == nfields {
            // The first surviving rule of the last field names the element.
            for (w, &x) in res[lo..hi].iter().enumerate() {
                if x != 0 {
                    let r = (lo + w) * 64 + x.trailing_zeros() as usize;
                    return Some(mt[r].to);
                }
            }
            return None;
        }
        // Refill the next field from every surviving rule's run.
        let (mut nlo, mut nhi) = (usize::MAX, 0usize);
        let mut prev = Mapping0::NONE;
        for (w, &x) in res[lo..hi].iter().enumerate() {
            let mut x = x;
            while x != 0 {
                let r = (lo + w) * 64 + x.trailing_zeros() as usize;
                x &= x - 1;
                let m = mt[r];
                // Rules of one element share one run: set it once.
                if prev.same(m.to, m.n) {
                    continue;
                }
                prev = Mapping0 { to: m.to, n: m.n };
                let (to, n) = (m.to as usize, m.n as usize);
                set_run(fill, to, n);
                nlo = nlo.min(to / 64);
                nhi = nhi.max((to + n).div_ceil(64));
            }
        }
        rlo = nlo;
        rhi = nhi;
    }
    unreachable!("the last field returns")
}

/// The last mapping a refill applied.
#[derive(Clone, Copy)]
struct Mapping0 {
    to: u32,
    n: u32,
}

impl Mapping0 {
    const NONE: Mapping0 = Mapping0 { to: u32::MAX, n: 0 };
    #[inline(always)]
    fn same(self, to: u32, n: u32) -> bool {
        self.to == to && self.n == n
    }
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

/// Keys ahead whose first buckets are prefetched.
const PREFETCH_AHEAD: usize = 4;

/// The burst loop, generic over the kernel: while key `j` is looked up,
/// the first field's bucket windows of key `j + PREFETCH_AHEAD` are
/// fetched into the cache.
#[inline(always)]
pub(crate) fn burst_core<K: AndKernel>(
    fields: &[FieldTable],
    keys: &[u8],
    stride: usize,
    out: &mut [Option<u32>],
    res: &mut [u64],
    fill: &mut [u64],
) {
    let f0 = &fields[0];
    let n = out.len();
    for j in 0..n.min(PREFETCH_AHEAD) {
        prefetch_first_field(f0, &keys[j * stride..]);
    }
    for j in 0..n {
        if j + PREFETCH_AHEAD < n {
            prefetch_first_field(f0, &keys[(j + PREFETCH_AHEAD) * stride..]);
        }
        out[j] = lookup_core::<K>(fields, &keys[j * stride..], res, fill);
    }
}

/// Prefetches the first line of the window of every bucket a key selects
/// in the first field.
#[inline(always)]
fn prefetch_first_field(f: &FieldTable, key: &[u8]) {
    let nb = f.buckets();
    let lt = f.lt_words();
    let sw = f.stride_words();
    for g in 0..f.groups as usize {
        let b = g * nb + f.group_value(key, g);
        let (blo, _) = f.bounds[b];
        crate::simd::prefetch(lt, b * sw + blo as usize);
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
