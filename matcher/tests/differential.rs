//! The pipapo set against a linear scan: random sets of every field type
//! and of the selftest's seven concatenations, with insert/delete churn,
//! batches committed and aborted, and 4/8-bit switches forced by small
//! thresholds, snapshots committed in full and quickly (the changes beside
//! the last full commit's tables). Inserts are checked too: `overlap`
//! exactly when the linear model finds an overlapping element, `exists`
//! for duplicates.

mod common;

use common::{Gen, Rng};
use matcher::{reference::LinearSet, Element};
use matcher::{ErrorKind, Impl, InsertMode, Policy, Range, Scratch, Set, SetConfig, Snapshot};
use proptest::prelude::*;
use std::sync::Arc;

fn check_snapshot(
    gen: &Gen,
    rng: &mut Rng,
    snap: &Snapshot,
    model: &[Element],
    scratch: &mut Scratch,
) {
    let linear = LinearSet::new(gen.decl.clone(), model.to_vec());
    assert_eq!(snap.len(), model.len());
    let mut listed: Vec<String> = snap
        .elements()
        .map(|e| gen.decl.format_element(e))
        .collect();
    let mut wanted: Vec<String> = model.iter().map(|e| gen.decl.format_element(e)).collect();
    listed.sort();
    wanted.sort();
    assert_eq!(listed, wanted, "the snapshot's elements");
    let mut keys: Vec<Vec<u128>> = (0..64).map(|_| gen.random_key(rng)).collect();
    for e in model {
        for _ in 0..4 {
            keys.push(gen.boundary_key(rng, e));
        }
    }
    // Every implementation, one key at a time and in bursts of up to 64
    // keys, agrees with the linear scan.
    let klen = gen.decl.key_len();
    let stride = klen + (keys.len() % 3);
    let mut flat = vec![0u8; keys.len() * stride];
    let mut want = Vec::with_capacity(keys.len());
    for (i, values) in keys.iter().enumerate() {
        let key = gen.decl.key_from_values(values);
        flat[i * stride..i * stride + klen].copy_from_slice(&key);
        want.push(linear.lookup_values(values));
    }
    for imp in Impl::available() {
        for i in 0..keys.len() {
            let key = &flat[i * stride..i * stride + klen];
            let got = snap
                .lookup_with(imp, key, scratch)
                .and_then(|id| snap.element(id));
            assert_eq!(
                got,
                want[i],
                "{imp}: key {} in {} ({} elements)",
                gen.decl.format_key(key),
                gen.decl,
                model.len()
            );
        }
        let mut at = 0;
        let mut out = [None; 64];
        while at < keys.len() {
            let n = (1 + rng.below(64) as usize).min(keys.len() - at);
            snap.lookup_burst_with(imp, &flat[at * stride..], stride, &mut out[..n], scratch);
            for j in 0..n {
                let got = out[j].and_then(|id| snap.element(id));
                assert_eq!(got, want[at + j], "{imp} burst key {}", at + j);
            }
            at += n;
        }
    }
}

/// Runs random updates and checks; says whether 4-bit groups, 8-bit
/// groups and an interval tree were seen.
fn run(seed: u64, steps: usize, config: SetConfig) -> (bool, bool, bool) {
    let mut rng = Rng(seed);
    let gen = Gen::random(&mut rng);
    let mut set = Set::with_config(gen.decl.clone(), config);
    let mut model: Vec<Element> = Vec::new();
    let mut committed_model: Vec<Element> = Vec::new();
    let mut scratch = Scratch::default();
    let mut old: Option<(Arc<Snapshot>, Vec<Element>)> = None;
    let (mut saw4, mut saw8, mut saw_tree) = (false, false, false);
    for _ in 0..steps {
        match rng.below(20) {
            0..=12 => {
                let e = gen.element(&mut rng);
                let mode = if rng.chance(50) {
                    InsertMode::Add
                } else {
                    InsertMode::Create
                };
                let dup = model.iter().find(|m| m.key == e.key);
                let clash = model.iter().find(|m| m.overlaps(&e));
                let r = set.insert(e.clone(), mode);
                match (dup, clash) {
                    (Some(d), _) if d.data != e.data => {
                        assert_eq!(r.unwrap_err().kind, ErrorKind::Exists)
                    }
                    (Some(_), _) if mode == InsertMode::Create => {
                        assert_eq!(r.unwrap_err().kind, ErrorKind::Exists)
                    }
                    (Some(_), _) => r.unwrap(),
                    (None, Some(_)) => {
                        let err = r.unwrap_err();
                        assert_eq!(err.kind, ErrorKind::Overlap, "{err}");
                    }
                    (None, None) => {
                        r.unwrap();
                        model.push(e);
                    }
                }
            }
            13..=15 if !model.is_empty() => {
                let i = rng.below(model.len() as u64) as usize;
                let e = model.swap_remove(i);
                assert_eq!(set.delete(&e.key).unwrap(), e);
                assert_eq!(set.delete(&e.key).unwrap_err().kind, ErrorKind::NotFound);
            }
            16 => {
                set.abort();
                model = committed_model.clone();
                assert_eq!(set.len(), model.len());
            }
            _ => {
                // Quick commits (the changes beside the last full
                // commit's tables) and full ones, in any order.
                let snap = if rng.chance(60) {
                    set.commit_quick()
                } else {
                    set.commit()
                };
                saw_tree |= snap.has_interval_tree();
                assert!(config.interval_tree || !snap.has_interval_tree());
                committed_model = model.clone();
                check_snapshot(&gen, &mut rng, &snap, &model, &mut scratch);
                // Readers of an older snapshot are never disturbed.
                if let Some((s, m)) = &old {
                    check_snapshot(&gen, &mut rng, s, m, &mut scratch);
                }
                if rng.chance(30) {
                    old = Some((snap, model.clone()));
                }
            }
        }
        for f in set.fields() {
            saw4 |= f.group_bits() == 4;
            saw8 |= f.group_bits() == 8 && f.rules() > 0;
        }
    }
    let snap = set.commit();
    saw_tree |= snap.has_interval_tree();
    check_snapshot(&gen, &mut rng, &snap, &model, &mut scratch);
    (saw4, saw8, saw_tree)
}

/// Thresholds small enough that ordinary test sets cross them both ways;
/// interval trees allowed or not.
fn small_config(rng_pick: u64, interval_tree: bool, classifier: bool) -> SetConfig {
    let high = [1 << 12, 1 << 13, 1 << 14, 1 << 16, 2 << 20][rng_pick as usize % 5];
    SetConfig {
        lt_size_high: high,
        lt_size_low: high - high / 8,
        interval_tree,
        classifier,
        forest: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn pipapo_agrees_with_linear_scan(seed in any::<u64>(), pick in 0u64..5, steps in 20usize..300, tree in any::<bool>(), cls in any::<bool>()) {
        run(seed, steps, small_config(pick, tree, cls));
    }
}

/// Forced switches do happen, in both directions, and answers hold across
/// them (checked inside `run`).
#[test]
fn switches_happen_both_ways_and_answers_hold() {
    let (mut saw4, mut saw8, mut saw_tree) = (0, 0, 0);
    for seed in 0..40 {
        let (a, b, t) = run(seed, 250, small_config(seed, seed % 4 != 0, seed % 3 != 0));
        saw4 += a as usize;
        saw8 += b as usize;
        saw_tree += t as usize;
    }
    assert!(saw4 > 5 && saw8 > 5, "4-bit seen {saw4}, 8-bit seen {saw8}");
    // Both lookups are exercised: trees where a field allows one, bitmaps
    // elsewhere and with trees turned off.
    assert!(
        (5..30).contains(&saw_tree),
        "trees seen in {saw_tree} of 40 runs"
    );
}

/// A field switched to 4 bits and back returns to identical tables.
#[test]
fn switch_round_trip_restores_tables() {
    let mut rng = Rng(99);
    let decl = matcher::SetDecl::parse("type ipv4_addr . inet_service").unwrap();
    // Windows of 16 bits: room for the thousands of disjoint elements a
    // 16 KiB table takes (narrower random ones may have room for fewer).
    let mut gen = Gen::new(&mut rng, decl.clone());
    for w in &mut gen.windows {
        w.pos = 0;
        w.width = 16;
    }
    let config = SetConfig {
        lt_size_high: 1 << 14,
        lt_size_low: (1 << 14) - (1 << 11),
        interval_tree: false,
        classifier: false,
        forest: None,
    };
    let mut set = Set::with_config(decl, config);
    let mut added = Vec::new();
    for tries in 0.. {
        if set.fields()[0].group_bits() != 8 {
            break;
        }
        assert!(tries < 1_000_000, "the set never outgrew 8-bit groups");
        let e = gen.element(&mut rng);
        if set.insert(e.clone(), InsertMode::Create).is_ok() {
            added.push(e);
        }
    }
    let mut scratch = Scratch::default();
    let snap4 = set.commit();
    check_snapshot(&gen, &mut rng, &snap4, &added, &mut scratch);
    while set.fields()[0].group_bits() == 4 {
        let e = added.pop().unwrap();
        set.delete(&e.key).unwrap();
    }
    let snap8 = set.commit();
    check_snapshot(&gen, &mut rng, &snap8, &added, &mut scratch);
}

/// Sets whose fields share values across many elements, so that windows
/// span many vectors and the vector kernels (not only their narrow-window
/// scalar fallback) run, against the linear scan.
#[test]
fn wide_windows_agree() {
    use matcher::selftest::Case;
    let mut rng = Rng(11);
    for (case, n) in [
        (Case::PortProto, 3000),
        (Case::NetMac, 1500),
        (Case::Net6PortMacProto, 800),
    ] {
        let decl = case.decl();
        let mut set = Set::new(decl.clone());
        let mut model = Vec::new();
        for (s, e) in case.ranges(n) {
            let el = case.element(s, e);
            set.insert(el.clone(), InsertMode::Create).unwrap();
            model.push(el);
        }
        // One element whose first field spans everything: every key's
        // first-field window then covers the whole bitmap.
        let mut wide = case.element(70_000, 70_000);
        wide.key[0] = matcher::Range::new(0, decl.fields()[0].max());
        if set.insert(wide.clone(), InsertMode::Create).is_ok() {
            model.push(wide);
        }
        let snap = set.commit();
        let gen = Gen::new(&mut rng, decl);
        let mut scratch = Scratch::default();
        check_snapshot(&gen, &mut rng, &snap, &model, &mut scratch);
    }
}

/// A tree whose field's ranges overlap: intervals that name several
/// candidates (resolved one key at a time after the burst), next to
/// intervals of one and of none, at the field's extremes too; bursts,
/// single keys and the linear scan agree, with the tree and without.
#[test]
fn overlapping_tree_field_agrees_with_linear_scan() {
    let decl = matcher::SetDecl::parse("type ipv6_addr . inet_service").unwrap();
    let mut elems = Vec::new();
    for i in 0..200u128 {
        // Port ranges overlap in threes; addresses tell the elements apart.
        let lo = (i * 300) % 65_000;
        let port = Range::new(lo, (lo + 700).min(65_535));
        let addr = Range::new(
            (0x2001_0db8u128 << 96) + i * 16,
            (0x2001_0db8u128 << 96) + i * 16 + 7,
        );
        elems.push(Element::of(vec![addr, port]));
    }
    elems.push(Element::of(vec![
        Range::single(0x2001_0db8_ffffu128 << 80),
        Range::new(0, 0),
    ]));
    elems.push(Element {
        key: vec![
            Range::single(0x2001_0db8_fffeu128 << 80),
            Range::new(65_535, 65_535),
        ]
        .into(),
        data: None,
        priority: None,
        timeout: None,
        expires: None,
    });
    let linear = LinearSet::new(decl.clone(), elems.clone());
    let mut rng = Rng(5);
    let mut keys: Vec<Vec<u128>> = Vec::new();
    for e in &elems {
        for _ in 0..3 {
            let a = e.key[0].start + rng.below(10) as u128;
            let p = e.key[1].start + rng.below(800) as u128;
            keys.push(vec![a, p.min(65_535)]);
        }
    }
    keys.push(vec![0x2001_0db8_ffffu128 << 80, 0]);
    keys.push(vec![0x2001_0db8_fffeu128 << 80, 65_535]);
    let klen = decl.key_len();
    let flat: Vec<u8> = keys.iter().flat_map(|k| decl.key_from_values(k)).collect();
    let mut hits = 0;
    for tree in [true, false] {
        let config = SetConfig {
            interval_tree: tree,
            ..SetConfig::default()
        };
        let mut set = Set::with_config(decl.clone(), config);
        for e in &elems {
            set.insert(e.clone(), InsertMode::Create).unwrap();
        }
        let snap = set.commit();
        assert_eq!(snap.has_interval_tree(), tree);
        let mut scratch = snap.scratch();
        for imp in Impl::available() {
            let mut out = [None; 64];
            for (c, chunk) in flat.chunks(64 * klen).enumerate() {
                let n = chunk.len() / klen;
                snap.lookup_burst_with(imp, chunk, klen, &mut out[..n], &mut scratch);
                for j in 0..n {
                    let i = c * 64 + j;
                    let want = linear.lookup_values(&keys[i]);
                    let got = out[j].and_then(|id| snap.element(id));
                    assert_eq!(got, want, "{imp} tree {tree} key {:?}", keys[i]);
                    let one = snap.lookup_with(imp, &chunk[j * klen..], &mut scratch);
                    assert_eq!(one.and_then(|id| snap.element(id)), want);
                    hits += want.is_some() as usize;
                }
            }
        }
    }
    assert!(hits > keys.len(), "too few hits to mean anything: {hits}");
}

/// Runs random updates of a first-match set (overlapping elements, some
/// with priorities) and checks every commit against the linear scan of
/// the elements in rank order. Returns the most tree nodes a snapshot's
/// classifier had.
fn run_first_match(seed: u64, steps: usize) -> usize {
    run_first_match_with(seed, steps, SetConfig::default())
}

fn run_first_match_with(seed: u64, steps: usize, config: SetConfig) -> usize {
    let mut nodes = 0;
    let mut rng = Rng(seed);
    let mut gen = Gen::random(&mut rng);
    gen.decl = gen.decl.clone().with_policy(Policy::FirstMatch);
    let mut set = Set::with_config(gen.decl.clone(), config);
    // In the order they were added: the linear scan's tie-break.
    let mut model: Vec<Element> = Vec::new();
    let mut committed_model: Vec<Element> = Vec::new();
    let mut scratch = Scratch::default();
    let mut old: Option<(Arc<Snapshot>, Vec<Element>)> = None;
    for _ in 0..steps {
        match rng.below(20) {
            0..=12 => {
                let mut e = gen.element(&mut rng);
                e.priority = rng.chance(40).then(|| rng.below(4) as u32);
                let dup = model.iter().find(|m| m.key == e.key);
                let r = set.insert(e.clone(), InsertMode::Add);
                match dup {
                    Some(d) if d.data != e.data || d.priority != e.priority => {
                        assert_eq!(r.unwrap_err().kind, ErrorKind::Exists)
                    }
                    Some(_) => r.unwrap(),
                    None => {
                        r.unwrap();
                        model.push(e);
                    }
                }
            }
            13..=15 if !model.is_empty() => {
                let i = rng.below(model.len() as u64) as usize;
                let e = model.remove(i);
                assert_eq!(set.delete(&e.key).unwrap(), e);
            }
            16 => {
                set.abort();
                model = committed_model.clone();
            }
            _ => {
                let snap = set.commit();
                committed_model = model.clone();
                nodes = nodes.max(snap.classifier_shape().map_or(0, |s| s.0));
                check_snapshot(&gen, &mut rng, &snap, &model, &mut scratch);
                if let Some((s, m)) = &old {
                    check_snapshot(&gen, &mut rng, s, m, &mut scratch);
                }
                if rng.chance(30) {
                    old = Some((snap, model.clone()));
                }
            }
        }
    }
    nodes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn first_match_agrees_with_linear_scan(seed in any::<u64>(), steps in 20usize..400) {
        run_first_match(seed, steps);
    }

    /// The same with a tree per anchor dimension, which random sets this
    /// small never choose: keys that match in several trees, leaves
    /// skipped below a better answer, changes beside the forest.
    #[test]
    fn first_match_forest_agrees_with_linear_scan(seed in any::<u64>(), steps in 20usize..400) {
        run_first_match_with(seed, steps, SetConfig { forest: Some(true), ..SetConfig::default() });
    }
}

/// Many elements stacked on the same keys, with more changes between
/// commits than the classifier keeps beside its tree (rebuilds), fewer
/// (changes beside the tree), and deletes of elements that shadow others.
#[test]
fn first_match_survives_stacks_and_rebuilds() {
    let trees = (0..8)
        .filter(|seed| run_first_match(1000 + seed, 1500) > 0)
        .count();
    // Not every random set is cut into a tree (elements spanning a
    // whole field leave nothing to cut), but most are.
    assert!(trees >= 4, "{trees} of 8 runs had a tree");
}
