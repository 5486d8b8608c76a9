//! The benchmark modes that stop short of the full pipeline (see
//! [`super::Mode`]): rewrite MACs only, or parse and rewrite towards the
//! first next hop.

use super::prepared::Egress;
use super::{Fate, Pipeline};
use crate::port::Burst;
use crate::reason::DropReason;
use crate::wire;

impl Pipeline {
    /// Every frame's MACs set to the first next hop's, nothing parsed;
    /// frames too short for an Ethernet header are dropped.
    // Out of line, as `rewrite_only`: inlined into `process`, these
    // benchmark modes cost the full pipeline instructions (its registers
    // are allocated around them; `examples/turns` under callgrind).
    #[inline(never)]
    pub(super) fn rewrite_macs(&mut self, burst: &mut Burst, n: usize) {
        let Some(Egress { macs, queue, .. }) = self.egress.first().copied() else {
            return;
        };
        let Some(out) = self.out.get_mut(queue as usize) else {
            // A hop on a port this pipeline lacks: as `send` counts it.
            self.counters.drops[DropReason::UnknownNextHop.index()] += n as u64;
            return;
        };
        for i in 0..n {
            let f = burst.frame_mut(i);
            if f.len() >= 14 {
                f[..12].copy_from_slice(&macs);
                out.push(i as u8);
            } else {
                self.counters.drops[DropReason::Truncated.index()] += 1;
            }
        }
        self.counters.tx += out.len() as u64;
    }

    /// Every parsed frame rewritten towards the first next hop.
    #[inline(never)]
    pub(super) fn rewrite_only(&mut self, burst: &mut Burst, n: usize) {
        let Some(e) = self.egress.first().copied() else {
            return;
        };
        let Some(out) = self.out.get_mut(e.queue as usize) else {
            // As in `rewrite_macs`.
            self.counters.drops[DropReason::UnknownNextHop.index()] += n as u64;
            return;
        };
        for i in 0..n {
            if let Fate::Dropped(d) = self.fate[i] {
                self.counters.drops[d.index()] += 1;
                continue;
            }
            let p = &self.parsed[i];
            match wire::rewrite_with(burst.frame_mut(i), p, &e.macs) {
                Ok(()) => {
                    out.push(i as u8);
                    self.counters.tx += 1;
                }
                Err(d) => self.counters.drops[d.index()] += 1,
            }
        }
    }
}
