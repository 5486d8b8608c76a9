//! ARP for IPv4 over Ethernet (RFC 826).
//! Builders return whole frames or packets; parsers take whole frames,
//! never panic and answer `None` for anything malformed.

use super::be16;
use super::ethertype;

/// Bytes of an ARP frame for IPv4 over Ethernet: 42, padded with zeros
/// to Ethernet's shortest frame (without its check sequence).
pub const ARP_FRAME: usize = super::ip::MIN_FRAME;

/// The Ethernet broadcast address.
pub const BROADCAST: [u8; 6] = [0xff; 6];

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
        self.bytes(dst).to_vec()
    }

    /// [`Arp::frame`] in an array: a worker builds a request without
    /// allocating.
    pub fn bytes(&self, dst: [u8; 6]) -> [u8; ARP_FRAME] {
        let mut f = [0u8; ARP_FRAME];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&self.sha);
        f[12..14].copy_from_slice(&ethertype::ARP.to_be_bytes());
        f[14..20].copy_from_slice(&[0, 1, 8, 0, 6, 4]);
        f[20..22].copy_from_slice(&self.op.to_be_bytes());
        f[22..28].copy_from_slice(&self.sha);
        f[28..32].copy_from_slice(&self.spa.to_be_bytes());
        f[32..38].copy_from_slice(&self.tha);
        f[38..42].copy_from_slice(&self.tpa.to_be_bytes());
        f
    }
}
