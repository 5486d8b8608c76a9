//! A packet written in the filter's words, built as a frame for
//! `forwarder trace`: `iif wan ip saddr 192.0.2.7 ip daddr 198.51.100.9
//! tcp dport 443`. Every field given is one value; what is not given
//! takes a stated default ([`DEFAULTS`]), and the trace names the
//! defaults it used.

use super::{Field, Filter};
use crate::wire::arp::{Arp, BROADCAST};
use crate::wire::{ethertype, ip, proto, set_l4_checksum, L3};
use config::{PortConfig, Source};
use std::collections::BTreeMap;

/// What a packet has when its words do not say (documented in
/// `docs/operating.md`).
pub const DEFAULTS: &str = "iif: the first port; ether daddr: the port's MAC; ether saddr: \
                            02:00:00:00:00:01; IPv4 unless an IPv6 field is given; ip saddr \
                            192.0.2.1, ip daddr 198.51.100.1 (ip6: 2001:db8::1, 2001:db8::2); \
                            tcp; sport 32768, dport 80; ttl / hoplimit 64; icmp: an echo \
                            request; meta length: the headers', at least 60 bytes";

/// The source MAC of a packet that names none.
const SOURCE_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

/// A packet built from words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The frame.
    pub frame: Vec<u8>,
    /// The port it arrives on.
    pub port: u16,
    /// The fields it has because the words did not give them.
    pub defaulted: Vec<&'static str>,
}

/// Builds the packet `text` describes, arriving on one of `ports`.
///
/// ```
/// use forwarder::filter::packet::build;
/// use forwarder::wire::parse;
/// let cfg = config::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/forwarder.toml"))).unwrap();
/// let p = build("ip saddr 192.0.2.7 ip daddr 198.51.100.9 udp dport 53", &cfg.ports).unwrap();
/// let parsed = parse(&p.frame).unwrap();
/// assert_eq!((parsed.src, parsed.dst, parsed.proto, parsed.dport), (0xc000_0207, 0xc633_6409, 17, 53));
/// assert!(build("ip saddr 192.0.2.0/24", &cfg.ports).is_err());
/// ```
pub fn build(text: &str, ports: &[PortConfig]) -> Result<Packet, String> {
    let names: Vec<String> = ports.iter().map(|p| p.name.clone()).collect();
    let f = Filter::parse(text, &names)?;
    // Each field once, one value, `==`.
    let mut given: BTreeMap<&'static str, (Field, u128)> = BTreeMap::new();
    for t in &f.terms {
        let words = t.field.words();
        let [r] = t.values[..] else {
            return Err(format!(
                "a packet's `{words}` is one value, not a set of them"
            ));
        };
        if t.negate {
            return Err(format!(
                "a packet's `{words}` is a value: `!=` is for filters"
            ));
        }
        if r.start != r.end {
            return Err(format!(
                "a packet's `{words}` is one value, not a range or prefix"
            ));
        }
        // `ip6` and `ip ttl` each name their family; `tcp` alone and
        // `meta l4proto` the protocol.
        let key = match t.field {
            Field::Source(Source::L4proto) => "protocol",
            Field::Source(Source::Sport(_)) => "sport",
            Field::Source(Source::Dport(_)) => "dport",
            Field::Ttl(_) => "ttl",
            _ => words,
        };
        if let Some((old, v)) = given.get(key) {
            if *v != r.start || *old != t.field {
                return Err(format!(
                    "the packet's `{key}` is given twice (`{}` and `{words}`)",
                    old.words()
                ));
            }
        }
        given.insert(key, (t.field, r.start));
    }
    let mut defaulted = Vec::new();
    let get = |k: &str| given.get(k).map(|g| g.1);
    let port = match get("iif") {
        Some(p) => p as u16,
        None => {
            defaulted.push("iif");
            0
        }
    };
    let Some(pc) = ports.get(port as usize) else {
        return Err("the configuration has no port for the packet to arrive on".into());
    };
    if get("meta mark").is_some_and(|m| m != 0) {
        return Err("frames from ports carry no mark: `meta mark` is 0 for every packet".into());
    }
    let mac = |v: u128| -> [u8; 6] { std::array::from_fn(|i| (v >> (40 - 8 * i)) as u8) };
    let dst_mac = get("ether daddr").map(mac).unwrap_or_else(|| {
        defaulted.push("ether daddr");
        pc.mac
    });
    let src_mac = get("ether saddr").map(mac).unwrap_or_else(|| {
        defaulted.push("ether saddr");
        SOURCE_MAC
    });
    // The family: what the address fields, the protocol words and the TTL
    // field say, all alike.
    let is_arp = given
        .get("ether type")
        .is_some_and(|g| g.1 == ethertype::ARP as u128);
    let mut family: Option<(u16, &str)> = is_arp.then_some((ethertype::ARP, "arp"));
    let mut say = |t: u16, why: &'static str| -> Result<(), String> {
        match family {
            Some((f, w)) if f != t => Err(format!(
                "`{w}` and `{why}`: a packet is IPv4, IPv6 or ARP, one of them"
            )),
            _ => {
                family = Some((t, why));
                Ok(())
            }
        }
    };
    for (k, (field, v)) in &given {
        match field {
            // ARP's addresses are IPv4 addresses.
            Field::Source(Source::IpSaddr | Source::IpDaddr) if is_arp => {}
            Field::Source(Source::IpSaddr | Source::IpDaddr) | Field::Ttl(L3::V4) => {
                say(ethertype::IPV4, k)?
            }
            Field::Source(Source::Ip6Saddr | Source::Ip6Daddr) | Field::Ttl(L3::V6) => {
                say(ethertype::IPV6, k)?
            }
            Field::Ethertype => say(*v as u16, k)?,
            Field::Source(Source::L4proto) if *v == proto::ICMPV6 as u128 => {
                say(ethertype::IPV6, "icmpv6")?
            }
            Field::Source(Source::IcmpType(true)) => say(ethertype::IPV6, k)?,
            Field::Source(Source::IcmpType(false)) => say(ethertype::IPV4, k)?,
            _ => {}
        }
    }
    let ether_type = family.map(|f| f.0).unwrap_or(ethertype::IPV4);
    let len = get("meta length").map(|l| l as usize);
    if ether_type == ethertype::ARP {
        return arp(&given, dst_mac, src_mac, port, defaulted, len);
    }
    let v6 = match ether_type {
        ethertype::IPV4 => false,
        ethertype::IPV6 => true,
        other => return Err(format!("no packet of ethertype {other:#06x} can be built")),
    };
    let (src, dst) = if v6 {
        (
            get("ip6 saddr").unwrap_or_else(|| {
                defaulted.push("ip6 saddr");
                0x2001_0db8u128 << 96 | 1
            }),
            get("ip6 daddr").unwrap_or_else(|| {
                defaulted.push("ip6 daddr");
                0x2001_0db8u128 << 96 | 2
            }),
        )
    } else {
        (
            get("ip saddr").unwrap_or_else(|| {
                defaulted.push("ip saddr");
                0xc000_0201
            }),
            get("ip daddr").unwrap_or_else(|| {
                defaulted.push("ip daddr");
                0xc633_6401
            }),
        )
    };
    let ttl = get("ttl").map(|t| t as u8).unwrap_or_else(|| {
        defaulted.push("ttl");
        64
    });
    // The protocol: given, or the one a port field names, else TCP.
    let mut port_proto = None;
    for (f, _) in given.values() {
        if let Field::Source(Source::Sport(Some(p)) | Source::Dport(Some(p))) = f {
            if port_proto.is_some_and(|q| q != *p) {
                return Err(format!(
                    "the packet's ports are given for two protocols ({} and {p})",
                    port_proto.unwrap_or(0)
                ));
            }
            port_proto = Some(*p);
        }
    }
    // An ICMP type names its protocol as a port field does.
    let icmp = given.values().find_map(|(f, v)| match f {
        Field::Source(Source::IcmpType(v6)) => Some((
            crate::tables::icmp_of(if *v6 { L3::V6 } else { L3::V4 }),
            *v as u8,
        )),
        _ => None,
    });
    if let (Some((p, _)), Some(q)) = (icmp, port_proto) {
        return Err(format!(
            "the packet has an ICMP type (protocol {p}) and ports of protocol {q}"
        ));
    }
    let by = if port_proto.is_some() {
        "a port field"
    } else {
        "an ICMP type field"
    };
    let port_proto = port_proto.or(icmp.map(|i| i.0));
    let l4proto = match (get("protocol").map(|p| p as u8), port_proto) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "the packet's protocol is given as {a} and, by {by}, as {b}"
            ))
        }
        (Some(a), _) => a,
        (None, Some(b)) => b,
        (None, None) => {
            defaulted.push("protocol");
            proto::TCP
        }
    };
    let l4proto = match (l4proto, v6) {
        (proto::ICMP, true) | (proto::ICMPV6, false) => {
            return Err(
                "ICMP is IPv4's and ICMPv6 IPv6's: the packet's family says otherwise".into(),
            )
        }
        (p, _) => p,
    };
    let has_ports = matches!(l4proto, proto::TCP | proto::UDP | proto::SCTP);
    if !has_ports && (get("sport").is_some() || get("dport").is_some()) {
        return Err(format!("protocol {l4proto} has no ports"));
    }
    let mut ports_of = |k: &'static str, d: u16| {
        get(k).map(|v| v as u16).unwrap_or_else(|| {
            if has_ports {
                defaulted.push(k);
            }
            d
        })
    };
    let (sport, dport) = (ports_of("sport", 32768), ports_of("dport", 80));
    let mut l4 = match l4proto {
        proto::TCP => {
            let mut t = vec![0u8; 20];
            t[12] = 5 << 4;
            t[13] = 0x02; // SYN: the first packet of a connection
            t
        }
        proto::UDP => vec![0u8; 8],
        proto::SCTP => vec![0u8; 12],
        // An echo request (type 8, or 128 for ICMPv6), identifier 1,
        // sequence 1.
        proto::ICMP => vec![8, 0, 0, 0, 0, 1, 0, 1],
        proto::ICMPV6 => vec![128, 0, 0, 0, 0, 1, 0, 1],
        _ => vec![0u8; 8],
    };
    if has_ports {
        l4[0..2].copy_from_slice(&sport.to_be_bytes());
        l4[2..4].copy_from_slice(&dport.to_be_bytes());
    }
    if let Some((_, ty)) = icmp {
        l4[0] = ty;
    }
    let headers = 14 + if v6 { 40 } else { 20 } + l4.len();
    let want = match len {
        Some(l) if l < headers => {
            return Err(format!(
                "`meta length {l}`: the packet's headers take {headers} bytes"
            ))
        }
        Some(l) if l > crate::port::FRAME_CAP => {
            return Err(format!(
                "`meta length {l}`: frames are at most {} bytes here",
                crate::port::FRAME_CAP
            ))
        }
        Some(l) => l,
        None => {
            defaulted.push("meta length");
            headers.max(60)
        }
    };
    l4.resize(l4.len() + want - headers, 0);
    if l4proto == proto::UDP {
        let n = l4.len() as u16;
        l4[4..6].copy_from_slice(&n.to_be_bytes());
    }
    let (et, packet) = if v6 {
        (ethertype::IPV6, ip::ipv6(src, dst, l4proto, ttl, &l4))
    } else {
        let p = ip::ipv4(src as u32, dst as u32, l4proto, ttl, &l4);
        (ethertype::IPV4, p)
    };
    let mut frame = ip::frame(dst_mac, src_mac, et, &packet);
    set_l4_checksum(&mut frame);
    Ok(Packet {
        frame,
        port,
        defaulted,
    })
}

/// An ARP request: who has `ip daddr`, tell `ip saddr`.
fn arp(
    given: &BTreeMap<&'static str, (Field, u128)>,
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    port: u16,
    mut defaulted: Vec<&'static str>,
    len: Option<usize>,
) -> Result<Packet, String> {
    if let Some(k) = given.keys().find(|k| {
        !matches!(
            **k,
            "iif" | "ether saddr" | "ether daddr" | "ether type" | "ip saddr" | "ip daddr"
        )
    }) {
        return Err(format!("an ARP packet has no `{k}`"));
    }
    if len.is_some() {
        return Err("an ARP packet's length is ARP's: no `meta length`".into());
    }
    let get = |k: &str| given.get(k).map(|g| g.1 as u32);
    let spa = get("ip saddr").unwrap_or_else(|| {
        defaulted.push("ip saddr");
        0xc000_0201
    });
    let tpa = get("ip daddr").unwrap_or_else(|| {
        defaulted.push("ip daddr");
        0xc633_6401
    });
    let dst = if given.contains_key("ether daddr") {
        dst_mac
    } else {
        // A request is broadcast: the default is not the port's MAC.
        defaulted.retain(|d| *d != "ether daddr");
        defaulted.push("ether daddr (broadcast)");
        BROADCAST
    };
    let frame = Arp {
        op: Arp::REQUEST,
        sha: src_mac,
        spa,
        tha: [0; 6],
        tpa,
    }
    .frame(dst);
    Ok(Packet {
        frame,
        port,
        defaulted,
    })
}

/// A frame written in hexadecimal (spaces, colons and line breaks
/// ignored; `0x` allowed in front).
pub fn from_hex(text: &str) -> Result<Vec<u8>, String> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    let digits: Vec<u8> = t
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b':' && *b != b'-')
        .collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!(
            "{} hexadecimal digits: a frame is whole bytes",
            digits.len()
        ));
    }
    let frame: Result<Vec<u8>, String> = digits
        .chunks(2)
        .map(|d| {
            let s = std::str::from_utf8(d).unwrap_or("??");
            u8::from_str_radix(s, 16)
                .map_err(|_| format!("`{}` is not a hexadecimal byte", matcher::excerpt(s)))
        })
        .collect();
    let frame = frame?;
    if frame.len() > crate::port::FRAME_CAP {
        return Err(format!(
            "a {}-byte frame: frames are at most {} bytes here",
            frame.len(),
            crate::port::FRAME_CAP
        ));
    }
    Ok(frame)
}
