//! `counter = true` on a set (nft's `counter`): off by default, taken
//! when given, and anything but a boolean refused with its place.

use std::path::Path;

const SET: &str = "[[port]]\nname = \"p\"\n[[set]]\nname = \"s\"\ntype = \"inet_service\"\n\
                   match = \"th dport\"\naction = \"drop\"\nelements = [\"22\"]\n";

fn parse(text: &str) -> Result<config::Config, String> {
    config::parse("f.toml", text, Path::new(".")).map_err(|e| e.to_string())
}

#[test]
fn a_set_counts_when_asked() {
    assert!(!parse(SET).unwrap().sets[0].counter);
    assert!(parse(&format!("{SET}counter = true\n")).unwrap().sets[0].counter);
    assert!(!parse(&format!("{SET}counter = false\n")).unwrap().sets[0].counter);
}

#[test]
fn a_counter_that_is_not_a_boolean_is_refused_with_its_place() {
    let e = parse(&format!("{SET}counter = \"yes\"\n")).unwrap_err();
    assert!(e.contains("f.toml:9"), "{e}");
    assert!(e.contains("expected true or false"), "{e}");
}
