//! Field types of a set, their values, ranges and the prefixes a range
//! expands to.
//!
//! Every field value is held as an unsigned integer of the field's width
//! (`u128` fits the widest, `ipv6_addr`), in the order the bytes appear on
//! the wire: the integer of `192.0.2.1` is `0xc000_0201`. A key presented
//! to a lookup carries each field as those same bytes, big-endian.

use crate::error::excerpt;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The type of one field of a concatenation, named as nftables names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// `ipv4_addr`: 32 bits.
    Ipv4Addr,
    /// `ipv6_addr`: 128 bits.
    Ipv6Addr,
    /// `inet_service`: a transport port, 16 bits.
    InetService,
    /// `inet_proto`: an IP protocol number, 8 bits.
    InetProto,
    /// `ether_addr`: a MAC address, 48 bits.
    EtherAddr,
    /// `mark`: a packet mark, 32 bits.
    Mark,
    /// `icmp_type`: an ICMP message type, 8 bits.
    IcmpType,
    /// `icmpv6_type`: an ICMPv6 message type, 8 bits.
    Icmpv6Type,
    /// `ct_state`: a packet's connection tracking state, one of nft's
    /// bits (invalid 1, established 2, related 4, new 8, untracked 64),
    /// 8 bits (nft's type is 32 bits wide; no state uses the others).
    CtState,
    /// `ifname`: an interface's name, 16 bytes (nft's `IFNAMSIZ`), the
    /// name's bytes then zeros; `"wan*"` is every name that starts with
    /// `wan` (a range).
    Ifname,
    /// `dscp`: the differentiated services code point of an IP header's
    /// traffic class, 6 bits in a byte; nft's names (`cs0`-`cs7`,
    /// `af11`-`af43`, `ef`, `va`, `le`).
    Dscp,
}

impl FieldType {
    /// All field types, for tests and documentation.
    pub const ALL: [FieldType; 11] = [
        FieldType::Ipv4Addr,
        FieldType::Ipv6Addr,
        FieldType::InetService,
        FieldType::InetProto,
        FieldType::EtherAddr,
        FieldType::Mark,
        FieldType::IcmpType,
        FieldType::Icmpv6Type,
        FieldType::CtState,
        FieldType::Ifname,
        FieldType::Dscp,
    ];

    /// The nftables name of the type.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Ipv4Addr => "ipv4_addr",
            FieldType::Ipv6Addr => "ipv6_addr",
            FieldType::InetService => "inet_service",
            FieldType::InetProto => "inet_proto",
            FieldType::EtherAddr => "ether_addr",
            FieldType::Mark => "mark",
            FieldType::IcmpType => "icmp_type",
            FieldType::Icmpv6Type => "icmpv6_type",
            FieldType::CtState => "ct_state",
            FieldType::Ifname => "ifname",
            FieldType::Dscp => "dscp",
        }
    }

    /// Looks a type up by its nftables name.
    pub fn from_name(name: &str) -> Option<FieldType> {
        FieldType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Width of the field in bytes, as it appears in a lookup key.
    pub fn bytes(self) -> usize {
        match self {
            FieldType::Ipv4Addr | FieldType::Mark => 4,
            FieldType::Ipv6Addr | FieldType::Ifname => 16,
            FieldType::InetService => 2,
            FieldType::InetProto | FieldType::IcmpType | FieldType::Icmpv6Type => 1,
            FieldType::CtState | FieldType::Dscp => 1,
            FieldType::EtherAddr => 6,
        }
    }

    /// Width of the field in bits.
    pub fn bits(self) -> u32 {
        self.bytes() as u32 * 8
    }

    /// The largest value of the field.
    pub fn max(self) -> u128 {
        if self == FieldType::Dscp {
            // Six bits of its byte.
            return 63;
        }
        if self.bits() == 128 {
            u128::MAX
        } else {
            (1u128 << self.bits()) - 1
        }
    }

    /// Whether `a/len` prefixes are accepted and printed (address types).
    pub fn has_prefix(self) -> bool {
        matches!(self, FieldType::Ipv4Addr | FieldType::Ipv6Addr)
    }

    /// Parses one value (no range, no prefix) of this type.
    pub fn parse_value(self, s: &str) -> Result<u128, String> {
        let bad = |why: &str| {
            let s = excerpt(s);
            format!("`{s}` is not {} {}: {why}", article(self), self.name())
        };
        if s.is_empty() {
            return Err(bad("empty value"));
        }
        match self {
            FieldType::Ipv4Addr => s
                .parse::<Ipv4Addr>()
                .map(|a| u32::from(a) as u128)
                .map_err(|_| bad("expected a dotted quad such as 192.0.2.1")),
            FieldType::Ipv6Addr => s
                .parse::<Ipv6Addr>()
                .map(u128::from)
                .map_err(|_| bad("expected an address such as 2001:db8::1")),
            FieldType::InetService => match parse_number(s) {
                Some(v) if v <= 0xffff => Ok(v),
                Some(_) => Err(bad("port out of range 0-65535")),
                None => service_by_name(s)
                    .map(u128::from)
                    .ok_or_else(|| bad("unknown service name")),
            },
            FieldType::InetProto => match parse_number(s) {
                Some(v) if v <= 0xff => Ok(v),
                Some(_) => Err(bad("protocol out of range 0-255")),
                None => proto_by_name(s)
                    .map(u128::from)
                    .ok_or_else(|| bad("unknown protocol name")),
            },
            FieldType::IcmpType | FieldType::Icmpv6Type => match parse_number(s) {
                Some(v) if v <= 0xff => Ok(v),
                Some(_) => Err(bad("type out of range 0-255")),
                None => icmp_type_by_name(self == FieldType::Icmpv6Type, s)
                    .map(u128::from)
                    .ok_or_else(|| bad("unknown type name")),
            },
            FieldType::CtState => match parse_number(s) {
                Some(v) if v <= 0xff => Ok(v),
                Some(_) => Err(bad("state out of range 0-255")),
                None => ct_state_by_name(s)
                    .map(u128::from)
                    .ok_or_else(|| bad("known: new, established, related, invalid, untracked")),
            },
            FieldType::Dscp => match parse_number(s) {
                Some(v) if v <= 63 => Ok(v),
                Some(_) => Err(bad("code point out of range 0-63")),
                None => dscp_by_name(s)
                    .map(u128::from)
                    .ok_or_else(|| bad("known: cs0-cs7, af11-af43, ef, va, le, or 0-63")),
            },
            FieldType::Mark => match parse_number(s) {
                Some(v) if v <= 0xffff_ffff => Ok(v),
                Some(_) => Err(bad("mark out of range 0-0xffffffff")),
                None => Err(bad("expected a number")),
            },
            FieldType::Ifname => {
                // Quoted as nft prints it, or bare.
                let n = s
                    .strip_prefix('"')
                    .and_then(|x| x.strip_suffix('"'))
                    .unwrap_or(s);
                if n.is_empty() || n.len() > 15 {
                    return Err(bad("a name of 1 to 15 bytes"));
                }
                if n.bytes()
                    .any(|b| b <= b' ' || b == b'"' || b == b'/' || b == b'*' || b >= 0x7f)
                {
                    return Err(bad(
                        "no spaces, quotes, `/` or `*` (but a final `*`) in a name",
                    ));
                }
                let mut b = [0u8; 16];
                b[..n.len()].copy_from_slice(n.as_bytes());
                Ok(u128::from_be_bytes(b))
            }
            FieldType::EtherAddr => {
                let mut v = 0u128;
                let mut n = 0;
                for part in s.split(':') {
                    if part.is_empty() || part.len() > 2 {
                        return Err(bad("expected six hex octets such as 00:01:02:03:04:05"));
                    }
                    let b = u8::from_str_radix(part, 16)
                        .map_err(|_| bad("expected six hex octets such as 00:01:02:03:04:05"))?;
                    v = (v << 8) | b as u128;
                    n += 1;
                }
                if n != 6 {
                    return Err(bad("expected six hex octets such as 00:01:02:03:04:05"));
                }
                Ok(v)
            }
        }
    }

    /// Parses a field of an element: a value, a prefix `a/len` (address
    /// types) or a range `a-b`, into an inclusive range.
    pub fn parse_range(self, s: &str) -> Result<Range, String> {
        if self == FieldType::Ifname {
            // A name, or `name*`: every name it starts (nft's wildcard).
            let bare = s
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix('"'))
                .unwrap_or(s);
            let Some(stem) = bare.strip_suffix('*') else {
                return self.parse_value(s).map(Range::single);
            };
            if stem.is_empty() {
                return Ok(Range::new(0, u128::MAX));
            }
            let v = self.parse_value(stem)?;
            // The name's own bytes (`"wan"*` is `wan*` too).
            let len = v.to_be_bytes().iter().position(|&b| b == 0).unwrap_or(16);
            return Ok(Range::new(v, v | host_mask(128, 8 * len as u32)));
        }
        if let Some((addr, len)) = s.split_once('/') {
            if !self.has_prefix() {
                return Err(format!(
                    "`{}`: prefixes are only allowed for address fields, not {}",
                    excerpt(s),
                    self.name()
                ));
            }
            let v = self.parse_value(addr)?;
            let len: u32 = len.parse().map_err(|_| {
                format!(
                    "`{}`: prefix length `{}` is not a number",
                    excerpt(s),
                    excerpt(len)
                )
            })?;
            if len > self.bits() {
                return Err(format!(
                    "`{}`: prefix length {len} is longer than the {}-bit field",
                    excerpt(s),
                    self.bits()
                ));
            }
            let host = host_mask(self.bits(), len);
            if v & host != 0 {
                return Err(format!(
                    "`{}`: address has host bits set (the network is {}/{len})",
                    excerpt(s),
                    self.format_value(v & !host)
                ));
            }
            return Ok(Range::new(v, v | host));
        }
        // Names may hold a `-` (`echo-request`, `ftp-data`): a whole
        // value first, then the first `-` whose two sides are values.
        let whole = self.parse_value(s);
        if let Ok(v) = whole {
            return Ok(Range::new(v, v));
        }
        let Some(first) = s.find('-') else {
            return whole.map(Range::single);
        };
        let at = s
            .match_indices('-')
            .map(|(i, _)| i)
            .find(|&i| self.parse_value(&s[..i]).is_ok() && self.parse_value(&s[i + 1..]).is_ok())
            .unwrap_or(first);
        // No range starts with a value: the whole is what is wrong
        // (`nd-neighbour-solicit`), not its first word.
        let Ok(start) = self.parse_value(&s[..at]) else {
            return whole.map(Range::single);
        };
        let end = self.parse_value(&s[at + 1..])?;
        if start > end {
            return Err(format!(
                "`{}`: range start is greater than its end",
                excerpt(s)
            ));
        }
        Ok(Range::new(start, end))
    }

    /// Prints one value the way `nft -n` does.
    pub fn format_value(self, v: u128) -> String {
        ValueDisplay(self, v).to_string()
    }

    /// Prints a range the way `nft -n list set` does: a single value alone,
    /// an address range that is exactly a prefix as `a/len`, anything else
    /// as `a-b`.
    pub fn format_range(self, r: Range) -> String {
        RangeDisplay(self, r).to_string()
    }

    /// Writes the field's value `v` into `out` (exactly [`FieldType::bytes`]
    /// bytes), big-endian, as a key carries it.
    pub fn write_key(self, v: u128, out: &mut [u8]) {
        let n = self.bytes();
        out[..n].copy_from_slice(&v.to_be_bytes()[16 - n..]);
    }

    /// Reads the field's value from key bytes.
    pub fn read_key(self, key: &[u8]) -> u128 {
        let mut b = [0u8; 16];
        let n = self.bytes();
        b[16 - n..].copy_from_slice(&key[..n]);
        u128::from_be_bytes(b)
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn article(t: FieldType) -> &'static str {
    match t {
        FieldType::Ipv4Addr | FieldType::Ipv6Addr | FieldType::InetService => "an",
        FieldType::InetProto | FieldType::EtherAddr => "an",
        FieldType::IcmpType | FieldType::Icmpv6Type => "an",
        FieldType::Mark | FieldType::CtState => "a",
        FieldType::Ifname => "an",
        FieldType::Dscp => "a",
    }
}

/// The mask of the bits after a prefix of `len` bits, in a `bits`-wide field.
pub(crate) fn host_mask(bits: u32, len: u32) -> u128 {
    let host = bits - len;
    if host == 0 {
        0
    } else if host >= 128 {
        u128::MAX
    } else {
        (1u128 << host) - 1
    }
}

fn parse_number(s: &str) -> Option<u128> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if hex.is_empty() || hex.len() > 32 {
            return None;
        }
        return u128::from_str_radix(hex, 16).ok();
    }
    if !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 38 {
        return None;
    }
    s.parse().ok()
}

/// Protocol names nft accepts for `inet_proto` (from /etc/protocols).
const PROTOCOLS: &[(&str, u8)] = &[
    ("hopopt", 0),
    ("icmp", 1),
    ("igmp", 2),
    ("ipencap", 4),
    ("tcp", 6),
    ("egp", 8),
    ("igp", 9),
    ("udp", 17),
    ("dccp", 33),
    ("ipv6", 41),
    ("ipv6-route", 43),
    ("ipv6-frag", 44),
    ("rsvp", 46),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("icmpv6", 58),
    ("ipv6-icmp", 58),
    ("ipv6-nonxt", 59),
    ("ipv6-opts", 60),
    ("ospf", 89),
    ("pim", 103),
    ("vrrp", 112),
    ("l2tp", 115),
    ("sctp", 132),
    ("udplite", 136),
    ("mpls-in-ip", 137),
];

/// Common service names for `inet_service` (from /etc/services).
const SERVICES: &[(&str, u16)] = &[
    ("ftp-data", 20),
    ("ftp", 21),
    ("ssh", 22),
    ("telnet", 23),
    ("smtp", 25),
    ("domain", 53),
    ("dns", 53),
    ("bootps", 67),
    ("bootpc", 68),
    ("tftp", 69),
    ("http", 80),
    ("kerberos", 88),
    ("pop3", 110),
    ("ntp", 123),
    ("imap", 143),
    ("snmp", 161),
    ("snmp-trap", 162),
    ("bgp", 179),
    ("ldap", 389),
    ("https", 443),
    ("submission", 587),
    ("ldaps", 636),
    ("imaps", 993),
    ("pop3s", 995),
    ("openvpn", 1194),
    ("mysql", 3306),
    ("domain-s", 853),
    ("postgresql", 5432),
    ("http-alt", 8080),
];

/// ICMP type names nft accepts for `icmp_type`.
const ICMP_TYPES: &[(&str, u8)] = &[
    ("echo-reply", 0),
    ("destination-unreachable", 3),
    ("source-quench", 4),
    ("redirect", 5),
    ("echo-request", 8),
    ("router-advertisement", 9),
    ("router-solicitation", 10),
    ("time-exceeded", 11),
    ("parameter-problem", 12),
    ("timestamp-request", 13),
    ("timestamp-reply", 14),
    ("info-request", 15),
    ("info-reply", 16),
    ("address-mask-request", 17),
    ("address-mask-reply", 18),
];

/// ICMPv6 type names nft accepts for `icmpv6_type`.
const ICMPV6_TYPES: &[(&str, u8)] = &[
    ("destination-unreachable", 1),
    ("packet-too-big", 2),
    ("time-exceeded", 3),
    ("parameter-problem", 4),
    ("echo-request", 128),
    ("echo-reply", 129),
    ("mld-listener-query", 130),
    ("mld-listener-report", 131),
    ("mld-listener-done", 132),
    ("mld-listener-reduction", 132),
    ("nd-router-solicit", 133),
    ("nd-router-advert", 134),
    ("nd-neighbor-solicit", 135),
    ("nd-neighbor-advert", 136),
    ("nd-redirect", 137),
    ("router-renumbering", 138),
    ("ind-neighbor-solicit", 141),
    ("ind-neighbor-advert", 142),
    ("mld2-listener-report", 143),
];

/// nft's names of connection tracking states and their bits.
pub const CT_STATES: &[(&str, u8)] = &[
    ("invalid", 1),
    ("established", 2),
    ("related", 4),
    ("new", 8),
    ("untracked", 64),
];

/// nft's `dscp` names and their code points.
pub const DSCPS: &[(&str, u8)] = &[
    ("cs0", 0),
    ("le", 1),
    ("cs1", 8),
    ("af11", 10),
    ("af12", 12),
    ("af13", 14),
    ("cs2", 16),
    ("af21", 18),
    ("af22", 20),
    ("af23", 22),
    ("cs3", 24),
    ("af31", 26),
    ("af32", 28),
    ("af33", 30),
    ("cs4", 32),
    ("af41", 34),
    ("af42", 36),
    ("af43", 38),
    ("cs5", 40),
    ("va", 44),
    ("ef", 46),
    ("cs6", 48),
    ("cs7", 56),
];

/// The code point of a `dscp` name.
pub fn dscp_by_name(s: &str) -> Option<u8> {
    DSCPS.iter().find(|(n, _)| *n == s).map(|&(_, v)| v)
}

/// The bit of a `ct_state` name.
pub fn ct_state_by_name(s: &str) -> Option<u8> {
    CT_STATES.iter().find(|(n, _)| *n == s).map(|&(_, v)| v)
}

/// The type number for an nft ICMP (`v6`: ICMPv6) type name.
pub fn icmp_type_by_name(v6: bool, s: &str) -> Option<u8> {
    let names = if v6 { ICMPV6_TYPES } else { ICMP_TYPES };
    names.iter().find(|(n, _)| *n == s).map(|&(_, v)| v)
}

/// The protocol number for an nft protocol name.
pub fn proto_by_name(s: &str) -> Option<u8> {
    PROTOCOLS.iter().find(|(n, _)| *n == s).map(|&(_, v)| v)
}

/// The port for an nft service name.
pub fn service_by_name(s: &str) -> Option<u16> {
    SERVICES.iter().find(|(n, _)| *n == s).map(|&(_, v)| v)
}

struct ValueDisplay(FieldType, u128);

impl fmt::Display for ValueDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.1;
        match self.0 {
            FieldType::Ipv4Addr => write!(f, "{}", Ipv4Addr::from(v as u32)),
            // std's Display follows RFC 5952 (lowercase, longest zero run
            // compressed, the first on a tie, no single-group compression).
            FieldType::Ipv6Addr => write!(f, "{}", Ipv6Addr::from(v)),
            FieldType::InetService | FieldType::InetProto => write!(f, "{v}"),
            FieldType::IcmpType | FieldType::Icmpv6Type => write!(f, "{v}"),
            FieldType::CtState => match CT_STATES.iter().find(|s| s.1 as u128 == v) {
                Some((name, _)) => f.write_str(name),
                None => write!(f, "{v}"),
            },
            FieldType::Mark => write!(f, "0x{v:08x}"),
            FieldType::Dscp => match DSCPS.iter().find(|s| s.1 as u128 == v) {
                Some((name, _)) => f.write_str(name),
                None => write!(f, "0x{v:02x}"),
            },
            FieldType::Ifname => {
                let b = v.to_be_bytes();
                let n = b.iter().position(|&x| x == 0).unwrap_or(16);
                write!(f, "\"{}\"", String::from_utf8_lossy(&b[..n]))
            }
            FieldType::EtherAddr => {
                let b = v.to_be_bytes();
                write!(
                    f,
                    "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                    b[10], b[11], b[12], b[13], b[14], b[15]
                )
            }
        }
    }
}

struct RangeDisplay(FieldType, Range);

impl fmt::Display for RangeDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, r) = (self.0, self.1);
        if r.start == r.end {
            return write!(f, "{}", ValueDisplay(t, r.start));
        }
        if t == FieldType::Ifname {
            // A wildcard: the stem's bytes, then all zeros to all ones.
            if let Some(len) = r.prefix_len(128).filter(|l| l % 8 == 0) {
                let b = r.start.to_be_bytes();
                let stem = &b[..len as usize / 8];
                if !stem.contains(&0) {
                    return write!(f, "\"{}*\"", String::from_utf8_lossy(stem));
                }
            }
        }
        if t.has_prefix() {
            if let Some(len) = r.prefix_len(t.bits()) {
                return write!(f, "{}/{len}", ValueDisplay(t, r.start));
            }
        }
        write!(f, "{}-{}", ValueDisplay(t, r.start), ValueDisplay(t, r.end))
    }
}

/// An inclusive range of field values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Range {
    /// First value in the range.
    pub start: u128,
    /// Last value in the range (inclusive).
    pub end: u128,
}

impl Range {
    /// A range `start..=end`.
    pub fn new(start: u128, end: u128) -> Range {
        Range { start, end }
    }

    /// A range holding one value.
    pub fn single(v: u128) -> Range {
        Range { start: v, end: v }
    }

    /// Whether `v` lies in the range.
    pub fn contains(&self, v: u128) -> bool {
        self.start <= v && v <= self.end
    }

    /// Whether two ranges share a value.
    pub fn intersects(&self, o: &Range) -> bool {
        self.start <= o.end && o.start <= self.end
    }

    /// If the range is exactly one prefix of a `bits`-wide field, its length.
    pub fn prefix_len(&self, bits: u32) -> Option<u32> {
        let span = self.end.wrapping_sub(self.start);
        // A prefix spans 2^k - 1 and starts on a 2^k boundary.
        if span.wrapping_add(1) & span != 0 {
            return None;
        }
        if self.start & span != 0 {
            return None;
        }
        let host = 128 - span.leading_zeros();
        (host <= bits).then(|| bits - host)
    }

    /// Expands the range into the fewest prefixes covering exactly it, in
    /// ascending order: at most `2 * bits - 2` of them (`bits` > 1).
    pub fn to_prefixes(&self, bits: u32) -> Vec<Prefix> {
        let mut out = Vec::new();
        let mut a = self.start;
        loop {
            // The largest aligned block starting at `a` that stays <= end.
            let align = if a == 0 { 128 } else { a.trailing_zeros() };
            let mut host = align.min(bits);
            loop {
                let last = if host >= 128 {
                    u128::MAX
                } else {
                    a | ((1u128 << host) - 1)
                };
                if last <= self.end {
                    out.push(Prefix {
                        value: a,
                        len: bits - host,
                    });
                    if last == self.end {
                        return out;
                    }
                    a = last + 1;
                    break;
                }
                host -= 1;
            }
        }
    }
}

/// A prefix of a field: the values whose first `len` bits equal `value`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix {
    /// The prefix's first value (host bits clear).
    pub value: u128,
    /// Number of leading bits fixed by the prefix.
    pub len: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_and_print() {
        let t = FieldType::Ipv4Addr;
        assert_eq!(t.parse_value("192.0.2.1").unwrap(), 0xc000_0201);
        assert_eq!(t.format_value(0xc000_0201), "192.0.2.1");
        let t = FieldType::Ipv6Addr;
        let v = t.parse_value("2001:DB8:0:0:1:0:0:1").unwrap();
        assert_eq!(t.format_value(v), "2001:db8::1:0:0:1");
        assert_eq!(FieldType::InetProto.parse_value("tcp").unwrap(), 6);
        assert_eq!(FieldType::InetProto.parse_value("17").unwrap(), 17);
        assert_eq!(FieldType::InetService.parse_value("https").unwrap(), 443);
        assert!(FieldType::InetService.parse_value("65536").is_err());
        assert!(FieldType::InetProto.parse_value("256").is_err());
        let m = FieldType::EtherAddr
            .parse_value("00:01:02:0A:0b:FF")
            .unwrap();
        assert_eq!(FieldType::EtherAddr.format_value(m), "00:01:02:0a:0b:ff");
        assert!(FieldType::EtherAddr.parse_value("00:01:02:03:04").is_err());
        assert_eq!(FieldType::Mark.parse_value("0x10").unwrap(), 16);
        assert_eq!(FieldType::Mark.format_value(16), "0x00000010");
    }

    #[test]
    fn ranges_print_as_nft_does() {
        let t = FieldType::Ipv4Addr;
        let r = t.parse_range("192.0.2.0-192.0.2.255").unwrap();
        assert_eq!(t.format_range(r), "192.0.2.0/24");
        let r = t.parse_range("192.0.2.0-192.0.2.254").unwrap();
        assert_eq!(t.format_range(r), "192.0.2.0-192.0.2.254");
        let r = t.parse_range("0.0.0.0/0").unwrap();
        assert_eq!(t.format_range(r), "0.0.0.0/0");
        let r = t.parse_range("192.0.2.1/32").unwrap();
        assert_eq!(t.format_range(r), "192.0.2.1");
        let t = FieldType::Ipv6Addr;
        let r = t.parse_range("::/0").unwrap();
        assert_eq!(r, Range::new(0, u128::MAX));
        assert_eq!(t.format_range(r), "::/0");
        let p = FieldType::InetService;
        let r = p.parse_range("1024-2047").unwrap();
        assert_eq!(p.format_range(r), "1024-2047");
    }

    #[test]
    fn bad_ranges_say_why() {
        let t = FieldType::Ipv4Addr;
        assert!(t
            .parse_range("192.0.2.9-192.0.2.1")
            .unwrap_err()
            .contains("greater"));
        assert!(t
            .parse_range("192.0.2.0/33")
            .unwrap_err()
            .contains("longer"));
        assert!(t
            .parse_range("192.0.2.1/24")
            .unwrap_err()
            .contains("host bits"));
        assert!(FieldType::InetService
            .parse_range("80/4")
            .unwrap_err()
            .contains("only allowed"));
    }

    #[test]
    fn prefix_expansion_is_minimal_and_exact() {
        for bits in [8u32, 16] {
            let max = (1u128 << bits) - 1;
            for (a, b) in [(0, max), (1, max - 1), (5, 5), (0, 0), (max, max), (3, 200)] {
                let r = Range::new(a, b);
                let ps = r.to_prefixes(bits);
                assert!(ps.len() as u32 <= 2 * bits);
                let mut next = a;
                for p in &ps {
                    assert_eq!(p.value, next);
                    next = p.value + (1u128 << (bits - p.len));
                }
                assert_eq!(next, b + 1);
            }
        }
        assert_eq!(Range::new(0, u128::MAX).to_prefixes(128).len(), 1);
        assert_eq!(Range::new(1, u128::MAX - 1).to_prefixes(128).len(), 254);
    }
}
