//! A VRF fed by a routing daemon: BIRD in the forwarder's namespace
//! keeps a VRF's routes in tables of its own (`ipv4 table blue4`) and
//! exports them to the kernel's table 100 (`kernel { table 100; }`), the
//! table the forwarder's VRF `blue` follows (`[[vrf]] table = 100`).
//! Host a (on f0) and host b (on f1) are both in `blue`; b has
//! 203.0.113.5 and 2001:db8:5::5 on its `lo`, reached through b.
//!
//! Asserted: before BIRD runs, a cannot reach them; once BIRD exports,
//! the routes are in `blue` (origin: kernel table 100) and a pings both
//! through the forwarder; they are not in the default VRF (which follows
//! main); a route added to main by hand lands in the default VRF and
//! not in `blue`; BIRD's static protocols disabled, the routes go.
//!
//! Needs root, `ip`, `ethtool` and `bird2`; skipped without root unless
//! `FORWARDER_NETNS_TESTS=1`, which `.ci/run` sets: then a missing BIRD
//! fails the test. Addresses from 192.0.2.0/24, 198.51.100.0/24,
//! 203.0.113.0/24 and 2001:db8::/32 only; namespaces removed afterwards.

mod common;

use common::*;
use std::time::{Duration, Instant};

const F0_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x1a, 0xfe];
const F1_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x1b, 0xfe];

/// BIRD in the forwarder's namespace: blue's static routes, by b, in
/// blue's own tables, exported to the kernel's table 100 (BIRD's VRF
/// instance without a VRF device: this kernel has none).
const BIRD: &str = r#"
router id 198.51.100.1;
log "LOG" all;
ipv4 table blue4;
ipv6 table blue6;
protocol device { scan time 1; }
protocol static s4 { ipv4 { table blue4; }; route 203.0.113.0/24 via 198.51.100.2; }
protocol static s6 { ipv6 { table blue6; }; route 2001:db8:5::/64 via 2001:db8:2::2; }
protocol kernel k4 { ipv4 { table blue4; import none; export all; }; kernel table 100; }
protocol kernel k6 { ipv6 { table blue6; import none; export all; }; kernel table 100; }
"#;

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let cfg = dir.join("forwarder.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"[forwarder]
cores = [0]
[control]
socket = "{sock}"
[routes]
source = "kernel"
[[vrf]]
name = "blue"
table = 100
{ports}"#,
            sock = dir.join("ctl.sock").display(),
            ports = routed_ports(
                F0_MAC,
                F1_MAC,
                "vrf = \"blue\"",
                "vrf = \"blue\"\npunt = \"tap\""
            ),
        ),
    )
    .unwrap();
    cfg
}

/// `route get` of `dst` in `vrf`: the prefix and where it came from.
fn route(cfg: &std::path::Path, vrf: &str, dst: &str) -> (serde_json::Value, serde_json::Value) {
    let v = json(&["route", "get", "--json", "--vrf", vrf, dst], cfg);
    (v["route"].clone(), v["origin"].clone())
}

/// Waits up to `within` for `ok` of `dst`'s route in `vrf`.
fn until(
    cfg: &std::path::Path,
    vrf: &str,
    dst: &str,
    within: Duration,
    ok: impl Fn(&serde_json::Value) -> bool,
) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if ok(&route(cfg, vrf, dst).0) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn pings(ns: &str, dst: &'static str) -> bool {
    in_netns(ns, move || ping(dst, Duration::from_secs(3)))
        .join()
        .unwrap()
        .is_some()
}

#[test]
fn bird_feeds_a_vrf_through_its_kernel_table() {
    if !root_or_skip("bird_feeds_a_vrf_through_its_kernel_table") {
        return;
    }
    let mut t = Topology::create(&Shape::routed("fwdv", 'b', F0_MAC, F1_MAC)).expect("topology");
    t.ip(2, "addr add 203.0.113.5/32 dev lo").unwrap();
    t.ip(2, "-6 addr add 2001:db8:5::5/128 dev lo").unwrap();
    let (a, f) = (t.ns(0).to_string(), t.ns(1).to_string());
    let dir = std::env::temp_dir().join(format!("fwd-kernel-vrf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = config(&dir);
    let (child, _rx) = start_forwarder(&f, &cfg, None);
    let _running = Running(child);
    assert!(!pings(&a, "203.0.113.5"), "no route yet");

    let conf = dir.join("bird.conf");
    std::fs::write(
        &conf,
        BIRD.replace("LOG", &dir.join("bird.log").display().to_string()),
    )
    .unwrap();
    let sock = dir.join("bird.ctl");
    let bird = std::process::Command::new("ip")
        .args(["netns", "exec", &f, "bird", "-f", "-c"])
        .arg(&conf)
        .arg("-s")
        .arg(&sock)
        .arg("-P")
        .arg(dir.join("bird.pid"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start bird");
    t.children.push(bird);

    for dst in ["203.0.113.5", "2001:db8:5::5"] {
        let there = until(&cfg, "blue", dst, Duration::from_secs(30), |r| !r.is_null());
        let table = std::process::Command::new("ip")
            .args(["-n", &f, "-d", "route", "show", "table", "100"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        assert!(
            there,
            "{dst} in blue: kernel table 100:\n{table}\nBIRD: {}\nforwarder: {}",
            std::fs::read_to_string(dir.join("bird.log")).unwrap_or_default(),
            stats(&cfg)["kernel_routes"]
        );
        let (_, origin) = route(&cfg, "blue", dst);
        assert_eq!(
            (origin["from"].as_str(), origin["table"].as_u64()),
            (Some("kernel"), Some(100)),
            "{origin}"
        );
        assert_eq!(route(&cfg, "default", dst).0, serde_json::Value::Null);
    }
    assert!(pings(&a, "203.0.113.5"), "{}", stats(&cfg));
    assert!(pings(&a, "2001:db8:5::5"), "{}", stats(&cfg));

    // Main feeds the default VRF, not blue.
    ipn(&f, "route add 198.18.0.0/15 via 198.51.100.2 dev tap-f1").unwrap();
    assert!(until(
        &cfg,
        "default",
        "198.18.0.1",
        Duration::from_secs(10),
        |r| { r == "198.18.0.0/15" }
    ));
    assert_eq!(route(&cfg, "blue", "198.18.0.1").0, serde_json::Value::Null);

    // Withdrawn by BIRD: gone from blue.
    for p in ["s4", "s6"] {
        let o = std::process::Command::new("birdc")
            .arg("-s")
            .arg(&sock)
            .args(["disable", p])
            .output()
            .expect("birdc");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    for dst in ["203.0.113.5", "2001:db8:5::5"] {
        assert!(
            until(&cfg, "blue", dst, Duration::from_secs(20), |r| r.is_null()),
            "{dst} withdrawn: {}",
            stats(&cfg)["kernel_routes"]
        );
    }
    assert!(!pings(&a, "203.0.113.5"));
    let _ = std::fs::remove_dir_all(&dir);
}
