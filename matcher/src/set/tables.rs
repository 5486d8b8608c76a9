//! Writing an element into the working copy's tables and indices, and
//! cutting one out (the kernel's `bitmap_cut`), with the quick changes
//! and the classifier's delta kept in step.

use super::{Set, QUICK_MAX};
use crate::cuts;
use crate::field::Prefix;
use crate::syntax::{Element, Policy};
use crate::table::Mapping;
use crate::InsertMode;
use std::sync::Arc;

impl Set {
    /// Mirrors the insert of element `id` into the quick changes.
    pub(super) fn quick_inserted(&mut self, id: u32) {
        let Some(q) = &mut self.quick else { return };
        q.changes += 1;
        let e = self.elems[id as usize].as_deref().expect("live element");
        // The working copy found it free of overlaps with every element,
        // so with the added ones too; should that ever not hold, the next
        // commit is a full one rather than a wrong answer.
        if q.changes > QUICK_MAX || q.added.insert(e.clone(), InsertMode::Create).is_err() {
            self.quick = None;
        }
    }

    /// Mirrors the delete of `e`, which had id `id`, into the quick
    /// changes: an element added since the base leaves the added ones, a
    /// base element gets its bit.
    pub(super) fn quick_deleted(&mut self, e: &Element, id: u32) {
        let Some(q) = &mut self.quick else { return };
        q.changes += 1;
        if q.changes > QUICK_MAX {
            self.quick = None;
            return;
        }
        if q.added.get(&e.key).is_some() {
            if q.added.delete(&e.key).is_err() {
                self.quick = None;
            }
            return;
        }
        let w = id as usize / 64;
        if q.removed.len() <= w {
            q.removed.resize(w + 1, 0);
        }
        q.removed[w] |= 1 << (id % 64);
        q.removed_now.push(id);
    }

    /// Adds a new element (known valid and, in a disjoint set, free of
    /// overlaps) to the tables and indices; `seq` is the order it was
    /// added in when it comes back (an aborted delete), `None` for a new
    /// one. First-match sets keep no bitmaps: the classifier is their
    /// lookup, and an element inserted among others then costs no shift of
    /// every bucket.
    pub(super) fn insert_tables(&mut self, e: Arc<Element>) -> u32 {
        let id = match self.free_ids.pop() {
            Some(id) => id,
            None => {
                self.elems.push(None);
                self.seqs.push(0);
                (self.elems.len() - 1) as u32
            }
        };
        self.next_seq += 1;
        self.seqs[id as usize] = self.next_seq;
        if self.tracking() {
            self.extra.push(id);
            self.check_delta();
        }
        self.fill_tables(e, id);
        id
    }

    /// Puts a deleted element back under its old id and sequence number
    /// (an abort). Where the classifier's tree still holds it, it is no
    /// longer gone, and beside the tree again if it was there.
    pub(super) fn restore(&mut self, e: Arc<Element>, id: u32, seq: u64, was_extra: bool) {
        let taken = |v: &mut Vec<u32>| match v.iter().rposition(|&x| x == id) {
            Some(p) => {
                v.remove(p);
                true
            }
            None => false,
        };
        if !taken(&mut self.free_ids) {
            taken(&mut self.retired);
        }
        self.seqs[id as usize] = seq;
        // Back beside the tree: an element the tree does not hold, and one
        // it holds but was beside it too (the tree dropped it where a
        // deleted element shadowed it).
        if self.tracking() && (!taken(&mut self.gone) || was_extra) {
            self.extra.push(id);
            self.check_delta();
        }
        self.fill_tables(e, id);
    }

    /// Writes element `e` under the free id `id` into the tables.
    pub(super) fn fill_tables(&mut self, e: Arc<Element>, id: u32) {
        if self.decl.policy() == Policy::FirstMatch {
            self.exact.insert(e.key.clone(), id);
            self.elems[id as usize] = Some(e);
            return;
        }
        let prefixes: Vec<Vec<Prefix>> = self
            .fields
            .iter()
            .zip(e.key.iter())
            .map(|(f, r)| r.to_prefixes(f.bits))
            .collect();
        let n = self.fields.len();
        for i in 0..n {
            let start = self.fields[i].append_rules(&prefixes[i]);
            debug_assert_eq!(start, self.fields[i].mt.len());
            let m = if i + 1 < n {
                Mapping {
                    to: self.fields[i + 1].rules() as u32,
                    n: prefixes[i + 1].len() as u32,
                }
            } else {
                Mapping { to: id, n: 1 }
            };
            self.fields[i]
                .mt
                .extend(std::iter::repeat_n(m, prefixes[i].len()));
        }
        for f in &mut self.fields {
            f.adjust_group_bits(self.config.lt_size_high, self.config.lt_size_low);
        }
        self.index.insert(&e.key, id);
        self.exact.insert(e.key.clone(), id);
        self.elems[id as usize] = Some(e);
    }
    /// Removes element `id` from the tables: finds its run of rules in
    /// each field (the last field's mappings point at the id; each earlier
    /// field's point at the run found in the next), cuts the runs out and
    /// moves the mappings that pointed above them down.
    pub(super) fn delete_tables(&mut self, id: u32) -> Arc<Element> {
        // The classifier's tree names this id until it is rebuilt: the id
        // is kept from reuse until then.
        let mut free = true;
        if self.tracking() {
            if let Some(p) = self.extra.iter().position(|&x| x == id) {
                self.extra.swap_remove(p);
            }
            if let Some(c) = self.cuts.clone().filter(|c| c.holds(id)) {
                if c.shadows(id) {
                    self.unshadow(id);
                }
                self.gone.push(id);
                free = false;
            }
            self.check_delta();
        }
        let e = if self.decl.policy() == Policy::FirstMatch {
            self.elems[id as usize].take().expect("live element")
        } else {
            self.delete_bitmaps(id)
        };
        self.exact.remove(&e.key);
        if free {
            self.free_ids.push(id);
        } else {
            self.retired.push(id);
        }
        e
    }

    pub(super) fn delete_bitmaps(&mut self, id: u32) -> Arc<Element> {
        let n = self.fields.len();
        let mut runs = vec![(0u32, 0u32); n];
        let last = &self.fields[n - 1].mt;
        let s = last
            .iter()
            .position(|m| m.to == id)
            .expect("element has rules");
        let k = last[s..].iter().take_while(|m| m.to == id).count();
        runs[n - 1] = (s as u32, k as u32);
        for i in (0..n - 1).rev() {
            let want = Mapping {
                to: runs[i + 1].0,
                n: runs[i + 1].1,
            };
            let mt = &self.fields[i].mt;
            let s = mt
                .iter()
                .position(|m| *m == want)
                .expect("run maps to next field");
            let k = mt[s..].iter().take_while(|m| **m == want).count();
            runs[i] = (s as u32, k as u32);
        }
        for (i, &(s, k)) in runs.iter().enumerate() {
            self.fields[i].cut(s as usize, k as usize);
            if i > 0 {
                self.fields[i - 1].fix_mappings_after_cut(s, k);
            }
        }
        for f in &mut self.fields {
            f.adjust_group_bits(self.config.lt_size_high, self.config.lt_size_low);
        }
        let e = self.elems[id as usize].take().expect("live element");
        self.index.remove(&e.key, id);
        e
    }

    /// Before element `id`, which shadowed others in the tree's regions
    /// it covers, is deleted: the elements it may have shadowed (ranked
    /// after it, overlapping it, held by the tree) join the extra
    /// elements, where they are found without it. A scan of the elements,
    /// instead of a rebuild of the tree; past the delta's limit, the
    /// rebuild.
    pub(super) fn unshadow(&mut self, id: u32) {
        let Some(c) = self.cuts.clone() else {
            return;
        };
        let e = self.elems[id as usize].clone().expect("live element");
        let rank = |s: &Set, i: usize| {
            let e = s.elems[i].as_deref().expect("live element");
            ((e.priority.unwrap_or(0) as u64) << 40 | s.seqs[i], i)
        };
        let mine = rank(self, id as usize);
        let mut under = Vec::new();
        for (i, o) in self.elems.iter().enumerate() {
            let Some(o) = o else { continue };
            if i as u32 != id && c.holds(i as u32) && o.overlaps(&e) && rank(self, i) > mine {
                under.push(i as u32);
                if self.extra.len() + self.gone.len() + under.len() > cuts::MAX_DELTA {
                    self.rebuild = true;
                    return;
                }
            }
        }
        for i in under {
            if !self.extra.contains(&i) {
                self.extra.push(i);
            }
        }
    }

    /// Whether updates are recorded as changes to the last tree: not when
    /// there is none, or the next commit rebuilds it anyway.
    pub(super) fn tracking(&self) -> bool {
        self.cuts.is_some() && !self.rebuild
    }

    /// Past [`cuts::MAX_DELTA`] changes, or once a rebuild is due, the
    /// changes are not worth recording: the ids kept from reuse are free.
    pub(super) fn check_delta(&mut self) {
        if self.extra.len() + self.gone.len() > cuts::MAX_DELTA {
            self.rebuild = true;
        }
        if self.rebuild {
            self.extra.clear();
            self.gone.clear();
            self.free_ids.append(&mut self.retired);
        }
    }
}
