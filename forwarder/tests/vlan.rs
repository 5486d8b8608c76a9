//! VLAN sub-interfaces in the pipeline: a tagged frame belongs to the
//! sub-interface its tags name, leaves with the egress port's tags
//! (pushed, swapped or popped) out of the parent's queue, and an unknown
//! tag is dropped and counted. Pinned by a reference: every forwarded
//! frame equals the same packet built untagged, rewritten, with the
//! egress port's tags put in by hand.

use forwarder::control::build;
use forwarder::pipeline::Pipeline;
use forwarder::port::Burst;
use forwarder::reason::DropReason;
use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::{checksum, parse};
use routecache::gen::Rng;
use std::path::Path;

const CONFIG: &str = r#"
route = [
  { prefix = "198.51.100.0/26", via = "h-plain" },
  { prefix = "198.51.100.64/26", via = "h-100" },
  { prefix = "198.51.100.128/26", via = "h-200" },
  { prefix = "198.51.100.192/26", via = "h-qinq" },
  { prefix = "2001:db8:100::/48", via = "h-100" },
  { prefix = "2001:db8:200::/48", via = "h-plain" },
]

[[port]]
name = "trunk.100"
parent = "trunk"
vlan = 100

[[port]]
name = "trunk"
mac = "02:00:00:00:00:01"

[[port]]
name = "plain"
mac = "02:00:00:00:00:02"

[[port]]
name = "trunk.200"
parent = "trunk"
vlan = 200

[[port]]
name = "trunk.qinq"
parent = "trunk"
vlan = [300, 7]

[[next_hop]]
name = "h-plain"
port = "plain"
mac = "02:00:00:00:0a:00"

[[next_hop]]
name = "h-100"
port = "trunk.100"
mac = "02:00:00:00:0a:64"

[[next_hop]]
name = "h-200"
port = "trunk.200"
mac = "02:00:00:00:0a:c8"

[[next_hop]]
name = "h-qinq"
port = "trunk.qinq"
mac = "02:00:00:00:0a:07"
"#;

/// Ports by index once loaded: the ones with drivers first.
const TRUNK: u16 = 0;
const PLAIN: u16 = 1;
const SUB100: usize = 2;
const SUB200: usize = 3;
const QINQ: usize = 4;

/// `f` with `tags` (TPID, VLAN ID) after its source MAC.
fn tagged(f: &[u8], tags: &[(u16, u16)]) -> Vec<u8> {
    let mut out = f[..12].to_vec();
    for &(tpid, id) in tags {
        out.extend(tpid.to_be_bytes());
        out.extend(id.to_be_bytes());
    }
    out.extend(&f[12..]);
    out
}

/// The tags of a port: none, `[(0x8100, id)]`, or 802.1ad's two.
fn tags_of(port: usize) -> Vec<(u16, u16)> {
    match port {
        SUB100 => vec![(0x8100, 100)],
        SUB200 => vec![(0x8100, 200)],
        QINQ => vec![(0x88a8, 300), (0x8100, 7)],
        _ => vec![],
    }
}

/// The egress port and next hop MAC of a destination of the table.
fn route_of(dst: Dst) -> (usize, u8) {
    match dst {
        Dst::V4(d) => match d & 0xc0 {
            0x00 => (PLAIN as usize, 0x00),
            0x40 => (SUB100, 0x64),
            0x80 => (SUB200, 0xc8),
            _ => (QINQ, 0x07),
        },
        Dst::V6(0x100) => (SUB100, 0x64),
        Dst::V6(_) => (PLAIN as usize, 0x00),
    }
}

#[derive(Clone, Copy, Debug)]
enum Dst {
    /// 198.51.100.N.
    V4(u8),
    /// 2001:db8:N::1 (N in hex).
    V6(u16),
}

fn packet(dst: Dst, ttl: u8, sport: u16) -> Vec<u8> {
    match dst {
        Dst::V4(d) => ipv4(
            0xc000_0201,
            0xc633_6400 | d as u32,
            ttl,
            L4::Udp(sport, 53),
            20,
        ),
        Dst::V6(n) => ipv6(
            0x2001_0db8_0009u128 << 80 | 1,
            (0x2001_0db8_0000u128 | n as u128) << 80 | 1,
            ttl,
            L4::Tcp(sport, 443),
            20,
        ),
    }
}

/// What the forwarder must send for `dst`'s packet: rewritten towards
/// the egress port's next hop, with that port's tags.
fn expected(dst: Dst, ttl: u8, sport: u16) -> (u16, Vec<u8>) {
    let (port, hop) = route_of(dst);
    let mut f = packet(dst, ttl - 1, sport);
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0x0a, hop]);
    let src = if port == PLAIN as usize { 2 } else { 1 };
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
    let queue = if port == PLAIN as usize { PLAIN } else { TRUNK };
    (queue, tagged(&f, &tags_of(port)))
}

fn setup() -> (forwarder::pipeline::Snapshot, Pipeline) {
    let cfg = config::parse("t.toml", CONFIG, Path::new(".")).unwrap();
    let names: Vec<&str> = cfg.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["trunk", "plain", "trunk.100", "trunk.200", "trunk.qinq"]
    );
    assert_eq!(cfg.physical_ports(), 2);
    let t = build::snapshot(&cfg, 1).unwrap();
    let p = Pipeline::new(&t, 2);
    (t, p)
}

/// Random bursts of packets, each arriving on one of the five ports
/// (tagged as that port is) towards any of them: every forwarded frame
/// is exactly the reference's, on the right queue, and the
/// sub-interfaces' counters add up.
#[test]
fn tags_are_pushed_swapped_and_popped_as_the_reference_says() {
    let (t, mut p) = setup();
    let mut rng = Rng(44);
    let (mut rx_sub, mut tx_sub) = ([0u64; 5], [0u64; 5]);
    for _ in 0..200 {
        let mut b = Burst::new();
        let rx_port: u16 = if rng.below(2) == 0 { TRUNK } else { PLAIN };
        let mut want = Vec::new();
        let n = 1 + rng.below(32) as usize;
        for k in 0..n {
            let dst = if rng.below(3) == 0 {
                Dst::V6(if rng.below(2) == 0 { 0x100 } else { 0x200 })
            } else {
                Dst::V4(rng.below(256) as u8)
            };
            let ingress = if rx_port == PLAIN {
                PLAIN as usize
            } else {
                [TRUNK as usize, SUB100, SUB200, QINQ][rng.below(4) as usize]
            };
            let sport = k as u16 + 1000;
            b.push(&tagged(&packet(dst, 64, sport), &tags_of(ingress)));
            rx_sub[ingress] += 1;
            let (queue, f) = expected(dst, 64, sport);
            tx_sub[route_of(dst).0] += 1;
            want.push((queue, f));
        }
        p.rx_port = rx_port;
        p.process(&t, &mut b);
        for (i, (queue, f)) in want.iter().enumerate() {
            assert!(
                p.out[*queue as usize].contains(&(i as u8)),
                "frame {i} leaves by queue {queue}"
            );
            assert_eq!(b.frame(i), &f[..], "frame {i}");
            let q = parse(b.frame(i)).unwrap();
            if q.l3 == forwarder::wire::L3::V4 {
                let l3 = q.l3_off as usize;
                assert_eq!(checksum(&b.frame(i)[l3..l3 + 20]), 0);
            }
        }
        assert_eq!(p.out.iter().map(|o| o.len()).sum::<usize>(), n);
    }
    for port in [SUB100, SUB200, QINQ] {
        let c = p.counters.links[port];
        assert_eq!((c[0], c[2]), (rx_sub[port], tx_sub[port]), "port {port}");
    }
    assert_eq!(p.counters.links[TRUNK as usize], [0; 4]);
}

/// A tag no sub-interface has (on the trunk, or any tag on a port
/// without sub-interfaces) is dropped and counted; a priority tag (VLAN
/// 0) is the port's own, and leaves untagged; the sub-interfaces' ARP
/// goes to the slow path as theirs.
#[test]
fn unknown_tags_are_dropped_and_priority_tags_are_the_ports() {
    let (t, mut p) = setup();
    let mut b = Burst::new();
    let f = packet(Dst::V4(1), 64, 1);
    b.push(&tagged(&f, &[(0x8100, 999)]));
    b.push(&tagged(&f, &[(0x88a8, 300), (0x8100, 8)]));
    b.push(&tagged(&f, &[(0x8100, 0)]));
    b.push(&tagged(&f, &[(0x8100, 200), (0x8100, 1)]));
    p.rx_port = TRUNK;
    p.process(&t, &mut b);
    assert_eq!(p.counters.drops[DropReason::UnknownVlan.index()], 3);
    assert_eq!(p.out[PLAIN as usize], vec![2]);
    assert_eq!(b.frame(2), &expected(Dst::V4(1), 64, 1).1[..]);
    let mut b = Burst::new();
    b.push(&tagged(&f, &[(0x8100, 100)]));
    p.rx_port = PLAIN;
    p.process(&t, &mut b);
    assert_eq!(p.counters.drops[DropReason::UnknownVlan.index()], 4);
    // TTL 1 on a sub-interface expires there, as it would untagged.
    let mut b = Burst::new();
    b.push(&tagged(&packet(Dst::V4(1), 1, 1), &[(0x8100, 100)]));
    p.rx_port = TRUNK;
    p.process(&t, &mut b);
    assert_eq!(p.counters.drops[DropReason::TtlExpired.index()], 1);
}

/// The slow path sees a sub-interface's frames untagged, as that
/// port's: a tagged ARP request punted from the trunk arrives without
/// its tag, from `trunk.100`; what it sends out of `trunk.100` is tagged
/// on the way out (the worker's inject).
#[test]
fn the_slow_path_sees_no_tags() {
    use forwarder::punt::RouterShared;
    use std::sync::Arc;
    let text = CONFIG.replace(
        "name = \"trunk.100\"\nparent = \"trunk\"",
        "name = \"trunk.100\"\nparent = \"trunk\"\naddress = [\"192.0.2.1/24\"]",
    );
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    let t = build::snapshot(&cfg, 1).unwrap();
    let r = Arc::new(RouterShared::new(1, cfg.ports.len()));
    let mut p = Pipeline::new(&t, 2).with_router(r.clone(), &t);
    let arp = forwarder::wire::arp::Arp {
        op: 1,
        sha: [2, 0, 0, 0, 0, 9],
        spa: 0xc000_0209,
        tha: [0; 6],
        tpa: 0xc000_0201,
    }
    .frame([0xff; 6]);
    let mut b = Burst::new();
    b.push(&tagged(&arp, &[(0x8100, 100)]));
    p.rx_port = TRUNK;
    p.process(&t, &mut b);
    let mut next = 0;
    let got = r.next_punt(&mut next).expect("the ARP request is punted");
    assert_eq!(got.port as usize, SUB100);
    assert_eq!(got.frame(), &arp[..]);
}

/// `forwarder trace` through sub-interfaces: a packet from the untagged
/// port to a sub-interface's next hop leaves its parent tagged, the TTL
/// read where the tag put the IP header; one received on a
/// sub-interface leaves untagged.
#[test]
fn a_trace_shows_the_tags_a_packet_leaves_with() {
    let dir = std::env::temp_dir().join(format!("fwd-vlan-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let trace = |packet: &str| -> serde_json::Value {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_forwarder"))
            .args(["trace", "--offline", "--json", "--config"])
            .arg(&cfg)
            .args(["--packet", packet])
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)))
    };
    let stage = |v: &serde_json::Value, name: &str| {
        v["stages"]
            .as_array()
            .and_then(|s| s.iter().find(|x| x["stage"] == name).cloned())
            .unwrap_or_else(|| panic!("no {name} stage: {v}"))
    };
    let v = trace("iif plain ip saddr 198.51.100.7 ip daddr 198.51.100.200 udp dport 53");
    assert_eq!(v["fate"]["port"], "trunk", "{v}");
    assert_eq!(
        stage(&v, "egress")["vlan"],
        serde_json::json!([300, 7]),
        "{v}"
    );
    assert_eq!(stage(&v, "rewrite")["ttl_after"], 63, "{v}");
    let v = trace("iif trunk.100 ip saddr 192.0.2.7 ip daddr 198.51.100.9 udp dport 53");
    assert_eq!(v["fate"]["port"], "plain", "{v}");
    assert_eq!(stage(&v, "egress")["vlan"], serde_json::json!([]), "{v}");
    assert_eq!(stage(&v, "rewrite")["ttl_after"], 63, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}
