//! Prints the shape of the selftest sets' tables: rules, words and group
//! bits per field, and the average window a lookup scans per field.
use matcher::selftest::Case;
use matcher::{InsertMode, Set};

fn main() {
    for case in Case::ALL {
        let mut set = Set::new(case.decl());
        for e in case.entries(case.perf_entries()) {
            set.insert(e, InsertMode::Create).unwrap();
        }
        let snap = set.commit();
        print!("{:22} {:6}", case.name(), case.perf_entries());
        for f in snap.fields() {
            print!(
                " | rules {:6} words {:4} bb {}",
                f.rules(),
                f.words(),
                f.group_bits()
            );
        }
        println!();
    }
}
