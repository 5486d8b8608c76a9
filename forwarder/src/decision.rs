//! What the sets and the routes decided for a packet, in two words: what
//! the flow cache and connection tracking's entries keep, so that the
//! next packets of a flow skip both.

use crate::reason::DropReason;

/// What the sets and the routes decided for a flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Matches per set: 2 bits for set `i` at bit `2 i`: 0 no match, else
    /// 1 + the index of the verdict counter (`[drop, accept, continue]`).
    pub matches: u32,
    /// [`Decision::DROP`] + a [`DropReason`]'s index (by a rule, for want of a
    /// route or of a next hop), or the index of the next hop.
    pub outcome: u32,
}

impl Decision {
    /// Flag of a dropping outcome.
    pub const DROP: u32 = 1 << 31;

    /// Forward to next hop `hop` (an index in the FIB's hops).
    pub fn forward(matches: u32, hop: u32) -> Decision {
        Decision {
            matches,
            outcome: hop & !Decision::DROP,
        }
    }

    /// DropReason for `why`.
    pub fn drop(matches: u32, why: DropReason) -> Decision {
        Decision {
            matches,
            outcome: Decision::DROP | why.index() as u32,
        }
    }

    /// The bits of [`Decision::outcome`] that bind a decision to the port
    /// (or sub-interface) its packet came in on, as [`Decision::bound`]
    /// writes them: where a set reads `meta iifname`, a flow's decision
    /// holds for the packets of that port only. Hops and reasons take
    /// the bits below.
    pub const PORT_BITS: u32 = (Decision::PORT_TAGS - 1) << Decision::PORT_SHIFT;
    /// Where the port's tag starts in [`Decision::outcome`].
    const PORT_SHIFT: u32 = 20;
    /// How many tags the bits hold (0, unbound, among them).
    const PORT_TAGS: u32 = 1 << 11;
    /// The first hop index that cannot be stored beside a port.
    pub const HOP_LIMIT: u32 = 1 << Decision::PORT_SHIFT;

    /// The port tag of port `port` (its index plus one: 0 is unbound),
    /// or `None` for a port past what the bits hold.
    #[inline(always)]
    pub fn port_tag(port: u16) -> Option<u32> {
        let t = port as u32 + 1;
        (t < Decision::PORT_TAGS).then_some(t)
    }

    /// The decision bound to the port of tag `tag` (see
    /// [`Decision::port_tag`]), or `None` when its hop is past
    /// [`Decision::HOP_LIMIT`] or the tag past what the bits hold.
    #[inline]
    pub fn bound(self, tag: u32) -> Option<Decision> {
        let plain = self.outcome & !Decision::DROP;
        (plain < Decision::HOP_LIMIT && tag < Decision::PORT_TAGS).then_some(Decision {
            matches: self.matches,
            outcome: self.outcome | tag << Decision::PORT_SHIFT,
        })
    }

    /// A decision stored bound (see [`Decision::bound`]), for a packet of
    /// the port of tag `tag`: the decision as taken, or `None` when it
    /// was taken for another port.
    #[inline(always)]
    pub fn for_port(self, tag: u32) -> Option<Decision> {
        ((self.outcome & Decision::PORT_BITS) >> Decision::PORT_SHIFT == tag).then_some(Decision {
            matches: self.matches,
            outcome: self.outcome & !Decision::PORT_BITS,
        })
    }

    /// The next hop's index, or the reason to drop.
    #[inline(always)]
    pub fn hop(&self) -> Result<u32, DropReason> {
        if self.outcome & Decision::DROP == 0 {
            return Ok(self.outcome);
        }
        let i = (self.outcome & !Decision::DROP) as usize;
        Err(DropReason::ALL.get(i).copied().unwrap_or(DropReason::Rule))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A decision bound to a port comes back whole for that port only;
    /// every hop below the limit and every reason survives the binding.
    #[test]
    fn a_bound_decision_holds_for_its_port_only() {
        let mut rng = routecache::gen::Rng(7);
        for _ in 0..10_000 {
            let m = rng.next_u64() as u32;
            let d = if rng.next_u64().is_multiple_of(2) {
                Decision::forward(m, rng.below(Decision::HOP_LIMIT as u64) as u32)
            } else {
                let r = DropReason::ALL[rng.below(DropReason::ALL.len() as u64) as usize];
                Decision::drop(m, r)
            };
            let port = rng.below(2047) as u16;
            let tag = Decision::port_tag(port).unwrap();
            let b = d.bound(tag).unwrap();
            assert_eq!(b.for_port(tag), Some(d));
            assert_eq!(b.hop().is_ok(), d.hop().is_ok());
            let other = Decision::port_tag((port + 1 + rng.below(2046) as u16) % 2047).unwrap();
            assert_eq!(b.for_port(other), None);
            // Unbound, it is the decision of tag 0 (no set reads the port).
            assert_eq!(d.for_port(0), Some(d));
        }
        assert_eq!(Decision::port_tag(2047), None);
        assert_eq!(Decision::forward(0, Decision::HOP_LIMIT).bound(1), None);
        assert_eq!(Decision::forward(0, 1).bound(u32::MAX), None);
    }
}
