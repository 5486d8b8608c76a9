//! The flow cache stage: a burst's packets looked up in the per-core
//! flow cache (a hit takes its stored decision), misses' decisions
//! stored, and bursts the cache decided wholly sent without routing.

use super::flowcache::{Decision, FlowId};
use super::{Fate, Pipeline};
use crate::port::Burst;
use crate::reason::DropReason;

impl Pipeline {
    /// Looks every parsed packet's flow up in the flow cache: a hit takes
    /// the stored decision (and counts its matches), a miss goes through
    /// the sets and the routes and has its decision stored by `route`.
    /// Returns how many packets are left to classify and route.
    pub(super) fn lookup_flows(&mut self, burst: &Burst, n: usize) -> usize {
        let Some(flows) = self.flows.as_mut() else {
            return n;
        };
        if !flows.take_burst(n) {
            return n;
        }
        let (mut lookups, mut hits) = (0, 0);
        // Hash every packet (prefetching its bucket's tags), then find its
        // candidate entry (prefetching it), then probe: each pass's cache
        // misses overlap. (One pass doing all three per packet makes the
        // misses wait in line: BENCHMARKS.md, "What did not pay".)
        for i in 0..n {
            if self.fate[i] == Fate::Go {
                let id = FlowId::of(&self.parsed[i], burst.frame(i));
                self.flow_locs[i] = flows.hash(&id);
            }
        }
        for i in 0..n {
            if self.fate[i] == Fate::Go {
                self.flow_locs[i] = flows.candidates(self.flow_locs[i]);
            }
        }
        for i in 0..n {
            if self.fate[i] != Fate::Go {
                continue;
            }
            lookups += 1;
            // The flow again, from the parse (a copy kept per packet would
            // be seven stores for as many loads as this).
            let id = FlowId::of(&self.parsed[i], burst.frame(i));
            let found = flows.probe_in_burst(self.flow_locs[i], &id);
            // A decision bound to another port is none for this packet
            // (its flow is classified again, its decision stored anew).
            let found = if self.bind_port {
                let at = (self.tagged, &self.ingress[..], self.rx_port);
                found.and_then(|d| d.for_port(super::port_tag(true, at, i)))
            } else {
                found
            };
            match found {
                Some(d) => {
                    hits += 1;
                    self.fate[i] = Fate::Cached;
                    self.decisions[i] = d;
                    count_matches(&mut self.counters, d.matches);
                }
                None => self.pending[i] = true,
            }
        }
        flows.account(lookups, hits);
        (lookups - hits) as usize
    }

    /// Packet `i` takes a stored decision (the flow cache's, or its
    /// connection's), and its matches are counted.
    #[inline(always)]
    pub(super) fn take_decision(&mut self, i: usize, d: Decision) {
        self.fate[i] = Fate::Cached;
        self.decisions[i] = d;
        count_matches(&mut self.counters, d.matches);
    }

    /// Stores a missed packet's decision (the index of its next hop, or
    /// why it is dropped) in the flow cache, or in its connection's entry
    /// (entering a new connection it forwards). Returns the packet's
    /// fate: `hop`, unless a new connection found no room.
    // The test inline, the store out of line: a call per packet (its
    // register saves and restores) would cost every packet where nothing
    // is pending (the flow cache off, or standing aside).
    #[inline(always)]
    pub(super) fn decided(
        &mut self,
        burst: &Burst,
        i: usize,
        hop: Result<u32, DropReason>,
    ) -> Result<u32, DropReason> {
        if self.pending[i] {
            return self.store_decision(burst, i, hop);
        }
        hop
    }

    #[inline(never)]
    pub(super) fn store_decision(
        &mut self,
        burst: &Burst,
        i: usize,
        hop: Result<u32, DropReason>,
    ) -> Result<u32, DropReason> {
        let m = self.match_bits[i];
        // A packet a counted element matched keeps no decision: its
        // flow's next packets are classified, and counted.
        let mut keep = self.counted >> i & 1 == 0;
        let mut d = match hop {
            Ok(h) => Decision::forward(m, h),
            Err(d) => Decision::drop(m, d),
        };
        if self.bind_port {
            // Bound to the packet's port; a port or hop past what the
            // bits hold keeps none.
            match d.bound(self.port_tag(i)) {
                Some(b) => d = b,
                None => keep = false,
            }
        }
        if let Some(ct) = self.conntrack.as_mut() {
            if !ct.commit(&self.tracked[i], &self.ct_seen[i], self.ct_hash[i], d, keep) {
                return Err(DropReason::ConntrackFull);
            }
        } else if let (Some(f), true) = (self.flows.as_mut(), keep) {
            f.fill(
                self.flow_locs[i],
                &FlowId::of(&self.parsed[i], burst.frame(i)),
                d,
            );
        }
        hop
    }

    /// Rewrites and lists by egress port a burst whose every packet the
    /// flow cache decided or the parse dropped (most bursts, with the
    /// cache warm): [`Pipeline::route`] without its routing and its
    /// stores into the cache, a loop small enough to stay in registers.
    pub(super) fn send_decided(&mut self, burst: &mut Burst, n: usize) {
        for i in 0..n {
            let hop = match self.fate[i] {
                Fate::Dropped(d) => Err(d),
                _ => self.decisions[i].hop(),
            };
            self.send(burst, i, hop);
        }
        self.count_sent();
    }
}

/// Counts a stored decision's set matches: two bits a set, its outcome's
/// index plus one.
#[inline(always)]
pub(super) fn count_matches(c: &mut super::Counters, mut bits: u32) {
    while bits != 0 {
        let at = bits.trailing_zeros() & !1;
        let code = (bits >> at) & 3;
        c.matches[at as usize / 2][code as usize - 1] += 1;
        bits &= !(3 << at);
    }
}
