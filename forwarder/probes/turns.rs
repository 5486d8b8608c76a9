//! One worker's loop without threads: receive a burst from each of the
//! config's ports, run it through the pipeline, send it out, for a given
//! number of turns. Prints nanoseconds per packet; under `valgrind
//! --tool=cachegrind --cache-sim=no` it gives instructions per packet,
//! which (unlike time on a noisy machine) moves with every change.
//!
//! The first `WARM` turns warm the flow cache up and are not counted;
//! the measured ones run in `turns::measured`, so that `valgrind
//! --tool=callgrind --zero-before=turns::measured` counts only those.
//!
//! `cargo run --release -p forwarder --example turns -- [CONFIG] [TURNS] [MODE] [WARM]`
//! (defaults: examples/forwarder.toml, 100000, full, 100000).
//! `TURNS_ROUTES=V4,V6` replaces the config's routes with that many
//! generated IPv4 and IPv6 routes over its next hops, as `bench forward`'s
//! full table does (its flows then go to those routes).
use forwarder::control::build;
use forwarder::pipeline::Snapshot;
use forwarder::pipeline::{Mode, Pipeline};
use forwarder::port::{Burst, Port};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("examples/forwarder.toml");
    let turns: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let mode = args
        .get(3)
        .and_then(|s| Mode::parse(s))
        .unwrap_or(Mode::Full);
    let mut cfg = config::load(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    if let Ok(v) = std::env::var("TURNS_ROUTES") {
        let (v4, v6) = v.split_once(',').expect("TURNS_ROUTES=V4,V6");
        let n = |s: &str| s.parse().expect("a number of routes");
        forwarder::port::synthetic::full_table(&mut cfg, n(v4), n(v6));
    }
    // With TURNS_RESOLVED=1 the next hops are gateways by address,
    // resolved (see `gateways_resolved`).
    let neigh = (std::env::var("TURNS_RESOLVED").as_deref() == Ok("1"))
        .then(|| forwarder::port::synthetic::gateways_resolved(&mut cfg));
    let tables = build::snapshot(&cfg, 1).unwrap_or_else(|e| panic!("{e}"));
    let mut ports = forwarder::port::open_all(&cfg, 0).unwrap_or_else(|e| panic!("{e}"));
    let warm: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let mut pipe = Pipeline::with_mode(&tables, ports.len(), mode);
    if let Some(n) = neigh {
        let r = std::sync::Arc::new(forwarder::punt::RouterShared::new(1, 2));
        r.neigh.store(std::sync::Arc::new(n));
        pipe = pipe.with_router(r, &tables);
    }
    let mut burst = Burst::new();
    let burst_size = cfg.forwarder.burst;
    let mut run = |turns| {
        for _ in 0..turns {
            turn(&tables, &mut pipe, &mut ports, &mut burst, burst_size);
        }
    };
    run(warm);
    let (rx0, f0) = (pipe.counters.rx, pipe.flow_cache_stats());
    let start = Instant::now();
    measured(
        &tables, &mut pipe, &mut ports, &mut burst, burst_size, turns,
    );
    let secs = start.elapsed().as_secs_f64();
    let packets = pipe.counters.rx - rx0;
    let f = pipe.flow_cache_stats();
    println!(
        "{packets} packets measured, {:.1} ns per packet; flow cache hits {} misses {} bypassed {}",
        secs * 1e9 / packets.max(1) as f64,
        f.hits - f0.hits,
        f.misses - f0.misses,
        f.bypassed - f0.bypassed
    );
}

#[inline(never)]
fn measured(
    tables: &Snapshot,
    pipe: &mut Pipeline,
    ports: &mut [Box<dyn Port>],
    burst: &mut Burst,
    burst_size: usize,
    turns: u64,
) {
    for _ in 0..turns {
        turn(tables, pipe, ports, burst, burst_size);
    }
}

#[inline(always)]
fn turn(
    tables: &Snapshot,
    pipe: &mut Pipeline,
    ports: &mut [Box<dyn Port>],
    burst: &mut Burst,
    burst_size: usize,
) {
    for rx in 0..ports.len() {
        burst.clear();
        if ports[rx].rx_burst(burst, burst_size) == 0 {
            continue;
        }
        pipe.process(tables, burst);
        for (tx, which) in pipe.out.iter().enumerate() {
            if !which.is_empty() {
                ports[tx].tx_burst(burst, which);
            }
        }
        ports[rx].release(burst);
    }
}
