//! `bench l3fwd`: the forwarder against DPDK's own l3fwd, the reference
//! forwarder every DPDK user knows, in the same run on the same devices.
//!
//! Both run one forwarding core on two `net_pcap` devices replaying the
//! example's flow mix from memory (as `bench dpdk`), without huge pages.
//! l3fwd is built in a temporary directory from the example sources
//! Debian ships in `dpdk-doc`, with the changes [`PATCHES`] lists (pcap
//! devices have no Rx offloads and one Tx queue; l3fwd prints no rates),
//! and its rule files are written from the very configuration the
//! forwarder runs: the routes as `R` lines (LPM), and for `--lookup acl`
//! the sets' drop elements as `@` deny lines ahead of the routes (ACL
//! rules in longest-prefix order: rte_acl's first match is then the
//! longest prefix). What a configuration holds that l3fwd cannot express
//! is an error naming it, not a silently different benchmark.
//!
//! Variants, alternating in every round: `l3fwd_lpm` against
//! `forwarder_route`; `l3fwd_acl` against `forwarder_full` (flow cache
//! on) and `forwarder_full_nocache`; and with a full table (`--routes`,
//! default 1,000,000 generated IPv4 routes added to both programs)
//! `l3fwd_lpm_1M` against `forwarder_route_1M`. Each run's figure is the
//! median of its per-second rates; a variant's `mpps` is the median over
//! the rounds, `best` the highest, `vs_l3fwd` the median of the rounds'
//! ratios. Both programs must forward the same share of the frames they
//! receive (within 0.5 points): a mismatch is an error, not a figure.

use crate::dpdk::{
    examples, forwarder_config, forwarder_run, write_pcap, RemoveOnDrop, MAC0, MAC1,
};
use crate::stats::median;
use config::{Action, Config, Source, Via};
use forwarder::port::synthetic::SyntheticPort;
use matcher::{Data, Policy, Verdict};
use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Where Debian's `dpdk-doc` puts the example sources.
const SOURCES: &str = "/usr/share/dpdk/examples";

/// One change to l3fwd's sources: the file, the text it replaces (which
/// must occur exactly once), the replacement, and why.
struct Patch {
    file: &'static str,
    old: &'static str,
    new: &'static str,
    why: &'static str,
}

/// The changes l3fwd needs to run on pcap devices and be measured.
const PATCHES: &[Patch] = &[
    Patch {
        file: "main.c",
        old: "\t\tret = rte_eth_dev_configure(portid, nb_rx_queue,",
        new: "\t\tlocal_port_conf.rxmode.offloads &= dev_info.rx_offload_capa;\n\t\tret = rte_eth_dev_configure(portid, nb_rx_queue,",
        why: "net_pcap has no Rx offloads; l3fwd asks for checksum offload and exits (\"Cannot configure device: err=-22\")",
    },
    Patch {
        file: "main.c",
        old: "\t\t\trxq_conf.offloads = port_conf.rxmode.offloads;",
        new: "\t\t\trxq_conf.offloads = port_conf.rxmode.offloads & dev_info.rx_offload_capa;",
        why: "the same for the Rx queues",
    },
    Patch {
        file: "main.c",
        old: "\t\tn_tx_queue = nb_lcores;\n",
        new: "\t\tn_tx_queue = 0;\n\t\tfor (lcore_id = 0; lcore_id < RTE_MAX_LCORE; lcore_id++)\n\t\t\tif (rte_lcore_is_enabled(lcore_id) && lcore_conf[lcore_id].n_rx_queue > 0)\n\t\t\t\tn_tx_queue++;\n",
        why: "a Tx queue for each forwarding lcore only: a pcap device has one, and the main lcore only reports rates",
    },
    Patch {
        file: "main.c",
        old: "\t\t\tif (rte_lcore_is_enabled(lcore_id) == 0)\n\t\t\t\tcontinue;\n\n\t\t\tif (numa_on)\n",
        new: "\t\t\tif (rte_lcore_is_enabled(lcore_id) == 0 || lcore_conf[lcore_id].n_rx_queue == 0)\n\t\t\t\tcontinue;\n\n\t\t\tif (numa_on)\n",
        why: "the same when the Tx queues are set up",
    },
    Patch {
        file: "main.c",
        old: "\t} else {\n\t\trte_eal_mp_wait_lcore();\n",
        new: "\t} else {\n\t\tuint64_t hz = rte_get_timer_hz();\n\t\twhile (!force_quit) {\n\t\t\tuint64_t rx = 0, tx = 0;\n\t\t\tstruct rte_eth_stats st;\n\t\t\tuint16_t p;\n\t\t\tRTE_ETH_FOREACH_DEV(p) {\n\t\t\t\tif ((enabled_port_mask & (1 << p)) != 0 && rte_eth_stats_get(p, &st) == 0) {\n\t\t\t\t\trx += st.ipackets;\n\t\t\t\t\ttx += st.opackets;\n\t\t\t\t}\n\t\t\t}\n\t\t\tprintf(\"l3fwd-stats %.6f %\" PRIu64 \" %\" PRIu64 \"\\n\", (double)rte_get_timer_cycles() / hz, rx, tx);\n\t\t\tfflush(stdout);\n\t\t\trte_delay_us_sleep(1000000);\n\t\t}\n\t\trte_eal_mp_wait_lcore();\n",
        why: "the main lcore prints both ports' received and sent totals once a second (l3fwd prints no rates)",
    },
    Patch {
        file: "l3fwd_lpm.c",
        old: "#define IPV4_L3FWD_LPM_MAX_RULES         1024\n",
        new: "#define IPV4_L3FWD_LPM_MAX_RULES         (1 << 21)\n",
        why: "room for a full table",
    },
    Patch {
        file: "l3fwd_lpm.c",
        old: "#define IPV4_L3FWD_LPM_NUMBER_TBL8S (1 << 8)\n",
        new: "#define IPV4_L3FWD_LPM_NUMBER_TBL8S (1 << 16)\n",
        why: "tbl8 groups for a full table's prefixes longer than /24",
    },
    Patch {
        file: "l3fwd_lpm.c",
        old: "#define IPV6_L3FWD_LPM_MAX_RULES         1024\n",
        new: "#define IPV6_L3FWD_LPM_MAX_RULES         (1 << 16)\n",
        why: "room for more IPv6 routes",
    },
];

/// Builds l3fwd in `dir` from the installed sources with [`PATCHES`].
fn build_l3fwd(dir: &Path) -> Result<PathBuf, String> {
    let src = Path::new(SOURCES);
    if !src.join("l3fwd/main.c").exists() {
        return Err(format!(
            "no l3fwd sources in {SOURCES}/l3fwd (Debian: apt-get install dpdk-doc libdpdk-dev pkg-config)"
        ));
    }
    for sub in ["l3fwd", "common"] {
        let ok = Command::new("cp")
            .arg("-r")
            .arg(src.join(sub))
            .arg(dir)
            .status()
            .map_err(|e| format!("cp: {e}"))?
            .success();
        if !ok {
            return Err(format!(
                "cannot copy {} to {}",
                src.join(sub).display(),
                dir.display()
            ));
        }
    }
    let l3 = dir.join("l3fwd");
    for p in PATCHES {
        let f = l3.join(p.file);
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        if text.matches(p.old).count() != 1 {
            return Err(format!(
                "{}: the text this change replaces ({}) is not there exactly once: these l3fwd sources differ from 22.11's",
                f.display(),
                p.why
            ));
        }
        std::fs::write(&f, text.replacen(p.old, p.new, 1)).map_err(|e| e.to_string())?;
    }
    let o = Command::new("make")
        .arg("-C")
        .arg(&l3)
        .output()
        .map_err(|e| format!("make (Debian: apt-get install make gcc): {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "building l3fwd failed:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(l3.join("build/l3fwd"))
}

/// The prefixes that cover `lo..=hi` exactly, in a `width`-bit space.
fn prefixes(mut lo: u128, hi: u128, width: u32) -> Vec<(u128, u32)> {
    let mut out = Vec::new();
    loop {
        // The largest aligned block starting at `lo` that ends by `hi`.
        let mut bits = if lo == 0 {
            width
        } else {
            lo.trailing_zeros().min(width)
        };
        let end = |bits: u32| {
            lo | if bits >= 128 {
                u128::MAX
            } else {
                (1u128 << bits) - 1
            }
        };
        while bits > 0 && end(bits) > hi {
            bits -= 1;
        }
        out.push((lo, width - bits));
        let e = end(bits);
        if e >= hi {
            return out;
        }
        lo = e + 1;
    }
}

/// An address as l3fwd's rule files want it: dotted IPv4, or all eight
/// IPv6 groups in hex.
fn addr(v6: bool, a: u128) -> String {
    if v6 {
        (0..8)
            .map(|i| format!("{:04x}", (a >> (112 - 16 * i)) as u16))
            .collect::<Vec<_>>()
            .join(":")
    } else {
        std::net::Ipv4Addr::from(a as u32).to_string()
    }
}

/// l3fwd's rule files for a configuration: LPM and ACL, IPv4 and IPv6.
#[derive(Default)]
struct Rules {
    lpm: [String; 2],
    acl: [String; 2],
}

/// Protocols that carry ports (`th`): what a port field without a
/// protocol matches.
const PORT_PROTOS: [u8; 3] = [6, 17, 132];

fn rules(cfg: &Config) -> Result<Rules, String> {
    let port_of = |via: Via| -> Result<usize, String> {
        match via {
            Via::NextHop(i) => Ok(cfg.next_hops[i].port),
            Via::Ecmp(g) => {
                let ports: BTreeSet<usize> = cfg.ecmp[g]
                    .members
                    .iter()
                    .map(|&m| cfg.next_hops[m].port)
                    .collect();
                match ports.len() {
                    1 => Ok(*ports.first().expect("one")),
                    _ => Err(format!(
                        "ECMP group `{}` spans ports: an l3fwd route leads to one port",
                        cfg.ecmp[g].name
                    )),
                }
            }
        }
    };
    let mut r = Rules::default();
    // ACL routes longest prefix first: rte_acl answers the first rule
    // that matches, in file order.
    let mut routes: Vec<_> = cfg.all_routes().collect();
    routes.sort_by_key(|r| std::cmp::Reverse(r.len));
    let mut acl_routes = [String::new(), String::new()];
    for rt in routes {
        let f = rt.v6 as usize;
        let port = port_of(rt.via)?;
        let width = if rt.v6 { 128 } else { 32 };
        // rte_lpm and rte_lpm6 take depths from 1: a default route is its
        // two halves.
        let lpm: Vec<(u128, u32)> = if rt.len == 0 {
            vec![(0, 1), (1u128 << (width - 1), 1)]
        } else {
            vec![(rt.prefix, rt.len)]
        };
        for (p, l) in lpm {
            let _ = writeln!(r.lpm[f], "R{}/{l} {port}", addr(rt.v6, p));
        }
        let _ = writeln!(
            acl_routes[f],
            "R{}/0 {}/{} 0 : 65535 0 : 65535 0x00/0x00 {port}",
            addr(rt.v6, 0),
            addr(rt.v6, rt.prefix),
            rt.len
        );
    }
    // The sets' drop elements, in evaluation order, ahead of the routes.
    let mut accepted_before = None;
    for s in &cfg.sets {
        let deny = |e: &matcher::Element| match s.action {
            Action::Drop | Action::Reject => Some(true),
            Action::Accept => Some(false),
            Action::Verdict => match e.data {
                Some(Data::Verdict(Verdict::Drop)) => Some(true),
                Some(Data::Verdict(Verdict::Accept)) => Some(false),
                _ => None,
            },
        };
        let mut elements: Vec<&matcher::Element> = s.elements.iter().collect();
        if s.decl.policy() == Policy::FirstMatch {
            elements.sort_by_key(|e| e.priority.unwrap_or(0));
        }
        let mut accepts = false;
        for e in elements {
            match deny(e) {
                Some(false) => {
                    accepts = true;
                    continue;
                }
                None => continue,
                Some(true) => {}
            }
            // A drop after an accept (in an earlier set, or earlier in a
            // first-match set; a disjoint set's elements never share a
            // key) would need an l3fwd "accept" rule, which
            // has no route to give.
            let first_match = s.decl.policy() == Policy::FirstMatch;
            if let Some(a) = accepted_before.or((accepts && first_match).then_some(s.name.as_str()))
            {
                return Err(format!(
                    "set `{}` drops after set `{a}` accepts: l3fwd's ACL has deny and route rules only",
                    s.name
                ));
            }
            deny_lines(s, e, &mut r.acl)?;
        }
        if accepts {
            accepted_before = Some(s.name.as_str());
        }
    }
    for (acl, routes) in r.acl.iter_mut().zip(&acl_routes) {
        acl.push_str(routes);
    }
    Ok(r)
}

/// The `@` lines of one drop element: the product of its fields' prefixes,
/// ports and protocols, in the families its address fields allow.
fn deny_lines(
    s: &config::SetConfig,
    e: &matcher::Element,
    acl: &mut [String; 2],
) -> Result<(), String> {
    for v6 in [false, true] {
        let w = if v6 { 128 } else { 32 };
        let (mut src, mut dst) = (vec![(0u128, 0u32)], vec![(0u128, 0u32)]);
        let (mut sport, mut dport) = ((0u128, 65535u128), (0u128, 65535u128));
        let mut protos: Option<Vec<u8>> = None;
        let mut ports = false;
        let mut family_ok = true;
        let narrow = |protos: &mut Option<Vec<u8>>, keep: &dyn Fn(u8) -> bool| {
            let all: Vec<u8> = (0..=255u8).collect();
            *protos = Some(
                protos
                    .take()
                    .unwrap_or(all)
                    .into_iter()
                    .filter(|&p| keep(p))
                    .collect(),
            );
        };
        for (src_field, range) in s.sources.iter().zip(e.key.iter()) {
            match *src_field {
                Source::IpSaddr | Source::IpDaddr if v6 => family_ok = false,
                Source::Ip6Saddr | Source::Ip6Daddr if !v6 => family_ok = false,
                Source::IpSaddr | Source::Ip6Saddr => src = prefixes(range.start, range.end, w),
                Source::IpDaddr | Source::Ip6Daddr => dst = prefixes(range.start, range.end, w),
                Source::Sport(p) | Source::Dport(p) => {
                    ports = true;
                    if matches!(*src_field, Source::Sport(_)) {
                        sport = (range.start, range.end);
                    } else {
                        dport = (range.start, range.end);
                    }
                    if let Some(p) = p {
                        narrow(&mut protos, &|q| q == p);
                    }
                }
                Source::L4proto => {
                    narrow(&mut protos, &|q| range.contains(q as u128));
                }
                other => {
                    return Err(format!(
                        "set `{}`: l3fwd's ACL has no field for `{other:?}`",
                        s.name
                    ))
                }
            }
        }
        if !family_ok {
            continue;
        }
        if ports {
            narrow(&mut protos, &|q| PORT_PROTOS.contains(&q));
        }
        let protos: Vec<(u8, u8)> = match protos {
            None => vec![(0, 0)],
            Some(v) if v.len() == 256 => vec![(0, 0)],
            Some(v) => v.into_iter().map(|p| (p, 0xff)).collect(),
        };
        for &(sa, sl) in &src {
            for &(da, dl) in &dst {
                for &(p, m) in &protos {
                    let _ = writeln!(
                        acl[v6 as usize],
                        "@{}/{sl} {}/{dl} {} : {} {} : {} {p:#04x}/{m:#04x}",
                        addr(v6, sa),
                        addr(v6, da),
                        sport.0,
                        sport.1,
                        dport.0,
                        dport.1
                    );
                }
            }
        }
    }
    Ok(())
}

/// One run: its median per-second Mpps, the share of received frames it
/// forwarded, and (l3fwd) the seconds from start to forwarding.
struct Run {
    mpps: f64,
    share: f64,
    start_s: Option<f64>,
}

/// Runs l3fwd with `--lookup lookup` until it has forwarded for `secs`
/// seconds after a one-second warm-up.
fn l3fwd_run(
    bin: &Path,
    pcap: [&Path; 2],
    lookup: &str,
    rules: [&Path; 2],
    secs: usize,
) -> Result<Run, String> {
    let t0 = Instant::now();
    let prefix = format!("benchl3{}", std::process::id());
    let mut c = Command::new(bin)
        .args(["--no-huge", "-m", "2048", "--no-pci", "-l", "0,1"])
        .args(["--file-prefix", &prefix])
        .args((0..2).flat_map(|i| {
            [
                "--vdev".to_string(),
                format!("net_pcap{i},rx_pcap={},infinite_rx=1", pcap[i].display()),
            ]
        }))
        .args([
            "--",
            "-p",
            "0x3",
            "--config=(0,0,1),(1,0,1)",
            "--lookup",
            lookup,
        ])
        .arg(format!("--rule_ipv4={}", rules[0].display()))
        .arg(format!("--rule_ipv6={}", rules[1].display()))
        .args(["--parse-ptype", "--per-port-pool"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let so = c.stdout.take().expect("piped");
    let mut se = c.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for l in std::io::BufReader::new(so).lines().map_while(Result::ok) {
            let w: Vec<&str> = l.split_whitespace().collect();
            if let ["l3fwd-stats", t, r, s] = w.as_slice() {
                if let (Ok(t), Ok(r), Ok(s)) =
                    (t.parse::<f64>(), r.parse::<u64>(), s.parse::<u64>())
                {
                    let _ = tx.send((t, r, s));
                }
            }
            all.push_str(&l);
            all.push('\n');
        }
        all
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut se, &mut v);
        v
    });
    // Loading a full table takes l3fwd minutes.
    let deadline = t0 + Duration::from_secs(900);
    let mut samples: Vec<(f64, u64, u64)> = Vec::new();
    let mut start_s = None;
    // Samples from the first that shows forwarding: the warm-up second,
    // then `secs` measured ones.
    while samples.len() < secs + 2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.max(Duration::from_millis(1))) {
            Ok(s) => {
                if samples.is_empty() && s.2 == 0 {
                    continue;
                }
                start_s.get_or_insert(t0.elapsed().as_secs_f64());
                samples.push(s);
            }
            Err(_) => break,
        }
    }
    let _ = Command::new("kill")
        .args(["-INT", &c.id().to_string()])
        .status();
    let stop = Instant::now() + Duration::from_secs(15);
    while c.try_wait().map_err(|e| e.to_string())?.is_none() {
        if Instant::now() > stop {
            let _ = c.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = c.wait();
    let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{prefix}"));
    let out = reader.join().unwrap_or_default();
    let err = String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
    if samples.len() < secs + 2 {
        return Err(format!(
            "l3fwd --lookup {lookup}: too few rates in\n{out}\n{err}"
        ));
    }
    let kept = &samples[1..];
    let mut per: Vec<f64> = kept
        .windows(2)
        .map(|w| (w[1].2 - w[0].2) as f64 / (w[1].0 - w[0].0) / 1e6)
        .collect();
    let (first, last) = (kept[0], kept[kept.len() - 1]);
    let share = (last.2 - first.2) as f64 / (last.1 - first.1).max(1) as f64;
    if std::env::var_os("BENCH_DPDK_VERBOSE").is_some() {
        eprintln!("l3fwd --lookup {lookup}:\n{out}\n{err}");
    }
    Ok(Run {
        mpps: median(&mut per),
        share,
        start_s,
    })
}

/// What runs in a variant.
#[derive(Clone, Copy)]
enum Program {
    L3fwd(&'static str),
    Forwarder(&'static str),
}

/// A variant: its name, program, whether it uses the full table, whether
/// the flow cache is off, and the l3fwd variant it is measured against.
struct Variant {
    name: String,
    program: Program,
    full: bool,
    nocache: bool,
    peer: Option<String>,
}

fn variants(routes: usize) -> Vec<Variant> {
    let v = |name: &str, program, full, nocache, peer: Option<&str>| Variant {
        name: name.to_string(),
        program,
        full,
        nocache,
        peer: peer.map(str::to_string),
    };
    let mut out = vec![
        v("l3fwd_lpm", Program::L3fwd("lpm"), false, false, None),
        v(
            "forwarder_route",
            Program::Forwarder("route"),
            false,
            false,
            Some("l3fwd_lpm"),
        ),
        v("l3fwd_acl", Program::L3fwd("acl"), false, false, None),
        v(
            "forwarder_full",
            Program::Forwarder("full"),
            false,
            false,
            Some("l3fwd_acl"),
        ),
        v(
            "forwarder_full_nocache",
            Program::Forwarder("full"),
            false,
            true,
            Some("l3fwd_acl"),
        ),
    ];
    if routes > 0 {
        let sfx = match routes {
            n if n % 1_000_000 == 0 => format!("_{}M", n / 1_000_000),
            n if n % 1_000 == 0 => format!("_{}k", n / 1_000),
            n => format!("_{n}"),
        };
        out.push(v(
            &format!("l3fwd_lpm{sfx}"),
            Program::L3fwd("lpm"),
            true,
            false,
            None,
        ));
        out.push(Variant {
            name: format!("forwarder_route{sfx}"),
            program: Program::Forwarder("route"),
            full: true,
            nocache: false,
            peer: Some(format!("l3fwd_lpm{sfx}")),
        });
    }
    out
}

/// `text` (a forwarder configuration) with the flow cache off.
fn without_flow_cache(text: &str) -> String {
    let mut in_section = false;
    text.lines()
        .map(|l| {
            if l.starts_with('[') {
                in_section = l.trim() == "[flow_cache]";
            }
            if in_section && l.trim_start().starts_with("entries") {
                "entries = 0".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `n` generated IPv4 routes not among `cfg`'s, as a route file's lines
/// over `cfg`'s next hops.
fn route_file(cfg: &Config, n: usize) -> String {
    let have: HashSet<(bool, u128, u32)> =
        cfg.all_routes().map(|r| (r.v6, r.prefix, r.len)).collect();
    let mut out = String::new();
    let hops = cfg.next_hops.len().max(1);
    for (i, (p, len)) in routecache::gen::prefixes(routecache::Family::V4, n, 0xf00d)
        .into_iter()
        .filter(|&(p, len)| !have.contains(&(false, p, len)))
        .enumerate()
    {
        let _ = writeln!(
            out,
            "{}/{len} {}",
            addr(false, p),
            cfg.next_hops[i % hops].name
        );
    }
    out
}

pub struct Options {
    pub json: bool,
    pub quick: bool,
    pub rounds: Option<usize>,
    pub routes: Option<usize>,
}

pub fn run(o: Options) -> Result<(), String> {
    let secs = if o.quick { 3 } else { 5 };
    let rounds = o.rounds.unwrap_or(if o.quick { 2 } else { 5 }).max(1);
    let n_routes = o
        .routes
        .unwrap_or(if o.quick { 100_000 } else { 1_000_000 });
    let bin = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .with_file_name("forwarder");
    if !bin.exists() {
        return Err(format!(
            "no {}: cargo build --release -p forwarder --features dpdk",
            bin.display()
        ));
    }
    let dir = std::env::temp_dir().join(format!("bench-l3fwd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let _cleanup = RemoveOnDrop(dir.clone());
    let l3fwd = build_l3fwd(&dir)?;
    let example = config::load(&examples().join("forwarder.toml")).map_err(|e| e.to_string())?;
    let frames = SyntheticPort::of(&example, 0, 0)?.frames();
    let pcaps = [dir.join("p0.pcap"), dir.join("p1.pcap")];
    write_pcap(&pcaps[0], &frames, MAC0)?;
    write_pcap(&pcaps[1], &frames, MAC1)?;
    let pcap = [pcaps[0].as_path(), pcaps[1].as_path()];
    let eal: Vec<String> = ["--no-huge", "-m", "2048", "--no-pci"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // The forwarder's configurations, and l3fwd's rules written from what
    // they load: the example, without the flow cache, with the full table.
    let base = forwarder_config(&dir, &eal, pcap, 16384)?;
    let text = std::fs::read_to_string(&base).map_err(|e| e.to_string())?;
    let write = |name: &str, text: &str| -> Result<(PathBuf, Config), String> {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| e.to_string())?;
        let cfg = config::load(&p).map_err(|e| e.to_string())?;
        Ok((p, cfg))
    };
    let (small, small_cfg) = write("small.toml", &text)?;
    let (nocache, nocache_cfg) = write("nocache.toml", &without_flow_cache(&text))?;
    if nocache_cfg.flow_cache.entries != Some(0) {
        return Err("could not turn the flow cache off in the example's configuration".into());
    }
    let mut full = None;
    if n_routes > 0 {
        let rf = dir.join("routes.txt");
        std::fs::write(&rf, route_file(&small_cfg, n_routes)).map_err(|e| e.to_string())?;
        let at = text
            .find("\nroute = [")
            .ok_or("no `route = [` in the example")?;
        let t = format!(
            "{}\nroute_file = \"{}\"{}",
            &text[..at],
            rf.display(),
            &text[at..]
        );
        full = Some(write("full.toml", &t)?);
    }
    let rule_files = |name: &str, cfg: &Config| -> Result<[[PathBuf; 2]; 2], String> {
        let r = rules(cfg)?;
        let mut out: [[PathBuf; 2]; 2] = Default::default();
        for (k, (kind, files)) in [("lpm", &r.lpm), ("acl", &r.acl)].into_iter().enumerate() {
            for (f, fam) in ["v4", "v6"].into_iter().enumerate() {
                let p = dir.join(format!("{name}-{kind}-{fam}.cfg"));
                std::fs::write(&p, &files[f]).map_err(|e| e.to_string())?;
                out[k][f] = p;
            }
        }
        Ok(out)
    };
    let small_rules = rule_files("small", &small_cfg)?;
    let full_rules = match &full {
        Some((_, c)) => Some(rule_files("full", c)?),
        None => None,
    };
    let vs = variants(n_routes);
    let mut results: Vec<Vec<Run>> = vs.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        for (i, v) in vs.iter().enumerate() {
            let r = match v.program {
                Program::L3fwd(lookup) => {
                    let files = if v.full {
                        full_rules.as_ref().expect("full table")
                    } else {
                        &small_rules
                    };
                    let k = (lookup == "acl") as usize;
                    l3fwd_run(&l3fwd, pcap, lookup, [&files[k][0], &files[k][1]], secs)?
                }
                Program::Forwarder(mode) => {
                    let cfg = match (v.full, v.nocache) {
                        (true, _) => &full.as_ref().expect("full table").0,
                        (false, true) => &nocache,
                        (false, false) => &small,
                    };
                    let (mpps, share) = forwarder_run(&bin, cfg, mode, secs as u64)?;
                    Run {
                        mpps,
                        share,
                        start_s: None,
                    }
                }
            };
            if !o.json {
                eprintln!(
                    "round {}/{rounds}: {} {:.2} Mpps, {:.2} % forwarded",
                    round + 1,
                    v.name,
                    r.mpps,
                    r.share * 100.0
                );
            }
            results[i].push(r);
        }
    }
    let idx = |name: &str| vs.iter().position(|v| v.name == name).expect("variant");
    // The same work: both programs forward the same share of frames.
    for (i, v) in vs.iter().enumerate() {
        if let Some(p) = &v.peer {
            let j = idx(p);
            let share = |k: usize| {
                results[k].iter().map(|r| r.share).sum::<f64>() / results[k].len() as f64
            };
            let (a, b) = (share(i), share(j));
            if (a - b).abs() > 0.005 {
                return Err(format!(
                    "{} forwarded {:.2} % of the frames it received, {p} {:.2} %: not the same work",
                    v.name,
                    a * 100.0,
                    b * 100.0
                ));
            }
        }
    }
    let ratio = |i: usize| -> Option<f64> {
        let j = idx(vs[i].peer.as_deref()?);
        let mut r: Vec<f64> = results[i]
            .iter()
            .zip(&results[j])
            .map(|(a, b)| a.mpps / b.mpps)
            .collect();
        Some(median(&mut r))
    };
    let mpps = |i: usize| -> (f64, f64, Vec<f64>) {
        let all: Vec<f64> = results[i].iter().map(|r| r.mpps).collect();
        let best = all.iter().copied().fold(f64::NAN, f64::max);
        (median(&mut all.clone()), best, all)
    };
    if o.json {
        for (i, v) in vs.iter().enumerate() {
            let (m, best, all) = mpps(i);
            let all: Vec<String> = all.iter().map(|x| format!("{x:.2}")).collect();
            let share = results[i].iter().map(|r| r.share).sum::<f64>() / results[i].len() as f64;
            let mut line = format!(
                "{{\"variant\":\"{}\",\"mpps\":{m:.2},\"best\":{best:.2},\"rounds\":[{}],\"forwarded\":{share:.4},\"routes\":{}",
                v.name,
                all.join(","),
                if v.full {
                    full.as_ref().map_or(0, |f| f.1.route_count())
                } else {
                    small_cfg.route_count()
                }
            );
            if let Some(r) = ratio(i) {
                let _ = write!(line, ",\"vs_l3fwd\":{r:.3}");
            }
            let mut starts: Vec<f64> = results[i].iter().filter_map(|r| r.start_s).collect();
            if !starts.is_empty() {
                let _ = write!(line, ",\"start_s\":{:.1}", median(&mut starts));
            }
            println!("{line}}}");
        }
        return Ok(());
    }
    println!("Mpps on one forwarding core, DPDK pcap devices replaying the example's flow mix ({} frames, no huge pages); each run's figure is the median of its per-second rates over {secs} s; {rounds} rounds of all variants, alternating: median (best) over the rounds; ratio: median of the rounds' ratios", frames.len());
    println!();
    println!("| case | l3fwd | forwarder | ratio | forwarded |");
    println!("|---|---:|---:|---:|---:|");
    for (i, v) in vs.iter().enumerate() {
        let Some(p) = &v.peer else { continue };
        let j = idx(p);
        let ((a, ab, _), (b, bb, _)) = (mpps(j), mpps(i));
        println!(
            "| {} vs {p} | {a:.2} ({ab:.2}) | {b:.2} ({bb:.2}) | {:.2}x | {:.1} % |",
            v.name,
            ratio(i).unwrap_or(f64::NAN),
            results[i][0].share * 100.0
        );
    }
    for (i, v) in vs.iter().enumerate() {
        let mut starts: Vec<f64> = results[i].iter().filter_map(|r| r.start_s).collect();
        if !starts.is_empty() {
            println!();
            println!(
                "{}: {:.1} s from start to forwarding (EAL, pools, rules)",
                v.name,
                median(&mut starts)
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_cover_a_range_exactly() {
        assert_eq!(prefixes(0, u32::MAX as u128, 32), vec![(0, 0)]);
        assert_eq!(prefixes(0, u128::MAX, 128), vec![(0, 0)]);
        assert_eq!(prefixes(5, 5, 32), vec![(5, 32)]);
        // ::1-::ff: 1/128, 2/127, 4/126, ..., 128/121.
        let p = prefixes(1, 0xff, 128);
        assert_eq!(p.len(), 8);
        let mut rng = crate::stats::Rng(7);
        for _ in 0..2000 {
            let a = rng.below(1 << 12) as u128;
            let b = a + rng.below(1 << 12) as u128;
            let p = prefixes(a, b, 32);
            // Consecutive, aligned, and exactly a..=b.
            let mut next = a;
            for &(s, l) in &p {
                assert_eq!(s, next);
                let size = 1u128 << (32 - l);
                assert_eq!(s % size, 0);
                next = s + size;
            }
            assert_eq!(next, b + 1);
        }
    }

    #[test]
    fn the_examples_rules_are_what_l3fwd_reads() {
        let cfg = config::load(&examples().join("forwarder.toml")).unwrap();
        let r = rules(&cfg).unwrap();
        // The default routes as two halves for rte_lpm, whole for rte_acl.
        assert!(r.lpm[0].contains("R0.0.0.0/1 1\nR128.0.0.0/1 1\n"));
        assert!(r.acl[0].ends_with("R0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x00/0x00 1\n"));
        // The blocklist: 1,024 elements, a line per port protocol.
        let deny4 = r.acl[0].lines().filter(|l| l.starts_with('@')).count();
        assert_eq!(deny4, 1024 * PORT_PROTOS.len());
        assert!(r.acl[0].starts_with("@0.0.0.0/0 198.51.100.0/32 0 : 65535 22 : 22 0x06/0xff\n"));
        // v6-services: two drops (the accept is no rule); the range
        // 2001:db8:3::1-2001:db8:3::ff as 8 prefixes, tcp only.
        let deny6: Vec<&str> = r.acl[1].lines().filter(|l| l.starts_with('@')).collect();
        assert_eq!(deny6.len(), 1 + 8);
        assert!(deny6[0]
            .contains("2001:0db8:0001:0000:0000:0000:0000:0000/48 0 : 65535 22 : 22 0x06/0xff"));
        // Routes before deny lines would shadow them; longest first.
        let first_route = r.acl[0].find("\nR").unwrap();
        assert!(r.acl[0][first_route..].lines().all(|l| !l.starts_with('@')));
    }
}
