//! The file's shape, as serde reads it: every key known (unknown ones are
//! errors), every value that validation may reject kept with its span.

use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct File {
    pub forwarder: Option<Forwarder>,
    #[serde(default)]
    pub port: Vec<Port>,
    #[serde(default)]
    pub set: Vec<Set>,
    #[serde(default)]
    pub next_hop: Vec<NextHop>,
    #[serde(default)]
    pub ecmp: Vec<Ecmp>,
    #[serde(default)]
    pub route: Vec<Route>,
    #[serde(default)]
    pub vrf: Vec<Vrf>,
    pub route_file: Option<Spanned<String>>,
    pub routes: Option<Routes>,
    pub route_cache: Option<RouteCache>,
    pub flow_cache: Option<FlowCache>,
    pub conntrack: Option<Conntrack>,
    pub control: Option<Control>,
    pub neighbour: Option<Neighbour>,
    pub icmp: Option<Icmp>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Neighbour {
    pub reachable_ms: Option<Spanned<u64>>,
    pub retrans_ms: Option<Spanned<u64>>,
    pub delay_ms: Option<Spanned<u64>>,
    pub probes: Option<Spanned<u32>>,
    pub hold_bytes: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Routes {
    pub source: Option<Spanned<String>>,
    pub table: Option<Spanned<u32>>,
    pub protocols: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Icmp {
    pub msgs_per_sec: Option<Spanned<u32>>,
    pub msgs_burst: Option<Spanned<u32>>,
    pub ratelimit_ms: Option<Spanned<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Control {
    pub socket: Option<Spanned<String>>,
    pub group: Option<Spanned<String>>,
    pub allow_uids: Option<Spanned<Vec<u32>>>,
    pub prometheus: Option<Spanned<String>>,
    pub watch: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Forwarder {
    pub cores: Option<Spanned<Vec<usize>>>,
    pub burst: Option<Spanned<usize>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Port {
    pub name: Spanned<String>,
    pub driver: Option<Spanned<String>>,
    pub mac: Option<Spanned<String>>,
    #[serde(default)]
    pub address: Vec<Spanned<String>>,
    pub mtu: Option<Spanned<u16>>,
    pub punt: Option<Spanned<String>>,
    pub tap_name: Option<Spanned<String>>,
    pub kernel_interface: Option<Spanned<String>>,
    /// A VLAN sub-interface's port (`parent`) and tags (`vlan`: one
    /// integer, or `[outer, inner]`).
    pub parent: Option<Spanned<String>>,
    pub vlan: Option<Spanned<toml::Value>>,
    pub vrf: Option<Spanned<String>>,
    #[serde(default)]
    pub options: crate::driver::RawOptions,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Set {
    pub name: Spanned<String>,
    #[serde(rename = "type")]
    pub type_: Spanned<String>,
    #[serde(rename = "match")]
    pub match_: Spanned<String>,
    pub policy: Option<Spanned<String>>,
    pub action: Option<Spanned<String>>,
    #[serde(default)]
    pub elements: Vec<Spanned<String>>,
    pub file: Option<Spanned<String>>,
    /// nft's `counter` on the set: each element counts its packets.
    #[serde(default)]
    pub counter: bool,
    /// `prerouting` (the default) or `forward`.
    pub hook: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NextHop {
    pub name: Spanned<String>,
    pub port: Spanned<String>,
    pub mac: Option<Spanned<String>>,
    pub address: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Ecmp {
    pub name: Spanned<String>,
    pub members: Spanned<Vec<Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Route {
    pub prefix: Spanned<String>,
    pub via: Spanned<String>,
    pub vrf: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Vrf {
    pub name: Spanned<String>,
    pub table: Option<Spanned<u32>>,
    pub route_file: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FlowCache {
    pub entries: Option<Spanned<usize>>,
    pub insert_one_in: Option<Spanned<u32>>,
}

/// `[conntrack]`: the timeouts keep the names of Linux's sysctls
/// (`nf_conntrack_tcp_timeout_established` is `tcp_timeout_established`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Conntrack {
    pub enabled: Option<bool>,
    pub max: Option<Spanned<usize>>,
    pub acct: Option<bool>,
    pub tcp_timeout_syn_sent: Option<Spanned<u32>>,
    pub tcp_timeout_syn_recv: Option<Spanned<u32>>,
    pub tcp_timeout_established: Option<Spanned<u32>>,
    pub tcp_timeout_fin_wait: Option<Spanned<u32>>,
    pub tcp_timeout_close_wait: Option<Spanned<u32>>,
    pub tcp_timeout_last_ack: Option<Spanned<u32>>,
    pub tcp_timeout_time_wait: Option<Spanned<u32>>,
    pub tcp_timeout_close: Option<Spanned<u32>>,
    pub udp_timeout: Option<Spanned<u32>>,
    pub udp_timeout_stream: Option<Spanned<u32>>,
    pub icmp_timeout: Option<Spanned<u32>>,
    pub generic_timeout: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RouteCache {
    pub hint: Option<bool>,
    pub dst_cache_entries: Option<Spanned<usize>>,
    pub hash: Option<Spanned<String>>,
}
