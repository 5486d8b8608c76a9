//! `bench matcher --classbench DIR`: ClassBench's rule sets in our
//! first-match sets and in DPDK's rte_acl (feature `dpdk`), on the same
//! rules and the same trace headers, bursts of 32, columns alternating
//! within each repetition. Per set: ns per lookup (median and best of the
//! repetitions), build time, one-rule update time, memory; and a check
//! that every column gives the answers of `*_trace.dpdk_acl_match`.

use crate::stats::{median, round, row};
use flate2::read::GzDecoder;
use matcher::{classbench, Impl, InsertMode, Set, Snapshot};
use serde_json::json;
use std::hint::black_box;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The nine sets, small first.
pub const SETS: [&str; 9] = [
    "acl1_1K",
    "fw1_1K",
    "ipc1_1K",
    "acl1_10K",
    "fw1_10K",
    "ipc1_10K",
    "acl1_100K",
    "fw1_100K",
    "ipc1_100K",
];

/// Bytes between keys: 13 bytes of 5-tuple, padded so rte_acl's 4-byte
/// input words never read past a key.
const STRIDE: usize = 16;
const BURST: usize = 32;

pub struct Options {
    pub dir: std::path::PathBuf,
    pub json: bool,
    pub quick: bool,
    pub imp: Option<Impl>,
}

/// A file of the set directory, plain or gzipped (`NAME.gz`).
fn read(dir: &Path, name: &str) -> Result<Option<String>, String> {
    let plain = dir.join(name);
    if plain.exists() {
        return std::fs::read_to_string(&plain)
            .map(Some)
            .map_err(|e| format!("{}: {e}", plain.display()));
    }
    let gz = dir.join(format!("{name}.gz"));
    if gz.exists() {
        let f = std::fs::File::open(&gz).map_err(|e| format!("{}: {e}", gz.display()))?;
        let mut s = String::new();
        GzDecoder::new(f)
            .read_to_string(&mut s)
            .map_err(|e| format!("{}: {e}", gz.display()))?;
        return Ok(Some(s));
    }
    Ok(None)
}

struct Row {
    set: &'static str,
    rules: usize,
    column: String,
    median_ns: f64,
    best_ns: f64,
    build_ms: f64,
    add_us: f64,
    delete_us: f64,
    memory_bytes: usize,
}

/// Our set of the rules, each with its rule number as priority (what
/// lets a rule go back between two others).
fn build_ours(rules: &classbench::Rules) -> (Set, Arc<Snapshot>) {
    let mut set = Set::new(classbench::decl());
    for e in &rules.elements {
        let mut e = e.clone();
        e.priority = classbench::rule_number(&e);
        set.insert(e, InsertMode::Create)
            .expect("first-match sets take overlaps");
    }
    let snap = set.commit();
    (set, snap)
}

/// Median µs to delete a rule and commit, then to put it back and commit,
/// over rules spread through the set.
fn time_updates(set: &mut Set, rules: &classbench::Rules) -> (f64, f64) {
    let (mut add, mut del) = (Vec::new(), Vec::new());
    let n = rules.elements.len();
    for k in 0..25 {
        let mut e = rules.elements[(k * 7919 + n / 2) % n].clone();
        e.priority = classbench::rule_number(&e);
        let t = Instant::now();
        set.delete(&e.key).expect("present");
        set.commit();
        del.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        set.insert(e, InsertMode::Create).expect("absent");
        set.commit();
        add.push(t.elapsed().as_secs_f64() * 1e6);
    }
    (median(&mut add), median(&mut del))
}

fn lookups(snap: &Snapshot, imp: Impl, keys: &[u8], out: &mut [Option<u32>]) -> usize {
    let mut scratch = snap.scratch();
    let mut found = 0;
    for (c, chunk) in keys.chunks(BURST * STRIDE).enumerate() {
        let n = chunk.len() / STRIDE;
        let o = &mut out[c * BURST..c * BURST + n];
        snap.lookup_burst_with(imp, chunk, STRIDE, o, &mut scratch);
        found += o.iter().flatten().count();
    }
    found
}

/// The rule number of every header, as the snapshot answers it.
fn answers(snap: &Snapshot, imp: Impl, keys: &[u8]) -> Vec<Option<u32>> {
    let mut out = vec![None; keys.len() / STRIDE];
    lookups(snap, imp, keys, &mut out);
    out.into_iter()
        .map(|id| {
            id.and_then(|id| snap.element(id))
                .and_then(classbench::rule_number)
        })
        .collect()
}

pub fn run(o: Options) -> Result<(), String> {
    #[cfg(feature = "dpdk")]
    let _eal = crate::acl::EalGuard;
    let imps: Vec<Impl> = match o.imp {
        Some(i) => vec![i],
        None => Impl::available(),
    };
    let reps = if o.quick { 3 } else { 9 };
    let mut rows = Vec::new();
    let mut found_any = false;
    for set in SETS {
        let Some(text) = read(&o.dir, set)? else {
            continue;
        };
        found_any = true;
        let trace = read(&o.dir, &format!("{set}_trace"))?
            .ok_or_else(|| format!("{}: no {set}_trace", o.dir.display()))?;
        let rules = classbench::parse_rules(set, &text).map_err(|e| e.to_string())?;
        let headers = classbench::parse_trace(set, &trace).map_err(|e| e.to_string())?;
        let want: Option<Vec<u32>> = read(&o.dir, &format!("{set}_trace.dpdk_acl_match"))?
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect());
        let mut keys = vec![0u8; headers.len() * STRIDE];
        for (h, k) in headers.iter().zip(keys.chunks_mut(STRIDE)) {
            k[..13].copy_from_slice(h);
        }
        // Build: the median of three, each from nothing.
        let mut builds = Vec::new();
        let mut built = None;
        for _ in 0..3 {
            let t = Instant::now();
            let b = build_ours(&rules);
            builds.push(t.elapsed().as_secs_f64() * 1e3);
            built = Some(b);
        }
        let (mut ours, snap) = built.expect("built");
        let build_ms = median(&mut builds);
        for &imp in &imps {
            let got = answers(&snap, imp, &keys);
            if let Some(w) = &want {
                if let Some(i) = (0..w.len()).find(|&i| got.get(i).copied().flatten() != Some(w[i]))
                {
                    return Err(format!(
                        "{set} {imp}: header {i} matches rule {:?}, rte_acl's answer is {}",
                        got[i], w[i]
                    ));
                }
            }
        }
        // Lookups are measured in the snapshot as built; the updates go on
        // in the set beside it.
        let memory = snap.memory_usage().total();
        let (add_us, delete_us) = time_updates(&mut ours, &rules);
        #[cfg(feature = "dpdk")]
        let acl = acl::Acl::build(&rules, &keys, want.as_deref())?;
        #[cfg_attr(not(feature = "dpdk"), allow(unused_mut))]
        let mut cols: Vec<String> = imps.iter().map(|i| i.name().to_string()).collect();
        #[cfg(feature = "dpdk")]
        cols.extend(acl.methods.iter().map(|(m, _)| format!("rte_acl_{m}")));
        let mut samples = vec![Vec::new(); cols.len()];
        let rounds = (2_000_000 / headers.len()).max(1);
        let mut out = vec![None; headers.len()];
        for _ in 0..reps {
            for (c, col) in cols.iter().enumerate() {
                let t = Instant::now();
                let mut found = 0;
                for _ in 0..rounds {
                    if let Some(&imp) = imps.iter().find(|i| i.name() == col) {
                        found += lookups(&snap, imp, &keys, &mut out);
                    } else {
                        #[cfg(feature = "dpdk")]
                        {
                            found += acl.run(col.trim_start_matches("rte_acl_"), &keys)?;
                        }
                    }
                }
                black_box(found);
                samples[c].push(t.elapsed().as_nanos() as f64 / (rounds * headers.len()) as f64);
            }
        }
        for (c, col) in cols.iter().enumerate() {
            let best = samples[c].iter().copied().fold(f64::INFINITY, f64::min);
            #[cfg(feature = "dpdk")]
            let (b_ms, a_us, d_us, mem) = if !col.starts_with("rte_acl") {
                (build_ms, add_us, delete_us, memory)
            } else {
                // rte_acl has no update of a built context: a changed
                // rule set is built again, whole.
                let b = acl.build_ms;
                (b, b * 1e3, b * 1e3, acl.memory)
            };
            #[cfg(not(feature = "dpdk"))]
            let (b_ms, a_us, d_us, mem) = (build_ms, add_us, delete_us, memory);
            rows.push(Row {
                set,
                rules: rules.rules,
                column: col.clone(),
                median_ns: median(&mut samples[c]),
                best_ns: best,
                build_ms: b_ms,
                add_us: a_us,
                delete_us: d_us,
                memory_bytes: mem,
            });
        }
        if !o.json {
            let (trees, nodes, leaves, elems, entries) =
                snap.classifier_shape().unwrap_or_default();
            eprintln!(
                "{set}: {} rules ({} repeat an earlier one), {trees} tree(s) of {nodes} nodes, \
                 {leaves} leaves, {entries} entries for {elems} elements",
                rules.rules, rules.shadowed
            );
        }
    }
    if !found_any {
        return Err(format!(
            "{}: none of {} (plain or .gz)",
            o.dir.display(),
            SETS.join(", ")
        ));
    }
    if o.json {
        for r in &rows {
            row(json!({
                "set": r.set,
                "rules": r.rules,
                "column": r.column,
                "ns_per_lookup": round(r.median_ns, 2),
                "best_ns": round(r.best_ns, 2),
                "build_ms": round(r.build_ms, 2),
                "add_us": round(r.add_us, 1),
                "delete_us": round(r.delete_us, 1),
                "memory_bytes": r.memory_bytes,
            }));
        }
    } else {
        println!("| set | rules | column | ns/lookup (median) | best | build ms | add µs | delete µs | memory |");
        println!("|---|---:|---|---:|---:|---:|---:|---:|---:|");
        for r in &rows {
            println!(
                "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} MiB |",
                r.set,
                r.rules,
                r.column,
                r.median_ns,
                r.best_ns,
                r.build_ms,
                r.add_us,
                r.delete_us,
                r.memory_bytes as f64 / (1 << 20) as f64
            );
        }
    }
    Ok(())
}

/// rte_acl on the ClassBench rules as `dpdk-test-acl` sets them up: the
/// protocol a bitmask field alone in the first input word, the addresses
/// prefix (mask) fields, the ports range fields sharing a word; priority
/// falling with the line; userdata the rule number + 1.
#[cfg(feature = "dpdk")]
mod acl {
    use super::{BURST, STRIDE};
    use crate::acl::{Classifier, Field, Kind, Rule, METHODS};
    use matcher::classbench;
    use std::time::Instant;

    pub struct Acl {
        pub ctx: Classifier,
        pub build_ms: f64,
        /// What the built context holds in DPDK's heap.
        pub memory: usize,
        /// The methods this machine runs, with their names.
        pub methods: Vec<(&'static str, u32)>,
    }

    fn prefix_len(lo: u128, hi: u128) -> u64 {
        32 - (hi - lo + 1).trailing_zeros() as u64
    }

    impl Acl {
        pub fn build(
            rules: &classbench::Rules,
            keys: &[u8],
            want: Option<&[u32]>,
        ) -> Result<Acl, String> {
            crate::acl::init_eal()?;
            let field = |kind, size, offset, input| Field {
                kind,
                size,
                offset,
                input,
            };
            let fields = [
                field(Kind::Bitmask, 1, 12, 0),
                field(Kind::Mask, 4, 0, 1),
                field(Kind::Mask, 4, 4, 2),
                field(Kind::Range, 2, 8, 3),
                field(Kind::Range, 2, 10, 3),
            ];
            let acl_rules: Vec<Rule> = rules
                .elements
                .iter()
                .map(|e| {
                    let n = classbench::rule_number(e).expect("numbered");
                    let k = &e.key;
                    let proto = if k[4].start == k[4].end {
                        (k[4].start as u64, 0xff)
                    } else {
                        (0, 0)
                    };
                    Rule {
                        userdata: n + 1,
                        priority: 0x1fff_ffff - n as i32,
                        fields: vec![
                            proto,
                            (k[0].start as u64, prefix_len(k[0].start, k[0].end)),
                            (k[1].start as u64, prefix_len(k[1].start, k[1].end)),
                            (k[2].start as u64, k[2].end as u64),
                            (k[3].start as u64, k[3].end as u64),
                        ],
                    }
                })
                .collect();
            let mut times = Vec::new();
            let mut ctx = None;
            let mut memory = 0;
            // Three builds, as ours; one past 20,000 rules, where one
            // takes rte_acl from seconds to minutes.
            for _ in 0..if rules.rules > 20_000 { 1 } else { 3 } {
                let before = crate::acl::heap_allocated();
                let t = Instant::now();
                let c = Classifier::build(&fields, &acl_rules)?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
                memory = crate::acl::heap_allocated().saturating_sub(before) as usize;
                ctx = Some(c);
            }
            let ctx = ctx.expect("built");
            let methods: Vec<_> = METHODS
                .into_iter()
                .filter(|&(_, m)| ctx.set_method(m).is_ok())
                .collect();
            let a = Acl {
                ctx,
                build_ms: crate::stats::median(&mut times),
                memory,
                methods,
            };
            if let Some(w) = want {
                for &(name, m) in &a.methods {
                    a.ctx.set_method(m)?;
                    let mut out = [0u32; BURST];
                    for (c, chunk) in keys.chunks(BURST * STRIDE).enumerate() {
                        let n = chunk.len() / STRIDE;
                        a.ctx.classify(chunk, STRIDE, &mut out[..n]);
                        for (j, &got) in out[..n].iter().enumerate() {
                            let i = c * BURST + j;
                            if got != w[i] + 1 {
                                return Err(format!(
                                    "rte_acl {name}: header {i} gives {}, the reference {}",
                                    got as i64 - 1,
                                    w[i]
                                ));
                            }
                        }
                    }
                }
            }
            Ok(a)
        }

        /// All keys through the method named `name`: how many matched.
        pub fn run(&self, name: &str, keys: &[u8]) -> Result<usize, String> {
            let &(_, m) = self
                .methods
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| format!("no rte_acl method {name}"))?;
            self.ctx.set_method(m)?;
            let mut out = [0u32; BURST];
            let mut found = 0;
            for chunk in keys.chunks(BURST * STRIDE) {
                let n = chunk.len() / STRIDE;
                self.ctx.classify(chunk, STRIDE, &mut out[..n]);
                found += out[..n].iter().filter(|&&r| r != 0).count();
            }
            Ok(found)
        }
    }
}
