//! The forwarder as a router on real networks: two hosts in network
//! namespaces, configured as ordinary hosts (an address, a default route
//! via the forwarder's address, no static neighbour entries), joined by
//! veth pairs to the forwarder's namespace, where the `forwarder` binary
//! runs with addresses on its ports.
//!
//! Asserted, IPv4 and IPv6: the hosts reach the forwarder's addresses
//! (echo) and each other through it, UDP and a TCP transfer of a few MB
//! both ways; a packet whose TTL runs out comes back as time exceeded
//! from the forwarder's address, quoting the packet; no route gives
//! destination unreachable; a `reject` set gives a TCP reset and port
//! unreachable; a packet over the egress MTU gives packet too big /
//! fragmentation needed; a route via a gateway address is resolved; a
//! host whose MAC changes is reached again within seconds; an
//! unreachable gateway gives counted drops and ARP retries, not a hang;
//! `forwarder neighbours` and `forwarder stats` show it all.
//!
//! Over `af_packet` and `af_xdp`, and with the `dpdk` feature over DPDK's
//! `net_af_packet`. Needs root and `ip`; skipped without root unless
//! `FORWARDER_NETNS_TESTS=1`. Addresses from 192.0.2.0/24,
//! 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32 only; the
//! namespaces are removed afterwards.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const A_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0a, 0x01];
const F0_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0a, 0xfe];
const F1_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0b, 0xfe];
const B_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0b, 0x02];
const B_MAC2: [u8; 6] = [0x02, 0, 0, 0, 0x0b, 0x99];

fn ports(driver: Driver) -> String {
    let (d, opts0, opts1) = driver.port_options(2);
    format!(
        r#"[[port]]
name = "f0"
driver = "{d}"
mac = "{m0}"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[port.options]
{opts0}
[[port]]
name = "f1"
driver = "{d}"
mac = "{m1}"
address = ["198.51.100.1/24", "2001:db8:2::1/64"]
mtu = 1400
[port.options]
{opts1}
"#,
        m0 = mac(F0_MAC),
        m1 = mac(F1_MAC)
    )
}

fn config(dir: &std::path::Path, driver: Driver) -> std::path::PathBuf {
    let path = dir.join("router.toml");
    std::fs::write(
        &path,
        format!(
            r#"route = [
  {{ prefix = "203.0.113.0/25", via = "198.51.100.2" }},
  {{ prefix = "203.0.113.128/26", via = "198.51.100.99" }},
  {{ prefix = "2001:db8:3::/64", via = "2001:db8:2::2" }},
]
[forwarder]
cores = [0, 1]
{ports}[[set]]
name = "rejected"
type = "inet_service"
match = "th dport"
action = "reject"
elements = ["5555"]
[neighbour]
reachable_ms = 1500
delay_ms = 300
retrans_ms = 300
"#,
            ports = ports(driver),
        ),
    )
    .unwrap();
    path
}

/// FNV-1a of a byte stream, kept as it goes.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn add(&mut self, b: &[u8]) {
        for x in b {
            self.0 = (self.0 ^ *x as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn router_through(driver: Driver) {
    let variant = driver.letter();
    let Some(topo) = topology_or_skip(
        "router",
        &Shape {
            tag: "fwdr",
            variant,
            queues: 2,
            macs: [Some(A_MAC), Some(F0_MAC), Some(F1_MAC), Some(B_MAC)],
            full_checksums: driver.full_checksums(),
            announce: true,
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
    // Behind host b, reached through it as a gateway.
    topo.ip(2, "addr add 203.0.113.5/32 dev lo").unwrap();
    topo.ip(2, "-6 addr add 2001:db8:3::5/128 dev lo").unwrap();
    let dir = std::env::temp_dir().join(format!("fwd-router-{}-{variant}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = config(&dir, driver);
    let (child, _lines) = start_forwarder(topo.ns(1), &cfg, None);
    let _child = Running(child);
    let (a, b) = (topo.ns(0).to_string(), topo.ns(2).to_string());

    // Both hosts reach the forwarder's addresses, and each other, in
    // both families: every neighbour resolved on demand.
    for (ns, dsts) in [
        (
            &a,
            vec![
                "192.0.2.1",
                "2001:db8:1::1",
                "198.51.100.2",
                "2001:db8:2::2",
                "203.0.113.5",
                "2001:db8:3::5",
            ],
        ),
        (
            &b,
            vec![
                "198.51.100.1",
                "2001:db8:2::1",
                "192.0.2.2",
                "2001:db8:1::2",
                "192.0.2.1",
            ],
        ),
    ] {
        for d in dsts {
            let took = in_netns(ns, move || ping(d, Duration::from_secs(5)))
                .join()
                .unwrap();
            assert!(took.is_some(), "no echo reply from {d} (from {ns})");
        }
    }

    // UDP both ways, and a TCP transfer of 4 MB echoed back, per family.
    for (listen, local) in [
        ("198.51.100.2:7000", "192.0.2.2:0"),
        ("[2001:db8:2::2]:7000", "[2001:db8:1::2]:0"),
    ] {
        let (ready_tx, ready_rx) = mpsc::channel();
        let server = in_netns(&b, move || {
            let u = UdpSocket::bind(listen).unwrap();
            let l = TcpListener::bind(listen).unwrap();
            ready_tx.send(()).unwrap();
            let mut buf = [0u8; 100];
            u.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let (n, from) = u.recv_from(&mut buf).unwrap();
            u.send_to(&buf[..n], from).unwrap();
            let (mut c, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 65536];
            loop {
                let n = c.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                c.write_all(&buf[..n]).unwrap();
            }
        });
        ready_rx.recv().unwrap();
        let client = in_netns(&a, move || {
            let u = UdpSocket::bind(local).unwrap();
            u.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            u.send_to(b"over udp", listen).unwrap();
            let mut buf = [0u8; 100];
            let n = u.recv(&mut buf).expect("the UDP answer");
            assert_eq!(&buf[..n], b"over udp");
            let c = TcpStream::connect_timeout(&listen.parse().unwrap(), Duration::from_secs(5))
                .unwrap();
            c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut w = c.try_clone().unwrap();
            let sender = std::thread::spawn(move || {
                let mut h = Fnv::new();
                let mut rng = Rng(0x1234_5678);
                for _ in 0..64 {
                    let mut chunk = vec![0u8; 65536];
                    rng.fill(&mut chunk);
                    h.add(&chunk);
                    w.write_all(&chunk).unwrap();
                }
                w.shutdown(std::net::Shutdown::Write).unwrap();
                h.0
            });
            let mut r = c;
            let mut h = Fnv::new();
            let mut buf = vec![0u8; 65536];
            let mut total = 0;
            loop {
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                h.add(&buf[..n]);
                total += n;
            }
            assert_eq!(total, 4 << 20, "every byte back");
            assert_eq!(h.0, sender.join().unwrap(), "the same bytes back");
        });
        client.join().expect("UDP and TCP through the forwarder");
        server.join().unwrap();
    }

    // TTL / hop limit 1: time exceeded from the forwarder's address,
    // quoting the packet's header.
    for (local, dst, v6, src) in [
        ("192.0.2.2:0", "198.51.100.2:33434", false, "192.0.2.1"),
        (
            "[2001:db8:1::2]:0",
            "[2001:db8:2::2]:33434",
            true,
            "2001:db8:1::1",
        ),
    ] {
        let e = in_netns(&a, move || {
            icmp_error_for(v6, &[11, 3], || udp_with_hops(local, dst, 1, 20))
        })
        .join()
        .unwrap();
        let (ty, code, from, m) =
            e.unwrap_or_else(|| panic!("no time exceeded for {dst}: {}", json(&["stats"], &cfg)));
        assert_eq!((ty, code), (if v6 { 3 } else { 11 }, 0), "{dst}");
        assert_eq!(from, src.parse::<IpAddr>().unwrap(), "{dst}");
        let d: SocketAddr = dst.parse().unwrap();
        if v6 {
            // The quoted IPv6 header's destination and the UDP port.
            assert_eq!(
                &m[8 + 24..8 + 40],
                &match d.ip() {
                    IpAddr::V6(x) => x.octets(),
                    _ => unreachable!(),
                }
            );
            assert_eq!(&m[8 + 40 + 2..8 + 40 + 4], &33434u16.to_be_bytes());
        } else {
            assert_eq!(
                &m[8 + 16..8 + 20],
                &match d.ip() {
                    IpAddr::V4(x) => x.octets(),
                    _ => unreachable!(),
                }
            );
            assert_eq!(m[8 + 9], 17, "quoted protocol");
            assert_eq!(&m[8 + 20 + 2..8 + 20 + 4], &33434u16.to_be_bytes());
        }
    }

    // No route: destination unreachable from the forwarder.
    for (local, dst, v6, want) in [
        ("192.0.2.2:0", "203.0.113.200:9", false, (3, 0)),
        ("[2001:db8:1::2]:0", "[2001:db8:99::1]:9", true, (1, 0)),
    ] {
        let e = in_netns(&a, move || {
            icmp_error_for(v6, &[3, 1], || udp_with_hops(local, dst, 64, 20))
        })
        .join()
        .unwrap();
        let (ty, code, ..) = e.unwrap_or_else(|| panic!("no unreachable for {dst}"));
        assert_eq!((ty, code), want, "{dst}");
    }

    // Over the egress port's MTU (1400): packet too big with the MTU;
    // for IPv4 with DF, fragmentation needed.
    for (local, dst, v6, want) in [
        ("192.0.2.2:0", "198.51.100.2:9", false, (3, 4)),
        ("[2001:db8:1::2]:0", "[2001:db8:2::2]:9", true, (2, 0)),
    ] {
        let e = in_netns(&a, move || {
            icmp_error_for(v6, &[3, 2], || udp_with_hops(local, dst, 64, 1420))
        })
        .join()
        .unwrap();
        let (ty, code, _, m) = e.unwrap_or_else(|| panic!("no packet too big for {dst}"));
        assert_eq!((ty, code), want, "{dst}");
        let mtu = if v6 {
            u32::from_be_bytes(m[4..8].try_into().unwrap())
        } else {
            u16::from_be_bytes([m[6], m[7]]) as u32
        };
        assert_eq!(mtu, 1400, "{dst}");
    }

    // `reject`: a reset for TCP, port unreachable for UDP.
    {
        in_netns(&a, move || {
            for dst in ["198.51.100.2:5555", "[2001:db8:2::2]:5555"] {
                let r = TcpStream::connect_timeout(&dst.parse().unwrap(), Duration::from_secs(3));
                assert_eq!(
                    r.map(|_| ()).map_err(|e| e.kind()),
                    Err(std::io::ErrorKind::ConnectionRefused),
                    "{dst}"
                );
                let local = if dst.starts_with('[') {
                    "[2001:db8:1::2]:0"
                } else {
                    "192.0.2.2:0"
                };
                let u = UdpSocket::bind(local).unwrap();
                u.connect(dst).unwrap();
                u.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
                u.send(b"rejected").unwrap();
                let mut buf = [0u8; 16];
                assert_eq!(
                    u.recv(&mut buf).map_err(|e| e.kind()),
                    Err(std::io::ErrorKind::ConnectionRefused),
                    "{dst}"
                );
            }
        })
        .join()
        .unwrap();
    }

    // The neighbours, as `forwarder neighbours` lists them.
    let n = json(&["neighbours"], &cfg);
    let list = n["neighbours"].as_array().unwrap().clone();
    let find = |addr: &str| list.iter().find(|e| e["address"] == addr).cloned();
    let host_a = find("192.0.2.2").expect("host a's neighbour entry");
    assert_eq!(host_a["mac"], mac(A_MAC));
    assert_eq!(host_a["port"], "f0");
    assert!(find("2001:db8:2::2").is_some(), "{n}");

    // Host b takes a new MAC: traffic to it resumes within seconds.
    ipn(&b, &format!("link set b0 address {}", mac(B_MAC2))).unwrap();
    for d in ["198.51.100.2", "2001:db8:2::2"] {
        let took = in_netns(&a, move || ping(d, Duration::from_secs(8)))
            .join()
            .unwrap();
        assert!(took.is_some(), "{d} not reached after its MAC changed");
    }
    // And the table says so (the router thread lists it every 10 ms;
    // a reply to an earlier probe may come in after the announcement,
    // through another worker, and be corrected by the next probe).
    let start = Instant::now();
    loop {
        let n = json(&["neighbours"], &cfg);
        let b_now = n["neighbours"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["address"] == "198.51.100.2")
            .cloned();
        if b_now.is_some_and(|b| b["mac"] == mac(B_MAC2)) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "{n}");
        std::thread::sleep(Duration::from_millis(100));
    }

    // An echo flood at the router: rate-limited and counted; forwarding
    // and the router's answers go on.
    let before = json(&["stats"], &cfg);
    in_netns(&a, || {
        let fd = icmp_socket(false);
        let mut m = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1];
        m.extend([0u8; 56]);
        let c = sum(&m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        for _ in 0..3000 {
            send_to(&fd, "192.0.2.1".parse().unwrap(), &m);
        }
    })
    .join()
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let after = json(&["stats"], &cfg);
    let limited = |v: &serde_json::Value| v["router"]["icmp_rate_limited"].as_u64().unwrap();
    assert!(limited(&after) > limited(&before), "{after}");
    for d in ["198.51.100.2", "192.0.2.1"] {
        let took = in_netns(&a, move || ping(d, Duration::from_secs(3)))
            .join()
            .unwrap();
        assert!(took.is_some(), "{d} after the flood");
    }

    // A gateway nobody answers for: counted drops and retried ARP, and
    // the forwarder serves on.
    let before = json(&["stats"], &cfg);
    in_netns(&a, || {
        for _ in 0..20 {
            udp_with_hops("192.0.2.2:0", "203.0.113.130:9", 64, 20);
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .join()
    .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let after = json(&["stats"], &cfg);
    let r = |v: &serde_json::Value, k: &str| v["router"][k].as_u64().unwrap();
    assert!(
        r(&after, "arp_requests_out") >= r(&before, "arp_requests_out") + 3,
        "{after}"
    );
    assert!(
        r(&after, "resolutions_failed") > r(&before, "resolutions_failed"),
        "{after}"
    );
    let dropped = |v: &serde_json::Value| {
        v["total"]["drops"]["unresolved"].as_u64().unwrap() + r(v, "unresolved_dropped")
    };
    assert!(dropped(&after) > dropped(&before), "{after}");
    assert!(
        r(&after, "icmp_echo_reply") > 0 && r(&after, "icmp_time_exceeded") > 0,
        "{after}"
    );
    let took = in_netns(&a, || ping("192.0.2.1", Duration::from_secs(3)))
        .join()
        .unwrap();
    assert!(took.is_some(), "the forwarder still answers");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn routes_between_ordinary_hosts_over_af_packet() {
    router_through(Driver::AfPacket);
}

#[test]
fn routes_between_ordinary_hosts_over_af_xdp() {
    router_through(Driver::AfXdp);
}

#[cfg(feature = "dpdk")]
#[test]
fn routes_between_ordinary_hosts_over_dpdk() {
    router_through(Driver::Dpdk);
}
