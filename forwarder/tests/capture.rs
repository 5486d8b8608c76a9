//! `forwarder capture` and `forwarder trace --live` on real interfaces:
//! a sender and a receiver in namespaces of their own, joined by veths to
//! the forwarder's (af_packet ports). The frames a capture of the
//! receiving port's input holds are, byte for byte, the frames the
//! sender sent; a capture of the sending port's output holds what the
//! receiver got; a capture of drops holds the frames not forwarded, each
//! with its reason; tcpdump reads every file (and a capture piped to it);
//! a live trace describes the packets as the pipeline took them.
//!
//! Needs root, `ip`, `ethtool` and `tcpdump` (`.ci/run` installs them).
//! Addresses: 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24. The
//! namespaces are removed afterwards.

mod common;

use common::*;
use forwarder::wire::build::{ipv4, L4};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const S_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0c, 0x01];
const F0_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0c, 0xfe];
const F1_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0d, 0xfe];
const R_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x0d, 0x02];

fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("capture.toml");
    std::fs::write(
        &path,
        format!(
            r#"route = [
  {{ prefix = "192.0.2.0/24", via = "s" }},
  {{ prefix = "198.51.100.0/24", via = "r" }},
]
[forwarder]
cores = [0]
[[port]]
name = "f0"
driver = "af_packet"
mac = "{f0}"
[[port]]
name = "f1"
driver = "af_packet"
mac = "{f1}"
[[set]]
name = "deny"
type = "ipv4_addr . inet_service"
match = "ip daddr . udp dport"
action = "drop"
elements = ["198.51.100.2 . 9999"]
[[next_hop]]
name = "s"
port = "f0"
mac = "{s}"
[[next_hop]]
name = "r"
port = "f1"
mac = "{r}"
[control]
watch = false
"#,
            f0 = mac(F0_MAC),
            f1 = mac(F1_MAC),
            s = mac(S_MAC),
            r = mac(R_MAC)
        ),
    )
    .unwrap();
    path
}

/// Test frame `i` (its UDP source port `40000 + i` tags it) and the
/// reason it is not forwarded, if it is not.
fn frame(i: u16) -> (Vec<u8>, Option<&'static str>) {
    let tag = 40000 + i;
    let (dst, ttl, dport, why) = match i % 4 {
        0 => (0xc633_6402, 64, 80, None),
        1 => (0xc633_6402, 64, 9999, Some("drop: rule")),
        2 => (0xc633_6402, 1, 80, Some("drop: ttl_expired")),
        _ => (0xcb00_7109, 64, 80, Some("drop: no_route")),
    };
    let mut f = ipv4(0xc000_0201, dst, ttl, L4::Udp(tag, dport), 18 + i as usize);
    f[..6].copy_from_slice(&F0_MAC);
    f[6..12].copy_from_slice(&S_MAC);
    (f, why)
}

const FILTER: &str = "udp sport 40000-40999";

/// `forwarder capture ARGS -w FILE` in the background.
fn capture_to(cfg: &std::path::Path, args: &[&str], file: &std::path::Path) -> Child {
    forwarder()
        .args(["capture", "--config"])
        .arg(cfg)
        .args(args)
        .args(["--filter", FILTER, "-w"])
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for `child` (at most `limit`); its standard error.
fn finish(child: Child, limit: Duration) -> String {
    let start = Instant::now();
    let mut child = Running(child);
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            let _ = child
                .0
                .stderr
                .take()
                .map(|mut e| e.read_to_string(&mut err));
            assert!(status.success(), "{err}");
            return err;
        }
        assert!(start.elapsed() < limit, "a capture did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read(file: &std::path::Path) -> forwarder::pcap::Capture {
    forwarder::pcap::read(&std::fs::read(file).unwrap()).unwrap()
}

#[test]
fn captures_and_live_traces_see_the_real_packets() {
    let Some(topo) = topology_or_skip(
        "capture",
        &Shape {
            tag: "fwdc",
            variant: 'c',
            queues: 0,
            macs: [Some(S_MAC), Some(F0_MAC), Some(F1_MAC), Some(R_MAC)],
            full_checksums: false,
            announce: false,
            hosts: [
                ("192.0.2.1/24", "2001:db8:1::1/64"),
                ("198.51.100.2/24", "2001:db8:2::2/64"),
            ],
            gateways: [None, None],
        },
    ) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("fwd-capture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = config(&dir);
    let (child, _lines) = start_forwarder(topo.ns(1), &cfg, None);
    let _forwarder = Running(child);

    const N: u16 = 40;
    let forwarded = (0..N).filter(|i| frame(*i).1.is_none()).count() as u64;
    let dropped = N as u64 - forwarded;
    let rx = capture_to(
        &cfg,
        &["--port", "f0", "--rx", "-c", &N.to_string()],
        &dir.join("rx.pcapng"),
    );
    let tx = capture_to(
        &cfg,
        &["--port", "f1", "--tx", "-c", &forwarded.to_string()],
        &dir.join("tx.pcapng"),
    );
    let drops = capture_to(
        &cfg,
        &["--port", "f0", "--drops", "-c", &dropped.to_string()],
        &dir.join("drops.pcapng"),
    );
    // Straight into tcpdump.
    let piped = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{} capture --config {} --port f0 --rx --filter '{FILTER}' -c {N} -w - | tcpdump -r - -n",
            env!("CARGO_BIN_EXE_forwarder"),
            cfg.display()
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let live = forwarder()
        .args([
            "trace",
            "--live",
            "--port",
            "f0",
            "--count",
            "2",
            "--json",
            "--filter",
            "udp sport 40000-40001",
            "--config",
        ])
        .arg(&cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Everything armed before a frame goes.
    let start = Instant::now();
    while stats(&cfg)["capture"]["armed"] != 4 || stats(&cfg)["trace"]["armed"] != 1 {
        assert!(start.elapsed() < Duration::from_secs(10), "{}", stats(&cfg));
        std::thread::sleep(Duration::from_millis(50));
    }

    let got = in_netns(topo.ns(2), || {
        let fd = packet_socket("b0");
        capture(&fd, Duration::from_millis(1500), Duration::from_secs(10))
    });
    std::thread::sleep(Duration::from_millis(200));
    let sent: Vec<(Vec<u8>, Option<&str>)> = (0..N).map(frame).collect();
    let to_send: Vec<Vec<u8>> = sent.iter().map(|s| s.0.clone()).collect();
    in_netns(topo.ns(0), move || {
        let fd = packet_socket("a0");
        for f in &to_send {
            send_frame(&fd, f);
            std::thread::sleep(Duration::from_millis(2));
        }
    })
    .join()
    .unwrap();
    let got: Vec<Vec<u8>> = got
        .join()
        .unwrap()
        .into_iter()
        .filter(|f| forwarder::wire::parse(f).is_ok_and(|p| (40000..41000).contains(&p.sport)))
        .collect();

    let limit = Duration::from_secs(20);
    let said = finish(rx, limit);
    assert!(
        said.contains(&format!("{N} frame(s) written, none lost")),
        "{said}"
    );
    finish(tx, limit);
    finish(drops, limit);
    // Received: what the sender sent, byte for byte, in order, inbound.
    let c = read(&dir.join("rx.pcapng"));
    assert_eq!(c.interfaces, vec!["f0".to_string()]);
    let frames: Vec<&Vec<u8>> = c.frames.iter().map(|f| &f.data).collect();
    assert_eq!(frames, sent.iter().map(|s| &s.0).collect::<Vec<_>>());
    assert!(c.frames.iter().all(|f| f.flags == forwarder::pcap::INBOUND));
    assert_eq!(c.dropped, vec![Some(0)]);
    // Sent: what the receiver got, byte for byte, outbound.
    let c = read(&dir.join("tx.pcapng"));
    assert_eq!(
        got.len() as u64,
        forwarded,
        "the receiver got the forwarded frames"
    );
    assert_eq!(
        c.frames.iter().map(|f| &f.data).collect::<Vec<_>>(),
        got.iter().collect::<Vec<_>>()
    );
    assert!(c
        .frames
        .iter()
        .all(|f| f.flags == forwarder::pcap::OUTBOUND));
    // Not forwarded: as received, each with its reason.
    let c = read(&dir.join("drops.pcapng"));
    let want: Vec<(&Vec<u8>, Vec<String>)> = sent
        .iter()
        .filter_map(|(f, why)| why.map(|w| (f, vec![w.to_string()])))
        .collect();
    assert_eq!(
        c.frames
            .iter()
            .map(|f| (&f.data, f.comments.clone()))
            .collect::<Vec<_>>(),
        want
    );
    // tcpdump reads every file, and the piped capture.
    for f in ["rx", "tx", "drops"] {
        let o = Command::new("tcpdump")
            .args(["-r"])
            .arg(dir.join(format!("{f}.pcapng")))
            .arg("-n")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{f}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let lines = String::from_utf8_lossy(&o.stdout).lines().count();
        assert_eq!(
            lines as u64,
            [N as u64, forwarded, dropped]
                [["rx", "tx", "drops"].iter().position(|x| *x == f).unwrap()]
        );
    }
    let o = piped.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.lines().count(), N as usize, "{text}");
    assert!(
        text.contains("192.0.2.1.40000 > 198.51.100.2.80: UDP"),
        "{text}"
    );
    // The live trace: the two packets as the pipeline took them.
    let o = live.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["fate"]["summary"], "forwarded out of f1");
    assert_eq!(lines[0]["stages"][0]["kept"], true);
    assert_eq!(lines[1]["fate"]["reason"], "rule");
    let deny = lines[1]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "set")
        .unwrap();
    assert_eq!(deny["element"], "198.51.100.2 . 9999");
    assert_eq!(deny["origin"]["line"], 20);
    assert_eq!(lines[2]["end"], true);
    let st = stats(&cfg);
    assert_eq!(st["capture"]["armed"], 0);
    assert_eq!(st["capture"]["lost"], 0);
    assert!(st["capture"]["frames"].as_u64().unwrap() >= 2 * N as u64 + forwarded + dropped);
    assert_eq!(st["trace"]["packets"], 2);
    std::fs::remove_dir_all(dir).ok();
}
