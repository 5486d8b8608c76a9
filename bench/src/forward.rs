//! `bench forward`: the pipeline on synthetic ports for a fixed time, on
//! one and on two cores, each variant adding a stage, measured side by
//! side in one run: (a) `io`: receive and transmit, frames untouched;
//! (b) `rewrite`: + parse and MAC/TTL/checksum rewrite; (c) `route`: +
//! routing in the full table (with and without the dst cache); (d)
//! `full`: + classification against the example's rule sets, the flow
//! cache off; `full+flowcache`: the same with the default flow cache;
//! `+resolved`: the same two with every next hop a gateway given by
//! address and resolved (as ARP or neighbour discovery leave it);
//! `+vlan`: the same two (and `route+vlan`) with every frame tagged,
//! received and sent by VLAN sub-interfaces; `+vrf`: the same two with every port and route
//! in a VRF (not the default one);
//! `+capture`: the same two with a capture of port p0's received frames
//! armed (at the default budget of frames a burst; `+capture+all`: every
//! frame), written as pcapng into a socket by the writer on the other
//! core (one worker).
//! Then `io`, `route` and both full variants again at other numbers of
//! flows per port (`io@N`: the synthetic port's own cost at that many
//! flows).
//! Each run counts what the workers forward after a warm-up, from their
//! published counters: steady state, not thread start or cold caches.

use crate::stats::{median, round, row};
use config::Config;
use forwarder::control::build;
use forwarder::pipeline::Mode;
use forwarder::pipeline::Snapshot;
use forwarder::shared::Shared;
use forwarder::tables::FlowCacheConfig;
use forwarder::worker;
use serde_json::json;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Flows per synthetic port of the sweep.
const FLOWS: [usize; 3] = [256, 16_384, 262_144];

fn example() -> Config {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/forwarder.toml");
    config::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The example with a full table: generated IPv4 and IPv6 routes over its
/// next hops.
fn with_full_table(mut cfg: Config, v4: usize, v6: usize) -> Config {
    forwarder::port::synthetic::full_table(&mut cfg, v4, v6);
    cfg
}

/// `cfg` with `entries` flow cache entries per core.
fn with_flow_cache(mut cfg: Config, entries: usize) -> Config {
    cfg.flow_cache.entries = Some(entries);
    cfg
}

/// `cfg` with `flows` distinct flows on every synthetic port.
fn with_flows(mut cfg: Config, flows: usize) -> Config {
    for p in &mut cfg.ports {
        if let config::Driver::Synthetic(o) = &mut p.driver {
            o.flows = flows;
        }
    }
    cfg
}

/// `cfg` with connection tracking on, `max` connections at most.
fn with_conntrack(mut cfg: Config, max: usize) -> Config {
    cfg.conntrack.enabled = true;
    cfg.conntrack.max = max;
    cfg
}

/// `cfg` with its traffic on VLANs (see
/// [`forwarder::port::synthetic::on_vlans`]).
fn with_vlans(mut cfg: Config) -> Config {
    forwarder::port::synthetic::on_vlans(&mut cfg, 100);
    cfg
}

/// Warm-up before each measured run: the workers start, build their
/// pipelines and fill their flow caches (about a million packets for the
/// example's flows) before the count starts.
const WARM_UP: Duration = Duration::from_millis(250);

/// A variant: its name, mode, configuration, tables, and the neighbour
/// table its gateways were resolved to (the `+resolved` variants).
type Variant<'a> = (
    String,
    Mode,
    &'a Config,
    &'a Arc<Snapshot>,
    Option<&'a Arc<forwarder::neigh::NeighTable>>,
);

/// The capture a variant runs with, if any: `+capture`, port 0's
/// received frames at the default per-burst budget; `+capture+all`,
/// every frame (one worker, the writer on the other core). The budget.
fn capture_of(name: &str) -> Option<u32> {
    if name.ends_with("+capture+all") {
        Some(0)
    } else if name.ends_with("+capture") {
        Some(forwarder::tap::PER_BURST)
    } else {
        None
    }
}

fn captures(name: &str) -> bool {
    capture_of(name).is_some()
}

/// The burst sizes a run measures (`--burst`), or the configuration's.
fn burst_sizes(asked: &[usize], cfg: &Config) -> Vec<usize> {
    if asked.is_empty() {
        vec![cfg.forwarder.burst]
    } else {
        asked.to_vec()
    }
}

/// A capture of port 0's received frames, written as pcapng into a
/// socket whose reader throws it away (what `forwarder capture -w
/// /dev/null` does), for the run: its writer thread and the frames it
/// wrote.
struct Capturing {
    stop: Arc<std::sync::atomic::AtomicBool>,
    writer: std::thread::JoinHandle<forwarder::tap::capture::Ended>,
    session: Arc<forwarder::tap::Session>,
}

fn start_capture(shared: &Arc<Shared>, workers: usize, ports: usize, per_burst: u32) -> Capturing {
    use forwarder::tap::{Session, CAPTURE_SLOTS};
    let s = Session::capture(
        forwarder::filter::Filter::default(),
        (1, 0, 0),
        (forwarder::port::FRAME_CAP as u16, per_burst),
        (workers, ports),
        CAPTURE_SLOTS,
    );
    let session = shared.taps.arm(s).expect("a capture arms");
    let (mut ours, mut theirs) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
    // Both on the core the worker does not use, as the control thread's
    // are (it runs on a core no worker has, where there is one).
    let off = || {
        core_affinity::set_for_current(core_affinity::CoreId { id: 1 });
    };
    std::thread::spawn(move || {
        off();
        let mut sink = vec![0u8; 1 << 16];
        use std::io::Read;
        while matches!(theirs.read(&mut sink), Ok(n) if n > 0) {}
    });
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (sh, st, se) = (shared.clone(), stop.clone(), session.clone());
    let writer = std::thread::spawn(move || {
        off();
        let ports = [(0u16, "p0".to_string())];
        forwarder::tap::capture::serve(&sh.taps, se, &ports, None, &st, &mut ours)
    });
    Capturing {
        stop,
        writer,
        session,
    }
}

/// What one run measured: forwarded Mpps, and with a capture the frames
/// it wrote and lost (millions a second).
struct Measured {
    mpps: f64,
    captured: Option<(f64, f64)>,
}

/// Runs `mode` on `cores` for `secs` after [`WARM_UP`] (with a capture of
/// port 0 armed, with that per-burst budget, when `capture`): forwarded
/// Mpps in steady state, from the workers' published counters.
#[allow(clippy::too_many_arguments)]
fn measure(
    cfg: &Config,
    tables: &Arc<Snapshot>,
    neigh: Option<&Arc<forwarder::neigh::NeighTable>>,
    mode: Mode,
    cores: &[usize],
    burst: usize,
    secs: f64,
    capture: Option<u32>,
) -> Measured {
    let mut cfg = cfg.clone();
    cfg.forwarder.cores = cores.to_vec();
    cfg.forwarder.burst = burst;
    let shared = Arc::new(Shared::new(Snapshot::empty(), 0, 0));
    if let Some(n) = neigh {
        shared.router.neigh.store(n.clone());
    }
    shared.snapshot.store(tables.clone());
    let workers = worker::spawn(&cfg, shared.clone(), mode).expect("workers start");
    let tap = capture.map(|b| start_capture(&shared, cores.len(), cfg.ports.len(), b));
    let sent = || -> u64 { workers.iter().map(|(p, _)| p.tx.load(Relaxed)).sum() };
    let seen = || {
        tap.as_ref()
            .map(|t| (t.session.taken.load(Relaxed), t.session.lost()))
            .unwrap_or_default()
    };
    std::thread::sleep(WARM_UP);
    let (tx0, c0, start) = (sent(), seen(), Instant::now());
    std::thread::sleep(Duration::from_secs_f64(secs));
    let (tx1, c1, elapsed) = (sent(), seen(), start.elapsed().as_secs_f64());
    shared.stop.store(true, Relaxed);
    for (_, h) in workers {
        h.join().expect("worker");
    }
    if let Some(t) = &tap {
        t.stop.store(true, Relaxed);
    }
    if let Some(t) = tap {
        let _ = t.writer.join();
    }
    Measured {
        mpps: (tx1 - tx0) as f64 / elapsed / 1e6,
        captured: capture.map(|_| {
            (
                (c1.0 - c0.0) as f64 / elapsed / 1e6,
                (c1.1 - c0.1) as f64 / elapsed / 1e6,
            )
        }),
    }
}

pub fn run(
    json: bool,
    quick: bool,
    runs: Option<usize>,
    seconds: Option<f64>,
    only: &[String],
    bursts: &[usize],
) {
    let (v4, v6, secs, reps) = if quick {
        (100_000, 20_000, 0.5, 1)
    } else {
        (1_000_000, 200_000, 2.0, 3)
    };
    let (secs, reps) = (seconds.unwrap_or(secs), runs.unwrap_or(reps).max(1));
    let small = example();
    let bursts = burst_sizes(bursts, &small);
    let full = with_full_table(small.clone(), v4, v6);
    let mut cached = full.clone();
    cached.route_cache.dst_cache_entries = Some(512);
    let t_small = Arc::new(build::snapshot(&small, 1).expect("tables"));
    let t0 = Instant::now();
    let t_full = Arc::new(build::snapshot(&full, 1).expect("tables"));
    let build_s = t0.elapsed().as_secs_f64();
    let t_cached = Arc::new(build::snapshot(&cached, 1).expect("tables"));
    let no_flow_cache = with_flow_cache(full.clone(), 0);
    let fc = FlowCacheConfig::default();
    let t_nfc = Arc::new(build::snapshot(&no_flow_cache, 1).expect("tables"));
    let flow_cached = with_flow_cache(full.clone(), fc.entries);
    let t_fc = Arc::new(build::snapshot(&flow_cached, 1).expect("tables"));
    // The same two with every next hop a gateway by address, resolved
    // (the slow path's table given to the workers): what a router's
    // forwarding costs beside static MACs.
    let mut resolved = no_flow_cache.clone();
    let neigh = Arc::new(forwarder::port::synthetic::gateways_resolved(&mut resolved));
    let t_res = Arc::new(build::snapshot(&resolved, 1).expect("tables"));
    let resolved_fc = with_flow_cache(resolved.clone(), fc.entries);
    let t_res_fc = Arc::new(build::snapshot(&resolved_fc, 1).expect("tables"));
    // The same traffic on VLANs: tagged in, tagged out.
    let vlan = with_vlans(no_flow_cache.clone());
    let t_vlan = Arc::new(build::snapshot(&vlan, 1).expect("tables"));
    let vlan_fc = with_vlans(flow_cached.clone());
    let t_vlan_fc = Arc::new(build::snapshot(&vlan_fc, 1).expect("tables"));
    // The same traffic and routes in a VRF.
    let in_vrf = |mut c: Config| {
        forwarder::port::synthetic::in_vrf(&mut c);
        c
    };
    let vrf = in_vrf(no_flow_cache.clone());
    let t_vrf = Arc::new(build::snapshot(&vrf, 1).expect("tables"));
    let vrf_fc = in_vrf(flow_cached.clone());
    let t_vrf_fc = Arc::new(build::snapshot(&vrf_fc, 1).expect("tables"));
    // Connection tracking on (the flow cache off: the connections keep
    // the decisions), room for every flow of the sweep; and room for
    // 4,096, so that with 262,144 flows every packet misses, opens a
    // connection and drops an unassured one early: new connections.
    let ct = with_conntrack(no_flow_cache.clone(), 1 << 20);
    let t_ct = Arc::new(build::snapshot(&ct, 1).expect("tables"));
    let ct_new = with_flows(with_conntrack(no_flow_cache.clone(), 4096), 262_144);
    let t_ct_new = Arc::new(build::snapshot(&ct_new, 1).expect("tables"));
    let ct_sweep: Vec<(usize, Config)> = FLOWS
        .iter()
        .map(|&n| (n, with_flows(ct.clone(), n)))
        .collect();
    // The example's flow mix, then fewer and more flows per port (the
    // ports' configurations differ; the tables are the same).
    let sweep: Vec<(String, Config, Config, Config, Config)> = FLOWS
        .iter()
        .map(|&n| {
            (
                n.to_string(),
                with_flows(no_flow_cache.clone(), n),
                with_flows(flow_cached.clone(), n),
                with_flows(small.clone(), n),
                with_flows(full.clone(), n),
            )
        })
        .collect();
    let mut variants: Vec<Variant> = vec![
        ("io".into(), Mode::Io, &small, &t_small, None),
        ("rewrite".into(), Mode::Rewrite, &small, &t_small, None),
        ("route".into(), Mode::Route, &full, &t_full, None),
        ("route+cache".into(), Mode::Route, &cached, &t_cached, None),
        ("route+vlan".into(), Mode::Route, &vlan, &t_vlan, None),
        ("full".into(), Mode::Full, &no_flow_cache, &t_nfc, None),
        (
            "full+resolved".into(),
            Mode::Full,
            &resolved,
            &t_res,
            Some(&neigh),
        ),
        (
            "full+flowcache".into(),
            Mode::Full,
            &flow_cached,
            &t_fc,
            None,
        ),
        (
            "full+flowcache+resolved".into(),
            Mode::Full,
            &resolved_fc,
            &t_res_fc,
            Some(&neigh),
        ),
        ("full+vlan".into(), Mode::Full, &vlan, &t_vlan, None),
        ("full+vrf".into(), Mode::Full, &vrf, &t_vrf, None),
        (
            "full+flowcache+vrf".into(),
            Mode::Full,
            &vrf_fc,
            &t_vrf_fc,
            None,
        ),
        (
            "full+flowcache+vlan".into(),
            Mode::Full,
            &vlan_fc,
            &t_vlan_fc,
            None,
        ),
        ("full+conntrack".into(), Mode::Full, &ct, &t_ct, None),
        (
            "full+conntrack+new".into(),
            Mode::Full,
            &ct_new,
            &t_ct_new,
            None,
        ),
        // With a capture of p0's received frames armed.
        (
            "full+capture".into(),
            Mode::Full,
            &no_flow_cache,
            &t_nfc,
            None,
        ),
        (
            "full+capture+all".into(),
            Mode::Full,
            &no_flow_cache,
            &t_nfc,
            None,
        ),
        (
            "full+flowcache+capture".into(),
            Mode::Full,
            &flow_cached,
            &t_fc,
            None,
        ),
        (
            "full+flowcache+capture+all".into(),
            Mode::Full,
            &flow_cached,
            &t_fc,
            None,
        ),
    ];
    for (n, off, on, io, route) in &sweep {
        // The synthetic port's own cost at that many flows (its frames
        // spread over more lines), beside what the pipeline adds.
        variants.push((format!("io@{n}"), Mode::Io, io, &t_small, None));
        // Routing alone: as many destinations, random in the full table.
        variants.push((format!("route@{n}"), Mode::Route, route, &t_full, None));
        variants.push((format!("full@{n}"), Mode::Full, off, &t_nfc, None));
        variants.push((format!("full+flowcache@{n}"), Mode::Full, on, &t_fc, None));
    }
    for (n, c) in &ct_sweep {
        variants.push((format!("full+conntrack@{n}"), Mode::Full, c, &t_ct, None));
    }
    if !only.is_empty() {
        variants.retain(|(name, ..)| only.contains(name));
    }
    // Each variant at each burst size, the sizes next to each other.
    let rows: Vec<(usize, usize)> = (0..variants.len())
        .flat_map(|v| bursts.iter().map(move |&b| (v, b)))
        .collect();
    let main_rows = rows
        .iter()
        .filter(|&&(v, _)| !variants[v].0.contains('@'))
        .count();
    let core_sets: [&[usize]; 2] = [&[0], &[0, 1]];
    let mut samples = vec![vec![Vec::new(); core_sets.len()]; rows.len()];
    // Per row, the capture's frames written and lost (M/s), one core.
    let mut taken = vec![(Vec::new(), Vec::new()); rows.len()];
    for _ in 0..reps {
        for (r, &(v, burst)) in rows.iter().enumerate() {
            let (name, mode, cfg, tables, neigh) = &variants[v];
            let capture = capture_of(name);
            for (c, cores) in core_sets.iter().enumerate() {
                if capture.is_some() && cores.len() > 1 {
                    // The writer needs the other core.
                    samples[r][c].push(f64::NAN);
                    continue;
                }
                let m = measure(cfg, tables, *neigh, *mode, cores, burst, secs, capture);
                samples[r][c].push(m.mpps);
                if let Some((w, l)) = m.captured {
                    taken[r].0.push(w);
                    taken[r].1.push(l);
                }
            }
        }
    }
    let sizes: Vec<String> = bursts.iter().map(|b| b.to_string()).collect();
    if !json {
        println!("Mpps forwarded, synthetic ports, 64-byte frames, burst {}, median (best) of {reps} run(s) of {secs} s, round-robin; full table {v4} IPv4 + {v6} IPv6 routes (built in {build_s:.1} s)", sizes.join(" and "));
        println!();
        println!(
            "| variant | 1 core | 2 cores | 2 cores / 1 core | ns per packet (1 core, median) |"
        );
        println!("|---|---:|---:|---:|---:|");
    }
    let best = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
    for (v, &(vi, burst)) in rows.iter().enumerate() {
        let name = &variants[vi].0;
        let runs: Vec<Vec<f64>> = samples[v].clone();
        let one = median(&mut samples[v][0]);
        let two = median(&mut samples[v][1]);
        // The size in the row's label when the run compares several.
        let label = if bursts.len() > 1 {
            format!("{name} (burst {burst})")
        } else {
            name.clone()
        };
        if json {
            // The sweep's rows: `variant` `io`, `full` or `full+flowcache`
            // with `flows` per port. `mpps` is the median of the runs,
            // `best` the fastest (the machine's fast phase), `runs` each
            // run's figure in the order measured.
            let (variant, flows) = match name.split_once('@') {
                Some((v, n)) => (v, n.parse::<u64>().ok()),
                None => (name.as_str(), None),
            };
            for (c, (cores, mpps)) in [(1, one), (2, two)].into_iter().enumerate() {
                let all: Vec<_> = runs[c].iter().map(|&x| round(x, 2)).collect();
                let mut line = json!({
                    "variant": variant,
                    "cores": cores,
                    "burst": burst,
                    "mpps": round(mpps, 2),
                    "median": round(mpps, 2),
                    "best": round(best(&runs[c]), 2),
                    "runs": all,
                });
                if let Some(n) = flows {
                    line["flows"] = n.into();
                }
                if captures(name) && cores == 1 {
                    line["captured_mfps"] = round(median(&mut taken[v].0.clone()), 2);
                    line["lost_mfps"] = round(median(&mut taken[v].1.clone()), 2);
                }
                if !mpps.is_nan() {
                    row(line);
                }
            }
        } else {
            if v == main_rows {
                println!();
                println!("Flows per port (the example has 4,096 on p0 and the default 1,024 on p1), flow cache of {} entries per core storing one miss in {}:", fc.entries, fc.insert_one_in);
                println!();
                println!(
                    "| variant | 1 core | 2 cores | 2 cores / 1 core | ns per packet (1 core, median) |"
                );
                println!("|---|---:|---:|---:|---:|");
            }
            if captures(name) {
                println!(
                    "| {label} | {one:.2} ({:.2}) | - | - | {:.1} (capture: {:.2} M frames/s written, {:.2} M/s lost) |",
                    best(&runs[0]),
                    1e3 / one,
                    median(&mut taken[v].0.clone()),
                    median(&mut taken[v].1.clone()),
                );
                continue;
            }
            println!(
                "| {label} | {one:.2} ({:.2}) | {two:.2} ({:.2}) | {:.2}x | {:.1} |",
                best(&runs[0]),
                best(&runs[1]),
                two / one,
                1e3 / one
            );
        }
    }
}
