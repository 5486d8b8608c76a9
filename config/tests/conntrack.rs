//! `[conntrack]` and sets on `ct state`: Linux's defaults and names, the
//! states by nft's names, and every mistake refused with its place and
//! value (a set on `ct state` without connection tracking among them).

use std::path::Path;

const SET: &str = "[[port]]\nname = \"p\"\n[[set]]\nname = \"s\"\ntype = \"ct_state\"\n\
                   match = \"ct state\"\naction = \"drop\"\nelements = [\"invalid\", \"new\"]\n";

fn parse(text: &str) -> Result<config::Config, String> {
    config::parse("f.toml", text, Path::new(".")).map_err(|e| e.to_string())
}

#[test]
fn linux_defaults_and_names() {
    let c = parse("[[port]]\nname = \"p\"\n").unwrap();
    assert!(!c.conntrack.enabled);
    assert_eq!(c.conntrack.max, 262_144);
    assert_eq!(c.conntrack.timeouts.tcp[2], 432_000);
    assert_eq!(
        (c.conntrack.timeouts.udp, c.conntrack.timeouts.udp_stream),
        (30, 120)
    );
    let c = parse(&format!(
        "{SET}[conntrack]\nenabled = true\nmax = 1000\nacct = true\n\
         tcp_timeout_established = 3600\nudp_timeout = 10\nicmp_timeout = 5\n"
    ))
    .unwrap();
    let ct = c.conntrack;
    assert!(ct.enabled && ct.acct);
    assert_eq!(ct.max, 1000);
    assert_eq!(ct.timeouts.tcp[2], 3600);
    assert_eq!((ct.timeouts.udp, ct.timeouts.icmp), (10, 5));
    let s = &c.sets[0];
    assert_eq!(s.sources, [config::Source::CtState]);
    let mut got: Vec<u128> = s.elements.iter().map(|e| e.key[0].start).collect();
    got.sort();
    assert_eq!(got, [1, 8]);
}

#[test]
fn mistakes_are_refused_with_place_and_value() {
    let e = parse(SET).unwrap_err();
    assert!(
        e.starts_with("f.toml:6:9: set `s` matches `ct state`") && e.contains("[conntrack]"),
        "{e}"
    );
    for (extra, want) in [
        ("max = 0", "f.toml:11:7: max = 0 is not in 1..=16777216"),
        ("udp_timeout = 0", "f.toml:11:15: udp_timeout = 0 is not in"),
        (
            "tcp_timeout_close_wait = 40000000",
            "f.toml:11:26: tcp_timeout_close_wait = 40000000",
        ),
        ("timeout = 3", "f.toml:11:1: unknown field `timeout`"),
    ] {
        let e = parse(&format!("{SET}[conntrack]\nenabled = true\n{extra}\n")).unwrap_err();
        assert!(e.starts_with(want), "{extra}: {e}");
    }
    let e = parse(&format!(
        "{}[conntrack]\nenabled = true\n",
        SET.replace("\"new\"", "\"old\"")
    ))
    .unwrap_err();
    assert!(
        e.contains("`old` is not a ct_state: known: new, established, related, invalid, untracked"),
        "{e}"
    );
}
