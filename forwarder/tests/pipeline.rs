//! The per-burst pipeline on hand-made frames: classification, routing,
//! rewriting and every drop reason, checked frame by frame.

use forwarder::control::build;
use forwarder::pipeline::Pipeline;
use forwarder::pipeline::Snapshot;
use forwarder::port::Burst;
use forwarder::reason::DropReason;
use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::{checksum, parse};
use std::path::Path;

const CONFIG: &str = r#"
route = [
  { prefix = "198.51.100.0/24", via = "gw1" },
  { prefix = "203.0.113.0/24", via = "both" },
  { prefix = "2001:db8:1::/48", via = "gw2" },
]

[[port]]
name = "in"
mac = "02:00:00:00:00:01"

[[port]]
name = "out"
mac = "02:00:00:00:00:02"

[[set]]
name = "block"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["198.51.100.7 . 22", "198.51.100.0/24 . 6000-6010"]

[[set]]
name = "v6"
type = "ipv6_addr . inet_service : verdict"
match = "ip6 daddr . udp dport"
elements = ["2001:db8:1::1 . 53 : accept", "2001:db8:1::2 . 53 : drop"]

[[next_hop]]
name = "gw1"
port = "out"
mac = "02:00:00:00:0a:01"

[[next_hop]]
name = "gw2"
port = "in"
mac = "02:00:00:00:0a:02"

[[ecmp]]
name = "both"
members = ["gw1", "gw2"]
"#;

fn setup() -> (Snapshot, Pipeline) {
    let cfg = config::parse("t.toml", CONFIG, Path::new(".")).unwrap();
    let t = build::snapshot(&cfg, 1).unwrap();
    let p = Pipeline::new(&t, 2);
    (t, p)
}

#[test]
fn frames_are_judged_routed_and_rewritten() {
    let (t, mut p) = setup();
    let mut b = Burst::new();
    let frames = [
        ipv4(0xc000_0201, 0xc633_6407, 64, L4::Tcp(999, 22), 0), // 0 blocked
        ipv4(0xc000_0201, 0xc633_6407, 64, L4::Tcp(999, 80), 0), // 1 -> out
        ipv4(0xc000_0201, 0xc633_6409, 64, L4::Udp(9, 6005), 0), // 2 blocked (range)
        ipv4(0xc000_0201, 0xc000_0299, 64, L4::Udp(9, 6005), 0), // 3 no route
        ipv4(0xc000_0201, 0xc633_6407, 1, L4::Udp(9, 80), 0),    // 4 ttl expired
        ipv6(1, 0x2001_0db8_0001u128 << 80 | 1, 9, L4::Udp(5, 53), 0), // 5 accepted -> in
        ipv6(1, 0x2001_0db8_0001u128 << 80 | 2, 9, L4::Udp(5, 53), 0), // 6 dropped
        ipv4(0xc000_0201, 0xcb00_7105, 64, L4::Tcp(1000, 443), 0), // 7 ECMP
        vec![0u8; 10],                                           // 8 truncated
    ];
    for f in &frames {
        assert!(b.push(f));
    }
    let mut arp = ipv4(1, 2, 3, L4::Udp(1, 2), 0);
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    b.push(&arp); // 9 ARP
    p.process(&t, &mut b);
    let sent: Vec<u8> = p.out.iter().flatten().copied().collect();
    let mut sent_sorted = sent.clone();
    sent_sorted.sort();
    assert_eq!(sent_sorted, vec![1, 5, 7]);
    assert!(
        p.out[1].contains(&1),
        "198.51.100.7:80 leaves by gw1's port"
    );
    assert!(p.out[0].contains(&5), "2001:db8:1::1 leaves by gw2's port");
    // Rewritten: next hop's MAC, our port's MAC, TTL - 1, valid checksum.
    let f = b.frame(1);
    assert_eq!(&f[0..6], &[2, 0, 0, 0, 0x0a, 1]);
    assert_eq!(&f[6..12], &[2, 0, 0, 0, 0, 2]);
    assert_eq!(parse(f).unwrap().ttl, 63);
    assert_eq!(checksum(&f[14..34]), 0);
    assert_eq!(parse(b.frame(5)).unwrap().ttl, 8);
    let c = &p.counters;
    assert_eq!(c.rx, 10);
    assert_eq!(c.tx, 3);
    assert_eq!(c.drops[DropReason::Rule.index()], 3);
    assert_eq!(c.drops[DropReason::NoRoute.index()], 1);
    assert_eq!(c.drops[DropReason::TtlExpired.index()], 1);
    assert_eq!(c.drops[DropReason::Truncated.index()], 1);
    assert_eq!(c.drops[DropReason::Arp.index()], 1);
    // The verdict map: one element accepts, one drops.
    assert_eq!(c.matches, vec![[2, 0, 0], [1, 1, 0]]);
}

#[test]
fn a_flow_keeps_its_ecmp_member() {
    let (t, mut p) = setup();
    let mut seen = std::collections::HashMap::new();
    for round in 0..3 {
        let mut b = Burst::new();
        for sport in 0..32u16 {
            b.push(&ipv4(
                0xc000_0201,
                0xcb00_7105,
                64,
                L4::Tcp(1000 + sport, 443),
                0,
            ));
        }
        p.process(&t, &mut b);
        for port in 0..2 {
            for &i in &p.out[port] {
                let prev = seen.insert(i, port);
                assert!(round == 0 || prev == Some(port), "flow {i} moved");
            }
        }
    }
    let used: std::collections::HashSet<_> = seen.values().collect();
    assert_eq!(used.len(), 2, "32 flows spread over both members");
}

/// `--mode mac`: every frame long enough for an Ethernet header gets the
/// first next hop's MACs and leaves by its port, nothing else touched;
/// shorter ones are dropped as truncated.
#[test]
fn mac_mode_sets_macs_and_nothing_else() {
    use forwarder::pipeline::Mode;
    let (t, _) = setup();
    let mut p = Pipeline::with_mode(&t, 2, Mode::Mac);
    let mut b = Burst::new();
    let v4 = ipv4(0xc000_0201, 0xc000_0299, 1, L4::Udp(9, 6005), 0);
    b.push(&v4);
    b.push(&[7u8; 14]);
    b.push(&[7u8; 13]);
    p.process(&t, &mut b);
    // gw1 (the first next hop) is on port `out`.
    assert_eq!(p.out[1], vec![0, 1]);
    assert!(p.out[0].is_empty());
    for i in 0..2 {
        let f = b.frame(i);
        assert_eq!(&f[0..6], &[2, 0, 0, 0, 0x0a, 1]);
        assert_eq!(&f[6..12], &[2, 0, 0, 0, 0, 2]);
    }
    // The rest as it came: no TTL decrement (it was 1), same checksum.
    assert_eq!(&b.frame(0)[12..], &v4[12..]);
    assert_eq!(&b.frame(1)[12..], &[7, 7]);
    assert_eq!(b.frame(2), &[7u8; 13]);
    assert_eq!(p.counters.tx, 2);
    assert_eq!(p.counters.drops[DropReason::Truncated.index()], 1);
    assert_eq!(Mode::parse("mac"), Some(Mode::Mac));
    assert_eq!(Mode::Mac.name(), "mac");
    // A pipeline without the hop's port (one egress port, the hop on the
    // second): counted, not a panic.
    let mut p = Pipeline::with_mode(&t, 1, Mode::Mac);
    let mut b = Burst::new();
    b.push(&v4);
    p.process(&t, &mut b);
    assert!(p.out[0].is_empty());
    assert_eq!(p.counters.tx, 0);
    assert_eq!(p.counters.drops[DropReason::UnknownNextHop.index()], 1);
}

/// `--mode rewrite`: every frame that parses is rewritten towards the
/// first next hop (MACs, TTL - 1, checksum) whatever its destination, no
/// set or route consulted; what does not parse or has no TTL left is
/// dropped for its reason. Without the hop's port: counted, no panic.
#[test]
fn rewrite_mode_rewrites_every_parsed_frame_towards_the_first_hop() {
    use forwarder::pipeline::Mode;
    let (t, _) = setup();
    let frames = [
        ipv4(0xc000_0201, 0xc633_6407, 64, L4::Tcp(999, 22), 0), // 0 a blocked flow: sent
        ipv4(0xc000_0201, 0xc000_0299, 64, L4::Udp(9, 6005), 0), // 1 no route: sent
        ipv4(0xc000_0201, 0xc633_6407, 1, L4::Udp(9, 80), 0),    // 2 ttl expired
        ipv6(1, 0x2001_0db8_0001u128 << 80 | 2, 9, L4::Udp(5, 53), 0), // 3 sent
        vec![0u8; 10],                                           // 4 truncated
    ];
    let mut p = Pipeline::with_mode(&t, 2, Mode::Rewrite);
    let mut b = Burst::new();
    for f in &frames {
        assert!(b.push(f));
    }
    p.process(&t, &mut b);
    assert_eq!(p.out[1], vec![0, 1, 3]);
    assert!(p.out[0].is_empty());
    for i in [0, 1, 3] {
        let f = b.frame(i);
        assert_eq!(&f[0..6], &[2, 0, 0, 0, 0x0a, 1]);
        assert_eq!(&f[6..12], &[2, 0, 0, 0, 0, 2]);
    }
    assert_eq!(parse(b.frame(0)).unwrap().ttl, 63);
    assert_eq!(checksum(&b.frame(1)[14..34]), 0);
    assert_eq!(parse(b.frame(3)).unwrap().ttl, 8);
    assert_eq!(p.counters.tx, 3);
    assert_eq!(p.counters.drops[DropReason::TtlExpired.index()], 1);
    assert_eq!(p.counters.drops[DropReason::Truncated.index()], 1);
    let mut p = Pipeline::with_mode(&t, 1, Mode::Rewrite);
    let mut b = Burst::new();
    b.push(&frames[1]);
    p.process(&t, &mut b);
    assert!(p.out[0].is_empty());
    assert_eq!(p.counters.tx, 0);
    assert_eq!(p.counters.drops[DropReason::UnknownNextHop.index()], 1);
}

/// A new snapshot whose next hops have other MACs and ports: the next
/// burst's frames get the new ones (the pipeline keeps its own copy of the
/// hops, rebuilt with every snapshot), with the flow cache and without.
#[test]
fn a_new_snapshot_brings_its_next_hops_macs_and_ports() {
    let moved = CONFIG
        .replace("mac = \"02:00:00:00:0a:01\"", "mac = \"02:00:00:00:0c:01\"")
        .replace(
            "name = \"gw1\"\nport = \"out\"",
            "name = \"gw1\"\nport = \"in\"",
        );
    assert_ne!(moved, CONFIG);
    for entries in [0, 64] {
        let cache = format!("[flow_cache]\nentries = {entries}\ninsert_one_in = 1\n");
        let build = |text: &str, generation| {
            let cfg = config::parse("t.toml", &format!("{text}{cache}"), Path::new(".")).unwrap();
            build::snapshot(&cfg, generation).unwrap()
        };
        let (t1, t2) = (build(CONFIG, 1), build(&moved, 2));
        let mut p = Pipeline::new(&t1, 2);
        let frame = ipv4(0xc000_0201, 0xc633_6407, 64, L4::Tcp(999, 80), 0);
        for (t, port, mac) in [
            (&t1, 1, [2, 0, 0, 0, 0x0a, 1]),
            (&t1, 1, [2, 0, 0, 0, 0x0a, 1]),
            (&t2, 0, [2, 0, 0, 0, 0x0c, 1]),
            (&t2, 0, [2, 0, 0, 0, 0x0c, 1]),
        ] {
            let mut b = Burst::new();
            b.push(&frame);
            p.process(t, &mut b);
            assert_eq!(p.out[port], vec![0], "entries {entries}");
            assert!(p.out[1 - port].is_empty());
            assert_eq!(&b.frame(0)[0..6], &mac, "entries {entries}");
            let ours = if port == 0 { 1 } else { 2 };
            assert_eq!(&b.frame(0)[6..12], &[2, 0, 0, 0, 0, ours]);
        }
        if entries > 0 {
            let s = p.flow_cache_stats();
            assert_eq!((s.hits, s.misses), (2, 2), "one hit per snapshot");
        }
    }
}
