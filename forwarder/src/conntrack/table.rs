//! The connections of one worker: a fixed table allocated once, of
//! 8-way buckets with two choices, tags apart from the entries (a lookup
//! reads its bucket's 16 bytes of tags, then only the entries whose tag
//! matches), one cache line an entry. Nothing here allocates after
//! [`Table::new`], and nothing frees memory: an entry goes by its tag
//! being cleared, in the table of the one worker that owns it.

use super::key::Key;
use crate::decision::Decision;

/// Ways per bucket.
pub const WAYS: usize = 8;

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
}

/// The table.
pub struct Table {
    /// Per bucket its ways' tags, 16 bits each, way 0 in the low bits of
    /// the first word (compared four at a time: [`crate::swar`]).
    tags: Vec<[u64; 2]>,
    entries: Vec<Entry>,
    mask: usize,
    seed: u64,
    /// Entries in use.
    pub count: usize,
    /// Entries allowed.
    pub max: usize,
}

impl Table {
    /// A table for `max` entries (about twice as many slots, so that two
    /// choices of 8 ways almost never find both buckets full below it).
    pub fn new(max: usize, seed: u64) -> Table {
        let buckets = (max.max(1) * 2).div_ceil(WAYS).next_power_of_two();
        Table {
            tags: vec![[0; 2]; buckets],
            entries: vec![Entry::default(); buckets * WAYS],
            mask: buckets - 1,
            seed: seed | 1,
            count: 0,
            max,
        }
    }

    /// Bytes the table holds.
    pub fn bytes(&self) -> usize {
        self.tags.len() * std::mem::size_of::<[u64; 2]>()
            + self.entries.len() * std::mem::size_of::<Entry>()
    }

    /// Slots in the table.
    pub fn slots(&self) -> usize {
        self.entries.len()
    }

    /// The key's hash: a multiply-xorshift over its words, keyed per
    /// process (an attacker who cannot guess it cannot aim at a bucket).
    #[inline(always)]
    pub fn hash(&self, k: &Key) -> u64 {
        let mut h = self.seed;
        for w in k.w {
            h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            h ^= h >> 29;
        }
        h
    }

    #[inline(always)]
    fn buckets(&self, h: u64) -> [usize; 2] {
        [h as usize & self.mask, (h >> 24) as usize & self.mask]
    }

    #[inline(always)]
    fn tag(h: u64) -> u16 {
        (h >> 48) as u16 | 1
    }

    /// Brings the tags of the key's two buckets towards the cache.
    #[inline(always)]
    pub fn prefetch(&self, h: u64) {
        for b in self.buckets(h) {
            routecache::pages::prefetch_ptr(self.tags.as_ptr().wrapping_add(b));
        }
    }

    /// The ways of bucket `b` whose tag is `tag`, a bit each.
    #[inline(always)]
    fn tagged(&self, b: usize, tag: u16) -> u32 {
        let t = &self.tags[b];
        crate::swar::lanes_equal(t[0], tag) | crate::swar::lanes_equal(t[1], tag) << 4
    }

    /// The tag of slot `s` (0: free).
    #[inline(always)]
    fn tag_at(&self, s: usize) -> u16 {
        (self.tags[s / WAYS][s % WAYS / 4] >> (16 * (s % 4))) as u16
    }

    /// Sets the tag of slot `s`.
    #[inline(always)]
    fn set_tag(&mut self, s: usize, tag: u16) {
        let w = &mut self.tags[s / WAYS][s % WAYS / 4];
        let at = 16 * (s % 4);
        *w = *w & !(0xffff << at) | (tag as u64) << at;
    }

    /// Brings towards the cache the entry of the first slot whose tag is
    /// the key's (hash `h`), in either bucket (an entry goes to the
    /// emptier one: half are in the second): with [`Table::prefetch`] a
    /// pass earlier, a burst's lookups wait for their misses together,
    /// not one after another.
    #[inline(always)]
    pub fn prefetch_entry(&self, h: u64) {
        let tag = Table::tag(h);
        for b in self.buckets(h) {
            let m = self.tagged(b, tag);
            if m != 0 {
                let s = b * WAYS + m.trailing_zeros() as usize;
                routecache::pages::prefetch_ptr(self.entries.as_ptr().wrapping_add(s));
                return;
            }
        }
    }

    /// The slot holding `k` (hash `h`), if any.
    #[inline(always)]
    pub fn find(&self, h: u64, k: &Key) -> Option<usize> {
        let tag = Table::tag(h);
        for b in self.buckets(h) {
            let mut m = self.tagged(b, tag);
            while m != 0 {
                let s = b * WAYS + m.trailing_zeros() as usize;
                m &= m - 1;
                if self.entries[s].key.same(k) {
                    return Some(s);
                }
            }
        }
        None
    }

    /// The entry in slot `s`.
    #[inline(always)]
    pub fn entry(&self, s: usize) -> &Entry {
        &self.entries[s]
    }

    /// The entry in slot `s`, to change.
    #[inline(always)]
    pub fn entry_mut(&mut self, s: usize) -> &mut Entry {
        &mut self.entries[s]
    }

    /// Whether slot `s` holds an entry.
    pub fn used(&self, s: usize) -> bool {
        self.tag_at(s) != 0
    }

    /// Frees slot `s`.
    pub fn free(&mut self, s: usize) {
        if self.tag_at(s) != 0 {
            self.set_tag(s, 0);
            self.count -= 1;
        }
    }

    /// Takes a slot for `k` (hash `h`, not in the table): a free one
    /// while fewer than `max` are used, else an unassured entry's, the
    /// one nearest its end (the old entry's key is returned with it).
    /// `expire` is told of every entry found expired on the way (and
    /// freed). None: no room (both buckets hold only assured entries, or
    /// are full).
    pub fn insert(
        &mut self,
        h: u64,
        k: &Key,
        now: u32,
        mut expire: impl FnMut(&Entry),
    ) -> Option<(usize, Room)> {
        let bs = self.buckets(h);
        // A free slot in the emptier bucket (two choices balance the
        // buckets' loads only if the new entry goes where there is more
        // room).
        let mut free = None;
        let mut most = 0;
        let mut victim: Option<(usize, u32)> = None;
        for b in bs {
            let mut first = None;
            let mut n = 0;
            for w in 0..WAYS {
                let s = b * WAYS + w;
                if self.tag_at(s) == 0 {
                    first = first.or(Some(s));
                    n += 1;
                    continue;
                }
                let e = &self.entries[s];
                if e.expired(now) {
                    expire(e);
                    self.tags[b][w] = 0;
                    self.count -= 1;
                    first = first.or(Some(s));
                    n += 1;
                    continue;
                }
                // Neither assured nor still undecided: in Linux an
                // unconfirmed connection is not in the table to be
                // dropped, and dropping it here would lose a packet of
                // this very burst's connection without a trace.
                if e.flags & flag::ASSURED == 0 && e.state & UNCONFIRMED == 0 {
                    let left = e.deadline.wrapping_sub(now);
                    if victim.is_none_or(|(_, l)| left < l) {
                        victim = Some((s, left));
                    }
                }
            }
            if n > most {
                (free, most) = (first, n);
            }
        }
        let (s, room) = match (free, victim) {
            (Some(s), _) if self.count < self.max => (s, Room::Free),
            (_, Some((s, _))) => {
                let old = self.entries[s].key;
                self.count -= 1;
                (s, Room::EarlyDrop(old))
            }
            _ => return None,
        };
        self.set_tag(s, Table::tag(h));
        self.count += 1;
        self.entries[s] = Entry {
            key: *k,
            ..Entry::default()
        };
        Some((s, room))
    }

    /// Frees the expired entries of `n` buckets from `*cursor` on (which
    /// moves on), telling `expire` of each.
    pub fn sweep(
        &mut self,
        cursor: &mut usize,
        n: usize,
        now: u32,
        mut expire: impl FnMut(&Entry),
    ) {
        for _ in 0..n {
            let b = *cursor & self.mask;
            *cursor = cursor.wrapping_add(1);
            for w in 0..WAYS {
                let s = b * WAYS + w;
                if self.tag_at(s) != 0 && self.entries[s].expired(now) {
                    expire(&self.entries[s]);
                    self.set_tag(s, 0);
                    self.count -= 1;
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
        for t in &mut self.tags {
            *t = [0; 2];
        }
        self.count = 0;
    }

    /// Forgets every stored decision (the epoch counter wrapped).
    pub fn forget_decisions(&mut self) {
        for e in &mut self.entries {
            e.flags &= !(flag::DECIDED0 | flag::DECIDED1);
        }
    }
}
