//! Every duplicate, overlap and invalid case, with the error text a user
//! sees.

use matcher::{ErrorKind, InsertMode, Set, SetDecl};

fn setup(decl: &str, elems: &[&str]) -> (SetDecl, Set) {
    let d = SetDecl::parse(decl).unwrap();
    let mut set = Set::new(d.clone());
    for e in elems {
        set.insert(d.parse_element(e).unwrap(), InsertMode::Create)
            .unwrap();
    }
    set.commit();
    (d, set)
}

fn insert(d: &SetDecl, set: &mut Set, e: &str, mode: InsertMode) -> Result<(), String> {
    set.insert(d.parse_element(e).map_err(|e| e.to_string())?, mode)
        .map_err(|e| e.to_string())
}

#[test]
fn duplicates() {
    let (d, mut set) = setup("type ipv4_addr . inet_service", &["192.0.2.1 . 80"]);
    assert_eq!(
        insert(&d, &mut set, "192.0.2.1 . 80", InsertMode::Add),
        Ok(())
    );
    assert_eq!(set.len(), 1);
    assert_eq!(
        insert(&d, &mut set, "192.0.2.1 . http", InsertMode::Create).unwrap_err(),
        "exists: `192.0.2.1 . 80` exists already"
    );
}

#[test]
fn same_key_other_data() {
    let (d, mut set) = setup(
        "type ipv4_addr . inet_service : verdict",
        &["192.0.2.0/24 . 80 : accept"],
    );
    for mode in [InsertMode::Add, InsertMode::Create] {
        let e = insert(&d, &mut set, "192.0.2.0/24 . 80 : drop", mode).unwrap_err();
        assert_eq!(
            e,
            "exists: `192.0.2.0/24 . 80 : drop` exists already with other data: `192.0.2.0/24 . 80 : accept`"
        );
    }
}

#[test]
fn overlaps_of_every_shape() {
    let cases: &[(&str, &str, &str)] = &[
        // The crossing pair: neither contains the other's start or end.
        (
            "198.51.100.0-198.51.100.10 . 5-6",
            "198.51.100.5-198.51.100.6 . 0-10",
            "overlap: `198.51.100.5-198.51.100.6 . 0-10` overlaps existing element `198.51.100.0-198.51.100.10 . 5-6`",
        ),
        // A superset inserted after its subset.
        (
            "198.51.100.4 . 80",
            "198.51.100.0/24 . 1-1024",
            "overlap: `198.51.100.0/24 . 1-1024` overlaps existing element `198.51.100.4 . 80`",
        ),
        // A subset inserted after its superset.
        (
            "198.51.100.0/24 . 1-1024",
            "198.51.100.4 . 80",
            "overlap: `198.51.100.4 . 80` overlaps existing element `198.51.100.0/24 . 1-1024`",
        ),
        // Partial overlap in both fields.
        (
            "198.51.100.0-198.51.100.20 . 100-200",
            "198.51.100.20-198.51.100.40 . 200-300",
            "overlap: `198.51.100.20-198.51.100.40 . 200-300` overlaps existing element `198.51.100.0-198.51.100.20 . 100-200`",
        ),
        // Same start, different end.
        (
            "198.51.100.0 . 1-10",
            "198.51.100.0 . 1-11",
            "overlap: `198.51.100.0 . 1-11` overlaps existing element `198.51.100.0 . 1-10`",
        ),
    ];
    for (old, new, want) in cases {
        let (d, mut set) = setup("type ipv4_addr . inet_service", &[old]);
        for mode in [InsertMode::Add, InsertMode::Create] {
            assert_eq!(insert(&d, &mut set, new, mode).unwrap_err(), *want);
        }
        assert_eq!(set.len(), 1);
    }
    // Adjacent, not overlapping.
    let (d, mut set) = setup("type ipv4_addr . inet_service", &["198.51.100.0/25 . 1-10"]);
    insert(&d, &mut set, "198.51.100.128/25 . 1-10", InsertMode::Create).unwrap();
    insert(&d, &mut set, "198.51.100.0/25 . 11-20", InsertMode::Create).unwrap();
}

#[test]
fn invalid_elements_name_the_text() {
    let (d, mut set) = setup("type ipv4_addr . inet_service", &[]);
    let cases = [
        ("192.0.2.9-192.0.2.1 . 80", "invalid: `192.0.2.9-192.0.2.1 . 80`: `192.0.2.9-192.0.2.1`: range start is greater than its end"),
        ("192.0.2.0/33 . 80", "invalid: `192.0.2.0/33 . 80`: `192.0.2.0/33`: prefix length 33 is longer than the 32-bit field"),
        ("192.0.2.1 . 65536", "invalid: `192.0.2.1 . 65536`: `65536` is not an inet_service: port out of range 0-65535"),
        ("192.0.2.256 . 80", "invalid: `192.0.2.256 . 80`: `192.0.2.256` is not an ipv4_addr: expected a dotted quad such as 192.0.2.1"),
        ("192.0.2.1", "invalid: `192.0.2.1` has 1 field, the set's type has 2"),
        ("192.0.2.1 . 80 . 6", "invalid: `192.0.2.1 . 80 . 6` has 3 fields, the set's type has 2"),
        ("192.0.2.1 . 90-80", "invalid: `192.0.2.1 . 90-80`: `90-80`: range start is greater than its end"),
    ];
    for (text, want) in cases {
        assert_eq!(
            insert(&d, &mut set, text, InsertMode::Add).unwrap_err(),
            want
        );
    }
    assert!(set.is_empty());
}

#[test]
fn delete_of_a_missing_element() {
    let (d, mut set) = setup("type ipv4_addr . inet_service", &["192.0.2.0/24 . 80"]);
    let e = d.parse_element("192.0.2.0/25 . 80").unwrap();
    let err = set.delete(&e.key).unwrap_err();
    assert_eq!(err.kind, ErrorKind::NotFound);
    assert_eq!(
        err.to_string(),
        "not found: `192.0.2.0/25 . 80` is not in the set"
    );
}

#[test]
fn failed_batch_changes_nothing() {
    use matcher::Op;
    let (d, mut set) = setup("type inet_service . inet_proto", &["80 . tcp", "443 . tcp"]);
    let before = set.snapshot();
    let ops = vec![
        Op::Delete(d.parse_element("80 . tcp").unwrap().key),
        Op::Add(d.parse_element("53 . udp").unwrap()),
        Op::Create(d.parse_element("400-500 . tcp").unwrap()),
    ];
    let err = set.apply(ops).unwrap_err();
    assert_eq!(
        err.to_string(),
        "overlap: `400-500 . 6` overlaps existing element `443 . 6`"
    );
    assert!(std::sync::Arc::ptr_eq(&before, &set.snapshot()));
    assert_eq!(set.len(), 2);
    let mut elems: Vec<String> = set.elements().map(|e| d.format_element(e)).collect();
    elems.sort();
    assert_eq!(elems, ["443 . 6", "80 . 6"]);
    // And a good batch lands whole.
    let ops = vec![
        Op::Delete(d.parse_element("80 . tcp").unwrap().key),
        Op::Add(d.parse_element("53 . udp").unwrap()),
    ];
    let snap = set.apply(ops).unwrap();
    assert_eq!(snap.len(), 2);
    assert_eq!(snap.version(), before.version() + 1);
}

/// A value is quoted whole when short, cut with its length when long
/// (never split inside a character).
#[test]
fn long_values_are_quoted_in_part() {
    assert_eq!(matcher::excerpt("192.0.2.1"), "192.0.2.1");
    let long = "é".repeat(100);
    let e = matcher::excerpt(&long);
    assert!(e.ends_with("... (200 bytes)"), "{e}");
    assert!(e.len() < 70, "{e}");
    let decl = matcher::SetDecl::parse("type inet_service").unwrap();
    let err = decl.parse_element(&"9".repeat(1 << 20)).unwrap_err();
    assert!(err.to_string().len() < 200, "{err}");
}

/// Element files with or without their `type` line read alike where the
/// type is known; a different type is refused at its line.
#[test]
fn element_files_may_carry_their_type() {
    use matcher::file::SetFile;
    let decl = matcher::SetDecl::parse("type ipv4_addr . inet_service").unwrap();
    let bare = SetFile::parse_elements("a.set", "192.0.2.0/24 . 22\n", &decl).unwrap();
    let typed = SetFile::parse_elements(
        "b.set",
        "# blocklist\ntype ipv4_addr . inet_service\n192.0.2.0/24 . 22\n",
        &decl,
    )
    .unwrap();
    assert_eq!(bare[0].1, typed[0].1);
    assert_eq!(typed[0].0, 3);
    let e = SetFile::parse_elements("c.set", "type ipv4_addr\n192.0.2.1\n", &decl).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(
        e.to_string().contains("the file declares `type ipv4_addr`"),
        "{e}"
    );
}
