//! The correctness procedure of the kernel selftest `nft_concat_range.sh`,
//! for its seven set types: add each entry, probe it at its start, inside
//! and at its end, check that end + 1 does not match, delete every third
//! entry and probe it again. The "large" variant first loads 16,385 filler
//! elements, so that wide fields switch to 4-bit groups.

use matcher::selftest::Case;
use matcher::{Element, InsertMode, Set, SetDecl};

fn probe(set: &mut Set, case: Case, n: u128) -> Option<Element> {
    let snap = set.snapshot();
    let key = snap.decl().key_from_values(&case.key_values(n));
    snap.lookup_element(&key, &mut snap.scratch()).cloned()
}

fn correctness(case: Case, count: usize, fillers: usize) {
    let decl: SetDecl = case.decl();
    let mut set = Set::new(decl.clone());
    for i in 0..fillers as u128 {
        // Single values far from the entries under test.
        set.insert(case.element(10_000 + i, 10_000 + i), InsertMode::Create)
            .unwrap();
    }
    set.commit();
    if fillers > 16_384 {
        // 16,385 single-rule elements push a 32-bit (or wider) field's
        // 8-bit table past 2 MiB: those fields must now use 4-bit groups.
        for (f, t) in set.fields().iter().zip(decl.fields()) {
            if t.bits() >= 32 {
                assert_eq!(f.group_bits(), 4, "{} field {t}", case.name());
            }
        }
    }
    for (i, (start, end)) in case.ranges(count).into_iter().enumerate() {
        let e = case.element(start, end);
        set.insert(e.clone(), InsertMode::Create).unwrap();
        set.commit();
        let size = end - start;
        let mut j = start;
        while j <= end {
            assert_eq!(
                probe(&mut set, case, j).as_ref(),
                Some(&e),
                "{} probe {j}",
                case.name()
            );
            j += size / 2 + 1;
        }
        assert_eq!(probe(&mut set, case, end).as_ref(), Some(&e));
        assert_eq!(
            probe(&mut set, case, end + 1),
            None,
            "{} end+1 {}",
            case.name(),
            end + 1
        );
        if i % 3 == 0 {
            set.delete(&e.key).unwrap();
            set.commit();
            let mut j = start;
            while j <= end {
                assert_eq!(
                    probe(&mut set, case, j),
                    None,
                    "{} deleted, probe {j}",
                    case.name()
                );
                j += size / 2 + 1;
            }
        }
    }
}

#[test]
fn selftest_correctness() {
    for case in Case::ALL {
        correctness(case, 128, 0);
    }
}

#[test]
fn selftest_correctness_large() {
    for case in Case::ALL {
        correctness(case, 64, 16_385);
    }
}
