//! The example configuration loads; every kind of mistake is reported with
//! its file, line, column and value.

use config::{Action, Source, Via};
use routecache::gen::Rng;
use std::path::Path;

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

#[test]
fn the_example_loads() {
    let c = config::load(&examples().join("forwarder.toml")).unwrap();
    assert_eq!(c.forwarder.cores, vec![0]);
    assert_eq!(c.forwarder.burst, 64);
    assert_eq!(c.ports.len(), 2);
    assert_eq!(c.sets.len(), 2);
    let bl = &c.sets[0];
    assert_eq!(bl.elements.len(), 1024);
    assert_eq!(bl.sources, vec![Source::IpDaddr, Source::Dport(None)]);
    assert_eq!(bl.action, Action::Drop);
    assert_eq!(c.sets[1].action, Action::Verdict);
    assert!(c.routes.len() >= 300, "{} routes", c.routes.len());
    assert!(c.routes.iter().any(|r| r.v6));
    assert!(c.routes.iter().any(|r| matches!(r.via, Via::Ecmp(_))));
    assert_eq!(c.ecmp[0].members, vec![0, 1]);
    assert_eq!(c.flow_cache.entries, Some(16384));
    assert_eq!(c.flow_cache.insert_one_in, Some(32));
}

fn err(text: &str) -> String {
    config::parse("f.toml", text, Path::new("."))
        .unwrap_err()
        .to_string()
}

const BASE: &str = r#"
[[port]]
name = "p0"

[[next_hop]]
name = "gw"
port = "p0"
mac = "02:00:00:00:00:fe"
"#;

/// Without `burst`, with or without a `[forwarder]` table: the default,
/// the most a burst holds.
#[test]
fn burst_defaults_to_the_largest() {
    for text in [
        BASE.to_string(),
        format!("[forwarder]\ncores = [0]\n{BASE}"),
    ] {
        let c = config::parse("f.toml", &text, Path::new(".")).unwrap();
        assert_eq!(c.forwarder.burst, config::DEFAULT_BURST);
    }
    assert_eq!(config::DEFAULT_BURST, 64);
    let c = config::parse(
        "f.toml",
        &format!("[forwarder]\nburst = 32\n{BASE}"),
        Path::new("."),
    );
    assert_eq!(c.unwrap().forwarder.burst, 32);
}

#[test]
fn errors_name_line_column_and_value() {
    let set = |body: &str| format!("{BASE}\n[[set]]\nname = \"s\"\n{body}\n");
    let cases = [
        (
            set("type = \"ipv5_addr\"\nmatch = \"ip daddr\"\naction = \"drop\""),
            "f.toml:12:8: unknown field type `ipv5_addr`",
        ),
        (
            set("type = \"ipv4_addr\"\nmatch = \"ip dadr\"\naction = \"drop\""),
            "f.toml:13:9: unknown packet field `ip dadr` (known: ip saddr|daddr, ip6 saddr|daddr, tcp|udp|sctp|th sport|dport, meta l4proto (ip protocol, ip6 nexthdr), icmp type, icmpv6 type, ct state, ether saddr|daddr, meta mark, meta iifname, meta oifname (hook forward), ip dscp, ip6 dscp)",
        ),
        (
            set("type = \"ipv4_addr\"\nmatch = \"ip6 daddr\"\naction = \"drop\""),
            "f.toml:13:9: `ip6 daddr`: a ipv4_addr field is fed a ipv6_addr",
        ),
        (
            set("type = \"inet_service\"\nmatch = \"th dport\"\naction = \"drop\"\nelements = [\"1-10\", \"5\"]"),
            "f.toml:15:21: overlap: `5` overlaps existing element `1-10`",
        ),
        (
            set("type = \"inet_service\"\nmatch = \"th dport\"\naction = \"jump x\""),
            "f.toml:14:10: unknown action `jump x` (drop, accept, reject, verdict)",
        ),
        (
            format!("{BASE}\n[[route]]\nprefix = \"192.0.2.0/24\"\nvia = \"gw2\"\n"),
            "f.toml:12:7: unknown next hop or ECMP group `gw2`",
        ),
        (
            format!("{BASE}\n[[route]]\nprefix = \"192.0.2.1/24\"\nvia = \"gw\"\n"),
            "f.toml:11:10: `192.0.2.1/24`: address has host bits set (the network is 192.0.2.0/24)",
        ),
        (
            format!("{BASE}\n[[next_hop]]\nname = \"gw\"\nport = \"p0\"\nmac = \"02:00:00:00:00:01\"\n"),
            "f.toml:11:8: duplicate next hop name `gw`",
        ),
        (
            format!("{BASE}\n[[next_hop]]\nname = \"x\"\nport = \"p9\"\nmac = \"02:00:00:00:00:01\"\n"),
            "f.toml:12:8: unknown port `p9`",
        ),
        (
            "[forwarder]\ncores = [0]\nburts = 32\n".to_string(),
            "f.toml:3:1: unknown field `burts`, expected `cores` or `burst`",
        ),
        (
            "[forwarder]\nburst = 100\n".to_string(),
            "f.toml:2:9: burst 100 is outside 1-64",
        ),
        (
            "[flow_cache]\nentries = 99999999\n".to_string(),
            "f.toml:2:11: 99999999 flow cache entries is more than 4194304",
        ),
        (
            "[flow_cache]\nentries = 64\ninsert_one_in = 0\n".to_string(),
            "f.toml:3:17: insert_one_in = 0 is not in 1..=65536",
        ),
        (
            "[flow_cache]\nentres = 64\n".to_string(),
            "f.toml:2:1: unknown field `entres`, expected `entries` or `insert_one_in`",
        ),
        (
            "[[port]]\nname = \"p\"\ndriver = \"netmap\"\n".to_string(),
            "f.toml:3:10: unknown driver `netmap` (synthetic, af_packet, af_xdp, dpdk)",
        ),
        // Driver options are checked as the file loads, at the value or
        // the key at fault.
        (
            "[[port]]\nname = \"p\"\ndriver = \"af_packet\"\n[port.options]\nring_frames = 10\n"
                .to_string(),
            "f.toml:5:15: port `p`: option `ring_frames` must be an integer from 64 to 1048576",
        ),
        (
            "[[port]]\nname = \"p\"\n[port.options]\nflows = 1\nspeed = 3\n".to_string(),
            "f.toml:5:1: port `p`: unknown option `speed` for the synthetic driver \
             (flows, ipv6_percent, frame_size, set_hit_percent, seed, verify, vlan)",
        ),
        (
            "[[port]]\nname = \"x\"\ndriver = \"af_xdp\"\noptions = { frames = 100 }\n"
                .to_string(),
            "f.toml:4:22: port `x`: option `frames` must be a power of two from 64 to 65536",
        ),
        (
            "[[port]]\nname = \"x\"\ndriver = \"af_xdp\"\noptions = { xdp_mode = \"fast\" }\n"
                .to_string(),
            "f.toml:4:24: port `x`: option `xdp_mode` must be `native`, `skb` or `auto`",
        ),
        (
            "[[port]]\nname = \"d\"\ndriver = \"dpdk\"\n[port.options]\neal = [1]\n".to_string(),
            "f.toml:5:7: port `d`: option `eal` must be an array of strings",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err(&text), want, "in:\n{text}");
    }
    // A syntax error is located too.
    let e = err("[forwarder\ncores = [0]\n");
    assert!(e.starts_with("f.toml:1:"), "{e}");
}

#[test]
fn element_files_report_their_own_lines() {
    let dir = std::env::temp_dir().join(format!("cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s.set"), "# two ports\n80\n\n90-80\n").unwrap();
    let text = "[[set]]\nname = \"s\"\ntype = \"inet_service\"\nmatch = \"tcp dport\"\naction = \"accept\"\nfile = \"s.set\"\n";
    let e = config::parse("f.toml", text, &dir).unwrap_err();
    assert_eq!(e.file, dir.join("s.set").display().to_string());
    assert_eq!(e.line, 4);
    assert!(e.message.contains("`90-80`"), "{e}");
    std::fs::write(dir.join("s.set"), "80\n443\n").unwrap();
    let c = config::parse("f.toml", text, &dir).unwrap();
    assert_eq!(c.sets[0].elements.len(), 2);
    assert_eq!(c.sets[0].sources, vec![Source::Dport(Some(6))]);
    // The files `forwarder lookup --set` reads load here too: a leading
    // `type` line is allowed, and must be the set's.
    std::fs::write(
        dir.join("s.set"),
        "# services\ntype inet_service\n80\n443\n",
    )
    .unwrap();
    let c = config::parse("f.toml", text, &dir).unwrap();
    assert_eq!(c.sets[0].elements.len(), 2);
    std::fs::write(dir.join("s.set"), "\ntype ipv4_addr\n192.0.2.1\n").unwrap();
    let e = config::parse("f.toml", text, &dir).unwrap_err();
    assert_eq!((e.line, e.col), (2, 1), "{e}");
    assert!(
        e.message
            .contains("the file declares `type ipv4_addr`, the set is `type inet_service`"),
        "{e}"
    );
    // A huge bad line is quoted in part, not echoed whole.
    let long = "8".repeat(5 << 20);
    std::fs::write(dir.join("s.set"), format!("80\n{long}\n")).unwrap();
    let e = config::parse("f.toml", text, &dir).unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.message.len() < 300, "{} bytes", e.message.len());
    assert!(e.message.contains("(5242880 bytes)"), "{}", e.message);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_control_section() {
    let c = config::load(&examples().join("forwarder.toml")).unwrap();
    assert!(c.control.watch);
    assert_eq!(
        (c.control.socket.clone(), c.control.prometheus),
        (None, None)
    );
    let ok = config::parse(
        "f.toml",
        &format!("{BASE}\n[control]\nwatch = false\nsocket = \"x.sock\"\nprometheus = \"127.0.0.1:9100\"\n"),
        Path::new("/etc/fwd"),
    )
    .unwrap();
    assert!(!ok.control.watch);
    assert_eq!(
        ok.control.socket.as_deref(),
        Some(Path::new("/etc/fwd/x.sock"))
    );
    assert_eq!(
        ok.control.prometheus,
        Some("127.0.0.1:9100".parse().unwrap())
    );
    assert_eq!(
        err(&format!("{BASE}\n[control]\nprometheus = \"localhost\"\n")),
        "f.toml:11:14: `localhost` is not an address:port such as 127.0.0.1:9100"
    );
    assert!(err(&format!("{BASE}\n[control]\nsockett = \"x\"\n"))
        .starts_with("f.toml:11:1: unknown field `sockett`"));
    // The socket of a running instance is found from its file, even when
    // the file has errors elsewhere.
    let dir = std::env::temp_dir().join(format!("cfg-sock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("a.toml");
    std::fs::write(
        &f,
        "[control]\nsocket = \"ctl.sock\"\n[[port]]\nbroken = \n",
    )
    .unwrap();
    assert_eq!(config::control_socket(&f), dir.join("ctl.sock"));
    std::fs::write(&f, "[[port]]\nname = \"p0\"\n").unwrap();
    assert_eq!(config::control_socket(&f), config::default_socket(&f));
    assert_ne!(
        config::default_socket(&f),
        config::default_socket(&dir.join("b.toml"))
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn routes_from_a_route_file() {
    let dir = std::env::temp_dir().join(format!("cfg-routes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let routes = dir.join("routes.txt");
    let cfg = |file_text: &str| {
        std::fs::write(&routes, file_text).unwrap();
        config::parse(
            "f.toml",
            &format!("route = [{{ prefix = \"192.0.2.0/24\", via = \"gw\" }}]\nroute_file = \"routes.txt\"\n{BASE}"),
            &dir,
        )
    };
    let c =
        cfg("# full table\n198.51.100.0/24 gw\n\n2001:db8::/32   gw   # a comment\n0.0.0.0/0 gw\n")
            .unwrap();
    // The inline route, then the file's, sorted by prefix.
    assert_eq!(
        (c.routes.len(), c.file_routes.len(), c.route_count()),
        (1, 3, 4)
    );
    assert_eq!(c.route_file.as_deref(), Some(routes.as_path()));
    assert_eq!((c.file_routes[0].prefix, c.file_routes[0].len), (0, 0));
    assert_eq!(
        (c.file_routes[1].prefix, c.file_routes[1].len),
        (0xc633_6400, 24)
    );
    assert!(c.file_routes[2].v6 && c.file_routes[2].len == 32);
    assert_eq!(c.all_routes().count(), 4);
    // Where each came from: the inline one's line in the TOML, the
    // file's in the file (sorting keeps them).
    assert_eq!(c.routes[0].line, 1);
    let lines: Vec<u32> = c.file_routes.iter().map(|r| r.line).collect();
    assert_eq!(lines, vec![5, 2, 4]);
    let name = routes.display().to_string();
    for (text, want) in [
        (
            "198.51.100.0/24 gw\n198.51.100.1/24 gw\n",
            format!("{name}:2:1: `198.51.100.1/24` has host bits set"),
        ),
        (
            "198.51.100.0/24 gw\n  192.0.2.0/24 gw\n",
            format!("{name}:2:3: route `192.0.2.0/24` is given twice (first at f.toml:1)"),
        ),
        (
            "198.51.100.0/24 gw\n\n198.51.100.0/24 gw\n",
            format!("{name}:3:1: route `198.51.100.0/24` is given twice (first at {name}:1)"),
        ),
        (
            "198.51.100.0/24 gw9\n",
            format!("{name}:1:17: unknown next hop or ECMP group `gw9`"),
        ),
        (
            "198.51.100.0/24\n",
            format!("{name}:1:1: `198.51.100.0/24` has no next hop (PREFIX VIA)"),
        ),
        (
            "198.51.100.0/24 gw x\n",
            format!("{name}:1:20: unexpected `x` (PREFIX VIA)"),
        ),
        (
            "2001:db8::/129 gw\n",
            format!("{name}:1:1: `2001:db8::/129`: a prefix length is at most 128"),
        ),
        (
            "300.1.1.0/24 gw\n",
            format!("{name}:1:1: `300.1.1.0` is not an IPv4 address"),
        ),
    ] {
        assert_eq!(cfg(text).unwrap_err().to_string(), want);
    }
    std::fs::remove_file(&routes).unwrap();
    assert!(cfg_missing(&dir).starts_with("f.toml:2:14: cannot read `routes.txt`"));
    std::fs::remove_dir_all(dir).ok();
}

fn cfg_missing(dir: &Path) -> String {
    config::parse(
        "f.toml",
        &format!("route = []\nroute_file = \"routes.txt\"\n{BASE}"),
        dir,
    )
    .unwrap_err()
    .to_string()
}

/// Driver options come out typed, defaults filled in.
#[test]
fn driver_options_are_typed() {
    use config::driver::{Driver, Fanout};
    let text =
        "[[port]]\nname = \"wan\"\ndriver = \"af_packet\"\n[port.options]\nfanout = \"cpu\"\n\
                [[port]]\nname = \"gen\"\n[port.options]\nverify = true\nflows = 8\n";
    let c = config::parse("f.toml", text, std::path::Path::new(".")).unwrap();
    match &c.ports[0].driver {
        Driver::AfPacket(o) => {
            assert_eq!(o.interface, "wan");
            assert_eq!(o.fanout, Fanout::Cpu);
            assert_eq!(o.ring_frames, 4096);
        }
        d => panic!("{d:?}"),
    }
    match &c.ports[1].driver {
        Driver::Synthetic(o) => assert!(o.verify && o.flows == 8 && o.ipv6_percent == 20),
        d => panic!("{d:?}"),
    }
}

/// A loader reads, parses and checks only the included files that
/// changed: unchanged ones (same stamp, or same content after a save)
/// give the very same shared values; a change of what a file's meaning
/// depends on (the set's inline elements, the next hops' names) reads it
/// again; a route given inline and in an unchanged route file is still
/// refused.
#[test]
fn a_loader_reads_only_what_changed() {
    use config::{LoadStats, Loader};
    use std::sync::Arc;
    let dir = std::env::temp_dir().join(format!("cfg-loader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml = dir.join("f.toml");
    let write_toml = |inline_set: &str, inline_route: &str, hops: &str| {
        std::fs::write(
            &toml,
            format!(
                "route = [{inline_route}]\nroute_file = \"routes.txt\"\n{BASE}{hops}\n\
                 [[set]]\nname = \"s\"\ntype = \"inet_service\"\nmatch = \"tcp dport\"\n\
                 action = \"drop\"\nelements = [{inline_set}]\nfile = \"s.set\"\n"
            ),
        )
        .unwrap();
    };
    let stats = |parsed, reused| LoadStats { parsed, reused };
    write_toml("\"22\"", "", "");
    std::fs::write(dir.join("routes.txt"), "198.51.100.0/24 gw\n0.0.0.0/0 gw\n").unwrap();
    std::fs::write(dir.join("s.set"), "80\n443\n").unwrap();
    let mut loader = Loader::new();
    let a = loader.load(&toml).unwrap();
    assert_eq!(loader.stats(), stats(2, 0));
    assert_eq!(a.sets[0].elements.len(), 3);
    let b = loader.load(&toml).unwrap();
    assert_eq!(loader.stats(), stats(0, 2));
    assert!(Arc::ptr_eq(&a.file_routes, &b.file_routes));
    assert!(Arc::ptr_eq(&a.sets[0].elements, &b.sets[0].elements));
    // Saved unchanged: read and hashed, not parsed.
    std::fs::write(dir.join("s.set"), "80\n443\n").unwrap();
    let c = loader.load(&toml).unwrap();
    assert_eq!(loader.stats(), stats(0, 2));
    assert!(Arc::ptr_eq(&a.sets[0].elements, &c.sets[0].elements));
    // Replaced by a file of the same size (an editor's rename): read.
    let tmp = dir.join("s.set.new");
    std::fs::write(&tmp, "81\n443\n").unwrap();
    std::fs::rename(&tmp, dir.join("s.set")).unwrap();
    let d = loader.load(&toml).unwrap();
    assert_eq!(loader.stats(), stats(1, 1));
    assert!(d.sets[0].elements.iter().any(|e| e.key[0].start == 81));
    // Each element's line: the inline one in the TOML, the file's there
    // (a few changes take the quick check: the lines still follow).
    let l = &d.sets[0].lines;
    let toml_line = std::fs::read_to_string(&toml)
        .unwrap()
        .lines()
        .position(|x| x.starts_with("elements"))
        .unwrap() as u32
        + 1;
    assert_eq!(
        (0..4).map(|i| l.of(i)).collect::<Vec<_>>(),
        vec![
            Some((false, toml_line)),
            Some((true, 1)),
            Some((true, 2)),
            None
        ]
    );
    std::fs::write(
        dir.join("s.set"),
        "# a comment

81
443
",
    )
    .unwrap();
    let d = loader.load(&toml).unwrap();
    assert_eq!(d.sets[0].lines.of(2), Some((true, 4)));
    assert!(Arc::ptr_eq(
        &d.sets[0].elements,
        &loader.load(&toml).unwrap().sets[0].elements
    ));
    // Another inline element: the unchanged file is checked with it.
    write_toml("\"23\"", "", "");
    let e = loader.load(&toml).unwrap();
    assert_eq!(loader.stats(), stats(1, 1));
    assert_eq!(e.sets[0].elements.len(), 3);
    write_toml("\"443\"", "", "");
    let err = loader.load(&toml).unwrap_err();
    assert!(
        err.to_string().contains("exists") || err.to_string().contains("overlap"),
        "{err}"
    );
    // Other next hops: the route file's names are resolved again.
    write_toml(
        "\"22\"",
        "",
        "\n[[next_hop]]\nname = \"gw2\"\nport = \"p0\"\nmac = \"02:00:00:00:00:fd\"\n",
    );
    loader.load(&toml).unwrap();
    assert_eq!(loader.stats(), stats(2, 0));
    // A route given inline and in the (unchanged, reused) file.
    write_toml(
        "\"22\"",
        "{ prefix = \"0.0.0.0/0\", via = \"gw\" }",
        "\n[[next_hop]]\nname = \"gw2\"\nport = \"p0\"\nmac = \"02:00:00:00:00:fd\"\n",
    );
    let err = loader.load(&toml).unwrap_err();
    assert!(
        err.to_string()
            .contains("route `0.0.0.0/0` is given twice (also in `routes.txt`)"),
        "{err}"
    );
    assert_eq!(err.line, 1, "{err}");
    std::fs::remove_dir_all(dir).ok();
}

/// `policy = "first-match"` makes a set take overlapping elements, in
/// order; without it (or with `disjoint`) an overlap names its line; a
/// wrong policy names its value.
#[test]
fn first_match_sets_take_overlaps() {
    let set = |policy: &str| {
        format!(
            "{BASE}\n[[set]]\nname = \"acl\"\ntype = \"ipv4_addr . inet_service : verdict\"\nmatch = \"ip daddr . th dport\"\n{policy}\nelements = [\n  \"192.0.2.7 . 22 : accept\",\n  \"192.0.2.0/24 . 0-65535 : drop\",\n]\n"
        )
    };
    let c = config::parse("f.toml", &set("policy = \"first-match\""), Path::new(".")).unwrap();
    assert_eq!(c.sets[0].decl.policy(), matcher::Policy::FirstMatch);
    assert_eq!(c.sets[0].elements.len(), 2);
    let e = err(&set(""));
    assert!(e.contains("overlaps"), "{e}");
    let e = err(&set("policy = \"disjoint\""));
    assert!(e.contains("overlaps"), "{e}");
    assert_eq!(
        err(&set("policy = \"firstmatch\"")),
        "f.toml:14:10: unknown set policy `firstmatch` (disjoint, first-match)"
    );
}

/// A set file edited in a few places is checked by what changed (the
/// elements added, against the others); the result is always what a
/// fresh load of the same files gives: the same elements in the same
/// order, or the same error at the same line (overlaps, duplicates,
/// timeouts, bad lines).
#[test]
fn edited_set_files_check_as_fresh_ones() {
    use config::Loader;
    let dir = std::env::temp_dir().join(format!("cfg-edits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml = dir.join("f.toml");
    std::fs::write(
        &toml,
        format!(
            "route = [{{ prefix = \"0.0.0.0/0\", via = \"gw\" }}]\n{BASE}\n[[set]]\nname = \"s\"\n\
             type = \"inet_service\"\nmatch = \"tcp dport\"\naction = \"drop\"\nelements = [\"9\"]\n\
             file = \"s.set\"\n"
        ),
    )
    .unwrap();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut next = |n: u64| rng.below(n);
    // Disjoint ranges of ten ports to start from.
    let mut lines: Vec<String> = (1..200)
        .map(|i| format!("{}-{}", i * 100, i * 100 + 9))
        .collect();
    let mut loader = Loader::new();
    let (mut good, mut bad) = (0, 0);
    for round in 0..300 {
        for _ in 0..1 + next(3) {
            let i = next(lines.len() as u64 + 1) as usize;
            match next(8) {
                0 | 1 if !lines.is_empty() => {
                    lines.remove(i.min(lines.len() - 1));
                }
                2 => {
                    let p = 100 + next(20_000);
                    lines.insert(i, format!("{p}-{}", p + next(30)));
                }
                3 if !lines.is_empty() => {
                    let l = lines[i.min(lines.len() - 1)].clone();
                    lines.insert(i, l);
                }
                4 => lines.insert(i, "70000".into()),
                5 => lines.insert(i, "5 timeout 1m".into()),
                _ => {
                    let p = 30_000 + next(30_000);
                    lines.insert(i, p.to_string());
                }
            }
        }
        std::fs::write(dir.join("s.set"), lines.join("\n") + "\n").unwrap();
        let fresh = config::load(&toml);
        let edited = loader.load(&toml);
        match (&fresh, &edited) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.sets[0].elements, b.sets[0].elements, "round {round}");
                good += 1;
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "round {round}");
                bad += 1;
                // Back to what loaded last, so that edits go on from a
                // good file.
                let bad_line = a.line.saturating_sub(1);
                if a.file.ends_with("s.set") && bad_line < lines.len() {
                    lines.remove(bad_line);
                }
            }
            _ => panic!(
                "round {round}: fresh {:?} but edited {:?}",
                fresh.as_ref().err(),
                edited.as_ref().err()
            ),
        }
    }
    assert!(good > 50 && bad > 50, "{good} good, {bad} bad rounds");
    std::fs::remove_dir_all(dir).ok();
}

/// Port addresses, next hops and routes by address, `reject`, and the
/// router's settings: what they give, and their errors with their places.
#[test]
fn router_settings_and_their_errors() {
    let dir = std::path::Path::new(".");
    let base = r#"route = [{ prefix = "0.0.0.0/0", via = "192.0.2.254" }]
[[port]]
name = "p0"
mac = "02:00:00:00:00:01"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
mtu = 1400
[[next_hop]]
name = "v6gw"
port = "p0"
address = "2001:db8:1::fe"
"#;
    let cfg = config::parse("r.toml", base, dir).unwrap();
    let p = &cfg.ports[0];
    assert_eq!(p.mtu, 1400);
    // The link-local address from the MAC, added.
    assert_eq!(
        p.addresses
            .iter()
            .map(|a| a.ip.to_string())
            .collect::<Vec<_>>(),
        ["192.0.2.1", "2001:db8:1::1", "fe80::ff:fe00:1"]
    );
    assert!(cfg.is_router());
    // The route's gateway became a next hop of its own, after `v6gw`.
    assert_eq!(cfg.next_hops.len(), 2);
    assert_eq!(cfg.next_hops[1].name, "192.0.2.254");
    assert_eq!(cfg.next_hops[1].mac, None);
    assert_eq!(cfg.routes[0].via, config::Via::NextHop(1));
    assert_eq!(cfg.router, config::RouterSettings::default());
    for (text, want) in [
        (
            base.replace("192.0.2.1/24", "192.0.2.1"),
            "r.toml:5:12: `192.0.2.1` is not an address with its prefix length (192.0.2.1/24)",
        ),
        (
            base.replace("192.0.2.1/24", "224.0.0.1/4"),
            "r.toml:5:12: `224.0.0.1` cannot be a port's address",
        ),
        (base.replace("mtu = 1400", "mtu = 20"), "r.toml:6:7: mtu 20 is outside 68-9000"),
        (
            base.replace("via = \"192.0.2.254\"", "via = \"203.0.113.1\""),
            "r.toml:1:40: gateway `203.0.113.1` is on none of the ports' networks (their `address` lists)",
        ),
        (
            base.replace("address = \"2001:db8:1::fe\"", "address = \"2001:db8:9::fe\""),
            "r.toml:10:11: `2001:db8:9::fe` is on none of port `p0`'s networks (its `address` list)",
        ),
        (
            base.replace("address = \"2001:db8:1::fe\"", ""),
            "r.toml:8:8: next hop `v6gw` needs a `mac` or an `address` (resolved on its port)",
        ),
        (
            base.replace("0.0.0.0/0", "192.0.2.0/24"),
            "r.toml:1:21: route `192.0.2.0/24` is port `p0`'s connected network (its address installs it)",
        ),
        (
            format!("{base}[neighbour]\nprobes = 0\n"),
            "r.toml:12:10: probes = 0 is outside 1-100",
        ),
        (
            format!("{base}[icmp]\nratelimit_ms = 99999999\n"),
            "r.toml:12:16: 99999999 ms is outside 0-3600000",
        ),
    ] {
        let e = config::parse("r.toml", &text, dir).unwrap_err().to_string();
        assert_eq!(e, want, "in:\n{text}");
    }
}

/// `examples/router.toml` loads as documented.
#[test]
fn the_router_example_loads() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/router.toml");
    let cfg = config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(cfg.is_router());
    assert_eq!(cfg.sets[0].action, config::Action::Reject);
    assert_eq!(cfg.next_hops.iter().filter(|h| h.mac.is_none()).count(), 2);
}

/// `examples/bird-router.toml` loads as documented.
#[test]
fn the_bird_router_example_loads() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/bird-router.toml");
    let cfg = config::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        cfg.kernel,
        Some(config::KernelRoutes {
            table: 254,
            protocols: vec![12]
        })
    );
    let taps: Vec<_> = cfg.ports.iter().map(|p| p.tap.as_deref()).collect();
    assert_eq!(taps, [Some("tap-lan"), Some("tap-wan")]);
    assert_eq!(cfg.routes.len(), 1);
}

/// `[routes] source = "kernel"`, `punt = "tap"`, `kernel_interface`:
/// what they give, and their errors with their places.
#[test]
fn kernel_routes_and_taps_and_their_errors() {
    let dir = std::path::Path::new(".");
    let base = r#"[routes]
source = "kernel"
protocols = ["bird", "static", "99"]
[[port]]
name = "p0"
address = ["192.0.2.1/24"]
punt = "tap"
kernel_interface = "k0"
[[port]]
name = "p1"
driver = "af_packet"
"#;
    let cfg = config::parse("k.toml", base, dir).unwrap();
    assert_eq!(
        cfg.kernel,
        Some(config::KernelRoutes {
            table: 254,
            protocols: vec![12, 4, 99]
        })
    );
    assert_eq!(cfg.ports[0].tap.as_deref(), Some("tap-p0"));
    assert_eq!(cfg.ports[0].kernel_names(), ["k0", "tap-p0"]);
    assert_eq!(cfg.ports[1].kernel_names(), ["p1"]);
    let no_routes = config::parse("k.toml", "[[port]]\nname = \"p0\"\n", dir).unwrap();
    assert_eq!(no_routes.kernel, None);
    for (text, want) in [
        (
            base.replace("\"kernel\"", "\"bgp\""),
            "k.toml:2:10: unknown route source `bgp` (config, kernel)",
        ),
        (
            base.replace("\"99\"", "\"ospf3\""),
            "k.toml:3:32: unknown route protocol `ospf3` (a number 0-255 or one of redirect, kernel, boot, static, gated, ra, mrt, zebra, bird, dnrouted, xorp, ntk, dhcp, mrouted, keepalived, babel, openr, bgp, isis, ospf, rip, eigrp)",
        ),
        (
            base.replace("source = \"kernel\"", "source = \"kernel\"\ntable = 255"),
            "k.toml:3:9: table 255 is not a routing table of routes to mirror (1-254, 256-...; not 255, local)",
        ),
        (
            base.replace("punt = \"tap\"", "punt = \"kernel\""),
            "k.toml:7:8: unknown punt `kernel` (tap)",
        ),
        (
            base.replace("address = [\"192.0.2.1/24\"]\npunt = \"tap\"", ""),
            "k.toml:2:10: `source = \"kernel\"` needs addresses on the ports: the forwarder resolves the kernel's gateways itself",
        ),
        (
            base.replace("punt = \"tap\"", "punt = \"tap\"\ntap_name = \"p1\""),
            "k.toml:8:12: TAP name `p1` is port `p1`'s interface",
        ),
        (
            base.replace("punt = \"tap\"", "tap_name = \"t0\""),
            "k.toml:7:12: `tap_name` needs `punt = \"tap\"`",
        ),
        (
            base.replace("name = \"p0\"", "name = \"a-very-long-name\""),
            "k.toml:5:8: TAP name `tap-a-very-long-name` is not an interface name (1-15 bytes); give `tap_name`",
        ),
    ] {
        let e = config::parse("k.toml", &text, dir);
        let e = match e {
            Ok(_) => "(no error)".to_string(),
            Err(e) => e.to_string(),
        };
        assert_eq!(e, want, "in:\n{text}");
    }
}

/// The words a source prints as (traces, filters) name it again.
#[test]
fn sources_print_as_they_parse() {
    for w in [
        "ip saddr",
        "ip daddr",
        "ip6 saddr",
        "ip6 daddr",
        "tcp sport",
        "udp dport",
        "sctp sport",
        "th dport",
        "meta l4proto",
        "ether saddr",
        "ether daddr",
        "meta mark",
    ] {
        let s = Source::parse(w).unwrap();
        assert_eq!(s.words(), w);
        assert_eq!(Source::parse(s.words()), Ok(s));
    }
    assert_eq!(
        Source::parse("ip protocol").unwrap().words(),
        "meta l4proto"
    );
}
