//! Statistics for operators: the workers' published counters, the reload
//! status and the snapshot's generation, rendered as JSON (the control
//! socket's `stats`) and as Prometheus text (HTTP, when configured).
//!
//! Counters are read from what each worker last published (about every
//! millisecond under load); a rule set's counts are attributed by name
//! through the snapshot the worker published them for.

use crate::wire::Drop;
use crate::worker::{Published, Shared, PORT_FIELDS, PUBLISHED_PORTS, PUBLISHED_SETS};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
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

const CACHE: [&str; 4] = ["hint_hits", "hits", "misses", "stale"];
const FLOW_CACHE: [&str; 4] = ["hits", "misses", "stale", "bypassed"];
const VERDICTS: [&str; 3] = ["drop", "accept", "continue"];

/// One worker's counters, read once.
struct Read {
    core: usize,
    loaded: u64,
    rx: u64,
    tx: u64,
    bursts: u64,
    drops: [u64; Drop::ALL.len()],
    cache: [u64; 4],
    flow_cache: [u64; 4],
    ports: Vec<[u64; 8]>,
    /// (set name, [drop, accept, continue]).
    sets: Vec<(String, [u64; 3])>,
}

impl Source {
    fn read(&self) -> Vec<Read> {
        let tables = self.shared.tables.load();
        self.workers
            .iter()
            .map(|(core, p)| {
                let gen = p.generation.load(Relaxed);
                // Counts are attributed to names only when the worker
                // published them for the snapshot now in force (right
                // after a reload a worker may lag by a millisecond).
                let sets = if gen == tables.generation {
                    tables
                        .sets
                        .iter()
                        .take(PUBLISHED_SETS)
                        .zip(&p.matches)
                        .map(|(s, m)| {
                            (
                                s.name.clone(),
                                [m[0].load(Relaxed), m[1].load(Relaxed), m[2].load(Relaxed)],
                            )
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                Read {
                    core: *core,
                    loaded: p.loaded.load(Relaxed),
                    rx: p.rx.load(Relaxed),
                    tx: p.tx.load(Relaxed),
                    bursts: p.bursts.load(Relaxed),
                    drops: std::array::from_fn(|i| p.drops[i].load(Relaxed)),
                    cache: std::array::from_fn(|i| p.cache[i].load(Relaxed)),
                    flow_cache: std::array::from_fn(|i| p.flow_cache[i].load(Relaxed)),
                    ports: p
                        .ports
                        .iter()
                        .take(self.ports.len().min(PUBLISHED_PORTS))
                        .map(|a| std::array::from_fn(|i| a[i].load(Relaxed)))
                        .collect(),
                    sets,
                }
            })
            .collect()
    }

    /// Everything as one JSON object: `generation`, `last_reload`,
    /// `reloads`, `reloads_failed`, `last_reload_us`, `total`, `cores`,
    /// `ports`, `sets`, `route_cache`, `flow_cache`.
    pub fn json(&self) -> Value {
        let st = &self.shared.status;
        let reads = self.read();
        let drops = |d: &[u64; Drop::ALL.len()]| -> Map<String, Value> {
            Drop::ALL
                .iter()
                .map(|r| (r.name().to_string(), json!(d[r.index()])))
                .collect()
        };
        let port_obj = |v: &[u64; 8]| -> Map<String, Value> {
            PORT_FIELDS
                .iter()
                .zip(v)
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect()
        };
        let mut total = Read {
            core: 0,
            loaded: 0,
            rx: 0,
            tx: 0,
            bursts: 0,
            drops: [0; Drop::ALL.len()],
            cache: [0; 4],
            flow_cache: [0; 4],
            ports: vec![[0; 8]; self.ports.len().min(PUBLISHED_PORTS)],
            sets: Vec::new(),
        };
        let mut sets: Vec<(String, [u64; 3])> = Vec::new();
        let mut cores = Vec::new();
        for r in &reads {
            total.rx += r.rx;
            total.tx += r.tx;
            total.bursts += r.bursts;
            for (a, b) in total.drops.iter_mut().zip(&r.drops) {
                *a += b;
            }
            for (a, b) in total.cache.iter_mut().zip(&r.cache) {
                *a += b;
            }
            for (a, b) in total.flow_cache.iter_mut().zip(&r.flow_cache) {
                *a += b;
            }
            for (a, b) in total.ports.iter_mut().zip(&r.ports) {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
            }
            for (name, m) in &r.sets {
                match sets.iter_mut().find(|(n, _)| n == name) {
                    Some((_, t)) => (0..3).for_each(|k| t[k] += m[k]),
                    None => sets.push((name.clone(), *m)),
                }
            }
            let ports: Map<String, Value> = self
                .ports
                .iter()
                .zip(&r.ports)
                .map(|(n, v)| (n.clone(), Value::Object(port_obj(v))))
                .collect();
            cores.push(json!({
                "core": r.core,
                "rx": r.rx,
                "tx": r.tx,
                "bursts": r.bursts,
                "loaded_generation": r.loaded,
                "drops": drops(&r.drops),
                "ports": ports,
            }));
        }
        let ports: Map<String, Value> = self
            .ports
            .iter()
            .zip(&total.ports)
            .map(|(n, v)| (n.clone(), Value::Object(port_obj(v))))
            .collect();
        let sets: Map<String, Value> = sets
            .iter()
            .map(|(n, m)| {
                (
                    n.clone(),
                    json!({ VERDICTS[0]: m[0], VERDICTS[1]: m[1], VERDICTS[2]: m[2] }),
                )
            })
            .collect();
        let cache: Map<String, Value> = CACHE
            .iter()
            .zip(&total.cache)
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        json!({
            "generation": st.generation.load(Relaxed),
            "last_reload": st.last_reload(),
            "reloads": st.reloads.load(Relaxed),
            "reloads_failed": st.failed.load(Relaxed),
            "last_reload_us": st.last_reload_us.load(Relaxed),
            "total": { "rx": total.rx, "tx": total.tx, "bursts": total.bursts, "drops": drops(&total.drops) },
            "cores": cores,
            "ports": ports,
            "sets": sets,
            "route_cache": cache,
            "flow_cache": FLOW_CACHE
                .iter()
                .zip(&total.flow_cache)
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect::<Map<String, Value>>(),
        })
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub fn prometheus(&self) -> String {
        let st = &self.shared.status;
        let reads = self.read();
        let mut o = String::new();
        // One family: its header, then one sample per (labels, value).
        let mut family = |name: &str, kind: &str, help: &str, samples: Vec<(String, u64)>| {
            let _ = writeln!(
                o,
                "# HELP forwarder_{name} {help}\n# TYPE forwarder_{name} {kind}"
            );
            for (labels, v) in samples {
                let labels = if labels.is_empty() {
                    labels
                } else {
                    format!("{{{labels}}}")
                };
                let _ = writeln!(o, "forwarder_{name}{labels} {v}");
            }
        };
        let per_core = |f: &dyn Fn(&Read) -> Vec<(String, u64)>| -> Vec<(String, u64)> {
            reads
                .iter()
                .flat_map(|r| {
                    f(r).into_iter()
                        .map(move |(l, v)| (format!("core=\"{}\"{l}", r.core), v))
                })
                .collect()
        };
        family(
            "rx_packets_total",
            "counter",
            "Frames received, per worker core.",
            per_core(&|r| vec![(String::new(), r.rx)]),
        );
        family(
            "tx_packets_total",
            "counter",
            "Frames sent, per worker core.",
            per_core(&|r| vec![(String::new(), r.tx)]),
        );
        family(
            "drops_total",
            "counter",
            "Frames dropped, per core and reason.",
            per_core(&|r| {
                Drop::ALL
                    .iter()
                    .map(|d| (format!(",reason=\"{}\"", d.name()), r.drops[d.index()]))
                    .collect()
            }),
        );
        family(
            "port_packets_total",
            "counter",
            "Port counters, per core, port and counter.",
            per_core(&|r| {
                self.ports
                    .iter()
                    .zip(&r.ports)
                    .flat_map(|(name, v)| {
                        PORT_FIELDS.iter().zip(v).map(move |(k, x)| {
                            (format!(",port=\"{}\",counter=\"{k}\"", escape(name)), *x)
                        })
                    })
                    .collect()
            }),
        );
        family(
            "set_matches_total",
            "counter",
            "Rule set matches, per set and verdict.",
            per_core(&|r| {
                r.sets
                    .iter()
                    .flat_map(|(name, m)| {
                        VERDICTS.iter().zip(m).map(move |(k, v)| {
                            (format!(",set=\"{}\",verdict=\"{k}\"", escape(name)), *v)
                        })
                    })
                    .collect()
            }),
        );
        family(
            "route_cache_total",
            "counter",
            "Route stage lookups, per result.",
            per_core(&|r| {
                CACHE
                    .iter()
                    .zip(&r.cache)
                    .map(|(k, v)| (format!(",result=\"{k}\""), *v))
                    .collect()
            }),
        );
        family(
            "flow_cache_total",
            "counter",
            "Flow cache lookups, per result.",
            per_core(&|r| {
                FLOW_CACHE
                    .iter()
                    .zip(&r.flow_cache)
                    .map(|(k, v)| (format!(",result=\"{k}\""), *v))
                    .collect()
            }),
        );
        family(
            "generation",
            "gauge",
            "Generation of the published table snapshot.",
            vec![(String::new(), st.generation.load(Relaxed))],
        );
        family(
            "reloads_total",
            "counter",
            "Reloads, applied and refused.",
            vec![
                ("result=\"ok\"".into(), st.reloads.load(Relaxed)),
                ("result=\"failed\"".into(), st.failed.load(Relaxed)),
            ],
        );
        family(
            "last_reload_ok",
            "gauge",
            "1 if the last reload was applied (or none was tried).",
            vec![(String::new(), u64::from(st.last_reload() == "ok"))],
        );
        o
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
