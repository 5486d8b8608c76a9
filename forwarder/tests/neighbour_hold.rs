//! No loss while a neighbour resolves: host a sends one flow of 3,000
//! datagrams, paced at about 100,000 a second, to host b, which the
//! router has never heard of; every one arrives, in order. Linux as the
//! router proves it first (its `unres_qlen_bytes` hold), then the
//! forwarder takes its place, with addresses on its ports and no static
//! neighbours, IPv4 and IPv6. For the forwarder, b's kernel answers no
//! request (nft drops them) and the test answers in its place once the
//! forwarder says it holds a frame: frames are held whatever the
//! machine's timing (when b's kernel answered, in 41 µs, the slow path
//! sometimes met the answer before its first frame, and held none).
//!
//! Needs root, `ip` and `nft`; skipped without root unless
//! `FORWARDER_NETNS_TESTS=1`. Addresses from 192.0.2.0/24,
//! 198.51.100.0/24 and 2001:db8::/32 only; the namespaces are removed
//! afterwards. One worker, so that the hosts' threads have the other
//! core.

mod common;

use common::*;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

const A_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0c, 0x01];
const F0_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0c, 0xfe];
const F1_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0d, 0xfe];
const B_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0d, 0x02];

/// Datagrams in the flow.
const FLOW: u32 = 3000;

/// Whether `f` is a request for a MAC: an ARP request or a neighbour
/// solicitation.
fn is_request(f: &[u8]) -> bool {
    let arp_request = f.len() >= 22 && f[12..14] == [8, 6] && f[20..22] == [0, 1];
    let solicitation = f.len() >= 55 && f[12..14] == [0x86, 0xdd] && f[20] == 58 && f[54] == 135;
    arp_request || solicitation
}

/// Drops what b's kernel would answer: ARP requests and neighbour
/// solicitations (the packet sockets still see them).
const DEAF: &str = "table arp deaf {
    chain input { type filter hook input priority 0; arp operation request drop; }
}
table ip6 deaf {
    chain input { type filter hook input priority 0; icmpv6 type nd-neighbor-solicit drop; }
}
";

/// b's answer to the request `f`: an ARP reply or a solicited neighbour
/// advertisement with b's MAC, to the asker.
fn answer(f: &[u8]) -> Option<Vec<u8>> {
    let asker = f.get(6..12)?;
    let mut out = Vec::with_capacity(86);
    out.extend_from_slice(asker);
    out.extend_from_slice(&B_MAC);
    if f.get(12..14) == Some(&[8, 6][..]) {
        out.extend_from_slice(&[8, 6, 0, 1, 8, 0, 6, 4, 0, 2]);
        out.extend_from_slice(&B_MAC);
        out.extend_from_slice(f.get(38..42)?); // b's address, asked for
        out.extend_from_slice(f.get(22..32)?); // the asker's MAC and address
        out.resize(60, 0);
        return Some(out);
    }
    let (src, target) = (f.get(22..38)?, f.get(62..78)?);
    let mut icmp = vec![136, 0, 0, 0, 0x60, 0, 0, 0];
    icmp.extend_from_slice(target);
    icmp.extend_from_slice(&[2, 1]);
    icmp.extend_from_slice(&B_MAC);
    let mut pseudo = [target, src].concat();
    pseudo.extend_from_slice(&[0, 0, 0, icmp.len() as u8, 0, 0, 0, 58]);
    pseudo.extend_from_slice(&icmp);
    icmp[2..4].copy_from_slice(&sum(&pseudo).to_be_bytes());
    out.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, icmp.len() as u8, 58, 255]);
    out.extend_from_slice(target);
    out.extend_from_slice(src);
    out.extend_from_slice(&icmp);
    Some(out)
}

/// The frames the forwarder run with `cfg` has held so far, asked on its
/// control socket (not by running the binary: that takes tens of
/// milliseconds on the core the flow's threads and the slow path share).
fn held(cfg: &std::path::Path) -> u64 {
    let line =
        forwarder::control::server::request(&config::control_socket(cfg), "stats").expect("stats");
    let v: serde_json::Value = serde_json::from_str(&line).expect("stats");
    v["router"]["held"].as_u64().expect("held")
}

/// Answers the first request `fd` (opened before it came) receives, once
/// the forwarder run with `cfg` has held more than `before` frames (a
/// look every millisecond).
fn answer_late(fd: &std::os::fd::OwnedFd, cfg: &std::path::Path, before: u64) {
    let mut buf = [0u8; 2048];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(3) {
        let Some((n, outgoing, _)) = recv_msg(fd, &mut buf, 0) else {
            continue;
        };
        if outgoing || !is_request(&buf[..n]) {
            continue;
        }
        let asked = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(1));
            if held(cfg) > before {
                break;
            }
            assert!(
                asked.elapsed() < Duration::from_secs(2),
                "the forwarder held nothing for 2 s after asking for b"
            );
        }
        send_frame(fd, &answer(&buf[..n]).expect("a whole request"));
        return;
    }
}

/// Whether `f` is a datagram of the flow (UDP to `port`, either family).
fn is_flow(f: &[u8], port: u16) -> bool {
    let at = match f.get(12..14) {
        Some([8, 0]) if f.get(23) == Some(&17) => 14 + 20,
        Some([0x86, 0xdd]) if f.get(20) == Some(&17) => 14 + 40,
        _ => return false,
    };
    f.get(at + 2..at + 4) == Some(&port.to_be_bytes()[..])
}

/// One flow from a to b (`dst` port `port`), paced at one datagram every
/// 10 µs on average, b's kernel answering the router's request or (with
/// `late`, the forwarder's config) the test once the forwarder holds a
/// frame: the sequence numbers b received, in their order, the
/// rate a sent at, and how long after the first datagram reached the
/// router's port (f0) the router's request for b's MAC reached b's (both
/// the kernel's receive times: no test thread's wake-up in them).
fn flow(
    topo: &Topology,
    src: &'static str,
    dst: &'static str,
    port: u16,
    late: Option<&std::path::Path>,
) -> (Vec<u32>, f64, Option<Duration>) {
    let (seen_tx, seen_rx) = std::sync::mpsc::channel();
    let limit = Duration::from_secs(3);
    let seen = seen_tx.clone();
    let late = late.map(|cfg| (cfg.to_path_buf(), held(cfg)));
    let watcher = in_netns(topo.ns(2), move || {
        // Open before the watcher says it is ready: the request waits in
        // it.
        let answerer = late.map(|late| (packet_socket("b0"), late));
        let t = first_arrival("b0", seen, limit, is_request);
        if let Some((fd, (cfg, before))) = answerer {
            answer_late(&fd, &cfg, before);
        }
        t
    });
    let missed = in_netns(topo.ns(1), move || {
        first_arrival("f0", seen_tx, limit, move |f| is_flow(f, port))
    });
    seen_rx.recv().unwrap();
    seen_rx.recv().unwrap();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let receiver = in_netns(topo.ns(2), move || {
        let u = UdpSocket::bind(format!("{dst}:{port}")).unwrap();
        u.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        // Room for the whole flow: a receiver that the busy worker keeps
        // off the CPU for a moment loses nothing either.
        let size: libc::c_int = 8 << 20;
        // SAFETY: setting an int socket option on a socket we own, from
        // a live value of the size given.
        let r = unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(&u),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "SO_RCVBUFFORCE: {}", std::io::Error::last_os_error());
        ready_tx.send(()).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while let Ok(n) = u.recv(&mut buf) {
            if n >= 4 {
                got.push(u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]));
            }
            if got.len() == FLOW as usize {
                break;
            }
        }
        got
    });
    ready_rx.recv().unwrap();
    let sender = in_netns(topo.ns(0), move || {
        // On the core the worker leaves free, and only there: a veth
        // queues what it is given on the sending core, and a sender that
        // moved to the worker's core (where the kernel's softirq waits
        // behind a polling thread) would reorder its own flow.
        assert!(core_affinity::set_for_current(core_affinity::CoreId {
            id: 1
        }));
        let u = UdpSocket::bind(src).unwrap();
        u.connect(format!("{dst}:{port}")).unwrap();
        let start = Instant::now();
        for i in 0..FLOW {
            let mut m = [0u8; 18];
            m[..4].copy_from_slice(&i.to_be_bytes());
            // A full socket buffer is the sender's loss, not the
            // router's: tried again.
            while u.send(&m).is_err() {}
            // Asleep when ahead (a few datagrams back to back after
            // each nap): a spinning sender would keep the slow path's
            // thread off the core the worker leaves free.
            let due = Duration::from_micros(10 * (u64::from(i) + 1));
            if let Some(ahead) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(ahead);
            }
        }
        f64::from(FLOW) / start.elapsed().as_secs_f64()
    });
    let rate = sender.join().unwrap();
    let asked = watcher.join().unwrap();
    let first = missed.join().unwrap();
    let after = asked.zip(first).and_then(|(a, f)| a.duration_since(f).ok());
    (receiver.join().unwrap(), rate, after)
}

/// What a flow's receiver got, judged: all of it, in order. How soon
/// the request went is said, not judged (a time on a shared machine).
fn judged(who: &str, family: &str, (got, rate, asked): (Vec<u32>, f64, Option<Duration>)) {
    let got = &got[..];
    eprintln!(
        "{who}, {family}: the request reached b {asked:?} after the first datagram reached the router"
    );
    let inversions = got.windows(2).filter(|w| w[1] < w[0]).count();
    if let Some(i) = got.windows(2).position(|w| w[1] < w[0]) {
        eprintln!(
            "{who}, {family}: first out of order at {i}: {:?}",
            &got[i.saturating_sub(5)..(i + 6).min(got.len())]
        );
    }
    eprintln!(
        "{who}, {family}: {} of {FLOW} received at {:.0} a second, {inversions} out of order",
        got.len(),
        rate
    );
    // Which ones are missing says where they were lost: the first few
    // (held while resolving), a run in the middle (a ring or a queue that
    // overflowed while a thread was off the CPU) or the end.
    let mut seen = vec![false; FLOW as usize];
    for &i in got {
        if let Some(s) = seen.get_mut(i as usize) {
            *s = true;
        }
    }
    let mut missing = Vec::new();
    let mut i = 0;
    while i < seen.len() {
        if seen[i] {
            i += 1;
            continue;
        }
        let from = i;
        while i < seen.len() && !seen[i] {
            i += 1;
        }
        missing.push(from..i);
    }
    if !missing.is_empty() {
        eprintln!("{who}, {family}: missing {missing:?}");
    }
    assert_eq!(
        got.len(),
        FLOW as usize,
        "{who}, {family}: lost {}",
        FLOW as usize - got.len()
    );
    assert_eq!(inversions, 0, "{who}, {family}: out of order");
}

#[test]
fn a_resolving_neighbour_loses_nothing() {
    let Some(topo) = topology_or_skip(
        "neighbour_hold",
        &Shape {
            tag: "fwdn",
            variant: 'p',
            queues: 2,
            macs: [Some(A_MAC), Some(F0_MAC), Some(F1_MAC), Some(B_MAC)],
            full_checksums: Driver::AfPacket.full_checksums(),
            announce: false,
            hosts: [
                ("192.0.2.2/24", "2001:db8:1::2/64"),
                ("198.51.100.2/24", "2001:db8:2::2/64"),
            ],
            gateways: [
                Some(("192.0.2.1", "2001:db8:1::1")),
                Some(("198.51.100.1", "2001:db8:2::1")),
            ],
        },
    ) else {
        return;
    };
    if run(&["nft", "--version"]).is_err() {
        assert!(!wanted(), "neighbour_hold: nft is missing");
        eprintln!("neighbour_hold: skipped (no nft)");
        return;
    }
    // Host a knows its router: only the router's resolution of b is
    // under test.
    for gw in ["192.0.2.1", "2001:db8:1::1"] {
        topo.ip(
            0,
            &format!(
                "neigh replace {gw} lladdr {} dev a0 nud permanent",
                mac(F0_MAC)
            ),
        )
        .unwrap();
    }
    let flows = [
        ("IPv4", "192.0.2.2:0", "198.51.100.2", 7100),
        ("IPv6", "[2001:db8:1::2]:0", "[2001:db8:2::2]", 7200),
    ];

    // Linux as the router first.
    let f = topo.ns(1);
    for (dev, v4, v6) in [
        ("f0", "192.0.2.1/24", "2001:db8:1::1/64"),
        ("f1", "198.51.100.1/24", "2001:db8:2::1/64"),
    ] {
        // No duplicate address detection: a tentative link-local address
        // would keep Linux from soliciting for a second.
        sysctl(f, &format!("net.ipv6.conf.{dev}.accept_dad=0")).unwrap();
        sysctl(f, &format!("net.ipv6.conf.{dev}.disable_ipv6=0")).unwrap();
        topo.ip(1, &format!("addr add {v4} dev {dev}")).unwrap();
        topo.ip(1, &format!("-6 addr add {v6} dev {dev} nodad"))
            .unwrap();
    }
    sysctl(f, "net.ipv4.ip_forward=1").unwrap();
    sysctl(f, "net.ipv6.conf.all.forwarding=1").unwrap();
    for (family, src, dst, port) in flows {
        judged("Linux", family, flow(&topo, src, dst, port, None));
    }
    // ... then out of the way: no addresses, no forwarding, and b
    // forgets it (the forwarder answers with the same MACs).
    sysctl(f, "net.ipv4.ip_forward=0").unwrap();
    sysctl(f, "net.ipv6.conf.all.forwarding=0").unwrap();
    for dev in ["f0", "f1"] {
        topo.ip(1, &format!("addr flush dev {dev}")).unwrap();
        sysctl(f, &format!("net.ipv6.conf.{dev}.disable_ipv6=1")).unwrap();
    }
    topo.ip(2, "neigh flush dev b0").unwrap();
    // b's kernel deaf to requests: the test answers them, late.
    let dir = std::env::temp_dir().join(format!("fwd-hold-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let deaf = dir.join("deaf.nft");
    std::fs::write(&deaf, DEAF).unwrap();
    run(&[
        "ip",
        "netns",
        "exec",
        topo.ns(2),
        "nft",
        "-f",
        deaf.to_str().unwrap(),
    ])
    .unwrap();
    let cfg = dir.join("hold.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"[forwarder]
cores = [0]
[[port]]
name = "f0"
driver = "af_packet"
mac = "{m0}"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[port.options]
ring_frames = 4096
[[port]]
name = "f1"
driver = "af_packet"
mac = "{m1}"
address = ["198.51.100.1/24", "2001:db8:2::1/64"]
"#,
            m0 = mac(F0_MAC),
            m1 = mac(F1_MAC)
        ),
    )
    .unwrap();
    let (child, _lines) = start_forwarder(topo.ns(1), &cfg, None);
    let _child = Running(child);
    let got: Vec<_> = flows
        .iter()
        .map(|&(family, src, dst, port)| (family, flow(&topo, src, dst, port, Some(&cfg))))
        .collect();
    // The counters before any judgement, so that a loss comes with them.
    let all = stats(&cfg);
    let router = &all["router"];
    eprintln!("the forwarder's slow path: {router}");
    eprintln!("the forwarder's ports: {}", all["ports"]);
    for (family, flow) in got {
        judged("the forwarder", family, flow);
    }
    assert_eq!(router["unresolved_dropped"], 0, "{router}");
    assert!(router["held"].as_u64() > Some(0), "{router}");
    std::fs::remove_dir_all(dir).ok();
}
