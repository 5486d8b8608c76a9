//! Looking keys up in a tree of cuts: descents a burst at a time, leaf
//! groups checked sixteen elements at once, and the changes since the
//! tree was built (extra elements, gone ids) beside it.

use super::*;
use std::sync::Arc;

/// A snapshot's classifier: the shared tree, plus what changed since it
/// was built.
#[derive(Clone, Debug)]
pub(crate) struct Classifier {
    tree: Arc<Cuts>,
    /// Elements inserted since the tree was built, in rank order, and
    /// their ranks.
    extra: Groups,
    extra_leaf: Leaf,
    extra_rank: Vec<u64>,
    /// Ids deleted since the tree was built (a bitset).
    gone: Vec<u64>,
    /// One tree and nothing beside it: an answer needs no rank (a load of
    /// the rank table saved per key), decided once here rather than from
    /// two fields at every leaf.
    unranked: bool,
}

/// What a lookup needs besides the key: how to check an element in full
/// (sets with wide fields), given its id.
pub(crate) trait Verify {
    fn holds(&self, id: u32, key: &[u8]) -> bool;
}

impl Classifier {
    /// A classifier of `tree` and the changes since: `extra` inserted (any
    /// order), `gone` deleted ids.
    pub(crate) fn new(tree: Arc<Cuts>, mut extra: Vec<Entry>, gone: &[u32]) -> Classifier {
        extra.sort_by_key(|e| e.rank);
        let mut groups = Groups::default();
        let leaf = groups.push_entries(tree.rows(), extra.len(), |i| &extra[i], |i| extra[i].id);
        // `first_in` reads the groups unchecked: a leaf past them would
        // be a bug of `push_entries`, stopped here.
        assert!(
            leaf.fits(groups.words().len(), tree.lane_words()),
            "extra leaf past its groups"
        );
        let mut bits = Vec::new();
        for &id in gone {
            let i = id as usize;
            if bits.len() <= i / 64 {
                bits.resize(i / 64 + 1, 0u64);
            }
            bits[i / 64] |= 1 << (i % 64);
        }
        Classifier {
            unranked: tree.roots.len() == 1 && leaf.groups == 0,
            tree,
            extra: groups,
            extra_leaf: leaf,
            extra_rank: extra.iter().map(|e| e.rank).collect(),
            gone: bits,
        }
    }

    pub(crate) fn tree(&self) -> &Arc<Cuts> {
        &self.tree
    }

    /// Bytes of the tree and the changes.
    pub(crate) fn memory_usage(&self) -> usize {
        self.tree.memory_usage()
            + self.extra.memory_usage()
            + self.extra_rank.capacity() * 8
            + self.gone.capacity() * 8
    }

    #[inline(always)]
    fn is_gone(&self, id: u32) -> bool {
        let i = id as usize;
        self.gone
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// The leaf a key's dimension values lead to.
    #[inline(always)]
    fn descend(&self, root: u32, vals: &[u32; MAX_DIMS], pick: impl Fn(&Node, u32) -> u32) -> u32 {
        let mut r = root;
        while r & LEAF == 0 {
            r = self.tree.child(r, vals, &pick);
        }
        r & !LEAF
    }

    /// The first element (in rank order) of leaf `l` in `words` that
    /// holds the key, skipping gone ids: its tag (`id_of` gives the id
    /// of a tag) and its position (group, lane), its rank order.
    #[inline(always)]
    #[allow(unsafe_code)]
    fn first_in(
        &self,
        (words, l, id_of): (&[u32], Leaf, impl Fn(u32) -> u32),
        skip_gone: bool,
        vals: &[u32],
        (keys, key_at): (&[u8], usize),
        verify: &impl Verify,
        mask: impl Fn(&[u32], usize, &[u32]) -> u32,
    ) -> Option<(u32, usize)> {
        let w = l.width as usize;
        let per = w * lane_words(vals.len(), self.tree.word_dims);
        for g in 0..l.groups as usize {
            let at = l.start as usize + g * per;
            debug_assert!(at + per <= words.len() && l.last <= l.width);
            // SAFETY: `l` is a leaf of `words` (a tree's, or the extra
            // elements'), and every such leaf's groups lie inside its
            // words (`Leaf::fits`, asserted when built): `g < groups`.
            let b = unsafe { words.get_unchecked(at..at + per) };
            let mut m = mask(&b[w..], w, vals);
            while m != 0 {
                let lane = m.trailing_zeros() as usize;
                m &= m - 1;
                // SAFETY: `mask` sets only lanes below the width, and `b`
                // starts with `width` ids.
                let tag = unsafe { *b.get_unchecked(lane) };
                let id = id_of(tag);
                if (skip_gone && self.is_gone(id))
                    || (!self.tree.exact && !verify.holds(id, &keys[key_at..]))
                {
                    continue;
                }
                return Some((tag, g * w + lane));
            }
        }
        None
    }

    /// Leaf `leaf` of the tree, unless its first element ranks at or
    /// after `bound` (nothing in it can then beat the answer so far).
    #[inline(always)]
    fn leaf_before(&self, leaf: u32, bound: u64) -> Option<Leaf> {
        let l = self.tree.leaf_at(leaf);
        (l.first < bound).then_some(l)
    }

    /// The first-ranked element of leaf `leaf` (of the tree's `words`)
    /// holding `key`: its place in the tree's rank order, as the order to
    /// compare and as the place (`u64::MAX` and an unused place for none;
    /// an order of 0 for any match where the classifier is unranked), if
    /// it ranks before `bound` (the best answer of the trees before).
    ///
    /// A leaf whose first element ranks after `bound` is not read: in a
    /// forest, a key that an earlier tree matched skips every later
    /// leaf of lower-ranked elements.
    ///
    /// `words` must be the tree's groups' words (`Groups::words`, which
    /// branches on where they are: read once a burst): the leaf's groups
    /// are read from them unchecked.
    #[inline(always)]
    fn resolve(
        &self,
        (words, leaf): (&[u32], u32),
        bound: u64,
        vals: &[u32],
        key: (&[u8], usize),
        verify: &impl Verify,
        mask: impl Fn(&[u32], usize, &[u32]) -> u32 + Copy,
    ) -> (u64, u32) {
        let t = &*self.tree;
        let Some(l) = self.leaf_before(leaf, bound) else {
            return (u64::MAX, u32::MAX);
        };
        match self.first_in(
            (words, l, |p| t.ids[p as usize]),
            !self.gone.is_empty(),
            vals,
            key,
            verify,
            mask,
        ) {
            Some((p, _)) if self.unranked => (0, p),
            Some((p, _)) => (p as u64, p),
            None => (u64::MAX, u32::MAX),
        }
    }

    /// [`Classifier::resolve`] where no id is gone and the tree is exact
    /// (no element needs a full check): a group's first matching lane is
    /// the answer. Kept apart so that the checks' loop holds nothing
    /// else live (callgrind: the general loop spilled a dozen values a
    /// leaf to the stack). `words` as for [`Classifier::resolve`].
    /// `RANKED`: the bound may be below `u64::MAX` (a forest, or extra
    /// elements beside the tree), so that a lone tree's checks test no
    /// group against it (1K sets: 2-7 % slower with the test).
    #[inline(always)]
    #[allow(unsafe_code)]
    fn resolve_exact<const RANKED: bool>(
        &self,
        words: &[u32],
        leaf: u32,
        bound: u64,
        vals: &[u32],
        mask: impl Fn(&[u32], usize, &[u32]) -> u32 + Copy,
    ) -> (u64, u32) {
        let t = &*self.tree;
        let l = t.leaf_at(leaf);
        if l.first >= bound {
            return (u64::MAX, u32::MAX);
        }
        let w = l.width as usize;
        let per = w * lane_words(vals.len(), self.tree.word_dims);
        let mut at = l.start as usize;
        for _ in 0..l.groups {
            debug_assert!(at + per <= words.len());
            // SAFETY: as in `first_in`: the leaf's groups lie inside the
            // tree's words (`Leaf::fits`, asserted when built), which
            // `words` are (this function's contract).
            let b = unsafe { words.get_unchecked(at..at + per) };
            // A group's lanes are in rank order, the leaf's groups too: a
            // group whose first element ranks at or after the bound, and
            // every group after it, cannot beat the answer so far (for
            // the first group, the leaf's test again): one line of tags
            // read, not the group's rows. A forest's merged trees hold
            // early and late rules in one leaf (ClassBench's fw1_100K,
            // whose trace is mostly answered at place 28,634 by the first
            // tree; probe, median of 3 alternating): fw1_100K 28.6 -> 26.6
            // ns, fw1_10K 34.6 -> 32.6, ipc1_100K 76 -> 73.5; callgrind
            // (AVX2) 458 -> 427 and 427 -> 391 instructions a lookup. With
            // four trees unmerged it was level.
            if RANKED && b[0] as u64 >= bound {
                break;
            }
            let m = mask(&b[w..], w, vals);
            if m != 0 {
                // SAFETY: `mask` sets only lanes below the width, and `b`
                // starts with `width` ids.
                let p = unsafe { *b.get_unchecked(m.trailing_zeros() as usize) };
                return (if self.unranked { 0 } else { p as u64 }, p);
            }
            at += per;
        }
        (u64::MAX, u32::MAX)
    }

    /// The answer of the trees' best `(order, place)` ([`Classifier::resolve`])
    /// and the extra elements: the id of the first-ranked.
    #[inline(always)]
    fn with_extra(
        &self,
        best: (u64, u32),
        vals: &[u32],
        key: (&[u8], usize),
        verify: &impl Verify,
        mask: impl Fn(&[u32], usize, &[u32]) -> u32 + Copy,
    ) -> Option<u32> {
        let t = &*self.tree;
        if self.extra_leaf.groups != 0 {
            let more = self.first_in(
                (self.extra.words(), self.extra_leaf, |id| id),
                false,
                vals,
                key,
                verify,
                mask,
            );
            if let Some((id, at)) = more {
                let tree = if best.0 == u64::MAX {
                    u64::MAX
                } else {
                    t.ranks[best.1 as usize]
                };
                if self.extra_rank[at] < tree {
                    return Some(id);
                }
            }
        }
        (best.0 != u64::MAX).then(|| t.ids[best.1 as usize])
    }

    /// The dimension values of a key: read without a check per
    /// dimension where the key is long enough for all of them (a key of a
    /// burst but the last, followed by the next: the check was four
    /// instructions a dimension, a twentieth of a 1K set's lookup).
    #[inline(always)]
    #[allow(unsafe_code)]
    fn values(&self, key: &[u8], vals: &mut [u32]) {
        let t = &*self.tree;
        let dims = &t.dims[..vals.len()];
        if key.len() >= t.read_end {
            for (v, d) in vals.iter_mut().zip(dims) {
                // SAFETY: `off + 4 <= read_end <= key.len()` for every
                // dimension of the tree (`read_end` is their largest).
                *v = unsafe { d.value_within(key) };
            }
        } else {
            for (v, d) in vals.iter_mut().zip(dims) {
                *v = d.value(key);
            }
        }
    }

    /// Sends each key of `at` (leaf references of one tree, whose leaves
    /// keep sieves of dimension `d`) whose value in `d` (its row of
    /// `rows`) is not in its leaf's sieve to the empty leaf, which ranks
    /// after every answer: its groups are not read. A select, not a
    /// branch, a key.
    #[inline(always)]
    fn sieve(&self, at: &mut [u32], rows: &[[u32; BURST_DIMS]], d: usize) {
        let t = &*self.tree;
        let empty = t.empty_leaf | LEAF;
        for (r, row) in at.iter_mut().zip(rows) {
            let s = t.sieves[(*r & !LEAF) as usize];
            let pass = s >> sieve_bit(row[d % BURST_DIMS]) & 1 != 0;
            *r = if pass { *r } else { empty };
        }
    }

    /// Looks one key up.
    #[inline(always)]
    pub(crate) fn lookup(
        &self,
        key: &[u8],
        verify: &impl Verify,
        pick: impl Fn(&Node, u32) -> u32,
        mask: impl Fn(&[u32], usize, usize, &[u32]) -> u32 + Copy,
    ) -> Option<u32> {
        let wd = self.tree.word_dims;
        let mask = move |r: &[u32], w: usize, v: &[u32]| mask(r, w, wd, v);
        let nd = self.tree.dims.len();
        let mut buf = [0u32; MAX_DIMS];
        self.values(key, &mut buf[..nd]);
        let vals = &buf[..nd];
        let mut best = (u64::MAX, u32::MAX);
        let words = self.tree.groups.words();
        for (ti, (&root, &first)) in self.tree.roots.iter().zip(&self.tree.firsts).enumerate() {
            // Nothing in this tree ranks before the answer so far.
            if first >= best.0 {
                continue;
            }
            let mut leaf = self.descend(root, &buf, &pick);
            if let Some(&d) = self.tree.sieve_dim.get(ti).filter(|&&d| d != NO_SIEVE) {
                let mut at = [leaf | LEAF];
                let row: [u32; BURST_DIMS] = std::array::from_fn(|i| buf[i]);
                self.sieve(&mut at, &[row], d as usize);
                leaf = at[0] & !LEAF;
            }
            let found = self.resolve((words, leaf), best.0, vals, (key, 0), verify, mask);
            if found.0 < best.0 {
                best = found;
            }
        }
        self.with_extra(best, vals, (key, 0), verify, mask)
    }

    /// Looks up to [`BURST`] keys up: every key's values, then the
    /// descent of all keys level by level (their loads overlap), then
    /// each key's leaf. Instantiated for each dimension count up to 6 (a
    /// 5-tuple has five), as the bitmap lookup is for each field shape, so
    /// that the loops over dimensions unroll. `(keys, stride)`: the keys
    /// back to back, `stride` bytes apart.
    #[inline(always)]
    pub(crate) fn burst(
        &self,
        (keys, stride): (&[u8], usize),
        out: &mut [Option<u32>],
        verify: &impl Verify,
        pick: impl Fn(&Node, u32) -> u32,
        mask: impl Fn(&[u32], usize, usize, &[u32]) -> u32 + Copy,
        first: Option<FirstStep>,
    ) {
        let (k, f) = ((keys, stride), first);
        // Every layout of `PACKED` has a form of its own here (a test
        // checks it), or its groups would go through the general form.
        match self.tree.rows() {
            (1, 1) => self.burst_n::<1, 1>(k, out, verify, pick, mask, f),
            (2, 2) => self.burst_n::<2, 2>(k, out, verify, pick, mask, f),
            (3, 3) => self.burst_n::<3, 3>(k, out, verify, pick, mask, f),
            (4, 4) => self.burst_n::<4, 4>(k, out, verify, pick, mask, f),
            (5, 5) => self.burst_n::<5, 5>(k, out, verify, pick, mask, f),
            (6, 6) => self.burst_n::<6, 6>(k, out, verify, pick, mask, f),
            (1, 0) => self.burst_n::<1, 0>(k, out, verify, pick, mask, f),
            (2, 1) => self.burst_n::<2, 1>(k, out, verify, pick, mask, f),
            (3, 1) => self.burst_n::<3, 1>(k, out, verify, pick, mask, f),
            (3, 2) => self.burst_n::<3, 2>(k, out, verify, pick, mask, f),
            (4, 2) => self.burst_n::<4, 2>(k, out, verify, pick, mask, f),
            (5, 2) => self.burst_n::<5, 2>(k, out, verify, pick, mask, f),
            _ => self.burst_n::<0, 0>(k, out, verify, pick, mask, f),
        }
    }

    /// Whether a burst of a tree whose groups lie as `rows` ([`Cuts::rows`])
    /// goes through a form of [`Classifier::burst_n`] of its own.
    #[cfg(test)]
    pub(crate) fn has_own_form(rows: (usize, usize)) -> bool {
        matches!(
            rows,
            (1, 1)
                | (2, 2)
                | (3, 3)
                | (4, 4)
                | (5, 5)
                | (6, 6)
                | (1, 0)
                | (2, 1)
                | (3, 1)
                | (3, 2)
                | (4, 2)
                | (5, 2)
        )
    }

    /// [`Classifier::burst`] for `ND` dimensions of which the first `WD`
    /// are stored as words ([`Groups`]); `(0, 0)`: any.
    #[inline(always)]
    #[allow(unsafe_code)]
    fn burst_n<const ND: usize, const WD: usize>(
        &self,
        (keys, stride): (&[u8], usize),
        out: &mut [Option<u32>],
        verify: &impl Verify,
        pick: impl Fn(&Node, u32) -> u32,
        mask4: impl Fn(&[u32], usize, usize, &[u32]) -> u32 + Copy,
        first: Option<FirstStep>,
    ) {
        let t = &*self.tree;
        // The group checks' row layout: a constant of this form (its
        // tests and row offsets folded into the checks: with the layout
        // read from the tree, ClassBench's ipc1_100K took 747
        // instructions a lookup where this takes 601, AVX2), or the
        // tree's.
        debug_assert!(ND == 0 || (ND, WD) == t.rows());
        let wd = if ND == 0 { t.word_dims } else { WD };
        let mask = move |r: &[u32], w: usize, v: &[u32]| mask4(r, w, wd, v);
        let nd = if ND == 0 { t.dims.len() } else { ND };
        let exact = t.exact && self.gone.is_empty();
        // `unranked`: one tree and no extra elements.
        let direct = exact && self.unranked;
        let words = t.groups.words();
        for (c, outs) in out.chunks_mut(BURST).enumerate() {
            let keys = &keys[c * BURST * stride..];
            let n = outs.len();
            let mut vals = [[0u32; BURST_DIMS]; BURST];
            if nd > BURST_DIMS {
                for (j, o) in outs.iter_mut().enumerate() {
                    *o = self.lookup(&keys[j * stride..], verify, &pick, mask4);
                }
                continue;
            }
            // Keys whose every dimension's four bytes lie inside `keys`
            // (all but the last, where `keys` ends with it): read with
            // the dimensions' offsets and shifts held in locals, not
            // reloaded from the tree for each key and dimension (callgrind:
            // 45 instructions a key of a 5-tuple, where this is 30).
            let whole = if ND == 0 || keys.len() < t.read_end {
                0
            } else {
                ((keys.len() - t.read_end) / stride.max(1) + 1).min(n)
            };
            if whole > 0 {
                let mut off = [0usize; BURST_DIMS];
                let mut drop = [0u32; BURST_DIMS];
                for (d, dim) in t.dims[..nd].iter().enumerate() {
                    (off[d], drop[d]) = (dim.off as usize, dim.drop as u32);
                }
                for (j, row) in vals[..whole].iter_mut().enumerate() {
                    let at = j * stride;
                    for d in 0..nd {
                        // SAFETY: `at + off[d] + 4 <= at + read_end <=
                        // keys.len()` for `j < whole` (its definition).
                        row[d] = unsafe { read_within(keys, at + off[d], drop[d]) };
                    }
                }
            }
            for j in whole..n {
                self.values(&keys[j * stride..], &mut vals[j][..nd]);
            }
            let mut best = [(u64::MAX, u32::MAX); BURST];
            let nodes = &t.nodes[..];
            for (ti, (&root, &tf)) in t.roots.iter().zip(&t.firsts).enumerate() {
                // A tree none of whose elements ranks before any key's
                // answer so far is skipped, descent and all, when that
                // holds for every key of the burst (a forest's trees of
                // late, wide rules: ClassBench's fw1_100K, whose third
                // tree starts at place 83,266 of 92,420 while most of
                // its trace is answered at 28,634: 35.1 -> 31.6 ns).
                // Skipping key by key instead (each such key sent to an
                // empty leaf) made the descents' leaf tests mispredict:
                // ipc1_100K 81 -> 86-92 ns.
                if ti > 0 && best[..n].iter().all(|b| b.0 <= tf) {
                    continue;
                }
                let k = t.prefix[ti] as usize;
                let start = if k >= 2 {
                    // The tree's top levels all cut the root's dimension:
                    // each key goes through them with its one value, no
                    // test for leaves and no reference stored between
                    // levels, key after key (a fixed count of steps: the
                    // loop's branch predicted, the keys' chains
                    // overlapping). Callgrind, AVX2, a lookup: fw1_100K
                    // 675 -> 613 instructions, fw1_10K 502 -> 468,
                    // ipc1_100K 711 -> 689; AVX-512 (whose first step
                    // was already across keys) fw1_100K 31.7 -> 30.5 ns.
                    let d = ((root & DIM_BITS) >> 1) as usize;
                    let mut s = [root; BURST];
                    for (s, row) in s[..n].iter_mut().zip(&vals) {
                        let x = row[d % BURST_DIMS];
                        let mut r = root;
                        for _ in 0..k {
                            // `r` is a node: the first `k` levels are
                            // (`Cuts::same_dim_depth`, checked in
                            // `refs_valid`).
                            r = step(nodes, r, |_| x, &pick);
                        }
                        *s = r;
                    }
                    s
                } else {
                    match first {
                        // SAFETY: `root` is a node of this tree
                        // (`Cuts::refs_valid`), its dimension below `nd <=
                        // BURST_DIMS`, and `n <= BURST`.
                        Some(f) if root & LEAF == 0 => unsafe {
                            f(t.node_at(root), ((root & DIM_BITS) >> 1) as usize, &vals, n)
                        },
                        _ => [root; BURST],
                    }
                };
                let mut at = descend_burst(nodes, start, n, &vals, &pick);
                if let Some(&d) = t.sieve_dim.get(ti).filter(|&&d| d != NO_SIEVE) {
                    self.sieve(&mut at[..n], &vals, d as usize);
                }
                // Every key's leaf is known now: ask for the first line of
                // each (its ids and its first rows) before reading any, so
                // that the leaves' misses overlap rather than queue behind
                // each key's checks. One line a key pays; all of a leaf's
                // lines cost more than they save (BENCHMARKS.md, "What did
                // not pay").
                for &r in &at[..n] {
                    let l = t.leaf_at(r & !LEAF);
                    crate::cpu::prefetch(words.as_ptr().wrapping_add(l.start as usize));
                }
                if direct {
                    // One exact tree and nothing beside it: its answer is
                    // the key's, with no best kept across trees (a store
                    // and a load of it, and the extra elements' test, a
                    // key).
                    for (j, o) in outs.iter_mut().enumerate() {
                        let (_, p) = self.resolve_exact::<false>(
                            words,
                            at[j] & !LEAF,
                            u64::MAX,
                            &vals[j][..nd],
                            mask,
                        );
                        *o = t.ids.get(p as usize).copied();
                    }
                    continue;
                }
                for j in 0..n {
                    let found = if exact {
                        self.resolve_exact::<true>(
                            words,
                            at[j] & !LEAF,
                            best[j].0,
                            &vals[j][..nd],
                            mask,
                        )
                    } else {
                        self.resolve(
                            (words, at[j] & !LEAF),
                            best[j].0,
                            &vals[j][..nd],
                            (keys, j * stride),
                            verify,
                            mask,
                        )
                    };
                    // Ranks are unique (priority, then the order added):
                    // the rank alone decides, where the pair's compare
                    // was nine instructions more a tree.
                    if found.0 < best[j].0 {
                        best[j] = found;
                    }
                }
            }
            if direct {
                continue;
            }
            for (j, o) in outs.iter_mut().enumerate() {
                *o = self.with_extra(best[j], &vals[j][..nd], (keys, j * stride), verify, mask);
            }
        }
    }
}

/// Keys a burst descends together.
pub(crate) const BURST: usize = 32;

/// Most dimensions a burst keeps on its stack for all of its keys (a
/// power of two: see [`Cuts::child`]); sets with more go key by key.
pub(crate) const BURST_DIMS: usize = 16;

/// A burst's dimension values, a row of them per key (`rows[j][d]`).
pub(crate) type Rows = [[u32; BURST_DIMS]; BURST];

/// A tree's first step done across keys (the root is every key's, so its
/// cuts are compared with sixteen keys' values at once): the child of
/// `root` that each of the first `n` keys goes to, by its value of
/// dimension `dim` in `rows`; the rest are unspecified.
///
/// # Safety
///
/// `dim < BURST_DIMS`, `n <= BURST`, and the CPU has what the function
/// needs.
pub(crate) type FirstStep = unsafe fn(&Node, usize, &Rows, usize) -> [u32; BURST];
