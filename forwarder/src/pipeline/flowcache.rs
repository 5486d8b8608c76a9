//! The per-core flow cache: what the rule sets and the routes decided for
//! a flow, so that the flow's next packets skip classification and routing
//! (Open vSwitch's exact-match cache does the same in front of its
//! classifier).
//!
//! A flow is everything any stage reads of a packet to decide its fate:
//! family, addresses, ports (or ICMP type and code), protocol, whether the
//! transport header was complete, and the Ethernet addresses (sets may
//! match them). Packets equal in all of these are judged alike by every
//! set and every route, and an ECMP group picks their member from the same
//! 5-tuple hash, so the decision can be reused as is. Checksums and
//! lengths are not part of it, and the TTL only for speed (see
//! [`FlowId::of`]): rewriting, and the TTL's check, still run on every
//! packet.
//!
//! Like the dst cache it has no locks and no timers: a static table of
//! 4-way buckets, hashed with a per-process random key; a flow may live
//! in either of two buckets (two choices: at half load, 4-way buckets
//! with one choice leave a few flows in a hundred without room, two
//! almost none). A flow fills its first bucket before its second, so a
//! lookup reads the second bucket's tags only when the first has no
//! candidate, or none of its candidates is the flow. The buckets' tags
//! are a table of their own, eight buckets a cache line (32 KiB for
//! 16,384 entries, about what a core's first-level cache holds); a hit
//! reads its bucket's tags and its entry's line, nothing else. Least
//! recently used replacement, and lazy invalidation: every entry carries
//! the epoch of the snapshot it was filled under, and a new snapshot
//! starts a new epoch, so a reload makes every entry stale at once without
//! touching it.
//! A missed flow is stored one time in [`FlowCacheConfig::insert_one_in`],
//! and when too few lookups hit the cache stands aside for a while
//! ([`FlowCache::take_burst`]): `bench forward` measured where it pays.

pub use crate::decision::Decision;
use crate::tables::FlowCacheConfig;
use crate::wire::Parsed;
use pages::prefetch_ptr;
use routecache::hash::fold_mul;

/// Ways per bucket.
pub const WAYS: usize = 4;

/// Sets whose matches an entry can record (2 bits each in a `u32`); the
/// configuration refuses the cache with more.
pub const MAX_SETS: usize = config::FlowCache::MAX_SETS;

/// What decides a packet's fate (see the module's documentation), in
/// words: source, destination, ports, protocol and flags, MACs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowId {
    /// Source (2 words), destination (2 words); source port, destination
    /// port, protocol, transport header complete, family and VRF, a byte
    /// or two each from the lowest; the first 8 bytes of the MACs.
    w: [u64; 6],
    /// The last 4 bytes of the MACs.
    m: u32,
}

impl FlowId {
    /// The flow of a parsed frame, in its VRF ([`Parsed::vrf`]): two
    /// VRFs may hold the same addresses and route them differently, and
    /// sub-interfaces of one port share its MAC.
    #[inline(always)]
    pub fn of(p: &Parsed, frame: &[u8]) -> FlowId {
        let (mut a, mut b) = ([0u8; 8], [0u8; 4]);
        if let Some(m) = frame.get(..12) {
            a.copy_from_slice(&m[..8]);
            b.copy_from_slice(&m[8..]);
        }
        FlowId {
            w: [
                p.src as u64,
                (p.src >> 64) as u64,
                p.dst as u64,
                (p.dst >> 64) as u64,
                p.sport as u64
                    | (p.dport as u64) << 16
                    | (p.proto as u64) << 32
                    | (p.l4_ok as u64) << 40
                    | (p.l3 as u64) << 48
                    | (p.vrf as u64) << 56,
                u64::from_ne_bytes(a),
            ],
            m: u32::from_ne_bytes(b),
        }
    }
}

impl FlowId {
    /// [`FlowId::of`] a plain frame (what [`crate::wire::parse_plain`]
    /// takes: the express way's frames) in VRF `vrf`, read straight from
    /// the frame (the parse's fields in registers, not in memory); `None`
    /// for any other frame.
    #[inline(always)]
    pub fn of_plain(frame: &[u8], vrf: u8) -> Option<FlowId> {
        let mut p = Parsed::default();
        if !crate::wire::parse_plain(frame, &mut p) {
            return None;
        }
        p.vrf = vrf;
        Some(FlowId::of(&p, frame))
    }

    /// [`FlowId::of_plain`] of a frame with one VLAN tag (802.1Q or
    /// 802.1ad) in front of a plain packet: what `wire::parse_into` parses
    /// 4 bytes on (the MACs are the frame's own).
    #[inline(always)]
    pub fn of_tagged(frame: &[u8], vrf: u8) -> Option<FlowId> {
        if !matches!(frame.get(12..14), Some([0x81, 0x00] | [0x88, 0xa8])) {
            return None;
        }
        let mut p = Parsed::default();
        if !crate::wire::parse_plain(frame.get(4..)?, &mut p) {
            return None;
        }
        p.vrf = vrf;
        Some(FlowId::of(&p, frame))
    }

    /// Whether the flow is IPv6.
    #[inline(always)]
    pub fn is_v6(&self) -> bool {
        (self.w[4] >> 48) as u8 == crate::wire::L3::V6 as u8
    }
}

/// One entry: its flow, its decision, the epoch it was filled in and the
/// burst tick of its last use (16 bits: least recently used among the
/// last 65,536 bursts). A cache line; a hit checks the epoch and stamps
/// the use in the line it has just compared, instead of in a second one.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Slot {
    w: [u64; 6],
    m: u32,
    decision: Decision,
    epoch: u16,
    stamp: u16,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 64);

impl Slot {
    #[inline(always)]
    fn holds(&self, id: &FlowId) -> bool {
        // Branch-free, word by word (`==` on the arrays called memcmp).
        let mut d = (self.m ^ id.m) as u64;
        for (a, b) in self.w.iter().zip(&id.w) {
            d |= a ^ b;
        }
        d == 0
    }
}

/// A bucket's tags, apart from its entries: per way 15 bits of the flow's
/// hash, never 0 (0: empty). Locating a flow reads this alone; an entry's
/// line is touched only when its tag matches, to pick a victim for a
/// stored miss, or to be written.
#[derive(Clone, Copy, Default)]
#[repr(C, align(8))]
struct Meta {
    /// The ways' tags, 16 bits each, way 0 in the low bits: one word, so
    /// that finding the ways with a given tag is a few word operations.
    tags: u64,
}

impl Meta {
    #[inline(always)]
    fn tag(&self, way: usize) -> u16 {
        (self.tags >> (16 * way)) as u16
    }

    #[inline(always)]
    fn set_tag(&mut self, way: usize, tag: u16) {
        self.tags = self.tags & !(0xffff << (16 * way)) | (tag as u64) << (16 * way);
    }

    /// Bit `w` set for each way `w` whose tag is `tag`.
    #[inline(always)]
    fn ways_tagged(&self, tag: u16) -> u16 {
        crate::swar::lanes_equal(self.tags, tag) as u16
    }
}

/// Counters of a flow cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCacheStats {
    /// Packets whose flow was found.
    pub hits: u64,
    /// Packets classified and routed (and their decision stored).
    pub misses: u64,
    /// Misses that found their flow filled under an older snapshot.
    pub stale: u64,
    /// Packets that went past the cache while it stood aside (see
    /// [`FlowCache::take_burst`]).
    pub bypassed: u64,
}

impl FlowCacheStats {
    /// The counters' names, in [`FlowCacheStats::values`] order (the
    /// `stats` JSON's keys and the Prometheus `result` label).
    pub const NAMES: [&'static str; 4] = ["hits", "misses", "stale", "bypassed"];

    /// The counters, in [`FlowCacheStats::NAMES`] order.
    pub fn values(&self) -> [u64; 4] {
        [self.hits, self.misses, self.stale, self.bypassed]
    }
}

/// Lookups over which the hit rate is judged.
const WINDOW: u32 = 8192;
/// Below this share of hits in a window's lookups (percent), the cache
/// stands aside: the misses pay for the lookups, and the entries evict
/// the sets' and routes' lines from the core's caches, so a cache hit
/// half the time costs more than it saves (`bench forward`'s `@N`
/// variants, BENCHMARKS.md).
const MIN_HIT_PERCENT: u32 = 75;
/// Windows it then stands aside for, before trying again.
const ASIDE_WINDOWS: u32 = 7;

/// Where a flow's entry would be: its two buckets, its tag, and the ways
/// whose tag is the same (candidates: bits 0-3 the first bucket's ways,
/// 4-7 the second's).
#[derive(Clone, Copy, Debug, Default)]
pub struct Loc {
    buckets: [u32; 2],
    tag: u16,
    ways: u16,
}

impl Loc {
    /// The bucket of candidate `c` (0-7).
    #[inline(always)]
    fn bucket(&self, c: usize) -> usize {
        // A select, not an index: indexing the pair kept the `Loc` on the
        // stack to load from it.
        let [b0, b1] = self.buckets;
        (if c < WAYS { b0 } else { b1 }) as usize
    }

    /// The entry index of candidate `c` (0-7).
    #[inline(always)]
    fn slot(&self, c: usize) -> usize {
        self.bucket(c) * WAYS + c % WAYS
    }
}

/// A static table of flows to decisions.
pub struct FlowCache {
    meta: Box<[Meta]>,
    slots: Box<[Slot]>,
    mask: usize,
    keys: [u64; 4],
    epoch: u16,
    tick: u16,
    insert_one_in: u32,
    /// xorshift state for the insertion sample.
    rng: u64,
    /// Lookups and hits of the current window.
    window: (u32, u32),
    /// Packets to let past before trying again.
    aside: u32,
    stats: FlowCacheStats,
}

impl std::fmt::Debug for FlowCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlowCache")
            .field("entries", &self.slots.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl FlowCache {
    /// A cache of at least `entries` entries (rounded up to a power of two
    /// of 4-way buckets), keyed randomly, storing every miss.
    pub fn new(entries: usize) -> FlowCache {
        FlowCache::with_config(FlowCacheConfig {
            entries,
            insert_one_in: 1,
        })
    }

    /// A cache as configured.
    pub fn with_config(c: FlowCacheConfig) -> FlowCache {
        let entries = c.entries;
        use std::hash::BuildHasher;
        let buckets = entries.div_ceil(WAYS).next_power_of_two().max(1);
        let r = std::collections::hash_map::RandomState::new();
        FlowCache {
            meta: vec![Meta::default(); buckets].into_boxed_slice(),
            slots: vec![Slot::default(); buckets * WAYS].into_boxed_slice(),
            mask: buckets - 1,
            keys: std::array::from_fn(|i| r.hash_one(i) | 1),
            epoch: 1,
            tick: 0,
            insert_one_in: c.insert_one_in.max(1),
            rng: r.hash_one(u64::MAX) | 1,
            window: (0, 0),
            aside: 0,
            stats: FlowCacheStats::default(),
        }
    }

    /// The configuration it was made with (entries as asked, rounded).
    pub fn config(&self) -> FlowCacheConfig {
        FlowCacheConfig {
            entries: self.slots.len(),
            insert_one_in: self.insert_one_in,
        }
    }

    /// Entries a cache asked for `entries` holds.
    pub fn capacity_for(entries: usize) -> usize {
        entries.div_ceil(WAYS).next_power_of_two().max(1) * WAYS
    }

    /// Entries held.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The counters.
    pub fn stats(&self) -> FlowCacheStats {
        self.stats
    }

    /// Whether a burst of `n` packets is to use the cache. When a window
    /// of lookups found less than 3 flows in 4, the traffic has more flows
    /// than the cache holds (or they rarely repeat): the misses' extra
    /// work would outweigh the hits' savings, so the cache stands aside
    /// for the next 7 windows' worth of packets, then tries again (it
    /// keeps its entries, and stores a sample while it tries). A cold
    /// cache warms up through those tries: the example's 5,120 flows a
    /// core are cached after about a million packets.
    #[inline]
    pub fn take_burst(&mut self, n: usize) -> bool {
        if self.aside == 0 {
            self.tick = self.tick.wrapping_add(1);
            return true;
        }
        self.aside = self.aside.saturating_sub(n as u32);
        self.stats.bypassed += n as u64;
        false
    }

    /// Whether the cache stands aside (see [`FlowCache::take_burst`]),
    /// asked without counting a burst.
    #[inline(always)]
    pub fn aside(&self) -> bool {
        self.aside != 0
    }

    /// Accounts a burst's lookups and hits (by
    /// [`FlowCache::probe_in_burst`]) to the counters and to the current
    /// window.
    #[inline]
    pub fn account(&mut self, lookups: u32, hits: u32) {
        self.stats.hits += hits as u64;
        self.stats.misses += (lookups - hits) as u64;
        let (l, h) = (self.window.0 + lookups, self.window.1 + hits);
        if l < WINDOW {
            self.window = (l, h);
            return;
        }
        if h * 100 < l * MIN_HIT_PERCENT {
            self.aside = ASIDE_WINDOWS * WINDOW;
        }
        self.window = (0, 0);
    }

    /// Makes every entry stale: a new snapshot is being used.
    pub fn invalidate(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // After 65,535 snapshots: a real wipe, so no entry of the
            // epoch now reused survives.
            self.meta.fill(Meta::default());
            self.epoch = 1;
        }
    }

    /// Where `id`'s entry would be: [`FlowCache::hash`], then
    /// [`FlowCache::candidates`] (a burst does all its hashes first, then
    /// all its candidates, so that the cache misses of its buckets'
    /// bookkeeping, then of its entries, overlap).
    #[inline(always)]
    pub fn locate(&self, id: &FlowId) -> Loc {
        self.candidates(self.hash(id))
    }

    /// The buckets and tag of `id`, with a prefetch of the first bucket's
    /// bookkeeping. The hash is two folded 128-bit products of the flow's
    /// words, paired and keyed at random, then xored: a handful of cycles
    /// (five products took a quarter of the flow cache's instructions).
    /// The pairs keep fields that sweep together apart: the addresses' low
    /// words (all of IPv4's) multiply each other, with the last MAC bytes
    /// above IPv4's destination; the high words (zero for IPv4) take the
    /// first MAC bytes and the ports, protocol and flags. The second bucket
    /// differs from the first unless there is only one.
    #[inline(always)]
    pub fn hash(&self, id: &FlowId) -> Loc {
        let k = &self.keys;
        let w = &id.w;
        let h = fold_mul(w[0] ^ k[0], w[2] ^ ((id.m as u64) << 32) ^ k[1])
            ^ fold_mul(w[1] ^ w[5] ^ k[2], w[3] ^ w[4] ^ k[3]);
        let b0 = h as usize & self.mask;
        let b1 = (b0 ^ ((h >> 24) as usize | 1)) & self.mask;
        // Only the first bucket's bookkeeping: flows fill their first
        // bucket before their second, so at the loads a cache runs at
        // nearly every flow is found there, and the second bucket's line
        // is read only when the first has no candidate.
        prefetch_ptr(self.meta.as_ptr().wrapping_add(b0));
        Loc {
            buckets: [b0 as u32, b1 as u32],
            tag: (h >> 48) as u16 | 1,
            ways: 0,
        }
    }

    /// `loc` (from [`FlowCache::hash`]) with the ways whose tag matches,
    /// and a prefetch of the first one's entry.
    #[inline(always)]
    pub fn candidates(&self, loc: Loc) -> Loc {
        let [b0, b1] = loc.buckets.map(|b| b as usize);
        // Built in a register and written once with the rest: a 2-byte
        // store into a `Loc` read back whole just after stalls the
        // store's forwarding.
        let mut ways = self.meta[b0].ways_tagged(loc.tag);
        if ways == 0 && b1 != b0 {
            ways = self.meta[b1].ways_tagged(loc.tag) << WAYS;
        }
        let loc = Loc { ways, ..loc };
        if ways != 0 {
            prefetch_ptr(
                self.slots
                    .as_ptr()
                    .wrapping_add(loc.slot(ways.trailing_zeros() as usize)),
            );
        }
        loc
    }

    /// The decision stored for `id` (located at `loc`), if filled in the
    /// current epoch: one lookup, counted, its own tick of the clock that
    /// ages entries. A burst's lookups use [`FlowCache::probe_in_burst`].
    pub fn probe(&mut self, loc: Loc, id: &FlowId) -> Option<Decision> {
        self.tick = self.tick.wrapping_add(1);
        let d = self.probe_in_burst(loc, id);
        match d {
            Some(_) => self.stats.hits += 1,
            None => self.stats.misses += 1,
        }
        d
    }

    /// [`FlowCache::probe`] for one packet of a burst that
    /// [`FlowCache::take_burst`] let in: the burst's lookups share one
    /// tick (entries age by bursts), and [`FlowCache::account`] counts
    /// its hits and misses once. Per packet, that clock and those counters
    /// would be a load and a store each, chained from one packet to the next.
    #[inline(always)]
    pub fn probe_in_burst(&mut self, loc: Loc, id: &FlowId) -> Option<Decision> {
        let mut found = self.find(loc, loc.ways, id);
        if found.is_none() && loc.ways < 1 << WAYS && loc.buckets[0] != loc.buckets[1] {
            // The second bucket's tags were not read, the first bucket
            // having candidates: they may all be other flows' (tags of
            // the same 15 bits).
            let ways = self.meta[loc.buckets[1] as usize].ways_tagged(loc.tag) << WAYS;
            found = self.find(loc, ways, id);
        }
        let s = &mut self.slots[found?];
        if s.epoch == self.epoch {
            s.stamp = self.tick;
            return Some(s.decision);
        }
        self.stats.stale += 1;
        None
    }

    /// The entry index of the first of the candidate `ways` (bits as in
    /// [`Loc`]) that holds `id` (the index, not the candidate: computing
    /// it again, and checking it again, cost the probe five instructions).
    #[inline(always)]
    fn find(&self, loc: Loc, mut ways: u16, id: &FlowId) -> Option<usize> {
        while ways != 0 {
            let at = loc.slot(ways.trailing_zeros() as usize);
            ways &= ways - 1;
            if self.slots[at].holds(id) {
                return Some(at);
            }
        }
        None
    }

    /// Stores the decision for a missed flow (located at `loc`): in the
    /// way that holds it if any (stale, or filled by an earlier packet of
    /// the burst), else, one time in `insert_one_in`, in the first free or
    /// stale way of its two buckets, else in their least recently used
    /// one.
    #[inline]
    pub fn fill(&mut self, loc: Loc, id: &FlowId, decision: Decision) {
        let choices = self.choices(loc);
        // Only the ways with the flow's tag can hold it: their lines alone
        // are read for every miss, the others' only for a stored one.
        let own = (0..choices).find(|&c| {
            self.meta[loc.bucket(c)].tag(c % WAYS) == loc.tag && self.slots[loc.slot(c)].holds(id)
        });
        if own.is_none() && self.insert_one_in > 1 {
            let mut x = self.rng;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.rng = x;
            if !((x >> 32) as u32).is_multiple_of(self.insert_one_in) {
                return;
            }
        }
        let c = own.unwrap_or_else(|| self.victim(loc, choices));
        self.meta[loc.bucket(c)].set_tag(c % WAYS, loc.tag);
        self.slots[loc.slot(c)] = Slot {
            w: id.w,
            m: id.m,
            decision,
            epoch: self.epoch,
            stamp: self.tick,
        };
    }

    /// Candidates of `loc`: the ways of both its buckets, or of its one.
    #[inline(always)]
    fn choices(&self, loc: Loc) -> usize {
        if loc.buckets[0] == loc.buckets[1] {
            WAYS
        } else {
            2 * WAYS
        }
    }

    /// The way a new flow at `loc` takes: the first empty or stale one of
    /// its `choices`, else the least recently used.
    fn victim(&self, loc: Loc, choices: usize) -> usize {
        let mut victim = 0;
        let mut oldest = 0u16;
        for c in 0..choices {
            let s = &self.slots[loc.slot(c)];
            if self.meta[loc.bucket(c)].tag(c % WAYS) == 0 || s.epoch != self.epoch {
                return c;
            }
            let age = self.tick.wrapping_sub(s.stamp);
            if age >= oldest {
                oldest = age;
                victim = c;
            }
        }
        victim
    }
}

#[cfg(test)]
mod tests;
