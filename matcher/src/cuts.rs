//! A decision tree over element ranges, with leaves checked sixteen
//! elements at a time: the lookup of sets whose fields repeat across
//! elements (firewall policies: "these hosts, these services") and of
//! first-match sets, whose elements overlap.
//!
//! # Why a tree of cuts
//!
//! The pipapo bitmaps AND one full-width bitmap per group: for a set where
//! no field alone narrows a key to a few elements (200 hosts × the same 20
//! ports), every key costs `groups × elements / 64` words. The interval
//! tree of [`crate::tree`] needs a field whose intervals name at most a few
//! elements, which such sets lack. Packet-classification trees (HiCuts,
//! HyperCuts, HyperSplit; EffiCuts' leaves of a few rules) instead cut the
//! key space, a field at a time, until each region holds few elements.
//! Here:
//!
//! - A *dimension* is up to 4 bytes of the key: a field of 1, 2 or 4
//!   bytes is one, wider fields (MAC, IPv6) are cut into 4-byte chunks. An
//!   element's range in a chunk is exact where the bytes above the chunk
//!   agree, and the whole chunk otherwise: a necessary condition, so
//!   elements of sets with wide fields are checked in full once their
//!   chunks match.
//! - A *node* cuts one dimension at up to 15 values into 16 children, the
//!   cuts chosen among the node's range ends at equal counts of ends
//!   (each child gets about as many ends). Its cuts are one 64-byte block,
//!   so finding the child is one vector compare and a popcount, the step
//!   of the interval tree.
//! - A *leaf* holds the elements of its region in rank order (priority,
//!   then the order they were added), in groups of sixteen stored field
//!   by field (sixteen lows, sixteen highs): checking a key against a
//!   group is two vector compares per dimension, and the first lane left
//!   set is the first match.
//! - Where an element covers a node's whole region in every dimension, the
//!   elements ranked after it can never be the first match there and are
//!   dropped from that region (in sets whose dimensions are exact).
//!
//! # Updates
//!
//! The tree is built from every element when a set is committed after many
//! changes. In between, a commit shares the last tree and adds two small
//! things: the elements inserted since (*extra*, checked like one leaf) and
//! the ids deleted since (*gone*, skipped where a leaf names them). A
//! deleted element that shadowed others in the tree brings the elements
//! it may have shadowed (ranked after it, overlapping it) into *extra*;
//! too many changes make the next commit rebuild.

use crate::tree::Block;
use std::sync::Arc;

/// Lanes of a leaf group.
pub(crate) const LANES: usize = 16;

/// Most elements a leaf is left with before it is cut further.
const LEAF_MAX: usize = 16;

/// Deepest a tree grows; past this, leaves stay as large as they are.
const MAX_DEPTH: usize = 12;

/// Cuts per node (a block of sixteen values, the last always padding).
const MAX_CUTS: usize = 15;

/// A child reference naming a leaf rather than a node.
const LEAF: u32 = 1 << 31;

/// A reference to a node carries the node's dimension above its index,
/// so that a step of the descent reads the node alone (a table of
/// dimensions beside the nodes was one more dependent load a level).
const DIM_SHIFT: u32 = 24;

/// The index bits of a node reference: at most this many nodes, past
/// which a tree stops cutting.
const NODE_INDEX: u32 = (1 << DIM_SHIFT) - 1;

/// Changes (inserts plus deletes) since the last build past which a commit
/// rebuilds the tree.
pub(crate) const MAX_DELTA: usize = 64;

/// Where one dimension's value lies in a key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dim {
    /// Byte offset in the key.
    off: u16,
    /// Bytes, 1 to 4.
    len: u8,
    /// The field it belongs to, its byte length, and the chunk's bit
    /// shift inside the field.
    field: u8,
    field_len: u8,
    shift: u8,
}

impl Dim {
    /// The dimensions of a key of fields of these byte lengths.
    pub(crate) fn of_fields(lens: &[usize]) -> Vec<Dim> {
        let mut dims = Vec::new();
        let mut off = 0;
        for (fi, &len) in lens.iter().enumerate() {
            let mut at = 0;
            while at < len {
                let l = (len - at).min(4);
                dims.push(Dim {
                    off: (off + at) as u16,
                    len: l as u8,
                    field: fi as u8,
                    field_len: len as u8,
                    shift: (8 * (len - at - l)) as u8,
                });
                at += l;
            }
            off += len;
        }
        dims
    }

    /// This dimension's value in a key: four bytes read at once and
    /// shifted down to the chunk's, where the key has them (a key of a
    /// burst is followed by the next); byte by byte at the key's end. (A
    /// `match` on the length for every dimension of every key was 15 % of
    /// ipc1_10K's lookup instructions.)
    #[inline(always)]
    fn value(&self, key: &[u8]) -> u32 {
        let off = self.off as usize;
        if let Some(&k) = key.get(off..off + 4).and_then(|k| k.first_chunk::<4>()) {
            return u32::from_be_bytes(k) >> (32 - 8 * self.len as u32);
        }
        let k = &key[off..];
        match self.len {
            1 => k[0] as u32,
            2 => u16::from_be_bytes([k[0], k[1]]) as u32,
            3 => u32::from_be_bytes([0, k[0], k[1], k[2]]),
            _ => u32::from_be_bytes([k[0], k[1], k[2], k[3]]),
        }
    }

    /// The largest value of the dimension.
    fn max(&self) -> u32 {
        if self.len == 4 {
            u32::MAX
        } else {
            (1u32 << (8 * self.len)) - 1
        }
    }

    /// The values of this chunk that keys inside `[s, e]` (the field's
    /// range) can have: exact where the bytes above the chunk agree.
    fn project(&self, s: u128, e: u128) -> (u32, u32) {
        let hi_shift = self.shift as u32 + 8 * self.len as u32;
        let above = |v: u128| {
            if hi_shift >= 128 {
                0
            } else {
                v >> hi_shift
            }
        };
        if hi_shift < 8 * self.field_len as u32 && above(s) != above(e) {
            return (0, self.max());
        }
        let m = self.max() as u128;
        (
            ((s >> self.shift) & m) as u32,
            ((e >> self.shift) & m) as u32,
        )
    }
}

/// One element as the tree sees it: its id, rank and range per dimension.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) id: u32,
    pub(crate) rank: u64,
    /// `(low, high)` per dimension.
    pub(crate) ranges: Vec<(u32, u32)>,
}

/// Projects an element's field ranges onto the dimensions.
pub(crate) fn entry(dims: &[Dim], id: u32, rank: u64, key: &[crate::Range]) -> Entry {
    Entry {
        id,
        rank,
        ranges: dims
            .iter()
            .map(|d| {
                let r = &key[d.field as usize];
                d.project(r.start, r.end)
            })
            .collect(),
    }
}

/// Elements checked together, in groups of 4, 8 or 16 lanes (a leaf's
/// width: the fewest that hold it, so a leaf of three elements reads 176
/// bytes of a 5-tuple, not 704): per group, the lanes' ids, then per
/// dimension their lows and their highs. Unused lanes have an empty range
/// (low `MAX`, high 0) and match nothing. A group of `w` lanes starts at a
/// multiple of `w` words of a 64-byte-aligned array, so no vector load
/// of it straddles a cache line.
#[derive(Clone, Debug, Default)]
pub(crate) struct Groups {
    blocks: Vec<Block>,
    /// Words in use.
    len: usize,
}

/// Where a leaf's groups are: first word, group count, lanes a group;
/// and the rank of its first element (`u64::MAX` when empty), below
/// which nothing in it ranks.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Leaf {
    start: u32,
    groups: u16,
    width: u16,
    first: u64,
}

impl Groups {
    fn words(&self) -> &[u32] {
        bytemuck::cast_slice(&self.blocks)
    }

    /// Appends the leaf of the `n` elements `entry(0..n)`, in rank order.
    fn push_entries<'e>(
        &mut self,
        dims: usize,
        n: usize,
        entry: impl Fn(usize) -> &'e Entry,
    ) -> Leaf {
        let width = match n {
            0..=4 => 4,
            5..=8 => 8,
            _ => LANES,
        };
        let per = width * (1 + 2 * dims);
        let groups = n.div_ceil(width);
        let start = self.len.next_multiple_of(width);
        self.len = start + per * groups;
        self.blocks
            .resize(self.len.div_ceil(LANES), Block([0; LANES]));
        let words: &mut [u32] = bytemuck::cast_slice_mut(&mut self.blocks);
        // Row by row, each a slice of its own: indexing the whole array
        // per value (bounds checks and offsets) was most of the build's
        // cost of leaves.
        for (g, group) in words[start..self.len].chunks_exact_mut(per).enumerate() {
            let lanes = g * width..((g + 1) * width).min(n);
            let (ids, rows) = group.split_at_mut(width);
            for (id, i) in ids.iter_mut().zip(lanes.clone()) {
                *id = entry(i).id;
            }
            for (d, row) in rows.chunks_exact_mut(2 * width).enumerate() {
                let (lo, hi) = row.split_at_mut(width);
                lo.fill(u32::MAX);
                for ((lo, hi), i) in lo.iter_mut().zip(hi.iter_mut()).zip(lanes.clone()) {
                    (*lo, *hi) = entry(i).ranges[d];
                }
            }
        }
        Leaf {
            start: start as u32,
            groups: groups as u16,
            width: width as u16,
            first: if n == 0 { u64::MAX } else { entry(0).rank },
        }
    }

    fn memory_usage(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Block>()
    }
}

/// The check of one group, scalar (the compiler vectorises its lane
/// loop): the mask of the lanes whose ranges hold `vals` (one value per
/// dimension), bit `l` for lane `l`. `r` holds the group's ranges, `w`
/// lanes a row: the lows then the highs of each dimension.
#[inline(always)]
pub(crate) fn mask_scalar(r: &[u32], w: usize, vals: &[u32]) -> u32 {
    let mut ok = [true; LANES];
    for (d, &v) in vals.iter().enumerate() {
        let (lo, hi) = (
            &r[2 * d * w..(2 * d + 1) * w],
            &r[(2 * d + 1) * w..(2 * d + 2) * w],
        );
        for l in 0..w {
            ok[l] &= (lo[l] <= v) & (v <= hi[l]);
        }
    }
    ok[..w]
        .iter()
        .enumerate()
        .fold(0, |m, (l, &o)| m | (o as u32) << l)
}

/// One node: its cuts (padded with `u32::MAX`) and sixteen children.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Node {
    cuts: Block,
    child: [u32; LANES],
}

/// The tree of one snapshot, shared by later snapshots until a rebuild.
#[derive(Clone, Debug)]
pub(crate) struct Cuts {
    dims: Vec<Dim>,
    /// Whether every field is one dimension: a leaf's match is then the
    /// element's match, with no full check.
    exact: bool,
    nodes: Vec<Node>,
    /// Where each leaf's groups are.
    leaves: Vec<Leaf>,
    groups: Groups,
    /// One tree per anchor dimension (see [`Cuts::build`]).
    roots: Vec<u32>,
    /// Rank of every id the tree holds (`u64::MAX` for others).
    rank: Vec<u64>,
    /// Ids of elements that cover some node's region and so shadow the
    /// elements dropped there: deleting one needs a rebuild.
    shadows: Vec<u64>,
    /// Elements the tree was built from, and entries its leaves hold.
    elements: usize,
    entries: usize,
    /// Whether the copy budget ran out, leaving leaves uncut.
    exhausted: bool,
    /// Whether this is a tree per anchor (see [`Cuts::build`]).
    split: bool,
    /// The anchor dimensions of each tree of a forest (a bitmask), as
    /// merged (see [`Cuts::merge_small`]).
    plan: Vec<u64>,
}

struct Builder<'a> {
    dims: &'a [Dim],
    exact: bool,
    all: &'a [Entry],
    out: Cuts,
    /// Leaf entries left before the tree stops cutting (replication
    /// guard: wide elements are copied into every child they span).
    budget: usize,
}

impl Builder<'_> {
    /// Builds the subtree of `rules` (indices into `all`, in rank order)
    /// inside `region`; returns its reference.
    fn build(&mut self, rules: &[u32], region: &mut [(u32, u32)], depth: usize) -> u32 {
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
        let full = self.budget < rules.len() || self.out.nodes.len() >= NODE_INDEX as usize;
        if rules.len() > LEAF_MAX && full {
            self.out.exhausted = true;
        }
        if rules.len() <= LEAF_MAX || depth >= MAX_DEPTH || full {
            return self.leaf(rules);
        }
        let Some((d, padded)) = self.choose(rules, region) else {
            return self.leaf(rules);
        };
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
        for k in 0..=cuts.len() {
            region[d] = (
                if k == 0 { rlo } else { cuts[k - 1] },
                if k == cuts.len() { rhi } else { cuts[k] - 1 },
            );
            refs[k] = self.build(&children[start[k]..start[k + 1]], region, depth + 1);
        }
        region[d] = (rlo, rhi);
        // A key of `u32::MAX` counts the padding too, 16 in all, read as
        // the last slot: the slots past the cuts are the last child.
        for k in cuts.len() + 1..LANES {
            refs[k] = refs[cuts.len()];
        }
        self.out.nodes[n].child = refs;
        n as u32 | (d as u32) << DIM_SHIFT
    }

    /// The dimension and cuts that split `rules` best: the fewest entries
    /// in the largest child, then the fewest copies in all; `None` when no
    /// cut leaves every child smaller than the node.
    fn choose(&self, rules: &[u32], region: &[(u32, u32)]) -> Option<(usize, Padded)> {
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
        best.map(|(d, _, _, c)| (d, c))
    }

    fn leaf(&mut self, rules: &[u32]) -> u32 {
        let all = self.all;
        let g = self
            .out
            .groups
            .push_entries(self.dims.len(), rules.len(), |i| &all[rules[i] as usize]);
        self.budget = self.budget.saturating_sub(rules.len());
        self.out.entries += rules.len();
        self.out.leaves.push(g);
        (self.out.leaves.len() - 1) as u32 | LEAF
    }
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
fn pick_cuts(ends: &[u32]) -> Padded {
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

/// [`Cuts::child`] of `nodes`, a tree's nodes held apart from the tree
/// so that a burst's descent keeps their address in a register.
#[inline(always)]
fn step<const N: usize>(
    nodes: &[Node],
    r: u32,
    vals: &[u32; N],
    count: impl Fn(&Block, u32) -> u32,
) -> u32 {
    let n = &nodes[(r & NODE_INDEX) as usize];
    let x = vals[(r >> DIM_SHIFT) as usize % N];
    n.child[count(&n.cuts, x) as usize % LANES]
}

/// The values of `b` at or below `x` among its first 15, the cuts of a
/// node (the sixteenth is always padding, so a count is at most 15).
#[inline(always)]
pub(crate) fn count_cuts(b: &Block, x: u32) -> u32 {
    b.0[..MAX_CUTS].iter().map(|&v| (v <= x) as u32).sum()
}

/// A node's cuts for the build: up to [`MAX_CUTS`] values, padded.
#[derive(Clone, Copy)]
struct Padded {
    cuts: [u32; MAX_CUTS],
    len: usize,
}

impl Padded {
    /// No cuts: all padding.
    fn empty() -> Padded {
        Padded {
            cuts: [u32::MAX; MAX_CUTS],
            len: 0,
        }
    }

    #[cfg(test)]
    fn new(cuts: &[u32]) -> Padded {
        let mut p = Padded::empty();
        p.cuts[..cuts.len()].copy_from_slice(cuts);
        p.len = cuts.len();
        p
    }

    /// Appends `v` unless it repeats the last cut; false (nothing
    /// appended) when `v` is new and all [`MAX_CUTS`] are taken.
    fn push_distinct(&mut self, v: u32) -> bool {
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
    fn cuts(&self) -> &[u32] {
        &self.cuts[..self.len]
    }

    /// The cuts at or below `x`: a binary search of four fixed steps
    /// that compile to conditional moves (`partition_point`'s branches
    /// over so few values were the build's largest cost).
    #[inline(always)]
    fn rank(&self, x: u32) -> usize {
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
    /// first-ranked answer; the smallest groups share a tree where the
    /// model says it pays (see [`Cuts::merge_small`]).
    ///
    /// Every tree costs each key a descent, so one tree is built first;
    /// only when it copied wide elements until its budget ran out (and
    /// left leaves uncut) is a tree per anchor built too, and the one
    /// whose modelled cost over points inside the elements is lower kept.
    /// (Measured on ClassBench: one tree is faster on every 1K set and on
    /// acl1_10K, the forest on fw1_10K and ipc1_10K, whose wildcard-heavy
    /// rules blew one tree up 20-fold.)
    ///
    /// `like`: build only this kind (a forest when `true`), as the last
    /// choice for nearly the same elements was: the tree that ran out of
    /// budget is most of a choosing build's time (fw1_10K: 22 of 25 ms),
    /// and a few changes to thousands of elements do not turn the choice.
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
            return Cuts::build_forest(&dims, exact, &all, split, plan);
        }
        let one = Cuts::build_forest(&dims, exact, &all, false, &[]);
        if !one.exhausted {
            return one;
        }
        let split = Cuts::build_forest(&dims, exact, &all, true, &[]);
        let points = points_inside(&all);
        if split.cost(&points) < one.cost(&points) {
            split
        } else {
            one
        }
    }

    /// The child of node `r` that a key of dimension values `vals` goes
    /// to (`count`: the values at or below a value among the block's
    /// first 15, as [`count_cuts`]). A key of `u32::MAX` counts the
    /// padding too, 15 in all, read as the last slot. `vals` is as long
    /// as a power of two, so neither index needs a bounds check (with the
    /// dimension in the reference, a burst's step is 27 instructions
    /// with AVX-512, where it was 33).
    #[inline(always)]
    fn child<const N: usize>(
        &self,
        r: u32,
        vals: &[u32; N],
        count: impl Fn(&Block, u32) -> u32,
    ) -> u32 {
        step(&self.nodes, r, vals, count)
    }

    /// What looking `points` up costs, in a model: a node visited counts
    /// 1, a leaf group 1 plus a half per 4 lanes, a tree 6 more. (A
    /// tree's own cost, its pass over the burst and its leaf's resolve, is
    /// fitted to what dropping trees saved: two of fw1_10K's five, 25-30 %
    /// of its lookup; and fw1_1K is faster in one tree, 30 against 45 ns,
    /// than in the merged forest of four that a weight of 2 preferred.)
    fn cost(&self, points: &[Vec<u32>]) -> f64 {
        let mut total = 0.0;
        for point in points {
            let mut vals = [0u32; MAX_DIMS];
            vals[..point.len()].copy_from_slice(point);
            for &root in &self.roots {
                let mut r = root;
                total += 6.0;
                while r & LEAF == 0 {
                    r = self.child(r, &vals, count_cuts);
                    total += 1.0;
                }
                let l = self.leaves[(r & !LEAF) as usize];
                total += l.groups as f64 * (1.0 + l.width as f64 / 8.0);
            }
        }
        total
    }

    /// The trees of `all` (sorted by rank): one, or one per anchor.
    fn build_forest(dims: &[Dim], exact: bool, all: &[Entry], split: bool, plan: &[u64]) -> Cuts {
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
            return Cuts::build_groups(dims, all, &[one], out);
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
        Cuts::build_groups(dims, all, &groups, out)
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
            rank,
            shadows: Vec::new(),
            elements: all.len(),
            entries: 0,
            exhausted: false,
            split,
            plan: Vec::new(),
            dims: dims.to_vec(),
        }
    }

    /// Merges the smallest trees of a forest, two at a time, while the
    /// modelled cost of the merged tree is below the two trees' (EffiCuts'
    /// tree merging): every tree costs each key a descent and a leaf
    /// (fw1_10K's trees of 76 and 131 port-anchored rules were a quarter
    /// of its lookup time), and a tree of a few hundred rules absorbs
    /// another's wide rules in a few copies. Only groups that together
    /// hold at most an eighth of the elements are tried, so the trial
    /// builds stay small beside the forest's.
    fn merge_small(
        dims: &[Dim],
        exact: bool,
        all: &[Entry],
        mut groups: Vec<(u64, Vec<u32>)>,
    ) -> Vec<(u64, Vec<u32>)> {
        let mut points = None;
        loop {
            groups.sort_by_key(|g| std::cmp::Reverse(g.1.len()));
            let n = groups.len();
            if n < 2 || (groups[n - 1].1.len() + groups[n - 2].1.len()) * 8 > all.len() {
                return groups;
            }
            let points = points.get_or_insert_with(|| points_inside(all));
            let a = groups.pop().unwrap_or_default();
            let b = groups.pop().unwrap_or_default();
            let mut merged: Vec<u32> = a.1.iter().chain(&b.1).copied().collect();
            merged.sort_unstable();
            let tree = |g: &[u32]| {
                Cuts::build_groups(
                    dims,
                    all,
                    &[g.to_vec()],
                    Cuts::empty(dims, exact, all, true),
                )
            };
            let apart = tree(&a.1).cost(points) + tree(&b.1).cost(points);
            let together = tree(&merged);
            if together.exhausted || together.cost(points) >= apart {
                groups.push(b);
                groups.push(a);
                return groups;
            }
            groups.push((a.0 | b.0, merged));
        }
    }

    /// The trees of `groups` (indices into `all`, each in rank order),
    /// built into `out`.
    fn build_groups(dims: &[Dim], all: &[Entry], groups: &[Vec<u32>], out: Cuts) -> Cuts {
        let exact = out.exact;
        let mut b = Builder {
            dims,
            exact,
            all,
            out,
            budget: (16 * all.len()).max(1 << 17),
        };
        let mut region: Vec<(u32, u32)> = dims.iter().map(|d| (0, d.max())).collect();
        let mut roots = Vec::new();
        for rules in groups.iter().filter(|r| !r.is_empty()) {
            roots.push(b.build(rules, &mut region, 0));
        }
        if roots.is_empty() {
            roots.push(b.leaf(&[]));
        }
        let mut out = b.out;
        out.roots = roots;
        out
    }

    /// Whether `id` shadows elements that the tree dropped somewhere
    /// (deleting it must bring them back).
    pub(crate) fn shadows(&self, id: u32) -> bool {
        let i = id as usize;
        self.shadows
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    /// Whether this is a tree per anchor rather than one tree.
    pub(crate) fn is_split(&self) -> bool {
        self.split
    }

    /// Whether the tree holds `id`.
    pub(crate) fn holds(&self, id: u32) -> bool {
        self.rank.get(id as usize).is_some_and(|&r| r != u64::MAX)
    }

    /// Bytes of nodes, leaves and ranks.
    pub(crate) fn memory_usage(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.leaves.capacity() * std::mem::size_of::<Leaf>()
            + self.groups.memory_usage()
            + self.rank.capacity() * 8
            + self.shadows.capacity() * 8
    }

    /// Leaves by their lanes in sixteens: `[g]` leaves have `16g` lanes
    /// (`[0]`: fewer than 16; the last entry counts every larger leaf).
    pub(crate) fn leaf_groups(&self) -> Vec<usize> {
        let mut h = vec![0; 9];
        for l in &self.leaves {
            h[(l.groups as usize * l.width as usize / LANES).min(8)] += 1;
        }
        h
    }

    /// Trees, nodes, leaves, elements and leaf entries (for the bench's
    /// report).
    pub(crate) fn shape(&self) -> (usize, usize, usize, usize, usize) {
        (
            self.roots.len(),
            self.nodes.len(),
            self.leaves.len(),
            self.elements,
            self.entries,
        )
    }
}

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
        let leaf = groups.push_entries(tree.dims.len(), extra.len(), |i| &extra[i]);
        let mut bits = Vec::new();
        for &id in gone {
            let i = id as usize;
            if bits.len() <= i / 64 {
                bits.resize(i / 64 + 1, 0u64);
            }
            bits[i / 64] |= 1 << (i % 64);
        }
        Classifier {
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
    fn descend(
        &self,
        root: u32,
        vals: &[u32; MAX_DIMS],
        count: impl Fn(&Block, u32) -> u32,
    ) -> u32 {
        let mut r = root;
        while r & LEAF == 0 {
            r = self.tree.child(r, vals, &count);
        }
        r & !LEAF
    }

    /// The first element (in rank order) of leaf `l` in `words` that
    /// holds the key, skipping gone ids; its position (group, lane) is its
    /// rank order.
    #[inline(always)]
    fn first_in(
        &self,
        (words, l): (&[u32], Leaf),
        skip_gone: bool,
        vals: &[u32],
        key: &[u8],
        verify: &impl Verify,
        mask: impl Fn(&[u32], usize, &[u32]) -> u32,
    ) -> Option<(u32, usize)> {
        let w = l.width as usize;
        let per = w * (1 + 2 * vals.len());
        for g in 0..l.groups as usize {
            let at = l.start as usize + g * per;
            let b = &words[at..at + per];
            let mut m = mask(&b[w..], w, vals);
            while m != 0 {
                let lane = m.trailing_zeros() as usize;
                m &= m - 1;
                let id = b[lane];
                if (skip_gone && self.is_gone(id)) || (!self.tree.exact && !verify.holds(id, key)) {
                    continue;
                }
                return Some((id, g * w + lane));
            }
        }
        None
    }

    /// The first-ranked element of leaf `leaf` holding `key`, with its
    /// rank (`u64::MAX` and an unused id for none), if it ranks before
    /// `bound` (the best answer of the trees before).
    ///
    /// A leaf whose first element ranks after `bound` is not read: in a
    /// forest, a key that an earlier tree matched skips every later
    /// leaf of lower-ranked elements.
    #[inline(always)]
    fn resolve(
        &self,
        leaf: u32,
        bound: u64,
        vals: &[u32],
        key: &[u8],
        verify: &impl Verify,
        mask: impl Fn(&[u32], usize, &[u32]) -> u32 + Copy,
    ) -> (u64, u32) {
        let t = &*self.tree;
        let l = t.leaves[leaf as usize];
        if l.first >= bound {
            return (u64::MAX, u32::MAX);
        }
        match self.first_in(
            (t.groups.words(), l),
            !self.gone.is_empty(),
            vals,
            key,
            verify,
            mask,
        ) {
            // One tree and nothing beside it: its answer needs no rank
            // (a load of the rank table saved per key).
            Some((id, _)) if t.roots.len() == 1 && self.extra_leaf.groups == 0 => (0, id),
            Some((id, _)) => (t.rank[id as usize], id),
            None => (u64::MAX, u32::MAX),
        }
    }

    /// The answer of the trees' best `(rank, id)` and the extra elements.
    #[inline(always)]
    fn with_extra(
        &self,
        best: (u64, u32),
        vals: &[u32],
        key: &[u8],
        verify: &impl Verify,
        mask: impl Fn(&[u32], usize, &[u32]) -> u32 + Copy,
    ) -> Option<u32> {
        if self.extra_leaf.groups != 0 {
            let more = self.first_in(
                (self.extra.words(), self.extra_leaf),
                false,
                vals,
                key,
                verify,
                mask,
            );
            if let Some((id, at)) = more {
                if self.extra_rank[at] < best.0 {
                    return Some(id);
                }
            }
        }
        (best.0 != u64::MAX).then_some(best.1)
    }

    /// The dimension values of a key.
    #[inline(always)]
    fn values(&self, key: &[u8], vals: &mut [u32]) {
        let dims = &self.tree.dims[..vals.len()];
        for (v, d) in vals.iter_mut().zip(dims) {
            *v = d.value(key);
        }
    }

    /// Looks one key up.
    #[inline(always)]
    pub(crate) fn lookup(
        &self,
        key: &[u8],
        verify: &impl Verify,
        count: impl Fn(&Block, u32) -> u32,
        mask: impl Fn(&[u32], usize, &[u32]) -> u32 + Copy,
    ) -> Option<u32> {
        let nd = self.tree.dims.len();
        let mut buf = [0u32; MAX_DIMS];
        self.values(key, &mut buf[..nd]);
        let vals = &buf[..nd];
        let mut best = (u64::MAX, u32::MAX);
        for &root in &self.tree.roots {
            let leaf = self.descend(root, &buf, &count);
            best = best.min(self.resolve(leaf, best.0, vals, key, verify, mask));
        }
        self.with_extra(best, vals, key, verify, mask)
    }

    /// Looks up to [`BURST`] keys up: every key's values, then the
    /// descent of all keys level by level (their loads overlap), then
    /// each key's leaf. Instantiated for each dimension count up to 6 (a
    /// 5-tuple has five), as the bitmap lookup is for each field shape, so
    /// that the loops over dimensions unroll.
    #[inline(always)]
    pub(crate) fn burst(
        &self,
        keys: &[u8],
        stride: usize,
        out: &mut [Option<u32>],
        verify: &impl Verify,
        count: impl Fn(&Block, u32) -> u32,
        mask: impl Fn(&[u32], usize, &[u32]) -> u32 + Copy,
    ) {
        match self.tree.dims.len() {
            1 => self.burst_n::<1>(keys, stride, out, verify, count, mask),
            2 => self.burst_n::<2>(keys, stride, out, verify, count, mask),
            3 => self.burst_n::<3>(keys, stride, out, verify, count, mask),
            4 => self.burst_n::<4>(keys, stride, out, verify, count, mask),
            5 => self.burst_n::<5>(keys, stride, out, verify, count, mask),
            6 => self.burst_n::<6>(keys, stride, out, verify, count, mask),
            _ => self.burst_n::<0>(keys, stride, out, verify, count, mask),
        }
    }

    /// [`Classifier::burst`] for `ND` dimensions (0: any number).
    #[inline(always)]
    fn burst_n<const ND: usize>(
        &self,
        keys: &[u8],
        stride: usize,
        out: &mut [Option<u32>],
        verify: &impl Verify,
        count: impl Fn(&Block, u32) -> u32,
        mask: impl Fn(&[u32], usize, &[u32]) -> u32 + Copy,
    ) {
        let t = &*self.tree;
        let nd = if ND == 0 { t.dims.len() } else { ND };
        for (c, outs) in out.chunks_mut(BURST).enumerate() {
            let keys = &keys[c * BURST * stride..];
            let n = outs.len();
            let mut vals = [[0u32; BURST_DIMS]; BURST];
            if nd > BURST_DIMS {
                for (j, o) in outs.iter_mut().enumerate() {
                    *o = self.lookup(&keys[j * stride..], verify, &count, mask);
                }
                continue;
            }
            for j in 0..n {
                self.values(&keys[j * stride..], &mut vals[j][..nd]);
            }
            let mut best = [(u64::MAX, u32::MAX); BURST];
            let nodes = &t.nodes[..];
            for &root in &t.roots {
                let mut at = [root; BURST];
                // Every key has reached a leaf when the AND of their
                // references has the leaf bit.
                let mut all = root;
                while all & LEAF == 0 {
                    all = LEAF;
                    for j in 0..n {
                        let r = at[j];
                        if r & LEAF == 0 {
                            let next = step(nodes, r, &vals[j], &count);
                            at[j] = next;
                            all &= next;
                        }
                    }
                }
                // Every key's leaf is known now: ask for the first line of
                // each (its ids and its first rows) before reading any, so
                // that the leaves' misses overlap rather than queue behind
                // each key's checks. One line a key paid (acl1_10K about
                // 7 % faster); all of a leaf's lines cost more than they
                // saved.
                let words = t.groups.words().as_ptr();
                for &r in &at[..n] {
                    let l = t.leaves[(r & !LEAF) as usize];
                    crate::simd::prefetch(words.wrapping_add(l.start as usize));
                }
                for j in 0..n {
                    let found = self.resolve(
                        at[j] & !LEAF,
                        best[j].0,
                        &vals[j][..nd],
                        &keys[j * stride..],
                        verify,
                        mask,
                    );
                    best[j] = best[j].min(found);
                }
            }
            for (j, o) in outs.iter_mut().enumerate() {
                *o = self.with_extra(best[j], &vals[j][..nd], &keys[j * stride..], verify, mask);
            }
        }
    }
}

/// Keys a burst descends together.
const BURST: usize = 32;

/// Most dimensions a burst keeps on its stack for all of its keys (a
/// power of two: see [`Cuts::child`]); sets with more go key by key.
const BURST_DIMS: usize = 16;

/// Most dimensions of a key: sixteen fields of four chunks.
pub(crate) const MAX_DIMS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_project_wide_fields_onto_chunks() {
        let dims = Dim::of_fields(&[6, 2]);
        assert_eq!(dims.len(), 3);
        assert_eq!((dims[0].off, dims[0].len, dims[0].shift), (0, 4, 16));
        assert_eq!((dims[1].off, dims[1].len, dims[1].shift), (4, 2, 0));
        assert_eq!((dims[2].off, dims[2].len), (6, 2));
        // Same upper chunk: the lower chunk's range is exact.
        assert_eq!(
            dims[1].project(0x0102_0304_0010, 0x0102_0304_0020),
            (0x10, 0x20)
        );
        // Upper chunks differ: the lower chunk can be anything.
        assert_eq!(
            dims[1].project(0x0102_0304_0010, 0x0102_0305_0020),
            (0, 0xffff)
        );
        assert_eq!(
            dims[0].project(0x0102_0304_0010, 0x0102_0305_0020),
            (0x0102_0304, 0x0102_0305)
        );
    }

    #[test]
    fn small_anchor_groups_share_a_tree() {
        // 300 elements narrow in the first dimension, and two groups of 12
        // narrow only in the second or only in the third.
        let dims = Dim::of_fields(&[4, 2, 2]);
        let any = (0, 0xffff);
        let mut all: Vec<Entry> = (0..300u32)
            .map(|i| (vec![(i * 1000, i * 1000 + 9), any, any], i))
            .chain((0..12).map(|i| (vec![(0, u32::MAX), (i * 100, i * 100 + 1), any], 300 + i)))
            .chain((0..12).map(|i| (vec![(0, u32::MAX), any, (i * 7, i * 7 + 3)], 312 + i)))
            .map(|(ranges, id)| Entry {
                id,
                rank: id as u64,
                ranges,
            })
            .collect();
        let t = Cuts::build_forest(&dims, true, &all, true, &[]);
        assert_eq!(t.roots.len(), 2);
        assert_eq!(t.plan(), &[0b001, 0b110]);
        // A rebuild with the plan merges the same anchors without trials,
        // and gives an anchor the plan does not name a tree of its own.
        assert_eq!(
            Cuts::build_forest(&dims, true, &all, true, &[0b110])
                .roots
                .len(),
            2
        );
        assert_eq!(
            Cuts::build_forest(&dims, true, &all, true, &[0b011]).plan(),
            &[0b011, 0b100]
        );
        // Without the small groups there is nothing to merge.
        all.truncate(300);
        assert_eq!(
            Cuts::build_forest(&dims, true, &all, true, &[]).roots.len(),
            1
        );
    }

    #[test]
    fn cuts_are_distinct_and_at_most_fifteen() {
        let ends: Vec<u32> = (0..1000).map(|i| i / 3).collect();
        let p = pick_cuts(&ends);
        let c = p.cuts();
        assert!(c.len() <= MAX_CUTS && c.windows(2).all(|w| w[0] < w[1]));
        assert!(p.cuts[p.len..].iter().all(|&x| x == u32::MAX));
        assert_eq!(pick_cuts(&[5, 5, 9]).cuts(), [5, 9]);
        let many: Vec<u32> = (0..16).collect();
        assert_eq!(pick_cuts(&many).len, MAX_CUTS);
    }

    /// The build's fixed-step search agrees with a binary search over the
    /// cuts themselves, for every count of cuts, at and around each cut
    /// and at the ends of the value range (a cut may be `u32::MAX`).
    #[test]
    fn padded_rank_is_partition_point() {
        for len in 0..=MAX_CUTS {
            for top in [1000, u32::MAX] {
                let cuts: Vec<u32> = (0..len as u32)
                    .map(|i| if i + 1 == len as u32 { top } else { 7 * i + 3 })
                    .collect();
                let p = Padded::new(&cuts);
                let mut xs = vec![0, 1, 999, 1000, 1001, u32::MAX - 1, u32::MAX];
                for &c in &cuts {
                    xs.extend([c.saturating_sub(1), c, c.saturating_add(1)]);
                }
                for x in xs {
                    assert_eq!(p.rank(x), cuts.partition_point(|&c| c <= x), "{cuts:?} {x}");
                }
            }
        }
    }
}
