//! The simplest correct longest-prefix match: scan every route. The FIB,
//! the hint and the dst cache are all tested against it.

use crate::fib::{Family, TargetId};

/// Routes in a list.
#[derive(Clone, Debug, Default)]
pub struct NaiveLpm {
    routes: Vec<(Family, u128, u32, TargetId)>,
}

impl NaiveLpm {
    /// An empty list.
    pub fn new() -> NaiveLpm {
        NaiveLpm::default()
    }

    /// Adds or replaces a route.
    pub fn insert(&mut self, f: Family, prefix: u128, len: u32, t: TargetId) {
        self.remove(f, prefix, len);
        self.routes.push((f, prefix, len, t));
    }

    /// Removes a route; whether it was there.
    pub fn remove(&mut self, f: Family, prefix: u128, len: u32) -> bool {
        let n = self.routes.len();
        self.routes
            .retain(|r| !(r.0 == f && r.1 == prefix && r.2 == len));
        n != self.routes.len()
    }

    /// The target of the longest route containing `dst`.
    pub fn lookup(&self, f: Family, dst: u128) -> Option<TargetId> {
        let w = f.width();
        self.routes
            .iter()
            .filter(|r| r.0 == f)
            .filter(|r| r.2 == 0 || (dst ^ r.1) >> (w - r.2) == 0)
            .max_by_key(|r| r.2)
            .map(|r| r.3)
    }

    /// The longest route containing `dst`: (prefix, length, target).
    pub fn lookup_prefix(&self, f: Family, dst: u128) -> Option<(u128, u32, TargetId)> {
        let w = f.width();
        self.routes
            .iter()
            .filter(|r| r.0 == f)
            .filter(|r| r.2 == 0 || (dst ^ r.1) >> (w - r.2) == 0)
            .max_by_key(|r| r.2)
            .map(|r| (r.1, r.2, r.3))
    }

    /// The routes.
    pub fn routes(&self) -> &[(Family, u128, u32, TargetId)] {
        &self.routes
    }
}
