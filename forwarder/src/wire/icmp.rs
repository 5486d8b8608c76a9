//! ICMP (RFC 792, RFC 1812) and ICMPv6 (RFC 4443) messages: echo
//! replies, and errors about a packet with the rules on which packets may
//! have one.
//! Builders return whole frames or packets; parsers take whole frames,
//! never panic and answer `None` for anything malformed.

use super::be16;
use super::ip::{ipv4, ipv4_parts, ipv6, ipv6_parts};
use super::{checksum, proto, sum6};

/// An IPv4 packet of an ICMP error quotes at most this much in all
/// (RFC 1812 4.3.2.3: the error's whole datagram within 576 bytes).
const QUOTE_V4: usize = 576 - 20 - 8;

/// An ICMPv6 error's packet stays within the minimum MTU (RFC 4443 2.4 c).
const QUOTE_V6: usize = 1280 - 40 - 8;

/// ICMP types and codes the router sends.
pub mod v4 {
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
pub mod v6 {
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
        return matches!(pkt.get(ihl), Some(&(v4::ECHO | 13 | 15 | 17)));
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
        if p != proto::ICMP || m.len() < 8 || m[0] != v4::ECHO || checksum(m) != 0 {
            return None;
        }
        let reply = icmp4_message(v4::ECHO_REPLY, 0, m[4..8].try_into().ok()?, &m[8..]);
        return Some(ipv4(dst, src, proto::ICMP, 64, &reply));
    }
    let (src, dst, next, _, m) = ipv6_parts(frame)?;
    if next != proto::ICMPV6 || m.len() < 8 || m[0] != v6::ECHO || sum6(src, dst, next, m) != 0 {
        return None;
    }
    let reply = icmp6_message(
        dst,
        src,
        v6::ECHO_REPLY,
        0,
        m[4..8].try_into().ok()?,
        &m[8..],
    );
    Some(ipv6(dst, src, proto::ICMPV6, 64, &reply))
}
