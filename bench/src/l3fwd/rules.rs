//! l3fwd's rule files written from the very configuration the forwarder
//! runs: the routes as `R` lines (LPM), and the sets' drop elements as `@`
//! deny lines ahead of the routes (ACL). What a configuration holds that
//! l3fwd cannot express is an error naming it.

use config::{Action, Config, Source, Via};
use matcher::{Data, Policy, Verdict};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The prefixes that cover `lo..=hi` exactly, in a `width`-bit space.
fn prefixes(mut lo: u128, hi: u128, width: u32) -> Vec<(u128, u32)> {
    let mut out = Vec::new();
    loop {
        // The largest aligned block starting at `lo` that ends by `hi`.
        let mut bits = if lo == 0 {
            width
        } else {
            lo.trailing_zeros().min(width)
        };
        let end = |bits: u32| {
            lo | if bits >= 128 {
                u128::MAX
            } else {
                (1u128 << bits) - 1
            }
        };
        while bits > 0 && end(bits) > hi {
            bits -= 1;
        }
        out.push((lo, width - bits));
        let e = end(bits);
        if e >= hi {
            return out;
        }
        lo = e + 1;
    }
}

/// An address as l3fwd's rule files want it: dotted IPv4, or all eight
/// IPv6 groups in hex.
pub(super) fn addr(v6: bool, a: u128) -> String {
    if v6 {
        (0..8)
            .map(|i| format!("{:04x}", (a >> (112 - 16 * i)) as u16))
            .collect::<Vec<_>>()
            .join(":")
    } else {
        std::net::Ipv4Addr::from(a as u32).to_string()
    }
}

/// l3fwd's rule files for a configuration: LPM and ACL, IPv4 and IPv6.
#[derive(Default)]
pub(super) struct Rules {
    pub(super) lpm: [String; 2],
    pub(super) acl: [String; 2],
}

/// Protocols that carry ports (`th`): what a port field without a
/// protocol matches.
const PORT_PROTOS: [u8; 3] = [6, 17, 132];

pub(super) fn rules(cfg: &Config) -> Result<Rules, String> {
    let port_of = |via: Via| -> Result<usize, String> {
        match via {
            Via::NextHop(i) => Ok(cfg.next_hops[i].port),
            Via::Ecmp(g) => {
                let ports: BTreeSet<usize> = cfg.ecmp[g]
                    .members
                    .iter()
                    .map(|&m| cfg.next_hops[m].port)
                    .collect();
                match ports.len() {
                    1 => Ok(*ports.first().expect("one")),
                    _ => Err(format!(
                        "ECMP group `{}` spans ports: an l3fwd route leads to one port",
                        cfg.ecmp[g].name
                    )),
                }
            }
        }
    };
    let mut r = Rules::default();
    // ACL routes longest prefix first: rte_acl answers the first rule
    // that matches, in file order.
    let mut routes: Vec<_> = cfg.all_routes().collect();
    routes.sort_by_key(|r| std::cmp::Reverse(r.len));
    let mut acl_routes = [String::new(), String::new()];
    for rt in routes {
        let f = rt.v6 as usize;
        let port = port_of(rt.via)?;
        let width = if rt.v6 { 128 } else { 32 };
        // rte_lpm and rte_lpm6 take depths from 1: a default route is its
        // two halves.
        let lpm: Vec<(u128, u32)> = if rt.len == 0 {
            vec![(0, 1), (1u128 << (width - 1), 1)]
        } else {
            vec![(rt.prefix, rt.len)]
        };
        for (p, l) in lpm {
            let _ = writeln!(r.lpm[f], "R{}/{l} {port}", addr(rt.v6, p));
        }
        let _ = writeln!(
            acl_routes[f],
            "R{}/0 {}/{} 0 : 65535 0 : 65535 0x00/0x00 {port}",
            addr(rt.v6, 0),
            addr(rt.v6, rt.prefix),
            rt.len
        );
    }
    // The sets' drop elements, in evaluation order, ahead of the routes.
    let mut accepted_before = None;
    for s in &cfg.sets {
        let deny = |e: &matcher::Element| match s.action {
            Action::Drop | Action::Reject => Some(true),
            Action::Accept => Some(false),
            Action::Verdict => match e.data {
                Some(Data::Verdict(Verdict::Drop)) => Some(true),
                Some(Data::Verdict(Verdict::Accept)) => Some(false),
                _ => None,
            },
        };
        let mut elements: Vec<&matcher::Element> = s.elements.iter().collect();
        if s.decl.policy() == Policy::FirstMatch {
            elements.sort_by_key(|e| e.priority.unwrap_or(0));
        }
        let mut accepts = false;
        for e in elements {
            match deny(e) {
                Some(false) => {
                    accepts = true;
                    continue;
                }
                None => continue,
                Some(true) => {}
            }
            // A drop after an accept (in an earlier set, or earlier in a
            // first-match set; a disjoint set's elements never share a
            // key) would need an l3fwd "accept" rule, which
            // has no route to give.
            let first_match = s.decl.policy() == Policy::FirstMatch;
            if let Some(a) = accepted_before.or((accepts && first_match).then_some(s.name.as_str()))
            {
                return Err(format!(
                    "set `{}` drops after set `{a}` accepts: l3fwd's ACL has deny and route rules only",
                    s.name
                ));
            }
            deny_lines(s, e, &mut r.acl)?;
        }
        if accepts {
            accepted_before = Some(s.name.as_str());
        }
    }
    for (acl, routes) in r.acl.iter_mut().zip(&acl_routes) {
        acl.push_str(routes);
    }
    Ok(r)
}

/// The `@` lines of one drop element: the product of its fields' prefixes,
/// ports and protocols, in the families its address fields allow.
fn deny_lines(
    s: &config::SetConfig,
    e: &matcher::Element,
    acl: &mut [String; 2],
) -> Result<(), String> {
    for v6 in [false, true] {
        let w = if v6 { 128 } else { 32 };
        let (mut src, mut dst) = (vec![(0u128, 0u32)], vec![(0u128, 0u32)]);
        let (mut sport, mut dport) = ((0u128, 65535u128), (0u128, 65535u128));
        let mut protos: Option<Vec<u8>> = None;
        let mut ports = false;
        let mut family_ok = true;
        let narrow = |protos: &mut Option<Vec<u8>>, keep: &dyn Fn(u8) -> bool| {
            let all: Vec<u8> = (0..=255u8).collect();
            *protos = Some(
                protos
                    .take()
                    .unwrap_or(all)
                    .into_iter()
                    .filter(|&p| keep(p))
                    .collect(),
            );
        };
        for (src_field, range) in s.sources.iter().zip(e.key.iter()) {
            match *src_field {
                Source::IpSaddr | Source::IpDaddr if v6 => family_ok = false,
                Source::Ip6Saddr | Source::Ip6Daddr if !v6 => family_ok = false,
                Source::IpSaddr | Source::Ip6Saddr => src = prefixes(range.start, range.end, w),
                Source::IpDaddr | Source::Ip6Daddr => dst = prefixes(range.start, range.end, w),
                Source::Sport(p) | Source::Dport(p) => {
                    ports = true;
                    if matches!(*src_field, Source::Sport(_)) {
                        sport = (range.start, range.end);
                    } else {
                        dport = (range.start, range.end);
                    }
                    if let Some(p) = p {
                        narrow(&mut protos, &|q| q == p);
                    }
                }
                Source::L4proto => {
                    narrow(&mut protos, &|q| range.contains(q as u128));
                }
                other => {
                    return Err(format!(
                        "set `{}`: l3fwd's ACL has no field for `{other:?}`",
                        s.name
                    ))
                }
            }
        }
        if !family_ok {
            continue;
        }
        if ports {
            narrow(&mut protos, &|q| PORT_PROTOS.contains(&q));
        }
        let protos: Vec<(u8, u8)> = match protos {
            None => vec![(0, 0)],
            Some(v) if v.len() == 256 => vec![(0, 0)],
            Some(v) => v.into_iter().map(|p| (p, 0xff)).collect(),
        };
        for &(sa, sl) in &src {
            for &(da, dl) in &dst {
                for &(p, m) in &protos {
                    let _ = writeln!(
                        acl[v6 as usize],
                        "@{}/{sl} {}/{dl} {} : {} {} : {} {p:#04x}/{m:#04x}",
                        addr(v6, sa),
                        addr(v6, da),
                        sport.0,
                        sport.1,
                        dport.0,
                        dport.1
                    );
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dpdk::examples;

    #[test]
    fn prefixes_cover_a_range_exactly() {
        assert_eq!(prefixes(0, u32::MAX as u128, 32), vec![(0, 0)]);
        assert_eq!(prefixes(0, u128::MAX, 128), vec![(0, 0)]);
        assert_eq!(prefixes(5, 5, 32), vec![(5, 32)]);
        // ::1-::ff: 1/128, 2/127, 4/126, ..., 128/121.
        let p = prefixes(1, 0xff, 128);
        assert_eq!(p.len(), 8);
        let mut rng = crate::stats::Rng(7);
        for _ in 0..2000 {
            let a = rng.below(1 << 12) as u128;
            let b = a + rng.below(1 << 12) as u128;
            let p = prefixes(a, b, 32);
            // Consecutive, aligned, and exactly a..=b.
            let mut next = a;
            for &(s, l) in &p {
                assert_eq!(s, next);
                let size = 1u128 << (32 - l);
                assert_eq!(s % size, 0);
                next = s + size;
            }
            assert_eq!(next, b + 1);
        }
    }

    #[test]
    fn the_examples_rules_are_what_l3fwd_reads() {
        let cfg = config::load(&examples().join("forwarder.toml")).unwrap();
        let r = rules(&cfg).unwrap();
        // The default routes as two halves for rte_lpm, whole for rte_acl.
        assert!(r.lpm[0].contains("R0.0.0.0/1 1\nR128.0.0.0/1 1\n"));
        assert!(r.acl[0].ends_with("R0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x00/0x00 1\n"));
        // The blocklist: 1,024 elements, a line per port protocol.
        let deny4 = r.acl[0].lines().filter(|l| l.starts_with('@')).count();
        assert_eq!(deny4, 1024 * PORT_PROTOS.len());
        assert!(r.acl[0].starts_with("@0.0.0.0/0 198.51.100.0/32 0 : 65535 22 : 22 0x06/0xff\n"));
        // v6-services: two drops (the accept is no rule); the range
        // 2001:db8:3::1-2001:db8:3::ff as 8 prefixes, tcp only.
        let deny6: Vec<&str> = r.acl[1].lines().filter(|l| l.starts_with('@')).collect();
        assert_eq!(deny6.len(), 1 + 8);
        assert!(deny6[0]
            .contains("2001:0db8:0001:0000:0000:0000:0000:0000/48 0 : 65535 22 : 22 0x06/0xff"));
        // Routes before deny lines would shadow them; longest first.
        let first_route = r.acl[0].find("\nR").unwrap();
        assert!(r.acl[0][first_route..].lines().all(|l| !l.starts_with('@')));
    }
}
