//! The Prometheus text exposition (format 0.0.4) of the workers'
//! counters and the reload status, and the minimal HTTP/1.0 server that
//! answers `GET /metrics` with it (`[control] prometheus`).

use super::stats::{Read, Source};
use crate::pipeline::flowcache::FlowCacheStats;
use crate::pipeline::Outcome;
use crate::port::PortStats;
use crate::reason::DropReason;
use routecache::CacheStats;
use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// Samples of one metric family: (labels, value).
type Samples = Vec<(String, u64)>;

/// `,{label}="{name}"` samples of `values` by `names`.
fn labelled(label: &str, names: &[&str], values: &[u64]) -> Samples {
    names
        .iter()
        .zip(values)
        .map(|(k, v)| (format!(",{label}=\"{k}\""), *v))
        .collect()
}

/// Writes one metric family: its header, then one sample per (labels,
/// value).
fn family(o: &mut String, name: &str, kind: &str, help: &str, samples: Samples) {
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
}

/// `,{outer}="{name}"` before each of `inner`'s labels: the samples of
/// one port or set.
fn within(outer: &str, name: &str, inner: Samples) -> Samples {
    let prefix = format!(",{outer}=\"{}\"", escape(name));
    inner
        .into_iter()
        .map(|(l, v)| (format!("{prefix}{l}"), v))
        .collect()
}

/// A worker's samples of one per-core family (labels after `core`).
type PerCore = fn(&Source, &Read) -> Samples;

/// The port counters' families, in [`PortStats::NAMES`] order: name and
/// help (labels `core` and `port`).
const PORT_FAMILIES: [(&str, &str); PortStats::N] = [
    (
        "port_rx_packets_total",
        "Frames received, per core and port.",
    ),
    ("port_rx_bytes_total", "Bytes received, per core and port."),
    ("port_tx_packets_total", "Frames sent, per core and port."),
    ("port_tx_bytes_total", "Bytes sent, per core and port."),
    (
        "port_tx_dropped_packets_total",
        "Frames the port could not send, per core and port.",
    ),
    (
        "port_tx_bad_packets_total",
        "Frames sent that failed the synthetic port's self-check (TTL, MACs).",
    ),
    (
        "port_rx_dropped_packets_total",
        "Frames the kernel dropped before the port read them (ring full), per core and port.",
    ),
    (
        "port_rx_ignored_packets_total",
        "Frames received not for this port (another station's, a group's, our own going out).",
    ),
    (
        "port_rx_truncated_packets_total",
        "Frames longer than a ring slot (receive offloads such as GRO), not passed on.",
    ),
];

const _: () = assert!(PORT_FAMILIES.len() == PortStats::NAMES.len());

/// The per-core families: name, help, samples.
const PER_CORE: [(&str, &str, PerCore); 6] = [
    (
        "rx_packets_total",
        "Frames received, per worker core.",
        |_, r| vec![(String::new(), r.counters.rx)],
    ),
    (
        "tx_packets_total",
        "Frames sent, per worker core.",
        |_, r| vec![(String::new(), r.counters.tx)],
    ),
    (
        "drops_total",
        "Frames dropped, per core and reason.",
        |_, r| {
            let names: Vec<&str> = DropReason::ALL.iter().map(|d| d.name()).collect();
            labelled("reason", &names, &r.counters.drops)
        },
    ),
    (
        "set_matches_total",
        "Rule set matches, per set and verdict.",
        |_, r| {
            let outcomes: Vec<&str> = Outcome::ALL.iter().map(|o| o.name()).collect();
            r.sets
                .iter()
                .flat_map(|(name, m)| within("set", name, labelled("verdict", &outcomes, m)))
                .collect()
        },
    ),
    (
        "route_cache_lookups_total",
        "Route stage lookups, per result.",
        |_, r| labelled("result", &CacheStats::NAMES, &r.counters.cache),
    ),
    (
        "flow_cache_lookups_total",
        "Flow cache lookups, per result.",
        |_, r| labelled("result", &FlowCacheStats::NAMES, &r.counters.flow_cache),
    ),
];

impl Source {
    /// The Prometheus text exposition (format 0.0.4).
    pub fn prometheus(&self) -> String {
        let st = &self.shared.status;
        let reads = self.read();
        let mut o = String::new();
        for (name, help, samples) in PER_CORE {
            let all = reads
                .iter()
                .flat_map(|r| {
                    samples(self, r)
                        .into_iter()
                        .map(move |(l, v)| (format!("core=\"{}\"{l}", r.core), v))
                })
                .collect();
            family(&mut o, name, "counter", help, all);
        }
        // A family a port counter, its unit in its name (one metric mixing
        // packets and bytes under a `counter` label could not be summed).
        for (k, (name, help)) in PORT_FAMILIES.iter().enumerate() {
            let all = reads
                .iter()
                .flat_map(|r| {
                    self.ports
                        .iter()
                        .zip(&r.counters.ports)
                        .map(move |(port, v)| {
                            (
                                format!("core=\"{}\",port=\"{}\"", r.core, escape(port)),
                                v[k],
                            )
                        })
                })
                .collect();
            family(&mut o, name, "counter", help, all);
        }
        // Per VRF (with VRFs), over every core: its ports' frames and
        // bytes (see `Source::vrfs`).
        let vrfs = self.vrfs(&self.port_totals(&reads));
        if !vrfs.is_empty() {
            for (k, (name, help)) in [
                ("vrf_rx_packets_total", "Frames received, per VRF."),
                ("vrf_rx_bytes_total", "Bytes received, per VRF."),
                ("vrf_tx_packets_total", "Frames sent, per VRF."),
                ("vrf_tx_bytes_total", "Bytes sent, per VRF."),
            ]
            .into_iter()
            .enumerate()
            {
                let all = vrfs
                    .iter()
                    .map(|(n, v)| (format!("vrf=\"{}\"", escape(n)), v[k]))
                    .collect();
                family(&mut o, name, "counter", help, all);
            }
        }
        if self.shared.snapshot.load().conntrack.enabled {
            // Connection tracking: entries by protocol (a gauge), events
            // (counters), per core.
            let names = crate::conntrack::CtStats::NAMES;
            let entries = reads
                .iter()
                .flat_map(|r| {
                    crate::conntrack::PROTOS
                        .iter()
                        .enumerate()
                        .map(move |(i, p)| {
                            (
                                format!("core=\"{}\",proto=\"{p}\"", r.core),
                                r.counters.conntrack[6 + i],
                            )
                        })
                })
                .collect();
            family(
                &mut o,
                "conntrack_entries",
                "gauge",
                "Tracked connections, per core and protocol.",
                entries,
            );
            let refused = reads
                .iter()
                .map(|r| (format!("core=\"{}\"", r.core), r.counters.conntrack[10]))
                .collect();
            family(
                &mut o,
                "conntrack_refused",
                "gauge",
                "Entries held by refused flows (dropped as new, their decision kept 2 s; not connections), per core.",
                refused,
            );
            let events = reads
                .iter()
                .flat_map(|r| {
                    (1..6).map(move |i| {
                        (
                            format!("core=\"{}\",event=\"{}\"", r.core, names[i]),
                            r.counters.conntrack[i],
                        )
                    })
                })
                .collect();
            family(
                &mut o,
                "conntrack_events_total",
                "counter",
                "Connection tracking: connections created, expired, dropped early; new ones with no room (insert_failed); invalid packets.",
                events,
            );
        }
        // The sets with element counters: their elements' counts summed
        // (what `forwarder element list` shows, asked of the workers as
        // it does). A reset, or an element deleted, lowers them: a
        // counter reset to Prometheus.
        let counted: Vec<String> = (self.shared.snapshot.load().sets.iter())
            .filter(|s| s.counter)
            .map(|s| s.name.clone())
            .collect();
        if !counted.is_empty() {
            let sums: Vec<(String, [u64; 2])> = counted
                .iter()
                // A set whose workers did not answer has no sample (a
                // zero would read as a counter reset).
                .filter_map(|n| {
                    let c = self.element_counters(n).ok()?;
                    let t = c.values().fold([0, 0], |a, v| [a[0] + v[0], a[1] + v[1]]);
                    Some((format!("set=\"{}\"", escape(n)), t))
                })
                .collect();
            for (k, name, help) in [
                (0, "set_element_packets_total", "Packets the set's counted elements matched, summed over its elements (`counter = true`)."),
                (1, "set_element_bytes_total", "Bytes of the packets the set's counted elements matched, summed over its elements."),
            ] {
                let all = sums.iter().map(|(l, t)| (l.clone(), t[k])).collect();
                family(&mut o, name, "counter", help, all);
            }
        }
        family(
            &mut o,
            "generation",
            "gauge",
            "Generation of the published table snapshot.",
            vec![(String::new(), st.generation.load(Relaxed))],
        );
        family(
            &mut o,
            "reloads_total",
            "counter",
            "Reloads, applied and refused.",
            vec![
                ("result=\"ok\"".into(), st.reloads.load(Relaxed)),
                ("result=\"failed\"".into(), st.failed.load(Relaxed)),
            ],
        );
        family(
            &mut o,
            "elements_expired_total",
            "counter",
            "Run-time set elements removed because their timeout passed.",
            vec![(String::new(), st.expired.load(Relaxed))],
        );
        let r = &self.shared.router;
        // A family an event of the slow path (ARP and ND messages in and
        // out, held and unresolved frames, ICMP sent and rate-limited,
        // punts, the host's frames): they count different things.
        for (k, v) in r.counters.values() {
            family(
                &mut o,
                &format!("router_{k}_total"),
                "counter",
                &format!("The router's slow path: {}.", k.replace('_', " ")),
                vec![(String::new(), v)],
            );
        }
        family(
            &mut o,
            "neighbours",
            "gauge",
            "Neighbours, per state.",
            self.neighbour_states()
                .into_iter()
                .map(|(s, n)| (format!("state=\"{s}\""), n))
                .collect(),
        );
        let k = self
            .shared
            .kernel
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if !k.is_null() {
            let n = |f: &str| k[f].as_u64().unwrap_or(0);
            family(
                &mut o,
                "kernel_routes",
                "gauge",
                "Routes of the mirrored kernel table: installed, shadowed by the configuration's, unusable.",
                ["installed", "shadowed", "unusable"]
                    .iter()
                    .map(|s| (format!("state=\"{s}\""), n(s)))
                    .collect(),
            );
            family(
                &mut o,
                "kernel_route_events_total",
                "counter",
                "Route and link notifications read from the kernel.",
                vec![(String::new(), n("events"))],
            );
        }
        let taps = self.shared.taps.json();
        let n = |a: &str, b: &str| taps[a][b].as_u64().unwrap_or(0);
        family(
            &mut o,
            "taps_armed",
            "gauge",
            "Captures and live traces armed now.",
            vec![
                ("kind=\"capture\"".into(), n("capture", "armed")),
                ("kind=\"trace\"".into(), n("trace", "armed")),
            ],
        );
        family(
            &mut o,
            "capture_frames_total",
            "counter",
            "Frames captured: written to a capture, or lost (over a worker's per-burst budget, or its ring full).",
            vec![
                ("result=\"written\"".into(), n("capture", "frames")),
                ("result=\"lost\"".into(), n("capture", "lost")),
            ],
        );
        family(
            &mut o,
            "trace_packets_total",
            "counter",
            "Packets traced live: described, or lost because a ring or the reader was too slow.",
            vec![
                ("result=\"traced\"".into(), n("trace", "packets")),
                ("result=\"lost\"".into(), n("trace", "lost")),
            ],
        );
        family(
            &mut o,
            "build_info",
            "gauge",
            "The forwarder's version, as a label (the value is always 1).",
            vec![(
                format!("version=\"{}\"", escape(env!("CARGO_PKG_VERSION"))),
                1,
            )],
        );
        let started = crate::clock::unix_ns_of(self.shared.started) / 1_000_000_000;
        family(
            &mut o,
            "start_time_seconds",
            "gauge",
            "When the forwarder started, seconds since the Unix epoch.",
            vec![(String::new(), started)],
        );
        family(
            &mut o,
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

/// Serves `GET /metrics` (and `/`) on `l` until the process ends.
pub(crate) fn serve(l: std::net::TcpListener, stats: &Source) {
    for conn in l.incoming() {
        let Ok(mut c) = conn else { continue };
        let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
        let mut buf = [0u8; 1024];
        let n = c.read(&mut buf).unwrap_or(0);
        let req = String::from_utf8_lossy(&buf[..n]);
        let path = req.split_whitespace().nth(1).unwrap_or("");
        let (status, body) = if req.starts_with("GET ") && (path == "/metrics" || path == "/") {
            ("200 OK", stats.prometheus())
        } else {
            ("404 Not Found", "GET /metrics\n".to_string())
        };
        let _ = write!(
            c,
            "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}
