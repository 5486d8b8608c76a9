//! The scalar lookup: AND the buckets a key selects, group by group, then
//! refill the next field's bitmap from the mapping of every surviving rule.
//!
//! Each field's work is bounded to the words the previous refill touched,
//! so a narrow match in a wide field costs only the words it lands in.

use crate::table::FieldTable;

/// Per-worker scratch bitmaps, allocated once and reused for every lookup.
///
/// `fill` is all zeros between lookups: every lookup clears exactly the
/// words it set, so one scratch serves any number of sets without stale
/// bits leaking from one into another.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    pub(crate) res: Vec<u64>,
    pub(crate) fill: Vec<u64>,
}

impl Scratch {
    /// Scratch large enough for sets whose largest field has `words` words.
    pub fn with_words(words: usize) -> Scratch {
        Scratch {
            res: vec![0; words],
            fill: vec![0; words],
        }
    }

    /// Grows the scratch if a set needs more than it holds (outside the
    /// fast path: size it once with [`Scratch::with_words`]).
    #[inline]
    pub fn ensure(&mut self, words: usize) {
        if self.res.len() < words {
            self.res.resize(words, 0);
            self.fill.resize(words, 0);
        }
    }

    /// Words held.
    pub fn words(&self) -> usize {
        self.res.len()
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

/// Looks `key` up in the fields' tables: the id of the matching element.
/// The scratch must hold at least as many words as the widest field.
pub(crate) fn lookup(fields: &[FieldTable], key: &[u8], scratch: &mut Scratch) -> Option<u32> {
    let Scratch { res, fill } = scratch;
    let nfields = fields.len();
    let (mut lo, mut hi) = (0usize, fields[0].words());
    if hi == 0 {
        return None;
    }
    let mut off = 0;
    for (i, f) in fields.iter().enumerate() {
        let nbytes = (f.bits / 8) as usize;
        let k = &key[off..off + nbytes];
        off += nbytes;
        let groups = f.groups as usize;
        let res = &mut res[lo..hi];
        // Start from the first group's bucket (field 0) or from the refill
        // (later fields), which is consumed and cleared on the way.
        let b0 = &f.bucket(0, f.group_value(k, 0))[lo..hi];
        if i == 0 {
            res.copy_from_slice(b0);
        } else {
            for ((r, x), b) in res.iter_mut().zip(&mut fill[lo..hi]).zip(b0) {
                *r = *x & b;
                *x = 0;
            }
        }
        for g in 1..groups {
            let b = &f.bucket(g, f.group_value(k, g))[lo..hi];
            let mut any = 0;
            for (r, b) in res.iter_mut().zip(b) {
                *r &= b;
                any |= *r;
            }
            if any == 0 {
                return None;
            }
        }
        let mt = f.mt();
        if i + 1 == nfields {
            // First surviving rule of the last field names the element.
            for (w, &x) in res.iter().enumerate() {
                if x != 0 {
                    let r = (lo + w) * 64 + x.trailing_zeros() as usize;
                    return Some(mt[r].to);
                }
            }
            return None;
        }
        // Refill the next field from every surviving rule's run.
        let (mut nlo, mut nhi) = (usize::MAX, 0usize);
        let mut prev = None;
        for (w, &x) in res.iter().enumerate() {
            let mut x = x;
            while x != 0 {
                let r = (lo + w) * 64 + x.trailing_zeros() as usize;
                x &= x - 1;
                let m = mt[r];
                // Rules of one element share one run: set it once.
                if prev == Some(m) {
                    continue;
                }
                prev = Some(m);
                let (to, n) = (m.to as usize, m.n as usize);
                set_run(fill, to, n);
                nlo = nlo.min(to / 64);
                nhi = nhi.max((to + n).div_ceil(64));
            }
        }
        if nhi == 0 {
            return None;
        }
        lo = nlo;
        hi = nhi;
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
