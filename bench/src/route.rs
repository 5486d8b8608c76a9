//! `bench routecache`: the route-hint series' table (lookups per second by
//! number of destinations, FIB alone and behind the hint and the dst
//! cache), and the FIB's own figures (build, update, memory, random
//! lookups), for a 1,000-route table and an Internet-sized one.

use crate::stats::{median, round, row};
use routecache::gen::{prefixes, Rng};
use routecache::{DstCache, Family, Fib, FibSnapshot, HashKind, NextHop, Router, TargetId};
use serde_json::json;
use std::hint::black_box;
use std::time::Instant;

const BURST: usize = 32;
const CONNS: [usize; 10] = [1, 2, 15, 100, 500, 1000, 2000, 4000, 8000, 100_000];
const VARIANTS: [(&str, bool, bool); 4] = [
    ("fib", false, false),
    ("fib+hint", true, false),
    ("fib+cache", false, true),
    ("fib+hint+cache", true, true),
];

struct Table {
    family: Family,
    /// The snapshot every figure uses: IPv6 ones prepared with their
    /// range tree, as the forwarder prepares them.
    snap: std::sync::Arc<FibSnapshot>,
    /// The same routes, not prepared (IPv6 lookups through the trie).
    trie: std::sync::Arc<FibSnapshot>,
    /// Time to build the IPv6 range tree (0 for IPv4).
    prepare_ms: f64,
    routes: Vec<(u128, u32)>,
    build_s: f64,
    update_us: f64,
    publish_us: f64,
}

fn family_name(f: Family) -> &'static str {
    match f {
        Family::V4 => "ipv4",
        Family::V6 => "ipv6",
    }
}

fn build(family: Family, n: usize) -> Table {
    let routes = prefixes(family, n, 0x1000 + n as u64);
    let t = Instant::now();
    let mut fib = Fib::new();
    let hops: Vec<TargetId> = (0..64u16)
        .map(|p| {
            fib.add_next_hop(NextHop {
                port: p % 4,
                dst_mac: [2, 0, 0, 0, 0, p as u8],
                src_mac: [2, 0, 0, 0, 1, (p % 4) as u8],
            })
        })
        .collect();
    // Shorter prefixes first: longer ones then overwrite fewer entries.
    let mut sorted = routes.clone();
    sorted.sort_by_key(|r| r.1);
    for (i, &(p, l)) in sorted.iter().enumerate() {
        fib.insert(family, p, l, hops[i % hops.len()]).unwrap();
    }
    let snap = fib.publish();
    let build_s = t.elapsed().as_secs_f64();
    let trie = fib.publish();
    let t = Instant::now();
    if family == Family::V6 {
        snap.prepare();
    }
    let prepare_ms = t.elapsed().as_secs_f64() * 1e3;
    // Update latency: add, replace and delete single routes (the median
    // of many), and the publication that follows a batch of them.
    let mut rng = Rng(3);
    let mut samples = Vec::new();
    let w = family.width();
    for i in 0..200 {
        let (p, l) = routes[rng.below(routes.len() as u64) as usize];
        let len = (l + 4).min(w);
        let host = rng.next_u64() as u128
            & if len == l {
                0
            } else {
                ((1u128 << (len - l)) - 1) << (w - len)
            };
        let q = p | host;
        let t = Instant::now();
        let _ = fib.insert(family, q, len, hops[i % hops.len()]);
        let _ = fib.insert(family, q, len, hops[(i + 1) % hops.len()]);
        let _ = fib.remove(family, q, len);
        samples.push(t.elapsed().as_secs_f64() * 1e6 / 3.0);
    }
    let update_us = median(&mut samples);
    let t = Instant::now();
    black_box(fib.publish());
    let publish_us = t.elapsed().as_secs_f64() * 1e6;
    Table {
        family,
        snap,
        trie,
        prepare_ms,
        routes,
        build_s,
        update_us,
        publish_us,
    }
}

/// `n` destinations inside the table's routes.
fn destinations(t: &Table, n: usize, rng: &mut Rng) -> Vec<u128> {
    let w = t.family.width();
    (0..n)
        .map(|_| {
            let (p, l) = t.routes[rng.below(t.routes.len() as u64) as usize];
            let host = if l == w {
                0
            } else {
                ((rng.next_u64() as u128) << 64 | rng.next_u64() as u128) & ((1u128 << (w - l)) - 1)
            };
            p | host
        })
        .collect()
}

/// Runs `lookup` over `keys` in bursts, `rounds` times: M lookups/s.
fn timed_bursts<K>(
    keys: &[K],
    rounds: usize,
    mut lookup: impl FnMut(&[K], &mut [Option<TargetId>]),
) -> f64 {
    let mut out = [None; BURST];
    let mut found = 0usize;
    let start = Instant::now();
    for _ in 0..rounds {
        for b in keys.chunks(BURST) {
            lookup(b, &mut out[..b.len()]);
            found += out[..b.len()].iter().flatten().count();
        }
    }
    black_box(found);
    (keys.len() * rounds) as f64 / start.elapsed().as_secs_f64() / 1e6
}

/// The FIB's burst lookup alone, with no route stage around it.
fn run_direct(t: &Table, snap: &FibSnapshot, stream: &[u128], rounds: usize) -> f64 {
    match t.family {
        Family::V4 => {
            let dsts: Vec<u32> = stream.iter().map(|&d| d as u32).collect();
            timed_bursts(&dsts, rounds, |k, o| snap.lookup_burst_v4(k, o))
        }
        Family::V6 => timed_bursts(stream, rounds, |k, o| snap.lookup_burst_v6(k, o)),
    }
}

/// The FIB behind the route stage, hint and dst cache on or off.
fn run_variant(t: &Table, stream: &[u128], hint: bool, cache: bool, rounds: usize) -> f64 {
    let snap = &t.snap;
    let gen = snap.generation();
    match t.family {
        Family::V4 => {
            let dsts: Vec<u32> = stream.iter().map(|&d| d as u32).collect();
            let c = cache.then(|| DstCache::new(512, HashKind::Ahash, 0x1234));
            let mut r = Router::new(hint, c);
            timed_bursts(&dsts, rounds, |k, o| {
                r.route_burst(k, gen, |k, o| snap.lookup_burst_v4(k, o), o)
            })
        }
        Family::V6 => {
            let c = cache.then(|| DstCache::new(512, HashKind::Ahash, 0x1234));
            let mut r = Router::new(hint, c);
            timed_bursts(stream, rounds, |k, o| {
                r.route_burst(k, gen, |k, o| snap.lookup_burst_v6(k, o), o)
            })
        }
    }
}

pub fn run(json: bool, quick: bool) {
    let (full4, full6) = if quick {
        (200_000, 50_000)
    } else {
        (1_000_000, 200_000)
    };
    let reps = if quick { 3 } else { 5 };
    let stream_len = if quick { 1 << 16 } else { 1 << 18 };
    let rounds = if quick { 8 } else { 16 };
    let tables = [
        ("1k", Family::V4, 1000),
        ("1k", Family::V6, 1000),
        ("full", Family::V4, full4),
        ("full", Family::V6, full6),
    ];
    if !json {
        println!("M lookups/s per core, bursts of {BURST}, destinations drawn uniformly, median of {reps} runs; delta against the FIB alone");
        println!();
    }
    for (name, family, n) in tables {
        let t = build(family, n);
        let mut rng = Rng(77);
        // Random destinations over the whole table: the FIB's own figure.
        let random = destinations(&t, stream_len, &mut rng);
        // Prepared and trie-only snapshots alternate (the same for IPv4).
        let (mut rs, mut rt) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            rs.push(run_direct(&t, &t.snap, &random, rounds));
            rt.push(run_direct(&t, &t.trie, &random, rounds));
        }
        let random_mlps = median(&mut rs);
        let trie_mlps = median(&mut rt);
        let mem = t.snap.table(family).memory_usage();
        let tree_mem = t.snap.v6_ranges().map_or(0, |r| r.memory_usage());
        if json {
            row(json!({
                "table": name,
                "family": family_name(family),
                "prefixes": t.routes.len(),
                "build_s": round(t.build_s, 3),
                "update_us": round(t.update_us, 2),
                "publish_us": round(t.publish_us, 1),
                "memory_bytes": mem,
                "random_mlookups_per_s": round(random_mlps, 1),
                "random_trie_mlookups_per_s": round(trie_mlps, 1),
                "prepare_ms": round(t.prepare_ms, 1),
                "range_tree_bytes": tree_mem,
            }));
        } else {
            let tree = if family == Family::V6 {
                format!(
                    " (the trie alone: {trie_mlps:.1}; range tree built in {:.0} ms, {:.1} MiB)",
                    t.prepare_ms,
                    tree_mem as f64 / (1 << 20) as f64
                )
            } else {
                String::new()
            };
            println!(
                "### {name} table, {}: {} prefixes; build {:.3} s; update {:.2} µs per add/replace/delete; publish {:.0} µs; memory {:.1} MiB; random destinations {random_mlps:.1} M lookups/s{tree}",
                family_name(family),
                t.routes.len(),
                t.build_s,
                t.update_us,
                t.publish_us,
                mem as f64 / (1 << 20) as f64
            );
            println!();
            print!("| conns |");
            for (v, _, _) in VARIANTS {
                print!(" {v} |");
            }
            println!();
            println!("|---:|---:|---:|---:|---:|");
        }
        for conns in CONNS {
            let pool = destinations(&t, conns, &mut rng);
            let stream: Vec<u128> = (0..stream_len)
                .map(|_| pool[rng.below(conns as u64) as usize])
                .collect();
            let mut samples = vec![Vec::new(); VARIANTS.len()];
            for _ in 0..reps {
                for (i, &(_, hint, cache)) in VARIANTS.iter().enumerate() {
                    samples[i].push(run_variant(&t, &stream, hint, cache, rounds));
                }
            }
            let m: Vec<f64> = samples.iter_mut().map(|s| median(s)).collect();
            if json {
                for (i, (v, _, _)) in VARIANTS.iter().enumerate() {
                    row(json!({
                        "table": name,
                        "family": family_name(family),
                        "variant": v,
                        "conns": conns,
                        "mlookups_per_s": round(m[i], 2),
                        "delta_pct": round((m[i] / m[0] - 1.0) * 100.0, 1),
                    }));
                }
            } else {
                print!("| {conns} | {:.1} |", m[0]);
                for x in &m[1..] {
                    print!(" {:.1} ({:+.1} %) |", x, (x / m[0] - 1.0) * 100.0);
                }
                println!();
            }
        }
        if !json {
            println!();
        }
    }
}
