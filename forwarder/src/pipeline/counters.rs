//! What a worker's pipeline counts: frames in and out, drops by reason,
//! each rule set's matches by outcome.

use crate::reason::DropReason;

/// What a rule set's match did to a packet, as its match counters count
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Dropped (the set's action, or a verdict map's `drop`).
    Drop,
    /// Accepted: the remaining sets are skipped, the packet is routed.
    Accept,
    /// On to the next set (a verdict map's `continue`, `jump`, ...: no
    /// chains here).
    Continue,
}

impl Outcome {
    /// Every outcome, each at its [`Outcome::index`].
    pub const ALL: [Outcome; 3] = [Outcome::Drop, Outcome::Accept, Outcome::Continue];

    /// Its name in statistics (the `stats` JSON's key, the Prometheus
    /// `verdict` label).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Drop => "drop",
            Outcome::Accept => "accept",
            Outcome::Continue => "continue",
        }
    }

    /// Its index in [`Outcome::ALL`] and in a set's [`SetMatches`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One rule set's matches, by [`Outcome`].
pub type SetMatches = [u64; Outcome::ALL.len()];

/// Per-reason drop counts, by [`DropReason::index`].
pub type DropCounts = [u64; DropReason::COUNT];

/// A worker's counters. Written only by the worker; read by the stats
/// printer through [`crate::worker::Published`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames received.
    pub rx: u64,
    /// Frames handed to a port for sending.
    pub tx: u64,
    /// Drops by reason.
    pub drops: DropCounts,
    /// Matches per rule set, in the order of the current snapshot's sets.
    /// A reload that keeps a set by name keeps its counts.
    pub matches: Vec<SetMatches>,
    /// The sets' names, as `matches` is ordered.
    pub set_names: Vec<String>,
    /// Bursts processed.
    pub bursts: u64,
    /// Per port (by index): frames and bytes received on it and sent out
    /// of it (rx, rx bytes, tx, tx bytes), counted for the VLAN
    /// sub-interfaces only: the ports with queues count their own.
    pub links: Vec<[u64; 4]>,
}
