//! From the file's shape to typed, checked values: every section's
//! checks, each error with its `file:line:col` and the offending value.
//!
//! - this file: the order of the sections and what each needs of the
//!   others, all errors collected in one pass;
//! - `settings`: `[forwarder]`, `[neighbour]`, `[icmp]`, the caches,
//!   `[control]`;
//! - `ports`: `[[port]]` and their drivers' options;
//! - `sets`: `[[set]]`, their elements and set files;
//! - `routes`: next hops, ECMP groups, routes, the route file, `[routes]`.

mod names;
mod ports;
mod routes;
mod sets;
mod settings;

use crate::error::{ConfigError, Located};
use crate::files::Files;
use crate::schema;
use crate::types::{Config, NextHopConfig};
use names::index;
use routes::{all_routes, ecmp_groups, kernel_routes, next_hops, Targets};
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
    let raw: schema::File = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        vec![loc.at(span, e.message().trim().to_string())]
    })?;
    fn take<T>(r: Result<T, ConfigError>, errs: &mut Vec<ConfigError>) -> Option<T> {
        r.map_err(|e| errs.push(e)).ok()
    }
    let mut errs = Vec::new();
    let forwarder = take(settings::forwarder(&loc, raw.forwarder), &mut errs);
    let port_names = take(index(&loc, &raw.port, |p| &p.name, "port"), &mut errs);
    let ports = take(ports::ports(&loc, &raw.port), &mut errs);
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
    let routes = match (&hop_names, &group_names, &ports) {
        (Some(hops), Some(groups), Some(ports)) => {
            let targets = Targets {
                hops,
                groups,
                ports,
                gateways: Default::default(),
            };
            let r = take(
                all_routes(&loc, (&raw.route, &raw.route_file), dir, &targets, files),
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
    let kernel = take(kernel_routes(&loc, &raw.routes, ports.as_ref()), &mut errs);
    let flow_cache = take(
        settings::flow_cache(&loc, raw.flow_cache, &raw.set),
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
