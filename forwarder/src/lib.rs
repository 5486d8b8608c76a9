//! The forwarder: wire parsing and rewriting, ports, the per-burst
//! pipeline, pinned workers, the control thread and the command line.
//!
//! What is here so far: [`lookup`], the command that drives a set from
//! files (`forwarder lookup`), and [`wire`], the parse and rewrite of
//! frames.
#![forbid(unsafe_code)]

pub mod lookup;
pub mod pipeline;
pub mod port;
pub mod run;
pub mod synthetic;
pub mod tables;
pub mod wire;
pub mod worker;
