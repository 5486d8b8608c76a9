use super::build::*;
use super::checksum::{fold, l4_span};
use super::parse::{parse_plain, ports};
use super::*;
use crate::reason::DropReason;

#[test]
fn ipv4_tcp() {
    let f = ipv4(0xc000_0201, 0xc633_6402, 64, L4::Tcp(1234, 80), 10);
    let p = parse(&f).unwrap();
    assert_eq!(
        (p.l3, p.src, p.dst, p.ttl),
        (L3::V4, 0xc000_0201, 0xc633_6402, 64)
    );
    assert_eq!((p.proto, p.sport, p.dport, p.l4_ok), (6, 1234, 80, true));
    assert_eq!(checksum(&f[14..34]), 0, "valid header checksum");
}

#[test]
fn ports_are_read_for_exactly_the_protocols_that_have_them() {
    for p in 0..=255u8 {
        let want = match p {
            proto::TCP | proto::UDP | proto::SCTP => (0x1234, 0x5678, true),
            proto::ICMP | proto::ICMPV6 => (0x1234, 0, true),
            _ => (0, 0, false),
        };
        assert_eq!(ports(p, [0x12, 0x34, 0x56, 0x78]), want, "protocol {p}");
        // And through whole parses, the fast one and the general one.
        let mut f = ipv4(1, 2, 64, L4::Udp(0x1234, 0x5678), 0);
        f[23] = p;
        for q in [parse(&f), parse_reference(&f)] {
            let q = q.unwrap();
            assert_eq!((q.sport, q.dport, q.l4_ok), want, "protocol {p}");
        }
    }
}

#[test]
fn plain_frames_take_the_fast_path() {
    let mut p = Parsed::default();
    for l4 in [L4::Tcp(1, 2), L4::Udp(3, 4), L4::Icmp(8, 0)] {
        for (f, l3) in [
            (ipv4(1, 2, 64, l4, 0), L3::V4),
            (ipv6(1, 2, 64, l4, 0), L3::V6),
        ] {
            assert!(parse_plain(&f, &mut p), "{l4:?} {l3:?}");
            assert_eq!(Ok(p), parse_reference(&f));
            assert_eq!(p.l3, l3);
        }
    }
    // Tagged, with IPv4 options, a later fragment, an extension
    // header, a short packet: the general parse.
    let f = ipv4(1, 2, 64, L4::Udp(3, 4), 0);
    for (at, b) in [(12, 0x81), (14, 0x46), (21, 1), (17, 20)] {
        let mut g = f.clone();
        g[at] = b;
        assert!(!parse_plain(&g, &mut p), "byte {at} = {b:#x}");
    }
    let mut g = ipv6(1, 2, 64, L4::Udp(3, 4), 0);
    g[20] = proto::HOPOPT;
    assert!(!parse_plain(&g, &mut p));
}

proptest::proptest! {
    /// The express way's reading of a frame takes exactly the frames
    /// the plain parse takes, with the same family and destination:
    /// plain frames of both families with a byte of the headers set to
    /// a value that matters (or any), cut short or not.
    #[test]
    fn the_express_reading_takes_the_frames_the_plain_parse_takes(
        v6 in proptest::bool::ANY,
        dst in proptest::num::u128::ANY,
        proto in proptest::sample::select(vec![6u8, 17, 1]),
        at in 0usize..64,
        byte in proptest::sample::select(vec![
            0u8, 1, 20, 24, 43, 44, 51, 60, 0x08, 0x45, 0x46, 0x60, 0x81, 0x86, 0xdd, 0xff,
        ]),
        cut in 0usize..100,
    ) {
        let l4 = match proto {
            6 => L4::Tcp(1, 2),
            1 => L4::Icmp(8, 0),
            _ => L4::Udp(3, 4),
        };
        let mut f = if v6 {
            ipv6(1, dst, 64, l4, cut % 7)
        } else {
            ipv4(1, dst as u32, 64, l4, cut % 7)
        };
        if let Some(b) = f.get_mut(at) {
            *b = byte;
        }
        if cut < 40 {
            f.truncate(cut + 20);
        }
        let mut p = Parsed::default();
        let want = parse_plain(&f, &mut p).then_some(match p.l3 {
            L3::V4 => PlainDst::V4(p.dst as u32),
            L3::V6 => PlainDst::V6(p.dst),
        });
        proptest::prop_assert_eq!(plain_dst(&f), want);
        if let Some(d) = want {
            let flow = (p.src, p.dst, p.sport, p.dport, p.proto);
            let v6 = matches!(d, PlainDst::V6(_));
            proptest::prop_assert_eq!(plain_flow(&f, v6), Some(flow));
        }
    }
}

#[test]
fn vlan_tags_are_skipped() {
    let f = ipv4(1, 2, 9, L4::Udp(5, 6), 0);
    let mut t = f[..12].to_vec();
    t.extend_from_slice(&[0x88, 0xa8, 0, 10, 0x81, 0x00, 0, 20]);
    t.extend_from_slice(&f[12..]);
    let p = parse(&t).unwrap();
    assert_eq!((p.l3_off, p.sport, p.dport), (22, 5, 6));
}

#[test]
fn ipv6_extension_headers_are_skipped() {
    let f = ipv6(1, 2, 64, L4::Udp(53, 5353), 0);
    // Insert a hop-by-hop header (8 bytes) before UDP.
    let mut t = f[..54].to_vec();
    t[20] = proto::HOPOPT; // next header in the IPv6 header
    let plen = u16::from_be_bytes([t[18], t[19]]) + 8;
    t[18..20].copy_from_slice(&plen.to_be_bytes());
    t.extend_from_slice(&[proto::UDP, 0, 1, 4, 0, 0, 0, 0]);
    t.extend_from_slice(&f[54..]);
    let p = parse(&t).unwrap();
    assert_eq!((p.proto, p.sport, p.dport, p.l4_off), (17, 53, 5353, 62));
}

#[test]
fn bad_frames_have_reasons() {
    assert_eq!(parse(&[0u8; 10]), Err(DropReason::Truncated));
    let mut f = ipv4(1, 2, 9, L4::Udp(5, 6), 0);
    assert_eq!(parse(&f[..30]), Err(DropReason::Truncated));
    f[14] = 0x44; // IHL 4
    assert_eq!(parse(&f), Err(DropReason::Malformed));
    f[12..14].copy_from_slice(&ethertype::ARP.to_be_bytes());
    assert_eq!(parse(&f), Err(DropReason::Arp));
    f[12..14].copy_from_slice(&0x1234u16.to_be_bytes());
    assert_eq!(parse(&f), Err(DropReason::UnknownEthertype));
}

#[test]
fn rewrite_keeps_the_checksum_valid() {
    for ttl in [2u8, 64, 255] {
        let mut f = ipv4(0x0a00_0001, 0xc000_0299, ttl, L4::Icmp(8, 0), 20);
        let p = parse(&f).unwrap();
        rewrite(&mut f, &p, [1; 6], [3; 6]).unwrap();
        assert_eq!(&f[0..12], &[1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3]);
        assert_eq!(f[22], ttl - 1);
        assert_eq!(checksum(&f[14..34]), 0, "ttl {ttl}");
    }
    let mut f = ipv4(1, 2, 1, L4::Udp(1, 2), 0);
    let p = parse(&f).unwrap();
    assert_eq!(
        rewrite(&mut f, &p, [0; 6], [0; 6]),
        Err(DropReason::TtlExpired)
    );
    let mut f = ipv6(1, 2, 7, L4::Udp(1, 2), 0);
    let p = parse(&f).unwrap();
    rewrite(&mut f, &p, [0; 6], [0; 6]).unwrap();
    assert_eq!(f[21], 6);
}

#[test]
fn incremental_checksum_matches_a_full_one() {
    let mut rng = routecache::gen::Rng(0x1234_5678);
    for _ in 0..10_000 {
        let x = rng.next_u64() as u32;
        let mut h = [0u8; 20];
        for (i, b) in h.iter_mut().enumerate() {
            *b = (x >> (i % 4 * 8)) as u8 ^ i as u8;
        }
        h[10] = 0;
        h[11] = 0;
        let c = checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        let old = u16::from_be_bytes([h[8], h[9]]);
        h[8] = h[8].wrapping_sub(1);
        let new = u16::from_be_bytes([h[8], h[9]]);
        let inc = checksum_update(c, old, new);
        h[10..12].copy_from_slice(&inc.to_be_bytes());
        assert_eq!(checksum(&h), 0);
    }
}

#[test]
fn ttl_decrement_checksum_is_the_general_update() {
    // Every checksum, against every word a TTL of 2 or more makes
    // (sampled across the protocol byte: all 256 for a few TTLs).
    for hc in 0..=u16::MAX {
        for m in (0x200..=u16::MAX).step_by(0x1ff) {
            assert_eq!(
                checksum_ttl_decrement(hc),
                checksum_update(hc, m, m - 0x100),
                "hc {hc:#06x} m {m:#06x}"
            );
        }
    }
    for m in (0x200..0x500).chain(0xfe00..=0xffff) {
        for hc in [0, 1, 0x00ff, 0x0100, 0x7fff, 0xfeff, 0xff00, 0xfffe, 0xffff] {
            assert_eq!(
                checksum_ttl_decrement(hc),
                checksum_update(hc, m, m - 0x100)
            );
        }
    }
}

#[test]
fn ttl_decrement_checksum_in_machine_order_is_the_network_order_one() {
    for hc in 0..=u16::MAX {
        let bytes = hc.to_be_bytes();
        assert_eq!(
            checksum_ttl_decrement_ne(u16::from_ne_bytes(bytes)).to_ne_bytes(),
            checksum_ttl_decrement(hc).to_be_bytes(),
            "checksum {hc:#06x}"
        );
    }
}

/// The transport checksum as RFC 768/793 define it, built the long
/// way: pseudo-header and segment in one buffer, summed by
/// [`checksum`].
fn reference_l4(frame: &[u8]) -> u16 {
    let p = parse(frame).unwrap();
    let l3 = p.l3_off as usize;
    let (seg, mut buf) = match p.l3 {
        L3::V4 => {
            let end = l3 + u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]) as usize;
            let seg = frame[p.l4_off as usize..end].to_vec();
            let mut b = frame[l3 + 12..l3 + 20].to_vec();
            b.extend([0, p.proto]);
            b.extend((seg.len() as u16).to_be_bytes());
            (seg, b)
        }
        L3::V6 => {
            let end = l3 + 40 + u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]) as usize;
            let seg = frame[p.l4_off as usize..end].to_vec();
            let mut b = frame[l3 + 8..l3 + 40].to_vec();
            b.extend((seg.len() as u32).to_be_bytes());
            b.extend([0, 0, 0, p.proto]);
            (seg, b)
        }
    };
    let field = if p.proto == proto::TCP { 16 } else { 6 };
    let mut seg = seg;
    seg[field..field + 2].fill(0);
    buf.extend(seg);
    checksum(&buf)
}

#[test]
fn built_frames_carry_valid_transport_checksums() {
    for payload in [0, 1, 7, 100] {
        for l4 in [L4::Tcp(1234, 80), L4::Udp(53, 5353)] {
            let f4 = ipv4(0xc000_0201, 0xc633_6402, 64, l4, payload);
            let f6 = ipv6(
                0x2001_0db8 << 96 | 1,
                0x2001_0db8 << 96 | 2,
                64,
                l4,
                payload,
            );
            for f in [f4, f6] {
                assert_eq!(l4_checksum_ok(&f), Some(true));
                let p = parse(&f).unwrap();
                let field = p.l4_off as usize + if p.proto == proto::TCP { 16 } else { 6 };
                let got = u16::from_be_bytes([f[field], f[field + 1]]);
                assert_eq!(got, reference_l4(&f), "{payload} {l4:?}");
                let mut bad = f.clone();
                let last = bad.len() - 1;
                bad[last] ^= 0x40;
                if payload > 0 {
                    assert_eq!(l4_checksum_ok(&bad), Some(false));
                }
            }
        }
        let icmp = ipv6(1, 2, 64, L4::Icmp(128, 0), payload);
        assert_eq!(l4_checksum_ok(&icmp), Some(true));
    }
}

#[test]
fn a_partial_checksum_is_finished_like_a_nic_would() {
    for l4 in [L4::Tcp(40000, 443), L4::Udp(40000, 53)] {
        for full in [
            ipv4(0xc000_0201, 0xc633_6402, 64, l4, 33),
            ipv6(7, 9, 64, l4, 33),
        ] {
            // What the sending host hands its NIC: the pseudo-header's
            // folded sum, not complemented, in the field.
            let p = parse(&full).unwrap();
            let (_, _, field, pseudo) = l4_span(&full, &p).unwrap();
            let mut partial = full.clone();
            partial[field..field + 2].copy_from_slice(&fold(pseudo).to_be_bytes());
            // Ethernet padding after the IP packet is not summed.
            partial.extend([0xee; 6]);
            assert_eq!(l4_checksum_ok(&partial), Some(false));
            assert!(finish_partial_checksum(&mut partial));
            assert_eq!(&partial[..full.len()], &full[..]);
        }
    }
    // Nothing to finish: ICMP, ARP, garbage.
    assert!(!finish_partial_checksum(&mut ipv4(
        1,
        2,
        64,
        L4::Icmp(8, 0),
        4
    )));
    assert!(!finish_partial_checksum(&mut [0u8; 10]));
}

/// The router's own packets: ARP, neighbour discovery, ICMP, resets.
mod packets {
    use crate::wire::arp::*;
    use crate::wire::build::{ipv4 as frame4, ipv6 as frame6, L4};
    use crate::wire::icmp::*;
    use crate::wire::ip::*;
    use crate::wire::nd::*;
    use crate::wire::tcp::*;
    use crate::wire::{ethertype, icmp, l4_checksum_ok, parse};

    /// RFC 1071's sum, written out independently of the builders': the
    /// 16-bit words added in a u64, folded at the end.
    fn ones(data: &[u8]) -> u16 {
        let mut s: u64 = 0;
        for (i, b) in data.iter().enumerate() {
            s += if i % 2 == 0 {
                (*b as u64) << 8
            } else {
                *b as u64
            };
        }
        while s > 0xffff {
            s = (s >> 16) + (s & 0xffff);
        }
        s as u16
    }

    fn eth(ip: &[u8], v6: bool) -> Vec<u8> {
        ether(
            [1; 6],
            [2; 6],
            if v6 { ethertype::IPV6 } else { ethertype::IPV4 },
            ip,
        )
    }

    #[test]
    fn arp_round_trips_and_matches_a_hand_checked_request() {
        let a = Arp {
            op: Arp::REQUEST,
            sha: [2, 0, 0, 0, 0, 1],
            spa: 0xc000_0201,
            tha: [0; 6],
            tpa: 0xc000_02fe,
        };
        let f = a.frame(BROADCAST);
        // Who has 192.0.2.254? Tell 192.0.2.1, as tcpdump -xx shows it.
        let want: [u8; 42] = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0,
            1, 2, 0, 0, 0, 0, 1, 192, 0, 2, 1, 0, 0, 0, 0, 0, 0, 192, 0, 2, 254,
        ];
        assert_eq!(&f[..42], &want);
        assert_eq!(f.len(), 60);
        assert_eq!(Arp::parse(&f), Some(a));
        for cut in 0..42 {
            assert_eq!(Arp::parse(&f[..cut]), None);
        }
        let mut bad = f.clone();
        bad[21] = 3; // op 3
        assert_eq!(Arp::parse(&bad), None);
        let mut group = f.clone();
        group[22] = 1; // a group's MAC as the sender
        assert_eq!(Arp::parse(&group), None);
    }

    #[test]
    fn neighbour_discovery_messages_check_and_parse() {
        let mac = [2, 0, 0, 0, 0, 9];
        let me = 0x2001_0db8_0001_0000_0000_0000_0000_0001u128;
        let target = 0x2001_0db8_0001_0000_0000_0000_0000_00feu128;
        let f = ns(
            me,
            solicited_node(target),
            target,
            mac,
            multicast_mac(solicited_node(target)),
        );
        assert_eq!(&f[..6], &[0x33, 0x33, 0xff, 0, 0, 0xfe]);
        // ff02::1:ff00:fe
        assert_eq!(
            solicited_node(target),
            0xff02_0000_0000_0000_0000_0001_ff00_00fe
        );
        let (s, d, next, hops, m) = ipv6_parts(&f).unwrap();
        assert_eq!((next, hops, m.len()), (58, 255, 32));
        // The checksum over the pseudo-header, summed independently.
        let mut ph = s.to_be_bytes().to_vec();
        ph.extend(d.to_be_bytes());
        ph.extend((m.len() as u32).to_be_bytes());
        ph.extend([0, 0, 0, 58]);
        ph.extend(m);
        assert_eq!(ones(&ph), 0xffff);
        assert_eq!(l4_checksum_ok(&f), Some(true));
        let nd = Nd::parse(&f).unwrap();
        assert_eq!(
            (nd.ty, nd.target, nd.lladdr),
            (icmp::v6::NS, target, Some(mac))
        );
        let a = na(
            target,
            me,
            target,
            [2, 0, 0, 0, 0, 7],
            [2, 0, 0, 0, 0, 9],
            true,
        );
        let nd = Nd::parse(&a).unwrap();
        assert_eq!(
            (nd.ty, nd.solicited, nd.override_, nd.lladdr),
            (icmp::v6::NA, true, true, Some([2, 0, 0, 0, 0, 7]))
        );
        // A hop limit under 255 (it crossed a router), a bad checksum, a
        // zero-length option: refused.
        let mut low = f.clone();
        low[21] = 64;
        assert_eq!(Nd::parse(&low), None);
        let mut sum = f.clone();
        sum[60] ^= 1;
        assert_eq!(Nd::parse(&sum), None);
        let mut opt = f.clone();
        opt[79] = 0;
        assert_eq!(Nd::parse(&opt), None);
    }

    #[test]
    fn echo_replies_swap_addresses_and_keep_identifier_and_data() {
        let req = frame4(0xc000_0202, 0xc000_0201, 64, L4::Icmp(8, 0), 20);
        let r = echo_reply(&req).unwrap();
        let f = eth(&r, false);
        let p = parse(&f).unwrap();
        assert_eq!((p.src, p.dst, p.sport), (0xc000_0201, 0xc000_0202, 0));
        assert_eq!(ones(&r[..20]), 0xffff, "IP header checksum");
        assert_eq!(ones(&r[20..]), 0xffff, "ICMP checksum");
        assert_eq!(&r[24..], &req[38..], "identifier, sequence and data");
        let req6 = frame6(7, 9, 64, L4::Icmp(128, 0), 16);
        let r6 = echo_reply(&req6).unwrap();
        let f6 = eth(&r6, true);
        assert_eq!(l4_checksum_ok(&f6), Some(true));
        assert_eq!(r6[40], icmp::v6::ECHO_REPLY);
        // Not a request, or a bad checksum: no reply.
        let mut bad = req.clone();
        bad[40] ^= 0xff;
        assert_eq!(echo_reply(&bad), None);
        assert_eq!(echo_reply(&frame4(1, 2, 64, L4::Icmp(0, 0), 8)), None);
    }

    #[test]
    fn errors_quote_the_packet_and_are_not_sent_about_errors() {
        let f = frame4(0xc000_0202, 0xcb00_7107, 1, L4::Udp(40000, 33434), 30);
        assert!(v4_errors_allowed(&f));
        let e = icmp4_error(&f, 0xc000_0201, icmp::v4::TIME_EXCEEDED, 0, [0; 4]).unwrap();
        assert_eq!(ones(&e[..20]), 0xffff);
        assert_eq!(ones(&e[20..]), 0xffff);
        assert_eq!((e[20], e[21]), (11, 0));
        assert_eq!(&e[28..], &f[14..], "the whole short packet quoted");
        // About an ICMP error: nothing; about an echo request: allowed.
        let ef = eth(&e, false);
        assert!(!v4_errors_allowed(&ef));
        assert!(v4_errors_allowed(&frame4(
            1 << 24 | 1,
            2 << 24 | 1,
            1,
            L4::Icmp(8, 0),
            0
        )));
        // To a group MAC, a later fragment, from 0.0.0.0: nothing.
        let mut g = f.clone();
        g[0] = 0xff;
        assert!(!v4_errors_allowed(&g));
        let mut frag = f.clone();
        frag[21] = 8;
        assert!(!v4_errors_allowed(&frag));
        assert!(!v4_errors_allowed(&frame4(0, 2, 1, L4::Udp(1, 2), 0)));
        // A long packet: the error stays within 576 bytes.
        let long = frame4(0xc000_0202, 0xcb00_7107, 1, L4::Udp(1, 2), 1400);
        let e = icmp4_error(&long, 0xc000_0201, icmp::v4::UNREACH, 0, [0; 4]).unwrap();
        assert_eq!(e.len(), 576);
        let f6 = frame6(
            0x2001_0db8 << 96 | 2,
            0x2001_0db8 << 96 | 0x99,
            1,
            L4::Udp(1, 2),
            2000,
        );
        assert!(v6_errors_allowed(&f6, false));
        let e6 = icmp6_error(
            &f6,
            0x2001_0db8 << 96 | 1,
            icmp::v6::TOO_BIG,
            0,
            1500u32.to_be_bytes(),
        )
        .unwrap();
        assert_eq!(e6.len(), 1280);
        assert_eq!(l4_checksum_ok(&eth(&e6, true)), Some(true));
        assert!(!v6_errors_allowed(&eth(&e6, true), false));
    }

    #[test]
    fn resets_answer_what_the_segment_occupied() {
        // A SYN without ACK: RST+ACK acknowledging the SYN.
        let mut syn = frame4(0xc000_0202, 0xcb00_7107, 64, L4::Tcp(40000, 80), 0);
        syn[47] = 0x02;
        syn[38..42].copy_from_slice(&1000u32.to_be_bytes());
        let r = tcp_reset(&syn).unwrap();
        let f = eth(&r, false);
        assert_eq!(l4_checksum_ok(&f), Some(true));
        let t = &r[20..];
        assert_eq!(u16::from_be_bytes([t[0], t[1]]), 80);
        assert_eq!(u16::from_be_bytes([t[2], t[3]]), 40000);
        assert_eq!(u32::from_be_bytes(t[8..12].try_into().unwrap()), 1001);
        assert_eq!(t[13], 0x14);
        // With ACK: RST with the acknowledged number as its sequence.
        let mut ack = syn.clone();
        ack[47] = 0x10;
        ack[42..46].copy_from_slice(&5555u32.to_be_bytes());
        let r = tcp_reset(&ack).unwrap();
        assert_eq!(u32::from_be_bytes(r[24..28].try_into().unwrap()), 5555);
        assert_eq!(r[33], 0x04);
        // No reset for a reset.
        let mut rst = syn.clone();
        rst[47] = 0x04;
        assert_eq!(tcp_reset(&rst), None);
        let f6 = frame6(5, 6, 64, L4::Tcp(1, 2), 3);
        assert_eq!(
            l4_checksum_ok(&eth(&tcp_reset(&f6).unwrap(), true)),
            Some(true)
        );
    }
}
