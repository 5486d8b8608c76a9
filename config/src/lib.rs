//! The forwarder's TOML configuration: the schema, parsing, and
//! validation into typed values, with every error naming the file, line,
//! column and offending value (`forwarder.toml:14:9: unknown field type
//! `ipv5_addr``). Unknown keys are errors, not silently ignored.
//!
//! ```toml
//! [forwarder]
//! cores = [0]            # one worker per core
//! burst = 64             # packets per burst (1 to 64; default 64)
//!
//! [[port]]
//! name = "p0"
//! driver = "synthetic"   # synthetic | af_packet | af_xdp | dpdk
//! mac = "02:00:00:00:00:01"
//! address = ["192.0.2.1/24"]  # a router's port (optional): ARP, ND, ICMP
//!
//! [[set]]
//! name = "blocklist"
//! type = "ipv4_addr . inet_service"
//! match = "ip daddr . th dport"
//! action = "drop"        # drop | accept | reject | verdict (a verdict map decides)
//! elements = ["192.0.2.0/24 . 22"]   # and/or file = "blocklist.set"
//!
//! [[next_hop]]
//! name = "gw"
//! port = "p0"
//! mac = "02:00:00:00:00:fe"
//!
//! [[route]]
//! prefix = "0.0.0.0/0"
//! via = "gw"             # a next hop, an ECMP group, or a gateway's address
//! ```
//!
//! Inside, each module uses only those listed before it: `error`
//! (`file:line:col` errors), `addr` (addresses, prefixes, MACs), `driver`
//! (the drivers' options), `types` (the checked configuration), `paths`
//! (the control socket's place), `schema` (the file's shape as serde
//! reads it), `files` (what included files gave at their last read),
//! `validate` (each section's checks), `loader` (loads and reloads),
//! `diff` (element changes between two loads).
#![forbid(unsafe_code)]

mod addr;
mod diff;
pub mod driver;
mod error;
mod files;
mod loader;
mod paths;
mod schema;
mod types;
mod validate;

pub use addr::{ip_bits, link_local, parse_prefix, PortAddress};
pub use diff::diff_elements;
pub use driver::Driver;
pub use error::ConfigError;
pub use files::LoadStats;
pub use loader::Loader;
pub use paths::{control_socket, default_socket, runtime_dir, socket_for};
pub use types::{
    Action, Config, Conntrack, ControlConfig, CtTimeouts, EcmpGroup, ElementLines, FlowCache,
    Forwarder, Hook, IcmpSettings, KernelRoutes, NeighbourSettings, NextHopConfig, PortConfig,
    RouteCache, RouteConfig, RouterSettings, SetConfig, Source, Via, VrfConfig, DEFAULT_BURST,
    DEFAULT_VRF, MAX_SETS, ROUTE_PROTOCOLS,
};

use std::path::Path;

/// Reads and validates a configuration file; files it names (set element
/// files, the route file) are read relative to its directory. A
/// [`Loader`] does the same and remembers what each file gave, for
/// reloads.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    Loader::new().load(path)
}

/// Parses and validates configuration text; `name` appears in errors and
/// `dir` is where named files are looked for.
///
/// ```
/// let dir = std::path::Path::new(".");
/// let text = "route = [{ prefix = \"0.0.0.0/0\", via = \"gw\" }]\n\
///             [[port]]\nname = \"p0\"\n\
///             [[next_hop]]\nname = \"gw\"\nport = \"p0\"\nmac = \"02:00:00:00:00:fe\"\n";
/// let cfg = config::parse("f.toml", text, dir).unwrap();
/// assert_eq!((cfg.ports.len(), cfg.route_count()), (1, 1));
/// let bad = text.replace("0.0.0.0/0", "0.0.0.0/40");
/// let e = config::parse("f.toml", &bad, dir).unwrap_err();
/// assert_eq!((e.file.as_str(), e.line), ("f.toml", 1));
/// ```
pub fn parse(name: &str, text: &str, dir: &Path) -> Result<Config, ConfigError> {
    Loader::new().parse(name, text, dir)
}
