//! The TCP reset that `reject` sends (RFC 793's reset generation).

use super::ip::{ipv4, ipv4_parts, ipv6, ipv6_parts};
use super::{proto, sum4, sum6};

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
