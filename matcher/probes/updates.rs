//! Deletes and re-inserts ClassBench rules one commit at a time, for
//! profilers: what one change of a first-match set costs. Arguments:
//! RULES [ROUNDS].

use matcher::{classbench, InsertMode, Set};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let rules = classbench::parse_rules(&a[1], &std::fs::read_to_string(&a[1]).unwrap()).unwrap();
    let rounds: usize = a.get(2).map_or(1000, |r| r.parse().unwrap());
    let ranked: Vec<_> = rules
        .elements
        .into_iter()
        .map(|mut e| {
            e.priority = classbench::rule_number(&e);
            e
        })
        .collect();
    let mut set = Set::new(classbench::decl());
    for e in &ranked {
        set.insert(e.clone(), InsertMode::Create).unwrap();
    }
    set.commit();
    let t = std::time::Instant::now();
    for k in 0..rounds {
        let e = &ranked[(k * 7919) % ranked.len()];
        set.delete(&e.key).unwrap();
        set.commit();
        set.insert(e.clone(), InsertMode::Create).unwrap();
        set.commit();
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / (2 * rounds) as f64;
    println!(
        "{} rules: {us:.1} µs a change and commit, rebuilds included",
        ranked.len()
    );
}
