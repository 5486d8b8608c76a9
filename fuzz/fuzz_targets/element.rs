//! Element, key and declaration parsers: no panic, and whatever parses
//! prints canonically and parses back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use matcher::SetDecl;

const DECLS: [&str; 6] = [
    "type ipv4_addr . inet_service : verdict",
    "type ipv6_addr . ether_addr . inet_proto . mark",
    "type inet_service : ipv6_addr",
    "type ipv4_addr . inet_service; flags timeout; timeout 10m",
    "type ipv4_addr : verdict; flags timeout",
    "type ifname . dscp . inet_service",
];

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let _ = SetDecl::parse(s);
    for d in DECLS {
        let d = SetDecl::parse(d).unwrap();
        if let Ok(e) = d.parse_element(s) {
            assert_eq!(d.parse_element(&d.format_element(&e)).unwrap(), e);
        }
        let _ = d.parse_element_key(s);
        if let Ok(k) = d.parse_key(s) {
            assert_eq!(d.parse_key(&d.format_key(&k)).unwrap(), k);
        }
    }
});
