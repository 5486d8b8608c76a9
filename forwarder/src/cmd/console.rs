//! What `forwarder run` and `forwarder stats --watch` print for a person:
//! the rates once a second and the summary at the end. Both read the
//! same [`Tick`], `run` from its workers directly and `stats --watch`
//! from a running forwarder's `stats` JSON, so the two print the same
//! lines.

use crate::pipeline::{DropCounts, Outcome};
use crate::port::PortStats;
use crate::reason::DropReason;
use crate::worker::Report;
use serde_json::Value;

/// One reading of what the console prints as rates.
#[derive(Clone, Debug, Default)]
pub struct Tick {
    /// Per worker: the core it is pinned to, frames received and sent,
    /// drops by reason.
    pub cores: Vec<(usize, u64, u64, DropCounts)>,
    /// Per port (configuration order), summed over the workers: its name,
    /// frames and bytes received, frames and bytes sent.
    pub ports: Vec<(String, [u64; 4])>,
}

/// The port counters the console shows, by their [`PortStats::NAMES`].
const SHOWN: [&str; 4] = ["rx", "rx_bytes", "tx", "tx_bytes"];

/// A port's [`SHOWN`] counters from all of them, by [`PortStats::NAMES`].
pub fn port_rates_of(v: &[u64; PortStats::N]) -> [u64; 4] {
    SHOWN.map(|n| {
        PortStats::NAMES
            .iter()
            .position(|k| *k == n)
            .map_or(0, |i| v[i])
    })
}

impl Tick {
    /// The reading of a `stats` answer (see `Source::json`).
    pub fn of_stats(v: &Value) -> Tick {
        let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
        let cores = v["cores"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        let drops = DropReason::ALL.map(|d| n(&c["drops"], d.name()));
                        (n(c, "core") as usize, n(c, "rx"), n(c, "tx"), drops)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let ports = v["ports"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(name, p)| (name.clone(), SHOWN.map(|k| n(p, k))))
                    .collect()
            })
            .unwrap_or_default();
        Tick { cores, ports }
    }
}

/// The rate lines between two readings `dt` seconds apart: a line per
/// worker (only if there are several: one worker's line would repeat the
/// total), the total, then a line per port.
pub fn rate_lines(before: &Tick, now: &Tick, dt: f64) -> String {
    let per_s = |a: u64, b: u64| a.saturating_sub(b) as f64 / dt / 1e6;
    let mut s = String::new();
    let mut total = (0.0, 0.0, [0.0; DropReason::COUNT]);
    let cores = now.cores.len();
    for (i, (core, rx, tx, drops)) in now.cores.iter().enumerate() {
        let (prx, ptx, pdrops) = before
            .cores
            .get(i)
            .map_or((0, 0, [0; DropReason::COUNT]), |c| (c.1, c.2, c.3));
        let (rx, tx) = (per_s(*rx, prx), per_s(*tx, ptx));
        let drops: [f64; DropReason::COUNT] = std::array::from_fn(|k| per_s(drops[k], pdrops[k]));
        total.0 += rx;
        total.1 += tx;
        for (t, d) in total.2.iter_mut().zip(drops) {
            *t += d;
        }
        if cores > 1 {
            // Labelled by the core the worker is pinned to, as in the
            // summary (not by its index: `cores = [1]` is core 1).
            s.push_str(&format!("  core {core}: {}\n", rates(rx, tx, &drops)));
        }
    }
    let (rx, tx, drops) = total;
    let only = match now.cores.as_slice() {
        [(core, ..)] => format!(" (core {core})"),
        _ => String::new(),
    };
    s.push_str(&format!("  total{only}: {}\n", rates(rx, tx, &drops)));
    for (i, (name, c)) in now.ports.iter().enumerate() {
        let p = before.ports.get(i).map_or([0; 4], |p| p.1);
        let r: [f64; 4] = std::array::from_fn(|k| per_s(c[k], p[k]));
        // Bits of the frames as the ports hand them over (Ethernet header
        // to the payload's end; no preamble, gap or FCS).
        s.push_str(&format!(
            "  port {name}: rx {:7.2} Mpps {:6.2} Gbit/s  tx {:7.2} Mpps {:6.2} Gbit/s\n",
            r[0],
            r[1] * 8e-3,
            r[2],
            r[3] * 8e-3
        ));
    }
    s
}

/// `rx .. Mpps  tx .. Mpps  drops REASON RATE Mpps, ...` (reasons with
/// none left out).
fn rates(rx: f64, tx: f64, drops: &[f64; DropReason::COUNT]) -> String {
    let said: Vec<String> = DropReason::ALL
        .iter()
        .filter(|d| drops[d.index()] > 0.0)
        .map(|d| format!("{} {:.2} Mpps", d.name(), drops[d.index()]))
        .collect();
    let drops = if said.is_empty() {
        "none".to_string()
    } else {
        said.join(", ")
    };
    format!("rx {rx:7.2} Mpps  tx {tx:7.2} Mpps  drops {drops}")
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut s = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            s.push(',');
        }
        s.push(c);
    }
    s
}

/// A rule set's matches as a person reads them: `blocklist: 41,191,447
/// dropped`, outcomes without matches left out.
fn set_line(name: &str, m: &[u64; 3]) -> String {
    let said: Vec<String> = Outcome::ALL
        .iter()
        .filter(|o| m[o.index()] > 0)
        .map(|o| {
            let verb = match o {
                Outcome::Drop => "dropped",
                Outcome::Accept => "accepted",
                Outcome::Continue => "matched, went on",
            };
            format!("{} {verb}", thousands(m[o.index()]))
        })
        .collect();
    if said.is_empty() {
        format!("{name}: no matches")
    } else {
        format!("{name}: {}", said.join(", "))
    }
}

/// The end-of-run account: per worker, its counts, its rule sets'
/// matches and its port queues; then the totals. Every count with
/// thousands separators (scripts strip the commas).
pub fn summary(cfg: &config::Config, reports: &[Report], elapsed: f64) -> String {
    // Only the synthetic port checks what it is sent (TTL, MACs): its
    // finding is said, found wrong or not; other ports check nothing.
    let checked = |port: &str| {
        cfg.ports
            .iter()
            .any(|p| p.name == port && matches!(p.driver, config::Driver::Synthetic(_)))
    };
    let t = thousands;
    let mut s = String::from("summary:\n");
    let (mut rx, mut tx) = (0u64, 0u64);
    let mut drops = [0u64; DropReason::COUNT];
    for r in reports {
        rx += r.counters.rx;
        tx += r.counters.tx;
        for (d, v) in drops.iter_mut().zip(r.counters.drops) {
            *d += v;
        }
        let bad: u64 = r.ports.iter().map(|(_, p)| p.tx_bad).sum();
        let fc = r.flow_cache;
        s.push_str(&format!(
            "  core {}: rx {} tx {} (tx {:.2} Mpps), flow cache hits {:.1} %\n",
            r.core,
            t(r.counters.rx),
            t(r.counters.tx),
            r.counters.tx as f64 / elapsed / 1e6,
            100.0 * fc.hits as f64 / (fc.hits + fc.misses).max(1) as f64
        ));
        if bad > 0 || r.ports.iter().any(|(name, _)| checked(name)) {
            s.push_str(&format!(
                "    sent frames the synthetic port's self-check found wrong (TTL or MACs): {}\n",
                t(bad)
            ));
        }
        for (name, m) in r.counters.set_names.iter().zip(&r.counters.matches) {
            s.push_str(&format!("    set {}\n", set_line(name, m)));
        }
        for (name, p) in &r.ports {
            s.push_str(&format!(
                "    port {name}: rx {} tx {} tx_dropped {} rx_dropped {} rx_ignored {} rx_truncated {}, bytes rx {} tx {}\n",
                t(p.rx),
                t(p.tx),
                t(p.tx_dropped),
                t(p.rx_dropped),
                t(p.rx_ignored),
                t(p.rx_truncated),
                t(p.rx_bytes),
                t(p.tx_bytes)
            ));
        }
    }
    s.push_str(&format!(
        "  total: rx {} tx {} in {elapsed:.1} s: {:.2} Mpps forwarded; drops:",
        t(rx),
        t(tx),
        tx as f64 / elapsed / 1e6
    ));
    let mut any = false;
    for d in DropReason::ALL.iter().filter(|d| drops[d.index()] > 0) {
        s.push_str(&format!(" {} {}", d.name(), t(drops[d.index()])));
        any = true;
    }
    if !any {
        s.push_str(" none");
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_a_person_reads_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(41191447), "41,191,447");
        assert_eq!(
            set_line("blocklist", &[41191447, 0, 0]),
            "blocklist: 41,191,447 dropped"
        );
        assert_eq!(
            set_line("v6", &[0, 12, 3]),
            "v6: 12 accepted, 3 matched, went on"
        );
        assert_eq!(set_line("idle", &[0, 0, 0]), "idle: no matches");
    }

    fn tick(cores: &[(usize, u64)], ports: &[(&str, u64)]) -> Tick {
        let mut drops = [0; DropReason::COUNT];
        drops[DropReason::Rule.index()] = 1_000_000;
        Tick {
            cores: cores.iter().map(|&(c, n)| (c, n, n / 2, drops)).collect(),
            ports: ports
                .iter()
                .map(|&(p, n)| (p.to_string(), [n, n * 64, n / 2, n * 32]))
                .collect(),
        }
    }

    #[test]
    fn one_worker_is_one_line_several_a_line_each_and_the_total() {
        let zero = Tick::default();
        let one = rate_lines(&zero, &tick(&[(3, 2_000_000)], &[("p0", 2_000_000)]), 1.0);
        assert_eq!(
            one,
            "  total (core 3): rx    2.00 Mpps  tx    1.00 Mpps  drops rule 1.00 Mpps\n  \
             port p0: rx    2.00 Mpps   1.02 Gbit/s  tx    1.00 Mpps   0.51 Gbit/s\n"
        );
        let before = tick(&[(0, 1_000_000), (1, 1_000_000)], &[]);
        let two = rate_lines(&before, &tick(&[(0, 3_000_000), (1, 2_000_000)], &[]), 2.0);
        let lines: Vec<&str> = two.lines().collect();
        assert_eq!(lines.len(), 3, "{two}");
        assert!(lines[0].starts_with("  core 0: rx    1.00 Mpps  tx    0.50 Mpps"));
        assert!(lines[1].starts_with("  core 1: rx    0.50 Mpps"));
        // Drops did not change between the two readings: none.
        assert_eq!(
            lines[2],
            "  total: rx    1.50 Mpps  tx    0.75 Mpps  drops none"
        );
    }

    #[test]
    fn a_stats_answer_reads_as_the_workers_do() {
        let v = serde_json::json!({
            "cores": [{ "core": 2, "rx": 10, "tx": 8, "drops": { "rule": 2 } }],
            "ports": { "p0": { "rx": 10, "rx_bytes": 640, "tx": 8, "tx_bytes": 512 } },
        });
        let t = Tick::of_stats(&v);
        assert_eq!(t.cores.len(), 1);
        assert_eq!((t.cores[0].0, t.cores[0].1, t.cores[0].2), (2, 10, 8));
        assert_eq!(t.cores[0].3[DropReason::Rule.index()], 2);
        assert_eq!(t.ports, vec![("p0".to_string(), [10, 640, 8, 512])]);
    }
}
