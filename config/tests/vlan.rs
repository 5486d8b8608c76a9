//! VLAN sub-interfaces in the configuration: numbered after the ports
//! with drivers, with their parent's MAC and MTU, and every wrong line
//! refused with its place and value.

use config::driver::VlanOptions;
use config::Driver;
use std::path::Path;

fn err(text: &str) -> String {
    config::parse("f.toml", text, Path::new("."))
        .unwrap_err()
        .to_string()
}

const TRUNK: &str = "[[port]]\nname = \"t\"\nmac = \"02:00:00:00:00:07\"\nmtu = 9000\n";

#[test]
fn sub_interfaces_come_after_the_ports_and_take_their_parents_mac() {
    let text = format!(
        "[[port]]\nname = \"t.5\"\nparent = \"t\"\nvlan = 5\naddress = [\"192.0.2.1/24\"]\n\
         {TRUNK}[[port]]\nname = \"q\"\nparent = \"t\"\nvlan = [6, 7]\nmtu = 1500\n\
         [[port]]\nname = \"u\"\n"
    );
    let cfg = config::parse("f.toml", &text, Path::new(".")).unwrap();
    let names: Vec<&str> = cfg.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["t", "u", "t.5", "q"]);
    assert_eq!(cfg.physical_ports(), 2);
    let sub = &cfg.ports[2];
    assert_eq!(
        sub.driver,
        Driver::Vlan(VlanOptions {
            parent: 0,
            tags: vec![5]
        })
    );
    assert_eq!(sub.mac, [2, 0, 0, 0, 0, 7]);
    assert_eq!(sub.mtu, 9000, "the parent's MTU");
    // Its IPv6 link-local address comes from the parent's MAC.
    assert_eq!(sub.addresses.len(), 2);
    assert_eq!(cfg.ports[3].mtu, 1500);
    assert_eq!(
        cfg.ports[3].driver,
        Driver::Vlan(VlanOptions {
            parent: 0,
            tags: vec![6, 7]
        })
    );
    // The trunk lets the router's frames in for its sub-interface.
    assert!(cfg.addressed(0) && !cfg.addressed(1));
    let Driver::Vlan(v) = &cfg.ports[3].driver else {
        unreachable!()
    };
    assert_eq!(v.wire(), ([0x88, 0xa8, 0, 6, 0x81, 0, 0, 7], 8));
}

#[test]
fn wrong_sub_interfaces_are_refused_at_their_value() {
    let sub = |body: &str| format!("{TRUNK}[[port]]\nname = \"s\"\n{body}\n");
    let cases = [
        (
            sub("parent = \"t\""),
            "f.toml:6:8: a sub-interface (`parent`) needs its tag: `vlan = ID` or `vlan = [outer, inner]`",
        ),
        (
            sub("parent = \"t\"\nvlan = 4095"),
            "f.toml:8:8: `vlan = 4095`: a VLAN ID from 1 to 4094, or two, `[outer, inner]`",
        ),
        (
            sub("parent = \"t\"\nvlan = [1, 2, 3]"),
            "f.toml:8:8: `vlan = [1, 2, 3]`: a VLAN ID from 1 to 4094, or two, `[outer, inner]`",
        ),
        (
            sub("parent = \"t\"\nvlan = \"5\""),
            "f.toml:8:8: `vlan = \"5\"`: a VLAN ID from 1 to 4094, or two, `[outer, inner]`",
        ),
        (
            sub("parent = \"nope\"\nvlan = 5"),
            "f.toml:7:10: no port is named `nope`",
        ),
        (
            sub("vlan = 5"),
            "f.toml:7:8: `vlan` needs `parent`: the port whose frames carry the tag",
        ),
        (
            sub("parent = \"t\"\nvlan = 5\ndriver = \"af_packet\""),
            "f.toml:9:10: a VLAN sub-interface has no driver: its frames go through its parent's",
        ),
        (
            sub("parent = \"t\"\nvlan = 5\nmac = \"02:00:00:00:00:01\""),
            "f.toml:9:7: a VLAN sub-interface sends with its parent's MAC",
        ),
        (
            sub("parent = \"t\"\nvlan = 5\n[port.options]\nflows = 3"),
            "f.toml:10:1: a VLAN sub-interface has no driver options",
        ),
        (
            format!(
                "{}[[port]]\nname = \"s2\"\nparent = \"t\"\nvlan = 5\n",
                sub("parent = \"t\"\nvlan = 5")
            ),
            "f.toml:12:8: port `s` already is VLAN [5] of `t`",
        ),
        (
            format!(
                "{}[[port]]\nname = \"s2\"\nparent = \"s\"\nvlan = 6\n",
                sub("parent = \"t\"\nvlan = 5")
            ),
            "f.toml:11:10: port `s` is a VLAN sub-interface itself: `parent` names a port with a driver (give two tags, `vlan = [outer, inner]`, for 802.1ad)",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err(&text), want, "in:\n{text}");
    }
}
