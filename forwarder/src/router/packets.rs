//! The router's own packets: ARP (RFC 826), neighbour discovery (RFC
//! 4861), ICMP (RFC 792, RFC 1812) and ICMPv6 (RFC 4443) messages and a
//! TCP reset, built and parsed off the fast path. Builders return whole
//! frames; parsers take whole frames, never panic and answer `None` for
//! anything malformed.

use crate::wire::{checksum, ethertype, fold, proto, sum16};

/// The Ethernet broadcast address.
pub const BROADCAST: [u8; 6] = [0xff; 6];

/// Smallest Ethernet frame without its FCS: shorter ones are padded.
const MIN_FRAME: usize = 60;

/// An IPv4 packet of an ICMP error quotes at most this much in all
/// (RFC 1812 4.3.2.3: the error's whole datagram within 576 bytes).
const QUOTE_V4: usize = 576 - 20 - 8;
/// An ICMPv6 error's packet stays within the minimum MTU (RFC 4443 2.4 c).
const QUOTE_V6: usize = 1280 - 40 - 8;

/// ICMP types and codes the router sends.
pub mod icmp {
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination unreachable.
    pub const UNREACH: u8 = 3;
    /// Echo request.
    pub const ECHO: u8 = 8;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 11;
    /// Unreachable codes: network, port, fragmentation needed, and
    /// administratively prohibited.
    pub const NET_UNREACH: u8 = 0;
    /// See [`NET_UNREACH`].
    pub const PORT_UNREACH: u8 = 3;
    /// See [`NET_UNREACH`].
    pub const FRAG_NEEDED: u8 = 4;
    /// See [`NET_UNREACH`].
    pub const ADMIN_PROHIBITED: u8 = 13;
}

/// ICMPv6 types and codes the router sends and reads.
pub mod icmp6 {
    /// Destination unreachable.
    pub const UNREACH: u8 = 1;
    /// Packet too big.
    pub const TOO_BIG: u8 = 2;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 3;
    /// Parameter problem.
    pub const PARAM_PROBLEM: u8 = 4;
    /// Echo request.
    pub const ECHO: u8 = 128;
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 129;
    /// Neighbour solicitation.
    pub const NS: u8 = 135;
    /// Neighbour advertisement.
    pub const NA: u8 = 136;
    /// Unreachable codes: no route, administratively prohibited, port.
    pub const NO_ROUTE: u8 = 0;
    /// See [`NO_ROUTE`].
    pub const ADMIN_PROHIBITED: u8 = 1;
    /// See [`NO_ROUTE`].
    pub const PORT_UNREACH: u8 = 4;
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// An Ethernet frame around `payload`, padded to the minimum size.
pub fn ether(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity((14 + payload.len()).max(MIN_FRAME));
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    if f.len() < MIN_FRAME {
        f.resize(MIN_FRAME, 0);
    }
    f
}

/// An ARP packet for IPv4 over Ethernet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arp {
    /// 1: request, 2: reply.
    pub op: u16,
    /// Sender's MAC.
    pub sha: [u8; 6],
    /// Sender's IPv4 address.
    pub spa: u32,
    /// Target's MAC (zero in a request).
    pub tha: [u8; 6],
    /// Target's IPv4 address.
    pub tpa: u32,
}

impl Arp {
    /// A request.
    pub const REQUEST: u16 = 1;
    /// A reply.
    pub const REPLY: u16 = 2;

    /// The ARP packet of an untagged frame: Ethernet and IPv4 with their
    /// lengths, a request or a reply, from a unicast sender.
    pub fn parse(frame: &[u8]) -> Option<Arp> {
        if be16(frame, 12)? != ethertype::ARP {
            return None;
        }
        let a = frame.get(14..42)?;
        if a[0..6] != [0, 1, 8, 0, 6, 4] {
            return None;
        }
        let op = u16::from_be_bytes([a[6], a[7]]);
        let sha: [u8; 6] = a[8..14].try_into().ok()?;
        if !matches!(op, Arp::REQUEST | Arp::REPLY) || sha[0] & 1 != 0 || sha == [0; 6] {
            return None;
        }
        Some(Arp {
            op,
            sha,
            spa: u32::from_be_bytes(a[14..18].try_into().ok()?),
            tha: a[18..24].try_into().ok()?,
            tpa: u32::from_be_bytes(a[24..28].try_into().ok()?),
        })
    }

    /// The frame carrying it to `dst`, from its sender's MAC.
    pub fn frame(&self, dst: [u8; 6]) -> Vec<u8> {
        let mut a = vec![0, 1, 8, 0, 6, 4];
        a.extend_from_slice(&self.op.to_be_bytes());
        a.extend_from_slice(&self.sha);
        a.extend_from_slice(&self.spa.to_be_bytes());
        a.extend_from_slice(&self.tha);
        a.extend_from_slice(&self.tpa.to_be_bytes());
        ether(dst, self.sha, ethertype::ARP, &a)
    }
}

/// The transport checksum of `seg` (its checksum field zero) with the
/// IPv6 pseudo-header.
fn sum6(src: u128, dst: u128, next: u8, seg: &[u8]) -> u16 {
    let s = sum16(&dst.to_be_bytes(), sum16(&src.to_be_bytes(), 0));
    !fold(sum16(seg, s + seg.len() as u64 + next as u64))
}

/// The transport checksum of `seg` with the IPv4 pseudo-header.
fn sum4(src: u32, dst: u32, proto: u8, seg: &[u8]) -> u16 {
    let s = sum16(&dst.to_be_bytes(), sum16(&src.to_be_bytes(), 0));
    !fold(sum16(seg, s + seg.len() as u64 + proto as u64))
}

/// An IPv4 packet (no options, not a fragment, DF clear).
pub fn ipv4(src: u32, dst: u32, proto: u8, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x45, 0];
    h.extend_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
    h.extend_from_slice(&[0, 0, 0, 0, ttl, proto, 0, 0]);
    h.extend_from_slice(&src.to_be_bytes());
    h.extend_from_slice(&dst.to_be_bytes());
    let c = checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

/// An IPv6 packet.
pub fn ipv6(src: u128, dst: u128, next: u8, hops: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    h.extend_from_slice(&[next, hops]);
    h.extend_from_slice(&src.to_be_bytes());
    h.extend_from_slice(&dst.to_be_bytes());
    h.extend_from_slice(payload);
    h
}

/// An ICMP message (type, code, the 4 bytes after the checksum, body).
pub fn icmp4_message(ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(body);
    let c = checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// An ICMPv6 message between `src` and `dst`.
pub fn icmp6_message(
    src: u128,
    dst: u128,
    ty: u8,
    code: u8,
    rest: [u8; 4],
    body: &[u8],
) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(body);
    let c = sum6(src, dst, proto::ICMPV6, &m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    m
}

/// The solicited-node multicast address of `a` (RFC 4291 2.7.1).
pub fn solicited_node(a: u128) -> u128 {
    0xff02_0000_0000_0000_0000_0001_ff00_0000 | (a & 0xff_ffff)
}

/// The Ethernet address of an IPv6 multicast group (RFC 2464 7).
pub fn multicast_mac(group: u128) -> [u8; 6] {
    let b = group.to_be_bytes();
    [0x33, 0x33, b[12], b[13], b[14], b[15]]
}

/// A neighbour solicitation for `target` from `src` (with our MAC as the
/// source link-layer option), to `dst`: the target's solicited-node group
/// when resolving, the neighbour itself when probing.
pub fn ns(src: u128, dst: u128, target: u128, mac: [u8; 6], dst_mac: [u8; 6]) -> Vec<u8> {
    let mut body = target.to_be_bytes().to_vec();
    body.extend_from_slice(&[1, 1]);
    body.extend_from_slice(&mac);
    let m = icmp6_message(src, dst, icmp6::NS, 0, [0; 4], &body);
    ether(
        dst_mac,
        mac,
        ethertype::IPV6,
        &ipv6(src, dst, proto::ICMPV6, 255, &m),
    )
}

/// A neighbour advertisement of `target` (ours) at `mac`, from `src` to
/// `dst`: solicited or not, always with the router and override flags
/// and the target link-layer option.
pub fn na(
    src: u128,
    dst: u128,
    target: u128,
    mac: [u8; 6],
    dst_mac: [u8; 6],
    solicited: bool,
) -> Vec<u8> {
    let flags = 0x80 | 0x20 | if solicited { 0x40 } else { 0 };
    let mut body = target.to_be_bytes().to_vec();
    body.extend_from_slice(&[2, 1]);
    body.extend_from_slice(&mac);
    let m = icmp6_message(src, dst, icmp6::NA, 0, [flags, 0, 0, 0], &body);
    ether(
        dst_mac,
        mac,
        ethertype::IPV6,
        &ipv6(src, dst, proto::ICMPV6, 255, &m),
    )
}

/// A neighbour discovery message read from a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nd {
    /// [`icmp6::NS`] or [`icmp6::NA`].
    pub ty: u8,
    /// The IPv6 source.
    pub src: u128,
    /// The IPv6 destination.
    pub dst: u128,
    /// The target address.
    pub target: u128,
    /// The link-layer address option (source in an NS, target in an NA).
    pub lladdr: Option<[u8; 6]>,
    /// An NA's solicited flag.
    pub solicited: bool,
    /// An NA's override flag.
    pub override_: bool,
}

/// An untagged IPv6 frame's header fields and payload: (source,
/// destination, next header, hop limit, payload).
pub fn ipv6_parts(frame: &[u8]) -> Option<(u128, u128, u8, u8, &[u8])> {
    if be16(frame, 12)? != ethertype::IPV6 {
        return None;
    }
    let h = frame.get(14..54)?;
    if h[0] >> 4 != 6 {
        return None;
    }
    let len = u16::from_be_bytes([h[4], h[5]]) as usize;
    let payload = frame.get(54..54 + len)?;
    Some((
        u128::from_be_bytes(h[8..24].try_into().ok()?),
        u128::from_be_bytes(h[24..40].try_into().ok()?),
        h[6],
        h[7],
        payload,
    ))
}

/// What [`ipv4_parts`] reads: source, destination, protocol, TTL, header
/// length, the packet.
pub type V4Parts<'a> = (u32, u32, u8, u8, usize, &'a [u8]);

/// An untagged IPv4 frame's (source, destination, protocol, TTL, header
/// length, packet): the packet cut to its total length.
pub fn ipv4_parts(frame: &[u8]) -> Option<V4Parts<'_>> {
    if be16(frame, 12)? != ethertype::IPV4 {
        return None;
    }
    let h = frame.get(14..34)?;
    let ihl = (h[0] & 0xf) as usize * 4;
    let total = u16::from_be_bytes([h[2], h[3]]) as usize;
    if h[0] >> 4 != 4 || ihl < 20 || total < ihl {
        return None;
    }
    let pkt = frame.get(14..14 + total)?;
    Some((
        u32::from_be_bytes(h[12..16].try_into().ok()?),
        u32::from_be_bytes(h[16..20].try_into().ok()?),
        h[9],
        h[8],
        ihl,
        pkt,
    ))
}

impl Nd {
    /// The NS or NA of a frame, checked as RFC 4861 7.1.1 and 7.1.2
    /// say: hop limit 255, code 0, a valid checksum, not a multicast
    /// target, options of non-zero length.
    pub fn parse(frame: &[u8]) -> Option<Nd> {
        let (src, dst, next, hops, m) = ipv6_parts(frame)?;
        if next != proto::ICMPV6 || hops != 255 || m.len() < 24 {
            return None;
        }
        let (ty, code) = (m[0], m[1]);
        if !matches!(ty, icmp6::NS | icmp6::NA) || code != 0 || sum6(src, dst, next, m) != 0 {
            return None;
        }
        let target = u128::from_be_bytes(m[8..24].try_into().ok()?);
        if target >> 120 == 0xff {
            return None;
        }
        let want = if ty == icmp6::NS { 1 } else { 2 };
        let mut lladdr = None;
        let mut opts = &m[24..];
        while opts.len() >= 2 {
            let len = opts[1] as usize * 8;
            if len == 0 || len > opts.len() {
                return None;
            }
            if opts[0] == want && len >= 8 {
                lladdr = opts[2..8].try_into().ok();
            }
            opts = &opts[len..];
        }
        Some(Nd {
            ty,
            src,
            dst,
            target,
            lladdr,
            solicited: m[4] & 0x40 != 0,
            override_: m[4] & 0x20 != 0,
        })
    }
}

/// Whether an IPv4 source may be answered with an ICMP error (RFC 1812
/// 4.3.2.7: not unspecified, broadcast, multicast, loopback or class E).
pub fn v4_source_ok(src: u32) -> bool {
    let a = std::net::Ipv4Addr::from(src);
    !(a.is_unspecified()
        || a.is_broadcast()
        || a.is_multicast()
        || a.is_loopback()
        || src >> 28 == 0xf)
}

/// Whether an IPv6 source may be answered (not unspecified or multicast).
pub fn v6_source_ok(src: u128) -> bool {
    src != 0 && src >> 120 != 0xff && src != 1
}

/// Whether an IPv4 packet may get an ICMP error (RFC 1812 4.3.2.7): not
/// an ICMP error itself, not a fragment other than the first, not to or
/// from a group or broadcast address (the frame's destination MAC is a
/// group's when it was sent to one).
pub fn v4_errors_allowed(frame: &[u8]) -> bool {
    let Some((src, dst, p, _, ihl, pkt)) = ipv4_parts(frame) else {
        return false;
    };
    let frag_off = u16::from_be_bytes([pkt[6], pkt[7]]) & 0x1fff;
    if frame[0] & 1 != 0 || frag_off != 0 || !v4_source_ok(src) || !v4_source_ok(dst) {
        return false;
    }
    if p == proto::ICMP {
        // Only queries (echo, timestamp, ...) may be answered with errors.
        return matches!(pkt.get(ihl), Some(&(icmp::ECHO | 13 | 15 | 17)));
    }
    true
}

/// Whether an IPv6 packet may get an ICMPv6 error (RFC 4443 2.4 e): not
/// an ICMPv6 error, not sent to a group (except packet too big, which
/// the caller allows), not from an address that cannot be answered.
/// Extension headers are not followed: a packet with them counts as
/// answerable, which RFC 4443 allows.
pub fn v6_errors_allowed(frame: &[u8], too_big: bool) -> bool {
    let Some((src, dst, next, _, payload)) = ipv6_parts(frame) else {
        return false;
    };
    if !v6_source_ok(src) || (!too_big && (frame[0] & 1 != 0 || dst >> 120 == 0xff)) {
        return false;
    }
    if next == proto::ICMPV6 {
        // Errors are types 0-127.
        return payload.first().is_some_and(|&t| t >= 128);
    }
    true
}

/// An ICMP error about the IPv4 packet of `frame`, from `src`: type,
/// code, the 4 bytes after the checksum (the MTU for fragmentation
/// needed), as an IPv4 packet (no Ethernet header) to the packet's
/// source.
pub fn icmp4_error(frame: &[u8], src: u32, ty: u8, code: u8, rest: [u8; 4]) -> Option<Vec<u8>> {
    let (osrc, _, _, _, _, pkt) = ipv4_parts(frame)?;
    let quote = &pkt[..pkt.len().min(QUOTE_V4)];
    let m = icmp4_message(ty, code, rest, quote);
    Some(ipv4(src, osrc, proto::ICMP, 64, &m))
}

/// An ICMPv6 error about the IPv6 packet of `frame`, from `src`.
pub fn icmp6_error(frame: &[u8], src: u128, ty: u8, code: u8, rest: [u8; 4]) -> Option<Vec<u8>> {
    let (osrc, ..) = ipv6_parts(frame)?;
    let pkt = frame.get(14..)?;
    let total = (40 + be16(frame, 18)? as usize).min(pkt.len());
    let quote = &pkt[..total.min(QUOTE_V6)];
    let m = icmp6_message(src, osrc, ty, code, rest, quote);
    Some(ipv6(src, osrc, proto::ICMPV6, 64, &m))
}

/// The echo reply to an echo request in `frame` (to one of our
/// addresses), as an IP packet; `None` if it is not a valid request.
pub fn echo_reply(frame: &[u8]) -> Option<Vec<u8>> {
    if let Some((src, dst, p, _, ihl, pkt)) = ipv4_parts(frame) {
        let m = pkt.get(ihl..)?;
        if p != proto::ICMP || m.len() < 8 || m[0] != icmp::ECHO || checksum(m) != 0 {
            return None;
        }
        let reply = icmp4_message(icmp::ECHO_REPLY, 0, m[4..8].try_into().ok()?, &m[8..]);
        return Some(ipv4(dst, src, proto::ICMP, 64, &reply));
    }
    let (src, dst, next, _, m) = ipv6_parts(frame)?;
    if next != proto::ICMPV6 || m.len() < 8 || m[0] != icmp6::ECHO || sum6(src, dst, next, m) != 0 {
        return None;
    }
    let reply = icmp6_message(
        dst,
        src,
        icmp6::ECHO_REPLY,
        0,
        m[4..8].try_into().ok()?,
        &m[8..],
    );
    Some(ipv6(dst, src, proto::ICMPV6, 64, &reply))
}

/// The TCP reset answering the TCP segment of `frame` (RFC 793's reset
/// generation, as nft's `reject with tcp reset` sends it: from the
/// segment's destination to its source), as an IP packet; `None` for a
/// reset or anything that is not a whole TCP segment.
pub fn tcp_reset(frame: &[u8]) -> Option<Vec<u8>> {
    let (v6, src, dst, seg) = if let Some((s, d, p, _, ihl, pkt)) = ipv4_parts(frame) {
        if p != proto::TCP {
            return None;
        }
        (false, s as u128, d as u128, pkt.get(ihl..)?)
    } else {
        let (s, d, next, _, payload) = ipv6_parts(frame)?;
        if next != proto::TCP {
            return None;
        }
        (true, s, d, payload)
    };
    if seg.len() < 20 {
        return None;
    }
    let flags = seg[13];
    if flags & 0x04 != 0 {
        return None;
    }
    let data_off = (seg[12] >> 4) as usize * 4;
    let data_len = seg.len().saturating_sub(data_off) as u32;
    let seq = u32::from_be_bytes(seg[4..8].try_into().ok()?);
    let ack = u32::from_be_bytes(seg[8..12].try_into().ok()?);
    // With ACK: the reset takes its sequence number from it; without:
    // sequence 0 and an ACK of everything the segment occupied.
    let (rseq, rack, rflags) = if flags & 0x10 != 0 {
        (ack, 0, 0x04)
    } else {
        let occupied = data_len + (flags & 0x02 != 0) as u32 + (flags & 0x01 != 0) as u32;
        (0, seq.wrapping_add(occupied), 0x14)
    };
    let mut t = Vec::with_capacity(20);
    t.extend_from_slice(&seg[2..4]);
    t.extend_from_slice(&seg[0..2]);
    t.extend_from_slice(&rseq.to_be_bytes());
    t.extend_from_slice(&rack.to_be_bytes());
    t.extend_from_slice(&[0x50, rflags, 0, 0, 0, 0, 0, 0]);
    Some(if v6 {
        let c = sum6(dst, src, proto::TCP, &t);
        t[16..18].copy_from_slice(&c.to_be_bytes());
        ipv6(dst, src, proto::TCP, 64, &t)
    } else {
        let c = sum4(dst as u32, src as u32, proto::TCP, &t);
        t[16..18].copy_from_slice(&c.to_be_bytes());
        ipv4(dst as u32, src as u32, proto::TCP, 64, &t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build::{ipv4 as frame4, ipv6 as frame6, L4};
    use crate::wire::{l4_checksum_ok, parse};

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
            (icmp6::NS, target, Some(mac))
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
            (icmp6::NA, true, true, Some([2, 0, 0, 0, 0, 7]))
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
        assert_eq!(r6[40], icmp6::ECHO_REPLY);
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
        let e = icmp4_error(&f, 0xc000_0201, icmp::TIME_EXCEEDED, 0, [0; 4]).unwrap();
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
        let e = icmp4_error(&long, 0xc000_0201, icmp::UNREACH, 0, [0; 4]).unwrap();
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
            icmp6::TOO_BIG,
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
