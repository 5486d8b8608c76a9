//! The forwarder: ports, pinned workers, the per-burst pipeline, the
//! router's slow path, the control side that builds and publishes what
//! the workers judge by, and the command line.
//!
//! One packet's way through, in the order the modules meet it:
//!
//! 1. [`port`]: a worker's queue of a port receives a burst of frames
//!    ([`port::Burst`]): the synthetic generator writes them, `af_packet`
//!    and `af_xdp` copy them off kernel rings, `dpdk` lends its mbufs.
//! 2. [`worker`]: the pinned poll loop loads the published snapshot
//!    ([`pipeline::Snapshot`], through the `ArcSwap` of [`shared`]) once
//!    per turn, so every packet of a burst is judged by one generation,
//!    and hands the burst to its pipeline.
//! 3. [`pipeline`]: [`wire`] parses each frame into a few values (family,
//!    addresses, ports, TTL); the flow cache answers packets of flows it
//!    has seen; the others go through the rule sets and the FIB of
//!    [`tables`] behind the route hint and the dst cache; the survivors
//!    are rewritten (MACs, TTL, checksum) and listed by egress port, every
//!    drop counted by its [`reason`]. What the router answers (ARP, ICMP,
//!    an unresolved neighbour) goes to the slow path through [`punt`].
//! 4. [`port`] again: each egress port's `tx_burst` sends its list, and the
//!    receiving port takes back what it lent.
//!
//! Off the fast path: [`router`] is the slow path's thread (ARP and
//! neighbour discovery, ICMP, the TAPs to the host), which publishes the
//! neighbour table of [`neigh`]; [`control`] owns the working copies of
//! every table, applies a changed configuration incrementally, publishes
//! a new snapshot with one swap, frees the replaced one once no worker
//! holds it, follows the [`kernel`]'s routes and serves the control
//! socket, statistics and Prometheus; [`cmd`] holds the subcommands.
//!
//! Each module uses only those listed before it (no import loops; the
//! `house` crate's test holds every crate to it):
//!
//! | module | uses |
//! |---|---|
//! | `clock`, `log`, `reason`, `neigh`, `kernel`, `corelock` | nothing of the crate |
//! | [`wire`] | `reason` |
//! | [`port`] | `wire`, `neigh` (the synthetic port's resolved gateways) |
//! | [`handoff`] | `port` (a frame's size, a burst's) |
//! | [`punt`] | `port` (a frame's size), `neigh`, `reason`, `handoff` |
//! | [`tables`] | `wire` (what a set needs of a packet), `vlan` |
//! | [`vlan`] | `wire` (a frame's tags) |
//! | [`pipeline`] | `tables`, `vlan`, `wire`, `port`, `punt`, `neigh`, `reason`, `clock` |
//! | [`filter`] | `wire`, `port` (a frame's size) |
//! | [`pcap`] | nothing of the crate |
//! | [`tap`] | `pipeline` (the explaining run), `filter`, `pcap` (the writer), `port`, `wire`, `reason`, `clock` |
//! | [`shared`] | `pipeline` (the published snapshot), `tap` (what is armed), `punt`, `neigh` |
//! | [`router`] | `shared`, `tables`, `punt`, `neigh`, `wire`, `kernel` (TAPs) |
//! | [`trace`] | `pipeline`, `router` (the slow path's answer), `tables`, `filter`, `punt`, `neigh`, `wire` |
//! | [`worker`] | `shared`, `pipeline`, `tap`, `port`, `punt`, `reason`, `log` |
//! | [`control`] | all of the above |
//! | [`cmd`] | `control` and all of the above |
#![deny(unsafe_code)]

pub mod clock;
pub mod cmd;
pub mod conntrack;
pub mod control;
pub mod corelock;
pub mod decision;
pub mod filter;
pub mod handoff;
pub mod kernel;
pub mod log;
pub mod neigh;
pub mod pcap;
pub mod pipeline;
pub mod port;
pub mod punt;
pub mod reason;
pub mod router;
pub mod shared;
pub mod swar;
pub mod tables;
pub mod tap;
pub mod trace;
pub mod vlan;
pub mod wire;
pub mod worker;
