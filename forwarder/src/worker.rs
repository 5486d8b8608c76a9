//! Pinned workers: one per configured core, each with its own queue of
//! every port, its pipeline and its counters. The tables are loaded from
//! an `ArcSwap` once per burst, so every packet of a burst is judged by
//! one snapshot.

use crate::conntrack::CtView;
use crate::pipeline::flowcache::FlowCacheStats;
use crate::pipeline::{Counters, DropCounts, Mode, Pipeline, SetMatches};
use crate::port::{self, Burst, Port, PortStats};
use crate::reason::DropReason;
use crate::shared::Shared;
use config::Config;
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Atomic copies of `N` counters.
type Atomics<const N: usize> = [AtomicU64; N];

fn store<const N: usize>(to: &Atomics<N>, from: [u64; N]) {
    for (a, v) in to.iter().zip(from) {
        a.store(v, Relaxed);
    }
}

fn load<const N: usize>(from: &Atomics<N>) -> [u64; N] {
    std::array::from_fn(|i| from[i].load(Relaxed))
}

/// A worker's counters as others read them: stored by the worker every
/// [`PUBLISH_EVERY`] turns of its loop (plain stores, one writer), read by
/// the stats printer and the statistics server.
pub struct Published {
    /// Frames received.
    pub rx: AtomicU64,
    /// Frames sent.
    pub tx: AtomicU64,
    /// Drops by reason ([`DropReason::index`]).
    pub drops: Atomics<{ DropReason::COUNT }>,
    /// Bursts processed.
    pub bursts: AtomicU64,
    /// Generation of the snapshot the worker last judged a burst by.
    pub generation: AtomicU64,
    /// Generation of the snapshot the worker loaded last (every turn, with
    /// or without traffic): once it is the published one, no burst is
    /// judged by an older snapshot any more.
    pub loaded: AtomicU64,
    /// Matches per rule set of that snapshot (its order), by outcome:
    /// room for as many sets as a configuration may have.
    pub matches: Box<[Atomics<3>; config::MAX_SETS]>,
    /// Route cache counters ([`routecache::CacheStats::NAMES`]).
    pub cache: Atomics<4>,
    /// Flow cache counters ([`FlowCacheStats::NAMES`]).
    pub flow_cache: Atomics<4>,
    /// Per port (configuration order, the VLAN sub-interfaces after the
    /// ports with queues): [`PortStats::NAMES`].
    pub ports: Vec<Atomics<{ PortStats::N }>>,
    /// Connection tracking's counters ([`crate::conntrack::CtStats::NAMES`]; zero when
    /// off).
    pub conntrack: Atomics<11>,
    /// Requests to its connection table (list, flush) and its element
    /// counters (read, reset).
    pub mailbox: Mailbox,
}

/// How the control side asks a worker for its connections, or to flush
/// them, or for a set's element counters, or to reset them: it stores a
/// request (a sequence number and an operation, the set's name beside)
/// the worker looks for once a turn (one load), serves between two turns
/// (only then does it allocate, for the listing) and acknowledges. The
/// table and the counters stay the worker's alone: no other thread reads
/// or frees them.
#[derive(Default)]
pub struct Mailbox {
    ask: AtomicU64,
    done: AtomicU64,
    list: std::sync::Mutex<Vec<CtView>>,
    /// The set a counters request names ("": every set, for a reset).
    set: std::sync::Mutex<String>,
    /// A set's counters by element key; `None`: the set does not count.
    counts: std::sync::Mutex<Option<ElementCounts>>,
}

use crate::pipeline::ElementCounts;

/// What a [`Mailbox`] request asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MailOp {
    /// The connections, listed.
    List = 1,
    /// Every connection forgotten.
    Flush = 2,
    /// A set's element counters, read.
    Counters = 3,
    /// Element counters set to zero.
    Reset = 4,
}

impl Mailbox {
    /// Posts request `seq` (unique, increasing) for `op`; its answer is
    /// ready once [`Mailbox::answered`] says so.
    pub fn post(&self, seq: u64, op: MailOp) -> u64 {
        let v = seq << 3 | op as u64;
        self.ask.store(v, Release);
        v
    }

    /// Whether the request `v` [`Mailbox::post`] returned was served.
    pub fn answered(&self, v: u64) -> bool {
        self.done.load(Acquire) == v
    }

    /// Posts request `seq` for `op` on set `set` (a counters request).
    pub fn post_set(&self, seq: u64, op: MailOp, set: &str) -> u64 {
        *self.set.lock().unwrap_or_else(|e| e.into_inner()) = set.to_string();
        self.post(seq, op)
    }

    /// The last listing (taken).
    pub fn take(&self) -> Vec<CtView> {
        std::mem::take(&mut *self.list.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The last counters read (taken).
    pub fn take_counts(&self) -> Option<ElementCounts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The worker's side, once a turn: serves a new request, if any.
    #[inline]
    pub fn serve(&self, last: &mut u64, worker: usize, pipe: &mut Pipeline) {
        let v = self.ask.load(Acquire);
        if v == *last {
            return;
        }
        *last = v;
        match v & 7 {
            1 => {
                let l = pipe.conntrack().map(|c| c.list(worker)).unwrap_or_default();
                *self.list.lock().unwrap_or_else(|e| e.into_inner()) = l;
            }
            2 => {
                if let Some(c) = pipe.conntrack_mut() {
                    c.flush();
                }
            }
            3 => {
                let set = self.set.lock().unwrap_or_else(|e| e.into_inner()).clone();
                *self.counts.lock().unwrap_or_else(|e| e.into_inner()) =
                    pipe.element_counters(&set);
            }
            4 => {
                let set = self.set.lock().unwrap_or_else(|e| e.into_inner()).clone();
                pipe.reset_element_counters(Some(set.as_str()).filter(|s| !s.is_empty()));
            }
            _ => {}
        }
        self.done.store(v, Release);
    }
}

/// What a [`Published`] holds, read once.
pub struct Reading {
    /// Frames received.
    pub rx: u64,
    /// Frames sent.
    pub tx: u64,
    /// Drops by reason.
    pub drops: DropCounts,
    /// Bursts processed.
    pub bursts: u64,
    /// See [`Published::generation`].
    pub generation: u64,
    /// See [`Published::loaded`].
    pub loaded: u64,
    /// The route cache's counters, by [`routecache::CacheStats::NAMES`].
    pub cache: [u64; 4],
    /// The flow cache's counters, by [`FlowCacheStats::NAMES`].
    pub flow_cache: [u64; 4],
    /// Connection tracking's, by [`crate::conntrack::CtStats::NAMES`].
    pub conntrack: [u64; 11],
    /// Per port, by [`PortStats::NAMES`].
    pub ports: Vec<[u64; PortStats::N]>,
}

impl Published {
    /// Zeroed counters of a worker with `ports` ports.
    pub fn new(ports: usize) -> Published {
        Published {
            rx: AtomicU64::new(0),
            tx: AtomicU64::new(0),
            drops: Default::default(),
            bursts: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            loaded: AtomicU64::new(0),
            matches: Box::new(std::array::from_fn(|_| Default::default())),
            cache: Default::default(),
            flow_cache: Default::default(),
            ports: (0..ports).map(|_| Default::default()).collect(),
            conntrack: Default::default(),
            mailbox: Mailbox::default(),
        }
    }

    fn store(&self, p: &Pipeline, ports: &[Box<dyn Port>]) {
        let c = &p.counters;
        self.rx.store(c.rx, Relaxed);
        self.tx.store(c.tx, Relaxed);
        self.bursts.store(c.bursts, Relaxed);
        store(&self.drops, c.drops);
        for (a, &v) in self.matches.iter().zip(&c.matches) {
            store(a, v);
        }
        self.generation.store(p.generation(), Relaxed);
        store(&self.cache, p.cache_stats().values());
        store(&self.flow_cache, p.flow_cache_stats().values());
        store(
            &self.conntrack,
            p.conntrack_stats().unwrap_or_default().values(),
        );
        for (i, a) in self.ports.iter().enumerate() {
            let v = match ports.get(i) {
                Some(port) => port.stats().values(),
                // A VLAN sub-interface: what the pipeline counted.
                None => {
                    let [rx, rx_bytes, tx, tx_bytes] = c.links.get(i).copied().unwrap_or_default();
                    PortStats {
                        rx,
                        rx_bytes,
                        tx,
                        tx_bytes,
                        ..PortStats::default()
                    }
                    .values()
                }
            };
            store(a, v);
        }
    }

    /// Everything but the set matches, read once.
    pub fn read(&self) -> Reading {
        Reading {
            rx: self.rx.load(Relaxed),
            tx: self.tx.load(Relaxed),
            drops: load(&self.drops),
            bursts: self.bursts.load(Relaxed),
            generation: self.generation.load(Relaxed),
            loaded: self.loaded.load(Relaxed),
            cache: load(&self.cache),
            flow_cache: load(&self.flow_cache),
            conntrack: load(&self.conntrack),
            ports: self.ports.iter().map(load).collect(),
        }
    }

    /// The matches of the first `sets` rule sets of the snapshot this
    /// worker last published for.
    pub fn matches(&self, sets: usize) -> Vec<SetMatches> {
        self.matches.iter().take(sets).map(load).collect()
    }
}

/// A worker's final account.
pub struct Report {
    /// The core it ran on.
    pub core: usize,
    /// Its pipeline counters.
    pub counters: Counters,
    /// Its port queues' counters.
    pub ports: Vec<(String, PortStats)>,
    /// Its flow cache's counters.
    pub flow_cache: FlowCacheStats,
}

/// The cores this process may run on (its affinity mask: online cores
/// only), ascending.
pub fn allowed_cores() -> Vec<usize> {
    let mut v: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    v.sort_unstable();
    v
}

/// The cores this process may run on that no worker of `worker_cores`
/// runs on, ascending: where its other threads belong (a thread the
/// scheduler puts beside a polling worker waits for the worker's slice).
pub fn free_cores(worker_cores: &[usize]) -> Vec<usize> {
    allowed_cores()
        .into_iter()
        .filter(|c| !worker_cores.contains(c))
        .collect()
}

/// A running worker: its published counters and its thread.
pub type Running = (Arc<Published>, JoinHandle<Report>);

/// Stops `workers` after their current burst and waits for them (their
/// ports close as they end, so DPDK's EAL can then be released).
pub fn stop(shared: &Shared, workers: Vec<Running>) {
    shared.stop.store(true, Relaxed);
    for (_, h) in workers {
        let _ = h.join();
    }
}

/// What a worker sends for the router's slow path: the frames of its
/// inject queue, a burst of them at a time, grouped by port.
struct Injected {
    burst: Burst,
    which: Vec<u8>,
    /// Boxed: the pool's buffers go back to it as they came (moving
    /// 2 KiB buffers by value would copy them).
    #[allow(clippy::vec_box)]
    bufs: Vec<Box<crate::punt::Buf>>,
}

impl Injected {
    fn new() -> Injected {
        Injected {
            burst: Burst::new(),
            which: Vec::with_capacity(port::MAX_BURST),
            bufs: Vec::with_capacity(port::MAX_BURST),
        }
    }

    /// Sends a burst of what the slow path queued for worker `q`
    /// (nothing allocates: the buffers go back to the pool); whether more
    /// is queued.
    fn send(
        &mut self,
        r: &crate::punt::RouterShared,
        q: usize,
        vlans: &crate::vlan::Vlans,
        ports: &mut [Box<dyn Port>],
        mut taps: Option<(&crate::tap::Taps, &mut crate::tap::worker::WorkerTaps)>,
    ) -> bool {
        let Some(queue) = r.inject.get(q) else {
            return false;
        };
        if queue.is_empty() {
            return false;
        }
        self.burst.clear();
        while self.bufs.len() < port::MAX_BURST {
            let Some(mut b) = queue.pop() else { break };
            // The slow path's frames are untagged: a sub-interface's get
            // its tags here and go out of its parent's queue.
            let link = vlans.link(b.port);
            self.burst.push(b.frame());
            let i = self.burst.len() - 1;
            if link.len > 0 && !self.burst.set_tags(i, 0, &link.tags[..link.len as usize]) {
                // Too short to carry them: not sent.
                b.port = u16::MAX;
            } else {
                b.port = link.queue;
            }
            self.bufs.push(b);
        }
        for (p, port) in ports.iter_mut().enumerate() {
            self.which.clear();
            self.which.extend(
                self.bufs
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.port as usize == p)
                    .map(|(i, _)| i as u8),
            );
            if !self.which.is_empty() {
                if let Some((t, mine)) = taps.as_mut() {
                    crate::tap::worker::injected(t, q, &self.burst, &self.which, p as u16, mine);
                }
                port.tx_burst(&mut self.burst, &self.which);
            }
        }
        for b in self.bufs.drain(..) {
            let _ = r.free.push(b);
        }
        !queue.is_empty()
    }
}

/// Runs the batches of frames other workers handed worker `q` (packets
/// of connections it tracks) through its pipeline, each as a burst from
/// the port it came in on, copied into `burst`: what waits, up to a
/// queue's worth a turn. Nothing allocates (the batches go back to their
/// pool).
fn handed_in(
    r: &crate::punt::RouterShared,
    q: usize,
    burst: &mut Burst,
    pipe: &mut Pipeline,
    tables: &crate::pipeline::Snapshot,
    ports: &mut [Box<dyn Port>],
    (taps, armed, mine): (
        &crate::tap::Taps,
        usize,
        &mut crate::tap::worker::WorkerTaps,
    ),
) {
    for _ in 0..crate::handoff::QUEUED {
        let Some(b) = r.handoff.take(q) else { break };
        burst.clear();
        for f in b.frames() {
            burst.push(f);
        }
        let rx = b.port();
        r.handoff.done(b);
        pipe.rx_port = rx;
        crate::tap::worker::run_burst(taps, armed, q, pipe, tables, burst, rx, mine);
        send_out(pipe, ports, burst);
    }
}

/// Sends the frames of `burst` the pipeline listed, out of each port.
fn send_out(pipe: &Pipeline, ports: &mut [Box<dyn Port>], burst: &mut Burst) {
    for (tx, which) in pipe.out.iter().enumerate() {
        if !which.is_empty() {
            ports[tx].tx_burst(burst, which);
        }
    }
}

/// Turns of a worker's loop (bursts or empty polls) between two
/// publications of its counters: about every millisecond under load,
/// more often when idle.
pub const PUBLISH_EVERY: u64 = 1024;

/// Starts one pinned worker per configured core on the configured ports.
pub fn spawn(cfg: &Config, shared: Arc<Shared>, mode: Mode) -> Result<Vec<Running>, String> {
    spawn_with(cfg, shared, mode, |q| port::open_all(cfg, q))
}

/// Starts one pinned worker per configured core, worker `q` on the port
/// queues `open(q)` returns (tests bring their own ports).
pub fn spawn_with(
    cfg: &Config,
    shared: Arc<Shared>,
    mode: Mode,
    mut open: impl FnMut(usize) -> Result<Vec<Box<dyn Port>>, String>,
) -> Result<Vec<Running>, String> {
    let mut out: Vec<Running> = Vec::new();
    let burst_size = cfg.forwarder.burst;
    for (q, &core) in cfg.forwarder.cores.iter().enumerate() {
        let mut ports = match open(q) {
            Ok(p) => p,
            Err(e) => {
                stop(&shared, out);
                return Err(e);
            }
        };
        let shared = shared.clone();
        let published = Arc::new(Published::new(cfg.ports.len().max(ports.len())));
        let pubd = published.clone();
        let h = std::thread::Builder::new()
            .name(format!("worker-{core}"))
            .spawn(move || {
                // `cmd::check::problems` found the core pinnable; should the
                // system refuse now (a core taken offline since), the
                // worker says so and runs unpinned.
                if core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
                    crate::log::log_with(
                        crate::log::Level::Info,
                        &format!("worker {q} pinned to core {core}"),
                        serde_json::json!({ "event": "worker_pinned", "worker": q, "core": core }),
                    );
                } else {
                    crate::log::log_with(
                        crate::log::Level::Warn,
                        &format!("worker for core {core} could not be pinned; it runs unpinned"),
                        serde_json::json!({ "event": "worker_unpinned", "worker": q, "core": core }),
                    );
                }
                let first = shared.snapshot.load_full();
                let mut pipe = Pipeline::with_mode(&first, ports.len(), mode)
                    .for_worker(q)
                    .with_router(shared.router.clone(), &first);
                drop(first);
                let router = shared.router.clone();
                let mut burst = Burst::new();
                let mut injected = Injected::new();
                let mut turns = 0u64;
                let mut mine = crate::tap::worker::WorkerTaps::default();
                let mut ct_served = 0;
                let mut handed = Burst::new();
                while !shared.stop.load(Relaxed) {
                    // One snapshot per turn: every burst is judged wholly
                    // by one generation; the guard is released before the
                    // next load, so a replaced snapshot is freed as soon
                    // as the worker's current turn ends.
                    let tables = shared.snapshot.load();
                    // Captures and live traces: one load a turn, one
                    // test a burst while none is armed.
                    let armed = shared.taps.armed.load(Relaxed);
                    if armed != 0 {
                        crate::tap::worker::turn(q, &mut mine);
                    } else if mine.holds() {
                        mine.let_go(q);
                    }
                    // The neighbours first, then what the slow path gives
                    // to send: frames it held for a neighbour, queued
                    // before it published the MAC, go out before any this
                    // turn forwards to it (see `Pipeline::begin_turn`).
                    if tables.routing {
                        // A new table may have MACs whose held frames are
                        // all queued: the whole queue goes first (at most
                        // its capacity; a burst of it otherwise).
                        let bursts = if pipe.begin_turn() {
                            crate::punt::INJECT_QUEUE / port::MAX_BURST
                        } else {
                            1
                        };
                        for _ in 0..bursts {
                            let taps = (armed != 0).then_some((&shared.taps, &mut mine));
                            if !injected.send(&router, q, &tables.vlans, &mut ports, taps) {
                                break;
                            }
                        }
                    }
                    for rx in 0..ports.len() {
                        burst.clear();
                        if ports[rx].rx_burst(&mut burst, burst_size) == 0 {
                            continue;
                        }
                        pipe.rx_port = rx as u16;
                        crate::tap::worker::run_burst(
                            &shared.taps,
                            armed,
                            q,
                            &mut pipe,
                            &tables,
                            &mut burst,
                            rx as u16,
                            &mut mine,
                        );
                        send_out(&pipe, &mut ports, &mut burst);
                        ports[rx].release(&mut burst);
                    }
                    // Frames of connections this worker tracks, handed
                    // over by the others.
                    if router.handoff.waiting(q) {
                        let taps = (&shared.taps, armed, &mut mine);
                        handed_in(&router, q, &mut handed, &mut pipe, &tables, &mut ports, taps);
                    }
                    // Connection tracking's housekeeping: a few buckets
                    // swept, and the control side's requests served.
                    pipe.conntrack_turn();
                    pubd.mailbox.serve(&mut ct_served, q, &mut pipe);
                    turns += 1;
                    if turns.is_multiple_of(PUBLISH_EVERY) {
                        pubd.loaded.store(tables.generation, Relaxed);
                        pubd.store(&pipe, &ports);
                    }
                    drop(tables);
                }
                pubd.store(&pipe, &ports);
                Report {
                    core,
                    flow_cache: pipe.flow_cache_stats(),
                    counters: pipe.counters,
                    ports: ports
                        .iter()
                        .map(|p| (p.name().to_string(), p.stats()))
                        .collect(),
                }
            })
            .map_err(|e| format!("cannot start a worker on core {core}: {e}"))?;
        out.push((published, h));
    }
    Ok(out)
}
