//! From the file's shape to typed, checked values: every section's
//! checks, each error with its `file:line:col` and the offending value.
//!
//! - this file: the order of the sections and what each needs of the
//!   others, all errors collected in one pass;
//! - `settings`: `[forwarder]`, `[neighbour]`, `[icmp]`, the caches,
//!   `[control]`;
//! - `ports`: `[[port]]` and their drivers' options;
//! - `sets`: `[[set]]`, their elements and set files;
//! - `routes`: next hops, ECMP groups, routes, the route file, `[routes]`;
//! - `vrfs`: `[[vrf]]` and the `vrf` of ports and routes.

mod names;
mod ports;
mod routes;
mod sets;
mod settings;
mod vrfs;

use crate::error::{ConfigError, Located};
use crate::files::Files;
use crate::schema;
use crate::types::{Config, NextHopConfig, VrfConfig};
use names::index;
use routes::{all_routes, ecmp_groups, kernel_needs_addresses, kernel_routes, next_hops, Targets};
use std::path::Path;

pub(crate) fn validate(
    file: &str,
    text: &str,
    dir: &Path,
    files: &mut Files,
) -> Result<Config, ConfigError> {
    validate_all(file, text, dir, files).map_err(|mut errs| errs.swap_remove(0))
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
    files: &mut Files,
) -> Result<Config, Vec<ConfigError>> {
    let loc = Located { file, text };
    let mut raw: schema::File = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let said = typed(text, span.clone(), e.message().trim());
        vec![loc.at(span, said)]
    })?;
    fn take<T>(r: Result<T, ConfigError>, errs: &mut Vec<ConfigError>) -> Option<T> {
        r.map_err(|e| errs.push(e)).ok()
    }
    ports::physical_first(&mut raw.port);
    let mut errs = Vec::new();
    let forwarder = take(settings::forwarder(&loc, raw.forwarder), &mut errs);
    let port_names = take(index(&loc, &raw.port, |p| &p.name, "port"), &mut errs);
    let kernel = take(kernel_routes(&loc, &raw.routes), &mut errs);
    let vrf_names = kernel
        .as_ref()
        .and_then(|k| take(vrfs::vrfs(&loc, &raw.vrf, k.as_ref()), &mut errs));
    let ports = take(ports::ports(&loc, &raw.port), &mut errs).and_then(|mut ports| {
        let names = vrf_names.as_ref()?;
        for (p, r) in ports.iter_mut().zip(&raw.port) {
            p.vrf = take(vrfs::vrf_of(&loc, names, &r.vrf), &mut errs)?;
        }
        Some(ports)
    });
    let sets = match sets::sets(&loc, &raw.set, dir, files) {
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
    let routes = match (&hop_names, &group_names, &ports, &vrf_names) {
        (Some(hops), Some(groups), Some(ports), Some(names)) => {
            let targets = Targets {
                hops,
                groups,
                ports,
                gateways: Default::default(),
                vrf: Default::default(),
            };
            let r = vrf_routes(
                &loc,
                (&raw.route, &raw.route_file, &raw.vrf),
                names,
                dir,
                &targets,
                files,
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
    let router = take(settings::router(&loc, &raw.neighbour, &raw.icmp), &mut errs);
    if let Some(ports) = &ports {
        take(kernel_needs_addresses(&loc, &raw.routes, ports), &mut errs);
    }
    let flow_cache = take(
        settings::flow_cache(&loc, raw.flow_cache, &raw.set),
        &mut errs,
    );
    let conntrack = take(
        settings::conntrack(&loc, raw.conntrack, &raw.set),
        &mut errs,
    );
    let route_cache = take(settings::route_cache(&loc, raw.route_cache), &mut errs);
    let control = take(
        settings::control(&loc, raw.control.as_ref(), dir),
        &mut errs,
    );
    // A section without a value has its error (or depends on one that
    // has), so with no errors every section gave its value.
    let config = (|| {
        let (routes, route_file, file_routes, vrfs) = routes?;
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
            conntrack: conntrack?,
            control: control?,
            route_file,
            router: router?,
            kernel: kernel?,
            vrfs,
        })
    })();
    match config {
        Some(c) if errs.is_empty() => Ok(c),
        _ => {
            // In the order an editor meets them: this file's by line and
            // column, then each other file's (set and route files) the
            // same way (the sections are checked in their own order).
            errs.sort_by(|a, b| {
                (a.file != file, &a.file, a.line, a.col).cmp(&(
                    b.file != file,
                    &b.file,
                    b.line,
                    b.col,
                ))
            });
            Err(errs)
        }
    }
}

/// Every VRF's routes: the default VRF's (inline routes naming none,
/// `route_file`), then each `[[vrf]]`'s (inline routes naming it, its
/// `route_file`), each VRF's checked on their own (a prefix may be in
/// several). `None` where any has an error (in `errs`).
#[allow(clippy::type_complexity)]
fn vrf_routes(
    loc: &Located,
    raw: (
        &[schema::Route],
        &Option<toml::Spanned<String>>,
        &[schema::Vrf],
    ),
    names: &[String],
    dir: &Path,
    targets: &Targets,
    files: &mut Files,
    errs: &mut Vec<ConfigError>,
) -> Option<(
    Vec<crate::types::RouteConfig>,
    Option<std::path::PathBuf>,
    std::sync::Arc<[crate::types::RouteConfig]>,
    Vec<VrfConfig>,
)> {
    let (route, route_file, vrf) = raw;
    let mut of = Vec::new();
    for r in route {
        match vrfs::vrf_of(loc, names, &r.vrf) {
            Ok(v) => of.push(v),
            Err(e) => errs.push(e),
        }
    }
    if of.len() < route.len() {
        return None;
    }
    let mut inline = Vec::new();
    let mut main = None;
    let mut vrfs = Vec::new();
    let mut failed = false;
    for v in 0..=names.len() {
        targets.vrf.set(v as u16);
        let mine: Vec<&schema::Route> = route
            .iter()
            .zip(&of)
            .filter(|&(_, &o)| o as usize == v)
            .map(|(r, _)| r)
            .collect();
        let file = match v {
            0 => route_file,
            v => &vrf[v - 1].route_file,
        };
        match all_routes(loc, (&mine, file), dir, targets, files) {
            Ok((routes, path, file_routes)) => {
                inline.extend(routes);
                match v {
                    0 => main = Some((path, file_routes)),
                    v => {
                        let c = &vrf[v - 1];
                        vrfs.push(VrfConfig {
                            name: c.name.get_ref().clone(),
                            table: c.table.as_ref().map(|t| *t.get_ref()),
                            route_file: path,
                            file_routes,
                        })
                    }
                }
            }
            Err(mut e) => {
                errs.append(&mut e);
                failed = true;
            }
        }
    }
    let (path, file_routes) = main?;
    // In file order, as the routes were given.
    inline.sort_by_key(|r| r.line);
    (!failed).then_some((inline, path, file_routes, vrfs))
}

/// A TOML decoding error as an operator reads it: which key in which
/// table, the value given, and for numbers the range the key's type
/// holds (the decoder says `invalid type: string "64", expected usize`
/// or `number too large to fit in target type` and names neither).
/// Later checks narrow the range further (`burst` is 1-64); this is the
/// first wall a value hits.
fn typed(text: &str, span: std::ops::Range<usize>, message: &str) -> String {
    let start = span.start.min(text.len());
    if !text.is_char_boundary(start) {
        return message.to_string();
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    // The key: the last `name =` before the value on its line (a table
    // line or an inline table alike).
    let before = &text[line_start..start];
    let key = before.rfind('=').and_then(|eq| {
        let k = before[..eq].trim_end();
        let from = k
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let k = &k[from..];
        (!k.is_empty()).then_some(k)
    });
    // The table: the nearest header above.
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.split('#').next().unwrap_or(l).trim());
    // The value: the span, or (a number's span may be one character) the
    // whole bare token it starts.
    let value = if text[start..].starts_with(['"', '\'', '[', '{']) {
        text.get(span.clone())
    } else {
        let rest = &text[start..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ']' | '}' | '#'))
            .unwrap_or(rest.len());
        let end = end.max(span.end.saturating_sub(start).min(rest.len()));
        rest.get(..end)
    }
    .map(str::trim)
    .filter(|v| !v.is_empty() && v.len() <= 60 && !v.contains('\n'));
    let ranges = [
        ("expected usize", "expected a whole number (0 or more)"),
        (
            "expected u64",
            "expected a whole number, 0 to 18446744073709551615",
        ),
        ("expected u32", "expected a whole number, 0 to 4294967295"),
        ("expected u16", "expected a whole number, 0 to 65535"),
        ("expected u8", "expected a whole number, 0 to 255"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected a boolean", "expected true or false"),
        (
            "number too large to fit in target type",
            "too large for this key",
        ),
        (
            "number too small to fit in target type",
            "too small for this key (negative?)",
        ),
    ];
    let mut said = message.to_string();
    for (from, to) in ranges {
        said = said.replace(from, to);
    }
    match (key, value) {
        (Some(k), Some(v)) => match table {
            Some(t) => format!("{t} {k} = {v}: {said}"),
            None => format!("{k} = {v}: {said}"),
        },
        _ => said,
    }
}
