//! A trace record ([`Stages`]) put into words: one JSON object a stage,
//! each with the fields a script reads and a `summary` a person reads.

use super::Context;
use crate::filter::source_value;
use crate::neigh::{ip_of, NeighView};
use crate::pipeline::{Fated, FlowStage, HopState, SetStage, Stages};
use crate::punt::Buf;
use crate::reason::DropReason;
use crate::tables::{HopKind, Tables};
use crate::wire::{self, proto, Parsed, L3};
use config::{Action, Source};
use matcher::{Data, Verdict};
use routecache::{Family, FlowKey, Targets, ECMP_FLAG};
use serde_json::{json, Value};

/// A MAC as `nft` prints one.
pub(crate) fn mac(m: &[u8]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// An address of family `v6` (IPv4 in the low 32 bits).
pub(crate) fn addr(v6: bool, a: u128) -> String {
    ip_of(v6, a).to_string()
}

/// A prefix.
pub(crate) fn prefix(v6: bool, p: u128, len: u32) -> String {
    format!("{}/{len}", addr(v6, p))
}

/// An IP protocol's name (`nft` spells these), else its number.
pub(crate) fn proto_name(p: u8) -> String {
    match p {
        proto::ICMP => "icmp".into(),
        proto::TCP => "tcp".into(),
        proto::UDP => "udp".into(),
        proto::ICMPV6 => "icmpv6".into(),
        proto::SCTP => "sctp".into(),
        other => other.to_string(),
    }
}

/// A parsed packet in one line.
fn packet_line(p: &Parsed) -> String {
    let v6 = p.l3 == L3::V6;
    let ports = if p.l4_ok && matches!(p.proto, proto::TCP | proto::UDP | proto::SCTP) {
        format!(" {} -> {}", p.sport, p.dport)
    } else {
        String::new()
    };
    format!(
        "{} {} -> {} {}{ports} {} {}",
        if v6 { "ip6" } else { "ip" },
        addr(v6, p.src),
        addr(v6, p.dst),
        proto_name(p.proto),
        if v6 { "hoplimit" } else { "ttl" },
        p.ttl
    )
}

/// A frame the slow path sends, in one line.
fn frame_line(f: &[u8]) -> String {
    if let Some(a) = wire::arp::Arp::parse(f) {
        let (spa, tpa) = (addr(false, a.spa as u128), addr(false, a.tpa as u128));
        return match a.op {
            wire::arp::Arp::REQUEST => format!("ARP request: who has {tpa}? tell {spa}"),
            _ => format!("ARP reply: {spa} is at {}", mac(&a.sha)),
        };
    }
    if let Some(n) = wire::nd::Nd::parse(f) {
        return format!("neighbour discovery: {n:?}");
    }
    let Ok(p) = wire::parse(f) else {
        return format!("a {}-byte frame", f.len());
    };
    let l4 = f.get(p.l4_off as usize..).unwrap_or(&[]);
    let what = match (p.proto, l4.first(), l4.get(1)) {
        (proto::ICMP, Some(&t), Some(&c)) => format!("ICMP {}", icmp4_name(t, c)),
        (proto::ICMPV6, Some(&t), Some(&c)) => format!("ICMPv6 {}", icmp6_name(t, c)),
        (proto::TCP, _, _) if l4.get(13).is_some_and(|f| f & 0x04 != 0) => "TCP reset".into(),
        _ => "the packet".into(),
    };
    format!("{what}: {} to {}", packet_line(&p), mac(&f[..6]))
}

fn icmp4_name(t: u8, c: u8) -> String {
    match (t, c) {
        (0, _) => "echo reply".into(),
        (3, 0) => "net unreachable".into(),
        (3, 1) => "host unreachable".into(),
        (3, 3) => "port unreachable".into(),
        (3, 4) => "fragmentation needed".into(),
        (3, 13) => "administratively prohibited".into(),
        (11, 0) => "time exceeded (TTL)".into(),
        _ => format!("type {t} code {c}"),
    }
}

fn icmp6_name(t: u8, c: u8) -> String {
    match (t, c) {
        (1, 0) => "no route".into(),
        (1, 1) => "administratively prohibited".into(),
        (1, 3) => "address unreachable".into(),
        (1, 4) => "port unreachable".into(),
        (2, _) => "packet too big".into(),
        (3, 0) => "time exceeded (hop limit)".into(),
        (129, _) => "echo reply".into(),
        _ => format!("type {t} code {c}"),
    }
}

/// A stage's account: its fields, its `summary` for people and its
/// `decision` (the summary without where things came from: what
/// `--candidate` compares, so that the same element read from another
/// file is no change for the packet).
fn stage(name: &str, summary: String, mut fields: Value) -> Value {
    fields["stage"] = json!(name);
    if fields.get("decision").is_none() {
        fields["decision"] = json!(summary);
    }
    fields["summary"] = json!(summary);
    fields
}

/// A hop's name: its configured name, else what it is.
fn hop_name(t: &Tables, cx: &Context, hop: u32) -> String {
    if let Some(n) = cx.origins.hop_name(hop) {
        return n;
    }
    let port = t
        .fib
        .targets()
        .hops()
        .get(hop as usize)
        .and_then(|h| t.port_names.get(h.port as usize))
        .cloned()
        .unwrap_or_default();
    match t.hop_kinds.get(hop as usize) {
        Some(HopKind::Gateway { addr: a, v6 }) => format!("{} on {port}", addr(*v6, *a)),
        Some(HopKind::Connected) => format!("connected on {port}"),
        Some(HopKind::Local) => format!("the router on {port}"),
        _ => format!("hop {hop} on {port}"),
    }
}

fn target_name(t: &Tables, cx: &Context, target: u32) -> String {
    if Targets::is_ecmp(target) {
        let g = target & !ECMP_FLAG;
        match cx.origins.group_name(g) {
            Some(n) => format!("ECMP group {n}"),
            None => format!("ECMP group {g}"),
        }
    } else {
        hop_name(t, cx, target)
    }
}

fn port_name(t: &Tables, p: u16) -> String {
    t.port_names
        .get(p as usize)
        .cloned()
        .unwrap_or_else(|| format!("port {p}"))
}

fn neighbour<'a>(cx: &Context<'a>, port: u16, v6: bool, a: u128) -> Option<&'a NeighView> {
    let ip = ip_of(v6, a);
    cx.neighbours
        .iter()
        .find(|n| n.port == port && n.addr == ip)
}

/// Describes record `s` of a packet judged by `t`. `punted`: the frame as
/// the pipeline handed it to the (trace's private) slow path;
/// `hypothetical`: the packet was given, not seen (its flow cache is the
/// trace's own); `kept`: the port's receive filter passed it.
pub fn describe(
    s: &Stages,
    t: &Tables,
    cx: &Context,
    punted: Option<&Buf>,
    hypothetical: bool,
    kept: bool,
) -> Value {
    let frame = s.frame();
    let mut out = Vec::new();
    // The port and its receive filter.
    let pc = t.ports.get(s.port as usize);
    let driver = pc.map(|p| p.driver.name()).unwrap_or("?");
    let dst = frame.get(..6).unwrap_or(&[]);
    let to = match pc {
        _ if frame.len() < 14 => "too short for Ethernet",
        Some(p) if dst == p.mac => "addressed to the port's MAC",
        _ if dst == [0xff; 6] => "broadcast",
        _ if dst.first().is_some_and(|b| b & 1 != 0) => "multicast",
        _ => "addressed to another station",
    };
    let filter = match driver {
        "synthetic" => "the synthetic port filters nothing".to_string(),
        _ if kept => format!("kept ({to})"),
        _ => format!("ignored ({to}; counted as rx_ignored)"),
    };
    out.push(stage(
        "port",
        format!("{} ({driver}): {filter}", port_name(t, s.port)),
        json!({ "port": port_name(t, s.port), "driver": driver, "kept": kept, "destination": to }),
    ));
    if !kept {
        return finish(
            t,
            s,
            out,
            json!({ "result": "ignored", "summary": "ignored by the port's receive filter" }),
        );
    }
    // The parse.
    let parsed = match &s.parsed {
        Ok(p) => {
            let v6 = p.l3 == L3::V6;
            out.push(stage(
                "parse",
                packet_line(p),
                json!({
                    "family": if v6 { "ipv6" } else { "ipv4" },
                    "saddr": addr(v6, p.src),
                    "daddr": addr(v6, p.dst),
                    "protocol": proto_name(p.proto),
                    "sport": p.sport,
                    "dport": p.dport,
                    "ports": p.l4_ok && matches!(p.proto, proto::TCP | proto::UDP | proto::SCTP),
                    "ttl": p.ttl,
                }),
            ));
            Some(*p)
        }
        Err(d) => {
            out.push(stage(
                "parse",
                format!("dropped: {}", d.name()),
                json!({ "result": "dropped", "reason": d.name() }),
            ));
            None
        }
    };
    // The flow cache.
    let (flow, why) = match s.flow {
        FlowStage::Off => ("off", "no flow cache ([flow_cache] entries = 0, or too many sets)"),
        FlowStage::NotLooked => ("not looked up", "the parse dropped the packet"),
        FlowStage::AsideExpiry => ("aside", "an element's deadline has passed and the sets without it are not published yet"),
        FlowStage::AsideHitRate => ("aside", "too few recent lookups hit (more flows than it holds); it tries again later"),
        FlowStage::Hit => ("hit", "the stored decision was taken: no set or route looked up"),
        FlowStage::Miss if hypothetical => ("miss", "this trace's own cache is empty: on a worker a repeat of the flow hits, with the decision below"),
        FlowStage::Miss => ("miss", "the sets and routes decide; the decision is offered to the cache"),
    };
    if s.ct != 0 {
        // Connection tracking: the packet's state, and whether its
        // connection's entry decided it (the flow cache is off).
        let name = matcher::FieldType::CtState.format_value(s.ct as u128);
        let (result, why) = match s.flow {
            FlowStage::Hit if s.ct_refused => ("refused", "the flow was dropped as new a moment ago (no connection): the entry that keeps that drop for 2 s decided, no set or route looked up"),
            FlowStage::Hit => ("hit", "its connection's stored decision was taken: no set or route looked up"),
            _ => ("miss", "the sets and routes decide; the decision is kept in its connection (if it has one)"),
        };
        out.push(stage(
            "conntrack",
            format!("ct state {name}; {result}: {why}"),
            json!({ "ct_state": name, "result": result, "why": why }),
        ));
    } else {
        out.push(stage(
            "flow_cache",
            format!("{flow}: {why}"),
            json!({ "result": flow, "why": why }),
        ));
    }
    // The sets of the prerouting hook, the route, those of the forward
    // hook.
    let forward_from = t.forward_from.min(t.sets.len());
    set_stages(t, cx, s, parsed, 0..forward_from, &mut out);
    // The route and the ECMP member.
    let hash = parsed.map(|p| {
        FlowKey {
            src: p.src,
            dst: p.dst,
            sport: p.sport,
            dport: p.dport,
            proto: p.proto,
        }
        .hash(t.flow_seed)
    });
    match (s.target, parsed) {
        (Some(None), Some(p)) => {
            let v6 = p.l3 == L3::V6;
            out.push(stage(
                "route",
                format!("no route to {}", addr(v6, p.dst)),
                json!({ "result": "no route", "daddr": addr(v6, p.dst) }),
            ));
        }
        (Some(Some(target)), Some(p)) => {
            let v6 = p.l3 == L3::V6;
            let f = if v6 { Family::V6 } else { Family::V4 };
            let (pre, len, _) = t
                .fib
                .vrf(s.vrf as usize)
                .and_then(|r| r.lookup_prefix(f, p.dst))
                .unwrap_or((0, 0, target));
            let origin = cx.origins.route(s.vrf, v6, pre, len);
            let to = target_name(t, cx, target);
            // The VRF is named where there are several.
            let vrf = t.vrf_names.get(s.vrf as usize).cloned().unwrap_or_default();
            let in_vrf = if t.vrf_names.len() > 1 {
                format!(" in vrf {vrf}")
            } else {
                String::new()
            };
            out.push(stage(
                "route",
                format!(
                    "{}{in_vrf} ({}) via {to}",
                    prefix(v6, pre, len),
                    origin_text(&origin)
                ),
                json!({
                    "prefix": prefix(v6, pre, len),
                    "vrf": vrf,
                    "origin": origin,
                    "via": to,
                    "decision": format!("{} via {to}", prefix(v6, pre, len)),
                }),
            ));
            if Targets::is_ecmp(target) {
                let members: Vec<String> = t
                    .fib
                    .targets()
                    .group(target)
                    .unwrap_or(&[])
                    .iter()
                    .map(|&h| hop_name(t, cx, h))
                    .collect();
                let picked = match s.hop {
                    Some(Ok(h)) => hop_name(t, cx, h),
                    _ => "none".into(),
                };
                let h = hash.unwrap_or(0);
                out.push(stage(
                    "ecmp",
                    format!(
                        "{} members ({}); the flow's hash {h:#010x} picks {picked}",
                        members.len(),
                        members.join(", ")
                    ),
                    json!({ "group": to, "members": members, "hash": h, "picked": picked }),
                ));
            }
        }
        _ if s.flow == FlowStage::Hit => {
            out.push(stage(
                "route",
                "from the flow cache's decision".to_string(),
                json!({ "result": "cached" }),
            ));
        }
        _ => {}
    }
    // The next hop and its neighbour.
    match (s.hop, parsed) {
        (Some(Ok(h)), Some(p)) => {
            let nh = t.fib.targets().hops().get(h as usize).copied();
            let port = nh.map(|n| n.port).unwrap_or(0);
            let mut f = json!({ "hop": hop_name(t, cx, h), "port": port_name(t, port) });
            let kind = match t.hop_kinds.get(h as usize) {
                None | Some(HopKind::Static) => {
                    f["kind"] = json!("static");
                    format!(
                        "static, MAC {}",
                        nh.map(|n| mac(&n.dst_mac)).unwrap_or_default()
                    )
                }
                Some(&HopKind::Gateway { addr: a, v6 }) => {
                    f["kind"] = json!("gateway");
                    f["gateway"] = json!(addr(v6, a));
                    format!(
                        "gateway {}, {}",
                        addr(v6, a),
                        neighbour_text(cx, port, v6, a, &mut f)
                    )
                }
                Some(HopKind::Connected) => {
                    let v6 = p.l3 == L3::V6;
                    f["kind"] = json!("connected");
                    format!(
                        "connected network: the destination {} is the neighbour, {}",
                        addr(v6, p.dst),
                        neighbour_text(cx, port, v6, p.dst, &mut f)
                    )
                }
                Some(HopKind::Local) => {
                    f["kind"] = json!("local");
                    "the router itself: to the slow path".to_string()
                }
            };
            if let Some(st) = s.hop_state {
                f["state"] = json!(match st {
                    HopState::Ready => "ready",
                    HopState::Unresolved => "unresolved",
                    HopState::Pending => "pending",
                    HopState::Connected => "connected",
                    HopState::Local => "local",
                });
            }
            // A configured hop's name says nothing of its port; the
            // others' names do.
            let named = match cx.origins.hop_name(h) {
                Some(n) => format!("{n} on {}", port_name(t, port)),
                None => hop_name(t, cx, h),
            };
            out.push(stage("next_hop", format!("{named}: {kind}"), f));
        }
        (Some(Err(d)), _) => out.push(stage(
            "next_hop",
            format!("none: {}", d.name()),
            json!({ "result": "none", "reason": d.name() }),
        )),
        _ => {}
    }
    set_stages(t, cx, s, parsed, forward_from..t.sets.len(), &mut out);
    // The rewrite and the egress port.
    if let (Some(sent), Some(p), Fated::Forwarded(port)) = (s.sent(), parsed, s.fate) {
        // The IP header as far from the Ethernet header's end as it
        // came: tags pushed, swapped or popped on the way.
        let (tags, l2_out) = wire::tags(sent);
        let l3 = (p.l3_off as usize + l2_out).saturating_sub(wire::tags(&s.head).1);
        let ttl = match p.l3 {
            L3::V4 => sent.get(l3 + 8),
            L3::V6 => sent.get(l3 + 7),
        };
        let ttl = ttl.map(|&x| x as u32).unwrap_or(0);
        out.push(stage(
            "rewrite",
            format!(
                "ether daddr {}, ether saddr {}, {} {} -> {ttl}{}",
                mac(&sent[..6]),
                mac(&sent[6..12]),
                if p.l3 == L3::V6 { "hoplimit" } else { "ttl" },
                p.ttl,
                if p.l3 == L3::V4 { ", header checksum updated" } else { "" }
            ),
            json!({ "daddr": mac(&sent[..6]), "saddr": mac(&sent[6..12]), "ttl_before": p.ttl, "ttl_after": ttl }),
        ));
        let vlan: Vec<u16> = tags.iter().map(|&(_, id)| id).collect();
        let tagged = match vlan.as_slice() {
            [] => String::new(),
            [one] => format!(", tagged vlan {one}"),
            [outer, inner, ..] => format!(", tagged vlan {outer} . {inner}"),
        };
        out.push(stage(
            "egress",
            format!("{}{tagged}", port_name(t, port)),
            json!({ "port": port_name(t, port), "length": s.out_len, "vlan": vlan }),
        ));
    }
    let fate = match s.fate {
        Fated::Forwarded(port) => json!({
            "result": "forwarded",
            "port": port_name(t, port),
            "summary": format!("forwarded out of {}", port_name(t, port)),
        }),
        Fated::Dropped(d) if s.punted => {
            let answers: Vec<Value> = punted
                .map(|b| crate::router::answers(t, cx.neighbours, b, cx.now_ms))
                .unwrap_or_default()
                .iter()
                .map(|a| answer(t, a))
                .collect();
            let what: Vec<String> = answers
                .iter()
                .filter_map(|a| a["summary"].as_str().map(String::from))
                .collect();
            json!({
                "result": "punted",
                "reason": d.name(),
                "slow_path": answers,
                "summary": format!(
                    "to the slow path ({}): {}",
                    d.name(),
                    if what.is_empty() { "it sends nothing".to_string() } else { what.join("; ") }
                ),
            })
        }
        Fated::Dropped(d) => json!({
            "result": "dropped",
            "reason": d.name(),
            "summary": format!("dropped: {}{}", d.name(), drop_note(t, d)),
        }),
    };
    finish(t, s, out, fate)
}

/// Why a drop the router would have answered is silent.
/// The stages of sets `range` (those of one hook), in order.
fn set_stages(
    t: &Tables,
    cx: &Context,
    s: &Stages,
    parsed: Option<Parsed>,
    range: std::ops::Range<usize>,
    out: &mut Vec<Value>,
) {
    let frame = s.frame();
    // The port the packet leaves by, for `meta oifname`.
    let oif = match s.hop {
        Some(Ok(h)) => t.fib.targets().hops().get(h as usize).map(|n| n.port),
        _ => None,
    }
    .and_then(|p| t.ifnames.get(p as usize).copied());
    let sets = t.sets.iter().zip(s.sets()).enumerate();
    for (si, (set, st)) in sets.skip(range.start).take(range.len()) {
        let decl = set.snap.decl();
        let words: Vec<&str> = set.sources.iter().map(|x| x.words()).collect();
        let words = words.join(" . ");
        let key = parsed.and_then(|p| {
            let v: Option<Vec<u128>> = set
                .sources
                .iter()
                .map(|x| match x {
                    // Not in the frame: what connection tracking found.
                    Source::CtState => (s.ct != 0).then_some(s.ct as u128),
                    Source::Iifname => t.ifnames.get(s.port as usize).copied(),
                    Source::Oifname => oif,
                    _ => source_value(*x, &p, frame),
                })
                .collect();
            v.map(|v| decl.format_key(&decl.key_from_values(&v)))
        });
        let mut f = json!({ "set": set.name, "match": words, "type": decl.to_string() });
        if let Some(k) = &key {
            f["key"] = json!(k);
        }
        let summary = match *st {
            SetStage::NotLooked => {
                f["result"] = json!("not looked up");
                "not looked up".to_string()
            }
            SetStage::Decided => {
                f["result"] = json!("skipped");
                "skipped: an earlier set decided".to_string()
            }
            SetStage::NotForwarded => {
                f["result"] = json!("not forwarded");
                "not looked up: a forward set, and the packet is not forwarded".to_string()
            }
            SetStage::NotApplicable => {
                let missing = parsed
                    .and_then(|p| {
                        set.sources
                            .iter()
                            .find(|x| source_value(**x, &p, frame).is_none())
                    })
                    .map(|x| x.words())
                    .unwrap_or("?");
                f["result"] = json!("not applicable");
                f["missing"] = json!(missing);
                format!("not applicable: the packet has no `{missing}`")
            }
            SetStage::NoMatch => {
                f["result"] = json!("no match");
                format!("no match for {}", key.as_deref().unwrap_or("?"))
            }
            SetStage::Matched(id) | SetStage::Expired(id) => {
                let e = set.snap.element(id);
                let text = e.map(|e| decl.format_element(e)).unwrap_or_default();
                let origin = e.map_or(json!({ "from": "unknown" }), |e| cx.origins.element(si, e));
                f["element"] = json!(text);
                f["origin"] = origin.clone();
                if matches!(st, SetStage::Expired(_)) {
                    f["result"] = json!("expired");
                    f["decision"] =
                        json!(format!("`{text}` matched past its deadline: as no match"));
                    format!(
                        "`{text}` ({}) matched past its deadline: as no match",
                        origin_text(&origin)
                    )
                } else {
                    let verdict = match set.action {
                        Action::Drop => "drop".to_string(),
                        Action::Reject => "reject".to_string(),
                        Action::Accept => "accept".to_string(),
                        Action::Verdict => match e.and_then(|e| e.data.as_ref()) {
                            Some(Data::Verdict(v @ (Verdict::Accept | Verdict::Drop))) => {
                                v.to_string()
                            }
                            Some(d) => format!("{d}: on to the next set (no chains here)"),
                            None => "continue".to_string(),
                        },
                    };
                    f["result"] = json!("match");
                    f["verdict"] = json!(verdict);
                    f["decision"] = json!(format!("match `{text}`: {verdict}"));
                    format!("match `{text}` ({}): {verdict}", origin_text(&origin))
                }
            }
        };
        if f.get("decision").is_none() {
            f["decision"] = json!(summary);
        }
        out.push(stage("set", format!("{}: {summary}", set.name), f));
    }
}

fn drop_note(t: &Tables, d: DropReason) -> &'static str {
    match d {
        DropReason::TtlExpired | DropReason::NoRoute | DropReason::Reject if !t.routing => {
            " (no port has addresses: no ICMP is sent)"
        }
        _ => "",
    }
}

fn finish(t: &Tables, s: &Stages, stages: Vec<Value>, fate: Value) -> Value {
    json!({
        "generation": s.generation,
        "packet": {
            "port": port_name(t, s.port),
            "length": s.len,
            "hex": s.frame().iter().map(|b| format!("{b:02x}")).collect::<String>(),
        },
        "stages": stages,
        "fate": fate,
    })
}

fn neighbour_text(cx: &Context, port: u16, v6: bool, a: u128, f: &mut Value) -> String {
    match neighbour(cx, port, v6, a) {
        Some(n) => {
            f["neighbour"] = json!({
                "state": n.state.name(),
                "mac": n.mac.map(|m| mac(&m)),
                "age_ms": n.age_ms,
            });
            match n.mac {
                Some(m) => format!("neighbour {} at {}", n.state.name(), mac(&m)),
                None => format!("neighbour {}, no MAC yet", n.state.name()),
            }
        }
        None => {
            f["neighbour"] = json!(null);
            "neighbour not heard of yet (the slow path resolves it)".to_string()
        }
    }
}

/// An origin in a few words: `file:line`, `run time`, `kernel table 254
/// (bird, metric 32)`, `connected on lan`.
pub(crate) fn origin_text(o: &Value) -> String {
    let s = |k: &str| o[k].as_str().unwrap_or("").to_string();
    match o["from"].as_str().unwrap_or("unknown") {
        "config" | "set_file" | "route_file" => format!("{}:{}", s("file"), o["line"]),
        "run_time" => "added at run time".to_string(),
        "kernel" => format!(
            "kernel table {} ({}, metric {})",
            o["table"],
            s("protocol"),
            o["metric"]
        ),
        "connected" => format!("connected on {}", s("port")),
        "local" => format!("an address of {}", s("port")),
        "router" => s("what"),
        other => other.to_string(),
    }
}

fn answer(t: &Tables, a: &crate::router::Answer) -> Value {
    use crate::router::Answer;
    match a {
        Answer::Sent { port, frame } => json!({
            "action": "send",
            "port": port_name(t, *port),
            "summary": format!("sends {} out of {}", frame_line(frame), port_name(t, *port)),
            "hex": frame.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        }),
        Answer::ToHost { port } => json!({
            "action": "host",
            "port": port_name(t, *port),
            "summary": format!(
                "gives it to the host's side of {} ({})",
                port_name(t, *port),
                t.ports.get(*port as usize).and_then(|p| p.tap.clone()).unwrap_or_default()
            ),
        }),
        Answer::Held {
            port,
            addr,
            state,
            own,
        } => json!({
            "action": "hold",
            "port": port_name(t, *port),
            "neighbour": addr.to_string(),
            "state": state.name(),
            "summary": format!(
                "holds {} until {addr} answers on {} (neighbour {})",
                if *own { "its answer" } else { "the packet" },
                port_name(t, *port),
                state.name()
            ),
        }),
    }
}
