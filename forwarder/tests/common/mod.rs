//! What the forwarder's integration tests share: the binary
//! ([`binary`]), pings and ICMP from a host ([`icmp`]), the metrics as
//! Prometheus reads them ([`metrics`]), network namespaces and the
//! topology of host a, the forwarder and host b ([`netns`]), raw frames
//! on an interface ([`raw`]), a user-space 802.1Q switch ([`switch`]),
//! and the workspace's seeded random numbers (`routecache::gen::Rng`).
#![allow(dead_code)]

pub mod binary;
pub mod icmp;
pub mod metrics;
pub mod netns;
pub mod raw;
pub mod switch;

#[allow(unused_imports)]
pub use binary::*;
#[allow(unused_imports)]
pub use icmp::*;
#[allow(unused_imports)]
pub use metrics::*;
#[allow(unused_imports)]
pub use netns::*;
#[allow(unused_imports)]
pub use raw::*;
#[allow(unused_imports)]
pub use routecache::gen::Rng;
