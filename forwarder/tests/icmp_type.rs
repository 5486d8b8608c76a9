//! Sets that match `icmp type` and `icmpv6 type`: the ICMP message type
//! decides, within one flow of addresses, in bursts that mix the types
//! and the families, with the flow cache on (its key holds the type) and
//! off; packets of other protocols never match such a set. And the words
//! build a trace's packet.

use forwarder::control::build;
use forwarder::pipeline::Pipeline;
use forwarder::port::Burst;
use forwarder::reason::DropReason;
use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::parse;
use routecache::gen::Rng;
use std::path::Path;

const CONFIG: &str = r#"
route = [
  { prefix = "198.51.100.0/24", via = "h1" },
  { prefix = "2001:db8:2::/48", via = "h1" },
]

[[port]]
name = "p0"
mac = "02:00:00:00:00:01"

[[port]]
name = "p1"
mac = "02:00:00:00:00:02"

[[next_hop]]
name = "h1"
port = "p1"
mac = "02:00:00:00:0a:01"

# No pings in, no time-exceeded out: what a firewall's ICMP policy says.
[[set]]
name = "icmp4"
type = "icmp_type"
match = "icmp type"
action = "drop"
elements = ["echo-request", "time-exceeded", "13-14"]

[[set]]
name = "icmp6"
type = "ipv6_addr . icmpv6_type"
match = "ip6 daddr . icmpv6 type"
action = "drop"
elements = ["2001:db8:2::/48 . echo-request"]

[flow_cache]
entries = ENTRIES
"#;

/// Whether the sets drop a packet of family `v6` with ICMP type `ty`
/// (`None`: UDP) to address suffix `host` (the reference).
fn dropped(v6: bool, ty: Option<u8>, host: u8) -> bool {
    match (v6, ty) {
        (false, Some(t)) => matches!(t, 8 | 11 | 13 | 14),
        (true, Some(t)) => t == 128 && host != 0xff,
        (_, None) => false,
    }
}

fn frame(v6: bool, ty: Option<u8>, host: u8) -> Vec<u8> {
    let l4 = match ty {
        Some(t) => L4::Icmp(t, 0),
        None => L4::Udp(8, 8),
    };
    if v6 {
        // `host` 0xff: outside 2001:db8:2::/48 (routed the same way).
        let dst = if host == 0xff {
            0x2001_0db8_0003u128 << 80 | 1
        } else {
            0x2001_0db8_0002u128 << 80 | host as u128
        };
        ipv6(0x2001_0db8_0001u128 << 80 | 1, dst, 64, l4, 10)
    } else {
        ipv4(0xc000_0202, 0xc633_6400 | host as u32, 64, l4, 10)
    }
}

#[test]
fn the_icmp_type_decides() {
    for entries in [0, 4096] {
        let text = CONFIG
            .replace("ENTRIES", &entries.to_string())
            .replace("\"2001:db8:2::/48\", via", "\"2001:db8::/32\", via");
        let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
        let t = build::snapshot(&cfg, 1).unwrap();
        let mut p = Pipeline::new(&t, 2);
        let mut rng = Rng(47);
        let types = [0u8, 3, 8, 11, 12, 13, 14, 128, 129, 133, 135];
        let mut drops = 0;
        for _ in 0..300 {
            let mut b = Burst::new();
            let mut want = Vec::new();
            for _ in 0..1 + rng.below(32) {
                let v6 = rng.below(2) == 0;
                let ty = (rng.below(5) != 0).then(|| types[rng.below(types.len() as u64) as usize]);
                // Few hosts: the same flows come back, with other types.
                let host = [1u8, 2, 0xff][rng.below(3) as usize];
                b.push(&frame(v6, ty, host));
                want.push(dropped(v6, ty, host));
            }
            p.rx_port = 0;
            p.process(&t, &mut b);
            for (i, d) in want.iter().enumerate() {
                let sent = p.out[1].contains(&(i as u8));
                assert_eq!(
                    !sent,
                    *d,
                    "frame {i}: {:?} (cache {entries})",
                    parse(b.frame(i))
                );
                drops += *d as u64;
            }
        }
        assert_eq!(p.counters.drops[DropReason::Rule.index()], drops);
        assert!(drops > 100);
    }
}

/// The words build the packet a trace runs: `icmp type` names IPv4 and
/// ICMP, `icmpv6 type` IPv6 and ICMPv6; a type with ports is refused.
#[test]
fn the_words_build_packets() {
    let cfg = config::parse("t.toml", &CONFIG.replace("ENTRIES", "0"), Path::new(".")).unwrap();
    let build = |w: &str| forwarder::filter::packet::build(w, &cfg.ports);
    let p = parse(&build("icmp type time-exceeded").unwrap().frame).unwrap();
    assert_eq!(
        (p.l3, p.proto, p.sport >> 8),
        (forwarder::wire::L3::V4, 1, 11)
    );
    let p = parse(
        &build("icmpv6 type echo-reply ip6 daddr 2001:db8:2::9")
            .unwrap()
            .frame,
    )
    .unwrap();
    assert_eq!(
        (p.l3, p.proto, p.sport >> 8),
        (forwarder::wire::L3::V6, 58, 129)
    );
    assert!(build("icmp type echo-request tcp dport 22").is_err());
    assert!(build("icmp type echo-request ip6 daddr 2001:db8::1").is_err());
    assert!(build("icmp type no-such-type").is_err());
}
