//! One's complement checksums (RFC 1071): the incremental updates the
//! rewrite makes (RFC 1624), and full sums for frames a port finishes or
//! a test checks.

use super::{be16, parse, proto, Parsed, L3};

/// Updates a 16-bit one's complement checksum for one 16-bit field that
/// changed from `old` to `new` (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')).
#[inline(always)]
pub fn checksum_update(hc: u16, old: u16, new: u16) -> u16 {
    let mut sum = (!hc as u32) + (!old as u32 & 0xffff) + new as u32;
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    !(sum as u16)
}

/// [`checksum_update`] for the TTL's decrement, the change every forwarded
/// IPv4 packet makes: the TTL is the high byte of its 16-bit word, and
/// with a TTL of 2 or more the word `m` becomes `m - 0x100` without a
/// borrow, so `~m + m'` is the constant `0xfeff` and neither word need be
/// read. The sum then fits one fold. Equal to `checksum_update(hc, m,
/// m - 0x100)` for every `hc` and every `m` of 0x200 or more (tested).
#[inline(always)]
pub fn checksum_ttl_decrement(hc: u16) -> u16 {
    let sum = (!hc as u32) + 0xfeff;
    !(((sum & 0xffff) + (sum >> 16)) as u16)
}

/// [`checksum_ttl_decrement`] of the checksum's two bytes read in the
/// machine's byte order, the result to be written back in it: a one's
/// complement sum commutes with swapping the bytes of every word (RFC
/// 1071, 2.(B)), so the swaps to and from network order (two rotates)
/// are not needed; the constant is swapped instead. Equal to the
/// network-order function for all 65,536 checksums (tested).
#[inline(always)]
pub fn checksum_ttl_decrement_ne(hc: u16) -> u16 {
    const C: u32 = u16::from_ne_bytes(0xfeffu16.to_be_bytes()) as u32;
    let sum = (!hc as u32) + C;
    !(((sum & 0xffff) + (sum >> 16)) as u16)
}

/// The one's complement checksum of a header, computed in full (for
/// tests and for building frames).
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in data.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], 0])
        };
        sum += w as u32;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// One's complement sum of `data` as big-endian 16-bit words (an odd
/// last byte padded with zero), not folded.
pub(crate) fn sum16(data: &[u8], mut sum: u64) -> u64 {
    let mut c = data.chunks_exact(2);
    for w in &mut c {
        sum += u16::from_be_bytes([w[0], w[1]]) as u64;
    }
    if let [b] = c.remainder() {
        sum += (*b as u64) << 8;
    }
    sum
}

pub(crate) fn fold(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Where a frame's transport checksum lives: the segment's start and end
/// (from the IP lengths, so Ethernet padding is not summed), the offset
/// of the checksum field, and the pseudo-header's sum (none for ICMP).
/// `None` for other protocols, later fragments and short segments.
pub(super) fn l4_span(frame: &[u8], p: &Parsed) -> Option<(usize, usize, usize, u64)> {
    let l3 = p.l3_off as usize;
    let start = p.l4_off as usize;
    let end = match p.l3 {
        L3::V4 => l3 + be16(frame, l3 + 2)? as usize,
        L3::V6 => l3 + 40 + be16(frame, l3 + 4)? as usize,
    };
    let (field, min) = match p.proto {
        proto::TCP => (16, 20),
        proto::UDP => (6, 8),
        proto::ICMP if p.l3 == L3::V4 => (2, 4),
        proto::ICMPV6 if p.l3 == L3::V6 => (2, 4),
        _ => return None,
    };
    if !p.l4_ok || end > frame.len() || start + min > end {
        return None;
    }
    let len = (end - start) as u64;
    let pseudo = match p.l3 {
        L3::V4 if p.proto == proto::ICMP => 0,
        L3::V4 => sum16(&frame[l3 + 12..l3 + 20], p.proto as u64 + len),
        L3::V6 => sum16(&frame[l3 + 8..l3 + 40], p.proto as u64 + len),
    };
    Some((start, end, start + field, pseudo))
}

/// Computes and stores the transport checksum (TCP, UDP, ICMP, ICMPv6)
/// of a frame in full. Returns false where the frame has none to set.
pub fn set_l4_checksum(frame: &mut [u8]) -> bool {
    let Ok(p) = parse(frame) else { return false };
    let Some((start, end, field, pseudo)) = l4_span(frame, &p) else {
        return false;
    };
    frame[field..field + 2].fill(0);
    let mut c = !fold(sum16(&frame[start..end], pseudo));
    if c == 0 && p.proto == proto::UDP {
        c = 0xffff;
    }
    frame[field..field + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// Finishes a TCP or UDP checksum that the sending host left to its NIC
/// (Linux's CHECKSUM_PARTIAL, which a packet socket reports as
/// `TP_STATUS_CSUMNOTREADY`): the field holds the pseudo-header's sum, the
/// segment's sum is still to be added. Returns false where the frame has
/// no such checksum.
pub fn finish_partial_checksum(frame: &mut [u8]) -> bool {
    let Ok(p) = parse(frame) else { return false };
    if p.proto != proto::TCP && p.proto != proto::UDP {
        return false;
    }
    let Some((start, end, field, _)) = l4_span(frame, &p) else {
        return false;
    };
    let mut c = !fold(sum16(&frame[start..end], 0));
    if c == 0 && p.proto == proto::UDP {
        c = 0xffff;
    }
    frame[field..field + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// Whether a frame's transport checksum is valid: `None` where it has
/// none that can be checked (UDP over IPv4 without one counts as valid).
pub fn l4_checksum_ok(frame: &[u8]) -> Option<bool> {
    let p = parse(frame).ok()?;
    let (start, end, field, pseudo) = l4_span(frame, &p)?;
    if p.proto == proto::UDP && p.l3 == L3::V4 && frame[field..field + 2] == [0, 0] {
        return Some(true);
    }
    Some(fold(sum16(&frame[start..end], pseudo)) == 0xffff)
}

/// The transport checksum of `seg` (its checksum field zero) with the
/// IPv6 pseudo-header.
pub fn sum6(src: u128, dst: u128, next: u8, seg: &[u8]) -> u16 {
    let s = sum16(&dst.to_be_bytes(), sum16(&src.to_be_bytes(), 0));
    !fold(sum16(seg, s + seg.len() as u64 + next as u64))
}

/// The transport checksum of `seg` with the IPv4 pseudo-header.
pub fn sum4(src: u32, dst: u32, proto: u8, seg: &[u8]) -> u16 {
    let s = sum16(&dst.to_be_bytes(), sum16(&src.to_be_bytes(), 0));
    !fold(sum16(seg, s + seg.len() as u64 + proto as u64))
}
