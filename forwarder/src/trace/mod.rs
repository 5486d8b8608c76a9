//! `forwarder trace`: why a packet goes where it goes, stage by stage,
//! in the order the pipeline runs: the port's receive filter, the parse,
//! the flow cache, each rule set (the element that matched, where it was
//! written, its verdict), the route (its prefix and where it came from),
//! the ECMP member, the next hop and its neighbour, the rewrite, the
//! egress port, and the fate (forwarded, dropped and why, or punted and
//! what the slow path answers).
//!
//! The stages are the pipeline's own, run in its explaining mode
//! ([`Pipeline::explain`]) over the same snapshot the workers use; this
//! module only puts names, origins and words on what the record says
//! ([`describe`]). A packet the operator gives goes through a private
//! pipeline (its own caches, its own slow path queues: the fast path is
//! not touched); a live trace's records come from the workers'.
//!
//! The answer is one JSON object (`--json`); the text for people is
//! printed from it ([`render`]), so the two never say different things.

pub(crate) mod describe;
mod text;

pub use describe::describe;
pub use text::render;

use crate::neigh::{NeighTable, NeighView};
use crate::pipeline::{Pipeline, Snapshot, Stages};
use crate::port::Burst;
use crate::punt::RouterShared;
use matcher::Element;
use serde_json::{json, Value};
use std::sync::Arc;

/// Where the tables' entries come from: the control side knows (the
/// configuration's files and lines, the kernel mirror, the run-time
/// changes); the trace asks.
pub trait Origins {
    /// Where the route `prefix/len` of family `v6` in VRF `vrf` comes
    /// from, as JSON
    /// (`from`: `config`, `route_file`, `kernel`, `connected`, `local`,
    /// `router`; with `file` and `line`, or the kernel's `table`,
    /// `protocol` and `metric`, or the `port`).
    fn route(&self, vrf: u8, v6: bool, prefix: u128, len: u32) -> Value;
    /// Where element `e` of the set at index `set` comes from (`from`:
    /// `config` or `set_file` with `file` and `line`, or `run_time`).
    fn element(&self, set: usize, e: &Element) -> Value;
    /// The configured name of FIB hop `hop`, if it has one.
    fn hop_name(&self, hop: u32) -> Option<String>;
    /// The configured name of ECMP group `group` (its index), if it has
    /// one.
    fn group_name(&self, group: u32) -> Option<String>;
}

/// Origins where nothing is known (tests, and a trace without a control
/// side).
pub struct NoOrigins;

impl Origins for NoOrigins {
    fn route(&self, _: u8, _: bool, _: u128, _: u32) -> Value {
        json!({ "from": "unknown" })
    }
    fn element(&self, _: usize, _: &Element) -> Value {
        json!({ "from": "unknown" })
    }
    fn hop_name(&self, _: u32) -> Option<String> {
        None
    }
    fn group_name(&self, _: u32) -> Option<String> {
        None
    }
}

/// A packet to explain.
#[derive(Clone, Debug)]
pub struct Packet {
    /// The frame.
    pub frame: Vec<u8>,
    /// The port (index) it arrives on.
    pub port: u16,
    /// The fields it has because its words did not give them.
    pub defaulted: Vec<&'static str>,
}

/// What a trace reads besides the snapshot.
pub struct Context<'a> {
    /// Where entries come from.
    pub origins: &'a dyn Origins,
    /// The neighbour table as the workers read it.
    pub neigh: Arc<NeighTable>,
    /// The neighbours with their states (`forwarder neighbours`).
    pub neighbours: &'a [NeighView],
    /// The slow path's clock now (milliseconds).
    pub now_ms: u64,
}

/// Explains `packet` against `snapshot`: the pipeline's explaining run
/// over a private pipeline, described. `hypothetical` says the packet was
/// given, not seen (its flow cache is the trace's own, empty one).
pub fn explain(snapshot: &Snapshot, packet: &Packet, cx: &Context) -> Value {
    let ports = snapshot.ports.len();
    let mut stages = Stages::default();
    let port = packet.port;
    let kept = port_keeps(snapshot, port, &packet.frame);
    let mut punted = None;
    if kept {
        let shared = Arc::new(RouterShared::with_pool(1, ports, 16));
        shared.neigh.store(cx.neigh.clone());
        let mut pipe = Pipeline::new(snapshot, ports).with_router(shared.clone(), snapshot);
        pipe.rx_port = port;
        let mut burst = Burst::new();
        burst.push(&packet.frame);
        pipe.explain(snapshot, &mut burst, std::slice::from_mut(&mut stages));
        let mut next = 0;
        punted = shared.next_punt(&mut next);
    } else {
        stages.port = port;
        stages.len = packet.frame.len() as u16;
        let k = packet.frame.len().min(crate::pipeline::HEAD);
        stages.head[..k].copy_from_slice(&packet.frame[..k]);
    }
    let mut v = describe(&stages, snapshot, cx, punted.as_deref(), true, kept);
    v["packet"]["defaults"] = json!(packet.defaulted);
    v
}

/// Whether port `port`'s receive filter passes `frame` to the pipeline:
/// the ports on Linux interfaces and DPDK keep, in promiscuous mode,
/// only frames for their MAC, ARP, and (with addresses) IPv6 multicast;
/// the synthetic port keeps everything it makes.
pub fn port_keeps(t: &crate::tables::Tables, port: u16, frame: &[u8]) -> bool {
    let Some(p) = t.ports.get(port as usize) else {
        return false;
    };
    match p.driver {
        config::Driver::Synthetic(_) => true,
        _ if p.addresses.is_empty() => crate::wire::addressed_to(frame, p.mac),
        _ => crate::wire::addressed_to_router(frame, p.mac),
    }
}

/// The neighbours a forwarder starts with: its configured ones (next
/// hops with both `mac` and `address`), as the slow path publishes them
/// first. What an offline trace knows of neighbours.
pub fn configured_neighbours(t: &crate::tables::Tables) -> (Arc<NeighTable>, Vec<NeighView>) {
    let mut table = NeighTable::default();
    let mut views = Vec::new();
    for &(port, v6, a, mac) in t.static_neighbours.iter() {
        table
            .map
            .insert((port, crate::neigh::nkey(v6, a)), Some(mac));
        views.push(NeighView {
            port,
            addr: crate::neigh::ip_of(v6, a),
            mac: Some(mac),
            state: crate::neigh::State::Reachable,
            age_ms: 0,
            probes: 0,
        });
    }
    (Arc::new(table), views)
}

/// What changes for the packet from trace `old` to trace `new` (both as
/// [`explain`] gives them): each stage whose account differs (stages
/// matched by name, sets by theirs), then the fate, as `stage: old ->
/// new` lines. Empty when nothing does.
pub fn compare(old: &Value, new: &Value) -> Vec<String> {
    let key = |s: &Value| {
        let name = s["stage"].as_str().unwrap_or("").to_string();
        match s["set"].as_str() {
            Some(set) => format!("set {set}"),
            None => name.replace('_', " "),
        }
    };
    // (key, decision, summary) of each stage; a set's summary without
    // its name, which the key has.
    let list = |v: &Value| -> Vec<(String, String, String)> {
        v["stages"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|s| {
                        let text = |k: &str| s[k].as_str().unwrap_or("").to_string();
                        let mut summary = text("summary");
                        if let Some(set) = s["set"].as_str() {
                            summary = summary
                                .strip_prefix(&format!("{set}: "))
                                .unwrap_or(&summary)
                                .to_string();
                        }
                        (key(s), text("decision"), summary)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (a, b) = (list(old), list(new));
    let mut out = Vec::new();
    let mut keys: Vec<&String> = a.iter().map(|x| &x.0).collect();
    for (k, _, _) in &b {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let none = ("(not reached)".to_string(), "(not reached)".to_string());
    for k in keys {
        let find = |l: &[(String, String, String)]| {
            l.iter()
                .find(|x| &x.0 == k)
                .map(|x| (x.1.clone(), x.2.clone()))
                .unwrap_or_else(|| none.clone())
        };
        let (was, now) = (find(&a), find(&b));
        if was.0 != now.0 {
            out.push(format!("{k}: {} -> {}", was.1, now.1));
        }
    }
    let fate = |v: &Value| v["fate"]["summary"].as_str().unwrap_or("").to_string();
    if fate(old) != fate(new) {
        out.push(format!("fate: {} -> {}", fate(old), fate(new)));
    }
    out
}

/// The packet a trace request describes: `packet` (words, see
/// [`crate::filter::packet`]) or `hex` (a frame), arriving on the port
/// `port` names (words may say `iif` instead; the first port when
/// neither does).
pub fn packet_of(request: &Value, ports: &[config::PortConfig]) -> Result<Packet, String> {
    let port = match request["port"].as_str() {
        Some(name) => Some(
            ports
                .iter()
                .position(|p| p.name == name)
                .ok_or_else(|| format!("no port `{}`", matcher::excerpt(name)))? as u16,
        ),
        None => None,
    };
    let mut p = match (request["packet"].as_str(), request["hex"].as_str()) {
        (Some(words), None) => {
            let b = crate::filter::packet::build(words, ports)?;
            Packet {
                frame: b.frame,
                port: b.port,
                defaulted: b.defaulted,
            }
        }
        (None, Some(hex)) => Packet {
            frame: crate::filter::packet::from_hex(hex)?,
            port: 0,
            defaulted: if port.is_none() {
                vec!["iif"]
            } else {
                Vec::new()
            },
        },
        _ => return Err("a trace needs `packet` (words) or `hex` (a frame), one of them".into()),
    };
    if let Some(port) = port {
        if request["packet"].is_string() && !p.defaulted.contains(&"iif") && p.port != port {
            return Err("the packet's `iif` and `port` name different ports".into());
        }
        p.port = port;
        p.defaulted.retain(|d| *d != "iif");
    }
    Ok(p)
}
