//! A set's private working copy: what updates change, checked for
//! duplicates and overlaps, rolled back by an abort, and published whole
//! as an immutable [`Snapshot`] by a commit.
//!
//! - this file: the working copy's state, its checks, insert and delete;
//! - `tables`: writing an element into the bitmaps, mapping tables and
//!   indices, and cutting one out;
//! - `commit`: the classifier's upkeep, full and quick commits, abort and
//!   batches.

mod commit;
mod tables;
#[cfg(test)]
mod tests;

use crate::cuts::{Cuts, Dim};
use crate::elems::Elems;
use crate::error::{ErrorKind, SetError};
use crate::field::Range;
use crate::index::OverlapIndex;
use crate::snapshot::{tables_memory, MemoryUsage, Snapshot};
use crate::syntax::{Data, DataType, Element, Policy, SetDecl};
use crate::table::FieldTable;
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
            fields: committed.fields().to_vec(),
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

    /// Deletes the element with exactly this key from the working copy.
    pub fn delete(&mut self, key: &[Range]) -> Result<Element, SetError> {
        let Some(&id) = self.exact.get(key) else {
            let shown = if key.len() == self.decl.fields().len() {
                self.describe(&Element::of(key))
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
}
