//! The per-burst pipeline of one worker: parse, classify, route, rewrite,
//! group by egress port. Every stage works on the whole burst; nothing
//! allocates, locks or calls the system per packet.

mod ask;
pub mod classify;
mod counters;
mod explain;
mod express;
pub mod flowcache;
mod flows;
mod modes;
mod prepared;
mod route;
mod send;
mod tally;
pub use tally::ElementCounts;
#[cfg(test)]
mod tests;
mod track;

pub use counters::{Counters, DropCounts, Outcome, SetMatches};
pub use explain::{Fated, FlowStage, HopState, SetStage, Stages, HEAD};
pub use prepared::{Prepared, Slot, Snapshot};

use crate::neigh::NeighTable;
use crate::port::{Burst, MAX_BURST};
use crate::punt::RouterShared;
use crate::reason::DropReason;
use crate::tables::{FlowCacheConfig, Tables};
use crate::wire::{self, Parsed};
use flowcache::{Decision, FlowCache, FlowCacheStats, FlowId, Loc};
use matcher::Scratch;
use prepared::Egress;
use routecache::{Router, TargetId};
use std::sync::Arc;

/// The most turns that hand the slow path more frames while a worker
/// keeps its neighbour table for the slow path to catch up (see
/// [`Pipeline::begin_turn`]): a flood that never lets it catch up still
/// gets the new table, a millisecond or so late.
const DEFER_TURNS: u32 = 1024;

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
    /// Decided by the flow cache: see the burst's `decisions`. (Also,
    /// for the time the forward sets run, a packet still going that is
    /// not forwarded: see `forward_hook`.)
    Cached,
}

impl Fate {
    /// The byte a fate is stored as: `Fate` is one byte (the niche of
    /// `DropReason`'s tag holds the other three), which `transmute`
    /// checks at compile time.
    #[allow(unsafe_code)]
    const fn byte(self) -> u8 {
        // SAFETY: both types are one byte, and every byte of a valid
        // `Fate` is initialized (a one-byte type has no padding): reading
        // it as a `u8` reads its tag.
        unsafe { core::mem::transmute::<Fate, u8>(self) }
    }
}

/// The packets among the first `n` of `fate` still going (`Go` or
/// `Accepted`), a bit each. Eight fates a step, branch-free over their
/// bytes: `matches!` on each one compiled to some 10 instructions a
/// packet (the enum's niche layout, vectorized badly; callgrind).
#[allow(unsafe_code)]
#[inline]
fn going(fate: &[Fate; MAX_BURST], n: usize) -> u64 {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // SAFETY: `Fate` is one initialized byte (`Fate::byte`), so an array
    // of them is as many initialized bytes, with the same alignment (1).
    let bytes = unsafe { &*(fate as *const [Fate; MAX_BURST] as *const [u8; MAX_BURST]) };
    // A byte's high bit when it is zero, exactly (no carries between
    // bytes: the low seven bits are added apart from the eighth).
    let zero = |x: u64| !((((x & !HIGH) + !HIGH) | x) | !HIGH);
    // Each byte of a word set to one of the two values.
    let (go, accepted) = (
        LOW * Fate::Go.byte() as u64,
        LOW * Fate::Accepted.byte() as u64,
    );
    let mut mask = 0u64;
    // Only the chunks the burst reaches.
    let chunks = n.min(MAX_BURST).div_ceil(8);
    for (c, chunk) in bytes.chunks_exact(8).take(chunks).enumerate() {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let w = u64::from_le_bytes(w);
        let hit = zero(w ^ go) | zero(w ^ accepted);
        // The eight high bits gathered into the top byte, in order.
        let bits = (hit >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= bits << (c * 8);
    }
    if n >= MAX_BURST {
        mask
    } else {
        mask & ((1u64 << n) - 1)
    }
}

/// One worker's pipeline state: scratch, keys, routers, per-burst arrays,
/// all allocated once.
pub struct Pipeline {
    scratch: Vec<Scratch>,
    /// Per set, its keys and what it looked up in the burst.
    keys: Vec<(Vec<u8>, prepared::Found)>,
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
    /// The flow cache, when configured (and the sets fit in its entries,
    /// and connection tracking is off).
    flows: Option<FlowCache>,
    /// Connection tracking, when on.
    conntrack: Option<crate::conntrack::Tracker>,
    /// Per packet, what connection tracking found: whole for the
    /// packets left to the sets (their decision is committed with it);
    /// of those that took a stored decision only `refused` (what the
    /// explanation reads), the rest stale.
    tracked: [crate::conntrack::Tracked; MAX_BURST],
    /// Per packet, its `ct state` (what the sets read).
    ct_state: [u8; MAX_BURST],
    /// Per packet of the burst, its port's name (`meta iifname`; filled
    /// only when a set reads it).
    iif: [u128; MAX_BURST],
    /// Per packet of the burst, the name of the port it leaves by (`meta
    /// oifname`), and the packets that reached the forward hook, a bit
    /// each (both filled only where a set of that hook is: see
    /// `forward_hook`).
    oif: [u128; MAX_BURST],
    forwarding: u64,
    /// Per packet, what it is to connection tracking and its hash (the
    /// stage's passes: see `track`).
    ct_seen: [crate::conntrack::key::Seen; MAX_BURST],
    ct_hash: [u64; MAX_BURST],
    /// The slot each packet's connection likely holds (from the prefetch
    /// pass).
    ct_hint: [u32; MAX_BURST],
    /// Per packet of the burst: its flow and bucket, whether its decision
    /// is to be stored (a flow cache miss), the matches the sets found.
    flow_locs: [Loc; MAX_BURST],
    /// Per packet of a burst on the express way, its flow (read from the
    /// frame, where the general way has its parse to read it from again).
    flow_ids: [FlowId; MAX_BURST],
    pending: [bool; MAX_BURST],
    match_bits: [u32; MAX_BURST],
    decisions: [Decision; MAX_BURST],
    /// The sets' element counters (`counter = true`), and the packets of
    /// the burst that matched a counted element, a bit each: their
    /// decisions are not stored (see [`tally`]).
    tally: tally::Tally,
    counted: u64,
    /// The FIB's next hops, in its order, as the rewrite uses them
    /// (rebuilt with every snapshot).
    egress: Vec<Egress>,
    links: Vec<prepared::HopLink>,
    /// Each hop's kind ([`READY`], ...), for frames that leave the fast
    /// path.
    kinds: Vec<u8>,
    gateways: Vec<(u32, u16, u128)>,
    mtus: Vec<u16>,
    /// Per port, what sending a neighbour request there takes, and the
    /// neighbours this worker asked for lately (see [`Pipeline::ask`]).
    askers: Vec<crate::neigh::Asker>,
    asked: crate::neigh::Asked,
    /// The router's slow path, when the worker has one; `punting` while
    /// the snapshot has router ports.
    router: Option<Arc<RouterShared>>,
    /// Per worker, the frames this one hands it in the current burst
    /// (connection tracking with several workers: `track.rs`).
    handing: Vec<Option<Box<crate::handoff::Batch>>>,
    punting: bool,
    /// The packets of the burst handed to the slow path, a bit each (see
    /// [`Pipeline::explain`]).
    punted: std::cell::Cell<u64>,
    /// The neighbour table the gateways' egress entries were last set
    /// from, and whether they must be set again (new snapshot).
    neigh: Arc<NeighTable>,
    neigh_stale: bool,
    /// The neighbours are taken up once a turn ([`Pipeline::begin_turn`],
    /// a worker), not once a burst.
    by_turn: bool,
    /// Turns that handed the slow path more while the table was kept
    /// for it to catch up, and the count of frames handed over then.
    deferred: u32,
    punted_seen: u64,
    /// Whether the decisions the flow cache and connections keep are
    /// bound to the port their packet came in on (a set reads `meta
    /// iifname`: see [`crate::decision::Decision::bound`]).
    bind_port: bool,
    /// The port the burst being processed came in on.
    pub rx_port: u16,
    /// The frames of the burst that came tagged, a bit each, and for
    /// those the port they belong to and the bytes of their tags (see
    /// [`Pipeline::ingress_of`]).
    tagged: u64,
    ingress: [(u16, u8); MAX_BURST],
    /// The VRF of the burst's port (each frame's is in its parse).
    base_vrf: u8,
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
    /// Whether routed frames try the folded way out first (see
    /// `send_plain`); off only in the test that pins it to the general
    /// way.
    plain: bool,
    /// Whether the snapshot asks nothing of a packet but its route, so
    /// that bursts may take the express way (see `express`); off while
    /// explaining (whose stages read the general way's state) and in the
    /// tests that pin it to the general way (`express_off`); the bursts
    /// left to wait after one it could not take; the bursts it took.
    express_ok: bool,
    /// Whether the express way is the flow cache's (the full pipeline's
    /// with sets: see `express_cached_burst`), not routing alone.
    express_cached: bool,
    express_off: bool,
    express_wait: u16,
    express_bursts: u64,
}

/// [`Pipeline::port_tag`] from the fields it reads (callers that hold
/// another field borrowed, the flow cache, pass them).
#[inline(always)]
fn port_tag(bind: bool, (tagged, ingress, rx): (u64, &[(u16, u8)], u16), i: usize) -> u32 {
    if !bind {
        return 0;
    }
    let port = if tagged & 1 << (i % 64) != 0 {
        ingress.get(i).map_or(rx, |x| x.0)
    } else {
        rx
    };
    crate::decision::Decision::port_tag(port).unwrap_or(u32::MAX)
}

impl Pipeline {
    /// The frames of the burst that may carry VLAN tags (`odd`, a bit
    /// each): each belongs to the sub-interface its tags name (or to the
    /// port, priority-tagged), noted in `tagged` and `ingress` and counted
    /// on the sub-interface, or is dropped for a tag no sub-interface
    /// has. One call a burst, out of line. The tags stay: a frame from
    /// one VLAN to another has its tag swapped in place on the way out
    /// (taking them off here and pushing others there moved every frame
    /// twice: 0.66x untagged's rate against 0.75x).
    #[inline(never)]
    fn ingress(&mut self, tables: &Tables, burst: &Burst, mut odd: u64) {
        let (vlans, rx) = (&tables.vlans, self.rx_port);
        let ids = vlans.by_vid(rx);
        while odd != 0 {
            let i = odd.trailing_zeros() as usize;
            odd &= odd - 1;
            if i >= burst.len() {
                break;
            }
            let frame = burst.frame(i);
            let len = frame.len();
            let at = crate::vlan::Vlans::one_tag_in(ids, rx, frame)
                .unwrap_or_else(|| vlans.ingress(rx, frame));
            match at {
                crate::vlan::Ingress::Port { strip: 0, .. } => {}
                crate::vlan::Ingress::Port { port, strip } => {
                    self.tagged |= 1 << i;
                    self.ingress[i % MAX_BURST] = (port, strip);
                    self.parsed[i % MAX_BURST].vrf = tables.vrf_of(port);
                    if port != self.rx_port {
                        self.count_link_rx(port, len);
                    }
                }
                crate::vlan::Ingress::Unknown => {
                    self.fate[i % MAX_BURST] = Fate::Dropped(DropReason::UnknownVlan)
                }
            }
        }
    }

    /// The VRF frame `i` of the burst routes in.
    #[inline(always)]
    pub(super) fn vrf_at(&self, i: usize) -> u8 {
        self.parsed[i % MAX_BURST].vrf
    }

    /// The port frame `i` of the burst came in on (a sub-interface, for a
    /// tagged frame) and the bytes of its tags.
    #[inline]
    pub(super) fn ingress_of(&self, i: usize) -> (u16, u8) {
        if self.tagged & 1 << (i % 64) != 0 {
            self.ingress[i % MAX_BURST]
        } else {
            (self.rx_port, 0)
        }
    }

    /// The tag that binds packet `i`'s decision to its port, when
    /// decisions are bound (see [`Pipeline::bind_port`]): 0 when they are
    /// not, `u32::MAX` (no decision matches it, none is stored) for a port
    /// past what a tag holds.
    #[inline(always)]
    pub(super) fn port_tag(&self, i: usize) -> u32 {
        port_tag(
            self.bind_port,
            (self.tagged, &self.ingress, self.rx_port),
            i,
        )
    }

    /// A pipeline sized for `tables`, with `ports` egress ports.
    pub fn new(tables: &Snapshot, ports: usize) -> Pipeline {
        Pipeline::with_mode(tables, ports, Mode::Full)
    }

    /// A pipeline running only part of the stages (see [`Mode`]).
    pub fn with_mode(tables: &Snapshot, ports: usize, mode: Mode) -> Pipeline {
        let mut p = Pipeline {
            scratch: Vec::new(),
            keys: Vec::new(),
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
            conntrack: None,
            tracked: [crate::conntrack::Tracked::default(); MAX_BURST],
            ct_state: [0; MAX_BURST],
            iif: [0; MAX_BURST],
            oif: [0; MAX_BURST],
            forwarding: 0,
            ct_seen: [crate::conntrack::key::Seen::INVALID; MAX_BURST],
            ct_hash: [0; MAX_BURST],
            ct_hint: [0; MAX_BURST],
            flow_locs: [Loc::default(); MAX_BURST],
            flow_ids: [FlowId::default(); MAX_BURST],
            pending: [false; MAX_BURST],
            match_bits: [0; MAX_BURST],
            decisions: [Decision::default(); MAX_BURST],
            tally: tally::Tally::default(),
            counted: 0,
            egress: Vec::new(),
            links: Vec::new(),
            kinds: Vec::new(),
            gateways: Vec::new(),
            mtus: Vec::new(),
            askers: Vec::new(),
            asked: crate::neigh::Asked::default(),
            router: None,
            handing: Vec::new(),
            punting: false,
            punted: std::cell::Cell::new(0),
            neigh: Arc::new(NeighTable::default()),
            neigh_stale: true,
            by_turn: false,
            deferred: 0,
            punted_seen: 0,
            bind_port: false,
            rx_port: 0,
            tagged: 0,
            ingress: [(0, 0); MAX_BURST],
            base_vrf: 0,
            out: vec![Vec::with_capacity(MAX_BURST); ports],
            counters: Counters::default(),
            generation: u64::MAX,
            expired_at: 0,
            route_cache: tables.route_cache,
            mode,
            plain: true,
            express_ok: false,
            express_cached: false,
            express_off: false,
            express_wait: 0,
            express_bursts: 0,
            // No worker's slot while the pipeline is built: the state is
            // built here, as is everything else of it.
            worker: usize::MAX,
        };
        p.counters.links = vec![[0; 4]; tables.ports.len()];
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
    fn adopt(&mut self, tables: &Snapshot) {
        let mut mine = Prepared {
            scratch: std::mem::take(&mut self.scratch),
            keys: std::mem::take(&mut self.keys),
            egress: std::mem::take(&mut self.egress),
            links: std::mem::take(&mut self.links),
            kinds: std::mem::take(&mut self.kinds),
            gateways: std::mem::take(&mut self.gateways),
            mtus: std::mem::take(&mut self.mtus),
            askers: std::mem::take(&mut self.askers),
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
        self.links = mine.links;
        self.kinds = mine.kinds;
        self.gateways = mine.gateways;
        self.mtus = mine.mtus;
        self.askers = mine.askers;
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
        if tables.sets.len() > flowcache::MAX_SETS || tables.reads_beyond_flow {
            // Nor where a set reads the port or the DSCP: a flow is the
            // same whatever port it comes in on, whatever its marking.
            c.entries = 0;
        }
        self.bind_port = tables.reads_iifname;
        self.tally.adopt(tables, &mut self.scratch);
        self.adopt_conntrack(tables);
        if self.conntrack.is_some() {
            // Its entries keep the decisions: one lookup a packet.
            c.entries = 0;
        } else if tables.sets.is_empty() && self.mode == Mode::Full {
            // Nothing to save but the route, which the express way finds
            // for less than a flow's lookup (a hash of the five fields and
            // a probe, where the FIB's first level is one load).
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
        // The flow cache's express way: decisions bound to a port, and
        // bursts after an element expired, take the general way's checks.
        self.express_cached = self.mode == Mode::Full
            && self.flows.is_some()
            && !self.bind_port
            && tables.next_expiry == matcher::NEVER;
        self.express_ok = self.express_cached
            || match self.mode {
                Mode::Route => true,
                Mode::Full => tables.sets.is_empty() && self.conntrack.is_none(),
                _ => false,
            };
        self.express_wait = 0;
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
        self.handing = (0..r.workers()).map(|_| None).collect();
        self.router = Some(r);
        self.punting = tables.routing;
        self
    }

    /// Generation of the snapshot the last burst was judged by.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The flow cache's counters (zero when it is off).
    pub fn flow_cache_stats(&self) -> FlowCacheStats {
        self.flows.as_ref().map(|f| f.stats()).unwrap_or_default()
    }

    /// Bursts that took the express way (see `express`).
    pub fn express_bursts(&self) -> u64 {
        self.express_bursts
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

    /// A worker's turn begins: the slow path's neighbour table as of now
    /// is the one this turn's bursts are sent by. The worker then sends
    /// what the slow path queued for it, and only then its bursts: frames
    /// held for a neighbour (queued before its MAC was published) leave
    /// before any this turn forwards to it directly.
    ///
    /// A new table waits until the slow path has served every frame this
    /// worker handed it (at most `DEFER_TURNS` turns that hand it more: a
    /// flood that never lets it catch up). Returns whether the table
    /// changed: then the whole inject queue goes before the turn's
    /// bursts, not a burst of it.
    pub fn begin_turn(&mut self) -> bool {
        self.by_turn = true;
        if !self.punting {
            return false;
        }
        if let Some(r) = &self.router {
            if !self.neigh_stale && !r.caught_up(self.worker) {
                // Waiting costs nothing while this worker hands over
                // nothing more: only turns that add to the slow path's
                // backlog count towards giving up.
                let punted = r.punted(self.worker);
                if punted != self.punted_seen {
                    self.punted_seen = punted;
                    self.deferred += 1;
                }
                if self.deferred < DEFER_TURNS {
                    return false;
                }
            }
        }
        self.deferred = 0;
        self.sync_neighbours()
    }

    /// Runs one burst through the pipeline: afterwards, `out[port]` lists
    /// the frames of `burst` to send on each port, rewritten.
    pub fn process(&mut self, tables: &Snapshot, burst: &mut Burst) {
        if tables.generation != self.generation {
            self.adopt(tables);
        }
        if self.punting && (!self.by_turn || self.neigh_stale) {
            let _ = self.sync_neighbours();
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
        self.tagged = 0;
        self.base_vrf = tables.vrf_of(self.rx_port);
        if self.express_ok && !self.express_off && self.express(tables, burst, n) {
            return;
        }
        // The frames that may carry tags: IP past byte 14 (tags are the
        // only way there), or not IP at all. A bit each, looked at once
        // the burst is parsed.
        let mut odd = 0u64;
        for i in 0..n {
            self.fate[i] = match wire::parse_into(burst.frame(i), &mut self.parsed[i]) {
                Ok(()) if self.parsed[i].l3_off == 14 => Fate::Go,
                Ok(()) => {
                    odd |= 1 << (i % 64);
                    Fate::Go
                }
                Err(d) => {
                    odd |= 1 << (i % 64);
                    Fate::Dropped(d)
                }
            };
        }
        // A port outside the default VRF: its frames' VRF (a parse says
        // 0), before the tagged ones get their sub-interfaces'.
        if self.base_vrf != 0 {
            for p in &mut self.parsed[..n] {
                p.vrf = self.base_vrf;
            }
        }
        if odd != 0 {
            self.ingress(tables, burst, odd);
        }
        self.match_bits[..n].fill(0);
        self.pending[..n].fill(false);
        self.counted = 0;
        match self.mode {
            Mode::Rewrite => self.rewrite_only(burst, n),
            Mode::Route => self.route(tables, burst, n),
            _ => {
                // One clock read a burst, and only while some element can
                // expire.
                self.expired_at = 0;
                self.forwarding = 0;
                if tables.next_expiry != matcher::NEVER {
                    let now = crate::clock::now_ms();
                    if now >= tables.next_expiry {
                        self.expired_at = now;
                    }
                }
                // Packets the flow cache did not decide (all of them
                // without it): when none, the sets and the FIB have
                // nothing to look up.
                let left = if self.conntrack.is_some() {
                    self.track(burst, n)
                } else if self.flows.is_some() && self.expired_at == 0 {
                    self.lookup_flows(burst, n)
                } else {
                    n
                };
                if left > 0 {
                    self.route_undecided(tables, burst, n);
                } else {
                    self.send_decided(burst, n);
                }
            }
        }
    }

    /// The full pipeline's stages after the flow cache (or connection
    /// tracking) for a burst some of whose packets it did not decide
    /// (their fate `Go`): the sets, the routes, the forward hook, the
    /// send. The general way's, and the express way's for a burst with a
    /// miss.
    pub(super) fn route_undecided(&mut self, tables: &Tables, burst: &mut Burst, n: usize) {
        // The FIB's first-level lines, fetched while the sets classify (a
        // full table's are cache misses); the port's VRF's (a tagged
        // frame of another VRF's sub-interface gets a useless prefetch).
        if let Some(fib) = tables.fib.vrf(self.base_vrf as usize) {
            for i in 0..n {
                let p = &self.parsed[i];
                if self.fate[i] == Fate::Go && p.l3 == wire::L3::V4 {
                    fib.prefetch_v4(p.dst as u32);
                }
            }
        }
        self.classify(tables, burst, n, (0, tables.forward_from));
        self.lookup_routes(tables, n);
        if tables.forward_from < tables.sets.len() {
            self.forward_hook(tables, burst, n);
        }
        self.send_routed(tables, burst, n);
    }
}
