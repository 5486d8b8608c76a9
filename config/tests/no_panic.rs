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
