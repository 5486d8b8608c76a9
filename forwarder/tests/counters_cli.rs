//! Element counters through the running forwarder: `forwarder element
//! list` prints each element's `counter packets N bytes M` as nft does
//! (summed over the workers), `forwarder element reset` zeroes them, and
//! a set without `counter = true` shows none; with connection tracking
//! on, its counters are among Prometheus's families. Synthetic ports: no
//! root.

mod common;

use common::*;

fn config(dir: &std::path::Path, prom: u16) -> std::path::PathBuf {
    let cfg = dir.join("c.toml");
    std::fs::write(
        &cfg,
        r#"
route = [{ prefix = "0.0.0.0/0", via = "gw" }, { prefix = "::/0", via = "gw" }]
[forwarder]
cores = [0]
[[port]]
name = "p0"
[port.options]
flows = 64
ipv6_percent = 0
set_hit_percent = 50
[[set]]
name = "counted"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "accept"
counter = true
elements = ["198.51.100.0/24 . 0-1000", "203.0.113.0/24 . 0-1000", "192.0.2.0/24 . 7"]
[[set]]
name = "plain"
type = "inet_service"
match = "th dport"
action = "drop"
elements = ["9"]
[[next_hop]]
name = "gw"
port = "p0"
mac = "02:00:00:00:00:99"
[control]
prometheus = "127.0.0.1:PROM"
[conntrack]
enabled = true
"#
        .replace("PROM", &prom.to_string()),
    )
    .unwrap();
    cfg
}

fn fwd(args: &[&str], cfg: &std::path::Path) -> String {
    let o = forwarder()
        .args(args)
        .arg("--config")
        .arg(cfg)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Each element's (text, packets, bytes) in a listing.
fn counters(list: &str) -> Vec<(String, u64, u64)> {
    list.split([',', '{', '}'])
        .filter_map(|part| {
            let (el, c) = part.split_once(" counter packets ")?;
            let (p, b) = c.trim().split_once(" bytes ")?;
            let el = el.trim().trim_start_matches("elements =").trim();
            Some((el.to_string(), p.parse().ok()?, b.trim().parse().ok()?))
        })
        .collect()
}

#[test]
fn element_counters_listed_and_reset() {
    let dir = std::env::temp_dir().join(format!("fwd-counters-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prom = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = config(&dir, prom);
    let _run = run_local(&cfg);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let list = fwd(&["element", "list", "counted"], &cfg);
    assert!(list.contains("\t\tcounter\n"), "{list}");
    let c = counters(&list);
    assert_eq!(c.len(), 3, "{list}");
    let total: u64 = c.iter().map(|x| x.1).sum();
    assert!(
        total > 1000,
        "the generator aims half its flows at the set: {list}"
    );
    for (el, p, b) in &c {
        // Frames of 64 bytes (60 without the FCS) at least.
        assert!(*b >= *p * 60, "{el}: {p} packets, {b} bytes");
    }
    // The generator aims at every element of the first set.
    assert!(c.iter().all(|x| x.1 > 0), "{list}");
    // Prometheus: the counted set's totals, not the plain one's.
    let body = scrape(prom);
    let packets = body
        .lines()
        .find_map(|l| l.strip_prefix("forwarder_set_element_packets_total{set=\"counted\"} "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("{body}"));
    assert!(packets >= total, "{packets} scraped after {total} listed");
    assert!(body.contains("forwarder_set_element_bytes_total{set=\"counted\"}"));
    assert!(
        !body.contains("element_packets_total{set=\"plain\"}"),
        "{body}"
    );
    // Connection tracking's families, checked by promtool with the rest.
    for family in [
        "forwarder_conntrack_entries{core=\"0\",proto=\"udp\"}",
        "forwarder_conntrack_refused{core=\"0\"}",
        "forwarder_conntrack_events_total{core=\"0\",event=\"created\"}",
    ] {
        assert!(body.contains(family), "{family}: {body}");
    }
    let exposition = body.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    if let Some(said) = promtool_problems(exposition) {
        assert!(said.trim().is_empty(), "promtool check metrics: {said}");
    }
    if let Some(families) = parsed_by_python(exposition) {
        assert!(
            families.contains(&"forwarder_set_element_bytes counter 1".to_string()),
            "{families:?}"
        );
    }
    let plain = fwd(&["element", "list", "plain"], &cfg);
    assert!(!plain.contains("counter"), "{plain}");
    // Reset, then read at once: far less than the second and a half
    // before (traffic goes on).
    assert!(fwd(&["element", "reset", "counted"], &cfg).contains("counters reset"));
    let after: u64 = counters(&fwd(&["element", "list", "counted"], &cfg))
        .iter()
        .map(|x| x.1)
        .sum();
    assert!(after < total / 2, "{after} after the reset, {total} before");
    // An unknown set is refused.
    let o = forwarder()
        .args(["element", "reset", "nosuch", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("nosuch"));
    let _ = std::fs::remove_dir_all(&dir);
}
