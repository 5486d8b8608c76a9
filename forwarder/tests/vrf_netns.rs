//! VRFs on real interfaces: two tenants, red and blue, whose hosts use
//! the same addresses, each on two VLANs of one trunk (red: ra on VLAN
//! 100 and rb on 300; blue: ba on 200 and bb on 400; ra and ba are
//! 192.0.2.2 and 2001:db8:1::2, rb and bb 198.51.100.2 and
//! 2001:db8:2::2), and host c on an untagged port. This kernel has no
//! VLAN devices: the tenants' hosts sit behind the user-space switch
//! (`common::switch`) whose trunk is the forwarder's port `f0`.
//!
//! Linux proves the checks first, as routers would be set up without
//! VRF devices: one router namespace per tenant behind a second switch
//! that turns the trunk into an interface per VLAN, c's link in red's.
//! Then the forwarder takes their place with VRFs `red` and `blue`, the
//! sub-interfaces in them, and red's route to c leaked into the default
//! VRF's port (with the default VRF's way back to ra). The same checks
//! pass: every host pings its gateway; a tenant's hosts reach each other
//! (UDP, and TCP both ways) in both families, and the host that answers
//! is the tenant's own (each host says its name); ra and c reach each
//! other, ba does not reach c. Over `af_packet`. Needs root and `ip`;
//! skipped without root unless `FORWARDER_NETNS_TESTS=1`. Addresses from
//! 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32 only;
//! the namespaces are removed afterwards.

mod common;

use common::switch::Switch;
use common::*;
use std::net::{IpAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

const F0_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x46, 0xfe];
const F1_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x47, 0xfe];

/// The UDP port every host says its name on.
const WHO: u16 = 7007;

/// A host: its name (its namespace's last letters), the switch port and
/// VLAN it is on (none: c, on the forwarder's f1), its addresses and
/// gateways.
struct Host {
    name: &'static str,
    vlan: u16,
    v4: &'static str,
    v6: &'static str,
    gw4: &'static str,
    gw6: &'static str,
}

const HOSTS: [Host; 5] = [
    Host {
        name: "ra",
        vlan: 100,
        v4: "192.0.2.2",
        v6: "2001:db8:1::2",
        gw4: "192.0.2.1",
        gw6: "2001:db8:1::1",
    },
    Host {
        name: "ba",
        vlan: 200,
        v4: "192.0.2.2",
        v6: "2001:db8:1::2",
        gw4: "192.0.2.1",
        gw6: "2001:db8:1::1",
    },
    Host {
        name: "rb",
        vlan: 300,
        v4: "198.51.100.2",
        v6: "2001:db8:2::2",
        gw4: "198.51.100.1",
        gw6: "2001:db8:2::1",
    },
    Host {
        name: "bb",
        vlan: 400,
        v4: "198.51.100.2",
        v6: "2001:db8:2::2",
        gw4: "198.51.100.1",
        gw6: "2001:db8:2::1",
    },
    Host {
        name: "c",
        vlan: 0,
        v4: "203.0.113.2",
        v6: "2001:db8:3::2",
        gw4: "203.0.113.1",
        gw6: "2001:db8:3::1",
    },
];

const RA: usize = 0;
const BA: usize = 1;
const RB: usize = 2;
const BB: usize = 3;
const C: usize = 4;

/// Namespaces: the five hosts, s (the hosts' switch), f (the router),
/// lr and lb (Linux's routers for red and blue). Removed when dropped.
type Net = Namespaces;

const S: usize = 5;
const F: usize = 6;
const LR: usize = 7;
const LB: usize = 8;

fn build() -> Result<Net, String> {
    let tag = format!("vr{}", std::process::id());
    let net = Namespaces::create(&tag, &["ra", "ba", "rb", "bb", "c", "s", "f", "lr", "lb"])?;
    let (s, f) = (net.ns(S), net.ns(F));
    let veth = |a: &str, ans: &str, b: &str, bns: &str| {
        run(&[
            "ip", "link", "add", a, "netns", ans, "type", "veth", "peer", "name", b, "netns", bns,
        ])
    };
    for (i, h) in HOSTS.iter().enumerate().take(4) {
        veth("h0", net.ns(i), &format!("s{}", h.vlan), s)?;
    }
    veth("h0", net.ns(C), "f1", f)?;
    veth("st", s, "f0", f)?;
    // No IPv6 of their own where the kernel must stay quiet: the
    // switch's interfaces and the router's trunk.
    sysctl(s, "net.ipv6.conf.all.disable_ipv6=1")?;
    sysctl(s, "net.ipv6.conf.default.disable_ipv6=1")?;
    sysctl(f, "net.ipv6.conf.f0.disable_ipv6=1")?;
    for dev in ["s100", "s200", "s300", "s400", "st"] {
        offloads_off(s, dev, false)?;
        ipn(s, &format!("link set {dev} up"))?;
    }
    for dev in ["f0", "f1"] {
        offloads_off(f, dev, false)?;
        ipn(f, &format!("link set {dev} up"))?;
    }
    ipn(f, &format!("link set f0 address {}", mac(F0_MAC)))?;
    ipn(f, &format!("link set f1 address {}", mac(F1_MAC)))?;
    ipn(f, "link set lo up")?;
    for (i, h) in HOSTS.iter().enumerate() {
        let ns = net.ns(i);
        // Full checksums: a frame through the switch's sockets leaves
        // as it came, with nothing left to a NIC.
        offloads_off(ns, "h0", true)?;
        ipn(ns, &format!("addr add {}/24 dev h0", h.v4))?;
        ipn(ns, &format!("-6 addr add {}/64 dev h0 nodad", h.v6))?;
        ipn(ns, "link set h0 up")?;
        ipn(ns, "link set lo up")?;
        ipn(ns, &format!("route add default via {}", h.gw4))?;
        ipn(ns, &format!("-6 route add default via {}", h.gw6))?;
    }
    Ok(net)
}

/// Every host says its name to whoever asks on [`WHO`], until dropped.
struct Responders {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Responders {
    fn start(net: &Net) -> Responders {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (i, h) in HOSTS.iter().enumerate() {
            let (stop, name) = (stop.clone(), h.name);
            let (tx, rx) = std::sync::mpsc::channel();
            threads.push(in_netns(net.ns(i), move || {
                // Both families: an IPv6 socket takes IPv4 as mapped
                // addresses.
                let u = UdpSocket::bind(("::", WHO)).unwrap();
                u.set_read_timeout(Some(Duration::from_millis(100)))
                    .unwrap();
                tx.send(()).unwrap();
                let mut buf = [0u8; 64];
                while !stop.load(Relaxed) {
                    if let Ok((_, peer)) = u.recv_from(&mut buf) {
                        let _ = u.send_to(name.as_bytes(), peer);
                    }
                }
            }));
            rx.recv().unwrap();
        }
        Responders { stop, threads }
    }
}

impl Drop for Responders {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Who answers at `dst` for host `from`, if anyone does.
fn who(net: &Net, from: usize, dst: &'static str) -> Option<String> {
    in_netns(net.ns(from), move || {
        let dst: IpAddr = dst.parse().unwrap();
        let local: IpAddr = if dst.is_ipv6() { "::" } else { "0.0.0.0" }
            .parse()
            .unwrap();
        let u = UdpSocket::bind((local, 0)).unwrap();
        u.set_read_timeout(Some(Duration::from_millis(400)))
            .unwrap();
        let mut buf = [0u8; 64];
        for _ in 0..8 {
            u.send_to(b"who?", (dst, WHO)).unwrap();
            if let Ok(n) = u.recv(&mut buf) {
                return Some(String::from_utf8_lossy(&buf[..n]).into_owned());
            }
        }
        None
    })
    .join()
    .unwrap()
}

/// A TCP stream of 256 KiB from `from` to `to`'s address in family
/// `v6`, echoed back whole.
fn tcp(net: &Net, from: usize, to: usize, v6: bool) {
    let dst: IpAddr = if v6 { HOSTS[to].v6 } else { HOSTS[to].v4 }
        .parse()
        .unwrap();
    let what = format!("{} -> {} ({dst})", HOSTS[from].name, HOSTS[to].name);
    tcp_echo(net.ns(from), net.ns(to), dst, what);
}

/// The checks, whoever routes.
fn checks(net: &Net, who_routes: &str) {
    for (i, h) in HOSTS.iter().enumerate() {
        for dst in [h.gw4, h.gw6] {
            let ok = in_netns(net.ns(i), move || ping(dst, Duration::from_secs(5)))
                .join()
                .unwrap();
            assert!(
                ok.is_some(),
                "{who_routes}: {} pings its gateway {dst}",
                h.name
            );
        }
    }
    // Each tenant's hosts answer each other, and only each other.
    for (from, to) in [(RA, RB), (RB, RA), (BA, BB), (BB, BA)] {
        for dst in [HOSTS[to].v4, HOSTS[to].v6] {
            assert_eq!(
                who(net, from, dst).as_deref(),
                Some(HOSTS[to].name),
                "{who_routes}: {} asks {dst}",
                HOSTS[from].name
            );
        }
    }
    for v6 in [false, true] {
        tcp(net, RA, RB, v6);
        tcp(net, BB, BA, v6);
    }
    // Red reaches c and c reaches red's ra (not blue's ba, at the same
    // address); blue has no way to c.
    for dst in [HOSTS[C].v4, HOSTS[C].v6] {
        assert_eq!(
            who(net, RA, dst).as_deref(),
            Some("c"),
            "{who_routes}: ra asks {dst}"
        );
        assert_eq!(who(net, BA, dst), None, "{who_routes}: ba asks {dst}");
    }
    for dst in [HOSTS[RA].v4, HOSTS[RA].v6] {
        assert_eq!(
            who(net, C, dst).as_deref(),
            Some("ra"),
            "{who_routes}: c asks {dst}"
        );
    }
}

/// Linux's routers: one namespace per tenant with its VLANs'
/// interfaces (behind a switch on the trunk in f), c's link in red's.
fn linux_routers(net: &Net) -> Result<Switch, String> {
    let f = net.ns(F);
    for (vlan, router, v4, v6) in [
        (100, LR, "192.0.2.1/24", "2001:db8:1::1/64"),
        (300, LR, "198.51.100.1/24", "2001:db8:2::1/64"),
        (200, LB, "192.0.2.1/24", "2001:db8:1::1/64"),
        (400, LB, "198.51.100.1/24", "2001:db8:2::1/64"),
    ] {
        let (x, l, r) = (format!("x{vlan}"), format!("l{vlan}"), net.ns(router));
        run(&[
            "ip", "link", "add", &x, "netns", f, "type", "veth", "peer", "name", &l, "netns", r,
        ])?;
        sysctl(f, &format!("net.ipv6.conf.{x}.disable_ipv6=1"))?;
        offloads_off(f, &x, false)?;
        offloads_off(r, &l, true)?;
        ipn(r, &format!("link set {l} address {}", mac(F0_MAC)))?;
        ipn(r, &format!("addr add {v4} dev {l}"))?;
        ipn(r, &format!("-6 addr add {v6} dev {l} nodad"))?;
        ipn(f, &format!("link set {x} up"))?;
        ipn(r, &format!("link set {l} up"))?;
    }
    ipn(f, &format!("link set f1 netns {}", net.ns(LR)))?;
    let lr = net.ns(LR);
    ipn(lr, "addr add 203.0.113.1/24 dev f1")?;
    ipn(lr, "-6 addr add 2001:db8:3::1/64 dev f1 nodad")?;
    ipn(lr, "link set f1 up")?;
    for r in [LR, LB] {
        sysctl(net.ns(r), "net.ipv4.ip_forward=1")?;
        sysctl(net.ns(r), "net.ipv6.conf.all.forwarding=1")?;
    }
    Ok(Switch::start(
        f,
        "f0",
        &[("x100", 100), ("x200", 200), ("x300", 300), ("x400", 400)],
    ))
}

/// Linux's routers taken away, c's link back in f without addresses.
fn linux_routers_gone(net: &Net) -> Result<(), String> {
    let f = net.ns(F);
    for x in ["x100", "x200", "x300", "x400"] {
        ipn(f, &format!("link del {x}"))?;
    }
    ipn(net.ns(LR), &format!("link set f1 netns {f}"))?;
    sysctl(f, "net.ipv6.conf.f1.disable_ipv6=1")?;
    offloads_off(f, "f1", false)?;
    ipn(f, "link set f1 up")
}

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("vrf.toml");
    let mut text = format!(
        r#"[forwarder]
cores = [0]

[[vrf]]
name = "red"

[[vrf]]
name = "blue"

{ports}"#,
        ports = trunk_and_lan(Driver::AfPacket, F0_MAC, F1_MAC)
    );
    for (vlan, vrf, v4, v6) in [
        (100, "red", "192.0.2.1/24", "2001:db8:1::1/64"),
        (200, "blue", "192.0.2.1/24", "2001:db8:1::1/64"),
        (300, "red", "198.51.100.1/24", "2001:db8:2::1/64"),
        (400, "blue", "198.51.100.1/24", "2001:db8:2::1/64"),
    ] {
        text.push_str(&format!(
            "\n[[port]]\nname = \"trunk.{vlan}\"\nparent = \"trunk\"\nvlan = {vlan}\n\
             vrf = \"{vrf}\"\naddress = [\"{v4}\", \"{v6}\"]\n"
        ));
    }
    // The leak both ways: red's route to c through the default VRF's
    // port, the default VRF's route back to ra through red's.
    text.push_str(
        r#"
[[next_hop]]
name = "c4"
port = "lan"
address = "203.0.113.2"

[[next_hop]]
name = "c6"
port = "lan"
address = "2001:db8:3::2"

[[next_hop]]
name = "ra4"
port = "trunk.100"
address = "192.0.2.2"

[[next_hop]]
name = "ra6"
port = "trunk.100"
address = "2001:db8:1::2"

[[route]]
prefix = "203.0.113.2/32"
via = "c4"
vrf = "red"

[[route]]
prefix = "2001:db8:3::2/128"
via = "c6"
vrf = "red"

[[route]]
prefix = "192.0.2.2/32"
via = "ra4"

[[route]]
prefix = "2001:db8:1::2/128"
via = "ra6"
"#,
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn tenants_with_the_same_addresses_route_apart_over_af_packet() {
    if !root_or_skip("tenants_with_the_same_addresses_route_apart_over_af_packet") {
        return;
    }
    let net = build().expect("namespaces");
    let _switch = Switch::start(
        net.ns(S),
        "st",
        &[("s100", 100), ("s200", 200), ("s300", 300), ("s400", 400)],
    );
    let _who = Responders::start(&net);
    {
        let _routers = linux_routers(&net).expect("Linux's routers");
        checks(&net, "Linux");
    }
    linux_routers_gone(&net).expect("Linux's routers away");

    let dir = std::env::temp_dir().join(format!("fwd-vrf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = config(&dir);
    let (child, _out) = start_forwarder(net.ns(F), &cfg, None);
    let _child = Running(child);
    checks(&net, "the forwarder");
    let st = stats(&cfg);
    for name in ["trunk.100", "trunk.200", "trunk.300", "trunk.400"] {
        let p = &st["ports"][name];
        assert!(
            p["rx"].as_u64() > Some(0) && p["tx"].as_u64() > Some(0),
            "{name}: {p}"
        );
    }
    // Each tenant's traffic counted in its VRF.
    for vrf in ["red", "blue"] {
        let v = &st["vrfs"][vrf];
        assert!(
            v["rx"].as_u64() > Some(0) && v["tx"].as_u64() > Some(0),
            "{vrf}: {}",
            st["vrfs"]
        );
    }
    // What the forwarder says of its VRFs' routes.
    let v = json(
        &["route", "get", "--json", "--vrf", "blue", "198.51.100.2"],
        &cfg,
    );
    assert_eq!(v["vrf"], "blue", "{v}");
    assert_eq!(v["hops"][0]["port"], "trunk.400", "{v}");
    let v = json(
        &["route", "get", "--json", "--vrf", "blue", "203.0.113.2"],
        &cfg,
    );
    assert_eq!(v["route"], serde_json::Value::Null, "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}
