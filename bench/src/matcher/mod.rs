//! `bench matcher`: the performance table of the kernel selftest
//! `nft_concat_range.sh`, reproduced per lookup on one core, every column
//! measured in the same run, round-robin, median of the repetitions.

mod keys;
mod shapes;

pub use shapes::Bench;

use crate::stats::{median, round, row, Rng};
use ahash::AHashSet;
use keys::{balanced_keys, Extractor, BURST, REC};
use matcher::selftest::Case;
use matcher::{Element, Impl, InsertMode, Set, SetConfig, SetDecl, Snapshot};
use serde_json::json;
use shapes::shape_keys;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

/// The columns, in table order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Column {
    Baseline,
    Hash,
    SingleField,
    Linear,
    Pipapo4,
    PipapoSwitch,
    Simd(Impl),
    /// The best vector kernel over the bitmaps alone (no interval tree,
    /// no classifier): bursts go through the bitmap lead, one key after
    /// another.
    NoTree(Impl),
    /// The best vector kernel, one key at a time (shapes only).
    Single(Impl),
    /// DPDK's classifier, `rte_acl` (feature `dpdk`), on the cases it can
    /// express (no MAC fields).
    #[cfg_attr(not(feature = "dpdk"), allow(dead_code))]
    Acl,
}

impl Column {
    fn name(self) -> &'static str {
        match self {
            Column::Baseline => "baseline",
            Column::Hash => "hash",
            Column::SingleField => "single_field",
            Column::Linear => "linear",
            Column::Pipapo4 => "pipapo_4bit",
            Column::PipapoSwitch => "pipapo_switch",
            Column::Simd(i) => i.name(),
            Column::NoTree(_) => "simd_no_tree",
            Column::Single(_) => "single_key",
            Column::Acl => "rte_acl",
        }
    }
}

/// Everything one case's columns look keys up in.
struct Structures {
    /// The kernel's algorithm alone (bitmaps, no tree, no classifier),
    /// 4-bit groups, and with the 8/4-bit switch.
    snap4: std::sync::Arc<Snapshot>,
    snap_bitmaps: std::sync::Arc<Snapshot>,
    /// The set as the forwarder builds it.
    snap: std::sync::Arc<Snapshot>,
    hash: AHashSet<[u8; 32]>,
    tree: BTreeMap<u128, (u128, u32)>,
    linear: Vec<u128>,
    nfields: usize,
    #[cfg(feature = "dpdk")]
    acl: Option<crate::acl::Classifier>,
}

/// Results of one case.
pub struct CaseResult {
    pub name: String,
    pub entries: usize,
    pub cells: Vec<(&'static str, f64)>, // (column, ns per lookup)
    pub load_s: f64,
    pub add_us: f64,
    pub delete_us: f64,
    pub commit_us: f64,
    pub memory_bytes: usize,
    pub groups: String,
    /// Whether the set's snapshot has an interval tree.
    pub tree: bool,
}

/// Keys: half hits spread over every element, half misses (values in the
/// gaps or past the last entry, or a hit with one field changed).
fn make_keys(case: Case, elems: &[Element], snap: &Snapshot, n: usize, rng: &mut Rng) -> Vec<u8> {
    let decl = snap.decl().clone();
    let ranges = case.ranges(elems.len());
    let top = ranges.last().map(|r| r.1).unwrap_or(0);
    balanced_keys(snap, n, rng, |rng, want_hit, desperate| {
        if want_hit {
            let (s, e) = ranges[rng.below(ranges.len() as u64) as usize];
            case.key_values(s + rng.below((e - s + 1) as u64) as u128)
        } else if rng.below(2) == 0 || desperate {
            case.key_values(rng.below(top as u64 + 2000) as u128)
        } else {
            let (s, e) = ranges[rng.below(ranges.len() as u64) as usize];
            let mut v = case.key_values(s + rng.below((e - s + 1) as u64) as u128);
            let f = rng.below(v.len() as u64) as usize;
            let t = decl.fields()[f];
            v[f] = (v[f] ^ (1 + rng.below(1 << 12) as u128)) & t.max();
            v
        }
    })
}

fn build(decl: &SetDecl, elems: &[Element]) -> (Structures, f64, f64, f64, f64) {
    let decl = decl.clone();
    let nfields = decl.fields().len();
    let bitmaps = SetConfig {
        interval_tree: false,
        classifier: false,
        ..SetConfig::default()
    };
    // The 4-bit-only set: a zero threshold switches every field at once,
    // and a zero low threshold never switches back.
    let mut set4 = Set::with_config(
        decl.clone(),
        SetConfig {
            lt_size_high: 0,
            lt_size_low: 0,
            ..bitmaps
        },
    );
    for e in elems {
        set4.insert(e.clone(), InsertMode::Create).unwrap();
    }
    let snap4 = set4.commit();
    let mut set_b = Set::with_config(decl.clone(), bitmaps);
    for e in elems {
        set_b.insert(e.clone(), InsertMode::Create).unwrap();
    }
    let snap_bitmaps = set_b.commit();
    let t = Instant::now();
    let mut set = Set::new(decl.clone());
    for e in elems {
        set.insert(e.clone(), InsertMode::Create).unwrap();
    }
    let snap = set.commit();
    let load_s = t.elapsed().as_secs_f64();
    let (add_us, commit_us, delete_us) =
        crate::stats::time_single_update(&mut set, &elems[elems.len() - 1]);

    let mut hash = AHashSet::with_capacity(elems.len());
    let mut tree = BTreeMap::new();
    let mut linear = Vec::with_capacity(elems.len() * nfields * 2);
    for (id, e) in elems.iter().enumerate() {
        let start: Vec<u128> = e.key.iter().map(|r| r.start).collect();
        let mut k = [0u8; 32];
        let kb = decl.key_from_values(&start);
        k[..kb.len()].copy_from_slice(&kb);
        hash.insert(k);
        tree.insert(e.key[0].start, (e.key[0].end, id as u32));
        for r in e.key.iter() {
            linear.push(r.start);
            linear.push(r.end);
        }
    }
    (
        Structures {
            snap4,
            snap_bitmaps,
            snap,
            hash,
            tree,
            linear,
            nfields,
            #[cfg(feature = "dpdk")]
            acl: acl::build(&decl, elems),
        },
        load_s,
        add_us,
        delete_us,
        commit_us,
    )
}

/// Runs one column over every key `rounds` times: ns per lookup.
fn measure(col: Column, s: &Structures, x: &Extractor, recs: &[u8], rounds: usize) -> f64 {
    let nkeys = recs.len() / REC;
    let stride = x.klen;
    let mut keys = vec![0u8; BURST * stride + 16];
    let mut out = [None; BURST];
    #[cfg(feature = "dpdk")]
    let mut acl_out = [0u32; BURST];
    let mut scratch = s.snap.scratch();
    scratch.ensure(s.snap4.scratch_words().max(s.snap_bitmaps.scratch_words()));
    let decl = s.snap.decl();
    let t0 = decl.fields()[0];
    let mut found = 0usize;
    let t = Instant::now();
    for _ in 0..rounds {
        for burst in recs.chunks(BURST * REC) {
            let n = burst.len() / REC;
            for j in 0..n {
                x.extract(&burst[j * REC..], &mut keys[j * stride..]);
            }
            match col {
                Column::Baseline => {
                    black_box(&mut keys);
                }
                Column::Hash => {
                    for j in 0..n {
                        let mut k = [0u8; 32];
                        k[..stride].copy_from_slice(&keys[j * stride..(j + 1) * stride]);
                        found += s.hash.contains(&k) as usize;
                    }
                }
                Column::SingleField => {
                    for j in 0..n {
                        let v = t0.read_key(&keys[j * stride..]);
                        if let Some((_, &(end, _))) = s.tree.range(..=v).next_back() {
                            found += (end >= v) as usize;
                        }
                    }
                }
                Column::Linear => {
                    for j in 0..n {
                        let mut vals = [0u128; 4];
                        let mut off = j * stride;
                        for (f, &t) in decl.fields().iter().enumerate() {
                            vals[f] = t.read_key(&keys[off..]);
                            off += t.bytes();
                        }
                        let hit = s.linear.chunks_exact(2 * s.nfields).position(|e| {
                            (0..s.nfields).all(|f| e[2 * f] <= vals[f] && vals[f] <= e[2 * f + 1])
                        });
                        found += hit.is_some() as usize;
                    }
                }
                Column::Single(i) => {
                    for j in 0..n {
                        let k = &keys[j * stride..(j + 1) * stride];
                        found += s.snap.lookup_with(i, k, &mut scratch).is_some() as usize;
                    }
                }
                Column::Pipapo4 | Column::PipapoSwitch | Column::Simd(_) | Column::NoTree(_) => {
                    let (snap, imp) = match col {
                        Column::Pipapo4 => (&s.snap4, Impl::Scalar),
                        Column::Simd(i) => (&s.snap, i),
                        Column::NoTree(i) => (&s.snap_bitmaps, i),
                        _ => (&s.snap_bitmaps, Impl::Scalar),
                    };
                    snap.lookup_burst_with(imp, &keys, stride, &mut out[..n], &mut scratch);
                    found += out[..n].iter().flatten().count();
                }
                #[cfg(feature = "dpdk")]
                Column::Acl => {
                    let acl = s.acl.as_ref().expect("a classifier for this case");
                    acl.classify(&keys, stride, &mut acl_out[..n]);
                    found += acl_out[..n].iter().filter(|&&r| r != 0).count();
                }
                #[cfg(not(feature = "dpdk"))]
                Column::Acl => unreachable!("built without DPDK"),
            }
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / (rounds * nkeys) as f64;
    black_box(found);
    // Every column but the baseline finds the same hits (the hash column
    // finds only the keys equal to an element's start).
    ns
}

fn dump(
    dir: &Path,
    case: &str,
    decl: &SetDecl,
    elems: &[Element],
    recs: &[u8],
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let name = case.replace(',', "-");
    let mut set = format!(
        "# bench matcher {case} with {} entries\n{decl}\n",
        elems.len()
    );
    for e in elems {
        set.push_str(&decl.format_element(e));
        set.push('\n');
    }
    std::fs::write(dir.join(format!("{name}.set")), set)?;
    let mut keys = String::new();
    let x = Extractor::new(decl);
    let mut key = vec![0u8; x.klen + 16];
    for rec in recs.chunks(REC) {
        x.extract(rec, &mut key);
        keys.push_str(&decl.format_key(&key[..x.klen]));
        keys.push('\n');
    }
    std::fs::write(dir.join(format!("{name}.keys")), keys)
}

pub struct Options {
    pub json: bool,
    pub quick: bool,
    pub dump: Option<std::path::PathBuf>,
    pub imp: Option<Impl>,
    pub cases: Vec<Bench>,
}

pub fn run(o: Options) -> Result<(), String> {
    #[cfg(feature = "dpdk")]
    let _eal = crate::acl::EalGuard;
    let mut rng = Rng(0x5eed);
    let simd: Vec<Impl> = match o.imp {
        // Checked when parsed (`Impl::parse_supported`).
        Some(i) => vec![i],
        None => [Impl::Avx2, Impl::Avx512]
            .into_iter()
            .filter(|i| i.supported())
            .collect(),
    };
    let reps = if o.quick { 3 } else { 7 };
    let nkeys = if o.quick { 1 << 14 } else { 1 << 16 };
    let target_lookups = if o.quick { 1_000_000 } else { 4_000_000 };
    let mut results = Vec::new();
    for &case in &o.cases {
        let (name, decl, elems) = match case {
            Bench::Selftest(c) => (c.name().to_string(), c.decl(), c.entries(c.perf_entries())),
            Bench::Shape(sh) => (sh.name().to_string(), sh.decl(), sh.elements()),
        };
        let entries = elems.len();
        let (s, load_s, add_us, delete_us, commit_us) = build(&decl, &elems);
        let recs = match case {
            Bench::Selftest(c) => make_keys(c, &elems, &s.snap, nkeys, &mut rng),
            Bench::Shape(_) => shape_keys(&elems, &s.snap, nkeys, &mut rng),
        };
        if let Some(dir) = &o.dump {
            dump(dir, &name, &decl, &elems, &recs)
                .map_err(|e| format!("--dump {}: {e}", dir.display()))?;
        }
        let x = Extractor::new(s.snap.decl());
        let mut cols = vec![
            Column::Baseline,
            Column::Hash,
            Column::SingleField,
            Column::Linear,
            Column::Pipapo4,
            Column::PipapoSwitch,
        ];
        cols.extend(simd.iter().map(|&i| Column::Simd(i)));
        if let Some(&best) = simd.last() {
            cols.push(Column::NoTree(best));
            if matches!(case, Bench::Shape(_)) {
                cols.push(Column::Single(best));
            }
        }
        #[cfg(feature = "dpdk")]
        if s.acl.is_some() {
            acl::check(&s, &x, &recs)?;
            cols.push(Column::Acl);
        }
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); cols.len()];
        for _ in 0..reps {
            for (c, &col) in cols.iter().enumerate() {
                // The linear scan is slow: fewer keys, same statistic.
                let (r, rounds) = if col == Column::Linear {
                    let keep = (200_000 / entries).clamp(256, nkeys);
                    (&recs[..keep * REC], 1)
                } else {
                    (&recs[..], (target_lookups / nkeys).max(1))
                };
                samples[c].push(measure(col, &s, &x, r, rounds));
            }
        }
        let cells = cols
            .iter()
            .zip(samples.iter_mut())
            .map(|(c, v)| (c.name(), median(v)))
            .collect();
        let groups: Vec<String> = s
            .snap
            .fields()
            .iter()
            .map(|f| f.group_bits().to_string())
            .collect();
        results.push(CaseResult {
            name,
            entries,
            cells,
            load_s,
            add_us,
            delete_us,
            commit_us,
            memory_bytes: s.snap.memory_usage().total(),
            groups: groups.join("/"),
            tree: s.snap.has_interval_tree(),
        });
    }
    if o.json {
        print_json(&results);
    } else {
        print_table(&results);
    }
    Ok(())
}

fn print_json(results: &[CaseResult]) {
    for r in results {
        for (col, ns) in &r.cells {
            row(json!({
                "case": r.name,
                "entries": r.entries,
                "column": col,
                "ns_per_lookup": round(*ns, 2),
                "mlookups_per_s": round(1e3 / ns, 2),
            }));
        }
        row(json!({
            "case": r.name,
            "entries": r.entries,
            "load_s": round(r.load_s, 4),
            "add_us": round(r.add_us, 1),
            "delete_us": round(r.delete_us, 1),
            "commit_us": round(r.commit_us, 1),
            "memory_bytes": r.memory_bytes,
            "group_bits": r.groups,
            "interval_tree": r.tree,
        }));
    }
}

fn print_table(results: &[CaseResult]) {
    // Every column any case has, in order (rte_acl only where it can
    // express the case).
    let mut cols: Vec<&str> = Vec::new();
    for r in results {
        for c in &r.cells {
            if !cols.contains(&c.0) {
                cols.push(c.0);
            }
        }
    }
    println!("ns per lookup (M lookups/s), one core, bursts of {BURST}, median of the repetitions; key extraction included in every column");
    println!();
    print!("| type | entries |");
    for c in &cols {
        print!(" {c} |");
    }
    println!(" best SIMD vs scalar | interval tree gain | best path − baseline |");
    print!("|---|---:|");
    for _ in &cols {
        print!("---:|");
    }
    println!("---:|---:|---:|");
    for r in results {
        print!("| {} | {} |", r.name, r.entries);
        for c in &cols {
            match r.cells.iter().find(|x| x.0 == *c) {
                Some((_, ns)) => print!(" {ns:.1} ({:.1}) |", 1e3 / ns),
                None => print!(" n/a |"),
            }
        }
        let scalar = r.cells.iter().find(|c| c.0 == "pipapo_switch").map(|c| c.1);
        let best = r
            .cells
            .iter()
            .filter(|c| c.0 == "avx2" || c.0 == "avx512")
            .map(|c| c.1)
            .fold(f64::INFINITY, f64::min);
        match scalar {
            Some(s) if best.is_finite() => print!(" {:.2}x |", s / best),
            _ => print!(" - |"),
        }
        match r.cells.iter().find(|c| c.0 == "simd_no_tree") {
            Some(&(_, nt)) if best.is_finite() && r.tree => print!(" {:.2}x |", nt / best),
            _ => print!(" - |"),
        }
        // The lookup alone, as the kernel's figures are quoted: the
        // baseline is the same key extraction without the lookup.
        let base = r.cells.iter().find(|c| c.0 == "baseline").map(|c| c.1);
        match base {
            Some(b) if best.is_finite() => println!(" {:.1} |", best - b),
            _ => println!(" - |"),
        }
    }
    println!();
    println!("| type | entries | load (ms) | add one (µs) | delete one (µs) | commit (µs) | memory (KiB) | group bits | interval tree |");
    println!("|---|---:|---:|---:|---:|---:|---:|---|---|");
    for r in results {
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.0} | {} | {} | {} |",
            r.name,
            r.entries,
            r.load_s * 1e3,
            r.add_us,
            r.delete_us,
            r.commit_us,
            r.memory_bytes / 1024,
            r.groups,
            if r.tree { "yes" } else { "no" }
        );
    }
}

/// The `rte_acl` column: the case's elements as ACL rules, over the same
/// packed keys.
#[cfg(feature = "dpdk")]
mod acl {
    use super::{Extractor, Structures, BURST, REC};
    use crate::acl::{Classifier, Field, Kind, Rule};
    use matcher::{Element, FieldType, Impl, SetDecl};

    /// The classifier of `elems`, or `None` where ACL cannot express the
    /// fields (MAC addresses). EAL starts on first use, without huge
    /// pages.
    pub fn build(decl: &SetDecl, elems: &[Element]) -> Option<Classifier> {
        if decl.fields().contains(&FieldType::EtherAddr) {
            return None;
        }
        if let Err(e) = crate::acl::init_eal() {
            eprintln!("bench matcher: rte_acl column left out: {e}");
            return None;
        }
        // Fields: a wildcard byte alone in input word 0 (DPDK wants the
        // first field one byte long), then per set field: a 4-byte range
        // (IPv4, mark), four 4-byte masks (IPv6), or small fields packed
        // with wildcard bytes into 4-byte words (port, protocol).
        let mut fields = vec![Field {
            kind: Kind::Range,
            size: 1,
            offset: 0,
            input: 0,
        }];
        // Per set field: the ACL fields it feeds; wildcards get none.
        let mut map: Vec<(FieldType, Vec<usize>)> = Vec::new();
        let mut off = 0u32;
        let mut input = 1u8;
        let ts = decl.fields();
        let mut i = 0;
        while i < ts.len() {
            let t = ts[i];
            match t {
                FieldType::Ipv4Addr | FieldType::Mark => {
                    map.push((t, vec![fields.len()]));
                    fields.push(Field {
                        kind: Kind::Range,
                        size: 4,
                        offset: off,
                        input,
                    });
                    input += 1;
                    off += 4;
                    i += 1;
                }
                FieldType::Ipv6Addr => {
                    let mut v = Vec::new();
                    for k in 0..4 {
                        v.push(fields.len());
                        fields.push(Field {
                            kind: Kind::Mask,
                            size: 4,
                            offset: off + 4 * k,
                            input,
                        });
                        input += 1;
                    }
                    map.push((t, v));
                    off += 16;
                    i += 1;
                }
                _ => {
                    // Small fields into one word.
                    let mut used = 0u32;
                    while i < ts.len()
                        && matches!(ts[i], FieldType::InetService | FieldType::InetProto)
                        && used + ts[i].bytes() as u32 <= 4
                    {
                        let b = ts[i].bytes() as u32;
                        map.push((ts[i], vec![fields.len()]));
                        fields.push(Field {
                            kind: Kind::Range,
                            size: b as u8,
                            offset: off + used,
                            input,
                        });
                        used += b;
                        i += 1;
                    }
                    let start = off + used;
                    for k in 0..(4 - used) {
                        fields.push(Field {
                            kind: Kind::Range,
                            size: 1,
                            offset: start + k,
                            input,
                        });
                    }
                    off += used;
                    input += 1;
                }
            }
        }
        let mut rules = Vec::new();
        for (id, e) in elems.iter().enumerate() {
            // Wildcards everywhere, then the element's fields; an IPv6
            // range becomes its prefixes, one rule each.
            let base: Vec<(u64, u64)> = fields
                .iter()
                .map(|f| match f.kind {
                    Kind::Range => (0, (1u64 << (8 * f.size as u32)) - 1),
                    Kind::Mask | Kind::Bitmask => (0, 0),
                })
                .collect();
            let mut alts = vec![base];
            for ((t, idx), r) in map.iter().zip(e.key.iter()) {
                match t {
                    FieldType::Ipv6Addr => {
                        let mut next = Vec::new();
                        for a in &alts {
                            for p in r.to_prefixes(128) {
                                let mut a = a.clone();
                                for (k, &fi) in idx.iter().enumerate() {
                                    let word = (p.value >> (96 - 32 * k)) as u32 as u64;
                                    let len = p.len.saturating_sub(32 * k as u32).min(32) as u64;
                                    a[fi] = (if len == 0 { 0 } else { word }, len);
                                }
                                next.push(a);
                            }
                        }
                        alts = next;
                    }
                    _ => {
                        for a in alts.iter_mut() {
                            a[idx[0]] = (r.start as u64, r.end as u64);
                        }
                    }
                }
            }
            rules.extend(alts.into_iter().map(|f| Rule {
                userdata: id as u32 + 1,
                priority: 1,
                fields: f,
            }));
        }
        match Classifier::build(&fields, &rules) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("bench matcher: rte_acl column left out: {e}");
                None
            }
        }
    }

    /// Every key gets from ACL the element pipapo finds.
    pub fn check(s: &Structures, x: &Extractor, recs: &[u8]) -> Result<(), String> {
        let acl = s.acl.as_ref().expect("built");
        let stride = x.klen;
        let mut keys = vec![0u8; BURST * stride + 16];
        let mut scratch = s.snap.scratch();
        let mut out = [0u32; BURST];
        for burst in recs.chunks(BURST * REC) {
            let n = burst.len() / REC;
            for j in 0..n {
                x.extract(&burst[j * REC..], &mut keys[j * stride..]);
            }
            acl.classify(&keys, stride, &mut out[..n]);
            for (j, &got) in out[..n].iter().enumerate() {
                let want = s
                    .snap
                    .lookup_with(
                        Impl::Scalar,
                        &keys[j * stride..(j + 1) * stride],
                        &mut scratch,
                    )
                    .map_or(0, |id| id + 1);
                if got != want {
                    return Err(format!(
                        "rte_acl and pipapo disagree on key {}: {got} vs {want}",
                        s.snap
                            .decl()
                            .format_key(&keys[j * stride..(j + 1) * stride])
                    ));
                }
            }
        }
        Ok(())
    }
}
