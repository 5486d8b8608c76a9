//! `[[port]]`: names, drivers and their options, MACs, addresses, MTUs,
//! TAPs.

use crate::addr::{link_local, parse_mac, port_address, PortAddress};
use crate::driver::{self, Driver, VlanOptions, DRIVERS};
use crate::error::{ConfigError, Located};
use crate::schema;
use crate::types::*;
use std::net::IpAddr;

/// The ports, those with a driver first, then the VLAN sub-interfaces
/// (`raw` is in that order: see [`physical_first`]).
pub(super) fn ports(loc: &Located, raw: &[schema::Port]) -> Result<Vec<PortConfig>, ConfigError> {
    let mut ports: Vec<PortConfig> = Vec::new();
    for (i, p) in raw.iter().enumerate() {
        if let Some(parent) = &p.parent {
            let sub = sub_interface(loc, raw, p, parent, &ports)?;
            ports.push(sub);
            continue;
        }
        if let Some(v) = &p.vlan {
            return Err(loc.of(
                v,
                "`vlan` needs `parent`: the port whose frames carry the tag",
            ));
        }
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
        let addresses = addresses(loc, p, mac)?;
        let mtu = mtu(loc, p)?.unwrap_or(1500);
        let tap = tap(loc, p, !addresses.is_empty())?;
        let kernel_interface = kernel_interface(loc, p)?;
        ports.push(PortConfig {
            name: p.name.get_ref().clone(),
            driver,
            mac,
            at: loc.place(&p.name),
            addresses,
            mtu,
            tap,
            kernel_interface,
            vrf: 0,
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

/// The port's addresses (`address`), each once, with the IPv6
/// link-local address derived from `mac` (EUI-64) added when it has some
/// and none is link-local.
fn addresses(
    loc: &Located,
    p: &schema::Port,
    mac: [u8; 6],
) -> Result<Vec<PortAddress>, ConfigError> {
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
    Ok(addresses)
}

/// The port's `mtu`, if given.
fn mtu(loc: &Located, p: &schema::Port) -> Result<Option<u16>, ConfigError> {
    match &p.mtu {
        None => Ok(None),
        Some(m) if (68..=9000).contains(m.get_ref()) => Ok(Some(*m.get_ref())),
        Some(m) => Err(loc.of(m, format!("mtu {} is outside 68-9000", m.get_ref()))),
    }
}

/// The port's TAP (`punt = "tap"`, `tap_name`), if any.
fn tap(loc: &Located, p: &schema::Port, addressed: bool) -> Result<Option<String>, ConfigError> {
    match &p.punt {
        None => {
            if let Some(t) = &p.tap_name {
                return Err(loc.of(t, "`tap_name` needs `punt = \"tap\"`"));
            }
            Ok(None)
        }
        Some(v) if v.get_ref() == "tap" => {
            if !addressed {
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
            Ok(Some(name))
        }
        Some(v) => Err(loc.of(v, format!("unknown punt `{}` (tap)", v.get_ref()))),
    }
}

/// The port's `kernel_interface`, if given.
fn kernel_interface(loc: &Located, p: &schema::Port) -> Result<Option<String>, ConfigError> {
    match &p.kernel_interface {
        Some(k) if !if_name_ok(k.get_ref()) => Err(loc.of(k, "an interface name (1-15 bytes)")),
        k => Ok(k.as_ref().map(|k| k.get_ref().clone())),
    }
}

/// The order ports are numbered in: those with a driver (each has
/// queues on every worker) first, in the file's order, then the VLAN
/// sub-interfaces, in the file's order. A port's index is then its
/// queue's on every worker.
pub(super) fn physical_first(raw: &mut [schema::Port]) {
    raw.sort_by_key(|p| p.parent.is_some());
}

/// A VLAN sub-interface (`parent`, `vlan`): a port in every respect but
/// its frames, which go through its parent's queues, tagged. It has its
/// parent's MAC (and its MTU unless given).
fn sub_interface(
    loc: &Located,
    raw: &[schema::Port],
    p: &schema::Port,
    parent: &toml::Spanned<String>,
    ports: &[PortConfig],
) -> Result<PortConfig, ConfigError> {
    if let Some(d) = &p.driver {
        return Err(loc.of(
            d,
            "a VLAN sub-interface has no driver: its frames go through its parent's",
        ));
    }
    if let Some((k, _)) = p.options.iter().next() {
        return Err(loc.of(k, "a VLAN sub-interface has no driver options"));
    }
    if let Some(m) = &p.mac {
        return Err(loc.of(m, "a VLAN sub-interface sends with its parent's MAC"));
    }
    let Some(at) = ports
        .iter()
        .position(|q| &q.name == parent.get_ref() && !matches!(q.driver, Driver::Vlan(_)))
    else {
        let why = if raw.iter().any(|q| q.name.get_ref() == parent.get_ref()) {
            format!("port `{}` is a VLAN sub-interface itself: `parent` names a port with a driver (give two tags, `vlan = [outer, inner]`, for 802.1ad)", parent.get_ref())
        } else {
            format!("no port is named `{}`", parent.get_ref())
        };
        return Err(loc.of(parent, why));
    };
    let Some(v) = &p.vlan else {
        return Err(loc.of(
            &p.name,
            "a sub-interface (`parent`) needs its tag: `vlan = ID` or `vlan = [outer, inner]`",
        ));
    };
    let ids: Option<Vec<i64>> = match v.get_ref() {
        toml::Value::Integer(n) => Some(vec![*n]),
        toml::Value::Array(a) if (1..=2).contains(&a.len()) => {
            a.iter().map(|x| x.as_integer()).collect()
        }
        _ => None,
    };
    let tags: Vec<u16> = match ids {
        Some(ids) if ids.iter().all(|n| (1..=4094).contains(n)) => {
            ids.into_iter().map(|n| n as u16).collect()
        }
        _ => {
            return Err(loc.of(
                v,
                format!(
                    "`vlan = {}`: a VLAN ID from 1 to 4094, or two, `[outer, inner]`",
                    v.get_ref()
                ),
            ))
        }
    };
    let vlan = VlanOptions { parent: at, tags };
    if let Some(q) = ports
        .iter()
        .find(|q| q.driver == Driver::Vlan(vlan.clone()))
    {
        return Err(loc.of(
            v,
            format!(
                "port `{}` already is VLAN {:?} of `{}`",
                q.name,
                vlan.tags,
                parent.get_ref()
            ),
        ));
    }
    let up = &ports[at];
    let addresses = addresses(loc, p, up.mac)?;
    let mtu = mtu(loc, p)?.unwrap_or(up.mtu);
    Ok(PortConfig {
        name: p.name.get_ref().clone(),
        driver: Driver::Vlan(vlan),
        mac: up.mac,
        at: loc.place(&p.name),
        addresses,
        mtu,
        tap: tap(loc, p, !p.address.is_empty())?,
        kernel_interface: kernel_interface(loc, p)?,
        vrf: 0,
    })
}

pub(super) fn if_name_ok(s: &str) -> bool {
    !s.is_empty() && s.len() < 16 && !s.contains(['/', '\0', ' ', ':'])
}
