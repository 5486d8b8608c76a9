//! Reloads: under load every burst is judged wholly by one snapshot and
//! nothing is lost but what the rules drop; a broken file changes
//! nothing and says where it is broken; old snapshots are freed; the
//! incremental path gives the tables a rebuild gives.

use forwarder::control::build as tables_build;
use forwarder::control::Control;
use forwarder::pipeline::Mode;
use forwarder::pipeline::Snapshot;
use forwarder::port::{Burst, Port, PortStats};
use forwarder::reason::DropReason;
use forwarder::wire::{self, build, build::L4};
use forwarder::worker;
use routecache::gen::Rng;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0x0b];

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fwd-reload-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Configuration A or B: A drops UDP to port 7000 and routes through hop
/// `a`; B drops port 8000 and routes through `b`.
fn ab(which: char) -> String {
    let (port, hop) = if which == 'A' {
        (7000, "a")
    } else {
        (8000, "b")
    };
    format!(
        r#"
route = [{{ prefix = "198.51.100.0/24", via = "{hop}" }}, {{ prefix = "2001:db8::/32", via = "{hop}" }}]
[forwarder]
cores = [0, 1]
burst = 32
[[port]]
name = "p0"
mac = "02:00:00:00:00:01"
[[set]]
name = "deny"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["198.51.100.0/24 . {port}"]
[[next_hop]]
name = "a"
port = "p0"
mac = "02:00:00:00:00:0a"
[[next_hop]]
name = "b"
port = "p0"
mac = "02:00:00:00:00:0b"
"#
    )
}

/// What the test ports saw, over all workers.
#[derive(Default)]
struct Seen {
    rx: AtomicU64,
    tx: AtomicU64,
    bursts_a: AtomicU64,
    bursts_b: AtomicU64,
    bad: Mutex<Vec<String>>,
}

/// A port whose every receive is a burst of 32 frames alternating UDP
/// port 7000 and 8000, each carrying the burst's number; its transmit
/// side checks that a burst came out as one snapshot judges it: the 16
/// frames the snapshot forwards, all with its next hop's MAC.
struct AbPort {
    seq: u64,
    worker: u64,
    seen: Arc<Seen>,
}

impl Port for AbPort {
    fn name(&self) -> &str {
        "p0"
    }

    fn rx_burst(&mut self, burst: &mut Burst, max: usize) -> usize {
        self.seq += 1;
        let tag = self.worker << 48 | self.seq;
        for i in 0..max {
            let dport = if i % 2 == 0 { 7000 } else { 8000 };
            let mut f = build::ipv4(0xc000_0201, 0xc633_6402, 64, L4::Udp(1000, dport), 8);
            let n = f.len();
            f[n - 8..].copy_from_slice(&tag.to_be_bytes());
            burst.push(&f);
        }
        self.seen.rx.fetch_add(max as u64, Relaxed);
        max
    }

    fn tx_burst(&mut self, burst: &mut Burst, which: &[u8]) -> usize {
        let mut err = Vec::new();
        let f0 = burst.frame(which[0] as usize);
        let mac: [u8; 6] = f0[0..6].try_into().unwrap();
        let (dropped, counter) = match mac {
            MAC_A => (7000, &self.seen.bursts_a),
            MAC_B => (8000, &self.seen.bursts_b),
            other => {
                err.push(format!("unknown next hop MAC {other:?}"));
                (0, &self.seen.bursts_a)
            }
        };
        counter.fetch_add(1, Relaxed);
        let tag = &f0[f0.len() - 8..];
        if which.len() != 16 {
            err.push(format!(
                "a burst came out with {} frames, not 16",
                which.len()
            ));
        }
        for &i in which {
            let f = burst.frame(i as usize);
            let p = wire::parse(f).unwrap();
            if f[0..6] != mac {
                err.push("one burst, two snapshots' next hops".into());
            }
            if p.dport == dropped {
                err.push(format!(
                    "port {dropped} forwarded under the snapshot that drops it"
                ));
            }
            if &f[f.len() - 8..] != tag {
                err.push("frames of two bursts in one".into());
            }
        }
        if !err.is_empty() {
            self.seen.bad.lock().unwrap().extend(err);
        }
        self.seen.tx.fetch_add(which.len() as u64, Relaxed);
        which.len()
    }

    fn stats(&self) -> PortStats {
        PortStats::default()
    }
}

/// A control side on configuration A and two workers on [`AbPort`]s.
fn start_ab(name: &str) -> (PathBuf, PathBuf, Control, Vec<worker::Running>, Arc<Seen>) {
    let d = dir(name);
    let path = d.join(format!("{name}.toml"));
    std::fs::write(&path, ab('A')).unwrap();
    let control = Control::start(&path).unwrap();
    let cfg = control.config().clone();
    let seen = Arc::new(Seen::default());
    let s2 = seen.clone();
    let workers = worker::spawn_with(&cfg, control.shared(), Mode::Full, move |q| {
        Ok(vec![Box::new(AbPort {
            seq: 0,
            worker: q as u64,
            seen: s2.clone(),
        }) as Box<dyn Port>])
    })
    .unwrap();
    (d, path, control, workers, seen)
}

#[test]
fn two_hundred_reloads_under_load_judge_every_burst_wholly() {
    let (d, path, mut control, workers, seen) = start_ab("ab");
    let shared = control.shared();
    let mut weak = Vec::new();
    for i in 0..200 {
        weak.push(Arc::downgrade(&shared.snapshot.load_full()));
        std::fs::write(&path, ab(if i % 2 == 0 { 'B' } else { 'A' })).unwrap();
        let r = control.reload().unwrap();
        assert_eq!(r.generation, i + 2);
        assert_eq!(
            (r.elements_added, r.elements_removed, r.routes_changed),
            (1, 1, 2)
        );
        assert!(!r.fib_rebuilt && r.sets_rebuilt == 0, "{r:?}");
        std::thread::sleep(Duration::from_micros(500));
    }
    // Every snapshot replaced is freed once the workers move on, by the
    // control side.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(control.reclaim(), 0, "a worker still holds an old snapshot");
    assert!(
        weak.iter().all(|w| w.upgrade().is_none()),
        "a replaced snapshot is still alive"
    );
    shared.stop.store(true, Relaxed);
    let mut rule = 0;
    let mut other = 0;
    for (_, h) in workers {
        let r = h.join().unwrap();
        rule += r.counters.drops[DropReason::Rule.index()];
        other += r.counters.drops.iter().sum::<u64>() - r.counters.drops[DropReason::Rule.index()];
    }
    let bad = seen.bad.lock().unwrap();
    assert!(
        bad.is_empty(),
        "{} problems, first: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    let (rx, tx) = (seen.rx.load(Relaxed), seen.tx.load(Relaxed));
    assert_eq!(other, 0, "drops other than the rules'");
    assert_eq!(
        rx,
        tx + rule,
        "frames lost: rx {rx}, tx {tx}, rule drops {rule}"
    );
    assert_eq!(tx, rule, "half of every burst dropped");
    let (a, b) = (seen.bursts_a.load(Relaxed), seen.bursts_b.load(Relaxed));
    assert!(a > 100 && b > 100, "bursts judged by A: {a}, by B: {b}");
    std::fs::remove_dir_all(d).ok();
}

/// A small valid configuration with a 3-element set and routes.
const GOOD: &str = r#"
route = [{ prefix = "198.51.100.0/24", via = "gw" }]
[[port]]
name = "p0"
[[set]]
name = "s"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["192.0.2.1 . 22", "192.0.2.2 . 22", "192.0.2.3 . 22"]
[[next_hop]]
name = "gw"
port = "p0"
mac = "02:00:00:00:00:fe"
"#;

#[test]
fn a_broken_file_changes_nothing_and_says_where() {
    let d = dir("broken");
    let path = d.join("f.toml");
    std::fs::write(&path, GOOD).unwrap();
    let mut control = Control::start(&path).unwrap();
    let shared = control.shared();
    let before = shared.snapshot.load_full();
    let name = path.display().to_string();
    let cases = [
        (
            GOOD.replace("action = \"drop\"", "action = \"drop"),
            ":9:15: invalid basic string",
        ),
        (
            GOOD.replace(
                "\"192.0.2.3 . 22\"",
                "\"192.0.2.3 . 22\", \"192.0.2.0/24 . 20-30\"",
            ),
            ":10:49: overlap",
        ),
        (
            GOOD.replace("via = \"gw\"", "via = \"gw2\""),
            ":2:46: unknown next hop or ECMP group `gw2`",
        ),
        (
            GOOD.replace("cores", "x")
                .replace("[[port]]", "[forwarder]\ncores = [1]\n[[port]]"),
            ":3:1: [forwarder] changed",
        ),
        (
            GOOD.replace(
                "name = \"p0\"",
                "name = \"p0\"\nmac = \"02:00:00:00:00:77\"",
            ),
            ":4:8: ports changed",
        ),
    ];
    for (text, want) in cases {
        // Also a set that would apply first: nothing of it may stay.
        let text = text.replace("\"192.0.2.1 . 22\", ", "");
        std::fs::write(&path, &text).unwrap();
        let err = control.reload().unwrap_err();
        assert!(
            err.starts_with(&name) && err.contains(want),
            "{err}\nwanted {want}"
        );
        let now = shared.snapshot.load_full();
        assert!(Arc::ptr_eq(&before, &now), "the published snapshot changed");
        assert_eq!(shared.status.last_reload(), err);
        assert_eq!(shared.status.generation.load(Relaxed), 1);
    }
    // The working copies were rolled back: a good file applies as a diff
    // against what runs, so removing one element removes exactly one.
    std::fs::write(&path, GOOD.replace("\"192.0.2.1 . 22\", ", "")).unwrap();
    let r = control.reload().unwrap();
    assert_eq!((r.elements_added, r.elements_removed), (0, 1));
    assert_eq!(shared.status.last_reload(), "ok");
    assert_eq!(shared.snapshot.load().sets[0].snap.len(), 2);
    assert_eq!(shared.status.failed.load(Relaxed), 5);
    std::fs::remove_dir_all(d).ok();
}

/// A random configuration: three sets (kept, retyped or renamed at
/// random), random elements and routes over two next hops (or three).
fn random_config(rng: &mut Rng, set_file: &Path) -> String {
    let mut s = String::from("route = [\n");
    let hops = if rng.below(4) == 0 { 3 } else { 2 };
    // Routes from a small universe, each present half the time, so that
    // one configuration and the next share about half.
    for k in 0..60u32 {
        if rng.below(2) == 0 {
            continue;
        }
        let (a, len) = match k % 3 {
            0 => (k << 24, 8),
            1 => (k << 24 | (k * 7 % 256) << 16, 16),
            _ => (k << 24 | (k * 5 % 256) << 16 | 0x80, 25),
        };
        let via = rng.below(hops);
        s.push_str(&format!(
            "  {{ prefix = \"{}/{len}\", via = \"h{via}\" }},\n",
            std::net::Ipv4Addr::from(a)
        ));
    }
    s.push_str("]\n[[port]]\nname = \"p0\"\n");
    // Set 0: ip daddr . th dport, elements from disjoint /24s.
    let mut els = Vec::new();
    for net in 0..60 {
        if rng.below(2) == 0 {
            let port = rng.below(2) as u16 * 100;
            els.push(format!("10.{net}.0.0/24 . {port}-{}", port + 50));
        }
    }
    let sets = [
        ("s0", "ipv4_addr . inet_service", "ip daddr . th dport"),
        (
            if rng.below(3) == 0 { "s1b" } else { "s1" },
            "inet_service . inet_proto",
            "th dport . meta l4proto",
        ),
        (
            "s2",
            if rng.below(3) == 0 {
                "ipv4_addr"
            } else {
                "ipv4_addr . inet_service"
            },
            if rng.below(3) == 0 {
                "ip saddr"
            } else {
                "ip saddr . th sport"
            },
        ),
    ];
    // Set 2's elements come from a file.
    let mut file = String::new();
    for (name, ty, m) in sets {
        let list: Vec<String> = match name {
            "s0" => els.clone(),
            "s2" => {
                let two = ty.contains('.') && m.contains('.');
                for k in 0..rng.below(30) {
                    let e = format!("192.0.2.{}", k * 7 % 250);
                    file.push_str(&if two {
                        format!("{e} . 53\n")
                    } else {
                        format!("{e}\n")
                    });
                }
                Vec::new()
            }
            _ => (0..rng.below(20))
                .map(|k| {
                    format!(
                        "{}-{} . {}",
                        k * 1000,
                        k * 1000 + 999,
                        ["tcp", "udp"][rng.below(2) as usize]
                    )
                })
                .collect(),
        };
        if name == "s2" && ty.contains('.') != m.contains('.') {
            continue;
        }
        s.push_str(&format!(
            "[[set]]\nname = \"{name}\"\ntype = \"{ty}\"\nmatch = \"{m}\"\naction = \"drop\"\n"
        ));
        if name == "s2" {
            s.push_str(&format!(
                "file = \"{}\"\n",
                set_file.file_name().unwrap().to_string_lossy()
            ));
        } else {
            s.push_str(&format!(
                "elements = [{}]\n",
                list.iter()
                    .map(|e| format!("\"{e}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    std::fs::write(set_file, file).unwrap();
    // Set 3: first match over overlapping port ranges, a random subset of
    // one order (elements come and go in the middle), now and then
    // reversed: a reload must keep the file's order.
    let mut fm: Vec<String> = (0..12)
        .filter(|_| rng.below(3) != 0)
        .map(|k| format!("{}-{} . tcp", k * 500, k * 500 + 3000))
        .collect();
    if rng.below(4) == 0 {
        fm.reverse();
    }
    s.push_str(&format!(
        "[[set]]\nname = \"s3\"\ntype = \"inet_service . inet_proto\"\nmatch = \"th dport . meta l4proto\"\npolicy = \"first-match\"\naction = \"drop\"\nelements = [{}]\n",
        fm.iter()
            .map(|e| format!("\"{e}\""))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for h in 0..hops {
        s.push_str(&format!(
            "[[next_hop]]\nname = \"h{h}\"\nport = \"p0\"\nmac = \"02:00:00:00:00:{h:02x}\"\n"
        ));
    }
    s
}

/// Looks a key up in every set of two snapshots and every address up in
/// both FIBs: they must agree.
fn same_answers(a: &Snapshot, b: &Snapshot, rng: &mut Rng) {
    assert_eq!(a.sets.len(), b.sets.len());
    for (x, y) in a.sets.iter().zip(&b.sets) {
        assert_eq!(
            (x.name.as_str(), x.snap.len()),
            (y.name.as_str(), y.snap.len())
        );
        let mut sx = x.snap.scratch();
        let mut sy = y.snap.scratch();
        for _ in 0..300 {
            let key: Vec<u8> = (0..x.key_len).map(|_| rng.below(256) as u8).collect();
            let (ex, ey) = (
                x.snap.lookup_element(&key, &mut sx),
                y.snap.lookup_element(&key, &mut sy),
            );
            assert_eq!(ex, ey, "set {}", x.name);
        }
        for e in y.snap.elements() {
            let starts: Vec<u128> = e.key.iter().map(|r| r.start).collect();
            let key = x.snap.decl().key_from_values(&starts);
            // In a first-match set an element's own key may find an
            // earlier one: the two tables must agree on which.
            let want = match x.snap.decl().policy() {
                matcher::Policy::FirstMatch => y.snap.lookup_element(&key, &mut sy),
                matcher::Policy::Disjoint => Some(e),
            };
            assert_eq!(x.snap.lookup_element(&key, &mut sx), want, "set {}", x.name);
        }
    }
    for _ in 0..2000 {
        let d = rng.next_u64() as u32;
        let f = routecache::Family::V4;
        let (ta, tb) = (a.fib.lookup(f, d as u128), b.fib.lookup(f, d as u128));
        let hop = |t: &Snapshot, id: Option<routecache::TargetId>| {
            id.and_then(|id| t.fib.targets().resolve(id, 0))
                .map(|h| h.dst_mac)
        };
        assert_eq!(hop(a, ta), hop(b, tb), "route to {d:#x}");
    }
}

#[test]
fn incremental_reloads_give_what_a_rebuild_gives() {
    let d = dir("diff");
    let path = d.join("r.toml");
    let set_file = d.join("s2.set");
    let mut rng = Rng(7);
    std::fs::write(&path, random_config(&mut rng, &set_file)).unwrap();
    let mut control = Control::start(&path).unwrap();
    let shared = control.shared();
    let mut incremental = 0;
    for round in 0..60 {
        std::fs::write(&path, random_config(&mut rng, &set_file)).unwrap();
        let r = control
            .reload()
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        incremental += usize::from(r.elements_added + r.elements_removed > 0);
        let cfg = config::load(&path).unwrap();
        let fresh = tables_build::snapshot(&cfg, 0).unwrap();
        same_answers(&shared.snapshot.load(), &fresh, &mut rng);
    }
    assert!(
        incremental > 30,
        "only {incremental} reloads were incremental"
    );
    std::fs::remove_dir_all(d).ok();
}

/// Thousands of reloads under two working workers leak nothing: every
/// replaced snapshot (and with it its sets and FIB) is freed.
#[test]
fn three_thousand_reloads_leak_nothing() {
    let (d, path, mut control, workers, seen) = start_ab("leak");
    let shared = control.shared();
    let mut weak = Vec::new();
    let first_set = Arc::downgrade(&shared.snapshot.load().sets[0].snap);
    let first_fib = Arc::downgrade(&shared.snapshot.load().fib);
    for i in 0..3000u64 {
        if i % 100 == 0 {
            weak.push(Arc::downgrade(&shared.snapshot.load_full()));
        }
        std::fs::write(&path, ab(if i % 2 == 0 { 'B' } else { 'A' })).unwrap();
        control.reload().unwrap();
        // The retired list stays short: old snapshots go as workers move on.
        assert!(control.reclaim() < 64, "snapshots pile up");
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(control.reclaim(), 0);
    assert!(
        weak.iter().all(|w| w.upgrade().is_none()),
        "a replaced snapshot is alive"
    );
    assert!(first_set.upgrade().is_none() && first_fib.upgrade().is_none());
    assert_eq!(shared.status.generation.load(Relaxed), 3001);
    shared.stop.store(true, Relaxed);
    for (_, h) in workers {
        h.join().unwrap();
    }
    assert!(seen.bad.lock().unwrap().is_empty());
    std::fs::remove_dir_all(d).ok();
}

/// Run-time element changes are published as quick snapshots (the
/// changes beside the set's last full commit) and compacted later into
/// the same elements with tables of their own; a reload meanwhile keeps
/// them on top of the files, and every snapshot answers as the elements
/// it lists.
#[test]
fn run_time_changes_go_quick_then_compact() {
    use forwarder::control::ElementOp;
    let d = dir("quick");
    let cfg = d.join("forwarder.toml");
    let set = d.join("deny.set");
    let mut text = String::new();
    for i in 0..2000u32 {
        text.push_str(&format!("10.{}.{}.0/24 . 7000\n", i >> 8, i & 255));
    }
    std::fs::write(&set, &text).unwrap();
    let conf = ab('A').replace(
        "elements = [\"198.51.100.0/24 . 7000\"]",
        &format!("file = \"{}\"", set.display()),
    );
    assert!(
        conf.contains("file ="),
        "the configuration names the set file"
    );
    std::fs::write(&cfg, &conf).unwrap();
    let mut c = Control::start(&cfg).unwrap();
    let shared = c.shared();
    let snap = || shared.snapshot.load().sets[0].snap.clone();
    let hits = |s: &matcher::Snapshot, key: &str| {
        let k = s.decl().parse_key(key).unwrap();
        s.lookup(&k, &mut s.scratch())
            .and_then(|id| s.element(id))
            .is_some()
    };
    assert!(!snap().is_quick());
    c.elements(ElementOp::Add, "deny", &["192.0.2.0/24 . 7000".into()])
        .unwrap();
    c.elements(ElementOp::Delete, "deny", &["10.0.5.0/24 . 7000".into()])
        .unwrap();
    let s = snap();
    assert!(s.is_quick(), "a run-time change is published quickly");
    assert_eq!(s.len(), 2000);
    assert!(hits(&s, "192.0.2.9 . 7000"));
    assert!(!hits(&s, "10.0.5.1 . 7000"));
    assert!(hits(&s, "10.0.6.1 . 7000"));
    // A file change meanwhile: the run-time changes stay on top.
    text.push_str("198.51.100.0/24 . 7000\n");
    std::fs::write(&set, &text).unwrap();
    c.reload().unwrap();
    let s = snap();
    assert!(!s.is_quick(), "a reload commits in full");
    assert_eq!(s.len(), 2001);
    assert!(hits(&s, "192.0.2.9 . 7000") && hits(&s, "198.51.100.1 . 7000"));
    assert!(!hits(&s, "10.0.5.1 . 7000"));
    c.elements(ElementOp::Add, "deny", &["203.0.113.0/24 . 7000".into()])
        .unwrap();
    assert!(snap().is_quick());
    assert!(!c.compact_due(), "not while changes are coming");
    std::thread::sleep(forwarder::control::COMPACT_QUIET);
    assert!(c.compact_due());
    c.compact();
    let s = snap();
    assert!(!s.is_quick() && !c.compact_due());
    assert_eq!(s.len(), 2002);
    for (key, hit) in [
        ("203.0.113.5 . 7000", true),
        ("192.0.2.9 . 7000", true),
        ("10.0.5.1 . 7000", false),
        ("10.0.7.1 . 7000", true),
        ("10.0.7.1 . 7001", false),
    ] {
        assert_eq!(hits(&s, key), hit, "{key}");
    }
    std::fs::remove_dir_all(d).ok();
}

/// Run-time elements with a timeout (`flags timeout`): in force until
/// their deadline, then no match at once on the workers (the flow cache's
/// stored decision notwithstanding), removed by the control side's sweep,
/// renewed when added again, listed with the time they have left.
#[test]
fn run_time_elements_expire_at_their_deadline() {
    use forwarder::control::ElementOp;
    use forwarder::pipeline::Pipeline;
    let d = dir("expire");
    let cfg = d.join("forwarder.toml");
    let text = ab('A').replace(
        "type = \"ipv4_addr . inet_service\"",
        "type = \"ipv4_addr . inet_service; flags timeout; timeout 1h\"",
    ) + "[flow_cache]\nentries = 1024\ninsert_one_in = 1\n";
    std::fs::write(&cfg, text).unwrap();
    let mut c = Control::start(&cfg).unwrap();
    let shared = c.shared();
    let frame = build::ipv4(0xc000_0201, 0xc633_6402, 64, L4::Udp(1000, 8000), 8);
    let forwarded = |t: &Snapshot, pipe: &mut Pipeline| {
        let mut b = Burst::new();
        for _ in 0..4 {
            b.push(&frame);
        }
        pipe.process(t, &mut b);
        pipe.out[0].len()
    };
    let listed = |c: &Control, what: &str| {
        c.list("deny")
            .unwrap()
            .elements
            .into_iter()
            .find(|e| e.starts_with(what))
    };
    let t = shared.snapshot.load_full();
    assert_eq!(t.next_expiry, matcher::NEVER);
    let mut pipe = Pipeline::new(&t, 1);
    assert_eq!(forwarded(&t, &mut pipe), 4);

    c.elements(
        ElementOp::Add,
        "deny",
        &["198.51.100.0/24 . 8000 timeout 300ms".into()],
    )
    .unwrap();
    let t = shared.snapshot.load_full();
    assert_ne!(t.next_expiry, matcher::NEVER);
    for _ in 0..4 {
        assert_eq!(forwarded(&t, &mut pipe), 0, "dropped while it lives");
    }
    assert!(
        pipe.flow_cache_stats().hits > 0,
        "the flow cache holds the drop"
    );
    let e = listed(&c, "198.51.100.0/24 . 8000").unwrap();
    assert!(
        e.starts_with("198.51.100.0/24 . 8000 timeout 300ms expires "),
        "{e}"
    );
    // Without its own timeout, the set's.
    c.elements(ElementOp::Add, "deny", &["203.0.113.0/24 . 53".into()])
        .unwrap();
    let e = listed(&c, "203.0.113.0/24 . 53").unwrap();
    assert!(
        e.starts_with("203.0.113.0/24 . 53 timeout 1h expires "),
        "{e}"
    );
    assert_eq!(c.expire(), 0);

    std::thread::sleep(Duration::from_millis(350));
    // Past the deadline, the sweep not yet run: the same snapshot's match
    // counts as none.
    assert_eq!(forwarded(&t, &mut pipe), 4, "forwarded once expired");
    assert_eq!(listed(&c, "198.51.100.0/24 . 8000"), None);
    assert_eq!(c.expire(), 1);
    assert_eq!(shared.status.expired.load(Relaxed), 1);
    let t2 = shared.snapshot.load_full();
    assert!(t2.generation > t.generation);
    assert_eq!(t2.sets[0].snap.len(), 2);
    assert_eq!(forwarded(&t2, &mut pipe), 4);

    // Added again before its deadline, an element gets a new one.
    let renew = |c: &mut Control| {
        c.elements(
            ElementOp::Add,
            "deny",
            &["192.0.2.0/24 . 9 timeout 250ms".into()],
        )
        .unwrap()
    };
    renew(&mut c);
    std::thread::sleep(Duration::from_millis(150));
    renew(&mut c);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(c.expire(), 0, "renewed");
    assert!(listed(&c, "192.0.2.0/24 . 9 timeout 250ms").is_some());
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(c.expire(), 1);

    // A file's elements take none.
    std::fs::write(
        &cfg,
        std::fs::read_to_string(&cfg)
            .unwrap()
            .replace(". 7000\"", ". 7000 timeout 1m\""),
    )
    .unwrap();
    let err = c.reload().unwrap_err();
    assert!(err.contains("forwarder element add"), "{err}");
    std::fs::remove_dir_all(d).ok();
}
