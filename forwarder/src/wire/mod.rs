//! Wire formats: zero-copy views over frame bytes, the parse of one frame
//! into the few values the pipeline needs, and the rewrite of a forwarded
//! frame.
//!
//! The parser reads fixed offsets straight out of the buffer (no general
//! packet library on the fast path: those cost several times more per
//! packet) and never panics: a frame that is too short or malformed comes
//! back as a [`Drop`] reason, counted by the caller.
//!
//! Recognised: Ethernet II, up to two 802.1Q / 802.1ad VLAN tags, ARP
//! (recognised, not forwarded), IPv4 with options, IPv6 with the common
//! extension headers skipped (hop-by-hop, routing, fragment, destination
//! options, authentication), and TCP, UDP, SCTP, ICMP and ICMPv6.

/// Ethertypes.
mod checksum;
mod rewrite;

pub mod build;
pub use checksum::*;
pub use rewrite::*;

pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// 802.1Q VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad (QinQ) service tag.
    pub const QINQ: u16 = 0x88a8;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
}

/// IP protocol numbers.
pub mod proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 routing header.
    pub const IPV6_ROUTE: u8 = 43;
    /// IPv6 fragment header.
    pub const IPV6_FRAG: u8 = 44;
    /// IPsec authentication header.
    pub const AH: u8 = 51;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// IPv6 destination options.
    pub const IPV6_OPTS: u8 = 60;
    /// IPv6 hop-by-hop options.
    pub const HOPOPT: u8 = 0;
    /// SCTP.
    pub const SCTP: u8 = 132;
}

/// Why a frame is not forwarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Drop {
    /// Shorter than its headers say.
    Truncated,
    /// A header field is impossible (IPv4 IHL below 5, wrong IP version,
    /// total length shorter than the header).
    Malformed,
    /// ARP: recognised, answered by the host, not forwarded.
    Arp,
    /// Neither IPv4, IPv6 nor ARP.
    UnknownEthertype,
    /// The TTL or hop limit would reach zero.
    TtlExpired,
    /// No route for the destination.
    NoRoute,
    /// The route names a next hop that does not exist.
    UnknownNextHop,
    /// A rule set's verdict.
    Rule,
    /// For the router itself (its addresses, ARP, neighbour discovery):
    /// handed to the slow path, not forwarded.
    Local,
    /// The next hop's MAC is not known yet: handed to the slow path
    /// (which resolves it and holds a few frames), or dropped while the
    /// resolution is under way.
    Unresolved,
    /// A `reject` set matched: the slow path answers the sender.
    Reject,
    /// Larger than the egress port's MTU (no fragmentation here).
    TooBig,
}

impl Drop {
    /// How many reasons there are: the length of every per-reason count.
    pub const COUNT: usize = Drop::ALL.len();

    /// Every reason, in counter order (each at its [`Drop::index`]).
    pub const ALL: [Drop; 12] = [
        Drop::Truncated,
        Drop::Malformed,
        Drop::Arp,
        Drop::UnknownEthertype,
        Drop::TtlExpired,
        Drop::NoRoute,
        Drop::UnknownNextHop,
        Drop::Rule,
        Drop::Local,
        Drop::Unresolved,
        Drop::Reject,
        Drop::TooBig,
    ];

    /// A short name for counters and logs.
    pub fn name(self) -> &'static str {
        match self {
            Drop::Truncated => "truncated",
            Drop::Malformed => "malformed",
            Drop::Arp => "arp",
            Drop::UnknownEthertype => "unknown_ethertype",
            Drop::TtlExpired => "ttl_expired",
            Drop::NoRoute => "no_route",
            Drop::UnknownNextHop => "unknown_next_hop",
            Drop::Rule => "rule",
            Drop::Local => "local",
            Drop::Unresolved => "unresolved",
            Drop::Reject => "reject",
            Drop::TooBig => "too_big",
        }
    }

    /// The reason's index in [`Drop::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The network layer of a parsed frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum L3 {
    /// IPv4 (addresses in the low 32 bits).
    #[default]
    V4,
    /// IPv6.
    V6,
}

/// What the pipeline needs of one frame, read once.
///
/// Laid out in a fixed order (`repr(C)`): the ports, protocol, transport
/// flag, family and TTL are the eight bytes after the addresses, so that
/// the flow cache's key reads them as one word
/// ([`crate::pipeline::flowcache::FlowId::of`]) instead of assembling it from six
/// loads and shifts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Parsed {
    /// Source address (IPv4 in the low 32 bits).
    pub src: u128,
    /// Destination address.
    pub dst: u128,
    /// TCP/UDP/SCTP source port; ICMP type in the high byte and code in
    /// the low one; 0 otherwise.
    pub sport: u16,
    /// TCP/UDP/SCTP destination port; 0 otherwise.
    pub dport: u16,
    /// The transport protocol (after IPv6 extension headers).
    pub proto: u8,
    /// Whether the transport header was complete (ports are valid).
    pub l4_ok: bool,
    /// IPv4 or IPv6.
    pub l3: L3,
    /// TTL or hop limit.
    pub ttl: u8,
    /// Offset of the IP header.
    pub l3_off: u16,
    /// Offset of the transport header (may equal the frame's length when
    /// there is none).
    pub l4_off: u16,
}

#[inline(always)]
fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Parses a frame. Never panics; bad frames give their [`Drop`] reason.
pub fn parse(frame: &[u8]) -> Result<Parsed, Drop> {
    let mut p = Parsed::default();
    parse_into(frame, &mut p).map(|()| p)
}

/// [`parse`] into a caller's `Parsed` (a burst's array): the result is
/// written in place instead of being returned and copied, which cost more
/// than the parse itself.
#[inline]
pub fn parse_into(frame: &[u8], p: &mut Parsed) -> Result<(), Drop> {
    if parse_plain(frame, p) {
        return Ok(());
    }
    parse_general(frame, p)
}

/// The frames nearly all traffic is made of, parsed at fixed offsets with
/// a handful of compares: untagged IPv4 without options and not a later
/// fragment, or untagged IPv6 straight to a transport header, either with
/// the whole transport header inside the packet and the packet inside the
/// frame. Writes what [`parse_general`] would and returns true; returns
/// false (writing nothing) for every other frame. The general parse cost
/// about twice as many instructions on these frames (bounds checks, the
/// VLAN loop, the extension header loop).
#[inline(always)]
fn parse_plain(frame: &[u8], p: &mut Parsed) -> bool {
    if let Some(h) = frame.first_chunk::<38>() {
        if h[12..15] == [0x08, 0x00, 0x45] {
            let total = u16::from_be_bytes([h[16], h[17]]) as usize;
            let frag_off = u16::from_be_bytes([h[20], h[21]]) & 0x1fff;
            if total < 24 || 14 + total > frame.len() || frag_off != 0 {
                return false;
            }
            let (sport, dport, ok) = ports(h[23], [h[34], h[35], h[36], h[37]]);
            *p = Parsed {
                l3: L3::V4,
                l3_off: 14,
                l4_off: 34,
                src: u32::from_be_bytes([h[26], h[27], h[28], h[29]]) as u128,
                dst: u32::from_be_bytes([h[30], h[31], h[32], h[33]]) as u128,
                proto: h[23],
                ttl: h[22],
                sport,
                dport,
                l4_ok: ok,
            };
            return true;
        }
    }
    if let Some(h) = frame.first_chunk::<58>() {
        if h[12..14] == [0x86, 0xdd] && h[14] >> 4 == 6 {
            let payload = u16::from_be_bytes([h[18], h[19]]) as usize;
            let next = h[20];
            if payload < 4
                || 54 + payload > frame.len()
                || matches!(
                    next,
                    proto::HOPOPT
                        | proto::IPV6_ROUTE
                        | proto::IPV6_OPTS
                        | proto::IPV6_FRAG
                        | proto::AH
                )
            {
                return false;
            }
            let (sport, dport, ok) = ports(next, [h[54], h[55], h[56], h[57]]);
            let (src, dst) = h[22..54].split_at(16);
            *p = Parsed {
                l3: L3::V6,
                l3_off: 14,
                l4_off: 54,
                src: u128::from_be_bytes(src.try_into().unwrap_or_default()),
                dst: u128::from_be_bytes(dst.try_into().unwrap_or_default()),
                proto: next,
                ttl: h[21],
                sport,
                dport,
                l4_ok: ok,
            };
            return true;
        }
    }
    false
}

/// The ports (or ICMP type and code) a transport header's first 4 bytes
/// give for `proto`, and whether the protocol has them: one load from a
/// table of masks and an `and` instead of a branch per protocol (two
/// masks built from a table of flags took 14 instructions).
#[inline(always)]
fn ports(proto: u8, b: [u8; 4]) -> (u16, u16, bool) {
    // Per protocol: the bits of the 4 bytes, read as one big-endian word,
    // that it has: all (two ports), the first 16 (ICMP's type and code),
    // or none.
    const MASK: [u32; 256] = {
        let mut m = [0; 256];
        m[proto::TCP as usize] = u32::MAX;
        m[proto::UDP as usize] = u32::MAX;
        m[proto::SCTP as usize] = u32::MAX;
        m[proto::ICMP as usize] = 0xffff_0000;
        m[proto::ICMPV6 as usize] = 0xffff_0000;
        m
    };
    let m = MASK[proto as usize];
    let w = u32::from_be_bytes(b) & m;
    ((w >> 16) as u16, w as u16, m != 0)
}

/// [`parse`] without its fast path for plain frames: the reference the
/// fast path is pinned to (tests and the fuzz target compare the two).
pub fn parse_reference(frame: &[u8]) -> Result<Parsed, Drop> {
    let mut p = Parsed::default();
    parse_general(frame, &mut p).map(|()| p)
}

/// Every frame [`parse_plain`] leaves: VLAN tags, IPv4 options and
/// fragments, IPv6 extension headers, truncation, ARP, the rest.
fn parse_general(frame: &[u8], p: &mut Parsed) -> Result<(), Drop> {
    let mut et = be16(frame, 12).ok_or(Drop::Truncated)?;
    let mut off = 14;
    // Up to two VLAN tags (802.1ad outer, 802.1Q inner).
    for _ in 0..2 {
        if et != ethertype::VLAN && et != ethertype::QINQ {
            break;
        }
        et = be16(frame, off + 2).ok_or(Drop::Truncated)?;
        off += 4;
    }
    p.l3_off = off as u16;
    p.sport = 0;
    p.dport = 0;
    p.l4_ok = false;
    match et {
        ethertype::IPV4 => {
            let h = frame.get(off..off + 20).ok_or(Drop::Truncated)?;
            if h[0] >> 4 != 4 {
                return Err(Drop::Malformed);
            }
            let ihl = (h[0] & 0xf) as usize * 4;
            let total = u16::from_be_bytes([h[2], h[3]]) as usize;
            if ihl < 20 || total < ihl {
                return Err(Drop::Malformed);
            }
            if frame.len() < off + total.max(ihl) {
                return Err(Drop::Truncated);
            }
            p.l3 = L3::V4;
            p.ttl = h[8];
            p.proto = h[9];
            p.src = u32::from_be_bytes([h[12], h[13], h[14], h[15]]) as u128;
            p.dst = u32::from_be_bytes([h[16], h[17], h[18], h[19]]) as u128;
            let frag_off = u16::from_be_bytes([h[6], h[7]]) & 0x1fff;
            p.l4_off = (off + ihl) as u16;
            // Later fragments carry no transport header.
            if frag_off == 0 {
                transport(frame, p, off + total);
            }
        }
        ethertype::IPV6 => {
            let h = frame.get(off..off + 40).ok_or(Drop::Truncated)?;
            if h[0] >> 4 != 6 {
                return Err(Drop::Malformed);
            }
            let payload = u16::from_be_bytes([h[4], h[5]]) as usize;
            let end = off + 40 + payload;
            if frame.len() < end {
                return Err(Drop::Truncated);
            }
            p.l3 = L3::V6;
            p.ttl = h[7];
            p.src = u128::from_be_bytes(h[8..24].try_into().map_err(|_| Drop::Truncated)?);
            p.dst = u128::from_be_bytes(h[24..40].try_into().map_err(|_| Drop::Truncated)?);
            let mut next = h[6];
            let mut at = off + 40;
            let mut later_fragment = false;
            // Skip the common extension headers, at most eight of them.
            for _ in 0..8 {
                match next {
                    proto::HOPOPT | proto::IPV6_ROUTE | proto::IPV6_OPTS => {
                        let x = frame.get(at..at + 2).ok_or(Drop::Truncated)?;
                        next = x[0];
                        at += (x[1] as usize + 1) * 8;
                    }
                    proto::IPV6_FRAG => {
                        let x = frame.get(at..at + 8).ok_or(Drop::Truncated)?;
                        next = x[0];
                        later_fragment |= u16::from_be_bytes([x[2], x[3]]) >> 3 != 0;
                        at += 8;
                    }
                    proto::AH => {
                        let x = frame.get(at..at + 2).ok_or(Drop::Truncated)?;
                        next = x[0];
                        at += (x[1] as usize + 2) * 4;
                    }
                    _ => break,
                }
                if at > end {
                    return Err(Drop::Malformed);
                }
            }
            p.proto = next;
            p.l4_off = at as u16;
            if !later_fragment {
                transport(frame, p, end);
            }
        }
        ethertype::ARP => return Err(Drop::Arp),
        _ => return Err(Drop::UnknownEthertype),
    }
    Ok(())
}

/// Reads ports (or ICMP type and code) if the transport header is there.
#[inline(always)]
fn transport(frame: &[u8], p: &mut Parsed, end: usize) {
    let at = p.l4_off as usize;
    let need = match p.proto {
        proto::TCP | proto::UDP | proto::SCTP => 4,
        proto::ICMP | proto::ICMPV6 => 2,
        _ => return,
    };
    if at + need > end.min(frame.len()) {
        return;
    }
    let mut b = [0; 4];
    b[..need].copy_from_slice(&frame[at..at + need]);
    (p.sport, p.dport, p.l4_ok) = ports(p.proto, b);
}

/// Whether a received frame is for the station with `mac`: addressed to
/// it, or ARP (which the pipeline counts and does not forward). Ports in
/// promiscuous mode pass on only these.
#[inline]
pub fn addressed_to(frame: &[u8], mac: [u8; 6]) -> bool {
    frame.len() >= 14 && (frame[..6] == mac || frame[12..14] == ethertype::ARP.to_be_bytes())
}

/// [`addressed_to`] for a port with addresses (a router's): also IPv6
/// multicast (`33:33:...`), where neighbour discovery's solicitations
/// and announcements go. The slow path takes them; none is forwarded.
#[inline]
pub fn addressed_to_router(frame: &[u8], mac: [u8; 6]) -> bool {
    addressed_to(frame, mac) || frame.len() >= 14 && frame[..2] == [0x33, 0x33]
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::checksum::{fold, l4_span};
    use super::*;

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
        assert_eq!(parse(&[0u8; 10]), Err(Drop::Truncated));
        let mut f = ipv4(1, 2, 9, L4::Udp(5, 6), 0);
        assert_eq!(parse(&f[..30]), Err(Drop::Truncated));
        f[14] = 0x44; // IHL 4
        assert_eq!(parse(&f), Err(Drop::Malformed));
        f[12..14].copy_from_slice(&ethertype::ARP.to_be_bytes());
        assert_eq!(parse(&f), Err(Drop::Arp));
        f[12..14].copy_from_slice(&0x1234u16.to_be_bytes());
        assert_eq!(parse(&f), Err(Drop::UnknownEthertype));
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
        assert_eq!(rewrite(&mut f, &p, [0; 6], [0; 6]), Err(Drop::TtlExpired));
        let mut f = ipv6(1, 2, 7, L4::Udp(1, 2), 0);
        let p = parse(&f).unwrap();
        rewrite(&mut f, &p, [0; 6], [0; 6]).unwrap();
        assert_eq!(f[21], 6);
    }

    #[test]
    fn incremental_checksum_matches_a_full_one() {
        let mut x = 0x1234_5678u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
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
}
