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
}

/// A worker's counters as others read them: stored by the worker every
/// few bursts (plain stores, one writer), read by the stats printer.
#[derive(Default)]
pub struct Published {
    /// Frames received.
    pub rx: AtomicU64,
    /// Frames sent.
    pub tx: AtomicU64,
    /// Drops by reason.
    pub drops: [AtomicU64; Drop::ALL.len()],
}

impl Published {
    fn store(&self, c: &Counters) {
        self.rx.store(c.rx, Relaxed);
        self.tx.store(c.tx, Relaxed);
        for (a, &v) in self.drops.iter().zip(&c.drops) {
            a.store(v, Relaxed);
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
}

/// Opens this worker's queue of every port.
pub fn open_ports(cfg: &Config, queue: usize) -> Result<Vec<Box<dyn Port>>, String> {
    cfg.ports
        .iter()
        .enumerate()
        .map(|(i, p)| match p.driver.as_str() {
            "synthetic" => SyntheticPort::new(cfg, i, queue).map(|p| Box::new(p) as Box<dyn Port>),
            "af_packet" => AfPacketPort::open(cfg, i, queue).map(|p| Box::new(p) as Box<dyn Port>),
            other => Err(format!(
                "{}: port `{}`: the `{other}` driver is not available in this build",
                p.at, p.name
            )),
        })
        .collect()
}

/// A running worker: its published counters and its thread.
pub type Running = (Arc<Published>, JoinHandle<Report>);

/// Bursts between two publications of a worker's counters.
const PUBLISH_EVERY: u64 = 64;

/// Starts one pinned worker per configured core.
pub fn spawn(cfg: &Config, shared: Arc<Shared>, mode: Mode) -> Result<Vec<Running>, String> {
    let mut out = Vec::new();
    let burst_size = cfg.forwarder.burst;
    for (q, &core) in cfg.forwarder.cores.iter().enumerate() {
        let mut ports = open_ports(cfg, q)?;
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
                while !shared.stop.load(Relaxed) {
                    let tables = shared.tables.load();
                    for rx in 0..ports.len() {
                        burst.clear();
                        if ports[rx].rx_burst(&mut burst, burst_size) == 0 {
                            continue;
                        }
                        pipe.process(&tables, &mut burst);
                        for (tx, which) in pipe.out.iter().enumerate() {
                            if !which.is_empty() {
                                ports[tx].tx_burst(&burst, which);
                            }
                        }
                    }
                    if pipe.counters.bursts.is_multiple_of(PUBLISH_EVERY) {
                        pubd.store(&pipe.counters);
                    }
                }
                pubd.store(&pipe.counters);
                Report {
                    core,
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
