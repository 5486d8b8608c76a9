//! The forwarder: wire parsing and rewriting, ports, the per-burst
//! pipeline, pinned workers, the control thread and the command line.
//!
//! - [`wire`]: zero-copy parse and rewrite of frames;
//! - [`port`]: the burst and the port interface; [`synthetic`]: the
//!   built-in traffic generator; [`af_packet`]: Linux interfaces through
//!   packet sockets with mmap rings (the one module allowed `unsafe`);
//! - [`tables`]: the snapshot workers read (sets, FIB), built from a
//!   checked configuration;
//! - [`pipeline`]: one burst through parse, classify, route, rewrite;
//! - [`worker`]: pinned workers and their counters; [`run`]: `forwarder
//!   run`; [`lookup`]: `forwarder lookup`.
#![deny(unsafe_code)]

pub mod af_packet;
pub mod af_xdp;
pub mod client;
pub mod control;
#[cfg(feature = "dpdk")]
pub mod dpdk;
pub mod flowcache;
pub mod lookup;
pub mod pipeline;
pub mod port;
pub mod run;
pub mod serve;
pub mod stats;
pub mod synthetic;
pub mod tables;
pub mod wire;
pub mod worker;
