//! Random-destination FIB lookups by burst size, for finding what bounds
//! them (latency or memory parallelism).
use routecache::gen::{prefixes, Rng};
use routecache::{Family, Fib, NextHop};
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut fib = Fib::new();
    let nh = fib.add_next_hop(NextHop::default());
    let mut routes = prefixes(Family::V4, n, 9);
    routes.sort_by_key(|r| r.1);
    for &(p, l) in &routes {
        fib.insert(Family::V4, p, l, nh).unwrap();
    }
    let snap = fib.publish();
    let mut rng = Rng(1);
    let dsts: Vec<u32> = (0..1 << 20)
        .map(|_| {
            let (p, l) = routes[rng.below(routes.len() as u64) as usize];
            (p as u32) | (rng.next_u64() as u32 & (u32::MAX >> l.min(31)) >> (l == 32) as u32)
        })
        .collect();
    for burst in [1usize, 8, 32, 64, 256] {
        let mut out = vec![None; burst];
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            let mut found = 0;
            for b in dsts.chunks(burst) {
                snap.lookup_burst_v4(b, &mut out[..b.len()]);
                found += out[..b.len()].iter().flatten().count();
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
