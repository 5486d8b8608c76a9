//! A set's `counter = true` (nft's `counter`): off by default, taken when
//! given, anything but a boolean refused with its place; `meta iifname`,
//! which feeds `ifname` fields; a set's `hook`, and `meta oifname`, which
//! only a set of the forward hook reads.

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
fn iifname_feeds_ifname_fields_and_oifname_is_refused_before_routing() {
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

#[test]
fn a_set_of_the_forward_hook_reads_oifname() {
    let set = |name: &str, m: &str, hook: &str| {
        format!(
            "[[set]]\nname = \"{name}\"\ntype = \"ifname\"\nmatch = \"{m}\"\n\
             action = \"drop\"\nelements = [\"wan\"]\n{hook}"
        )
    };
    let port = "[[port]]\nname = \"wan\"\n";
    let c = parse(&format!(
        "{port}{}{}",
        set("a", "iifname", ""),
        set("b", "meta oifname", "hook = \"forward\"\n")
    ))
    .unwrap();
    assert_eq!(c.sets[0].hook, config::Hook::Prerouting);
    assert_eq!(c.sets[1].hook, config::Hook::Forward);
    assert_eq!(c.sets[1].sources[0], config::Source::Oifname);
    // Said outright, the default.
    let c = parse(&format!(
        "{port}{}",
        set("a", "iifname", "hook = \"prerouting\"\n")
    ))
    .unwrap();
    assert_eq!(c.sets[0].hook, config::Hook::Prerouting);
    // A hook nft has but the forwarder does not run sets in.
    let e = parse(&format!(
        "{port}{}",
        set("a", "iifname", "hook = \"input\"\n")
    ))
    .unwrap_err();
    assert!(
        e.contains("f.toml:9") && e.contains("unknown hook `input`"),
        "{e}"
    );
    // A prerouting set after a forward one: refused at its hook (or name).
    let e = parse(&format!(
        "{port}{}{}",
        set("b", "oifname", "hook = \"forward\"\n"),
        set("a", "iifname", "hook = \"prerouting\"\n")
    ))
    .unwrap_err();
    assert!(
        e.contains("f.toml:16") && e.contains("comes after set `b`"),
        "{e}"
    );
    let e = parse(&format!(
        "{port}{}{}",
        set("b", "oifname", "hook = \"forward\"\n"),
        set("a", "iifname", "")
    ))
    .unwrap_err();
    assert!(
        e.contains("f.toml:11") && e.contains("set `a` (hook prerouting)"),
        "{e}"
    );
}
