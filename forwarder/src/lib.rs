//! The forwarder: ports, pinned workers, the per-burst pipeline, the
//! control side that builds and publishes what the workers judge by, and
//! the command line.
//!
//! One packet's way through, in the order the modules meet it:
//!
//! 1. [`port`]: a worker's queue of a port receives a burst of frames
//!    ([`port::Burst`]): the synthetic generator writes them, `af_packet`
//!    and `af_xdp` copy them off kernel rings, `dpdk` lends its mbufs.
//! 2. [`worker`]: the pinned poll loop loads the published snapshot once
//!    per turn ([`snapshot::Tables`], through an `ArcSwap`), so every
//!    packet of a burst is judged by one generation, and hands the burst
//!    to its pipeline.
//! 3. [`pipeline`]: [`wire`] parses each frame into a few values (family,
//!    addresses, ports, TTL); the flow cache answers packets of flows it
//!    has seen; the others go through the rule sets
//!    ([`pipeline::classify`]) and the FIB behind the route hint and the
//!    dst cache; [`wire`] rewrites the survivors (MACs, TTL, checksum) and
//!    lists them by egress port, counting every drop by reason.
//! 4. [`port`] again: each egress port's `tx_burst` sends its list, and the
//!    receiving port takes back what it lent.
//!
//! Off the fast path, [`control`] owns the working copies of every table,
//! applies a changed configuration incrementally, publishes a new
//! snapshot with one swap, frees the replaced one once no worker holds
//! it, and serves the control socket, statistics and Prometheus. [`cmd`]
//! holds the subcommands (`run`, `lookup`, `reload`, `stats`).
#![deny(unsafe_code)]

pub mod clock;
pub mod cmd;
pub mod control;
pub mod kernel;
pub mod log;
pub mod neigh;
pub mod pipeline;
pub mod port;
pub mod punt;
pub mod reason;
pub mod router;
pub mod shared;
pub mod tables;
pub mod wire;
pub mod worker;
