//! Pinned workers: one per configured core, each with its own queue of
//! every port, its pipeline and its counters. The tables are loaded from
//! an `ArcSwap` once per burst, so every packet of a burst is judged by
//! one snapshot.

use crate::af_packet::AfPacketPort;
use crate::pipeline::{Counters, Mode, Pipeline};
use crate::port::{Burst, Port, PortStats};
use crate::synthetic::SyntheticPort;
use crate::tables::Tables;
use crate::wire::Drop;
use arc_swap::ArcSwap;
use config::Config;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What the workers share with the control side.
pub struct Shared {
    /// The tables every burst is judged by.
    pub tables: ArcSwap<Tables>,
    /// Set to stop the workers after their current burst.
    pub stop: AtomicBool,
    /// Reload outcomes and the published generation.
    pub status: crate::control::Status,
}

impl Shared {
    /// Shared state around one table snapshot (tests, benchmarks).
    pub fn new(tables: Tables) -> Shared {
        Shared {
            status: crate::control::Status::default(),
            tables: ArcSwap::from_pointee(tables),
            stop: AtomicBool::new(false),
        }
    }
}

/// Rule sets whose match counts a worker publishes (the first ones of
/// the snapshot; the final report has them all).
pub const PUBLISHED_SETS: usize = 32;
/// Ports whose counters a worker publishes.
pub const PUBLISHED_PORTS: usize = 16;

/// A worker's counters as others read them: stored by the worker every
/// [`PUBLISH_EVERY`] turns of its loop (plain stores, one writer), read by
/// the stats printer and the statistics server.
#[derive(Default)]
pub struct Published {
    /// Frames received.
    pub rx: AtomicU64,
    /// Frames sent.
    pub tx: AtomicU64,
    /// Drops by reason.
    pub drops: [AtomicU64; Drop::ALL.len()],
    /// Bursts processed.
    pub bursts: AtomicU64,
    /// Generation of the snapshot the worker last judged a burst by.
    pub generation: AtomicU64,
    /// Generation of the snapshot the worker loaded last (every turn, with
    /// or without traffic): once it is the published one, no burst is
    /// judged by an older snapshot any more.
    pub loaded: AtomicU64,
    /// Matches per rule set of that snapshot (its order), by verdict:
    /// drop, accept, continue.
    pub matches: [[AtomicU64; 3]; PUBLISHED_SETS],
    /// Route cache: hint hits, hits, misses, stale entries.
    pub cache: [AtomicU64; 4],
    /// Flow cache: hits, misses, stale entries, bypassed packets.
    pub flow_cache: [AtomicU64; 4],
    /// Per port (configuration order): the [`PortStats`] fields rx, tx,
    /// tx_bytes, tx_dropped, tx_bad, rx_dropped, rx_ignored, rx_truncated.
    pub ports: [[AtomicU64; 8]; PUBLISHED_PORTS],
}

/// The [`PortStats`] fields in [`Published::ports`] order.
pub fn port_fields(s: &PortStats) -> [u64; 8] {
    [
        s.rx,
        s.tx,
        s.tx_bytes,
        s.tx_dropped,
        s.tx_bad,
        s.rx_dropped,
        s.rx_ignored,
        s.rx_truncated,
    ]
}

/// Names of the [`port_fields`].
pub const PORT_FIELDS: [&str; 8] = [
    "rx",
    "tx",
    "tx_bytes",
    "tx_dropped",
    "tx_bad",
    "rx_dropped",
    "rx_ignored",
    "rx_truncated",
];

impl Published {
    fn store(&self, p: &Pipeline, ports: &[Box<dyn Port>]) {
        let c = &p.counters;
        self.rx.store(c.rx, Relaxed);
        self.tx.store(c.tx, Relaxed);
        self.bursts.store(c.bursts, Relaxed);
        for (a, &v) in self.drops.iter().zip(&c.drops) {
            a.store(v, Relaxed);
        }
        for (a, v) in self.matches.iter().zip(&c.matches) {
            for k in 0..3 {
                a[k].store(v[k], Relaxed);
            }
        }
        self.generation.store(p.generation(), Relaxed);
        let cs = p.cache_stats();
        for (a, v) in self
            .cache
            .iter()
            .zip([cs.hint_hits, cs.hits, cs.misses, cs.stale])
        {
            a.store(v, Relaxed);
        }
        let fs = p.flow_cache_stats();
        for (a, v) in self
            .flow_cache
            .iter()
            .zip([fs.hits, fs.misses, fs.stale, fs.bypassed])
        {
            a.store(v, Relaxed);
        }
        for (a, port) in self.ports.iter().zip(ports) {
            for (x, v) in a.iter().zip(port_fields(&port.stats())) {
                x.store(v, Relaxed);
            }
        }
    }
}

/// A worker's final account.
pub struct Report {
    /// The core it ran on.
    pub core: usize,
    /// Its pipeline counters.
    pub counters: Counters,
    /// Its port queues' counters.
    pub ports: Vec<(String, PortStats)>,
    /// Its flow cache's counters.
    pub flow_cache: crate::flowcache::FlowCacheStats,
}

/// Opens this worker's queue of every port.
pub fn open_ports(cfg: &Config, queue: usize) -> Result<Vec<Box<dyn Port>>, String> {
    cfg.ports
        .iter()
        .enumerate()
        .map(|(i, p)| match p.driver.as_str() {
            "synthetic" => SyntheticPort::new(cfg, i, queue).map(|p| Box::new(p) as Box<dyn Port>),
            "af_packet" => AfPacketPort::open(cfg, i, queue).map(|p| Box::new(p) as Box<dyn Port>),
            "af_xdp" => {
                crate::af_xdp::AfXdpPort::open(cfg, i, queue).map(|p| Box::new(p) as Box<dyn Port>)
            }
            #[cfg(feature = "dpdk")]
            "dpdk" => {
                crate::dpdk::DpdkPort::open(cfg, i, queue).map(|p| Box::new(p) as Box<dyn Port>)
            }
            #[cfg(not(feature = "dpdk"))]
            "dpdk" => Err(format!(
                "{}: port `{}`: built without DPDK support (build with `--features dpdk`)",
                p.at, p.name
            )),
            other => Err(format!(
                "{}: port `{}`: the `{other}` driver is not available in this build",
                p.at, p.name
            )),
        })
        .collect()
}

/// A running worker: its published counters and its thread.
pub type Running = (Arc<Published>, JoinHandle<Report>);

/// Turns of a worker's loop (bursts or empty polls) between two
/// publications of its counters: about every millisecond under load,
/// more often when idle.
pub const PUBLISH_EVERY: u64 = 1024;

/// Starts one pinned worker per configured core on the configured ports.
pub fn spawn(cfg: &Config, shared: Arc<Shared>, mode: Mode) -> Result<Vec<Running>, String> {
    spawn_with(cfg, shared, mode, |q| open_ports(cfg, q))
}

/// Starts one pinned worker per configured core, worker `q` on the port
/// queues `open(q)` returns (tests bring their own ports).
pub fn spawn_with(
    cfg: &Config,
    shared: Arc<Shared>,
    mode: Mode,
    mut open: impl FnMut(usize) -> Result<Vec<Box<dyn Port>>, String>,
) -> Result<Vec<Running>, String> {
    let mut out: Vec<Running> = Vec::new();
    let burst_size = cfg.forwarder.burst;
    for (q, &core) in cfg.forwarder.cores.iter().enumerate() {
        let mut ports = match open(q) {
            Ok(p) => p,
            Err(e) => {
                // The workers already started stop and close their
                // ports (DPDK's EAL can then be released).
                shared.stop.store(true, Relaxed);
                for (_, h) in out {
                    let _ = h.join();
                }
                return Err(e);
            }
        };
        let shared = shared.clone();
        let published = Arc::new(Published::default());
        let pubd = published.clone();
        let h = std::thread::Builder::new()
            .name(format!("worker-{core}"))
            .spawn(move || {
                // Pinning can fail (a core not in this process's set): the
                // worker still runs, unpinned.
                let _ = core_affinity::set_for_current(core_affinity::CoreId { id: core });
                let first = shared.tables.load_full();
                let mut pipe = Pipeline::with_mode(&first, ports.len(), mode);
                drop(first);
                let mut burst = Burst::new();
                let mut turns = 0u64;
                while !shared.stop.load(Relaxed) {
                    // One snapshot per turn: every burst is judged wholly
                    // by one generation; the guard is released before the
                    // next load, so a replaced snapshot is freed as soon
                    // as the worker's current turn ends.
                    let tables = shared.tables.load();
                    for rx in 0..ports.len() {
                        burst.clear();
                        if ports[rx].rx_burst(&mut burst, burst_size) == 0 {
                            continue;
                        }
                        pipe.process(&tables, &mut burst);
                        for (tx, which) in pipe.out.iter().enumerate() {
                            if !which.is_empty() {
                                ports[tx].tx_burst(&mut burst, which);
                            }
                        }
                        ports[rx].release(&mut burst);
                    }
                    turns += 1;
                    if turns.is_multiple_of(PUBLISH_EVERY) {
                        pubd.loaded.store(tables.generation, Relaxed);
                        pubd.store(&pipe, &ports);
                    }
                    drop(tables);
                }
                pubd.store(&pipe, &ports);
                Report {
                    core,
                    flow_cache: pipe.flow_cache_stats(),
                    counters: pipe.counters,
                    ports: ports
                        .iter()
                        .map(|p| (p.name().to_string(), p.stats()))
                        .collect(),
                }
            })
            .map_err(|e| format!("cannot start a worker on core {core}: {e}"))?;
        out.push((published, h));
    }
    Ok(out)
}
