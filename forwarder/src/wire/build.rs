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

/// The MACs every built frame carries (destination, source).
const MACS: ([u8; 6], [u8; 6]) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);

/// An Ethernet + IPv4 frame with valid header and transport checksums,
/// padded with `payload` zero bytes.
pub fn ipv4(src: u32, dst: u32, ttl: u8, l4: L4, payload: usize) -> Vec<u8> {
    let (proto, mut t) = l4_bytes(l4, false);
    t.resize(t.len() + payload, 0);
    let mut f = ip::frame(
        MACS.0,
        MACS.1,
        ethertype::IPV4,
        &ip::ipv4(src, dst, proto, ttl, &t),
    );
    set_l4_checksum(&mut f);
    f
}

/// An Ethernet + IPv6 frame with a valid transport checksum.
pub fn ipv6(src: u128, dst: u128, hop_limit: u8, l4: L4, payload: usize) -> Vec<u8> {
    let (proto, mut t) = l4_bytes(l4, true);
    t.resize(t.len() + payload, 0);
    let p = ip::ipv6(src, dst, proto, hop_limit, &t);
    let mut f = ip::frame(MACS.0, MACS.1, ethertype::IPV6, &p);
    set_l4_checksum(&mut f);
    f
}
