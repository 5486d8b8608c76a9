//! The per-core route cache in front of the FIB: the route hint (a packet
//! with the previous packet's destination reuses its result) and the dst
//! cache (a small static hash table of recent destinations).
//!
//! The dst cache has no locks, no timers and no garbage collector. Every
//! entry carries the generation of the FIB snapshot it was filled from; an
//! entry of another generation is stale, counted, and overwritten (lazy
//! invalidation). Buckets of 4 ways; a new entry takes the first free way,
//! else the least recently used. The hash is keyed with a random seed.
//! What is cached is the route's target: an ECMP group's member is chosen
//! per packet from the flow hash, never per destination.

use crate::fib::TargetId;
use crate::hash::{jhash, jhash2, jhash_1word};

/// Ways per bucket.
pub const WAYS: usize = 4;

/// A destination the cache can be keyed by: IPv4 (`u32`) or IPv6 (`u128`).
pub trait CacheKey: Copy + Eq + Default {
    /// The key hashed with the chosen function and seed.
    fn hash_with(&self, kind: HashKind, seed: u32, ahasher: &ahash::RandomState) -> u32;
}

impl CacheKey for u32 {
    #[inline(always)]
    fn hash_with(&self, kind: HashKind, seed: u32, ahasher: &ahash::RandomState) -> u32 {
        match kind {
            HashKind::Jhash => jhash(&self.to_ne_bytes(), seed),
            HashKind::Jhash2 => jhash_1word(*self, seed),
            HashKind::Ahash => ahasher.hash_one(*self) as u32,
        }
    }
}

impl CacheKey for u128 {
    #[inline(always)]
    fn hash_with(&self, kind: HashKind, seed: u32, ahasher: &ahash::RandomState) -> u32 {
        match kind {
            HashKind::Jhash => jhash(&self.to_ne_bytes(), seed),
            HashKind::Jhash2 => {
                let v = *self;
                jhash2(
                    &[
                        v as u32,
                        (v >> 32) as u32,
                        (v >> 64) as u32,
                        (v >> 96) as u32,
                    ],
                    seed,
                )
            }
            HashKind::Ahash => ahasher.hash_one(*self) as u32,
        }
    }
}

/// The hash function of a dst cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashKind {
    /// Linux `jhash` over the key's bytes.
    Jhash,
    /// Linux `jhash2` over the key's 32-bit words.
    Jhash2,
    /// ahash, randomly keyed.
    Ahash,
}

impl HashKind {
    /// The name used in configuration and benchmarks.
    pub fn name(self) -> &'static str {
        match self {
            HashKind::Jhash => "jhash",
            HashKind::Jhash2 => "jhash2",
            HashKind::Ahash => "ahash",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<HashKind> {
        [HashKind::Jhash, HashKind::Jhash2, HashKind::Ahash]
            .into_iter()
            .find(|h| h.name() == s)
    }
}

/// How a worker's route stage is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteCacheConfig {
    /// Reuse the previous packet's result for the same destination.
    pub hint: bool,
    /// Entries of the dst cache; 0 turns it off.
    pub dst_cache_entries: usize,
    /// The dst cache's hash.
    pub hash: HashKind,
}

impl Default for RouteCacheConfig {
    /// What `bench routecache` and `bench hash` support on this FIB (see
    /// BENCHMARKS.md). Both off: against a FIB looked up a burst at a time
    /// (one or two loads per IPv4 address), the dst cache's probe costs
    /// more than it saves for IPv4 at every number of destinations, and for
    /// IPv6 it pays only for a few destinations and costs from a few
    /// hundred on; the hint pays only when most packets repeat the
    /// previous destination, and costs from a dozen destinations on. When the cache is turned on: 512 entries (the reference's
    /// size) hashed with ahash, the fastest allowed hash for 4- and 16-byte
    /// keys in `bench hash`.
    fn default() -> Self {
        RouteCacheConfig {
            hint: false,
            dst_cache_entries: 0,
            hash: HashKind::Ahash,
        }
    }
}

impl RouteCacheConfig {
    /// A router for one family with this configuration and a random seed.
    pub fn router<K: CacheKey>(&self) -> Router<K> {
        let cache = (self.dst_cache_entries > 0).then(|| {
            DstCache::new(
                self.dst_cache_entries,
                self.hash,
                crate::hash::random_seed(),
            )
        });
        Router::new(self.hint, cache)
    }
}

/// Counters of a route cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Results reused from the previous packet of the burst.
    pub hint_hits: u64,
    /// Lookups answered by the dst cache.
    pub hits: u64,
    /// Lookups the dst cache did not hold (FIB lookups).
    pub misses: u64,
    /// Entries found with an older generation (counted in `misses` too).
    pub stale: u64,
}

impl CacheStats {
    /// The counters' names, in [`CacheStats::values`] order.
    pub const NAMES: [&'static str; 4] = ["hint_hits", "hits", "misses", "stale"];

    /// The counters, in [`CacheStats::NAMES`] order.
    pub fn values(&self) -> [u64; 4] {
        [self.hint_hits, self.hits, self.misses, self.stale]
    }
}

/// "No route", as a cached target.
const NO_ROUTE: u32 = u32::MAX;

#[derive(Clone, Copy, Default)]
struct Slot<K> {
    key: K,
    /// Generation the entry was filled from; 0 = empty.
    generation: u32,
    target: u32,
    /// Tick of the last use, for least-recently-used replacement.
    stamp: u32,
}

/// A static per-core hash table of destinations to route targets.
pub struct DstCache<K: CacheKey> {
    slots: Box<[Slot<K>]>,
    mask: usize,
    seed: u32,
    kind: HashKind,
    ahasher: ahash::RandomState,
    tick: u32,
    stats: CacheStats,
}

impl<K: CacheKey> std::fmt::Debug for DstCache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DstCache")
            .field("entries", &self.slots.len())
            .field("hash", &self.kind)
            .field("stats", &self.stats)
            .finish()
    }
}

impl<K: CacheKey> DstCache<K> {
    /// A cache of at least `entries` entries (rounded up to a power of two
    /// of 4-way buckets), hashed with `kind` keyed by `seed`.
    pub fn new(entries: usize, kind: HashKind, seed: u32) -> DstCache<K> {
        let buckets = entries.div_ceil(WAYS).next_power_of_two().max(1);
        DstCache {
            slots: vec![Slot::default(); buckets * WAYS].into_boxed_slice(),
            mask: buckets - 1,
            seed,
            kind,
            ahasher: ahash::RandomState::with_seeds(
                seed as u64,
                0x243f_6a88_85a3_08d3,
                0x1319_8a2e_0370_7344,
                0xa409_3822_299f_31d0,
            ),
            tick: 0,
            stats: CacheStats::default(),
        }
    }

    /// Entries held.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The counters.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Resets the counters.
    pub fn reset_stats(&mut self) {
        self.stats = CacheStats::default();
    }

    /// The bucket index of a key (for tests of the spread).
    pub fn bucket_of(&self, key: K) -> usize {
        key.hash_with(self.kind, self.seed, &self.ahasher) as usize & self.mask
    }

    /// The target of `key` in the FIB of generation `generation`: from the
    /// cache if it holds an entry of that generation, else from `fib`
    /// (whose answer, a route or none, is cached).
    #[inline]
    pub fn lookup(
        &mut self,
        key: K,
        generation: u32,
        fib: impl FnOnce(K) -> Option<TargetId>,
    ) -> Option<TargetId> {
        match self.probe(key, generation) {
            Some(t) => t,
            None => {
                let t = fib(key);
                self.fill(key, generation, t);
                t
            }
        }
    }

    /// Looks `key` up in the cache alone: `Some(target)` on a hit (a
    /// target of `None` is a cached "no route"), `None` on a miss, which
    /// the caller resolves and [`DstCache::fill`]s.
    #[inline]
    pub fn probe(&mut self, key: K, generation: u32) -> Option<Option<TargetId>> {
        let b = self.bucket_of(key) * WAYS;
        self.tick = self.tick.wrapping_add(1);
        let tick = self.tick;
        for s in &mut self.slots[b..b + WAYS] {
            if s.generation != 0 && s.key == key {
                if s.generation == generation {
                    s.stamp = tick;
                    self.stats.hits += 1;
                    return Some((s.target != NO_ROUTE).then_some(s.target));
                }
                // Stale: learnt from an older FIB; `fill` overwrites it.
                self.stats.stale += 1;
                break;
            }
        }
        self.stats.misses += 1;
        None
    }

    /// Stores the target of a missed key: in its own way if the bucket
    /// still holds it (stale, or filled since), else in the first free
    /// way, else in the least recently used one.
    #[inline]
    pub fn fill(&mut self, key: K, generation: u32, target: Option<TargetId>) {
        let b = self.bucket_of(key) * WAYS;
        let tick = self.tick;
        let bucket = &mut self.slots[b..b + WAYS];
        let mut victim = 0;
        let mut oldest = 0u32;
        let mut free = None;
        for (i, s) in bucket.iter_mut().enumerate() {
            if s.generation == 0 {
                free.get_or_insert(i);
                continue;
            }
            if s.key == key {
                free = Some(i);
                break;
            }
            let age = tick.wrapping_sub(s.stamp);
            if age >= oldest {
                oldest = age;
                victim = i;
            }
        }
        bucket[free.unwrap_or(victim)] = Slot {
            key,
            generation,
            target: target.unwrap_or(NO_ROUTE),
            stamp: tick,
        };
    }
}

/// How one packet of a burst was routed, before the FIB is asked.
#[derive(Clone, Copy)]
enum Pending {
    /// Same destination as the previous packet: take its result.
    Hint,
    /// Answered by the dst cache.
    Cached(Option<TargetId>),
    /// Waiting for the FIB: index in the burst's list of misses.
    Fib(usize),
}

/// The route stage of a burst: hint, then dst cache, then one batched FIB
/// lookup of whatever is left, as configured.
pub struct Router<K: CacheKey> {
    /// The dst cache, if enabled.
    pub cache: Option<DstCache<K>>,
    /// Whether the route hint is enabled.
    pub hint: bool,
    hint_hits: u64,
    fib_lookups: u64,
}

/// Most packets a burst may hold.
pub const MAX_BURST: usize = 64;

impl<K: CacheKey> Router<K> {
    /// A router with the hint on or off and an optional cache.
    pub fn new(hint: bool, cache: Option<DstCache<K>>) -> Router<K> {
        Router {
            cache,
            hint,
            hint_hits: 0,
            fib_lookups: 0,
        }
    }

    /// Counters: hint hits, the cache's hits, misses and stale entries,
    /// and, without a cache, the FIB lookups as misses.
    pub fn stats(&self) -> CacheStats {
        let mut s = self.cache.as_ref().map(|c| c.stats()).unwrap_or_default();
        if self.cache.is_none() {
            s.misses = self.fib_lookups;
        }
        s.hint_hits = self.hint_hits;
        s
    }

    /// Routes a burst of at most [`MAX_BURST`] destinations: `out[i]` is
    /// the target of `dsts[i]` in the FIB of `generation`, which
    /// `fib_burst` looks up a batch of keys in.
    #[inline]
    pub fn route_burst(
        &mut self,
        dsts: &[K],
        generation: u32,
        fib_burst: impl FnOnce(&[K], &mut [Option<TargetId>]),
        out: &mut [Option<TargetId>],
    ) {
        let n = dsts.len().min(out.len()).min(MAX_BURST);
        if !self.hint && self.cache.is_none() {
            // Nothing in front of the FIB: one batched lookup.
            self.fib_lookups += n as u64;
            fib_burst(&dsts[..n], &mut out[..n]);
            return;
        }
        if self.cache.is_none() {
            // Hint only: look up each run of equal destinations once.
            // Branch-free: every key is written to the next free slot,
            // which only advances when the key differs from the last.
            let mut keys = [K::default(); MAX_BURST + 1];
            let mut run = [0u8; MAX_BURST];
            let mut m = 0usize;
            for i in 0..n {
                let d = dsts[i];
                keys[m] = d;
                m += (i == 0 || d != dsts[i - 1]) as usize;
                run[i] = (m - 1) as u8;
            }
            let mut found = [None; MAX_BURST];
            self.hint_hits += (n - m) as u64;
            self.fib_lookups += m as u64;
            fib_burst(&keys[..m], &mut found[..m]);
            for i in 0..n {
                out[i] = found[run[i] as usize];
            }
            return;
        }
        let mut pending = [Pending::Hint; MAX_BURST];
        let mut miss_keys = [K::default(); MAX_BURST];
        let mut misses = 0;
        for i in 0..n {
            let d = dsts[i];
            if self.hint && i > 0 && dsts[i - 1] == d {
                self.hint_hits += 1;
                pending[i] = Pending::Hint;
                continue;
            }
            let cached = self.cache.as_mut().and_then(|c| c.probe(d, generation));
            pending[i] = match cached {
                Some(t) => Pending::Cached(t),
                None => {
                    miss_keys[misses] = d;
                    misses += 1;
                    Pending::Fib(misses - 1)
                }
            };
        }
        let mut found = [None; MAX_BURST];
        if misses > 0 {
            self.fib_lookups += misses as u64;
            fib_burst(&miss_keys[..misses], &mut found[..misses]);
            if let Some(c) = &mut self.cache {
                for j in 0..misses {
                    c.fill(miss_keys[j], generation, found[j]);
                }
            }
        }
        for i in 0..n {
            out[i] = match pending[i] {
                // The first packet is never a hint, so out[i - 1] is set.
                Pending::Hint => out[i - 1],
                Pending::Cached(t) => t,
                Pending::Fib(j) => found[j],
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_misses_stale_and_lru() {
        let mut c: DstCache<u32> = DstCache::new(4, HashKind::Jhash2, 1);
        assert_eq!(c.capacity(), 4);
        let fib = |k: u32| (k != 99).then_some(k * 10);
        assert_eq!(c.lookup(1, 1, fib), Some(10));
        assert_eq!(c.lookup(1, 1, |_| panic!("cached")), Some(10));
        assert_eq!(c.lookup(99, 1, fib), None);
        assert_eq!(c.lookup(99, 1, |_| panic!("cached")), None);
        // A new generation: stale entries are refilled.
        assert_eq!(c.lookup(1, 2, |k| Some(k * 100)), Some(100));
        assert_eq!(
            c.stats(),
            CacheStats {
                hint_hits: 0,
                hits: 2,
                misses: 3,
                stale: 1
            }
        );
        // One bucket of 4 ways: 2, 3 fill it; 1 is used; 4 evicts the LRU (99).
        c.lookup(2, 2, fib);
        c.lookup(3, 2, fib);
        c.lookup(1, 2, fib);
        c.lookup(4, 2, fib);
        let before = c.stats().misses;
        c.lookup(1, 2, |_| panic!("1 was recently used"));
        c.lookup(99, 2, fib);
        assert_eq!(c.stats().misses, before + 1, "99 was evicted");
    }

    #[test]
    fn hint_reuses_the_previous_result() {
        let mut r: Router<u32> = Router::new(true, None);
        let mut out = [None; 5];
        let calls = std::cell::Cell::new(0);
        r.route_burst(
            &[7, 7, 7, 8, 7],
            1,
            |keys, found| {
                calls.set(calls.get() + keys.len());
                for (k, f) in keys.iter().zip(found) {
                    *f = Some(*k);
                }
            },
            &mut out,
        );
        assert_eq!(out, [Some(7), Some(7), Some(7), Some(8), Some(7)]);
        assert_eq!(calls.get(), 3);
        assert_eq!(r.stats().hint_hits, 2);
    }

    #[test]
    fn seeds_move_keys_between_buckets() {
        let a: DstCache<u32> = DstCache::new(512, HashKind::Jhash2, 1);
        let b: DstCache<u32> = DstCache::new(512, HashKind::Jhash2, 2);
        let moved = (0..1000u32)
            .filter(|&k| a.bucket_of(k) != b.bucket_of(k))
            .count();
        assert!(moved > 900, "{moved}");
    }
}
