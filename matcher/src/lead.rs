//! The lead field of a committed snapshot, and the lookups that start
//! from it: one field's buckets narrow a key to a few candidates checked
//! range by range, or an interval tree over that field narrows a burst of
//! keys to one candidate each. Both give the answers of the full walk in
//! [`crate::lookup`], which stays the fallback.

use crate::lookup::{and_window, by_shape, lookup_core, AndKernel, Scalar};
use crate::syntax::Element;
use crate::table::FieldTable;
use crate::tree::{self, Intervals};
use std::sync::Arc;

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
        elems: &[Option<Arc<Element>>],
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
                    let r = tree::field_ranges(&ranges, n, fi);
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
