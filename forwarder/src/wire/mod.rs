//! Wire formats, the one place frames are parsed and built: the parse of
//! one frame into the few values the pipeline needs (`parse`), the
//! rewrite of a forwarded frame (`rewrite`), checksums (`checksum`), the
//! router's own packets (`ip`, `arp`, `nd`, `icmp`, `tcp`: ARP, neighbour
//! discovery, ICMP messages and errors, TCP resets, built and parsed off
//! the fast path) and well-formed test frames (`build`).
//!
//! The parser reads fixed offsets straight out of the buffer (no general
//! packet library on the fast path: those cost several times more per
//! packet) and never panics: a frame that is too short or malformed comes
//! back as a [`crate::reason::DropReason`], counted by the caller.
//!
//! Recognised: Ethernet II, up to two 802.1Q / 802.1ad VLAN tags, ARP
//! (recognised, not forwarded), IPv4 with options, IPv6 with the common
//! extension headers skipped (hop-by-hop, routing, fragment, destination
//! options, authentication), and TCP, UDP, SCTP, ICMP and ICMPv6.

pub mod arp;
pub mod build;
mod checksum;
pub mod icmp;
pub mod ip;
pub mod nd;
mod parse;
mod rewrite;
pub mod tcp;
#[cfg(test)]
mod tests;

pub use checksum::*;
pub(crate) use parse::parse_plain;
pub use parse::{parse, parse_into, parse_reference, plain_dst, plain_flow, PlainDst};
pub use rewrite::*;

/// Ethertypes.
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
/// flag, family and VRF are the eight bytes after the addresses, so that
/// the flow cache's key reads them as one word
/// ([`crate::pipeline::flowcache::FlowId::of`]) instead of assembling it from six
/// loads and shifts (LLVM merges the loads only while every byte of the
/// word is used: with the VRF elsewhere, the key took 34 instructions a
/// packet more on the hit path, callgrind).
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
    /// The VRF the frame routes in: 0 as parsed; the pipeline sets its
    /// port's (a tagged frame's sub-interface's).
    pub vrf: u8,
    /// Offset of the IP header.
    pub l3_off: u16,
    /// Offset of the transport header (may equal the frame's length when
    /// there is none).
    pub l4_off: u16,
    /// TTL or hop limit.
    pub ttl: u8,
}

/// Whether a received frame is for the station with `mac`: addressed to
/// it, or ARP (which the pipeline counts and does not forward). Ports in
/// promiscuous mode pass on only these.
#[inline]
pub fn addressed_to(frame: &[u8], mac: [u8; 6]) -> bool {
    frame.len() >= 14 && (frame[..6] == mac || is_arp(frame))
}

/// A frame's VLAN tags (up to two, outer first: TPID and VLAN ID), and
/// the length of its Ethernet header with them.
pub fn tags(frame: &[u8]) -> (Vec<(u16, u16)>, usize) {
    let mut t = Vec::new();
    let mut at = 12;
    while t.len() < 2 {
        match (be16(frame, at), be16(frame, at + 2)) {
            (Some(tpid @ (ethertype::VLAN | ethertype::QINQ)), Some(tci)) => {
                t.push((tpid, tci & 0xfff));
                at += 4;
            }
            _ => break,
        }
    }
    (t, at + 2)
}

/// Whether a frame is ARP, behind up to two VLAN tags (a sub-interface's
/// neighbours ask on its VLAN).
#[inline]
fn is_arp(frame: &[u8]) -> bool {
    let mut at = 12;
    for _ in 0..3 {
        match be16(frame, at) {
            Some(ethertype::ARP) => return true,
            Some(ethertype::VLAN | ethertype::QINQ) => at += 4,
            _ => return false,
        }
    }
    false
}

/// [`addressed_to`] for a port with addresses (a router's): also IPv6
/// multicast (`33:33:...`), where neighbour discovery's solicitations
/// and announcements go. The slow path takes them; none is forwarded.
#[inline]
pub fn addressed_to_router(frame: &[u8], mac: [u8; 6]) -> bool {
    addressed_to(frame, mac) || frame.len() >= 14 && frame[..2] == [0x33, 0x33]
}

/// The big-endian 16-bit word at `at`, if the bytes are there.
#[inline(always)]
pub(crate) fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The DSCP of a parsed packet (the top six bits of its IPv4 TOS or IPv6
/// traffic class), read from its frame; `None` if the frame is too short.
#[inline(always)]
pub fn dscp(p: &Parsed, frame: &[u8]) -> Option<u8> {
    let o = p.l3_off as usize;
    let h = frame.get(o..o + 2)?;
    Some(match p.l3 {
        L3::V4 => h[1] >> 2,
        L3::V6 => (h[0] & 0x0f) << 2 | h[1] >> 6,
    })
}
