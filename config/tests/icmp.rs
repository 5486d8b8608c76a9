//! Sets on ICMP types: `icmp_type` and `icmpv6_type` fields fed by `icmp
//! type` and `icmpv6 type`, with nft's names (which hold a `-`, also in
//! ranges); a type the match does not fill, or a name of the other
//! family, refused with its place and value.

use std::path::Path;

fn set(ty: &str, m: &str, elements: &str) -> Result<config::Config, String> {
    let text = format!(
        "[[port]]\nname = \"p\"\n[[set]]\nname = \"s\"\ntype = \"{ty}\"\nmatch = \"{m}\"\n\
         action = \"drop\"\nelements = [{elements}]\n"
    );
    config::parse("f.toml", &text, Path::new(".")).map_err(|e| e.to_string())
}

#[test]
fn icmp_types_by_name_number_and_range() {
    let c = set(
        "icmp_type",
        "icmp type",
        "\"echo-request\", \"3\", \"echo-reply\", \"timestamp-request-address-mask-reply\"",
    )
    .unwrap();
    let s = &c.sets[0];
    assert_eq!(s.sources, [config::Source::IcmpType(false)]);
    let mut got: Vec<(u128, u128)> = s
        .elements
        .iter()
        .map(|e| (e.key[0].start, e.key[0].end))
        .collect();
    got.sort();
    assert_eq!(got, [(0, 0), (3, 3), (8, 8), (13, 18)]);
    let c = set(
        "ipv6_addr . icmpv6_type",
        "ip6 saddr . icmpv6 type",
        "\"2001:db8::/32 . nd-neighbor-solicit-nd-neighbor-advert\"",
    )
    .unwrap();
    assert_eq!(c.sets[0].elements[0].key[1].start, 135);
    assert_eq!(c.sets[0].elements[0].key[1].end, 136);
}

#[test]
fn wrong_icmp_sets_are_refused_with_place_and_value() {
    let e = set("icmp_type", "icmp type", "\"nd-neighbor-solicit\"").unwrap_err();
    assert!(
        e.contains("f.toml:") && e.contains("`nd-neighbor-solicit` is not an icmp_type"),
        "{e}"
    );
    let e = set("icmp_type", "icmpv6 type", "\"echo-request\"").unwrap_err();
    assert!(e.contains("f.toml:") && e.contains("icmpv6 type"), "{e}");
    let e = set("icmpv6_type", "icmpv6 type", "\"256\"").unwrap_err();
    assert!(e.contains("type out of range 0-255"), "{e}");
    let e = set("icmp_type", "icmp code", "\"0\"").unwrap_err();
    assert!(e.contains("unknown packet field `icmp code`"), "{e}");
}
