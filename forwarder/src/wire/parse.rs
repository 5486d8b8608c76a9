//! The parse of one frame into [`Parsed`]: fixed offsets for the frames
//! nearly all traffic is made of, a general walk (VLAN tags, IPv4
//! options, IPv6 extension headers) for the rest.

use super::{be16, ethertype, proto, Parsed, L3};
use crate::reason::DropReason;

/// Parses a frame. Never panics; bad frames give their [`DropReason`].
///
/// ```
/// use forwarder::reason::DropReason;
/// use forwarder::wire::build::{ipv4, L4};
/// use forwarder::wire::{parse, L3};
/// let f = ipv4(0xc000_0201, 0xc633_6402, 64, L4::Udp(5353, 53), 0);
/// let p = parse(&f).unwrap();
/// assert_eq!((p.l3, p.dst, p.dport, p.ttl), (L3::V4, 0xc633_6402, 53, 64));
/// assert_eq!(parse(&f[..20]), Err(DropReason::Truncated));
/// ```
pub fn parse(frame: &[u8]) -> Result<Parsed, DropReason> {
    let mut p = Parsed::default();
    parse_into(frame, &mut p).map(|()| p)
}

/// [`parse`] into a caller's `Parsed` (a burst's array): the result is
/// written in place instead of being returned and copied, which cost more
/// than the parse itself.
// Always inline: with more than one caller (the express way's cold paths
// parse too) it was left out of line in the general way's burst loop, 10
// instructions a packet more (turns, full without the flow cache).
#[inline(always)]
pub fn parse_into(frame: &[u8], p: &mut Parsed) -> Result<(), DropReason> {
    if parse_plain(frame, p) {
        return Ok(());
    }
    parse_tagged(frame, p)
}

/// A frame [`parse_plain`] left: one 802.1Q or 802.1ad tag in front of
/// a plain packet (a VLAN sub-interface's usual) parsed at fixed offsets
/// too, 4 bytes on (the frame from byte 4 has the inner ethertype where
/// a plain frame has its own: the MACs the plain parse skips are the
/// only bytes it reads differently); everything else walked.
#[inline(always)]
fn parse_tagged(frame: &[u8], p: &mut Parsed) -> Result<(), DropReason> {
    let tagged = matches!(frame.get(12..14), Some([0x81, 0x00] | [0x88, 0xa8]));
    if tagged && frame.get(4..).is_some_and(|f| parse_plain(f, p)) {
        p.l3_off += 4;
        p.l4_off += 4;
        return Ok(());
    }
    parse_general(frame, p)
}

/// Whether `h`, a frame of `len` bytes, is plain IPv4: untagged, no
/// options, not a later fragment, its packet inside the frame and long
/// enough for a transport header's ports. The check [`parse_plain`] and
/// [`plain_dst`] share.
#[inline(always)]
fn plain_v4(h: &[u8; 38], len: usize) -> bool {
    if h[12..15] != [0x08, 0x00, 0x45] {
        return false;
    }
    let total = u16::from_be_bytes([h[16], h[17]]) as usize;
    let frag_off = u16::from_be_bytes([h[20], h[21]]) & 0x1fff;
    total >= 24 && 14 + total <= len && frag_off == 0
}

/// Whether `h`, a frame of `len` bytes, is plain IPv6: untagged, straight
/// to a transport header (no extension header the general parse walks),
/// its packet inside the frame. Shared as [`plain_v4`].
#[inline(always)]
fn plain_v6(h: &[u8; 58], len: usize) -> bool {
    if h[12..14] != [0x86, 0xdd] || h[14] >> 4 != 6 {
        return false;
    }
    let payload = u16::from_be_bytes([h[18], h[19]]) as usize;
    payload >= 4
        && 54 + payload <= len
        && !matches!(
            h[20],
            proto::HOPOPT | proto::IPV6_ROUTE | proto::IPV6_OPTS | proto::IPV6_FRAG | proto::AH
        )
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
pub(crate) fn parse_plain(frame: &[u8], p: &mut Parsed) -> bool {
    if let Some(h) = frame.first_chunk::<38>() {
        if plain_v4(h, frame.len()) {
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
                vrf: 0,
            };
            return true;
        }
    }
    if let Some(h) = frame.first_chunk::<58>() {
        if plain_v6(h, frame.len()) {
            let next = h[20];
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
                vrf: 0,
            };
            return true;
        }
    }
    false
}

/// A frame's family and destination, as the express way reads them
/// (see `pipeline::express`): exactly for the frames [`parse_plain`]
/// takes, `None` for every other. It reads only what the route needs
/// (no ports, no source), about half the instructions of the parse; a
/// property test holds the two to the same frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlainDst {
    V4(u32),
    V6(u128),
}

/// [`PlainDst`] of `frame`, or `None` where [`parse_plain`] returns false.
#[inline(always)]
pub fn plain_dst(frame: &[u8]) -> Option<PlainDst> {
    if let Some(h) = frame.first_chunk::<38>() {
        if plain_v4(h, frame.len()) {
            return Some(PlainDst::V4(u32::from_be_bytes([
                h[30], h[31], h[32], h[33],
            ])));
        }
    }
    let h = frame.first_chunk::<58>()?;
    let dst = h.last_chunk::<20>()?.first_chunk::<16>()?;
    plain_v6(h, frame.len()).then(|| PlainDst::V6(u128::from_be_bytes(*dst)))
}

/// The flow of a frame [`plain_dst`] took (`v6` its family): source,
/// destination, ports (or ICMP type and code) and protocol, as
/// [`parse_plain`] writes them into [`Parsed`]: what an ECMP group's
/// member is picked by, read at the plain frame's fixed offsets.
#[inline(always)]
pub fn plain_flow(frame: &[u8], v6: bool) -> Option<(u128, u128, u16, u16, u8)> {
    if v6 {
        let h = frame.first_chunk::<58>()?;
        let (sport, dport, _) = ports(h[20], [h[54], h[55], h[56], h[57]]);
        let (src, dst) = h[22..54].split_at(16);
        let src = u128::from_be_bytes(src.try_into().unwrap_or_default());
        let dst = u128::from_be_bytes(dst.try_into().unwrap_or_default());
        Some((src, dst, sport, dport, h[20]))
    } else {
        let h = frame.first_chunk::<38>()?;
        let (sport, dport, _) = ports(h[23], [h[34], h[35], h[36], h[37]]);
        let src = u32::from_be_bytes([h[26], h[27], h[28], h[29]]) as u128;
        let dst = u32::from_be_bytes([h[30], h[31], h[32], h[33]]) as u128;
        Some((src, dst, sport, dport, h[23]))
    }
}

/// The ports (or ICMP type and code) a transport header's first 4 bytes
/// give for `proto`, and whether the protocol has them: one load from a
/// table of masks and an `and` instead of a branch per protocol (or two
/// masks built from a table of flags, which takes more instructions).
#[inline(always)]
pub(super) fn ports(proto: u8, b: [u8; 4]) -> (u16, u16, bool) {
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
pub fn parse_reference(frame: &[u8]) -> Result<Parsed, DropReason> {
    let mut p = Parsed::default();
    parse_general(frame, &mut p).map(|()| p)
}

/// Every frame [`parse_plain`] leaves: VLAN tags, IPv4 options and
/// fragments, IPv6 extension headers, truncation, ARP, the rest.
fn parse_general(frame: &[u8], p: &mut Parsed) -> Result<(), DropReason> {
    let mut et = be16(frame, 12).ok_or(DropReason::Truncated)?;
    let mut off = 14;
    // Up to two VLAN tags (802.1ad outer, 802.1Q inner).
    for _ in 0..2 {
        if et != ethertype::VLAN && et != ethertype::QINQ {
            break;
        }
        et = be16(frame, off + 2).ok_or(DropReason::Truncated)?;
        off += 4;
    }
    p.l3_off = off as u16;
    p.sport = 0;
    p.dport = 0;
    p.l4_ok = false;
    match et {
        ethertype::IPV4 => {
            let h = frame.get(off..off + 20).ok_or(DropReason::Truncated)?;
            if h[0] >> 4 != 4 {
                return Err(DropReason::Malformed);
            }
            let ihl = (h[0] & 0xf) as usize * 4;
            let total = u16::from_be_bytes([h[2], h[3]]) as usize;
            if ihl < 20 || total < ihl {
                return Err(DropReason::Malformed);
            }
            if frame.len() < off + total.max(ihl) {
                return Err(DropReason::Truncated);
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
            let h = frame.get(off..off + 40).ok_or(DropReason::Truncated)?;
            if h[0] >> 4 != 6 {
                return Err(DropReason::Malformed);
            }
            let payload = u16::from_be_bytes([h[4], h[5]]) as usize;
            let end = off + 40 + payload;
            if frame.len() < end {
                return Err(DropReason::Truncated);
            }
            p.l3 = L3::V6;
            p.ttl = h[7];
            p.src = u128::from_be_bytes(h[8..24].try_into().map_err(|_| DropReason::Truncated)?);
            p.dst = u128::from_be_bytes(h[24..40].try_into().map_err(|_| DropReason::Truncated)?);
            let mut next = h[6];
            let mut at = off + 40;
            let mut later_fragment = false;
            // Skip the common extension headers, at most eight of them.
            for _ in 0..8 {
                match next {
                    proto::HOPOPT | proto::IPV6_ROUTE | proto::IPV6_OPTS => {
                        let x = frame.get(at..at + 2).ok_or(DropReason::Truncated)?;
                        next = x[0];
                        at += (x[1] as usize + 1) * 8;
                    }
                    proto::IPV6_FRAG => {
                        let x = frame.get(at..at + 8).ok_or(DropReason::Truncated)?;
                        next = x[0];
                        later_fragment |= u16::from_be_bytes([x[2], x[3]]) >> 3 != 0;
                        at += 8;
                    }
                    proto::AH => {
                        let x = frame.get(at..at + 2).ok_or(DropReason::Truncated)?;
                        next = x[0];
                        at += (x[1] as usize + 2) * 4;
                    }
                    _ => break,
                }
                if at > end {
                    return Err(DropReason::Malformed);
                }
            }
            p.proto = next;
            p.l4_off = at as u16;
            if !later_fragment {
                transport(frame, p, end);
            }
        }
        ethertype::ARP => return Err(DropReason::Arp),
        _ => return Err(DropReason::UnknownEthertype),
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
