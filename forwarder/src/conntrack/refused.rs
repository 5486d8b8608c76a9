//! Refused connections: a flow whose opening packet the sets (or the
//! routes) dropped has no connection, as in Linux, and each of its next
//! packets opens one again, to be judged again, with `ct state new`.
//! Judged again, they would get the same decision (the sets see the same
//! key and state, under the same snapshot), so the entry stays, marked
//! [`REFUSED`], holding the decision: the flow's next packets take it as
//! the flow cache's hits do, instead of being classified, routed, entered
//! and freed each (about a fifth of `examples/turns`' time where a tenth
//! of the flows are dropped).
//!
//! A refused entry is no connection: not counted in `entries` or by
//! protocol, not listed, not expired as one, never what an ICMP error
//! relates to, the first taken to make room. A packet that meets it and
//! could not take the stored decision is tracked as if the entry were
//! not there: it opens the connection anew in the same slot, or is
//! invalid.

use super::table::{flag, REFUSED};
use super::timeouts::TICK_SHIFT;
use super::{opens, state, Kind, Seen, Tracked, Tracker, View};
use crate::decision::Decision;

/// How long a refused entry stays after its flow's last packet, in
/// ticks: 2 s, a little over a client's first SYN retransmission, and
/// short, since a flow that stopped has no use for it.
const REFUSED_TICKS: u32 = (2000 >> TICK_SHIFT) as u32;

impl Tracker {
    /// The opening packet of the connection in slot `s` (not confirmed)
    /// was dropped with decision `d`: the entry stays, refused.
    pub(super) fn refuse(&mut self, s: usize, d: Decision) {
        let (epoch, now) = (self.epoch, self.now);
        let e = self.table.entry_mut(s);
        e.state = REFUSED;
        e.flags = e.flags & flag::ORIG_HI | flag::DECIDED0;
        e.decision[0] = d;
        e.epoch = epoch;
        e.deadline = now.wrapping_add(REFUSED_TICKS);
        self.refused += 1;
    }

    /// A packet (from the key's higher end when `rev`) met the refused
    /// entry in slot `s`.
    #[inline(never)]
    pub(super) fn refused_hit(
        &mut self,
        s: usize,
        rev: bool,
        kind: Kind,
        len: usize,
        cached: bool,
    ) -> (Tracked, Option<Decision>) {
        let epoch = self.epoch;
        let e = self.table.entry_mut(s);
        let dir = (rev != (e.flags & flag::ORIG_HI != 0)) as u8;
        if !opens(kind) {
            // No connection, and this packet cannot open one.
            self.stats.invalid += 1;
            return (Tracked::unattached(state::INVALID, dir), None);
        }
        if dir == 0 && cached && e.flags & flag::DECIDED0 != 0 && e.epoch == epoch {
            let (t, d) = self.take_refused(s);
            return (t, Some(d));
        }
        // The other way, or a decision gone stale: it opens anew.
        (self.unrefuse(s, rev, kind, len), None)
    }

    /// A packet tracked as `t` (seen as `seen`, `len` bytes) that met a
    /// refused entry did not take its decision (one bound to another
    /// port): it opens the connection anew in the same slot, and goes
    /// through the sets and the routes.
    pub fn reopen(&mut self, t: &Tracked, seen: &Seen, len: usize) -> Tracked {
        match seen.view() {
            View::Packet { rev, kind }
                if t.refused && self.table.entry(t.slot as usize).state & REFUSED != 0 =>
            {
                self.unrefuse(t.slot as usize, rev, kind, len)
            }
            _ => *t,
        }
    }

    /// A packet of the refused flow in slot `s`, the way its opening
    /// packet went, whose stored decision is current, takes it: the
    /// entry stays [`REFUSED_TICKS`] more.
    #[inline(always)]
    pub(super) fn take_refused(&mut self, s: usize) -> (Tracked, Decision) {
        let now = self.now;
        let e = self.table.entry_mut(s);
        e.deadline = now.wrapping_add(REFUSED_TICKS);
        let t = Tracked {
            slot: s as u32,
            refused: true,
            ..Tracked::unattached(state::NEW, 0)
        };
        (t, e.decision[0])
    }

    fn unrefuse(&mut self, s: usize, rev: bool, kind: Kind, len: usize) -> Tracked {
        self.refused -= 1;
        let p = super::proto_index(self.table.entry(s).key.proto());
        self.stats.by_proto[p] += 1;
        self.init(s, rev, kind, len)
    }
}
