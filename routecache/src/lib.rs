//! Routes and the per-core route cache: longest-prefix match for IPv4 and
//! IPv6 ([`lpm`]), next hops and ECMP groups behind published snapshots
//! ([`fib`]), an IPv6 range tree those snapshots can be prepared with
//! ([`ranges`]), the route hint and the dst cache ([`cache`]), and the hash
//! functions the cache can use ([`hash`]).
//!
//! A packet's route: the hint (same destination as the previous packet of
//! the burst) → the dst cache (entries of the current FIB generation) →
//! the FIB. Every fast path is tested against [`reference::NaiveLpm`].
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod cache;
pub mod fib;
pub mod gen;
pub mod hash;
pub mod lpm;
pub mod ranges;
pub mod reference;

pub use cache::{CacheKey, CacheStats, DstCache, HashKind, RouteCacheConfig, Router};
pub use fib::{
    Family, Fib, FibError, FibSnapshot, NextHop, TargetId, Targets, VrfTables, ECMP_FLAG,
};
pub use hash::FlowKey;
