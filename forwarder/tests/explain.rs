//! The explaining run agrees with the ordinary one: the same bursts
//! through two pipelines over one snapshot, one processing, one
//! explaining, give the same frames out of the same ports and the same
//! counters; and what the record says each stage did agrees with a
//! reference worked out from the tables directly (each set's element by
//! a lookup of the packet's own key, the route by the FIB's longest
//! prefix, the hop by the ECMP hash).

use forwarder::control::build;
use forwarder::filter::source_value;
use forwarder::pipeline::{Fated, FlowStage, Pipeline, SetStage, Snapshot, Stages};
use forwarder::port::{Burst, MAX_BURST};
use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::{self, L3};
use routecache::gen::Rng;
use routecache::{Family, FlowKey, Targets};
use std::path::Path;

const CONFIG: &str = r#"
route = [
  { prefix = "198.51.100.0/24", via = "gw1" },
  { prefix = "198.51.100.128/25", via = "both" },
  { prefix = "203.0.113.0/24", via = "both" },
  { prefix = "2001:db8:1::/48", via = "gw2" },
  { prefix = "2001:db8::/32", via = "both" },
]
[forwarder]
cores = [0]
[flow_cache]
entries = 1024
insert_one_in = 1
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
elements = ["198.51.100.7 . 22", "198.51.100.0/24 . 6000-6010", "203.0.113.0/25 . 0-1023"]
[[set]]
name = "v6"
type = "ipv6_addr . inet_service : verdict"
match = "ip6 daddr . udp dport"
elements = ["2001:db8:1::1 . 53 : accept", "2001:db8:1::2 . 53 : drop", "2001:db8::/32 . 1-52 : continue"]
[[set]]
name = "admit"
type = "inet_proto"
match = "meta l4proto"
action = "accept"
elements = ["icmp"]
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

fn snapshot() -> Snapshot {
    let cfg = config::parse("t.toml", CONFIG, Path::new(".")).unwrap();
    build::snapshot(&cfg, 1).unwrap()
}

/// A random packet aimed at the sets and routes, now and then malformed
/// or with a TTL about to expire.
fn packet(rng: &mut Rng) -> Vec<u8> {
    let ttl = if rng.chance(5) { 1 } else { 64 };
    let l4 = match rng.below(3) {
        0 => L4::Tcp(rng.below(65536) as u16, *rng.pick(&[22, 80, 443, 6005, 9])),
        1 => L4::Udp(rng.below(65536) as u16, *rng.pick(&[53, 22, 6001, 7])),
        _ => L4::Icmp(8, 0),
    };
    let mut f = if rng.chance(50) {
        let dst = *rng.pick(&[0xc633_6400u32, 0xc633_6480, 0xcb00_7100, 0xc000_0200]);
        ipv4(0xc000_0201, dst | rng.below(256) as u32, ttl, l4, 0)
    } else {
        let dst = *rng.pick(&[
            0x2001_0db8_0001u128 << 80,
            0x2001_0db8_0002u128 << 80,
            0x2001_0db9u128 << 96,
        ]);
        ipv6(1, dst | rng.below(4) as u128, ttl, l4, 0)
    };
    if rng.chance(3) {
        let cut = rng.below(f.len() as u64) as usize;
        f.truncate(cut);
    }
    f
}

#[test]
fn explaining_runs_as_the_pipeline_runs() {
    let t = snapshot();
    let mut plain = Pipeline::new(&t, 2);
    let mut told = Pipeline::new(&t, 2);
    let mut rng = Rng(0x5eed);
    let mut records = vec![Stages::default(); MAX_BURST];
    let mut seen_hit = false;
    for round in 0..300 {
        let n = 1 + rng.below(MAX_BURST as u64) as usize;
        let frames: Vec<Vec<u8>> = (0..n).map(|_| packet(&mut rng)).collect();
        let (mut a, mut b) = (Burst::new(), Burst::new());
        for f in &frames {
            a.push(f);
            b.push(f);
        }
        plain.rx_port = (round % 2) as u16;
        told.rx_port = plain.rx_port;
        plain.process(&t, &mut a);
        told.explain(&t, &mut b, &mut records);
        assert_eq!(
            plain.out, told.out,
            "round {round}: the same frames out of the same ports"
        );
        for (p, list) in told.out.iter().enumerate() {
            for &i in list {
                assert_eq!(a.frame(i as usize), b.frame(i as usize));
                assert_eq!(records[i as usize].fate, Fated::Forwarded(p as u16));
                assert_eq!(
                    records[i as usize].sent().unwrap(),
                    &b.frame(i as usize)[..b.frame(i as usize).len().min(64)]
                );
            }
        }
        for (i, r) in records[..n].iter().enumerate() {
            check(&t, r, &frames[i], round);
            seen_hit |= r.flow == FlowStage::Hit;
        }
    }
    assert_eq!(plain.counters.drops, told.counters.drops);
    assert_eq!(plain.counters.matches, told.counters.matches);
    assert_eq!(plain.counters.tx, told.counters.tx);
    assert!(seen_hit, "repeated flows hit the flow cache");
}

/// One record against the tables.
fn check(t: &Snapshot, r: &Stages, frame: &[u8], round: usize) {
    assert_eq!(r.frame(), &frame[..frame.len().min(256)]);
    assert_eq!(r.parsed, wire::parse(frame), "round {round}");
    let Ok(p) = r.parsed else {
        assert!(matches!(r.fate, Fated::Dropped(_)));
        assert_eq!(r.flow, FlowStage::NotLooked);
        return;
    };
    if r.flow == FlowStage::Hit {
        assert!(r.sets().iter().all(|s| *s == SetStage::NotLooked));
        return;
    }
    // Each set: looked up when no earlier set decided and the packet has
    // its fields, finding what its own key finds.
    let mut decided = false;
    for (set, stage) in t.sets.iter().zip(r.sets()) {
        let values: Option<Vec<u128>> = set
            .sources
            .iter()
            .map(|s| source_value(*s, &p, frame))
            .collect();
        // The reference: the elements, scanned.
        let matching = values
            .as_ref()
            .and_then(|v| set.snap.elements().find(|e| e.matches(v)));
        match (decided, &values, stage) {
            (true, _, SetStage::Decided) | (false, None, SetStage::NotApplicable) => {}
            (false, Some(_), SetStage::NoMatch) => assert!(matching.is_none(), "round {round}"),
            (false, Some(_), SetStage::Matched(id)) => {
                assert_eq!(set.snap.element(*id), matching, "round {round}")
            }
            _ => panic!("round {round}: set {}: {stage:?} for {p:?}", set.name),
        }
        // An accepted packet skips the rest; so does a dropped one.
        if let Some(e) = matching.filter(|_| !decided) {
            let verdict = e.data.as_ref().map(|d| d.to_string());
            decided = match set.action {
                config::Action::Verdict => matches!(verdict.as_deref(), Some("accept" | "drop")),
                _ => true,
            };
        }
    }
    // The route: the FIB's longest prefix; the hop: the ECMP member the
    // flow's hash picks.
    if let Some(target) = r.target {
        let f = if p.l3 == L3::V4 {
            Family::V4
        } else {
            Family::V6
        };
        assert_eq!(target, t.fib.lookup(f, p.dst));
        let hop = target.and_then(|tg| {
            let hash = if Targets::is_ecmp(tg) {
                FlowKey {
                    src: p.src,
                    dst: p.dst,
                    sport: p.sport,
                    dport: p.dport,
                    proto: p.proto,
                }
                .hash(t.flow_seed)
            } else {
                0
            };
            t.fib.targets().resolve_index(tg, hash)
        });
        assert_eq!(r.hop.and_then(|h| h.ok()), hop);
        if hop.is_none() {
            assert!(matches!(r.fate, Fated::Dropped(_)));
        }
    }
}
