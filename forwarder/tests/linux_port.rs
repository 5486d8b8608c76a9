//! The `af_packet` and `af_xdp` ports (and with the `dpdk` feature DPDK's
//! `net_af_packet`) on real interfaces: three network namespaces, a
//! sender and a receiver each joined by a veth pair (two queues) to the
//! forwarder's namespace, and the `forwarder` binary (two workers: the
//! `af_packet` sockets share a fanout group, the `af_xdp` sockets take a
//! queue each) routing between them.
//!
//! - Frames built here and sent from a packet socket arrive with TTL /
//!   hop limit one lower, the routed MACs and valid checksums; those the
//!   rules drop, those whose TTL expires, unroutable ones and ones for
//!   another station do not arrive.
//! - The kernels' own UDP and TCP (IPv4 and IPv6) get through both ways:
//!   their checksums were left to the NIC (veth), the port finishes them,
//!   and the receiving kernel checks them.
//!
//! Needs root, `ip` and `ethtool`. Without root the test says so and
//! passes, unless `FORWARDER_NETNS_TESTS=1` (as `.ci/run` sets) makes
//! that a failure. Addresses: 192.0.2.0/24, 198.51.100.0/24,
//! 203.0.113.0/24, 2001:db8::/32. The namespaces (and with them the veth
//! pairs) are removed afterwards, also when the test fails.

mod common;

use common::*;
use forwarder::wire::{self, build, build::L4};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

const S_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x01];
const F0_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0xfe];
const F1_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x02, 0xfe];
const R_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x02, 0x02];
const S4: u32 = 0xc000_0201; // 192.0.2.1
const R4: u32 = 0xc633_6402; // 198.51.100.2
const S6: u128 = 0x2001_0db8_0001 << 80 | 1; // 2001:db8:1::1
const R6: u128 = 0x2001_0db8_0002 << 80 | 2; // 2001:db8:2::2

/// The test frames: (tag in the source port, should arrive, frame).
fn frames() -> Vec<(u16, bool, Vec<u8>)> {
    let mut v = Vec::new();
    let mut add = |case: u16, arrives: bool, make: &dyn Fn(u16) -> Vec<u8>| {
        for j in 0..10 {
            let tag = 30000 + case * 100 + j;
            let mut f = make(tag);
            if f[0..6] == [2, 0, 0, 0, 0, 1] {
                f[0..6].copy_from_slice(&F0_MAC);
            }
            f[6..12].copy_from_slice(&S_MAC);
            v.push((tag, arrives, f));
        }
    };
    add(0, true, &|t| build::ipv4(S4, R4, 17, L4::Udp(t, 7000), 30));
    add(1, true, &|t| build::ipv4(S4, R4, 64, L4::Tcp(t, 7000), 100));
    add(2, true, &|t| build::ipv6(S6, R6, 9, L4::Udp(t, 7000), 30));
    add(3, true, &|t| {
        build::ipv6(S6, R6, 255, L4::Tcp(t, 7000), 1000)
    });
    // Dropped by the rule sets.
    add(4, false, &|t| build::ipv4(S4, R4, 64, L4::Udp(t, 9999), 30));
    add(5, false, &|t| build::ipv6(S6, R6, 64, L4::Tcp(t, 9999), 30));
    // TTL / hop limit expiring here.
    add(6, false, &|t| build::ipv4(S4, R4, 1, L4::Udp(t, 7000), 30));
    add(7, false, &|t| build::ipv6(S6, R6, 1, L4::Udp(t, 7000), 30));
    // No route.
    add(8, false, &|t| {
        build::ipv4(S4, 0xcb00_7109, 64, L4::Udp(t, 7000), 30)
    });
    // For another station.
    add(9, false, &|t| {
        let mut f = build::ipv4(S4, R4, 64, L4::Udp(t, 7000), 30);
        f[0..6].copy_from_slice(&[2, 0, 0, 0, 0x0a, 0x0a]);
        f
    });
    v
}

/// The ports: `af_packet` or `af_xdp` on f0 and f1, or DPDK's
/// `net_af_packet` on them (two queue pairs each, one per worker).
fn ports(driver: Driver) -> String {
    if driver == Driver::AfPacket {
        return format!(
            r#"[[port]]
name = "f0"
driver = "af_packet"
mac = "{}"
[port.options]
ring_frames = 1024
[[port]]
name = "f1"
driver = "af_packet"
mac = "{}"
"#,
            mac(F0_MAC),
            mac(F1_MAC)
        );
    }
    if driver == Driver::AfXdp {
        return format!(
            r#"[[port]]
name = "f0"
driver = "af_xdp"
mac = "{}"
[port.options]
frames = 2048
[[port]]
name = "f1"
driver = "af_xdp"
mac = "{}"
"#,
            mac(F0_MAC),
            mac(F1_MAC)
        );
    }
    format!(
        r#"[[port]]
name = "f0"
driver = "dpdk"
mac = "{}"
[port.options]
device = "net_af_packet0"
eal = ["--no-huge", "-m", "512", "--no-pci", "--vdev", "net_af_packet0,iface=f0,qpairs=2", "--vdev", "net_af_packet1,iface=f1,qpairs=2"]
mbufs = 4096
[[port]]
name = "f1"
driver = "dpdk"
mac = "{}"
[port.options]
device = "net_af_packet1"
mbufs = 4096
"#,
        mac(F0_MAC),
        mac(F1_MAC)
    )
}

fn config(dir: &std::path::Path, extra4: &str, driver: Driver, tail: &str) -> std::path::PathBuf {
    let path = dir.join("linux.toml");
    std::fs::write(
        &path,
        format!(
            r#"
route = [
  {{ prefix = "192.0.2.0/24", via = "s" }},
  {{ prefix = "198.51.100.0/24", via = "r" }},
  {{ prefix = "2001:db8:1::/64", via = "s" }},
  {{ prefix = "2001:db8:2::/64", via = "r" }},
]
[forwarder]
cores = [0, 1]
burst = 32
{ports}[[set]]
name = "deny4"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["198.51.100.2 . 9999"{extra4}]
[[set]]
name = "deny6"
type = "ipv6_addr . inet_service"
match = "ip6 daddr . th dport"
action = "drop"
elements = ["2001:db8:2::2 . 9999"]
[[next_hop]]
name = "s"
port = "f0"
mac = "{s}"
[[next_hop]]
name = "r"
port = "f1"
mac = "{r}"
{tail}"#,
            ports = ports(driver),
            s = mac(S_MAC),
            r = mac(R_MAC)
        ),
    )
    .unwrap();
    path
}

#[test]
fn forwards_real_packets_between_namespaces() {
    through_namespaces(Driver::AfPacket);
}

/// The same through AF_XDP sockets.
#[test]
fn af_xdp_forwards_real_packets_between_namespaces() {
    through_namespaces(Driver::AfXdp);
}

/// The same through DPDK: `net_af_packet` devices on the veths.
#[cfg(feature = "dpdk")]
#[test]
fn dpdk_forwards_real_packets_between_namespaces() {
    through_namespaces(Driver::Dpdk);
}

#[cfg(not(feature = "dpdk"))]
#[test]
#[ignore = "needs `--features dpdk` and Debian's DPDK (dpdk, libdpdk-dev, pkg-config, libclang-dev)"]
fn dpdk_forwards_real_packets_between_namespaces() {}

/// The af_packet test again with the forwarder as an unprivileged user
/// given only CAP_NET_RAW (what the README and `dist/forwarder.service`
/// say af_packet ports need).
#[test]
fn af_packet_runs_without_root_with_cap_net_raw() {
    through_namespaces_as(Driver::AfPacket, true);
}

/// One transmit call of a full burst on an AF_XDP port in copy mode gets
/// every frame out, with no later call: a copy-mode send takes at most 32
/// descriptors (the kernel's `TX_BATCH_SIZE`), so the port must kick until
/// its ring is taken. One kick left frames 33-64 on the ring until more
/// traffic came.
#[test]
fn af_xdp_sends_a_whole_burst_in_one_call() {
    use forwarder::port::{Burst, MAX_BURST};
    let Some(topo) = topology('b', true) else {
        return;
    };
    const MARK: &[u8] = b"whole-burst";
    let (ready_tx, ready_rx) = mpsc::channel();
    let receiver = in_netns(topo.ns(2), move || {
        let cap = packet_socket("b0");
        ready_tx.send(()).unwrap();
        capture(&cap, Duration::from_secs(2), Duration::from_secs(20))
    });
    ready_rx.recv().unwrap();
    let text = ports(Driver::AfXdp);
    let sent = in_netns(topo.ns(1), move || {
        let cfg = config::parse("burst.toml", &text, std::path::Path::new(".")).unwrap();
        let mut port = forwarder::port::open(&cfg, 1, 0).unwrap();
        let mut burst = Burst::new();
        for k in 0..MAX_BURST {
            // To b0, an experimental EtherType, a marker and the index.
            let mut f = Vec::with_capacity(64);
            f.extend_from_slice(&R_MAC);
            f.extend_from_slice(&F1_MAC);
            f.extend_from_slice(&[0x88, 0xb5]);
            f.extend_from_slice(MARK);
            f.push(k as u8);
            f.resize(64, 0);
            assert!(burst.push(&f));
        }
        let which: Vec<u8> = (0..MAX_BURST as u8).collect();
        let sent = port.tx_burst(&mut burst, &which);
        // The port stays open, untouched, while the receiver listens.
        std::thread::sleep(Duration::from_secs(3));
        drop(port);
        sent
    })
    .join()
    .unwrap();
    let frames = receiver.join().unwrap();
    let mut seen: Vec<u8> = frames
        .iter()
        .filter(|f| f.len() > 26 && &f[14..14 + MARK.len()] == MARK)
        .map(|f| f[14 + MARK.len()])
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(sent, MAX_BURST);
    assert_eq!(seen.len(), MAX_BURST, "frames that arrived: {seen:?}");
}

/// The namespaces of `variant`, or None when this machine cannot make
/// them (the skip rule of [`topology_or_skip`]): host s (`a0`,
/// 192.0.2.1) and host r (`b0`, 198.51.100.2) route each other's network
/// through the forwarder by static neighbours (its ports have no
/// addresses).
fn topology(variant: char, full_checksums: bool) -> Option<Topology> {
    let t = topology_or_skip(
        "linux_port",
        &Shape {
            tag: "fwdt",
            variant,
            queues: 2,
            macs: [Some(S_MAC), Some(F0_MAC), Some(F1_MAC), Some(R_MAC)],
            full_checksums,
            announce: false,
            hosts: [
                ("192.0.2.1/24", "2001:db8:1::1/64"),
                ("198.51.100.2/24", "2001:db8:2::2/64"),
            ],
            gateways: [None, None],
        },
    )?;
    let routes = || -> Result<(), String> {
        for (i, dev, net4, gw4, net6, gw6, m) in [
            (
                0,
                "a0",
                "198.51.100.0/24",
                "192.0.2.254",
                "2001:db8:2::/64",
                "2001:db8:1::fe",
                F0_MAC,
            ),
            (
                2,
                "b0",
                "192.0.2.0/24",
                "198.51.100.254",
                "2001:db8:1::/64",
                "2001:db8:2::fe",
                F1_MAC,
            ),
        ] {
            t.ip(i, &format!("route add {net4} via {gw4}"))?;
            t.ip(i, &format!("-6 route add {net6} via {gw6}"))?;
            t.ip(
                i,
                &format!("neigh add {gw4} lladdr {} dev {dev} nud permanent", mac(m)),
            )?;
            t.ip(
                i,
                &format!(
                    "-6 neigh add {gw6} lladdr {} dev {dev} nud permanent",
                    mac(m)
                ),
            )?;
        }
        Ok(())
    };
    if let Err(e) = routes() {
        assert!(!wanted(), "cannot route between the namespaces: {e}");
        eprintln!("linux_port: skipped ({e})");
        return None;
    }
    Some(t)
}

fn through_namespaces(driver: Driver) {
    through_namespaces_as(driver, false);
}

fn through_namespaces_as(driver: Driver, unprivileged: bool) {
    let full_checksums = driver.full_checksums();
    let variant = if unprivileged { 'u' } else { driver.letter() };
    let Some(topo) = topology(variant, full_checksums) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("fwd-linux-{}-{variant}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Unprivileged: the binary and the files where that user may read
    // them, and the control socket in a directory of its own (the
    // clients below, as root, find it through the configuration).
    let (tail, bin) = if unprivileged {
        use std::os::unix::fs::PermissionsExt;
        let sock = dir.join("sock");
        std::fs::create_dir_all(&sock).unwrap();
        std::os::unix::fs::chown(&sock, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = dir.join("forwarder");
        std::fs::copy(env!("CARGO_BIN_EXE_forwarder"), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        (
            format!(
                "[control]\nsocket = \"{}\"\n",
                sock.join("control.sock").display()
            ),
            Some(bin),
        )
    } else {
        (String::new(), None)
    };
    let cfg = config(&dir, "", driver, &tail);
    let (child, lines) = start_forwarder(topo.ns(1), &cfg, bin.as_deref());
    let mut child = Running(child);

    // The receiver: a capture of everything arriving on b0, and the
    // kernel's UDP sockets.
    let (ready_tx, ready_rx) = mpsc::channel();
    let receiver = in_netns(topo.ns(2), move || {
        let cap = packet_socket("b0");
        let udp: Vec<UdpSocket> = [
            "198.51.100.2:5000",
            "[2001:db8:2::2]:5000",
            "198.51.100.2:9999",
        ]
        .iter()
        .map(|a| {
            let s = UdpSocket::bind(a).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            s
        })
        .collect();
        ready_tx.send(()).unwrap();
        let frames = capture(&cap, Duration::from_secs(3), Duration::from_secs(60));
        let mut got = [0usize; 3];
        let mut buf = [0u8; 2048];
        for (k, s) in udp.iter().enumerate() {
            while let Ok(n) = s.recv(&mut buf) {
                assert_eq!(&buf[..n], format!("datagram via {k}").as_bytes());
                got[k] += 1;
            }
        }
        (frames, got)
    });
    ready_rx.recv().unwrap();

    // The sender: crafted frames, then the kernel's UDP.
    let sent = frames();
    let to_send: Vec<Vec<u8>> = sent.iter().map(|(_, _, f)| f.clone()).collect();
    in_netns(topo.ns(0), move || {
        let fd = packet_socket("a0");
        for f in &to_send {
            send_frame(&fd, f);
        }
        for (k, a) in [
            "198.51.100.2:5000",
            "[2001:db8:2::2]:5000",
            "198.51.100.2:9999",
        ]
        .iter()
        .enumerate()
        {
            let local = if k == 1 {
                "[2001:db8:1::1]:0"
            } else {
                "192.0.2.1:0"
            };
            let s = UdpSocket::bind(local).unwrap();
            for _ in 0..50 {
                s.send_to(
                    format!("datagram via {k}").as_bytes(),
                    a.parse::<SocketAddr>().unwrap(),
                )
                .unwrap();
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    })
    .join()
    .unwrap();
    let (frames, udp) = receiver.join().unwrap();

    // TCP both ways, IPv4 and IPv6: 300 kB echoed back.
    for (listen, local) in [
        ("198.51.100.2:6000", "192.0.2.1"),
        ("[2001:db8:2::2]:6000", "2001:db8:1::1"),
    ] {
        let (ready_tx, ready_rx) = mpsc::channel();
        let server = in_netns(topo.ns(2), move || {
            let l = TcpListener::bind(listen).unwrap();
            ready_tx.send(()).unwrap();
            let (mut c, peer) = l.accept().unwrap();
            assert_eq!(peer.ip().to_string(), local);
            let mut data = Vec::new();
            c.read_to_end(&mut data).unwrap();
            c.write_all(&data).unwrap();
            data.len()
        });
        ready_rx.recv().unwrap();
        let echoed = in_netns(topo.ns(0), move || {
            let addr: SocketAddr = listen.parse().unwrap();
            let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
                .unwrap_or_else(|e| panic!("TCP connect to {listen} through the forwarder: {e}"));
            c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
            c.write_all(&data).unwrap();
            c.shutdown(std::net::Shutdown::Write).unwrap();
            let mut back = Vec::new();
            c.read_to_end(&mut back).unwrap();
            back == data
        })
        .join()
        .unwrap();
        assert!(echoed, "TCP via {listen}: the echo differs");
        assert_eq!(server.join().unwrap(), 300_000);
    }

    // Reloads while traffic flows: 2,000 datagrams paced over about a
    // second, ten reloads meanwhile (the rule set changes each time, the
    // flow's verdict does not): every datagram arrives.
    let udp_count = |ns: &str, port: u16, quiet: Duration| {
        let (ready_tx, ready_rx) = mpsc::channel();
        let h = in_netns(ns, move || {
            let s = UdpSocket::bind(("198.51.100.2", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            ready_tx.send(()).unwrap();
            let mut n = 0;
            let mut last = Instant::now();
            let mut buf = [0u8; 64];
            while last.elapsed() < quiet {
                if s.recv(&mut buf).is_ok() {
                    n += 1;
                    last = Instant::now();
                }
            }
            n
        });
        ready_rx.recv().unwrap();
        h
    };
    let send = |ns: &str, port: u16, count: usize| {
        in_netns(ns, move || {
            let s = UdpSocket::bind("192.0.2.1:0").unwrap();
            for _ in 0..count {
                s.send_to(b"through the swap", ("198.51.100.2", port))
                    .unwrap();
                std::thread::sleep(Duration::from_micros(500));
            }
        })
    };
    let counting = udp_count(topo.ns(2), 5001, Duration::from_secs(3));
    let sending = send(topo.ns(0), 5001, 2000);
    let reload = |extra: &str| {
        config(&dir, extra, driver, &tail);
        let o = Command::new(env!("CARGO_BIN_EXE_forwarder"))
            .args(["reload", "--config"])
            .arg(&cfg)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "reload: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    for k in 0..10 {
        std::thread::sleep(Duration::from_millis(80));
        reload(&format!(", \"198.51.100.2 . {}\"", 20000 + k));
    }
    sending.join().unwrap();
    assert_eq!(
        counting.join().unwrap(),
        2000,
        "datagrams lost across reloads"
    );
    // A reload that blocks the flow: nothing of it arrives once every
    // worker has loaded the new snapshot (a worker descheduled inside a
    // turn still judges that turn's bursts by the snapshot it loaded).
    reload(", \"198.51.100.2 . 5001\"");
    let start = Instant::now();
    loop {
        let o = Command::new(env!("CARGO_BIN_EXE_forwarder"))
            .args(["stats", "--config"])
            .arg(&cfg)
            .output()
            .unwrap();
        let v = String::from_utf8_lossy(&o.stdout).into_owned();
        let gen = v
            .split("\"generation\":")
            .last()
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .unwrap_or("")
            .to_string();
        let loaded: Vec<&str> = v
            .split("\"loaded_generation\":")
            .skip(1)
            .map(|s| s.split(|c: char| !c.is_ascii_digit()).next().unwrap_or(""))
            .collect();
        if !gen.is_empty() && loaded.len() == 2 && loaded.iter().all(|l| *l == gen) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "workers did not load the reload: {v}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let counting = udp_count(topo.ns(2), 5001, Duration::from_secs(2));
    send(topo.ns(0), 5001, 50).join().unwrap();
    assert_eq!(
        counting.join().unwrap(),
        0,
        "the reloaded rule does not drop"
    );

    // The sender's end of f0's veth down and up again: the forwarder logs
    // f0's link going down (a warning) and coming back (it reads the
    // state once a second; a loaded machine may take longer).
    let linux_port = driver != Driver::Dpdk;
    let mut out = Vec::new();
    if linux_port {
        for (state, want) in [
            ("down", "warn: port `f0` (f0): link up -> "),
            ("up", " -> up"),
        ] {
            run(&["ip", "-n", topo.ns(0), "link", "set", "a0", state]).unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let l = lines
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    .unwrap_or_else(|_| {
                        panic!("no `{want}` in the log within 20 s:\n{}", out.join("\n"))
                    });
                let hit = l.contains("port `f0` (f0): link") && l.contains(want);
                out.push(l);
                if hit {
                    break;
                }
            }
        }
        assert!(
            out.iter()
                .any(|l| l.contains("info: port `f0` (f0): link ") && l.ends_with(" -> up")),
            "the link's return is not logged as info:\n{}",
            out.join("\n")
        );
    }

    // Stop the forwarder as Ctrl-C would, and read its summary (all it
    // wrote: the readers end when its pipes close).
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    let status = child.0.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Ok(l) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        out.push(l);
    }
    let out = out.join("\n");
    assert!(status.success(), "forwarder exited with {status}:\n{out}");
    // Each port queue's bytes against its frames (the summary's
    // `port f0: rx N ... bytes rx B tx T`): between a minimal and a full
    // Ethernet frame each.
    let mut queues = 0;
    for l in out
        .lines()
        .filter(|l| l.contains("    port f") && l.contains(", bytes rx "))
    {
        let n = |after: &str| -> u64 {
            let w = l
                .split(after)
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap();
            w.trim_end_matches(',').replace(',', "").parse().unwrap()
        };
        let (rx, bytes) = (n(": rx "), n(", bytes rx "));
        assert!(bytes >= 42 * rx && bytes <= 1514 * rx, "{l}");
        queues += usize::from(rx > 0);
    }
    assert!(queues > 0, "no port summary with frames received:\n{out}");

    // The crafted frames: each one that should arrive did, once, rewritten.
    for (tag, arrives, f) in &sent {
        let sp = wire::parse(f).unwrap();
        let seen: Vec<&Vec<u8>> = frames
            .iter()
            .filter(|g| wire::parse(g).is_ok_and(|p| p.sport == *tag && p.l4_ok && p.src == sp.src))
            .collect();
        if !arrives {
            assert!(
                seen.is_empty(),
                "frame {tag} should have been dropped\n{out}"
            );
            continue;
        }
        assert_eq!(
            seen.len(),
            1,
            "frame {tag} arrived {} times\n{out}",
            seen.len()
        );
        let g = seen[0];
        let p = wire::parse(g).unwrap();
        assert_eq!(g[0..6], R_MAC, "frame {tag}: destination MAC");
        assert_eq!(g[6..12], F1_MAC, "frame {tag}: source MAC");
        assert_eq!(p.ttl, sp.ttl - 1, "frame {tag}: TTL");
        assert_eq!((p.dst, p.dport, p.proto), (sp.dst, sp.dport, sp.proto));
        if p.l3 == wire::L3::V4 {
            assert_eq!(
                wire::checksum(&g[14..34]),
                0,
                "frame {tag}: IPv4 header checksum"
            );
        }
        assert_eq!(
            wire::l4_checksum_ok(g),
            Some(true),
            "frame {tag}: transport checksum"
        );
        assert_eq!(g.len(), f.len(), "frame {tag}: length");
        assert_eq!(
            g[12..],
            f[12..]
                .iter()
                .enumerate()
                .map(|(i, &b)| {
                    // Only the TTL / hop limit (and IPv4's header checksum) change.
                    let at = i + 12;
                    if at == 14 + 8 || at == 14 + 10 || at == 14 + 11 {
                        if p.l3 == wire::L3::V4 {
                            g[at]
                        } else {
                            b
                        }
                    } else if at == 14 + 7 && p.l3 == wire::L3::V6 {
                        g[at]
                    } else {
                        b
                    }
                })
                .collect::<Vec<u8>>()[..],
            "frame {tag}: payload"
        );
    }
    assert_eq!(
        udp,
        [50, 50, 0],
        "kernel UDP datagrams received (v4, v6, blocked)\n{out}"
    );
    assert!(out.contains("drops:") && out.contains("rule"), "{out}");
    eprintln!(
        "{} frames captured on b0; the forwarder said:\n{out}",
        frames.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
    drop(topo);
}
