//! The flow cache changes nothing but speed: a pipeline with it and one
//! without, fed the same random bursts of repeating flows under the same
//! changing tables, send the same frames, rewritten alike, to the same
//! ports, and count the same drops and matches.

use forwarder::control::build;
use forwarder::pipeline::Pipeline;
use forwarder::pipeline::Snapshot;
use forwarder::port::Burst;
use forwarder::wire::build::{ipv4, ipv6, L4};
use proptest::prelude::*;
use std::path::Path;

/// Two versions of the tables (`{V}` is 0 or 1): elements, verdicts and
/// routes differ, so a reload changes what cached flows must get.
const CONFIG: &str = r#"
route = [
  { prefix = "198.51.100.0/24", via = "gw1" },
  { prefix = "203.0.113.0/24", via = "both" },
  { prefix = "2001:db8:1::/48", via = "gw2" },
  { prefix = "2001:db8:2::/48", via = "both" },
  { prefix = "192.0.2.{V}/32", via = "gw2" },
]

[flow_cache]
entries = {ENTRIES}
insert_one_in = {ONE_IN}

[[port]]
name = "in"
mac = "02:00:00:00:00:01"

[[port]]
name = "out"
mac = "02:00:00:00:00:02"

[[set]]
name = "macs"
type = "ether_addr"
match = "ether saddr"
action = "drop"
elements = ["02:00:00:00:0b:0{V}"]

[[set]]
name = "allow"
type = "ipv4_addr . inet_proto"
match = "ip saddr . meta l4proto"
action = "accept"
elements = ["192.0.2.7 . {PROTO}"]

[[set]]
name = "block"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["198.51.100.7 . 22", "198.51.100.0/24 . 600{V}-6010", "203.0.113.0/25 . 53"]

[[set]]
name = "v6"
type = "ipv6_addr . inet_service : verdict"
match = "ip6 daddr . udp dport"
elements = ["2001:db8:1::1 . 53 : accept", "2001:db8:1::2 . 53 : {VERDICT}", "2001:db8:2::/64 . 1-1000 : continue"]

[[set]]
name = "ports"
type = "inet_service"
match = "th sport"
action = "drop"
elements = ["{SPORT}"]

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

fn tables(version: u8, entries: usize, one_in: u32, generation: u64) -> Snapshot {
    let v = version.to_string();
    let text = CONFIG
        .replace("{V}", &v)
        .replace("{ENTRIES}", &entries.to_string())
        .replace("{ONE_IN}", &one_in.to_string())
        .replace("{PROTO}", if version == 0 { "tcp" } else { "udp" })
        .replace("{VERDICT}", if version == 0 { "drop" } else { "accept" })
        .replace("{SPORT}", if version == 0 { "1111" } else { "2222" });
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    build::snapshot(&cfg, generation).unwrap()
}

/// A packet of one of a few dozen flows, possibly with an odd TTL, a
/// source MAC the `macs` set knows, or cut short.
#[derive(Clone, Debug)]
struct Pkt {
    flow: usize,
    ttl: u8,
    mac: u8,
    cut: Option<usize>,
}

fn frame(p: &Pkt) -> Vec<u8> {
    let v4dst = [
        0xc633_6407u32,
        0xc633_6409,
        0xcb00_7105,
        0xcb00_71f0,
        0xc000_0200,
        0xc000_0201,
    ];
    let v6dst = [
        0x2001_0db8_0001u128 << 80 | 1,
        0x2001_0db8_0001u128 << 80 | 2,
        0x2001_0db8_0002u128 << 80 | 9,
        0x2001_0db8_0003u128 << 80 | 9,
    ];
    let ports = [22u16, 53, 80, 6000, 6005, 700];
    let sports = [1111u16, 2222, 4000];
    let f = p.flow;
    let l4 = |i: usize| {
        let (s, d) = (sports[i % 3], ports[(i / 3) % ports.len()]);
        match (i / 18) % 3 {
            0 => L4::Tcp(s, d),
            1 => L4::Udp(s, d),
            _ => L4::Icmp(8, (i % 4) as u8),
        }
    };
    let mut fr = if f % 5 == 4 {
        ipv6(1, v6dst[f % v6dst.len()], p.ttl, l4(f / 5), 0)
    } else {
        let src = if f.is_multiple_of(7) {
            0xc000_0207
        } else {
            0xc000_0201
        };
        ipv4(src, v4dst[f % v4dst.len()], p.ttl, l4(f / 3), 0)
    };
    if p.mac < 3 {
        fr[6..12].copy_from_slice(&[2, 0, 0, 0, 0x0b, p.mac]);
    }
    if let Some(c) = p.cut {
        fr.truncate(c.min(fr.len()));
    }
    fr
}

fn pkt() -> impl Strategy<Value = Pkt> {
    (
        0usize..60,
        prop_oneof![8 => Just(64u8), 1 => Just(1u8), 1 => Just(0u8)],
        0u8..8,
        prop_oneof![12 => Just(None), 1 => (10usize..60).prop_map(Some)],
    )
        .prop_map(|(flow, ttl, mac, cut)| Pkt {
            flow,
            ttl,
            mac,
            cut,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn cached_pipeline_acts_as_uncached(
        entries in prop_oneof![Just(4usize), Just(16), Just(4096)],
        one_in in prop_oneof![Just(1u32), Just(2), Just(32)],
        bursts in prop::collection::vec(
            (0u8..2, prop::collection::vec(pkt(), 1..48)),
            1..30,
        ),
    ) {
        // Versions as they alternate get increasing generations, as the
        // control thread publishes them.
        let mut version = bursts[0].0;
        let mut generation = 1;
        let mut t_ref = tables(version, 0, 1, generation);
        let mut t_fc = tables(version, entries, one_in, generation);
        let mut reference = Pipeline::new(&t_ref, 2);
        let mut cached = Pipeline::new(&t_fc, 2);
        for (v, pkts) in &bursts {
            if *v != version {
                version = *v;
                generation += 1;
                t_ref = tables(version, 0, 1, generation);
                t_fc = tables(version, entries, one_in, generation);
                // Both must pick the same ECMP members.
                t_fc.flow_seed = t_ref.flow_seed;
            }
            t_fc.flow_seed = t_ref.flow_seed;
            let (mut a, mut b) = (Burst::new(), Burst::new());
            for p in pkts {
                let f = frame(p);
                a.push(&f);
                b.push(&f);
            }
            reference.process(&t_ref, &mut a);
            cached.process(&t_fc, &mut b);
            prop_assert_eq!(&reference.out, &cached.out);
            for i in 0..a.len() {
                prop_assert_eq!(a.frame(i), b.frame(i), "frame {} rewritten alike", i);
            }
            prop_assert_eq!(&reference.counters, &cached.counters);
        }
        let s = cached.flow_cache_stats();
        let total: usize = bursts.iter().map(|(_, p)| p.len()).sum();
        prop_assert!(s.hits + s.misses <= total as u64);
        prop_assert_eq!(reference.flow_cache_stats().hits, 0);
    }
}

#[test]
fn repeated_flows_hit_and_a_reload_makes_them_stale() {
    let t1 = tables(0, 4096, 1, 1);
    let mut p = Pipeline::new(&t1, 2);
    let pkts: Vec<Vec<u8>> = (0..32)
        .map(|flow| {
            frame(&Pkt {
                flow,
                ttl: 64,
                mac: 9,
                cut: None,
            })
        })
        .collect();
    let run = |p: &mut Pipeline, t: &Snapshot| {
        let mut b = Burst::new();
        for f in &pkts {
            b.push(f);
        }
        p.process(t, &mut b);
    };
    run(&mut p, &t1);
    let first = p.flow_cache_stats();
    assert_eq!(first.hits, 0);
    assert!(first.misses > 0);
    run(&mut p, &t1);
    let second = p.flow_cache_stats();
    assert_eq!(second.hits, first.misses, "every flow stored is found");
    assert_eq!(second.misses, first.misses);
    let t2 = tables(0, 4096, 1, 2);
    run(&mut p, &t2);
    let third = p.flow_cache_stats();
    assert_eq!(third.hits, second.hits, "nothing found after a reload");
    assert_eq!(third.stale, first.misses);
}

#[test]
fn many_flows_make_it_stand_aside_and_few_bring_it_back() {
    let t_ref = tables(1, 0, 1, 1);
    let mut t_fc = tables(1, 4096, 1, 1);
    t_fc.flow_seed = t_ref.flow_seed;
    let mut reference = Pipeline::new(&t_ref, 2);
    let mut cached = Pipeline::new(&t_fc, 2);
    let burst = |k: u32, few: bool| -> Vec<Vec<u8>> {
        (0..32u32)
            .map(|j| {
                // Every packet its own flow, or 64 flows over and over.
                let n = if few { j + 32 * (k % 2) } else { k * 32 + j };
                let dst = 0xc633_6400 | (n & 0xff);
                ipv4(0xc000_0201, dst, 64, L4::Udp((n >> 8) as u16, 80), 0)
            })
            .collect()
    };
    let check = |reference: &mut Pipeline, cached: &mut Pipeline, frames: Vec<Vec<u8>>| {
        let (mut a, mut b) = (Burst::new(), Burst::new());
        for f in &frames {
            a.push(f);
            b.push(f);
        }
        reference.process(&t_ref, &mut a);
        cached.process(&t_fc, &mut b);
        assert_eq!(reference.out, cached.out);
        for i in 0..a.len() {
            assert_eq!(a.frame(i), b.frame(i));
        }
        assert_eq!(reference.counters, cached.counters);
    };
    for k in 0..1000 {
        check(&mut reference, &mut cached, burst(k, false));
    }
    let s = cached.flow_cache_stats();
    assert!(s.bypassed > 0, "{s:?}");
    assert_eq!(s.hits, 0);
    for k in 0..4000 {
        check(&mut reference, &mut cached, burst(k, true));
    }
    let s2 = cached.flow_cache_stats();
    assert!(s2.hits > 64_000, "{s2:?}");
}
