//! `forwarder route get|list`: the routes the workers use now, each with
//! where it came from, as `ip route get` / `ip route show` would say it.
//! A listing is classified on the control thread (a compact record a
//! route) and written by a thread of its own, line by line, so that a
//! million routes stream without holding up the control loop long or
//! building their text at once.

use super::reload::Control;
use crate::kernel::RouteKey;
use crate::trace::describe::{addr, prefix};
use routecache::{Family, Targets, ECMP_FLAG};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;

/// Where a route comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// An inline route of the configuration, at this line.
    Config(u32),
    /// A route of the route file, at this line.
    RouteFile(u32),
    /// The kernel table: its protocol and metric.
    Kernel(u8, u32),
    /// A port's connected network (the port's index).
    Connected(u16),
    /// A port's own address.
    Local(u16),
    /// IPv6 multicast or link-local: the router's.
    Router(&'static str),
    /// Not known (a route added since the last look).
    Unknown,
}

impl Origin {
    /// The name `--origin` filters by.
    pub fn kind(self) -> &'static str {
        match self {
            Origin::Config(_) => "config",
            Origin::RouteFile(_) => "route_file",
            Origin::Kernel(..) => "kernel",
            Origin::Connected(_) => "connected",
            Origin::Local(_) => "local",
            Origin::Router(_) => "router",
            Origin::Unknown => "unknown",
        }
    }
}

/// What names origins and targets, owned (a listing's thread has it).
pub struct Names {
    config: String,
    route_file: String,
    table: u32,
    ports: Vec<String>,
    hops: HashMap<u32, String>,
    groups: HashMap<u32, String>,
}

impl Names {
    /// An origin as JSON (see [`crate::trace::Origins::route`]).
    pub fn origin(&self, o: Origin) -> Value {
        let port = |p: u16| self.ports.get(p as usize).cloned().unwrap_or_default();
        match o {
            Origin::Config(line) => json!({ "from": "config", "file": self.config, "line": line }),
            Origin::RouteFile(line) => {
                json!({ "from": "route_file", "file": self.route_file, "line": line })
            }
            Origin::Kernel(protocol, metric) => json!({
                "from": "kernel",
                "table": self.table,
                "protocol": config::ROUTE_PROTOCOLS
                    .iter()
                    .find(|(_, n)| *n == protocol)
                    .map(|(s, _)| s.to_string())
                    .unwrap_or_else(|| protocol.to_string()),
                "metric": metric,
            }),
            Origin::Connected(p) => json!({ "from": "connected", "port": port(p) }),
            Origin::Local(p) => json!({ "from": "local", "port": port(p) }),
            Origin::Router(what) => json!({ "from": "router", "what": what }),
            Origin::Unknown => json!({ "from": "unknown" }),
        }
    }

    /// A target's name: a next hop's or group's configured name, else
    /// what it is.
    pub fn target(&self, t: u32) -> String {
        if Targets::is_ecmp(t) {
            let g = t & !ECMP_FLAG;
            return match self.groups.get(&g) {
                Some(n) => format!("ECMP group {n}"),
                None => format!("ECMP group {g}"),
            };
        }
        self.hops
            .get(&t)
            .cloned()
            .unwrap_or_else(|| format!("hop {t}"))
    }
}

impl Control {
    /// Where route `key` of VRF `vrf` comes from: the router's own
    /// routes first, then the configuration's, then the kernel's (the
    /// FIB's precedence). `inline` finds an inline route's line.
    pub(super) fn classify(
        &self,
        vrf: u16,
        key: RouteKey,
        inline: impl Fn(RouteKey) -> Option<u32>,
    ) -> Origin {
        let (v6, p, len) = key;
        let full = if v6 { 128 } else { 32 };
        for (i, port) in self.cfg.ports.iter().enumerate() {
            if port.vrf != vrf {
                continue;
            }
            for a in port.addresses.iter().filter(|a| a.v6() == v6) {
                if len == full && a.bits() == p {
                    return Origin::Local(i as u16);
                }
                if a.len == len && a.network() == p {
                    return Origin::Connected(i as u16);
                }
            }
        }
        if v6 && (p, len) == (0xff00u128 << 112, 8) {
            return Origin::Router("IPv6 multicast: the router's");
        }
        if v6 && (p, len) == (0xfe80u128 << 112, 10) {
            return Origin::Router("IPv6 link-local: the router's");
        }
        if let Some(line) = inline(key) {
            return Origin::Config(line);
        }
        let file = self.cfg.file_routes_of(vrf);
        if let Ok(i) = file.binary_search_by_key(&key, |r| (r.v6, r.prefix, r.len)) {
            return Origin::RouteFile(file[i].line);
        }
        if let Some(m) = &self.mirror {
            if m.installed.contains_key(&(vrf, key)) {
                let best = m.kernel.get(&(vrf, key)).and_then(|by| by.values().next());
                return Origin::Kernel(
                    best.map(|r| r.protocol).unwrap_or(0),
                    best.map(|r| r.metric).unwrap_or(0),
                );
            }
        }
        Origin::Unknown
    }

    /// The names of this control's files and ports (what an origin in
    /// VRF `vrf` needs).
    pub fn origin_names(&self, vrf: u16) -> Names {
        Names {
            config: self.path().display().to_string(),
            route_file: self
                .cfg
                .route_file_of(vrf)
                .map(|f| f.display().to_string())
                .unwrap_or_default(),
            table: self
                .mirror
                .as_ref()
                .and_then(|m| m.table_of(vrf))
                .unwrap_or(0),
            ports: self.cfg.ports.iter().map(|p| p.name.clone()).collect(),
            hops: HashMap::new(),
            groups: HashMap::new(),
        }
    }

    /// The names of this control's files, ports, next hops and groups,
    /// for routes of VRF `vrf`.
    pub fn names(&self, vrf: u16) -> Names {
        let mut hops = HashMap::new();
        let kinds = &self.w.kinds;
        let snap = self.shared.snapshot.load();
        for (i, h) in snap.fib.targets().hops().iter().enumerate() {
            let port = self
                .cfg
                .ports
                .get(h.port as usize)
                .map(|p| p.name.as_str())
                .unwrap_or("?");
            let name = match (self.hop_name(i as u32), kinds.get(i)) {
                (Some(n), _) => n,
                (None, Some(crate::tables::HopKind::Gateway { addr: a, v6 })) => {
                    format!("{} on {port}", addr(*v6, *a))
                }
                (None, Some(crate::tables::HopKind::Connected)) => format!("connected on {port}"),
                (None, Some(crate::tables::HopKind::Local)) => format!("the router on {port}"),
                (None, _) => format!("hop {i} on {port}"),
            };
            hops.insert(i as u32, name);
        }
        let groups = self
            .w
            .groups
            .iter()
            .zip(&self.cfg.ecmp)
            .map(|(&t, g)| (t & !ECMP_FLAG, g.name.clone()))
            .collect();
        Names {
            hops,
            groups,
            ..self.origin_names(vrf)
        }
    }

    /// The VRF named `name` (`default` when `None`), or the error.
    fn vrf_named(&self, name: Option<&str>) -> Result<u16, String> {
        let name = name.unwrap_or(config::DEFAULT_VRF);
        self.cfg.vrf_index(name).ok_or_else(|| {
            format!(
                "unknown VRF `{}` ({})",
                matcher::excerpt(name),
                (0..self.cfg.vrf_count())
                    .map(|v| self.cfg.vrf_name(v as u16))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// `forwarder route get ADDR [--vrf NAME]`: the route the workers'
    /// table gives `address` in the VRF, its origin, its target (an ECMP
    /// group's members), each next hop's port, MAC and neighbour.
    pub fn route_get(&self, address: &str, vrf: Option<&str>) -> Value {
        let vrf = match self.vrf_named(vrf) {
            Ok(v) => v,
            Err(e) => return json!({ "result": "error", "error": e }),
        };
        let ip: std::net::IpAddr = match address.trim().parse() {
            Ok(ip) => ip,
            Err(_) => {
                return json!({ "result": "error", "error": format!("`{}` is not an IP address", matcher::excerpt(address)) })
            }
        };
        let v6 = ip.is_ipv6();
        let dst = config::ip_bits(ip);
        let snap = self.shared.snapshot.load_full();
        let f = if v6 { Family::V6 } else { Family::V4 };
        let vrf_name = self.cfg.vrf_name(vrf).to_string();
        // Named where there are several.
        let in_vrf = if self.cfg.vrfs.is_empty() {
            String::new()
        } else {
            format!(" vrf {vrf_name}")
        };
        let Some((p, len, target)) = snap
            .fib
            .vrf(vrf as usize)
            .and_then(|r| r.lookup_prefix(f, dst))
        else {
            return json!({
                "result": "ok",
                "address": ip.to_string(),
                "vrf": vrf_name,
                "route": null,
                "generation": snap.generation,
                "summary": format!("{ip}{in_vrf}: no route (dropped: no_route)"),
            });
        };
        let names = self.names(vrf);
        let origin = names.origin(self.classify(vrf, (v6, p, len), |k| {
            self.cfg
                .routes
                .iter()
                .find(|r| r.vrf == vrf && (r.v6, r.prefix, r.len) == k)
                .map(|r| r.line)
        }));
        let hops: Vec<u32> = if Targets::is_ecmp(target) {
            snap.fib.targets().group(target).unwrap_or(&[]).to_vec()
        } else {
            vec![target]
        };
        let (_, views) = self.neighbours();
        let hops: Vec<Value> = hops
            .iter()
            .map(|&h| {
                let nh = snap.fib.targets().hops().get(h as usize);
                let port = nh.map(|n| n.port).unwrap_or(0);
                let kind = snap.hop_kinds.get(h as usize).copied();
                let neighbour_of = |v6: bool, a: u128| {
                    let want = crate::neigh::ip_of(v6, a);
                    views
                        .iter()
                        .find(|n| n.port == port && n.addr == want)
                        .map(|n| {
                            json!({
                                "address": n.addr.to_string(),
                                "state": n.state.name(),
                                "mac": n.mac.map(|m| crate::trace::describe::mac(&m)),
                            })
                        })
                };
                let (kind, neighbour) = match kind {
                    None | Some(crate::tables::HopKind::Static) => (
                        "static".to_string(),
                        Some(json!({ "mac": nh.map(|n| crate::trace::describe::mac(&n.dst_mac)) })),
                    ),
                    Some(crate::tables::HopKind::Gateway { addr: a, v6 }) => {
                        (format!("gateway {}", addr(v6, a)), neighbour_of(v6, a))
                    }
                    Some(crate::tables::HopKind::Connected) => {
                        ("connected".to_string(), neighbour_of(v6, dst))
                    }
                    Some(crate::tables::HopKind::Local) => ("local".to_string(), None),
                };
                json!({
                    "hop": names.target(h),
                    "port": self.cfg.ports.get(port as usize).map(|p| p.name.clone()),
                    "kind": kind,
                    "neighbour": neighbour,
                })
            })
            .collect();
        let via = names.target(target);
        let summary = format!(
            "{ip}{in_vrf} via {via} dev {}  prefix {} ({})  generation {}",
            {
                let mut ports: Vec<&str> = hops.iter().filter_map(|h| h["port"].as_str()).collect();
                ports.dedup();
                ports.join(",")
            },
            prefix(v6, p, len),
            crate::trace::describe::origin_text(&origin),
            snap.generation
        );
        json!({
            "result": "ok",
            "address": ip.to_string(),
            "vrf": vrf_name,
            "route": prefix(v6, p, len),
            "origin": origin,
            "via": via,
            "hops": hops,
            "generation": snap.generation,
            "summary": summary,
        })
    }

    /// `forwarder route list [PREFIX] [--origin KIND] [--vrf NAME]`: the
    /// routes of the VRF within `within` (all when `None`) whose origin
    /// is `kind`, sorted, classified here; [`RouteList::write`] writes
    /// them.
    pub fn route_list(
        &self,
        within: Option<&str>,
        kind: Option<&str>,
        vrf: Option<&str>,
    ) -> Result<RouteList, String> {
        let vrf = self.vrf_named(vrf)?;
        let within = match within {
            None => None,
            Some(t) => Some(
                config::parse_prefix(t).map_err(|e| format!("`{}`: {e}", matcher::excerpt(t)))?,
            ),
        };
        const KINDS: [&str; 7] = [
            "config",
            "route_file",
            "kernel",
            "connected",
            "local",
            "router",
            "unknown",
        ];
        if let Some(k) = kind {
            if !KINDS.contains(&k) {
                return Err(format!(
                    "unknown origin `{}` ({})",
                    matcher::excerpt(k),
                    KINDS.join(", ")
                ));
            }
        }
        let inline: HashMap<RouteKey, u32> = self
            .cfg
            .routes
            .iter()
            .filter(|r| r.vrf == vrf)
            .map(|r| ((r.v6, r.prefix, r.len), r.line))
            .collect();
        let mut routes = Vec::new();
        for (f, v6) in [(Family::V4, false), (Family::V6, true)] {
            let Some(table) = self.w.fib.routes_in(vrf as usize, f) else {
                continue;
            };
            for (p, len, t) in table.routes() {
                if let Some((wv6, wp, wlen)) = within {
                    let w = if v6 { 128 } else { 32 };
                    let mask = |l: u32| {
                        if l == 0 {
                            0
                        } else {
                            (u128::MAX >> (128 - w)) & !((1u128 << (w - l)) - 1)
                        }
                    };
                    if wv6 != v6 || len < wlen || p & mask(wlen) != wp {
                        continue;
                    }
                }
                let o = self.classify(vrf, (v6, p, len), |k| inline.get(&k).copied());
                if kind.is_some_and(|k| k != o.kind()) {
                    continue;
                }
                routes.push(((v6, p, len), t, o));
            }
        }
        routes.sort_unstable_by_key(|r| r.0);
        Ok(RouteList {
            routes,
            names: self.names(vrf),
            generation: self
                .shared
                .status
                .generation
                .load(std::sync::atomic::Ordering::Relaxed),
        })
    }
}

/// A route listing, ready to be written.
pub struct RouteList {
    routes: Vec<(RouteKey, u32, Origin)>,
    names: Names,
    generation: u64,
}

impl RouteList {
    /// How many routes it lists.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether it lists none.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Writes the routes, one a line: `PREFIX via TARGET  (ORIGIN)`, or
    /// (`json`) one JSON object a line; then, in JSON, a last line with
    /// the count and the generation.
    pub fn write(&self, out: &mut dyn Write, json: bool) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, out);
        for &((v6, p, len), t, o) in &self.routes {
            let origin = self.names.origin(o);
            if json {
                writeln!(
                    w,
                    "{}",
                    json!({ "prefix": prefix(v6, p, len), "via": self.names.target(t), "origin": origin })
                )?;
            } else {
                writeln!(
                    w,
                    "{} via {}  ({})",
                    prefix(v6, p, len),
                    self.names.target(t),
                    crate::trace::describe::origin_text(&origin)
                )?;
            }
        }
        if json {
            writeln!(
                w,
                "{}",
                json!({ "end": true, "routes": self.routes.len(), "generation": self.generation })
            )?;
        }
        w.flush()
    }
}
