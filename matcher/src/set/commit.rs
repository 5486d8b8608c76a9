//! Commits: the classifier's upkeep (its last tree and the changes since),
//! full commits that build a snapshot's tables, quick commits that carry
//! the changes beside the last full commit's, abort, and batches.

use super::{InsertMode, Op, Quick, Set, Undo};
use crate::cuts::{self, Classifier, Cuts, Entry};
use crate::error::SetError;
use crate::lead::Lead;
use crate::snapshot::Snapshot;
use crate::syntax::{Element, Policy};
use std::sync::Arc;

impl Set {
    /// The classifier of the working copy: the last tree with the changes
    /// since, or a new tree when they are many, when a deleted element
    /// shadowed others in the tree, or when there is none.
    ///
    /// A new tree is of the last one's kind (one tree or a forest) while
    /// fewer than a quarter of the elements were added or removed since
    /// a build last chose between both, which costs building both; past
    /// that, the next build chooses again.
    pub(super) fn classifier(&mut self) -> Classifier {
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

    /// Forgets the classifier (a disjoint set whose interval tree serves
    /// every lookup), so that no changes pile up for it.
    pub(super) fn drop_classifier(&mut self) {
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
        let snap = Snapshot::full(
            self.decl.clone(),
            fields,
            lead,
            classifier,
            self.shared.clone(),
            self.exact.len(),
            self.committed.version() + 1,
        );
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
    /// the changes are many (more than [`super::QUICK_MAX`]) or the set is a
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
        let snap = self.committed.quick(added, &q.removed, self.exact.len());
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

    pub(super) fn apply_ops(&mut self, ops: impl IntoIterator<Item = Op>) -> Result<(), SetError> {
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
