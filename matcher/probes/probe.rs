//! Times lookups of hits and misses for one selftest case or set file.
use matcher::selftest::Case;
use matcher::{Impl, InsertMode, Set, SetConfig};
use std::time::Instant;

/// The next value of a small LCG, for picking keys.
fn lcg(x: &mut u64) -> u64 {
    *x = x
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *x
}

/// The elements and 4,096 hit and miss keys of a set file (`*.set`):
/// hits anywhere inside a random element, misses a hit with one field
/// moved to a random value (most of which miss).
fn from_file(path: &str, config: SetConfig) -> (matcher::Snapshot, Vec<u8>, Vec<u8>) {
    let text = std::fs::read_to_string(path).unwrap();
    let file = matcher::file::SetFile::parse(path, &text).unwrap();
    let decl = file.decl.clone();
    let elems: Vec<matcher::Element> = file.elements.into_iter().map(|(_, e)| e).collect();
    let mut set = Set::with_config(decl.clone(), config);
    for e in &elems {
        set.insert(e.clone(), InsertMode::Add).unwrap();
    }
    let snap = (*set.commit()).clone();
    let (mut hits, mut misses) = (Vec::new(), Vec::new());
    let mut x = 1u64;
    for _ in 0..4096 {
        let e = &elems[lcg(&mut x) as usize % elems.len()];
        let mut v: Vec<u128> = e
            .key
            .iter()
            .map(|r| r.start + (lcg(&mut x) as u128) % (r.end - r.start + 1))
            .collect();
        hits.extend(decl.key_from_values(&v));
        let f = lcg(&mut x) as usize % v.len();
        v[f] = ((lcg(&mut x) as u128) << 64 | lcg(&mut x) as u128) & decl.fields()[f].max();
        misses.extend(decl.key_from_values(&v));
    }
    (snap, hits, misses)
}

/// The selftest case's set and 4,096 hit and miss keys.
fn from_case(case: Case, config: SetConfig) -> (matcher::Snapshot, Vec<u8>, Vec<u8>) {
    let mut set = Set::with_config(case.decl(), config);
    let ranges = case.ranges(case.perf_entries());
    for &(s, e) in &ranges {
        set.insert(case.element(s, e), InsertMode::Create).unwrap();
    }
    let snap = (*set.commit()).clone();
    let decl = snap.decl().clone();
    let mut hits = Vec::new();
    let mut misses = Vec::new();
    let mut x = 1u64;
    for _ in 0..4096 {
        lcg(&mut x);
        let (s, e) = ranges[(x >> 33) as usize % ranges.len()];
        let n = s + (x >> 20) as u128 % (e - s + 1);
        hits.extend(decl.key_from_values(&case.key_values(n)));
        let top = ranges.last().unwrap().1;
        let m = top + 1 + (x >> 40) as u128 % 1000;
        misses.extend(decl.key_from_values(&case.key_values(m)));
    }
    (snap, hits, misses)
}

fn main() {
    // A selftest case's name, or a set file.
    let name = std::env::args().nth(1).unwrap_or("net,port".into());
    // PROBE_TREE=0: without the interval tree (the bitmap lead only).
    let config = SetConfig {
        interval_tree: std::env::var("PROBE_TREE").map_or(true, |v| v != "0"),
        ..Default::default()
    };
    let (snap, mut hits, mut misses) = match Case::from_name(&name) {
        Some(case) => from_case(case, config),
        None => from_file(&name, config),
    };
    let klen = snap.decl().key_len();
    println!("interval tree: {}", snap.has_interval_tree());
    windows(&snap, &hits, klen);
    println!("lead field: {:?}", snap.lead_field());
    if std::env::var("PROBE_HOT").is_ok() {
        // The same 32 keys over and over: every table line stays in L1.
        let hot: Vec<u8> = hits[..32 * klen].to_vec();
        hits = hot.repeat(128);
        let hot: Vec<u8> = misses[..32 * klen].to_vec();
        misses = hot.repeat(128);
    }
    let mut scratch = snap.scratch();
    // Round-robin over (implementation, keys, burst or one by one),
    // median of 7 rounds, so that the machine's noise hits all alike.
    let mut cells: Vec<(String, Vec<f64>)> = Vec::new();
    let rounds: usize = std::env::var("PROBE_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let reps: usize = std::env::var("PROBE_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    for round in 0..rounds {
        let mut c = 0;
        // PROBE_IMPL=name and PROBE_MODE=burst|single narrow the cells.
        let only_imp = std::env::var("PROBE_IMPL").ok();
        let only_mode = std::env::var("PROBE_MODE").ok();
        for imp in Impl::available() {
            if only_imp.as_ref().is_some_and(|o| o != imp.name()) {
                continue;
            }
            for (what, keys) in [("hits", &hits), ("misses", &misses)] {
                for burst in [true, false] {
                    if only_mode.as_ref().is_some_and(|m| (m == "burst") != burst) {
                        continue;
                    }
                    let mut out = [None; 32];
                    let t = Instant::now();
                    let mut found = 0;
                    for _ in 0..reps {
                        for b in keys.chunks(32 * klen) {
                            let n = b.len() / klen;
                            if burst {
                                snap.lookup_burst_with(imp, b, klen, &mut out[..n], &mut scratch);
                            } else {
                                for j in 0..n {
                                    out[j] = snap.lookup_with(imp, &b[j * klen..], &mut scratch);
                                }
                            }
                            found += out[..n].iter().flatten().count();
                        }
                    }
                    std::hint::black_box(found);
                    let ns = t.elapsed().as_nanos() as f64 / (reps as f64 * 4096.0);
                    if round == 0 {
                        let mode = if burst { "burst" } else { "single" };
                        cells.push((format!("{name} {imp:7} {what:6} {mode:6}"), Vec::new()));
                    }
                    cells[c].1.push(ns);
                    c += 1;
                }
            }
        }
    }
    for (label, mut v) in cells {
        v.sort_by(|a, b| a.total_cmp(b));
        println!("{label} {:7.1} ns (min {:.1})", v[v.len() / 2], v[0]);
    }
}

/// Average field-0 window (words) over the hit keys.
#[allow(dead_code)]
pub fn windows(snap: &matcher::Snapshot, keys: &[u8], klen: usize) {
    let f = &snap.fields()[0];
    let mut tot = 0usize;
    let mut n = 0usize;
    for k in keys.chunks(klen) {
        let (mut lo, mut hi) = (0, f.words());
        for g in 0..f.groups() as usize {
            let (a, b) = f.bucket_window(g, f.group_value(k, g));
            print!("");
            lo = lo.max(a);
            hi = hi.min(b);
        }
        tot += hi.saturating_sub(lo);
        n += 1;
    }
    println!(
        "field 0 average window {:.1} words of {}",
        tot as f64 / n as f64,
        f.words()
    );
}
