//! `forwarder check --diff` and `forwarder reload --diff`: what a reload
//! would change, said before anything is applied: elements added and
//! removed with their lines, routes added, removed and sent elsewhere,
//! next hops changed, what only a restart takes; the run-time elements
//! counted as in force on both sides.

mod common;

use common::*;
use serde_json::Value;

const BASE: &str = r#"route = [
  { prefix = "0.0.0.0/0", via = "gw1" },
  { prefix = "2.0.0.0/8", via = "gw1" },
]
[forwarder]
cores = [0]
[[port]]
name = "p0"
[port.options]
flows = 16
[[next_hop]]
name = "gw1"
port = "p0"
mac = "02:00:00:00:00:01"
[[next_hop]]
name = "gw2"
port = "p0"
mac = "02:00:00:00:00:02"
[[set]]
name = "deny"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["192.0.2.1 . 22"]
file = "deny.set"
[control]
watch = false
"#;

fn diff(cfg: &std::path::Path) -> Value {
    let o = forwarder()
        .args(["check", "--json", "--diff", "--config"])
        .arg(cfg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The check's line, then the diff's.
    let text = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(text.lines().last().unwrap()).unwrap()
}

#[test]
fn a_reload_says_what_it_changes_before_applying_it() {
    let dir = std::env::temp_dir().join(format!("fwd-diff-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, BASE).unwrap();
    std::fs::write(
        dir.join("deny.set"),
        "198.51.100.1 . 80\n198.51.100.2 . 80\n",
    )
    .unwrap();
    let _running = run_local(&cfg);
    assert_eq!(diff(&cfg)["changes"], false);

    // An element added at run time, then written into the file too: in
    // force on both sides, no change.
    assert_eq!(
        json(
            &["element", "add", "--json", "deny", "203.0.113.5 . 443"],
            &cfg
        )["result"],
        "ok"
    );
    std::fs::write(
        dir.join("deny.set"),
        "198.51.100.1 . 80\n# a comment\n203.0.113.5 . 443\n198.51.100.9 . 8080\n",
    )
    .unwrap();
    std::fs::write(
        &cfg,
        BASE.replace(
            "  { prefix = \"2.0.0.0/8\", via = \"gw1\" },\n",
            "  { prefix = \"2.0.0.0/8\", via = \"gw2\" },\n  { prefix = \"5.0.0.0/8\", via = \"gw2\" },\n",
        )
        .replace("mac = \"02:00:00:00:00:02\"", "mac = \"02:00:00:00:00:22\""),
    )
    .unwrap();
    let d = diff(&cfg);
    assert_eq!(d["changes"], true);
    let set = &d["sets"][0];
    assert_eq!(
        (set["added"].as_u64(), set["removed"].as_u64()),
        (Some(1), Some(1)),
        "{d}"
    );
    assert_eq!(set["add"][0]["element"], "198.51.100.9 . 8080");
    assert!(
        set["add"][0]["at"]
            .as_str()
            .unwrap()
            .ends_with("deny.set:4"),
        "{d}"
    );
    assert_eq!(set["remove"][0]["element"], "198.51.100.2 . 80");
    assert!(
        set["remove"][0]["at"]
            .as_str()
            .unwrap()
            .ends_with("deny.set:2"),
        "{d}"
    );
    let r = &d["routes"];
    assert_eq!(
        (
            r["added"].as_u64(),
            r["removed"].as_u64(),
            r["changed"].as_u64()
        ),
        (Some(1), Some(0), Some(1))
    );
    assert_eq!(r["add"][0]["prefix"], "5.0.0.0/8");
    assert!(
        r["add"][0]["at"].as_str().unwrap().ends_with("c.toml:4"),
        "{d}"
    );
    assert_eq!(r["change"][0]["via"], serde_json::json!(["gw1", "gw2"]));
    assert_eq!(d["next_hops"][0]["name"], "gw2");
    assert_eq!(d["next_hops"][0]["now"]["mac"], "02:00:00:00:00:22");
    assert_eq!(d["restart"], Value::Null);
    // Nothing was applied: the forwarder still routes 2.0.0.0/8 by gw1.
    assert_eq!(
        json(&["route", "get", "2.0.0.1", "--json"], &cfg)["via"],
        "gw1"
    );

    // reload --diff: the same diff, then the reload.
    let o = forwarder()
        .args(["reload", "--diff", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("set deny: +1 -1 elements"), "{text}");
    assert!(text.contains("  ~ 2.0.0.0/8 via gw1 -> gw2"), "{text}");
    assert!(
        text.contains("next hop gw2: changed: mac \"02:00:00:00:00:02\" -> \"02:00:00:00:00:22\""),
        "{text}"
    );
    assert_eq!(
        json(&["route", "get", "2.0.0.1", "--json"], &cfg)["via"],
        "gw2"
    );
    assert_eq!(diff(&cfg)["changes"], false);

    // A set moved to the forward hook: said, its elements unchanged.
    std::fs::write(
        &cfg,
        BASE.replace("action = \"drop\"", "action = \"drop\"\nhook = \"forward\""),
    )
    .unwrap();
    let d = diff(&cfg);
    let moved = d["sets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["change"] == "hook")
        .cloned();
    assert_eq!(
        moved.map(|m| m["hook"].clone()),
        Some(serde_json::json!(["prerouting", "forward"])),
        "{d}"
    );
    assert!(
        forwarder::control::diff::render(&d)
            .contains("set deny: runs at hook forward (was prerouting)"),
        "{d}"
    );

    // What only a restart takes is said, and the check still passes.
    std::fs::write(&cfg, BASE.replace("cores = [0]", "cores = [0, 1]")).unwrap();
    let d = diff(&cfg);
    assert!(
        d["restart"]
            .as_str()
            .unwrap()
            .contains("[forwarder] changed"),
        "{d}"
    );
    // A broken file: the check fails, nothing is asked of the forwarder.
    std::fs::write(&cfg, "route = [\n").unwrap();
    let o = forwarder()
        .args(["check", "--diff", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    std::fs::remove_dir_all(dir).ok();
}
