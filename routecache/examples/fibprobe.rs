//! Random-destination FIB lookups by burst size, for finding what bounds
//! them (latency or memory parallelism), and for comparing with DPDK's
//! `dpdk-test-fib` (bench/scripts/fib-vs-dpdk.sh).
//!
//! `fibprobe [PREFIXES] [v4|v6]`
use routecache::gen::{prefixes, Rng};
use routecache::{Family, Fib, NextHop};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let family = match args.next().as_deref() {
        Some("v6") => Family::V6,
        _ => Family::V4,
    };
    let w = family.width();
    let mut fib = Fib::new();
    let nh = fib.add_next_hop(NextHop::default());
    let mut routes = prefixes(family, n, 9);
    routes.sort_by_key(|r| r.1);
    for &(p, l) in &routes {
        fib.insert(family, p, l, nh).unwrap();
    }
    let snap = fib.publish();
    let mut rng = Rng(1);
    let dsts: Vec<u128> = (0..1 << 20)
        .map(|_| {
            let (p, l) = routes[rng.below(routes.len() as u64) as usize];
            let r = (rng.next_u64() as u128) << 64 | rng.next_u64() as u128;
            let host = if l == w {
                0
            } else {
                r & ((1u128 << (w - l)) - 1)
            };
            p | host
        })
        .collect();
    let v4: Vec<u32> = dsts.iter().map(|&d| d as u32).collect();
    for burst in [1usize, 8, 32, 64, 256] {
        let mut out = vec![None; burst];
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            let mut found = 0;
            match family {
                Family::V4 => {
                    for b in v4.chunks(burst) {
                        snap.lookup_burst_v4(b, &mut out[..b.len()]);
                        found += out[..b.len()].iter().flatten().count();
                    }
                }
                Family::V6 => {
                    for b in dsts.chunks(burst) {
                        snap.lookup_burst_v6(b, &mut out[..b.len()]);
                        found += out[..b.len()].iter().flatten().count();
                    }
                }
            }
            std::hint::black_box(found);
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "burst {burst:4}: {:.1} M lookups/s",
            dsts.len() as f64 / best / 1e6
        );
    }
}
