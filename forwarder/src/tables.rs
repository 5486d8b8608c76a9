//! The snapshot of tables the workers read: rule sets, the FIB and the
//! ports' MACs, built from a checked configuration, published whole.

use crate::flowcache::FlowCacheConfig;
use crate::wire::{Parsed, L3};
use config::{Action, Config, RouteConfig, SetConfig, Source, Via};
use matcher::{InsertMode, Set};
use routecache::{Family, Fib, FibSnapshot, HashKind, NextHop, RouteCacheConfig, TargetId};
use std::sync::Arc;

/// A rule set as the pipeline uses it.
pub struct RuleSet {
    /// Its name.
    pub name: String,
    /// The committed set.
    pub snap: Arc<matcher::Snapshot>,
    /// The packet field feeding each of its fields.
    pub sources: Vec<Source>,
    /// What a match does.
    pub action: Action,
    /// Bytes of a key.
    pub key_len: usize,
    /// What a packet must have for the sources to make its key.
    pub need: Need,
}

/// What a packet must carry for a set's sources to make its key, from
/// the sources once, so that a burst tests each packet with a few
/// compares instead of going through the sources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Need {
    /// No packet can have it all (IPv4 and IPv6 fields, or ports of two
    /// different protocols).
    never: bool,
    /// The address family the address fields need.
    l3: Option<L3>,
    /// Ports: a complete TCP, UDP or SCTP header.
    ports: bool,
    /// The protocol a `tcp`/`udp`/`sctp` port field names.
    proto: Option<u8>,
}

impl Need {
    /// What `sources` need.
    pub fn of(sources: &[Source]) -> Need {
        let mut n = Need::default();
        for s in sources {
            let family = match s {
                Source::IpSaddr | Source::IpDaddr => Some(L3::V4),
                Source::Ip6Saddr | Source::Ip6Daddr => Some(L3::V6),
                _ => None,
            };
            if let Some(f) = family {
                n.never |= n.l3.is_some_and(|l| l != f);
                n.l3 = Some(f);
            }
            if let Source::Sport(p) | Source::Dport(p) = *s {
                n.ports = true;
                if let Some(p) = p {
                    n.never |= n.proto.is_some_and(|q| q != p);
                    n.proto = Some(p);
                }
            }
        }
        n
    }

    /// Whether packet `p` has every field.
    #[inline]
    pub fn applies(&self, p: &Parsed) -> bool {
        use crate::wire::proto::{SCTP, TCP, UDP};
        !self.never
            && self.l3.is_none_or(|l| l == p.l3)
            && (!self.ports
                || (p.l4_ok
                    && matches!(p.proto, TCP | UDP | SCTP)
                    && self.proto.is_none_or(|x| x == p.proto)))
    }
}

/// Everything a burst is judged by. Immutable once published.
pub struct Tables {
    /// Increases with every published snapshot.
    pub generation: u64,
    /// Rule sets, in evaluation order.
    pub sets: Vec<RuleSet>,
    /// Routes, next hops, ECMP groups.
    pub fib: Arc<FibSnapshot>,
    /// Names of the ports, by index.
    pub port_names: Vec<String>,
    /// The route stage's settings.
    pub route_cache: RouteCacheConfig,
    /// Seed of the ECMP flow hash.
    pub flow_seed: u32,
    /// Each core's flow cache.
    pub flow_cache: FlowCacheConfig,
}

/// The flow cache settings of `cfg` (defaults where not given).
pub fn flow_cache(cfg: &Config) -> FlowCacheConfig {
    let d = FlowCacheConfig::default();
    FlowCacheConfig {
        entries: cfg.flow_cache.entries.unwrap_or(d.entries),
        insert_one_in: cfg.flow_cache.insert_one_in.unwrap_or(d.insert_one_in),
    }
}

/// A rule set's working copy, built from its configuration.
pub fn build_set(s: &SetConfig) -> Result<Set, String> {
    let mut set = Set::new(s.decl.clone());
    for e in &s.elements {
        set.insert(e.clone(), InsertMode::Add)
            .map_err(|e| format!("set `{}`: {e}", s.name))?;
    }
    Ok(set)
}

/// The committed rule set the pipeline reads.
pub fn rule_set(s: &SetConfig, snap: Arc<matcher::Snapshot>) -> RuleSet {
    RuleSet {
        name: s.name.clone(),
        snap,
        sources: s.sources.clone(),
        action: s.action,
        key_len: s.decl.key_len(),
        need: Need::of(&s.sources),
    }
}

/// A FIB working copy with the next hops and ECMP groups of `cfg` (their
/// target ids returned, by configuration index), and no routes yet.
pub fn fib_targets(cfg: &Config, fib: &mut Fib) -> Result<(Vec<TargetId>, Vec<TargetId>), String> {
    let hops: Vec<TargetId> = cfg
        .next_hops
        .iter()
        .map(|h| {
            fib.add_next_hop(NextHop {
                port: h.port as u16,
                dst_mac: h.mac,
                src_mac: cfg.ports[h.port].mac,
            })
        })
        .collect();
    let mut groups = Vec::new();
    for g in &cfg.ecmp {
        let members: Vec<TargetId> = g.members.iter().map(|&m| hops[m]).collect();
        groups.push(
            fib.add_ecmp_group(&members)
                .map_err(|e| format!("ECMP group `{}`: {e}", g.name))?,
        );
    }
    Ok((hops, groups))
}

/// Where a route leads, as a FIB target.
pub fn route_target(r: &RouteConfig, hops: &[TargetId], groups: &[TargetId]) -> TargetId {
    match r.via {
        Via::NextHop(h) => hops[h],
        Via::Ecmp(g) => groups[g],
    }
}

/// A route's family.
pub fn family(r: &RouteConfig) -> Family {
    if r.v6 {
        Family::V6
    } else {
        Family::V4
    }
}

/// Adds (or replaces) a route in a FIB working copy.
pub fn insert_route(fib: &mut Fib, r: &RouteConfig, target: TargetId) -> Result<(), String> {
    fib.insert(family(r), r.prefix, r.len, target)
        .map(|_| ())
        .map_err(|e| format!("route {:#x}/{}: {e}", r.prefix, r.len))
}

/// The route stage's settings of `cfg` (defaults where not given).
pub fn route_cache(cfg: &Config) -> RouteCacheConfig {
    let defaults = RouteCacheConfig::default();
    let c = &cfg.route_cache;
    RouteCacheConfig {
        hint: c.hint.unwrap_or(defaults.hint),
        dst_cache_entries: c.dst_cache_entries.unwrap_or(defaults.dst_cache_entries),
        hash: c
            .hash
            .as_deref()
            .and_then(HashKind::parse)
            .unwrap_or(defaults.hash),
    }
}

impl Tables {
    /// No sets, no routes: a placeholder before the first publication.
    pub fn empty() -> Tables {
        Tables {
            generation: 0,
            sets: Vec::new(),
            fib: Fib::new().publish(),
            port_names: Vec::new(),
            route_cache: RouteCacheConfig::default(),
            flow_seed: 0,
            flow_cache: FlowCacheConfig {
                entries: 0,
                insert_one_in: 1,
            },
        }
    }

    /// Builds the tables of a configuration.
    pub fn build(cfg: &Config, generation: u64) -> Result<Tables, String> {
        let mut sets = Vec::new();
        for s in &cfg.sets {
            sets.push(rule_set(s, build_set(s)?.commit()));
        }
        let mut fib = Fib::new();
        let (hops, groups) = fib_targets(cfg, &mut fib)?;
        for r in &cfg.routes {
            insert_route(&mut fib, r, route_target(r, &hops, &groups))?;
        }
        let fib = fib.publish();
        fib.prepare();
        Ok(Tables {
            generation,
            sets,
            fib,
            port_names: cfg.ports.iter().map(|p| p.name.clone()).collect(),
            route_cache: route_cache(cfg),
            flow_seed: routecache::hash::random_seed(),
            flow_cache: flow_cache(cfg),
        })
    }
}
