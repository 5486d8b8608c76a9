//! The forwarder beside the host's routing: its FIB follows the kernel's
//! table (`[routes] source = "kernel"`), and a TAP per port carries what
//! is for the router to the host's stack, where BIRD peers over BGP
//! through the forwarder's ports.
//!
//! Two hosts in namespaces (a on f0, b on f1) and the forwarder's
//! namespace between them, as in the router test. Asserted:
//! - `ip route add/replace/del` of IPv4 and IPv6 prefixes, single and
//!   multipath, change forwarding (the time measured and printed); a
//!   route that exists before the forwarder starts is found; 10,000
//!   routes from `ip -batch` are all mirrored; the configuration's
//!   route wins over the kernel's for one prefix; unusable routes are
//!   counted.
//! - BIRD in the forwarder's namespace peers with BIRD in b's over the
//!   TAP: 1,000 IPv4 and 1,000 IPv6 prefixes announced reach the FIB and
//!   carry packets; withdrawn, they give ICMP unreachable. A flood of
//!   datagrams to the router's address while traffic is forwarded does
//!   not take the session down, and forwarding goes on.
//!
//! Needs root, `ip`, `ethtool` and (the BGP test) `bird2`; skipped
//! without root unless `FORWARDER_NETNS_TESTS=1`, which `.ci/run` sets:
//! then a missing BIRD fails the test. Addresses from 192.0.2.0/24,
//! 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32 only; namespaces
//! removed afterwards.

mod common;

use common::*;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const F0_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0a, 0xfe];
const F1_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0b, 0xfe];

/// The topology with the forwarder running in its middle namespace on a
/// configuration of `routes` (its route and `[routes]` lines) and port
/// f1's `f1` keys; `before`: `ip` commands run there before it starts.
struct Lab {
    // Dropped first: the forwarder stops before its namespace goes.
    _running: Running,
    t: Topology,
    a: String,
    f: String,
    b: String,
    dir: std::path::PathBuf,
    cfg: std::path::PathBuf,
}

impl Lab {
    fn start(variant: char, routes: &str, f1: &str, before: &[&str]) -> Lab {
        let t =
            Topology::create(&Shape::routed("fwdk", variant, F0_MAC, F1_MAC)).expect("topology");
        // A pair the kernel's routes may name for port f1
        // (`kernel_interface`), as a router names a VRF or a dummy.
        for c in [
            "link add k1 type veth peer name k1p",
            "link set k1 up",
            "link set k1p up",
        ] {
            t.ip(1, c).unwrap();
        }
        // b's second address, and addresses on its `lo` for the routes to
        // lead to.
        t.ip(2, "addr add 198.51.100.3/25 dev b0").unwrap();
        t.ip(2, "-6 addr add 2001:db8:2::3/64 dev b0 nodad")
            .unwrap();
        for addr in [
            "203.0.113.5/32",
            "203.0.113.17/32",
            "203.0.113.130/32",
            "192.0.2.130/32",
            "198.51.100.200/32",
        ] {
            t.ip(2, &format!("addr add {addr} dev lo")).unwrap();
        }
        for addr in [
            "2001:db8:3::5/128",
            "2001:db8:5::5/128",
            "2001:db8:1000:5::1/128",
            "2001:db8:100:5::5/128",
            "2001:db8:100:3e7::1/128",
        ] {
            t.ip(2, &format!("-6 addr add {addr} dev lo")).unwrap();
        }
        let (a, f, b) = (
            t.ns(0).to_string(),
            t.ns(1).to_string(),
            t.ns(2).to_string(),
        );
        for c in before {
            ipn(&f, c).unwrap();
        }
        let dir = std::env::temp_dir().join(format!("fwd-kernel-{variant}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("forwarder.toml");
        std::fs::write(
            &cfg,
            format!(
                "{routes}[forwarder]\ncores = [0]\n[control]\nsocket = \"{}\"\n{}",
                dir.join("ctl.sock").display(),
                routed_ports(F0_MAC, F1_MAC, "", f1)
            ),
        )
        .unwrap();
        let (child, _rx) = start_forwarder(&f, &cfg, None);
        Lab {
            _running: Running(child),
            t,
            a,
            f,
            b,
            dir,
            cfg,
        }
    }
}

impl Lab {
    /// Namespaces a, f, b; the configuration; its directory.
    fn names(
        &self,
    ) -> (
        String,
        String,
        String,
        std::path::PathBuf,
        std::path::PathBuf,
    ) {
        (
            self.a.clone(),
            self.f.clone(),
            self.b.clone(),
            self.cfg.clone(),
            self.dir.clone(),
        )
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

static NEXT_PORT: AtomicU16 = AtomicU16::new(20_000);

/// Datagrams from namespace `from` to `dst` (an address of namespace
/// `to`), one every 2 ms, until one arrives: how long that took from the
/// call, or `None` if nothing arrived `within`.
fn reaches(from: &str, to: &str, dst: &str, within: Duration) -> Option<Duration> {
    let port = NEXT_PORT.fetch_add(1, Relaxed);
    let dst: SocketAddr = SocketAddr::new(dst.parse().unwrap(), port);
    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    let ready = Arc::new(AtomicBool::new(false));
    let r2 = ready.clone();
    let listener = in_netns(to, move || {
        let s = UdpSocket::bind(dst).unwrap_or_else(|e| panic!("bind {dst}: {e}"));
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        r2.store(true, Relaxed);
        let mut buf = [0u8; 64];
        while start.elapsed() < within + Duration::from_millis(200) {
            if let Ok((n, _)) = s.recv_from(&mut buf) {
                if &buf[..n] == b"kernel-test" {
                    let _ = tx.send(start.elapsed());
                    return;
                }
            }
        }
    });
    while !ready.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let done = Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    let sender = in_netns(from, move || {
        let any: SocketAddr = if dst.is_ipv6() {
            "[::]:0".parse().unwrap()
        } else {
            "0.0.0.0:0".parse().unwrap()
        };
        let s = UdpSocket::bind(any).unwrap();
        while !d2.load(Relaxed) && start.elapsed() < within {
            let _ = s.send_to(b"kernel-test", dst);
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let got = rx.recv_timeout(within + Duration::from_millis(300)).ok();
    done.store(true, Relaxed);
    let _ = sender.join();
    let _ = listener.join();
    got
}

/// A datagram socket connected to `dst` that reports every ICMP error
/// (IP_RECVERR: not only the "hard" ones, as port unreachable).
fn connected(dst: SocketAddr) -> UdpSocket {
    let any: SocketAddr = if dst.is_ipv6() {
        "[::]:0".parse().unwrap()
    } else {
        "0.0.0.0:0".parse().unwrap()
    };
    let s = UdpSocket::bind(any).unwrap();
    let (level, opt) = if dst.is_ipv6() {
        (libc::IPPROTO_IPV6, libc::IPV6_RECVERR)
    } else {
        (libc::IPPROTO_IP, libc::IP_RECVERR)
    };
    let one: libc::c_int = 1;
    // SAFETY: a setsockopt on our socket with an int.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&s),
            level,
            opt,
            &one as *const _ as *const libc::c_void,
            4,
        );
    }
    s.connect(dst).unwrap();
    s
}

/// Datagrams from `from` to `dst`, one every 2 ms, until one brings
/// back network unreachable (from the forwarder: no route): how long
/// that took, or `None` if none came `within`.
fn unreachable(from: &str, dst: &str, within: Duration) -> Option<Duration> {
    let dst: SocketAddr = SocketAddr::new(dst.parse().unwrap(), 9);
    let start = Instant::now();
    in_netns(from, move || {
        let s = connected(dst);
        s.set_read_timeout(Some(Duration::from_millis(2))).unwrap();
        while start.elapsed() < within {
            let _ = s.send(b"x");
            let mut b = [0u8; 8];
            if let Err(e) = s.recv(&mut b) {
                if e.kind() == std::io::ErrorKind::NetworkUnreachable {
                    return Some(start.elapsed());
                }
            }
        }
        None
    })
    .join()
    .unwrap()
}

/// Polls the stats until `ok` holds of the kernel mirror's object (or
/// `within` passes): how long it took.
fn mirrored(
    cfg: &std::path::Path,
    within: Duration,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        if ok(&stats(cfg)["kernel_routes"]) {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

#[test]
fn kernel_routes_change_forwarding() {
    if !root_or_skip("kernel") {
        return;
    }
    // Routes there before the forwarder starts, found at its start; the
    // configuration's own route for 203.0.113.128/25 wins over the
    // kernel's (unreachable) one.
    let lab = Lab::start(
        'm',
        "route = [{ prefix = \"203.0.113.128/25\", via = \"198.51.100.2\" }]\n\
         [routes]\nsource = \"kernel\"\n",
        "kernel_interface = \"k1\"",
        &[
            "route add 203.0.113.0/28 via 198.51.100.2 dev k1 onlink",
            "-6 route add 2001:db8:3::/64 via 2001:db8:2::2 dev k1 onlink",
            "route add unreachable 203.0.113.128/25",
        ],
    );
    let (a, f, b, cfg, dir) = lab.names();
    let second = Duration::from_secs(2);
    assert!(
        reaches(&a, &b, "203.0.113.5", second).is_some(),
        "a route there at start"
    );
    assert!(
        reaches(&a, &b, "2001:db8:3::5", second).is_some(),
        "an IPv6 one"
    );
    assert!(
        reaches(&a, &b, "203.0.113.130", second).is_some(),
        "the configuration's route"
    );
    let k = &stats(&cfg)["kernel_routes"];
    assert_eq!(k["shadowed"], 1, "{k}");
    assert_eq!(k["unusable"], 0, "{k}");
    // `route get` says where each came from: the kernel's table with
    // its protocol (`ip route add` gives `boot`), or the configuration.
    let from = |a: &str| json(&["route", "get", a, "--json"], &cfg)["origin"].clone();
    assert_eq!(
        (
            from("203.0.113.5")["from"].as_str(),
            from("203.0.113.5")["protocol"].as_str()
        ),
        (Some("kernel"), Some("boot"))
    );
    assert_eq!(from("203.0.113.130")["from"], "config");

    // Added: forwarding follows (the time from `ip` returning to the
    // first datagram through).
    let mut took = Vec::new();
    assert!(unreachable(&a, "203.0.113.17", second).is_some());
    ipn(
        &f,
        "route add 203.0.113.16/28 via 198.51.100.2 dev k1 onlink",
    )
    .unwrap();
    took.push(("add v4", reaches(&a, &b, "203.0.113.17", second)));
    // Replaced by an unreachable route: unusable, counted; the packets
    // find no route.
    ipn(&f, "route replace unreachable 203.0.113.16/28").unwrap();
    took.push((
        "replace v4 by unreachable",
        unreachable(&a, "203.0.113.17", second),
    ));
    assert_eq!(
        stats(&cfg)["kernel_routes"]["unusable_by_reason"]["unreachable"],
        1
    );
    // Multipath: one ECMP group of both gateways.
    ipn(
        &f,
        "route replace 203.0.113.16/28 nexthop via 198.51.100.2 dev k1 onlink nexthop via 198.51.100.3 dev k1 onlink",
    )
    .unwrap();
    took.push((
        "replace v4 by multipath",
        reaches(&a, &b, "203.0.113.17", second),
    ));
    assert!(stats(&cfg)["kernel_routes"]["groups"].as_u64() >= Some(1));
    ipn(&f, "route del 203.0.113.16/28").unwrap();
    took.push(("del v4", unreachable(&a, "203.0.113.17", second)));
    ipn(
        &f,
        "-6 route add 2001:db8:5::/64 nexthop via 2001:db8:2::2 dev k1 onlink nexthop via 2001:db8:2::3 dev k1 onlink",
    )
    .unwrap();
    took.push(("add v6 multipath", reaches(&a, &b, "2001:db8:5::5", second)));
    ipn(
        &f,
        "-6 route replace 2001:db8:5::/64 via 2001:db8:2::2 dev k1 onlink",
    )
    .unwrap();
    took.push(("replace v6", reaches(&a, &b, "2001:db8:5::5", second)));
    ipn(&f, "-6 route del 2001:db8:5::/64").unwrap();
    took.push(("del v6", unreachable(&a, "2001:db8:5::5", second)));
    for (what, d) in &took {
        eprintln!("kernel route change, {what}: {d:?} until forwarding followed");
        let d = d.unwrap_or_else(|| panic!("{what}: forwarding did not follow within 2 s"));
        // Loose: the figure is printed; scheduling on a loaded 2-core CI
        // machine is what this bound allows for.
        assert!(d < Duration::from_secs(1), "{what}: {d:?}");
    }

    // 10,000 routes in one batch: every one mirrored.
    let before = stats(&cfg)["kernel_routes"]["installed"].as_u64().unwrap();
    let batch: String = (0..10_000)
        .map(|i| {
            format!(
                "route add 2001:db8:{:x}:{:x}::/64 via 2001:db8:2::2 dev k1 onlink\n",
                0x1000 + i / 4096,
                i % 4096
            )
        })
        .collect();
    let file = dir.join("batch");
    std::fs::write(&file, batch).unwrap();
    let start = Instant::now();
    run(&["ip", "-n", &f, "-6", "-batch", file.to_str().unwrap()]).unwrap();
    let took = mirrored(&cfg, Duration::from_secs(20), |k| {
        k["installed"].as_u64() == Some(before + 10_000)
    });
    eprintln!(
        "10,000 routes by ip -batch: mirrored {:?} after the batch began ({:?} of it after ip returned)",
        start.elapsed(),
        took
    );
    assert!(took.is_some(), "{}", stats(&cfg)["kernel_routes"]);
    assert!(reaches(&a, &b, "2001:db8:1000:5::1", second).is_some());
}

/// BIRD's configuration in the forwarder's namespace: BGP with b over
/// the TAP, its routes exported to the kernel's main table.
const BIRD_F: &str = r#"
router id 198.51.100.1;
log "LOG" all;
protocol device { scan time 1; }
protocol kernel k4 { ipv4 { import none; export all; }; merge paths on; }
protocol kernel k6 { ipv6 { import none; export all; }; merge paths on; }
template bgp peer {
  hold time 9; keepalive time 3; connect retry time 1; connect delay time 1;
}
protocol bgp b4 from peer {
  local 198.51.100.1 as 64512; neighbor 198.51.100.2 as 64513;
  ipv4 { import all; export none; };
}
protocol bgp b6 from peer {
  local 2001:db8:2::1 as 64512; neighbor 2001:db8:2::2 as 64513;
  ipv6 { import all; export none; next hop prefer global; };
}
"#;

/// The neighbour's: 1,000 IPv4 and 1,000 IPv6 prefixes announced.
fn bird_b(log: &std::path::Path) -> String {
    // Every prefix of length 24-32 in 203.0.113.0/24 and 25-32 in
    // 192.0.2.128/25 and 198.51.100.128/25 (documentation space only),
    // the first 1,000 of them.
    let mut v4 = Vec::new();
    for (base, from) in [(0xcb00_7100u32, 24), (0xc000_0280, 25), (0xc633_6480, 25)] {
        for len in from..=32u32 {
            for i in 0..1u32 << (len - from) {
                let p = base + (i << (32 - len));
                v4.push(format!(
                    "  route {}/{len} blackhole;\n",
                    std::net::Ipv4Addr::from(p)
                ));
            }
        }
    }
    v4.truncate(1000);
    let v6: String = (0..1000)
        .map(|i| format!("  route 2001:db8:100:{i:x}::/64 blackhole;\n"))
        .collect();
    format!(
        r#"
router id 198.51.100.2;
log "{log}" all;
protocol device {{ scan time 1; }}
protocol static announce4 {{
  ipv4;
{v4}}}
protocol static announce6 {{
  ipv6;
{v6}}}
template bgp peer {{
  hold time 9; keepalive time 3; connect retry time 1; connect delay time 1;
}}
protocol bgp f4 from peer {{
  local 198.51.100.2 as 64513; neighbor 198.51.100.1 as 64512;
  ipv4 {{ import none; export where proto = "announce4"; }};
}}
protocol bgp f6 from peer {{
  local 2001:db8:2::2 as 64513; neighbor 2001:db8:2::1 as 64512;
  ipv6 {{ import none; export where proto = "announce6"; }};
}}
"#,
        v4 = v4.concat(),
        log = log.display()
    )
}

fn birdc(sock: &std::path::Path, cmd: &str) -> String {
    let out = std::process::Command::new("birdc")
        .arg("-s")
        .arg(sock)
        .args(cmd.split_whitespace())
        .output()
        .expect("birdc");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether every BGP session of the BIRD behind `sock` is established.
fn established(sock: &std::path::Path) -> bool {
    let s = birdc(sock, "show protocols");
    let bgp: Vec<&str> = s.lines().filter(|l| l.contains(" BGP ")).collect();
    !bgp.is_empty() && bgp.iter().all(|l| l.contains("Established"))
}

/// Datagrams from `from` to `dst:port` as fast as one thread sends them,
/// for `d`; how many were sent.
fn blast(from: &str, dst: &str, port: u16, d: Duration) -> std::thread::JoinHandle<u64> {
    let dst = SocketAddr::new(dst.parse().unwrap(), port);
    in_netns(from, move || {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        let start = Instant::now();
        let mut n = 0;
        while start.elapsed() < d {
            for _ in 0..64 {
                if s.send_to(&[0x42; 64], dst).is_ok() {
                    n += 1;
                }
            }
        }
        n
    })
}

/// Datagrams received on `dst:port` in namespace `ns` for `d`.
fn count(ns: &str, dst: &str, port: u16, d: Duration) -> std::thread::JoinHandle<u64> {
    let dst = SocketAddr::new(dst.parse().unwrap(), port);
    in_netns(ns, move || {
        let s = UdpSocket::bind(dst).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let start = Instant::now();
        let mut n = 0;
        let mut buf = [0u8; 128];
        while start.elapsed() < d {
            if s.recv(&mut buf).is_ok() {
                n += 1;
            }
        }
        n
    })
}

/// Datagrams forwarded from a to b in 2 s of one sender's full rate,
/// with a flood of datagrams from b to the router's address beside it
/// or not: (sent, received, flood sent).
fn forwarded(a: &str, b: &str, flood: bool) -> (u64, u64, u64) {
    let port = NEXT_PORT.fetch_add(1, Relaxed);
    let d = Duration::from_secs(2);
    let rx = count(b, "203.0.113.5", port, d + Duration::from_millis(300));
    std::thread::sleep(Duration::from_millis(100));
    let f = flood.then(|| blast(b, "198.51.100.1", 5999, d));
    let sent = blast(a, "203.0.113.5", port, d).join().unwrap();
    let flooded = f.map_or(0, |f| f.join().unwrap());
    (sent, rx.join().unwrap(), flooded)
}

#[test]
fn bird_peers_over_bgp_through_the_tap() {
    if !root_or_skip("kernel") {
        return;
    }
    if std::process::Command::new("bird")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            !wanted(),
            "bird (Debian's bird2) is not installed: .ci/run installs it; this test needs it"
        );
        eprintln!("skipped: bird2 is not installed");
        return;
    }
    // The README's example configuration parses.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/bird.conf");
    run(&["bird", "-p", "-c", example]).expect("examples/bird.conf");
    let mut lab = Lab::start(
        'b',
        "[routes]\nsource = \"kernel\"\nprotocols = [\"bird\"]\n",
        "punt = \"tap\"",
        &[],
    );
    let (a, f, b, cfg, dir) = lab.names();
    let start_bird = |ns: &str, name: &str, conf: String| {
        let c = dir.join(format!("{name}.conf"));
        std::fs::write(&c, conf).unwrap();
        let sock = dir.join(format!("{name}.ctl"));
        let child = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "bird", "-f", "-c"])
            .arg(&c)
            .arg("-s")
            .arg(&sock)
            .arg("-P")
            .arg(dir.join(format!("{name}.pid")))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start bird");
        (child, sock)
    };
    let (cf, sock_f) = start_bird(
        &f,
        "bird-f",
        BIRD_F.replace("LOG", &dir.join("bird-f.log").display().to_string()),
    );
    lab.t.children.push(cf);
    let (cb, sock_b) = start_bird(&b, "bird-b", bird_b(&dir.join("bird-b.log")));
    lab.t.children.push(cb);
    let start = Instant::now();
    while !(established(&sock_f) && established(&sock_b)) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the BGP sessions did not come up through the TAP:\n{}\n{}\nforwarder: {}",
            birdc(&sock_f, "show protocols all b4"),
            std::fs::read_to_string(dir.join("bird-f.log")).unwrap_or_default(),
            stats(&cfg)["router"]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("BGP established after {:?}", start.elapsed());
    let took = mirrored(&cfg, Duration::from_secs(20), |k| {
        k["installed"].as_u64() >= Some(2000)
    });
    let k = stats(&cfg)["kernel_routes"].clone();
    eprintln!("2,000 announced prefixes in the FIB after {took:?}: {k}");
    assert!(took.is_some(), "{k}");
    assert_eq!(k["unusable"], 0, "{k}");
    let second = Duration::from_secs(2);
    for dst in [
        "203.0.113.5",
        "192.0.2.130",
        "198.51.100.200",
        "2001:db8:100:5::5",
        "2001:db8:100:3e7::1",
    ] {
        assert!(
            reaches(&a, &b, dst, second).is_some(),
            "{dst}: {}",
            stats(&cfg)
        );
    }

    // The punt path under load: forwarding from a at one sender's full
    // rate, alone and beside a flood of datagrams to the router's address
    // (all punted to the TAP, where the host's stack answers port
    // unreachable at its own rate).
    let alone = forwarded(&a, &b, false);
    let flooded = forwarded(&a, &b, true);
    let r = stats(&cfg)["router"].clone();
    eprintln!(
        "forwarded alone: {} of {} sent; beside a flood of {} to the router: {} of {}; router: {r}",
        alone.1, alone.0, flooded.2, flooded.1, flooded.0
    );
    assert!(flooded.2 > 10_000, "the flood was a flood: {}", flooded.2);
    // On this 2-core machine the two senders and the forwarder share the
    // cores: what is asserted is that forwarding goes on at a good share,
    // not the share itself. The share is bimodal with the scheduler: on
    // the Intel host of 2026-12-06, 0.3-0.9 of the lone rate in most
    // runs, 0.19-0.23 in about one run of three (the same with the code
    // of a day before, tests one at a time), so a fifth failed there; a
    // starved forwarder would forward next to nothing.
    assert!(
        flooded.1 * 8 >= alone.1,
        "forwarding fell from {} to {} under the flood",
        alone.1,
        flooded.1
    );
    assert!(established(&sock_f), "{}", birdc(&sock_f, "show protocols"));

    // Withdrawn: the routes go, and the packets get network unreachable.
    birdc(&sock_b, "disable announce4");
    birdc(&sock_b, "disable announce6");
    let gone = mirrored(&cfg, Duration::from_secs(20), |k| {
        k["installed"].as_u64() == Some(0)
    });
    eprintln!("withdrawn from the FIB after {gone:?}");
    assert!(gone.is_some(), "{}", stats(&cfg)["kernel_routes"]);
    assert!(unreachable(&a, "203.0.113.5", second).is_some());
    assert!(unreachable(&a, "2001:db8:100:5::5", second).is_some());
}

/// A full table's load, measured (not run by CI; `cargo test --release
/// -p forwarder --test kernel -- --ignored --nocapture`): 100,000 IPv6
/// routes by `ip -batch` while a stream is forwarded; how long until the
/// FIB holds them all, how the mirror batched them, and the longest gap
/// in the stream meanwhile (a worker that stalled would show it).
#[test]
#[ignore]
fn full_table_load() {
    if !root_or_skip("kernel") {
        return;
    }
    let n: usize = std::env::var("ROUTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    // MIRROR=0: the same load with the forwarder not following it (its
    // route from the configuration), to tell the mirror's cost from the
    // kernel's own.
    let mirror = std::env::var("MIRROR").map_or(true, |v| v != "0");
    let lab = Lab::start(
        'l',
        if mirror {
            "[routes]\nsource = \"kernel\"\n"
        } else {
            "route = [{ prefix = \"203.0.113.0/28\", via = \"198.51.100.2\" }]\n"
        },
        "kernel_interface = \"k1\"",
        &["route add 203.0.113.0/28 via 198.51.100.2 dev k1 onlink"],
    );
    let (a, f, b, cfg, dir) = lab.names();
    assert!(reaches(&a, &b, "203.0.113.5", Duration::from_secs(2)).is_some());
    let batch: String = (0..n)
        .map(|i| {
            format!(
                "route add 2001:db8:{:x}:{:x}::/64 via 2001:db8:2::2 dev k1 onlink\n",
                0x1000 + i / 65536,
                i % 65536
            )
        })
        .collect();
    let file = dir.join("batch");
    std::fs::write(&file, batch).unwrap();
    // The stream: a datagram every 100 µs; the receiver notes the
    // longest gap between arrivals.
    let port = NEXT_PORT.fetch_add(1, Relaxed);
    let dst = SocketAddr::new("203.0.113.5".parse().unwrap(), port);
    let stop = Arc::new(AtomicBool::new(false));
    let loading = Arc::new(AtomicBool::new(false));
    let (s2, l2) = (stop.clone(), loading.clone());
    let rx = in_netns(&b, move || {
        let s = UdpSocket::bind(dst).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut last: Option<Instant> = None;
        // The longest gap before the load and during it.
        let (mut gaps, mut got) = ([Duration::ZERO; 2], 0u64);
        let mut buf = [0u8; 64];
        while !s2.load(Relaxed) {
            if s.recv(&mut buf).is_ok() {
                let now = Instant::now();
                if let Some(l) = last {
                    let g = &mut gaps[l2.load(Relaxed) as usize];
                    *g = (*g).max(now - l);
                }
                last = Some(now);
                got += 1;
            }
        }
        (got, gaps)
    });
    let s3 = stop.clone();
    let tx = in_netns(&a, move || {
        let s = UdpSocket::bind("0.0.0.0:0").unwrap();
        let mut sent = 0u64;
        while !s3.load(Relaxed) {
            let _ = s.send_to(b"stream", dst);
            sent += 1;
            std::thread::sleep(Duration::from_micros(100));
        }
        sent
    });
    std::thread::sleep(Duration::from_secs(2));
    let before = stats(&cfg)["kernel_routes"]["installed"]
        .as_u64()
        .unwrap_or(0);
    loading.store(true, Relaxed);
    let start = Instant::now();
    run(&["ip", "-n", &f, "-6", "-batch", file.to_str().unwrap()]).unwrap();
    let ip_done = start.elapsed();
    let took = mirrored(&cfg, Duration::from_secs(120), |k| {
        !mirror || k["installed"].as_u64() >= Some(before + n as u64)
    });
    let total = start.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Relaxed);
    let sent = tx.join().unwrap();
    let (got, gaps) = rx.join().unwrap();
    let st = stats(&cfg);
    eprintln!("drops: {}; ports: {}", st["total"]["drops"], st["ports"]);
    let k = st["kernel_routes"].clone();
    eprintln!(
        "{n} routes: ip -batch took {ip_done:?}; the FIB held them all {total:?} after it began ({took:?} after ip returned); \
         batches {}, longest batch {} µs, table re-read {} time(s); stream: {got} of {sent} datagrams arrived, longest gap {:?} during the load ({:?} in the 2 s before)",
        k["batches"], k["max_batch_us"], k["resyncs"], gaps[1], gaps[0]
    );
    assert!(took.is_some(), "{k}");
}
