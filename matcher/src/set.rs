//! A set: a private working copy that updates change, and committed,
//! immutable snapshots that readers look keys up in.

use crate::cuts::{self, Classifier, Cuts, Dim, Entry};
use crate::error::{ErrorKind, SetError};
use crate::field::{Prefix, Range};
use crate::index::OverlapIndex;
use crate::lookup::{self, Impl, Lead, Scratch};
use crate::syntax::{Data, DataType, Element, Policy, SetDecl};
use crate::table::{FieldTable, Mapping};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Table-size thresholds of the 8/4-bit group switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetConfig {
    /// Switch a field to 4-bit groups when its 8-bit lookup table would
    /// exceed this many bytes. The kernel's 2 MiB keeps a field's table
    /// within a typical L2 cache; past that, a table 16 times smaller
    /// costs fewer misses than twice the bucket ANDs.
    pub lt_size_high: usize,
    /// Switch back to 8-bit groups below this size. The 64 KiB gap keeps a
    /// set hovering at the threshold from converting on every update.
    pub lt_size_low: usize,
    /// Let a snapshot find candidates with an interval tree of a 1-, 2- or
    /// 4-byte field whose ranges overlap little (see the `tree` module);
    /// `false` keeps the bitmap lookup for every key (for measuring one
    /// against the other).
    pub interval_tree: bool,
    /// Let a snapshot without an interval tree look keys up in the
    /// decision tree of the `cuts` module; `false` keeps the kernel's
    /// bitmaps (for measuring one against the other). First-match sets
    /// always use it: it is their only lookup.
    pub classifier: bool,
    /// The decision tree's shape: `None` lets each build choose between
    /// one tree and a tree per anchor dimension (see the `cuts` module);
    /// `Some(true)` always builds the forest, `Some(false)` one tree (for
    /// measuring one against the other, and for tests: the choice takes
    /// thousands of elements to turn to the forest).
    pub forest: Option<bool>,
}

impl Default for SetConfig {
    fn default() -> Self {
        SetConfig {
            lt_size_high: 2 << 20,
            lt_size_low: (2 << 20) - (64 << 10),
            interval_tree: true,
            classifier: true,
            forest: None,
        }
    }
}

/// One update of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `add element`: an exact duplicate is not an error.
    Add(Element),
    /// `create element`: an exact duplicate is an `exists` error.
    Create(Element),
    /// `delete element`: the element with exactly this key.
    Delete(Box<[Range]>),
}

/// How a [`Set::insert`] treats an element that exists already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertMode {
    /// Idempotent, like `nft add element`.
    Add,
    /// Fails with [`ErrorKind::Exists`], like `nft create element`.
    Create,
}

enum Undo {
    Inserted(u32),
    /// The element, its id and its sequence number (its rank among equal
    /// priorities): an abort gives both back, so that the undo entries
    /// before it still name the right ids. And whether it was among the
    /// classifier's extra elements: one the tree holds may be there too
    /// (brought by the delete of an element that shadowed it in the
    /// tree), and must be again once restored.
    Deleted(Arc<Element>, u32, u64, bool),
}

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

fn tables_memory<'a>(
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

/// Element slots a chunk of [`Elems`] holds.
const CHUNK: usize = 256;

/// A snapshot's elements by id, in chunks that snapshots share: a commit
/// copies the chunks that changed since the last one, not the whole set
/// (a commit of one change to a 10,000-element set spent most of its
/// time cloning and then dropping 10,000 `Arc`s).
#[derive(Clone, Debug, Default)]
pub(crate) struct Elems {
    chunks: Vec<Arc<[Option<Arc<Element>>]>>,
    /// Per chunk, whether any of its elements has a deadline.
    expiring: Vec<bool>,
}

impl Elems {
    #[inline]
    fn get(&self, id: usize) -> Option<&Option<Arc<Element>>> {
        self.chunks.get(id / CHUNK)?.get(id % CHUNK)
    }

    fn iter(&self) -> impl Iterator<Item = &Option<Arc<Element>>> {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    fn slots(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }

    fn any_expiring(&self) -> bool {
        self.expiring.contains(&true)
    }

    /// Brings the chunks in line with `now` (the working copy's slots):
    /// a chunk whose every slot holds the same element (by pointer) is
    /// kept, the others are copied anew.
    fn update(&mut self, now: &[Option<Arc<Element>>]) {
        let n = now.len().div_ceil(CHUNK);
        self.chunks.truncate(n);
        self.expiring.truncate(n);
        for (i, part) in now.chunks(CHUNK).enumerate() {
            let same = self.chunks.get(i).is_some_and(|c| {
                c.len() == part.len()
                    && c.iter().zip(part).all(|(a, b)| match (a, b) {
                        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                        (None, None) => true,
                        _ => false,
                    })
            });
            if same {
                continue;
            }
            let c: Arc<[Option<Arc<Element>>]> = part.into();
            let exp = part.iter().flatten().any(|e| e.expires.is_some());
            if i < self.chunks.len() {
                self.chunks[i] = c;
                self.expiring[i] = exp;
            } else {
                self.chunks.push(c);
                self.expiring.push(exp);
            }
        }
    }
}

/// The tables a full commit builds: what a snapshot's lookups run on,
/// shared by the quick snapshots that follow it (see [`Set::commit_quick`]).
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
/// [`Set::commit_quick`]); ids of a set stay below it.
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
    fn empty(decl: Arc<SetDecl>) -> Snapshot {
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
    /// with the changes since beside them ([`Set::commit_quick`]).
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
        lookup::lookup(imp, &b.fields, &b.lead, key, scratch)
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
            lookup::lookup_burst(imp, &b.fields, &b.lead, keys, stride, out, scratch);
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
    /// (see [`SetConfig::interval_tree`]).
    pub fn has_interval_tree(&self) -> bool {
        self.base.lead.has_tree()
    }
}

/// A pipapo set: a working copy that [`Set::insert`] and [`Set::delete`]
/// change, and the last committed [`Snapshot`], which no update touches.
///
/// A batch is everything done since the last [`Set::commit`] or
/// [`Set::abort`]: `commit` publishes all of it, `abort` none of it.
///
/// ```
/// use matcher::{Set, SetDecl};
/// let decl = SetDecl::parse("type ipv4_addr . inet_service : verdict").unwrap();
/// let mut set = Set::new(decl.clone());
/// set.insert(decl.parse_element("192.0.2.0/24 . 1000-2000 : drop").unwrap(),
///            matcher::InsertMode::Create).unwrap();
/// let snap = set.commit();
/// let key = decl.parse_key("192.0.2.7 . 1500").unwrap();
/// let e = snap.lookup_element(&key, &mut snap.scratch()).unwrap();
/// assert_eq!(decl.format_element(e), "192.0.2.0/24 . 1000-2000 : drop");
/// ```
pub struct Set {
    decl: Arc<SetDecl>,
    config: SetConfig,
    fields: Vec<FieldTable>,
    elems: Vec<Option<Arc<Element>>>,
    /// `elems` as the last commit's snapshot holds them (its chunks
    /// shared with that snapshot).
    shared: Elems,
    free_ids: Vec<u32>,
    exact: HashMap<Box<[Range]>, u32>,
    index: OverlapIndex,
    undo: Vec<Undo>,
    committed: Arc<Snapshot>,
    candidates: Vec<u32>,
    /// The order elements were added in, per id (ranks equal priorities),
    /// and the next number.
    seqs: Vec<u64>,
    next_seq: u64,
    /// The classifier's upkeep: its dimensions, its last tree, what
    /// changed since (ids inserted; tree ids deleted), ids kept from reuse
    /// while the tree still names them, and whether a commit must rebuild.
    dims: Vec<Dim>,
    exact_dims: bool,
    cuts: Option<Arc<Cuts>>,
    extra: Vec<u32>,
    gone: Vec<u32>,
    retired: Vec<u32>,
    rebuild: bool,
    /// `next_seq` and the number of elements when a build last chose
    /// between one tree and a forest (see [`Set::classifier`]).
    chosen_at: (u64, usize),
    /// What changed since the last full commit, kept while it is little
    /// enough for [`Set::commit_quick`]; `None` otherwise, and in the
    /// small set that holds a quick snapshot's added elements.
    quick: Option<Quick>,
    /// Whether this is such a small set (it keeps no `quick` of its own).
    inner: bool,
}

/// The changes since the last full commit, as a quick snapshot shows
/// them: the elements added since (in a small set of their own) and the
/// base's ids deleted since (bits). Every insert and delete of the
/// working copy is mirrored here while it lives.
struct Quick {
    added: Box<Set>,
    removed: Vec<u64>,
    /// Bits set since the last commit (an abort clears them).
    removed_now: Vec<u32>,
    /// Changes mirrored since the base, and as of the last commit.
    changes: usize,
    changes_committed: usize,
}

/// Changes since the last full commit past which [`Set::commit_quick`]
/// commits in full: every lookup that misses the base looks in the added
/// elements too, so they stay few, and a full commit of a large set costs
/// milliseconds, not more.
pub const QUICK_MAX: usize = 4096;

/// Checks a candidate of the classifier against every field in full (sets
/// with fields wider than 4 bytes), without allocating.
pub(crate) struct Verifier<'a> {
    elems: &'a Elems,
    fields: &'a [crate::FieldType],
}

impl cuts::Verify for Verifier<'_> {
    #[inline]
    fn holds(&self, id: u32, key: &[u8]) -> bool {
        let Some(Some(e)) = self.elems.get(id as usize) else {
            return false;
        };
        let mut off = 0;
        for (t, r) in self.fields.iter().zip(e.key.iter()) {
            let v = t.read_key(&key[off..]);
            off += t.bytes();
            if !r.contains(v) {
                return false;
            }
        }
        true
    }
}

impl fmt::Debug for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Set")
            .field("decl", &self.decl.to_string())
            .field("len", &self.len())
            .field("pending", &self.undo.len())
            .finish()
    }
}

impl Set {
    /// An empty set with the kernel's switch thresholds.
    pub fn new(decl: SetDecl) -> Set {
        Set::with_config(decl, SetConfig::default())
    }

    /// An empty set with the given thresholds.
    pub fn with_config(decl: SetDecl, config: SetConfig) -> Set {
        let decl = Arc::new(decl);
        let n = decl.fields().len();
        let committed = Arc::new(Snapshot::empty(decl.clone()));
        let lens: Vec<usize> = decl.fields().iter().map(|t| t.bytes()).collect();
        Set {
            dims: Dim::of_fields(&lens),
            exact_dims: lens.iter().all(|&l| l <= 4),
            cuts: None,
            extra: Vec::new(),
            gone: Vec::new(),
            retired: Vec::new(),
            rebuild: true,
            chosen_at: (0, 0),
            seqs: Vec::new(),
            next_seq: 0,
            fields: committed.base.fields.clone(),
            decl,
            config,
            elems: Vec::new(),
            shared: Elems::default(),
            free_ids: Vec::new(),
            exact: HashMap::new(),
            index: OverlapIndex::new(n),
            undo: Vec::new(),
            committed,
            candidates: Vec::new(),
            quick: None,
            inner: false,
        }
    }

    /// The declaration.
    pub fn decl(&self) -> &SetDecl {
        &self.decl
    }

    /// The thresholds in use.
    pub fn config(&self) -> SetConfig {
        self.config
    }

    /// Elements in the working copy.
    pub fn len(&self) -> usize {
        self.exact.len()
    }

    /// Whether the working copy is empty.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty()
    }

    /// Whether the working copy differs from the committed snapshot.
    pub fn is_dirty(&self) -> bool {
        !self.undo.is_empty()
    }

    /// The working copy's per-field tables (for inspection).
    pub fn fields(&self) -> &[FieldTable] {
        &self.fields
    }

    /// The last committed snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.committed.clone()
    }

    /// The element of the working copy with exactly this key.
    pub fn get(&self, key: &[Range]) -> Option<&Element> {
        let id = *self.exact.get(key)?;
        self.elems[id as usize].as_deref()
    }

    /// The working copy's elements, in no particular order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.elems.iter().flatten().map(|e| &**e)
    }

    /// Bytes held by the working copy (the committed snapshot may share
    /// none of them: see [`Snapshot::memory_usage`]).
    pub fn memory_usage(&self) -> MemoryUsage {
        let mut m = tables_memory(&self.fields, self.elems.capacity(), self.elems.iter());
        m.index = self.index.memory_usage()
            + self.exact.capacity()
                * (std::mem::size_of::<Box<[Range]>>() + 4 + std::mem::size_of::<Range>());
        m
    }

    fn validate(&self, e: &Element) -> Result<(), SetError> {
        let fields = self.decl.fields();
        let text = || self.describe(e);
        if e.key.len() != fields.len() {
            return Err(SetError::invalid(format!(
                "`{}` has {} fields, the set's type has {}",
                text(),
                e.key.len(),
                fields.len()
            )));
        }
        // Every field, not only the first (the kernel once checked one).
        for (i, (t, r)) in fields.iter().zip(e.key.iter()).enumerate() {
            if r.start > r.end {
                return Err(SetError::invalid(format!(
                    "`{}`: field {} ({}): range start {} is greater than its end {}",
                    text(),
                    i + 1,
                    t,
                    t.format_value(r.start),
                    t.format_value(r.end)
                )));
            }
            if r.end > t.max() {
                return Err(SetError::invalid(format!(
                    "`{}`: field {} ({}): value {:#x} is out of range",
                    text(),
                    i + 1,
                    t,
                    r.end
                )));
            }
        }
        if (e.timeout.is_some() || e.expires.is_some()) && !self.decl.has_timeouts() {
            return Err(SetError::invalid(format!(
                "`{}`: `timeout` needs a set with `flags timeout`",
                text()
            )));
        }
        if e.priority.is_some() && self.decl.policy() != Policy::FirstMatch {
            return Err(SetError::invalid(format!(
                "`{}`: `priority` needs a set with `flags priority`",
                text()
            )));
        }
        match (self.decl.data(), &e.data) {
            (None, None) | (Some(DataType::Verdict), Some(Data::Verdict(_))) => Ok(()),
            (Some(DataType::Value(t)), Some(Data::Value(u, v))) if t == *u && *v <= t.max() => {
                Ok(())
            }
            (None, Some(_)) => Err(SetError::invalid(format!(
                "`{}`: data given, but this is a set, not a map",
                text()
            ))),
            _ => Err(SetError::invalid(format!(
                "`{}`: the map's data must be {}",
                text(),
                match self.decl.data() {
                    Some(DataType::Verdict) => "a verdict".to_string(),
                    Some(DataType::Value(t)) => format!("{t}"),
                    None => "absent".to_string(),
                }
            ))),
        }
    }

    /// An element in canonical form, for messages; tolerant of bad input.
    fn describe(&self, e: &Element) -> String {
        if e.key.len() == self.decl.fields().len()
            && e.key
                .iter()
                .zip(self.decl.fields())
                .all(|(r, t)| r.end <= t.max() && r.start <= r.end)
        {
            self.decl.format_element(e)
        } else {
            let parts: Vec<String> = e
                .key
                .iter()
                .map(|r| format!("{:#x}-{:#x}", r.start, r.end))
                .collect();
            parts.join(" . ")
        }
    }

    /// Inserts an element into the working copy.
    ///
    /// Errors: `invalid` for a malformed element; `exists` for an exact
    /// duplicate with [`InsertMode::Create`], or the same key with other
    /// data; `overlap` when the element shares any key with another one
    /// (subset, superset, or crossing ranges alike).
    pub fn insert(&mut self, e: Element, mode: InsertMode) -> Result<(), SetError> {
        self.validate(&e)?;
        if let Some(&id) = self.exact.get(&e.key) {
            let old = self.elems[id as usize].as_deref().expect("indexed element");
            if old.data != e.data || old.priority != e.priority {
                return Err(SetError::new(
                    ErrorKind::Exists,
                    format!(
                        "`{}` exists already with other data: `{}`",
                        self.describe(&e),
                        self.describe(old)
                    ),
                ));
            }
            return match mode {
                InsertMode::Add => Ok(()),
                InsertMode::Create => Err(SetError::new(
                    ErrorKind::Exists,
                    format!("`{}` exists already", self.describe(old)),
                )),
            };
        }
        if self.decl.policy() == Policy::FirstMatch {
            // Overlaps are what a first-match set is for.
            let id = self.insert_tables(Arc::new(e));
            self.undo.push(Undo::Inserted(id));
            self.quick_inserted(id);
            return Ok(());
        }
        let mut cands = std::mem::take(&mut self.candidates);
        self.index.candidates(&e.key, &mut cands);
        let clash = cands
            .iter()
            .filter_map(|&id| self.elems[id as usize].as_deref())
            .find(|o| o.overlaps(&e));
        if let Some(o) = clash {
            let err = SetError::new(
                ErrorKind::Overlap,
                format!(
                    "`{}` overlaps existing element `{}`",
                    self.describe(&e),
                    self.describe(o)
                ),
            );
            self.candidates = cands;
            return Err(err);
        }
        self.candidates = cands;
        let id = self.insert_tables(Arc::new(e));
        self.undo.push(Undo::Inserted(id));
        self.quick_inserted(id);
        Ok(())
    }

    /// Mirrors the insert of element `id` into the quick changes.
    fn quick_inserted(&mut self, id: u32) {
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
    fn quick_deleted(&mut self, e: &Element, id: u32) {
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
    fn insert_tables(&mut self, e: Arc<Element>) -> u32 {
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
    fn restore(&mut self, e: Arc<Element>, id: u32, seq: u64, was_extra: bool) {
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
    fn fill_tables(&mut self, e: Arc<Element>, id: u32) {
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

    /// Deletes the element with exactly this key from the working copy.
    pub fn delete(&mut self, key: &[Range]) -> Result<Element, SetError> {
        let Some(&id) = self.exact.get(key) else {
            let shown = if key.len() == self.decl.fields().len() {
                self.describe(&Element {
                    key: key.into(),
                    data: None,
                    priority: None,
                    timeout: None,
                    expires: None,
                })
            } else {
                format!("{key:?}")
            };
            return Err(SetError::new(
                ErrorKind::NotFound,
                format!("`{shown}` is not in the set"),
            ));
        };
        let seq = self.seqs[id as usize];
        let was_extra = self.tracking() && self.extra.contains(&id);
        let e = self.delete_tables(id);
        let out = (*e).clone();
        self.undo.push(Undo::Deleted(e, id, seq, was_extra));
        self.quick_deleted(&out, id);
        Ok(out)
    }

    /// Removes element `id` from the tables: finds its run of rules in
    /// each field (the last field's mappings point at the id; each earlier
    /// field's point at the run found in the next), cuts the runs out and
    /// moves the mappings that pointed above them down.
    fn delete_tables(&mut self, id: u32) -> Arc<Element> {
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

    fn delete_bitmaps(&mut self, id: u32) -> Arc<Element> {
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

    /// The classifier of the working copy: the last tree with the changes
    /// since, or a new tree when they are many, when a deleted element
    /// shadowed others in the tree, or when there is none.
    ///
    /// A new tree is of the last one's kind (one tree or a forest) while
    /// fewer than a quarter of the elements were added or removed since
    /// a build last chose between both, which costs building both; past
    /// that, the next build chooses again.
    fn classifier(&mut self) -> Classifier {
        let rank = |e: &Element, seq: u64| (e.priority.unwrap_or(0) as u64) << 40 | seq;
        let entry = |id: u32, this: &Set| {
            let e = this.elems[id as usize].as_deref().expect("live element");
            cuts::entry(&this.dims, id, rank(e, this.seqs[id as usize]), &e.key)
        };
        if !self.tracking() {
            let all: Vec<Entry> = (0..self.elems.len() as u32)
                .filter(|&id| self.elems[id as usize].is_some())
                .map(|id| entry(id, self))
                .collect();
            let (seq, len) = self.chosen_at;
            let drift = (self.next_seq - seq) as usize + len.abs_diff(all.len());
            let last = self.cuts.as_ref().filter(|_| drift < all.len() / 4);
            let like = self.config.forest.or(last.map(|c| c.is_split()));
            let plan = last.map_or(Vec::new(), |c| c.plan().to_vec());
            if like.is_none() {
                self.chosen_at = (self.next_seq, all.len());
            }
            self.cuts = Some(Arc::new(Cuts::build(
                self.dims.clone(),
                self.exact_dims,
                all,
                like,
                &plan,
            )));
            self.extra.clear();
            self.gone.clear();
            self.free_ids.append(&mut self.retired);
            self.rebuild = false;
        }
        let extra = self.extra.iter().map(|&id| entry(id, self)).collect();
        Classifier::new(self.cuts.clone().expect("built"), extra, &self.gone)
    }

    /// Before element `id`, which shadowed others in the tree's regions
    /// it covers, is deleted: the elements it may have shadowed (ranked
    /// after it, overlapping it, held by the tree) join the extra
    /// elements, where they are found without it. A scan of the elements,
    /// instead of a rebuild of the tree; past the delta's limit, the
    /// rebuild.
    fn unshadow(&mut self, id: u32) {
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
    fn tracking(&self) -> bool {
        self.cuts.is_some() && !self.rebuild
    }

    /// Past [`cuts::MAX_DELTA`] changes, or once a rebuild is due, the
    /// changes are not worth recording: the ids kept from reuse are free.
    fn check_delta(&mut self) {
        if self.extra.len() + self.gone.len() > cuts::MAX_DELTA {
            self.rebuild = true;
        }
        if self.rebuild {
            self.extra.clear();
            self.gone.clear();
            self.free_ids.append(&mut self.retired);
        }
    }

    /// Forgets the classifier (a disjoint set whose interval tree serves
    /// every lookup), so that no changes pile up for it.
    fn drop_classifier(&mut self) {
        self.cuts = None;
        self.extra.clear();
        self.gone.clear();
        self.free_ids.append(&mut self.retired);
        self.rebuild = true;
    }

    /// Publishes the working copy as the new committed snapshot, with
    /// tables of its own (a full commit: it also compacts a quick
    /// snapshot). Readers of earlier snapshots keep theirs, unchanged.
    pub fn commit(&mut self) -> Arc<Snapshot> {
        if self.undo.is_empty() && !self.committed.is_quick() {
            return self.committed.clone();
        }
        self.undo.clear();
        let mut fields = self.fields.clone();
        let (lead, classifier) = if self.decl.policy() == Policy::FirstMatch {
            (Lead::default(), Some(self.classifier()))
        } else {
            for f in &mut fields {
                f.compute_bounds();
            }
            let lead = Lead::build(&fields, &self.elems, self.config.interval_tree);
            let classifier = if lead.has_tree() || self.exact.is_empty() || !self.config.classifier
            {
                self.drop_classifier();
                None
            } else {
                Some(self.classifier())
            };
            (lead, classifier)
        };
        self.shared.update(&self.elems);
        let (expiry, next_expiry) = Base::expiry_of(&self.shared);
        let snap = Snapshot {
            key_len: self.decl.key_len(),
            scratch_words: fields
                .iter()
                .map(FieldTable::stride_words)
                .max()
                .unwrap_or(0),
            decl: self.decl.clone(),
            base: Arc::new(Base {
                fields,
                lead,
                classifier,
                elems: self.shared.clone(),
                expiry,
            }),
            delta: None,
            len: self.exact.len(),
            version: self.committed.version + 1,
            next_expiry,
        };
        self.committed = Arc::new(snap);
        // Quick snapshots for disjoint sets: in a first-match set an added
        // element may rank before a base element the same key matches.
        self.quick = (!self.inner && self.decl.policy() == Policy::Disjoint).then(|| {
            let mut added = Set::with_config((*self.decl).clone(), self.config);
            added.inner = true;
            Quick {
                added: Box::new(added),
                removed: Vec::new(),
                removed_now: Vec::new(),
                changes: 0,
                changes_committed: 0,
            }
        });
        self.committed.clone()
    }

    /// Publishes the working copy as the new committed snapshot in time
    /// proportional to the changes since the last full commit, not to the
    /// set: the snapshot shares that commit's tables and carries the
    /// changes beside them (see [`Snapshot`]). A full [`Set::commit`]
    /// later compacts it; lookups pay for the changes until then. Where
    /// the changes are many (more than [`QUICK_MAX`]) or the set is a
    /// first-match one, this is a full commit.
    pub fn commit_quick(&mut self) -> Arc<Snapshot> {
        if self.undo.is_empty() {
            return self.committed.clone();
        }
        let Some(q) = &mut self.quick else {
            return self.commit();
        };
        let added = q.added.commit();
        self.undo.clear();
        q.removed_now.clear();
        q.changes_committed = q.changes;
        let base = self.committed.base.clone();
        let snap = Snapshot {
            key_len: self.committed.key_len,
            scratch_words: self.committed.scratch_words.max(added.scratch_words()),
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
                    .filter(|&(i, _)| !bit(&q.removed, i))
                    .map(|(_, &d)| d)
                    .min()
                    .unwrap_or(NEVER),
            }
            .min(added.next_expiry()),
            base,
            delta: Some(Arc::new(Delta {
                added,
                removed: q.removed.clone().into_boxed_slice(),
            })),
            len: self.exact.len(),
            version: self.committed.version + 1,
        };
        self.committed = Arc::new(snap);
        self.committed.clone()
    }

    /// Whether the committed snapshot is a quick one (a full
    /// [`Set::commit`] would compact it).
    pub fn is_quick(&self) -> bool {
        self.committed.is_quick()
    }

    /// Drops every change since the last commit.
    pub fn abort(&mut self) {
        if let Some(q) = &mut self.quick {
            q.added.abort();
            for id in q.removed_now.drain(..) {
                q.removed[id as usize / 64] &= !(1 << (id % 64));
            }
            q.changes = q.changes_committed;
        }
        while let Some(u) = self.undo.pop() {
            match u {
                Undo::Inserted(id) => {
                    self.delete_tables(id);
                }
                Undo::Deleted(e, id, seq, was_extra) => {
                    self.restore(e, id, seq, was_extra);
                }
            }
        }
    }

    /// Applies a batch all-or-nothing and commits it. On the first failing
    /// operation every operation of the batch (and anything uncommitted
    /// before it) is rolled back, and the error names the operation.
    pub fn apply(&mut self, ops: impl IntoIterator<Item = Op>) -> Result<Arc<Snapshot>, SetError> {
        self.apply_ops(ops)?;
        Ok(self.commit())
    }

    /// [`Set::apply`] with a quick commit ([`Set::commit_quick`]): for
    /// small batches on large sets, whose full commit copies every table.
    pub fn apply_quick(
        &mut self,
        ops: impl IntoIterator<Item = Op>,
    ) -> Result<Arc<Snapshot>, SetError> {
        self.apply_ops(ops)?;
        Ok(self.commit_quick())
    }

    fn apply_ops(&mut self, ops: impl IntoIterator<Item = Op>) -> Result<(), SetError> {
        for op in ops {
            let r = match op {
                Op::Add(e) => self.insert(e, InsertMode::Add),
                Op::Create(e) => self.insert(e, InsertMode::Create),
                Op::Delete(k) => self.delete(&k).map(|_| ()),
            };
            if let Err(e) = r {
                self.abort();
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit of one change shares every chunk of elements but the
    /// changed one with the snapshot before it, and both snapshots keep
    /// their own answers.
    #[test]
    fn a_commit_copies_only_the_changed_chunk_of_elements() {
        let decl = SetDecl::parse("ipv4_addr . inet_service; flags priority").unwrap();
        let mut set = Set::new(decl.clone());
        let el = |i: u32| {
            decl.parse_element(&format!("10.{}.{}.0/24 . 80", i >> 8, i & 255))
                .unwrap()
        };
        for i in 0..1000 {
            set.insert(el(i), InsertMode::Add).unwrap();
        }
        let before = set.commit();
        set.delete(&el(300).key).unwrap();
        let after = set.commit();
        let (b, a) = (&before.base.elems, &after.base.elems);
        assert_eq!(b.chunks.len(), 4);
        let shared: Vec<bool> = b
            .chunks
            .iter()
            .zip(&a.chunks)
            .map(|(x, y)| Arc::ptr_eq(x, y))
            .collect();
        assert_eq!(shared, [true, false, true, true]);
        let key = decl.parse_key("10.1.44.9 . 80").unwrap();
        let mut scratch = before.scratch();
        assert!(before.lookup(&key, &mut scratch).is_some());
        assert!(after.lookup(&key, &mut scratch).is_none());
        assert_eq!(a.iter().flatten().count(), 999);
    }

    /// A rebuild keeps the last build's kind (here the forest, which the
    /// first build chose after its one tree ran out of copies) while the
    /// elements changed by less than a quarter, and chooses again after.
    #[test]
    fn a_rebuild_keeps_the_kind_chosen_until_a_quarter_changed() {
        use crate::reference::LinearSet;
        let decl = SetDecl::parse("ipv4_addr . inet_service; flags priority").unwrap();
        let el = |i: u32| {
            let text = if i.is_multiple_of(2) {
                format!("10.0.{}.{} . 0-65535", i >> 9, (i >> 1) & 255)
            } else {
                format!("0.0.0.0/0 . {}", 1000 + (i >> 1))
            };
            decl.parse_element(&text).unwrap()
        };
        let mut set = Set::new(decl.clone());
        let mut live: Vec<Element> = (0..2000).map(el).collect();
        for e in &live {
            set.insert(e.clone(), InsertMode::Create).unwrap();
        }
        set.commit();
        assert!(set.cuts.as_ref().unwrap().is_split());
        let chosen = set.chosen_at;
        let check = |set: &mut Set, live: &[Element]| {
            let snap = set.commit();
            let reference = LinearSet::new(decl.clone(), live.to_vec());
            let mut scratch = snap.scratch();
            for k in 0..200u32 {
                let key = decl
                    .parse_key(&format!("10.0.{}.{} . {}", k % 5, k, 990 + k * 7))
                    .unwrap();
                assert_eq!(
                    snap.lookup_element(&key, &mut scratch).map(|e| &e.key),
                    reference.lookup(&key).map(|e| &e.key),
                    "key {k}"
                );
            }
        };
        // 2 x 200 changes, past the delta's limit: rebuilt, of the same kind.
        for i in 0..200 {
            let e = live.remove(i * 7 % live.len());
            set.delete(&e.key).unwrap();
            set.commit();
            set.insert(e.clone(), InsertMode::Create).unwrap();
            live.push(e);
        }
        check(&mut set, &live);
        assert_eq!(set.chosen_at, chosen);
        assert!(set.cuts.as_ref().unwrap().is_split());
        for i in 0..400 {
            let e = live.remove(i * 13 % live.len());
            set.delete(&e.key).unwrap();
            set.insert(e.clone(), InsertMode::Create).unwrap();
            live.push(e);
            if i.is_multiple_of(50) {
                set.commit();
            }
        }
        check(&mut set, &live);
        assert_ne!(set.chosen_at, chosen);
    }
}
