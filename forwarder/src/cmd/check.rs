//! `forwarder check`: everything `run` would read and verify, without
//! opening a port or touching a running instance (as `nft -c`, `nginx
//! -t`, `bird -p`): the configuration and every file it names, the
//! ports' drivers and interfaces, the cores, and the tables built from
//! it all. Every problem found is reported, each as `file:line:col:
//! message`, not only the first: each section of the file and each set
//! is checked whatever the others gave (a file that is not TOML at all
//! has that one error; routes naming next hops are checked only once the
//! next hops are good; within a set, its first bad element).

use crate::control::build::Working;
use config::{Config, Driver};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;

/// What a checked configuration holds.
pub struct Summary {
    /// Sets: name and elements.
    pub sets: Vec<(String, usize)>,
    /// Routes per family.
    pub routes_v4: usize,
    /// See above.
    pub routes_v6: usize,
    /// Next hops and ECMP groups.
    pub next_hops: usize,
    /// See above.
    pub ecmp: usize,
    /// Ports: name and driver.
    pub ports: Vec<(String, &'static str)>,
    /// The VRFs besides the default one, by name.
    pub vrfs: Vec<String>,
    /// Worker cores.
    pub cores: Vec<usize>,
    /// Bytes the tables take once built (sets and FIB; the workers'
    /// caches and the ports' rings come on top).
    pub memory: usize,
    /// Where it was checked.
    pub host: Host,
}

/// Where a configuration is checked: on the host that runs it (its
/// interfaces and cores too), or elsewhere (`--offline`: a build host, a
/// CI job, a laptop), where those would be another machine's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    /// This host: everything.
    This,
    /// Another: everything but the interfaces and the cores.
    Other,
}

/// The problems of the loaded `cfg` (from `path`) that `run` checks
/// before it opens anything: no ports or routes, drivers this build
/// lacks, cores that cannot be pinned (on this host only).
pub fn problems(path: &Path, cfg: &Config, host: Host) -> Vec<String> {
    let mut errs = Vec::new();
    if cfg.ports.is_empty() {
        errs.push(format!(
            "{}: no [[port]]: nothing to receive from or send to",
            path.display()
        ));
    }
    if cfg.route_count() == 0 && cfg.kernel.is_none() && !cfg.is_router() {
        errs.push(format!(
            "{}: no routes ([[route]], route_file, port addresses or [routes] source = \"kernel\"): every packet would be dropped as no_route",
            path.display()
        ));
    }
    #[cfg(not(feature = "dpdk"))]
    for p in &cfg.ports {
        if matches!(p.driver, Driver::Dpdk(_)) {
            errs.push(crate::port::without_dpdk(p));
        }
    }
    let allowed = crate::worker::allowed_cores();
    let cores: &[usize] = match host {
        Host::This => &cfg.forwarder.cores,
        Host::Other => &[],
    };
    for c in cores {
        if !allowed.contains(c) {
            errs.push(format!(
                "{}: core {c} cannot be pinned: it does not exist, is offline or is outside this \
                 process's CPU affinity (cores it may use: {allowed:?})",
                cfg.forwarder.cores_at
            ));
        }
    }
    errs
}

/// Loads and checks `path` (as `host` allows); the summary, or every
/// problem found.
pub fn check(path: &Path, host: Host) -> Result<Summary, Vec<String>> {
    let cfg = config::Loader::new()
        .load_all(path)
        .map_err(|errs| errs.iter().map(|e| e.to_string()).collect::<Vec<_>>())?;
    let mut errs = problems(path, &cfg, host);
    // What `run` finds only as it opens the ports.
    let here: &[config::PortConfig] = match host {
        Host::This => &cfg.ports,
        Host::Other => &[],
    };
    for p in here {
        let interface = match &p.driver {
            Driver::AfPacket(o) => &o.interface,
            Driver::AfXdp(o) => &o.interface,
            _ => continue,
        };
        // The interface's directory exists exactly when the kernel has it
        // in this network namespace (sysfs is mounted per namespace).
        if !Path::new("/sys/class/net").join(interface).exists() {
            errs.push(format!(
                "{}: port `{}` on interface `{}`: no such interface in this network namespace",
                p.at,
                p.name,
                matcher::excerpt(interface)
            ));
        }
    }
    let memory = match Working::build(&cfg) {
        Ok(mut w) => {
            let fib = w.fib.publish();
            w.sets
                .iter_mut()
                .map(|s| s.commit().memory_usage().total())
                .sum::<usize>()
                + fib.memory_usage()
        }
        Err(e) => {
            errs.push(format!("{}: {e}", path.display()));
            0
        }
    };
    if !errs.is_empty() {
        return Err(errs);
    }
    let v6 = cfg.all_routes().filter(|r| r.v6).count();
    Ok(Summary {
        sets: cfg
            .sets
            .iter()
            .map(|s| (s.name.clone(), s.elements.len()))
            .collect(),
        routes_v4: cfg.route_count().saturating_sub(v6),
        routes_v6: v6,
        next_hops: cfg.next_hops.len(),
        ecmp: cfg.ecmp.len(),
        ports: cfg
            .ports
            .iter()
            .map(|p| (p.name.clone(), p.driver.name()))
            .collect(),
        vrfs: cfg.vrfs.iter().map(|v| v.name.clone()).collect(),
        cores: cfg.forwarder.cores.clone(),
        memory,
        host,
    })
}

/// `forwarder check`: prints the summary (or every problem, one a line)
/// as text or JSON; returns whether the configuration is good.
pub fn run(path: &Path, host: Host, json_out: bool, out: &mut dyn Write) -> Result<bool, String> {
    let r = check(path, host);
    let text = match (&r, json_out) {
        (Ok(s), true) => summary_json(path, s).to_string(),
        (Err(errs), true) => json!({
            "config": path.display().to_string(),
            "ok": false,
            "errors": errs.iter().map(|e| crate::log::located(e)).collect::<Vec<_>>(),
        })
        .to_string(),
        (Ok(s), false) => summary_text(path, s),
        (Err(errs), false) => errs.join("\n"),
    };
    writeln!(out, "{text}").map_err(|e| e.to_string())?;
    Ok(r.is_ok())
}

fn summary_json(path: &Path, s: &Summary) -> Value {
    json!({
        "config": path.display().to_string(),
        "ok": true,
        "sets": s.sets.iter().map(|(n, e)| json!({"name": n, "elements": e})).collect::<Vec<_>>(),
        "routes": {"ipv4": s.routes_v4, "ipv6": s.routes_v6},
        "next_hops": s.next_hops,
        "ecmp_groups": s.ecmp,
        "ports": s.ports.iter().map(|(n, d)| json!({"name": n, "driver": d})).collect::<Vec<_>>(),
        "vrfs": s.vrfs,
        "cores": s.cores,
        "table_bytes": s.memory,
        "offline": s.host == Host::Other,
    })
}

fn summary_text(path: &Path, s: &Summary) -> String {
    let sets: Vec<String> = s
        .sets
        .iter()
        .map(|(n, e)| format!("`{n}` ({e} element{})", if *e == 1 { "" } else { "s" }))
        .collect();
    let ports: Vec<String> = s
        .ports
        .iter()
        .map(|(n, d)| format!("`{n}` ({d})"))
        .collect();
    format!(
        "{}: ok: {} set{}{}{}; {} IPv4 and {} IPv6 routes over {} next hop{} and {} ECMP group{}; \
         port{} {}{}; workers on core{} {:?}; the tables take about {:.1} MiB{}",
        path.display(),
        s.sets.len(),
        if s.sets.len() == 1 { "" } else { "s" },
        if sets.is_empty() { "" } else { ": " },
        sets.join(", "),
        s.routes_v4,
        s.routes_v6,
        s.next_hops,
        if s.next_hops == 1 { "" } else { "s" },
        s.ecmp,
        if s.ecmp == 1 { "" } else { "s" },
        if s.ports.len() == 1 { "" } else { "s" },
        ports.join(", "),
        if s.vrfs.is_empty() {
            String::new()
        } else {
            let v: Vec<String> = s.vrfs.iter().map(|n| format!("`{n}`")).collect();
            format!(
                "; VRF{} {} besides `default`",
                if v.len() == 1 { "" } else { "s" },
                v.join(", ")
            )
        },
        if s.cores.len() == 1 { "" } else { "s" },
        s.cores,
        s.memory as f64 / (1 << 20) as f64,
        match s.host {
            Host::This => "",
            Host::Other => " (offline: interfaces and cores not checked)",
        }
    )
}
