//! VRFs in the pipeline: a packet routes in its ingress port's VRF (a
//! tagged one in its sub-interface's), the same destination to a
//! different next hop in each VRF, a route leaks into another VRF only
//! through a next hop the configuration names there, and the flow cache
//! never answers one VRF's packet with another's decision (the same
//! flow, MACs and all, arrives in every VRF). Pinned by a reference
//! written out by hand; `route get|list` and `trace` name the VRF.

use forwarder::control::build;
use forwarder::pipeline::Pipeline;
use forwarder::port::Burst;
use forwarder::reason::DropReason;
use forwarder::wire::build::{ipv4, ipv6, L4};
use routecache::gen::Rng;
use std::path::Path;

const CONFIG: &str = r#"
[flow_cache]
insert_one_in = 1

[[vrf]]
name = "red"

[[vrf]]
name = "blue"

[[port]]
name = "trunk"
mac = "02:00:00:00:00:01"

[[port]]
name = "trunk.100"
parent = "trunk"
vlan = 100
vrf = "red"

[[port]]
name = "trunk.200"
parent = "trunk"
vlan = 200
vrf = "blue"

[[port]]
name = "red-up"
mac = "02:00:00:00:00:02"
vrf = "red"

[[port]]
name = "blue-up"
mac = "02:00:00:00:00:03"
vrf = "blue"

[[port]]
name = "plain"
mac = "02:00:00:00:00:04"

[[next_hop]]
name = "h-red"
port = "red-up"
mac = "02:00:00:00:0a:01"

[[next_hop]]
name = "h-blue"
port = "blue-up"
mac = "02:00:00:00:0a:02"

[[next_hop]]
name = "h-plain"
port = "plain"
mac = "02:00:00:00:0a:03"

[[next_hop]]
name = "h-b200"
port = "trunk.200"
mac = "02:00:00:00:0a:04"

[[route]]
prefix = "198.51.100.0/24"
via = "h-plain"

[[route]]
prefix = "2001:db8:5::/48"
via = "h-plain"

[[route]]
prefix = "198.51.100.0/24"
via = "h-red"
vrf = "red"

[[route]]
prefix = "2001:db8:5::/48"
via = "h-red"
vrf = "red"

[[route]]
prefix = "203.0.113.0/24"
via = "h-plain"
vrf = "red"

[[route]]
prefix = "198.51.100.0/24"
via = "h-blue"
vrf = "blue"

[[route]]
prefix = "2001:db8:5::/48"
via = "h-blue"
vrf = "blue"

[[route]]
prefix = "10.2.0.0/16"
via = "h-b200"
vrf = "blue"
"#;

/// Ports by index once loaded: the ones with drivers first.
const TRUNK: u16 = 0;
const RED_UP: u16 = 1;
const BLUE_UP: u16 = 2;
const PLAIN: u16 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vrf {
    Default,
    Red,
    Blue,
}

/// The destinations: 198.51.100.9, 2001:db8:5::1, 203.0.113.9,
/// 10.2.0.9.
const DSTS: [(bool, u128); 4] = [
    (false, 0xc633_6409),
    (true, 0x2001_0db8_0005u128 << 80 | 1),
    (false, 0xcb00_7109),
    (false, 0x0a02_0009),
];

/// Where the reference sends destination `d` from VRF `v`: the queue,
/// the next hop's last MAC byte, the VLAN it leaves on (0: none); `None`:
/// no route.
fn reference(v: Vrf, d: usize) -> Option<(u16, u8, u16)> {
    match (v, d) {
        (Vrf::Default, 0 | 1) => Some((PLAIN, 3, 0)),
        (Vrf::Red, 0 | 1) => Some((RED_UP, 1, 0)),
        // The leak: red's route to a next hop of the default VRF.
        (Vrf::Red, 2) => Some((PLAIN, 3, 0)),
        (Vrf::Blue, 0 | 1) => Some((BLUE_UP, 2, 0)),
        (Vrf::Blue, 3) => Some((TRUNK, 4, 200)),
        _ => None,
    }
}

/// The same flow whatever the VRF: addresses, ports and MACs.
fn packet(d: usize, sport: u16) -> Vec<u8> {
    let (v6, dst) = DSTS[d];
    if v6 {
        ipv6(
            0x2001_0db8_0009u128 << 80 | 1,
            dst,
            64,
            L4::Tcp(sport, 443),
            20,
        )
    } else {
        ipv4(0xc000_0201, dst as u32, 64, L4::Udp(sport, 53), 20)
    }
}

fn tagged(f: &[u8], vid: u16) -> Vec<u8> {
    if vid == 0 {
        return f.to_vec();
    }
    let mut out = f[..12].to_vec();
    out.extend([0x81, 0]);
    out.extend(vid.to_be_bytes());
    out.extend(&f[12..]);
    out
}

#[test]
fn each_vrf_routes_alone_and_the_flow_cache_keeps_them_apart() {
    // A set no packet matches: with no set the flow cache is off (a
    // flow's decision would be its route alone, which costs less to find
    // again than a flow's lookup).
    let text = format!(
        "{CONFIG}\n[[set]]\nname = \"none\"\ntype = \"inet_service\"\nmatch = \"udp dport\"\naction = \"drop\"\nelements = [\"9\"]\n"
    );
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    let names: Vec<&str> = cfg.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "trunk",
            "red-up",
            "blue-up",
            "plain",
            "trunk.100",
            "trunk.200"
        ]
    );
    let t = build::snapshot(&cfg, 1).unwrap();
    let mut p = Pipeline::new(&t, 4);
    let mut rng = Rng(0x7e4f);
    let mut no_route = 0;
    for round in 0..300 {
        let rx: u16 = [TRUNK, RED_UP, BLUE_UP, PLAIN][rng.below(4) as usize];
        let mut b = Burst::new();
        let mut want = Vec::new();
        for _ in 0..1 + rng.below(32) {
            // On the trunk, untagged (default) or either VLAN: several
            // VRFs in one burst.
            let (vrf, vid) = match rx {
                TRUNK => {
                    [(Vrf::Default, 0), (Vrf::Red, 100), (Vrf::Blue, 200)][rng.below(3) as usize]
                }
                RED_UP => (Vrf::Red, 0),
                BLUE_UP => (Vrf::Blue, 0),
                _ => (Vrf::Default, 0),
            };
            let d = rng.below(4) as usize;
            // Few source ports: flows repeat, in every VRF alike.
            let sport = 1000 + rng.below(4) as u16;
            b.push(&tagged(&packet(d, sport), vid));
            want.push(reference(vrf, d));
        }
        p.rx_port = rx;
        p.process(&t, &mut b);
        for (i, w) in want.iter().enumerate() {
            let on = p.out.iter().position(|o| o.contains(&(i as u8)));
            match *w {
                None => {
                    assert_eq!(on, None, "round {round} frame {i}: no route");
                    no_route += 1;
                }
                Some((queue, hop, vid)) => {
                    assert_eq!(on, Some(queue as usize), "round {round} frame {i}");
                    let f = b.frame(i);
                    assert_eq!(f[..6], [2, 0, 0, 0, 0x0a, hop], "round {round} frame {i}");
                    if vid == 0 {
                        assert_ne!(f[12..14], [0x81, 0], "round {round} frame {i}");
                    } else {
                        assert_eq!(f[12..16], [0x81, 0, 0, vid as u8], "frame {i}");
                    }
                }
            }
        }
    }
    assert_eq!(
        p.counters.drops[DropReason::NoRoute.index()],
        no_route,
        "every drop was for want of a route in the frame's VRF"
    );
    let s = p.flow_cache_stats();
    assert!(s.hits > 1000, "the flow cache answered: {s:?}");
}

fn run(args: &[&str], cfg: &Path) -> serde_json::Value {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_forwarder"))
        .args(args)
        .arg("--config")
        .arg(cfg)
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {} {}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// `route get`, `route list` and `trace` say which VRF they answer
/// for, and answer from its routes.
#[test]
fn route_get_list_and_trace_name_the_vrf() {
    let dir = std::env::temp_dir().join(format!("fwd-vrf-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let get = |vrf: &str| {
        run(
            &[
                "route",
                "get",
                "--offline",
                "--json",
                "--vrf",
                vrf,
                "198.51.100.9",
            ],
            &cfg,
        )
    };
    let v = get("red");
    assert_eq!(
        (v["vrf"].as_str(), v["via"].as_str()),
        (Some("red"), Some("h-red")),
        "{v}"
    );
    assert_eq!(v["origin"]["from"], "config", "{v}");
    assert_eq!(get("blue")["via"], "h-blue");
    assert_eq!(get("default")["via"], "h-plain");
    let v = run(
        &[
            "route",
            "get",
            "--offline",
            "--json",
            "--vrf",
            "red",
            "10.2.0.9",
        ],
        &cfg,
    );
    assert_eq!(v["route"], serde_json::Value::Null, "{v}");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_forwarder"))
        .args([
            "route",
            "get",
            "--offline",
            "--vrf",
            "green",
            "10.2.0.9",
            "--config",
        ])
        .arg(&cfg)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("unknown VRF `green` (default, red, blue)"),
        "{e}"
    );
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_forwarder"))
        .args(["route", "list", "--offline", "--vrf", "blue", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("10.2.0.0/16 via h-b200")),
        "{text}"
    );
    assert!(
        !text.contains("203.0.113.0/24"),
        "red's route is not blue's: {text}"
    );
    // `check` counts every VRF's routes and names the VRFs.
    let v = run(&["check", "--offline", "--json"], &cfg);
    assert_eq!(v["vrfs"], serde_json::json!(["red", "blue"]), "{v}");
    assert_eq!(
        (v["routes"]["ipv4"].as_u64(), v["routes"]["ipv6"].as_u64()),
        (Some(5), Some(3)),
        "{v}"
    );
    let v = run(
        &[
            "trace",
            "--offline",
            "--json",
            "--packet",
            "iif trunk.100 ip saddr 192.0.2.7 ip daddr 203.0.113.9 udp dport 53",
        ],
        &cfg,
    );
    let route = v["stages"]
        .as_array()
        .and_then(|s| s.iter().find(|x| x["stage"] == "route").cloned())
        .unwrap_or_default();
    assert_eq!(route["vrf"], "red", "{v}");
    assert_eq!(route["prefix"], "203.0.113.0/24", "{v}");
    assert_eq!(v["fate"]["port"], "plain", "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reload moves a port to another VRF and adds a route to a VRF in
/// place; one changing the table a VRF follows is refused, the running
/// tables kept.
#[test]
fn reloads_move_ports_and_routes_between_vrfs() {
    use forwarder::control::Control;
    let dir = std::env::temp_dir().join(format!("fwd-vrf-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, CONFIG).unwrap();
    let mut c = Control::start(&cfg).unwrap();
    let route_of = |c: &Control, port: u16, dst: u32| {
        let t = c.shared().snapshot.load_full();
        (
            t.vrf_of(port),
            t.fib
                .vrf(t.vrf_of(port) as usize)
                .and_then(|r| r.lookup_v4(dst)),
        )
    };
    let (vrf, before) = route_of(&c, RED_UP, 0x0a02_0009);
    assert_eq!((vrf, before), (1, None), "red has no 10.2.0.0/16");
    // red-up moves to blue: blue's 10.2.0.0/16 is its now.
    std::fs::write(
        &cfg,
        CONFIG.replace(
            "mac = \"02:00:00:00:00:02\"\nvrf = \"red\"",
            "mac = \"02:00:00:00:00:02\"\nvrf = \"blue\"",
        ),
    )
    .unwrap();
    c.reload().unwrap();
    let (vrf, after) = route_of(&c, RED_UP, 0x0a02_0009);
    assert_eq!(vrf, 2);
    assert!(after.is_some(), "blue's route");
    // A route added to red, in place.
    std::fs::write(
        &cfg,
        format!("{CONFIG}\n[[route]]\nprefix = \"10.9.0.0/16\"\nvia = \"h-red\"\nvrf = \"red\"\n"),
    )
    .unwrap();
    // What the reload will change, said first: red's route, named so.
    let d = c.diff(&config::load(&cfg).unwrap(), "c.toml");
    assert_eq!(
        d["routes"]["add"][0]["prefix"], "vrf red 10.9.0.0/16",
        "{d}"
    );
    assert_eq!(
        d["routes"]["add"].as_array().map(|a| a.len()),
        Some(1),
        "{d}"
    );
    let r = c.reload().unwrap();
    let t = c.shared().snapshot.load_full();
    assert!(
        t.fib.vrf(1).unwrap().lookup_v4(0x0a09_0001).is_some(),
        "{r:?}"
    );
    assert!(t.fib.vrf(2).unwrap().lookup_v4(0x0a09_0001).is_none());
    assert!(t.fib.lookup_v4(0x0a09_0001).is_none());
    let _ = std::fs::remove_dir_all(&dir);
}
