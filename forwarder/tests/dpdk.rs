//! The DPDK port on virtual devices, through the binary: packets in,
//! classified, routed, rewritten, out, with counters that add up; clean
//! shutdown (runtime files removed, the same file prefix starts again);
//! clear errors. Without the `dpdk` feature: the message that says so.
//!
//! EAL runs with `--no-huge --no-pci`: no huge pages or NIC needed, but
//! for one test that (as root) reserves a few huge pages to check that a
//! clean exit gives them back.

mod common;

use common::*;

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("fwd-dpdk-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A synthetic source (half its flows hit the rule set), and a DPDK port
/// `dev` with the given EAL arguments, where every route leads.
fn config(dev: &str, eal: &str, hop_mac: &str) -> String {
    format!(
        r#"
route = [{{ prefix = "0.0.0.0/0", via = "out" }}, {{ prefix = "::/0", via = "out" }}]
[forwarder]
cores = [0]
[[port]]
name = "gen"
mac = "02:00:00:00:00:01"
[port.options]
flows = 256
set_hit_percent = 50
[[port]]
name = "d"
driver = "dpdk"
mac = "02:00:00:00:00:02"
[port.options]
device = "{dev}"
eal = [{eal}]
mbufs = 4096
[[set]]
name = "deny"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["0.0.0.0/1 . 0-32767", "128.0.0.0/1 . 0-32767"]
[[next_hop]]
name = "out"
port = "d"
mac = "{hop_mac}"
"#
    )
}

#[cfg(feature = "dpdk")]
fn run(cfg: &std::path::Path) -> (bool, String, String) {
    let o = forwarder()
        .args(["run", "--duration", "2s", "--config"])
        .arg(cfg)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `port NAME: rx .. tx .. tx_dropped .. rx_dropped .. rx_ignored ..
/// rx_truncated .., bytes rx .. tx ..` of the summary (indented under
/// its core, unlike the rate lines), as numbers.
#[cfg(feature = "dpdk")]
fn port_line(out: &str, name: &str) -> Vec<u64> {
    let l = out
        .lines()
        .find(|l| l.starts_with(&format!("    port {name}: rx ")))
        .unwrap_or_else(|| panic!("no port {name} in\n{out}"));
    l.split_whitespace()
        .filter_map(|w| w.trim_end_matches(',').replace(',', "").parse().ok())
        .collect()
}

#[cfg(feature = "dpdk")]
fn total(out: &str) -> (u64, u64) {
    let l = out
        .lines()
        .find(|l| l.starts_with("  total: rx") && l.contains("forwarded"))
        .unwrap();
    let w: Vec<&str> = l.split_whitespace().collect();
    let n = |w: &str| w.replace(',', "").parse().unwrap();
    (n(w[2]), n(w[4]))
}

/// `net_ring0` sends what it is given back to itself: every frame the
/// forwarder sends there comes back, addressed to the port again, and is
/// forwarded again (zero copy, the same mbuf) until its TTL runs out.
#[cfg(feature = "dpdk")]
#[test]
fn ring_loopback_counters_add_up() {
    let d = dir("ring");
    let cfg = d.join("ring.toml");
    let prefix = format!("fwdtest{}", std::process::id());
    std::fs::write(
        &cfg,
        config(
            "net_ring0",
            &format!("\"--no-huge\", \"-m\", \"256\", \"--no-pci\", \"--vdev\", \"net_ring0\", \"--file-prefix\", \"{prefix}\""),
            "02:00:00:00:00:02",
        ),
    )
    .unwrap();
    for attempt in 0..2 {
        let (ok, out, err) = run(&cfg);
        assert!(ok, "attempt {attempt}: {out}\n{err}");
        let gen = port_line(&out, "gen");
        let ring = port_line(&out, "d");
        let (rx, tx) = total(&out);
        // rx tx tx_dropped rx_dropped rx_ignored rx_truncated
        let (ring_rx, ring_tx, ring_txd) = (ring[0], ring[1], ring[2]);
        assert!(gen[0] > 10_000 && ring_rx > 10_000, "{out}");
        assert_eq!(rx, gen[0] + ring_rx, "{out}");
        // What the pipeline sent went out or was refused by a full ring.
        assert_eq!(tx, ring_tx + ring_txd, "{out}");
        // What came back had gone out; at most a ring's worth is in it.
        assert!(ring_rx <= ring_tx && ring_tx - ring_rx <= 1024, "{out}");
        assert_eq!(
            ring[4], 0,
            "frames came back addressed to another MAC\n{out}"
        );
        // Frames loop until their TTL expires; half the flows hit the set
        // (and, looping, are dropped there before that).
        assert!(out.contains("ttl_expired") && out.contains("rule"), "{out}");
        assert!(
            err.contains("EAL"),
            "EAL's log goes to standard error: {err}"
        );
        // Clean shutdown: the runtime files are gone, so the same prefix
        // starts again (the second attempt).
        assert!(
            !std::path::Path::new("/var/run/dpdk").join(&prefix).exists(),
            "runtime files left"
        );
    }
    std::fs::remove_dir_all(d).ok();
}

/// Huge pages reserved (and hugetlbfs mounted) for a test, put back after.
#[cfg(feature = "dpdk")]
struct HugePages {
    before: String,
    mounted: Option<std::path::PathBuf>,
}

#[cfg(feature = "dpdk")]
impl HugePages {
    const KNOB: &str = "/proc/sys/vm/nr_hugepages";

    /// `pages` more 2 MiB pages than reserved now; None when this is not
    /// root (the kernel refuses).
    fn reserve(pages: usize) -> Option<HugePages> {
        let before = std::fs::read_to_string(Self::KNOB).ok()?.trim().to_string();
        let now: usize = before.parse().ok()?;
        std::fs::write(Self::KNOB, (now + pages).to_string()).ok()?;
        let mut h = HugePages {
            before,
            mounted: None,
        };
        if forwarder::port::dpdk::hugetlbfs_dirs().is_empty() {
            let at = dir("hugetlbfs");
            let ok = std::process::Command::new("mount")
                .args(["-t", "hugetlbfs", "nodev"])
                .arg(&at)
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "cannot mount hugetlbfs as root");
            h.mounted = Some(at);
        }
        Some(h)
    }
}

#[cfg(feature = "dpdk")]
impl Drop for HugePages {
    fn drop(&mut self) {
        if let Some(at) = &self.mounted {
            let _ = std::process::Command::new("umount").arg(at).status();
            let _ = std::fs::remove_dir(at);
        }
        let _ = std::fs::write(Self::KNOB, &self.before);
    }
}

#[cfg(feature = "dpdk")]
fn free_huge_pages() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("HugePages_Free:")?.trim().parse().ok())
        .unwrap_or(0)
}

/// EAL keeps its huge-page files after `rte_eal_cleanup` (for secondary
/// processes): unless the forwarder removes them, every run leaves its
/// pages taken. After a clean exit every page is free again and no file
/// of the run's prefix is left.
#[cfg(feature = "dpdk")]
#[test]
fn huge_pages_are_given_back() {
    let Some(_pages) = HugePages::reserve(64) else {
        eprintln!("not root: huge pages cannot be reserved; skipped");
        return;
    };
    let free = free_huge_pages();
    assert!(free >= 32, "only {free} huge pages free");
    let d = dir("huge");
    let cfg = d.join("huge.toml");
    let prefix = format!("fwdhuge{}", std::process::id());
    std::fs::write(
        &cfg,
        config(
            "net_null0",
            &format!("\"-m\", \"48\", \"--no-pci\", \"--vdev\", \"net_null0\", \"--file-prefix\", \"{prefix}\""),
            "02:00:00:00:00:99",
        ),
    )
    .unwrap();
    let (ok, out, err) = run(&cfg);
    assert!(ok, "{out}\n{err}");
    let null = port_line(&out, "d");
    assert!(null[1] > 10_000, "{out}");
    for dir in forwarder::port::dpdk::hugetlbfs_dirs() {
        let left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with(&format!("{prefix}map_")))
            .collect();
        assert!(left.is_empty(), "left in {dir}: {left:?}");
    }
    assert_eq!(free_huge_pages(), free, "huge pages still taken");
    std::fs::remove_dir_all(d).ok();
}

/// `net_null0` takes every frame (a sink): what the pipeline routes there
/// is counted as sent, rewritten or not; its own receive side makes
/// frames of zeros that are not for us.
#[cfg(feature = "dpdk")]
#[test]
fn null_device_sink() {
    let d = dir("null");
    let cfg = d.join("null.toml");
    std::fs::write(
        &cfg,
        config(
            "net_null0",
            "\"--no-huge\", \"-m\", \"256\", \"--no-pci\", \"--vdev\", \"net_null0\"",
            "02:00:00:00:00:99",
        ),
    )
    .unwrap();
    let (ok, out, err) = run(&cfg);
    assert!(ok, "{out}\n{err}");
    let gen = port_line(&out, "gen");
    let null = port_line(&out, "d");
    let (_, tx) = total(&out);
    assert_eq!(null[1] + null[2], tx, "{out}");
    assert!(null[1] > 10_000, "{out}");
    assert!(
        null[4] > 0 && null[0] == 0,
        "null frames are not for us: {out}"
    );
    // Half of the generated frames hit the rule set.
    let drops: u64 = out
        .split("drops: rule ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.replace(',', "").parse().ok())
        .unwrap();
    assert!(drops > gen[0] / 4 && drops < gen[0] * 3 / 4, "{out}");
    std::fs::remove_dir_all(d).ok();
}

#[cfg(feature = "dpdk")]
#[test]
fn errors_say_what_is_wrong() {
    let d = dir("err");
    let cfg = d.join("e.toml");
    let cases = [
        (
            config("net_null0", "\"--no-huge\", \"--bogus-flag\"", "02:00:00:00:00:99"),
            "EAL init (--no-huge --bogus-flag",
        ),
        (
            config("net_null7", "\"--no-huge\", \"-m\", \"256\", \"--no-pci\", \"--vdev\", \"net_null0\"", "02:00:00:00:00:99"),
            "port `d` (DPDK device `net_null7`): no such DPDK port (1 available; a virtual device needs `--vdev net_null7` in `eal`)",
        ),
        (
            config("net_null0", "\"--no-huge\", 5", "02:00:00:00:00:99"),
            "e.toml:17:7: port `d`: option `eal` must be an array of strings",
        ),
    ];
    for (text, want) in cases {
        std::fs::write(&cfg, text).unwrap();
        let (ok, out, err) = run(&cfg);
        assert!(
            !ok && err.contains(want),
            "wanted `{want}` in\n{out}\n{err}"
        );
    }
    std::fs::remove_dir_all(d).ok();
}

#[cfg(not(feature = "dpdk"))]
#[test]
fn without_the_feature_the_error_says_so() {
    let d = dir("off");
    let cfg = d.join("off.toml");
    std::fs::write(
        &cfg,
        config("net_null0", "\"--no-huge\"", "02:00:00:00:00:99"),
    )
    .unwrap();
    let o = forwarder()
        .args(["run", "--duration", "1s", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "off.toml:12:8: port `d`: built without DPDK support (build with `--features dpdk`)"
        ),
        "{err}"
    );
    std::fs::remove_dir_all(d).ok();
}

/// Without the feature the tests above and below are not built: one
/// ignored test says so in the run's listing.
#[cfg(not(feature = "dpdk"))]
#[test]
#[ignore = "needs `--features dpdk` and Debian's DPDK (dpdk, libdpdk-dev, pkg-config, libclang-dev)"]
fn dpdk_virtual_device_tests() {}
