//! Nanoseconds per packet of the first stages, alone: copying frames into
//! a burst, parsing them, rewriting them (what `bench forward`'s `io` and
//! `rewrite` variants add up).
use forwarder::port::Burst;
use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::{parse_into, rewrite, Parsed};
use std::time::Instant;

fn main() {
    let frames: Vec<Vec<u8>> = (0..1024u32)
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
    let mut burst = Burst::new();
    let mut parsed = [Parsed::default(); 32];
    for stage in 0..3 {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            let mut ok = 0u64;
            for _ in 0..200 {
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
                }
            }
            std::hint::black_box(ok);
            best = best.min(t.elapsed().as_nanos() as f64 / (200.0 * 1024.0));
        }
        println!(
            "{}: {best:.1} ns per packet",
            ["copy in", "+ parse", "+ rewrite"][stage]
        );
    }
}
