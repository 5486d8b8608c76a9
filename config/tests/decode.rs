//! The TOML decoder's refusals, as an operator reads them: the key, its
//! table, the value, and the range the key's type holds.

use std::path::Path;

fn err(text: &str) -> String {
    config::parse("f.toml", text, Path::new("."))
        .unwrap_err()
        .to_string()
}

const BASE: &str = "\n[[port]]\nname = \"p0\"\n";

/// What the TOML decoder refuses names the key, its table and the value,
/// and for numbers the range the key's type holds.
#[test]
fn decoding_errors_name_the_key_and_range() {
    let cases = [
        (
            "[forwarder]\ncores = [0]\nburst = \"64\"\n",
            "f.toml:3:9: [forwarder] burst = \"64\": invalid type: string \"64\", expected a whole number (0 or more)",
        ),
        (
            "[forwarder]\ncores = [0]\nburst = 99999999999999999999\n",
            "f.toml:3:9: [forwarder] burst = 99999999999999999999: too large for this key",
        ),
        (
            "[forwarder]\ncores = [-1]\n",
            "f.toml:2:10: [forwarder] cores = -1: invalid value: integer `-1`, expected a whole number (0 or more)",
        ),
    ];
    for (text, want) in cases {
        let got = err(&format!("{text}{BASE}"));
        assert_eq!(got, want, "{text}");
    }
}
