//! VLAN sub-interfaces on real interfaces: hosts a and b on VLANs 100
//! and 200 of one trunk, host c on an untagged port, all ordinary hosts
//! (an address, a default route, no static neighbours). This kernel has
//! no VLAN devices, so a and b sit behind a user-space 802.1Q switch
//! (`common::switch`) whose trunk is the forwarder's port `f0`.
//!
//! Linux proves the checks first: a second such switch in the router's
//! namespace turns the trunk into one interface per VLAN, where Linux
//! routes. Then the forwarder takes its place, with `trunk.100` and
//! `trunk.200` as sub-interfaces of `f0` (`parent`, `vlan`), and the
//! same checks pass: the hosts ping each other and their gateway's
//! addresses and exchange UDP and TCP through it, both families; every
//! frame the forwarder sends on the trunk carries the tag of the VLAN it
//! is for (the switch counts any it could not place); a tag no
//! sub-interface has is dropped and counted; the sub-interfaces count
//! their frames.
//!
//! Over `af_packet` and `af_xdp`, and with the `dpdk` feature over
//! DPDK's `net_af_packet` (whose mbufs are told where a frame starts
//! once a tag is pushed or popped). Needs root and `ip`; skipped without
//! root unless `FORWARDER_NETNS_TESTS=1`. Addresses from 192.0.2.0/24,
//! 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32 only; the
//! namespaces are removed afterwards.

mod common;

use common::switch::Switch;
use common::*;
use std::net::{IpAddr, UdpSocket};
use std::time::Duration;

const F0_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x44, 0xfe];
const F1_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x45, 0xfe];

/// A host: namespace letter, interface, addresses and gateways.
struct Host {
    ns: usize,
    dev: &'static str,
    mac: [u8; 6],
    v4: &'static str,
    v6: &'static str,
    gw4: &'static str,
    gw6: &'static str,
}

const HOSTS: [Host; 3] = [
    Host {
        ns: 0,
        dev: "a0",
        mac: [0x02, 0, 0, 0, 0x44, 0x0a],
        v4: "192.0.2.2",
        v6: "2001:db8:1::2",
        gw4: "192.0.2.1",
        gw6: "2001:db8:1::1",
    },
    Host {
        ns: 1,
        dev: "b0",
        mac: [0x02, 0, 0, 0, 0x44, 0x0b],
        v4: "198.51.100.2",
        v6: "2001:db8:2::2",
        gw4: "198.51.100.1",
        gw6: "2001:db8:2::1",
    },
    Host {
        ns: 2,
        dev: "c0",
        mac: [0x02, 0, 0, 0, 0x45, 0x0c],
        v4: "203.0.113.2",
        v6: "2001:db8:3::2",
        gw4: "203.0.113.1",
        gw6: "2001:db8:3::1",
    },
];

/// Namespaces a, b, c (hosts), s (the hosts' switch) and f (the
/// router): a0-sa, b0-sb, st-f0 (the trunk) and c0-f1. Removed when
/// dropped.
type Net = Namespaces;

fn build(driver: Driver) -> Result<Net, String> {
    let tag = format!("vl{}{}", std::process::id(), driver.letter());
    let net = Namespaces::create(&tag, &["a", "b", "c", "s", "f"])?;
    let (s, f) = (net.ns(3), net.ns(4));
    for (a, ans, b, bns) in [
        ("a0", net.ns(0), "sa", s),
        ("b0", net.ns(1), "sb", s),
        ("st", s, "f0", f),
        ("c0", net.ns(2), "f1", f),
    ] {
        run(&[
            "ip", "link", "add", a, "netns", ans, "type", "veth", "peer", "name", b, "netns", bns,
        ])?;
    }
    // No IPv6 of their own where the kernel must stay quiet: the
    // switch's interfaces and the router's trunk.
    sysctl(s, "net.ipv6.conf.all.disable_ipv6=1")?;
    sysctl(s, "net.ipv6.conf.default.disable_ipv6=1")?;
    sysctl(f, "net.ipv6.conf.f0.disable_ipv6=1")?;
    for (ns, dev) in [(s, "sa"), (s, "sb"), (s, "st"), (f, "f0"), (f, "f1")] {
        offloads_off(ns, dev, false)?;
        ipn(ns, &format!("link set {dev} up"))?;
    }
    ipn(f, &format!("link set f0 address {}", mac(F0_MAC)))?;
    ipn(f, &format!("link set f1 address {}", mac(F1_MAC)))?;
    ipn(f, "link set lo up")?;
    for h in &HOSTS {
        let ns = net.ns(h.ns);
        // Full checksums: a frame through the switch's sockets leaves
        // as it came, with nothing left to a NIC.
        offloads_off(ns, h.dev, true)?;
        ipn(ns, &format!("link set {} address {}", h.dev, mac(h.mac)))?;
        ipn(ns, &format!("addr add {}/24 dev {}", h.v4, h.dev))?;
        ipn(ns, &format!("-6 addr add {}/64 dev {} nodad", h.v6, h.dev))?;
        ipn(ns, &format!("link set {} up", h.dev))?;
        ipn(ns, "link set lo up")?;
        ipn(ns, &format!("route add default via {}", h.gw4))?;
        ipn(ns, &format!("-6 route add default via {}", h.gw6))?;
    }
    Ok(net)
}

/// A UDP datagram and a TCP stream of 256 KiB from `from` to `to`'s
/// address in family `v6`, each echoed back whole.
fn exchange(net: &Net, from: &Host, to: &Host, v6: bool) {
    let dst: IpAddr = if v6 { to.v6 } else { to.v4 }.parse().unwrap();
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let server = in_netns(net.ns(to.ns), move || {
        let u = UdpSocket::bind((dst, 0)).unwrap();
        u.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        port_tx.send(u.local_addr().unwrap().port()).unwrap();
        let mut buf = [0u8; 2048];
        let (n, peer) = u.recv_from(&mut buf).expect("a datagram");
        u.send_to(&buf[..n], peer).unwrap();
    });
    let port = port_rx.recv().unwrap();
    let what = format!("{} -> {dst}", from.dev);
    let w = what.clone();
    in_netns(net.ns(from.ns), move || {
        let local: IpAddr = if dst.is_ipv6() { "::" } else { "0.0.0.0" }
            .parse()
            .unwrap();
        let u = UdpSocket::bind((local, 0)).unwrap();
        u.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = [0u8; 64];
        let mut echoed = false;
        for _ in 0..10 {
            u.send_to(b"over a vlan", (dst, port)).unwrap();
            if let Ok(n) = u.recv(&mut buf) {
                echoed = &buf[..n] == b"over a vlan";
                break;
            }
        }
        assert!(echoed, "{w}: UDP echoed");
    })
    .join()
    .expect("the datagram");
    server.join().expect("the datagram's server");
    tcp_echo(net.ns(from.ns), net.ns(to.ns), dst, what);
}

/// Every host pings its gateway's addresses and every other host, and
/// exchanges UDP and TCP with every other host, both families.
fn all_reach(net: &Net, who: &str) {
    for h in &HOSTS {
        for dst in [h.gw4, h.gw6] {
            let ok = in_netns(net.ns(h.ns), move || ping(dst, Duration::from_secs(5)))
                .join()
                .unwrap();
            assert!(ok.is_some(), "{who}: {} pings its gateway {dst}", h.dev);
        }
    }
    for (i, j) in [(0, 1), (0, 2), (1, 2)] {
        let (a, b) = (&HOSTS[i], &HOSTS[j]);
        for dst in [b.v4, b.v6] {
            let ok = in_netns(net.ns(a.ns), move || ping(dst, Duration::from_secs(5)))
                .join()
                .unwrap();
            assert!(ok.is_some(), "{who}: {} pings {dst}", a.dev);
        }
        for v6 in [false, true] {
            exchange(net, a, b, v6);
            exchange(net, b, a, v6);
        }
    }
}

/// The router's side for Linux: one interface per VLAN behind a switch
/// on the trunk, with the gateways' addresses, and forwarding on.
fn linux_router(net: &Net) -> Result<Switch, String> {
    let f = net.ns(4);
    for (x, l, v4, v6) in [
        ("x100", "l100", "192.0.2.1/24", "2001:db8:1::1/64"),
        ("x200", "l200", "198.51.100.1/24", "2001:db8:2::1/64"),
    ] {
        ipn(f, &format!("link add {x} type veth peer name {l}"))?;
        sysctl(f, &format!("net.ipv6.conf.{x}.disable_ipv6=1"))?;
        offloads_off(f, x, false)?;
        offloads_off(f, l, true)?;
        ipn(f, &format!("link set {l} address {}", mac(F0_MAC)))?;
        ipn(f, &format!("addr add {v4} dev {l}"))?;
        ipn(f, &format!("-6 addr add {v6} dev {l} nodad"))?;
        ipn(f, &format!("link set {x} up"))?;
        ipn(f, &format!("link set {l} up"))?;
    }
    ipn(f, "addr add 203.0.113.1/24 dev f1")?;
    ipn(f, "-6 addr add 2001:db8:3::1/64 dev f1 nodad")?;
    sysctl(f, "net.ipv4.ip_forward=1")?;
    sysctl(f, "net.ipv6.conf.all.forwarding=1")?;
    Ok(Switch::start(f, "f0", &[("x100", 100), ("x200", 200)]))
}

/// Linux's router taken away: its VLAN interfaces, addresses and
/// forwarding, and its kernel off the forwarder's ports.
fn linux_router_gone(net: &Net) -> Result<(), String> {
    let f = net.ns(4);
    ipn(f, "link del x100")?;
    ipn(f, "link del x200")?;
    ipn(f, "addr flush dev f1")?;
    sysctl(f, "net.ipv6.conf.f1.disable_ipv6=1")?;
    sysctl(f, "net.ipv4.ip_forward=0")?;
    sysctl(f, "net.ipv6.conf.all.forwarding=0")
}

fn config(dir: &std::path::Path, driver: Driver) -> std::path::PathBuf {
    let path = dir.join("vlan.toml");
    std::fs::write(
        &path,
        format!(
            r#"[forwarder]
cores = [0]
{ports}[[port]]
name = "trunk.100"
parent = "trunk"
vlan = 100
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[[port]]
name = "trunk.200"
parent = "trunk"
vlan = 200
address = ["198.51.100.1/24", "2001:db8:2::1/64"]
"#,
            ports = trunk_and_lan(driver, F0_MAC, F1_MAC)
        ),
    )
    .unwrap();
    path
}

/// A UDP frame for the forwarder's MAC tagged with VLAN `vid`.
fn tagged_frame(vid: u16) -> Vec<u8> {
    let mut f = forwarder::wire::build::ipv4(
        0xc000_0202,
        0xc633_6402,
        64,
        forwarder::wire::build::L4::Udp(9, 9),
        10,
    );
    f[..6].copy_from_slice(&F0_MAC);
    f.splice(12..12, [0x81, 0, (vid >> 8) as u8, vid as u8]);
    f
}

fn through(driver: Driver) {
    let net = build(driver).expect("namespaces");
    let hosts_switch = Switch::start(net.ns(3), "st", &[("sa", 100), ("sb", 200)]);

    // Linux first.
    {
        let _router = linux_router(&net).expect("Linux's router");
        all_reach(&net, "Linux");
        let c = hosts_switch.carried();
        assert!(
            c.down.get(&100) > Some(&0) && c.down.get(&200) > Some(&0),
            "{c:?}"
        );
        assert_eq!(c.stray, 0, "Linux's frames all tagged for a VLAN: {c:?}");
    }
    linux_router_gone(&net).expect("Linux's router away");

    // Then the forwarder.
    let dir = std::env::temp_dir().join(format!(
        "fwd-vlan-{}-{}",
        std::process::id(),
        driver.letter()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = config(&dir, driver);
    let (child, _out) = start_forwarder(net.ns(4), &cfg, None);
    let _child = Running(child);
    let before = hosts_switch.carried();
    all_reach(&net, &format!("the forwarder over {driver:?}"));
    let c = hosts_switch.carried();
    for v in [100, 200] {
        assert!(
            c.down.get(&v).copied().unwrap_or(0) > before.down.get(&v).copied().unwrap_or(0),
            "frames for VLAN {v} came tagged: {c:?}"
        );
    }
    assert_eq!(
        c.stray, 0,
        "every frame the forwarder sent on the trunk has a VLAN's tag: {c:?}"
    );

    // A tag no sub-interface has: dropped, counted.
    let s = net.ns(3).to_string();
    in_netns(&s, || {
        let fd = packet_socket("st");
        for _ in 0..5 {
            send_frame(&fd, &tagged_frame(300));
        }
    })
    .join()
    .unwrap();
    let mut st = stats(&cfg);
    for _ in 0..50 {
        if st["total"]["drops"]["unknown_vlan"].as_u64() >= Some(5) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        st = stats(&cfg);
    }
    assert!(
        st["total"]["drops"]["unknown_vlan"].as_u64() >= Some(5),
        "unknown tags counted: {st}"
    );
    // A capture takes frames off a port's queues: a sub-interface's
    // name is refused with its parent's.
    let o = forwarder()
        .args(["capture", "--config"])
        .arg(&cfg)
        .args(["--port", "trunk.100", "-c", "1", "-w", "/dev/null"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && said.contains("VLAN sub-interface") && said.contains("name `trunk`"),
        "{said}"
    );
    // The sub-interfaces count their own frames.
    for name in ["trunk.100", "trunk.200"] {
        let p = &st["ports"][name];
        assert!(
            p["rx"].as_u64() > Some(0) && p["tx"].as_u64() > Some(0),
            "{name}: {p}"
        );
    }
}

#[test]
fn hosts_on_vlans_reach_each_other_over_af_packet() {
    if root_or_skip("hosts_on_vlans_reach_each_other_over_af_packet") {
        through(Driver::AfPacket);
    }
}

#[test]
fn hosts_on_vlans_reach_each_other_over_af_xdp() {
    if root_or_skip("hosts_on_vlans_reach_each_other_over_af_xdp") {
        through(Driver::AfXdp);
    }
}

#[cfg(feature = "dpdk")]
#[test]
fn hosts_on_vlans_reach_each_other_over_dpdk() {
    if root_or_skip("hosts_on_vlans_reach_each_other_over_dpdk") {
        through(Driver::Dpdk);
    }
}
