//! Looks a ClassBench trace up in a first-match set of its rules, in
//! bursts of 32, many times over: for profilers (`perf record`,
//! `valgrind --tool=callgrind`). Arguments: RULES TRACE [ROUNDS] [IMPL].

use matcher::{classbench, Impl, InsertMode, Set};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let rules = classbench::parse_rules(&a[1], &std::fs::read_to_string(&a[1]).unwrap()).unwrap();
    let keys = classbench::parse_trace(&a[2], &std::fs::read_to_string(&a[2]).unwrap()).unwrap();
    let rounds: usize = a.get(3).map_or(100, |r| r.parse().unwrap());
    let imp = a.get(4).map_or(Impl::detect(), |s| Impl::parse(s).unwrap());
    let mut set = Set::new(classbench::decl());
    for e in rules.elements {
        set.insert(e, InsertMode::Create).unwrap();
    }
    let snap = set.commit();
    let flat: Vec<u8> = keys.iter().flatten().copied().collect();
    let mut out = [None; 32];
    let mut scratch = snap.scratch();
    let mut found = 0usize;
    let t = std::time::Instant::now();
    for _ in 0..rounds {
        for chunk in flat.chunks(32 * 13) {
            let n = chunk.len() / 13;
            snap.lookup_burst_with(imp, chunk, 13, &mut out[..n], &mut scratch);
            found += out[..n].iter().flatten().count();
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / (rounds * keys.len()) as f64;
    println!(
        "{} keys x {rounds}: {ns:.1} ns per lookup ({found} found), {imp}, shape {:?}",
        keys.len(),
        snap.classifier_shape()
    );
    println!(
        "leaves by groups of 16: {:?}",
        snap.classifier_leaf_groups()
    );
}
