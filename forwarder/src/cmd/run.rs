//! `forwarder run`: load and check the configuration, start the workers on
//! their cores and the control thread, print rates once a second, and a
//! summary at the end.

use super::console::{self, Tick};
use crate::control::server::{self, Server};
use crate::control::stats::Source;
use crate::control::Control;
use crate::pipeline::Mode;
use crate::worker::{self, Report, Running};
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
    let errs = super::check::problems(path, cfg, super::check::Host::This);
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
        crate::log::log_with(
            crate::log::Level::Warn,
            w,
            serde_json::json!({ "event": "core_shared" }),
        );
    }
    let workers = worker::spawn(&cfg, shared.clone(), mode)?;
    // The router's slow path: idle (a poll every 10 ms) until a snapshot
    // has ports with addresses; off the workers' cores (the last free
    // one: the control thread takes the first).
    let free = worker::free_cores(&cfg.forwarder.cores);
    let slow = match crate::router::spawn(shared.clone(), taps, free.last().copied()) {
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
    write(
        out,
        &console::summary(&cfg, &reports, start.elapsed().as_secs_f64()),
    )
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

/// The console's reading of the workers' counters now.
fn tick(cfg: &Config, workers: &[Running]) -> Tick {
    let reads: Vec<_> = workers.iter().map(|(p, _)| p.read()).collect();
    let cores = cfg
        .forwarder
        .cores
        .iter()
        .zip(&reads)
        .map(|(&core, r)| (core, r.rx, r.tx, r.drops))
        .collect();
    let ports = cfg
        .ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut sum = [0; 4];
            for r in &reads {
                if let Some(v) = r.ports.get(i) {
                    for (s, v) in sum.iter_mut().zip(console::port_rates_of(v)) {
                        *s += v;
                    }
                }
            }
            (p.name.clone(), sum)
        })
        .collect();
    Tick { cores, ports }
}

/// Prints the rates once a second until `duration` is over or `stop` is
/// set.
fn print_rates(
    cfg: &Config,
    workers: &[Running],
    stop: &std::sync::atomic::AtomicBool,
    start: Instant,
    duration: Option<Duration>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut last = Tick::default();
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
        let cur = tick(cfg, workers);
        let lines = console::rate_lines(&last, &cur, dt);
        last = cur;
        let secs = now.duration_since(start).as_secs_f64();
        write(out, &format!("[{secs:.0}s]\n{lines}"))?;
        if deadline.is_some_and(|d| now >= d) || stop.load(Relaxed) {
            return Ok(());
        }
    }
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
