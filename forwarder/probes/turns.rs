//! One worker's loop without threads: receive a burst from each of the
//! config's ports, run it through the pipeline (as the worker does: one
//! reading of the taps a turn, one test a burst; nothing armed), send it
//! out, and sweep a few connections, for a given number of turns. Prints
//! nanoseconds per packet; under `valgrind --tool=cachegrind
//! --cache-sim=no` it gives instructions per packet, which (unlike time
//! on a noisy machine) moves with every change.
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
use forwarder::filter::Filter;
use forwarder::pipeline::Snapshot;
use forwarder::pipeline::{Mode, Pipeline};
use forwarder::port::{Burst, Port};
use forwarder::tap::worker::{run_burst, WorkerTaps};
use forwarder::tap::{Session, Taps, Work};
use std::sync::atomic::Ordering::Relaxed;
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
    // With TURNS_VLAN=1 the traffic comes and leaves on VLAN 100 (see
    // `on_vlans`).
    if std::env::var("TURNS_VLAN").as_deref() == Ok("1") {
        forwarder::port::synthetic::on_vlans(&mut cfg, 100);
    }
    // With TURNS_VRF=1 the ports and routes are in a VRF (see `in_vrf`).
    if std::env::var("TURNS_VRF").as_deref() == Ok("1") {
        forwarder::port::synthetic::in_vrf(&mut cfg);
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
    let mut w = Worker {
        taps: Taps::default(),
        mine: WorkerTaps::default(),
    };
    // With TURNS_CAPTURE=N a capture of port 0's received frames is armed
    // with a budget of N frames a burst (0: all), and a thread takes its
    // slots and gives them back as the writer does (without writing;
    // asleep for a millisecond when none is full, as the writer): the
    // worker's cost of a capture.
    let capture = std::env::var("TURNS_CAPTURE").ok().map(|v| {
        let per_burst = v.parse().expect("TURNS_CAPTURE=frames a burst");
        let s = Session::capture(
            Filter::default(),
            (1, 0, 0),
            (forwarder::port::FRAME_CAP as u16, per_burst),
            (1, ports.len()),
            forwarder::tap::CAPTURE_SLOTS,
        );
        let s = w.taps.arm(s).expect("a capture arms");
        let taker = s.clone();
        let reader = std::thread::spawn(move || {
            let Work::Capture { rings, .. } = &taker.work else {
                unreachable!()
            };
            let mut frames = 0u64;
            while !taker.done.load(Relaxed) {
                match rings[0].take() {
                    Some(b) => {
                        frames += b.len() as u64;
                        rings[0].give_back(b);
                    }
                    None => std::thread::sleep(std::time::Duration::from_millis(1)),
                }
            }
            frames
        });
        (s, reader)
    });
    for _ in 0..warm {
        turn(
            &tables, &mut pipe, &mut ports, &mut burst, burst_size, &mut w,
        );
    }
    let (rx0, f0) = (pipe.counters.rx, pipe.flow_cache_stats());
    let start = Instant::now();
    measured(
        &tables, &mut pipe, &mut ports, &mut burst, burst_size, turns, &mut w,
    );
    let secs = start.elapsed().as_secs_f64();
    let packets = pipe.counters.rx - rx0;
    if let Some((s, reader)) = capture {
        w.mine.hand_over(0);
        w.taps.disarm(&s);
        let frames = reader.join().expect("the reader");
        println!("capture: {frames} frames taken, {} lost", s.lost());
    }
    let f = pipe.flow_cache_stats();
    println!(
        "{packets} packets measured, {:.1} ns per packet; flow cache hits {} misses {} bypassed {}",
        secs * 1e9 / packets.max(1) as f64,
        f.hits - f0.hits,
        f.misses - f0.misses,
        f.bypassed - f0.bypassed
    );
    if let Some(c) = pipe.conntrack_stats() {
        println!("conntrack: {c:?}");
    }
}

/// What a worker has besides its pipeline: the taps it looks at.
struct Worker {
    taps: Taps,
    mine: WorkerTaps,
}

#[inline(never)]
fn measured(
    tables: &Snapshot,
    pipe: &mut Pipeline,
    ports: &mut [Box<dyn Port>],
    burst: &mut Burst,
    burst_size: usize,
    turns: u64,
    w: &mut Worker,
) {
    for _ in 0..turns {
        turn(tables, pipe, ports, burst, burst_size, w);
    }
}

#[inline(always)]
fn turn(
    tables: &Snapshot,
    pipe: &mut Pipeline,
    ports: &mut [Box<dyn Port>],
    burst: &mut Burst,
    burst_size: usize,
    w: &mut Worker,
) {
    let armed = w.taps.armed.load(Relaxed);
    if armed != 0 {
        forwarder::tap::worker::turn(0, &mut w.mine);
    } else if w.mine.holds() {
        w.mine.let_go(0);
    }
    for rx in 0..ports.len() {
        burst.clear();
        if ports[rx].rx_burst(burst, burst_size) == 0 {
            continue;
        }
        run_burst(
            &w.taps,
            armed,
            0,
            pipe,
            tables,
            burst,
            rx as u16,
            &mut w.mine,
        );
        for (tx, which) in pipe.out.iter().enumerate() {
            if !which.is_empty() {
                ports[tx].tx_burst(burst, which);
            }
        }
        ports[rx].release(burst);
    }
    // Connection tracking's housekeeping, once a turn as the worker's.
    pipe.conntrack_turn();
}
