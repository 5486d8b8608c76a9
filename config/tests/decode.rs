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

/// A route file reports every bad line, not only the first; past 50, one
/// more error says how many are left, and the good lines in between are
/// not reported.
#[test]
fn a_route_file_reports_every_bad_line() {
    let dir = std::env::temp_dir().join(format!("config-rfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("f.toml");
    std::fs::write(
        &f,
        format!(
            "route_file = \"r.txt\"\n{BASE}\n[[next_hop]]\nname = \"gw\"\nport = \"p0\"\nmac = \"02:00:00:00:00:fe\"\n"
        ),
    )
    .unwrap();
    let routes = dir.join("r.txt");
    let load = |text: &str| {
        std::fs::write(&routes, text).unwrap();
        config::Loader::new().load_all(&f)
    };
    let errs = load("192.0.2.0/24 gw\n192.0.2.1/24 gw\n198.51.100.0/24 gw9\n203.0.113.0/24\n192.0.2.0/24 gw\n2001:db8::/32 gw\n")
        .unwrap_err();
    let got: Vec<(usize, String)> = errs.iter().map(|e| (e.line, e.message.clone())).collect();
    let twice = format!(
        "route `192.0.2.0/24` is given twice (first at {}:1)",
        routes.display()
    );
    assert_eq!(
        got,
        [
            (2, "`192.0.2.1/24` has host bits set"),
            (3, "unknown next hop or ECMP group `gw9`"),
            (4, "`203.0.113.0/24` has no next hop (PREFIX VIA)"),
            (5, twice.as_str()),
        ]
        .map(|(l, m)| (l, m.to_string())),
        "{errs:?}"
    );
    assert!(errs.iter().all(|e| e.file == routes.display().to_string()));
    // A file of the wrong kind: 50 errors and their count.
    let junk: String = (0..1000)
        .map(|i| format!("line {i} of something else\n"))
        .collect();
    let errs = load(&junk).unwrap_err();
    assert_eq!(errs.len(), 51, "{:?}", &errs[..3]);
    assert_eq!(
        (errs[50].line, errs[50].message.as_str()),
        (
            51,
            "950 more bad line(s) from here on, not reported one by one"
        )
    );
    // Good again: loads.
    assert_eq!(load("192.0.2.0/24 gw\n").unwrap().file_routes.len(), 1);
    std::fs::remove_dir_all(dir).ok();
}
