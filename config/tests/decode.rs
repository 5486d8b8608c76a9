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

/// Every error at once, in the order an editor meets them (the sections
/// are checked in their own order: the forwarder's before the routes).
#[test]
fn errors_come_in_line_order() {
    let text = format!(
        "{BASE}\n[[next_hop]]\nname = \"gw\"\nport = \"p0\"\nmac = \"02:00:00:00:00:fe\"\n\
         [[route]]\nprefix = \"192.0.2.1/24\"\nvia = \"gw\"\n[forwarder]\ncores = [0]\nburst = 0\n"
    );
    let dir = std::env::temp_dir().join(format!("config-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("f.toml");
    std::fs::write(&f, text).unwrap();
    let errs = config::Loader::new().load_all(&f).unwrap_err();
    let got: Vec<(usize, usize)> = errs.iter().map(|e| (e.line, e.col)).collect();
    assert_eq!(got, [(10, 10), (14, 9)], "{errs:?}");
    assert!(errs[0].message.contains("host bits set"), "{errs:?}");
    assert!(errs[1].message.starts_with("burst 0"), "{errs:?}");
    std::fs::remove_dir_all(dir).ok();
}

/// A route given twice says where the first one is.
#[test]
fn a_route_given_twice_says_where_the_first_is() {
    let text = format!(
        "{BASE}\n[[next_hop]]\nname = \"gw\"\nport = \"p0\"\nmac = \"02:00:00:00:00:fe\"\n\
         [[route]]\nprefix = \"192.0.2.0/24\"\nvia = \"gw\"\n\
         [[route]]\nprefix = \"192.0.2.0/24\"\nvia = \"gw\"\n"
    );
    assert_eq!(
        err(&text),
        "f.toml:13:10: route `192.0.2.0/24` is given twice (first at f.toml:10)"
    );
}
