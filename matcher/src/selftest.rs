//! The set types and entries of the kernel selftest `nft_concat_range.sh`,
//! shared by the correctness tests and the benchmark.
//!
//! Entries are generated as the selftest does: one integer range
//! `start..=end` per entry, mapped into every ranged field (addresses from
//! 10.0.0.5 or 2001:db8::, ports, MAC addresses), range sizes growing by one
//! from entry to entry with a gap of one less than the size after each, and
//! the protocol fixed (udp). Range sizes restart at 1 when the entries
//! would otherwise run out of the narrowest field (16-bit ports), so that
//! entries never overlap.

use crate::field::{FieldType, Range};
use crate::syntax::{Element, SetDecl};

/// The seven set types of the selftest's performance table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// `ipv4_addr . inet_service`
    NetPort,
    /// `inet_service . ipv4_addr`
    PortNet,
    /// `ipv6_addr . inet_service`
    Net6Port,
    /// `inet_service . inet_proto`
    PortProto,
    /// `ipv6_addr . inet_service . ether_addr`
    Net6PortMac,
    /// `ipv6_addr . inet_service . ether_addr . inet_proto`
    Net6PortMacProto,
    /// `ipv4_addr . ether_addr`
    NetMac,
}

/// The protocol every selftest entry carries.
pub const PROTO: u128 = 17;

impl Case {
    /// All cases, in the selftest's order.
    pub const ALL: [Case; 7] = [
        Case::NetPort,
        Case::PortNet,
        Case::Net6Port,
        Case::PortProto,
        Case::Net6PortMac,
        Case::Net6PortMacProto,
        Case::NetMac,
    ];

    /// The case's name as the selftest prints it (`net6,port,mac`).
    pub fn name(self) -> &'static str {
        match self {
            Case::NetPort => "net,port",
            Case::PortNet => "port,net",
            Case::Net6Port => "net6,port",
            Case::PortProto => "port,proto",
            Case::Net6PortMac => "net6,port,mac",
            Case::Net6PortMacProto => "net6,port,mac,proto",
            Case::NetMac => "net,mac",
        }
    }

    /// Looks a case up by name.
    pub fn from_name(s: &str) -> Option<Case> {
        Case::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Entries in the selftest's performance table.
    pub fn perf_entries(self) -> usize {
        match self {
            Case::NetPort | Case::Net6Port | Case::Net6PortMacProto | Case::NetMac => 1000,
            Case::PortNet => 100,
            Case::PortProto => 30000,
            Case::Net6PortMac => 10,
        }
    }

    /// The field types.
    pub fn fields(self) -> Vec<FieldType> {
        use FieldType::*;
        match self {
            Case::NetPort => vec![Ipv4Addr, InetService],
            Case::PortNet => vec![InetService, Ipv4Addr],
            Case::Net6Port => vec![Ipv6Addr, InetService],
            Case::PortProto => vec![InetService, InetProto],
            Case::Net6PortMac => vec![Ipv6Addr, InetService, EtherAddr],
            Case::Net6PortMacProto => vec![Ipv6Addr, InetService, EtherAddr, InetProto],
            Case::NetMac => vec![Ipv4Addr, EtherAddr],
        }
    }

    /// The set's declaration.
    pub fn decl(self) -> SetDecl {
        SetDecl::new(self.fields(), None).expect("selftest types are valid")
    }

    /// `count` entries, as integer ranges `start..=end` (see the module doc).
    pub fn ranges(self, count: usize) -> Vec<(u128, u128)> {
        let has_port = self.fields().contains(&FieldType::InetService);
        let space: u128 = if has_port { 65535 } else { 1 << 31 };
        // The largest cycle of range sizes that fits the narrowest field.
        let mut cycle = count.max(1) as u128;
        while cycle > 1 && used(count as u128, cycle) > space {
            cycle -= 1;
        }
        let mut out = Vec::with_capacity(count);
        let mut start: u128 = 1;
        for i in 0..count as u128 {
            let size = 1 + i % cycle;
            let end = start + size;
            out.push((start, end));
            start = end + size;
        }
        out
    }

    /// `count` entries as elements.
    pub fn entries(self, count: usize) -> Vec<Element> {
        self.ranges(count)
            .into_iter()
            .map(|(s, e)| self.element(s, e))
            .collect()
    }

    /// The element for the integer range `s..=e`.
    pub fn element(self, s: u128, e: u128) -> Element {
        let key = self
            .fields()
            .into_iter()
            .map(|t| match t {
                FieldType::InetProto => Range::single(PROTO),
                _ => Range::new(map_value(t, s), map_value(t, e)),
            })
            .collect();
        Element {
            key,
            data: None,
            priority: None,
            timeout: None,
            expires: None,
        }
    }

    /// The key for integer `n` in every ranged field (the protocol fixed).
    pub fn key_values(self, n: u128) -> Vec<u128> {
        self.fields()
            .into_iter()
            .map(|t| match t {
                FieldType::InetProto => PROTO,
                _ => map_value(t, n),
            })
            .collect()
    }
}

/// The integer space `count` entries use with sizes cycling through
/// `1..=cycle`: each entry spans `size + 1` values plus a gap of `size - 1`.
fn used(count: u128, cycle: u128) -> u128 {
    let full = count / cycle;
    let rest = count % cycle;
    // The sum of 2s over s = 1..=c is c^2 + c.
    let span = |c: u128| c * c + c;
    1 + full * span(cycle) + span(rest)
}

/// Maps the selftest's integer into a field.
pub fn map_value(t: FieldType, n: u128) -> u128 {
    match t {
        FieldType::Ipv4Addr => 0x0a00_0005 + n,
        FieldType::Ipv6Addr => (0x2001_0db8u128 << 96) + n,
        FieldType::InetService => n,
        FieldType::InetProto | FieldType::IcmpType | FieldType::Icmpv6Type => n & 0xff,
        FieldType::CtState => n & 0xff,
        FieldType::Dscp => n & 0x3f,
        FieldType::EtherAddr => 0x0001_0000_0000 + n,
        FieldType::Mark => 0x100 + n,
        // `eth0`, `eth1`, ...: a digit after `eth`.
        FieldType::Ifname => {
            u128::from_be_bytes(*b"eth\0\0\0\0\0\0\0\0\0\0\0\0\0") | (0x30 + n % 10) << 96
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_fit_and_do_not_overlap() {
        for c in Case::ALL {
            let r = c.ranges(c.perf_entries());
            assert_eq!(r.len(), c.perf_entries());
            let max = r.iter().map(|x| x.1).max().unwrap();
            assert!(max <= 65535 || !c.fields().contains(&FieldType::InetService));
            for w in r.windows(2) {
                assert!(w[0].1 < w[1].0);
            }
        }
    }
}
