//! The configuration parser: any text gives a config or an error with a
//! location, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Err(e) = config::parse("fuzz.toml", s, std::path::Path::new("/nonexistent")) {
        assert!(e.line <= s.lines().count() + 1, "{e}");
    }
});
