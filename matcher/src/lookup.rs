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
use crate::tree::{count_le, Intervals};
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
            // Every such CPU counts bits with `popcnt`, which the interval
            // tree's vector descents are compiled with.
            Impl::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "x86_64")]
            // The classifier's narrow leaf groups use AVX2 beside it (every
            // AVX-512 CPU has it).
            Impl::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
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

/// The bucket ANDs of one field: `res = src & buckets` over the field's
/// window, where `src` is the previous refill (`win`, its window of
/// words) or, for `None`, all ones (the field alone). Returns the words of
/// `res` holding set bits (empty when none). Leaves `fill` as it was.
#[inline(always)]
fn and_window<K: AndKernel, const BB: usize, const G: usize>(
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

/// Most candidates the lead field may leave for checking one by one;
/// past that, the lookup goes through every field's tables.
const MAX_CANDIDATES: u32 = 16;

/// The lead field of a snapshot, chosen when it is committed: the field
/// whose tables alone narrow a key down to the fewest elements for the
/// fewest bucket loads. A lookup ANDs only that field's buckets, then
/// checks the few elements whose rules survived against the key's other
/// fields, range by range; only when more than [`MAX_CANDIDATES`] survive
/// does it fall back to the full walk. In `ipv6_addr . inet_service .
/// ether_addr . inet_proto`, for instance, the 2-group port field leads
/// and the 32-group IPv6 field is never looked at.
///
/// Bursts of a set that has an interval tree ([`crate::tree`]) find their
/// candidates with it instead, and check them against the same ranges.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lead {
    /// The bitmap lead field (single keys, and bursts without a tree),
    /// `None` when no field is selective enough.
    field: Option<usize>,
    /// The element each rule of the lead field belongs to.
    elems: Vec<u32>,
    /// Every field's range of every element id (empty ranges for free
    /// ids and for the tree's `none` id, the last).
    bounds: Vec<Bounds>,
    /// Byte offset and length of each field in a key.
    layout: Vec<(usize, usize)>,
    /// An interval tree of a (possibly other) field, when one suits: a
    /// burst finds its candidates with it, descending all keys together.
    /// A single key keeps the bitmap lead: alone, the tree's levels are a
    /// chain of dependent loads, where the buckets are independent ones.
    tree: Option<Intervals>,
}

impl Lead {
    /// Chooses the lead field and builds what checking candidates needs.
    pub(crate) fn build(
        fields: &[FieldTable],
        elems: &[Option<std::sync::Arc<crate::syntax::Element>>],
        use_tree: bool,
    ) -> Lead {
        let n = fields.len();
        let mut layout = Vec::with_capacity(n);
        let mut off = 0;
        for f in fields {
            let b = (f.bits / 8) as usize;
            layout.push((off, b));
            off += b;
        }
        let mut ranges = Vec::with_capacity((elems.len() + 1) * n);
        for e in elems {
            match e {
                Some(e) => ranges.extend(e.key.iter().map(|r| (r.start, r.end))),
                None => ranges.extend(std::iter::repeat_n((1, 0), n)),
            }
        }
        let live: Vec<usize> = (0..elems.len()).filter(|&i| elems[i].is_some()).collect();
        if live.is_empty() {
            return Lead::default();
        }
        // The best interval tree, if any field suits one. The id past the
        // last element stands for "none"; its ranges are empty.
        let none = elems.len() as u32;
        let tree = if use_tree {
            // (`Intervals::build` refuses fields other than 1, 2 or 4 bytes.)
            (0..n)
                .filter_map(|fi| {
                    let r = crate::tree::field_ranges(&ranges, n, fi);
                    Intervals::build(fi, layout[fi].0, layout[fi].1, &r, none)
                })
                .min_by_key(Intervals::score)
        } else {
            None
        };
        ranges.extend(std::iter::repeat_n((1, 0), n));
        let (field, elems) = match bitmap_lead(fields, &ranges, &layout, &live) {
            Some((field, elems)) => (Some(field), elems),
            None => (None, Vec::new()),
        };
        let bounds = (0..n)
            .map(|fi| Bounds::new(layout[fi].1, ranges.iter().skip(fi).step_by(n)))
            .collect();
        Lead {
            field,
            elems,
            bounds,
            layout,
            tree,
        }
    }

    /// The field lookups start from: the tree's, else the bitmap lead.
    pub(crate) fn field(&self) -> Option<usize> {
        self.tree.as_ref().map(Intervals::field).or(self.field)
    }

    /// Whether the lead field finds its candidates with an interval tree.
    pub(crate) fn has_tree(&self) -> bool {
        self.tree.is_some()
    }

    /// Bytes of the ranges, rule map and interval tree.
    pub(crate) fn memory_usage(&self) -> usize {
        self.bounds.iter().map(Bounds::memory_usage).sum::<usize>()
            + self.elems.capacity() * 4
            + self.tree.as_ref().map_or(0, Intervals::memory_usage)
    }

    /// `ok[j] &=` whether element `cands[j]` holds key `j` (at `j *
    /// stride` in `keys`) in every field but `skip`: field after field,
    /// each across all keys, so the field's width is decided once per
    /// field and the compares of different keys overlap.
    #[inline(always)]
    fn check_fields(
        &self,
        skip: usize,
        keys: &[u8],
        stride: usize,
        cands: &[u32],
        ok: &mut [bool],
    ) {
        for (fi, (&(off, len), bounds)) in self.layout.iter().zip(&self.bounds).enumerate() {
            if fi == skip {
                continue;
            }
            let k = &keys[off..];
            match bounds {
                Bounds::U32(b) => match len {
                    1 => within(b, k, stride, cands, ok, |k| k[0] as u32),
                    2 => within(b, k, stride, cands, ok, |k| {
                        u16::from_be_bytes([k[0], k[1]]) as u32
                    }),
                    _ => within(b, k, stride, cands, ok, |k| {
                        u32::from_be_bytes([k[0], k[1], k[2], k[3]])
                    }),
                },
                Bounds::U64(b) => {
                    within(b, k, stride, cands, ok, |k| field_value(&k[..len]) as u64)
                }
                Bounds::U128(b) => within(b, k, stride, cands, ok, |k| field_value(&k[..len])),
            }
        }
    }

    /// The element among the candidates of rank `r` in `t` that holds the
    /// key in every field (the tree's own field holds it by construction).
    #[inline(always)]
    fn resolve(&self, t: &Intervals, r: u32, key: &[u8]) -> Option<u32> {
        let li = t.field();
        match t.candidates(r) {
            // One candidate, or the `none` id (whose ranges are empty, but
            // a set of one field has no other range to refuse it).
            Ok(e) => (self.check(e, key, li) & (e != t.none())).then_some(e),
            Err(list) => {
                let mut found = None;
                for &e in list {
                    found = if self.check(e, key, li) {
                        Some(e)
                    } else {
                        found
                    };
                }
                found
            }
        }
    }

    /// Whether element `e` holds the key in every field but the lead.
    #[inline(always)]
    fn check(&self, e: u32, key: &[u8], lead: usize) -> bool {
        let e = e as usize;
        let mut ok = true;
        for (fi, (&(off, len), bounds)) in self.layout.iter().zip(&self.bounds).enumerate() {
            if fi == lead {
                continue;
            }
            let v = field_value(&key[off..off + len]);
            // No early exit: the comparisons of every field are cheaper
            // than a mispredicted branch on keys that miss half the time.
            ok &= match bounds {
                Bounds::U32(b) => (v as u32 >= b[e][0]) & (v as u32 <= b[e][1]),
                Bounds::U64(b) => (v as u64 >= b[e][0]) & (v as u64 <= b[e][1]),
                Bounds::U128(b) => (v >= b[e][0]) & (v <= b[e][1]),
            };
        }
        ok
    }
}

/// The value of a field from its bytes in a key (big-endian).
#[inline(always)]
fn field_value(k: &[u8]) -> u128 {
    match k.len() {
        1 => k[0] as u128,
        2 => u16::from_be_bytes([k[0], k[1]]) as u128,
        4 => u32::from_be_bytes([k[0], k[1], k[2], k[3]]) as u128,
        6 => u64::from_be_bytes([0, 0, k[0], k[1], k[2], k[3], k[4], k[5]]) as u128,
        16 => u128::from_be_bytes(k.try_into().expect("16 bytes")),
        len => {
            let mut b = [0u8; 16];
            b[16 - len..].copy_from_slice(k);
            u128::from_be_bytes(b)
        }
    }
}

/// One field's range of every element id, in the narrowest integer that
/// holds the field's values: a candidate's check reads 8 bytes per field
/// of up to 4 bytes, not the element's whole key.
#[derive(Clone, Debug)]
enum Bounds {
    U32(Vec<[u32; 2]>),
    U64(Vec<[u64; 2]>),
    U128(Vec<[u128; 2]>),
}

impl Bounds {
    /// The ranges of a field of `len` bytes, one per element id.
    fn new<'a>(len: usize, ranges: impl Iterator<Item = &'a (u128, u128)>) -> Bounds {
        match len {
            0..=4 => Bounds::U32(ranges.map(|&(lo, hi)| [lo as u32, hi as u32]).collect()),
            5..=8 => Bounds::U64(ranges.map(|&(lo, hi)| [lo as u64, hi as u64]).collect()),
            _ => Bounds::U128(ranges.map(|&(lo, hi)| [lo, hi]).collect()),
        }
    }

    fn memory_usage(&self) -> usize {
        match self {
            Bounds::U32(b) => b.capacity() * 8,
            Bounds::U64(b) => b.capacity() * 16,
            Bounds::U128(b) => b.capacity() * 32,
        }
    }
}

/// `ok[j] &=` whether the value `read` takes from key `j` (at `j * stride`
/// in `keys`, which starts at the field) lies in element `cands[j]`'s
/// range `bounds[cands[j]]`.
#[inline(always)]
fn within<T: PartialOrd + Copy>(
    bounds: &[[T; 2]],
    keys: &[u8],
    stride: usize,
    cands: &[u32],
    ok: &mut [bool],
    read: impl Fn(&[u8]) -> T,
) {
    for (j, (o, &e)) in ok.iter_mut().zip(cands).enumerate() {
        let v = read(&keys[j * stride..]);
        let [lo, hi] = bounds[e as usize];
        *o &= (v >= lo) & (v <= hi);
    }
}

/// The bitmap lead: the field whose buckets alone leave the fewest
/// candidates for the fewest bucket loads, and the element of each of its
/// rules; `None` when no field leaves few enough.
fn bitmap_lead(
    fields: &[FieldTable],
    ranges: &[(u128, u128)],
    layout: &[(usize, usize)],
    live: &[usize],
) -> Option<(usize, Vec<u32>)> {
    let n = fields.len();
    // Survivors per field, measured on up to 64 elements' own values:
    // a rule accepts the value only if its element's range holds it,
    // so the popcount is the number of candidate elements.
    let mut best: Option<(usize, f64)> = None;
    let mut res = vec![0u64; fields.iter().map(|f| f.stride_words()).max().unwrap_or(0)];
    let step = live.len().div_ceil(64);
    for (fi, f) in fields.iter().enumerate() {
        let mut total = 0u64;
        let mut samples = 0u64;
        for &id in live.iter().step_by(step) {
            for v in [ranges[id * n + fi].0, ranges[id * n + fi].1] {
                let mut k = [0u8; 16];
                let b = layout[fi].1;
                k[..b].copy_from_slice(&v.to_be_bytes()[16 - b..]);
                let (lo, hi) = by_shape!(f, and_window::<Scalar>(f, &k, None, &mut res, &[]));
                total += res[lo..hi]
                    .iter()
                    .map(|x| x.count_ones() as u64)
                    .sum::<u64>();
                samples += 1;
            }
        }
        let avg = total as f64 / samples as f64;
        // A bucket load per group, and a check per candidate.
        let cost = f.groups as f64 + 4.0 * avg;
        if avg <= MAX_CANDIDATES as f64 / 2.0 && best.is_none_or(|(_, c)| cost < c) {
            best = Some((fi, cost));
        }
    }
    let (field, _) = best?;
    // The element of each rule: the last field's mappings name it, and
    // every earlier field's rule leads to a run of the next field.
    let mut owner: Vec<u32> = fields[n - 1].mt().iter().map(|m| m.to).collect();
    for f in fields[field..n - 1].iter().rev() {
        owner = f.mt().iter().map(|m| owner[m.to as usize]).collect();
    }
    Some((field, owner))
}

/// One lookup: through the lead field and a check of its candidates, or
/// through every field when there is no lead or too many candidates.
#[inline(always)]
pub(crate) fn lookup_lead<K: AndKernel>(
    fields: &[FieldTable],
    lead: &Lead,
    key: &[u8],
    res: &mut [u64],
    fill: &mut [u64],
) -> Option<u32> {
    let Some(li) = lead.field else {
        if let Some(t) = &lead.tree {
            let mut rank = [0u32];
            K::descend(t, &[t.value(key)], &mut rank);
            return lead.resolve(t, rank[0], key);
        }
        return lookup_core::<K>(fields, key, res, fill);
    };
    let f = &fields[li];
    let (off, len) = lead.layout[li];
    let k = &key[off..off + len];
    let (lo, hi) = by_shape!(f, and_window::<K>(f, k, None, res, fill));
    if lo >= hi {
        return None;
    }
    let count: u32 = res[lo..hi].iter().map(|x| x.count_ones()).sum();
    if count == 1 {
        // The common case: one candidate, in the window's first word.
        let e = lead.elems[lo * 64 + res[lo].trailing_zeros() as usize];
        return lead.check(e, key, li).then_some(e);
    }
    if count > MAX_CANDIDATES {
        return lookup_core::<K>(fields, key, res, fill);
    }
    // Several candidates: check them all and keep the one that matches
    // (elements are disjoint, so at most one does), without a branch on
    // each check's outcome.
    let mut found = None;
    for (w, &x) in res[lo..hi].iter().enumerate() {
        let mut x = x;
        while x != 0 {
            let r = (lo + w) * 64 + x.trailing_zeros() as usize;
            x &= x - 1;
            let e = lead.elems[r];
            found = if lead.check(e, key, li) {
                Some(e)
            } else {
                found
            };
        }
    }
    found
}

/// Keys an interval-tree burst descends together.
const TREE_BURST: usize = 32;

/// Fewest keys a burst must hold to go through the tree: fewer would not
/// overlap their descents enough to beat the bitmap lead.
const MIN_TREE_BURST: usize = 4;

/// Up to [`TREE_BURST`] keys through the interval tree: every key's value,
/// then the descent of all of them level by level, then their candidates'
/// other fields, field by field across the keys, so that no step waits on
/// one key's loads or branches on one key's outcome. A key whose interval
/// names several candidates (rare: the tree's field barely overlaps) is
/// resolved on its own afterwards.
#[inline(always)]
fn burst_tree<K: AndKernel>(
    lead: &Lead,
    t: &Intervals,
    keys: &[u8],
    stride: usize,
    out: &mut [Option<u32>],
) {
    let n = out.len();
    debug_assert!(n <= TREE_BURST);
    let mut xs = [0u32; TREE_BURST];
    let mut ranks = [0u32; TREE_BURST];
    for (j, x) in xs[..n].iter_mut().enumerate() {
        *x = t.value(&keys[j * stride..]);
    }
    K::descend(t, &xs[..n], &mut ranks[..n]);
    // One candidate per key; `none` for an empty interval or a list.
    let none = t.none();
    let mut cands = [none; TREE_BURST];
    let mut lists = 0u64;
    for (j, c) in cands[..n].iter_mut().enumerate() {
        match t.candidates(ranks[j]) {
            Ok(e) => *c = e,
            Err(_) => lists |= 1 << j,
        }
    }
    let mut ok = [true; TREE_BURST];
    lead.check_fields(t.field(), keys, stride, &cands[..n], &mut ok[..n]);
    for (j, o) in out.iter_mut().enumerate() {
        *o = (ok[j] & (cands[j] != none)).then_some(cands[j]);
    }
    while lists != 0 {
        let j = lists.trailing_zeros() as usize;
        lists &= lists - 1;
        out[j] = lead.resolve(t, ranks[j], &keys[j * stride..]);
    }
}

/// A burst: with an interval tree, every key's value first, then the
/// descent of all of them level by level, then their candidates' checks;
/// otherwise key after key.
#[inline(always)]
pub(crate) fn burst_lead<K: AndKernel>(
    fields: &[FieldTable],
    lead: &Lead,
    keys: &[u8],
    stride: usize,
    out: &mut [Option<u32>],
    res: &mut [u64],
    fill: &mut [u64],
) {
    if let Some(t) = lead.tree.as_ref().filter(|_| out.len() >= MIN_TREE_BURST) {
        for (c, outs) in out.chunks_mut(TREE_BURST).enumerate() {
            let keys = &keys[c * TREE_BURST * stride..];
            burst_tree::<K>(lead, t, keys, stride, outs);
        }
        return;
    }
    for (j, o) in out.iter_mut().enumerate() {
        *o = lookup_lead::<K>(fields, lead, &keys[j * stride..], res, fill);
    }
}

/// Looks `key` up with the chosen implementation.
#[inline]
pub(crate) fn lookup(
    imp: Impl,
    fields: &[FieldTable],
    lead: &Lead,
    key: &[u8],
    scratch: &mut Scratch,
) -> Option<u32> {
    if fields[0].rules() == 0 {
        return None;
    }
    let (res, fill) = scratch.bitmaps();
    crate::simd::lookup(imp, fields, lead, key, res, fill)
}

/// Looks up a burst of keys (`keys` holds them back to back, `stride`
/// bytes apart) into `out`, one result per key.
#[inline]
pub(crate) fn lookup_burst(
    imp: Impl,
    fields: &[FieldTable],
    lead: &Lead,
    keys: &[u8],
    stride: usize,
    out: &mut [Option<u32>],
    scratch: &mut Scratch,
) {
    if fields[0].rules() == 0 {
        out.fill(None);
        return;
    }
    crate::simd::lookup_burst(imp, fields, lead, keys, stride, out, scratch)
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
