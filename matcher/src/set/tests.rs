use super::*;
use crate::InsertMode;

/// A rebuild keeps the last build's kind (here the forest, which the
/// first build chose after its one tree ran out of copies) while the
/// elements changed by less than a quarter, and chooses again after.
#[test]
fn a_rebuild_keeps_the_kind_chosen_until_a_quarter_changed() {
    use crate::reference::LinearSet;
    let decl = SetDecl::parse("ipv4_addr . inet_service; flags priority").unwrap();
    let el = |i: u32| {
        let text = if i.is_multiple_of(2) {
            format!("10.0.{}.{} . 0-65535", i >> 9, (i >> 1) & 255)
        } else {
            format!("0.0.0.0/0 . {}", 1000 + (i >> 1))
        };
        decl.parse_element(&text).unwrap()
    };
    let mut set = Set::new(decl.clone());
    let mut live: Vec<Element> = (0..2000).map(el).collect();
    for e in &live {
        set.insert(e.clone(), InsertMode::Create).unwrap();
    }
    set.commit();
    assert!(set.cuts.as_ref().unwrap().is_split());
    let chosen = set.chosen_at;
    let check = |set: &mut Set, live: &[Element]| {
        let snap = set.commit();
        let reference = LinearSet::new(decl.clone(), live.to_vec());
        let mut scratch = snap.scratch();
        for k in 0..200u32 {
            let key = decl
                .parse_key(&format!("10.0.{}.{} . {}", k % 5, k, 990 + k * 7))
                .unwrap();
            assert_eq!(
                snap.lookup_element(&key, &mut scratch).map(|e| &e.key),
                reference.lookup(&key).map(|e| &e.key),
                "key {k}"
            );
        }
    };
    // 2 x 200 changes, past the delta's limit: rebuilt, of the same kind.
    for i in 0..200 {
        let e = live.remove(i * 7 % live.len());
        set.delete(&e.key).unwrap();
        set.commit();
        set.insert(e.clone(), InsertMode::Create).unwrap();
        live.push(e);
    }
    check(&mut set, &live);
    assert_eq!(set.chosen_at, chosen);
    assert!(set.cuts.as_ref().unwrap().is_split());
    for i in 0..400 {
        let e = live.remove(i * 13 % live.len());
        set.delete(&e.key).unwrap();
        set.insert(e.clone(), InsertMode::Create).unwrap();
        live.push(e);
        if i.is_multiple_of(50) {
            set.commit();
        }
    }
    check(&mut set, &live);
    assert_ne!(set.chosen_at, chosen);
}
