//! The egress stage: a packet rewritten towards its next hop and listed
//! on the hop's port, or counted as dropped; what leaves the fast path
//! (a hop not ready, a frame over the MTU, what the router answers)
//! handed to the slow path; the gateways' MACs taken from the slow
//! path's neighbour table.

use super::prepared::{ready_limit, Egress, CONNECTED, LOCAL, PENDING, READY, TAGGED, UNRESOLVED};
use super::{Fate, Pipeline};
use crate::port::Burst;
use crate::reason::DropReason;
use crate::wire;
use std::sync::Arc;

impl Pipeline {
    /// Adds the frames [`Pipeline::send`] listed to the sent count (one
    /// addition per burst: a count kept per frame is a load and a store
    /// per packet, the pushes in between keeping it out of a register).
    #[inline]
    pub(super) fn count_sent(&mut self) {
        self.counters.tx += self.out.iter().map(|o| o.len() as u64).sum::<u64>();
    }

    /// Rewrites frame `i` of `burst` towards its next hop (an index in
    /// the FIB's hops) and lists it on the hop's port, or counts why it is
    /// dropped: one check of the hop and its port for fresh and cached
    /// decisions alike (a hop on a port we lack is unknown to us).
    #[inline(always)]
    pub(super) fn send(&mut self, burst: &mut Burst, i: usize, hop: Result<u32, DropReason>) {
        // The hop copied and its list taken before the frame is written:
        // otherwise the write, which might alias them for all the
        // compiler knows, made it load and check both again.
        let d = match hop {
            Ok(h) => match self.egress.get(h as usize).copied() {
                // A frame over the hop's limit goes its own way, out of
                // line: merging the two ways' entries back into one copies
                // the entry for every packet. So does a frame that came
                // or leaves tagged (see `rewrite_to`).
                Some(e)
                    if burst.frame_len(i) > e.limit as usize
                        || e.queue & TAGGED != 0
                        || self.parsed[i].l3_off != 14 =>
                {
                    if burst.frame_len(i) <= e.limit as usize && self.swap_tag(burst, i, h, &e) {
                        return;
                    }
                    self.send_other(burst, i, h, e);
                    return;
                }
                Some(e) => match self.rewrite_plain(burst, i, &e) {
                    Ok(()) => return,
                    Err(d) => d,
                },
                None => DropReason::UnknownNextHop,
            },
            Err(d) => d,
        };
        self.dropped(burst, i, d);
    }

    /// Rewrites frame `i`, untagged and leaving untagged, with `e`'s MACs
    /// and lists it on `e`'s queue (counted as sent by `count_sent`, once
    /// per burst).
    #[inline(always)]
    pub(super) fn rewrite_plain(
        &mut self,
        burst: &mut Burst,
        i: usize,
        e: &Egress,
    ) -> Result<(), DropReason> {
        let out = self
            .out
            .get_mut(e.queue as usize)
            .ok_or(DropReason::UnknownNextHop)?;
        wire::rewrite_with(burst.frame_mut(i), &self.parsed[i], &e.macs)?;
        out.push(i as u8);
        Ok(())
    }

    /// The usual tagged frame, inline: one tag in, one tag out, swapped
    /// in place. False, with nothing done, for any other.
    #[inline(always)]
    pub(super) fn swap_tag(&mut self, burst: &mut Burst, i: usize, h: u32, e: &Egress) -> bool {
        let queue = (e.queue & !TAGGED) as usize;
        let (Some(link), Some(p)) = (self.links.get(h as usize), self.parsed.get(i)) else {
            return false;
        };
        if p.l3_off != 18 || link.l2 != 18 || e.queue & TAGGED == 0 || p.ttl <= 1 {
            return false;
        }
        let Some(out) = self.out.get_mut(queue) else {
            return false;
        };
        let f = burst.frame_mut(i);
        if wire::rewrite_with(f, p, &e.macs).is_err() {
            return false;
        }
        if let (Some(t), Some(new)) = (f.get_mut(12..16), link.tags.first_chunk::<4>()) {
            t.copy_from_slice(new);
        }
        out.push(i as u8);
        self.count_link_tx(link.port, burst.frame_len(i));
        true
    }

    /// Counts a frame of `len` bytes received by VLAN sub-interface
    /// `port` (its parent's queue counts it too): the general way's
    /// `ingress` and the express way's `tagged_in`.
    #[inline(always)]
    pub(super) fn count_link_rx(&mut self, port: u16, len: usize) {
        if let Some(c) = self.counters.links.get_mut(port as usize) {
            c[0] += 1;
            c[1] += len as u64;
        }
    }

    /// Counts a frame of `len` bytes sent out of VLAN sub-interface
    /// `port` (its parent's queue counts it too).
    #[inline(always)]
    pub(super) fn count_link_tx(&mut self, port: u16, len: usize) {
        if let Some(c) = self.counters.links.get_mut(port as usize) {
            c[2] += 1;
            c[3] += len as u64;
        }
    }

    /// [`Pipeline::rewrite_plain`] for any frame towards hop `h` (whose
    /// entry is `e`): one that came tagged (its IP header past byte 14)
    /// or leaves tagged ([`TAGGED`]) goes the tagged way.
    #[inline]
    pub(super) fn rewrite_to(
        &mut self,
        burst: &mut Burst,
        i: usize,
        h: u32,
        e: &Egress,
    ) -> Result<(), DropReason> {
        if e.queue & TAGGED != 0 || self.parsed[i].l3_off != 14 {
            return self.rewrite_tagged(burst, i, h, e);
        }
        self.rewrite_plain(burst, i, e)
    }

    /// [`Pipeline::rewrite_plain`] for a frame that came or leaves tagged:
    /// the rewrite, then the tags it came with replaced by the egress
    /// port's (swapped in place, or pushed or popped: the frame's start
    /// moves, its IP header stays where it is). Out of line.
    #[inline(never)]
    pub(super) fn rewrite_tagged(
        &mut self,
        burst: &mut Burst,
        i: usize,
        h: u32,
        e: &Egress,
    ) -> Result<(), DropReason> {
        let queue = (e.queue & !TAGGED) as usize;
        let (Some(link), Some(p)) = (self.links.get(h as usize), self.parsed.get_mut(i)) else {
            return Err(DropReason::UnknownNextHop);
        };
        if queue >= self.out.len() {
            return Err(DropReason::UnknownNextHop);
        }
        wire::rewrite_with(burst.frame_mut(i), p, &e.macs)?;
        let old = (p.l3_off as usize).saturating_sub(14);
        let new = (link.l2 as usize).saturating_sub(14).min(link.tags.len());
        if !burst.set_tags(i, old, &link.tags[..new]) {
            return Err(DropReason::Truncated);
        }
        // The parse's offsets follow the frame's new start (a capture of
        // what was sent, a trace, read them).
        let moved = new as i32 - old as i32;
        p.l3_off = (p.l3_off as i32 + moved) as u16;
        p.l4_off = (p.l4_off as i32 + moved) as u16;
        let port = link.port;
        if e.queue & TAGGED != 0 {
            self.count_link_tx(port, burst.frame_len(i));
        }
        self.out[queue].push(i as u8);
        Ok(())
    }

    /// Counts a drop, notes its reason as the packet's fate (what a
    /// capture of drops and a trace read), and hands the frame to the
    /// slow path if the router answers it.
    #[inline(always)]
    pub(super) fn dropped(&mut self, burst: &Burst, i: usize, d: DropReason) {
        self.counters.drops[d.index()] += 1;
        self.fate[i] = Fate::Dropped(d);
        if self.punting {
            self.answer(burst, i, d);
        }
    }

    /// [`Pipeline::send`] for a frame over its hop's limit (see
    /// [`Egress::limit`]), or one that came or leaves tagged.
    #[inline(never)]
    pub(super) fn send_other(&mut self, burst: &mut Burst, i: usize, h: u32, e: Egress) {
        let e = if burst.frame_len(i) > e.limit as usize {
            match self.not_ready(burst, i, h, e) {
                Some(e) => e,
                None => return,
            }
        } else {
            e
        };
        if let Err(d) = self.rewrite_to(burst, i, h, &e) {
            self.dropped(burst, i, d);
        }
    }

    /// Hands a dropped frame the router answers (ARP; ICMP for an
    /// expired TTL, no route, `reject`) to the slow path.
    #[cold]
    #[inline(never)]
    pub(super) fn answer(&self, burst: &Burst, i: usize, d: DropReason) {
        if matches!(
            d,
            DropReason::Arp | DropReason::TtlExpired | DropReason::NoRoute | DropReason::Reject
        ) {
            self.punt(burst, i, d, 0);
        }
    }

    /// Sets the gateways' egress entries from the slow path's latest
    /// neighbour table, if it changed (or the snapshot did): whether it
    /// did.
    #[inline]
    pub(super) fn sync_neighbours(&mut self) -> bool {
        let Some(r) = &self.router else { return false };
        let cur = r.neigh.load();
        if !self.neigh_stale && Arc::ptr_eq(&cur, &self.neigh) {
            return false;
        }
        // The replaced table is only released here: the slow path keeps
        // every table it published until no worker holds it, and frees
        // it itself.
        self.neigh = arc_swap::Guard::into_inner(cur);
        self.neigh_stale = false;
        for &(hop, port, key) in &self.gateways {
            let (Some(e), Some(k)) = (
                self.egress.get_mut(hop as usize),
                self.kinds.get_mut(hop as usize),
            ) else {
                continue;
            };
            *k = match self.neigh.get(port, key) {
                Some(Some(mac)) => {
                    e.macs[..6].copy_from_slice(&mac);
                    READY
                }
                Some(None) => PENDING,
                None => UNRESOLVED,
            };
            e.limit = if *k == READY {
                ready_limit(true, self.mtus.get(port as usize).copied().unwrap_or(1500))
            } else {
                0
            };
        }
        true
    }

    /// Hands frame `i` to the slow path.
    #[cold]
    #[inline(never)]
    pub(super) fn punt(&self, burst: &Burst, i: usize, reason: DropReason, hop: u32) {
        // Which packets went (read by `explain`, which clears it first;
        // otherwise never read): a bit here costs nothing on the fast
        // path, which never comes this way.
        self.punted.set(self.punted.get() | 1u64 << (i % 64));
        if let Some(r) = &self.router {
            // A frame of a sub-interface goes as that port's, its tags
            // taken off: the slow path never sees a tag.
            let (port, strip) = self.ingress_of(i);
            r.punt(
                burst.frame(i),
                strip as usize,
                port,
                self.worker as u16,
                reason,
                hop,
            );
        }
    }

    /// A frame longer than its hop's [`Egress::limit`]: the egress entry
    /// to rewrite it with (its hop ready after all, or a connected
    /// destination's MAC found), or `None` when it is dropped here
    /// (counted) or handed to the slow path.
    #[cold]
    #[inline(never)]
    pub(super) fn not_ready(
        &mut self,
        burst: &Burst,
        i: usize,
        hop: u32,
        e: Egress,
    ) -> Option<Egress> {
        let kind = self.kinds.get(hop as usize).copied().unwrap_or(READY);
        let port = self.links.get(hop as usize).map_or(u16::MAX, |l| l.port);
        let len = burst.frame(i).len() - self.parsed[i].l3_off as usize;
        let too_big = matches!(kind, READY | CONNECTED)
            && self.punting
            && len > self.mtus.get(port as usize).copied().unwrap_or(u16::MAX) as usize;
        // Why it is dropped here, whether the slow path takes it, and the
        // neighbour (not heard of yet) to ask for.
        let (drop, punt, ask) = match kind {
            _ if too_big => (DropReason::TooBig, true, None),
            READY => return Some(e),
            LOCAL => (DropReason::Local, true, None),
            UNRESOLVED => {
                // `gateways` is in hop order.
                let g = &self.gateways;
                let key = g.binary_search_by_key(&hop, |g| g.0).ok().map(|k| g[k].2);
                (DropReason::Unresolved, true, key)
            }
            CONNECTED => {
                let p = &self.parsed[i];
                let key = crate::neigh::nkey(p.l3 == wire::L3::V6, p.dst);
                match self.neigh.get(port, key) {
                    Some(Some(mac)) => {
                        let mut e = e;
                        e.macs[..6].copy_from_slice(&mac);
                        return Some(e);
                    }
                    Some(None) => (DropReason::Unresolved, false, None),
                    None => (DropReason::Unresolved, true, Some(key)),
                }
            }
            _ => (DropReason::Unresolved, false, None),
        };
        self.counters.drops[drop.index()] += 1;
        self.fate[i] = Fate::Dropped(drop);
        if punt && self.punting {
            if let Some(key) = ask {
                self.ask(port, key);
            }
            self.punt(burst, i, drop, hop);
        }
        None
    }
}
