//! Set files: parse, load into a set (overlap checks and all), look the
//! elements' own bounds up; nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use matcher::file::SetFile;
use matcher::{InsertMode, Set};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let Ok(file) = SetFile::parse("fuzz", s) else { return };
    let mut set = Set::new(file.decl.clone());
    let mut kept = Vec::new();
    for (_, e) in file.elements {
        if set.insert(e.clone(), InsertMode::Add).is_ok() {
            kept.push(e);
        }
    }
    let snap = set.commit();
    let mut scratch = snap.scratch();
    for e in &kept {
        let start: Vec<u128> = e.key.iter().map(|r| r.start).collect();
        let key = file.decl.key_from_values(&start);
        assert_eq!(snap.lookup_element(&key, &mut scratch), Some(e));
    }
});
