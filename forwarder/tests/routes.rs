//! `forwarder route get|list` against a running forwarder: the prefix
//! an address takes, where it came from and where it leads, before and
//! after a reload changes it; a large route file listed whole, sorted,
//! each route with its line, streamed; filters by prefix and origin.

mod common;

use common::*;
use serde_json::Value;
use std::process::Stdio;

fn config(via_2: &str) -> String {
    format!(
        r#"route = [
  {{ prefix = "0.0.0.0/0", via = "gw1" }},
  {{ prefix = "2.0.0.0/8", via = "{via_2}" }},
  {{ prefix = "2001:db8::/32", via = "both" }},
]
route_file = "routes.txt"
[forwarder]
cores = [0]
[[port]]
name = "p0"
[port.options]
flows = 16
[[port]]
name = "p1"
[port.options]
flows = 16
[[next_hop]]
name = "gw1"
port = "p0"
mac = "02:00:00:00:00:01"
[[next_hop]]
name = "gw2"
port = "p1"
mac = "02:00:00:00:00:02"
[[ecmp]]
name = "both"
members = ["gw1", "gw2"]
"#
    )
}

/// `forwarder route get ADDR --json`.
fn get(cfg: &std::path::Path, addr: &str) -> Value {
    json(&["route", "get", addr, "--json"], cfg)
}

#[test]
fn route_get_and_list_say_where_routes_lead_and_come_from() {
    let dir = std::env::temp_dir().join(format!("fwd-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, config("gw1")).unwrap();
    // 200,000 routes in the file: /24s under 100.0.0.0/8 .. 103.0.0.0/8
    // (and a few IPv6 ones), half through each next hop.
    let mut text = String::from("# generated\n");
    let mut n = 0;
    'outer: for a in 100..104u32 {
        for b in 0..256u32 {
            for c in 0..256u32 {
                text.push_str(&format!(
                    "{a}.{b}.{c}.0/24 {}\n",
                    if c % 2 == 0 { "gw1" } else { "gw2" }
                ));
                n += 1;
                if n == 199_990 {
                    break 'outer;
                }
            }
        }
    }
    for i in 0..10 {
        text.push_str(&format!("2001:db8:{i:x}::/48 gw2\n"));
    }
    std::fs::write(dir.join("routes.txt"), &text).unwrap();
    let _running = run_local(&cfg);

    // route get: the prefix, its line, the next hop, the port.
    let g = get(&cfg, "2.1.2.3");
    assert_eq!(g["route"], "2.0.0.0/8");
    assert_eq!(
        g["origin"],
        serde_json::json!({ "from": "config", "file": cfg.display().to_string(), "line": 3 })
    );
    assert_eq!(g["via"], "gw1");
    assert_eq!(g["hops"][0]["port"], "p0");
    assert_eq!(g["hops"][0]["neighbour"]["mac"], "02:00:00:00:00:01");
    let f = get(&cfg, "100.1.3.9");
    assert_eq!(
        (f["route"].as_str(), f["via"].as_str()),
        (Some("100.1.3.0/24"), Some("gw2"))
    );
    assert_eq!(f["origin"]["from"], "route_file");
    assert_eq!(f["origin"]["line"], 2 + 256 + 3);
    let e = get(&cfg, "2001:db8:ff::1");
    assert_eq!(e["via"], "ECMP group both");
    assert_eq!(e["hops"].as_array().unwrap().len(), 2);
    // The operator's question: after a reload changed 2.0.0.0/8, where
    // does it go now?
    std::fs::write(&cfg, config("gw2")).unwrap();
    assert_eq!(json(&["reload", "--json"], &cfg)["result"], "ok");
    let g = get(&cfg, "2.1.2.3");
    assert_eq!(
        (g["via"].as_str(), g["hops"][0]["port"].as_str()),
        (Some("gw2"), Some("p1"))
    );
    assert!(g["generation"].as_u64().unwrap() >= 2);
    // The text is `ip route get`'s.
    let o = forwarder()
        .args(["route", "get", "2.1.2.3", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.starts_with("2.1.2.3 via gw2 dev p1  prefix 2.0.0.0/8 ("),
        "{t}"
    );
    // And a line a next hop, with what the frames are sent to.
    assert!(t.contains("\n    nexthop gw2 dev p1 "), "{t}");

    // route list: every route, sorted, streamed as JSON lines.
    let o = forwarder()
        .args(["route", "list", "--json", "--config"])
        .arg(&cfg)
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(o.status.success());
    let lines: Vec<Value> = o
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let (end, routes) = lines.split_last().unwrap();
    assert_eq!(end["end"], true);
    assert_eq!(end["routes"].as_u64().unwrap() as usize, routes.len());
    assert_eq!(routes.len(), 3 + 200_000);
    let keys: Vec<(bool, u128, u32)> = routes
        .iter()
        .map(|r| config::parse_prefix(r["prefix"].as_str().unwrap()).unwrap())
        .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "sorted");
    let from_file = routes
        .iter()
        .filter(|r| r["origin"]["from"] == "route_file")
        .count();
    assert_eq!(from_file, 200_000);
    // Filters: inside a prefix, of an origin.
    let o = forwarder()
        .args(["route", "list", "100.1.0.0/16", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let t = String::from_utf8_lossy(&o.stdout);
    assert_eq!(t.lines().count(), 256, "{t}");
    assert!(
        t.lines()
            .next()
            .unwrap()
            .starts_with("100.1.0.0/24 via gw1  ("),
        "{t}"
    );
    let o = forwarder()
        .args(["route", "list", "--origin", "config", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
    // A reader that stops early (`| head`) ends the listing quietly.
    let mut child = forwarder()
        .args(["route", "list", "--config"])
        .arg(&cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    use std::io::Read;
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Bad words say so.
    let o = forwarder()
        .args(["route", "list", "--origin", "bgp", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown origin `bgp`"));
    let o = forwarder()
        .args(["route", "get", "2.1.2", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an IP address"));
    std::fs::remove_dir_all(dir).ok();
}
