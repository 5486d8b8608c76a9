//! What a random read costs in a table of huge-page-backed pages, by how
//! much memory the reads span and how many distinct 4 KiB pages they
//! touch: the question behind a full table's IPv4 lookups, one read at a
//! random place in a 64 MiB first level.
//!
//! Every case reads the same number of distinct cache lines, so that what
//! changes between them is only the span (and with it the pages the TLB
//! must map), or only the lines: reads come in bursts of 64, every
//! address prefetched before any is loaded, as `lookup_burst_v4` does.
//!
//! `cargo run --release -p routecache --example tlbprobe [ROUNDS]`
//! (default 5 rounds; the best round is printed, with the median).
//!
//! On a guest whose 2 MiB pages the host maps with 4 KiB pages, a TLB
//! entry covers 4 KiB whatever the guest asked for: reads spread over
//! 64 MiB then cost several times what the same lines cost packed into
//! 1 MiB, though both fit the caches.
use pages::{prefetch, Page, ENTRIES, HUGE};
use routecache::gen::Rng;
use std::time::Instant;

/// Reads timed per case.
const READS: usize = 1 << 20;
/// Reads issued together: prefetched, then loaded.
const BURST: usize = 64;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
        .max(1);
    // (span in MiB, bytes between the lines read): the first four read
    // 16,384 distinct lines, 1 MiB of data, packed or spread over 16 MiB
    // to 1 GiB; the last reads every line of a 64 MiB span (a full
    // table's first level under random destinations).
    let cases: [(usize, usize, &str); 5] = [
        (1, 64, "1 MiB, every line"),
        (
            16,
            1024,
            "16 MiB, a line every 1 KiB (4,096 pages of 4 KiB)",
        ),
        (
            64,
            4096,
            "64 MiB, a line every 4 KiB (16,384 pages of 4 KiB)",
        ),
        (1024, 65536, "1 GiB, a line every 64 KiB"),
        (
            64,
            64,
            "64 MiB, every line (random destinations in a DIR-24)",
        ),
    ];
    println!("ns per random read, bursts of {BURST} prefetched then loaded, best (median) of {rounds} rounds of {READS} reads");
    println!();
    println!("| span | lines | ns per read |");
    println!("|---|---:|---:|");
    for (mib, step, what) in cases {
        let pages: Vec<Page> = (0..(mib << 20).div_ceil(HUGE))
            .map(|_| {
                let mut p = Page::zeroed();
                p.fill(1);
                p
            })
            .collect();
        let lines = (mib << 20) / step;
        let words = step / 4;
        // Random line indices, fixed by a seed so that runs compare.
        let mut rng = Rng(0xf00d);
        let at: Vec<(u32, u32)> = (0..READS)
            .map(|_| {
                let word = rng.below(lines as u64) as usize * words;
                ((word / ENTRIES) as u32, (word % ENTRIES) as u32)
            })
            .collect();
        let mut times = Vec::with_capacity(rounds);
        let mut sum = 0u64;
        for _ in 0..rounds {
            let t = Instant::now();
            for chunk in at.chunks(BURST) {
                for &(p, o) in chunk {
                    prefetch(&pages[p as usize][o as usize]);
                }
                for &(p, o) in chunk {
                    sum += pages[p as usize][o as usize] as u64;
                }
            }
            times.push(t.elapsed().as_secs_f64() * 1e9 / READS as f64);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "| {what} | {lines} | {:.2} ({:.2}) |",
            times[0],
            times[times.len() / 2]
        );
        std::hint::black_box(sum);
    }
}
