//! Next hops, ECMP groups, routes inline and in the route file, and
//! `[routes]` (the kernel table's mirror).

use crate::addr::{fast_prefix, parse_mac, parse_prefix};
use crate::error::{ConfigError, Located};
use crate::files::{holds, sort_routes, Files, Gave, Got};
use crate::schema;
use crate::types::*;
use matcher::excerpt;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;

/// The inline routes and the route file's.
#[allow(clippy::type_complexity)]
pub(super) fn all_routes(
    loc: &Located,
    raw: (&[&schema::Route], &Option<Spanned<String>>),
    dir: &Path,
    targets: &Targets,
    files: &mut Files,
) -> Result<
    (
        Vec<RouteConfig>,
        Option<std::path::PathBuf>,
        Arc<[RouteConfig]>,
    ),
    Vec<ConfigError>,
> {
    let (inline, file) = raw;
    let mut seen = HashSet::new();
    let routes = inline_routes(loc, inline, targets, &mut seen).map_err(|e| vec![e])?;
    let (route_file, file_routes) = match file {
        Some(f) => {
            let (path, file_routes) = route_file(loc, f, dir, targets, (&seen, &routes), files)?;
            // Against routes a reused file gave: each inline one looked
            // up (a parsed file was checked against them as it was read).
            if let Some(r) = inline.iter().find(|r| {
                parse_prefix(r.prefix.get_ref()).is_ok_and(|key| holds(&file_routes, key))
            }) {
                return Err(vec![loc.of(
                    &r.prefix,
                    format!(
                        "route `{}` is given twice (also in `{}`)",
                        r.prefix.get_ref(),
                        f.get_ref()
                    ),
                )]);
            }
            (Some(path), file_routes)
        }
        None => (None, Arc::from(Vec::new())),
    };
    Ok((routes, route_file, file_routes))
}

/// `[routes] source = "kernel"` on ports without an address: refused.
pub(super) fn kernel_needs_addresses(
    loc: &Located,
    raw: &Option<schema::Routes>,
    ports: &[PortConfig],
) -> Result<(), ConfigError> {
    match raw.as_ref().and_then(|r| r.source.as_ref()) {
        Some(s) if s.get_ref() == "kernel" && ports.iter().all(|p| p.addresses.is_empty()) => {
            Err(loc.of(
                s,
                "`source = \"kernel\"` needs addresses on the ports: the forwarder resolves the kernel's gateways itself",
            ))
        }
        _ => Ok(()),
    }
}

/// `[routes]` (whether the ports have the addresses it needs:
/// [`kernel_needs_addresses`]).
pub(super) fn kernel_routes(
    loc: &Located,
    raw: &Option<schema::Routes>,
) -> Result<Option<KernelRoutes>, ConfigError> {
    let Some(r) = raw else {
        return Ok(None);
    };
    match &r.source {
        Some(s) if s.get_ref() == "kernel" => {}
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

pub(super) fn next_hops(
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

/// The port of VRF `vrf` whose networks hold `ip` (the first, in file
/// order).
pub(super) fn port_of(ports: &[PortConfig], vrf: u16, ip: IpAddr) -> Option<usize> {
    ports
        .iter()
        .position(|p| p.vrf == vrf && p.addresses.iter().any(|a| a.covers(ip)))
}

pub(super) fn ecmp_groups(
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
pub(super) struct Targets<'a> {
    pub(super) hops: &'a HashMap<&'a str, usize>,
    pub(super) groups: &'a HashMap<&'a str, usize>,
    pub(super) ports: &'a [PortConfig],
    /// The next hops gateways' addresses made, in order, after the
    /// configured ones (`hops.len()` of them): address and port (two
    /// VRFs may each have a gateway of the same address).
    pub(super) gateways: std::cell::RefCell<Vec<(IpAddr, usize)>>,
    /// The VRF of the routes being read: a gateway's address and a
    /// connected network are looked for among its ports only.
    pub(super) vrf: std::cell::Cell<u16>,
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
        let vrf = self.vrf.get();
        let port = port_of(self.ports, vrf, ip).ok_or_else(|| match vrf {
            0 => format!("gateway `{ip}` is on none of the ports' networks (their `address` lists)"),
            _ => format!("gateway `{ip}` is on none of the networks of the VRF's ports (a route leaks into another VRF through a `[[next_hop]]` on a port of that VRF)"),
        })?;
        let mut g = self.gateways.borrow_mut();
        let at = match g.iter().position(|&(a, p)| a == ip && p == port) {
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

/// Where route `key` first was, among `inline` (the configuration's,
/// in `loc`) and `file` (route file `name`'s so far): `FILE:LINE`. Looked
/// for only once a route is found twice (a set of lines beside `Seen`
/// costs a full table's parse 10 %).
fn first_at(
    loc: &Located,
    key: (bool, u128, u32),
    inline: &[RouteConfig],
    (name, file): (&str, &[RouteConfig]),
) -> String {
    let is = |r: &&RouteConfig| (r.v6, r.prefix, r.len) == key;
    match (inline.iter().find(is), file.iter().find(is)) {
        (Some(r), _) => format!("{}:{}", loc.file, r.line),
        (None, Some(r)) => format!("{name}:{}", r.line),
        (None, None) => "?".to_string(),
    }
}

pub(super) fn inline_routes(
    loc: &Located,
    raw: &[&schema::Route],
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
                format!(
                    "route `{}` is given twice (first at {})",
                    r.prefix.get_ref(),
                    first_at(loc, (v6, prefix, len), &routes, ("", &[]))
                ),
            ));
        }
        if let Some(p) = targets.ports.iter().find(|p| {
            p.vrf == targets.vrf.get()
                && p.addresses
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
            line: loc.line(&r.prefix),
            vrf: targets.vrf.get(),
        });
    }
    Ok(routes)
}

/// Bad lines of a route file reported one by one; past them, one error
/// says how many more there are (a file of the wrong kind would give a
/// million).
const ROUTE_FILE_ERRORS: usize = 50;

/// The routes of the route file `f`, sorted by prefix, and its path: one
/// `PREFIX VIA` a line (a full table is a million lines: read without
/// TOML, several times faster: `bench reload`). An unchanged file's
/// routes are reused. Every bad line is reported (up to
/// [`ROUTE_FILE_ERRORS`], then their count), not only the first.
pub(super) fn route_file(
    loc: &Located,
    f: &Spanned<String>,
    dir: &Path,
    targets: &Targets,
    (inline, inline_routes): (&Seen, &[RouteConfig]),
    files: &mut Files,
) -> Result<(std::path::PathBuf, Arc<[RouteConfig]>), Vec<ConfigError>> {
    let path = dir.join(f.get_ref());
    let cannot = |e: std::io::Error| loc.of(f, format!("cannot read `{}`: {e}", f.get_ref()));
    let mut hops: Vec<(&str, usize)> = targets.hops.iter().map(|(k, v)| (*k, *v)).collect();
    let mut groups: Vec<(&str, usize)> = targets.groups.iter().map(|(k, v)| (*k, *v)).collect();
    hops.sort_unstable_by_key(|h| h.1);
    groups.sort_unstable_by_key(|g| g.1);
    let hops: Vec<String> = hops.into_iter().map(|h| h.0.to_string()).collect();
    let groups: Vec<String> = groups.into_iter().map(|g| g.0.to_string()).collect();
    let vrf = targets.vrf.get();
    let same = |g: &Gave| match g {
        Gave::Routes {
            hops: h,
            groups: gr,
            vrf: v,
            routes,
        } if *h == hops && *gr == groups && *v == vrf => Some(routes.clone()),
        _ => None,
    };
    let text = match files.get(&path, same).map_err(|e| vec![cannot(e)])? {
        Got::Reused(routes) => return Ok((path, routes)),
        Got::Text(t) => t,
    };
    let name = path.display().to_string();
    let mut seen = inline.clone();
    let mut routes = Vec::new();
    let mut errs = Vec::new();
    let (mut more, mut more_from) = (0usize, None);
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
        let route = (|| {
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
                    format!(
                        "route `{}` is given twice (first at {})",
                        excerpt(prefix),
                        first_at(loc, (v6, p, len), inline_routes, (&name, &routes))
                    ),
                ));
            }
            let target = targets.via(via).map_err(|e| at(via, e))?;
            Ok((v6, p, len, target))
        })();
        let (v6, p, len, via) = match route {
            Ok(r) => r,
            Err(e) if errs.len() < ROUTE_FILE_ERRORS => {
                errs.push(e);
                continue;
            }
            Err(_) => {
                more += 1;
                more_from.get_or_insert(n + 1);
                continue;
            }
        };
        routes.push(RouteConfig {
            v6,
            prefix: p,
            len,
            via,
            line: n as u32 + 1,
            vrf,
        });
    }
    if let Some(line) = more_from {
        errs.push(ConfigError {
            file: name.clone(),
            line,
            col: 1,
            message: format!("{more} more bad line(s) from here on, not reported one by one"),
        });
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    sort_routes(&mut routes);
    let routes: Arc<[RouteConfig]> = routes.into();
    files.gave(
        &path,
        Gave::Routes {
            hops,
            groups,
            vrf,
            routes: routes.clone(),
        },
    );
    Ok((path, routes))
}
