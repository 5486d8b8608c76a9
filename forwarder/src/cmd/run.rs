//! `forwarder run`: load and check the configuration, start the workers on
//! their cores and the control thread, print rates once a second, and a
//! summary at the end.

use crate::control::server::{self, Server};
use crate::control::stats::Source;
use crate::control::Control;
use crate::pipeline::{DropCounts, Mode, Outcome};
use crate::reason::DropReason;
use crate::worker::Report;
use crate::worker::{self, Published, Running};
use config::Config;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs the forwarder for `duration` (or until Ctrl-C), printing to `out`.
pub fn run(config: &Path, duration: Option<Duration>, out: &mut dyn Write) -> Result<(), String> {
    run_mode(config, duration, Mode::Full, out)
}

/// What a configuration must have, beyond its syntax, before anything
/// starts: ports this build can open, at least one route, and cores this
/// process can pin its workers to (every problem, one a line: see
/// [`super::check::problems`]).
pub fn check(path: &Path, cfg: &Config) -> Result<(), String> {
    let errs = super::check::problems(path, cfg);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n"))
    }
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
    let mut loader = config::Loader::new();
    let cfg = loader.load(config).map_err(|e| e.to_string())?;
    check(config, &cfg)?;
    // The TAPs first: the kernel's routes through them map to their
    // ports from the first reading of the table.
    let taps = crate::kernel::tap::open_all(&cfg)?;
    let mut control = Control::with_config(config, cfg.clone(), loader)?;
    control.start_mirror()?;
    let shared = control.shared();
    // Another forwarder's workers on these cores would halve both: said,
    // not refused (the cores are held until this process ends).
    let (_cores, shared_cores) =
        crate::corelock::claim(&config::runtime_dir(), &cfg.forwarder.cores, config);
    for w in &shared_cores {
        crate::log::log(crate::log::Level::Warn, w);
    }
    let workers = worker::spawn(&cfg, shared.clone(), mode)?;
    // The router's slow path: idle (a poll every 10 ms) until a snapshot
    // has ports with addresses.
    let slow = match crate::router::spawn(shared.clone(), taps) {
        Ok(h) => h,
        Err(e) => {
            worker::stop(&shared, workers);
            return Err(e);
        }
    };
    let source = Arc::new(Source {
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
    let server = match server::start(control, source, &cfg.forwarder.cores) {
        Ok(s) => s,
        Err(e) => {
            worker::stop(&shared, workers);
            return Err(e);
        }
    };
    {
        let shared = shared.clone();
        // Ctrl-C stops the workers after their burst; a second handler
        // (in tests that run several forwarders) is refused, harmlessly.
        let _ = ctrlc::set_handler(move || shared.stop.store(true, Relaxed));
    }
    // systemd (`Type=notify`): ready once every worker has taken up the
    // tables (it publishes the generation it loaded as it forwards).
    let ready = Instant::now();
    while workers.iter().any(|(p, _)| p.loaded.load(Relaxed) == 0)
        && ready.elapsed() < Duration::from_secs(5)
        && !shared.stop.load(Relaxed)
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    if let Err(e) = super::notify::notify(&format!(
        "READY=1\nSTATUS=forwarding on core(s) {:?}\nMAINPID={}",
        cfg.forwarder.cores,
        std::process::id()
    )) {
        crate::log::log(crate::log::Level::Warn, &e);
    }
    let started = write(out, &banner(config, &cfg, &server)).and_then(|()| {
        let start = Instant::now();
        print_rates(&cfg, &workers, &shared.stop, start, duration, out).map(|()| start)
    });
    shared.stop.store(true, Relaxed);
    server.join();
    let _ = slow.join();
    let reports = workers
        .into_iter()
        .map(|(_, h)| h.join().map_err(|_| "a worker panicked".to_string()))
        .collect::<Result<Vec<Report>, String>>()?;
    #[cfg(feature = "dpdk")]
    crate::port::dpdk::shutdown();
    let start = started?;
    write(out, &summary(&reports, start.elapsed().as_secs_f64()))
}

fn write(out: &mut dyn Write, s: &str) -> Result<(), String> {
    out.write_all(s.as_bytes()).map_err(|e| e.to_string())
}

/// The lines printed before the first rates.
fn banner(config: &Path, cfg: &Config, server: &Server) -> String {
    let mut s = format!(
        "forwarder: {} worker(s) on core(s) {:?}, {} port(s), {} set(s), burst {}\n\
         control socket {} (forwarder stats|reload --config {})\n",
        cfg.forwarder.cores.len(),
        cfg.forwarder.cores,
        cfg.ports.len(),
        cfg.sets.len(),
        cfg.forwarder.burst,
        server.socket.display(),
        config.display()
    );
    if let Some(addr) = cfg.control.prometheus {
        s.push_str(&format!("prometheus http://{addr}/metrics\n"));
    }
    s
}

/// What a worker had published at the last tick: rx, tx, drops.
type Tick = (u64, u64, DropCounts);

fn tick(p: &Published) -> Tick {
    let r = p.read();
    (r.rx, r.tx, r.drops)
}

/// Prints every worker's rates once a second until `duration` is over
/// or `stop` is set.
fn print_rates(
    cfg: &Config,
    workers: &[Running],
    stop: &std::sync::atomic::AtomicBool,
    start: Instant,
    duration: Option<Duration>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut last: Vec<Tick> = vec![(0, 0, [0; DropReason::COUNT]); workers.len()];
    let mut last_t = start;
    let deadline = duration.map(|d| start + d);
    loop {
        let tick_at = (last_t + Duration::from_secs(1))
            .min(deadline.unwrap_or(Instant::now() + Duration::from_secs(1)));
        while Instant::now() < tick_at && !stop.load(Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let now = Instant::now();
        let dt = now.duration_since(last_t).as_secs_f64();
        last_t = now;
        let per_s = |a: u64, b: u64| (a - b) as f64 / dt / 1e6;
        let mut total = (0.0, 0.0, [0.0; DropReason::COUNT]);
        let mut lines = String::new();
        for (i, (p, _)) in workers.iter().enumerate() {
            let cur = tick(p);
            let (rx, tx) = (per_s(cur.0, last[i].0), per_s(cur.1, last[i].1));
            let drops: [f64; DropReason::COUNT] =
                std::array::from_fn(|k| per_s(cur.2[k], last[i].2[k]));
            total.0 += rx;
            total.1 += tx;
            for (t, d) in total.2.iter_mut().zip(drops) {
                *t += d;
            }
            // Labelled by the core the worker is pinned to, as in the
            // summary (not by its index: `cores = [1]` is core 1).
            let core = cfg.forwarder.cores[i];
            lines.push_str(&format!("  core {core}: {}\n", rates(rx, tx, &drops)));
            last[i] = cur;
        }
        let (rx, tx, drops) = total;
        lines.push_str(&format!("  total: {}\n", rates(rx, tx, &drops)));
        let secs = now.duration_since(start).as_secs_f64();
        write(out, &format!("[{secs:.0}s]\n{lines}"))?;
        if deadline.is_some_and(|d| now >= d) || stop.load(Relaxed) {
            return Ok(());
        }
    }
}

/// `rx .. Mpps  tx .. Mpps  drops REASON RATE Mpps, ...` (reasons with
/// none left out).
fn rates(rx: f64, tx: f64, drops: &[f64; DropReason::COUNT]) -> String {
    let said: Vec<String> = DropReason::ALL
        .iter()
        .filter(|d| drops[d.index()] > 0.0)
        .map(|d| format!("{} {:.2} Mpps", d.name(), drops[d.index()]))
        .collect();
    let drops = if said.is_empty() {
        "none".to_string()
    } else {
        said.join(", ")
    };
    format!("rx {rx:7.2} Mpps  tx {tx:7.2} Mpps  drops {drops}")
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut s = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            s.push(',');
        }
        s.push(c);
    }
    s
}

/// A rule set's matches as a person reads them: `blocklist: 41,191,447
/// dropped`, outcomes without matches left out.
fn set_line(name: &str, m: &[u64; 3]) -> String {
    let said: Vec<String> = Outcome::ALL
        .iter()
        .filter(|o| m[o.index()] > 0)
        .map(|o| {
            let verb = match o {
                Outcome::Drop => "dropped",
                Outcome::Accept => "accepted",
                Outcome::Continue => "matched, went on",
            };
            format!("{} {verb}", thousands(m[o.index()]))
        })
        .collect();
    if said.is_empty() {
        format!("{name}: no matches")
    } else {
        format!("{name}: {}", said.join(", "))
    }
}

/// The end-of-run account: per worker, its rates, its rule sets' matches
/// and its port queues; then the totals.
fn summary(reports: &[Report], elapsed: f64) -> String {
    let mut s = String::from("summary:\n");
    let (mut rx, mut tx) = (0u64, 0u64);
    let mut drops = [0u64; DropReason::COUNT];
    for r in reports {
        rx += r.counters.rx;
        tx += r.counters.tx;
        for (d, v) in drops.iter_mut().zip(r.counters.drops) {
            *d += v;
        }
        let bad: u64 = r.ports.iter().map(|(_, p)| p.tx_bad).sum();
        let fc = r.flow_cache;
        s.push_str(&format!(
            "  core {}: rx {} tx {} (tx {:.2} Mpps), sent frames the synthetic port's self-check found wrong (TTL or MACs) {bad}, flow cache hits {:.1} %\n",
            r.core,
            r.counters.rx,
            r.counters.tx,
            r.counters.tx as f64 / elapsed / 1e6,
            100.0 * fc.hits as f64 / (fc.hits + fc.misses).max(1) as f64
        ));
        for (name, m) in r.counters.set_names.iter().zip(&r.counters.matches) {
            s.push_str(&format!("    set {}\n", set_line(name, m)));
        }
        for (name, p) in &r.ports {
            s.push_str(&format!(
                "    port {name}: rx {} tx {} tx_dropped {} rx_dropped {} rx_ignored {} rx_truncated {}\n",
                p.rx, p.tx, p.tx_dropped, p.rx_dropped, p.rx_ignored, p.rx_truncated
            ));
        }
    }
    s.push_str(&format!(
        "  total: rx {rx} tx {tx} in {elapsed:.1} s: {:.2} Mpps forwarded; drops:",
        tx as f64 / elapsed / 1e6
    ));
    for d in DropReason::ALL.iter().filter(|d| drops[d.index()] > 0) {
        s.push_str(&format!(" {} {}", d.name(), drops[d.index()]));
    }
    s.push('\n');
    s
}

/// Releases DPDK's EAL when dropped (see [`crate::port::dpdk::shutdown`]).
#[cfg(feature = "dpdk")]
struct EalRelease;

#[cfg(feature = "dpdk")]
impl std::ops::Drop for EalRelease {
    fn drop(&mut self) {
        crate::port::dpdk::shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_a_person_reads_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(41191447), "41,191,447");
        assert_eq!(
            set_line("blocklist", &[41191447, 0, 0]),
            "blocklist: 41,191,447 dropped"
        );
        assert_eq!(
            set_line("v6", &[0, 12, 3]),
            "v6: 12 accepted, 3 matched, went on"
        );
        assert_eq!(set_line("idle", &[0, 0, 0]), "idle: no matches");
    }
}
