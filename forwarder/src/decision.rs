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
