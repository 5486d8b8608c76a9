//! The connection tracking stage ([`crate::conntrack`]): each packet's
//! connection looked up and moved on, its `ct state` noted for the sets,
//! and the decision its connection keeps for its direction taken, if
//! any (then it skips the sets and the FIB, as a flow cache hit does).

use super::{Fate, Pipeline};
use crate::conntrack::{Tracked, Tracker};
use crate::port::Burst;
use crate::reason::DropReason;
use crate::tables::Tables;

/// Slots swept for expired connections a turn (one word of the used
/// bitmap: a table mostly free costs a load).
const SWEEP_SLOTS: usize = 64;

impl Pipeline {
    /// Takes up a snapshot's `[conntrack]`: the same settings keep the
    /// table (connections survive reloads) with its decisions made stale;
    /// other settings start a new one; off drops it.
    pub(super) fn adopt_conntrack(&mut self, tables: &Tables) {
        let c = tables.conntrack;
        if !c.enabled {
            self.conntrack = None;
            return;
        }
        let max = c.max.div_ceil(tables.conntrack_workers.max(1));
        match &mut self.conntrack {
            Some(t) if t.config == c && t.max() == max => t.new_epoch(),
            t => *t = Some(Tracker::new(&c, max)),
        }
        if let Some(t) = &mut self.conntrack {
            t.caching = !tables.reads_macs && !tables.reads_beyond_flow;
        }
    }

    /// Tracks every packet still going; returns how many are left for the
    /// sets and the FIB. With several workers, a packet whose connection
    /// another worker tracks ([`crate::conntrack::owner`]) is handed to
    /// it instead.
    #[inline(never)]
    pub(super) fn track(&mut self, burst: &Burst, n: usize) -> usize {
        // Taken out for the stage (the passes below also change the
        // pipeline's other state), put back at its end, as the `Option`
        // it is (unwrapped and wrapped again: callgrind, 1.7 instructions
        // a packet more). It is still copied out and back (440 bytes,
        // three `memcpy` a burst); boxed, it was not, but the passes had
        // a register less (3.6 instructions of `memcpy` less, 6 more in
        // the passes, slower).
        let mut held = self.conntrack.take();
        let Some(ct) = held.as_mut() else {
            return n;
        };
        // Bounded by the per-packet arrays' length, the loops below need
        // no index checks (callgrind: 4 % of a tracked packet's
        // instructions).
        let n = n.min(crate::port::MAX_BURST);
        ct.set_now(crate::conntrack::ticks());
        let cached = self.expired_at == 0 && ct.caching;
        let workers = self.router.as_ref().map_or(1, |r| r.workers());
        // Three passes, as the flow cache's: what each packet is, its
        // hash and its buckets' tags prefetched; then its entry
        // prefetched; then tracked. A burst's cache misses overlap.
        self.see(ct, burst, n, workers);
        if workers > 1 {
            self.send_handed();
        }
        self.prefetch_entries(ct, n);
        let left = self.track_burst(ct, burst, n, cached);
        self.conntrack = held;
        left
    }

    /// The first pass: what each packet still going is to connection
    /// tracking ([`crate::conntrack::key::seen_in`]), its hash, and its
    /// first bucket's tags prefetched; packets of another worker's
    /// connections handed off.
    #[inline(always)]
    fn see(&mut self, ct: &Tracker, burst: &Burst, n: usize, workers: usize) {
        // The loop twice, with and without handing off: one worker's
        // loop tests nothing for it.
        if workers > 1 {
            self.see_all::<true>(ct, burst, n, workers)
        } else {
            self.see_all::<false>(ct, burst, n, workers)
        }
    }

    /// [`Pipeline::see`]'s loop, handing packets off if `HANDING`.
    #[inline(always)]
    fn see_all<const HANDING: bool>(
        &mut self,
        ct: &Tracker,
        burst: &Burst,
        n: usize,
        workers: usize,
    ) {
        let n = n.min(crate::port::MAX_BURST);
        for i in 0..n {
            // What the explanation reads of a packet not tracked; the
            // third pass writes the others' (and `hand_off` those it
            // hands).
            if self.fate[i] != Fate::Go {
                self.tracked[i] = Tracked::default();
                self.ct_state[i] = 0;
                continue;
            }
            self.ct_seen[i] = crate::conntrack::key::seen_in(&self.parsed[i], || burst.frame(i));
            if HANDING {
                if let Some(o) = crate::conntrack::owner(&self.ct_seen[i], workers) {
                    if o != self.worker {
                        self.hand_off(burst, i, o);
                        continue;
                    }
                }
            }
            let h = ct.hash(&self.ct_seen[i]);
            // The bucket until the next pass, the slot after it.
            self.ct_hint[i] = ct.prefetch_tags(h);
            self.ct_hash[i] = h;
        }
    }

    /// The second pass: each packet's likely entry prefetched.
    #[inline(always)]
    fn prefetch_entries(&mut self, ct: &Tracker, n: usize) {
        let n = n.min(crate::port::MAX_BURST);
        for i in 0..n {
            if self.fate[i] == Fate::Go {
                self.ct_hint[i] = ct.prefetch_entry(self.ct_hash[i], self.ct_hint[i]);
            }
        }
    }

    /// The third pass: each packet tracked, and the decision its
    /// connection keeps taken; returns how many are left for the sets.
    #[inline(always)]
    fn track_burst(&mut self, ct: &mut Tracker, burst: &Burst, n: usize, cached: bool) -> usize {
        let n = n.min(crate::port::MAX_BURST);
        // The established path where a stored decision can be taken as
        // it is (bound to no port).
        let fast = cached && !self.bind_port;
        let mut left = 0;
        for i in 0..n {
            if self.fate[i] != Fate::Go {
                continue;
            }
            if fast {
                let len = || burst.frame_len(i);
                let mut t = Tracked::default();
                if let Some(d) = ct.established(&self.ct_seen[i], self.ct_hint[i], len, &mut t) {
                    // What is read of a packet that took a decision (see
                    // `tracked`): the rest is not stored.
                    self.ct_state[i] = t.state;
                    self.tracked[i].refused = t.refused;
                    self.take_decision(i, d);
                    continue;
                }
            }
            left += self.track_one(ct, burst, i, cached) as usize;
        }
        left
    }

    /// Packet `i` tracked by the general path; true if it is left for
    /// the sets. Out of line: inlined, its values spilled the
    /// established path's.
    #[inline(never)]
    fn track_one(&mut self, ct: &mut Tracker, burst: &Burst, i: usize, cached: bool) -> bool {
        let len = burst.frame_len(i);
        let (t, d) = ct.track_seen(
            &self.ct_seen[i],
            self.ct_hash[i],
            self.ct_hint[i],
            len,
            cached,
        );
        self.tracked[i] = t;
        self.ct_state[i] = t.state;
        match d {
            Some(d) if !self.bind_port => self.take_decision(i, d),
            // A decision bound to another port is none for this
            // packet (out of line: see `bound_decision`).
            Some(d) if self.bound_decision(i, d) => {}
            _ => {
                if t.refused {
                    // A refused flow's decision bound to another
                    // port: the packet opens the connection anew.
                    self.tracked[i] = ct.reopen(&t, &self.ct_seen[i], len);
                }
                self.pending[i] = true;
                return true;
            }
        }
        false
    }

    /// Packet `i` takes decision `d` if it is bound to the packet's port;
    /// false if not. Out of line: inlined, the test made every packet's
    /// tracking dearer where nothing is bound (callgrind: 3 % more
    /// instructions a packet, against 1.3 % so; the stage made generic
    /// over binding, inlined or not, cost 5-6 %).
    #[inline(never)]
    fn bound_decision(&mut self, i: usize, d: crate::decision::Decision) -> bool {
        match d.for_port(self.port_tag(i)) {
            Some(d) => {
                self.take_decision(i, d);
                true
            }
            None => false,
        }
    }

    /// Hands packet `i` to worker `to`, which tracks its connection.
    #[cold]
    #[inline(never)]
    fn hand_off(&mut self, burst: &Burst, i: usize, to: usize) {
        self.tracked[i] = Tracked::default();
        self.ct_state[i] = 0;
        let mut handed = false;
        if let (Some(r), Some(slot)) = (&self.router, self.handing.get_mut(to)) {
            if slot.is_none() {
                *slot = r.handoff.batch(self.rx_port);
            }
            if let Some(b) = slot {
                handed = b.push(burst.frame(i), i);
            }
        }
        self.fate[i] = Fate::Dropped(if handed {
            DropReason::HandedOff
        } else {
            DropReason::HandoffFull
        });
    }

    /// Queues the batches [`Pipeline::hand_off`] filled in this burst,
    /// one for each worker handed to; the packets of one that finds its
    /// queue full are dropped as `handoff_full` after all.
    fn send_handed(&mut self) {
        let Some(r) = &self.router else { return };
        for (to, slot) in self.handing.iter_mut().enumerate() {
            let Some(b) = slot.take() else { continue };
            if let Err(b) = r.handoff.send(to, b) {
                for i in b.indexes() {
                    if let Some(f) = self.fate.get_mut(i) {
                        *f = Fate::Dropped(DropReason::HandoffFull);
                    }
                }
                r.handoff.done(b);
            }
        }
    }

    /// Once a turn: a few slots swept for expired connections.
    pub fn conntrack_turn(&mut self) {
        if let Some(ct) = self.conntrack.as_mut() {
            ct.sweep(SWEEP_SLOTS);
        }
    }

    /// Connection tracking's counters, when on.
    pub fn conntrack_stats(&self) -> Option<crate::conntrack::CtStats> {
        self.conntrack.as_ref().map(|t| t.stats())
    }

    /// Connection tracking, when on (listing, flushing).
    pub fn conntrack_mut(&mut self) -> Option<&mut Tracker> {
        self.conntrack.as_mut()
    }

    /// Connection tracking, when on.
    pub fn conntrack(&self) -> Option<&Tracker> {
        self.conntrack.as_ref()
    }

    /// Set `name`'s element counters in this pipeline, by element key
    /// (the elements that counted something); `None` when the set does
    /// not count (see [`super::tally`]).
    pub fn element_counters(&self, name: &str) -> Option<super::ElementCounts> {
        self.tally.of(name)
    }

    /// Set `name`'s element counters (every set's: `None`) back to zero.
    pub fn reset_element_counters(&mut self, name: Option<&str>) {
        self.tally.reset(name)
    }
}
