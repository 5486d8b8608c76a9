//! The route stage: one batched FIB lookup per family through the
//! per-core route hint and dst cache, then the ECMP member by flow hash.

use super::{Fate, Pipeline, MAX_BURST};
use crate::snapshot::Tables;
use crate::wire::{Drop, L3};
use routecache::FlowKey;

impl Pipeline {
    /// The FIB's targets of the packets still going, one batched lookup
    /// per family.
    pub(super) fn lookup_routes(&mut self, tables: &Tables, n: usize) {
        self.dst4.clear();
        self.dst6.clear();
        self.idx4.clear();
        self.idx6.clear();
        for i in 0..n {
            if matches!(self.fate[i], Fate::Dropped(_) | Fate::Cached) {
                continue;
            }
            let p = &self.parsed[i];
            match p.l3 {
                L3::V4 => {
                    self.dst4.push(p.dst as u32);
                    self.idx4.push(i as u8);
                }
                L3::V6 => {
                    self.dst6.push(p.dst);
                    self.idx6.push(i as u8);
                }
            }
        }
        let fib = &tables.fib;
        let gen = fib.generation();
        let mut found = [None; MAX_BURST];
        self.router4.route_burst(
            &self.dst4,
            gen,
            |k, o| fib.lookup_burst_v4(k, o),
            &mut found[..self.dst4.len()],
        );
        for (j, &i) in self.idx4.iter().enumerate() {
            self.targets[i as usize] = found[j];
        }
        self.router6.route_burst(
            &self.dst6,
            gen,
            |k, o| fib.lookup_burst_v6(k, o),
            &mut found[..self.dst6.len()],
        );
        for (j, &i) in self.idx6.iter().enumerate() {
            self.targets[i as usize] = found[j];
        }
    }

    /// The next hop of a routed packet (its target resolved, an ECMP
    /// group's member picked by the flow hash), as an index in the FIB's
    /// hops, or why it has none.
    #[inline]
    pub(super) fn next_hop(&self, tables: &Tables, i: usize) -> Result<u32, Drop> {
        let p = &self.parsed[i];
        let t = self.targets[i].ok_or(Drop::NoRoute)?;
        let flow = FlowKey {
            src: p.src,
            dst: p.dst,
            sport: p.sport,
            dport: p.dport,
            proto: p.proto,
        };
        tables
            .fib
            .targets()
            .resolve_index(t, flow.hash(tables.flow_seed))
            .ok_or(Drop::UnknownNextHop)
    }
}
