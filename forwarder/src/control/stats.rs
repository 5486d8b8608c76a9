//! Statistics for operators: the workers' published counters, the reload
//! status and the snapshot's generation, as JSON (the control socket's
//! `stats`); [`super::prometheus`] renders the same reading as
//! Prometheus text.
//!
//! Counters are read from what each worker last published (about every
//! millisecond under load); a rule set's counts are attributed by name
//! through the snapshot the worker published them for.

use crate::pipeline::flowcache::FlowCacheStats;
use crate::pipeline::{DropCounts, Outcome, SetMatches};
use crate::port::PortStats;
use crate::reason::DropReason;
use crate::shared::Shared;
use crate::worker::{Published, Reading};
use routecache::CacheStats;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Where statistics come from.
pub struct Source {
    /// The tables and the reload status.
    pub shared: Arc<Shared>,
    /// Each worker's core and published counters.
    pub workers: Vec<(usize, Arc<Published>)>,
    /// The ports' names, in configuration order.
    pub ports: Vec<String>,
}

/// One worker's counters, read once.
pub(crate) struct Read {
    /// The core it is pinned to.
    pub core: usize,
    /// Everything but the set matches.
    pub counters: Reading,
    /// (set name, matches by outcome), for the snapshot in force.
    pub sets: Vec<(String, SetMatches)>,
}

/// `names[i]: values[i]`, as a JSON object.
pub(crate) fn object(names: &[&str], values: &[u64]) -> Map<String, Value> {
    names
        .iter()
        .zip(values)
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect()
}

fn drops(d: &DropCounts) -> Map<String, Value> {
    DropReason::ALL
        .iter()
        .map(|r| (r.name().to_string(), json!(d[r.index()])))
        .collect()
}

fn add<const N: usize>(to: &mut [u64; N], from: &[u64; N]) {
    for (a, b) in to.iter_mut().zip(from) {
        *a += b;
    }
}

impl Source {
    pub(crate) fn read(&self) -> Vec<Read> {
        let tables = self.shared.snapshot.load();
        self.workers
            .iter()
            .map(|(core, p)| {
                let counters = p.read();
                // Counts are attributed to names only when the worker
                // published them for the snapshot now in force (right
                // after a reload a worker may lag by a millisecond).
                let sets = if counters.generation == tables.generation {
                    tables
                        .sets
                        .iter()
                        .map(|s| s.name.clone())
                        .zip(p.matches(tables.sets.len()))
                        .collect()
                } else {
                    Vec::new()
                };
                Read {
                    core: *core,
                    counters,
                    sets,
                }
            })
            .collect()
    }

    /// The ports' counters of one worker, by port name.
    fn ports(&self, per_port: &[[u64; PortStats::N]]) -> Map<String, Value> {
        self.ports
            .iter()
            .zip(per_port)
            .map(|(n, v)| (n.clone(), Value::Object(object(&PortStats::NAMES, v))))
            .collect()
    }

    /// Every port's counters, summed over the workers' `reads`.
    pub(crate) fn port_totals(&self, reads: &[Read]) -> Vec<[u64; PortStats::N]> {
        let mut ports = vec![[0; PortStats::N]; self.ports.len()];
        for r in reads {
            for (a, b) in ports.iter_mut().zip(&r.counters.ports) {
                add(a, b);
            }
        }
        ports
    }

    /// Each VRF's frames and bytes received and sent (`rx`, `rx_bytes`,
    /// `tx`, `tx_bytes`), summed over its ports from `per_port` (all
    /// workers'): a trunk's tagged frames count in their
    /// sub-interface's VRF, the trunk keeping the rest (its own counters
    /// count every frame on the wire). Only with VRFs configured.
    pub(crate) fn vrfs(&self, per_port: &[[u64; PortStats::N]]) -> Vec<(String, [u64; 4])> {
        let t = self.shared.snapshot.load();
        if t.vrf_names.len() < 2 {
            return Vec::new();
        }
        let mut own: Vec<[u64; 4]> = per_port.iter().map(|v| [v[0], v[1], v[2], v[3]]).collect();
        for (i, p) in t.ports.iter().enumerate() {
            if let config::Driver::Vlan(v) = &p.driver {
                let sub = own.get(i).copied().unwrap_or_default();
                if let Some(up) = own.get_mut(v.parent) {
                    for (a, b) in up.iter_mut().zip(sub) {
                        *a = a.saturating_sub(b);
                    }
                }
            }
        }
        let mut by: Vec<(String, [u64; 4])> =
            t.vrf_names.iter().map(|n| (n.clone(), [0; 4])).collect();
        for (i, o) in own.iter().enumerate() {
            if let Some((_, v)) = by.get_mut(t.vrf_of(i as u16) as usize) {
                add(v, o);
            }
        }
        by
    }

    /// Everything as one JSON object: `version`, `time` and `uptime_s`
    /// (seconds; `time` since the Unix epoch), `generation`,
    /// `last_reload` (`ok` or the refusal), `last_reload_at` (when, null
    /// before the first), `reloads`, `reloads_failed`, `last_reload_us`
    /// (how long that reload took, refused or not), `elements_expired`,
    /// `total`, `cores`,
    /// `ports`, `sets`, `route_cache`, `flow_cache`, `conntrack` (null
    /// when off), `router`,
    /// `kernel_routes`, `capture` and `trace` (armed, started, frames or
    /// packets, lost), `vrfs` (with VRFs: see [`Source::vrfs`]).
    pub fn json(&self) -> Value {
        let st = &self.shared.status;
        let reads = self.read();
        let (mut rx, mut tx, mut bursts) = (0, 0, 0);
        let mut total_drops = [0; DropReason::COUNT];
        let mut cache = [0; 4];
        let mut flow_cache = [0; 4];
        let mut conntrack = [0; 11];
        let ports = self.port_totals(&reads);
        let mut sets: Vec<(String, SetMatches)> = Vec::new();
        let mut cores = Vec::new();
        for r in &reads {
            let c = &r.counters;
            rx += c.rx;
            tx += c.tx;
            bursts += c.bursts;
            add(&mut total_drops, &c.drops);
            add(&mut cache, &c.cache);
            add(&mut flow_cache, &c.flow_cache);
            add(&mut conntrack, &c.conntrack);
            for (name, m) in &r.sets {
                match sets.iter_mut().find(|(n, _)| n == name) {
                    Some((_, t)) => add(t, m),
                    None => sets.push((name.clone(), *m)),
                }
            }
            cores.push(json!({
                "core": r.core,
                "rx": c.rx,
                "tx": c.tx,
                "bursts": c.bursts,
                "loaded_generation": c.loaded,
                "drops": drops(&c.drops),
                "ports": self.ports(&c.ports),
            }));
        }
        let verdicts: Vec<&str> = Outcome::ALL.iter().map(|o| o.name()).collect();
        let sets: Map<String, Value> = sets
            .iter()
            .map(|(n, m)| (n.clone(), Value::Object(object(&verdicts, m))))
            .collect();
        let now = std::time::SystemTime::now();
        let at = st.last_reload_at_ms.load(Relaxed);
        let taps = self.shared.taps.json();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "time": (crate::clock::unix_ns_of(now) / 1_000_000) as f64 / 1e3,
            "uptime_s": now
                .duration_since(self.shared.started)
                .map_or(0.0, |d| d.as_millis() as f64 / 1e3),
            "generation": st.generation.load(Relaxed),
            "last_reload": st.last_reload(),
            "last_reload_at": if at == 0 { Value::Null } else { json!(at as f64 / 1e3) },
            "reloads": st.reloads.load(Relaxed),
            "reloads_failed": st.failed.load(Relaxed),
            "last_reload_us": st.last_reload_us.load(Relaxed),
            "elements_expired": st.expired.load(Relaxed),
            "total": { "rx": rx, "tx": tx, "bursts": bursts, "drops": drops(&total_drops) },
            "cores": cores,
            "ports": self.ports(&ports),
            "sets": sets,
            "route_cache": object(&CacheStats::NAMES, &cache),
            "flow_cache": object(&FlowCacheStats::NAMES, &flow_cache),
            "conntrack": if self.shared.snapshot.load().conntrack.enabled {
                Value::Object(object(&crate::conntrack::CtStats::NAMES, &conntrack))
            } else {
                Value::Null
            },
            "router": self.router(),
            "kernel_routes": self.shared.kernel.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            "capture": taps["capture"],
            "trace": taps["trace"],
            "vrfs": self
                .vrfs(&ports)
                .into_iter()
                .map(|(n, v)| (n, Value::Object(object(&PortStats::NAMES[..4], &v))))
                .collect::<Map<String, Value>>(),
        })
    }

    /// The router's counters and its neighbours by state.
    pub(crate) fn router(&self) -> Value {
        let mut m: Map<String, Value> = self
            .shared
            .router
            .counters
            .values()
            .into_iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let states: Map<String, Value> = self
            .neighbour_states()
            .into_iter()
            .map(|(s, n)| (s.to_string(), json!(n)))
            .collect();
        m.insert("neighbours".into(), Value::Object(states));
        Value::Object(m)
    }

    /// The neighbour table as the router thread last listed it.
    fn neighbour_list(&self) -> Vec<crate::neigh::NeighView> {
        self.shared
            .neighbours
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many neighbours are in each state.
    pub(crate) fn neighbour_states(&self) -> Vec<(&'static str, u64)> {
        let list = self.neighbour_list();
        crate::neigh::State::ALL
            .iter()
            .map(|s| {
                (
                    s.name(),
                    list.iter().filter(|n| n.state == *s).count() as u64,
                )
            })
            .collect()
    }

    /// The neighbour table, one object per neighbour: `port` (its name),
    /// `address`, `mac` (null until resolved), `state`, `age_ms`,
    /// `probes`.
    pub fn neighbours(&self) -> Value {
        let v: Vec<Value> = self
            .neighbour_list()
            .iter()
            .map(|n| {
                json!({
                    "port": self.ports.get(n.port as usize).cloned().unwrap_or_default(),
                    "address": n.addr.to_string(),
                    "mac": n.mac.map(|m| m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")),
                    "state": n.state.name(),
                    "age_ms": n.age_ms,
                    "probes": n.probes,
                })
            })
            .collect();
        json!({ "result": "ok", "neighbours": v })
    }
}
