//! The express way: a burst that is only routed (or that the flow cache
//! decides), taken in l3fwd's manner.
//!
//! Where a snapshot asks nothing of a packet but its route (no rule set,
//! no connection tracking; `--mode route` too), and a
//! burst is made only of plain frames (untagged IPv4
//! without options and not a later fragment, untagged IPv6 straight to a
//! transport header: what [`wire::plain_dst`] takes), the burst skips the
//! general stages: no parse into `Parsed`, no fates, no lists by family
//! and VRF gathered from them. One pass reads each frame's destination,
//! one batched lookup a family finds the targets (through the route
//! hint and dst cache, as the general way), and one pass rewrites each
//! frame towards a ready next hop and lists it on its port. The general
//! way spent about 220 instructions a frame on `forwarder run --mode
//! route` (callgrind); l3fwd's whole LPM loop about 90.
//!
//! A frame the express way cannot finish once its route is known (no
//! route, a hop not ready, a frame over the hop's limit, a TTL or hop
//! limit that expires, a hop that leaves tagged, or one that leaves
//! untagged for a tagged frame) is parsed and sent the general way, in
//! its place: the lists keep the burst's order. It also takes frames
//! behind one 802.1Q tag its port places (a sub-interface's VLAN, or a
//! priority tag) where that sub-interface routes in its port's VRF, the
//! tag swapped in place on the way out towards a hop on a one-tag
//! sub-interface (route mode, tagged traffic on `turns`: 380.5 -> 314.0
//! instructions a packet). A burst with any other frame goes the general
//! way whole (nothing is written, nothing counted before that is known),
//! and the express way stands aside for the next [`EXPRESS_WAIT`] bursts:
//! on a port whose traffic is not IP, or double-tagged, its one pass is
//! wasted only on one burst in that many.
//!
//! The full pipeline with sets has an express way too, the flow cache's:
//! where a burst's decisions come from the cache (no connection
//! tracking, no set reading the port, no element that expires), each
//! plain frame's flow is read from the frame, looked up, and the frame
//! rewritten towards its stored hop (or counted as the drop stored),
//! without the general way's parse into `Parsed`, fates and send (the
//! full pipeline on `turns`: 344 -> 308 instructions a packet). It also
//! takes frames with one 802.1Q tag its port places (a sub-interface's,
//! or a priority tag), their tag swapped in place on the way out towards
//! a hop on a sub-interface (tagged traffic 472 -> 430). A burst with a
//! miss is parsed and finished by the general way's stages.
//!
//! The general way is the reference: `pipeline::tests` runs random
//! bursts through both and asserts the same lists, bytes and counts.

use super::flowcache::FlowId;
use super::prepared::TAGGED;
use super::{route, Fate, Pipeline};
use crate::port::{Burst, MAX_BURST};
use crate::reason::DropReason;
use crate::tables::Tables;
use crate::vlan::{Ingress, Vlans};
use crate::wire::{self, PlainDst, L3};
use routecache::FlowKey;

/// Bursts the express way leaves to the general one after a burst it
/// could not take (one with a frame that is not plain).
const EXPRESS_WAIT: u16 = 16;

/// What the express way did with a burst.
enum Took {
    /// Finished it (every frame listed or counted).
    Done,
    /// Left it whole, nothing written: a frame of it is not plain (then
    /// the next [`EXPRESS_WAIT`] bursts do not try).
    NotPlain,
    /// Left it whole, nothing written, for another reason: the flow
    /// cache stands aside (the general way counts its bypass).
    Declined,
}

impl Pipeline {
    /// Routes, rewrites and lists burst `burst` (of `n` frames) the
    /// express way and returns true; returns false, with nothing written
    /// or counted, when a frame of it is not plain (then the next
    /// [`EXPRESS_WAIT`] bursts do not try), while it waits, or while the
    /// flow cache stands aside. The caller has taken the burst's counts
    /// (received, bursts) and emptied the lists.
    #[inline]
    pub(super) fn express(&mut self, tables: &Tables, burst: &mut Burst, n: usize) -> bool {
        if self.express_wait > 0 {
            self.express_wait -= 1;
            return false;
        }
        let took = if self.express_cached {
            self.express_cached_burst(tables, burst, n)
        } else {
            self.express_burst(tables, burst, n)
        };
        match took {
            Took::Done => {
                self.express_bursts += 1;
                true
            }
            Took::NotPlain => {
                self.express_wait = EXPRESS_WAIT;
                false
            }
            Took::Declined => false,
        }
    }

    /// [`Pipeline::express`] of routing alone, once it tries.
    // Out of line: inlined into `process`, its registers were allocated
    // around the general way's and both lost (see `rewrite_macs`).
    #[inline(never)]
    fn express_burst(&mut self, tables: &Tables, burst: &mut Burst, n: usize) -> Took {
        let n = n.min(burst.len()).min(MAX_BURST);
        let (mut n4, mut n6) = (0usize, 0usize);
        let mut v6 = 0u64;
        for i in 0..n {
            match wire::plain_dst(burst.frame(i)) {
                Some(d) => self.gather(d, i, (&mut n4, &mut n6, &mut v6)),
                // From the first frame that is not plain on, out of line:
                // frames behind one tag too.
                None => return self.express_from_tag(tables, burst, n, i, (n4, n6, v6)),
            }
        }
        // Every frame's fate as the general way leaves a forwarded one's:
        // a frame's fate outlives its burst (a capture of drops reads
        // them), and one the express way finishes writes none. A fill of
        // a byte a frame, where a store a frame in the passes cost more.
        self.fate[..n].fill(Fate::Go);
        // Plain frames are untagged: every one is in its port's VRF.
        if !self.lookup_gathered(tables, self.base_vrf, n4, n6) {
            return Took::NotPlain;
        }
        // Targets below this are single next hops with an egress entry
        // (an ECMP group's id has `ECMP_FLAG`, far above).
        let direct = tables.fib.targets().hops().len().min(self.egress.len());
        for i in 0..n {
            if !self.express_one(tables, burst, i, direct, v6 >> i & 1 != 0) {
                self.express_other(tables, burst, i);
            }
        }
        self.count_sent();
        Took::Done
    }

    /// [`Pipeline::express_burst`] from frame `from` on, the first that
    /// is not plain, with `(n4, n6, v6)` gathered so far (out of line: in
    /// the plain loop, the branch cost plain bursts 2 instructions a
    /// packet): the rest gathered with `tagged_dsts`, the lookups, and
    /// the last pass with `express_tagged`.
    #[inline(never)]
    fn express_from_tag(
        &mut self,
        tables: &Tables,
        burst: &mut Burst,
        n: usize,
        from: usize,
        gathered: (usize, usize, u64),
    ) -> Took {
        let Some((n4, n6, v6, tagged)) = self.tagged_dsts(tables, burst, from, n, gathered) else {
            return Took::NotPlain;
        };
        self.fate[..n].fill(Fate::Go);
        // `tagged_dsts` took tagged frames only in their port's VRF.
        if !self.lookup_gathered(tables, self.base_vrf, n4, n6) {
            return Took::NotPlain;
        }
        let direct = tables.fib.targets().hops().len().min(self.egress.len());
        self.express_tagged(tables, burst, n, direct, (v6, tagged));
        Took::Done
    }

    /// [`Pipeline::express_burst`]'s first pass from frame `from` on, the
    /// first that is not plain, with `(n4, n6, v6)` gathered so far:
    /// frames behind one 802.1Q tag its port places (a sub-interface's
    /// VLAN or a priority tag) are gathered too, their destination read 4
    /// bytes on and their port noted in `ingress`. Returns the gathering's
    /// counts and the tagged frames (a bit each); `None` where a frame is
    /// neither (two tags, a VLAN no sub-interface has, a packet that is not
    /// plain) or its sub-interface routes in another VRF than its port
    /// (the lookups go by one VRF): the general way's.
    #[inline(never)]
    fn tagged_dsts(
        &mut self,
        tables: &Tables,
        burst: &Burst,
        from: usize,
        n: usize,
        (mut n4, mut n6, mut v6): (usize, usize, u64),
    ) -> Option<(usize, usize, u64, u64)> {
        let (rx, ids) = (self.rx_port, tables.vlans.by_vid(self.rx_port));
        let mut tagged = 0u64;
        for i in from..n.min(MAX_BURST) {
            let f = burst.frame(i);
            let dst = match wire::plain_dst(f) {
                Some(d) => d,
                None => {
                    let Some(Ingress::Port { port, strip: 4 }) = Vlans::one_tag_in(ids, rx, f)
                    else {
                        return None;
                    };
                    if tables.vrf_of(port) != self.base_vrf {
                        return None;
                    }
                    let d = wire::plain_dst(f.get(4..)?)?;
                    tagged |= 1 << i;
                    self.ingress[i] = (port, 4);
                    d
                }
            };
            self.gather(dst, i, (&mut n4, &mut n6, &mut v6));
        }
        Some((n4, n6, v6, tagged))
    }

    /// Frame `i`'s destination `d` listed for its family's batched lookup
    /// (`n4`, `n6` listed so far; `v6` a bit for each IPv6 frame).
    #[inline(always)]
    fn gather(&mut self, d: PlainDst, i: usize, (n4, n6, v6): (&mut usize, &mut usize, &mut u64)) {
        match d {
            PlainDst::V4(d) => {
                self.dst4[*n4 % MAX_BURST] = d;
                self.idx4[*n4 % MAX_BURST] = i as u8;
                *n4 += 1;
            }
            PlainDst::V6(d) => {
                self.dst6[*n6 % MAX_BURST] = d;
                self.idx6[*n6 % MAX_BURST] = i as u8;
                *n6 += 1;
                *v6 |= 1 << i;
            }
        }
    }

    /// [`Pipeline::express_burst`]'s last pass for a burst with tagged
    /// frames (`tagged`, a bit each; `v6` the IPv6 ones): marked and
    /// counted on their sub-interfaces as the general way's `ingress`
    /// does, and each sent with its tag swapped in place towards a hop on
    /// a one-tag sub-interface (`express_swap`); an untagged frame as
    /// [`Pipeline::express_one`] sends it; any other the general way, in
    /// its place.
    #[inline(never)]
    fn express_tagged(
        &mut self,
        tables: &Tables,
        burst: &mut Burst,
        n: usize,
        direct: usize,
        (v6, tagged): (u64, u64),
    ) {
        self.tagged_in(burst, tagged);
        for i in 0..n.min(MAX_BURST) {
            let fam = v6 >> i & 1 != 0;
            let done = if tagged >> i & 1 == 0 {
                self.express_one(tables, burst, i, direct, fam)
            } else {
                self.express_target::<4>(tables, burst, i, direct, fam)
                    .is_some_and(|h| self.express_swap(burst, i, h, fam))
            };
            if !done {
                self.express_other(tables, burst, i);
            }
        }
        self.count_sent();
    }

    /// [`Pipeline::express`] of a burst the flow cache decides (the full
    /// pipeline with sets, no connection tracking, no set reading the
    /// port, no element that expires): each plain frame's flow read from
    /// the frame ([`FlowId::of_plain`], no `Parsed` written), hashed,
    /// located and probed in three passes as [`Pipeline::lookup_flows`]
    /// does; when every flow hits, each frame is rewritten towards its
    /// stored hop in a fourth (what the general way spends on fates,
    /// parses and the general send, about 60 instructions a packet of the
    /// cache's 340 on `turns`, is not spent). A burst with a miss is
    /// parsed and finished by the general way's stages, its hits taken as
    /// they are (see [`Pipeline::express_missed`]).
    #[inline(never)]
    fn express_cached_burst(&mut self, tables: &Tables, burst: &mut Burst, n: usize) -> Took {
        let n = n.min(burst.len()).min(MAX_BURST);
        let vrf = self.base_vrf;
        let Some(flows) = self.flows.as_mut() else {
            return Took::Declined;
        };
        if flows.aside() {
            return Took::Declined;
        }
        let mut v6 = 0u64;
        let mut at = 0;
        while at < n {
            let Some(id) = FlowId::of_plain(burst.frame(at), vrf) else {
                break;
            };
            v6 |= (id.is_v6() as u64) << at;
            self.flow_ids[at] = id;
            self.flow_locs[at] = flows.hash(&id);
            at += 1;
        }
        // From the first frame that is not plain on, out of line (the
        // test of a tag in this loop cost untagged bursts 9 instructions
        // a packet).
        let mut tagged = 0u64;
        if at < n {
            match self.tagged_flows(tables, burst, at, n) {
                Some((t, v)) => (tagged, v6) = (t, v6 | v),
                None => return Took::NotPlain,
            }
        }
        let Some(flows) = self.flows.as_mut() else {
            return Took::Declined;
        };
        // Not aside: the burst's tick.
        flows.take_burst(n);
        for i in 0..n {
            self.flow_locs[i] = flows.candidates(self.flow_locs[i]);
        }
        let mut missed = 0u64;
        for i in 0..n {
            match flows.probe_in_burst(self.flow_locs[i], &self.flow_ids[i]) {
                Some(d) => {
                    self.decisions[i] = d;
                    super::flows::count_matches(&mut self.counters, d.matches);
                }
                None => missed |= 1 << i,
            }
        }
        flows.account(n as u32, n as u32 - missed.count_ones());
        // As `express_burst`'s fill; decided by the cache.
        self.fate[..n].fill(Fate::Cached);
        if missed != 0 {
            if tagged != 0 {
                self.tagged_in(burst, tagged);
            }
            self.express_missed(tables, burst, n, missed);
            return Took::Done;
        }
        if tagged != 0 {
            self.express_cached_tagged(tables, burst, n, v6, tagged);
            return Took::Done;
        }
        let punting = self.punting;
        for i in 0..n {
            let hop = self.decisions[i].hop();
            match hop {
                Ok(h) if self.express_hop(burst, i, h as usize, v6 >> i & 1 != 0) => {}
                // A drop the sets decided (common where they filter):
                // counted as the general way counts it, without its parse
                // (only an answer to the sender, from the slow path,
                // reads it).
                Err(d) if !punting => self.dropped(burst, i, d),
                _ => self.express_decided(tables, burst, i, hop),
            }
        }
        self.count_sent();
        Took::Done
    }

    /// The last pass of [`Pipeline::express_cached_burst`] for a burst
    /// with tagged frames (`tagged`, a bit each): those are rewritten
    /// with their tag swapped (`express_swap`). A loop of its own: the
    /// test a frame cost the untagged bursts' loop 18 instructions a
    /// packet (turns).
    #[inline(never)]
    fn express_cached_tagged(
        &mut self,
        tables: &Tables,
        burst: &mut Burst,
        n: usize,
        v6: u64,
        tagged: u64,
    ) {
        self.tagged_in(burst, tagged);
        let punting = self.punting;
        for i in 0..n.min(MAX_BURST) {
            let hop = self.decisions[i].hop();
            let (v6, h) = (v6 >> i & 1 != 0, hop.unwrap_or(u32::MAX) as usize);
            match hop {
                Ok(_) if tagged >> i & 1 != 0 && self.express_swap(burst, i, h, v6) => {}
                Ok(_) if tagged >> i & 1 == 0 && self.express_hop(burst, i, h, v6) => {}
                Err(d) if !punting => self.dropped(burst, i, d),
                _ => self.express_decided(tables, burst, i, hop),
            }
        }
        self.count_sent();
    }

    /// Frame `i`, plain, rewritten towards its target (a single next hop
    /// below `direct`, or an ECMP group's member) and listed on the hop's
    /// port: true; false, with nothing done, where the general way must
    /// find out what becomes of it.
    #[inline(always)]
    fn express_one(
        &mut self,
        tables: &Tables,
        burst: &mut Burst,
        i: usize,
        direct: usize,
        v6: bool,
    ) -> bool {
        let Some(h) = self.express_target::<0>(tables, burst, i, direct, v6) else {
            return false;
        };
        self.express_hop(burst, i, h, v6)
    }

    /// The next hop of frame `i` (its packet `AT` bytes on, of family
    /// `v6`): its target below `direct`, or an ECMP group's member.
    #[inline(always)]
    fn express_target<const AT: usize>(
        &self,
        tables: &Tables,
        burst: &Burst,
        i: usize,
        direct: usize,
        v6: bool,
    ) -> Option<usize> {
        match self.targets[i % MAX_BURST] {
            Some(t) if (t as usize) < direct => Some(t as usize),
            Some(t) => Pipeline::express_member::<AT>(tables, burst, i, t, v6),
            None => None,
        }
    }

    /// Frame `i`, plain (of family `v6`), rewritten towards next hop `h`
    /// and listed on its port: true; false, with nothing done, where the
    /// general way must find out what becomes of it (the checks of
    /// `send_plain`, read from the frame itself).
    #[inline(always)]
    fn express_hop(&mut self, burst: &mut Burst, i: usize, h: usize, v6: bool) -> bool {
        let Some(&e) = self.egress.get(h) else {
            return false;
        };
        let len = burst.frame_len(i);
        // `TAGGED` puts the queue past every list.
        let Some(out) = self.out.get_mut(e.queue as usize) else {
            return false;
        };
        // A plain frame has 38 bytes at least (`plain_dst`).
        let Some(f) = burst.frame_mut(i).first_chunk_mut::<26>() else {
            return false;
        };
        let (head, ip) = f.split_at_mut(14);
        let Some(ip) = ip.first_chunk_mut::<12>() else {
            return false;
        };
        let (l3, ttl) = if v6 { (L3::V6, ip[7]) } else { (L3::V4, ip[8]) };
        // A frame over the limit (0 for a hop not ready) or expiring.
        if len > e.limit as usize || ttl <= 1 {
            return false;
        }
        head[..12].copy_from_slice(&e.macs);
        wire::set_ttl(ip, l3, ttl - 1);
        out.push(i as u8);
        true
    }

    /// The tagged frames of a burst the express way takes (`tagged`, a
    /// bit each, their sub-interfaces in `ingress`), as the general way's
    /// `ingress` leaves them: marked, and counted as received on their
    /// sub-interface (a priority tag's frame is its port's own).
    #[inline(never)]
    fn tagged_in(&mut self, burst: &Burst, tagged: u64) {
        self.tagged = tagged;
        let mut t = tagged;
        while t != 0 {
            let i = t.trailing_zeros() as usize;
            t &= t - 1;
            let port = self.ingress[i % MAX_BURST].0;
            if port != self.rx_port {
                self.count_link_rx(port, burst.frame_len(i));
            }
        }
    }

    /// Frame `i`, one 802.1Q tag in front of a plain packet (of family
    /// `v6`), rewritten towards next hop `h` on a sub-interface that
    /// sends with one tag too: its tag swapped in place (`swap_tag`'s
    /// way, read from the frame itself) and listed on the parent's
    /// queue; false, with nothing done, for any other hop.
    #[inline(always)]
    fn express_swap(&mut self, burst: &mut Burst, i: usize, h: usize, v6: bool) -> bool {
        let (Some(&e), Some(link)) = (self.egress.get(h), self.links.get(h)) else {
            return false;
        };
        let (port, l2, tags) = (link.port, link.l2, link.tags);
        let len = burst.frame_len(i);
        if e.queue & TAGGED == 0 || l2 != 18 || len > e.limit as usize {
            return false;
        }
        let Some(out) = self.out.get_mut((e.queue & !TAGGED) as usize) else {
            return false;
        };
        let Some(f) = burst.frame_mut(i).first_chunk_mut::<30>() else {
            return false;
        };
        let (head, ip) = f.split_at_mut(18);
        let Some(ip) = ip.first_chunk_mut::<12>() else {
            return false;
        };
        let (l3, ttl) = if v6 { (L3::V6, ip[7]) } else { (L3::V4, ip[8]) };
        if ttl <= 1 {
            return false;
        }
        head[..12].copy_from_slice(&e.macs);
        if let Some(t) = tags.first_chunk::<4>() {
            head[12..16].copy_from_slice(t);
        }
        wire::set_ttl(ip, l3, ttl - 1);
        out.push(i as u8);
        self.count_link_tx(port, len);
        true
    }

    /// The next hop of frame `i` (of family `v6`) routed to target `t`,
    /// an ECMP group (or a target past the egress entries): the member
    /// its flow's hash picks (`route::member`, as `next_hop` from the
    /// parse), the packet `AT` bytes on (4 behind a tag).
    /// Out of line, the flow read from the frame's fixed offsets: sent
    /// the general way, such a frame cost about 200 instructions, and
    /// through the whole parse and `next_hop` 140 (callgrind, the
    /// example's traffic, a fifth of whose frames go to its group).
    #[inline(never)]
    fn express_member<const AT: usize>(
        tables: &Tables,
        burst: &Burst,
        i: usize,
        t: u32,
        v6: bool,
    ) -> Option<usize> {
        let flow = || {
            let (src, dst, sport, dport, proto) = wire::plain_flow(burst.frame(i).get(AT..)?, v6)?;
            Some(FlowKey {
                src,
                dst,
                sport,
                dport,
                proto,
            })
        };
        route::member(tables, t, flow).map(|h| h as usize)
    }

    /// Frame `i`, plain, that [`Pipeline::express_one`] left: parsed and
    /// sent the general way (`send_routed`'s for a packet still going),
    /// its target already found.
    #[cold]
    #[inline(never)]
    fn express_other(&mut self, tables: &Tables, burst: &mut Burst, i: usize) {
        let i = i % MAX_BURST;
        // Plain, so the parse keeps it; untagged, so it is in its port's
        // VRF (a parse says 0).
        if let Err(d) = wire::parse_into(burst.frame(i), &mut self.parsed[i]) {
            self.fate[i] = Fate::Dropped(d);
            self.send(burst, i, Err(d));
            return;
        }
        self.parsed[i].vrf = self.base_vrf;
        self.fate[i] = Fate::Go;
        self.pending[i] = false;
        let hop = self.next_hop(tables, i);
        self.send(burst, i, hop);
    }

    /// Frame `i`, plain, whose stored decision (`hop`)
    /// [`Pipeline::express_hop`] left (a drop, a hop not ready, a TTL
    /// that expires, ...): parsed and sent the general way
    /// (`send_decided`'s for a cached packet).
    #[cold]
    #[inline(never)]
    fn express_decided(
        &mut self,
        tables: &Tables,
        burst: &mut Burst,
        i: usize,
        hop: Result<u32, DropReason>,
    ) {
        let i = i % MAX_BURST;
        if let Err(d) = wire::parse_into(burst.frame(i), &mut self.parsed[i]) {
            self.send(burst, i, Err(d));
            return;
        }
        self.parsed[i].vrf = self.express_vrf(tables, i);
        self.send(burst, i, hop);
    }

    /// The VRF of frame `i` of a burst the express way took: its port's,
    /// or a tagged frame's sub-interface's (as the general way's
    /// `ingress` sets it).
    #[inline(always)]
    fn express_vrf(&self, tables: &Tables, i: usize) -> u8 {
        if self.tagged >> (i % 64) & 1 != 0 {
            tables.vrf_of(self.ingress[i % MAX_BURST].0)
        } else {
            self.base_vrf
        }
    }

    /// A burst of plain frames some of whose flows the cache missed
    /// (`missed`, a bit each; the others' decisions taken and counted,
    /// every fate `Cached`): parsed, as the general way would, the missed
    /// ones left to classify and route with their decisions to store, and
    /// the burst finished by the general way's stages.
    #[cold]
    #[inline(never)]
    fn express_missed(&mut self, tables: &Tables, burst: &mut Burst, n: usize, missed: u64) {
        let n = n.min(MAX_BURST);
        self.match_bits[..n].fill(0);
        self.counted = 0;
        self.expired_at = 0;
        self.forwarding = 0;
        for i in 0..n {
            let miss = missed >> i & 1 != 0;
            self.pending[i] = miss;
            match wire::parse_into(burst.frame(i), &mut self.parsed[i]) {
                Ok(()) => {
                    self.parsed[i].vrf = self.express_vrf(tables, i);
                    if miss {
                        self.fate[i] = Fate::Go;
                    }
                }
                // Not met: a plain frame parses (the property test and
                // fuzz target hold the two parses together).
                Err(d) => {
                    self.pending[i] = false;
                    self.fate[i] = Fate::Dropped(d);
                }
            }
        }
        self.route_undecided(tables, burst, n);
    }
}

impl Pipeline {
    /// The first pass of [`Pipeline::express_cached_burst`] from frame
    /// `from` to `n`, where plain frames and frames with one tag may mix:
    /// each flow found and hashed; the tagged frames (a bit each) and
    /// the IPv6 ones, or `None` at a frame neither.
    #[inline(never)]
    fn tagged_flows(
        &mut self,
        tables: &Tables,
        burst: &Burst,
        from: usize,
        n: usize,
    ) -> Option<(u64, u64)> {
        let flows = self.flows.as_ref()?;
        let ids = tables.vlans.by_vid(self.rx_port);
        let (mut tagged, mut v6) = (0u64, 0u64);
        for i in from..n.min(MAX_BURST) {
            let f = burst.frame(i);
            let id = match FlowId::of_plain(f, self.base_vrf) {
                Some(id) => id,
                None => {
                    let (id, port) = tagged_flow(tables, ids, self.rx_port, f)?;
                    tagged |= 1 << i;
                    self.ingress[i] = (port, 4);
                    id
                }
            };
            v6 |= (id.is_v6() as u64) << i;
            self.flow_ids[i] = id;
            self.flow_locs[i] = flows.hash(&id);
        }
        Some((tagged, v6))
    }
}

/// The flow of `frame`, one 802.1Q tag (VLAN `ids` places on port `rx`)
/// in front of a plain packet, and the port it belongs to (a
/// sub-interface, or `rx` itself for a priority tag): the frames
/// `wire::parse_into` parses 4 bytes on and the general way's `ingress`
/// places with [`Vlans::one_tag_in`], in that port's VRF. `None` for any
/// other frame (a VLAN no sub-interface has, two tags, a packet that is
/// not plain).
#[inline(always)]
fn tagged_flow(tables: &Tables, ids: &[u16], rx: u16, frame: &[u8]) -> Option<(FlowId, u16)> {
    let Some(Ingress::Port { port, strip: 4 }) = Vlans::one_tag_in(ids, rx, frame) else {
        return None;
    };
    let id = FlowId::of_tagged(frame, tables.vrf_of(port))?;
    Some((id, port))
}
