//! The text parsers never panic, whatever they are fed, and canonical
//! output parses back to the same element.

mod common;

use common::{Gen, Rng};
use matcher::file::SetFile;
use matcher::SetDecl;
use proptest::prelude::*;

const DECLS: [&str; 6] = [
    "type ipv4_addr . inet_service : verdict",
    "type ipv6_addr . ether_addr . inet_proto",
    "type mark : ipv4_addr",
    "type inet_service . ipv4_addr . ipv6_addr",
    "type ipv4_addr . inet_service; flags timeout; timeout 10m",
    "type ipv4_addr : verdict; flags timeout",
];

fn text() -> impl Strategy<Value = String> {
    // Mostly the characters the syntax is made of, plus anything at all.
    prop_oneof![
        proptest::string::string_regex("[0-9a-fA-F.:/ ,#\\-xtypeacdrjumpgo_\n]{0,80}").unwrap(),
        // Elements with options: `timeout`, `priority`, `expires`.
        proptest::string::string_regex("192\\.0\\.2\\.[0-9]{1,3}( \\. [0-9]{1,5})?( (timeout|priority|expires) [0-9dhms]{0,8}){0,2}( : (drop|accept))?").unwrap(),
        any::<String>(),
    ]
}

/// Interface names (nft's `ifname`): bare or quoted, a final `*` for
/// every name it starts; printed quoted as nft prints them; anything
/// else refused.
#[test]
fn interface_names() {
    let d = SetDecl::parse("type ifname . inet_service").unwrap();
    for (text, canon) in [
        ("wan . 22", "\"wan\" . 22"),
        ("\"lan0\" . 80", "\"lan0\" . 80"),
        ("eth* . 443", "\"eth*\" . 443"),
        // Found by the fuzzer: the quotes were counted in the stem.
        ("\"wan\"* . 1", "\"wan*\" . 1"),
        ("\"vlan.100\" . 1-2", "\"vlan.100\" . 1-2"),
        ("abcdefghijklmno . 7", "\"abcdefghijklmno\" . 7"),
    ] {
        let e = d.parse_element(text).unwrap();
        assert_eq!(d.format_element(&e), canon);
        assert_eq!(d.parse_element(canon).unwrap(), e);
    }
    let key = |name: &str| {
        let mut k = [0u8; 18];
        k[..name.len()].copy_from_slice(name.as_bytes());
        k
    };
    let e = d.parse_element("eth* . 0-65535").unwrap();
    let hit = |name: &str| {
        let k = key(name);
        e.key[0].start <= u128::from_be_bytes(k[..16].try_into().unwrap())
            && u128::from_be_bytes(k[..16].try_into().unwrap()) <= e.key[0].end
    };
    assert!(hit("eth0") && hit("eth") && hit("eth.100"));
    assert!(!hit("et") && !hit("wan") && !hit("fth0"));
    for bad in ["", "\"\"", "sixteen-bytes-xx", "a*b", "x/y", "\"q\"\""] {
        assert!(d.parse_element(&format!("{bad} . 1")).is_err(), "{bad}");
    }
}

/// DSCP code points (nft's `dscp`): nft's names and numbers 0-63,
/// printed by name where one exists.
#[test]
fn dscp_names() {
    let d = SetDecl::parse("type dscp").unwrap();
    for (text, canon) in [
        ("ef", "ef"),
        ("46", "ef"),
        ("cs1-cs3", "cs1-cs3"),
        ("af11", "af11"),
        ("0x3f", "0x3f"),
        ("le", "le"),
    ] {
        let e = d.parse_element(text).unwrap();
        assert_eq!(d.format_element(&e), canon, "{text}");
        assert_eq!(d.parse_element(canon).unwrap(), e);
    }
    for bad in ["64", "0-64", "af44", "efx", ""] {
        assert!(d.parse_element(bad).is_err(), "{bad}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic(s in text()) {
        let _ = SetDecl::parse(&s);
        let _ = SetFile::parse("f", &s);
        for d in DECLS {
            let d = SetDecl::parse(d).unwrap();
            if let Ok(e) = d.parse_element(&s) {
                // Whatever parses prints canonically and parses back.
                let again = d.parse_element(&d.format_element(&e)).unwrap();
                prop_assert_eq!(again, e);
            }
            let _ = d.parse_element_key(&s);
            let _ = d.parse_key(&s);
            let _ = SetFile::parse("f", &format!("{d}\n{s}"));
        }
    }

    #[test]
    fn canonical_form_round_trips(seed in any::<u64>()) {
        let mut rng = Rng(seed);
        let g = Gen::random(&mut rng);
        for _ in 0..20 {
            let e = g.element(&mut rng);
            let text = g.decl.format_element(&e);
            prop_assert_eq!(g.decl.parse_element(&text).unwrap(), e, "{}", text);
            let values = g.random_key(&mut rng);
            let key = g.decl.key_from_values(&values);
            prop_assert_eq!(g.decl.parse_key(&g.decl.format_key(&key)).unwrap(), key);
        }
        let again = SetDecl::parse(&g.decl.to_string()).unwrap();
        prop_assert_eq!(again, g.decl.clone());
    }

    #[test]
    fn durations_round_trip(ms in 1u64..=10 * 365 * 86_400_000) {
        let text = matcher::format_duration(ms);
        prop_assert_eq!(matcher::parse_duration(&text), Ok(ms), "{}", text);
    }
}
