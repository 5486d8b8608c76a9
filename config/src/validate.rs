//! From the file's shape to typed, checked values.

use crate::driver::{self, Driver, DRIVERS};
use crate::loader::{self, Gave, Got, Loader};
use crate::schema;
use matcher::field::FieldType;
use matcher::file::SetFile;
use matcher::{excerpt, DataType, Element, InsertMode, SetDecl};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::IpAddr;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;

/// An error with where it is: `file:line:col: message` (line and column
/// from 1; 0 when the error concerns the whole file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file's name as given.
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub col: usize,
    /// What is wrong, quoting the offending value.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.col, self.message
            )
        }
    }
}

impl std::error::Error for ConfigError {}

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
    /// `ether saddr`
    EtherSaddr,
    /// `ether daddr`
    EtherDaddr,
    /// `meta mark`
    Mark,
}

impl Source {
    fn parse(words: &str) -> Result<Source, String> {
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
            ["ether", "saddr"] => Source::EtherSaddr,
            ["ether", "daddr"] => Source::EtherDaddr,
            ["meta", "mark"] => Source::Mark,
            _ => return Err(format!("unknown packet field `{}`", w.join(" "))),
        })
    }

    /// The set field type this source fills.
    pub fn field_type(self) -> FieldType {
        match self {
            Source::IpSaddr | Source::IpDaddr => FieldType::Ipv4Addr,
            Source::Ip6Saddr | Source::Ip6Daddr => FieldType::Ipv6Addr,
            Source::Sport(_) | Source::Dport(_) => FieldType::InetService,
            Source::L4proto => FieldType::InetProto,
            Source::EtherSaddr | Source::EtherDaddr => FieldType::EtherAddr,
            Source::Mark => FieldType::Mark,
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
}

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

/// Rule sets a configuration may have: each worker publishes every set's
/// match counters in an array of this size.
pub const MAX_SETS: usize = 256;

/// The control side's settings (`[control]`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ControlConfig {
    /// The control socket's path; `None`: [`default_socket`] of the
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

/// The control socket of the forwarder started with configuration file
/// `config`, where `[control] socket` does not say: a name derived from
/// the file's canonical path, so that `forwarder stats --config FILE`
/// finds the instance run with `FILE`, in [`runtime_dir`].
pub fn default_socket(config: &Path) -> std::path::PathBuf {
    let canon = std::fs::canonicalize(config).unwrap_or_else(|_| config.to_path_buf());
    // FNV-1a: stable across builds and runs.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canon.to_string_lossy().bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    runtime_dir().join(format!("{h:016x}.sock"))
}

/// The directory of this user's control sockets, which only this user
/// may write: `$RUNTIME_DIRECTORY` when systemd gives one (a unit's
/// `RuntimeDirectory=forwarder` is `/run/forwarder`, owned by its `User=`,
/// where root's clients look too), else `/run/forwarder` for root, else
/// `$XDG_RUNTIME_DIR/forwarder` (systemd's per-user runtime directory),
/// else `forwarder-UID` in the temporary directory. The forwarder
/// creates it (mode 0700) and refuses one that another user owns or
/// could write to.
pub fn runtime_dir() -> std::path::PathBuf {
    use std::os::unix::fs::MetadataExt;
    if let Some(d) = std::env::var_os("RUNTIME_DIRECTORY") {
        // Several directories are separated by colons; the first is ours.
        let first = d
            .to_string_lossy()
            .split(':')
            .next()
            .unwrap_or("")
            .to_string();
        let d = std::path::PathBuf::from(first);
        if d.is_absolute() {
            return d;
        }
    }
    // The process's own uid, as the owner of its /proc entry (no libc
    // call, and this crate forbids `unsafe`).
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    match uid {
        Some(0) => std::path::PathBuf::from("/run/forwarder"),
        _ => match std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from) {
            Some(d) if d.is_absolute() => d.join("forwarder"),
            _ => std::env::temp_dir().join(format!(
                "forwarder-{}",
                uid.map_or("unknown".to_string(), |u| u.to_string())
            )),
        },
    }
}

/// The control socket of the instance run with `config`, read leniently:
/// a file with errors elsewhere (the reason for a reload) still names its
/// socket.
pub fn control_socket(config: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(config).unwrap_or_default();
    let explicit = match text.parse::<toml::Table>() {
        Ok(t) => t
            .get("control")
            .and_then(|c| c.get("socket"))
            .and_then(|s| s.as_str())
            .map(std::path::PathBuf::from),
        // Not TOML as a whole: the `socket = "..."` line of `[control]`.
        Err(_) => {
            let mut in_control = false;
            let mut found = None;
            for line in text.lines().map(str::trim) {
                if line.starts_with('[') {
                    in_control = line == "[control]";
                } else if let (true, Some(v)) = (in_control, line.strip_prefix("socket")) {
                    let v = v.trim_start();
                    if let Some(v) = v.strip_prefix('=') {
                        let v = v.split('#').next().unwrap_or("").trim();
                        found = v
                            .strip_prefix('"')
                            .and_then(|v| v.strip_suffix('"'))
                            .map(std::path::PathBuf::from);
                    }
                }
            }
            found
        }
    };
    match explicit {
        Some(p) if p.is_relative() => config.parent().unwrap_or(Path::new(".")).join(p),
        Some(p) => p,
        None => default_socket(config),
    }
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
    /// The control side's settings.
    pub control: ControlConfig,
    /// Neighbour resolution and ICMP settings (`[neighbour]`, `[icmp]`).
    pub router: RouterSettings,
    /// `[routes] source = "kernel"`: the kernel table mirrored beside
    /// the configured routes (which win for the same prefix).
    pub kernel: Option<KernelRoutes>,
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
    /// Whether any port has addresses: then the forwarder is a router
    /// (answers ARP and ND, resolves neighbours, sends ICMP).
    pub fn is_router(&self) -> bool {
        self.ports.iter().any(|p| !p.addresses.is_empty())
    }

    /// Every route: the inline ones, then the route file's.
    pub fn all_routes(&self) -> impl Iterator<Item = &RouteConfig> + '_ {
        self.routes.iter().chain(self.file_routes.iter())
    }

    /// How many routes there are, inline and from the route file.
    pub fn route_count(&self) -> usize {
        self.routes.len() + self.file_routes.len()
    }
}

/// Positions in one text.
pub(crate) struct Located<'a> {
    file: &'a str,
    text: &'a str,
}

impl Located<'_> {
    fn at(&self, span: Range<usize>, message: impl Into<String>) -> ConfigError {
        let before = &self.text[..span.start.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
        ConfigError {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
        }
    }

    pub(crate) fn of<T>(&self, v: &Spanned<T>, message: impl Into<String>) -> ConfigError {
        self.at(v.span(), message)
    }

    /// `file:line:col` of `v`, for errors found later (by a driver, by
    /// the system).
    fn place<T>(&self, v: &Spanned<T>) -> String {
        let e = self.of(v, "");
        format!("{}:{}:{}", e.file, e.line, e.col)
    }
}

fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let v = FieldType::EtherAddr.parse_value(s)?;
    let b = v.to_be_bytes();
    Ok([b[10], b[11], b[12], b[13], b[14], b[15]])
}

/// A port's address: `192.0.2.1/24`, `2001:db8::1/64` (a host address
/// with its network's length; neither a network nor a group address).
fn port_address(s: &str) -> Result<PortAddress, String> {
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

fn parse_prefix(s: &str) -> Result<(bool, u128, u32), String> {
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
fn fast_prefix(s: &str) -> Result<(bool, u128, u32), String> {
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

/// Names to indices, refusing duplicates.
fn index<'a, T>(
    loc: &Located,
    items: &'a [T],
    name: impl Fn(&'a T) -> &'a Spanned<String>,
    what: &str,
) -> Result<HashMap<&'a str, usize>, ConfigError> {
    let mut m = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        let n = name(it);
        if m.insert(n.get_ref().as_str(), i).is_some() {
            return Err(loc.of(n, format!("duplicate {what} name `{}`", n.get_ref())));
        }
    }
    Ok(m)
}

pub(crate) fn validate(
    file: &str,
    text: &str,
    dir: &Path,
    loader: &mut Loader,
) -> Result<Config, ConfigError> {
    validate_all(file, text, dir, loader).map_err(|mut errs| errs.swap_remove(0))
}

/// [`validate`], with every error found rather than the first: each
/// section (forwarder, ports, each set, next hops, ECMP groups, routes,
/// the caches, control) is checked whatever the others gave, except what
/// depends on a section that failed (routes need the next hops' names).
/// Never an empty list.
pub(crate) fn validate_all(
    file: &str,
    text: &str,
    dir: &Path,
    loader: &mut Loader,
) -> Result<Config, Vec<ConfigError>> {
    let loc = Located { file, text };
    let raw: schema::File = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        vec![loc.at(span, e.message().trim().to_string())]
    })?;
    fn take<T>(r: Result<T, ConfigError>, errs: &mut Vec<ConfigError>) -> Option<T> {
        r.map_err(|e| errs.push(e)).ok()
    }
    let mut errs = Vec::new();
    let forwarder = take(forwarder(&loc, raw.forwarder), &mut errs);
    let port_names = take(index(&loc, &raw.port, |p| &p.name, "port"), &mut errs);
    let ports = take(ports(&loc, &raw.port), &mut errs);
    let sets = match sets(&loc, &raw.set, dir, loader) {
        Ok(s) => Some(s),
        Err(mut e) => {
            errs.append(&mut e);
            None
        }
    };
    let hop_names = take(
        index(&loc, &raw.next_hop, |h| &h.name, "next hop"),
        &mut errs,
    );
    let next_hops = match (&port_names, &ports) {
        (Some(names), Some(ports)) => take(next_hops(&loc, &raw.next_hop, names, ports), &mut errs),
        _ => None,
    };
    let group_names = take(index(&loc, &raw.ecmp, |g| &g.name, "ECMP group"), &mut errs);
    let ecmp = hop_names
        .as_ref()
        .and_then(|h| take(ecmp_groups(&loc, &raw.ecmp, h), &mut errs));
    let mut gateways = Vec::new();
    let routes = match (&hop_names, &group_names, &ports) {
        (Some(hops), Some(groups), Some(ports)) => {
            let targets = Targets {
                hops,
                groups,
                ports,
                gateways: Default::default(),
            };
            let r = take(
                all_routes(&loc, (&raw.route, &raw.route_file), dir, &targets, loader),
                &mut errs,
            );
            gateways = targets.gateways.into_inner();
            r
        }
        _ => None,
    };
    let next_hops = next_hops.map(|mut h| {
        h.extend(gateways.into_iter().map(|(ip, port)| NextHopConfig {
            name: ip.to_string(),
            port,
            mac: None,
            address: Some(ip),
        }));
        h
    });
    let router = take(router(&loc, &raw.neighbour, &raw.icmp), &mut errs);
    let kernel = take(kernel_routes(&loc, &raw.routes, ports.as_ref()), &mut errs);
    let flow_cache = take(flow_cache(&loc, raw.flow_cache, &raw.set), &mut errs);
    let route_cache = take(route_cache(&loc, raw.route_cache), &mut errs);
    let control = take(control(&loc, raw.control.as_ref(), dir), &mut errs);
    // A section without a value has its error (or depends on one that
    // has), so with no errors every section gave its value.
    let config = (|| {
        let (routes, route_file, file_routes) = routes?;
        Some(Config {
            forwarder: forwarder?,
            ports: ports?,
            sets: sets?,
            next_hops: next_hops?,
            ecmp: ecmp?,
            routes,
            file_routes,
            route_cache: route_cache?,
            flow_cache: flow_cache?,
            control: control?,
            route_file,
            router: router?,
            kernel: kernel?,
        })
    })();
    match config {
        Some(c) if errs.is_empty() => Ok(c),
        _ => Err(errs),
    }
}

/// The inline routes and the route file's.
#[allow(clippy::type_complexity)]
fn all_routes(
    loc: &Located,
    raw: (&[schema::Route], &Option<Spanned<String>>),
    dir: &Path,
    targets: &Targets,
    loader: &mut Loader,
) -> Result<
    (
        Vec<RouteConfig>,
        Option<std::path::PathBuf>,
        Arc<[RouteConfig]>,
    ),
    ConfigError,
> {
    let (inline, file) = raw;
    let mut seen = HashSet::new();
    let routes = inline_routes(loc, inline, targets, &mut seen)?;
    let (route_file, file_routes) = match file {
        Some(f) => {
            let (path, file_routes) = route_file(loc, f, dir, targets, &seen, loader)?;
            // Against routes a reused file gave: each inline one looked
            // up (a parsed file was checked against them as it was read).
            if let Some(r) = inline.iter().find(|r| {
                parse_prefix(r.prefix.get_ref()).is_ok_and(|key| loader::holds(&file_routes, key))
            }) {
                return Err(loc.of(
                    &r.prefix,
                    format!(
                        "route `{}` is given twice (also in `{}`)",
                        r.prefix.get_ref(),
                        f.get_ref()
                    ),
                ));
            }
            (Some(path), file_routes)
        }
        None => (None, Arc::from(Vec::new())),
    };
    Ok((routes, route_file, file_routes))
}

/// `[neighbour]` and `[icmp]`.
fn router(
    loc: &Located,
    n: &Option<schema::Neighbour>,
    i: &Option<schema::Icmp>,
) -> Result<RouterSettings, ConfigError> {
    let mut r = RouterSettings::default();
    fn ms(
        loc: &Located,
        v: &Option<Spanned<u64>>,
        min: u64,
        to: &mut u64,
    ) -> Result<(), ConfigError> {
        if let Some(v) = v {
            if !(min..=3_600_000).contains(v.get_ref()) {
                return Err(loc.of(v, format!("{} ms is outside {min}-3600000", v.get_ref())));
            }
            *to = *v.get_ref();
        }
        Ok(())
    }
    if let Some(n) = n {
        ms(loc, &n.reachable_ms, 1, &mut r.neighbour.reachable_ms)?;
        ms(loc, &n.retrans_ms, 1, &mut r.neighbour.retrans_ms)?;
        ms(loc, &n.delay_ms, 0, &mut r.neighbour.delay_ms)?;
        if let Some(p) = &n.probes {
            if !(1..=100).contains(p.get_ref()) {
                return Err(loc.of(p, format!("probes = {} is outside 1-100", p.get_ref())));
            }
            r.neighbour.probes = *p.get_ref();
        }
    }
    if let Some(i) = i {
        ms(loc, &i.ratelimit_ms, 0, &mut r.icmp.ratelimit_ms)?;
        for (v, to) in [
            (&i.msgs_per_sec, &mut r.icmp.msgs_per_sec),
            (&i.msgs_burst, &mut r.icmp.msgs_burst),
        ] {
            if let Some(v) = v {
                if *v.get_ref() > 1_000_000 {
                    return Err(loc.of(v, format!("{} is more than 1000000", v.get_ref())));
                }
                *to = *v.get_ref();
            }
        }
    }
    Ok(r)
}

/// Packets per burst when the file does not say: 64, the most a burst
/// holds. Without a flow cache answering, a burst's lookups in a full
/// table are cache misses that overlap only within the burst: 64 packets
/// forwarded 16-18 % more than 32 at 262,144 flows a port and 3-5 % more
/// at the example's flows, with 4-5 % fewer instructions a packet
/// (`bench forward --burst 32 --burst 64`, BENCHMARKS.md).
pub const DEFAULT_BURST: usize = 64;

fn forwarder(loc: &Located, f: Option<schema::Forwarder>) -> Result<Forwarder, ConfigError> {
    let Some(f) = f else {
        return Ok(Forwarder {
            cores: vec![0],
            burst: DEFAULT_BURST,
            cores_at: loc.file.to_string(),
        });
    };
    let (cores, cores_at) = match f.cores {
        None => (vec![0], loc.file.to_string()),
        Some(c) => {
            if c.get_ref().is_empty() {
                return Err(loc.of(&c, "`cores` lists no core"));
            }
            let mut seen = c.get_ref().clone();
            seen.sort_unstable();
            if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
                return Err(loc.of(&c, format!("core {} is listed twice", w[0])));
            }
            let at = loc.place(&c);
            (c.into_inner(), at)
        }
    };
    let burst = match f.burst {
        None => DEFAULT_BURST,
        Some(b) if (1..=64).contains(b.get_ref()) => b.into_inner(),
        Some(b) => return Err(loc.of(&b, format!("burst {} is outside 1-64", b.get_ref()))),
    };
    Ok(Forwarder {
        cores,
        burst,
        cores_at,
    })
}

fn ports(loc: &Located, raw: &[schema::Port]) -> Result<Vec<PortConfig>, ConfigError> {
    let mut ports = Vec::new();
    for (i, p) in raw.iter().enumerate() {
        let kind = match &p.driver {
            None => "synthetic",
            Some(d) if DRIVERS.contains(&d.get_ref().as_str()) => d.get_ref().as_str(),
            Some(d) => {
                return Err(loc.of(
                    d,
                    format!("unknown driver `{}` ({})", d.get_ref(), DRIVERS.join(", ")),
                ))
            }
        };
        let driver = driver::parse(loc, kind, p.name.get_ref(), &p.options)?;
        let mac = match &p.mac {
            None => [2, 0, 0, 0, 0, (i + 1) as u8],
            Some(m) => parse_mac(m.get_ref()).map_err(|e| loc.of(m, e))?,
        };
        let mut addresses: Vec<PortAddress> = Vec::new();
        for a in &p.address {
            let pa = port_address(a.get_ref()).map_err(|e| loc.of(a, e))?;
            if addresses.iter().any(|b| b.ip == pa.ip) {
                return Err(loc.of(a, format!("address `{}` is given twice", a.get_ref())));
            }
            addresses.push(pa);
        }
        let given_ll = addresses
            .iter()
            .any(|a| matches!(a.ip, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80));
        if !addresses.is_empty() && !given_ll {
            addresses.push(PortAddress {
                ip: IpAddr::V6(link_local(mac)),
                len: 64,
            });
        }
        let mtu = match &p.mtu {
            None => 1500,
            Some(m) if (68..=9000).contains(m.get_ref()) => *m.get_ref(),
            Some(m) => return Err(loc.of(m, format!("mtu {} is outside 68-9000", m.get_ref()))),
        };
        let tap = match &p.punt {
            None => {
                if let Some(t) = &p.tap_name {
                    return Err(loc.of(t, "`tap_name` needs `punt = \"tap\"`"));
                }
                None
            }
            Some(v) if v.get_ref() == "tap" => {
                if addresses.is_empty() {
                    return Err(loc.of(
                        v,
                        "`punt = \"tap\"` needs the port's addresses (`address = [...]`)",
                    ));
                }
                let name = match &p.tap_name {
                    Some(t) => t.get_ref().clone(),
                    None => format!("tap-{}", p.name.get_ref()),
                };
                if !if_name_ok(&name) {
                    let at = p.tap_name.as_ref().map_or(&p.name, |t| t);
                    return Err(loc.of(
                        at,
                        format!(
                            "TAP name `{name}` is not an interface name (1-15 bytes); give `tap_name`"
                        ),
                    ));
                }
                Some(name)
            }
            Some(v) => return Err(loc.of(v, format!("unknown punt `{}` (tap)", v.get_ref()))),
        };
        let kernel_interface = match &p.kernel_interface {
            Some(k) if !if_name_ok(k.get_ref()) => {
                return Err(loc.of(k, "an interface name (1-15 bytes)"))
            }
            k => k.as_ref().map(|k| k.get_ref().clone()),
        };
        ports.push(PortConfig {
            name: p.name.get_ref().clone(),
            driver,
            mac,
            at: loc.place(&p.name),
            addresses,
            mtu,
            tap,
            kernel_interface,
        });
    }
    // A TAP is a new interface: not one a port already names.
    for (i, p) in ports.iter().enumerate() {
        let Some(t) = &p.tap else { continue };
        let clash = ports.iter().enumerate().find(|&(j, q)| {
            let mut names = q.kernel_names();
            if j == i {
                names.pop(); // its own TAP, last
            }
            names.contains(t)
        });
        if let Some((_, q)) = clash {
            let at = raw[i].tap_name.as_ref().unwrap_or(&raw[i].name);
            return Err(loc.of(
                at,
                format!("TAP name `{t}` is port `{}`'s interface", q.name),
            ));
        }
    }
    Ok(ports)
}

fn if_name_ok(s: &str) -> bool {
    !s.is_empty() && s.len() < 16 && !s.contains(['/', '\0', ' ', ':'])
}

/// `[routes]`.
fn kernel_routes(
    loc: &Located,
    raw: &Option<schema::Routes>,
    ports: Option<&Vec<PortConfig>>,
) -> Result<Option<KernelRoutes>, ConfigError> {
    let Some(r) = raw else {
        return Ok(None);
    };
    match &r.source {
        Some(s) if s.get_ref() == "kernel" => {
            if ports.is_some_and(|p| p.iter().all(|p| p.addresses.is_empty())) {
                return Err(loc.of(
                    s,
                    "`source = \"kernel\"` needs addresses on the ports: the forwarder resolves the kernel's gateways itself",
                ));
            }
        }
        Some(s) if s.get_ref() == "config" => {
            if let Some(t) = &r.table {
                return Err(loc.of(t, "`table` needs `source = \"kernel\"`"));
            }
            return Ok(None);
        }
        Some(s) => {
            return Err(loc.of(
                s,
                format!("unknown route source `{}` (config, kernel)", s.get_ref()),
            ))
        }
        None => return Ok(None),
    }
    let table = match &r.table {
        None => 254,
        Some(t) if (1..=0xffff_fffe).contains(t.get_ref()) && *t.get_ref() != 255 => *t.get_ref(),
        Some(t) => {
            return Err(loc.of(
                t,
                format!("table {} is not a routing table of routes to mirror (1-254, 256-...; not 255, local)", t.get_ref()),
            ))
        }
    };
    let mut protocols = Vec::new();
    for p in r.protocols.iter().flat_map(|p| p.get_ref()) {
        let v = p.get_ref();
        let n = ROUTE_PROTOCOLS
            .iter()
            .find(|(name, _)| name == v)
            .map(|&(_, n)| n)
            .or_else(|| v.parse::<u8>().ok())
            .ok_or_else(|| {
                loc.of(
                    p,
                    format!(
                        "unknown route protocol `{v}` (a number 0-255 or one of {})",
                        ROUTE_PROTOCOLS
                            .iter()
                            .map(|(n, _)| *n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?;
        protocols.push(n);
    }
    Ok(Some(KernelRoutes { table, protocols }))
}

/// The sets, each checked whatever the others gave: every set's first
/// error.
fn sets(
    loc: &Located,
    raw: &[schema::Set],
    dir: &Path,
    loader: &mut Loader,
) -> Result<Vec<SetConfig>, Vec<ConfigError>> {
    index(loc, raw, |s| &s.name, "set").map_err(|e| vec![e])?;
    if let Some(s) = raw.get(MAX_SETS) {
        return Err(vec![loc.of(
            &s.name,
            format!("set `{}`: at most {MAX_SETS} rule sets", s.name.get_ref()),
        )]);
    }
    let mut sets = Vec::new();
    let mut errs = Vec::new();
    for s in raw {
        match validate_set(loc, s, dir, loader) {
            Ok(s) => sets.push(s),
            Err(e) => errs.push(e),
        }
    }
    if errs.is_empty() {
        Ok(sets)
    } else {
        Err(errs)
    }
}

fn next_hops(
    loc: &Located,
    raw: &[schema::NextHop],
    port_names: &HashMap<&str, usize>,
    ports: &[PortConfig],
) -> Result<Vec<NextHopConfig>, ConfigError> {
    let mut next_hops = Vec::new();
    for h in raw {
        let port = *port_names
            .get(h.port.get_ref().as_str())
            .ok_or_else(|| loc.of(&h.port, format!("unknown port `{}`", h.port.get_ref())))?;
        let mac = match &h.mac {
            Some(m) => Some(parse_mac(m.get_ref()).map_err(|e| loc.of(m, e))?),
            None => None,
        };
        let address = match &h.address {
            Some(a) => {
                let ip: IpAddr = a.get_ref().parse().map_err(|_| {
                    loc.of(
                        a,
                        format!("`{}` is not an IP address", excerpt(a.get_ref())),
                    )
                })?;
                let p = &ports[port];
                if !p.addresses.iter().any(|pa| pa.covers(ip)) {
                    return Err(loc.of(
                        a,
                        format!(
                            "`{ip}` is on none of port `{}`'s networks (its `address` list)",
                            p.name
                        ),
                    ));
                }
                Some(ip)
            }
            None => None,
        };
        if mac.is_none() && address.is_none() {
            return Err(loc.of(
                &h.name,
                format!(
                    "next hop `{}` needs a `mac` or an `address` (resolved on its port)",
                    h.name.get_ref()
                ),
            ));
        }
        next_hops.push(NextHopConfig {
            name: h.name.get_ref().clone(),
            port,
            mac,
            address,
        });
    }
    Ok(next_hops)
}

/// The port whose networks hold `ip` (the first, in file order).
fn port_of(ports: &[PortConfig], ip: IpAddr) -> Option<usize> {
    ports
        .iter()
        .position(|p| p.addresses.iter().any(|a| a.covers(ip)))
}

fn ecmp_groups(
    loc: &Located,
    raw: &[schema::Ecmp],
    hop_names: &HashMap<&str, usize>,
) -> Result<Vec<EcmpGroup>, ConfigError> {
    let mut ecmp = Vec::new();
    for g in raw {
        if hop_names.contains_key(g.name.get_ref().as_str()) {
            return Err(loc.of(
                &g.name,
                format!(
                    "`{}` names both a next hop and an ECMP group",
                    g.name.get_ref()
                ),
            ));
        }
        if g.members.get_ref().is_empty() {
            return Err(loc.of(&g.members, "an ECMP group needs at least one member"));
        }
        let mut members = Vec::new();
        for m in g.members.get_ref() {
            members.push(
                *hop_names
                    .get(m.get_ref().as_str())
                    .ok_or_else(|| loc.of(m, format!("unknown next hop `{}`", m.get_ref())))?,
            );
        }
        ecmp.push(EcmpGroup {
            name: g.name.get_ref().clone(),
            members,
        });
    }
    Ok(ecmp)
}

/// What a route's `via` may name: next hops and ECMP groups, by name,
/// and (inline routes) a gateway's address on one of the ports'
/// networks, which becomes a next hop of its own.
struct Targets<'a> {
    hops: &'a HashMap<&'a str, usize>,
    groups: &'a HashMap<&'a str, usize>,
    ports: &'a [PortConfig],
    /// The next hops gateways' addresses made, in order, after the
    /// configured ones (`hops.len()` of them).
    gateways: std::cell::RefCell<Vec<(IpAddr, usize)>>,
}

impl Targets<'_> {
    /// The next hop or ECMP group `name`, or the error's message.
    fn via(&self, name: &str) -> Result<Via, String> {
        match (self.hops.get(name), self.groups.get(name)) {
            (Some(&h), _) => Ok(Via::NextHop(h)),
            (None, Some(&g)) => Ok(Via::Ecmp(g)),
            (None, None) => Err(format!(
                "unknown next hop or ECMP group `{}`",
                excerpt(name)
            )),
        }
    }

    /// [`Targets::via`], or the next hop of the gateway address `name`.
    fn via_or_gateway(&self, name: &str) -> Result<Via, String> {
        let Ok(ip) = name.parse::<IpAddr>() else {
            return self.via(name);
        };
        let port = port_of(self.ports, ip).ok_or_else(|| {
            format!("gateway `{ip}` is on none of the ports' networks (their `address` lists)")
        })?;
        let mut g = self.gateways.borrow_mut();
        let at = match g.iter().position(|&(a, _)| a == ip) {
            Some(i) => i,
            None => {
                g.push((ip, port));
                g.len() - 1
            }
        };
        Ok(Via::NextHop(self.hops.len() + at))
    }
}

/// The routes `seen` so far, to refuse one given twice.
type Seen = HashSet<(bool, u128, u32)>;

fn inline_routes(
    loc: &Located,
    raw: &[schema::Route],
    targets: &Targets,
    seen: &mut Seen,
) -> Result<Vec<RouteConfig>, ConfigError> {
    let mut routes = Vec::new();
    for r in raw {
        let (v6, prefix, len) =
            parse_prefix(r.prefix.get_ref()).map_err(|e| loc.of(&r.prefix, e))?;
        if !seen.insert((v6, prefix, len)) {
            return Err(loc.of(
                &r.prefix,
                format!("route `{}` is given twice", r.prefix.get_ref()),
            ));
        }
        if let Some(p) = targets.ports.iter().find(|p| {
            p.addresses
                .iter()
                .any(|a| (a.v6(), a.network(), a.len) == (v6, prefix, len))
        }) {
            return Err(loc.of(
                &r.prefix,
                format!(
                    "route `{}` is port `{}`'s connected network (its address installs it)",
                    r.prefix.get_ref(),
                    p.name
                ),
            ));
        }
        let via = targets
            .via_or_gateway(r.via.get_ref())
            .map_err(|e| loc.of(&r.via, e))?;
        routes.push(RouteConfig {
            v6,
            prefix,
            len,
            via,
        });
    }
    Ok(routes)
}

/// The routes of the route file `f`, sorted by prefix, and its path: one
/// `PREFIX VIA` a line (a full table is a million lines: read without
/// TOML, about ten times faster). An unchanged file's routes are reused.
fn route_file(
    loc: &Located,
    f: &Spanned<String>,
    dir: &Path,
    targets: &Targets,
    inline: &Seen,
    loader: &mut Loader,
) -> Result<(std::path::PathBuf, Arc<[RouteConfig]>), ConfigError> {
    let path = dir.join(f.get_ref());
    let cannot = |e: std::io::Error| loc.of(f, format!("cannot read `{}`: {e}", f.get_ref()));
    let mut hops: Vec<(&str, usize)> = targets.hops.iter().map(|(k, v)| (*k, *v)).collect();
    let mut groups: Vec<(&str, usize)> = targets.groups.iter().map(|(k, v)| (*k, *v)).collect();
    hops.sort_unstable_by_key(|h| h.1);
    groups.sort_unstable_by_key(|g| g.1);
    let hops: Vec<String> = hops.into_iter().map(|h| h.0.to_string()).collect();
    let groups: Vec<String> = groups.into_iter().map(|g| g.0.to_string()).collect();
    let same = |g: &Gave| match g {
        Gave::Routes {
            hops: h,
            groups: gr,
            routes,
        } if *h == hops && *gr == groups => Some(routes.clone()),
        _ => None,
    };
    let text = match loader.get(&path, same).map_err(cannot)? {
        Got::Reused(routes) => return Ok((path, routes)),
        Got::Text(t) => t,
    };
    let name = path.display().to_string();
    let mut seen = inline.clone();
    let mut routes = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let body = line.split('#').next().unwrap_or("");
        let mut words = body.split_whitespace();
        let Some(prefix) = words.next() else { continue };
        let col = |w: &str| w.as_ptr() as usize - line.as_ptr() as usize + 1;
        let at = |w: &str, message: String| ConfigError {
            file: name.clone(),
            line: n + 1,
            col: col(w),
            message,
        };
        let Some(via) = words.next() else {
            return Err(at(
                prefix,
                format!("`{}` has no next hop (PREFIX VIA)", excerpt(prefix)),
            ));
        };
        if let Some(extra) = words.next() {
            return Err(at(
                extra,
                format!("unexpected `{}` (PREFIX VIA)", excerpt(extra)),
            ));
        }
        let (v6, p, len) = fast_prefix(prefix).map_err(|e| at(prefix, e))?;
        if !seen.insert((v6, p, len)) {
            return Err(at(
                prefix,
                format!("route `{}` is given twice", excerpt(prefix)),
            ));
        }
        let via = targets.via(via).map_err(|e| at(via, e))?;
        routes.push(RouteConfig {
            v6,
            prefix: p,
            len,
            via,
        });
    }
    loader::sort_routes(&mut routes);
    let routes: Arc<[RouteConfig]> = routes.into();
    loader.gave(
        &path,
        Gave::Routes {
            hops,
            groups,
            routes: routes.clone(),
        },
    );
    Ok((path, routes))
}

fn control(
    loc: &Located,
    c: Option<&schema::Control>,
    dir: &Path,
) -> Result<ControlConfig, ConfigError> {
    let Some(c) = c else {
        return Ok(ControlConfig {
            watch: true,
            ..ControlConfig::default()
        });
    };
    Ok(ControlConfig {
        socket: match &c.socket {
            Some(s) if s.get_ref().is_empty() => {
                return Err(loc.of(s, "`socket` is empty"));
            }
            Some(s) => Some(dir.join(s.get_ref())),
            None => None,
        },
        prometheus: match &c.prometheus {
            Some(a) => Some(a.get_ref().parse().map_err(|_| {
                loc.of(
                    a,
                    format!(
                        "`{}` is not an address:port such as 127.0.0.1:9100",
                        a.get_ref()
                    ),
                )
            })?),
            None => None,
        },
        watch: c.watch.unwrap_or(true),
        group: match &c.group {
            Some(g) if g.get_ref().is_empty() => return Err(loc.of(g, "`group` is empty")),
            Some(g) => Some(g.get_ref().clone()),
            None => None,
        },
        allow_uids: c
            .allow_uids
            .as_ref()
            .map(|u| u.get_ref().clone())
            .unwrap_or_default(),
    })
}

/// `[flow_cache]`, and whether the rule sets `sets` fit its entries.
fn flow_cache(
    loc: &Located,
    c: Option<schema::FlowCache>,
    sets: &[schema::Set],
) -> Result<FlowCache, ConfigError> {
    let flow_cache = match c {
        None => FlowCache::default(),
        Some(c) => {
            if let Some(n) = c.entries.as_ref().filter(|n| *n.get_ref() > 1 << 22) {
                return Err(loc.of(
                    n,
                    format!("{} flow cache entries is more than 4194304", n.get_ref()),
                ));
            }
            if let Some(n) = c
                .insert_one_in
                .as_ref()
                .filter(|n| !(1..=65536).contains(n.get_ref()))
            {
                return Err(loc.of(
                    n,
                    format!("insert_one_in = {} is not in 1..=65536", n.get_ref()),
                ));
            }
            FlowCache {
                entries: c.entries.map(Spanned::into_inner),
                insert_one_in: c.insert_one_in.map(Spanned::into_inner),
            }
        }
    };
    match sets.get(FlowCache::MAX_SETS) {
        Some(s) if flow_cache.entries != Some(0) => Err(loc.of(
            &s.name,
            format!(
                "set `{}`: the flow cache records the matches of at most {} rule sets; \
                 with more, turn it off (`[flow_cache] entries = 0`)",
                s.name.get_ref(),
                FlowCache::MAX_SETS
            ),
        )),
        _ => Ok(flow_cache),
    }
}

fn route_cache(loc: &Located, c: Option<schema::RouteCache>) -> Result<RouteCache, ConfigError> {
    let Some(c) = c else {
        return Ok(RouteCache {
            hint: None,
            dst_cache_entries: None,
            hash: None,
        });
    };
    if let Some(h) = &c.hash {
        if !["jhash", "jhash2", "ahash"].contains(&h.get_ref().as_str()) {
            return Err(loc.of(
                h,
                format!("unknown hash `{}` (jhash, jhash2, ahash)", h.get_ref()),
            ));
        }
    }
    if let Some(n) = &c.dst_cache_entries {
        if *n.get_ref() > 1 << 20 {
            return Err(loc.of(
                n,
                format!("{} dst cache entries is more than 1048576", n.get_ref()),
            ));
        }
    }
    Ok(RouteCache {
        hint: c.hint,
        dst_cache_entries: c.dst_cache_entries.map(Spanned::into_inner),
        hash: c.hash.map(Spanned::into_inner),
    })
}

/// Changes to a set file past which the full check is the cheaper one.
const FEW_CHANGES: usize = 64;

/// Whether `new`, which differs from the checked `prev` in at most
/// [`FEW_CHANGES`] elements, is a valid set too: every element added is
/// valid, takes no timeout, has a key no other element has and, in a
/// disjoint set, overlaps none of them. `false` also when the changes
/// are many: the caller then checks `new` in full.
fn few_changes_fit(prev: &[Element], new: &[Element], decl: &SetDecl) -> bool {
    let (removed, added) = crate::diff_elements(prev, new);
    // The diff sees an element twice as once: a count that does not add
    // up is a duplicate (of an element `prev` has).
    if removed.len() + added.len() > FEW_CHANGES
        || new.len() + removed.len() != prev.len() + added.len()
    {
        return false;
    }
    let mut alone = matcher::Set::new(decl.clone());
    for a in &added {
        if a.timeout.is_some() || alone.insert((*a).clone(), InsertMode::Create).is_err() {
            return false;
        }
    }
    let disjoint = decl.policy() == matcher::Policy::Disjoint;
    new.iter().all(|e| {
        added
            .iter()
            .all(|a| std::ptr::eq(*a, e) || (a.key != e.key && !(disjoint && a.overlaps(e))))
    })
}

/// Why a configuration's elements take no `timeout`.
const NO_FILE_TIMEOUTS: &str = "an element of the configuration or a set file has no `timeout`: \
     they are the durable elements (each reload and restart would start its clock again); \
     elements that expire are added at run time (`forwarder element add`), where the set's \
     `timeout` or their own applies";

fn validate_set(
    loc: &Located,
    s: &schema::Set,
    dir: &Path,
    loader: &mut Loader,
) -> Result<SetConfig, ConfigError> {
    let mut decl = SetDecl::parse(s.type_.get_ref()).map_err(|e| loc.of(&s.type_, e))?;
    if let Some(p) = &s.policy {
        let policy = matcher::Policy::parse(p.get_ref()).map_err(|e| loc.of(p, e))?;
        if policy == matcher::Policy::FirstMatch && decl.has_timeouts() {
            return Err(loc.of(
                p,
                format!(
                    "`policy = \"{}\"` with `flags timeout` (`{decl}`): an expired element \
                     would still hide the ones ranked after it",
                    p.get_ref()
                ),
            ));
        }
        if decl.policy() != matcher::Policy::Disjoint && decl.policy() != policy {
            return Err(loc.of(
                p,
                format!(
                    "`policy = \"{}\"` contradicts the type's flags (`{decl}`)",
                    p.get_ref()
                ),
            ));
        }
        decl = decl.with_policy(policy);
    }
    let mut sources = Vec::new();
    for part in s.match_.get_ref().split(" . ") {
        sources.push(Source::parse(part).map_err(|e| loc.of(&s.match_, e))?);
    }
    if sources.len() != decl.fields().len() {
        return Err(loc.of(
            &s.match_,
            format!(
                "`{}` names {} packet fields, the set's type has {}",
                s.match_.get_ref(),
                sources.len(),
                decl.fields().len()
            ),
        ));
    }
    for (src, t) in sources.iter().zip(decl.fields()) {
        if src.field_type() != *t {
            return Err(loc.of(
                &s.match_,
                format!(
                    "`{}`: a {} field is fed a {}",
                    s.match_.get_ref(),
                    t,
                    src.field_type()
                ),
            ));
        }
    }
    let is_verdict_map = decl.data() == Some(DataType::Verdict);
    let action = match (&s.action, is_verdict_map) {
        (None, true) => Action::Verdict,
        (None, false) => {
            return Err(loc.of(
                &s.name,
                format!("set `{}` needs an action: drop or accept", s.name.get_ref()),
            ))
        }
        (Some(a), _) => match (a.get_ref().as_str(), is_verdict_map) {
            ("drop", false) => Action::Drop,
            ("accept", false) => Action::Accept,
            ("reject", false) => Action::Reject,
            ("verdict", true) => Action::Verdict,
            ("verdict", false) => {
                return Err(loc.of(a, "`verdict` needs a map with `: verdict` data"))
            }
            (other, true) => {
                return Err(loc.of(
                    a,
                    format!("a verdict map's action is `verdict`, not `{other}`"),
                ))
            }
            (other, false) => {
                return Err(loc.of(
                    a,
                    format!("unknown action `{other}` (drop, accept, reject, verdict)"),
                ))
            }
        },
    };
    // Elements: inline ones located at their string, file ones at their
    // line in that file; overlaps and duplicates checked by the set itself.
    let mut inline = Vec::new();
    for e in &s.elements {
        let el = decl
            .parse_element(e.get_ref())
            .map_err(|err| loc.of(e, err.to_string()))?;
        if el.timeout.is_some() {
            return Err(loc.of(e, NO_FILE_TIMEOUTS));
        }
        inline.push(el);
    }
    let mut set = matcher::Set::new(decl.clone());
    for (el, e) in inline.iter().zip(&s.elements) {
        set.insert(el.clone(), InsertMode::Create)
            .map_err(|err| loc.of(e, err.to_string()))?;
    }
    let (file, elements) = match &s.file {
        None => (None, Arc::new(inline)),
        Some(f) => {
            let path = dir.join(f.get_ref());
            let elements = set_file(loc, f, &path, &decl, inline, set, loader)?;
            (Some(path), elements)
        }
    };
    Ok(SetConfig {
        name: s.name.get_ref().clone(),
        decl,
        sources,
        action,
        elements,
        file,
    })
}

/// A set's elements with those of its file `f` at `path`: `inline` and
/// the file's, checked together in `set` (which holds `inline`). What an
/// unchanged file gave with the same type and inline elements is reused
/// without a parse or a check.
fn set_file(
    loc: &Located,
    f: &Spanned<String>,
    path: &Path,
    decl: &SetDecl,
    inline: Vec<Element>,
    mut set: matcher::Set,
    loader: &mut Loader,
) -> Result<Arc<Vec<Element>>, ConfigError> {
    let cannot = |e: std::io::Error| loc.of(f, format!("cannot read `{}`: {e}", f.get_ref()));
    let same = |g: &Gave| match g {
        Gave::Set {
            decl: d,
            inline: i,
            elements,
        } if d == decl && *i == inline => Some(elements.clone()),
        _ => None,
    };
    let text = match loader.get(path, same).map_err(cannot)? {
        Got::Reused(elements) => return Ok(elements),
        Got::Text(t) => t,
    };
    let name = path.display().to_string();
    // The same files `forwarder lookup --set` reads: a `type` line is
    // optional, and must be the set's when given.
    let parsed = SetFile::parse_elements(&name, &text, decl).map_err(|e| ConfigError {
        file: e.file.clone(),
        line: e.line,
        col: 1,
        message: e.error.to_string(),
    })?;
    // A file edited in a few places: only the elements it adds are
    // checked, against the file's others; anything amiss (or many
    // changes) goes through the full check below, which says where.
    let prev = match loader.previous(path) {
        Some(Gave::Set {
            decl: d,
            inline: i,
            elements,
        }) if d == decl && *i == inline => Some(elements.clone()),
        _ => None,
    };
    if let Some(prev) = prev {
        let mut new = inline.clone();
        new.extend(parsed.iter().map(|(_, e)| e.clone()));
        if few_changes_fit(&prev, &new, decl) {
            let elements = Arc::new(new);
            loader.gave(
                path,
                Gave::Set {
                    decl: decl.clone(),
                    inline,
                    elements: elements.clone(),
                },
            );
            return Ok(elements);
        }
    }
    let mut elements = inline.clone();
    for (line, el) in parsed {
        if el.timeout.is_some() {
            return Err(ConfigError {
                file: name.clone(),
                line,
                col: 1,
                message: format!("`{}`: {NO_FILE_TIMEOUTS}", decl.format_element(&el)),
            });
        }
        set.insert(el.clone(), InsertMode::Create)
            .map_err(|err| ConfigError {
                file: name.clone(),
                line,
                col: 1,
                message: err.to_string(),
            })?;
        elements.push(el);
    }
    let elements = Arc::new(elements);
    loader.gave(
        path,
        Gave::Set {
            decl: decl.clone(),
            inline,
            elements: elements.clone(),
        },
    );
    Ok(elements)
}
