//! Element deadlines (`flags timeout`) as snapshots report them, full and
//! quick, and quick snapshots against the same set committed in full,
//! with random adds and deletes of timed elements.

mod common;

use common::Rng;
use matcher::{Element, InsertMode, Set, SetDecl, NEVER};

fn element(decl: &SetDecl, i: u32, expires: Option<u64>) -> Element {
    let mut e = decl
        .parse_element(&format!("10.{}.{}.0/24 . 80", i >> 8, i & 255))
        .unwrap();
    e.timeout = expires.map(|_| 1_000);
    e.expires = expires;
    e
}

fn key(decl: &SetDecl, i: u32) -> Vec<u8> {
    decl.parse_key(&format!("10.{}.{}.9 . 80", i >> 8, i & 255))
        .unwrap()
}

#[test]
fn deadlines_follow_elements_through_full_and_quick_commits() {
    let decl = SetDecl::parse("ipv4_addr . inet_service; flags timeout").unwrap();
    let mut rng = Rng(7);
    let mut set = Set::new(decl.clone());
    // Element i lives (in the model) with deadline model[i].
    let mut model: Vec<Option<Option<u64>>> = vec![None; 600];
    for i in 0..300u32 {
        let d = rng.chance(50).then(|| 1_000 + rng.below(10_000));
        set.insert(element(&decl, i, d), InsertMode::Create)
            .unwrap();
        model[i as usize] = Some(d);
    }
    set.commit();
    for round in 0..200 {
        for _ in 0..1 + rng.below(6) {
            let i = rng.below(600) as u32;
            match model[i as usize] {
                Some(_) => {
                    set.delete(&element(&decl, i, None).key).unwrap();
                    model[i as usize] = None;
                }
                None => {
                    let d = rng.chance(70).then(|| 1_000 + rng.below(10_000));
                    set.insert(element(&decl, i, d), InsertMode::Create)
                        .unwrap();
                    model[i as usize] = Some(d);
                }
            }
        }
        let snap = if round % 7 == 6 {
            set.commit()
        } else {
            set.commit_quick()
        };
        let mut scratch = snap.scratch();
        let mut want_next = NEVER;
        for (i, m) in model.iter().enumerate() {
            let got = snap.lookup(&key(&decl, i as u32), &mut scratch);
            match m {
                None => assert_eq!(got, None, "element {i} deleted (round {round})"),
                Some(d) => {
                    let id = got.unwrap_or_else(|| panic!("element {i} (round {round})"));
                    assert_eq!(snap.element(id).unwrap().expires, *d);
                    assert_eq!(snap.expires(id), d.unwrap_or(NEVER), "element {i}");
                    want_next = want_next.min(d.unwrap_or(NEVER));
                }
            }
        }
        assert_eq!(snap.next_expiry(), want_next, "round {round}");
        assert_eq!(snap.is_quick(), round % 7 != 6);
    }
}

#[test]
fn a_plain_set_takes_no_deadlines_and_reports_none() {
    let plain = SetDecl::parse("ipv4_addr . inet_service").unwrap();
    let mut set = Set::new(plain.clone());
    let err = set
        .insert(element(&plain, 1, Some(5)), InsertMode::Create)
        .unwrap_err();
    assert!(err.to_string().contains("flags timeout"), "{err}");
    set.insert(element(&plain, 1, None), InsertMode::Create)
        .unwrap();
    let snap = set.commit();
    assert_eq!(snap.next_expiry(), NEVER);
    let id = snap.lookup(&key(&plain, 1), &mut snap.scratch()).unwrap();
    assert_eq!(snap.expires(id), NEVER);
}
