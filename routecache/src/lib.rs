//! Routes and the per-core route cache: longest-prefix match for IPv4 and
//! IPv6, next hops and ECMP groups, route hints and the dst cache, and the
//! hash functions the cache uses (see DESIGN.md, "routecache").
//!
//! Nothing is implemented yet: the routecache issue fills this crate.
#![forbid(unsafe_code)]
