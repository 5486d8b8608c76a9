//! Per-element counters (`counter = true` on a set, nft's `counter`):
//! the pipeline's counts against a reference that counts each packet by
//! the element it should match, with the flow cache in front (a packet a
//! counted element matches keeps no decision there, so every one is
//! counted; the other flows are still served by the cache) and with
//! connection tracking's stored decisions; across new snapshots (a
//! kept element keeps its counts, a deleted one's go, an added one
//! starts at zero) and a reset.

use forwarder::control::build;
use forwarder::pipeline::{Pipeline, Snapshot};
use forwarder::port::Burst;
use forwarder::wire::build::{ipv4, L4};
use routecache::gen::Rng;
use std::collections::HashMap;
use std::path::Path;

const CONFIG: &str = r#"
route = [
  { prefix = "192.0.2.0/24", via = "lan" },
  { prefix = "198.51.100.0/24", via = "wan" },
]

[[port]]
name = "p0"
mac = "02:00:00:00:00:01"

[[port]]
name = "p1"
mac = "02:00:00:00:00:02"

[[next_hop]]
name = "lan"
port = "p0"
mac = "02:00:00:00:0a:01"

[[next_hop]]
name = "wan"
port = "p1"
mac = "02:00:00:00:0b:01"

# Hosts x services, counted.
[[set]]
name = "allowed"
type = "ipv4_addr . inet_service"
match = "ip saddr . th dport"
action = "accept"
counter = true
elements = [ALLOWED]

[[set]]
name = "blocked"
type = "ipv4_addr . inet_service"
match = "ip saddr . th dport"
action = "drop"
counter = true
elements = ["192.0.2.9 . 22", "192.0.2.10 . 22-25"]

# Not counted: its flows stay in the flow cache.
[[set]]
name = "quiet"
type = "inet_service"
match = "th dport"
action = "accept"
elements = ["8080"]

EXTRA
"#;

const FLOW_CACHE: &str = "[flow_cache]\nentries = 4096\ninsert_one_in = 1\n";
const CONNTRACK: &str = "[conntrack]\nenabled = true\n";

/// The `allowed` elements: hosts 1 to 8 by ports 22, 80 and 443, less
/// `gone`, plus `extra`.
fn allowed(gone: Option<(u8, u16)>, extra: Option<(u8, u16)>) -> Vec<(u8, u16)> {
    let mut v: Vec<(u8, u16)> = (1..=8)
        .flat_map(|h| [22, 80, 443].map(|p| (h, p)))
        .filter(|e| Some(*e) != gone)
        .collect();
    v.extend(extra);
    v
}

fn snapshot(extra: &str, elems: &[(u8, u16)], generation: u64) -> Snapshot {
    let list: Vec<String> = elems
        .iter()
        .map(|(h, p)| format!("\"192.0.2.{h} . {p}\""))
        .collect();
    let text = CONFIG
        .replace("ALLOWED", &list.join(", "))
        .replace("EXTRA", extra);
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    build::snapshot(&cfg, generation).unwrap()
}

/// A counted element, as the reference names it: set, host, first port.
type Elem = (&'static str, u8, u16);

/// Which counted element packet (host, port) matches, by the policy
/// (sets in order; the first match decides).
fn element_of(allowed: &[(u8, u16)], h: u8, p: u16) -> Option<Elem> {
    if allowed.contains(&(h, p)) {
        return Some(("allowed", h, p));
    }
    match (h, p) {
        (9, 22) => Some(("blocked", 9, 22)),
        (10, 22..=25) => Some(("blocked", 10, 22)),
        _ => None,
    }
}

/// The pipeline's counts, by element.
fn counts(pipe: &Pipeline) -> HashMap<Elem, [u64; 2]> {
    let mut m = HashMap::new();
    for set in ["allowed", "blocked"] {
        for (k, c) in pipe.element_counters(set).expect("a counted set") {
            let h = (k[0].start & 0xff) as u8;
            m.insert((set, h, k[1].start as u16), c);
        }
    }
    assert_eq!(pipe.element_counters("quiet"), None, "not counted");
    m
}

struct Run {
    pipe: Pipeline,
    snap: Snapshot,
    allowed: Vec<(u8, u16)>,
    want: HashMap<Elem, [u64; 2]>,
    rng: Rng,
}

impl Run {
    fn new(extra: &str, seed: u64) -> Run {
        let allowed = allowed(None, None);
        let snap = snapshot(extra, &allowed, 1);
        Run {
            pipe: Pipeline::new(&snap, 2),
            snap,
            allowed,
            want: HashMap::new(),
            rng: Rng(seed),
        }
    }

    /// Random bursts from the lan: hosts 1 to 12, ports 22 to 25, 80,
    /// 443 and 8080, a few flows each, sizes varying.
    fn bursts(&mut self, n: usize) {
        for _ in 0..n {
            let mut b = Burst::new();
            let len = 1 + self.rng.below(64) as usize;
            for _ in 0..len {
                let h = 1 + self.rng.below(12) as u8;
                let p = [22, 23, 25, 80, 443, 8080][self.rng.below(6) as usize];
                let sport = 1000 + self.rng.below(4) as u16;
                let payload = [0, 10, 200][self.rng.below(3) as usize];
                let f = ipv4(
                    0xc000_0200 | h as u32,
                    0xc633_6402,
                    64,
                    L4::Udp(sport, p),
                    payload,
                );
                if let Some(e) = element_of(&self.allowed, h, p) {
                    let c = self.want.entry(e).or_default();
                    c[0] += 1;
                    c[1] += f.len() as u64;
                }
                b.push(&f);
            }
            self.pipe.rx_port = 0;
            self.pipe.process(&self.snap, &mut b);
        }
        assert_eq!(counts(&self.pipe), self.want);
    }

    /// A new snapshot: `gone` deleted from `allowed`, `extra` added.
    fn change(&mut self, extra: &str, gen: u64, gone: (u8, u16), added: (u8, u16)) {
        self.allowed = allowed(Some(gone), Some(added));
        self.snap = snapshot(extra, &self.allowed, gen);
        self.want.remove(&("allowed", gone.0, gone.1));
    }
}

fn counted_alike(extra: &str) {
    let mut r = Run::new(extra, 7);
    r.bursts(300);
    // Both sets counted something, and packets of every kind came.
    let c = counts(&r.pipe);
    assert!(c.keys().any(|e| e.0 == "blocked"), "{c:?}");
    assert!(c.len() > 20, "{c:?}");
    // A new snapshot: host 1's port 22 goes (its counts with it), its
    // port 8080 comes (from zero; before, the `quiet` set took it).
    r.change(extra, 2, (1, 22), (1, 8080));
    assert_eq!(counts(&r.pipe).len(), c.len(), "not yet adopted");
    r.bursts(300);
    assert!(counts(&r.pipe).contains_key(&("allowed", 1, 8080)));
    // The same snapshot adopted again (no change): counts stay.
    r.bursts(10);
    // A reset zeroes one set, then the other.
    r.pipe.reset_element_counters(Some("allowed"));
    r.want.retain(|e, _| e.0 != "allowed");
    assert_eq!(counts(&r.pipe), r.want);
    r.pipe.reset_element_counters(None);
    r.want.clear();
    r.bursts(50);
}

#[test]
fn element_counters_match_a_reference_with_the_flow_cache() {
    counted_alike(FLOW_CACHE);
    // The flows no counted element matches are still the cache's.
    let mut r = Run::new(FLOW_CACHE, 11);
    r.bursts(300);
    let s = r.pipe.flow_cache_stats();
    assert!(s.hits > 0, "{s:?}");
}

#[test]
fn element_counters_match_a_reference_with_connection_tracking() {
    counted_alike(CONNTRACK);
}

#[test]
fn element_counters_match_a_reference_with_no_cache() {
    counted_alike("[flow_cache]\nentries = 0\n");
}
