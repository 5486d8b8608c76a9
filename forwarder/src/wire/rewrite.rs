//! The rewrite of a forwarded frame: the next hop's MACs, the TTL or hop
//! limit decremented, the IPv4 checksum updated incrementally.

use super::checksum::checksum_ttl_decrement_ne;
use super::{Parsed, L3};
use crate::reason::DropReason;

/// Rewrites a parsed frame for forwarding: destination and source MAC of
/// the next hop, TTL or hop limit decremented, the IPv4 header checksum
/// updated incrementally. A TTL of 1 or 0 expires instead.
#[inline]
pub fn rewrite(
    frame: &mut [u8],
    p: &Parsed,
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
) -> Result<(), DropReason> {
    rewrite_with(frame, p, &macs(dst_mac, src_mac))
}

/// The 12 bytes a frame starts with: destination MAC, then source.
#[inline]
pub fn macs(dst_mac: [u8; 6], src_mac: [u8; 6]) -> [u8; 12] {
    let mut m = [0; 12];
    m[..6].copy_from_slice(&dst_mac);
    m[6..].copy_from_slice(&src_mac);
    m
}

/// [`rewrite`] with the two MACs as the frame holds them (destination,
/// then source): one 12-byte copy, an 8-byte and a 4-byte move, where two
/// 6-byte ones took four moves each way and the shifts between them.
#[inline]
pub fn rewrite_with(frame: &mut [u8], p: &Parsed, macs: &[u8; 12]) -> Result<(), DropReason> {
    if p.ttl <= 1 {
        return Err(DropReason::TtlExpired);
    }
    let l3 = p.l3_off as usize;
    let (Some(_), Some(_)) = (frame.get(..12), frame.get(l3..l3 + 12)) else {
        return Err(DropReason::Truncated);
    };
    frame[..12].copy_from_slice(macs);
    match p.l3 {
        L3::V4 => {
            // TTL is the high byte of a 16-bit word (the protocol the
            // low one), and at least 2 here.
            frame[l3 + 8] = p.ttl - 1;
            let hc = u16::from_ne_bytes([frame[l3 + 10], frame[l3 + 11]]);
            let hc = checksum_ttl_decrement_ne(hc);
            frame[l3 + 10..l3 + 12].copy_from_slice(&hc.to_ne_bytes());
        }
        L3::V6 => frame[l3 + 7] = p.ttl - 1,
    }
    Ok(())
}

/// Writes `ttl` (one less than the packet's, which was at least 2) into
/// `ip`, the first 12 bytes of an IP header of family `l3`: IPv6's hop
/// limit, or IPv4's TTL with the header checksum updated incrementally.
/// For the pipeline's usual frame, whose IP header is at byte 14.
/// [`rewrite_with`] keeps its own lines: through this, with the header's
/// 12 bytes taken at any offset, the flow cache's hit path ran 2-7 %
/// slower (`examples/turns`, alternating builds).
#[inline(always)]
pub fn set_ttl(ip: &mut [u8; 12], l3: L3, ttl: u8) {
    match l3 {
        L3::V4 => {
            // TTL is the high byte of a 16-bit word (the protocol the
            // low one).
            ip[8] = ttl;
            let hc = u16::from_ne_bytes([ip[10], ip[11]]);
            ip[10..12].copy_from_slice(&checksum_ttl_decrement_ne(hc).to_ne_bytes());
        }
        L3::V6 => ip[7] = ttl,
    }
}
