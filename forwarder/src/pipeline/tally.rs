//! Per-element counters, as nft's `counter` on a set's elements: each
//! worker counts, for the sets with `counter = true`, the packets and
//! bytes each element matched, in arrays of its own indexed by element
//! id (no atomics, no sharing); the control side asks the workers for
//! them between two turns and sums them by element.
//!
//! Ids belong to one committed snapshot of a set. When a set's snapshot
//! changes (an element added at run time, a reload), the worker carries
//! each counted element's counts to its id in the new snapshot, found by
//! its key ([`matcher::Snapshot::id_of`]): an element that stays keeps
//! its counts, as an nft element keeps its counter; a deleted one's go
//! with it. That happens once a snapshot, off the per-packet path (it
//! allocates the new arrays there).
//!
//! A packet that matched a counted element has its decision kept
//! neither in the flow cache nor in its connection's entry: the next
//! packets of its flow go through the sets, so that each is counted. The
//! flow cache still serves every flow that no counted element matches.

use crate::tables::Tables;
use matcher::{Range, Scratch, Snapshot, DELTA_ID};
use std::sync::Arc;

/// A set's element counters, by element key: packets and bytes (those
/// that counted something).
pub type ElementCounts = Vec<(Box<[Range]>, [u64; 2])>;

/// One counted set's counts in one worker.
pub(super) struct SetTally {
    /// The set's name (counts are carried by name across snapshots).
    name: String,
    /// The snapshot whose element ids index the counts.
    snap: Arc<Snapshot>,
    /// Packets and bytes per base id, and per added id (`DELTA_ID` off).
    base: Vec<[u64; 2]>,
    added: Vec<[u64; 2]>,
}

impl SetTally {
    fn new(name: &str, snap: &Arc<Snapshot>) -> SetTally {
        let (b, a) = snap.id_bounds();
        SetTally {
            name: name.to_string(),
            snap: snap.clone(),
            base: vec![[0; 2]; b],
            added: vec![[0; 2]; a],
        }
    }

    /// Element `id`'s packets and bytes.
    #[inline(always)]
    fn slot(&mut self, id: u32) -> Option<&mut [u64; 2]> {
        if id & DELTA_ID != 0 {
            self.added.get_mut((id & !DELTA_ID) as usize)
        } else {
            self.base.get_mut(id as usize)
        }
    }

    /// Counts `packets` packets of `bytes` bytes for element `id`.
    #[inline(always)]
    pub(super) fn add(&mut self, id: u32, packets: u64, bytes: u64) {
        if let Some(c) = self.slot(id) {
            c[0] += packets;
            c[1] += bytes;
        }
    }

    /// Each element's id and counts (those that counted something).
    fn each(&self) -> impl Iterator<Item = (u32, [u64; 2])> + '_ {
        let base = self.base.iter().enumerate().map(|(i, c)| (i as u32, *c));
        let added = (self.added.iter().enumerate()).map(|(i, c)| (i as u32 | DELTA_ID, *c));
        base.chain(added).filter(|(_, c)| c[0] != 0)
    }
}

/// A worker's counted sets, by the index of the set in its snapshot.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) sets: Vec<Option<SetTally>>,
}

impl Tally {
    /// Takes up `tables`: a counted set whose snapshot is the same keeps
    /// its counts as they are; one whose snapshot changed gets them
    /// carried to its new ids; sets that no longer count drop theirs.
    pub(super) fn adopt(&mut self, tables: &Tables, scratch: &mut [Scratch]) {
        let mut old: Vec<SetTally> = self.sets.drain(..).flatten().collect();
        for (si, set) in tables.sets.iter().enumerate() {
            if !set.counter {
                self.sets.push(None);
                continue;
            }
            let prev = old
                .iter()
                .position(|t| t.name == set.name)
                .map(|i| old.swap_remove(i));
            let t = match prev {
                Some(t) if Arc::ptr_eq(&t.snap, &set.snap) => t,
                Some(t) => {
                    let mut fresh = SetTally::new(&set.name, &set.snap);
                    let mut own = Scratch::default();
                    let sc = scratch.get_mut(si).unwrap_or(&mut own);
                    for (id, c) in t.each() {
                        let Some(e) = t.snap.element(id) else {
                            continue;
                        };
                        if let Some(new) = set.snap.id_of(&e.key, sc) {
                            fresh.add(new, c[0], c[1]);
                        }
                    }
                    fresh
                }
                None => SetTally::new(&set.name, &set.snap),
            };
            self.sets.push(Some(t));
        }
    }

    /// The counts of set `name` by element key (those that counted
    /// something); `None` when the set does not count.
    pub fn of(&self, name: &str) -> Option<ElementCounts> {
        let t = self.sets.iter().flatten().find(|t| t.name == name)?;
        Some(
            t.each()
                .filter_map(|(id, c)| Some((t.snap.element(id)?.key.clone(), c)))
                .collect(),
        )
    }

    /// Sets the counts of set `name` (every counted set: `None`) to zero.
    pub fn reset(&mut self, name: Option<&str>) {
        for t in self.sets.iter_mut().flatten() {
            if name.is_none_or(|n| n == t.name) {
                t.base.fill([0; 2]);
                t.added.fill([0; 2]);
            }
        }
    }
}
