//! `Snapshot::id_of`: an element found by its exact key, in a
//! snapshot's base and in its quick delta, and in first-match sets where
//! another element covers the key's first point.

use matcher::{InsertMode, Scratch, Set, SetDecl};

fn check(set: &Set, texts: &[&str]) {
    let snap = set.snapshot();
    let mut scratch = Scratch::default();
    for t in texts {
        let e = snap.decl().parse_element(t).unwrap();
        let id = snap.id_of(&e.key, &mut scratch).expect(t);
        assert_eq!(*snap.element(id).unwrap().key, *e.key, "{t}");
    }
    let gone = snap.decl().parse_element("198.51.100.1 . 9").unwrap();
    assert_eq!(snap.id_of(&gone.key, &mut scratch), None);
}

#[test]
fn id_of_finds_base_and_added_elements() {
    let mut set = Set::new(SetDecl::parse("type ipv4_addr . inet_service").unwrap());
    let base = [
        "192.0.2.1 . 22",
        "192.0.2.0/28 . 80-88",
        "203.0.113.7 . 443",
    ];
    for t in base {
        let e = set.decl().parse_element(t).unwrap();
        set.insert(e, InsertMode::Add).unwrap();
    }
    set.commit();
    check(&set, &base);
    // Added after the full commit: a quick snapshot's delta.
    let e = set.decl().parse_element("192.0.2.200 . 53").unwrap();
    set.insert(e, InsertMode::Add).unwrap();
    let snap = set.commit_quick();
    let (_, added) = snap.id_bounds();
    assert!(added > 0, "the element went to the delta");
    check(&set, &["192.0.2.1 . 22", "192.0.2.200 . 53"]);
}

#[test]
fn id_of_finds_elements_hidden_by_higher_ranks() {
    let d = SetDecl::parse("type ipv4_addr . inet_service; flags priority").unwrap();
    let mut set = Set::new(d);
    // The second's first point (192.0.2.0 . 0) matches the first.
    let texts = [
        "192.0.2.0/24 . 0-100 priority 1",
        "192.0.2.0/25 . 0-65535 priority 2",
    ];
    for t in texts {
        let e = set.decl().parse_element(t).unwrap();
        set.insert(e, InsertMode::Add).unwrap();
    }
    set.commit();
    check(&set, &texts);
}
