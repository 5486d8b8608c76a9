//! The connections of one worker: a fixed table allocated once. Buckets
//! of 8 ways with two choices hold, per way, a 16-bit tag and the index
//! of its entry; the entries (one cache line each) sit in an array of
//! their own, `max` long, handed out lowest first from a stack of free
//! ones. A lookup reads its bucket's line (the first bucket, where an
//! entry goes unless it is full), then only the entries whose tag
//! matches.
//!
//! Why the indirection: entries in the buckets' own slots would make a
//! table for a million connections 128 MiB of slots, and a few thousand
//! live connections as many random lines across all of it, each a page
//! walk where the host maps 4 KiB pages. Handed out lowest first, live
//! entries stay packed at the start of a 64 MiB array. The buckets (16
//! MiB for a million) come into use as entries come, a bucket split at a
//! time (linear hashing: [`Table::grow`]), so that a few thousand
//! connections read a few hundred KiB of them (BENCHMARKS.md,
//! `full+conntrack`). Both arrays are huge-page backed
//! where the kernel grants it ([`pages::Huge`]): the buckets
//! a burst reads are random lines among megabytes, and with 4 KiB pages
//! each was also a TLB miss (a tracked packet 58 -> 49 ns at 4,096
//! flows on this machine).
//!
//! Nothing here allocates after [`Table::new`], and nothing frees memory:
//! an entry goes by its tag being cleared and its slot going back on the
//! stack, in the table of the one worker that owns it.

use super::key::Key;
use crate::decision::Decision;
use crate::wire::L3;
use pages::{Huge, Zeroable};

/// Ways per bucket.
pub const WAYS: usize = 8;

/// Buckets in use looked at past a new key's two for an entry to drop
/// early, when the table is full and those two hold none to drop but a
/// free way: a small table's bucket left empty as it filled.
const VICTIM_SCAN: usize = 16;

/// Buckets in use in a new table (or fewer, in a smaller one's array).
const FIRST_BUCKETS: usize = 64;

/// Entries a bucket in use averages before one more is split: 2 of 8
/// ways. Between splits the buckets not split yet hold about twice the
/// entries of those split, so at most 4 on average: as loaded as every
/// bucket of a full table (its array holds buckets for `2 max` entries),
/// which two choices of 8 ways almost never find both full.
const GROW_AT: usize = 2;

/// No slot (what [`Table::prefetch_entry`] gives when no way's tag is the
/// key's): never in use, since a table holds fewer.
pub const NO_SLOT: u32 = u32::MAX;

/// What a freed entry's last key word becomes: a family no key has (its
/// bits 40-46 are 0 or 1 in every key), so that a lookup that still
/// holds the slot (from a pass before the free) does not find it.
pub const FREED: u64 = u64::MAX;

/// One connection: its key, when it expires, the state the protocol
/// keeps, and per direction the decision the sets and routes took for
/// its packets (with the snapshot epoch it was taken under).
#[derive(Clone, Copy, Default, Debug)]
#[repr(C, align(64))]
pub struct Entry {
    /// The connection.
    pub key: Key,
    /// When it expires, in ticks ([`super::ticks`]), compared with
    /// wrapping arithmetic.
    pub deadline: u32,
    /// The epoch the decisions were stored in.
    pub epoch: u16,
    /// TCP's state ([`super::tcp`]); 0 for other protocols; with
    /// [`UNCONFIRMED`] while the packet that opened it is undecided.
    pub state: u8,
    /// [`flag`] bits.
    pub flags: u8,
    /// The decision for each direction (original, reply).
    pub decision: [Decision; 2],
}

const _: () = assert!(std::mem::size_of::<Entry>() == 64);

/// The bit of [`Entry::state`] that marks an entry whose first packet is
/// not decided yet (within its burst): the packets after it in the same
/// direction meet it, as they would in Linux once it is confirmed, but
/// no answer or ICMP error does, since in Linux it would not be there
/// had the packet been dropped.
pub const UNCONFIRMED: u8 = 0x80;

/// The bits of [`Entry::state`] that hold TCP's state; the others are
/// [`UNCONFIRMED`], [`LAST_SYN`] and [`CHALLENGE`].
pub const TCP_STATE: u8 = 0x0f;

/// The bit of [`Entry::state`] that says the last segment the connection
/// took was a SYN, in the direction [`flag::LAST_REPLY`] says (Linux's
/// `last_index == TCP_SYN_SET`): a SYN-ACK from the other side that
/// Linux's table ignores then puts the connection back in step
/// (SYN_RECV), as Linux does when both hosts are in sync and the
/// firewall is not.
pub const LAST_SYN: u8 = 0x40;

/// The bit of [`Entry::state`] that says a SYN was ignored in LAST_ACK:
/// the other side's next ACK is the challenge ACK of RFC 5961, which
/// must not be taken for the last FIN's (Linux's
/// `IP_CT_EXP_CHALLENGE_ACK`).
pub const CHALLENGE: u8 = 0x20;

/// The bit of [`Entry::state`] that marks a refused connection's entry:
/// its opening packet was dropped, so there is no connection (Linux keeps
/// nothing), but the entry stays a while with that packet's decision
/// (`decision[0]`, a drop), so that the flow's next packets that would
/// open it again take the decision as a flow cache hit does, without
/// being classified and routed again (see `refused.rs`).
pub const REFUSED: u8 = 0x10;

/// An entry's flags.
pub mod flag {
    /// The original direction is from the key's higher end.
    pub const ORIG_HI: u8 = 1;
    /// A packet was seen in the reply direction.
    pub const SEEN_REPLY: u8 = 2;
    /// Assured: kept when the table is full (early drop takes others).
    pub const ASSURED: u8 = 4;
    /// A FIN was seen (TCP).
    pub const CLOSING: u8 = 8;
    /// The last segment was a RST (TCP) ...
    pub const LAST_RST: u8 = 16;
    /// The last segment was in the reply direction (TCP).
    pub const LAST_REPLY: u8 = 32;
    /// `decision[0]` holds the original direction's decision.
    pub const DECIDED0: u8 = 64;
    /// `decision[1]` holds the reply direction's.
    pub const DECIDED1: u8 = 128;
}

impl Entry {
    /// Whether the entry has expired at `now`.
    #[inline(always)]
    pub fn expired(&self, now: u32) -> bool {
        (self.deadline.wrapping_sub(now) as i32) <= 0
    }
}

/// What made room for a new entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Room {
    /// A free slot.
    Free,
    /// An unassured connection's slot (Linux's early drop).
    EarlyDrop(Key),
    /// A refused connection's entry ([`REFUSED`]): no connection lost.
    Refused,
}

/// A bucket: its ways' tags (0: free) and entries, one cache line.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket {
    /// Its ways' tags, 16 bits each, way 0 in the low bits of the first
    /// word (compared four at a time: [`crate::swar`]).
    tags: [u64; 2],
    /// Its ways' entries, where the tag is not 0.
    at: [u32; WAYS],
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 64);

// SAFETY: a bucket is integers only; all zero is one with every way free.
#[allow(unsafe_code)]
unsafe impl Zeroable for Bucket {}
// SAFETY: an entry is integers only (its key's words, the decisions'
// words); all zero is `Entry::default()`, a free slot's content.
#[allow(unsafe_code)]
unsafe impl Zeroable for Entry {}

impl Bucket {
    /// The ways whose tag is `tag`, a bit each.
    #[inline(always)]
    fn tagged(&self, tag: u16) -> u32 {
        crate::swar::lanes8_equal(self.tags, tag)
    }

    /// The tag of way `w` (0: free).
    #[inline(always)]
    fn tag(&self, w: usize) -> u16 {
        (self.tags[w / 4] >> (16 * (w % 4))) as u16
    }

    /// Sets the tag of way `w`.
    #[inline(always)]
    fn set_tag(&mut self, w: usize, tag: u16) {
        let at = 16 * (w % 4);
        let t = &mut self.tags[w / 4];
        *t = *t & !(0xffff << at) | (tag as u64) << at;
    }
}

/// The table.
pub struct Table {
    /// Huge-page backed: a lookup reads a random line among megabytes
    /// of them, and with 4 KiB pages nearly each is also a page walk.
    buckets: Huge<Bucket>,
    /// The entries, indexed by slot (what [`Tracked`](super::Tracked)
    /// and the per-connection counters name).
    entries: Huge<Entry>,
    /// The free slots, the lowest on top.
    free: Vec<u32>,
    /// A bit per slot in use.
    used: Vec<u64>,
    /// Buckets in use: the first `base` of the array and the images of
    /// the `in_use - base` of them split so far, grown one bucket at
    /// a time as entries come (linear hashing, [`Table::addr`]), so that a
    /// few thousand connections in a table for a million read a few
    /// hundred KiB of buckets, not random lines of 16 MiB: with 4 KiB
    /// pages behind the guest's, each of those was a TLB miss
    /// (`examples/turns`, 4,096 flows a port: 45 ns a packet against 39
    /// with a table sized for 65,536). The array is allocated whole at
    /// first, its pages touched only when its buckets come into use.
    base: usize,
    /// Buckets in use (`in_use - base` is the next to split).
    in_use: usize,
    /// `2 base - 1`, kept for [`Table::addr`] (a lookup computes two
    /// addresses).
    wide_mask: usize,
    /// The hash's keys ([`Table::hash`]).
    seeds: [u64; 6],
    /// Entries in use.
    pub count: usize,
    /// Entries allowed.
    pub max: usize,
}

impl Table {
    /// A table for `max` entries (buckets for about twice as many, so
    /// that two choices of 8 ways almost never find both full below it).
    pub fn new(max: usize, seed: u64) -> Table {
        // Slots are `u32`s: 4 billion connections would be 256 GiB.
        let max = max.clamp(1, u32::MAX as usize);
        let buckets = (max * 2).div_ceil(WAYS).next_power_of_two();
        let mut t = Table {
            buckets: Huge::new(buckets),
            entries: Huge::new(max),
            free: (0..max as u32).rev().collect(),
            used: vec![0; max.div_ceil(64)],
            base: 0,
            in_use: 0,
            wide_mask: 0,
            seeds: {
                // SplitMix64's steps: six unrelated words from one.
                let mut x = seed;
                std::array::from_fn(|_| {
                    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    let mut z = x;
                    z = (z ^ z >> 30).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ z >> 27).wrapping_mul(0x94d0_49bb_1331_11eb);
                    z ^ z >> 31
                })
            },
            count: 0,
            max,
        };
        t.set_in_use(buckets.min(FIRST_BUCKETS), 0);
        t
    }

    /// Bytes the table holds.
    pub fn bytes(&self) -> usize {
        self.buckets.len() * std::mem::size_of::<Bucket>()
            + self.entries.len() * std::mem::size_of::<Entry>()
            + self.free.capacity() * 4
            + self.used.len() * 8
    }

    /// Buckets in use, and in the array ([`Table::grow`]).
    #[cfg(test)]
    pub(super) fn buckets_in_use(&self) -> (usize, usize) {
        (self.in_use, self.buckets.len())
    }

    /// Slots in the table (one an entry).
    pub fn slots(&self) -> usize {
        self.entries.len()
    }

    /// The key's hash, keyed per table (an attacker who cannot guess the
    /// keys cannot aim at a bucket): its words, each XORed with a key,
    /// multiplied in pairs to 128 bits and each product's halves folded
    /// (wyhash's step). Three independent multiplies, where a
    /// multiply-xorshift chain over the five words was five in a row
    /// (callgrind: 25 instructions against 17).
    #[inline(always)]
    pub fn hash(&self, k: &Key) -> u64 {
        let s = &self.seeds;
        let mum = |a: u64, b: u64| {
            let p = a as u128 * b as u128;
            p as u64 ^ (p >> 64) as u64
        };
        let h = if k.w[4] >> 40 & 1 == L3::V4 as u64 {
            // IPv4's ends are a word each: one product of them, the last
            // word folded in after it, then a multiply-xorshift to mix
            // (callgrind: 6 instructions a packet less than three
            // products). Without that second step keys apart by a port
            // alone land in buckets in a pattern: up to 5.6 % of them
            // empty where chance leaves 1.8 % (`first_buckets_are_even`).
            let h = mum(k.w[0] ^ s[0], k.w[2] ^ s[1]) ^ k.w[4];
            (h ^ h >> 29).wrapping_mul(s[2] | 1)
        } else {
            mum(k.w[0] ^ s[0], k.w[2] ^ s[1])
                ^ mum(k.w[1] ^ s[2], k.w[3] ^ s[3])
                ^ mum(k.w[4] ^ s[4], s[5])
        };
        // The first bucket comes from the low bits: a product's low bits
        // depend only on its factors' low bits, and where keys differ in
        // a port alone the high half moves by a step at most, so the
        // well-mixed middle of the product is folded down into them
        // (without it, 16 entries over 4 buckets left a bucket empty
        // often enough to fail an early drop: `unassured_connections_are
        // _dropped_early`).
        h ^ h >> 32
    }

    /// The first bucket hash `h` addresses (tests: how evenly keys
    /// spread).
    #[cfg(test)]
    pub(super) fn first_bucket(&self, h: u64) -> usize {
        self.addr(h)
    }

    /// The two buckets hash `h` may sit in.
    #[inline(always)]
    fn buckets(&self, h: u64) -> [usize; 2] {
        [self.addr(h), self.addr(h >> 24)]
    }

    /// The bucket of hash bits `x`, among `in_use`: the low
    /// bits below `2 base`, less `base` where that bucket is not split
    /// yet (linear hashing's address).
    #[inline(always)]
    fn addr(&self, x: u64) -> usize {
        let b = x as usize & self.wide_mask;
        // Without a branch: which half a hash falls in is a coin toss
        // (LLVM made an `if`, a mask and a sign shift each a branch).
        std::hint::select_unpredictable(b >= self.in_use, b.wrapping_sub(self.base), b)
    }

    /// Sets the buckets in use: `base` unsplit, `split` of them split.
    fn set_in_use(&mut self, base: usize, split: usize) {
        self.base = base;
        self.wide_mask = 2 * base - 1;
        self.in_use = base + split;
    }

    /// Splits one bucket if the entries average more than
    /// [`GROW_AT`] a bucket in use and the array has room: bucket
    /// `in_use - base` becomes two, it and `in_use`, and its entries that
    /// no longer address it move to the new one (which is empty: at most
    /// the eight fit).
    fn grow(&mut self) {
        let (base, b) = (self.base, self.in_use - self.base);
        if self.count < GROW_AT * self.in_use || self.in_use >= self.buckets.len() {
            return;
        }
        self.set_in_use(base, b + 1);
        for w in 0..WAYS {
            if self.buckets[b].tag(w) == 0 {
                continue;
            }
            let s = self.buckets[b].at[w];
            let h = self.hash(&self.entries[s as usize].key);
            // The entry was here by one of its choices; with the split
            // that one is `b` still, or else `b + base`.
            if self.buckets(h).contains(&b) {
                continue;
            }
            let tag = self.buckets[b].tag(w);
            self.buckets[b].set_tag(w, 0);
            let to = &mut self.buckets[b + base];
            to.set_tag(w, tag);
            to.at[w] = s;
        }
        if b + 1 == base {
            // Every bucket split: the same addresses, as `2 base` unsplit.
            self.set_in_use(2 * base, 0);
        }
    }

    #[inline(always)]
    fn tag(h: u64) -> u16 {
        (h >> 48) as u16 | 1
    }

    /// Brings the key's first bucket towards the cache (where its entry
    /// is, unless that bucket was full when it went in); returns that
    /// bucket, for [`Table::prefetch_entry`] (the table does not
    /// change between the two).
    #[inline(always)]
    pub fn prefetch(&self, h: u64) -> u32 {
        let b = self.addr(h);
        pages::prefetch_ptr(self.buckets.as_ptr().wrapping_add(b));
        b as u32
    }

    /// Brings towards the cache the entry of the first way of the key's
    /// first bucket whose tag is the key's (hash `h`), or else its second
    /// bucket: with [`Table::prefetch`] a pass earlier, a burst's lookups
    /// wait for their misses together, not one after another. Returns
    /// that entry's slot ([`NO_SLOT`] if none), for [`Table::find_from`].
    /// `b` is the first bucket, as [`Table::prefetch`] gave it (not
    /// computed again).
    #[inline(always)]
    pub fn prefetch_entry(&self, h: u64, b: u32) -> u32 {
        // The second bucket's address only where it is wanted.
        let b = &self.buckets[b as usize];
        let m = b.tagged(Table::tag(h));
        if m != 0 {
            // A way (`tagged` sets 8 bits at most): masked, not checked.
            let s = b.at[(m.trailing_zeros() & 7) as usize];
            pages::prefetch_ptr(self.entries.as_ptr().wrapping_add(s as usize));
            s
        } else {
            let b1 = self.addr(h >> 24);
            pages::prefetch_ptr(self.buckets.as_ptr().wrapping_add(b1));
            NO_SLOT
        }
    }

    /// The slot holding `k` (hash `h`), if any.
    #[inline(always)]
    pub fn find(&self, h: u64, k: &Key) -> Option<usize> {
        let tag = Table::tag(h);
        for b in self.buckets(h) {
            let b = &self.buckets[b];
            let mut m = b.tagged(tag);
            while m != 0 {
                let s = b.at[(m.trailing_zeros() & 7) as usize] as usize;
                m &= m - 1;
                if self.entries[s].key.same(k) {
                    return Some(s);
                }
            }
        }
        None
    }

    /// [`Table::find`], trying first the slot [`Table::prefetch_entry`]
    /// gave a pass earlier: almost always the key's, which then costs no
    /// second reading of the bucket's tags. The slot may have been freed
    /// since (by a packet before in the same burst): freeing spoils its
    /// key ([`FREED`]), so the key's compare alone says whether it is
    /// still the connection, without the used bitmap's test (callgrind:
    /// 10 instructions a packet).
    #[inline(always)]
    pub fn find_from(&self, h: u64, k: &Key, hint: u32) -> Option<usize> {
        let s = hint as usize;
        if self.entries.get(s).is_some_and(|e| e.key.same(k)) {
            return Some(s);
        }
        self.find(h, k)
    }

    /// The entry in slot `s`.
    #[inline(always)]
    pub fn entry(&self, s: usize) -> &Entry {
        &self.entries[s]
    }

    /// The entry in slot `s`, if there is such a slot, to change.
    #[inline(always)]
    pub fn get_mut(&mut self, s: usize) -> Option<&mut Entry> {
        self.entries.get_mut(s)
    }

    /// The entry in slot `s`, to change.
    #[inline(always)]
    pub fn entry_mut(&mut self, s: usize) -> &mut Entry {
        &mut self.entries[s]
    }

    /// Whether slot `s` holds an entry.
    pub fn used(&self, s: usize) -> bool {
        self.used
            .get(s / 64)
            .is_some_and(|w| w >> (s % 64) & 1 != 0)
    }

    /// Frees slot `s`: its way is found again from its key's hash.
    pub fn free(&mut self, s: usize) {
        if self.used(s) {
            self.free_hashed(self.hash(&self.entries[s].key), s);
        }
    }

    /// Frees slot `s`, its key's hash `h` known (a lookup's).
    pub fn free_hashed(&mut self, h: u64, s: usize) {
        if !self.used(s) {
            return;
        }
        let tag = Table::tag(h);
        for b in self.buckets(h) {
            let mut m = self.buckets[b].tagged(tag);
            while m != 0 {
                let w = m.trailing_zeros() as usize;
                m &= m - 1;
                if self.buckets[b].at[w] as usize == s {
                    self.release(b, w);
                    return;
                }
            }
        }
        debug_assert!(false, "slot {s} in use but in no bucket");
    }

    /// Frees the entry of bucket `b`'s way `w` (in use).
    fn release(&mut self, b: usize, w: usize) {
        let s = self.buckets[b].at[w];
        self.entries[s as usize].key.w[4] = FREED;
        self.buckets[b].set_tag(w, 0);
        self.used[s as usize / 64] &= !(1 << (s % 64));
        self.free.push(s);
        self.count -= 1;
    }

    /// Takes a slot for `k` (hash `h`, not in the table): a free one
    /// while fewer than `max` are used, in the first bucket unless it is
    /// full (so that a lookup almost always reads one bucket), else an
    /// unassured entry's, the one nearest its end (the old entry's key
    /// is returned with it). `expire` is told of every entry found
    /// expired on the way (and freed). None: no room (both buckets hold
    /// only assured entries, or are full).
    pub fn insert(
        &mut self,
        h: u64,
        k: &Key,
        now: u32,
        mut expire: impl FnMut(&Entry),
    ) -> Option<(usize, Room)> {
        self.grow();
        let mut way = None;
        let mut victim: Option<(usize, usize, u32)> = None;
        for b in self.buckets(h) {
            for w in 0..WAYS {
                if self.buckets[b].tag(w) == 0 {
                    way = way.or(Some((b, w)));
                    continue;
                }
                let e = &self.entries[self.buckets[b].at[w] as usize];
                if e.expired(now) {
                    expire(e);
                    self.release(b, w);
                    way = way.or(Some((b, w)));
                    continue;
                }
                if let Some(left) = Table::droppable(e, now) {
                    if victim.is_none_or(|(_, _, l)| left < l) {
                        victim = Some((b, w, left));
                    }
                }
            }
            if way.is_some() && self.count < self.max {
                break;
            }
        }
        if way.is_none() && self.count < self.max {
            // Both full below `max` (the first bucket takes every entry it
            // can, so it fills sooner than an even split would): an entry
            // of either moves to its other bucket, as cuckoo hashing
            // does, before any is dropped.
            way = self.buckets(h).into_iter().find_map(|b| self.displace(b));
        }
        let (b, w, s, room) = match (way, victim) {
            (Some((b, w)), _) if self.count < self.max => {
                let s = self.free.pop()?;
                self.used[s as usize / 64] |= 1 << (s % 64);
                self.count += 1;
                (b, w, s, Room::Free)
            }
            // The victim's slot and way are the new entry's.
            (_, Some((b, w, _))) => {
                let s = self.buckets[b].at[w];
                (b, w, s, self.room_of(s))
            }
            // Full, a way free but no victim in either bucket: one of a
            // few buckets beyond gives up its entry's slot (its way
            // freed), so that a bucket left empty as a small table filled
            // does not refuse every key whose both choices it is.
            (Some((b, w)), None) => {
                let (vb, vw) = self.victim_beyond(b, now)?;
                let s = self.buckets[vb].at[vw];
                self.buckets[vb].set_tag(vw, 0);
                (b, w, s, self.room_of(s))
            }
            _ => return None,
        };
        let bucket = &mut self.buckets[b];
        bucket.set_tag(w, Table::tag(h));
        bucket.at[w] = s;
        self.entries[s as usize] = Entry {
            key: *k,
            ..Entry::default()
        };
        Some((s as usize, room))
    }

    /// How long entry `e` has left if it may be dropped early to make
    /// room (`None`: it may not). Neither assured nor still undecided: in
    /// Linux an unconfirmed connection is not in the table to be dropped,
    /// and dropping it here would lose a packet of this very burst's
    /// connection without a trace. A refused connection's entry goes
    /// before any connection (0 left).
    fn droppable(e: &Entry, now: u32) -> Option<u32> {
        if e.flags & flag::ASSURED != 0 || e.state & UNCONFIRMED != 0 || e.expired(now) {
            return None;
        }
        Some(if e.state & REFUSED != 0 {
            0
        } else {
            e.deadline.wrapping_sub(now)
        })
    }

    /// What dropping the entry in slot `s` makes room from.
    fn room_of(&self, s: u32) -> Room {
        let e = &self.entries[s as usize];
        if e.state & REFUSED != 0 {
            Room::Refused
        } else {
            Room::EarlyDrop(e.key)
        }
    }

    /// The droppable entry nearest its end among the [`VICTIM_SCAN`]
    /// buckets in use after `b`: its bucket and way.
    fn victim_beyond(&self, b: usize, now: u32) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize, u32)> = None;
        for d in 1..=VICTIM_SCAN.min(self.in_use - 1) {
            let vb = (b + d) % self.in_use;
            for w in 0..WAYS {
                if self.buckets[vb].tag(w) == 0 {
                    continue;
                }
                let e = &self.entries[self.buckets[vb].at[w] as usize];
                if let Some(left) = Table::droppable(e, now) {
                    if best.is_none_or(|(_, _, l)| left < l) {
                        best = Some((vb, w, left));
                    }
                }
            }
        }
        best.map(|(vb, w, _)| (vb, w))
    }

    /// Moves an entry of full bucket `b` to its other bucket, if that one
    /// has a free way; returns the way freed in `b`.
    fn displace(&mut self, b: usize) -> Option<(usize, usize)> {
        for w in 0..WAYS {
            let s = self.buckets[b].at[w];
            let h = self.hash(&self.entries[s as usize].key);
            let alt = match self.buckets(h) {
                [x, y] if x == b => y,
                [x, _] => x,
            };
            if alt == b {
                continue;
            }
            if let Some(w2) = (0..WAYS).find(|&w2| self.buckets[alt].tag(w2) == 0) {
                let to = &mut self.buckets[alt];
                to.set_tag(w2, Table::tag(h));
                to.at[w2] = s;
                self.buckets[b].set_tag(w, 0);
                return Some((b, w));
            }
        }
        None
    }

    /// Frees the expired entries among at least `n` slots from
    /// `*cursor` on (which moves on, round the table), telling `expire`
    /// of each. Whole words of the used bitmap, 64 slots each: a word of
    /// free slots costs a load, and only the slots in use are read
    /// (`examples/turns`, a few thousand connections in a table for a
    /// million: slot by slot, 64 a turn took 8.6 instructions a packet).
    pub fn sweep(
        &mut self,
        cursor: &mut usize,
        n: usize,
        now: u32,
        mut expire: impl FnMut(&Entry),
    ) {
        let words = self.used.len();
        for _ in 0..n.div_ceil(64).min(words) {
            let w = (*cursor / 64) % words;
            *cursor = (w + 1) * 64;
            let mut bits = self.used[w];
            while bits != 0 {
                let s = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if self.entries[s].expired(now) {
                    expire(&self.entries[s]);
                    self.free(s);
                }
            }
        }
    }

    /// The slots in use, in table order.
    pub fn used_slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.entries.len()).filter(|&s| self.used(s))
    }

    /// Frees every entry.
    pub fn clear(&mut self) {
        self.buckets.fill(Bucket::default());
        self.set_in_use(self.buckets.len().min(FIRST_BUCKETS), 0);
        self.used.fill(0);
        self.free.clear();
        self.free.extend((0..self.entries.len() as u32).rev());
        self.count = 0;
    }

    /// Forgets every stored decision (the epoch counter wrapped).
    pub fn forget_decisions(&mut self) {
        for e in self.entries.iter_mut() {
            e.flags &= !(flag::DECIDED0 | flag::DECIDED1);
        }
    }
}
