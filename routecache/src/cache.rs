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
        let b = self.bucket_of(key) * WAYS;
        self.tick = self.tick.wrapping_add(1);
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
                if s.generation == generation {
                    s.stamp = tick;
                    self.stats.hits += 1;
                    return (s.target != NO_ROUTE).then_some(s.target);
                }
                // Stale: learnt from an older FIB. Refill this very way.
                self.stats.stale += 1;
                free = Some(i);
                break;
            }
            let age = tick.wrapping_sub(s.stamp);
            if age >= oldest {
                oldest = age;
                victim = i;
            }
        }
        self.stats.misses += 1;
        let t = fib(key);
        let s = &mut bucket[free.unwrap_or(victim)];
        *s = Slot {
            key,
            generation,
            target: t.unwrap_or(NO_ROUTE),
            stamp: tick,
        };
        t
    }
}

/// The route stage of a burst: hint, then dst cache, then FIB, as
/// configured.
pub struct Router<K: CacheKey> {
    /// The dst cache, if enabled.
    pub cache: Option<DstCache<K>>,
    /// Whether the route hint is enabled.
    pub hint: bool,
    hint_hits: u64,
    fib_lookups: u64,
}

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

    /// Counters: hint hits, and the cache's (or, without a cache, the FIB
    /// lookups as misses).
    pub fn stats(&self) -> CacheStats {
        let mut s = self.cache.as_ref().map(|c| c.stats()).unwrap_or_default();
        if self.cache.is_none() {
            s.misses = self.fib_lookups;
        }
        s.hint_hits = self.hint_hits;
        s
    }

    /// Routes a burst of destinations: `out[i]` is the target of `dsts[i]`
    /// in the FIB of `generation` that `fib` looks up in.
    #[inline]
    pub fn route_burst(
        &mut self,
        dsts: &[K],
        generation: u32,
        fib: impl Fn(K) -> Option<TargetId>,
        out: &mut [Option<TargetId>],
    ) {
        let mut prev: Option<(K, Option<TargetId>)> = None;
        for (d, o) in dsts.iter().zip(out.iter_mut()) {
            if self.hint {
                if let Some((k, t)) = prev {
                    if k == *d {
                        self.hint_hits += 1;
                        *o = t;
                        continue;
                    }
                }
            }
            let t = match &mut self.cache {
                Some(c) => c.lookup(*d, generation, &fib),
                None => {
                    self.fib_lookups += 1;
                    fib(*d)
                }
            };
            *o = t;
            prev = Some((*d, t));
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
            |k| {
                calls.set(calls.get() + 1);
                Some(k)
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
