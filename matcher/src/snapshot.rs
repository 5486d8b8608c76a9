//! A committed, immutable snapshot of a set: what readers look keys up in,
//! full (tables of its own) or quick (the last full commit's tables with
//! the changes since beside them).

use crate::cpu::Impl;
use crate::cuts::Classifier;
use crate::elems::{Elems, Verifier};
use crate::field::Range;
use crate::lead::Lead;
use crate::lookup::Scratch;
use crate::syntax::{Element, Policy, SetDecl};
use crate::table::{FieldTable, Mapping};
use std::sync::Arc;

/// Bytes a set's tables hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Lookup tables (the bitmaps), padding included.
    pub lookup_tables: usize,
    /// Mapping tables.
    pub mapping_tables: usize,
    /// The elements themselves.
    pub elements: usize,
    /// The overlap index (working copy only).
    pub index: usize,
    /// What a snapshot's lead field checks candidates with: every
    /// element's ranges, the rule-to-element map and the interval tree
    /// (snapshots only).
    pub lead: usize,
    /// The decision tree of sets whose fields repeat and of first-match
    /// sets, with the changes since it was built (see the `cuts` module).
    pub classifier: usize,
}

impl MemoryUsage {
    /// All of it.
    pub fn total(&self) -> usize {
        self.lookup_tables
            + self.mapping_tables
            + self.elements
            + self.index
            + self.lead
            + self.classifier
    }
}

pub(crate) fn tables_memory<'a>(
    fields: &[FieldTable],
    slots: usize,
    elems: impl Iterator<Item = &'a Option<Arc<Element>>>,
) -> MemoryUsage {
    let lookup_tables = fields
        .iter()
        .map(|f| f.lt.capacity() * std::mem::size_of::<crate::table::Chunk>())
        .sum();
    let mapping_tables = fields
        .iter()
        .map(|f| f.mt.capacity() * std::mem::size_of::<Mapping>())
        .sum();
    let elements = slots * std::mem::size_of::<Option<Arc<Element>>>()
        + elems
            .flatten()
            .map(|e| std::mem::size_of::<Element>() + e.key.len() * std::mem::size_of::<Range>())
            .sum::<usize>();
    MemoryUsage {
        lookup_tables,
        mapping_tables,
        elements,
        index: 0,
        lead: 0,
        classifier: 0,
    }
}
/// The tables a full commit builds: what a snapshot's lookups run on,
/// shared by the quick snapshots that follow it (see [`Snapshot::quick`]).
#[derive(Clone, Debug)]
struct Base {
    fields: Vec<FieldTable>,
    lead: Lead,
    /// The tree lookups of first-match sets, and the bursts of sets
    /// without an interval tree, go through.
    classifier: Option<Classifier>,
    elems: Elems,
    /// Each element's deadline ([`Element::expires`]), when any has one.
    expiry: Option<Box<[u64]>>,
}

impl Base {
    fn expiry_of(elems: &Elems) -> (Option<Box<[u64]>>, u64) {
        if !elems.any_expiring() {
            return (None, NEVER);
        }
        let t: Box<[u64]> = elems
            .iter()
            .map(|e| e.as_ref().and_then(|e| e.expires).unwrap_or(NEVER))
            .collect();
        let first = t.iter().copied().min().unwrap_or(NEVER);
        (Some(t), first)
    }
}

/// What changed since the base: the elements added (a small set of their
/// own) and the base's elements deleted (a bit per base id).
#[derive(Debug)]
struct Delta {
    added: Arc<Snapshot>,
    removed: Box<[u64]>,
}

impl Delta {
    #[inline(always)]
    fn removed(&self, id: u32) -> bool {
        bit(&self.removed, id as usize)
    }
}

/// Whether bit `i` of `words` is set (bits past the end are clear).
#[inline(always)]
fn bit(words: &[u64], i: usize) -> bool {
    words.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0)
}

/// A deadline that never comes.
pub const NEVER: u64 = u64::MAX;

/// The bit that marks the ids of a quick snapshot's added elements (see
/// [`crate::Set::commit_quick`]); ids of a set stay below it.
pub const DELTA_ID: u32 = 1 << 31;

/// A committed, immutable copy of a set: what readers look keys up in.
///
/// A snapshot is either a full one (its own tables) or a quick one: the
/// tables of the last full commit, shared, with what changed since beside
/// them (the elements added, in a small set of their own, and a bit for
/// each deleted one). A key then matches the base's element unless that
/// element is deleted, else the added elements' (a disjoint set has at
/// most one element a key matches, so the order cannot change an answer).
#[derive(Clone, Debug)]
pub struct Snapshot {
    decl: Arc<SetDecl>,
    base: Arc<Base>,
    delta: Option<Arc<Delta>>,
    /// `decl.key_len()` and the scratch words a lookup needs, computed
    /// once: the fast path asks for them on every call.
    key_len: usize,
    scratch_words: usize,
    len: usize,
    version: u64,
    next_expiry: u64,
}

impl Snapshot {
    pub(crate) fn empty(decl: Arc<SetDecl>) -> Snapshot {
        let fields = decl
            .fields()
            .iter()
            .map(|t| FieldTable::new(t.bits()))
            .collect();
        Snapshot {
            key_len: decl.key_len(),
            scratch_words: 0,
            decl,
            base: Arc::new(Base {
                fields,
                lead: Lead::default(),
                classifier: None,
                elems: Elems::default(),
                expiry: None,
            }),
            delta: None,
            len: 0,
            version: 0,
            next_expiry: NEVER,
        }
    }

    /// A full commit's snapshot: `fields` and what finds candidates in
    /// them, `elems` by id, `len` of them, the `version`th commit.
    pub(crate) fn full(
        decl: Arc<SetDecl>,
        fields: Vec<FieldTable>,
        lead: Lead,
        classifier: Option<Classifier>,
        elems: Elems,
        len: usize,
        version: u64,
    ) -> Snapshot {
        let (expiry, next_expiry) = Base::expiry_of(&elems);
        Snapshot {
            key_len: decl.key_len(),
            scratch_words: fields
                .iter()
                .map(FieldTable::stride_words)
                .max()
                .unwrap_or(0),
            decl,
            base: Arc::new(Base {
                fields,
                lead,
                classifier,
                elems,
                expiry,
            }),
            delta: None,
            len,
            version,
            next_expiry,
        }
    }

    /// The quick snapshot that follows this one: its base's tables, with
    /// `added` (the elements added since that base, a small set of their
    /// own) and `removed` (a bit per base id deleted since) beside them;
    /// `len` elements in all.
    pub(crate) fn quick(&self, added: Arc<Snapshot>, removed: &[u64], len: usize) -> Snapshot {
        let base = self.base.clone();
        Snapshot {
            key_len: self.key_len,
            scratch_words: self.scratch_words.max(added.scratch_words()),
            decl: self.decl.clone(),
            // The base's earliest among those not deleted: a deleted one's
            // deadline would have readers check deadlines until the next
            // full commit. One pass over the deadlines, only where some
            // base element has one.
            next_expiry: match &base.expiry {
                None => NEVER,
                Some(t) => t
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| !bit(removed, i))
                    .map(|(_, &d)| d)
                    .min()
                    .unwrap_or(NEVER),
            }
            .min(added.next_expiry()),
            base,
            delta: Some(Arc::new(Delta {
                added,
                removed: removed.into(),
            })),
            len,
            version: self.version + 1,
        }
    }

    /// Its elements by id (the base's, in a quick snapshot).
    #[cfg(test)]
    pub(crate) fn elems(&self) -> &Elems {
        &self.base.elems
    }

    /// The set's declaration.
    pub fn decl(&self) -> &SetDecl {
        &self.decl
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set has no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many commits made this snapshot (0 for the empty initial one).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The per-field tables (for inspection and the vectorised lookups):
    /// the base's, in a quick snapshot.
    pub fn fields(&self) -> &[FieldTable] {
        &self.base.fields
    }

    /// The field lookups start from (see the lookup module), if any.
    pub fn lead_field(&self) -> Option<usize> {
        self.base.lead.field()
    }

    /// Scratch words a lookup in this snapshot needs.
    #[inline]
    pub fn scratch_words(&self) -> usize {
        self.scratch_words
    }

    /// A scratch sized for this snapshot.
    pub fn scratch(&self) -> Scratch {
        Scratch::with_words(self.scratch_words())
    }

    /// Whether this is a quick snapshot: the last full commit's tables
    /// with the changes since beside them ([`crate::Set::commit_quick`]).
    pub fn is_quick(&self) -> bool {
        self.delta.is_some()
    }

    /// Looks up a key (the fields' bytes back to back, see
    /// [`SetDecl::key_len`]): the id of the matching element.
    ///
    /// # Panics
    /// If `key` is shorter than [`SetDecl::key_len`].
    #[inline]
    pub fn lookup(&self, key: &[u8], scratch: &mut Scratch) -> Option<u32> {
        self.lookup_with(Impl::default_impl(), key, scratch)
    }

    /// [`Snapshot::lookup`] with a chosen implementation (one this CPU
    /// lacks falls back to scalar).
    #[inline]
    pub fn lookup_with(&self, imp: Impl, key: &[u8], scratch: &mut Scratch) -> Option<u32> {
        assert!(key.len() >= self.key_len, "key too short");
        let r = self.base_lookup(imp, key, scratch);
        match &self.delta {
            None => r,
            Some(d) => match r {
                Some(id) if !d.removed(id) => Some(id),
                _ => d
                    .added
                    .lookup_with(imp, key, scratch)
                    .map(|id| id | DELTA_ID),
            },
        }
    }

    #[inline]
    fn base_lookup(&self, imp: Impl, key: &[u8], scratch: &mut Scratch) -> Option<u32> {
        let b = &*self.base;
        if let Some(c) = b.classifier.as_ref().filter(|_| self.classify_single()) {
            return crate::simd::classify(imp, c, key, &self.verifier());
        }
        scratch.ensure(self.scratch_words());
        crate::simd::lookup(imp, &b.fields, &b.lead, key, scratch)
    }

    /// Looks up a burst of keys: `keys` holds `out.len()` keys back to
    /// back, `stride` bytes apart (`stride >= key_len`); `out[i]` receives
    /// the id of the element key `i` matches. No allocation once the
    /// scratch is sized for the snapshot ([`Snapshot::scratch`]).
    ///
    /// # Panics
    /// If `keys` is too short for `out.len()` keys of `stride` bytes.
    #[inline]
    pub fn lookup_burst(
        &self,
        keys: &[u8],
        stride: usize,
        out: &mut [Option<u32>],
        scratch: &mut Scratch,
    ) {
        self.lookup_burst_with(Impl::default_impl(), keys, stride, out, scratch)
    }

    /// [`Snapshot::lookup_burst`] with a chosen implementation.
    #[inline]
    pub fn lookup_burst_with(
        &self,
        imp: Impl,
        keys: &[u8],
        stride: usize,
        out: &mut [Option<u32>],
        scratch: &mut Scratch,
    ) {
        if out.is_empty() {
            return;
        }
        let klen = self.key_len;
        assert!(stride >= klen, "stride shorter than a key");
        assert!(
            keys.len() >= (out.len() - 1) * stride + klen,
            "keys too short"
        );
        let b = &*self.base;
        if let Some(c) = b.classifier.as_ref().filter(|_| self.classify_burst()) {
            crate::simd::classify_burst(imp, c, keys, stride, out, &self.verifier());
        } else {
            scratch.ensure(self.scratch_words());
            crate::simd::lookup_burst(imp, &b.fields, &b.lead, keys, stride, out, scratch);
        }
        if let Some(d) = &self.delta {
            // The few added since the base, key by key: a quick snapshot
            // lives only until the control side compacts it.
            for (i, o) in out.iter_mut().enumerate() {
                if o.is_none_or(|id| d.removed(id)) {
                    *o = d
                        .added
                        .lookup_with(imp, &keys[i * stride..i * stride + klen], scratch)
                        .map(|id| id | DELTA_ID);
                }
            }
        }
    }

    /// Whether single keys go through the classifier: always in
    /// first-match sets (the only lookup they have), else where no field
    /// leads the bitmap lookup to a few candidates.
    #[inline(always)]
    fn classify_single(&self) -> bool {
        self.decl.policy() == Policy::FirstMatch || self.base.lead.field().is_none()
    }

    /// Whether bursts go through the classifier: where no interval tree
    /// serves them.
    #[inline(always)]
    fn classify_burst(&self) -> bool {
        self.decl.policy() == Policy::FirstMatch || !self.base.lead.has_tree()
    }

    fn verifier(&self) -> Verifier<'_> {
        Verifier {
            elems: &self.base.elems,
            fields: self.decl.fields(),
        }
    }

    /// The classifier's trees: trees, nodes, leaves, elements and leaf
    /// entries (how much the trees copied wide elements into several
    /// leaves), if lookups use one.
    pub fn classifier_shape(&self) -> Option<(usize, usize, usize, usize, usize)> {
        self.base.classifier.as_ref().map(|c| c.tree().shape())
    }

    /// The classifier's leaves by their number of groups of sixteen
    /// elements (index 8 counts 8 and more), if lookups use one.
    pub fn classifier_leaf_groups(&self) -> Option<Vec<usize>> {
        self.base
            .classifier
            .as_ref()
            .map(|c| c.tree().leaf_groups())
    }

    /// Looks up a key and returns the matching element.
    pub fn lookup_element(&self, key: &[u8], scratch: &mut Scratch) -> Option<&Element> {
        self.lookup(key, scratch).and_then(|id| self.element(id))
    }

    /// The element with id `id` (as a lookup returns it).
    #[inline]
    pub fn element(&self, id: u32) -> Option<&Element> {
        match &self.delta {
            Some(d) if id & DELTA_ID != 0 => d.added.element(id & !DELTA_ID),
            Some(d) if d.removed(id) => None,
            _ => self.base.elems.get(id as usize)?.as_deref(),
        }
    }

    /// When element `id` (as a lookup returns it) stops matching: its
    /// [`Element::expires`], [`NEVER`] without one. A caller that honours
    /// deadlines treats a match whose deadline has passed as no match.
    #[inline]
    pub fn expires(&self, id: u32) -> u64 {
        match &self.delta {
            Some(d) if id & DELTA_ID != 0 => d.added.expires(id & !DELTA_ID),
            _ => self
                .base
                .expiry
                .as_ref()
                .and_then(|t| t.get(id as usize).copied())
                .unwrap_or(NEVER),
        }
    }

    /// The earliest deadline of any element, [`NEVER`] when none has one:
    /// before it, no match needs its deadline checked.
    #[inline]
    pub fn next_expiry(&self) -> u64 {
        self.next_expiry
    }

    /// How far element ids go: base ids are below `.0`, and ids with
    /// [`DELTA_ID`] set are below `DELTA_ID | .1` (per-element state kept
    /// beside a snapshot, such as counters, is sized by these).
    pub fn id_bounds(&self) -> (usize, usize) {
        let added = self
            .delta
            .as_ref()
            .map_or(0, |d| d.added.base.elems.slots());
        (self.base.elems.slots(), added)
    }

    /// The id of the element whose key is exactly `key`, if the snapshot
    /// holds it: a lookup of the key's first point, checked; where
    /// elements overlap (first-match sets) and the lookup finds another,
    /// a walk over every id. Off the fast path: per-element state carried
    /// from one snapshot to the next is found this way.
    pub fn id_of(&self, key: &[Range], scratch: &mut Scratch) -> Option<u32> {
        let low: Vec<u128> = key.iter().map(|r| r.start).collect();
        let probe = self.decl.key_from_values(&low);
        if let Some(id) = self.lookup(&probe, scratch) {
            if self.element(id).is_some_and(|e| *e.key == *key) {
                return Some(id);
            }
        }
        let (base, added) = self.id_bounds();
        (0..base as u32)
            .chain((0..added as u32).map(|i| i | DELTA_ID))
            .find(|&id| self.element(id).is_some_and(|e| *e.key == *key))
    }

    /// All elements, in no particular order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        let d = self.delta.as_deref();
        let base = self
            .base
            .elems
            .iter()
            .enumerate()
            .filter(move |(id, _)| d.is_none_or(|d| !d.removed(*id as u32)))
            .filter_map(|(_, e)| e.as_deref());
        let added = d.into_iter().flat_map(|d| d.added.elements());
        base.chain(Box::new(added) as Box<dyn Iterator<Item = &Element>>)
    }

    /// Bytes held by this snapshot (a quick one counts its base too).
    pub fn memory_usage(&self) -> MemoryUsage {
        let b = &*self.base;
        let mut m = MemoryUsage {
            lead: b.lead.memory_usage(),
            classifier: b.classifier.as_ref().map_or(0, Classifier::memory_usage),
            ..tables_memory(&b.fields, b.elems.slots(), b.elems.iter())
        };
        if let Some(d) = &self.delta {
            let a = d.added.memory_usage();
            m.lookup_tables += a.lookup_tables;
            m.mapping_tables += a.mapping_tables;
            m.elements += a.elements + d.removed.len() * 8;
            m.lead += a.lead;
            m.classifier += a.classifier;
        }
        m
    }

    /// Whether the lead field finds candidates with an interval tree
    /// (see [`crate::SetConfig::interval_tree`]).
    pub fn has_interval_tree(&self) -> bool {
        self.base.lead.has_tree()
    }
}
