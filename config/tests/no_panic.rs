//! No text makes the configuration parser panic, and every error it
//! gives points inside the text.

use proptest::prelude::*;

fn fragments() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "[forwarder]\n",
        "cores = [0, 1]\n",
        "burst = 64\n",
        "[[port]]\n",
        "name = \"p\"\n",
        "driver = \"synthetic\"\n",
        "mac = \"02:00:00:00:00:01\"\n",
        "[[set]]\n",
        "type = \"ipv4_addr . inet_service\"\n",
        "match = \"ip daddr . th dport\"\n",
        "action = \"drop\"\n",
        "elements = [\"192.0.2.0/24 . 80\", \"192.0.2.1 . 80\"]\n",
        "[[next_hop]]\n",
        "port = \"p\"\n",
        "[[route]]\n",
        "prefix = \"0.0.0.0/0\"\n",
        "via = \"p\"\n",
        "[[ecmp]]\n",
        "members = []\n",
        "[route_cache]\n",
        "hash = \"x\"\n",
        "[flow_cache]\n",
        "entries = 99999999\n",
        "insert_one_in = -1\n",
        "= \"\n",
        "]]\n",
        "\u{1F600}",
        "route = [{prefix=\"::/0\", via=\"n\"}]\n",
    ]);
    prop::collection::vec(pieces, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn fragments_never_panic(text in fragments()) {
        if let Err(e) = config::parse("t.toml", &text, std::path::Path::new("/nonexistent")) {
            prop_assert!(e.line <= text.lines().count() + 1, "{}", e);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = config::parse("t.toml", &text, std::path::Path::new("/nonexistent"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// No route file makes the parser panic; its errors point inside the
    /// file (a line that exists, a column inside that line).
    #[test]
    fn route_files_never_panic(lines in proptest::collection::vec(
        prop_oneof![
            "[0-9a-f:./ #]{0,24} ?(gw|gx)?",
            proptest::collection::vec(any::<u8>(), 0..30)
                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        ],
        0..12,
    )) {
        let dir = std::env::temp_dir().join(format!("cfg-rf-{}-{:?}", std::process::id(), std::thread::current().id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = lines.join("\n");
        std::fs::write(dir.join("r.txt"), &text).unwrap();
        let r = config::parse(
            "f.toml",
            "route_file = \"r.txt\"\n[[port]]\nname = \"p\"\n[[next_hop]]\nname = \"gw\"\nport = \"p\"\nmac = \"02:00:00:00:00:fe\"\n",
            &dir,
        );
        if let Err(e) = r {
            if e.file.ends_with("r.txt") {
                let line = text.lines().nth(e.line - 1);
                prop_assert!(line.is_some(), "{e}");
                prop_assert!(e.col >= 1 && e.col <= line.unwrap().len() + 1, "{e}");
            }
        }
    }
}
