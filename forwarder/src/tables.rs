//! What a burst is judged by: the rule sets, the FIB and its next hops,
//! the ports, and the settings of the route and flow caches, as one
//! immutable value. The control side builds it from a checked
//! configuration ([`crate::control::build`]) and publishes it, with the
//! workers' pipeline state prepared for it
//! ([`crate::pipeline::Snapshot`]), through [`crate::shared::Shared`];
//! the pipeline and the slow path read it.

use crate::wire::proto::{SCTP, TCP, UDP};
use crate::wire::{Parsed, L3};
use config::{Action, PortConfig, RouterSettings, Source};
use routecache::{Fib, FibSnapshot, RouteCacheConfig};
use std::sync::Arc;

/// A rule set as the pipeline uses it.
pub struct RuleSet {
    /// Its name.
    pub name: String,
    /// The committed set.
    pub snap: Arc<matcher::Snapshot>,
    /// The packet field feeding each of its fields.
    pub sources: Vec<Source>,
    /// What a match does.
    pub action: Action,
    /// Bytes of a key.
    pub key_len: usize,
    /// What a packet must have for the sources to make its key.
    pub need: Need,
    /// Its elements count their packets and bytes (`counter = true`).
    pub counter: bool,
    /// Before the route decision or after it (`hook`).
    pub hook: config::Hook,
}

/// Everything a burst is judged by. Immutable once published.
pub struct Tables {
    /// Increases with every published snapshot.
    pub generation: u64,
    /// The earliest deadline of any set's elements (on [`crate::clock`]),
    /// [`matcher::NEVER`] when none expires: before it, a worker
    /// checks no match's deadline.
    pub next_expiry: u64,
    /// Rule sets, in evaluation order: those of the prerouting hook,
    /// then from `forward_from` on those of the forward hook (a checked
    /// configuration writes them in that order).
    pub sets: Vec<RuleSet>,
    /// The first set of the forward hook (`sets.len()` when none): the
    /// sets before it run before the route decision, the rest after it.
    pub forward_from: usize,
    /// Routes, next hops, ECMP groups.
    pub fib: Arc<FibSnapshot>,
    /// Names of the ports, by index.
    pub port_names: Vec<String>,
    /// The route stage's settings.
    pub route_cache: RouteCacheConfig,
    /// Seed of the ECMP flow hash.
    pub flow_seed: u32,
    /// Each core's flow cache.
    pub flow_cache: FlowCacheConfig,
    /// Connection tracking's settings (`[conntrack]`).
    pub conntrack: config::Conntrack,
    /// The workers the connections are spread over: each tracks at most
    /// `conntrack.max / conntrack_workers` of them.
    pub conntrack_workers: usize,
    /// Whether some set reads a field connection tracking's key lacks
    /// (Ethernet addresses): then its entries keep no decision.
    pub reads_macs: bool,
    /// Whether some set reads `meta iifname` (each packet's port's name
    /// is then written for the sets, and the decisions the flow cache and
    /// connections keep are bound to the port they were taken for: see
    /// [`crate::decision::Decision::bound`]).
    pub reads_iifname: bool,
    /// Whether some set reads what a flow is not told apart by and a
    /// decision is not bound to (the DSCP): then neither the flow cache
    /// nor connections keep decisions.
    pub reads_beyond_flow: bool,
    /// Each port's name as an `ifname` field holds it (by index, VLAN
    /// sub-interfaces after the ports), for `meta iifname` and `meta
    /// oifname`.
    pub ifnames: Arc<[u128]>,
    /// What each of the FIB's next hops is, in its order.
    pub hop_kinds: Arc<[HopKind]>,
    /// The ports' configuration (addresses, MACs, MTUs), by index.
    pub ports: Arc<[PortConfig]>,
    /// The VLAN sub-interfaces: which port a tagged frame came in on, and
    /// each port's queues and tags.
    pub vlans: Arc<crate::vlan::Vlans>,
    /// Each port's VRF (its routes are those of `fib.vrf(VRF)`).
    pub port_vrf: Box<[u8]>,
    /// Per port with a driver: whether a sub-interface of it is in
    /// another VRF than it (then a burst's frames may route in several).
    pub vrf_mixed: Box<[bool]>,
    /// The VRFs' names, by index (`default` first).
    pub vrf_names: Arc<[String]>,
    /// Whether any port has addresses: the router's slow path is on.
    pub routing: bool,
    /// Neighbour and ICMP settings.
    pub router_settings: RouterSettings,
    /// Configured neighbours (next hops with both `mac` and `address`):
    /// port, IPv6, address, MAC.
    pub static_neighbours: Arc<[StaticNeighbour]>,
}

/// A configured neighbour: port, IPv6, address, MAC.
pub type StaticNeighbour = (u16, bool, u128, [u8; 6]);

/// What a FIB next hop is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopKind {
    /// Its MAC is configured.
    Static,
    /// A gateway by address: its MAC is resolved on its port.
    Gateway {
        /// The gateway's address (IPv4 in the low 32 bits).
        addr: u128,
        /// Whether it is IPv6.
        v6: bool,
    },
    /// A port's connected networks: the packet's destination is the
    /// neighbour to resolve.
    Connected,
    /// The router itself: the packet goes to the slow path.
    Local,
}

/// What a packet must carry for a set's sources to make its key, from
/// the sources once, so that a burst tests each packet with a few
/// compares instead of going through the sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Need {
    /// No packet can have it all (IPv4 and IPv6 fields, ports of two
    /// different protocols, ports and an ICMP type).
    never: bool,
    /// The address family the address fields need.
    l3: Option<L3>,
    /// A complete transport header (ports, or an ICMP type) ...
    l4: bool,
    /// ... of one of these protocols, a bit each: TCP, UDP and SCTP for
    /// `th` ports, the one a `tcp`/`udp`/`sctp` port names, ICMP or
    /// ICMPv6 for a type. One bit test a packet, however the sources
    /// combine.
    protos: [u64; 4],
}

impl Need {
    /// What `sources` need.
    pub fn of(sources: &[Source]) -> Need {
        let mut n = Need::default();
        let mut protos = [u64::MAX; 4];
        let only = |protos: &mut [u64; 4], allowed: &[u8]| {
            let mut m = [0u64; 4];
            for &p in allowed {
                m[p as usize >> 6] |= 1 << (p & 63);
            }
            for (a, b) in protos.iter_mut().zip(m) {
                *a &= b;
            }
        };
        for s in sources {
            let family = match s {
                Source::IpSaddr | Source::IpDaddr | Source::IcmpType(false) => Some(L3::V4),
                Source::Dscp(false) => Some(L3::V4),
                Source::Ip6Saddr | Source::Ip6Daddr | Source::IcmpType(true) => Some(L3::V6),
                Source::Dscp(true) => Some(L3::V6),
                _ => None,
            };
            if let Some(f) = family {
                n.never |= n.l3.is_some_and(|l| l != f);
                n.l3 = Some(f);
            }
            match *s {
                Source::Sport(p) | Source::Dport(p) => {
                    n.l4 = true;
                    match p {
                        Some(p) => only(&mut protos, &[p]),
                        None => only(&mut protos, &[TCP, UDP, SCTP]),
                    }
                }
                Source::IcmpType(v6) => {
                    n.l4 = true;
                    only(&mut protos, &[icmp_of(if v6 { L3::V6 } else { L3::V4 })]);
                }
                _ => {}
            }
        }
        if n.l4 {
            n.never |= protos == [0; 4];
            n.protos = protos;
        }
        n
    }

    /// Whether packet `p` has every field.
    #[inline]
    pub fn applies(&self, p: &Parsed) -> bool {
        !self.never
            && self.l3.is_none_or(|l| l == p.l3)
            && (!self.l4
                || (p.l4_ok && self.protos[p.proto as usize >> 6] >> (p.proto & 63) & 1 != 0))
    }
}

/// The ICMP protocol of family `l3`.
#[inline(always)]
pub fn icmp_of(l3: L3) -> u8 {
    if l3 == L3::V6 {
        crate::wire::proto::ICMPV6
    } else {
        crate::wire::proto::ICMP
    }
}

/// How a worker's flow cache is set up (`[flow_cache]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowCacheConfig {
    /// Entries per core; 0 turns the cache off.
    pub entries: usize,
    /// A missed flow is stored with probability 1 / `insert_one_in` (as
    /// Open vSwitch's `emc-insert-inv-prob`): with more flows than
    /// entries, storing every miss evicts entries before their next
    /// packet (a round-robin flow mix then never hits) and pays for a
    /// store per packet; storing a sample keeps a stable subset cached.
    /// A hot flow is stored after about this many packets. 1: always.
    pub insert_one_in: u32,
}

impl Default for FlowCacheConfig {
    /// What `bench forward` supports (BENCHMARKS.md).
    fn default() -> Self {
        FlowCacheConfig {
            entries: 16384,
            insert_one_in: 32,
        }
    }
}

impl Tables {
    /// The VRF of port `port` (0 for one it does not know).
    #[inline(always)]
    pub fn vrf_of(&self, port: u16) -> u8 {
        self.port_vrf.get(port as usize).copied().unwrap_or(0)
    }

    /// No sets, no routes: a placeholder before the first publication.
    pub fn empty() -> Tables {
        Tables {
            generation: 0,
            next_expiry: matcher::NEVER,
            sets: Vec::new(),
            forward_from: 0,
            fib: Fib::new().publish(),
            port_names: Vec::new(),
            route_cache: RouteCacheConfig::default(),
            flow_seed: 0,
            flow_cache: FlowCacheConfig {
                entries: 0,
                insert_one_in: 1,
            },
            conntrack: config::Conntrack::default(),
            conntrack_workers: 1,
            reads_macs: false,
            reads_iifname: false,
            reads_beyond_flow: false,
            ifnames: Arc::from(Vec::new()),
            hop_kinds: Arc::from(Vec::new()),
            ports: Arc::from(Vec::new()),
            vlans: Arc::default(),
            port_vrf: Box::new([]),
            vrf_mixed: Box::new([]),
            vrf_names: Arc::from(vec![config::DEFAULT_VRF.to_string()]),
            routing: false,
            router_settings: RouterSettings::default(),
            static_neighbours: Arc::from(Vec::new()),
        }
    }
}

/// A port's name as an `ifname` set field holds it: its bytes (at most
/// 16), then zeros.
pub fn ifname_key(name: &str) -> u128 {
    let mut b = [0u8; 16];
    let n = name.len().min(16);
    b[..n].copy_from_slice(&name.as_bytes()[..n]);
    u128::from_be_bytes(b)
}
