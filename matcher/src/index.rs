//! The overlap index: one interval tree per field over the elements'
//! ranges, so that an insert finds every element it overlaps without
//! scanning the whole set.
//!
//! An element overlaps a new one when their ranges intersect in *every*
//! field. Each field's tree lists the elements whose range in that field
//! intersects the new range; the candidates of any one field are a superset
//! of the overlapping elements. We enumerate all fields' trees a step at a
//! time with a growing budget and stop as soon as one field's enumeration is
//! complete, then check its candidates in full. The cost follows the most
//! selective field (the smallest candidate list), so bulk loads stay
//! near-linear even when a field is the same in every element (a fixed
//! protocol, one network with many ports).

use crate::field::Range;

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node {
    start: u128,
    end: u128,
    /// Largest `end` in this node's subtree: lets a query skip subtrees
    /// that end before the queried range starts.
    max_end: u128,
    id: u32,
    prio: u32,
    left: u32,
    right: u32,
}

/// An interval tree (a treap ordered by `(start, id)`, augmented with the
/// largest end of each subtree).
#[derive(Clone, Debug)]
pub(crate) struct IntervalTree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    rng: u64,
}

impl Default for IntervalTree {
    fn default() -> Self {
        IntervalTree {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            rng: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

impl IntervalTree {
    fn next_prio(&mut self) -> u32 {
        // xorshift64*: priorities only need to look random to the treap.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }

    fn key(&self, n: u32) -> (u128, u32) {
        let n = &self.nodes[n as usize];
        (n.start, n.id)
    }

    fn update(&mut self, n: u32) {
        let (l, r) = (self.nodes[n as usize].left, self.nodes[n as usize].right);
        let mut m = self.nodes[n as usize].end;
        if l != NIL {
            m = m.max(self.nodes[l as usize].max_end);
        }
        if r != NIL {
            m = m.max(self.nodes[r as usize].max_end);
        }
        self.nodes[n as usize].max_end = m;
    }

    /// Splits `t` into keys `< k` and keys `>= k`.
    fn split(&mut self, t: u32, k: (u128, u32)) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.key(t) < k {
            let (l, r) = self.split(self.nodes[t as usize].right, k);
            self.nodes[t as usize].right = l;
            self.update(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.nodes[t as usize].left, k);
            self.nodes[t as usize].left = r;
            self.update(t);
            (l, t)
        }
    }

    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.update(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.update(b);
            b
        }
    }

    /// Adds element `id`'s range.
    pub(crate) fn insert(&mut self, r: Range, id: u32) {
        let prio = self.next_prio();
        let node = Node {
            start: r.start,
            end: r.end,
            max_end: r.end,
            id,
            prio,
            left: NIL,
            right: NIL,
        };
        let n = match self.free.pop() {
            Some(n) => {
                self.nodes[n as usize] = node;
                n
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let (l, r) = self.split(self.root, (r.start, id));
        let l = self.merge(l, n);
        self.root = self.merge(l, r);
    }

    /// Removes element `id`'s range (which starts at `start`).
    pub(crate) fn remove(&mut self, start: u128, id: u32) {
        let (l, r) = self.split(self.root, (start, id));
        let (m, r) = match id.checked_add(1) {
            Some(next) => self.split(r, (start, next)),
            None => (r, NIL),
        };
        if m != NIL {
            debug_assert_eq!(self.key(m), (start, id));
            self.free.push(m);
        }
        self.root = self.merge(l, r);
    }

    /// Collects the ids of ranges intersecting `q`, at most `limit` of
    /// them. Returns whether the enumeration is complete.
    pub(crate) fn intersecting(&self, q: Range, limit: usize, out: &mut Vec<u32>) -> bool {
        out.clear();
        self.collect(self.root, q, limit, out)
    }

    fn collect(&self, t: u32, q: Range, limit: usize, out: &mut Vec<u32>) -> bool {
        if t == NIL {
            return true;
        }
        let n = &self.nodes[t as usize];
        if n.max_end < q.start {
            return true;
        }
        if !self.collect(n.left, q, limit, out) {
            return false;
        }
        if n.start > q.end {
            // Everything to the right starts later still.
            return true;
        }
        if n.end >= q.start {
            if out.len() == limit {
                return false;
            }
            out.push(n.id);
        }
        self.collect(n.right, q, limit, out)
    }

    /// Bytes held.
    pub(crate) fn memory_usage(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.free.capacity() * 4
    }
}

/// One interval tree per field.
#[derive(Clone, Debug, Default)]
pub(crate) struct OverlapIndex {
    trees: Vec<IntervalTree>,
}

impl OverlapIndex {
    pub(crate) fn new(fields: usize) -> OverlapIndex {
        OverlapIndex {
            trees: vec![IntervalTree::default(); fields],
        }
    }

    pub(crate) fn insert(&mut self, key: &[Range], id: u32) {
        for (t, r) in self.trees.iter_mut().zip(key) {
            t.insert(*r, id);
        }
    }

    pub(crate) fn remove(&mut self, key: &[Range], id: u32) {
        for (t, r) in self.trees.iter_mut().zip(key) {
            t.remove(r.start, id);
        }
    }

    /// Candidates for an overlap with `key`: the complete list of elements
    /// intersecting it in the field where that list is shortest (up to a
    /// factor of two). Every overlapping element is among them.
    pub(crate) fn candidates(&self, key: &[Range], out: &mut Vec<u32>) {
        let mut limit = 16;
        loop {
            for (t, r) in self.trees.iter().zip(key) {
                if t.intersecting(*r, limit, out) {
                    return;
                }
            }
            limit *= 4;
        }
    }

    pub(crate) fn memory_usage(&self) -> usize {
        self.trees.iter().map(IntervalTree::memory_usage).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use routecache::gen::Rng;

    #[test]
    fn tree_matches_a_scan() {
        let mut t = IntervalTree::default();
        let mut live: Vec<(Range, u32)> = Vec::new();
        let mut rng = Rng(12345);
        let mut rnd = |m: u64| rng.below(m);
        for id in 0..2000u32 {
            let a = rnd(1000) as u128;
            let b = a + rnd(50) as u128;
            t.insert(Range::new(a, b), id);
            live.push((Range::new(a, b), id));
            if rnd(3) == 0 {
                let i = rnd(live.len() as u64) as usize;
                let (r, id) = live.swap_remove(i);
                t.remove(r.start, id);
            }
        }
        let mut out = Vec::new();
        for _ in 0..300 {
            let a = rnd(1100) as u128;
            let q = Range::new(a, a + rnd(20) as u128);
            assert!(t.intersecting(q, usize::MAX, &mut out));
            out.sort_unstable();
            let mut want: Vec<u32> = live
                .iter()
                .filter(|(r, _)| r.intersects(&q))
                .map(|&(_, id)| id)
                .collect();
            want.sort_unstable();
            assert_eq!(out, want);
        }
    }
}
