//! Sets of the forward hook (`hook = "forward"`): they run after the
//! route decision, read `meta oifname` (the port the route sends the
//! packet out of), see only packets that are forwarded (not those for
//! the router itself, nor those without a route), and see a packet a
//! prerouting set accepted (nft: `accept` ends its hook only). Pinned to
//! a reference that routes each packet by hand and applies the sets as
//! nft would, with the flow cache on and off and with connection
//! tracking (each keeps decisions that the oifname went into).

use forwarder::control::build;
use forwarder::pipeline::{Pipeline, SetStage, Snapshot, Stages};
use forwarder::port::Burst;
use forwarder::reason::DropReason;
use forwarder::wire::build::{ipv4, L4};
use routecache::gen::Rng;
use std::path::Path;

const CONFIG: &str = r#"
route = [
  { prefix = "192.0.2.0/25", via = "lan" },
  { prefix = "198.51.100.0/25", via = "wan" },
  { prefix = "198.51.100.128/25", via = "wan2" },
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

[[port]]
name = "dmz"
mac = "02:00:00:00:00:04"
address = ["203.0.113.1/24"]

[[next_hop]]
name = "lan"
port = "lan"
mac = "02:00:00:00:0a:01"

[[next_hop]]
name = "wan"
port = "wan"
mac = "02:00:00:00:0b:01"

[[next_hop]]
name = "wan2"
port = "wan2"
mac = "02:00:00:00:0c:01"

[[set]]
name = "blocked"
type = "ipv4_addr"
match = "ip saddr"
action = "drop"
elements = ["192.0.2.66"]

[[set]]
name = "admin"
type = "ipv4_addr"
match = "ip saddr"
action = "accept"
elements = ["192.0.2.7"]

[[set]]
name = "out"
type = "ifname . inet_service"
match = "meta oifname . tcp dport"
action = "drop"
hook = "forward"
elements = ["dmz . 22", "\"wan*\" . 25"]
EXTRA
[flow_cache]
entries = ENTRIES
insert_one_in = 1
CONNTRACK
"#;

/// nft: `iifname "lan" oifname "lan" drop` (no hairpin on the lan).
const HAIRPIN: &str = r#"
[[set]]
name = "hairpin"
type = "ifname . ifname"
match = "meta iifname . meta oifname"
action = "drop"
hook = "forward"
elements = ["lan . lan"]
"#;

const PORTS: [&str; 4] = ["lan", "wan", "wan2", "dmz"];
const SOURCES: [u32; 4] = [0xc000_0207, 0xc000_0209, 0xc000_0242, 0xc633_6405];
const DESTS: [u32; 7] = [
    0xc000_0205, // lan
    0xc000_02c8, // no route (192.0.2.200)
    0xc633_6405, // wan
    0xc633_64c8, // wan2
    0xcb00_7105, // dmz, connected
    0xcb00_7101, // the router's own address on dmz
    0xcb00_71ff, // dmz's broadcast: connected too
];
const DPORTS: [u16; 4] = [22, 25, 80, 443];

fn snapshot(entries: usize, conntrack: bool, hairpin: bool) -> Snapshot {
    let text = CONFIG
        .replace("ENTRIES", &entries.to_string())
        .replace(
            "CONNTRACK",
            if conntrack {
                "[conntrack]\nenabled = true"
            } else {
                ""
            },
        )
        .replace("EXTRA", if hairpin { HAIRPIN } else { "" });
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    build::snapshot(&cfg, 1).unwrap()
}

/// The port a packet to `dst` leaves by, as the routes and the dmz's
/// connected network say: `None` without a route or to the router
/// itself.
fn oif(dst: u32) -> Option<&'static str> {
    match dst {
        0xcb00_7101 => None,
        _ if dst >> 7 == 0xc000_0200 >> 7 => Some("lan"),
        _ if dst >> 7 == 0xc633_6400 >> 7 => Some("wan"),
        _ if dst >> 7 == 0xc633_6480 >> 7 => Some("wan2"),
        _ if dst >> 8 == 0xcb00_7100 >> 8 => Some("dmz"),
        _ => None,
    }
}

/// Whether a set drops the packet, as nft would: `blocked` before the
/// route decision; then, for a forwarded packet (whatever `admin`
/// said), `out` and `hairpin`.
fn dropped_by_a_set(iif: &str, src: u32, dst: u32, dport: u16, hairpin: bool) -> bool {
    if src == 0xc000_0242 {
        return true;
    }
    let Some(o) = oif(dst) else {
        return false;
    };
    (o == "dmz" && dport == 22)
        || (o.starts_with("wan") && dport == 25)
        || (hairpin && iif == "lan" && o == "lan")
}

#[test]
fn forward_sets_judge_by_the_port_the_route_picks() {
    for (entries, conntrack, hairpin) in [
        (4096, false, false),
        (0, false, false),
        (0, true, false),
        (4096, false, true),
        (0, true, true),
    ] {
        let snap = snapshot(entries, conntrack, hairpin);
        let mut pipe = Pipeline::new(&snap, PORTS.len());
        let mut rng = Rng(0x5eed ^ entries as u64 ^ (conntrack as u64) << 20);
        let mut rule_drops = 0u64;
        for round in 0..400 {
            let port = rng.next_u64() as usize % PORTS.len();
            let mut b = Burst::new();
            let mut want = Vec::new();
            for _ in 0..1 + rng.next_u64() % 32 {
                // Few flows, so that they repeat (the flow cache answers
                // them, and conntrack's entries do).
                let src = SOURCES[rng.next_u64() as usize % SOURCES.len()];
                let dst = DESTS[rng.next_u64() as usize % DESTS.len()];
                let dport = DPORTS[rng.next_u64() as usize % DPORTS.len()];
                let mut f = ipv4(src, dst, 64, L4::Tcp(40000, dport), 0);
                f[47] = 0x02; // SYN
                forwarder::wire::set_l4_checksum(&mut f);
                b.push(&f);
                want.push(dropped_by_a_set(PORTS[port], src, dst, dport, hairpin));
            }
            pipe.rx_port = port as u16;
            pipe.process(&snap, &mut b);
            for (i, &w) in want.iter().enumerate() {
                let got = pipe.dropped_reason(i) == Some(DropReason::Rule);
                assert_eq!(
                    got,
                    w,
                    "round {round}, packet {i} on {}: {:x?} (cache {entries}, conntrack \
                     {conntrack}, hairpin {hairpin})",
                    PORTS[port],
                    &b.frame(i)[26..38]
                );
                rule_drops += w as u64;
            }
        }
        // The sets' counters add up, whoever decided (a set, a cached
        // decision, a connection's).
        let m = &pipe.counters.matches;
        let drops: u64 = (0..m.len()).map(|s| m[s][0]).sum();
        assert_eq!(drops, rule_drops);
        if entries > 0 && !hairpin {
            // `meta oifname` follows the route, which the cache keeps.
            assert!(pipe.flow_cache_stats().hits > 0);
        }
    }
}

#[test]
fn a_trace_shows_the_forward_sets_after_the_route() {
    let snap = snapshot(0, false, false);
    let mut pipe = Pipeline::new(&snap, PORTS.len());
    let mut b = Burst::new();
    for (src, dst, dport) in [
        // Accepted before routing, dropped after it.
        (0xc000_0207, 0xcb00_7105, 22),
        // Forwarded: the forward set looked up, no match.
        (0xc000_0209, 0xc633_6405, 80),
        // To the router itself, and without a route: not forwarded.
        (0xc000_0209, 0xcb00_7101, 22),
        (0xc000_0209, 0xc000_02c8, 22),
        // Dropped before routing.
        (0xc000_0242, 0xcb00_7105, 22),
    ] {
        let mut f = ipv4(src, dst, 64, L4::Tcp(40000, dport), 0);
        f[47] = 0x02;
        forwarder::wire::set_l4_checksum(&mut f);
        b.push(&f);
    }
    let mut out = [Stages::default(); 5];
    pipe.rx_port = 0;
    pipe.explain(&snap, &mut b, &mut out);
    let sets: Vec<&[SetStage]> = out.iter().map(|s| s.sets()).collect();
    assert!(matches!(
        sets[0],
        [
            SetStage::NoMatch,
            SetStage::Matched(_),
            SetStage::Matched(_)
        ]
    ));
    assert!(out[0].hop.is_some_and(|h| h.is_ok()));
    assert!(matches!(
        sets[1],
        [SetStage::NoMatch, SetStage::NoMatch, SetStage::NoMatch]
    ));
    assert_eq!(sets[2][2], SetStage::NotForwarded);
    assert_eq!(sets[3][2], SetStage::NotForwarded);
    assert!(matches!(
        sets[4],
        [SetStage::Matched(_), SetStage::Decided, SetStage::Decided]
    ));
    assert_eq!(out[4].hop, None, "dropped before the route decision");

    // In words: the forward set after the route and the next hop.
    let cx = forwarder::trace::Context {
        origins: &forwarder::trace::NoOrigins,
        neigh: Default::default(),
        neighbours: &[],
        now_ms: 0,
    };
    let v = forwarder::trace::describe(&out[0], &snap, &cx, None, false, true);
    let names: Vec<String> = v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap_or("").to_string())
        .collect();
    let route = names.iter().position(|s| s == "route").unwrap();
    let last_set = names.iter().rposition(|s| s == "set").unwrap();
    assert!(last_set > route, "{names:?}");
    let out_set = &v["stages"][last_set];
    assert_eq!(out_set["set"], "out");
    assert_eq!(out_set["key"], "\"dmz\" . 22", "{out_set}");
}
