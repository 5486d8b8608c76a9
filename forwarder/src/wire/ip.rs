//! IP packets of the router's own (no options, not fragments), the
//! Ethernet frames around them, and views of an untagged frame's IP
//! header and payload.
//!
//! Builders return whole frames or packets; parsers take whole frames,
//! never panic and answer `None` for anything malformed.

use super::{be16, checksum, ethertype};

/// Smallest Ethernet frame without its FCS: shorter ones are padded.
pub const MIN_FRAME: usize = 60;

/// An Ethernet frame around `payload`, padded to the minimum size (what
/// the router sends).
pub fn ether(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = frame(dst, src, ethertype, payload);
    if f.len() < MIN_FRAME {
        f.resize(MIN_FRAME, 0);
    }
    f
}

/// An Ethernet frame around `payload`, as long as it is (test frames,
/// whose lengths the tests choose).
pub fn frame(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity((14 + payload.len()).max(MIN_FRAME));
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
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
