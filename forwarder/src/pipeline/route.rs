//! The route stage: one batched FIB lookup per family through the
//! per-core route hint and dst cache, then the ECMP member by flow hash.

use super::prepared::LOCAL;
use super::{going, Fate, Pipeline};
use crate::port::{Burst, MAX_BURST};
use crate::reason::DropReason;
use crate::tables::Tables;
use crate::wire::{self, L3};
use routecache::{FlowKey, TargetId, Targets};

/// The next hop of target `t`, as an index in the FIB's hops: a single
/// hop itself, an ECMP group's member by the hash of the flow `flow`
/// gives (asked only for a group: a route to one next hop, every route of
/// a typical full table, does without it). `None` for a target the FIB
/// lacks or a flow not given. The general way's (`next_hop`, from the
/// parse) and the express way's (from the frame's fixed offsets).
#[inline(always)]
pub(super) fn member(
    tables: &Tables,
    t: TargetId,
    flow: impl FnOnce() -> Option<FlowKey>,
) -> Option<u32> {
    let hash = if Targets::is_ecmp(t) {
        flow()?.hash(tables.flow_seed)
    } else {
        0
    };
    tables.fib.targets().resolve_index(t, hash)
}

impl Pipeline {
    /// The FIB's targets of the packets still going: per VRF in the
    /// burst, one batched lookup per family. A burst comes from one port:
    /// its frames route in the port's VRF, but for tagged ones of a
    /// sub-interface in another (only where the port has such:
    /// `vrf_mixed`), gathered by VRF afterwards.
    pub(super) fn lookup_routes(&mut self, tables: &Tables, n: usize) {
        let base = self.base_vrf;
        let mixed = tables
            .vrf_mixed
            .get(self.rx_port as usize)
            .copied()
            .unwrap_or(false);
        let mut others = if mixed {
            self.frames_in(self.tagged, |v| v != base)
        } else {
            0
        };
        self.lookup_vrf(tables, base, n, others);
        while others != 0 {
            let vrf = self.parsed[others.trailing_zeros() as usize % MAX_BURST].vrf;
            let these = self.frames_in(others, |v| v == vrf);
            others &= !these;
            self.lookup_vrf(tables, vrf, n, !these);
        }
    }

    /// The frames of `mask` whose VRF `pick` takes, as a mask.
    fn frames_in(&self, mut mask: u64, pick: impl Fn(u8) -> bool) -> u64 {
        let mut out = 0;
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if pick(self.parsed[i % MAX_BURST].vrf) {
                out |= 1 << i;
            }
        }
        out
    }

    /// [`Pipeline::lookup_routes`] of the packets still going in VRF
    /// `vrf`, but those set in `skip`: through the route hint and dst
    /// cache in VRF 0 (their entries know no VRF), straight to the FIB in
    /// the others.
    fn lookup_vrf(&mut self, tables: &Tables, vrf: u8, n: usize, skip: u64) {
        let (mut n4, mut n6) = (0, 0);
        // The packets still going, a bit each; then, branch-free, each
        // one's destination written to the next slot of both lists, which
        // only advances for its family. Branches on the family went one
        // way or the other, a coin toss on mixed traffic; the bits leave
        // out cheaply the packets the flow cache decided (callgrind).
        let mut go = going(&self.fate, n) & !skip;
        while go != 0 {
            let i = go.trailing_zeros() as usize % MAX_BURST;
            go &= go - 1;
            let p = &self.parsed[i];
            let v4 = p.l3 == L3::V4;
            self.dst4[n4 % MAX_BURST] = p.dst as u32;
            self.idx4[n4 % MAX_BURST] = i as u8;
            n4 += v4 as usize;
            self.dst6[n6 % MAX_BURST] = p.dst;
            self.idx6[n6 % MAX_BURST] = i as u8;
            n6 += !v4 as usize;
        }
        if !self.lookup_gathered(tables, vrf, n4, n6) {
            // A VRF the FIB does not have (never, from a checked
            // configuration): no route, rather than another VRF's.
            for &i in self.idx4[..n4].iter().chain(&self.idx6[..n6]) {
                self.targets[i as usize] = None;
            }
        }
    }

    /// The targets of the first `n4` IPv4 destinations of `dst4` and
    /// `n6` IPv6 ones of `dst6`, looked up in VRF `vrf` (through the route
    /// hint and dst cache in VRF 0, whose entries know no VRF; straight
    /// in the FIB in the others), each written to `targets` at its
    /// packet's index (`idx4`, `idx6`): one batched lookup a family. False,
    /// with nothing written, for a VRF the FIB does not have. The general
    /// way's and the express way's lookup.
    #[inline(always)]
    pub(super) fn lookup_gathered(
        &mut self,
        tables: &Tables,
        vrf: u8,
        n4: usize,
        n6: usize,
    ) -> bool {
        let mut found = [None; MAX_BURST];
        let Some(fib) = tables.fib.vrf(vrf as usize) else {
            return false;
        };
        let gen = tables.fib.generation();
        let (n4, n6) = (n4.min(MAX_BURST), n6.min(MAX_BURST));
        if n4 > 0 {
            if vrf == 0 {
                self.router4.route_burst(
                    &self.dst4[..n4],
                    gen,
                    |k, o| fib.lookup_burst_v4(k, o),
                    &mut found[..n4],
                );
            } else {
                fib.lookup_burst_v4(&self.dst4[..n4], &mut found[..n4]);
            }
            for (&i, &t) in self.idx4[..n4].iter().zip(&found) {
                self.targets[i as usize % MAX_BURST] = t;
            }
        }
        if n6 > 0 {
            if vrf == 0 {
                self.router6.route_burst(
                    &self.dst6[..n6],
                    gen,
                    |k, o| fib.lookup_burst_v6(k, o),
                    &mut found[..n6],
                );
            } else {
                fib.lookup_burst_v6(&self.dst6[..n6], &mut found[..n6]);
            }
            for (&i, &t) in self.idx6[..n6].iter().zip(&found) {
                self.targets[i as usize % MAX_BURST] = t;
            }
        }
        true
    }

    /// The next hop of a routed packet (its target resolved, an ECMP
    /// group's member picked by the flow hash), as an index in the FIB's
    /// hops, or why it has none.
    // Inlined by force: `explain` calls it too, and a second caller made
    // the inliner keep it out of line: a call for every routed packet.
    #[inline(always)]
    pub(super) fn next_hop(&self, tables: &Tables, i: usize) -> Result<u32, DropReason> {
        let p = &self.parsed[i];
        let t = self.targets[i].ok_or(DropReason::NoRoute)?;
        let flow = || {
            Some(FlowKey {
                src: p.src,
                dst: p.dst,
                sport: p.sport,
                dport: p.dport,
                proto: p.proto,
            })
        };
        member(tables, t, flow).ok_or(DropReason::UnknownNextHop)
    }

    /// The forward hook: the packets routed to a next hop that forwards
    /// them (not to the router itself, nor without a route) get the name
    /// of the port they leave by, and the forward sets look them up.
    /// An `accept` of the prerouting sets ended only their hook: such a
    /// packet goes through the forward sets as well, as in nft. Each set
    /// still runs once a packet: the prerouting ones before this, the
    /// forward ones here. The next hop is found again by `route` (its
    /// cost falls only on configurations with forward sets).
    #[inline(never)]
    pub(super) fn forward_hook(&mut self, tables: &Tables, burst: &Burst, n: usize) {
        let mut forwarding = 0u64;
        let mut held = 0u64;
        for i in 0..n.min(MAX_BURST) {
            if !matches!(self.fate[i], Fate::Go | Fate::Accepted) {
                continue;
            }
            let link = match self.next_hop(tables, i) {
                Ok(h) if self.kinds.get(h as usize).is_some_and(|&k| k != LOCAL) => {
                    self.links.get(h as usize)
                }
                _ => None,
            };
            match link {
                Some(link) => {
                    self.oif[i] = tables.ifnames.get(link.port as usize).copied().unwrap_or(0);
                    self.fate[i] = Fate::Go;
                    forwarding |= 1 << i;
                }
                None => {
                    // Held out of the forward sets' lookups (which take
                    // only packets still going) under a fate they skip,
                    // restored below: a fate of its own made the route
                    // stage's match on every packet dearer (callgrind:
                    // 1.5 % more instructions a packet).
                    if self.fate[i] == Fate::Go {
                        self.fate[i] = Fate::Cached;
                        held |= 1 << i;
                    }
                }
            }
        }
        self.forwarding = forwarding;
        if forwarding != 0 {
            self.classify(tables, burst, n, (tables.forward_from, tables.sets.len()));
        }
        while held != 0 {
            let i = held.trailing_zeros() as usize;
            held &= held - 1;
            self.fate[i % MAX_BURST] = Fate::Go;
        }
    }

    /// Routes the burst's packets that the flow cache did not decide,
    /// rewrites them (those it decided too) and lists them by egress port.
    pub(super) fn route(&mut self, tables: &Tables, burst: &mut Burst, n: usize) {
        self.lookup_routes(tables, n);
        self.send_routed(tables, burst, n);
    }

    /// [`Pipeline::route`] past the lookup: each packet's next hop, sent
    /// there (or dropped). The forward sets run between the two
    /// (`process`); a test for them in here made the loop dearer for
    /// everyone (callgrind: 0.3 % more instructions a packet).
    ///
    /// A burst with tagged frames has a loop of its own (`send_tagged`),
    /// which sends a frame that came with one tag and leaves with one
    /// from its hop found once: the general way found the hop again (an
    /// ECMP group's member hashed twice) and took the same tag swap
    /// through `decided` and `send`. In the untagged loop, that branch
    /// cost the untagged frames 3 instructions a packet (`turns`, full).
    #[inline(always)]
    pub(super) fn send_routed(&mut self, tables: &Tables, burst: &mut Burst, n: usize) {
        if self.tagged != 0 {
            self.send_tagged(tables, burst, n);
        } else {
            self.send_untagged(tables, burst, n);
        }
    }

    /// [`Pipeline::send_routed`] of a burst without tagged frames.
    #[inline(never)]
    fn send_untagged(&mut self, tables: &Tables, burst: &mut Burst, n: usize) {
        self.send_loop::<false>(tables, burst, n);
    }

    /// [`Pipeline::send_routed`] of a burst with tagged frames.
    #[inline(never)]
    fn send_tagged(&mut self, tables: &Tables, burst: &mut Burst, n: usize) {
        self.send_loop::<true>(tables, burst, n);
    }

    /// [`Pipeline::send_routed`]'s loop; `TAGS`: the burst has tagged
    /// frames.
    #[inline(always)]
    fn send_loop<const TAGS: bool>(&mut self, tables: &Tables, burst: &mut Burst, n: usize) {
        // Targets below this are single next hops with an egress entry
        // (an ECMP group's id has `ECMP_FLAG`, far above).
        let direct = tables.fib.targets().hops().len().min(self.egress.len());
        let plain = self.plain;
        // A bit test a packet, where a match on its fate took some 7
        // instructions (the niche layout); the rest are dropped or decided.
        let going = going(&self.fate, n);
        for i in 0..n.min(MAX_BURST) {
            let hop = if going >> i & 1 != 0 {
                if plain {
                    let sent = if TAGS && self.parsed[i].l3_off != 14 {
                        self.send_swapped(tables, burst, i, direct)
                    } else {
                        self.send_plain(tables, burst, i, direct)
                    };
                    if sent {
                        continue;
                    }
                }
                let h = self.next_hop(tables, i);
                self.decided(burst, i, h)
            } else if let Fate::Dropped(d) = self.fate[i] {
                let _ = self.decided(burst, i, Err(d));
                Err(d)
            } else {
                // `Cached`: the flow cache's decision.
                self.decisions[i].hop()
            };
            self.send(burst, i, hop);
        }
        self.count_sent();
    }

    /// [`Pipeline::send_plain`] for a frame that came tagged: sent with
    /// its tag swapped in place (`swap_tag`: one tag in, one out) within
    /// its hop's limit; false, with nothing done, for any other. Its hop
    /// is found as `send_plain` finds it, written twice: one helper for
    /// both cost the untagged loop 3 instructions a packet (LLVM's
    /// register allocation; `turns`, full).
    #[inline(always)]
    fn send_swapped(
        &mut self,
        tables: &Tables,
        burst: &mut Burst,
        i: usize,
        direct: usize,
    ) -> bool {
        if self.pending[i % MAX_BURST] {
            return false;
        }
        let h = match self.targets[i % MAX_BURST] {
            Some(t) if (t as usize) < direct => t as usize,
            Some(_) => match self.next_hop(tables, i) {
                Ok(h) => h as usize,
                Err(_) => return false,
            },
            None => return false,
        };
        let Some(&e) = self.egress.get(h) else {
            return false;
        };
        burst.frame_len(i) <= e.limit as usize && self.swap_tag(burst, i, h as u32, &e)
    }

    /// The usual routed frame (still going), sent with its checks folded
    /// into a few tests: no decision to store, routed to a next hop (below
    /// `direct`, or an ECMP group's member) whose entry is ready on an
    /// untagged port, itself untagged, within the hop's limit, its TTL
    /// above 1. False, with nothing done, for any other: the general way
    /// (`next_hop`, `decided`, `send`) then takes it and finds why. The
    /// general way spent about 95 instructions on this frame (callgrind,
    /// `forwarder run --mode route`): each stage's checks, the `Result`
    /// passed between them and the entry copied again.
    #[inline(always)]
    fn send_plain(&mut self, tables: &Tables, burst: &mut Burst, i: usize, direct: usize) -> bool {
        if self.pending[i] {
            return false;
        }
        let h = match self.targets[i] {
            Some(t) if (t as usize) < direct => t as usize,
            // An ECMP group's member, by the flow's hash.
            Some(_) => match self.next_hop(tables, i) {
                Ok(h) => h as usize,
                Err(_) => return false,
            },
            None => return false,
        };
        let (Some(&e), Some(p)) = (self.egress.get(h), self.parsed.get(i)) else {
            return false;
        };
        let len = burst.frame_len(i);
        // A frame over the limit (0 for a hop not ready), tagged either
        // way, or expiring goes the general way; the parse saw the IP
        // header whole, so 26 bytes are there for a frame it kept.
        if len > e.limit as usize || p.l3_off != 14 || p.ttl <= 1 || len < 26 {
            return false;
        }
        let (l3, ttl) = (p.l3, p.ttl - 1);
        // `TAGGED` puts the queue past every list.
        let Some(out) = self.out.get_mut(e.queue as usize) else {
            return false;
        };
        let Some(f) = burst.frame_mut(i).first_chunk_mut::<26>() else {
            return false;
        };
        let (head, ip) = f.split_at_mut(14);
        head[..12].copy_from_slice(&e.macs);
        if let Some(ip) = ip.first_chunk_mut::<12>() {
            wire::set_ttl(ip, l3, ttl);
        }
        out.push(i as u8);
        true
    }
}
