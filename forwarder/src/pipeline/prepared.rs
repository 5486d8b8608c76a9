//! The pipeline state that depends on a snapshot's sets and next hops,
//! prepared off the fast path for each worker, and the published
//! snapshot that carries it to the workers.

use super::counters::SetMatches;
use crate::port::MAX_BURST;
use crate::tables::{HopKind, RuleSet, Tables};
use crate::wire;
use matcher::Scratch;
use routecache::FibSnapshot;
use std::sync::Mutex;

/// A next hop as a forwarded frame's rewrite uses it: its two MACs in
/// the frame's order, its egress port, and the longest frame it takes as
/// it is. Sixteen bytes, so that finding one is a shift.
///
/// `limit` makes one test on the fast path of two questions: a frame
/// longer than it takes the cold path, which finds out why (the hop's
/// kind in [`Pipeline::kinds`]). A hop ready to use has its port's MTU
/// (plus an Ethernet header) there, or the largest length when no port
/// has addresses (no ICMP to send, so no MTU checked); any other hop (a
/// gateway not resolved yet, a connected network, the router itself)
/// has 0, so that every frame to it leaves the fast path.
#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
pub(super) struct Egress {
    pub(super) macs: [u8; 12],
    /// The port whose queue sends (the hop's port, or a VLAN
    /// sub-interface's parent), with [`TAGGED`] set when the frame leaves
    /// tagged: then no queue has that index, and the rewrite goes the
    /// tagged way (see [`HopLink`]). 16 bytes in all: the entry is copied
    /// for every packet.
    pub(super) queue: u16,
    pub(super) limit: u16,
}

/// The bit of [`Egress::queue`] that says the hop's frames leave tagged.
pub(super) const TAGGED: u16 = 0x8000;

/// What the rarer ways out need of a hop, beside its [`Egress`]: its
/// port (a VLAN sub-interface's own index, for its MTU, neighbours and
/// counters) and the tags its frames leave with.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct HopLink {
    pub(super) port: u16,
    /// The Ethernet header's length as the frame leaves: 14, and 4 a
    /// VLAN tag; the tags are `tags`' first `l2 - 14` bytes.
    pub(super) l2: u16,
    pub(super) tags: [u8; 8],
}

/// What one rule set looked up in the last burst: the packets it
/// applied to and the element each matched. Kept per set rather than
/// reused from set to set, so that after a burst every set's lookups are
/// still there for [`Pipeline::explain`] to read: a trace costs the
/// ordinary run nothing, not even a test.
#[derive(Clone, Copy)]
pub(super) struct Found {
    /// The packets looked up (indices in the burst), the first `m`.
    pub(super) which: [u8; MAX_BURST],
    /// What each found.
    pub(super) ids: [Option<u32>; MAX_BURST],
    /// How many.
    pub(super) m: u8,
}

impl Default for Found {
    fn default() -> Self {
        Found {
            which: [0; MAX_BURST],
            ids: [None; MAX_BURST],
            m: 0,
        }
    }
}

/// A hop's kind ([`Pipeline::kinds`]): the MACs are the ones to write
/// (a static next hop, or a gateway whose MAC the slow path resolved).
pub(super) const READY: u8 = 0;
/// A gateway the slow path has not heard of: its packets go to it.
pub(super) const UNRESOLVED: u8 = 1;
/// A gateway being resolved (or failed): its packets are dropped,
/// counted, while the slow path holds the first few.
pub(super) const PENDING: u8 = 2;
/// A connected network: the destination's own MAC, per packet, from
/// the neighbour table.
pub(super) const CONNECTED: u8 = 3;
/// The router itself: to the slow path.
pub(super) const LOCAL: u8 = 4;

/// The [`Egress::limit`] of a ready hop out of a port with MTU `mtu`.
pub(super) fn ready_limit(routing: bool, mtu: u16) -> u16 {
    if routing {
        mtu.saturating_add(14)
    } else {
        u16::MAX
    }
}

/// What a pipeline needs for one snapshot that depends on its sets and
/// next hops: per-set lookup scratch and key buffers, the next hops as
/// egress entries, and zeroed match counters with the sets' names.
///
/// The control side prepares one for each worker with every snapshot
/// ([`crate::control::build::assemble`], in the snapshot's [`Slot`]s). A
/// worker that
/// meets a new generation swaps it for its own and leaves its old one in
/// the slot: the new state is allocated, and the old one freed (with the
/// snapshot, once replaced), on the control thread, never on a worker.
#[derive(Default)]
pub struct Prepared {
    pub(super) scratch: Vec<Scratch>,
    /// Per set: its keys' buffer and what it found.
    pub(super) keys: Vec<(Vec<u8>, Found)>,
    pub(super) egress: Vec<Egress>,
    /// The hops' ports and tags.
    pub(super) links: Vec<HopLink>,
    /// Each hop's kind ([`READY`], ...).
    pub(super) kinds: Vec<u8>,
    /// The gateways' hops by address: hop index, port, neighbour key.
    pub(super) gateways: Vec<(u32, u16, u128)>,
    /// Per port, the largest IP packet it sends.
    pub(super) mtus: Vec<u16>,
    /// Per port, what a worker's neighbour request there takes.
    pub(super) askers: Vec<crate::neigh::Asker>,
    pub(super) matches: Vec<SetMatches>,
    pub(super) set_names: Vec<String>,
}

impl Prepared {
    /// The state for a snapshot of `sets` routing with `fib`, whose hops
    /// are `kinds`, out of `ports`.
    pub fn new(
        sets: &[RuleSet],
        fib: &FibSnapshot,
        kinds: &[HopKind],
        ports: &[config::PortConfig],
    ) -> Prepared {
        let mut gateways = Vec::new();
        let routing = ports.iter().any(|p| !p.addresses.is_empty());
        let hops = fib.targets().hops();
        let kinds: Vec<u8> = hops
            .iter()
            .enumerate()
            .map(|(i, h)| match kinds.get(i) {
                None | Some(HopKind::Static) => READY,
                Some(&HopKind::Gateway { addr, v6 }) => {
                    gateways.push((i as u32, h.port, crate::neigh::nkey(v6, addr)));
                    UNRESOLVED
                }
                Some(HopKind::Connected) => CONNECTED,
                Some(HopKind::Local) => LOCAL,
            })
            .collect();
        let mtu = |p: u16| ports.get(p as usize).map_or(1500, |p| p.mtu);
        let egress = hops
            .iter()
            .zip(&kinds)
            .map(|(h, &k)| {
                let link = crate::vlan::link_of(ports, h.port);
                Egress {
                    macs: wire::macs(h.dst_mac, h.src_mac),
                    queue: link.queue | if link.len > 0 { TAGGED } else { 0 },
                    limit: if k == READY {
                        ready_limit(routing, mtu(h.port))
                    } else {
                        0
                    },
                }
            })
            .collect();
        let links = hops
            .iter()
            .map(|h| {
                let link = crate::vlan::link_of(ports, h.port);
                HopLink {
                    port: h.port,
                    l2: 14 + link.len as u16,
                    tags: link.tags,
                }
            })
            .collect();
        Prepared {
            scratch: sets.iter().map(|s| s.snap.scratch()).collect(),
            keys: sets
                .iter()
                .map(|s| (vec![0; MAX_BURST * s.key_len.max(1)], Found::default()))
                .collect(),
            egress,
            links,
            kinds,
            gateways,
            mtus: ports.iter().map(|p| p.mtu).collect(),
            askers: crate::neigh::askers(ports),
            matches: vec![SetMatches::default(); sets.len()],
            set_names: sets.iter().map(|s| s.name.clone()).collect(),
        }
    }
}

impl Prepared {
    /// The counts of `old`'s sets that this state has by name.
    pub(super) fn carry_matches(&mut self, old: &Prepared) {
        for (name, m) in self.set_names.iter().zip(&mut self.matches) {
            if let Some(i) = old.set_names.iter().position(|n| n == name) {
                *m = old.matches[i];
            }
        }
    }
}

/// A worker's [`Prepared`] state in a snapshot: fresh until the worker
/// takes it, then the worker's previous state, freed with the snapshot.
pub struct Slot(pub(super) Mutex<(bool, Prepared)>);

impl Slot {
    /// A slot holding fresh state.
    pub fn new(p: Prepared) -> Slot {
        Slot(Mutex::new((true, p)))
    }

    /// Swaps the fresh state in for `mine` (which the slot keeps), the
    /// match counts of sets kept by name carried over: true if there was
    /// fresh state. Never waits: the lock is only ever tried, and after
    /// publication only its worker tries it.
    pub(super) fn swap_fresh(&self, mine: &mut Prepared) -> bool {
        let Ok(mut g) = self.0.try_lock() else {
            return false;
        };
        let (fresh, p) = &mut *g;
        if !*fresh {
            return false;
        }
        p.carry_matches(mine);
        std::mem::swap(p, mine);
        *fresh = false;
        true
    }
}

/// What the control side publishes: the tables every burst is judged by
/// and, per worker, the pipeline state prepared for them (see
/// [`Prepared`]). It reads as its [`Tables`].
pub struct Snapshot {
    /// The tables.
    pub tables: Tables,
    /// Per worker (the order of `[forwarder] cores`), the state prepared
    /// for these tables.
    pub slots: Vec<Slot>,
}

impl Snapshot {
    /// `tables` with fresh state prepared for `workers` workers.
    pub fn new(tables: Tables, workers: usize) -> Snapshot {
        let slots = (0..workers)
            .map(|_| {
                Slot::new(Prepared::new(
                    &tables.sets,
                    &tables.fib,
                    &tables.hop_kinds,
                    &tables.ports,
                ))
            })
            .collect();
        Snapshot { tables, slots }
    }

    /// No sets, no routes, no workers' state: a placeholder before the
    /// first publication.
    pub fn empty() -> Snapshot {
        Snapshot {
            tables: Tables::empty(),
            slots: Vec::new(),
        }
    }
}

impl std::ops::Deref for Snapshot {
    type Target = Tables;
    fn deref(&self) -> &Tables {
        &self.tables
    }
}

/// Before it is published (in an `Arc`, immutable): tests and benchmarks
/// set what the prepared state does not depend on, such as the ECMP
/// hash's seed.
impl std::ops::DerefMut for Snapshot {
    fn deref_mut(&mut self) -> &mut Tables {
        &mut self.tables
    }
}
