//! The per-burst pipeline of one worker: parse, classify, route, rewrite,
//! group by egress port. Every stage works on the whole burst; nothing
//! allocates, locks or calls the system per packet.

use crate::flowcache::{Decision, FlowCache, FlowCacheConfig, FlowCacheStats, FlowId, Loc};
use crate::port::{Burst, MAX_BURST};
use crate::tables::Tables;
use crate::wire::{self, Drop, Parsed, L3};
use config::{Action, Source};
use matcher::{Data, Scratch, Verdict};
use routecache::{FlowKey, Router, TargetId};

/// A worker's counters. Written only by the worker; read by the stats
/// printer through [`crate::worker::Published`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames received.
    pub rx: u64,
    /// Frames handed to a port for sending.
    pub tx: u64,
    /// Drops by reason ([`Drop::index`]).
    pub drops: [u64; Drop::ALL.len()],
    /// Matches per rule set, in the order of the current snapshot's sets,
    /// by what they did: `[drop, accept, continue]` (a verdict map's
    /// `continue`, `jump`, ...: the packet goes on). A reload that keeps a
    /// set by name keeps its counts.
    pub matches: Vec<[u64; 3]>,
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
    Dropped(Drop),
    /// Decided by the flow cache: see the burst's `decisions`.
    Cached,
}

/// A next hop as a forwarded frame's rewrite uses it: its two MACs in
/// the frame's order, and its egress port. Sixteen bytes, so that finding
/// one is a shift.
#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
struct Egress {
    macs: [u8; 12],
    port: u16,
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
    dst4: Vec<u32>,
    dst6: Vec<u128>,
    idx4: Vec<u8>,
    idx6: Vec<u8>,
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
    /// Frames to send, per egress port index (filled by [`Pipeline::process`]).
    pub out: Vec<Vec<u8>>,
    /// Counters.
    pub counters: Counters,
    generation: u64,
    route_cache: routecache::RouteCacheConfig,
    mode: Mode,
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
            dst4: Vec::with_capacity(MAX_BURST),
            dst6: Vec::with_capacity(MAX_BURST),
            idx4: Vec::with_capacity(MAX_BURST),
            idx6: Vec::with_capacity(MAX_BURST),
            targets: [None; MAX_BURST],
            flows: None,
            flow_locs: [Loc::default(); MAX_BURST],
            pending: [false; MAX_BURST],
            match_bits: [0; MAX_BURST],
            decisions: [Decision::default(); MAX_BURST],
            egress: Vec::new(),
            out: vec![Vec::with_capacity(MAX_BURST); ports],
            counters: Counters::default(),
            generation: u64::MAX,
            route_cache: tables.route_cache,
            mode,
        };
        p.adopt(tables);
        p
    }

    /// Sizes the per-set scratch for a new snapshot (only when one is
    /// published, never per packet).
    fn adopt(&mut self, tables: &Tables) {
        self.scratch = tables.sets.iter().map(|s| s.snap.scratch()).collect();
        self.keys = tables
            .sets
            .iter()
            .map(|s| vec![0; MAX_BURST * s.key_len.max(1)])
            .collect();
        let old_names = std::mem::take(&mut self.counters.set_names);
        let old = std::mem::take(&mut self.counters.matches);
        for s in &tables.sets {
            let kept = old_names.iter().position(|n| *n == s.name);
            self.counters
                .matches
                .push(kept.map(|i| old[i]).unwrap_or_default());
            self.counters.set_names.push(s.name.clone());
        }
        if tables.route_cache != self.route_cache {
            // New route stage settings: new routers (their caches start
            // empty).
            self.router4 = tables.route_cache.router();
            self.router6 = tables.route_cache.router();
            self.route_cache = tables.route_cache;
        }
        self.egress = tables
            .fib
            .targets()
            .hops()
            .iter()
            .map(|h| Egress {
                macs: wire::macs(h.dst_mac, h.src_mac),
                port: h.port,
            })
            .collect();
        // Decisions of the old snapshot are stale under the new one.
        let mut c = tables.flow_cache;
        if tables.sets.len() > crate::flowcache::MAX_SETS {
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
                // Packets the flow cache did not decide (all of them
                // without it): when none, the sets and the FIB have
                // nothing to look up.
                let left = if self.flows.is_some() {
                    self.lookup_flows(burst, n)
                } else {
                    n
                };
                if left > 0 {
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
    // benchmark modes moved the full pipeline's registers (+2.7
    // instructions a packet).
    #[inline(never)]
    fn rewrite_macs(&mut self, burst: &mut Burst, n: usize) {
        let Some(Egress { macs, port }) = self.egress.first().copied() else {
            return;
        };
        let Some(out) = self.out.get_mut(port as usize) else {
            // A hop on a port this pipeline lacks: as `send` counts it.
            self.counters.drops[Drop::UnknownNextHop.index()] += n as u64;
            return;
        };
        for i in 0..n {
            let f = burst.frame_mut(i);
            if f.len() >= 14 {
                f[..12].copy_from_slice(&macs);
                out.push(i as u8);
            } else {
                self.counters.drops[Drop::Truncated.index()] += 1;
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
            self.counters.drops[Drop::UnknownNextHop.index()] += n as u64;
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
        // misses overlap. (One pass doing all three per packet was 1.6x
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
            // The flow again, from the parse (a copy kept per packet was
            // seven stores for as many loads as this).
            let id = FlowId::of(&self.parsed[i], burst.frame(i));
            match flows.probe_in_burst(self.flow_locs[i], &id) {
                Some(d) => {
                    hits += 1;
                    self.fate[i] = Fate::Cached;
                    self.decisions[i] = d;
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
    #[inline]
    fn decided(&mut self, burst: &Burst, i: usize, hop: Result<u32, Drop>) {
        if !self.pending[i] {
            return;
        }
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

    fn classify(&mut self, tables: &Tables, burst: &Burst, n: usize) {
        for (si, set) in tables.sets.iter().enumerate() {
            let klen = set.key_len;
            let keys = &mut self.keys[si];
            // The packets the set applies to (an IPv6 set looks nothing
            // up for IPv4 packets), then their keys, packed, one source
            // at a time across all of them.
            let mut m = 0;
            for i in 0..n {
                if self.fate[i] == Fate::Go && set.need.applies(&self.parsed[i]) {
                    self.which[m] = i as u8;
                    m += 1;
                }
            }
            if m == 0 {
                continue;
            }
            write_keys(
                &set.sources,
                &self.parsed,
                burst,
                &self.which[..m],
                &mut keys[..m * klen],
                klen,
            );
            set.snap
                .lookup_burst(keys, klen, &mut self.ids[..m], &mut self.scratch[si]);
            for j in 0..m {
                let Some(id) = self.ids[j] else { continue };
                let i = self.which[j] as usize;
                let fate = match set.action {
                    Action::Drop => Fate::Dropped(Drop::Rule),
                    Action::Accept => Fate::Accepted,
                    Action::Verdict => match set.snap.element(id).and_then(|e| e.data.as_ref()) {
                        Some(Data::Verdict(Verdict::Drop)) => Fate::Dropped(Drop::Rule),
                        Some(Data::Verdict(Verdict::Accept)) => Fate::Accepted,
                        // continue, return, jump and goto: no chains here,
                        // the packet goes on to the next set.
                        _ => Fate::Go,
                    },
                };
                let verdict = match fate {
                    Fate::Dropped(_) => 0,
                    Fate::Accepted => 1,
                    Fate::Go | Fate::Cached => 2,
                };
                self.counters.matches[si][verdict] += 1;
                if si < crate::flowcache::MAX_SETS {
                    self.match_bits[i] |= (verdict as u32 + 1) << (2 * si);
                }
                self.fate[i] = fate;
            }
        }
    }

    /// The FIB's targets of the packets still going, one batched lookup
    /// per family.
    fn lookup_routes(&mut self, tables: &Tables, n: usize) {
        self.dst4.clear();
        self.dst6.clear();
        self.idx4.clear();
        self.idx6.clear();
        for i in 0..n {
            if matches!(self.fate[i], Fate::Dropped(_) | Fate::Cached) {
                continue;
            }
            let p = &self.parsed[i];
            match p.l3 {
                L3::V4 => {
                    self.dst4.push(p.dst as u32);
                    self.idx4.push(i as u8);
                }
                L3::V6 => {
                    self.dst6.push(p.dst);
                    self.idx6.push(i as u8);
                }
            }
        }
        let fib = &tables.fib;
        let gen = fib.generation();
        let mut found = [None; MAX_BURST];
        self.router4.route_burst(
            &self.dst4,
            gen,
            |k, o| fib.lookup_burst_v4(k, o),
            &mut found[..self.dst4.len()],
        );
        for (j, &i) in self.idx4.iter().enumerate() {
            self.targets[i as usize] = found[j];
        }
        self.router6.route_burst(
            &self.dst6,
            gen,
            |k, o| fib.lookup_burst_v6(k, o),
            &mut found[..self.dst6.len()],
        );
        for (j, &i) in self.idx6.iter().enumerate() {
            self.targets[i as usize] = found[j];
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
    /// addition per burst: a count kept per frame was a load and a store
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
    fn send(&mut self, burst: &mut Burst, i: usize, hop: Result<u32, Drop>) {
        // The hop copied and its list taken before the frame is written:
        // otherwise the write, which might alias them for all the
        // compiler knows, made it load and check both again.
        let d = match hop {
            Ok(h) => match self.egress.get(h as usize).copied() {
                Some(e) => match self.out.get_mut(e.port as usize) {
                    Some(out) => {
                        match wire::rewrite_with(burst.frame_mut(i), &self.parsed[i], &e.macs) {
                            Ok(()) => {
                                // Counted as sent by `count_sent`, once
                                // per burst.
                                out.push(i as u8);
                                return;
                            }
                            Err(d) => d,
                        }
                    }
                    None => Drop::UnknownNextHop,
                },
                None => Drop::UnknownNextHop,
            },
            Err(d) => d,
        };
        self.counters.drops[d.index()] += 1;
    }

    /// The next hop of a routed packet (its target resolved, an ECMP
    /// group's member picked by the flow hash), as an index in the FIB's
    /// hops, or why it has none.
    #[inline]
    fn next_hop(&self, tables: &Tables, i: usize) -> Result<u32, Drop> {
        let p = &self.parsed[i];
        let t = self.targets[i].ok_or(Drop::NoRoute)?;
        let flow = FlowKey {
            src: p.src,
            dst: p.dst,
            sport: p.sport,
            dport: p.dport,
            proto: p.proto,
        };
        tables
            .fib
            .targets()
            .resolve_index(t, flow.hash(tables.flow_seed))
            .ok_or(Drop::UnknownNextHop)
    }
}

/// Writes the keys of the packets `which` (each has every field the
/// sources need: see [`crate::tables::Need`]) into `keys`, `klen` bytes
/// apart: source after source, each across all the packets, so that
/// which field a source reads is decided once per burst, not per packet.
#[inline]
fn write_keys(
    sources: &[Source],
    parsed: &[Parsed],
    burst: &Burst,
    which: &[u8],
    keys: &mut [u8],
    klen: usize,
) {
    let mut off = 0;
    for s in sources {
        let packets = which
            .iter()
            .map(|&i| i as usize)
            .zip(keys.chunks_exact_mut(klen));
        match *s {
            Source::IpSaddr | Source::IpDaddr => {
                let src = *s == Source::IpSaddr;
                for (i, k) in packets {
                    let p = &parsed[i];
                    let a = if src { p.src } else { p.dst } as u32;
                    k[off..off + 4].copy_from_slice(&a.to_be_bytes());
                }
                off += 4;
            }
            Source::Ip6Saddr | Source::Ip6Daddr => {
                let src = *s == Source::Ip6Saddr;
                for (i, k) in packets {
                    let p = &parsed[i];
                    let a = if src { p.src } else { p.dst };
                    k[off..off + 16].copy_from_slice(&a.to_be_bytes());
                }
                off += 16;
            }
            Source::Sport(_) | Source::Dport(_) => {
                let sport = matches!(s, Source::Sport(_));
                for (i, k) in packets {
                    let p = &parsed[i];
                    let v = if sport { p.sport } else { p.dport };
                    k[off..off + 2].copy_from_slice(&v.to_be_bytes());
                }
                off += 2;
            }
            Source::L4proto => {
                for (i, k) in packets {
                    k[off] = parsed[i].proto;
                }
                off += 1;
            }
            Source::EtherSaddr | Source::EtherDaddr => {
                let at = if *s == Source::EtherSaddr { 6 } else { 0 };
                for (i, k) in packets {
                    k[off..off + 6].copy_from_slice(&burst.frame(i)[at..at + 6]);
                }
                off += 6;
            }
            Source::Mark => {
                // Frames from ports carry no mark.
                for (_, k) in packets {
                    k[off..off + 4].fill(0);
                }
                off += 4;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::Need;

    /// The reference: one packet's key, source by source; false when the
    /// packet lacks one of the fields (an IPv4 field of an IPv6 packet, a TCP
    /// port of a UDP one).
    fn extract(sources: &[Source], p: &Parsed, frame: &[u8], key: &mut [u8]) -> bool {
        let mut off = 0;
        for s in sources {
            let ok = match *s {
                Source::IpSaddr | Source::IpDaddr if p.l3 == L3::V4 => {
                    let a = if *s == Source::IpSaddr { p.src } else { p.dst } as u32;
                    key[off..off + 4].copy_from_slice(&a.to_be_bytes());
                    off += 4;
                    true
                }
                Source::Ip6Saddr | Source::Ip6Daddr if p.l3 == L3::V6 => {
                    let a = if *s == Source::Ip6Saddr { p.src } else { p.dst };
                    key[off..off + 16].copy_from_slice(&a.to_be_bytes());
                    off += 16;
                    true
                }
                Source::Sport(proto) | Source::Dport(proto)
                    if p.l4_ok
                        && matches!(
                            p.proto,
                            wire::proto::TCP | wire::proto::UDP | wire::proto::SCTP
                        )
                        && proto.is_none_or(|x| x == p.proto) =>
                {
                    let v = if matches!(s, Source::Sport(_)) {
                        p.sport
                    } else {
                        p.dport
                    };
                    key[off..off + 2].copy_from_slice(&v.to_be_bytes());
                    off += 2;
                    true
                }
                Source::L4proto => {
                    key[off] = p.proto;
                    off += 1;
                    true
                }
                Source::EtherSaddr | Source::EtherDaddr => {
                    let at = if *s == Source::EtherSaddr { 6 } else { 0 };
                    key[off..off + 6].copy_from_slice(&frame[at..at + 6]);
                    off += 6;
                    true
                }
                Source::Mark => {
                    // Frames from ports carry no mark.
                    key[off..off + 4].fill(0);
                    off += 4;
                    true
                }
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        true
    }

    /// The burst's keys and the packets they are written for agree with
    /// the per-packet reference, for random packets and source lists.
    #[test]
    fn burst_keys_agree_with_the_reference() {
        let all = [
            Source::IpSaddr,
            Source::IpDaddr,
            Source::Ip6Saddr,
            Source::Ip6Daddr,
            Source::Sport(None),
            Source::Dport(None),
            Source::Sport(Some(wire::proto::TCP)),
            Source::Dport(Some(wire::proto::UDP)),
            Source::Sport(Some(wire::proto::SCTP)),
            Source::L4proto,
            Source::EtherSaddr,
            Source::EtherDaddr,
            Source::Mark,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut burst = Burst::new();
        for _ in 0..32 {
            let f: Vec<u8> = (0..64).map(|_| next() as u8).collect();
            burst.push(&f);
        }
        let protos = [
            wire::proto::TCP,
            wire::proto::UDP,
            wire::proto::SCTP,
            wire::proto::ICMP,
            47,
        ];
        for _ in 0..2000 {
            let sources: Vec<Source> = (0..1 + next() % 4)
                .map(|_| all[next() as usize % all.len()])
                .collect();
            let klen: usize = sources
                .iter()
                .map(|s| match s {
                    Source::IpSaddr | Source::IpDaddr | Source::Mark => 4,
                    Source::Ip6Saddr | Source::Ip6Daddr => 16,
                    Source::Sport(_) | Source::Dport(_) => 2,
                    Source::L4proto => 1,
                    Source::EtherSaddr | Source::EtherDaddr => 6,
                })
                .sum();
            let parsed: Vec<Parsed> = (0..32)
                .map(|_| Parsed {
                    l3: if next() % 2 == 0 { L3::V4 } else { L3::V6 },
                    src: (next() as u128) << 64 | next() as u128,
                    dst: (next() as u128) << 64 | next() as u128,
                    proto: protos[next() as usize % protos.len()],
                    sport: next() as u16,
                    dport: next() as u16,
                    l4_ok: next() % 4 != 0,
                    ..Parsed::default()
                })
                .collect();
            let need = Need::of(&sources);
            let mut want = vec![0u8; 32 * klen];
            let mut which = Vec::new();
            for (i, p) in parsed.iter().enumerate() {
                let mut k = vec![0u8; klen];
                let ok = extract(&sources, p, burst.frame(i), &mut k);
                assert_eq!(need.applies(p), ok, "{sources:?} {p:?}");
                if ok {
                    want[which.len() * klen..(which.len() + 1) * klen].copy_from_slice(&k);
                    which.push(i as u8);
                }
            }
            let mut got = vec![0u8; which.len() * klen];
            write_keys(&sources, &parsed, &burst, &which, &mut got, klen);
            assert_eq!(got, want[..which.len() * klen], "{sources:?}");
        }
    }
}
