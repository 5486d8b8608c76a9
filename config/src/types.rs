//! The checked configuration: typed values every section's checks
//! produce, and what the forwarder reads of them.

use crate::addr::PortAddress;
use crate::driver::Driver;
use matcher::field::FieldType;
use matcher::{Element, SetDecl};
use std::net::IpAddr;
use std::sync::Arc;

/// Worker settings.
#[derive(Clone, Debug, Eq)]
pub struct Forwarder {
    /// One worker per core, pinned.
    pub cores: Vec<usize>,
    /// Packets per burst (1 to 64).
    pub burst: usize,
    /// Where `cores` is (`file:line:col`), or the file's name when the
    /// default is taken, for errors about a core the system refuses.
    pub cores_at: String,
}

/// Settings compare by value: where they were written is not part of it.
impl PartialEq for Forwarder {
    fn eq(&self, other: &Self) -> bool {
        self.cores == other.cores && self.burst == other.burst
    }
}

/// A port.
#[derive(Clone, Debug, PartialEq)]
pub struct PortConfig {
    /// Its name, used by next hops.
    pub name: String,
    /// Its driver and the driver's options (`[port.options]`).
    pub driver: Driver,
    /// Our MAC on it: the source MAC of frames sent out of it.
    pub mac: [u8; 6],
    /// Where the port is declared (`file:line:col` of its name), for the
    /// driver's errors when it opens the port.
    pub at: String,
    /// Our addresses on it (`address = [...]`), with the IPv6 link-local
    /// address derived from the MAC (EUI-64) added when none is given.
    /// Empty: the port only forwards (no ARP, ND or ICMP of its own).
    pub addresses: Vec<PortAddress>,
    /// The largest IP packet sent out of it (`mtu`, default 1500).
    pub mtu: u16,
    /// With `punt = "tap"`: the TAP interface the forwarder creates for
    /// the port (`tap_name`, default `tap-` and the port's name), where
    /// what is for the router and not answered by the forwarder goes.
    pub tap: Option<String>,
    /// The Linux interface whose kernel routes lead to this port
    /// (`kernel_interface`), besides the port's own interface and TAP.
    pub kernel_interface: Option<String>,
    /// The VRF it routes in (`vrf`; 0, the default VRF, where not given):
    /// its connected and local routes go there, and what comes in on it
    /// is routed there.
    pub vrf: u16,
}

impl PortConfig {
    /// The Linux interfaces a kernel route may name to mean this port:
    /// `kernel_interface`, the interface its driver opens (af_packet,
    /// af_xdp), its TAP.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.kernel_interface.iter().cloned().collect();
        match &self.driver {
            Driver::AfPacket(o) => v.push(o.interface.clone()),
            Driver::AfXdp(o) => v.push(o.interface.clone()),
            _ => {}
        }
        v.extend(self.tap.iter().cloned());
        v
    }
}

/// Routes mirrored from a kernel routing table (`[routes] source =
/// "kernel"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRoutes {
    /// The table (`table`, default 254: main).
    pub table: u32,
    /// The route protocols taken (`protocols`, by name or number as in
    /// `/etc/iproute2/rt_protos`); empty: all.
    pub protocols: Vec<u8>,
}

/// Route protocols by name, as iproute2 names them.
pub const ROUTE_PROTOCOLS: &[(&str, u8)] = &[
    ("redirect", 1),
    ("kernel", 2),
    ("boot", 3),
    ("static", 4),
    ("gated", 8),
    ("ra", 9),
    ("mrt", 10),
    ("zebra", 11),
    ("bird", 12),
    ("dnrouted", 13),
    ("xorp", 14),
    ("ntk", 15),
    ("dhcp", 16),
    ("mrouted", 17),
    ("keepalived", 18),
    ("babel", 42),
    ("openr", 99),
    ("bgp", 186),
    ("isis", 187),
    ("ospf", 188),
    ("rip", 189),
    ("eigrp", 192),
];

/// The packet fields a set's `match` may name, for messages.
pub const SOURCES: &str = "ip saddr|daddr, ip6 saddr|daddr, tcp|udp|sctp|th sport|dport, \
                           meta l4proto (ip protocol, ip6 nexthdr), icmp type, icmpv6 type, ct state, \
                           ether saddr|daddr, meta mark, meta iifname, meta oifname (hook forward), \
                           ip dscp, ip6 dscp";

/// Which packet field feeds a set's field, in nft's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// `ip saddr`
    IpSaddr,
    /// `ip daddr`
    IpDaddr,
    /// `ip6 saddr`
    Ip6Saddr,
    /// `ip6 daddr`
    Ip6Daddr,
    /// `tcp|udp|sctp|th sport`: the protocol it requires (None for `th`).
    Sport(Option<u8>),
    /// `tcp|udp|sctp|th dport`.
    Dport(Option<u8>),
    /// `meta l4proto` (also `ip protocol`, `ip6 nexthdr`).
    L4proto,
    /// `icmp type` (false) or `icmpv6 type` (true): the message type of
    /// an ICMP packet of that family.
    IcmpType(bool),
    /// `ct state`: the packet's connection tracking state (`[conntrack]`).
    CtState,
    /// `ether saddr`
    EtherSaddr,
    /// `ether daddr`
    EtherDaddr,
    /// `meta mark`
    Mark,
    /// `meta iifname` (also `iifname`): the name of the port (or VLAN
    /// sub-interface) the packet came in on.
    Iifname,
    /// `meta oifname` (also `oifname`): the name of the port (or VLAN
    /// sub-interface) the packet leaves by: known once it is routed, so
    /// only in a set of `hook = "forward"`.
    Oifname,
    /// `ip dscp` (false) or `ip6 dscp` (true): the DSCP of a packet of
    /// that family.
    Dscp(bool),
}

impl Source {
    /// The source `words` name, as a set's `match` writes it (`ip
    /// saddr`, `tcp dport`, `meta l4proto`, ...): the same words name
    /// packet fields in `forwarder trace` packets and capture filters.
    pub fn parse(words: &str) -> Result<Source, String> {
        let w: Vec<&str> = words.split_whitespace().collect();
        let proto = |p: &str| match p {
            "tcp" => Some(Some(6)),
            "udp" => Some(Some(17)),
            "sctp" => Some(Some(132)),
            "th" => Some(None),
            _ => None,
        };
        Ok(match w.as_slice() {
            ["ip", "saddr"] => Source::IpSaddr,
            ["ip", "daddr"] => Source::IpDaddr,
            ["ip6", "saddr"] => Source::Ip6Saddr,
            ["ip6", "daddr"] => Source::Ip6Daddr,
            [p, "sport"] if proto(p).is_some() => Source::Sport(proto(p).unwrap_or(None)),
            [p, "dport"] if proto(p).is_some() => Source::Dport(proto(p).unwrap_or(None)),
            ["meta", "l4proto"] | ["ip", "protocol"] | ["ip6", "nexthdr"] => Source::L4proto,
            ["icmp", "type"] => Source::IcmpType(false),
            ["icmpv6", "type"] => Source::IcmpType(true),
            ["ct", "state"] => Source::CtState,
            ["ether", "saddr"] => Source::EtherSaddr,
            ["ether", "daddr"] => Source::EtherDaddr,
            ["meta", "mark"] => Source::Mark,
            ["meta", "iifname"] | ["iifname"] => Source::Iifname,
            ["ip", "dscp"] => Source::Dscp(false),
            ["ip6", "dscp"] => Source::Dscp(true),
            ["meta", "oifname"] | ["oifname"] => Source::Oifname,
            _ => {
                return Err(format!(
                    "unknown packet field `{}` (known: {SOURCES})",
                    w.join(" ")
                ))
            }
        })
    }

    /// The words that name it (the first of its spellings).
    pub fn words(self) -> &'static str {
        match self {
            Source::IpSaddr => "ip saddr",
            Source::IpDaddr => "ip daddr",
            Source::Ip6Saddr => "ip6 saddr",
            Source::Ip6Daddr => "ip6 daddr",
            Source::Sport(Some(6)) => "tcp sport",
            Source::Sport(Some(17)) => "udp sport",
            Source::Sport(Some(132)) => "sctp sport",
            Source::Sport(_) => "th sport",
            Source::Dport(Some(6)) => "tcp dport",
            Source::Dport(Some(17)) => "udp dport",
            Source::Dport(Some(132)) => "sctp dport",
            Source::Dport(_) => "th dport",
            Source::L4proto => "meta l4proto",
            Source::IcmpType(false) => "icmp type",
            Source::IcmpType(true) => "icmpv6 type",
            Source::CtState => "ct state",
            Source::EtherSaddr => "ether saddr",
            Source::EtherDaddr => "ether daddr",
            Source::Mark => "meta mark",
            Source::Iifname => "meta iifname",
            Source::Oifname => "meta oifname",
            Source::Dscp(false) => "ip dscp",
            Source::Dscp(true) => "ip6 dscp",
        }
    }

    /// The set field type this source fills.
    pub fn field_type(self) -> FieldType {
        match self {
            Source::IpSaddr | Source::IpDaddr => FieldType::Ipv4Addr,
            Source::Ip6Saddr | Source::Ip6Daddr => FieldType::Ipv6Addr,
            Source::Sport(_) | Source::Dport(_) => FieldType::InetService,
            Source::L4proto => FieldType::InetProto,
            Source::IcmpType(false) => FieldType::IcmpType,
            Source::IcmpType(true) => FieldType::Icmpv6Type,
            Source::CtState => FieldType::CtState,
            Source::EtherSaddr | Source::EtherDaddr => FieldType::EtherAddr,
            Source::Mark => FieldType::Mark,
            Source::Iifname | Source::Oifname => FieldType::Ifname,
            Source::Dscp(_) => FieldType::Dscp,
        }
    }
}

/// What a match in a set does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Drop the packet.
    Drop,
    /// Accept it: later sets are not consulted.
    Accept,
    /// The matching element's verdict decides (`: verdict` maps).
    Verdict,
    /// Drop it and tell the sender, as nft's `reject`: a TCP reset for
    /// TCP, ICMP port unreachable for UDP, administratively prohibited
    /// for the rest (when the forwarder has addresses to send from).
    Reject,
}

/// A rule set, with its elements checked (types, overlaps).
#[derive(Clone, Debug)]
pub struct SetConfig {
    /// Its name.
    pub name: String,
    /// Its declaration.
    pub decl: SetDecl,
    /// Which packet field feeds each of its fields.
    pub sources: Vec<Source>,
    /// What a match does.
    pub action: Action,
    /// The elements, free of duplicates and overlaps: inline ones, then
    /// the file's; shared by the loads of an unchanged set
    /// ([`crate::Loader`]).
    pub elements: Arc<Vec<Element>>,
    /// The file its elements were read from, if any (watched for changes
    /// by the running forwarder).
    pub file: Option<std::path::PathBuf>,
    /// Where each element of `elements` was written: the inline ones'
    /// lines in the configuration file, then the set file's lines.
    pub lines: ElementLines,
    /// `counter = true` (nft's `counter` in a set): each element counts
    /// the packets and bytes it matches.
    pub counter: bool,
    /// Where in a packet's way the set is looked up (`hook`).
    pub hook: Hook,
}

/// Where a set is looked up, in nft's hook names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hook {
    /// Before the route decision (the default): every packet that comes
    /// in, the router's own included. `meta oifname` is not known yet.
    #[default]
    Prerouting,
    /// After it, for the packets the forwarder forwards (not those for
    /// the router itself, nor those without a route): `meta oifname` is
    /// known. An `accept` of the prerouting sets ends only their hook, as
    /// in nft: the forward sets still see the packet.
    Forward,
}

impl Hook {
    /// Its name in a configuration (`prerouting`, `forward`).
    pub fn name(self) -> &'static str {
        match self {
            Hook::Prerouting => "prerouting",
            Hook::Forward => "forward",
        }
    }
}

/// The lines the elements of a [`SetConfig`] come from, in its order: a
/// packet trace says where the element that matched was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElementLines {
    /// The inline elements' lines in the configuration file.
    pub inline: Vec<u32>,
    /// The set file's elements' lines in it (shared, as the elements are,
    /// by the loads of an unchanged file).
    pub file: Arc<Vec<u32>>,
}

impl ElementLines {
    /// Where element `i` was written: `(true, line)` in the set file,
    /// `(false, line)` inline in the configuration file; `None` past the
    /// end.
    pub fn of(&self, i: usize) -> Option<(bool, u32)> {
        match self.inline.get(i) {
            Some(&l) => Some((false, l)),
            None => self.file.get(i - self.inline.len()).map(|&l| (true, l)),
        }
    }
}

/// A next hop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NextHopConfig {
    /// Its name, used by routes and ECMP groups.
    pub name: String,
    /// The egress port's index in [`Config::ports`].
    pub port: usize,
    /// The neighbour's MAC, when given (a static neighbour: never
    /// resolved, never overwritten by what the network says).
    pub mac: Option<[u8; 6]>,
    /// The neighbour's address, when given: without a MAC, resolved by
    /// ARP or neighbour discovery on the port.
    pub address: Option<IpAddr>,
}

/// An ECMP group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EcmpGroup {
    /// Its name.
    pub name: String,
    /// Its members' indices in [`Config::next_hops`].
    pub members: Vec<usize>,
}

/// Where a route leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A next hop's index.
    NextHop(usize),
    /// An ECMP group's index.
    Ecmp(usize),
}

/// A route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteConfig {
    /// IPv6 (else IPv4, in the low 32 bits).
    pub v6: bool,
    /// The prefix, host bits clear.
    pub prefix: u128,
    /// Its length.
    pub len: u32,
    /// Where it leads.
    pub via: Via,
    /// Its line: in the configuration file for an inline route, in the
    /// route file for one of its routes (0 for routes made by a program,
    /// as the benchmarks do). Where `forwarder route get` and the packet
    /// trace say it comes from.
    pub line: u32,
    /// Its VRF (0: the default).
    pub vrf: u16,
}

/// A VRF (`[[vrf]]`): a routing table of its own for the ports that
/// name it. VRF 0 is the default one (the main table), which has no
/// `[[vrf]]`; these are VRFs 1, 2, ... in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VrfConfig {
    /// Its name (`vrf = NAME` on ports and routes).
    pub name: String,
    /// The kernel routing table mirrored into it (`table`), with
    /// `[routes] source = "kernel"`.
    pub table: Option<u32>,
    /// Its route file (`route_file`), if any.
    pub route_file: Option<std::path::PathBuf>,
    /// That file's routes, sorted by prefix.
    pub file_routes: Arc<[RouteConfig]>,
}

/// The default VRF's name, as `vrf = ...` may say it.
pub const DEFAULT_VRF: &str = "default";

/// The route stage's settings (see `routecache::RouteCacheConfig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteCache {
    /// The route hint.
    pub hint: Option<bool>,
    /// Dst cache entries (0: off).
    pub dst_cache_entries: Option<usize>,
    /// `jhash`, `jhash2` or `ahash`.
    pub hash: Option<String>,
}

/// The flow cache's settings (`[flow_cache]`; see the forwarder's
/// `flowcache` module).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FlowCache {
    /// Entries per core (0: off).
    pub entries: Option<usize>,
    /// A missed flow is stored one time in this many (1: always).
    pub insert_one_in: Option<u32>,
}

impl FlowCache {
    /// Rule sets whose matches a flow cache entry records (two bits each
    /// in a 32-bit word): with more sets the cache must be off.
    pub const MAX_SETS: usize = 16;
}

/// Connection tracking's settings (`[conntrack]`): Linux's defaults
/// where not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conntrack {
    /// Whether the forwarder tracks connections (default false: then it
    /// costs nothing, and no set may match `ct state`).
    pub enabled: bool,
    /// Connections tracked at most, all workers together
    /// (`nf_conntrack_max`; default 262,144).
    pub max: usize,
    /// Whether each connection counts packets and bytes each way
    /// (`nf_conntrack_acct`; default false).
    pub acct: bool,
    /// Timeouts, in seconds.
    pub timeouts: CtTimeouts,
}

impl Default for Conntrack {
    fn default() -> Conntrack {
        Conntrack {
            enabled: false,
            max: 262_144,
            acct: false,
            timeouts: CtTimeouts::default(),
        }
    }
}

/// Connection timeouts in seconds, Linux's names and defaults
/// (`net.netfilter.nf_conntrack_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtTimeouts {
    /// A TCP connection's, by its state (SYN_SENT, SYN_RECV, ESTABLISHED,
    /// FIN_WAIT, CLOSE_WAIT, LAST_ACK, TIME_WAIT, CLOSE): 120, 60,
    /// 432,000, 120, 60, 30, 120, 10.
    pub tcp: [u32; 8],
    /// UDP unreplied (30) and once replied (`udp_timeout_stream`, 120).
    pub udp: u32,
    /// See `udp`.
    pub udp_stream: u32,
    /// ICMP and ICMPv6 echo and the like (30).
    pub icmp: u32,
    /// Other protocols (600).
    pub generic: u32,
}

impl CtTimeouts {
    /// The TCP states' names in `tcp`'s order, as `[conntrack]`'s keys
    /// end (`tcp_timeout_<name>`).
    pub const TCP_NAMES: [&'static str; 8] = [
        "syn_sent",
        "syn_recv",
        "established",
        "fin_wait",
        "close_wait",
        "last_ack",
        "time_wait",
        "close",
    ];
}

impl Default for CtTimeouts {
    fn default() -> CtTimeouts {
        CtTimeouts {
            tcp: [120, 60, 432_000, 120, 60, 30, 120, 10],
            udp: 30,
            udp_stream: 120,
            icmp: 30,
            generic: 600,
        }
    }
}

/// Rule sets a configuration may have: each worker publishes every set's
/// match counters in an array of this size.
pub const MAX_SETS: usize = 256;

/// The control side's settings (`[control]`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ControlConfig {
    /// The control socket's path; `None`: [`crate::default_socket`] of the
    /// configuration file.
    pub socket: Option<std::path::PathBuf>,
    /// Where to serve Prometheus metrics over HTTP (off when `None`).
    pub prometheus: Option<std::net::SocketAddr>,
    /// Reload when the configuration or a set file it includes changes
    /// (default true).
    pub watch: bool,
    /// A group (name or number) whose members may reach the control
    /// socket: it is then created with mode 0660 and that group, else
    /// 0600.
    pub group: Option<String>,
    /// Users (uids) other than the forwarder's own whose requests the
    /// control socket serves (checked with `SO_PEERCRED`); root's always
    /// are.
    pub allow_uids: Vec<u32>,
}

/// A checked configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// Workers.
    pub forwarder: Forwarder,
    /// Ports, in file order.
    pub ports: Vec<PortConfig>,
    /// Rule sets, in evaluation order (file order).
    pub sets: Vec<SetConfig>,
    /// Next hops.
    pub next_hops: Vec<NextHopConfig>,
    /// ECMP groups.
    pub ecmp: Vec<EcmpGroup>,
    /// Routes given inline (`route = [...]`, `[[route]]`).
    pub routes: Vec<RouteConfig>,
    /// The routes of `route_file`, sorted by prefix; shared by the loads
    /// of an unchanged file ([`crate::Loader`]).
    pub file_routes: Arc<[RouteConfig]>,
    /// The file routes were also read from, if any (watched by the
    /// running forwarder).
    pub route_file: Option<std::path::PathBuf>,
    /// Route stage settings; `None` where not given (use the defaults).
    pub route_cache: RouteCache,
    /// Flow cache settings; `None` where not given (use the defaults).
    pub flow_cache: FlowCache,
    /// Connection tracking (`[conntrack]`).
    pub conntrack: Conntrack,
    /// The control side's settings.
    pub control: ControlConfig,
    /// Neighbour resolution and ICMP settings (`[neighbour]`, `[icmp]`).
    pub router: RouterSettings,
    /// `[routes] source = "kernel"`: the kernel table mirrored beside
    /// the configured routes (which win for the same prefix).
    pub kernel: Option<KernelRoutes>,
    /// The VRFs besides the default one (VRF `i + 1` is `vrfs[i]`).
    pub vrfs: Vec<VrfConfig>,
}

/// Neighbour resolution's timers (`[neighbour]`), Linux's defaults
/// where not given (`net.ipv4.neigh.default.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeighbourSettings {
    /// How long a confirmed neighbour stays reachable (base_reachable_time,
    /// 30 s).
    pub reachable_ms: u64,
    /// Between two solicitations of one resolution (retrans_time, 1 s).
    pub retrans_ms: u64,
    /// A stale neighbour's wait before it is probed (delay_first_probe_time,
    /// 5 s).
    pub delay_ms: u64,
    /// Solicitations before a neighbour is failed (mcast_solicit and
    /// ucast_solicit, 3).
    pub probes: u32,
    /// Bytes of frames held per neighbour while it resolves, the oldest
    /// dropped first past it (unres_qlen_bytes, 212,992; counted by the
    /// frames' own bytes, where Linux counts its buffers').
    pub hold_bytes: usize,
}

/// ICMP rate limits (`[icmp]`), Linux's defaults where not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpSettings {
    /// Messages a second per core (icmp_msgs_per_sec, 1000).
    pub msgs_per_sec: u32,
    /// The bucket's depth (icmp_msgs_burst, 50).
    pub msgs_burst: u32,
    /// Errors to one destination: one per this many ms after a burst of 6
    /// (icmp_ratelimit, 1000 ms); 0: no per-destination limit.
    pub ratelimit_ms: u64,
}

/// The router's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouterSettings {
    /// `[neighbour]`.
    pub neighbour: NeighbourSettings,
    /// `[icmp]`.
    pub icmp: IcmpSettings,
}

impl Default for RouterSettings {
    fn default() -> Self {
        RouterSettings {
            neighbour: NeighbourSettings {
                reachable_ms: 30_000,
                retrans_ms: 1_000,
                delay_ms: 5_000,
                probes: 3,
                hold_bytes: 212_992,
            },
            icmp: IcmpSettings {
                msgs_per_sec: 1000,
                msgs_burst: 50,
                ratelimit_ms: 1000,
            },
        }
    }
}

impl Config {
    /// Whether port `index` or one of its VLAN sub-interfaces has
    /// addresses: then its receive filter lets the router's frames in
    /// (IPv6 multicast, for neighbour discovery), tagged or not.
    pub fn addressed(&self, index: usize) -> bool {
        self.ports.iter().enumerate().any(|(i, p)| {
            !p.addresses.is_empty()
                && (i == index || matches!(&p.driver, Driver::Vlan(v) if v.parent == index))
        })
    }

    /// How many ports have a driver (and queues on every worker): the
    /// first ones; the VLAN sub-interfaces come after them.
    pub fn physical_ports(&self) -> usize {
        self.ports
            .iter()
            .take_while(|p| !matches!(p.driver, Driver::Vlan(_)))
            .count()
    }

    /// Whether any port has addresses: then the forwarder is a router
    /// (answers ARP and ND, resolves neighbours, sends ICMP).
    pub fn is_router(&self) -> bool {
        self.ports.iter().any(|p| !p.addresses.is_empty())
    }

    /// Every route: the inline ones, then the route file's, then each
    /// VRF's route file's (each route says its VRF).
    pub fn all_routes(&self) -> impl Iterator<Item = &RouteConfig> + '_ {
        self.routes
            .iter()
            .chain(self.file_routes.iter())
            .chain(self.vrfs.iter().flat_map(|v| v.file_routes.iter()))
    }

    /// The number of VRFs, the default one counted.
    pub fn vrf_count(&self) -> usize {
        self.vrfs.len() + 1
    }

    /// VRF `vrf`'s name (`default` for 0).
    pub fn vrf_name(&self, vrf: u16) -> &str {
        match vrf {
            0 => DEFAULT_VRF,
            v => self.vrfs.get(v as usize - 1).map_or("?", |c| &c.name),
        }
    }

    /// VRF `vrf`'s route file's routes (`route_file` for 0, its
    /// `[[vrf]]`'s otherwise; none for a VRF that does not exist).
    pub fn file_routes_of(&self, vrf: u16) -> &[RouteConfig] {
        match vrf {
            0 => &self.file_routes,
            v => self
                .vrfs
                .get(v as usize - 1)
                .map_or(&[], |c| &c.file_routes),
        }
    }

    /// VRF `vrf`'s route file, if it has one.
    pub fn route_file_of(&self, vrf: u16) -> Option<&std::path::PathBuf> {
        match vrf {
            0 => self.route_file.as_ref(),
            v => self.vrfs.get(v as usize - 1)?.route_file.as_ref(),
        }
    }

    /// The VRF named `name`, `default` included.
    pub fn vrf_index(&self, name: &str) -> Option<u16> {
        if name == DEFAULT_VRF {
            return Some(0);
        }
        self.vrfs
            .iter()
            .position(|v| v.name == name)
            .map(|i| i as u16 + 1)
    }

    /// How many routes there are, inline and from the route files (the
    /// VRFs' too).
    pub fn route_count(&self) -> usize {
        self.routes.len()
            + self.file_routes.len()
            + self.vrfs.iter().map(|v| v.file_routes.len()).sum::<usize>()
    }
}

/// Packets per burst when the file does not say: 64, the most a burst
/// holds. Without a flow cache answering, a burst's lookups in a full
/// table are cache misses that overlap only within the burst, so more
/// packets a burst forward more (`bench forward --burst 32 --burst 64`,
/// BENCHMARKS.md).
pub const DEFAULT_BURST: usize = 64;
