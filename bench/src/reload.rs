//! `bench reload`: what a reload costs.
//!
//! - From a file change to the new snapshot serving: a set file of 1,000,
//!   30,000 or 100,000 `ipv4_addr . inet_service` elements beside a full
//!   routing table in a route file; the set file is replaced (write
//!   and rename, as editors do) with one element more or less, or with
//!   entirely other elements; the running control thread notices
//!   (inotify, 100 ms debounce), reloads, and the time until the
//!   published generation changes is taken. The reload's own work (read,
//!   parse, check, apply, swap) is reported beside it.
//! - The workers' longest gap between two bursts while the control thread
//!   reloads back to back (every reload replacing a 30,000-element set and
//!   changing routes), beside the same run without reloads.

use crate::stats::{median, round, row};
use forwarder::control::Control;
use forwarder::control::{server as serve, stats};
use forwarder::pipeline::Mode;
use forwarder::port::{Burst, Port, PortStats};
use forwarder::wire::build::{ipv4, L4};
use forwarder::worker;
use routecache::gen::prefixes;
use routecache::Family;
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `n` elements `A.B.C.0/24 . port`, from `base` on (disjoint /24s).
fn set_file(n: usize, base: u32) -> String {
    let mut s = String::with_capacity(n * 24);
    for i in 0..n as u32 {
        let net = 0x0b00_0000u32 + ((base + i) << 8);
        let _ = writeln!(
            s,
            "{}/24 . {}",
            std::net::Ipv4Addr::from(net),
            1 + (i * 7) % 10_000
        );
    }
    s
}

/// The configuration: one port, the set from `sets.set`, `v4` + `v6`
/// generated routes over two next hops in `routes.txt` beside it (one
/// `PREFIX VIA` a line; written here too).
fn config_text(dir: &Path, v4: usize, v6: usize, route_seed: u64) -> String {
    let mut s = String::new();
    for (f, n) in [(Family::V4, v4), (Family::V6, v6)] {
        for (i, (prefix, len)) in prefixes(f, n, route_seed).into_iter().enumerate() {
            let addr = match f {
                Family::V4 => std::net::Ipv4Addr::from(prefix as u32).to_string(),
                Family::V6 => std::net::Ipv6Addr::from(prefix).to_string(),
            };
            let _ = writeln!(s, "{addr}/{len} h{}", i % 2);
        }
    }
    replace(&dir.join("routes.txt"), &s);
    let mut s = String::from("route_file = \"routes.txt\"\n");
    s.push_str(
        r#"
[forwarder]
cores = [0]
[[port]]
name = "p0"
[[set]]
name = "blocklist"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
file = "sets.set"
[[next_hop]]
name = "h0"
port = "p0"
mac = "02:00:00:00:00:0a"
[[next_hop]]
name = "h1"
port = "p0"
mac = "02:00:00:00:00:0b"
"#,
    );
    s
}

/// Replaces `path` as an editor does: a new file renamed over it.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

fn workdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("bench-reload-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

struct Change {
    n: usize,
    kind: &'static str,
    serving_ms: Vec<f64>,
    work_ms: Vec<f64>,
    parse_ms: Vec<f64>,
}

/// File change → serving, for a set of `n` elements.
fn change_to_serving(
    dir: &Path,
    n: usize,
    v4: usize,
    v6: usize,
    reps: usize,
) -> (f64, [Change; 2], Vec<f64>) {
    let cfg = dir.join(format!("reload-{n}.toml"));
    let set = dir.join("sets.set");
    std::fs::write(&set, set_file(n, 0)).expect("write");
    std::fs::write(&cfg, config_text(dir, v4, v6, 0xf00d)).expect("write");
    let t0 = Instant::now();
    let control = Control::start(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let start_s = t0.elapsed().as_secs_f64();
    let shared = control.shared();
    let source = Arc::new(stats::Source {
        shared: shared.clone(),
        workers: Vec::new(),
        ports: vec!["p0".into()],
    });
    let server = serve::start(control, source, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut out = [
        Change {
            n,
            kind: "one element",
            serving_ms: Vec::new(),
            work_ms: Vec::new(),
            parse_ms: Vec::new(),
        },
        Change {
            n,
            kind: "full replacement",
            serving_ms: Vec::new(),
            work_ms: Vec::new(),
            parse_ms: Vec::new(),
        },
    ];
    let one_more = {
        let mut s = set_file(n, 0);
        s.push_str("203.0.113.0/24 . 53\n");
        s
    };
    for _ in 0..reps {
        for (k, c) in out.iter_mut().enumerate() {
            // Away from the base set and back: two changes of the kind
            // measured.
            let changed = if k == 0 {
                one_more.clone()
            } else {
                set_file(n, 1 << 20)
            };
            for text in [changed, set_file(n, 0)] {
                let gen = shared.status.generation.load(Relaxed);
                let t = Instant::now();
                replace(&set, &text);
                while shared.snapshot.load().generation == gen {
                    assert!(
                        t.elapsed() < Duration::from_secs(120),
                        "no reload: {}",
                        shared.status.last_reload()
                    );
                    std::thread::sleep(Duration::from_micros(200));
                }
                c.serving_ms.push(t.elapsed().as_secs_f64() * 1e3);
                c.work_ms
                    .push(shared.status.last_reload_us.load(Relaxed) as f64 / 1e3);
                assert_eq!(shared.status.last_reload(), "ok");
                // Let the watch settle before the next change.
                std::thread::sleep(Duration::from_millis(150));
            }
        }
    }
    // One element added, then deleted, at run time through the control
    // socket, as `forwarder element` sends it: from the send to the
    // answer, which comes once the new generation is published (each
    // worker loads it at its next turn).
    let mut element_ms = Vec::new();
    for i in 0..10 * reps {
        let op = if i % 2 == 0 { "add" } else { "delete" };
        let req = format!(
            "{{\"request\":\"element\",\"op\":\"{op}\",\"set\":\"blocklist\",\"elements\":[\"203.0.113.0/24 . 53\"]}}"
        );
        let t = Instant::now();
        let answer = serve::request(&server.socket, &req).unwrap_or_else(|e| panic!("{e}"));
        element_ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert!(answer.contains("\"ok\""), "{answer}");
    }
    shared.stop.store(true, Relaxed);
    server.join();
    // The parse share: the same files loaded alone.
    for c in out.iter_mut() {
        for _ in 0..reps.min(2) {
            let t = Instant::now();
            config::load(&cfg).expect("load");
            c.parse_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    (start_s, out, element_ms)
}

/// A port that records the longest gap between two receives.
struct GapPort {
    frames: Vec<Vec<u8>>,
    next: usize,
    last: Option<Instant>,
    max_ns: Arc<AtomicU64>,
    over_50us: Arc<AtomicU64>,
}

impl Port for GapPort {
    fn name(&self) -> &str {
        "p0"
    }
    fn rx_burst(&mut self, burst: &mut Burst, max: usize) -> usize {
        let now = Instant::now();
        if let Some(l) = self.last {
            let gap = now.duration_since(l).as_nanos() as u64;
            self.max_ns.fetch_max(gap, Relaxed);
            if gap > 50_000 {
                self.over_50us.fetch_add(1, Relaxed);
            }
        }
        self.last = Some(now);
        for _ in 0..max {
            burst.push(&self.frames[self.next]);
            self.next = (self.next + 1) % self.frames.len();
        }
        max
    }
    fn tx_burst(&mut self, _: &mut Burst, which: &[u8]) -> usize {
        which.len()
    }
    fn stats(&self) -> PortStats {
        PortStats::default()
    }
}

/// Longest gap and gaps over 50 µs on one worker for `secs`, with or
/// without a reload storm meanwhile; and the reloads done.
fn gaps(dir: &Path, mode: Mode, storm: bool, secs: f64) -> (f64, u64, u64) {
    let cfg = dir.join("storm.toml");
    let set = dir.join("sets.set");
    std::fs::write(&set, set_file(30_000, 0)).expect("write");
    std::fs::write(&cfg, config_text(dir, 20_000, 2_000, 1)).expect("write");
    let mut control = Control::start(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let conf = control.config().clone();
    let shared = control.shared();
    let max_ns = Arc::new(AtomicU64::new(0));
    let over = Arc::new(AtomicU64::new(0));
    let (m, o) = (max_ns.clone(), over.clone());
    let workers = worker::spawn_with(&conf, shared.clone(), mode, move |_| {
        let frames = (0..1024u32)
            .map(|i| {
                ipv4(
                    0xc000_0201,
                    0x0b00_0000 + (i << 8) + 1,
                    64,
                    L4::Udp(1000, 53),
                    18,
                )
            })
            .collect();
        Ok(vec![Box::new(GapPort {
            frames,
            next: 0,
            last: None,
            max_ns: m.clone(),
            over_50us: o.clone(),
        }) as Box<dyn Port>])
    })
    .expect("worker");
    // The control side on the other core.
    let _ = core_affinity::set_for_current(core_affinity::CoreId { id: 1 });
    std::thread::sleep(Duration::from_millis(100));
    max_ns.store(0, Relaxed);
    over.store(0, Relaxed);
    let t = Instant::now();
    let mut reloads = 0;
    while t.elapsed().as_secs_f64() < secs {
        if storm {
            std::fs::write(
                &set,
                set_file(30_000, if reloads % 2 == 0 { 1 << 20 } else { 0 }),
            )
            .expect("write");
            std::fs::write(&cfg, config_text(dir, 20_000, 2_000, 1 + reloads % 2)).expect("write");
            control.reload().unwrap_or_else(|e| panic!("{e}"));
            control.reclaim();
            reloads += 1;
        } else {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let r = (
        max_ns.load(Relaxed) as f64 / 1e3,
        over.load(Relaxed),
        reloads,
    );
    shared.stop.store(true, Relaxed);
    for (_, h) in workers {
        let _ = h.join();
    }
    r
}

pub fn run(json: bool, quick: bool) {
    let (v4, v6, reps, sizes, storm_s): (usize, usize, usize, &[usize], f64) = if quick {
        (100_000, 20_000, 2, &[1_000, 30_000], 3.0)
    } else {
        (1_000_000, 200_000, 3, &[1_000, 30_000, 100_000], 10.0)
    };
    let dir = workdir();
    let mut rows = Vec::new();
    for &n in sizes {
        let (start_s, changes, element_ms) = change_to_serving(&dir, n, v4, v6, reps);
        rows.push((start_s, changes, element_ms));
    }
    // The storm beside the same run without reloads, for a worker that
    // reads the tables (full pipeline) and one that never does (io): what
    // both show is the machine's, not the snapshot swap's.
    let mut gap_rows = Vec::new();
    for mode in [Mode::Full, Mode::Io] {
        for storm in [false, true] {
            let mut max = Vec::new();
            let mut over = Vec::new();
            let mut reloads = Vec::new();
            for _ in 0..3 {
                let (m, o, r) = gaps(&dir, mode, storm, storm_s);
                max.push(m);
                over.push(o as f64);
                reloads.push(r as f64);
            }
            gap_rows.push((
                mode,
                storm,
                median(&mut max),
                median(&mut over),
                median(&mut reloads),
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if json {
        for (start_s, changes, element_ms) in &mut rows {
            let n = changes[0].n;
            let best = element_ms.iter().copied().fold(f64::INFINITY, f64::min);
            row(json!({
                "bench": "reload_element",
                "elements": n,
                "routes": v4 + v6,
                "served_ms": round(median(element_ms), 3),
                "best_ms": round(best, 3),
            }));
            for c in changes.iter_mut() {
                row(json!({
                    "bench": "reload",
                    "elements": c.n,
                    "change": c.kind,
                    "routes": v4 + v6,
                    "serving_ms": round(median(&mut c.serving_ms), 1),
                    "work_ms": round(median(&mut c.work_ms), 1),
                    "parse_ms": round(median(&mut c.parse_ms), 1),
                    "start_s": round(*start_s, 2),
                }));
            }
        }
        for (mode, storm, max_us, over, reloads) in &gap_rows {
            row(json!({
                "bench": "reload_gap",
                "pipeline": mode.name(),
                "storm": storm,
                "max_gap_us": round(*max_us, 1),
                "gaps_over_50us": over,
                "reloads": reloads,
                "secs": storm_s,
            }));
        }
        return;
    }
    println!("File change to serving: set file of N `ipv4_addr . inet_service` elements replaced (write + rename), full table {v4} IPv4 + {v6} IPv6 routes in a route file; median of {} changes; the watch's debounce is {} ms", 2 * reps, serve::DEBOUNCE.as_millis());
    println!();
    println!("| elements | change | file change → serving (ms) | reload work (ms) | of which reading + checking the files (ms) | first start (s) |");
    println!("|---:|---|---:|---:|---:|---:|");
    for (start_s, changes, _) in &mut rows {
        for c in changes.iter_mut() {
            println!(
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:.2} |",
                c.n,
                c.kind,
                median(&mut c.serving_ms),
                median(&mut c.work_ms),
                median(&mut c.parse_ms),
                start_s
            );
        }
    }
    println!();
    println!("One element added or deleted at run time (`forwarder element`, one JSON request on the control socket), from the send to the answer (the new generation published); {} requests alternating add and delete:", 10 * reps);
    println!();
    println!("| elements | served (ms), median | best (ms) |");
    println!("|---:|---:|---:|");
    for (_, changes, element_ms) in &mut rows {
        let best = element_ms.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "| {} | {:.3} | {best:.3} |",
            changes[0].n,
            median(element_ms)
        );
    }
    println!();
    println!("One worker (core 0) on a port that times its receives, {storm_s} s, median of 3 runs; the control side on core 1 reloading back to back (each reload replaces a 30,000-element set and 22,000 routes) or idle:");
    println!();
    println!("| worker pipeline | reloads | longest gap between bursts (µs) | gaps over 50 µs |");
    println!("|---|---:|---:|---:|");
    for (mode, _, max_us, over, reloads) in &gap_rows {
        println!("| {} | {reloads} | {max_us:.1} | {over} |", mode.name());
    }
}
