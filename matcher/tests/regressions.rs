//! Regression tests for bugs the kernel's pipapo set had after it was
//! merged, so that ours never has them.

mod common;

use common::{Gen, Rng};
use matcher::reference::LinearSet;
use matcher::{Element, ErrorKind, FieldType, InsertMode, Range, Scratch, Set, SetDecl};

fn decl(s: &str) -> SetDecl {
    SetDecl::parse(s).unwrap()
}

fn lookup(set: &Set, key: &str, scratch: &mut Scratch) -> Option<String> {
    let snap = set.snapshot();
    let k = snap.decl().parse_key(key).unwrap();
    snap.lookup_element(&k, scratch)
        .map(|e| snap.decl().format_element(e))
}

/// Start > end and out-of-range values are caught in every field, not only
/// the first (the kernel checked the first field's range only).
#[test]
fn validity_checked_on_every_field() {
    let d = decl("type ipv4_addr . inet_service . inet_proto");
    let mut set = Set::new(d.clone());
    for bad in [
        "192.0.2.1 . 80 . 17-6",
        "192.0.2.1 . 90-80 . 6",
        "192.0.2.1 . 80 . 256",
    ] {
        let err = d.parse_element(bad).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Invalid, "{bad}");
    }
    // The same through the API, without the parser's help.
    let good = Range::single(6);
    for (i, bad) in [Range::new(17, 6), Range::new(0, 256)]
        .into_iter()
        .enumerate()
    {
        let mut key = vec![Range::single(0xc000_0201), Range::single(80), good];
        key[2] = bad;
        let e = Element::of(key);
        let err = set.insert(e, InsertMode::Add).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Invalid);
        assert!(err.message.contains("field 3"), "{i}: {err}");
    }
    let e = Element::of(vec![Range::single(1)]);
    assert_eq!(
        set.insert(e, InsertMode::Add).unwrap_err().kind,
        ErrorKind::Invalid
    );
    assert!(set.is_empty());
}

/// Deleting the element that owns the last field's last rules, including
/// when those rules end exactly on a word boundary and when it is the only
/// element.
#[test]
fn delete_last_rule_of_last_field() {
    let d = decl("type inet_service . inet_service");
    let mut scratch = Scratch::default();
    for total in [1u16, 2, 63, 64, 65, 128] {
        let mut set = Set::new(d.clone());
        for p in 0..total {
            let e = d.parse_element(&format!("{p} . {}", 1000 + p)).unwrap();
            set.insert(e, InsertMode::Create).unwrap();
        }
        assert_eq!(set.fields()[1].rules(), total as usize);
        let last = d
            .parse_element(&format!("{} . {}", total - 1, 999 + total))
            .unwrap();
        set.delete(&last.key).unwrap();
        set.commit();
        assert_eq!(set.fields()[1].rules(), total as usize - 1);
        assert_eq!(
            lookup(
                &set,
                &format!("{} . {}", total - 1, 999 + total),
                &mut scratch
            ),
            None
        );
        for p in 0..total - 1 {
            let k = format!("{p} . {}", 1000 + p);
            assert_eq!(lookup(&set, &k, &mut scratch), Some(k.clone()));
        }
    }
    // A multi-rule last field: the run to cut ends the bitmap.
    let mut set = Set::new(d.clone());
    set.insert(d.parse_element("1 . 1-65534").unwrap(), InsertMode::Add)
        .unwrap();
    set.insert(d.parse_element("2 . 3-60000").unwrap(), InsertMode::Add)
        .unwrap();
    set.delete(&d.parse_element("2 . 3-60000").unwrap().key)
        .unwrap();
    set.commit();
    assert_eq!(lookup(&set, "2 . 5", &mut scratch), None);
    assert_eq!(
        lookup(&set, "1 . 5", &mut scratch).as_deref(),
        Some("1 . 1-65534")
    );
    set.delete(&d.parse_element("1 . 1-65534").unwrap().key)
        .unwrap();
    set.commit();
    assert_eq!(lookup(&set, "1 . 5", &mut scratch), None);
    assert!(set.fields().iter().all(|f| f.rules() == 0));
}

/// One scratch used for two different sets by the same thread never
/// carries result bits from one lookup into the next (the kernel once
/// left stale bits in its per-CPU scratch maps).
#[test]
fn no_stale_result_bits_between_sets() {
    let mut rng = Rng(7);
    let mut shared = Scratch::default();
    let gens: Vec<Gen> = (0..6)
        .map(|i| Gen::new(&mut rng, decl(common::CONCATS[i % 7])))
        .collect();
    let mut sets = Vec::new();
    for g in &gens {
        let mut set = Set::new(g.decl.clone());
        let mut model = Vec::new();
        for _ in 0..150 {
            let e = g.element(&mut rng);
            if set.insert(e.clone(), InsertMode::Add).is_ok() && !model.contains(&e) {
                model.push(e);
            }
        }
        sets.push((set.commit(), LinearSet::new(g.decl.clone(), model)));
    }
    for _ in 0..20_000 {
        let i = rng.below(sets.len() as u64) as usize;
        let (snap, linear) = &sets[i];
        let values = if rng.chance(50) || linear.elements().is_empty() {
            gens[i].random_key(&mut rng)
        } else {
            let e = rng.pick(linear.elements()).clone();
            gens[i].boundary_key(&mut rng, &e)
        };
        let key = gens[i].decl.key_from_values(&values);
        assert_eq!(
            snap.lookup_element(&key, &mut shared),
            linear.lookup_values(&values)
        );
    }
}

/// An element deleted and added again in one batch is there after the
/// commit, and an abort of such a batch leaves it there too.
#[test]
fn element_deleted_and_readded_in_one_batch() {
    let d = decl("type ipv4_addr . inet_service : verdict");
    let mut scratch = Scratch::default();
    let mut set = Set::new(d.clone());
    let e = d.parse_element("192.0.2.0/24 . 80 : accept").unwrap();
    set.insert(e.clone(), InsertMode::Create).unwrap();
    set.commit();
    set.delete(&e.key).unwrap();
    set.insert(e.clone(), InsertMode::Create).unwrap();
    set.commit();
    assert_eq!(
        lookup(&set, "192.0.2.9 . 80", &mut scratch).as_deref(),
        Some("192.0.2.0/24 . 80 : accept")
    );
    // Same again, with other data and then aborted.
    set.delete(&e.key).unwrap();
    let f = d.parse_element("192.0.2.0/24 . 80 : drop").unwrap();
    set.insert(f, InsertMode::Create).unwrap();
    set.abort();
    let snap = set.commit();
    assert_eq!(snap.len(), 1);
    assert_eq!(set.get(&e.key), Some(&e));
    // A deleted element no longer blocks a new overlapping one in the batch.
    set.delete(&e.key).unwrap();
    set.insert(
        d.parse_element("192.0.2.0/25 . 80-81 : drop").unwrap(),
        InsertMode::Create,
    )
    .unwrap();
    set.commit();
    assert_eq!(
        lookup(&set, "192.0.2.9 . 81", &mut scratch).as_deref(),
        Some("192.0.2.0/25 . 80-81 : drop")
    );
    assert_eq!(lookup(&set, "192.0.2.200 . 80", &mut scratch), None);
}

/// Removing every element and loading them again reports no clash (the
/// kernel once found false overlaps with elements already gone).
#[test]
fn no_false_clashes_after_flush_and_reload() {
    let mut rng = Rng(3);
    for text in common::CONCATS {
        let g = Gen::new(&mut rng, decl(text));
        let mut set = Set::new(g.decl.clone());
        let mut loaded = Vec::new();
        for _ in 0..300 {
            let e = g.element(&mut rng);
            if set.insert(e.clone(), InsertMode::Create).is_ok() {
                loaded.push(e);
            }
        }
        set.commit();
        for round in 0..3 {
            for e in &loaded {
                set.delete(&e.key).unwrap();
            }
            set.commit();
            assert!(
                set.fields().iter().all(|f| f.rules() == 0),
                "{text} round {round}"
            );
            for e in &loaded {
                set.insert(e.clone(), InsertMode::Create)
                    .unwrap_or_else(|err| panic!("{text} round {round}: {err}"));
            }
            set.commit();
        }
        assert_eq!(set.len(), loaded.len());
    }
}

/// An IPv6 field whose elements differ in one middle octet only (the
/// kernel's AVX2 lookup once ignored an octet).
#[test]
fn ipv6_keys_differing_in_one_middle_octet() {
    let d = decl("type ipv6_addr");
    let mut set = Set::new(d.clone());
    for b in (0..=255u8).step_by(2) {
        let e = d
            .parse_element(&format!("2001:db8:0:{:x}00::1", b))
            .unwrap();
        set.insert(e, InsertMode::Create).unwrap();
    }
    let snap = set.commit();
    let mut s = snap.scratch();
    for imp in matcher::Impl::available() {
        for b in 0..=255u16 {
            let key = d.parse_key(&format!("2001:db8:0:{:x}00::1", b)).unwrap();
            let hit = snap.lookup_with(imp, &key, &mut s).is_some();
            assert_eq!(hit, b % 2 == 0, "{imp}: octet {b}");
        }
    }
    assert_eq!(FieldType::Ipv6Addr.bits(), 128);
}

/// A first-match set's leaves keep each range as a low and a span
/// (`v - low <= span`, wrapping): the lanes a leaf's last group leaves
/// unused (low 0, span 0) must not match a key of zeros, and ranges
/// touching 0 or the field's top must hold their ends and nothing past
/// them. Three elements: one leaf of four lanes, one unused.
#[test]
fn first_match_leaves_hold_range_ends_and_no_unused_lane() {
    let d = decl("type ipv4_addr . inet_service").with_policy(matcher::Policy::FirstMatch);
    let mut set = Set::new(d.clone());
    for text in [
        "192.0.2.0-192.0.2.9 . 1-9",
        "255.255.255.0-255.255.255.255 . 65000-65535",
        "0.0.0.1-0.0.0.7 . 0-3",
    ] {
        set.insert(d.parse_element(text).unwrap(), InsertMode::Create)
            .unwrap();
    }
    let snap = set.commit();
    assert!(snap.classifier_shape().is_some(), "not the classifier");
    let mut s = snap.scratch();
    let cases = [
        ("0.0.0.0 . 0", false),
        ("0.0.0.0 . 1", false),
        ("0.0.0.1 . 0", true),
        ("0.0.0.7 . 3", true),
        ("0.0.0.8 . 3", false),
        ("0.0.0.7 . 4", false),
        ("192.0.2.0 . 1", true),
        ("192.0.2.9 . 9", true),
        ("192.0.2.10 . 9", false),
        ("192.0.1.255 . 5", false),
        ("192.0.2.5 . 0", false),
        ("255.255.255.255 . 65535", true),
        ("255.255.255.0 . 65000", true),
        ("255.255.254.255 . 65000", false),
        ("255.255.255.255 . 64999", false),
    ];
    for imp in matcher::Impl::available() {
        for (k, want) in cases {
            let key = d.parse_key(k).unwrap();
            assert_eq!(
                snap.lookup_with(imp, &key, &mut s).is_some(),
                want,
                "{imp}: {k}"
            );
        }
    }
}

/// A first-match tree's descent picks a node's child from the count of
/// its cuts at or below the key's value (AVX2: both halves' compares
/// packed into one mask, the child read at twice the count; nodes read
/// without a bounds check). Ranges crowded at the top of both fields put
/// cuts at and next to `u32::MAX` and 65535, where the padding lane must
/// not count: bursts of keys at, beside and between the ends agree with
/// the linear reference on every implementation.
#[test]
fn first_match_descent_at_the_top_of_the_value_range() {
    let d = decl("type ipv4_addr . inet_service").with_policy(matcher::Policy::FirstMatch);
    let mut set = Set::new(d.clone());
    let mut model = Vec::new();
    for i in 0..400u32 {
        let (a, p) = (i % 256, 65535 - (i * 37) % 2000);
        let text = match i % 4 {
            0 => format!("255.255.{a}.0-255.255.255.255 . {p}-65535"),
            1 => format!("255.255.255.{a} . {}-{p}", p / 2),
            2 => format!("{a}.0.0.0-255.255.255.{a} . 65535"),
            _ => format!("0.0.0.{a}-0.0.1.0 . 0-{}", i % 300),
        };
        let e = d.parse_element(&text).unwrap();
        if set.insert(e.clone(), InsertMode::Create).is_ok() {
            model.push(e);
        }
    }
    let snap = set.commit();
    let shape = snap.classifier_shape().expect("the classifier");
    assert!(shape.1 > 1, "no nodes to descend: {shape:?}");
    let linear = LinearSet::new(d.clone(), model);
    let mut keys = Vec::new();
    for a in [
        0u32,
        1,
        255,
        256,
        0xffff_00ff,
        0xffff_fefe,
        0xffff_fffe,
        u32::MAX,
    ] {
        for p in [0u16, 1, 299, 300, 63535, 65534, 65535] {
            let mut k = a.to_be_bytes().to_vec();
            k.extend(p.to_be_bytes());
            keys.push(k);
        }
    }
    let flat: Vec<u8> = keys.concat();
    let want: Vec<Option<&Element>> = keys.iter().map(|k| linear.lookup(k)).collect();
    let mut s = snap.scratch();
    for imp in matcher::Impl::available() {
        let mut out = vec![None; keys.len()];
        snap.lookup_burst_with(imp, &flat, 6, &mut out, &mut s);
        for (j, k) in keys.iter().enumerate() {
            assert_eq!(
                out[j].and_then(|id| snap.element(id)),
                want[j],
                "{imp}: {k:?}"
            );
        }
    }
}
