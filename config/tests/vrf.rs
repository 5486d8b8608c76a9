//! VRFs in the configuration: ports and routes in them, the same
//! prefixes and networks in several, gateways found among a VRF's own
//! ports, route files per VRF, and every wrong line refused with its
//! place and value.

use config::Via;
use std::path::Path;

fn parse(text: &str) -> config::Config {
    config::parse("f.toml", text, Path::new(".")).unwrap()
}

/// `text` with the kernel table mirrored (`[routes]` is a table: before
/// the others would do, but TOML takes it anywhere at the top).
fn kernel(text: String) -> String {
    format!("{text}\n[routes]\nsource = \"kernel\"\n")
}

fn err(text: &str) -> String {
    config::parse("f.toml", text, Path::new("."))
        .unwrap_err()
        .to_string()
}

/// Two tenants with the same addresses on their own ports, a port in
/// the default VRF, and a default route each.
const TWO: &str = r#"
[[vrf]]
name = "red"
[[vrf]]
name = "blue"
[[port]]
name = "r"
vrf = "red"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[[port]]
name = "b"
vrf = "blue"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[[port]]
name = "up"
address = ["198.51.100.1/24"]
[[port]]
name = "r2"
vrf = "red"
address = ["203.0.113.1/24"]
[[next_hop]]
name = "upstream"
port = "up"
address = "198.51.100.254"
[[route]]
prefix = "0.0.0.0/0"
via = "203.0.113.254"
vrf = "red"
[[route]]
prefix = "0.0.0.0/0"
via = "upstream"
vrf = "blue"
[[route]]
prefix = "0.0.0.0/0"
via = "upstream"
"#;

#[test]
fn ports_and_routes_take_their_vrfs() {
    let cfg = parse(TWO);
    assert_eq!(cfg.vrf_count(), 3);
    assert_eq!(
        (cfg.vrf_name(0), cfg.vrf_name(1), cfg.vrf_name(2)),
        ("default", "red", "blue")
    );
    assert_eq!(cfg.vrf_index("blue"), Some(2));
    assert_eq!(cfg.vrf_index("default"), Some(0));
    let vrfs: Vec<u16> = cfg.ports.iter().map(|p| p.vrf).collect();
    assert_eq!(vrfs, [1, 2, 0, 1]);
    // The same default route in three VRFs, in file order.
    let routes: Vec<(u16, u128, u32)> = cfg
        .routes
        .iter()
        .map(|r| (r.vrf, r.prefix, r.len))
        .collect();
    assert_eq!(routes, [(1, 0, 0), (2, 0, 0), (0, 0, 0)]);
    // red's gateway is on red's port r2 (a next hop made for it).
    let Via::NextHop(h) = cfg.routes[0].via else {
        panic!("a gateway is a next hop")
    };
    assert_eq!(cfg.next_hops[h].port, 3);
    // blue leaks into the default VRF through a configured next hop.
    let Via::NextHop(h) = cfg.routes[1].via else {
        panic!("a next hop")
    };
    assert_eq!(cfg.next_hops[h].name, "upstream");
}

#[test]
fn a_gateway_of_the_same_address_in_two_vrfs_is_two_next_hops() {
    let text = TWO.replace(
        "via = \"upstream\"\nvrf = \"blue\"",
        "via = \"192.0.2.254\"\nvrf = \"blue\"",
    ) + "[[route]]\nprefix = \"198.18.0.0/15\"\nvia = \"192.0.2.254\"\nvrf = \"red\"\n";
    let cfg = parse(&text);
    let port_of = |i: usize| match cfg.routes[i].via {
        Via::NextHop(h) => cfg.next_hops[h].port,
        Via::Ecmp(_) => usize::MAX,
    };
    let blue = cfg.routes.iter().position(|r| r.vrf == 2).unwrap();
    let red = cfg.routes.iter().position(|r| r.len == 15).unwrap();
    assert_eq!(port_of(blue), 1, "blue's 192.0.2.254 is on b");
    assert_eq!(port_of(red), 0, "red's 192.0.2.254 is on r");
}

#[test]
fn route_files_per_vrf() {
    let dir = std::env::temp_dir().join(format!("fwd-vrf-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A route file names next hops and groups (not gateway addresses).
    std::fs::write(
        dir.join("blue.routes"),
        "198.18.0.0/15 upstream\n10.0.0.0/8 upstream\n",
    )
    .unwrap();
    std::fs::write(dir.join("main.routes"), "198.18.0.0/15 upstream\n").unwrap();
    // (A top-level key comes before the tables.)
    let text = format!(
        "route_file = \"main.routes\"\n{}",
        TWO.replace(
            "[[vrf]]\nname = \"blue\"",
            "[[vrf]]\nname = \"blue\"\nroute_file = \"blue.routes\"",
        )
    );
    let cfg = config::parse("f.toml", &text, &dir).unwrap();
    assert_eq!(cfg.file_routes.len(), 1);
    assert_eq!(cfg.vrfs[1].file_routes.len(), 2);
    assert!(cfg.vrfs[1].file_routes.iter().all(|r| r.vrf == 2));
    assert!(cfg.vrfs[0].file_routes.is_empty());
    // The same prefix in the default VRF's file and blue's is no
    // duplicate; every route is listed once.
    assert_eq!(cfg.all_routes().count(), 3 + 1 + 2);
    assert_eq!(cfg.route_count(), 3 + 1 + 2);
    // Twice in one VRF's file is.
    std::fs::write(
        dir.join("blue.routes"),
        "10.0.0.0/8 upstream\n10.0.0.0/8 upstream\n",
    )
    .unwrap();
    let e = config::parse("f.toml", &text, &dir)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("blue.routes:2:1") && e.contains("given twice"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn wrong_vrf_lines_are_refused_at_their_value() {
    let cases: Vec<(String, &str)> = vec![
        (
            TWO.replace("vrf = \"blue\"\naddress", "vrf = \"green\"\naddress"),
            "unknown VRF `green` (default, red, blue)",
        ),
        (
            TWO.replace(
                "via = \"upstream\"\nvrf = \"blue\"",
                "via = \"upstream\"\nvrf = \"pink\"",
            ),
            "unknown VRF `pink`",
        ),
        (
            TWO.replace("name = \"blue\"\n[[port]]", "name = \"red\"\n[[port]]"),
            "duplicate VRF name `red`",
        ),
        (
            TWO.replace("name = \"blue\"\n[[port]]", "name = \"default\"\n[[port]]"),
            "`default` is the VRF of ports and routes that name none",
        ),
        (
            TWO.replace("name = \"blue\"\n[[port]]", "name = \"a/b\"\n[[port]]"),
            "`a/b` is not a VRF name",
        ),
        (
            TWO.replace(
                "name = \"blue\"\n[[port]]",
                "name = \"blue\"\ntable = 10\n[[port]]",
            ),
            "`table` mirrors a kernel table into the VRF: it needs `[routes] source = \"kernel\"`",
        ),
        (
            kernel(TWO.replace(
                "name = \"blue\"\n[[port]]",
                "name = \"blue\"\ntable = 254\n[[port]]",
            )),
            "table 254 is the `default` VRF's (`[routes] table`)",
        ),
        (
            kernel(TWO.replace(
                "name = \"blue\"\n[[port]]",
                "name = \"blue\"\ntable = 255\n[[port]]",
            )),
            "table 255 is not a routing table",
        ),
        (
            kernel(
                TWO.replace(
                    "name = \"blue\"\n[[port]]",
                    "name = \"blue\"\ntable = 100\n[[port]]",
                )
                .replace(
                    "name = \"red\"\n[[vrf]]",
                    "name = \"red\"\ntable = 100\n[[vrf]]",
                ),
            ),
            "table 100 is VRF `red`'s already",
        ),
        // A gateway on another VRF's network: only through a next hop.
        (
            TWO.replace(
                "via = \"upstream\"\nvrf = \"blue\"",
                "via = \"198.51.100.254\"\nvrf = \"blue\"",
            ),
            "gateway `198.51.100.254` is on none of the networks of the VRF's ports",
        ),
        // A VRF's connected network is its own; another VRF's is not.
        (
            TWO.to_string()
                + "[[route]]\nprefix = \"192.0.2.0/24\"\nvia = \"upstream\"\nvrf = \"red\"\n",
            "route `192.0.2.0/24` is port `r`'s connected network",
        ),
        (
            TWO.to_string()
                + "[[route]]\nprefix = \"0.0.0.0/0\"\nvia = \"upstream\"\nvrf = \"blue\"\n",
            "route `0.0.0.0/0` is given twice",
        ),
    ];
    for (text, want) in cases {
        let e = err(&text);
        assert!(e.contains(want), "want `{want}`, got: {e}");
        assert!(e.starts_with("f.toml:"), "{e}");
    }
    // Kernel tables per VRF.
    let text = format!(
        "[routes]\nsource = \"kernel\"\ntable = 200\n{}",
        TWO.replace(
            "name = \"blue\"\n[[port]]",
            "name = \"blue\"\ntable = 254\n[[port]]"
        )
    );
    let cfg = parse(&text);
    assert_eq!(cfg.kernel.as_ref().map(|k| k.table), Some(200));
    assert_eq!((cfg.vrfs[0].table, cfg.vrfs[1].table), (None, Some(254)));
    // Kernel tables per VRF.
    let cfg = parse(&format!(
        "[routes]\nsource = \"kernel\"\ntable = 200\n{}",
        TWO.replace(
            "name = \"blue\"\n[[port]]",
            "name = \"blue\"\ntable = 254\n[[port]]"
        )
    ));
    assert_eq!(cfg.kernel.as_ref().map(|k| k.table), Some(200));
    assert_eq!((cfg.vrfs[0].table, cfg.vrfs[1].table), (None, Some(254)));
    // Another VRF's connected network may be routed in this one.
    let ok = TWO.to_string()
        + "[[route]]\nprefix = \"203.0.113.0/24\"\nvia = \"upstream\"\nvrf = \"blue\"\n";
    parse(&ok);
}

#[test]
fn too_many_vrfs_are_refused() {
    let mut text = String::new();
    for i in 0..256 {
        text.push_str(&format!("[[vrf]]\nname = \"v{i}\"\n"));
    }
    let e = err(&text);
    assert!(
        e.contains("more than 255 VRFs") && e.contains("f.toml:"),
        "{e}"
    );
    let fits: String = text.lines().take(255 * 2).collect::<Vec<_>>().join("\n");
    assert_eq!(parse(&fits).vrf_count(), 256);
}
