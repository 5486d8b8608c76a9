//! A set's `counter = true` (nft's `counter`): off by default, taken when
//! given, anything but a boolean refused with its place; and `meta
//! iifname`, which feeds `ifname` fields (`meta oifname` is refused).

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

#[test]
fn iifname_feeds_ifname_fields_and_oifname_is_refused() {
    let set = |m: &str, t: &str, e: &str| {
        format!(
            "[[port]]\nname = \"wan\"\n[[set]]\nname = \"s\"\ntype = \"{t}\"\nmatch = \"{m}\"\n\
             action = \"drop\"\nelements = [\"{e}\"]\n"
        )
    };
    let c = parse(&set(
        "meta iifname . th dport",
        "ifname . inet_service",
        "wan* . 22",
    ))
    .unwrap();
    assert_eq!(c.sets[0].sources[0], config::Source::Iifname);
    assert!(parse(&set("iifname", "ifname", "wan")).is_ok());
    let e = parse(&set("meta iifname", "ipv4_addr", "192.0.2.1")).unwrap_err();
    assert!(e.contains("f.toml:6"), "{e}");
    let e = parse(&set("meta oifname", "ifname", "wan")).unwrap_err();
    assert!(e.contains("f.toml:6") && e.contains("routed"), "{e}");
    let e = parse(&set("iifname", "ifname", "far-too-long-a-name")).unwrap_err();
    assert!(e.contains("f.toml:8") && e.contains("1 to 15 bytes"), "{e}");
}
