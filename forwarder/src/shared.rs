//! What the control side, the workers and the slow path share: the
//! published snapshot (one `ArcSwap` every worker loads once per turn),
//! the stop flag, the reloads' outcome, the slow path's queues, and the
//! views the control socket serves.

use crate::neigh::NeighView;
use crate::pipeline::Snapshot;
use crate::punt::RouterShared;
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};

/// Where the control side publishes snapshots and the workers take them:
/// the one thing both sides share.
pub struct Shared {
    /// The snapshot every burst is judged by, with the workers' state
    /// prepared for it.
    pub snapshot: ArcSwap<Snapshot>,
    /// Set to stop the workers after their current burst.
    pub stop: AtomicBool,
    /// Reload outcomes and the published generation.
    pub status: Status,
    /// The router's queues, pool and neighbour table.
    pub router: Arc<RouterShared>,
    /// The neighbour table as `forwarder neighbours` lists it (refreshed
    /// by the slow path every 10 ms).
    pub neighbours: Mutex<Vec<NeighView>>,
    /// The kernel mirror's counts, as the control thread last left them
    /// (null without one).
    pub kernel: Mutex<serde_json::Value>,
    /// The captures and live traces armed.
    pub taps: crate::tap::Taps,
    /// When this process started (for `uptime_s`).
    pub started: std::time::SystemTime,
}

impl Shared {
    /// Shared state around `snapshot`, with the slow path's queues for
    /// `workers` workers and `ports` ports.
    pub fn new(snapshot: Snapshot, workers: usize, ports: usize) -> Shared {
        Shared {
            snapshot: ArcSwap::from_pointee(snapshot),
            stop: AtomicBool::new(false),
            status: Status::default(),
            router: Arc::new(RouterShared::new(workers, ports)),
            neighbours: Mutex::new(Vec::new()),
            kernel: Mutex::new(serde_json::Value::Null),
            taps: crate::tap::Taps::default(),
            started: std::time::SystemTime::now(),
        }
    }
}

/// The outcome of reloads, as statistics report it.
#[derive(Default)]
pub struct Status {
    /// Generation of the published snapshot.
    pub generation: AtomicU64,
    /// Reloads applied.
    pub reloads: AtomicU64,
    /// Reloads refused.
    pub failed: AtomicU64,
    /// Microseconds the last reload took (parse to swap, or to its
    /// refusal): the one `last_reload` describes.
    pub last_reload_us: AtomicU64,
    /// When the last reload was tried, milliseconds since the Unix epoch
    /// (0: none yet).
    pub last_reload_at_ms: AtomicU64,
    /// Run-time elements removed because their timeout passed.
    pub expired: AtomicU64,
    last: Mutex<String>,
}

impl Status {
    /// `ok`, or the last reload's error with its `file:line:col` (until a
    /// reload succeeds).
    pub fn last_reload(&self) -> String {
        let s = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if s.is_empty() {
            "ok".to_string()
        } else {
            s.clone()
        }
    }

    pub(crate) fn set_last(&self, v: &str) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = v.to_string();
    }
}
