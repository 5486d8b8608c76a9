//! The FIB, and the FIB behind the route hint and the dst cache, against a
//! naive longest-prefix match, across random route changes (each published
//! as a new generation) interleaved with lookups.

use proptest::prelude::*;
use routecache::gen::Rng;
use routecache::reference::NaiveLpm;
use routecache::{DstCache, Family, Fib, FibSnapshot, HashKind, NextHop, Router, TargetId};
use std::sync::Arc;

struct World {
    family: Family,
    anchors: Vec<u128>,
    targets: Vec<TargetId>,
}

impl World {
    fn new(rng: &mut Rng, fib: &mut Fib, family: Family) -> World {
        let w = family.width();
        let full = u128::MAX >> (128 - w);
        let base = ((rng.next_u64() as u128) << 64 | rng.next_u64() as u128) & full;
        // Anchors share a prefix and differ in a few bits at random places,
        // so routes nest and overlap.
        let anchors = (0..6)
            .map(|_| {
                let mut a = base;
                for _ in 0..3 {
                    a ^= 1u128 << rng.below(w as u64);
                }
                a
            })
            .collect();
        let mut targets: Vec<TargetId> = (0..6u16)
            .map(|p| {
                fib.add_next_hop(NextHop {
                    port: p,
                    dst_mac: [2, 0, 0, 0, 0, p as u8],
                    src_mac: [2, 0, 0, 0, 1, p as u8],
                })
            })
            .collect();
        targets.push(fib.add_ecmp_group(&[0, 1, 2]).unwrap());
        targets.push(fib.add_ecmp_group(&[3, 4]).unwrap());
        World {
            family,
            anchors,
            targets,
        }
    }

    fn prefix(&self, rng: &mut Rng) -> (u128, u32) {
        let w = self.family.width();
        let a = self.anchors[rng.below(self.anchors.len() as u64) as usize];
        // Mostly long prefixes (they nest around the anchors); now and then
        // a short one, which rewrites a large part of the first level.
        let len = match rng.below(48) {
            0 => rng.below(w as u64 + 1) as u32,
            // IPv6 routes of /64 or shorter: what the range tree holds
            // (the longer ones leave it to the trie).
            _ if w == 128 && rng.below(2) == 0 => 16 + rng.below(49) as u32,
            1..=9 => w,
            10..=21 => w.saturating_sub(8 + rng.below(16) as u32),
            _ => w.saturating_sub(rng.below(10) as u32),
        };
        let mask = if len == 0 {
            0
        } else {
            (u128::MAX >> (128 - w)) & !((1u128 << (w - len)) - 1)
        };
        (a & mask, len)
    }

    fn addr(&self, rng: &mut Rng) -> u128 {
        let w = self.family.width();
        let mut a = self.anchors[rng.below(self.anchors.len() as u64) as usize];
        for _ in 0..rng.below(3) {
            a ^= 1u128 << rng.below(w as u64);
        }
        a
    }
}

fn check(
    snap: &FibSnapshot,
    naive: &NaiveLpm,
    world: &World,
    rng: &mut Rng,
    routers: &mut (Router<u32>, Router<u128>),
) {
    let f = world.family;
    // Bursts with repeats, so that the hint has work.
    for _ in 0..8 {
        let mut dsts = Vec::new();
        while dsts.len() < 32 {
            let a = world.addr(rng);
            for _ in 0..1 + rng.below(3) {
                dsts.push(a);
            }
        }
        dsts.truncate(32);
        let want: Vec<Option<TargetId>> = dsts.iter().map(|&d| naive.lookup(f, d)).collect();
        for &d in &dsts {
            assert_eq!(snap.lookup(f, d), naive.lookup(f, d), "fib {d:#x}");
            // The prefix that answers, read back from the table's entry.
            assert_eq!(
                snap.lookup_prefix(f, d),
                naive.lookup_prefix(f, d),
                "prefix of {d:#x}"
            );
        }
        let mut out = [None; 32];
        let mut burst = [None; 32];
        match f {
            Family::V4 => {
                let d: Vec<u32> = dsts.iter().map(|&x| x as u32).collect();
                snap.lookup_burst_v4(&d, &mut burst);
                let fib = |k: &[u32], o: &mut [Option<TargetId>]| snap.lookup_burst_v4(k, o);
                routers.0.route_burst(&d, snap.generation(), fib, &mut out);
            }
            Family::V6 => {
                snap.lookup_burst_v6(&dsts, &mut burst);
                let fib = |k: &[u128], o: &mut [Option<TargetId>]| snap.lookup_burst_v6(k, o);
                routers
                    .1
                    .route_burst(&dsts, snap.generation(), fib, &mut out);
            }
        }
        assert_eq!(burst.to_vec(), want, "burst lookup");
        assert_eq!(
            out.to_vec(),
            want,
            "hint + cache, generation {}",
            snap.generation()
        );
        // ECMP: one flow, one member, always.
        for (&d, t) in dsts.iter().zip(&want) {
            if let Some(t) = t {
                let flow = routecache::FlowKey {
                    src: 1,
                    dst: d,
                    sport: 5,
                    dport: 6,
                    proto: 17,
                };
                let a = snap.targets().resolve(*t, flow.hash(3));
                assert_eq!(a, snap.targets().resolve(*t, flow.hash(3)));
                assert!(a.is_some());
            }
        }
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let family = if rng.below(2) == 0 {
        Family::V4
    } else {
        Family::V6
    };
    let mut fib = Fib::new();
    let world = World::new(&mut rng, &mut fib, family);
    let mut naive = NaiveLpm::new();
    let hash = [HashKind::Jhash, HashKind::Jhash2, HashKind::Ahash][rng.below(3) as usize];
    let entries = [4usize, 16, 512][rng.below(3) as usize];
    let mut routers = (
        Router::new(
            rng.below(2) == 0,
            Some(DstCache::new(entries, hash, rng.next_u64() as u32)),
        ),
        Router::new(
            rng.below(2) == 0,
            Some(DstCache::new(entries, hash, rng.next_u64() as u32)),
        ),
    );
    let mut old: Option<(Arc<FibSnapshot>, NaiveLpm)> = None;
    for _ in 0..steps {
        match rng.below(10) {
            0..=5 => {
                let (p, l) = world.prefix(&mut rng);
                let t = world.targets[rng.below(world.targets.len() as u64) as usize];
                fib.insert(family, p, l, t).unwrap();
                naive.insert(family, p, l, t);
            }
            6..=7 => {
                let (p, l) = world.prefix(&mut rng);
                let there = naive.remove(family, p, l);
                assert_eq!(fib.remove(family, p, l).is_ok(), there);
            }
            _ => {
                let snap = fib.publish();
                // Half the IPv6 snapshots get their range tree; the others
                // answer from the trie.
                if rng.below(2) == 0 {
                    snap.prepare();
                    assert!(snap.v6_ranges().is_some());
                }
                check(&snap, &naive, &world, &mut rng, &mut routers);
                if let Some((s, n)) = &old {
                    // An older snapshot still answers as it did.
                    for _ in 0..64 {
                        let a = world.addr(&mut rng);
                        assert_eq!(s.lookup(family, a), n.lookup(family, a));
                    }
                }
                if rng.below(3) == 0 {
                    old = Some((snap.clone(), naive.clone()));
                }
            }
        }
    }
    let snap = fib.publish();
    check(&snap, &naive, &world, &mut rng, &mut routers);
    snap.prepare();
    check(&snap, &naive, &world, &mut rng, &mut routers);
    assert_eq!(fib.routes(family).len(), naive.routes().len());
    // Removing every route leaves no group behind.
    let routes: Vec<_> = naive.routes().to_vec();
    for (f, p, l, _) in routes {
        fib.remove(f, p, l).unwrap();
    }
    assert_eq!(fib.routes(family).groups(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn fib_hint_and_cache_agree_with_naive_lpm(seed in any::<u64>(), steps in 10usize..400) {
        run(seed, steps);
    }
}

/// Publishing shares every page an update did not touch, and an update
/// after publishing copies only the pages it writes.
#[test]
fn snapshots_share_unchanged_pages() {
    let mut fib = Fib::new();
    let nh = fib.add_next_hop(NextHop::default());
    for (p, l) in routecache::gen::prefixes(Family::V4, 20_000, 1) {
        fib.insert(Family::V4, p, l, nh).unwrap();
    }
    let a = fib.publish();
    fib.insert(Family::V4, 0xc000_0200, 24, nh).unwrap();
    let b = fib.publish();
    let t4a = a.table(Family::V4);
    let t4b = b.table(Family::V4);
    let shared = t4a.shared_pages(t4b);
    // 2^24 first-level entries in 2 MiB pages is 32 pages, plus the
    // group pages: one first-level page was copied.
    assert!(shared >= 31, "shared {shared}");
    assert_eq!(a.lookup_v4(0xc000_0201), None.or(a.lookup_v4(0xc000_0201)));
    assert_eq!(b.lookup_v4(0xc000_0201), Some(nh));
    assert_ne!(a.generation(), b.generation());
}

/// A full-size table agrees with a naive scan on random destinations
/// (sampled: the naive scan is slow).
#[test]
fn generated_tables_agree_with_naive() {
    for (f, n) in [(Family::V4, 30_000), (Family::V6, 10_000)] {
        let mut fib = Fib::new();
        let mut naive = NaiveLpm::new();
        let hops: Vec<TargetId> = (0..16)
            .map(|p| {
                fib.add_next_hop(NextHop {
                    port: p,
                    ..Default::default()
                })
            })
            .collect();
        for (i, (p, l)) in routecache::gen::prefixes(f, n, 7).into_iter().enumerate() {
            fib.insert(f, p, l, hops[i % 16]).unwrap();
            naive.insert(f, p, l, hops[i % 16]);
        }
        let snap = fib.publish();
        let mut rng = Rng(5);
        let routes = naive.routes().to_vec();
        // Through the trie, then (IPv6) through the range tree too.
        for round in 0..2 {
            if round == 1 {
                snap.prepare();
            }
            check_sampled(&snap, &naive, &routes, f, &mut rng);
        }
    }
}

/// Lookups of addresses inside random routes, and of random addresses.
fn check_sampled(
    snap: &FibSnapshot,
    naive: &NaiveLpm,
    routes: &[(Family, u128, u32, TargetId)],
    f: Family,
    rng: &mut Rng,
) {
    let mut addrs = Vec::new();
    {
        for _ in 0..300 {
            // Addresses inside known prefixes, and random ones.
            let (_, p, l, _) = routes[rng.below(routes.len() as u64) as usize];
            let w = f.width();
            let host = if l == w {
                0
            } else {
                (((rng.next_u64() as u128) << 64) | rng.next_u64() as u128)
                    & ((1u128 << (w - l)) - 1)
            };
            let a = p | host;
            assert_eq!(snap.lookup(f, a), naive.lookup(f, a), "{a:#x}");
            addrs.push(a);
            let r = ((rng.next_u64() as u128) << 64 | rng.next_u64() as u128)
                & (u128::MAX >> (128 - w));
            assert_eq!(snap.lookup(f, r), naive.lookup(f, r), "{r:#x}");
        }
    }
    if f == Family::V6 {
        let mut out = vec![None; addrs.len()];
        snap.lookup_burst_v6(&addrs, &mut out);
        for (a, o) in addrs.iter().zip(out) {
            assert_eq!(o, naive.lookup(f, *a), "burst {a:#x}");
        }
    }
}
