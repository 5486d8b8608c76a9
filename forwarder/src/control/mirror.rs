//! The kernel FIB mirror (`[routes] source = "kernel"`): the control
//! thread follows a kernel routing table over rtnetlink and applies each
//! change to the working FIB in place, then publishes once per batch of
//! notifications; nothing else is rebuilt.
//!
//! Precedence, per prefix: the router's own routes (a port address's
//! connected network and the address itself) first, then the
//! configuration's routes, then the kernel's. A kernel route for a
//! prefix the configuration also routes is kept aside ("shadowed") and
//! takes over if the configuration drops it. Of one prefix's kernel
//! routes, the lowest metric is used, as the kernel does.
//!
//! A kernel path maps to a port when its interface is one the port
//! names ([`config::PortConfig::kernel_names`]: `kernel_interface`, its
//! Linux interface, its TAP). A path by a gateway becomes a next hop
//! resolved by the router on that port; a path without one is a
//! connected route (the destination is the neighbour). A multipath
//! route becomes an ECMP group (weights by repetition when they sum to
//! at most 64). Paths by other interfaces are dropped from a route; a
//! route left with none, and blackhole, unreachable, prohibit and throw
//! routes, are counted and listed as unusable and not installed, so
//! their packets follow the next shorter prefix.
//!
//! Each VRF may follow a table of its own (`[[vrf]] table`, the default
//! VRF `[routes] table`): one socket carries every table's changes, and
//! everything above is per VRF (a prefix of one VRF's table shadows
//! nothing in another's). A kernel route's interface may be a port of
//! another VRF: the kernel says so, as a leak would.
//!
//! Next hops and groups are added to the FIB as routes first need them
//! and kept until the FIB is next rebuilt (a reload that changes next
//! hops or port addresses), when the kernel's routes are installed
//! again on the new one.

use crate::kernel::{self, Action, Event, Requests, Route, RouteKey, Routes};

/// A route's key in its VRF.
pub type VrfKey = (u16, RouteKey);
use config::Config;
use routecache::TargetId;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// The mirror's state; its sockets are absent in unit tests.
pub struct Mirror {
    pub(super) events: Option<Routes>,
    pub(super) requests: Option<Requests>,
    /// The tables followed, each with its VRF (the default VRF's
    /// first).
    pub(super) tables: Vec<(u32, u16)>,
    pub(super) protocols: Vec<u8>,
    /// The kernel's routes of the tables, per VRF and prefix by metric.
    pub(super) kernel: HashMap<VrfKey, BTreeMap<u32, Route>>,
    /// Interface index to port.
    pub(super) ifmap: HashMap<u32, u16>,
    /// Prefixes the router's own routes and the configuration's inline
    /// routes hold (the route files' are searched in them, sorted).
    pub(super) configured: HashSet<VrfKey>,
    /// What the mirror installed, per prefix.
    pub(super) installed: HashMap<VrfKey, TargetId>,
    pub(super) shadowed: HashSet<VrfKey>,
    pub(super) unusable: HashMap<VrfKey, &'static str>,
    pub(super) hop_ids: HashMap<(u16, Option<(bool, u128)>), TargetId>,
    pub(super) group_ids: HashMap<Vec<TargetId>, TargetId>,
    pub(super) events_seen: u64,
    /// The last snapshot published was not prepared (a load under way).
    pub(super) unprepared: bool,
    pub(super) batches: u64,
    pub(super) resyncs: u64,
    pub(super) last_batch: Duration,
    pub(super) max_batch: Duration,
}

impl Mirror {
    /// A mirror of `cfg`'s kernel table with no sockets (tests).
    pub fn detached(cfg: &Config) -> Option<Mirror> {
        let k = cfg.kernel.as_ref()?;
        let mut tables = vec![(k.table, 0)];
        for (i, v) in cfg.vrfs.iter().enumerate() {
            if let Some(t) = v.table {
                tables.push((t, i as u16 + 1));
            }
        }
        Some(Mirror {
            events: None,
            requests: None,
            tables,
            protocols: k.protocols.clone(),
            kernel: HashMap::new(),
            ifmap: Mirror::map_interfaces(cfg),
            configured: Mirror::configured_of(cfg),
            installed: HashMap::new(),
            shadowed: HashSet::new(),
            unusable: HashMap::new(),
            hop_ids: HashMap::new(),
            group_ids: HashMap::new(),
            events_seen: 0,
            unprepared: false,
            batches: 0,
            resyncs: 0,
            last_batch: Duration::ZERO,
            max_batch: Duration::ZERO,
        })
    }

    /// Subscribes to `cfg`'s kernel table (the table itself is read by
    /// [`super::Control::kernel_start`]).
    pub fn open(cfg: &Config) -> Result<Option<Mirror>, String> {
        let Some(mut m) = Mirror::detached(cfg) else {
            return Ok(None);
        };
        m.events = Some(Routes::subscribe(&m.table_numbers())?);
        m.requests = Some(Requests::open()?);
        Ok(Some(m))
    }

    /// The tables followed.
    pub(super) fn table_numbers(&self) -> Vec<u32> {
        self.tables.iter().map(|t| t.0).collect()
    }

    /// The table VRF `vrf` follows, if any.
    pub(super) fn table_of(&self, vrf: u16) -> Option<u32> {
        self.tables.iter().find(|t| t.1 == vrf).map(|t| t.0)
    }

    /// The notification socket, to wait on.
    pub fn fd(&self) -> Option<std::os::fd::RawFd> {
        self.events.as_ref().map(|e| e.fd())
    }

    pub(super) fn wanted(&self, r: &Route) -> bool {
        self.protocols.is_empty() || self.protocols.contains(&r.protocol)
    }

    /// Interface index to port, from the interfaces that exist now.
    pub(super) fn map_interfaces(cfg: &Config) -> HashMap<u32, u16> {
        let mut m = HashMap::new();
        for (i, p) in cfg.ports.iter().enumerate() {
            for name in p.kernel_names() {
                if let Some(x) = kernel::ifindex(&name) {
                    m.insert(x, i as u16);
                }
            }
        }
        m
    }

    /// The prefixes that shadow kernel routes, but for the route file's.
    pub(super) fn configured_of(cfg: &Config) -> HashSet<VrfKey> {
        let mut s: HashSet<VrfKey> = cfg
            .routes
            .iter()
            .map(|r| (r.vrf, (r.v6, r.prefix, r.len)))
            .collect();
        for p in &cfg.ports {
            for a in &p.addresses {
                let full = if a.v6() { 128 } else { 32 };
                s.insert((p.vrf, (a.v6(), a.bits(), full)));
                s.insert((p.vrf, (a.v6(), a.network(), a.len)));
            }
        }
        s
    }

    pub(super) fn is_configured(&self, cfg: &Config, key: VrfKey) -> bool {
        self.configured.contains(&key)
            || cfg
                .file_routes_of(key.0)
                .binary_search_by_key(&key.1, |r| (r.v6, r.prefix, r.len))
                .is_ok()
    }

    /// What the stats show.
    pub fn view(&self) -> Value {
        let mut reasons: BTreeMap<&str, u64> = BTreeMap::new();
        for why in self.unusable.values() {
            *reasons.entry(why).or_default() += 1;
        }
        let mut some: Vec<(&VrfKey, &&str)> = self.unusable.iter().collect();
        some.sort();
        let listed: Vec<Value> = some
            .iter()
            .take(20)
            .map(|(k, why)| json!({ "prefix": prefix_text(k.1), "vrf": k.0, "why": **why }))
            .collect();
        json!({
            "table": self.tables[0].0,
            "tables": self.tables.iter().map(|&(t, vrf)| json!({ "table": t, "vrf": vrf })).collect::<Vec<_>>(),
            "routes": self.kernel.len(),
            "installed": self.installed.len(),
            "shadowed": self.shadowed.len(),
            "unusable": self.unusable.len(),
            "unusable_by_reason": reasons,
            "unusable_first": listed,
            "next_hops": self.hop_ids.len(),
            "groups": self.group_ids.len(),
            "events": self.events_seen,
            "batches": self.batches,
            "resyncs": self.resyncs,
            "last_batch_us": self.last_batch.as_micros() as u64,
            "max_batch_us": self.max_batch.as_micros() as u64,
        })
    }

    /// The VRF table `table` feeds.
    fn vrf_of(&self, table: u32) -> Option<u16> {
        self.tables.iter().find(|t| t.0 == table).map(|t| t.1)
    }

    /// Takes one notification into the kernel tables; returns the
    /// prefix it touched, in its VRF.
    pub(super) fn take(&mut self, ev: Event) -> Option<VrfKey> {
        match ev {
            Event::New(r, append) => {
                if !self.wanted(&r) {
                    return None;
                }
                let key = (self.vrf_of(r.table)?, r.key);
                let e = self.kernel.entry(key).or_default();
                match (append, e.get_mut(&r.metric)) {
                    (true, Some(old)) => {
                        if let (Action::Forward(a), Action::Forward(b)) =
                            (&mut old.action, r.action)
                        {
                            for p in b {
                                if !a.contains(&p) {
                                    a.push(p);
                                }
                            }
                        }
                    }
                    _ => {
                        e.insert(r.metric, r);
                    }
                }
                Some(key)
            }
            Event::Del(r) => {
                let key = (self.vrf_of(r.table)?, r.key);
                let e = self.kernel.get_mut(&key)?;
                if let Some(old) = e.get_mut(&r.metric) {
                    // IPv6 removes one path of a multipath route by
                    // naming it; a deletion naming all paths (or none)
                    // removes the route.
                    let keep = match (&mut old.action, &r.action) {
                        (Action::Forward(a), Action::Forward(b)) if !b.is_empty() => {
                            a.retain(|p| {
                                !b.iter()
                                    .any(|q| q.ifindex == p.ifindex && q.gateway == p.gateway)
                            });
                            !a.is_empty()
                        }
                        _ => false,
                    };
                    if !keep {
                        e.remove(&r.metric);
                    }
                }
                if e.is_empty() {
                    self.kernel.remove(&key);
                }
                Some(key)
            }
            Event::Link | Event::Overrun => None,
        }
    }
}

/// `192.0.2.0/24`, `2001:db8::/32`.
pub fn prefix_text((v6, p, len): RouteKey) -> String {
    if v6 {
        format!("{}/{len}", std::net::Ipv6Addr::from(p))
    } else {
        format!("{}/{len}", std::net::Ipv4Addr::from(p as u32))
    }
}
