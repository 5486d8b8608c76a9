use super::packet::{build, from_hex};
use super::*;
use crate::wire::build::{ipv4, ipv6, L4};
use routecache::gen::Rng;

fn ports() -> Vec<String> {
    vec!["wan".into(), "lan".into()]
}

fn cfg_ports() -> Vec<config::PortConfig> {
    let text = r#"
        [forwarder]
        cores = [0]
        [[port]]
        name = "wan"
        driver = "synthetic"
        mac = "02:00:00:00:01:fe"
        [[port]]
        name = "lan"
        driver = "synthetic"
        mac = "02:00:00:00:02:fe"
        [[next_hop]]
        name = "x"
        port = "lan"
        mac = "02:00:00:00:02:02"
        [[route]]
        prefix = "0.0.0.0/0"
        via = "x"
    "#;
    config::parse("t.toml", text, std::path::Path::new("."))
        .unwrap()
        .ports
}

fn holds(filter: &str, frame: &[u8], port: u16) -> bool {
    Filter::parse(filter, &ports())
        .unwrap_or_else(|e| panic!("{filter}: {e}"))
        .matches(frame, port)
}

#[test]
fn terms_hold_as_nft_reads_them() {
    let tcp = ipv4(0xc000_0207, 0xc633_6409, 64, L4::Tcp(40000, 443), 0);
    let udp = ipv4(0xc000_0207, 0xc633_6409, 9, L4::Udp(5353, 53), 0);
    let v6 = ipv6(
        0x2001_0db8 << 96 | 7,
        0x2001_0db8 << 96 | 9,
        64,
        L4::Tcp(1, 22),
        0,
    );
    let cases: &[(&str, &[u8], u16, bool)] = &[
        ("", &tcp, 0, true),
        ("ip saddr 192.0.2.7", &tcp, 0, true),
        (
            "ip saddr 192.0.2.0/24 and ip daddr 198.51.100.9",
            &tcp,
            0,
            true,
        ),
        ("ip saddr 192.0.2.8-192.0.2.9", &tcp, 0, false),
        ("ip saddr != 192.0.2.8-192.0.2.9", &tcp, 0, true),
        ("tcp dport 443", &tcp, 0, true),
        ("tcp dport https", &tcp, 0, true),
        ("tcp dport { 22, 80, 1000-2000 }", &tcp, 0, false),
        ("tcp dport {22,443}", &tcp, 0, true),
        // A field implies its protocol, `!=` too.
        ("tcp dport != 22", &udp, 0, false),
        ("udp dport != 22", &udp, 0, true),
        ("th dport 53", &udp, 0, true),
        ("th dport 53", &tcp, 0, false),
        ("meta l4proto udp", &udp, 0, true),
        ("ip protocol tcp", &udp, 0, false),
        ("tcp", &tcp, 0, true),
        ("udp", &tcp, 0, false),
        ("ip", &tcp, 0, true),
        ("ip6", &tcp, 0, false),
        ("ip6", &v6, 0, true),
        ("ip6 saddr 2001:db8::/64 tcp dport 22", &v6, 0, true),
        ("ip saddr 0.0.0.0/0", &v6, 0, false),
        ("ip ttl 1-9", &udp, 0, true),
        ("ip ttl 10-255", &udp, 0, false),
        ("ip6 hoplimit 64", &v6, 0, true),
        ("iif wan", &tcp, 0, true),
        ("iif wan", &tcp, 1, false),
        ("meta iifname != wan", &tcp, 1, true),
        ("ether daddr 02:00:00:00:00:01", &tcp, 0, true),
        ("ether saddr 02:00:00:00:00:01", &tcp, 0, false),
        ("meta length 54", &tcp, 0, true),
        ("meta length 0-53", &tcp, 0, false),
        ("meta mark 0", &tcp, 0, true),
        ("arp", &tcp, 0, false),
    ];
    for (f, frame, port, want) in cases {
        assert_eq!(holds(f, frame, *port), *want, "{f}");
    }
    // A malformed frame has no IP fields, but its port and MACs.
    let bad = &tcp[..20];
    assert!(!holds("ip saddr 0.0.0.0/0", bad, 0));
    assert!(holds("iif wan ether daddr 02:00:00:00:00:01", bad, 0));
    assert!(holds("ip", bad, 0));
}

#[test]
fn bad_filters_say_which_word() {
    for (f, says) in [
        ("ip frob 1", "`frob`"),
        ("ip6 frob", "`frob`"),
        ("frob", "`frob`"),
        ("ip saddr", "needs a value"),
        ("ip saddr 192.0.2.300", "ip saddr"),
        ("tcp dport { 22, 443", "without its"),
        ("tcp dport { }", "empty"),
        ("iif dmz", "no such port"),
        ("ip ttl 256", "0 to 255"),
        ("meta length 9-8", "empty"),
    ] {
        let e = Filter::parse(f, &ports()).unwrap_err();
        assert!(e.contains(says), "{f}: {e}");
    }
}

#[test]
fn no_panic_on_any_words() {
    let words = [
        "ip",
        "ip6",
        "saddr",
        "daddr",
        "tcp",
        "udp",
        "th",
        "dport",
        "sport",
        "{",
        "}",
        ",",
        "!=",
        "==",
        "iif",
        "wan",
        "meta",
        "length",
        "mark",
        "l4proto",
        "192.0.2.1",
        "::1",
        "1-2",
        "-",
        "/",
        "ether",
        "02:00:00:00:00:01",
        "ttl",
        "hoplimit",
        "and",
        "arp",
        "icmp",
        "65536",
    ];
    let mut rng = Rng(7);
    let frame = ipv4(1, 2, 3, L4::Udp(4, 5), 6);
    let ps = cfg_ports();
    for _ in 0..20_000 {
        let n = rng.below(8) as usize;
        let text: Vec<&str> = (0..n).map(|_| *rng.pick(&words)).collect();
        let text = text.join(" ");
        if let Ok(f) = Filter::parse(&text, &ports()) {
            f.matches(&frame, 0);
        }
        let _ = build(&text, &ps);
    }
}

/// A packet built from words passes the same words as a filter, and its
/// parse has the values given.
#[test]
fn built_packets_match_their_words() {
    let ps = cfg_ports();
    let mut rng = Rng(11);
    for _ in 0..3000 {
        let v6 = rng.chance(50);
        let mut words = Vec::new();
        if rng.chance(50) {
            words.push(format!("iif {}", *rng.pick(&["wan", "lan"])));
        }
        let (s, d) = if v6 {
            (
                format!("ip6 saddr 2001:db8::{:x}", rng.below(65536)),
                format!("ip6 daddr 2001:db8:1::{:x}", rng.below(65536)),
            )
        } else {
            (
                format!("ip saddr 192.0.2.{}", rng.below(256)),
                format!("ip daddr 198.51.100.{}", rng.below(256)),
            )
        };
        if rng.chance(67) {
            words.push(s);
        }
        if rng.chance(67) || words.is_empty() && v6 {
            words.push(d);
        }
        let l4 = *rng.pick(&["tcp", "udp", "sctp", "th", "icmp", "none"]);
        match l4 {
            "icmp" => words.push(if v6 { "icmpv6" } else { "icmp" }.into()),
            "none" => {}
            p => {
                if rng.chance(50) {
                    words.push(format!("{p} sport {}", rng.below(65536)));
                }
                words.push(format!("{p} dport {}", rng.below(65536)));
            }
        }
        if rng.chance(33) {
            words.push(format!(
                "{} {}",
                if v6 { "ip6 hoplimit" } else { "ip ttl" },
                rng.below(256)
            ));
        }
        if rng.chance(25) {
            words.push(format!("meta length {}", 100 + rng.below(1000)));
        }
        if v6 && !words.iter().any(|w| w.starts_with("ip6")) {
            words.push("ip6".into());
        }
        let text = words.join(" ");
        let p = build(&text, &ps).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(p.frame.len() >= 60, "{text}");
        let names: Vec<String> = ps.iter().map(|p| p.name.clone()).collect();
        let f = Filter::parse(&text, &names).unwrap();
        assert!(f.matches(&p.frame, p.port), "{text}: {:02x?}", p.frame);
        let parsed = crate::wire::parse(&p.frame).unwrap();
        assert_eq!(parsed.l3 == L3::V6, v6, "{text}");
        assert!(
            crate::wire::l4_checksum_ok(&p.frame) != Some(false),
            "{text}"
        );
    }
}

#[test]
fn packets_refuse_what_is_not_one_packet() {
    let ps = cfg_ports();
    for (t, says) in [
        ("ip saddr 192.0.2.0/24", "one value"),
        ("tcp dport { 1, 2 }", "one value"),
        ("tcp dport != 2", "`!=`"),
        ("ip saddr 192.0.2.1 ip6 daddr ::1", "one of them"),
        ("tcp dport 1 udp sport 2", "two protocols"),
        ("icmp tcp dport 1", "by a port field"),
        ("udp icmp type echo-request", "by an ICMP type field"),
        ("icmpv6 type echo-request tcp dport 1", "ICMP type"),
        ("icmp udp", "given twice"),
        ("ct state new", "not in the packet"),
        ("meta length 20", "headers take"),
        ("meta mark 7", "no mark"),
        ("arp tcp dport 1", "ARP"),
        ("ip6 icmp", "ICMP"),
    ] {
        let e = build(t, &ps).unwrap_err();
        assert!(e.contains(says), "{t}: {e}");
    }
}

#[test]
fn defaults_are_stated_and_used() {
    let ps = cfg_ports();
    let p = build("", &ps).unwrap();
    let parsed = crate::wire::parse(&p.frame).unwrap();
    assert_eq!(
        (
            parsed.src,
            parsed.dst,
            parsed.proto,
            parsed.sport,
            parsed.dport,
            parsed.ttl
        ),
        (0xc000_0201, 0xc633_6401, 6, 32768, 80, 64)
    );
    assert_eq!(p.port, 0);
    assert_eq!(p.frame[..6], ps[0].mac);
    assert_eq!(p.frame.len(), 60);
    for d in [
        "iif", "ip saddr", "ip daddr", "protocol", "sport", "dport", "ttl",
    ] {
        assert!(p.defaulted.contains(&d), "{d}: {:?}", p.defaulted);
    }
    let a = build("arp ip daddr 192.0.2.1 iif lan", &ps).unwrap();
    assert_eq!(a.port, 1);
    let arp = crate::wire::arp::Arp::parse(&a.frame).unwrap();
    assert_eq!((arp.op, arp.tpa), (1, 0xc000_0201));
}

#[test]
fn hex_frames() {
    assert_eq!(
        from_hex("0x0a0b 0c:0d\n0e").unwrap(),
        vec![10, 11, 12, 13, 14]
    );
    assert!(from_hex("abc").unwrap_err().contains("whole bytes"));
    assert!(from_hex("zz").unwrap_err().contains("`zz`"));
}
