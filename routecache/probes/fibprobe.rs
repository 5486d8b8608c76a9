//! Random-destination FIB lookups by burst size, for finding what bounds
//! them (latency or memory parallelism), and for comparing with DPDK's
//! `dpdk-test-fib` (bench/scripts/fib-vs-dpdk.sh).
//!
//! `fibprobe [PREFIXES] [v4|v6]`: a generated table, destinations drawn
//! uniformly over its routes.
//!
//! IPv6 tables are timed twice, side by side: through the trie, and
//! through the range tree (`FibSnapshot::prepare`).
//!
//! `fibprobe --routes FILE --ips FILE`: the routes (`ADDR/LEN NH` a line)
//! and lookup addresses (`ADDR` a line) that `dpdk-test-fib -w FILE -u
//! FILE` dumps (IPv4 or IPv6), so both look up exactly the same addresses
//! in exactly the same table, in the same order.
use routecache::gen::{prefixes, Rng};
use routecache::{Family, Fib, NextHop};
use std::net::IpAddr;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (family, routes, dsts) = if args.first().map(String::as_str) == Some("--routes") {
        let (Some(r), Some("--ips"), Some(i)) =
            (args.get(1), args.get(2).map(String::as_str), args.get(3))
        else {
            eprintln!("usage: fibprobe --routes FILE --ips FILE");
            std::process::exit(2);
        };
        let (family, routes) = read_routes(r);
        (family, routes, read_ips(i, family))
    } else {
        generated(&args)
    };
    let w = family.width();
    let mut fib = Fib::new();
    // Sixteen next hops, route after route: runs of equal answers merge
    // only where neighbouring routes really share a hop.
    let nh: Vec<_> = (0..16)
        .map(|p| {
            fib.add_next_hop(NextHop {
                port: p,
                ..NextHop::default()
            })
        })
        .collect();
    let mut routes = routes;
    routes.sort_by_key(|r| r.1);
    for (i, &(p, l)) in routes.iter().enumerate() {
        // dpdk-test-fib's dumps may hold a prefix twice; the last wins.
        let p = if l == 0 {
            0
        } else {
            p & (!0u128 << (w - l)) & mask(w)
        };
        fib.insert(family, p, l, nh[i % 16]).unwrap();
    }
    // IPv6 both ways, side by side: a snapshot left with its trie, and
    // one prepared with the range tree (FIBPROBE_TRIE=1: the trie only).
    let trie = fib.publish();
    let ranges = fib.publish();
    let mut snaps = vec![("", trie)];
    if family == Family::V6 && std::env::var_os("FIBPROBE_TRIE").is_none() {
        let t = Instant::now();
        ranges.prepare();
        let r = ranges.v6_ranges().expect("prepared");
        println!(
            "range tree: {} runs, {:.1} MiB, built in {:.0} ms",
            r.runs(),
            r.memory_usage() as f64 / (1 << 20) as f64,
            t.elapsed().as_secs_f64() * 1e3
        );
        snaps[0].0 = "trie   ";
        snaps.push(("ranges ", ranges));
    }
    let v4: Vec<u32> = dsts.iter().map(|&d| d as u32).collect();
    for burst in [1usize, 8, 32, 64, 256] {
        let mut out = vec![None; burst];
        let mut best = vec![f64::MAX; snaps.len()];
        for _ in 0..5 {
            for (k, (_, snap)) in snaps.iter().enumerate() {
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
                best[k] = best[k].min(t.elapsed().as_secs_f64());
            }
        }
        for ((name, _), b) in snaps.iter().zip(best) {
            println!(
                "{name}burst {burst:4}: {:.1} M lookups/s",
                dsts.len() as f64 / b / 1e6
            );
        }
    }
}

fn mask(w: u32) -> u128 {
    if w == 128 {
        !0
    } else {
        (1u128 << w) - 1
    }
}

/// A generated table of `PREFIXES` routes, 2^20 destinations inside them.
fn generated(args: &[String]) -> (Family, Vec<(u128, u32)>, Vec<u128>) {
    let n: usize = args
        .first()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let family = match args.get(1).map(String::as_str) {
        Some("v6") => Family::V6,
        _ => Family::V4,
    };
    let w = family.width();
    let routes = prefixes(family, n, 9);
    let mut rng = Rng(1);
    let dsts = (0..1 << 20)
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
    (family, routes, dsts)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1)
    })
}

fn addr(path: &str, line: usize, s: &str) -> (Family, u128) {
    match s.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => (Family::V4, u32::from(a) as u128),
        Ok(IpAddr::V6(a)) => (Family::V6, u128::from(a)),
        Err(_) => {
            eprintln!("{path}:{line}: not an address: `{s}`");
            std::process::exit(1)
        }
    }
}

fn read_routes(path: &str) -> (Family, Vec<(u128, u32)>) {
    let mut family = None;
    let routes = read(path)
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let net = l.split_whitespace().next().unwrap_or("");
            let Some((a, len)) = net.split_once('/') else {
                eprintln!("{path}:{}: not a prefix: `{net}`", i + 1);
                std::process::exit(1)
            };
            let (f, a) = addr(path, i + 1, a);
            if *family.get_or_insert(f) != f {
                eprintln!("{path}:{}: IPv4 and IPv6 routes mixed", i + 1);
                std::process::exit(1)
            }
            let len = len.parse::<u32>().ok().filter(|&l| l <= f.width());
            let Some(len) = len else {
                eprintln!("{path}:{}: bad prefix length in `{net}`", i + 1);
                std::process::exit(1)
            };
            (a, len)
        })
        .collect();
    (family.unwrap_or(Family::V4), routes)
}

fn read_ips(path: &str, family: Family) -> Vec<u128> {
    read(path)
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let (f, a) = addr(path, i + 1, l.trim());
            if f != family {
                eprintln!("{path}:{}: not of the routes' family", i + 1);
                std::process::exit(1)
            }
            a
        })
        .collect()
}
