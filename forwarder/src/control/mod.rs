//! The control side, off the fast path: [`Control`] (the reload engine)
//! owns the working copies of every table, applies a new configuration to
//! them incrementally, and publishes the result as one new
//! [`crate::pipeline::Snapshot`] with a single atomic swap; [`server`] runs
//! the control thread (file watch, SIGHUP, the control socket);
//! [`stats`] and [`prometheus`] render the workers' counters.
//!
//! A reload never touches what workers read until the swap: a bad file
//! (syntax, overlap, unknown next hop) is refused with its
//! `file:line:col`, the working copies are rolled back and the running
//! snapshot stays. Workers load the snapshot once per burst, so every
//! burst is judged wholly by one generation; the snapshot a worker still
//! holds is freed when its burst ends.
//!
//! What is incremental: a rule set whose name, type, packet fields and
//! action stay gets only its added and removed elements (the rest of its
//! tables stay as they are); routes whose next hops and ECMP groups stay
//! get only their changes, in the FIB's copy-on-write pages. Anything
//! else (a new set, a changed type, changed next hops) is rebuilt. The
//! ports and `[forwarder]` need a restart.

mod access;
pub mod build;
mod conntrack;
mod counters;
pub mod diff;
pub mod elements;
mod follow;
mod inspect;
mod live;
pub mod mirror;
mod origins;
pub mod prometheus;
mod reload;
pub mod reply;
pub mod routes;
mod runtime;
pub mod server;
pub mod stats;
mod taps;
mod watch;

pub use crate::shared::Status;
pub use elements::{ElementOp, Listing};
pub use reload::{Control, Reload, COMPACT_MAX_AGE, COMPACT_QUIET};
