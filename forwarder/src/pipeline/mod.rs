//! The per-burst pipeline of one worker: parse, classify, route, rewrite,
//! group by egress port. Every stage works on the whole burst; nothing
//! allocates, locks or calls the system per packet.

pub mod classify;
pub mod flowcache;
mod route;

use crate::neigh::NeighTable;
use crate::port::{Burst, MAX_BURST};
use crate::punt::RouterShared;
use crate::reason::DropReason;
use crate::snapshot::RuleSet;
use crate::snapshot::{HopKind, Tables};
use crate::wire::{self, Parsed};
use flowcache::{Decision, FlowCache, FlowCacheConfig, FlowCacheStats, FlowId, Loc};
use matcher::Scratch;
use routecache::{FibSnapshot, Router, TargetId};
use std::sync::{Arc, Mutex};

/// What a rule set's match did to a packet, as its match counters count
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Dropped (the set's action, or a verdict map's `drop`).
    Drop,
    /// Accepted: the remaining sets are skipped, the packet is routed.
    Accept,
    /// On to the next set (a verdict map's `continue`, `jump`, ...: no
    /// chains here).
    Continue,
}

impl Outcome {
    /// Every outcome, each at its [`Outcome::index`].
    pub const ALL: [Outcome; 3] = [Outcome::Drop, Outcome::Accept, Outcome::Continue];

    /// Its name in statistics (the `stats` JSON's key, the Prometheus
    /// `verdict` label).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Drop => "drop",
            Outcome::Accept => "accept",
            Outcome::Continue => "continue",
        }
    }

    /// Its index in [`Outcome::ALL`] and in a set's [`SetMatches`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One rule set's matches, by [`Outcome`].
pub type SetMatches = [u64; Outcome::ALL.len()];

/// Per-reason drop counts, by [`DropReason::index`].
pub type DropCounts = [u64; DropReason::COUNT];

/// A worker's counters. Written only by the worker; read by the stats
/// printer through [`crate::worker::Published`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames received.
    pub rx: u64,
    /// Frames handed to a port for sending.
    pub tx: u64,
    /// Drops by reason.
    pub drops: DropCounts,
    /// Matches per rule set, in the order of the current snapshot's sets.
    /// A reload that keeps a set by name keeps its counts.
    pub matches: Vec<SetMatches>,
    /// The sets' names, as `matches` is ordered.
    pub set_names: Vec<String>,
    /// Bursts processed.
    pub bursts: u64,
}

/// How much of the pipeline runs: the full one, or a prefix of it, for
/// measuring what each stage costs (`bench forward`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Receive and send out of port 0, touching nothing.
    Io,
    /// Set each frame's MACs to the first next hop's and send it out of
    /// that hop's port: no parsing (what testpmd's `macswap` does).
    Mac,
    /// Parse and rewrite (MACs, TTL, checksum) towards the first next hop.
    Rewrite,
    /// Parse, route, rewrite: no rule sets.
    Route,
    /// Everything.
    #[default]
    Full,
}

impl Mode {
    /// The mode named `io`, `mac`, `rewrite`, `route` or `full`.
    pub fn parse(s: &str) -> Option<Mode> {
        [Mode::Io, Mode::Mac, Mode::Rewrite, Mode::Route, Mode::Full]
            .into_iter()
            .find(|m| m.name() == s)
    }

    /// The variant's name in benchmarks: `io`, `mac`, `rewrite`, `route`,
    /// `full`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Io => "io",
            Mode::Mac => "mac",
            Mode::Rewrite => "rewrite",
            Mode::Route => "route",
            Mode::Full => "full",
        }
    }
}

/// What becomes of a packet of the burst.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Still going (through the remaining sets, then routing).
    Go,
    /// Accepted by a set: skips the remaining sets, still routed.
    Accepted,
    /// Dropped, and why.
    Dropped(DropReason),
    /// Decided by the flow cache: see the burst's `decisions`.
    Cached,
}

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
struct Egress {
    macs: [u8; 12],
    port: u16,
    limit: u16,
}

/// A hop's kind ([`Pipeline::kinds`]): the MACs are the ones to write
/// (a static next hop, or a gateway whose MAC the slow path resolved).
const READY: u8 = 0;
/// A gateway the slow path has not heard of: its packets go to it.
const UNRESOLVED: u8 = 1;
/// A gateway being resolved (or failed): its packets are dropped,
/// counted, while the slow path holds the first few.
const PENDING: u8 = 2;
/// A connected network: the destination's own MAC, per packet, from
/// the neighbour table.
const CONNECTED: u8 = 3;
/// The router itself: to the slow path.
const LOCAL: u8 = 4;

/// The [`Egress::limit`] of a ready hop out of a port with MTU `mtu`.
fn ready_limit(routing: bool, mtu: u16) -> u16 {
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
/// ([`Tables::assemble`], in the snapshot's [`Slot`]s). A worker that
/// meets a new generation swaps it for its own and leaves its old one in
/// the slot: the new state is allocated, and the old one freed (with the
/// snapshot, once replaced), on the control thread, never on a worker.
#[derive(Default)]
pub struct Prepared {
    scratch: Vec<Scratch>,
    keys: Vec<Vec<u8>>,
    egress: Vec<Egress>,
    /// Each hop's kind ([`READY`], ...).
    kinds: Vec<u8>,
    /// The gateways' hops by address: hop index, port, neighbour key.
    gateways: Vec<(u32, u16, u128)>,
    /// Per port, the largest IP packet it sends.
    mtus: Vec<u16>,
    matches: Vec<SetMatches>,
    set_names: Vec<String>,
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
            .map(|(h, &k)| Egress {
                macs: wire::macs(h.dst_mac, h.src_mac),
                port: h.port,
                limit: if k == READY {
                    ready_limit(routing, mtu(h.port))
                } else {
                    0
                },
            })
            .collect();
        Prepared {
            scratch: sets.iter().map(|s| s.snap.scratch()).collect(),
            keys: sets
                .iter()
                .map(|s| vec![0; MAX_BURST * s.key_len.max(1)])
                .collect(),
            egress,
            kinds,
            gateways,
            mtus: ports.iter().map(|p| p.mtu).collect(),
            matches: vec![SetMatches::default(); sets.len()],
            set_names: sets.iter().map(|s| s.name.clone()).collect(),
        }
    }
}

/// A worker's [`Prepared`] state in a snapshot: fresh until the worker
/// takes it, then the worker's previous state, freed with the snapshot.
pub struct Slot(Mutex<(bool, Prepared)>);

impl Slot {
    /// A slot holding fresh state.
    pub fn new(p: Prepared) -> Slot {
        Slot(Mutex::new((true, p)))
    }

    /// Swaps the fresh state in for `mine` (which the slot keeps), the
    /// match counts of sets kept by name carried over: true if there was
    /// fresh state. Never waits: the lock is only ever tried, and after
    /// publication only its worker tries it.
    fn swap_fresh(&self, mine: &mut Prepared) -> bool {
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

impl Prepared {
    /// The counts of `old`'s sets that this state has by name.
    fn carry_matches(&mut self, old: &Prepared) {
        for (name, m) in self.set_names.iter().zip(&mut self.matches) {
            if let Some(i) = old.set_names.iter().position(|n| n == name) {
                *m = old.matches[i];
            }
        }
    }
}

/// One worker's pipeline state: scratch, keys, routers, per-burst arrays,
/// all allocated once.
pub struct Pipeline {
    scratch: Vec<Scratch>,
    keys: Vec<Vec<u8>>,
    ids: [Option<u32>; MAX_BURST],
    which: [u8; MAX_BURST],
    parsed: [Parsed; MAX_BURST],
    fate: [Fate; MAX_BURST],
    router4: Router<u32>,
    router6: Router<u128>,
    /// The burst's destinations by family, and their packets' indices
    /// (fixed arrays with counts: a vector's push checks its capacity
    /// every time).
    dst4: [u32; MAX_BURST],
    dst6: [u128; MAX_BURST],
    idx4: [u8; MAX_BURST],
    idx6: [u8; MAX_BURST],
    targets: [Option<TargetId>; MAX_BURST],
    /// The flow cache, when configured (and the sets fit in its entries).
    flows: Option<FlowCache>,
    /// Per packet of the burst: its flow and bucket, whether its decision
    /// is to be stored (a flow cache miss), the matches the sets found.
    flow_locs: [Loc; MAX_BURST],
    pending: [bool; MAX_BURST],
    match_bits: [u32; MAX_BURST],
    decisions: [Decision; MAX_BURST],
    /// The FIB's next hops, in its order, as the rewrite uses them
    /// (rebuilt with every snapshot).
    egress: Vec<Egress>,
    /// Each hop's kind ([`READY`], ...), for frames that leave the fast
    /// path.
    kinds: Vec<u8>,
    gateways: Vec<(u32, u16, u128)>,
    mtus: Vec<u16>,
    /// The router's slow path, when the worker has one; `punting` while
    /// the snapshot has router ports.
    router: Option<Arc<RouterShared>>,
    punting: bool,
    /// The neighbour table the gateways' egress entries were last set
    /// from, and whether they must be set again (new snapshot).
    neigh: Arc<NeighTable>,
    neigh_stale: bool,
    /// The port the burst being processed came in on.
    pub rx_port: u16,
    /// Frames to send, per egress port index (filled by [`Pipeline::process`]).
    pub out: Vec<Vec<u8>>,
    /// Counters.
    pub counters: Counters,
    generation: u64,
    /// This burst's time (on [`crate::clock`]) once some element's
    /// deadline has passed, 0 before: then a match whose deadline is not
    /// after it counts as none, and the flow cache (whose decisions may
    /// hold such matches) stands aside until the control side has removed
    /// the expired elements and published the sets without them.
    expired_at: u64,
    route_cache: routecache::RouteCacheConfig,
    mode: Mode,
    /// The worker's index, which picks its [`Slot`] in each snapshot.
    worker: usize,
}

impl Pipeline {
    /// A pipeline sized for `tables`, with `ports` egress ports.
    pub fn new(tables: &Tables, ports: usize) -> Pipeline {
        Pipeline::with_mode(tables, ports, Mode::Full)
    }

    /// A pipeline running only part of the stages (see [`Mode`]).
    pub fn with_mode(tables: &Tables, ports: usize, mode: Mode) -> Pipeline {
        let mut p = Pipeline {
            scratch: Vec::new(),
            keys: Vec::new(),
            ids: [None; MAX_BURST],
            which: [0; MAX_BURST],
            parsed: [Parsed::default(); MAX_BURST],
            fate: [Fate::Go; MAX_BURST],
            router4: tables.route_cache.router(),
            router6: tables.route_cache.router(),
            dst4: [0; MAX_BURST],
            dst6: [0; MAX_BURST],
            idx4: [0; MAX_BURST],
            idx6: [0; MAX_BURST],
            targets: [None; MAX_BURST],
            flows: None,
            flow_locs: [Loc::default(); MAX_BURST],
            pending: [false; MAX_BURST],
            match_bits: [0; MAX_BURST],
            decisions: [Decision::default(); MAX_BURST],
            egress: Vec::new(),
            kinds: Vec::new(),
            gateways: Vec::new(),
            mtus: Vec::new(),
            router: None,
            punting: false,
            neigh: Arc::new(NeighTable::default()),
            neigh_stale: true,
            rx_port: 0,
            out: vec![Vec::with_capacity(MAX_BURST); ports],
            counters: Counters::default(),
            generation: u64::MAX,
            expired_at: 0,
            route_cache: tables.route_cache,
            mode,
            // No worker's slot while the pipeline is built: the state is
            // built here, as is everything else of it.
            worker: usize::MAX,
        };
        p.adopt(tables);
        p.worker = 0;
        p
    }

    /// Takes up a new snapshot: the state the control side prepared for
    /// this worker in it, swapped for the pipeline's own (see
    /// [`Prepared`]). Two exceptions allocate here: a pipeline that finds
    /// no fresh state for its worker index (tests and benchmarks run
    /// pipelines outside workers) builds it, and changed
    /// `[route_cache]` or `[flow_cache]` settings give new caches.
    fn adopt(&mut self, tables: &Tables) {
        let mut mine = Prepared {
            scratch: std::mem::take(&mut self.scratch),
            keys: std::mem::take(&mut self.keys),
            egress: std::mem::take(&mut self.egress),
            kinds: std::mem::take(&mut self.kinds),
            gateways: std::mem::take(&mut self.gateways),
            mtus: std::mem::take(&mut self.mtus),
            matches: std::mem::take(&mut self.counters.matches),
            set_names: std::mem::take(&mut self.counters.set_names),
        };
        let prepared = tables
            .slots
            .get(self.worker)
            .is_some_and(|s| s.swap_fresh(&mut mine));
        if !prepared {
            let mut fresh =
                Prepared::new(&tables.sets, &tables.fib, &tables.hop_kinds, &tables.ports);
            fresh.carry_matches(&mine);
            mine = fresh;
        }
        self.scratch = mine.scratch;
        self.keys = mine.keys;
        self.egress = mine.egress;
        self.kinds = mine.kinds;
        self.gateways = mine.gateways;
        self.mtus = mine.mtus;
        self.punting = tables.routing && self.router.is_some();
        self.neigh_stale = true;
        self.counters.matches = mine.matches;
        self.counters.set_names = mine.set_names;
        if tables.route_cache != self.route_cache {
            // New route stage settings: new routers (their caches start
            // empty).
            self.router4 = tables.route_cache.router();
            self.router6 = tables.route_cache.router();
            self.route_cache = tables.route_cache;
        }
        // Decisions of the old snapshot are stale under the new one.
        let mut c = tables.flow_cache;
        // A checked configuration has no more sets than the cache
        // records; a snapshot built otherwise gets no cache rather than
        // wrong counts.
        if tables.sets.len() > flowcache::MAX_SETS {
            c.entries = 0;
        }
        match &mut self.flows {
            Some(f)
                if c.entries > 0
                    && f.config()
                        == FlowCacheConfig {
                            entries: FlowCache::capacity_for(c.entries),
                            ..c
                        } =>
            {
                f.invalidate()
            }
            _ => self.flows = (c.entries > 0).then(|| FlowCache::with_config(c)),
        }
        self.generation = tables.generation;
    }

    /// The pipeline of worker `index` (the order of `[forwarder] cores`):
    /// it takes up new snapshots with the state prepared for that worker.
    pub fn for_worker(mut self, index: usize) -> Pipeline {
        self.worker = index;
        self
    }

    /// The pipeline with the router's slow path: frames for the router,
    /// unresolved or earning an ICMP answer go to it.
    pub fn with_router(mut self, r: Arc<RouterShared>, tables: &Tables) -> Pipeline {
        self.router = Some(r);
        self.punting = tables.routing;
        self
    }

    /// Sets the gateways' egress entries from the slow path's latest
    /// neighbour table, if it changed (or the snapshot did).
    #[inline]
    fn sync_neighbours(&mut self) {
        let Some(r) = &self.router else { return };
        let cur = r.neigh.load();
        if !self.neigh_stale && Arc::ptr_eq(&cur, &self.neigh) {
            return;
        }
        // The replaced table is only released here: the slow path keeps
        // every table it published until no worker holds it, and frees
        // it itself.
        self.neigh = arc_swap::Guard::into_inner(cur);
        self.neigh_stale = false;
        for &(hop, port, key) in &self.gateways {
            let (Some(e), Some(k)) = (
                self.egress.get_mut(hop as usize),
                self.kinds.get_mut(hop as usize),
            ) else {
                continue;
            };
            *k = match self.neigh.get(port, key) {
                Some(Some(mac)) => {
                    e.macs[..6].copy_from_slice(&mac);
                    READY
                }
                Some(None) => PENDING,
                None => UNRESOLVED,
            };
            e.limit = if *k == READY {
                ready_limit(true, self.mtus.get(port as usize).copied().unwrap_or(1500))
            } else {
                0
            };
        }
    }

    /// Hands frame `i` to the slow path.
    #[cold]
    #[inline(never)]
    fn punt(&self, burst: &Burst, i: usize, reason: DropReason, hop: u32) {
        if let Some(r) = &self.router {
            r.punt(
                burst.frame(i),
                self.rx_port,
                self.worker as u16,
                reason,
                hop,
            );
        }
    }

    /// A frame longer than its hop's [`Egress::limit`]: the egress entry
    /// to rewrite it with (its hop ready after all, or a connected
    /// destination's MAC found), or `None` when it is dropped here
    /// (counted) or handed to the slow path.
    #[cold]
    #[inline(never)]
    fn not_ready(&mut self, burst: &Burst, i: usize, hop: u32, e: Egress) -> Option<Egress> {
        let kind = self.kinds.get(hop as usize).copied().unwrap_or(READY);
        let len = burst.frame(i).len() - self.parsed[i].l3_off as usize;
        let too_big = matches!(kind, READY | CONNECTED)
            && self.punting
            && len > self.mtus.get(e.port as usize).copied().unwrap_or(u16::MAX) as usize;
        // Why it is dropped here, and whether the slow path takes it.
        let (drop, punt) = match kind {
            _ if too_big => (DropReason::TooBig, true),
            READY => return Some(e),
            LOCAL => (DropReason::Local, true),
            UNRESOLVED => (DropReason::Unresolved, true),
            CONNECTED => {
                let p = &self.parsed[i];
                let key = crate::neigh::nkey(p.l3 == wire::L3::V6, p.dst);
                match self.neigh.get(e.port, key) {
                    Some(Some(mac)) => {
                        let mut e = e;
                        e.macs[..6].copy_from_slice(&mac);
                        return Some(e);
                    }
                    Some(None) => (DropReason::Unresolved, false),
                    None => (DropReason::Unresolved, true),
                }
            }
            _ => (DropReason::Unresolved, false),
        };
        self.counters.drops[drop.index()] += 1;
        if punt && self.punting {
            self.punt(burst, i, drop, hop);
        }
        None
    }

    /// Generation of the snapshot the last burst was judged by.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The flow cache's counters (zero when it is off).
    pub fn flow_cache_stats(&self) -> FlowCacheStats {
        self.flows.as_ref().map(|f| f.stats()).unwrap_or_default()
    }

    /// The route caches' counters, IPv4 and IPv6 added up.
    pub fn cache_stats(&self) -> routecache::CacheStats {
        let (a, b) = (self.router4.stats(), self.router6.stats());
        routecache::CacheStats {
            hint_hits: a.hint_hits + b.hint_hits,
            hits: a.hits + b.hits,
            misses: a.misses + b.misses,
            stale: a.stale + b.stale,
        }
    }

    /// Runs one burst through the pipeline: afterwards, `out[port]` lists
    /// the frames of `burst` to send on each port, rewritten.
    pub fn process(&mut self, tables: &Tables, burst: &mut Burst) {
        if tables.generation != self.generation {
            self.adopt(tables);
        }
        if self.punting {
            self.sync_neighbours();
        }
        for o in &mut self.out {
            o.clear();
        }
        let n = burst.len();
        self.counters.rx += n as u64;
        self.counters.bursts += 1;
        if self.mode == Mode::Io {
            if let Some(o) = self.out.first_mut() {
                o.extend(0..n as u8);
                self.counters.tx += n as u64;
            }
            return;
        }
        if self.mode == Mode::Mac {
            self.rewrite_macs(burst, n);
            return;
        }
        for i in 0..n {
            self.fate[i] = match wire::parse_into(burst.frame(i), &mut self.parsed[i]) {
                Ok(()) => Fate::Go,
                Err(d) => Fate::Dropped(d),
            };
        }
        self.match_bits[..n].fill(0);
        self.pending[..n].fill(false);
        match self.mode {
            Mode::Rewrite => self.rewrite_only(burst, n),
            Mode::Route => self.route(tables, burst, n),
            _ => {
                // One clock read a burst, and only while some element can
                // expire.
                self.expired_at = 0;
                if tables.next_expiry != matcher::NEVER {
                    let now = crate::clock::now_ms();
                    if now >= tables.next_expiry {
                        self.expired_at = now;
                    }
                }
                // Packets the flow cache did not decide (all of them
                // without it): when none, the sets and the FIB have
                // nothing to look up.
                let left = if self.flows.is_some() && self.expired_at == 0 {
                    self.lookup_flows(burst, n)
                } else {
                    n
                };
                if left > 0 {
                    // The FIB's first-level lines, fetched while the sets
                    // classify (a full table's are cache misses).
                    for i in 0..n {
                        let p = &self.parsed[i];
                        if self.fate[i] == Fate::Go && p.l3 == wire::L3::V4 {
                            tables.fib.prefetch_v4(p.dst as u32);
                        }
                    }
                    self.classify(tables, burst, n);
                    self.route(tables, burst, n);
                } else {
                    self.send_decided(burst, n);
                }
            }
        }
    }

    /// Every frame's MACs set to the first next hop's, nothing parsed;
    /// frames too short for an Ethernet header are dropped.
    // Out of line, as `rewrite_only`: inlined into `process`, these
    // benchmark modes cost the full pipeline 2.7 instructions a packet
    // (its registers are allocated around them).
    #[inline(never)]
    fn rewrite_macs(&mut self, burst: &mut Burst, n: usize) {
        let Some(Egress { macs, port, .. }) = self.egress.first().copied() else {
            return;
        };
        let Some(out) = self.out.get_mut(port as usize) else {
            // A hop on a port this pipeline lacks: as `send` counts it.
            self.counters.drops[DropReason::UnknownNextHop.index()] += n as u64;
            return;
        };
        for i in 0..n {
            let f = burst.frame_mut(i);
            if f.len() >= 14 {
                f[..12].copy_from_slice(&macs);
                out.push(i as u8);
            } else {
                self.counters.drops[DropReason::Truncated.index()] += 1;
            }
        }
        self.counters.tx += out.len() as u64;
    }

    /// Every parsed frame rewritten towards the first next hop.
    #[inline(never)]
    fn rewrite_only(&mut self, burst: &mut Burst, n: usize) {
        let Some(e) = self.egress.first().copied() else {
            return;
        };
        let Some(out) = self.out.get_mut(e.port as usize) else {
            // As in `rewrite_macs`.
            self.counters.drops[DropReason::UnknownNextHop.index()] += n as u64;
            return;
        };
        for i in 0..n {
            if let Fate::Dropped(d) = self.fate[i] {
                self.counters.drops[d.index()] += 1;
                continue;
            }
            let p = &self.parsed[i];
            match wire::rewrite_with(burst.frame_mut(i), p, &e.macs) {
                Ok(()) => {
                    out.push(i as u8);
                    self.counters.tx += 1;
                }
                Err(d) => self.counters.drops[d.index()] += 1,
            }
        }
    }

    /// Looks every parsed packet's flow up in the flow cache: a hit takes
    /// the stored decision (and counts its matches), a miss goes through
    /// the sets and the routes and has its decision stored by `route`.
    /// Returns how many packets are left to classify and route.
    fn lookup_flows(&mut self, burst: &Burst, n: usize) -> usize {
        let Some(flows) = self.flows.as_mut() else {
            return n;
        };
        if !flows.take_burst(n) {
            return n;
        }
        let (mut lookups, mut hits) = (0, 0);
        // Hash every packet (prefetching its bucket's tags), then find its
        // candidate entry (prefetching it), then probe: each pass's cache
        // misses overlap. (One pass doing all three per packet is 1.6x
        // slower: the misses then wait in line.)
        for i in 0..n {
            if self.fate[i] == Fate::Go {
                let id = FlowId::of(&self.parsed[i], burst.frame(i));
                self.flow_locs[i] = flows.hash(&id);
            }
        }
        for i in 0..n {
            if self.fate[i] == Fate::Go {
                self.flow_locs[i] = flows.candidates(self.flow_locs[i]);
            }
        }
        for i in 0..n {
            if self.fate[i] != Fate::Go {
                continue;
            }
            lookups += 1;
            // The flow again, from the parse (a copy kept per packet would
            // be seven stores for as many loads as this).
            let id = FlowId::of(&self.parsed[i], burst.frame(i));
            match flows.probe_in_burst(self.flow_locs[i], &id) {
                Some(d) => {
                    hits += 1;
                    self.fate[i] = Fate::Cached;
                    self.decisions[i] = d;
                    // Two bits a set: its outcome's index plus one.
                    let mut bits = d.matches;
                    while bits != 0 {
                        let at = bits.trailing_zeros() & !1;
                        let code = (bits >> at) & 3;
                        self.counters.matches[at as usize / 2][code as usize - 1] += 1;
                        bits &= !(3 << at);
                    }
                }
                None => self.pending[i] = true,
            }
        }
        flows.account(lookups, hits);
        (lookups - hits) as usize
    }

    /// Stores a missed packet's decision (the index of its next hop, or
    /// why it is dropped) in the flow cache.
    // The test inline, the store out of line: a call per packet (its
    // register saves and restores) cost 17 instructions a packet where
    // nothing is pending (the flow cache off, or standing aside).
    #[inline(always)]
    fn decided(&mut self, burst: &Burst, i: usize, hop: Result<u32, DropReason>) {
        if self.pending[i] {
            self.store_decision(burst, i, hop);
        }
    }

    #[inline(never)]
    fn store_decision(&mut self, burst: &Burst, i: usize, hop: Result<u32, DropReason>) {
        if let Some(f) = self.flows.as_mut() {
            let m = self.match_bits[i];
            let d = match hop {
                Ok(h) => Decision::forward(m, h),
                Err(d) => Decision::drop(m, d),
            };
            f.fill(
                self.flow_locs[i],
                &FlowId::of(&self.parsed[i], burst.frame(i)),
                d,
            );
        }
    }

    /// Rewrites and lists by egress port a burst whose every packet the
    /// flow cache decided or the parse dropped (most bursts, with the
    /// cache warm): [`Pipeline::route`] without its routing and its
    /// stores into the cache, a loop small enough to stay in registers.
    fn send_decided(&mut self, burst: &mut Burst, n: usize) {
        for i in 0..n {
            let hop = match self.fate[i] {
                Fate::Dropped(d) => Err(d),
                _ => self.decisions[i].hop(),
            };
            self.send(burst, i, hop);
        }
        self.count_sent();
    }

    /// Adds the frames [`Pipeline::send`] listed to the sent count (one
    /// addition per burst: a count kept per frame is a load and a store
    /// per packet, the pushes in between keeping it out of a register).
    #[inline]
    fn count_sent(&mut self) {
        self.counters.tx += self.out.iter().map(|o| o.len() as u64).sum::<u64>();
    }

    /// Routes the burst's packets that the flow cache did not decide,
    /// rewrites them (those it decided too) and lists them by egress port.
    fn route(&mut self, tables: &Tables, burst: &mut Burst, n: usize) {
        self.lookup_routes(tables, n);
        for i in 0..n {
            let hop = match self.fate[i] {
                Fate::Cached => self.decisions[i].hop(),
                Fate::Dropped(d) => Err(d),
                Fate::Go | Fate::Accepted => {
                    let h = self.next_hop(tables, i);
                    self.decided(burst, i, h);
                    h
                }
            };
            if let Fate::Dropped(d) = self.fate[i] {
                self.decided(burst, i, Err(d));
            }
            self.send(burst, i, hop);
        }
        self.count_sent();
    }
}

impl Pipeline {
    /// Rewrites frame `i` of `burst` towards its next hop (an index in
    /// the FIB's hops) and lists it on the hop's port, or counts why it is
    /// dropped: one check of the hop and its port for fresh and cached
    /// decisions alike (a hop on a port we lack is unknown to us).
    #[inline(always)]
    fn send(&mut self, burst: &mut Burst, i: usize, hop: Result<u32, DropReason>) {
        // The hop copied and its list taken before the frame is written:
        // otherwise the write, which might alias them for all the
        // compiler knows, made it load and check both again.
        let d = match hop {
            Ok(h) => match self.egress.get(h as usize).copied() {
                // A frame over the hop's limit goes its own way, out of
                // line: merging the two ways' entries back into one cost
                // five instructions a packet (the entry copied).
                Some(e) if burst.frame_len(i) > e.limit as usize => {
                    self.send_past_limit(burst, i, h, e);
                    return;
                }
                Some(e) => match self.rewrite_to(burst, i, &e) {
                    Ok(()) => return,
                    Err(d) => d,
                },
                None => DropReason::UnknownNextHop,
            },
            Err(d) => d,
        };
        self.dropped(burst, i, d);
    }

    /// Rewrites frame `i` with `e`'s MACs and lists it on `e`'s port
    /// (counted as sent by `count_sent`, once per burst).
    #[inline(always)]
    fn rewrite_to(&mut self, burst: &mut Burst, i: usize, e: &Egress) -> Result<(), DropReason> {
        let out = self
            .out
            .get_mut(e.port as usize)
            .ok_or(DropReason::UnknownNextHop)?;
        wire::rewrite_with(burst.frame_mut(i), &self.parsed[i], &e.macs)?;
        out.push(i as u8);
        Ok(())
    }

    /// Counts a drop, and hands the frame to the slow path if the router
    /// answers it.
    #[inline(always)]
    fn dropped(&mut self, burst: &Burst, i: usize, d: DropReason) {
        self.counters.drops[d.index()] += 1;
        if self.punting {
            self.answer(burst, i, d);
        }
    }

    /// [`Pipeline::send`] for a frame over its hop's limit (see
    /// [`Egress::limit`]).
    #[cold]
    #[inline(never)]
    fn send_past_limit(&mut self, burst: &mut Burst, i: usize, h: u32, e: Egress) {
        if let Some(e) = self.not_ready(burst, i, h, e) {
            if let Err(d) = self.rewrite_to(burst, i, &e) {
                self.dropped(burst, i, d);
            }
        }
    }

    /// Hands a dropped frame the router answers (ARP; ICMP for an
    /// expired TTL, no route, `reject`) to the slow path.
    #[cold]
    #[inline(never)]
    fn answer(&self, burst: &Burst, i: usize, d: DropReason) {
        if matches!(
            d,
            DropReason::Arp | DropReason::TtlExpired | DropReason::NoRoute | DropReason::Reject
        ) {
            self.punt(burst, i, d, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build::{ipv4, L4};

    fn tables(generation: u64, extra_set: bool) -> Tables {
        let mut text = String::from(
            r#"
route = [{ prefix = "0.0.0.0/0", via = "gw" }]
[forwarder]
cores = [0, 1]
[[port]]
name = "p"
[[set]]
name = "deny"
type = "inet_service"
match = "udp dport"
action = "drop"
elements = ["53"]
[[next_hop]]
name = "gw"
port = "p"
mac = "02:00:00:00:00:fe"
"#,
        );
        if extra_set {
            text.push_str(
                "[[set]]\nname = \"more\"\ntype = \"inet_service\"\nmatch = \"tcp dport\"\naction = \"drop\"\nelements = [\"22\"]\n",
            );
        }
        let cfg = config::parse("t.toml", &text, std::path::Path::new(".")).unwrap();
        Tables::build(&cfg, generation).unwrap()
    }

    fn state(slot: &Slot) -> Option<(bool, Vec<String>)> {
        let g = slot.0.lock().unwrap();
        Some((g.0, g.1.set_names.clone()))
    }

    /// A worker meeting a new generation takes the state prepared for it
    /// (its own slot, no other) and leaves its previous state there, to
    /// be freed with the snapshot off the worker; counts of a set kept by
    /// name carry over.
    #[test]
    fn new_generations_take_the_state_prepared_for_the_worker() {
        let (t1, t2) = (tables(1, false), tables(2, true));
        assert_eq!(t2.slots.len(), 2);
        let mut pipe = Pipeline::new(&t1, 1).for_worker(1);
        // Built without touching a slot.
        assert!(state(&t1.slots[0]).unwrap().0);
        assert!(state(&t1.slots[1]).unwrap().0);
        let dns = ipv4(0x0a00_0001, 0xc000_0201, 64, L4::Udp(1000, 53), 0);
        let mut burst = Burst::new();
        burst.push(&dns);
        pipe.process(&t1, &mut burst);
        assert_eq!(pipe.counters.matches, vec![[1, 0, 0]]);
        pipe.process(&t2, &mut burst);
        assert_eq!(
            state(&t2.slots[1]),
            Some((false, vec!["deny".to_string()])),
            "the old state is left in the worker's slot"
        );
        assert!(state(&t2.slots[0]).unwrap().0, "not another worker's");
        assert_eq!(pipe.counters.set_names, ["deny", "more"]);
        assert_eq!(pipe.counters.matches, vec![[2, 0, 0], [0, 0, 0]]);
        // Without a slot for its index, a pipeline builds the state itself.
        let mut alone = Pipeline::new(&t1, 1).for_worker(7);
        alone.process(&t2, &mut burst);
        assert_eq!(alone.counters.set_names, ["deny", "more"]);
    }
}
