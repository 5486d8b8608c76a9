//! `meta iifname` and `ip dscp` / `ip6 dscp` in sets: the port (or the
//! wildcard `"wan*"`) a packet came in on decides, as in nft's `iifname
//! "wan" ct state new drop`, and so does its DSCP; the same flow arriving
//! on two ports, or with two markings, is judged each time, with the flow
//! cache configured: where a set reads the port, the decisions it keeps
//! are bound to the port they were taken for (the same flow on another
//! port is classified again); where one reads the DSCP, it stands aside.

use forwarder::control::build;
use forwarder::pipeline::{Pipeline, Snapshot};
use forwarder::port::Burst;
use forwarder::wire::build::{ipv4, ipv6, L4};
use std::path::Path;

const CONFIG: &str = r#"
route = [
  { prefix = "192.0.2.0/24", via = "lan" },
  { prefix = "198.51.100.0/24", via = "wan" },
]

[[port]]
name = "lan"
mac = "02:00:00:00:00:01"

[[port]]
name = "wan"
mac = "02:00:00:00:00:02"

[[port]]
name = "wan2"
mac = "02:00:00:00:00:03"

[[next_hop]]
name = "lan"
port = "lan"
mac = "02:00:00:00:0a:01"

[[next_hop]]
name = "wan"
port = "wan"
mac = "02:00:00:00:0b:01"

SETS
[flow_cache]
entries = 4096
insert_one_in = 1

"#;

/// nft: `iifname "lan" tcp dport 23 drop`, `iifname "wan*" tcp dport 22
/// drop`.
const STATELESS: &str = r#"
[[set]]
name = "lan_telnet"
type = "ifname . inet_service"
match = "iifname . tcp dport"
action = "drop"
elements = ["lan . 23"]

[[set]]
name = "wan_ssh"
type = "ifname . inet_service"
match = "meta iifname . tcp dport"
action = "drop"
elements = ["\"wan*\" . 22"]
"#;

/// nft: `ct state vmap { established : accept, related : accept, invalid
/// : drop }`, `iifname "wan*" ct state new drop`.
const STATEFUL: &str = r#"
[[set]]
name = "state"
type = "ct_state : verdict"
match = "ct state"
action = "verdict"
elements = ["established : accept", "related : accept", "invalid : drop"]

[[set]]
name = "wan_new"
type = "ifname . ct_state"
match = "meta iifname . ct state"
action = "drop"
elements = ["\"wan*\" . new"]

[conntrack]
enabled = true
"#;

fn snapshot(sets: &str) -> Snapshot {
    let text = CONFIG.replace("SETS", sets);
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    build::snapshot(&cfg, 1).unwrap()
}

/// Whether a TCP segment from `src` to `dst` port `dport`, coming in on
/// port `port`, is forwarded.
fn through(
    pipe: &mut Pipeline,
    snap: &Snapshot,
    port: u16,
    src: u32,
    dst: u32,
    dport: u16,
) -> bool {
    let mut b = Burst::new();
    let mut f = ipv4(src, dst, 64, L4::Tcp(40000, dport), 0);
    f[47] = 0x02; // SYN
    forwarder::wire::set_l4_checksum(&mut f);
    b.push(&f);
    pipe.rx_port = port;
    pipe.process(snap, &mut b);
    pipe.out.iter().any(|o| o.contains(&0))
}

const LAN_HOST: u32 = 0xc000_0202;
const WAN_HOST: u32 = 0xc633_6402;

#[test]
fn the_port_a_packet_came_in_on_decides() {
    // With the flow cache, then with connection tracking (whose entries
    // keep the decisions instead).
    for sets in [
        STATELESS.to_string(),
        format!("{STATELESS}\n[conntrack]\nenabled = true\n"),
    ] {
        let tracking = sets.contains("[conntrack]");
        let snap = snapshot(&sets);
        let mut pipe = Pipeline::new(&snap, 3);
        for round in 0..3 {
            // The same segments, on each port, twice, again and again: the
            // repeat on the same port is the cache's (or the connection's)
            // to answer, the first on the next port is not (a decision not
            // bound to its port would have answered it with the last
            // port's verdict).
            for (port, telnet, ssh) in [(0, false, true), (1, true, false), (2, true, false)] {
                for again in 0..2 {
                    let t = through(&mut pipe, &snap, port, LAN_HOST, WAN_HOST, 23);
                    let s = through(&mut pipe, &snap, port, LAN_HOST, WAN_HOST, 22);
                    assert_eq!(
                        (t, s),
                        (telnet, ssh),
                        "port {port}, round {round}/{again}, conntrack {tracking}"
                    );
                    assert!(through(&mut pipe, &snap, port, LAN_HOST, WAN_HOST, 80));
                }
            }
        }
        if !tracking {
            // Each repeat hit: 3 flows, 3 ports, 3 rounds.
            assert_eq!(pipe.flow_cache_stats().hits, 27);
        }
    }
}

/// Whether the wan host's SYN-ACK from port `sport`, on the wan port, is
/// forwarded.
fn answered(pipe: &mut Pipeline, snap: &Snapshot, sport: u16) -> bool {
    let mut b = Burst::new();
    let mut f = ipv4(WAN_HOST, LAN_HOST, 64, L4::Tcp(sport, 40000), 0);
    f[47] = 0x12;
    forwarder::wire::set_l4_checksum(&mut f);
    b.push(&f);
    pipe.rx_port = 1;
    pipe.process(snap, &mut b);
    pipe.out.iter().any(|o| o.contains(&0))
}

#[test]
fn new_connections_from_the_wan_ports_are_dropped() {
    let snap = snapshot(STATEFUL);
    let mut pipe = Pipeline::new(&snap, 3);
    // The lan opens; the wan's SYN-ACK answers it (established).
    assert!(through(&mut pipe, &snap, 0, LAN_HOST, WAN_HOST, 80));
    assert!(answered(&mut pipe, &snap, 80), "the answer");
    // New from wan and from wan2 (the wildcard): dropped; from the lan,
    // new: forwarded.
    assert!(!through(&mut pipe, &snap, 1, WAN_HOST, LAN_HOST, 81));
    assert!(!through(&mut pipe, &snap, 2, WAN_HOST, LAN_HOST, 82));
    assert!(through(&mut pipe, &snap, 0, LAN_HOST, WAN_HOST, 83));
    // A flow refused on the wan port keeps that port's decision (a drop);
    // the same SYN on the lan port opens the connection, which the wan's
    // answer then finds.
    assert!(!through(&mut pipe, &snap, 1, LAN_HOST, WAN_HOST, 84));
    assert!(!through(&mut pipe, &snap, 1, LAN_HOST, WAN_HOST, 84));
    assert!(through(&mut pipe, &snap, 0, LAN_HOST, WAN_HOST, 84));
    assert!(answered(&mut pipe, &snap, 84), "the answer");
    assert_eq!(pipe.conntrack_stats().unwrap().entries, 3);
}

/// nft: `ip dscp . ip daddr { ef . 198.51.100.2 } drop`, `ip6 dscp
/// { cs1-cs3 } drop`.
const DSCP: &str = r#"
[[set]]
name = "voice"
type = "dscp . ipv4_addr"
match = "ip dscp . ip daddr"
action = "drop"
elements = ["ef . 198.51.100.2"]

[[set]]
name = "bulk6"
type = "dscp"
match = "ip6 dscp"
action = "drop"
elements = ["cs1-cs3"]
"#;

/// Whether a UDP datagram with `dscp` (IPv6 if `v6`) is forwarded.
fn marked(pipe: &mut Pipeline, snap: &Snapshot, v6: bool, dscp: u8) -> bool {
    let mut b = Burst::new();
    let mut f = if v6 {
        ipv6(
            0x2001_0db8_0001u128 << 80 | 2,
            0x2001_0db8_0002u128 << 80 | 2,
            64,
            L4::Udp(5000, 5060),
            0,
        )
    } else {
        ipv4(LAN_HOST, WAN_HOST, 64, L4::Udp(5000, 5060), 0)
    };
    if v6 {
        // Traffic class: the DSCP's six bits, then ECN.
        f[14] = 0x60 | dscp >> 2;
        f[15] = (dscp & 3) << 6;
    } else {
        let old = u16::from_be_bytes([f[14], f[15]]);
        f[15] = dscp << 2;
        let hc = u16::from_be_bytes([f[24], f[25]]);
        let c = forwarder::wire::checksum_update(hc, old, u16::from_be_bytes([f[14], f[15]]));
        f[24..26].copy_from_slice(&c.to_be_bytes());
    }
    b.push(&f);
    pipe.rx_port = 0;
    pipe.process(snap, &mut b);
    pipe.out.iter().any(|o| o.contains(&0))
}

#[test]
fn the_dscp_decides_flow_after_flow() {
    let text = CONFIG.replace("SETS", DSCP).replace(
        "{ prefix = \"198.51.100.0/24\", via = \"wan\" },",
        "{ prefix = \"198.51.100.0/24\", via = \"wan\" },\n  { prefix = \"2001:db8:2::/64\", via = \"wan\" },",
    );
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    let snap = build::snapshot(&cfg, 1).unwrap();
    let mut pipe = Pipeline::new(&snap, 3);
    for round in 0..3 {
        // One flow, its marking changing from packet to packet.
        for (dscp, v4, v6) in [
            (0, true, true),
            (46, false, true),
            (8, true, false),
            (24, true, false),
            (26, true, true),
            (46, false, true),
        ] {
            assert_eq!(
                marked(&mut pipe, &snap, false, dscp),
                v4,
                "ip dscp {dscp}, round {round}"
            );
            assert_eq!(
                marked(&mut pipe, &snap, true, dscp),
                v6,
                "ip6 dscp {dscp}, round {round}"
            );
        }
    }
    assert_eq!(pipe.flow_cache_stats().hits, 0, "the cache stands aside");
}
