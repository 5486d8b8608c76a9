//! `forwarder run`: load the configuration, start the workers on their
//! cores, print rates once a second, and a summary at the end.

use crate::control::Control;
use crate::pipeline::Mode;
use crate::wire::Drop;
use crate::worker::{self, Published};
use crate::{serve, stats};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs the forwarder for `duration` (or until Ctrl-C), printing to `out`.
pub fn run(config: &Path, duration: Option<Duration>, out: &mut dyn Write) -> Result<(), String> {
    run_mode(config, duration, Mode::Full, out)
}

/// [`run`] with only part of the pipeline (`--mode`): what each stage
/// costs on the configured ports.
pub fn run_mode(
    config: &Path,
    duration: Option<Duration>,
    mode: Mode,
    out: &mut dyn Write,
) -> Result<(), String> {
    // However this ends, an EAL the DPDK ports started is released and
    // its runtime files removed once they are closed (a no-op without
    // DPDK ports).
    #[cfg(feature = "dpdk")]
    let _eal = EalRelease;
    let control = Control::start(config)?;
    let cfg = control.config().clone();
    let shared = control.shared();
    let workers = worker::spawn(&cfg, shared.clone(), mode)?;
    let source = Arc::new(stats::Source {
        shared: shared.clone(),
        workers: cfg
            .forwarder
            .cores
            .iter()
            .zip(&workers)
            .map(|(&c, (p, _))| (c, p.clone()))
            .collect(),
        ports: cfg.ports.iter().map(|p| p.name.clone()).collect(),
    });
    let server = match serve::start(control, source, &cfg.forwarder.cores) {
        Ok(s) => s,
        Err(e) => {
            shared.stop.store(true, Relaxed);
            for (_, h) in workers {
                let _ = h.join();
            }
            return Err(e);
        }
    };
    {
        let shared = shared.clone();
        // Ctrl-C stops the workers after their burst; a second handler
        // (in tests that run several forwarders) is refused, harmlessly.
        let _ = ctrlc::set_handler(move || shared.stop.store(true, Relaxed));
    }
    let w = |out: &mut dyn Write, s: String| out.write_all(s.as_bytes()).map_err(|e| e.to_string());
    w(
        out,
        format!(
            "forwarder: {} worker(s) on core(s) {:?}, {} port(s), {} set(s), burst {}\n",
            cfg.forwarder.cores.len(),
            cfg.forwarder.cores,
            cfg.ports.len(),
            cfg.sets.len(),
            cfg.forwarder.burst
        ),
    )?;
    w(
        out,
        format!(
            "control socket {} (forwarder stats|reload --config {})\n",
            server.socket.display(),
            config.display()
        ),
    )?;
    let start = Instant::now();
    let mut last: Vec<(u64, u64, [u64; 8])> = vec![(0, 0, [0; 8]); workers.len()];
    let mut last_t = start;
    loop {
        let deadline = duration.map(|d| start + d);
        let tick = (last_t + Duration::from_secs(1))
            .min(deadline.unwrap_or(Instant::now() + Duration::from_secs(1)));
        while Instant::now() < tick && !shared.stop.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let now = Instant::now();
        let dt = now.duration_since(last_t).as_secs_f64();
        last_t = now;
        let mut tot = (0.0, 0.0, [0.0; 8]);
        let mut line = String::new();
        for (i, (p, _)) in workers.iter().enumerate() {
            let cur = read(p);
            let rx = (cur.0 - last[i].0) as f64 / dt / 1e6;
            let tx = (cur.1 - last[i].1) as f64 / dt / 1e6;
            let mut drops = [0.0; 8];
            for (k, d) in drops.iter_mut().enumerate() {
                *d = (cur.2[k] - last[i].2[k]) as f64 / dt / 1e6;
                tot.2[k] += *d;
            }
            tot.0 += rx;
            tot.1 += tx;
            // Labelled by the core the worker is pinned to, as in the
            // summary (not by its index: `cores = [1]` is core 1).
            let core = cfg.forwarder.cores.get(i).copied().unwrap_or(i);
            line.push_str(&format!("  core {core}: {}\n", rates(rx, tx, &drops)));
            last[i] = cur;
        }
        line.push_str(&format!("  total: {}\n", rates(tot.0, tot.1, &tot.2)));
        w(
            out,
            format!("[{:.0}s]\n{line}", now.duration_since(start).as_secs_f64()),
        )?;
        let done = deadline.is_some_and(|d| now >= d);
        if done || shared.stop.load(Relaxed) {
            break;
        }
    }
    shared.stop.store(true, Relaxed);
    server.join();
    let elapsed = start.elapsed().as_secs_f64();
    let mut summary = String::from("summary:\n");
    let (mut rx, mut tx) = (0u64, 0u64);
    let mut drops = [0u64; 8];
    for (_, h) in workers {
        let r = h.join().map_err(|_| "a worker panicked".to_string())?;
        rx += r.counters.rx;
        tx += r.counters.tx;
        for (d, v) in drops.iter_mut().zip(r.counters.drops) {
            *d += v;
        }
        let bad: u64 = r.ports.iter().map(|(_, s)| s.tx_bad).sum();
        let fc = r.flow_cache;
        summary.push_str(&format!(
            "  core {}: rx {} tx {} ({:.2} Mpps), set matches {:?}, frames failing the port's check {}, flow cache hits {:.1} %\n",
            r.core,
            r.counters.rx,
            r.counters.tx,
            r.counters.tx as f64 / elapsed / 1e6,
            r.counters.matches,
            bad,
            100.0 * fc.hits as f64 / (fc.hits + fc.misses).max(1) as f64
        ));
        for (name, s) in &r.ports {
            summary.push_str(&format!(
                "    port {name}: rx {} tx {} tx_dropped {} rx_dropped {} rx_ignored {} rx_truncated {}\n",
                s.rx, s.tx, s.tx_dropped, s.rx_dropped, s.rx_ignored, s.rx_truncated
            ));
        }
    }
    summary.push_str(&format!(
        "  total: rx {rx} tx {tx} in {elapsed:.1} s: {:.2} Mpps forwarded; drops:",
        tx as f64 / elapsed / 1e6
    ));
    for d in Drop::ALL {
        if drops[d.index()] > 0 {
            summary.push_str(&format!(" {} {}", d.name(), drops[d.index()]));
        }
    }
    summary.push('\n');
    #[cfg(feature = "dpdk")]
    crate::dpdk::shutdown();
    w(out, summary)
}

fn read(p: &Published) -> (u64, u64, [u64; 8]) {
    let mut d = [0; 8];
    for (x, a) in d.iter_mut().zip(&p.drops) {
        *x = a.load(Relaxed);
    }
    (p.rx.load(Relaxed), p.tx.load(Relaxed), d)
}

fn rates(rx: f64, tx: f64, drops: &[f64; 8]) -> String {
    let mut s = format!("rx {rx:7.2} Mpps  tx {tx:7.2} Mpps  drops");
    let mut any = false;
    for d in Drop::ALL {
        if drops[d.index()] > 0.0 {
            s.push_str(&format!(" {} {:.2}", d.name(), drops[d.index()]));
            any = true;
        }
    }
    if !any {
        s.push_str(" none");
    }
    s
}

/// Releases DPDK's EAL when dropped (see [`crate::dpdk::shutdown`]).
#[cfg(feature = "dpdk")]
struct EalRelease;

#[cfg(feature = "dpdk")]
impl std::ops::Drop for EalRelease {
    fn drop(&mut self) {
        crate::dpdk::shutdown();
    }
}
