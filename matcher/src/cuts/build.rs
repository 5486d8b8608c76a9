//! Building a tree of cuts: the cuts each node makes, the leaves' groups,
//! and the choice between one tree and a forest of trees per anchor
//! dimension.

use super::sieve::{self, leaf_sieve};
use super::*;
use std::collections::HashMap;

struct Builder<'a> {
    /// Per leaf, a sieve of each dimension ([`Cuts::sieves`]), leaf by
    /// leaf.
    sieves: Vec<u64>,
    exact: bool,
    all: &'a [Entry],
    out: Cuts,
    /// Leaf entries all trees may hold before they stop cutting
    /// (replication guard: wide elements are copied into every child they
    /// span); those held so far are `out.entries`.
    budget: usize,
}

impl Builder<'_> {
    /// Builds the subtree of `rules` (indices into `all`, in rank order)
    /// inside `region`, with at most about `cap` leaf entries; returns its
    /// reference.
    fn build(&mut self, rules: &[u32], region: &mut [(u32, u32)], depth: usize, cap: usize) -> u32 {
        let mut rules = rules;
        if self.exact {
            // Elements after one that covers the whole region never match
            // first here.
            if let Some(p) = rules.iter().position(|&r| {
                self.all[r as usize]
                    .ranges
                    .iter()
                    .zip(region.iter())
                    .all(|(&(lo, hi), &(rlo, rhi))| lo <= rlo && hi >= rhi)
            }) {
                if p + 1 < rules.len() {
                    let id = self.all[rules[p] as usize].id as usize;
                    if self.out.shadows.len() <= id / 64 {
                        self.out.shadows.resize(id / 64 + 1, 0);
                    }
                    self.out.shadows[id / 64] |= 1 << (id % 64);
                }
                rules = &rules[..p + 1];
            }
        }
        let full = cap < rules.len() || self.out.nodes.len() >= NODE_INDEX as usize;
        if rules.len() > LEAF_MAX && full {
            self.out.exhausted = true;
        }
        if rules.len() <= LEAF_MAX || depth >= MAX_DEPTH || full {
            return self.leaf(rules);
        }
        let Some((d, padded, largest, copies)) = self.choose(rules, region) else {
            return self.leaf(rules);
        };
        // Up to two groups stay a leaf where the best cut splits them
        // poorly: a child keeps more than half of them, or they are copied
        // into children more than twice over. A level costs more than a
        // second group (a compare per dimension with AVX-512), and wide
        // elements copied down fill the tree (ClassBench); where the cut
        // separates well (hosts x services), it is still made.
        if rules.len() <= LEAF_WIDE && (2 * largest > rules.len() || copies > 2 * rules.len()) {
            return self.leaf(rules);
        }
        let cuts = padded.cuts();
        let (rlo, rhi) = region[d];
        // Each child's rules, in one array at their exact sizes (counted
        // first): wide rules are copied into many children, and a vector
        // for each child (or growing them) was a tenth of a build's
        // instructions in allocations.
        let mut span = Vec::with_capacity(rules.len());
        let mut sizes = [0usize; LANES];
        for &r in rules {
            let (lo, hi) = self.all[r as usize].ranges[d];
            let (a, b) = spans(&padded, lo.max(rlo), hi.min(rhi));
            span.push((a, b));
            for n in &mut sizes[a..=b] {
                *n += 1;
            }
        }
        let mut start = [0usize; LANES + 1];
        for k in 0..=cuts.len() {
            start[k + 1] = start[k] + sizes[k];
        }
        let mut children = vec![0u32; start[cuts.len() + 1]];
        let mut at = start;
        for (&r, &(a, b)) in rules.iter().zip(&span) {
            for k in a..=b {
                children[at[k]] = r;
                at[k] += 1;
            }
        }
        let n = self.out.nodes.len();
        let mut block = Block([u32::MAX; LANES]);
        block.0[..cuts.len()].copy_from_slice(cuts);
        self.out.nodes.push(Node {
            cuts: block,
            child: [0; LANES],
        });
        let mut refs = [0u32; LANES];
        // In one tree, each child gets a share of what is left of the
        // subtree's entries, by its elements: handed out first come,
        // first served, the budget ran out in the last children built,
        // leaving them uncut (ClassBench's fw1_1K: leaves of 240-287
        // elements where a third of the trace's keys go, 2.6 groups
        // checked a key; callgrind, 574 -> 435 instructions a lookup; and
        // ipc1_10K's one tree now beats its forest, 868 -> 468). A
        // forest's trees, whose elements are narrow in their anchor and
        // copy little, keep first come, first served: shared out, fw1_10K's
        // were starved to 12,000 entries and took 1,019 instructions, not
        // 846.
        let (mut left, mut rest) = (cap, children.len());
        for k in 0..=cuts.len() {
            region[d] = (
                if k == 0 { rlo } else { cuts[k - 1] },
                if k == cuts.len() { rhi } else { cuts[k] - 1 },
            );
            // One tree shares its entries among its children by their
            // elements; a forest's trees let each take what is left.
            let share = if !self.out.split {
                (left as u128 * sizes[k] as u128 / rest.max(1) as u128) as usize
            } else {
                left
            };
            let before = self.out.entries;
            refs[k] = self.build(&children[start[k]..start[k + 1]], region, depth + 1, share);
            left = left.saturating_sub(self.out.entries - before);
            rest -= sizes[k];
        }
        region[d] = (rlo, rhi);
        // A key of `u32::MAX` counts the padding too, 16 in all, read as
        // the last slot: the slots past the cuts are the last child.
        for k in cuts.len() + 1..LANES {
            refs[k] = refs[cuts.len()];
        }
        self.out.nodes[n].child = refs;
        node_ref(n, d)
    }

    /// The dimension and cuts that split `rules` best: the fewest entries
    /// in the largest child, then the fewest copies in all (both returned
    /// beside them); `None` when no cut leaves every child smaller than
    /// the node.
    fn choose(
        &self,
        rules: &[u32],
        region: &[(u32, u32)],
    ) -> Option<(usize, Padded, usize, usize)> {
        let mut best: Option<(usize, usize, usize, Padded)> = None;
        let mut ends: Vec<u32> = Vec::with_capacity(2 * rules.len());
        for (d, &(rlo, rhi)) in region.iter().enumerate() {
            if rlo == rhi {
                continue;
            }
            ends.clear();
            for &r in rules {
                let (lo, hi) = self.all[r as usize].ranges[d];
                if lo > rlo {
                    ends.push(lo);
                }
                if hi < rhi {
                    ends.push(hi + 1);
                }
            }
            if ends.is_empty() {
                continue;
            }
            ends.sort_unstable();
            let padded = pick_cuts(&ends);
            let mut count = [0i64; LANES + 1];
            let mut copies = 0usize;
            for &r in rules {
                let (lo, hi) = self.all[r as usize].ranges[d];
                let (a, b) = spans(&padded, lo.max(rlo), hi.min(rhi));
                count[a] += 1;
                count[b + 1] -= 1;
                copies += b - a + 1;
            }
            let mut run = 0;
            let mut largest = 0;
            for c in &count[..=padded.len] {
                run += c;
                largest = largest.max(run as usize);
            }
            if largest >= rules.len() {
                continue;
            }
            if best.as_ref().is_none_or(|b| (largest, copies) < (b.1, b.2)) {
                best = Some((d, largest, copies, padded));
            }
        }
        best.map(|(d, largest, copies, c)| (d, c, largest, copies))
    }

    fn leaf(&mut self, rules: &[u32]) -> u32 {
        let all = self.all;
        let g = self.out.groups.push_entries(
            self.out.rows(),
            rules.len(),
            |i| &all[rules[i] as usize],
            |i| rules[i],
        );
        self.out.entries += rules.len();
        self.out.leaves.push(g);
        for d in 0..self.out.dims.len() {
            self.sieves.push(leaf_sieve(all, rules, d));
        }
        (self.out.leaves.len() - 1) as u32 | LEAF
    }
}

/// Leaf entries that cost each lookup as much as a node visited, in the
/// cost model ([`Cuts::cost`]): the larger a forest's groups, the more of
/// a key's leaf reads miss the caches. Without this term, merging trees
/// (see [`Cuts::merge_small`]) took any merge that saved a tree, however
/// many copies it made: ClassBench's ipc1_100K merged into 1,104,047
/// entries, 81 ns a lookup, where the merge this weight picks holds
/// 613,808 and takes 73; fw1_100K's choices are 30 ns with 4 trees, 28
/// with this weight's two (417,909 entries), 26 with 955,054 entries and
/// no weight. (128K entries of a 5-tuple are 4 MiB of groups since its
/// ports are packed, 5.5 before, when the weight was fitted; a lighter
/// one, 1 per 180K entries, gave fw1_10K 70K entries: 35 -> 40-45 ns.)
const ENTRIES_UNIT: f64 = 131_072.0;

/// Leaf entries the trees of `all` may hold together before they stop
/// cutting (the replication guard: wide elements are copied into every
/// child they span).
fn budget(all: &[Entry]) -> usize {
    (16 * all.len()).max(1 << 17)
}

/// How many times the entries of two trees their merged tree may hold
/// (see [`Cuts::merge_small`]): the merges that paid on ClassBench grew
/// them at most 3.8 times, and a trial that copies wide rules without
/// end stops here rather than at the budget (ipc1_100K's build, 2.5 s
/// with every trial run to the budget).
const MERGE_GROWTH: usize = 8;

/// Budgets of entries ([`budget`]) that a forest's merge trials may build
/// in all, past which no more are tried: a bound on the build's time
/// whatever the anchors (ClassBench's ipc1_100K builds 6.7 budgets' worth).
const TRIAL_BUDGETS: usize = 16;

/// A forest's group of elements while trees are merged: its anchors, its
/// elements, and its tree's modelled cost and entries once built.
struct Group {
    mask: u64,
    members: Vec<u32>,
    tree: Option<(f64, usize)>,
}

/// Points inside random elements of `all` (a trace's headers are), where
/// the cost model looks trees up.
fn points_inside(all: &[Entry]) -> Vec<Vec<u32>> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..512)
        .map(|_| {
            let e = &all[next() as usize % all.len()];
            e.ranges
                .iter()
                .map(|&(lo, hi)| lo + (next() % (hi as u64 - lo as u64 + 1)) as u32)
                .collect()
        })
        .collect()
}

/// Up to [`MAX_CUTS`] distinct values among the sorted `ends`, at equal
/// counts of ends.
pub(super) fn pick_cuts(ends: &[u32]) -> Padded {
    let mut p = Padded::empty();
    let few = ends.iter().all(|&e| p.push_distinct(e));
    if few {
        return p;
    }
    p = Padded::empty();
    for k in 1..=MAX_CUTS {
        p.push_distinct(ends[k * ends.len() / (MAX_CUTS + 1)]);
    }
    p
}

/// A node's cuts for the build: up to [`MAX_CUTS`] values, padded.
#[derive(Clone, Copy)]
pub(super) struct Padded {
    pub(super) cuts: [u32; MAX_CUTS],
    pub(super) len: usize,
}

impl Padded {
    /// No cuts: all padding.
    pub(super) fn empty() -> Padded {
        Padded {
            cuts: [u32::MAX; MAX_CUTS],
            len: 0,
        }
    }

    #[cfg(test)]
    pub(super) fn new(cuts: &[u32]) -> Padded {
        let mut p = Padded::empty();
        p.cuts[..cuts.len()].copy_from_slice(cuts);
        p.len = cuts.len();
        p
    }

    /// Appends `v` unless it repeats the last cut; false (nothing
    /// appended) when `v` is new and all [`MAX_CUTS`] are taken.
    pub(super) fn push_distinct(&mut self, v: u32) -> bool {
        if self.cuts().last() == Some(&v) {
            return true;
        }
        if self.len == MAX_CUTS {
            return false;
        }
        self.cuts[self.len] = v;
        self.len += 1;
        true
    }

    /// The cuts themselves.
    pub(super) fn cuts(&self) -> &[u32] {
        &self.cuts[..self.len]
    }

    /// The cuts at or below `x`: a binary search of four fixed steps
    /// that compile to conditional moves (`partition_point`'s branches
    /// over so few values were the build's largest cost).
    #[inline(always)]
    pub(super) fn rank(&self, x: u32) -> usize {
        let mut i = 0;
        for step in [8, 4, 2, 1] {
            if self.cuts[i + step - 1] <= x {
                i += step;
            }
        }
        i.min(self.len)
    }
}

/// The children `a..=b` that the range `[lo, hi]` spans under `cuts`.
#[inline]
fn spans(cuts: &Padded, lo: u32, hi: u32) -> (usize, usize) {
    (cuts.rank(lo), cuts.rank(hi))
}

impl Cuts {
    /// Builds the tree of `all` (in any order; ranks decide) over `dims`.
    /// `exact`: every field is one dimension.
    ///
    /// Elements are split by their *anchor*, the dimension in which their
    /// range is the smallest share of the dimension, and each group gets a
    /// tree of its own, as EffiCuts separates rules by size: an element
    /// wide in a dimension (a wildcard source) is copied into every child
    /// of each cut of that dimension, and a tree whose elements are all
    /// narrow in some dimension copies few. A lookup descends every tree
    /// (a few: ACLs anchor on addresses, ports and protocols) and keeps the
    /// first-ranked answer; a small group shares a tree with another
    /// where the model says it pays (see [`Cuts::merge_small`]).
    ///
    /// Every tree costs each key a descent, so one tree is built first;
    /// only when it copied wide elements until its budget ran out (and
    /// left leaves uncut) is a tree per anchor built too, and the one
    /// whose modelled cost over points inside the elements is lower kept.
    /// (On ClassBench one tree wins on the 1K sets; the forest where
    /// wildcard-heavy rules blow one tree up: `bench matcher --classbench`.)
    ///
    /// `like`: build only this kind (a forest when `true`), as the last
    /// choice for nearly the same elements was: the tree that ran out of
    /// budget is most of a choosing build's time, and a few changes to
    /// thousands of elements do not turn the choice.
    /// `plan`: a forest's anchors per tree as the last build merged them
    /// (empty: merge anew), for the same reason: a merge's trial trees
    /// cost as much as the forest.
    pub(crate) fn build(
        dims: Vec<Dim>,
        exact: bool,
        mut all: Vec<Entry>,
        like: Option<bool>,
        plan: &[u64],
    ) -> Cuts {
        all.sort_by_key(|e| e.rank);
        if let Some(split) = like {
            return Cuts::chosen(Cuts::build_forest(&dims, exact, &all, split, plan));
        }
        let one = Cuts::build_forest(&dims, exact, &all, false, &[]);
        if !one.exhausted {
            return Cuts::chosen(one);
        }
        let split = Cuts::build_forest(&dims, exact, &all, true, &[]);
        let points = points_inside(&all);
        Cuts::chosen(if split.cost(&points) < one.cost(&points) {
            split
        } else {
            one
        })
    }

    /// What looking `points` up costs, in a model: a node visited counts
    /// 1, a leaf group 1 plus a half per 4 lanes, a tree 6 more, and every
    /// point 1 more per [`ENTRIES_UNIT`] leaf entries the trees hold. (A
    /// tree's own cost, its pass over the burst and its leaf's resolve, is
    /// fitted to what dropping trees saved on ClassBench's fw1 sets in
    /// `bench matcher --classbench`; a lower weight preferred forests
    /// slower than one tree.)
    fn cost(&self, points: &[Vec<u32>]) -> f64 {
        let mut total = 0.0;
        for point in points {
            let mut vals = [0u32; MAX_DIMS];
            vals[..point.len()].copy_from_slice(point);
            for &root in &self.roots {
                let mut r = root;
                total += 6.0;
                while r & LEAF == 0 {
                    r = self.child(r, &vals, pick_scalar);
                    total += 1.0;
                }
                let l = self.leaves[(r & !LEAF) as usize];
                total += l.groups as f64 * (1.0 + l.width as f64 / 8.0);
            }
        }
        total + (points.len() * self.entries) as f64 / ENTRIES_UNIT
    }

    /// The trees of `all` (sorted by rank): one, or one per anchor.
    pub(super) fn build_forest(
        dims: &[Dim],
        exact: bool,
        all: &[Entry],
        split: bool,
        plan: &[u64],
    ) -> Cuts {
        let mut out = Cuts::empty(dims, exact, all, split);
        let anchor = |e: &Entry| {
            (0..dims.len())
                .min_by(|&a, &b| {
                    let share = |d: usize| {
                        let (lo, hi) = e.ranges[d];
                        (hi - lo) as f64 / dims[d].max() as f64
                    };
                    share(a).total_cmp(&share(b))
                })
                .unwrap_or(0)
        };
        if !split {
            let one: Vec<u32> = (0..all.len() as u32).collect();
            return Cuts::build_groups(dims, all, &[one], out, budget(all));
        }
        // A tree per anchor, or per mask of anchors that the plan merged
        // (an anchor it does not name gets a tree of its own).
        let mut masks: Vec<u64> = plan.to_vec();
        let mut slot = vec![usize::MAX; dims.len()];
        for (t, &m) in masks.iter().enumerate() {
            for (d, s) in slot.iter_mut().enumerate() {
                if m >> d & 1 == 1 {
                    *s = t;
                }
            }
        }
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); masks.len()];
        for (i, e) in all.iter().enumerate() {
            let d = anchor(e);
            if slot[d] == usize::MAX {
                slot[d] = masks.len();
                masks.push(1 << d);
                groups.push(Vec::new());
            }
            groups[slot[d]].push(i as u32);
        }
        let mut by_anchor: Vec<(u64, Vec<u32>)> = masks
            .into_iter()
            .zip(groups)
            .filter(|(_, g)| !g.is_empty())
            .collect();
        if plan.is_empty() {
            by_anchor = Cuts::merge_small(dims, exact, all, by_anchor);
        }
        out.plan = by_anchor.iter().map(|g| g.0).collect();
        let groups: Vec<Vec<u32>> = by_anchor.into_iter().map(|g| g.1).collect();
        Cuts::build_groups(dims, all, &groups, out, budget(all))
    }

    /// A forest's anchors per tree (see [`Cuts::build`]).
    pub(crate) fn plan(&self) -> &[u64] {
        &self.plan
    }

    /// A tree of `all` with no nodes or leaves yet.
    fn empty(dims: &[Dim], exact: bool, all: &[Entry], split: bool) -> Cuts {
        let top = all.iter().map(|e| e.id as usize + 1).max().unwrap_or(0);
        let mut rank = vec![u64::MAX; top];
        for e in all {
            rank[e.id as usize] = e.rank;
        }
        Cuts {
            exact,
            nodes: Vec::new(),
            leaves: Vec::new(),
            groups: Groups::default(),
            roots: Vec::new(),
            firsts: Vec::new(),
            prefix: Vec::new(),
            rank,
            ids: all.iter().map(|e| e.id).collect(),
            ranks: all.iter().map(|e| e.rank).collect(),
            shadows: Vec::new(),
            elements: all.len(),
            entries: 0,
            exhausted: false,
            split,
            plan: Vec::new(),
            sieve_dim: Vec::new(),
            sieves: Vec::new(),
            empty_leaf: 0,
            dims: dims.to_vec(),
            word_dims: word_dims(dims),
            read_end: dims.iter().map(|d| d.off as usize + 4).max().unwrap_or(0),
        }
    }

    /// Merges trees of a forest, two at a time, while the modelled cost
    /// of a merged tree is below the two trees' (EffiCuts' tree merging):
    /// every tree costs each key a descent and a leaf (fw1_10K's trees of
    /// 76 and 131 port-anchored rules were a quarter of its lookup time).
    /// A small tree (at most an eighth of the elements) is tried with the
    /// next in size and with every large one, and the merge that saves
    /// most is made first: a large tree takes in another's rules in a few
    /// copies where its cuts already split them, where two small trees
    /// merged alone copied their wide rules past the budget. On ClassBench
    /// (probe, median of 3 alternating): fw1_10K 3 trees to 2, 42 -> 34
    /// ns a lookup; fw1_100K 4 to 2, 31 -> 28; ipc1_100K 4 to 3 (its
    /// source-port and protocol anchors with the destination's), 80 ->
    /// 75. Each trial is a build of the two groups' tree, kept until a
    /// merge changes one of them; the trials are most of such a build's
    /// time (fw1_100K 0.5 -> 0.9 s, ipc1_100K 0.6 -> 2.1 s), which a
    /// rebuild with the plan skips.
    fn merge_small(
        dims: &[Dim],
        exact: bool,
        all: &[Entry],
        groups: Vec<(u64, Vec<u32>)>,
    ) -> Vec<(u64, Vec<u32>)> {
        let small = |g: &Group| g.members.len() * 8 <= all.len();
        let mut groups: Vec<Group> = groups
            .into_iter()
            .map(|(mask, members)| Group {
                mask,
                members,
                tree: None,
            })
            .collect();
        if groups.len() >= 2 && groups.iter().any(small) {
            let points = points_inside(all);
            // Entries the trials have built, against `TRIAL_BUDGETS`.
            let spent = std::cell::Cell::new(0);
            // The modelled cost and the entries of a tree of `members`,
            // `None` where it ran past `cap` entries (or the trials past
            // theirs).
            let trial = |members: &[u32], cap: usize| {
                if spent.get() > TRIAL_BUDGETS * budget(all) {
                    return None;
                }
                let t = Cuts::build_groups(
                    dims,
                    all,
                    &[members.to_vec()],
                    Cuts::empty(dims, exact, all, true),
                    cap,
                );
                spent.set(spent.get() + t.entries);
                (!t.exhausted).then(|| (t.cost(&points), t.entries))
            };
            // Trials by the pair of masks, the smaller first: a merge
            // makes a new mask, so an entry whose group changed is never
            // asked for again.
            let mut trials: HashMap<(u64, u64), Option<(f64, usize)>> = HashMap::new();
            loop {
                for g in groups.iter_mut().filter(|g| g.tree.is_none()) {
                    // A tree that ran past the budget alone costs without
                    // end and holds the budget: a merge's trial with it
                    // may then grow to the budget too.
                    let over = (f64::INFINITY, budget(all));
                    g.tree = Some(trial(&g.members, budget(all)).unwrap_or(over));
                }
                // A small group is tried with the next in size and with
                // every large one: all pairs of many small groups (a key
                // of many 4-byte chunks, each some elements' anchor) made
                // a build of 16 anchors 6 times slower.
                groups.sort_by_key(|g| g.members.len());
                let pairs = (0..groups.len())
                    .filter(|&a| small(&groups[a]))
                    .flat_map(|a| {
                        let large = (a + 2..groups.len()).filter(|&b| !small(&groups[b]));
                        (a + 1..groups.len())
                            .take(1)
                            .chain(large)
                            .map(move |b| (a, b))
                    });
                // The pair whose merge saves most: (a, b, the merged tree,
                // the saving).
                let mut best: Option<(usize, usize, (f64, usize), f64)> = None;
                for (a, b) in pairs {
                    let (ga, gb) = (&groups[a], &groups[b]);
                    let ((ca, ea), (cb, eb)) =
                        (ga.tree.unwrap_or_default(), gb.tree.unwrap_or_default());
                    let merged = *trials
                        .entry((ga.mask.min(gb.mask), ga.mask.max(gb.mask)))
                        .or_insert_with(|| {
                            let mut m: Vec<u32> =
                                ga.members.iter().chain(&gb.members).copied().collect();
                            m.sort_unstable();
                            trial(&m, budget(all).min(MERGE_GROWTH * (ea + eb) + 4096))
                        });
                    let apart = ca + cb;
                    if let Some(t) = merged.filter(|t| t.0 < apart) {
                        if best.is_none_or(|(.., s)| apart - t.0 > s) {
                            best = Some((a, b, t, apart - t.0));
                        }
                    }
                }
                let Some((a, b, t, _)) = best else {
                    break;
                };
                // `a < b`: removing `b` leaves `a` where it is.
                let gb = groups.swap_remove(b);
                let ga = &mut groups[a];
                ga.mask |= gb.mask;
                ga.members.extend_from_slice(&gb.members);
                ga.members.sort_unstable();
                ga.tree = Some(t);
            }
        }
        // The largest tree first: the budget is shared in order
        // ([`Cuts::build_groups`]).
        groups.sort_by_key(|g| std::cmp::Reverse(g.members.len()));
        groups.into_iter().map(|g| (g.mask, g.members)).collect()
    }

    /// The trees of `groups` (indices into `all`, each in rank order),
    /// built into `out`.
    fn build_groups(
        dims: &[Dim],
        all: &[Entry],
        groups: &[Vec<u32>],
        out: Cuts,
        budget: usize,
    ) -> Cuts {
        let exact = out.exact;
        debug_assert!(out.leaves.is_empty());
        let mut b = Builder {
            sieves: Vec::new(),
            exact,
            all,
            out,
            budget,
        };
        let mut region: Vec<(u32, u32)> = dims.iter().map(|d| (0, d.max())).collect();
        let mut roots = Vec::new();
        let mut firsts = Vec::new();
        let mut sieve_dim = Vec::new();
        // Sieved-out keys go to this leaf (`Cuts::empty_leaf`).
        let empty = b.leaf(&[]);
        let mut sieves = vec![u64::MAX; 1];
        for rules in groups.iter().filter(|r| !r.is_empty()) {
            let cap = b.budget.saturating_sub(b.out.entries);
            let from = b.out.leaves.len();
            roots.push(b.build(rules, &mut region, 0, cap));
            // `rules` are in rank order, and an element's place in rank
            // order is its index in `all`.
            firsts.push(rules[0] as u64);
            let nd = b.out.dims.len();
            let leaves = &b.out.leaves[from..];
            let d = sieve::sieve_dim((all, rules), leaves, &b.sieves[from * nd..], nd);
            sieve_dim.push(d);
            sieves.extend((from..b.out.leaves.len()).map(|l| match d {
                NO_SIEVE => u64::MAX,
                d => b.sieves[l * nd + d as usize],
            }));
        }
        if roots.is_empty() {
            roots.push(empty);
            firsts.push(u64::MAX);
            sieve_dim.push(NO_SIEVE);
        }
        let mut out = b.out;
        out.sieves = sieves;
        out.sieve_dim = sieve_dim;
        out.empty_leaf = empty & !LEAF;
        out.roots = roots;
        out.firsts = firsts;
        out.prefix = out
            .roots
            .iter()
            .map(|&r| out.same_dim_depth(r) as u8)
            .collect();
        out
    }

    /// `tree`, the one a build chose, with its groups settled where
    /// lookups read them.
    fn chosen(mut tree: Cuts) -> Cuts {
        tree.groups.settle();
        // The lookups read nodes, leaves and leaf groups unchecked
        // (`step`, `leaf_at`, `first_in`): a reference or group past them
        // would be a bug of this builder, stopped here.
        assert!(
            tree.refs_valid(),
            "a tree of cuts refers past its nodes or leaves"
        );
        tree
    }

    /// The levels from `root` down that are, on every path, nodes of
    /// `root`'s dimension (at most [`MAX_PREFIX`]; 0 for a leaf): a key
    /// goes through them with one value and no test for leaves
    /// ([`Classifier::burst`]). Trees whose elements are narrow in their
    /// anchor are cut that way from the top (ClassBench's fw1_100K: three
    /// trees of three such levels, 4,096 leaves each).
    pub(super) fn same_dim_depth(&self, root: u32) -> usize {
        let dim = root & DIM_BITS;
        let mut level = vec![root];
        let mut k = 0;
        while k < MAX_PREFIX
            && level
                .iter()
                .all(|&r| r & DIM_BITS == dim && self.node_index(r).is_some())
        {
            k += 1;
            let mut next: Vec<u32> = level
                .iter()
                .filter_map(|&r| self.node_index(r))
                .flat_map(|i| self.nodes[i].child)
                .collect();
            next.sort_unstable();
            next.dedup();
            level = next;
        }
        k
    }
}
