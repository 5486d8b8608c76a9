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
//!   by field (sixteen lows, sixteen spans): checking a key against a
//!   group is a subtraction and a compare per dimension, and the first
//!   lane left set is the first match.
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

mod build;
mod classify;
mod sieve;
#[cfg(test)]
mod tests;

pub(crate) use classify::{Classifier, Rows, Verify, BURST, BURST_DIMS};

use crate::tree::Block;
use pages::Huge;
pub(crate) use sieve::{sieve_bit, NO_SIEVE};

/// Lanes of a leaf group.
pub(crate) const LANES: usize = 16;

/// Most elements a leaf is left with before it is cut further.
const LEAF_MAX: usize = 16;

/// Most elements a leaf keeps where the best cut of them splits them
/// poorly (`Builder::build`): two groups.
const LEAF_WIDE: usize = 32;

/// Deepest a tree grows; past this, leaves stay as large as they are.
const MAX_DEPTH: usize = 12;

/// Most levels of a tree's top that a key goes through without a test
/// for leaves ([`Cuts::same_dim_depth`]).
const MAX_PREFIX: usize = 4;

/// Cuts per node (a block of sixteen values, the last always padding).
const MAX_CUTS: usize = 15;

/// A child reference naming a leaf rather than a node.
const LEAF: u32 = 1 << 31;

/// A reference to a node is the node's byte offset among the tree's
/// nodes (its index times 128, the size of a node) with twice the node's
/// dimension in the seven bits below: a step reads the node alone (a
/// table of dimensions beside the nodes was one more dependent load a
/// level), and finds the node and the key's value each with one AND (the
/// dimension doubled is the value's offset in a row of 4-byte values at
/// an address scale of 2; an index and a dimension above it took three
/// instructions more a step).
const NODE_SHIFT: u32 = 7;

/// The bits of a node reference holding twice its dimension.
const DIM_BITS: u32 = (1 << NODE_SHIFT) - 1;

const _: () = assert!(std::mem::size_of::<Node>() == 1 << NODE_SHIFT);
const _: () = assert!(2 * MAX_DIMS as u32 <= DIM_BITS + 1);

/// Most nodes a tree holds (an index times 128 stays below the leaf
/// bit), past which it stops cutting.
const NODE_INDEX: u32 = (1 << 24) - 1;

/// The reference of node `i`, which cuts dimension `d`.
fn node_ref(i: usize, d: usize) -> u32 {
    debug_assert!(i <= NODE_INDEX as usize && d < MAX_DIMS);
    ((i as u32) << NODE_SHIFT) | (2 * d as u32)
}

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
    /// The right shift that leaves the chunk's `len` bytes of a 4-byte
    /// big-endian read: `32 - 8 * len`, kept rather than computed at each
    /// key (three instructions a dimension of every lookup).
    drop: u8,
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
                    drop: (32 - 8 * l) as u8,
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
    /// `match` on the length for every dimension of every key is a good
    /// share of a lookup's instructions: the `classbench` probe under
    /// callgrind.)
    #[inline(always)]
    fn value(&self, key: &[u8]) -> u32 {
        let off = self.off as usize;
        if let Some(&k) = key.get(off..off + 4).and_then(|k| k.first_chunk::<4>()) {
            return u32::from_be_bytes(k) >> self.drop;
        }
        let k = &key[off..];
        match self.len {
            1 => k[0] as u32,
            2 => u16::from_be_bytes([k[0], k[1]]) as u32,
            3 => u32::from_be_bytes([0, k[0], k[1], k[2]]),
            _ => u32::from_be_bytes([k[0], k[1], k[2], k[3]]),
        }
    }

    /// [`Dim::value`] of a key that holds four bytes at this dimension's
    /// offset: the read without a bounds check.
    ///
    /// # Safety
    ///
    /// `self.off + 4 <= key.len()`.
    #[inline(always)]
    #[allow(unsafe_code)]
    unsafe fn value_within(&self, key: &[u8]) -> u32 {
        // SAFETY: the caller's contract.
        unsafe { read_within(key, self.off as usize, self.drop as u32) }
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

/// The four big-endian bytes of `key` at `off`, shifted right by `drop`
/// ([`Dim::value_within`], and a burst's reads with the offsets and
/// shifts held in locals), without a bounds check.
///
/// # Safety
///
/// `off + 4 <= key.len()`.
#[inline(always)]
#[allow(unsafe_code)]
unsafe fn read_within(key: &[u8], off: usize, drop: u32) -> u32 {
    debug_assert!(off + 4 <= key.len());
    // SAFETY: the four bytes at `off` are inside `key` (the caller's
    // contract); an unaligned read of `[u8; 4]`.
    let k = unsafe { key.as_ptr().add(off).cast::<[u8; 4]>().read_unaligned() };
    u32::from_be_bytes(k) >> drop
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

/// The dimensions of `dims` whose lows and spans a leaf group stores as
/// words: every one up to the last of more than two bytes. The ones after
/// it (ports, protocols: values below 65,536) store theirs as 16-bit
/// halves, a row of lows and spans in the room of one row of words
/// ([`Groups`]), where the layout is one of [`PACKED`]; in other
/// layouts every dimension is stored as words.
pub(crate) fn word_dims(dims: &[Dim]) -> usize {
    let n = dims.len();
    let wd = dims.iter().rposition(|d| d.len > 2).map_or(0, |i| i + 1);
    if PACKED.contains(&(n, wd)) {
        wd
    } else {
        n
    }
}

/// The layouts (dimensions, of which the first stored as words) whose
/// 16-bit dimensions are stored as halves: those the lookups have a form
/// of their own for, with the rows' offsets constant (each form is code
/// of its own, so not every layout has one): a port or protocol alone;
/// an address and a port; addresses, ports and protocols as firewall
/// rules name them, the IPv4 5-tuple among them. A layout with halves
/// and no form of its own would check them with the layout read at each
/// group, a quarter more instructions than words.
pub(crate) const PACKED: [(usize, usize); 6] = [(1, 0), (2, 1), (3, 1), (3, 2), (4, 2), (5, 2)];

/// Words a lane of a leaf group takes, of `dims` dimensions, the first
/// `word_dims` of them stored as words ([`word_dims`]): its tag, two per
/// such dimension, one per other.
pub(crate) fn lane_words(dims: usize, word_dims: usize) -> usize {
    1 + dims + word_dims
}

/// Elements checked together, in groups of 4, 8 or 16 lanes (a leaf's
/// width: the fewest that hold it, so a leaf of three elements reads 128
/// bytes of a 5-tuple, not 512): per group, the lanes' tags (ids, or
/// places in rank order: [`Groups::push_entries`]), then per
/// dimension their lows and their spans (high minus low): a row of lows
/// and a row of spans, `u32` each, for the first [`word_dims`]
/// dimensions; for the others (16-bit values after the last wider one) a
/// single row of words holding the lanes' 16-bit lows then their 16-bit
/// spans. A 5-tuple's group of 16 is then 8 cache lines, not 11: a key's
/// leaves are most of a large set's memory traffic (ClassBench's
/// ipc1_100K), and the halves cost no instruction more (the extending
/// loads `vpmovzxwd` take them). A value `v` is
/// in a lane's range when `v - low <= span`, wrapping: a subtraction and
/// an unsigned minimum against the rows in memory, four AVX2 instructions
/// for eight lanes where a low and a high took seven (AVX2 has no
/// unsigned compare; `callgrind` on ClassBench's fw1: most of a lookup is
/// these checks). No range is empty in that form, so a leaf's last group
/// fills its lanes past the leaf's elements with the last element again.
/// A group of `w`
/// lanes starts at a multiple of `w` words of a 64-byte-aligned array, so
/// no vector load of it straddles a cache line.
///
/// Built in a vector; a chosen tree's groups of [`HUGE_FROM`] bytes or
/// more are then settled into a [`Huge`] allocation ([`Groups::settle`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Groups {
    /// The blocks as they are built, and as lookups read them unless
    /// settled in huge pages (then empty).
    blocks: Vec<Block>,
    /// Words in use.
    len: usize,
    /// The blocks of large groups, settled.
    huge: Option<Huge<Block>>,
}

/// Groups from this size up are settled in huge pages. A key's leaves
/// are a few lines at random places in the groups, and past what the
/// TLB covers with 4 KiB pages (2,048 entries, 8 MiB, on the Xeon of
/// BENCHMARKS.md) nearly each of them also walks the page table:
/// ClassBench's ipc1_100K (17 MiB of groups) 81.1 -> 75.8 ns a lookup
/// in huge pages. Below it they gained nothing measurable, and the copy
/// (with the kernel's compaction for 2 MiB pages) cost fw1_1K's build
/// 2-13 ms of its 22. Only a chosen tree is settled: a build's trial
/// trees (a forest's merges, the one tree that ran out of budget) grow
/// to tens of megabytes, and growing those in huge pages doubled
/// fw1_100K's build.
pub(crate) const HUGE_FROM: usize = 8 << 20;

/// Where a leaf's groups are: first word, group count, lanes a group,
/// lanes used in the last group; and the tag of its first element
/// (`u64::MAX` when empty): in a tree, its place in rank order, below
/// which nothing in the leaf ranks.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Leaf {
    start: u32,
    groups: u16,
    width: u8,
    last: u8,
    first: u64,
}

impl Leaf {
    /// Whether the leaf's groups of `lane_words` a lane ([`lane_words`])
    /// lie inside `words`
    /// words, at a width the checks handle, its last group no wider: what
    /// a leaf's unchecked group reads rest on (`Classifier::first_in`).
    pub(crate) fn fits(&self, words: usize, lane_words: usize) -> bool {
        let per = self.width as usize * lane_words;
        self.groups == 0
            || (matches!(self.width, 4 | 8 | 16)
                && self.last <= self.width
                && self.start as usize + self.groups as usize * per <= words)
    }
}

impl Groups {
    /// The words lookups read (a branch: callers on the lookup path
    /// take them once a burst).
    fn words(&self) -> &[u32] {
        match &self.huge {
            Some(h) => bytemuck::cast_slice(h),
            None => bytemuck::cast_slice(&self.blocks),
        }
    }

    /// Once a tree is built: its groups in huge pages (one copy) from
    /// [`HUGE_FROM`] bytes up. Smaller ones stay as built, slack and all:
    /// shrinking the vector copied it (an over-aligned reallocation),
    /// 4.5 ms of fw1_1K's 22 ms build. (Settled, the vector is empty:
    /// a second call does nothing.)
    fn settle(&mut self) {
        if self.blocks.len() * std::mem::size_of::<Block>() >= HUGE_FROM {
            self.huge = Some(Huge::from_slice(&self.blocks));
            self.blocks = Vec::new();
        }
    }

    /// Appends the leaf of the `n` elements `entry(0..n)`, in rank order,
    /// each lane tagged `tag(i)`: a tree's leaves tag an element with its
    /// place in the tree's rank order ([`Cuts::ids`]), the extra
    /// elements with their ids.
    fn push_entries<'e>(
        &mut self,
        (dims, word_dims): (usize, usize),
        n: usize,
        entry: impl Fn(usize) -> &'e Entry,
        tag: impl Fn(usize) -> u32,
    ) -> Leaf {
        let width = match n {
            0..=4 => 4,
            5..=8 => 8,
            _ => LANES,
        };
        let per = width * lane_words(dims, word_dims);
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
            // The last group's lanes past the leaf's elements repeat its
            // last element: a key matching one matches that element first
            // (a lower lane), so the checks need no mask of used lanes
            // (seven instructions a group).
            let lanes = (g * width..(g + 1) * width).map(|i| i.min(n - 1));
            let (ids, rows) = group.split_at_mut(width);
            for (id, i) in ids.iter_mut().zip(lanes.clone()) {
                *id = tag(i);
            }
            let (words, halves) = rows.split_at_mut(2 * width * word_dims);
            for (d, row) in words.chunks_exact_mut(2 * width).enumerate() {
                let (lo, span) = row.split_at_mut(width);
                for ((lo, span), i) in lo.iter_mut().zip(span.iter_mut()).zip(lanes.clone()) {
                    let (l, h) = entry(i).ranges[d];
                    (*lo, *span) = (l, h - l);
                }
            }
            for (d, row) in (word_dims..).zip(halves.chunks_exact_mut(width)) {
                let (lo, span) = bytemuck::cast_slice_mut::<u32, u16>(row).split_at_mut(width);
                for ((lo, span), i) in lo.iter_mut().zip(span.iter_mut()).zip(lanes.clone()) {
                    // Dimensions after the last of more than two bytes
                    // have values below 65,536 (`word_dims`).
                    let (l, h) = entry(i).ranges[d];
                    debug_assert!(h <= u16::MAX as u32);
                    (*lo, *span) = (l as u16, (h - l) as u16);
                }
            }
        }
        Leaf {
            start: start as u32,
            groups: groups as u16,
            width: width as u8,
            last: (n - (groups.max(1) - 1) * width) as u8,
            first: if n == 0 { u64::MAX } else { tag(0) as u64 },
        }
    }

    fn memory_usage(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.huge.as_ref().map_or(0, |h| h.allocated())
    }
}

/// The check of one group, scalar (the compiler vectorises its lane
/// loop): the mask of the lanes whose ranges hold `vals` (one value per
/// dimension), bit `l` for lane `l`. `r` holds the group's ranges, `w`
/// lanes a row: the lows then the spans of each dimension, the first
/// `word_dims` as words, the rest as 16-bit halves ([`Groups`]).
#[inline(always)]
pub(crate) fn mask_scalar(r: &[u32], w: usize, word_dims: usize, vals: &[u32]) -> u32 {
    let mut ok = [true; LANES];
    for (d, &v) in vals.iter().enumerate() {
        if d < word_dims {
            let (lo, span) = (
                &r[2 * d * w..(2 * d + 1) * w],
                &r[(2 * d + 1) * w..(2 * d + 2) * w],
            );
            for l in 0..w {
                ok[l] &= v.wrapping_sub(lo[l]) <= span[l];
            }
        } else {
            let row = &r[(word_dims + d) * w..(word_dims + d + 1) * w];
            let (lo, span) = bytemuck::cast_slice::<u32, u16>(row).split_at(w);
            for l in 0..w {
                ok[l] &= v.wrapping_sub(lo[l] as u32) <= span[l] as u32;
            }
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
pub(crate) struct Node {
    pub(crate) cuts: Block,
    pub(crate) child: [u32; LANES],
}

/// The tree of one snapshot, shared by later snapshots until a rebuild.
#[derive(Clone, Debug)]
pub(crate) struct Cuts {
    dims: Vec<Dim>,
    /// The first dimensions, whose leaf rows are words ([`word_dims`]).
    word_dims: usize,
    /// The end of the last four bytes a dimension reads (the largest
    /// `off + 4`): a key at least this long has every dimension's value
    /// read without a check ([`Dim::value_within`]).
    read_end: usize,
    /// Whether every field is one dimension: a leaf's match is then the
    /// element's match, with no full check.
    exact: bool,
    nodes: Vec<Node>,
    /// Where each leaf's groups are.
    leaves: Vec<Leaf>,
    groups: Groups,
    /// One tree per anchor dimension (see [`Cuts::build`]).
    roots: Vec<u32>,
    /// Per tree, the place in rank order of its first element: a burst
    /// whose every key has an answer ranked before it skips the tree.
    firsts: Vec<u64>,
    /// Per tree, how many levels from its root are nodes of the root's
    /// dimension on every path (see [`Cuts::same_dim_depth`]).
    prefix: Vec<u8>,
    /// Rank of every id the tree holds (`u64::MAX` for others).
    rank: Vec<u64>,
    /// The ids and ranks of the tree's elements in rank order: a leaf
    /// lane holds an element's place here, not its id, so that comparing
    /// the answers of a forest's trees reads no table (a rank by id was
    /// one scattered load a tree of every key: ClassBench's 100K sets,
    /// 7 % of a lookup), and an answer's id is read once a key.
    ids: Vec<u32>,
    ranks: Vec<u64>,
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
    /// Per tree, the dimension its leaves' sieves hold ([`NO_SIEVE`]:
    /// none), and per leaf its sieve ([`sieve_bit`]): a key whose value's
    /// bit is clear in its leaf's sieve goes to `empty_leaf` instead.
    sieve_dim: Vec<u8>,
    sieves: Vec<u64>,
    /// A leaf of no elements, ranked after everything.
    empty_leaf: u32,
}

/// [`Cuts::child`] of `nodes`, a tree's nodes held apart from the tree
/// so that a burst's descent keeps their address in a register; `val`
/// gives the key's value of a dimension.
///
/// The node is read without a bounds check: a tree's references are
/// checked once when it is built ([`Cuts::refs_valid`]), and the check at
/// every step of every key was two instructions of a step's 30 (callgrind,
/// ClassBench's fw1_100K: twelve steps a lookup).
#[inline(always)]
#[allow(unsafe_code)]
fn step(
    nodes: &[Node],
    r: u32,
    val: impl Fn(usize) -> u32,
    pick: impl Fn(&Node, u32) -> u32,
) -> u32 {
    let i = (r >> NODE_SHIFT) as usize;
    debug_assert!(i < nodes.len());
    // SAFETY: `r` is a node reference of this tree (its caller stops at
    // leaves, or goes no deeper than a tree's top of nodes, which
    // `Cuts::refs_valid` checks), and every node reference a tree holds
    // is below its node count (`Cuts::refs_valid`, asserted when the tree
    // is built); nodes are never removed from a built tree.
    let n = unsafe { nodes.get_unchecked(i) };
    pick(n, val(((r & DIM_BITS) >> 1) as usize))
}

/// Every key of a burst from its reference in `start` down to its leaf in
/// `nodes`, all keys a level at a time (their loads overlap): the leaf
/// reference of each of the first `n` keys (the rest stay as they start),
/// whose dimension values are the rows of `rows` (`rows[j][d]`).
///
/// A pointer steps along the keys' rows; a key's value of a node's
/// dimension is at the offset the reference carries ([`NODE_SHIFT`]).
#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn descend_burst<const B: usize, const D: usize>(
    nodes: &[Node],
    start: [u32; B],
    n: usize,
    rows: &[[u32; D]; B],
    pick: impl Fn(&Node, u32) -> u32,
) -> [u32; B] {
    let mut out = start;
    let at = &mut out[..n.min(B)];
    // Every key has reached a leaf when the AND of their references has
    // the leaf bit.
    let mut all = at.iter().fold(LEAF | !LEAF, |a, &r| a & r);
    while all & LEAF == 0 {
        all = LEAF;
        let mut p = rows.as_ptr().cast::<u32>();
        for r in at.iter_mut() {
            if *r & LEAF == 0 {
                // SAFETY: `p` is the row of key `j`, `j` below `n <= B`,
                // in `rows` (`B` rows of `D` values, one array); value
                // `d % D` is inside it.
                let val = |d: usize| unsafe { p.add(d % D).read() };
                *r = step(nodes, *r, val, &pick);
                all &= *r;
            }
            p = p.wrapping_add(D);
        }
    }
    out
}

/// The values of `b` at or below `x` among its first 15, the cuts of a
/// node (the sixteenth is always padding, so a count is at most 15).
#[inline(always)]
pub(crate) fn count_cuts(b: &Block, x: u32) -> u32 {
    b.0[..MAX_CUTS].iter().map(|&v| (v <= x) as u32).sum()
}

/// The child of node `n` that a value `x` of its dimension goes to, by
/// [`count_cuts`]: the scalar form of the `pick` the descents take.
#[inline(always)]
pub(crate) fn pick_scalar(n: &Node, x: u32) -> u32 {
    n.child[count_cuts(&n.cuts, x) as usize % LANES]
}

impl Cuts {
    /// The child of node `r` that a key of dimension values `vals` goes
    /// to (`pick`: the child by the values at or below a value among the
    /// node's first 15 cuts, as [`pick_scalar`]). A key of `u32::MAX`
    /// counts the padding too, 15 in all, read as the last slot. `vals`
    /// is as long as a power of two, so its index needs no bounds check (a
    /// burst's step is a few instructions fewer than with the dimension
    /// read from the node: `bench matcher`'s firewall shapes).
    #[inline(always)]
    pub(crate) fn child<const N: usize>(
        &self,
        r: u32,
        vals: &[u32; N],
        pick: impl Fn(&Node, u32) -> u32,
    ) -> u32 {
        step(&self.nodes, r, |d| vals[d % N], pick)
    }

    /// The node a reference `r` of this tree names (not a leaf): read
    /// without a bounds check, as [`step`] does.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn node_at(&self, r: u32) -> &Node {
        let i = (r >> NODE_SHIFT) as usize;
        debug_assert!(r & LEAF == 0 && i < self.nodes.len());
        // SAFETY: as in `step`: every node reference a tree holds is
        // below its node count (`refs_valid`, asserted when built).
        unsafe { self.nodes.get_unchecked(i) }
    }

    /// The index of node reference `r`, if it names one of the nodes
    /// (the checked form of [`Cuts::node_at`], for the build's checks).
    fn node_index(&self, r: u32) -> Option<usize> {
        let i = (r >> NODE_SHIFT) as usize;
        (r & LEAF == 0 && i < self.nodes.len()).then_some(i)
    }

    /// Leaf `i` of the tree, where `i` comes from a reference the tree
    /// holds (a descent's end): read without a bounds check, as nodes are
    /// ([`step`]); two instructions a tree of every lookup.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(crate) fn leaf_at(&self, i: u32) -> Leaf {
        debug_assert!((i as usize) < self.leaves.len());
        // SAFETY: every leaf reference the tree holds is below its leaf
        // count (`refs_valid`, asserted when the tree is built), and
        // leaves are never removed from a built tree.
        unsafe { *self.leaves.get_unchecked(i as usize) }
    }

    /// Whether every reference the tree holds (roots and children) names
    /// one of its nodes or leaves, and every leaf's groups are inside the
    /// tree's words: what [`step`]'s, [`Cuts::leaf_at`]'s and a leaf's
    /// unchecked reads rest on.
    fn refs_valid(&self) -> bool {
        let ok = |r: u32| {
            if r & LEAF != 0 {
                ((r & !LEAF) as usize) < self.leaves.len()
            } else {
                self.node_index(r).is_some() && (((r & DIM_BITS) >> 1) as usize) < self.dims.len()
            }
        };
        let words = self.groups.words().len();
        self.roots.iter().all(|&r| ok(r))
            && self.firsts.len() == self.roots.len()
            && self.prefix.len() == self.roots.len()
            && self
                .roots
                .iter()
                .zip(&self.prefix)
                .all(|(&r, &k)| k as usize <= self.same_dim_depth(r))
            && self.nodes.iter().all(|n| n.child.iter().all(|&r| ok(r)))
            && self.leaves.iter().all(|l| l.fits(words, self.lane_words()))
            && self.sieves.len() == self.leaves.len()
            && self.sieve_dim.len() == self.roots.len()
            && self
                .sieve_dim
                .iter()
                .all(|&d| d == NO_SIEVE || (d as usize) < self.dims.len().min(BURST_DIMS))
            && self
                .leaves
                .get(self.empty_leaf as usize)
                .is_some_and(|l| l.groups == 0 && l.first == u64::MAX)
    }

    /// How a leaf group's rows lie: its dimensions, and how many of the
    /// first are stored as words ([`Groups`]).
    pub(crate) fn rows(&self) -> (usize, usize) {
        (self.dims.len(), self.word_dims)
    }

    /// Words a lane of a leaf group takes ([`lane_words`]).
    pub(crate) fn lane_words(&self) -> usize {
        lane_words(self.dims.len(), self.word_dims)
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
            + self.ids.capacity() * 4
            + self.ranks.capacity() * 8
            + self.shadows.capacity() * 8
            + self.sieves.capacity() * 8
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

/// Most dimensions of a key: sixteen fields of four chunks.
pub(crate) const MAX_DIMS: usize = 64;
