//! A FIB of several VRFs against one naive table per VRF: the same
//! prefixes with different targets in each, random inserts and removals
//! in random VRFs, every VRF's lookups (single, burst, prepared IPv6)
//! answering from its own routes only.

use proptest::prelude::*;
use routecache::gen::Rng;
use routecache::reference::NaiveLpm;
use routecache::{Family, Fib, FibError, NextHop};

fn run(seed: u64, vrfs: usize, steps: usize) {
    let mut rng = Rng(seed);
    let mut fib = Fib::new();
    fib.set_vrfs(vrfs);
    assert_eq!(fib.vrfs(), vrfs);
    let hops: Vec<u32> = (0..4u16)
        .map(|p| {
            fib.add_next_hop(NextHop {
                port: p,
                ..NextHop::default()
            })
        })
        .collect();
    let mut naive = vec![NaiveLpm::new(); vrfs];
    // Few prefixes, nested, so that every VRF holds the same ones.
    let v4: Vec<(u128, u32)> = vec![
        (0, 0),
        (0xc000_0200, 24),
        (0xc000_0280, 25),
        (0xc000_0201, 32),
        (0xc633_6400, 24),
    ];
    let v6: Vec<(u128, u32)> = vec![
        (0x2001_0db8 << 96, 32),
        (0x2001_0db8_0001 << 80, 48),
        (0x2001_0db8_0001_0000_0000_0000_0000_0001, 128),
    ];
    let addrs4 = [
        0xc000_0201u128,
        0xc000_0281,
        0xc000_0202,
        0xc633_6407,
        0x0a00_0001,
    ];
    let addrs6 = [
        0x2001_0db8_0001_0000_0000_0000_0000_0001u128,
        0x2001_0db8_0001_0000_0000_0000_0000_0002,
        0x2001_0db8_0002_0000_0000_0000_0000_0001,
    ];
    for _ in 0..steps {
        let vrf = rng.below(vrfs as u64) as usize;
        let (f, set) = if rng.below(2) == 0 {
            (Family::V4, &v4)
        } else {
            (Family::V6, &v6)
        };
        let (p, l) = set[rng.below(set.len() as u64) as usize];
        if rng.below(3) < 2 {
            let t = hops[rng.below(hops.len() as u64) as usize];
            fib.insert_in(vrf, f, p, l, t).unwrap();
            naive[vrf].insert(f, p, l, t);
        } else {
            let there = naive[vrf].remove(f, p, l);
            assert_eq!(fib.remove_in(vrf, f, p, l).is_ok(), there);
        }
        let snap = fib.publish();
        if rng.below(2) == 0 {
            snap.prepare();
        }
        assert!(snap.vrf(vrfs).is_none());
        for (v, n) in naive.iter().enumerate() {
            let t = snap.vrf(v).unwrap();
            let mut out = [None; 8];
            let d4: Vec<u32> = addrs4.iter().map(|&a| a as u32).collect();
            t.lookup_burst_v4(&d4, &mut out[..d4.len()]);
            for (i, &a) in addrs4.iter().enumerate() {
                assert_eq!(t.lookup(Family::V4, a), n.lookup(Family::V4, a), "vrf {v}");
                assert_eq!(out[i], n.lookup(Family::V4, a), "vrf {v} burst");
            }
            // Four or more: the prepared range tree's way.
            let d6: Vec<u128> = addrs6.iter().chain(&addrs6[..1]).copied().collect();
            t.lookup_burst_v6(&d6, &mut out[..d6.len()]);
            for (i, &a) in d6.iter().enumerate() {
                assert_eq!(t.lookup(Family::V6, a), n.lookup(Family::V6, a), "vrf {v}");
                assert_eq!(out[i], n.lookup(Family::V6, a), "vrf {v} burst");
            }
        }
    }
    for (v, n) in naive.iter().enumerate() {
        assert_eq!(
            fib.routes_in(v, Family::V4).unwrap().len()
                + fib.routes_in(v, Family::V6).unwrap().len(),
            n.routes().len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_vrf_answers_from_its_own_routes(seed in any::<u64>(), vrfs in 1usize..5, steps in 1usize..200) {
        run(seed, vrfs, steps);
    }
}

/// A VRF that does not exist is refused, not read as another.
#[test]
fn an_unknown_vrf_is_refused() {
    let mut fib = Fib::new();
    fib.set_vrfs(2);
    let nh = fib.add_next_hop(NextHop::default());
    assert_eq!(
        fib.insert_in(2, Family::V4, 0, 0, nh),
        Err(FibError::UnknownVrf(2))
    );
    fib.insert_in(1, Family::V4, 0, 0, nh).unwrap();
    let snap = fib.publish();
    assert_eq!(snap.lookup_v4(1), None, "VRF 0 has no route");
    assert_eq!(snap.vrf(1).unwrap().lookup_v4(1), Some(nh));
    // Dropping a VRF drops its routes.
    fib.set_vrfs(1);
    assert!(fib.routes_in(1, Family::V4).is_none());
}

/// An empty VRF shares the zero page: hundreds of them cost little.
#[test]
fn empty_vrfs_cost_no_pages() {
    let mut fib = Fib::new();
    fib.set_vrfs(256);
    let snap = fib.publish();
    assert!(snap.memory_usage() == 0, "{}", snap.memory_usage());
}
