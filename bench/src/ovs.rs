//! `bench ovs`: the forwarder with connection tracking beside a stateful
//! peer, Open vSwitch's userspace datapath with its conntrack (Debian's
//! `openvswitch-switch-dpdk`), in the same run on the same devices.
//!
//! Both run one forwarding core on two `net_pcap` devices replaying UDP
//! flows from memory, with 2 MiB huge pages (OVS's DPDK adds
//! `--in-memory`, which refuses `--no-huge`): port 0 (the lan) replays
//! `flows` datagrams from lan hosts to wan hosts, port 1 (the wan) their
//! answers. The policy is the same on both sides, "from the wan, only
//! what answers the lan":
//!
//! - OVS: `ip,in_port=1 actions=ct(commit),output:2`; `ip,in_port=2
//!   actions=ct(table=1)`; in table 1 `ct_state=+trk+est,ip,in_port=2
//!   actions=output:1`; everything else dropped (OVS switches: it leaves
//!   the frames as they are).
//! - the forwarder: `ct state vmap { established : accept, related :
//!   accept, invalid : drop }` and `iifname "wan" ct state new drop` in
//!   sets, `[conntrack]` on, the two networks routed (MACs, TTL and
//!   checksum rewritten).
//!
//! Once each flow's first datagram from the lan has gone through, every
//! frame is of an established connection on both: the figure is
//! established traffic. Each OVS run is a process of its own (an
//! ovsdb-server and an ovs-vswitchd-dpdk in a scratch directory, with
//! `dpdk-extra` naming the pcap devices, its PMD thread on core 1, its
//! main thread on core 0); its rate is read from its ports' counters
//! (`ovs-ofctl dump-ports`) once a second after a second's warm-up, and
//! its cycles a packet from `dpif-netdev/pmd-stats-show`. testpmd's `io`
//! forwarding on the same devices (the device and nothing else) runs in
//! every round too, so each ratio comes with its ratio net of the device
//! (OVS's work a frame over ours: 1/rate - 1/rate of testpmd io).
//!
//! Needs root and `cargo build --release -p forwarder --features dpdk`;
//! Debian's `openvswitch-switch-dpdk` and `dpdk`.

use crate::dpdk::{forwarder_run, testpmd_mpps, write_pcap, HugePages, MAC0, MAC1};
use crate::stats::{median, round, row};
use forwarder::wire::build::{ipv4, L4};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const VSWITCHD: &str = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk";
const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

/// What `bench ovs` is asked.
pub struct Options {
    pub json: bool,
    pub quick: bool,
    pub rounds: Option<usize>,
    pub flows: usize,
}

/// The datagrams of `flows` connections from the lan (192.0.2.0/24) to
/// the wan (198.51.100.0/24), and their answers, 60-byte frames.
fn frames(flows: usize) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    (0..flows)
        .map(|i| {
            let lan = 0xc000_0200 | (1 + i % 200) as u32;
            let wan = 0xc633_6400 | (1 + (i / 200) % 200) as u32;
            let sport = 1024 + (i / 40_000 * 7 + i % 40_000) as u16 % 60_000;
            let dport = 5000 + (i % 7) as u16;
            (
                ipv4(lan, wan, 64, L4::Udp(sport, dport), 18),
                ipv4(wan, lan, 64, L4::Udp(dport, sport), 18),
            )
        })
        .unzip()
}

/// The forwarder's configuration: the two ports on the pcap devices with
/// huge pages, the two networks routed, the policy in sets.
fn forwarder_config(dir: &Path, pcap: [&Path; 2], flows: usize) -> Result<PathBuf, String> {
    let vdev = |i: usize| {
        format!(
            "\"--vdev\", \"net_pcap{i},rx_pcap={},infinite_rx=1\"",
            pcap[i].display()
        )
    };
    let text = format!(
        r#"route = [
  {{ prefix = "192.0.2.0/24", via = "lan" }},
  {{ prefix = "198.51.100.0/24", via = "wan" }},
]
[forwarder]
cores = [1]

[[port]]
name = "lan"
driver = "dpdk"
mac = "02:00:00:00:00:01"
[port.options]
device = "net_pcap0"
eal = ["-m", "{mem}", "--no-pci", {v0}, {v1}]
mbufs = {mbufs}

[[port]]
name = "wan"
driver = "dpdk"
mac = "02:00:00:00:00:02"
[port.options]
device = "net_pcap1"
mbufs = {mbufs}

[[next_hop]]
name = "lan"
port = "lan"
mac = "02:00:00:00:0a:01"

[[next_hop]]
name = "wan"
port = "wan"
mac = "02:00:00:00:0b:01"

[[set]]
name = "state"
type = "ct_state : verdict"
match = "ct state"
action = "verdict"
elements = ["established : accept", "related : accept", "invalid : drop"]

[[set]]
name = "wan_new"
type = "ifname . ct_state"
match = "meta iifname . ct state"
action = "drop"
elements = ["wan . new"]

[conntrack]
enabled = true
max = {max}
"#,
        v0 = vdev(0),
        v1 = vdev(1),
        max = (flows * 2).max(65_536),
        mbufs = port_mbufs(flows),
        mem = eal_mib(flows),
    );
    let out = dir.join("ovs-bench.toml");
    std::fs::write(&out, text).map_err(|e| e.to_string())?;
    Ok(out)
}

/// OVS's OpenFlow pipeline: `ct(commit)` from the lan, `ct(table=1)` and
/// `ct_state=+trk+est` from the wan.
const FLOWS: &str = "table=0,priority=10,ip,in_port=1,actions=ct(commit),output:2
table=0,priority=10,ip,in_port=2,actions=ct(table=1)
table=0,priority=0,actions=drop
table=1,priority=10,ip,in_port=2,ct_state=+trk+est,actions=output:1
table=1,priority=0,actions=drop
";

/// One OVS: its scratch directory, stopped (both daemons) when dropped.
struct Ovs {
    dir: PathBuf,
}

impl Ovs {
    fn run(&self, prog: &str, args: &[&str]) -> Result<String, String> {
        let o = Command::new(prog)
            .args(args)
            .env("OVS_RUNDIR", &self.dir)
            .env("OVS_LOGDIR", &self.dir)
            .env("OVS_DBDIR", &self.dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                format!("{prog} (Debian: apt-get install openvswitch-switch-dpdk): {e}")
            })?;
        if !o.status.success() {
            return Err(format!(
                "{prog} {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    fn vsctl(&self, args: &[&str]) -> Result<String, String> {
        let db = format!("--db=unix:{}", self.path("db.sock"));
        let mut a = vec![db.as_str()];
        a.extend(args);
        self.run("ovs-vsctl", &a)
    }

    /// The control socket of the daemon whose pid file is `pidfile`.
    fn ctl(&self, daemon: &str, pidfile: &str) -> Option<String> {
        let pid = std::fs::read_to_string(self.dir.join(pidfile)).ok()?;
        Some(self.path(&format!("{daemon}.{}.ctl", pid.trim())))
    }

    /// Starts ovsdb-server and ovs-vswitchd-dpdk with the two pcap
    /// devices, the bridge and the pipeline.
    fn start(dir: &Path, pcap: [&Path; 2]) -> Result<Ovs, String> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let ovs = Ovs {
            dir: dir.to_path_buf(),
        };
        let db = ovs.path("conf.db");
        ovs.run("ovsdb-tool", &["create", &db, SCHEMA])?;
        ovs.run(
            "ovsdb-server",
            &[
                &db,
                &format!("--remote=punix:{}", ovs.path("db.sock")),
                &format!("--pidfile={}", ovs.path("ovsdb-server.pid")),
                &format!("--log-file={}", ovs.path("ovsdb-server.log")),
                "--detach",
            ],
        )?;
        ovs.vsctl(&["--no-wait", "init"])?;
        let extra = format!(
            "other_config:dpdk-extra=--no-pci --vdev net_pcap0,rx_pcap={},infinite_rx=1 \
             --vdev net_pcap1,rx_pcap={},infinite_rx=1",
            pcap[0].display(),
            pcap[1].display()
        );
        ovs.vsctl(&[
            "--no-wait",
            "set",
            "Open_vSwitch",
            ".",
            "other_config:dpdk-init=true",
            &extra,
            "other_config:dpdk-lcore-mask=0x1",
            "other_config:pmd-cpu-mask=0x2",
            "other_config:dpdk-socket-mem=1024",
        ])?;
        ovs.run(
            VSWITCHD,
            &[
                &format!("unix:{}", ovs.path("db.sock")),
                &format!("--pidfile={}", ovs.path("ovs-vswitchd.pid")),
                &format!("--log-file={}", ovs.path("ovs-vswitchd.log")),
                "--detach",
            ],
        )?;
        ovs.vsctl(&[
            "add-br",
            "br0",
            "--",
            "set",
            "bridge",
            "br0",
            "datapath_type=netdev",
        ])?;
        for i in 0..2 {
            ovs.vsctl(&[
                "add-port",
                "br0",
                &format!("p{i}"),
                "--",
                "set",
                "Interface",
                &format!("p{i}"),
                "type=dpdk",
                &format!("options:dpdk-devargs=net_pcap{i}"),
                &format!("ofport_request={}", i + 1),
            ])?;
        }
        let flows = ovs.path("flows.txt");
        std::fs::write(&flows, FLOWS).map_err(|e| e.to_string())?;
        let br = format!("unix:{}", ovs.path("br0.mgmt"));
        ovs.run("ovs-ofctl", &["del-flows", &br])?;
        ovs.run("ovs-ofctl", &["add-flows", &br, &flows])?;
        Ok(ovs)
    }

    /// Frames received and sent by the two ports, as their counters say
    /// now (`dump-ports` reads the devices' own).
    fn counters(&self) -> Result<(u64, u64), String> {
        let out = self.run(
            "ovs-ofctl",
            &["dump-ports", &format!("unix:{}", self.path("br0.mgmt"))],
        )?;
        let (mut rx, mut tx) = (0, 0);
        let mut ours = false;
        for l in out.lines().map(str::trim) {
            let pkts = |l: &str, dir: &str| -> Option<u64> {
                l.split(&format!("{dir} pkts="))
                    .nth(1)?
                    .split(',')
                    .next()?
                    .parse()
                    .ok()
            };
            if l.starts_with("port") {
                ours = !l.starts_with("port LOCAL");
                if ours {
                    rx += pkts(l, "rx").unwrap_or(0);
                }
            } else if ours {
                tx += pkts(l, "tx").unwrap_or(0);
            }
        }
        Ok((rx, tx))
    }

    /// `dpif-netdev/pmd-stats-*` of the PMD thread.
    fn pmd(&self, what: &str) -> Result<String, String> {
        let ctl = self
            .ctl("ovs-vswitchd-dpdk", "ovs-vswitchd.pid")
            .ok_or("ovs-vswitchd: no pid file")?;
        self.run("ovs-appctl", &["-t", &ctl, &format!("dpif-netdev/{what}")])
    }
}

impl Drop for Ovs {
    fn drop(&mut self) {
        for (daemon, pidfile) in [
            ("ovs-vswitchd-dpdk", "ovs-vswitchd.pid"),
            ("ovsdb-server", "ovsdb-server.pid"),
        ] {
            let pid = std::fs::read_to_string(self.dir.join(pidfile)).unwrap_or_default();
            let pid = pid.trim().to_string();
            if let Some(ctl) = self.ctl(daemon, pidfile) {
                let _ = self.run("ovs-appctl", &["-t", &ctl, "exit"]);
            }
            if pid.is_empty() {
                continue;
            }
            // Waited for (a second), killed if still there, waited for
            // again: its huge pages must be free before the reservation
            // is given back (pages still held then stay behind as
            // surplus).
            if !wait_gone(&pid) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid])
                    .stderr(Stdio::null())
                    .status();
                wait_gone(&pid);
            }
        }
    }
}

/// Whether process `pid` is gone (or a zombie) within a second.
fn wait_gone(pid: &str) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(1) {
        match std::fs::read_to_string(format!("/proc/{pid}/status")) {
            Ok(s)
                if !s
                    .lines()
                    .any(|l| l.starts_with("State:") && l.contains('Z')) =>
            {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => return true,
        }
    }
    false
}

/// One OVS run: the median of its per-second Mpps (frames sent by both
/// ports), the share of received frames it sent, its cycles a packet.
fn ovs_run(dir: &Path, pcap: [&Path; 2], secs: u64) -> Result<(f64, f64, f64), String> {
    let ovs = Ovs::start(dir, pcap)?;
    // Until it forwards, then a second's warm-up.
    let t0 = Instant::now();
    while ovs.counters()?.1 == 0 {
        if t0.elapsed() > Duration::from_secs(30) {
            return Err(format!(
                "OVS forwarded nothing in 30 s (its log: {})",
                ovs.path("ovs-vswitchd.log")
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(1));
    ovs.pmd("pmd-stats-clear")?;
    let (mut at, mut last) = (Instant::now(), ovs.counters()?);
    let first = last;
    let mut rates = Vec::new();
    for _ in 0..secs {
        std::thread::sleep(Duration::from_secs(1));
        let (now, c) = (Instant::now(), ovs.counters()?);
        rates.push((c.1 - last.1) as f64 / now.duration_since(at).as_secs_f64() / 1e6);
        (at, last) = (now, c);
    }
    let stats = ovs.pmd("pmd-stats-show")?;
    let cycles = stats
        .lines()
        .find_map(|l| l.trim().strip_prefix("avg processing cycles per packet:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN);
    let share = (last.1 - first.1) as f64 / (last.0 - first.0).max(1) as f64;
    Ok((median(&mut rates), share, cycles))
}

/// The most flows a run takes: OVS's DPDK pool, shared by its ports, is
/// 262,144 mbufs (`ovs_mp_1500_0_262144`), and `infinite_rx` holds every
/// frame of both pcaps in it (a frame a flow each) beside its rings; past
/// this OVS's ports do not start and it forwards nothing.
const MAX_FLOWS: usize = 120_000;

/// Mbufs of a forwarder port's pool: its pcap's frames, which
/// `infinite_rx` keeps, and the rings'.
fn port_mbufs(flows: usize) -> usize {
    flows + 16_384
}

/// MiB of huge pages for a DPDK process holding both pools of
/// [`port_mbufs`] (about 2.5 KiB an mbuf) and its own needs.
fn eal_mib(flows: usize) -> usize {
    (2 * port_mbufs(flows) * 5 / 2 / 1024 + 256).max(1024)
}

pub fn run(o: Options) -> Result<(), String> {
    if o.flows == 0 || o.flows > MAX_FLOWS {
        return Err(format!(
            "--flows {}: 1 to {MAX_FLOWS} (OVS's pool of 262,144 mbufs holds both pcaps' \
             frames)",
            o.flows
        ));
    }
    let secs = if o.quick { 3 } else { 5 };
    let rounds = o.rounds.unwrap_or(if o.quick { 2 } else { 5 }).max(1);
    let bin = crate::dpdk::forwarder_bin()?;
    if !Path::new(VSWITCHD).exists() {
        return Err(format!(
            "no {VSWITCHD} (Debian: apt-get install openvswitch-switch-dpdk)"
        ));
    }
    let dir = std::env::temp_dir().join(format!("bench-ovs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let _cleanup = crate::dpdk::RemoveOnDrop(dir.clone());
    let (lan, wan) = frames(o.flows);
    let pcaps = [dir.join("lan.pcap"), dir.join("wan.pcap")];
    write_pcap(&pcaps[0], &lan, MAC0)?;
    write_pcap(&pcaps[1], &wan, MAC1)?;
    let pcap = [pcaps[0].as_path(), pcaps[1].as_path()];
    let cfg = forwarder_config(&dir, pcap, o.flows)?;
    let _pages = HugePages::reserve(1536)?;
    let eal: Vec<String> = vec!["-m".into(), eal_mib(o.flows).to_string(), "--no-pci".into()];
    // Per round: OVS (Mpps, share, cycles), ours (Mpps, share), testpmd io.
    let mut ovs = Vec::new();
    let mut ours = Vec::new();
    let mut io = Vec::new();
    for r in 0..rounds {
        eprintln!("bench ovs: round {} of {rounds}", r + 1);
        ovs.push(ovs_run(&dir.join("ovs"), pcap, secs)?);
        ours.push(forwarder_run(&bin, &cfg, "full", secs)?);
        io.push(testpmd_mpps(
            &eal,
            pcap,
            "io",
            secs,
            2 * port_mbufs(o.flows),
        )?);
    }
    let col = |v: &[f64]| median(&mut v.to_vec());
    let best = |v: &[f64]| v.iter().cloned().fold(f64::NAN, f64::max);
    let o_mpps: Vec<f64> = ovs.iter().map(|x| x.0).collect();
    let f_mpps: Vec<f64> = ours.iter().map(|x| x.0).collect();
    let ratio: Vec<f64> = f_mpps.iter().zip(&o_mpps).map(|(f, o)| f / o).collect();
    // Work a frame net of the device: OVS's over ours, per round.
    let net: Vec<f64> = (0..rounds)
        .map(|i| (1.0 / o_mpps[i] - 1.0 / io[i]) / (1.0 / f_mpps[i] - 1.0 / io[i]))
        .collect();
    let shares = (
        col(&ovs.iter().map(|x| x.1).collect::<Vec<_>>()),
        col(&ours.iter().map(|x| x.1).collect::<Vec<_>>()),
    );
    let cycles = col(&ovs.iter().map(|x| x.2).collect::<Vec<_>>());
    if (shares.0 - shares.1).abs() > 0.005 {
        return Err(format!(
            "OVS forwarded {:.2} % of what it received, the forwarder {:.2} %: not the same \
             policy",
            shares.0 * 100.0,
            shares.1 * 100.0
        ));
    }
    let lo_hi = |v: &[f64]| {
        (
            v.iter().cloned().fold(f64::INFINITY, f64::min),
            v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
        )
    };
    if o.json {
        row(json!({
            "bench": "ovs",
            "flows": o.flows,
            "rounds": rounds,
            "ovs_mpps": round(col(&o_mpps), 2),
            "ovs_best": round(best(&o_mpps), 2),
            "ovs_cycles_per_packet": round(cycles, 0),
            "forwarder_mpps": round(col(&f_mpps), 2),
            "forwarder_best": round(best(&f_mpps), 2),
            "testpmd_io_mpps": round(col(&io), 2),
            "vs_ovs": round(col(&ratio), 3),
            "vs_ovs_net": round(col(&net), 3),
            "vs_ovs_net_range": [round(lo_hi(&net).0, 3), round(lo_hi(&net).1, 3)],
            "forwarded": round(shares.1, 4),
        }));
        return Ok(());
    }
    println!(
        "Established UDP traffic, {} flows each way, one forwarding core, two net_pcap devices \
         with 2 MiB huge pages; {rounds} rounds alternating, each run the median of its \
         per-second rates over {secs} s; Mpps median (best) of the rounds, the ratio the median \
         of the rounds' ratios; testpmd io {:.2} ({:.2}) Mpps",
        o.flows,
        col(&io),
        best(&io)
    );
    println!();
    println!("| case | OVS 3.1 + conntrack | forwarder + conntrack | ratio | net of the device (lowest-highest) | forwarded |");
    println!("|---|---:|---:|---:|---:|---:|");
    println!(
        "| {} flows | {:.2} ({:.2}), {:.0} cycles a packet | {:.2} ({:.2}) | {:.2}x | {:.2}x ({:.2}-{:.2}) | {:.2} % |",
        o.flows,
        col(&o_mpps),
        best(&o_mpps),
        cycles,
        col(&f_mpps),
        best(&f_mpps),
        col(&ratio),
        col(&net),
        lo_hi(&net).0,
        lo_hi(&net).1,
        shares.1 * 100.0
    );
    Ok(())
}
