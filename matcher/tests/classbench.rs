//! ClassBench's nine rule sets in first-match sets give, for every header
//! of their traces, the rule DPDK's rte_acl gave (the answers in
//! `testdata/classbench/*.dpdk_acl_match`), with every implementation,
//! in bursts and one key at a time; and after rules are deleted and put
//! back at their places, the same again.

use flate2::read::GzDecoder;
use matcher::{classbench, Impl, InsertMode, Set, Snapshot};
use std::io::Read;

pub fn testdata(name: &str) -> String {
    let p = format!(
        "{}/../testdata/classbench/{name}.gz",
        env!("CARGO_MANIFEST_DIR")
    );
    let f = std::fs::File::open(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    let mut s = String::new();
    GzDecoder::new(f).read_to_string(&mut s).unwrap();
    s
}

fn answers(set: &str) -> Vec<u32> {
    testdata(&format!("{set}_trace.dpdk_acl_match"))
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// Every header looked up in a burst with `imp` gives rte_acl's answer.
fn assert_answers(snap: &Snapshot, imp: Impl, flat: &[u8], want: &[u32], what: &str) {
    let mut out = vec![None; want.len()];
    snap.lookup_burst_with(imp, flat, 13, &mut out, &mut snap.scratch());
    for (i, (o, w)) in out.iter().zip(want).enumerate() {
        let got = o
            .and_then(|id| snap.element(id))
            .and_then(classbench::rule_number);
        assert_eq!(got, Some(*w), "{what} {imp}: header {i}");
    }
}

/// A set's rules, its trace's keys and rte_acl's answers.
fn load(set: &str) -> (classbench::Rules, Vec<[u8; 13]>, Vec<u32>) {
    let rules = classbench::parse_rules(set, &testdata(set)).unwrap();
    let keys = classbench::parse_trace(set, &testdata(&format!("{set}_trace"))).unwrap();
    let want = answers(set);
    assert_eq!(keys.len(), want.len());
    (rules, keys, want)
}

/// Every header gives rte_acl's answer with every implementation, in
/// bursts, and every seventh one alone.
fn every_way(snap: &Snapshot, keys: &[[u8; 13]], flat: &[u8], want: &[u32], set: &str) {
    let mut scratch = snap.scratch();
    for imp in Impl::available() {
        assert_answers(snap, imp, flat, want, set);
        for (i, k) in keys.iter().enumerate().step_by(7) {
            let got = snap
                .lookup_with(imp, k, &mut scratch)
                .and_then(|id| snap.element(id))
                .and_then(classbench::rule_number);
            assert_eq!(got, Some(want[i]), "{set} {imp} single: header {i}");
        }
    }
}

fn check(set: &str) {
    let (rules, keys, want) = load(set);
    let mut s = Set::new(classbench::decl());
    for e in &rules.elements {
        s.insert(e.clone(), InsertMode::Create).unwrap();
    }
    let snap = s.commit();
    let flat: Vec<u8> = keys.iter().flatten().copied().collect();
    let mut scratch = snap.scratch();
    let mut out = vec![None; keys.len()];
    every_way(&snap, &keys, &flat, &want, set);
    // With explicit priorities (the rule numbers): every tenth rule left
    // out, the trace against the linear scan of the rest; then those rules
    // put back among the others, one commit each (the classifier's
    // changes since its tree, and the rebuilds they lead to), and
    // rte_acl's answers again.
    let ranked: Vec<_> = rules
        .elements
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.priority = classbench::rule_number(&e);
            e
        })
        .collect();
    let (back, kept): (Vec<_>, Vec<_>) = ranked
        .iter()
        .cloned()
        .enumerate()
        .partition(|(i, _)| i % 10 == 3);
    let mut s = Set::new(classbench::decl());
    for (_, e) in kept.iter().rev() {
        s.insert(e.clone(), InsertMode::Create).unwrap();
    }
    let snap = s.commit();
    let linear = matcher::reference::LinearSet::new(
        classbench::decl(),
        kept.into_iter().map(|(_, e)| e).collect(),
    );
    snap.lookup_burst(&flat, 13, &mut out, &mut scratch);
    for (i, k) in keys.iter().enumerate().step_by(5) {
        let got = out[i].and_then(|id| snap.element(id));
        assert_eq!(
            got,
            linear.lookup(k),
            "{set} without every tenth rule: header {i}"
        );
    }
    for (_, e) in back {
        s.insert(e, InsertMode::Create).unwrap();
        s.commit();
    }
    let snap = s.commit();
    for imp in Impl::available() {
        assert_answers(&snap, imp, &flat, &want, &format!("{set}, rules put back,"));
    }
}

#[test]
fn acl1_1k() {
    check("acl1_1K");
}
#[test]
fn fw1_1k() {
    check("fw1_1K");
}
#[test]
fn ipc1_1k() {
    check("ipc1_1K");
}
#[test]
fn acl1_10k() {
    check("acl1_10K");
}
#[test]
fn fw1_10k() {
    check("fw1_10K");
}
#[test]
fn ipc1_10k() {
    check("ipc1_10K");
}

/// A 100K set: every header against rte_acl's answer with every
/// implementation (bursts, and every seventh one alone); then 100 rules
/// taken out and put back one commit each (the delta beside the tree,
/// and the rebuild it leads to), and every answer again. The linear
/// scan and the 10 % put back of the smaller sets would take minutes
/// here.
fn check_large(set: &str) {
    let (rules, keys, want) = load(set);
    let mut s = Set::new(classbench::decl());
    for e in &rules.elements {
        let mut e = e.clone();
        e.priority = classbench::rule_number(&e);
        s.insert(e, InsertMode::Create).unwrap();
    }
    let snap = s.commit();
    let flat: Vec<u8> = keys.iter().flatten().copied().collect();
    every_way(&snap, &keys, &flat, &want, set);
    let n = rules.elements.len();
    let moved: Vec<_> = (0..100)
        .map(|k| {
            let mut e = rules.elements[(k * 7919 + 13) % n].clone();
            e.priority = classbench::rule_number(&e);
            e
        })
        .collect();
    for e in &moved {
        s.delete(&e.key).unwrap();
        s.commit();
    }
    for e in moved {
        s.insert(e, InsertMode::Create).unwrap();
        s.commit();
    }
    let snap = s.commit();
    for imp in Impl::available() {
        assert_answers(&snap, imp, &flat, &want, &format!("{set}, rules put back,"));
    }
}

#[test]
fn acl1_100k() {
    check_large("acl1_100K");
}
#[test]
fn fw1_100k() {
    check_large("fw1_100K");
}
#[test]
fn ipc1_100k() {
    check_large("ipc1_100K");
}
