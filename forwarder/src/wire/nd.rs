//! Neighbour discovery's solicitations and advertisements (RFC 4861).
//! Builders return whole frames or packets; parsers take whole frames,
//! never panic and answer `None` for anything malformed.

use super::icmp::{self, icmp6_message};
use super::ip::{ether, ipv6, ipv6_parts};
use super::{ethertype, proto, sum6};

/// The solicited-node multicast address of `a` (RFC 4291 2.7.1).
pub fn solicited_node(a: u128) -> u128 {
    0xff02_0000_0000_0000_0000_0001_ff00_0000 | (a & 0xff_ffff)
}

/// The Ethernet address of an IPv6 multicast group (RFC 2464 7).
pub fn multicast_mac(group: u128) -> [u8; 6] {
    let b = group.to_be_bytes();
    [0x33, 0x33, b[12], b[13], b[14], b[15]]
}

/// Bytes of a neighbour solicitation's frame (with the source
/// link-layer option).
pub const NS_FRAME: usize = 14 + 40 + 24 + 8;

/// A neighbour solicitation for `target` from `src` (with our MAC as the
/// source link-layer option), to `dst`: the target's solicited-node group
/// when resolving, the neighbour itself when probing.
pub fn ns(src: u128, dst: u128, target: u128, mac: [u8; 6], dst_mac: [u8; 6]) -> Vec<u8> {
    ns_bytes(src, dst, target, mac, dst_mac).to_vec()
}

/// [`ns`] in an array: a worker builds a solicitation without
/// allocating.
pub fn ns_bytes(
    src: u128,
    dst: u128,
    target: u128,
    mac: [u8; 6],
    dst_mac: [u8; 6],
) -> [u8; NS_FRAME] {
    let mut f = [0u8; NS_FRAME];
    f[..6].copy_from_slice(&dst_mac);
    f[6..12].copy_from_slice(&mac);
    f[12..14].copy_from_slice(&ethertype::IPV6.to_be_bytes());
    let (ip, m) = f[14..].split_at_mut(40);
    ip[0] = 0x60;
    ip[4..6].copy_from_slice(&(m.len() as u16).to_be_bytes());
    ip[6] = proto::ICMPV6;
    ip[7] = 255;
    ip[8..24].copy_from_slice(&src.to_be_bytes());
    ip[24..40].copy_from_slice(&dst.to_be_bytes());
    m[0] = icmp::v6::NS;
    m[8..24].copy_from_slice(&target.to_be_bytes());
    m[24..26].copy_from_slice(&[1, 1]);
    m[26..32].copy_from_slice(&mac);
    let c = sum6(src, dst, proto::ICMPV6, m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    f
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
    let m = icmp6_message(src, dst, icmp::v6::NA, 0, [flags, 0, 0, 0], &body);
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
    /// [`icmp::v6::NS`] or [`icmp::v6::NA`].
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
        if !matches!(ty, icmp::v6::NS | icmp::v6::NA) || code != 0 || sum6(src, dst, next, m) != 0 {
            return None;
        }
        let target = u128::from_be_bytes(m[8..24].try_into().ok()?);
        if target >> 120 == 0xff {
            return None;
        }
        let want = if ty == icmp::v6::NS { 1 } else { 2 };
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
