//! Nanoseconds per packet of the first stages, alone: copying frames into
//! a burst, parsing them, rewriting them (what `bench forward`'s `io` and
//! `rewrite` variants add up), then a flow cache hit on top (the hash,
//! the tag check and the probe of `full+flowcache` for flows it holds).
//! `STAGES_FLOWS` sets the number of distinct flows (default 5,120, the
//! example's per core).
use forwarder::pipeline::flowcache::{Decision, FlowCache, FlowId, Loc};
use forwarder::port::Burst;
use forwarder::tables::FlowCacheConfig;
use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::{parse_into, rewrite, Parsed};
use std::time::Instant;

const STAGES: [&str; 5] = [
    "copy in",
    "+ parse",
    "+ rewrite",
    "+ flow hash",
    "+ flow cache hit",
];

fn main() {
    let flows: u32 = std::env::var("STAGES_FLOWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5120);
    let frames: Vec<Vec<u8>> = (0..flows)
        .map(|i| {
            if i % 5 == 0 {
                ipv6(
                    1,
                    0x2001_0db8u128 << 96 | i as u128,
                    64,
                    L4::Udp(1000, 53),
                    10,
                )
            } else {
                ipv4(0xc000_0201, 0xc633_6400 | i, 64, L4::Udp(1000, 80), 18)
            }
        })
        .collect();
    let mut cache = FlowCache::with_config(FlowCacheConfig {
        entries: 16384,
        insert_one_in: 1,
    });
    for f in &frames {
        let mut p = Parsed::default();
        if parse_into(f, &mut p).is_ok() {
            let id = FlowId::of(&p, f);
            cache.fill(cache.locate(&id), &id, Decision::forward(0, 1));
        }
    }
    let mut burst = Burst::new();
    let mut parsed = [Parsed::default(); 32];
    let mut ids = [FlowId::default(); 32];
    let mut locs = [Loc::default(); 32];
    for (stage, name) in STAGES.iter().enumerate() {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            let mut ok = 0u64;
            let rounds = (1 << 20) / frames.len().max(1) + 1;
            for _ in 0..rounds {
                for chunk in frames.chunks(32) {
                    burst.clear();
                    for f in chunk {
                        burst.push(f);
                    }
                    let n = burst.len();
                    if stage >= 1 {
                        for (i, p) in parsed[..n].iter_mut().enumerate() {
                            ok += parse_into(burst.frame(i), p).is_ok() as u64;
                        }
                    }
                    if stage >= 2 {
                        for (i, p) in parsed[..n].iter().enumerate() {
                            ok += rewrite(burst.frame_mut(i), p, [1; 6], [2; 6]).is_ok() as u64;
                        }
                    }
                    if stage >= 3 {
                        for i in 0..n {
                            ids[i] = FlowId::of(&parsed[i], burst.frame(i));
                            locs[i] = cache.hash(&ids[i]);
                        }
                    }
                    if stage >= 4 {
                        for l in &mut locs[..n] {
                            *l = cache.candidates(*l);
                        }
                        for i in 0..n {
                            ok += cache.probe(locs[i], &ids[i]).is_some() as u64;
                        }
                    }
                }
            }
            std::hint::black_box((ok, &locs));
            let packets = rounds * frames.len();
            best = best.min(t.elapsed().as_nanos() as f64 / packets as f64);
        }
        println!("{name}: {best:.1} ns per packet");
    }
}
