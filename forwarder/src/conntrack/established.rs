//! The established path: a packet of a known connection that moves
//! nothing but its deadline and takes the decision its direction keeps
//! in this epoch. A UDP datagram of a flow seen before, a TCP segment of
//! flag class ACK in ESTABLISHED, or a refused flow's packet the way its
//! opening packet went: most of a firewall's packets. The general path
//! ([`Tracker::track_seen`]) takes them the same way, through the
//! protocol's state machine, and all the others.
//!
//! Why a path of its own: through the general one the tracking stage
//! took 280 instructions a packet (`examples/turns`, UDP) where the flow
//! cache's takes 190, its one large loop spilling the values of every
//! kind of packet. Here the tests the state machine would make are a
//! few masks of the entry's state and flags, and whatever fails one of
//! them goes the general way, out of line.
//! `established_path_is_the_general_one` (tests.rs) pins the two
//! together.

use super::key::Seen;
use super::table::{flag, REFUSED, TCP_STATE, UNCONFIRMED};
use super::{state, tcp, Tracked, Tracker};
use crate::decision::Decision;

impl Tracker {
    /// Packet `seen` of the connection the pass before found in slot
    /// `hint` ([`Tracker::prefetch_entry`]), `len()` bytes (read only
    /// where connections count them), if it is an
    /// established connection's packet that changes nothing but its
    /// deadline and takes a decision stored in this epoch: that
    /// decision, the connection moved on, what tracking found in `t`.
    /// `None`: nothing done, the general path is to track it. Only where
    /// decisions are usable at all (`cached` in
    /// [`Tracker::track_seen`]).
    #[inline(always)]
    pub fn established(
        &mut self,
        seen: &Seen,
        hint: u32,
        len: impl FnOnce() -> usize,
        t: &mut Tracked,
    ) -> Option<Decision> {
        let (rev, is_tcp) = seen.established()?;
        let (now, epoch) = (self.now, self.epoch);
        let e = self.table.get_mut(hint as usize)?;
        if !e.key.same(&seen.key) | e.expired(now) | (e.epoch != epoch) {
            return None;
        }
        // The entry's state (low byte) and flags (high byte) tested at
        // once (callgrind: a branch a test cost 8 instructions a packet
        // more): a decision stored for the direction (for the reply
        // direction, one is stored only once a reply was seen: the first
        // answer, which makes the connection established, goes the
        // general way); the state the general path leaves such a
        // packet's connection in already held: ESTABLISHED for TCP (with
        // no SYN or challenge noted: taking the segment clears them),
        // none for UDP; neither refused nor unconfirmed.
        let sf = (e.flags as u32) << 8 | e.state as u32;
        let dir = (rev as u32 ^ sf >> 8) & flag::ORIG_HI as u32;
        let need = (flag::DECIDED0 as u32) << dir << 8;
        let want = if is_tcp { tcp::ESTABLISHED as u32 } else { 0 };
        let state_bits = (TCP_STATE | UNCONFIRMED | REFUSED) as u32;
        if sf & (need | state_bits) != need | want {
            return self.refused_taken(hint, dir, t);
        }
        let replied = sf >> 8 & flag::SEEN_REPLY as u32 != 0;
        let dir = dir != 0;
        let e = self.table.entry_mut(hint as usize);
        e.deadline = now.wrapping_add(self.timeouts.established[is_tcp as usize][replied as usize]);
        // What the general path notes of the last segment (TCP): its
        // direction, that it was no RST, no SYN, no challenge; and the
        // connection assured once a reply was seen (for TCP, a segment
        // of ESTABLISHED after it). UDP's entries never hold the TCP
        // bits.
        e.state = want as u8;
        let last_reply = if is_tcp && dir { flag::LAST_REPLY } else { 0 };
        let assured = if replied { flag::ASSURED } else { 0 };
        e.flags = e.flags & !(flag::LAST_RST | flag::LAST_REPLY) | assured | last_reply;
        let d = e.decision[dir as usize];
        if self.acct {
            self.count(hint as usize, dir as u8, len());
        }
        *t = Tracked {
            state: if replied {
                state::ESTABLISHED
            } else {
                state::NEW
            },
            slot: hint,
            dir: dir as u8,
            open: false,
            refused: false,
        };
        Some(d)
    }

    /// The established path's packet `dir` of the connection in slot
    /// `s`, whose entry is not the connection's it expects: if it is a
    /// refused flow's, and the packet goes the way the opening one
    /// went, it takes that packet's decision (as `refused_hit` does: the
    /// packets of this path may all open a connection).
    #[inline(always)]
    fn refused_taken(&mut self, s: u32, dir: u32, t: &mut Tracked) -> Option<Decision> {
        let e = self.table.entry(s as usize);
        if e.state & REFUSED == 0 || e.flags & flag::DECIDED0 == 0 || dir != 0 {
            return None;
        }
        let d;
        (*t, d) = self.take_refused(s as usize);
        Some(d)
    }
}
