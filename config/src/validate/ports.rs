//! `[[port]]`: names, drivers and their options, MACs, addresses, MTUs,
//! TAPs.

use crate::addr::{link_local, parse_mac, port_address, PortAddress};
use crate::driver::{self, DRIVERS};
use crate::error::{ConfigError, Located};
use crate::schema;
use crate::types::*;
use std::net::IpAddr;

pub(super) fn ports(loc: &Located, raw: &[schema::Port]) -> Result<Vec<PortConfig>, ConfigError> {
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

pub(super) fn if_name_ok(s: &str) -> bool {
    !s.is_empty() && s.len() < 16 && !s.contains(['/', '\0', ' ', ':'])
}
