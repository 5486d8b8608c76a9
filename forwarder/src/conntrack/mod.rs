//! Connection tracking on the data path, with Linux's model: a packet
//! belongs to a connection (one entry for both directions), TCP follows
//! the handshake and the teardown ([`tcp`]), UDP and ICMP queries become
//! established once answered, an ICMP error quoting a tracked connection
//! is related, and what fits no connection and cannot start one is
//! invalid. The sets read the outcome as `ct state`.
//!
//! **Each worker has its own table** (no lock, no atomic, no sharing):
//! both directions of a connection must reach the same worker. The
//! drivers' steering does that where it is symmetric: af_packet's
//! `fanout = "hash"` (the kernel's symmetric flow hash), the synthetic
//! generator (each queue its own flows); AF_XDP and DPDK with several
//! workers need the NIC's RSS to be symmetric (a key such as `6d5a`
//! repeated; `ethtool -X`), or one worker. See docs/conntrack.md.
//!
//! **A new connection is entered only when its first packet is
//! forwarded** (Linux confirms a connection as its packet leaves): a
//! packet the sets drop leaves no connection, only, for a while, a
//! refused entry holding its decision (`refused.rs`). A packet of a
//! known connection moves its state before the sets see it, as Linux's
//! conntrack hook runs before filtering.
//!
//! **Entries expire lazily and by a sweep**: a lookup that finds an
//! expired entry frees it, an insert frees the expired entries of the
//! buckets it looks at, and every turn the worker sweeps a few slots.
//! Only the owning worker frees.
//!
//! **One lookup for conntrack and the flow cache**: with conntrack on, the
//! flow cache is off and each entry keeps, per direction, the decision the
//! sets and routes took (and the snapshot epoch it was taken in). A
//! packet whose direction has a current decision skips the sets and the
//! FIB. A decision is dropped when the direction's `ct state` changes (the
//! first reply makes the original direction established), and no
//! decision is kept where sets match Ethernet addresses (not part of the
//! key).

mod established;
pub mod key;
mod refused;
pub mod table;
pub mod tcp;
#[cfg(test)]
mod tests;
mod timeouts;
mod view;

use crate::decision::Decision;
use key::{Key, Kind, Seen, View};
use table::{flag, Entry, Room, Table, CHALLENGE, LAST_SYN, REFUSED, TCP_STATE, UNCONFIRMED};
pub use timeouts::ticks;
use timeouts::Timeouts;
pub use view::{CtStats, CtView};

/// `ct state` bits, as nft numbers them.
pub mod state {
    /// Fits no connection and cannot start one.
    pub const INVALID: u8 = 1;
    /// A packet of a connection that has seen both directions (or a
    /// reply).
    pub const ESTABLISHED: u8 = 2;
    /// An ICMP error quoting a tracked connection.
    pub const RELATED: u8 = 4;
    /// The original direction of a connection not yet answered.
    pub const NEW: u8 = 8;
    /// Not tracked.
    pub const UNTRACKED: u8 = 64;
}

/// The seed of [`owner`]'s hash: one for the process, so that every
/// worker, and every snapshot, names the same owner.
static OWNER_SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// Which of `workers` workers tracks the connection a packet seen as
/// `seen` belongs to (an ICMP error: the one it quotes); `None` for a
/// packet of no connection (judged where it arrives). With several
/// workers a packet that arrives at another is handed to this one, so
/// both directions meet one table whatever the ports' steering.
#[inline]
pub fn owner(seen: &Seen, workers: usize) -> Option<usize> {
    let k = seen.key()?;
    let seed = *OWNER_SEED.get_or_init(|| {
        let s = std::collections::hash_map::RandomState::new();
        std::hash::BuildHasher::hash_one(&s, 0x006f_776e_6572_u64)
    });
    let mut h = seed;
    for w in k.w {
        h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
    }
    // The final mix (MurmurHash3's): without it, keys that differ in a
    // port's low bits alone (a client's consecutive ports) moved the top
    // bits by under 1 % each, and went to one worker.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    Some((((h >> 32) * workers as u64) >> 32) as usize)
}

/// Protocols counted apart.
pub const PROTOS: [&str; 4] = ["tcp", "udp", "icmp", "other"];

fn proto_index(p: u8) -> usize {
    match p {
        crate::wire::proto::TCP => 0,
        crate::wire::proto::UDP => 1,
        crate::wire::proto::ICMP | crate::wire::proto::ICMPV6 => 2,
        _ => 3,
    }
}

/// What tracking found for one packet, kept until its decision is known
/// ([`Tracker::commit`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tracked {
    /// Its `ct state` ([`state`]).
    pub state: u8,
    /// Its connection's slot, when it has one (`u32::MAX`: none).
    pub slot: u32,
    /// Its direction: 0 original, 1 reply.
    pub dir: u8,
    /// Whether its forwarding enters a new connection.
    pub open: bool,
    /// Whether it met a refused connection's entry ([`table::REFUSED`])
    /// and took no new slot: if its stored decision is not taken, it
    /// must be [`Tracker::reopen`]ed before it is classified.
    pub refused: bool,
}

const NO_SLOT: u32 = u32::MAX;

impl Tracked {
    /// A packet of no connection, `state`, in direction `dir`.
    const fn unattached(state: u8, dir: u8) -> Tracked {
        Tracked {
            state,
            slot: NO_SLOT,
            dir,
            open: false,
            refused: false,
        }
    }

    /// A packet that opens a connection in `slot` ([`NO_SLOT`]: it found
    /// no room).
    const fn opening(slot: u32) -> Tracked {
        Tracked {
            state: state::NEW,
            slot,
            dir: 0,
            open: true,
            refused: false,
        }
    }
}

/// One worker's connection tracking.
pub struct Tracker {
    table: Table,
    timeouts: Timeouts,
    acct: bool,
    /// Per slot, packets and bytes each way, when counted.
    counts: Vec<[u64; 4]>,
    stats: CtStats,
    /// Entries held by refused connections ([`table::REFUSED`]): in the
    /// table's count, not in the connections'.
    refused: usize,
    /// The snapshot epoch decisions are stored in.
    epoch: u16,
    /// Whether decisions are stored at all (no set reads what the key
    /// lacks).
    pub caching: bool,
    now: u32,
    cursor: usize,
    /// The settings it was built for.
    pub config: config::Conntrack,
}

impl Tracker {
    /// A tracker for `max` connections with the settings `c`.
    pub fn new(c: &config::Conntrack, max: usize) -> Tracker {
        let seed = std::collections::hash_map::RandomState::new();
        let seed = std::hash::BuildHasher::hash_one(&seed, 0x6374_u64);
        Tracker::seeded(c, max, seed)
    }

    /// [`Tracker::new`] with its table's hash keyed by `seed` (tests:
    /// two trackers alike slot for slot).
    fn seeded(c: &config::Conntrack, max: usize, seed: u64) -> Tracker {
        let table = Table::new(max, seed);
        let slots = table.slots();
        Tracker {
            table,
            timeouts: Timeouts::of(&c.timeouts),
            acct: c.acct,
            counts: if c.acct {
                vec![[0; 4]; slots]
            } else {
                Vec::new()
            },
            stats: CtStats::default(),
            refused: 0,
            epoch: 1,
            caching: true,
            now: ticks(),
            cursor: 0,
            config: *c,
        }
    }

    /// Connections it holds at most.
    pub fn max(&self) -> usize {
        self.table.max
    }

    /// Bytes its tables hold.
    pub fn bytes(&self) -> usize {
        self.table.bytes() + self.counts.len() * 32
    }

    /// Its counters.
    pub fn stats(&self) -> CtStats {
        CtStats {
            entries: self.table.count.saturating_sub(self.refused) as u64,
            refused: self.refused as u64,
            ..self.stats
        }
    }

    /// A new snapshot: the stored decisions are stale.
    pub fn new_epoch(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.table.forget_decisions();
            self.epoch = 1;
        }
    }

    /// The time this burst is judged at (one clock read a burst).
    #[inline]
    pub fn set_now(&mut self, now: u32) {
        self.now = now;
    }

    fn gone(stats: &mut CtStats, e: &Entry) {
        stats.by_proto[proto_index(e.key.proto())] -= 1;
    }

    /// Entry `e` expired and was freed: a connection counted as expired,
    /// or a refused one's entry.
    fn expired(stats: &mut CtStats, refused: &mut usize, e: &Entry) {
        if e.state & REFUSED != 0 {
            *refused -= 1;
        } else {
            stats.expired += 1;
            Tracker::gone(stats, e);
        }
    }

    /// Frees the expired entries among a few slots (once a turn).
    pub fn sweep(&mut self, slots: usize) {
        let now = ticks();
        let (st, refused) = (&mut self.stats, &mut self.refused);
        self.table.sweep(&mut self.cursor, slots, now, |e| {
            Tracker::expired(st, refused, e)
        });
    }

    /// Frees every entry.
    pub fn flush(&mut self) {
        self.table.clear();
        self.refused = 0;
        self.stats.by_proto = [0; 4];
    }

    /// Tracks packet `p` of `frame`: its `ct state`, its connection's
    /// state moved on, and the decision stored for its direction, if any
    /// and `cached` (decisions usable at all in this burst).
    #[inline]
    pub fn track(
        &mut self,
        p: &crate::wire::Parsed,
        frame: &[u8],
        cached: bool,
    ) -> (Tracked, Option<Decision>) {
        let seen = key::seen(p, frame);
        let h = self.hash(&seen);
        self.track_seen(&seen, h, table::NO_SLOT, frame.len(), cached)
    }

    /// The table's hash of the connection a packet seen as `seen` belongs
    /// to (for a packet of none, of an all-zero key).
    #[inline(always)]
    pub fn hash(&self, seen: &Seen) -> u64 {
        // Without a test: the key of a packet of no connection is all
        // zero, its hash as good as any.
        self.table.hash(&seen.key)
    }

    /// Brings the tags of hash `h`'s bucket towards the cache (a burst's
    /// first pass); returns the bucket, for [`Tracker::prefetch_entry`].
    #[inline(always)]
    pub fn prefetch_tags(&self, h: u64) -> u32 {
        self.table.prefetch(h)
    }

    /// Brings the entry hash `h` likely names towards the cache (a
    /// burst's second pass), `b` its first bucket
    /// ([`Tracker::prefetch_tags`]); returns its slot.
    #[inline(always)]
    pub fn prefetch_entry(&self, h: u64, b: u32) -> u32 {
        self.table.prefetch_entry(h, b)
    }

    /// [`Tracker::track`] of a packet already [`key::seen`], its hash
    /// `h` ([`Tracker::hash`]) and the slot [`Tracker::prefetch_entry`]
    /// gave for it ([`table::NO_SLOT`] if not called): the general path,
    /// through the protocols' state machines. The pipeline tries the
    /// established path ([`Tracker::established`]) first.
    #[inline]
    pub fn track_seen(
        &mut self,
        seen: &Seen,
        h: u64,
        hint: u32,
        len: usize,
        cached: bool,
    ) -> (Tracked, Option<Decision>) {
        let mut t = Tracked::unattached(state::INVALID, 0);
        // By reference: the key copied out of `seen` cost 3 instructions
        // a packet.
        let key = &seen.key;
        match seen.view() {
            View::Invalid => self.stats.invalid += 1,
            View::Untracked => t.state = state::UNTRACKED,
            View::Error { to_source } => {
                match self.live(h, key, hint) {
                    // The error goes back to the quoted packet's sender.
                    Some(s)
                        if to_source
                            && self.table.entry(s).state & (UNCONFIRMED | REFUSED) == 0 =>
                    {
                        t.state = state::RELATED
                    }
                    _ => self.stats.invalid += 1,
                }
            }
            View::Packet { rev, kind } => {
                let Some(s) = self.live(h, key, hint) else {
                    if opens(kind) {
                        return (self.open(h, key, rev, kind, len), None);
                    }
                    self.stats.invalid += 1;
                    return (t, None);
                };
                return self.update(s, rev, kind, len, cached);
            }
        }
        (t, None)
    }

    /// The slot of `key`'s entry unless it has expired (then it is
    /// freed).
    #[inline(always)]
    fn live(&mut self, h: u64, key: &Key, hint: u32) -> Option<usize> {
        let s = self.table.find_from(h, key, hint)?;
        if self.table.entry(s).expired(self.now) {
            let e = *self.table.entry(s);
            self.table.free_hashed(h, s);
            Tracker::expired(&mut self.stats, &mut self.refused, &e);
            return None;
        }
        Some(s)
    }

    /// A packet of the connection in slot `s`.
    #[inline(always)]
    fn update(
        &mut self,
        s: usize,
        rev: bool,
        kind: Kind,
        len: usize,
        cached: bool,
    ) -> (Tracked, Option<Decision>) {
        let now = self.now;
        let to = &self.timeouts;
        let e = self.table.entry_mut(s);
        if e.state & REFUSED != 0 {
            return self.refused_hit(s, rev, kind, len, cached);
        }
        let dir = (rev != (e.flags & flag::ORIG_HI != 0)) as u8;
        if e.state & UNCONFIRMED != 0 && dir == 1 {
            // An answer to a packet of this very burst, not yet decided:
            // Linux would not have the connection yet. The answer may not
            // open one of its own (the key is the same), and changes
            // nothing.
            let state = if opens(kind) {
                state::NEW
            } else {
                self.stats.invalid += 1;
                state::INVALID
            };
            return (Tracked::unattached(state, dir), None);
        }
        let mut t = Tracked {
            state: if dir == 1 || e.flags & flag::SEEN_REPLY != 0 {
                state::ESTABLISHED
            } else {
                state::NEW
            },
            slot: s as u32,
            dir,
            open: false,
            refused: false,
        };
        let seen_reply = e.flags & flag::SEEN_REPLY != 0;
        let timeout = match kind {
            Kind::Tcp(flags) => {
                let class = tcp::class(flags);
                let closing = e.flags & flag::CLOSING != 0;
                let last_reply = e.flags & flag::LAST_REPLY != 0;
                let last = tcp::Last {
                    rst_here: e.flags & flag::LAST_RST != 0 && last_reply == (dir == 1),
                    syn_there: e.state & LAST_SYN != 0 && last_reply != (dir == 1),
                    challenge: e.state & CHALLENGE != 0,
                };
                let unconfirmed = e.state & UNCONFIRMED;
                let old = e.state & TCP_STATE;
                // What Linux keeps of the last segment taken (its
                // `last_index` and `last_dir`).
                let note_last = |e: &mut Entry| {
                    e.flags &= !(flag::LAST_RST | flag::LAST_REPLY);
                    e.state &= !(LAST_SYN | CHALLENGE);
                    if dir == 1 {
                        e.flags |= flag::LAST_REPLY;
                    }
                    match class {
                        tcp::Class::Rst => e.flags |= flag::LAST_RST,
                        tcp::Class::Syn => e.state |= LAST_SYN,
                        _ => {}
                    }
                };
                match tcp::step(old, dir == 1, class, closing, last) {
                    tcp::Step::Invalid => {
                        self.stats.invalid += 1;
                        t.state = state::INVALID;
                        t.slot = NO_SLOT;
                        return (t, None);
                    }
                    tcp::Step::Reopen => {
                        // The old connection goes; this SYN opens anew.
                        let gone = *e;
                        self.table.free(s);
                        Tracker::gone(&mut self.stats, &gone);
                        let h = self.table.hash(&gone.key);
                        return (self.open(h, &gone.key, rev, kind, len), None);
                    }
                    tcp::Step::Skip => {
                        e.state &= !CHALLENGE;
                        None
                    }
                    tcp::Step::Ignore => {
                        note_last(e);
                        if class == tcp::Class::Syn && old == tcp::LAST_ACK {
                            e.state |= CHALLENGE;
                        }
                        None
                    }
                    tcp::Step::To(n) => {
                        e.state = n | unconfirmed;
                        if n == tcp::FIN_WAIT {
                            e.flags |= flag::CLOSING;
                        }
                        note_last(e);
                        if seen_reply
                            && (old == tcp::SYN_RECV || old == tcp::ESTABLISHED)
                            && n == tcp::ESTABLISHED
                        {
                            e.flags |= flag::ASSURED;
                        }
                        if !seen_reply && class == tcp::Class::Rst {
                            // A reset before any answer (a refused
                            // connection): Linux deletes it at once.
                            let gone = *e;
                            self.table.free(s);
                            Tracker::gone(&mut self.stats, &gone);
                            t.slot = NO_SLOT;
                            return (t, None);
                        }
                        Some(to.tcp[n as usize])
                    }
                }
            }
            Kind::Udp => Some(if seen_reply {
                e.flags |= flag::ASSURED;
                to.udp_stream
            } else {
                to.udp
            }),
            // An answer is always the reply direction: the key holds
            // which end asked, and only a request opens a connection.
            Kind::IcmpRequest | Kind::IcmpReply => Some(to.icmp),
            Kind::Other => Some(to.generic),
        };
        if let Some(tm) = timeout {
            e.deadline = now.wrapping_add(tm);
        }
        if dir == 1 && !seen_reply {
            // The first answer: the original direction is established
            // from now on, and what was decided for it as new is stale.
            e.flags = (e.flags | flag::SEEN_REPLY) & !flag::DECIDED0;
        }
        let decided = if dir == 0 {
            flag::DECIDED0
        } else {
            flag::DECIDED1
        };
        let d = (cached && e.flags & decided != 0 && e.epoch == self.epoch)
            .then_some(e.decision[dir as usize]);
        if self.acct {
            self.count(s, dir, len);
        }
        (t, d)
    }

    /// Counts a packet of `len` bytes in direction `dir` of the
    /// connection in slot `s` (where connections count them).
    #[inline(always)]
    fn count(&mut self, s: usize, dir: u8, len: usize) {
        let c = &mut self.counts[s];
        c[2 * dir as usize] += 1;
        c[2 * dir as usize + 1] += len as u64;
    }

    /// A packet that opens connection `key`: its entry goes in now, as
    /// Linux allocates a connection before the sets run, so that the next
    /// packets of the burst meet it; it stays only if the packet is
    /// forwarded ([`Tracker::commit`]). No room (after dropping an
    /// unassured connection early): the packet is to be dropped.
    fn open(&mut self, h: u64, key: &Key, rev: bool, kind: Kind, len: usize) -> Tracked {
        let (st, refused) = (&mut self.stats, &mut self.refused);
        let Some((s, room)) = self
            .table
            .insert(h, key, self.now, |e| Tracker::expired(st, refused, e))
        else {
            self.stats.insert_failed += 1;
            return Tracked::opening(NO_SLOT);
        };
        match room {
            Room::Free => {}
            Room::EarlyDrop(old) => {
                self.stats.early_drop += 1;
                self.stats.by_proto[proto_index(old.proto())] -= 1;
            }
            Room::Refused => self.refused -= 1,
        }
        self.stats.by_proto[proto_index(key.proto())] += 1;
        self.init(s, rev, kind, len)
    }

    /// Slot `s` (its key in place, counted by protocol) made a new
    /// connection, opened by a packet of `kind` from the key's higher end
    /// when `rev`, not confirmed yet.
    fn init(&mut self, s: usize, rev: bool, kind: Kind, len: usize) -> Tracked {
        let to = &self.timeouts;
        let (state, timeout) = match kind {
            Kind::Tcp(flags) => {
                let s = tcp::open(tcp::class(flags)).unwrap_or(tcp::SYN_SENT);
                (s, to.tcp[s as usize])
            }
            Kind::Udp => (0, to.udp),
            Kind::IcmpRequest | Kind::IcmpReply => (0, to.icmp),
            Kind::Other => (0, to.generic),
        };
        let e = self.table.entry_mut(s);
        e.state = state | UNCONFIRMED;
        e.flags = if rev { flag::ORIG_HI } else { 0 };
        e.deadline = self.now.wrapping_add(timeout);
        if self.acct {
            self.counts[s] = [1, len as u64, 0, 0];
        }
        Tracked::opening(s as u32)
    }

    /// The packet tracked as `t` (seen as `seen`, its hash `h`) was decided `d` (its next hop or why it
    /// is dropped, and the sets' matches): the connection it opened stays
    /// if it is forwarded, goes if not; the decision is stored where it
    /// can be, unless `keep` is false (a counted element matched: its
    /// flow's packets must each go through the sets). False: it opened a connection that found no room, and is
    /// to be dropped (as Linux drops it).
    pub fn commit(&mut self, t: &Tracked, seen: &Seen, h: u64, d: Decision, keep: bool) -> bool {
        let forwarded = d.hop().is_ok();
        if t.open && t.slot == NO_SLOT {
            return !forwarded;
        }
        if t.slot == NO_SLOT || t.state == state::INVALID {
            return true;
        }
        let s = t.slot as usize;
        // The entry is still the packet's: a later packet of the burst may
        // have ended it (a reset), and its slot been taken since.
        let (View::Packet { .. }, key) = (seen.view(), &seen.key) else {
            return true;
        };
        if !self.table.used(s) || !self.table.entry(s).key.same(key) {
            return true;
        }
        if t.open {
            if !forwarded {
                // Not confirmed: as if never entered; its entry kept as
                // refused, with the decision, where one can be stored.
                let e = *self.table.entry(s);
                Tracker::gone(&mut self.stats, &e);
                if self.caching && keep {
                    self.refuse(s, d);
                } else {
                    self.table.free_hashed(h, s);
                }
                return true;
            }
            self.stats.created += 1;
            self.table.entry_mut(s).state &= !UNCONFIRMED;
        }
        if self.caching && keep {
            self.store(s, t.dir, d);
        }
        true
    }

    #[inline(always)]
    fn store(&mut self, s: usize, dir: u8, d: Decision) {
        let epoch = self.epoch;
        let e = self.table.entry_mut(s);
        if e.epoch != epoch {
            e.flags &= !(flag::DECIDED0 | flag::DECIDED1);
            e.epoch = epoch;
        }
        e.decision[dir as usize] = d;
        e.flags |= if dir == 0 {
            flag::DECIDED0
        } else {
            flag::DECIDED1
        };
    }

    /// The live connections, as `conntrack -L` lists them, of worker
    /// `worker`.
    pub fn list(&self, worker: usize) -> Vec<CtView> {
        let now = ticks();
        let mut out = Vec::new();
        for s in self.table.used_slots() {
            let e = self.table.entry(s);
            if e.expired(now) || e.state & REFUSED != 0 {
                continue;
            }
            out.push(self.view(e, s, now, worker));
        }
        out
    }

    fn view(&self, e: &Entry, s: usize, now: u32, worker: usize) -> CtView {
        let k = &e.key;
        let (lo, hi) = k.ends();
        let (a, b) = if e.flags & flag::ORIG_HI != 0 {
            (hi, lo)
        } else {
            (lo, hi)
        };
        let v6 = k.l3() == crate::wire::L3::V6;
        let addr = |x: u128| -> String {
            if v6 {
                std::net::Ipv6Addr::from(x).to_string()
            } else {
                std::net::Ipv4Addr::from(x as u32).to_string()
            }
        };
        let p = k.proto();
        let tuple = |from: (u128, u16), to: (u128, u16), answer: bool| {
            let mut t = format!("src={} dst={}", addr(from.0), addr(to.0));
            match p {
                crate::wire::proto::TCP | crate::wire::proto::UDP => {
                    t += &format!(" sport={} dport={}", from.1, to.1)
                }
                crate::wire::proto::ICMP | crate::wire::proto::ICMPV6 => {
                    let req = k.icmp_type();
                    let ty = if answer { answer_of(req) } else { req };
                    t += &format!(" type={ty} code=0 id={}", from.1)
                }
                _ => {}
            }
            t
        };
        // Whole seconds left, rounded down as Linux's listing does.
        let left = e.deadline.wrapping_sub(now).saturating_sub(1) as u64;
        CtView {
            proto: match p {
                crate::wire::proto::TCP => "tcp".into(),
                crate::wire::proto::UDP => "udp".into(),
                crate::wire::proto::ICMP => "icmp".into(),
                crate::wire::proto::ICMPV6 => "icmpv6".into(),
                _ => "unknown".into(),
            },
            protonum: p,
            timeout: (left << timeouts::TICK_SHIFT) / 1000,
            state: if p == crate::wire::proto::TCP {
                tcp::NAMES
                    .get((e.state & TCP_STATE) as usize)
                    .copied()
                    .unwrap_or("")
                    .into()
            } else {
                String::new()
            },
            original: tuple(a, b, false),
            reply: tuple(b, a, true),
            status: if e.flags & flag::SEEN_REPLY == 0 {
                "[UNREPLIED]".into()
            } else if e.flags & flag::ASSURED != 0 {
                "[ASSURED]".into()
            } else {
                String::new()
            },
            counters: self.acct.then(|| self.counts[s]),
            vrf: k.vrf(),
            worker,
        }
    }
}

/// The answer's type of an ICMP query of type `req`.
fn answer_of(req: u8) -> u8 {
    match req {
        8 => 0,
        128 => 129,
        139 => 140,
        t => t + 1,
    }
}

/// Whether a packet of `kind` with no connection may start one.
fn opens(kind: Kind) -> bool {
    match kind {
        Kind::Tcp(flags) => tcp::open(tcp::class(flags)).is_some(),
        Kind::IcmpReply => false,
        Kind::Udp | Kind::IcmpRequest | Kind::Other => true,
    }
}
