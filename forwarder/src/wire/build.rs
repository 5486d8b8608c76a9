//! Builders of well-formed frames, for the synthetic port, the tests
//! and the benchmarks: never on a forwarded packet's path.

use super::*;

/// Transport of a built frame.
#[derive(Clone, Copy, Debug)]
pub enum L4 {
    /// TCP with ports.
    Tcp(u16, u16),
    /// UDP with ports.
    Udp(u16, u16),
    /// ICMP / ICMPv6 with type and code.
    Icmp(u8, u8),
}

fn l4_bytes(l4: L4, v6: bool) -> (u8, Vec<u8>) {
    match l4 {
        L4::Tcp(s, d) => {
            let mut t = vec![0u8; 20];
            t[0..2].copy_from_slice(&s.to_be_bytes());
            t[2..4].copy_from_slice(&d.to_be_bytes());
            t[12] = 5 << 4;
            (proto::TCP, t)
        }
        L4::Udp(s, d) => {
            let mut u = vec![0u8; 8];
            u[0..2].copy_from_slice(&s.to_be_bytes());
            u[2..4].copy_from_slice(&d.to_be_bytes());
            u[4..6].copy_from_slice(&8u16.to_be_bytes());
            (proto::UDP, u)
        }
        L4::Icmp(t, c) => (
            if v6 { proto::ICMPV6 } else { proto::ICMP },
            vec![t, c, 0, 0, 0, 0, 0, 0],
        ),
    }
}

/// An Ethernet + IPv4 frame with valid header and transport checksums,
/// padded with `payload` zero bytes.
pub fn ipv4(src: u32, dst: u32, ttl: u8, l4: L4, payload: usize) -> Vec<u8> {
    let (proto, t) = l4_bytes(l4, false);
    let total = 20 + t.len() + payload;
    let mut f = vec![0u8; 14 + total];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&ethertype::IPV4.to_be_bytes());
    let h = &mut f[14..34];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    h[8] = ttl;
    h[9] = proto;
    h[12..16].copy_from_slice(&src.to_be_bytes());
    h[16..20].copy_from_slice(&dst.to_be_bytes());
    let c = checksum(h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    f[34..34 + t.len()].copy_from_slice(&t);
    set_l4_checksum(&mut f);
    f
}

/// An Ethernet + IPv6 frame with a valid transport checksum.
pub fn ipv6(src: u128, dst: u128, hop_limit: u8, l4: L4, payload: usize) -> Vec<u8> {
    let (proto, t) = l4_bytes(l4, true);
    let plen = t.len() + payload;
    let mut f = vec![0u8; 14 + 40 + plen];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&ethertype::IPV6.to_be_bytes());
    let h = &mut f[14..54];
    h[0] = 0x60;
    h[4..6].copy_from_slice(&(plen as u16).to_be_bytes());
    h[6] = proto;
    h[7] = hop_limit;
    h[8..24].copy_from_slice(&src.to_be_bytes());
    h[24..40].copy_from_slice(&dst.to_be_bytes());
    f[54..54 + t.len()].copy_from_slice(&t);
    set_l4_checksum(&mut f);
    f
}
