use super::*;
use crate::control::build;
use crate::pipeline::Snapshot;
use crate::wire::build::{ipv4, L4};

fn tables(generation: u64, extra_set: bool) -> Snapshot {
    let mut text = String::from(
        r#"
route = [{ prefix = "0.0.0.0/0", via = "gw" }]
[forwarder]
cores = [0, 1]
[[port]]
name = "p"
[[set]]
name = "deny"
type = "inet_service"
match = "udp dport"
action = "drop"
elements = ["53"]
[[next_hop]]
name = "gw"
port = "p"
mac = "02:00:00:00:00:fe"
"#,
    );
    if extra_set {
        text.push_str(
            "[[set]]\nname = \"more\"\ntype = \"inet_service\"\nmatch = \"tcp dport\"\naction = \"drop\"\nelements = [\"22\"]\n",
        );
    }
    let cfg = config::parse("t.toml", &text, std::path::Path::new(".")).unwrap();
    build::snapshot(&cfg, generation).unwrap()
}

fn state(slot: &Slot) -> Option<(bool, Vec<String>)> {
    let g = slot.0.lock().unwrap();
    Some((g.0, g.1.set_names.clone()))
}

/// A worker meeting a new generation takes the state prepared for it
/// (its own slot, no other) and leaves its previous state there, to
/// be freed with the snapshot off the worker; counts of a set kept by
/// name carry over.
#[test]
fn new_generations_take_the_state_prepared_for_the_worker() {
    let (t1, t2) = (tables(1, false), tables(2, true));
    assert_eq!(t2.slots.len(), 2);
    let mut pipe = Pipeline::new(&t1, 1).for_worker(1);
    // Built without touching a slot.
    assert!(state(&t1.slots[0]).unwrap().0);
    assert!(state(&t1.slots[1]).unwrap().0);
    let dns = ipv4(0x0a00_0001, 0xc000_0201, 64, L4::Udp(1000, 53), 0);
    let mut burst = Burst::new();
    burst.push(&dns);
    pipe.process(&t1, &mut burst);
    assert_eq!(pipe.counters.matches, vec![[1, 0, 0]]);
    pipe.process(&t2, &mut burst);
    assert_eq!(
        state(&t2.slots[1]),
        Some((false, vec!["deny".to_string()])),
        "the old state is left in the worker's slot"
    );
    assert!(state(&t2.slots[0]).unwrap().0, "not another worker's");
    assert_eq!(pipe.counters.set_names, ["deny", "more"]);
    assert_eq!(pipe.counters.matches, vec![[2, 0, 0], [0, 0, 0]]);
    // Without a slot for its index, a pipeline builds the state itself.
    let mut alone = Pipeline::new(&t1, 1).for_worker(7);
    alone.process(&t2, &mut burst);
    assert_eq!(alone.counters.set_names, ["deny", "more"]);
}

/// Routed frames of every kind (IPv4 and IPv6, every TTL that matters,
/// routes to a hop, an ECMP group (of untagged hops, and of hops on a
/// VLAN sub-interface), a hop on a VLAN sub-interface and to nowhere, frames arriving tagged, truncated, non-IP) leave the same way
/// through the folded way out (`send_plain`) as through the general one:
/// the same lists, the same bytes, the same counts. The general way is
/// the reference: the folded one only decides sooner. So does the
/// express way (`express`), in route mode and in the full pipeline with
/// no set, on bursts of plain frames only (which it takes) and on mixed
/// ones (which it leaves), with the route hint and dst cache off and on,
/// in the default VRF and another; and the flow cache's express way, in
/// the full pipeline with sets (drop, accept, a counted element), on
/// bursts all of whose flows miss, some, and none. The fates left for a
/// capture of drops, the sets' matches and the cache's hits and misses
/// too.
#[test]
fn the_folded_and_express_ways_agree_with_the_general_one() {
    use crate::wire::build::ipv6;
    use routecache::gen::Rng;
    let text = r#"
route = [
  { prefix = "198.51.100.0/25", via = "a" },
  { prefix = "198.51.100.128/26", via = "both" },
  { prefix = "198.51.100.192/27", via = "tagged" },
  { prefix = "198.51.100.224/29", via = "gw" },
  { prefix = "198.51.100.232/29", via = "tgw" },
  { prefix = "198.51.100.240/29", via = "tboth" },
  { prefix = "2001:db8:1::/48", via = "b" },
  { prefix = "2001:db8:2::/48", via = "both" },
  { prefix = "2001:db8:3::/48", via = "tagged" },
  { prefix = "2001:db8:4::/48", via = "tboth" },
]
[forwarder]
cores = [0]
[[port]]
name = "p0"
mac = "02:00:00:00:00:01"
address = ["192.0.2.1/24"]
[[port]]
name = "p1"
mac = "02:00:00:00:00:02"
[[port]]
name = "p1.100"
parent = "p1"
vlan = 100
address = ["203.0.113.1/24"]
[[next_hop]]
name = "a"
port = "p0"
mac = "02:00:00:00:0a:01"
[[next_hop]]
name = "b"
port = "p1"
mac = "02:00:00:00:0a:02"
[[next_hop]]
name = "tagged"
port = "p1.100"
mac = "02:00:00:00:0a:03"
[[next_hop]]
name = "gw"
port = "p0"
address = "192.0.2.7"
[[next_hop]]
name = "tgw"
port = "p1.100"
address = "203.0.113.7"
[[next_hop]]
name = "tagged2"
port = "p1.100"
mac = "02:00:00:00:0a:04"
[[ecmp]]
name = "both"
members = ["a", "b"]
[[ecmp]]
name = "tboth"
members = ["tagged", "tagged2"]
"#;
    let snap_of = |extra: &str, vrf: bool| {
        let mut cfg = config::parse(
            "t.toml",
            &format!("{text}{extra}"),
            std::path::Path::new("."),
        )
        .unwrap();
        if vrf {
            // Every port and route in VRF 1 (the express way looks the
            // routes up in the port's VRF).
            crate::port::synthetic::in_vrf(&mut cfg);
        }
        build::snapshot(&cfg, 1).unwrap()
    };
    // The sub-interface alone in VRF 1, which has every other route:
    // its tagged frames route apart from their parent's.
    let sub_vrf = |extra: &str| {
        let mut cfg = config::parse(
            "t.toml",
            &format!("{text}{extra}"),
            std::path::Path::new("."),
        )
        .unwrap();
        cfg.vrfs.push(config::VrfConfig {
            name: "red".into(),
            table: None,
            route_file: None,
            file_routes: Vec::new().into(),
        });
        for p in cfg.ports.iter_mut().filter(|p| p.name == "p1.100") {
            p.vrf = 1;
        }
        let red: Vec<_> = cfg
            .routes
            .iter()
            .step_by(2)
            .map(|r| config::RouteConfig { vrf: 1, ..*r })
            .collect();
        cfg.routes.extend(red);
        build::snapshot(&cfg, 1).unwrap()
    };
    // With no set the flow cache is off, configured or not (the second:
    // its hash, seeded at random, would make two pipelines look up
    // different frames).
    // With sets the flow cache is on (every miss stored: the same flows
    // cached in every pipeline), and the full pipeline's express way is
    // the flow cache's; one set drops, one accepts, one element counted
    // (its flows never stored).
    let sets = r#"
[flow_cache]
entries = 1024
insert_one_in = 1
[[set]]
name = "low"
type = "inet_service"
match = "udp dport"
action = "drop"
elements = ["0-8191"]
[[set]]
name = "high"
type = "inet_service"
match = "udp sport"
action = "accept"
elements = ["60000-65535"]
[[set]]
name = "counted"
type = "inet_service"
match = "udp dport"
action = "accept"
counter = true
elements = ["65000-65535"]
"#;
    let snaps = [
        snap_of("", false),
        snap_of(
            "[flow_cache]\nentries = 1024\n[route_cache]\nhint = true\ndst_cache_entries = 64\n",
            false,
        ),
        snap_of("", true),
        snap_of(sets, false),
        snap_of(sets, true),
        sub_vrf(sets),
    ];
    let mut rng = Rng(46);
    let ttls = [0u8, 1, 2, 64, 255];
    let mut kinds = [0usize; 5];
    let mut express = 0;
    let mut tagged_express = 0;
    for round in 0..1200 {
        let snap = &snaps[round / 6 % snaps.len()];
        // Half the rounds only plain frames (untagged, whole, IP): bursts
        // the express way takes; a third of those with a quarter of them
        // tagged (VLAN 100, p1.100's, or a priority tag): bursts the flow
        // cache's express way takes on p1.
        let mixed = round % 6 < 3;
        let tagging = round % 6 == 5;
        let mut burst = Burst::new();
        let n = 1 + rng.below(64) as usize;
        for _ in 0..n {
            let ttl = ttls[rng.below(ttls.len() as u64) as usize];
            let l4 = L4::Udp(rng.below(65536) as u16, rng.below(65536) as u16);
            let mut f = if rng.below(4) == 0 {
                let dst = 0x2001_0db8_0000_0000_0000_0000_0000_0000u128
                    | (rng.below(5) as u128) << 80
                    | rng.below(1 << 16) as u128;
                ipv6(0x2001_0db8_00ff << 80, dst, ttl, l4, 0)
            } else {
                // Some beyond the routes (no route).
                let dst = 0xc633_6400 | rng.below(256) as u32;
                let dst = if rng.below(8) == 0 { 0xcb00_7100 } else { dst };
                ipv4(0xc000_0201, dst, ttl, l4, rng.below(40) as usize)
            };
            match if mixed { rng.below(16) } else { 16 } {
                // Arriving tagged (the trunk's VLAN 100).
                0 => {
                    f.splice(12..12, [0x81, 0x00, 0x00, 100]);
                }
                1 => f.truncate(rng.below(40) as usize),
                2 => f[12..14].copy_from_slice(&[0x88, 0xb5]),
                _ => {}
            }
            if tagging && rng.below(4) == 0 {
                let vid = [0, 100, 100][rng.below(3) as usize];
                f.splice(12..12, [0x81, 0x00, 0x00, vid]);
            }
            burst.push(&f);
        }
        // Route mode, or the full pipeline (no set here).
        let mode = [Mode::Route, Mode::Full][round / 4 % 2];
        let part = 1 + rng.below(n as u64) as usize;
        let run = |plain: bool, express: bool| {
            let mut pipe = Pipeline::with_mode(snap, 2, mode);
            pipe.plain = plain;
            pipe.express_off = !express;
            pipe.rx_port = (round / 8 % 2) as u16;
            let mut b = Burst::new();
            // First a burst the general way drops whole (truncated
            // frames), then no wait: a way that leaves a frame's fate as
            // the burst before left it would report a forwarded frame
            // dropped (a capture of drops asks).
            for _ in 0..MAX_BURST {
                b.push(&[0u8; 20]);
            }
            pipe.process(snap, &mut b);
            pipe.express_wait = 0;
            let mut out = Vec::new();
            // The burst's first `part` frames, then the burst twice: the
            // second meets some flows and routes cached, the third all.
            for k in [part, burst.len(), burst.len()] {
                b.clear();
                for i in 0..k {
                    b.push(burst.frame(i));
                }
                pipe.process(snap, &mut b);
                out.push(pipe.out.clone());
            }
            let frames: Vec<Vec<u8>> = (0..b.len()).map(|i| b.frame(i).to_vec()).collect();
            let c = &pipe.counters;
            let r = pipe.cache_stats();
            // The dst cache's hash is seeded at random in each
            // pipeline: which lookups hit is not the same in two, how
            // many it answered is.
            let routed = (r.hint_hits, r.hits + r.misses, r.stale);
            let dropped: Vec<_> = (0..b.len()).map(|i| pipe.dropped_reason(i)).collect();
            let f = pipe.flow_cache_stats();
            let cached = (c.matches.clone(), f.hits, f.misses, c.links.clone());
            (
                (out, frames, c.tx, c.drops, c.rx, routed, dropped, cached),
                pipe.express_bursts(),
            )
        };
        let (general, none) = run(false, false);
        let (folded, _) = run(true, false);
        let (fast, taken) = run(true, true);
        assert_eq!(none, 0);
        for (k, (a, b)) in [(&folded, &general), (&fast, &general)]
            .into_iter()
            .enumerate()
        {
            let way = ["folded", "express"][k];
            assert_eq!(a.0, b.0, "round {round}: the {way} way's lists");
            assert_eq!(a.1, b.1, "round {round}: the {way} way's frames");
            assert_eq!(a.2, b.2, "round {round}: the {way} way's sent");
            assert_eq!(a.3, b.3, "round {round}: the {way} way's drops");
            assert_eq!(a.4, b.4, "round {round}: the {way} way's received");
            assert_eq!(a.5, b.5, "round {round}: the {way} way's routes");
            assert_eq!(a.6, b.6, "round {round}: the {way} way's drops by frame");
            assert_eq!(
                a.7, b.7,
                "round {round}: the {way} way's matches, flows and sub-interfaces"
            );
        }
        // It takes every burst of plain frames, and no other; both
        // express ways also take a plain packet behind one tag its port
        // places, the route's only where its sub-interface is in its
        // port's VRF (p1.100 is not in the last snapshot).
        let cached = round / 6 % snaps.len() >= 3 && mode == Mode::Full;
        let apart = round / 6 % snaps.len() == 5;
        let rx = round / 8 % 2;
        let takes = |f: &[u8]| {
            let tag = match f.get(12..16) {
                Some(&[0x81, 0, 0, 0]) => true,
                Some(&[0x81, 0, 0, 100]) => rx == 1 && (cached || !apart),
                _ => false,
            };
            wire::plain_dst(f).is_some()
                || (tag && f.get(4..).is_some_and(|g| wire::plain_dst(g).is_some()))
        };
        let plain = |k: usize| (0..k).all(|i| takes(burst.frame(i)));
        let want = plain(part) as u64 + if plain(burst.len()) { 2 } else { 0 };
        if (0..burst.len()).any(|i| burst.frame(i).get(12) == Some(&0x81)) {
            tagged_express += taken;
        }
        assert_eq!(taken, want, "round {round}");
        express += taken;
        kinds[0] += folded.0[1].iter().map(Vec::len).sum::<usize>();
        kinds[1] += folded.3[DropReason::TtlExpired.index()] as usize;
        kinds[2] += folded.3[DropReason::NoRoute.index()] as usize;
        kinds[3] += folded.1.iter().filter(|f| f.get(12) == Some(&0x81)).count();
        kinds[4] += folded.3[DropReason::Unresolved.index()] as usize;
    }
    // Each kind was met, many times; the express way took hundreds of
    // bursts (half the rounds are plain, a few of their bursts wholly).
    assert!(kinds.iter().all(|&k| k > 100), "{kinds:?}");
    assert!(express > 300, "{express} bursts the express way");
    assert!(tagged_express > 20, "{tagged_express} with tagged frames");
}

/// The going mask read eight fate bytes at a time agrees with a match on
/// each fate, for every kind of fate in every position and every count.
#[test]
fn the_going_mask_agrees_with_each_fate() {
    let kinds: Vec<Fate> = [Fate::Go, Fate::Accepted, Fate::Cached]
        .into_iter()
        .chain(DropReason::ALL.into_iter().map(Fate::Dropped))
        .collect();
    let mut rng = routecache::gen::Rng(0x90);
    for round in 0..2000 {
        let mut fate = [Fate::Go; MAX_BURST];
        for f in fate.iter_mut() {
            // Runs of one kind, and mixes: every byte pattern near another.
            *f = kinds[if round % 3 == 0 {
                round % kinds.len()
            } else {
                rng.below(kinds.len() as u64) as usize
            }];
        }
        let n = rng.below(MAX_BURST as u64 + 1) as usize;
        let want = (0..n).fold(0u64, |m, i| {
            m | (matches!(fate[i], Fate::Go | Fate::Accepted) as u64) << i
        });
        assert_eq!(going(&fate, n), want, "round {round}, n {n}");
    }
}
