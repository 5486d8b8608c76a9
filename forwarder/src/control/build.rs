//! Building what the workers judge by from a checked configuration: the
//! working copies of every table ([`Working`]: one pipapo set per rule
//! set, the FIB with its next hops, ECMP groups and routes), and the
//! snapshot assembled from them ([`assemble`]), the one way a snapshot
//! is made. The reload engine keeps the working copies and changes them
//! incrementally; a first start, the tests and the benchmarks build them
//! whole ([`snapshot`]).

use crate::pipeline::Snapshot;
use crate::tables::{FlowCacheConfig, HopKind, Need, RuleSet, Tables};
use config::{Config, RouteConfig, SetConfig, Source, Via};
use matcher::{InsertMode, Set};
use routecache::{Family, Fib, FibSnapshot, HashKind, NextHop, RouteCacheConfig, TargetId};
use std::sync::Arc;

/// A configuration's next hops in the FIB: the configured ones, the
/// ECMP groups, each router port's connected and local hops, and what
/// each hop is.
pub struct FibTargets {
    /// The configured next hops' targets, by configuration index.
    pub hops: Vec<TargetId>,
    /// The ECMP groups' targets, by configuration index.
    pub groups: Vec<TargetId>,
    /// Every hop's kind, in the FIB's order.
    pub kinds: Vec<HopKind>,
    /// Per port with addresses: its connected hop and its local hop.
    pub router: Vec<(usize, TargetId, TargetId)>,
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
    for e in s.elements.iter() {
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
        counter: s.counter,
        hook: s.hook,
    }
}

/// A FIB working copy with the next hops and ECMP groups of `cfg` and
/// the router ports' connected and local hops, and no routes yet.
pub fn fib_targets(cfg: &Config, fib: &mut Fib) -> Result<FibTargets, String> {
    let mut kinds = Vec::new();
    let hops: Vec<TargetId> = cfg
        .next_hops
        .iter()
        .map(|h| {
            kinds.push(match (h.mac, h.address) {
                (None, Some(a)) => HopKind::Gateway {
                    addr: config::ip_bits(a),
                    v6: a.is_ipv6(),
                },
                _ => HopKind::Static,
            });
            fib.add_next_hop(NextHop {
                port: h.port as u16,
                dst_mac: h.mac.unwrap_or_default(),
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
    let mut router = Vec::new();
    for (i, p) in cfg.ports.iter().enumerate() {
        if p.addresses.is_empty() {
            continue;
        }
        let hop = NextHop {
            port: i as u16,
            dst_mac: [0; 6],
            src_mac: p.mac,
        };
        let connected = fib.add_next_hop(hop);
        kinds.push(HopKind::Connected);
        let local = fib.add_next_hop(hop);
        kinds.push(HopKind::Local);
        router.push((i, connected, local));
    }
    Ok(FibTargets {
        hops,
        groups,
        kinds,
        router,
    })
}

/// The routes a router port's addresses install: each address's network
/// (connected: forwarded to the destination itself), each address (local:
/// to the slow path), and the groups and link-local addresses nothing
/// forwards (IPv6 `ff00::/8` and `fe80::/10`, to the slow path). Installed
/// before the configured routes, which may not repeat a connected
/// network (the configuration refuses it).
pub fn insert_router_routes(cfg: &Config, fib: &mut Fib, t: &FibTargets) -> Result<(), String> {
    // Per VRF, a local hop of an IPv6 port: where its groups and
    // link-local addresses go.
    let mut any_v6 = vec![None; cfg.vrf_count()];
    for &(i, connected, local) in &t.router {
        let vrf = cfg.ports[i].vrf as usize;
        for a in &cfg.ports[i].addresses {
            let f = if a.v6() { Family::V6 } else { Family::V4 };
            let full = if a.v6() { 128 } else { 32 };
            let link_local =
                matches!(a.ip, std::net::IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80);
            if a.v6() {
                any_v6[vrf].get_or_insert(local);
            }
            if !link_local && a.len < full {
                fib.insert_in(vrf, f, a.network(), a.len, connected)
                    .map_err(|e| format!("port `{}`: {}: {e}", cfg.ports[i].name, a.ip))?;
            }
            fib.insert_in(vrf, f, a.bits(), full, local)
                .map_err(|e| format!("port `{}`: {}: {e}", cfg.ports[i].name, a.ip))?;
        }
    }
    for (vrf, local) in any_v6.into_iter().enumerate() {
        let Some(local) = local else { continue };
        for (p, l) in [(0xff00u128 << 112, 8), (0xfe80u128 << 112, 10)] {
            fib.insert_in(vrf, Family::V6, p, l, local)
                .map_err(|e| format!("{p:#x}/{l}: {e}"))?;
        }
    }
    Ok(())
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

/// Adds (or replaces) a route in a FIB working copy, in its VRF.
pub fn insert_route(fib: &mut Fib, r: &RouteConfig, target: TargetId) -> Result<(), String> {
    fib.insert_in(r.vrf as usize, family(r), r.prefix, r.len, target)
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

/// The control side's working copies of a configuration's tables: one
/// pipapo set per rule set and the FIB with its next hops (their target
/// ids by configuration index), ECMP groups and routes. What the reload
/// engine keeps and changes incrementally, and what every snapshot is
/// assembled from ([`assemble`]).
pub struct Working {
    /// One working copy per rule set, in configuration order.
    pub sets: Vec<Set>,
    /// The FIB.
    pub fib: Fib,
    /// The next hops' targets, by configuration index.
    pub hops: Vec<TargetId>,
    /// The ECMP groups' targets, by configuration index.
    pub groups: Vec<TargetId>,
    /// What each of the FIB's hops is.
    pub kinds: Arc<[HopKind]>,
}

impl Working {
    /// Builds every table of `cfg`.
    pub fn build(cfg: &Config) -> Result<Working, String> {
        let sets = cfg.sets.iter().map(build_set).collect::<Result<_, _>>()?;
        let mut fib = Fib::new();
        let kinds = fill_fib(cfg, &mut fib)?;
        Ok(Working {
            sets,
            fib,
            hops: kinds.hops,
            groups: kinds.groups,
            kinds: kinds.kinds.into(),
        })
    }
}

/// Adds `cfg`'s next hops, groups and routes (the router's, then the
/// configured ones) to an empty FIB.
pub fn fill_fib(cfg: &Config, fib: &mut Fib) -> Result<FibTargets, String> {
    fib.set_vrfs(cfg.vrf_count());
    let t = fib_targets(cfg, fib)?;
    insert_router_routes(cfg, fib, &t)?;
    for r in cfg.all_routes() {
        insert_route(fib, r, route_target(r, &t.hops, &t.groups))?;
    }
    Ok(t)
}

/// The snapshot of `cfg`'s tables: the working copies' sets committed
/// (`quick`: beside their last full commit's tables, see
/// [`matcher::Set::commit_quick`]), with `fib` (a snapshot of the working
/// FIB), the ECMP hash seeded with `flow_seed`, and each worker's
/// pipeline state prepared for it. The one way a snapshot is made.
pub fn assemble(
    cfg: &Config,
    working: &mut Working,
    fib: Arc<FibSnapshot>,
    generation: u64,
    flow_seed: u32,
    quick: bool,
) -> Snapshot {
    let sets: Vec<RuleSet> = cfg
        .sets
        .iter()
        .zip(&mut working.sets)
        .map(|(s, set)| {
            rule_set(
                s,
                if quick {
                    set.commit_quick()
                } else {
                    set.commit()
                },
            )
        })
        .collect();
    let tables = Tables {
        generation,
        next_expiry: sets
            .iter()
            .map(|s| s.snap.next_expiry())
            .min()
            .unwrap_or(matcher::NEVER),
        // In a snapshot built otherwise than from a checked configuration,
        // a prerouting set after a forward one runs with the forward ones.
        forward_from: sets
            .iter()
            .position(|s| s.hook == config::Hook::Forward)
            .unwrap_or(sets.len()),
        sets,
        fib,
        port_names: cfg.ports.iter().map(|p| p.name.clone()).collect(),
        route_cache: route_cache(cfg),
        flow_seed,
        flow_cache: flow_cache(cfg),
        conntrack: cfg.conntrack,
        conntrack_workers: cfg.forwarder.cores.len().max(1),
        reads_macs: cfg.sets.iter().any(|s| {
            s.sources
                .iter()
                .any(|x| matches!(x, Source::EtherSaddr | Source::EtherDaddr))
        }),
        reads_iifname: cfg
            .sets
            .iter()
            .any(|s| s.sources.contains(&Source::Iifname)),
        reads_beyond_flow: cfg
            .sets
            .iter()
            .any(|s| s.sources.iter().any(|x| matches!(x, Source::Dscp(_)))),
        ifnames: cfg
            .ports
            .iter()
            .map(|p| crate::tables::ifname_key(&p.name))
            .collect(),
        hop_kinds: working.kinds.clone(),
        ports: cfg.ports.clone().into(),
        vlans: Arc::new(crate::vlan::Vlans::new(&cfg.ports)),
        port_vrf: cfg.ports.iter().map(|p| p.vrf as u8).collect(),
        vrf_mixed: cfg.ports[..cfg.physical_ports()]
            .iter()
            .enumerate()
            .map(|(i, p)| {
                cfg.ports.iter().any(|s| {
                    matches!(&s.driver, config::Driver::Vlan(v) if v.parent == i) && s.vrf != p.vrf
                })
            })
            .collect(),
        vrf_names: (0..cfg.vrf_count())
            .map(|v| cfg.vrf_name(v as u16).to_string())
            .collect(),
        routing: cfg.is_router(),
        router_settings: cfg.router,
        static_neighbours: cfg
            .next_hops
            .iter()
            .filter_map(|h| {
                let a = h.address?;
                Some((h.port as u16, a.is_ipv6(), config::ip_bits(a), h.mac?))
            })
            .collect(),
    };
    Snapshot::new(tables, cfg.forwarder.cores.len())
}

/// The snapshot of a configuration, built whole as the control side's
/// first publication does (tests, benchmarks, examples).
pub fn snapshot(cfg: &Config, generation: u64) -> Result<Snapshot, String> {
    let mut working = Working::build(cfg)?;
    let fib = working.fib.publish();
    fib.prepare();
    let seed = routecache::hash::random_seed();
    Ok(assemble(cfg, &mut working, fib, generation, seed, false))
}
