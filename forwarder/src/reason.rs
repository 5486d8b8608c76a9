//! Why a frame is not forwarded: one reason for every place that drops
//! one (the parse, the rule sets, the route, the neighbour, the rewrite)
//! and for every frame handed to the slow path, which answers some of
//! them (ARP, ICMP errors, `reject`'s resets) and resolves others.

/// Why a frame is not forwarded (counted by reason), and why one is
/// handed to the slow path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Shorter than its headers say.
    Truncated,
    /// A header field is impossible (IPv4 IHL below 5, wrong IP version,
    /// total length shorter than the header).
    Malformed,
    /// ARP: recognised, answered by the host, not forwarded.
    Arp,
    /// Neither IPv4, IPv6 nor ARP.
    UnknownEthertype,
    /// The TTL or hop limit would reach zero.
    TtlExpired,
    /// No route for the destination.
    NoRoute,
    /// The route names a next hop that does not exist.
    UnknownNextHop,
    /// A rule set's verdict.
    Rule,
    /// For the router itself (its addresses, ARP, neighbour discovery):
    /// handed to the slow path, not forwarded.
    Local,
    /// The next hop's MAC is not known yet: handed to the slow path
    /// (which resolves it and holds a few frames), or dropped while the
    /// resolution is under way.
    Unresolved,
    /// A `reject` set matched: the slow path answers the sender.
    Reject,
    /// Larger than the egress port's MTU (no fragmentation here).
    TooBig,
    /// Tagged with a VLAN that no sub-interface of its port has.
    UnknownVlan,
    /// Would open a connection, and the connection table has no room
    /// (only assured connections where it would go).
    ConntrackFull,
    /// Handed to the worker that tracks its connection (which counts it
    /// again as received): with several workers, a connection's packets
    /// are judged by one of them.
    HandedOff,
    /// Its connection's worker had no room for it.
    HandoffFull,
}

impl DropReason {
    /// How many reasons there are: the length of every per-reason count.
    pub const COUNT: usize = DropReason::ALL.len();

    /// Every reason, in counter order (each at its [`DropReason::index`]).
    pub const ALL: [DropReason; 16] = [
        DropReason::Truncated,
        DropReason::Malformed,
        DropReason::Arp,
        DropReason::UnknownEthertype,
        DropReason::TtlExpired,
        DropReason::NoRoute,
        DropReason::UnknownNextHop,
        DropReason::Rule,
        DropReason::Local,
        DropReason::Unresolved,
        DropReason::Reject,
        DropReason::TooBig,
        DropReason::UnknownVlan,
        DropReason::ConntrackFull,
        DropReason::HandedOff,
        DropReason::HandoffFull,
    ];

    /// A short name for counters and logs.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Truncated => "truncated",
            DropReason::Malformed => "malformed",
            DropReason::Arp => "arp",
            DropReason::UnknownEthertype => "unknown_ethertype",
            DropReason::TtlExpired => "ttl_expired",
            DropReason::NoRoute => "no_route",
            DropReason::UnknownNextHop => "unknown_next_hop",
            DropReason::Rule => "rule",
            DropReason::Local => "local",
            DropReason::Unresolved => "unresolved",
            DropReason::Reject => "reject",
            DropReason::TooBig => "too_big",
            DropReason::UnknownVlan => "unknown_vlan",
            DropReason::ConntrackFull => "conntrack_full",
            DropReason::HandedOff => "handed_off",
            DropReason::HandoffFull => "handoff_full",
        }
    }

    /// The reason's index in [`DropReason::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}
