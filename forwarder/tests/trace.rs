//! `forwarder trace` agrees with the data path: random packets (both
//! families, some malformed, some for the router, ECMP), each traced
//! offline and run through a pipeline of its own, end the same way (the
//! same fate and reason, the same egress port, the same next hop's MAC
//! written); a changed route changes the trace; `--candidate` shows what
//! an edited set file changes for one flow and nothing for another,
//! offline and against a running forwarder.

mod common;

use common::*;
use forwarder::control::Control;
use forwarder::pipeline::Pipeline;
use forwarder::port::Burst;
use forwarder::punt::RouterShared;
use forwarder::reason::DropReason;
use forwarder::wire::build::{ipv4, ipv6, L4};
use serde_json::{json, Value};
use std::sync::Arc;

/// Router ports with addresses, gateways by address with configured
/// MACs (static neighbours), an ECMP group, sets of each action.
const CONFIG: &str = r#"
route = [
  { prefix = "0.0.0.0/0", via = "up" },
  { prefix = "203.0.113.0/24", via = "both" },
  { prefix = "203.0.113.128/25", via = "gw-b" },
  { prefix = "2001:db8:9::/48", via = "both" },
  { prefix = "::/0", via = "up6" },
]
[forwarder]
cores = [0]
[[port]]
name = "lan"
mac = "02:00:00:00:01:fe"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[[port]]
name = "wan"
mac = "02:00:00:00:02:fe"
address = ["198.51.100.1/24", "2001:db8:2::1/64"]
mtu = 1400
[[next_hop]]
name = "up"
port = "wan"
address = "198.51.100.254"
mac = "02:00:00:00:02:01"
[[next_hop]]
name = "up6"
port = "wan"
address = "2001:db8:2::fe"
mac = "02:00:00:00:02:06"
[[next_hop]]
name = "gw-a"
port = "wan"
mac = "02:00:00:00:0a:0a"
[[next_hop]]
name = "gw-b"
port = "lan"
mac = "02:00:00:00:0b:0b"
[[ecmp]]
name = "both"
members = ["gw-a", "gw-b"]
[[set]]
name = "deny"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["203.0.113.7 . 22", "198.51.100.0/24 . 6000-6010"]
[[set]]
name = "closed"
type = "inet_service"
match = "th dport"
action = "reject"
elements = ["23"]
[[set]]
name = "v6"
type = "ipv6_addr . inet_service : verdict"
match = "ip6 daddr . udp dport"
elements = ["2001:db8:9::1 . 53 : accept", "2001:db8:9::2 . 53 : drop"]
"#;

fn scratch(name: &str, text: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("fwd-trace-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, text).unwrap();
    (dir, cfg)
}

/// A random frame: aimed at the routes, the sets, the router's
/// addresses; now and then expiring, oversized or cut short.
fn frame(rng: &mut Rng) -> Vec<u8> {
    let ttl = if rng.chance(5) { 1 } else { 64 };
    let l4 = match rng.below(4) {
        0 => L4::Tcp(rng.below(65536) as u16, *rng.pick(&[22, 23, 80, 443, 6005])),
        1 => L4::Udp(rng.below(65536) as u16, *rng.pick(&[53, 23, 6001, 9])),
        2 => L4::Icmp(8, 0),
        _ => L4::Udp(1, 2),
    };
    let payload = if rng.chance(3) { 1450 } else { 0 };
    let mut f = if rng.chance(60) {
        let dst = *rng.pick(&[
            0xcb00_7100u32,
            0xcb00_7180,
            0xc633_6400,
            0xc000_0200,
            0x0a00_0000,
        ]) | rng.below(256) as u32;
        let dst = if rng.chance(5) { 0xc000_0201 } else { dst };
        ipv4(0xc000_0207 + rng.below(8) as u32, dst, ttl, l4, payload)
    } else {
        let dst = *rng.pick(&[
            0x2001_0db8_0009u128 << 80,
            0x2001_0db8_0002u128 << 80,
            0x2001_0db8_00ffu128 << 80,
        ]) | rng.below(4) as u128;
        ipv6(0x2001_0db8_0001u128 << 80 | 7, dst, ttl, l4, payload)
    };
    // Addressed to the receiving port (its MAC is written by the caller).
    if rng.chance(2) {
        let cut = 14 + rng.below(30) as usize;
        f.truncate(cut.min(f.len()));
    }
    f
}

/// What the pipeline does with one frame arriving on `port`: the trace's
/// words for it (`forwarded PORT MAC`, `punted REASON`, `dropped
/// REASON`).
fn outcome(
    pipe: &mut Pipeline,
    r: &RouterShared,
    t: &forwarder::pipeline::Snapshot,
    port: u16,
    f: &[u8],
) -> String {
    let mut b = Burst::new();
    b.push(f);
    pipe.rx_port = port;
    let before = pipe.counters.drops;
    pipe.process(t, &mut b);
    for (p, list) in pipe.out.iter().enumerate() {
        if list.contains(&0) {
            let names = ["lan", "wan"];
            return format!("forwarded {} {}", names[p], mac(&b.frame(0)[..6]));
        }
    }
    let reason = DropReason::ALL
        .iter()
        .find(|d| pipe.counters.drops[d.index()] > before[d.index()])
        .map(|d| d.name())
        .unwrap_or("none");
    let mut next = 0;
    match r.next_punt(&mut next) {
        Some(b) => {
            let _ = r.free.push(b);
            format!("punted {reason}")
        }
        None => format!("dropped {reason}"),
    }
}

fn mac(m: &[u8]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// The trace's words for how a packet ends.
fn traced(t: &Value) -> String {
    let f = &t["fate"];
    match f["result"].as_str().unwrap() {
        "forwarded" => {
            let rw = t["stages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["stage"] == "rewrite")
                .unwrap();
            format!(
                "forwarded {} {}",
                f["port"].as_str().unwrap(),
                rw["daddr"].as_str().unwrap()
            )
        }
        "punted" => format!("punted {}", f["reason"].as_str().unwrap()),
        other => format!("{other} {}", f["reason"].as_str().unwrap()),
    }
}

#[test]
fn ten_thousand_packets_end_as_the_pipeline_ends_them() {
    let (dir, cfg) = scratch("agree", CONFIG);
    let control = Control::start(&cfg).unwrap();
    let shared = control.shared();
    let t = shared.snapshot.load_full();
    let router = Arc::new(RouterShared::new(1, 2));
    let mut pipe = Pipeline::new(&t, 2).with_router(router.clone(), &t);
    // The neighbours a forwarder starts with: the configured ones.
    let (neigh, _) = forwarder::trace::configured_neighbours(&t);
    router.neigh.store(neigh);
    let mut rng = Rng(0x7ace);
    let macs = [[2, 0, 0, 0, 1, 0xfe], [2, 0, 0, 0, 2, 0xfe]];
    let mut seen = std::collections::BTreeMap::new();
    for i in 0..10_000 {
        let port = rng.below(2) as u16;
        let mut f = frame(&mut rng);
        if f.len() >= 6 {
            f[..6].copy_from_slice(&macs[port as usize]);
        }
        let want = outcome(&mut pipe, &router, &t, port, &f);
        let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
        let port_name = ["lan", "wan"][port as usize];
        let a =
            control.trace_request(&json!({ "request": "trace", "hex": hex, "port": port_name }));
        assert_eq!(a["result"], "ok", "{a}");
        let got = traced(&a["trace"]);
        assert_eq!(
            got,
            want,
            "packet {i}: {}",
            forwarder::trace::render(&a["trace"])
        );
        *seen
            .entry(want.split(' ').take(2).collect::<Vec<_>>().join(" "))
            .or_insert(0) += 1;
    }
    // The packets covered the ways a packet ends.
    for way in [
        "forwarded lan",
        "forwarded wan",
        "dropped rule",
        "punted reject",
        "punted ttl_expired",
        "punted local",
        "punted too_big",
        "dropped truncated",
    ] {
        assert!(seen.get(way).copied().unwrap_or(0) > 0, "{way}: {seen:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The ECMP stage names the member the flow's hash picks, and the
/// packet leaves by that member's MAC.
#[test]
fn the_ecmp_member_is_the_one_the_packet_takes() {
    let (dir, cfg) = scratch("ecmp", CONFIG);
    let control = Control::start(&cfg).unwrap();
    let mut members = std::collections::BTreeSet::new();
    for sport in 1000..1064 {
        let a = control.trace_request(&json!({
            "request": "trace",
            "packet": format!("iif lan ip daddr 203.0.113.9 udp sport {sport} udp dport 9"),
        }));
        let t = &a["trace"];
        let stages = t["stages"].as_array().unwrap();
        let ecmp = stages
            .iter()
            .find(|s| s["stage"] == "ecmp")
            .expect("an ecmp stage");
        let picked = ecmp["picked"].as_str().unwrap().to_string();
        let hop = stages.iter().find(|s| s["stage"] == "next_hop").unwrap();
        assert_eq!(hop["hop"].as_str().unwrap(), picked);
        let mac = stages.iter().find(|s| s["stage"] == "rewrite").unwrap()["daddr"].clone();
        let want = if picked == "gw-a" {
            "02:00:00:00:0a:0a"
        } else {
            "02:00:00:00:0b:0b"
        };
        assert_eq!(mac, want);
        members.insert(picked);
    }
    assert_eq!(members.len(), 2, "64 flows use both members");
    std::fs::remove_dir_all(dir).ok();
}

/// A changed route changes the trace: the prefix, its line, the next
/// hop, the egress port.
#[test]
fn a_changed_route_changes_the_trace() {
    let (dir, cfg) = scratch("mutation", CONFIG);
    let ask =
        json!({ "request": "trace", "packet": "iif lan ip daddr 203.0.113.200 tcp dport 80" });
    let before = Control::start(&cfg).unwrap().trace_request(&ask);
    let text = CONFIG.replace(
        "{ prefix = \"203.0.113.128/25\", via = \"gw-b\" },",
        "{ prefix = \"203.0.113.128/25\", via = \"gw-a\" },",
    );
    std::fs::write(&cfg, &text).unwrap();
    let after = Control::start(&cfg).unwrap().trace_request(&ask);
    let (b, a) = (&before["trace"], &after["trace"]);
    assert_eq!(traced(b), "forwarded lan 02:00:00:00:0b:0b");
    assert_eq!(traced(a), "forwarded wan 02:00:00:00:0a:0a");
    let route = |t: &Value| {
        t["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == "route")
            .unwrap()
            .clone()
    };
    assert_eq!(route(b)["prefix"], "203.0.113.128/25");
    assert_eq!(route(b)["origin"]["line"], 5);
    assert_eq!(route(b)["origin"]["from"], "config");
    assert!(!forwarder::trace::compare(b, a).is_empty());
    std::fs::remove_dir_all(dir).ok();
}

/// `--candidate`: a set file edited to drop a flow shows the change for
/// that flow and none for another; offline and against the running
/// forwarder; the JSON says the same as the text.
#[test]
fn a_candidate_shows_what_changes_for_a_packet() {
    let synthetic = r#"
route = [{ prefix = "0.0.0.0/0", via = "gw" }]
[forwarder]
cores = [0]
[[port]]
name = "p0"
[port.options]
flows = 16
[[set]]
name = "deny"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
file = "deny.set"
[[next_hop]]
name = "gw"
port = "p0"
mac = "02:00:00:00:00:99"
"#;
    let (dir, cfg) = scratch("candidate", synthetic);
    std::fs::write(dir.join("deny.set"), "192.0.2.1 . 22\n").unwrap();
    std::fs::write(
        dir.join("new.set"),
        "192.0.2.1 . 22\n# now also\n198.51.100.9 . 443\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("new.toml"),
        synthetic.replace("deny.set", "new.set"),
    )
    .unwrap();
    let new = dir.join("new.toml");
    let trace = |extra: &[&str], words: &str| -> Value {
        let mut args = vec![
            "trace",
            "--json",
            "--candidate",
            new.to_str().unwrap(),
            "--packet",
            words,
        ];
        args.extend_from_slice(extra);
        json(&args, &cfg)
    };
    let check = |extra: &[&str]| {
        let hit = trace(extra, "ip daddr 198.51.100.9 tcp dport 443");
        assert_eq!(hit["running"]["fate"]["result"], "forwarded");
        assert_eq!(hit["candidate"]["fate"]["result"], "dropped");
        let changed: Vec<&str> = hit["changed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert!(
            changed
                .iter()
                .any(|c| c.starts_with("set deny: no match") && c.contains("new.set:3): drop")),
            "{changed:?}"
        );
        assert!(
            changed.contains(&"fate: forwarded out of p0 -> dropped: rule"),
            "{changed:?}"
        );
        let other = trace(extra, "ip daddr 198.51.100.9 tcp dport 80");
        assert_eq!(other["changed"], json!([]), "{other}");
    };
    check(&["--offline"]);
    let _running = run_local(&cfg);
    check(&[]);
    // The text says it too.
    let o = forwarder()
        .args(["trace", "--config"])
        .arg(&cfg)
        .args([
            "--candidate",
            new.to_str().unwrap(),
            "--packet",
            "ip daddr 198.51.100.9 tcp dport 80",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("the candidate changes nothing for this packet"),
        "{text}"
    );
    // A candidate that does not load says why, and where.
    std::fs::write(dir.join("bad.toml"), "route = [\n").unwrap();
    let o = forwarder()
        .args(["trace", "--config"])
        .arg(&cfg)
        .args([
            "--candidate",
            dir.join("bad.toml").to_str().unwrap(),
            "--packet",
            "ip daddr 198.51.100.9",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad.toml:"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Bad requests say what is wrong; nothing panics.
#[test]
fn bad_packets_are_refused_with_their_words() {
    let (dir, cfg) = scratch("bad", CONFIG);
    let control = Control::start(&cfg).unwrap();
    for (req, says) in [
        (
            json!({ "request": "trace", "packet": "ip daddr 203.0.113.0/24" }),
            "one value",
        ),
        (
            json!({ "request": "trace", "packet": "iif dmz" }),
            "no such port",
        ),
        (json!({ "request": "trace", "hex": "zz" }), "hexadecimal"),
        (
            json!({ "request": "trace", "hex": "00", "port": "dmz" }),
            "no port `dmz`",
        ),
        (json!({ "request": "trace" }), "needs `packet`"),
    ] {
        let a = control.trace_request(&req);
        assert_eq!(a["result"], "error");
        assert!(a["error"].as_str().unwrap().contains(says), "{a}");
    }
    // Any bytes trace.
    let mut rng = Rng(5);
    for _ in 0..2000 {
        let n = rng.below(200) as usize;
        let mut f = vec![0u8; n];
        rng.fill(&mut f);
        let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
        let a = control.trace_request(&json!({ "request": "trace", "hex": hex }));
        assert_eq!(a["result"], "ok");
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A port on a Linux interface keeps only the frames for it (its MAC,
/// ARP, and IPv6 multicast where it has addresses), as its receive path
/// does: the trace stops there for the others.
#[test]
fn the_ports_receive_filter_comes_first() {
    let text = CONFIG.replace(
        "mtu = 1400\n",
        "mtu = 1400\ndriver = \"af_packet\"\n[port.options]\ninterface = \"lo\"\n",
    );
    let (dir, cfg) = scratch("filter", &text);
    let control = Control::start(&cfg).unwrap();
    let ask = |words: &str| {
        control.trace_request(&json!({ "request": "trace", "packet": words }))["trace"].clone()
    };
    let other = ask("iif wan ether daddr 02:00:00:00:00:77 ip daddr 192.0.2.9");
    assert_eq!(other["fate"]["result"], "ignored", "{other}");
    assert_eq!(other["stages"].as_array().unwrap().len(), 1);
    assert_eq!(
        ask("iif wan ip daddr 203.0.113.200 udp dport 9")["fate"]["result"],
        "forwarded"
    );
    assert_eq!(
        ask("iif wan arp ip daddr 198.51.100.1")["fate"]["result"],
        "punted"
    );
    assert_eq!(
        ask("iif wan ether daddr 33:33:00:00:00:01 ip6 daddr ff02::1 icmpv6")["stages"][0]["kept"],
        true
    );
    // The synthetic port filters nothing.
    assert_eq!(
        ask("iif lan ether daddr 02:00:00:00:00:77 ip daddr 203.0.113.200")["fate"]["result"],
        "forwarded"
    );
    std::fs::remove_dir_all(dir).ok();
}
