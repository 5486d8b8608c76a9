//! `bench dpdk`: the forwarder on DPDK ports against DPDK's own testpmd,
//! side by side in one run, one forwarding core, without and with huge
//! pages.
//!
//! Both run on the same two virtual devices: DPDK's pcap driver replaying
//! the example's synthetic flow mix from memory (`infinite_rx=1`: every
//! receive copies a stored frame into a fresh mbuf, for testpmd and the
//! forwarder alike) and dropping what is sent (no `tx_pcap`). `net_null`
//! would be cheaper still, but its frames are zeros: nothing a forwarder
//! can parse or route. Variants: testpmd `io` and `macswap`; the
//! forwarder's `io` (frames untouched), `rewrite` (MACs rewritten,
//! nothing parsed: `--mode mac`, testpmd `macswap`'s work),
//! `parse_rewrite` (parse, MAC/TTL/checksum rewrite) and `full` (the
//! pipeline of `examples/forwarder.toml`). This machine's speed moves by
//! up to 2x between runs minutes apart, so every variant runs in each of
//! several rounds, alternating, and each ratio is the median of the
//! rounds' ratios.
//!
//! Needs root (huge pages) and the forwarder built with the feature:
//! `cargo build --release -p forwarder --features dpdk`.

use crate::stats::{median, round, row};
use forwarder::port::synthetic::SyntheticPort;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub(crate) const MAC0: [u8; 6] = [2, 0, 0, 0, 0, 1];
pub(crate) const MAC1: [u8; 6] = [2, 0, 0, 0, 0, 2];

pub(crate) fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// A pcap file (microsecond timestamps, Ethernet) of `frames`, addressed
/// to `dst`.
pub(crate) fn write_pcap(path: &Path, frames: &[Vec<u8>], dst: [u8; 6]) -> Result<(), String> {
    let mut b = Vec::new();
    // Magic; version 2.4 (two u16, as one little-endian u32); time zone;
    // accuracy; snap length; link type 1 (Ethernet).
    for v in [0xa1b2_c3d4u32, 4 << 16 | 2, 0, 0, 65535, 1] {
        b.extend(v.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        let mut f = f.clone();
        f[0..6].copy_from_slice(&dst);
        for v in [
            i as u32 / 1_000_000,
            i as u32 % 1_000_000,
            f.len() as u32,
            f.len() as u32,
        ] {
            b.extend(v.to_le_bytes());
        }
        b.extend(&f);
    }
    std::fs::write(path, b).map_err(|e| format!("{}: {e}", path.display()))
}

/// The example's configuration with its two ports on pcap devices.
pub(crate) fn forwarder_config(
    dir: &Path,
    eal: &[String],
    pcap: [&Path; 2],
    mbufs: usize,
) -> Result<PathBuf, String> {
    let text =
        std::fs::read_to_string(examples().join("forwarder.toml")).map_err(|e| e.to_string())?;
    let (a, b) = (
        text.find("[[port]]").ok_or("no port in the example")?,
        text.find("[[set]]").ok_or("no set in the example")?,
    );
    let vdev = |i: usize| format!("net_pcap{i},rx_pcap={},infinite_rx=1", pcap[i].display());
    let mut args: Vec<String> = eal.to_vec();
    args.extend(["--vdev".into(), vdev(0), "--vdev".into(), vdev(1)]);
    let quoted: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
    let ports = format!(
        r#"[[port]]
name = "p0"
driver = "dpdk"
mac = "02:00:00:00:00:01"
[port.options]
device = "net_pcap0"
eal = [{}]
mbufs = {mbufs}

[[port]]
name = "p1"
driver = "dpdk"
mac = "02:00:00:00:00:02"
[port.options]
device = "net_pcap1"
mbufs = {mbufs}

"#,
        quoted.join(", ")
    );
    let set_file = examples().join("sets/blocklist.set");
    let body = text[b..].replace(
        "file = \"sets/blocklist.set\"",
        &format!("file = \"{}\"", set_file.display()),
    );
    // The worker on core 1, as testpmd's forwarding lcore (`-l 0,1`).
    let head = text[..a].replace("cores = [0]", "cores = [1]");
    let out = dir.join("dpdk-bench.toml");
    std::fs::write(&out, format!("{head}{ports}{body}")).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Median per-second forwarded Mpps of `forwarder run --mode`.
pub(crate) fn forwarder_mpps(bin: &Path, cfg: &Path, mode: &str, secs: u64) -> Result<f64, String> {
    forwarder_run(bin, cfg, mode, secs).map(|(mpps, _)| mpps)
}

/// Median per-second forwarded Mpps of `forwarder run --mode`, and the
/// share of received frames it forwarded over the whole run (its
/// summary's `total: rx N tx M`).
pub(crate) fn forwarder_run(
    bin: &Path,
    cfg: &Path,
    mode: &str,
    secs: u64,
) -> Result<(f64, f64), String> {
    let o = Command::new(bin)
        .args([
            "run",
            "--mode",
            mode,
            "--duration",
            &format!("{secs}s"),
            "--config",
        ])
        .arg(cfg)
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        return Err(format!("forwarder --mode {mode}: {}", err.trim()));
    }
    let mut tx: Vec<f64> = out
        .lines()
        // `  total: rx ..` with several workers, `  total (core N): rx ..`
        // with one.
        .filter(|l| l.starts_with("  total") && l.contains("Mpps  tx"))
        .filter_map(|l| {
            l.split("tx")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    if tx.len() > 1 {
        tx.remove(0);
    }
    if tx.is_empty() {
        return Err(format!("forwarder --mode {mode}: no rates in\n{out}"));
    }
    if std::env::var_os("BENCH_DPDK_VERBOSE").is_some() {
        eprintln!("forwarder --mode {mode}:\n{out}");
    }
    // `  total: rx 61,802,240 tx 55,925,285 in 2.0 s: ...`
    let share = out
        .lines()
        .rev()
        .find_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                ["total:", "rx", rx, "tx", tx, "in", ..] => {
                    let (rx, tx): (f64, f64) = (
                        rx.replace(',', "").parse().ok()?,
                        tx.replace(',', "").parse().ok()?,
                    );
                    (rx > 0.0).then(|| tx / rx)
                }
                _ => None,
            }
        })
        .ok_or_else(|| format!("forwarder --mode {mode}: no summary in\n{out}"))?;
    Ok((median(&mut tx), share))
}

/// Seconds testpmd may take to start forwarding (measured: about 3 s
/// without huge pages on a 2-vCPU Zen 4 guest, where `secs + 1` seconds
/// gave no rates at all).
const TESTPMD_START_S: u64 = 5;

/// Median per-second Mpps (TX, both ports) of testpmd in `mode`, with
/// `mbufs` in its pool (`infinite_rx` holds every frame of both pcaps in
/// it, beside the rings).
pub(crate) fn testpmd_mpps(
    eal: &[String],
    pcap: [&Path; 2],
    mode: &str,
    secs: u64,
    mbufs: usize,
) -> Result<f64, String> {
    let mut c = Command::new("dpdk-testpmd")
        .args(eal)
        .args(["--file-prefix", &format!("benchtp{}", std::process::id())])
        .args(["-l", "0,1"])
        .args((0..2).flat_map(|i| {
            [
                "--vdev".to_string(),
                format!("net_pcap{i},rx_pcap={},infinite_rx=1", pcap[i].display()),
            ]
        }))
        .args([
            "--",
            &format!("--forward-mode={mode}"),
            "--nb-cores=1",
            &format!("--total-num-mbufs={mbufs}"),
            "--stats-period=1",
            "--no-lsc-interrupt",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("dpdk-testpmd (Debian: apt-get install dpdk-dev): {e}"))?;
    // Its output is read meanwhile (a full pipe would stall it).
    let mut so = c.stdout.take().expect("piped");
    let mut se = c.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut so, &mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut se, &mut v);
        v
    });
    // testpmd's start (EAL, pools) can take seconds: it runs that much
    // longer, and its periods before forwarding began are left out below.
    std::thread::sleep(Duration::from_secs(secs + 1 + TESTPMD_START_S));
    // With `--stats-period` testpmd does not read its input: SIGINT stops
    // it (it closes its ports and exits); if it does not stop, it is
    // killed.
    let _ = Command::new("kill")
        .args(["-INT", &c.id().to_string()])
        .status();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while c.try_wait().map_err(|e| e.to_string())?.is_none() {
        if std::time::Instant::now() > deadline {
            let _ = c.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = c.wait();
    // testpmd leaves its runtime directory (named by the file prefix)
    // behind; one per run would pile up.
    let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/benchtp{}", std::process::id()));
    struct Output {
        stdout: Vec<u8>,
        stderr: Vec<u8>,
    }
    let o = Output {
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    };
    let out = String::from_utf8_lossy(&o.stdout);
    let pps: Vec<f64> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Tx-pps:"))
        .filter_map(|v| v.split_whitespace().next()?.parse().ok())
        .collect();
    // Two ports a period; the periods before forwarding began (no
    // packets), then the first one (the warm-up) are left out, and `secs`
    // periods kept.
    let mut per: Vec<f64> = pps
        .chunks_exact(2)
        .map(|p| (p[0] + p[1]) / 1e6)
        .skip_while(|&r| r == 0.0)
        .skip(1)
        .take(secs as usize)
        .collect();
    if per.is_empty() {
        return Err(format!(
            "testpmd {mode}: no rates in\n{out}\n{}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(median(&mut per))
}

/// 2 MiB pages reserved and hugetlbfs mounted for the run, put back after.
pub(crate) struct HugePages {
    before: String,
    mounted: Option<PathBuf>,
}

impl HugePages {
    pub(crate) fn reserve(pages: usize) -> Result<HugePages, String> {
        let knob = "/proc/sys/vm/nr_hugepages";
        let before = std::fs::read_to_string(knob).map_err(|e| format!("{knob}: {e}"))?;
        std::fs::write(knob, pages.to_string())
            .map_err(|e| format!("{knob}: {e} (huge pages need root)"))?;
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
        let mut h = HugePages {
            before: before.trim().to_string(),
            mounted: None,
        };
        if !mounts.lines().any(|l| l.contains(" hugetlbfs ")) {
            let at = PathBuf::from("/dev/hugepages");
            std::fs::create_dir_all(&at).map_err(|e| e.to_string())?;
            let ok = Command::new("mount")
                .args(["-t", "hugetlbfs", "nodev"])
                .arg(&at)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                return Err("cannot mount hugetlbfs on /dev/hugepages".into());
            }
            h.mounted = Some(at);
        }
        let free = std::fs::read_to_string("/proc/meminfo")
            .unwrap_or_default()
            .lines()
            .find_map(|l| {
                l.strip_prefix("HugePages_Free:")
                    .map(|v| v.trim().to_string())
            })
            .unwrap_or_default();
        eprintln!("bench: {free} huge pages of 2 MiB free");
        Ok(h)
    }
}

impl Drop for HugePages {
    fn drop(&mut self) {
        if let Some(at) = &self.mounted {
            let _ = Command::new("umount").arg(at).status();
        }
        let _ = std::fs::write("/proc/sys/vm/nr_hugepages", &self.before);
    }
}

/// What a run on pcap devices needs: the forwarder built with DPDK, a
/// scratch directory (removed however the run ends: an error returns
/// early), and the example's flow mix as two pcap files.
pub(crate) struct PcapRun {
    pub bin: PathBuf,
    pub dir: PathBuf,
    _cleanup: RemoveOnDrop,
    pub frames: Vec<Vec<u8>>,
    pub pcaps: [PathBuf; 2],
}

/// The forwarder's binary beside this one (built with DPDK).
pub(crate) fn forwarder_bin() -> Result<PathBuf, String> {
    let bin = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .with_file_name("forwarder");
    if !bin.exists() {
        return Err(format!(
            "no {}: cargo build --release -p forwarder --features dpdk",
            bin.display()
        ));
    }
    Ok(bin)
}

impl PcapRun {
    /// The setup of the benchmark `name`.
    pub fn new(name: &str) -> Result<PcapRun, String> {
        let bin = forwarder_bin()?;
        let dir = std::env::temp_dir().join(format!("bench-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let _cleanup = RemoveOnDrop(dir.clone());
        let cfg = config::load(&examples().join("forwarder.toml")).map_err(|e| e.to_string())?;
        let frames = SyntheticPort::of(&cfg, 0, 0)?.frames();
        let pcaps = [dir.join("p0.pcap"), dir.join("p1.pcap")];
        write_pcap(&pcaps[0], &frames, MAC0)?;
        write_pcap(&pcaps[1], &frames, MAC1)?;
        Ok(PcapRun {
            bin,
            dir,
            _cleanup,
            frames,
            pcaps,
        })
    }

    /// The two pcap files.
    pub fn pcap(&self) -> [&Path; 2] {
        [self.pcaps[0].as_path(), self.pcaps[1].as_path()]
    }
}

pub fn run(json: bool, quick: bool, mbufs: usize, rounds: Option<usize>) -> Result<(), String> {
    let secs = if quick { 3 } else { 6 };
    let rounds = rounds.unwrap_or(if quick { 2 } else { 3 }).max(1);
    let setup = PcapRun::new("dpdk")?;
    let (bin, dir, frames, pcap) = (&setup.bin, &setup.dir, &setup.frames, setup.pcap());
    // Per variant and huge-page setting, each round's Mpps.
    let mut runs: Vec<(&str, bool, Vec<f64>)> = Vec::new();
    for huge in [false, true] {
        let _pages = if huge {
            Some(HugePages::reserve(1024)?)
        } else {
            None
        };
        let eal: Vec<String> = if huge {
            vec!["-m".into(), "1024".into(), "--no-pci".into()]
        } else {
            vec![
                "--no-huge".into(),
                "-m".into(),
                "1024".into(),
                "--no-pci".into(),
            ]
        };
        let fcfg = forwarder_config(dir, &eal, pcap, mbufs)?;
        for _ in 0..rounds {
            for &(v, program, mode, _) in VARIANTS {
                let mpps = if program == "testpmd" {
                    testpmd_mpps(&eal, pcap, mode, secs, 32_768)?
                } else {
                    forwarder_mpps(bin, &fcfg, mode, secs)?
                };
                match runs.iter_mut().find(|r| r.0 == v && r.1 == huge) {
                    Some(r) => r.2.push(mpps),
                    None => runs.push((v, huge, vec![mpps])),
                }
            }
        }
    }
    let get = |v: &str, h: bool| -> &[f64] {
        runs.iter()
            .find(|r| r.0 == v && r.1 == h)
            .map(|r| r.2.as_slice())
            .unwrap_or(&[])
    };
    // The median of the rounds' ratios to the baseline, or NaN.
    let ratio = |v: &str, base: Option<&str>, h: bool| -> f64 {
        let Some(b) = base else { return f64::NAN };
        let mut r: Vec<f64> = get(v, h)
            .iter()
            .zip(get(b, h))
            .map(|(x, y)| x / y)
            .collect();
        if r.is_empty() {
            f64::NAN
        } else {
            median(&mut r)
        }
    };
    let mid = |v: &str, h: bool| median(&mut get(v, h).to_vec());
    if json {
        for &(v, _, _, base) in VARIANTS {
            for h in [false, true] {
                let all: Vec<_> = get(v, h).iter().map(|&x| round(x, 2)).collect();
                let mut line = json!({
                    "variant": v,
                    "hugepages": h,
                    "mpps": round(mid(v, h), 2),
                    "rounds": all,
                });
                let r = ratio(v, base, h);
                if !r.is_nan() {
                    line["vs_testpmd"] = round(r, 3);
                }
                row(line);
            }
        }
        return Ok(());
    }
    println!("Mpps on one forwarding core, DPDK pcap devices replaying the example's flow mix ({} frames) from memory; each run's figure is the median of its per-second rates over {secs} s; {rounds} rounds of all variants, alternating: median (lowest-highest) over the rounds", frames.len());
    println!();
    println!("| variant | no huge pages | huge pages | / testpmd of its kind, median of the rounds' ratios (no huge, huge) |");
    println!("|---|---:|---:|---:|");
    let cell = |v: &str, h: bool| {
        let x = get(v, h);
        let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        format!("{:.2} ({lo:.1}-{hi:.1})", mid(v, h))
    };
    for &(v, _, _, base) in VARIANTS {
        let r = match base {
            Some(_) => format!(
                "{:.2}x, {:.2}x",
                ratio(v, base, false),
                ratio(v, base, true)
            ),
            None => String::new(),
        };
        println!("| {v} | {} | {} | {r} |", cell(v, false), cell(v, true));
    }
    Ok(())
}

/// The variants: name, program, its mode, and the testpmd variant it is
/// measured against.
const VARIANTS: &[(&str, &str, &str, Option<&str>)] = &[
    ("testpmd_io", "testpmd", "io", None),
    ("testpmd_macswap", "testpmd", "macswap", None),
    ("forwarder_io", "forwarder", "io", Some("testpmd_io")),
    // MACs only, as macswap: the issue's "(b) MAC rewrite only".
    (
        "forwarder_rewrite",
        "forwarder",
        "mac",
        Some("testpmd_macswap"),
    ),
    (
        "forwarder_parse_rewrite",
        "forwarder",
        "rewrite",
        Some("testpmd_macswap"),
    ),
    (
        "forwarder_full",
        "forwarder",
        "full",
        Some("testpmd_macswap"),
    ),
];

/// Removes a directory when dropped.
pub(crate) struct RemoveOnDrop(pub(crate) PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        // `BENCH_DPDK_KEEP=1` keeps the pcap files and the configuration
        // (to profile a variant by hand).
        if std::env::var_os("BENCH_DPDK_KEEP").is_some() {
            eprintln!("bench dpdk: kept {}", self.0.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
