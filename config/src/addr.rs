//! Addresses, prefixes and MACs as the configuration writes them, and
//! as the FIB keys them.

use matcher::excerpt;
use matcher::field::FieldType;
use std::net::IpAddr;

/// One of a port's addresses: the address and its network's prefix
/// length (`192.0.2.1/24`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortAddress {
    /// The address.
    pub ip: IpAddr,
    /// Its network's prefix length.
    pub len: u32,
}

impl PortAddress {
    /// Whether it is IPv6.
    pub fn v6(&self) -> bool {
        self.ip.is_ipv6()
    }

    /// The address as the FIB keys it (IPv4 in the low 32 bits).
    pub fn bits(&self) -> u128 {
        ip_bits(self.ip)
    }

    /// Its network: the address with the host bits clear.
    pub fn network(&self) -> u128 {
        let w = if self.v6() { 128 } else { 32 };
        let host = if self.len >= w {
            0
        } else {
            (u128::MAX >> (128 - w)) >> self.len
        };
        self.bits() & !host
    }

    /// Whether `ip` is on its network.
    pub fn covers(&self, ip: IpAddr) -> bool {
        ip.is_ipv6() == self.v6() && PortAddress { ip, len: self.len }.network() == self.network()
    }
}

/// An address as the FIB keys it: IPv4 in the low 32 bits.
pub fn ip_bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u32::from(a) as u128,
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The IPv6 link-local address a MAC gives (modified EUI-64, RFC 4291
/// appendix A).
pub fn link_local(mac: [u8; 6]) -> std::net::Ipv6Addr {
    let m = mac;
    std::net::Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        m[0] ^ 2,
        m[1],
        m[2],
        0xff,
        0xfe,
        m[3],
        m[4],
        m[5],
    ])
}

pub(crate) fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let v = FieldType::EtherAddr.parse_value(s)?;
    let b = v.to_be_bytes();
    Ok([b[10], b[11], b[12], b[13], b[14], b[15]])
}

/// A port's address: `192.0.2.1/24`, `2001:db8::1/64` (a host address
/// with its network's length; neither a network nor a group address).
pub(crate) fn port_address(s: &str) -> Result<PortAddress, String> {
    let (a, len) = s.split_once('/').ok_or_else(|| {
        format!(
            "`{}` is not an address with its prefix length (192.0.2.1/24)",
            excerpt(s)
        )
    })?;
    let ip: IpAddr = a
        .parse()
        .map_err(|_| format!("`{}` is not an IP address", excerpt(a)))?;
    let max = if ip.is_ipv6() { 128 } else { 32 };
    let len: u32 = match len.parse() {
        Ok(l) if l <= max => l,
        _ => {
            return Err(format!(
                "`{}`: the prefix length must be 0-{max}",
                excerpt(s)
            ))
        }
    };
    if ip.is_multicast() || ip.is_unspecified() || ip == IpAddr::V4(std::net::Ipv4Addr::BROADCAST) {
        return Err(format!("`{}` cannot be a port's address", excerpt(a)));
    }
    Ok(PortAddress { ip, len })
}

pub fn parse_prefix(s: &str) -> Result<(bool, u128, u32), String> {
    let (addr, len) = s
        .split_once('/')
        .ok_or_else(|| format!("`{}` is not a prefix (address/length)", excerpt(s)))?;
    let (v6, t) = if addr.contains(':') {
        (true, FieldType::Ipv6Addr)
    } else {
        (false, FieldType::Ipv4Addr)
    };
    let r = t.parse_range(&format!("{addr}/{len}"))?;
    let len = r
        .prefix_len(t.bits())
        .ok_or_else(|| format!("`{}` is not a prefix", excerpt(s)))?;
    Ok((v6, r.start, len))
}

/// A prefix of a route file: `192.0.2.0/24`, `2001:db8::/32`, host bits
/// clear.
pub(crate) fn fast_prefix(s: &str) -> Result<(bool, u128, u32), String> {
    let (addr, len) = s
        .split_once('/')
        .ok_or_else(|| format!("`{}` is not a prefix (address/length)", excerpt(s)))?;
    let len: u32 = len
        .parse()
        .map_err(|_| format!("`{}`: bad prefix length `{}`", excerpt(s), excerpt(len)))?;
    let (v6, value, bits) = if addr.contains(':') {
        let a: std::net::Ipv6Addr = addr
            .parse()
            .map_err(|_| format!("`{}` is not an IPv6 address", excerpt(addr)))?;
        (true, u128::from(a), 128)
    } else {
        let a: std::net::Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("`{}` is not an IPv4 address", excerpt(addr)))?;
        (false, u32::from(a) as u128, 32)
    };
    if len > bits {
        return Err(format!(
            "`{}`: a prefix length is at most {bits}",
            excerpt(s)
        ));
    }
    let host = if len == bits {
        0
    } else {
        (u128::MAX >> (128 - bits)) >> len
    };
    if value & host != 0 {
        return Err(format!("`{}` has host bits set", excerpt(s)));
    }
    Ok((v6, value, len))
}
