//! `bench l3fwd`: the forwarder against DPDK's own l3fwd, the reference
//! forwarder every DPDK user knows, in the same run on the same devices.
//!
//! Both run one forwarding core on two `net_pcap` devices replaying the
//! example's flow mix from memory (as `bench dpdk`), without huge pages,
//! or with `--huge` on 2 MiB pages, where the devices cost a third less a
//! frame (testpmd io 16-17 against 26 ns on Intel, `bench dpdk`): the
//! cheaper device the ratios net of it are better judged on. (A
//! `net_memif` pair with a generator cannot be: on 2 cores the
//! generator's core, not the forwarder, sets the rate; BENCHMARKS.md.)
//! l3fwd is built in a temporary directory from the example sources
//! Debian ships in `dpdk-doc`, with the changes `build::PATCHES` lists (pcap
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
//!
//! On these devices the driver's own cost is most of a frame's time for
//! both programs, so every round also runs testpmd's `io` forwarding (the
//! device and nothing else) on the same devices, and each ratio comes
//! with its ratio net of the device: l3fwd's work per frame over ours,
//! each `1/rate - 1/rate of testpmd io` in that round (median over the
//! rounds, and the lowest and highest).

mod build;
mod rules;

use crate::dpdk::{forwarder_config, forwarder_run, testpmd_mpps, HugePages, PcapRun};
use crate::stats::{median, round, row};
use build::build_l3fwd;
use config::Config;
use rules::{addr, rules};
use serde_json::json;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

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
    eal: &[String],
    pcap: [&Path; 2],
    lookup: &str,
    rules: [&Path; 2],
    secs: usize,
) -> Result<Run, String> {
    let t0 = Instant::now();
    let prefix = format!("benchl3{}", std::process::id());
    let mut c = Command::new(bin)
        .args(eal)
        .args(["-l", "0,1", "--file-prefix", &prefix])
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
    /// testpmd in a forwarding mode: the device's own cost.
    Testpmd(&'static str),
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

/// The variant that measures the devices alone.
const TESTPMD_IO: &str = "testpmd_io";

/// A frame's work beyond the device's, in ns: at `mpps` against testpmd
/// io's `device` Mpps in the same round (`None` where it is not above
/// the device's own).
fn net_ns(mpps: f64, device: f64) -> Option<f64> {
    let w = 1e3 / mpps - 1e3 / device;
    (w > 0.0 && w.is_finite()).then_some(w)
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
        v(TESTPMD_IO, Program::Testpmd("io"), false, false, None),
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
    pub huge: bool,
}

pub fn run(o: Options) -> Result<(), String> {
    let secs = if o.quick { 3 } else { 5 };
    let rounds = o.rounds.unwrap_or(if o.quick { 2 } else { 5 }).max(1);
    let n_routes = o
        .routes
        .unwrap_or(if o.quick { 100_000 } else { 1_000_000 });
    let setup = PcapRun::new("l3fwd")?;
    let (bin, dir, frames, pcap) = (&setup.bin, &setup.dir, &setup.frames, setup.pcap());
    let l3fwd = build_l3fwd(dir)?;
    // l3fwd's EAL gets 2 GiB (its pools and LPM tables, sized for 2M
    // routes), the others 1 GiB as in `bench dpdk`: on huge pages the EAL
    // takes all it is given at start, and with 2 GiB testpmd began
    // forwarding too late for its measured seconds. The pages are
    // reserved for the run (l3fwd's and a margin) and put back after.
    let _pages = if o.huge {
        Some(HugePages::reserve(1536)?)
    } else {
        None
    };
    let eal_with = |mib: &str| -> Vec<String> {
        let no_huge = (!o.huge).then_some("--no-huge");
        no_huge
            .into_iter()
            .chain(["-m", mib, "--no-pci"])
            .map(str::to_string)
            .collect()
    };
    let (eal, l3fwd_eal) = (eal_with("1024"), eal_with("2048"));
    // The forwarder's configurations, and l3fwd's rules written from what
    // they load: the example, without the flow cache, with the full table.
    let base = forwarder_config(dir, &eal, pcap, 16384)?;
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
                    l3fwd_run(
                        &l3fwd,
                        &l3fwd_eal,
                        pcap,
                        lookup,
                        [&files[k][0], &files[k][1]],
                        secs,
                    )?
                }
                Program::Testpmd(mode) => Run {
                    mpps: testpmd_mpps(&eal, pcap, mode, secs as u64, 32_768)?,
                    // testpmd io sends every frame it receives.
                    share: 1.0,
                    start_s: None,
                },
                Program::Forwarder(mode) => {
                    let cfg = match (v.full, v.nocache) {
                        (true, _) => &full.as_ref().expect("full table").0,
                        (false, true) => &nocache,
                        (false, false) => &small,
                    };
                    let (mpps, share) = forwarder_run(bin, cfg, mode, secs as u64)?;
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
    // The ratio net of the device, per round: l3fwd's work per frame
    // over ours, each less testpmd io's; median, lowest, highest.
    let dev = idx(TESTPMD_IO);
    let net = |i: usize| -> Option<(f64, f64, f64)> {
        let j = idx(vs[i].peer.as_deref()?);
        let mut r: Vec<f64> = (0..results[i].len())
            .filter_map(|k| {
                let d = results[dev][k].mpps;
                Some(net_ns(results[j][k].mpps, d)? / net_ns(results[i][k].mpps, d)?)
            })
            .collect();
        if r.is_empty() {
            return None;
        }
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some((median(&mut r), lo, hi))
    };
    let mpps = |i: usize| -> (f64, f64, Vec<f64>) {
        let all: Vec<f64> = results[i].iter().map(|r| r.mpps).collect();
        let best = all.iter().copied().fold(f64::NAN, f64::max);
        (median(&mut all.clone()), best, all)
    };
    if o.json {
        for (i, v) in vs.iter().enumerate() {
            let (m, best, all) = mpps(i);
            let all: Vec<_> = all.iter().map(|&x| round(x, 2)).collect();
            let share = results[i].iter().map(|r| r.share).sum::<f64>() / results[i].len() as f64;
            let mut line = json!({
                "variant": v.name,
                "mpps": round(m, 2),
                "best": round(best, 2),
                "rounds": all,
                "forwarded": round(share, 4),
                "hugepages": o.huge,
                "routes": if v.full {
                    full.as_ref().map_or(0, |f| f.1.route_count())
                } else {
                    small_cfg.route_count()
                },
            });
            if let Some(r) = ratio(i) {
                line["vs_l3fwd"] = round(r, 3);
            }
            if let Some((m, lo, hi)) = net(i) {
                line["vs_l3fwd_net"] = round(m, 3);
                line["vs_l3fwd_net_range"] = json!([round(lo, 3), round(hi, 3)]);
            }
            let mut starts: Vec<f64> = results[i].iter().filter_map(|r| r.start_s).collect();
            if !starts.is_empty() {
                line["start_s"] = round(median(&mut starts), 1);
            }
            row(line);
        }
        return Ok(());
    }
    let pages = if o.huge {
        "2 MiB pages"
    } else {
        "no huge pages"
    };
    println!("Mpps on one forwarding core, DPDK pcap devices replaying the example's flow mix ({} frames, {pages}); each run's figure is the median of its per-second rates over {secs} s; {rounds} rounds of all variants, alternating: median (best) over the rounds; ratio: median of the rounds' ratios", frames.len());
    println!();
    let (d, db, _) = mpps(dev);
    println!("testpmd io (the devices alone): {d:.2} ({db:.2}) Mpps");
    println!();
    println!(
        "| case | l3fwd | forwarder | ratio | net of the device (lowest-highest) | forwarded |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (i, v) in vs.iter().enumerate() {
        let Some(p) = &v.peer else { continue };
        let j = idx(p);
        let ((a, ab, _), (b, bb, _)) = (mpps(j), mpps(i));
        let net = net(i).map_or("n/a".to_string(), |(m, lo, hi)| {
            format!("{m:.2}x ({lo:.2}-{hi:.2})")
        });
        println!(
            "| {} vs {p} | {a:.2} ({ab:.2}) | {b:.2} ({bb:.2}) | {:.2}x | {net} | {:.1} % |",
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
