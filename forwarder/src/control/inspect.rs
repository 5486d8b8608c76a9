//! What the control socket answers about the tables in force, off the
//! fast path: a packet's trace against them.

use super::reload::Control;
use crate::neigh::{NeighTable, NeighView};
use crate::trace::{self, Context, Packet};
use serde_json::{json, Value};
use std::sync::Arc;

impl Control {
    /// The neighbours as the workers and `forwarder neighbours` see them;
    /// where no slow path has published (no router ports, or a
    /// configuration traced offline), the configured ones it would start
    /// with.
    pub fn neighbours(&self) -> (Arc<NeighTable>, Vec<NeighView>) {
        let views = self
            .shared
            .neighbours
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let neigh = self.shared.router.neigh.load_full();
        if neigh.map.is_empty() && views.is_empty() {
            return trace::configured_neighbours(&self.shared.snapshot.load());
        }
        (neigh, views)
    }

    /// Explains `packet` against the tables the workers use now, with
    /// the neighbours `neighbours` (see [`crate::trace`]).
    pub fn trace(&self, packet: &Packet, neighbours: &(Arc<NeighTable>, Vec<NeighView>)) -> Value {
        let snap = self.shared.snapshot.load_full();
        let cx = Context {
            origins: self,
            neigh: neighbours.0.clone(),
            neighbours: &neighbours.1,
            now_ms: crate::clock::now_ms(),
        };
        trace::explain(&snap, packet, &cx)
    }
}

impl Control {
    /// Answers a trace request (`{"request": "trace", "packet": WORDS |
    /// "hex": HEX, "port": NAME, "candidate": PATH}`): the packet's trace
    /// against the tables in force and, with `candidate`, against what
    /// that file would give, and what changes for it.
    pub fn trace_request(&self, v: &Value) -> Value {
        let packet = match trace::packet_of(v, &self.cfg.ports) {
            Ok(p) => p,
            Err(e) => return json!({ "result": "error", "error": e }),
        };
        // The candidate meets the same neighbours: the network is the
        // same.
        let neighbours = self.neighbours();
        let running = self.trace(&packet, &neighbours);
        let Some(path) = v["candidate"].as_str() else {
            return json!({ "result": "ok", "trace": running });
        };
        match self.candidate(std::path::Path::new(path)) {
            Ok((c, refused)) => {
                let cand = c.trace(&packet, &neighbours);
                json!({
                    "result": "ok",
                    "trace": {
                        "running": running,
                        "candidate": cand,
                        "candidate_file": path,
                        "changed": trace::compare(&running, &cand),
                        "reload_refused": refused,
                    },
                })
            }
            Err(e) => json!({ "result": "error", "error": format!("the candidate: {e}") }),
        }
    }
}
