//! Longest-prefix match in a multibit trie with controlled prefix
//! expansion, as DPDK's `rte_lpm` / `rte_fib` DIR-24-8 does it: a first
//! level indexed directly by the address's top bits (24 for IPv4, 16 for
//! IPv6), then 8-bit levels ("groups" of 256 entries) for longer prefixes.
//! An IPv4 lookup is one load, or two for the rare prefixes longer than
//! /24; an IPv6 /48 is five.
//!
//! Every entry remembers the length of the prefix that wrote it, so a
//! prefix is added or removed by touching only the entries it covers:
//! adding overwrites entries written by shorter prefixes, removing puts
//! back the longest remaining prefix that covers it. No update rebuilds
//! the table.
//!
//! Both levels live in pages shared with published snapshots through
//! `Arc`s; an update copies only the pages it writes (copy on write), and
//! publishing is a copy of the page pointers.

use std::collections::HashMap;
use std::sync::Arc;

/// Entry flag: the value is a group index, not a route.
const EXT: u32 = 1 << 31;
/// Bits of the stored depth (prefix length + 1; 0 = no route).
const DEPTH_SHIFT: u32 = 23;
const DEPTH_MASK: u32 = 0xff << DEPTH_SHIFT;
/// Bits of the value: a route's target id, or a group index.
const VALUE_MASK: u32 = (1 << DEPTH_SHIFT) - 1;
/// Largest target id a route can carry.
pub const MAX_TARGET: u32 = VALUE_MASK;
/// A run of [`LpmTable::runs64`] no route covers.
pub const RUN_NONE: u32 = u32::MAX;
/// A run of [`LpmTable::runs64`] holding a route longer than /64.
pub const RUN_LONG: u32 = u32::MAX - 1;
/// Largest number of groups.
const MAX_GROUPS: u32 = VALUE_MASK;

/// Routes from which a published table's burst lookups prefetch every
/// entry before loading any. With the full tables' random destinations
/// (cache misses) that overlaps more misses (`fibprobe` on
/// `dpdk-test-fib`'s data, BENCHMARKS.md). A small table's entries stay
/// in cache, where the extra pass can only cost.
pub const PREFETCH_ROUTES: usize = 16_384;

/// Entries per first-level page, and groups per group page: one 2 MiB
/// huge page ([`pages`]). The first update of a page after a
/// publication copies it (2 MiB), not the whole table.
const PAGE_BITS: u32 = 19;
const PAGE: usize = 1 << PAGE_BITS;
const GROUPS_PER_PAGE: usize = PAGE / 256;

use pages::{prefetch, Page};
const _: () = assert!(PAGE == pages::ENTRIES);

#[inline(always)]
fn leaf(len: u32, target: u32) -> u32 {
    ((len + 1) << DEPTH_SHIFT) | target
}

#[inline(always)]
fn depth(e: u32) -> u32 {
    (e & DEPTH_MASK) >> DEPTH_SHIFT
}

#[inline(always)]
fn decode(e: u32) -> Option<u32> {
    (e & DEPTH_MASK != 0).then_some(e & VALUE_MASK)
}

/// The immutable lookup structure: pages of the first level and of the
/// groups, shared between the working copy and the snapshots.
#[derive(Clone, Debug)]
pub struct LpmTable {
    width: u32,
    first: u32,
    /// Whether burst lookups prefetch (see [`PREFETCH_ROUTES`]).
    prefetch: bool,
    top: Vec<Arc<Page>>,
    groups: Vec<Arc<Page>>,
}

/// The page of zeros every table's unwritten pages share: an empty IPv4
/// table is 32 first-level pages (64 MiB) that a VRF with a few routes
/// mostly never writes; copy on write gives a page its own copy at its
/// first write.
fn zero_page() -> Arc<Page> {
    static ZERO: std::sync::OnceLock<Arc<Page>> = std::sync::OnceLock::new();
    ZERO.get_or_init(|| Arc::new(Page::zeroed())).clone()
}

impl LpmTable {
    fn new(width: u32, first: u32) -> LpmTable {
        let entries = 1usize << first;
        let pages = entries.div_ceil(PAGE);
        LpmTable {
            width,
            first,
            prefetch: false,
            top: vec![zero_page(); pages],
            groups: Vec::new(),
        }
    }

    #[inline(always)]
    fn top_ref(&self, i: usize) -> &u32 {
        &self.top[i >> PAGE_BITS][i & (PAGE - 1)]
    }

    #[inline(always)]
    fn top_entry(&self, i: usize) -> u32 {
        *self.top_ref(i)
    }

    #[inline(always)]
    fn group_ref(&self, g: u32, b: usize) -> &u32 {
        let g = g as usize;
        &self.groups[g / GROUPS_PER_PAGE][(g % GROUPS_PER_PAGE) * 256 + b]
    }

    #[inline(always)]
    fn group_entry(&self, g: u32, b: usize) -> u32 {
        let g = g as usize;
        self.groups[g / GROUPS_PER_PAGE][(g % GROUPS_PER_PAGE) * 256 + b]
    }

    /// IPv4 lookup (the table must be an IPv4 one).
    #[inline(always)]
    pub fn lookup_v4(&self, addr: u32) -> Option<u32> {
        debug_assert_eq!(self.width, 32);
        let e = self.top_entry((addr >> 8) as usize);
        if e & EXT == 0 {
            return decode(e);
        }
        decode(self.group_entry(e & VALUE_MASK, (addr & 0xff) as usize))
    }

    /// Lookup of an address of the table's width (IPv4 in the low bits).
    #[inline]
    pub fn lookup(&self, addr: u128) -> Option<u32> {
        let w = self.width;
        let mut e = self.top_entry((addr >> (w - self.first)) as usize);
        let mut bit = self.first;
        while e & EXT != 0 {
            let b = ((addr >> (w - bit - 8)) & 0xff) as usize;
            e = self.group_entry(e & VALUE_MASK, b);
            bit += 8;
        }
        decode(e)
    }

    /// The route `addr` matches as (prefix length, target): the entry
    /// [`LpmTable::lookup`] reads remembers the length of the prefix that
    /// wrote it, so the published table itself says which prefix answers
    /// (`forwarder route get`, the packet trace), with no copy of the
    /// routes beside it. The prefix is `addr` with the bits past the
    /// length cleared.
    pub fn lookup_prefix(&self, addr: u128) -> Option<(u32, u32)> {
        let w = self.width;
        let mut e = self.top_entry((addr >> (w - self.first)) as usize);
        let mut bit = self.first;
        while e & EXT != 0 {
            let b = ((addr >> (w - bit - 8)) & 0xff) as usize;
            e = self.group_entry(e & VALUE_MASK, b);
            bit += 8;
        }
        decode(e).map(|t| (depth(e) - 1, t))
    }

    /// Looks up a burst of addresses a level at a time: the first-level
    /// entries of all of them, then the next level of those that go on,
    /// and so on, so that their loads are in flight together instead of
    /// one address's chain of loads after another's (DPDK's bulk lookups
    /// do the same).
    #[inline]
    pub fn lookup_burst<A: Copy + Into<u128>>(&self, addrs: &[A], out: &mut [Option<u32>]) {
        const N: usize = 64;
        let w = self.width;
        for (addrs, out) in addrs.chunks(N).zip(out.chunks_mut(N)) {
            let n = addrs.len().min(out.len());
            let mut e = [0u32; N];
            if self.prefetch {
                for &a in &addrs[..n] {
                    prefetch(self.top_ref((a.into() >> (w - self.first)) as usize));
                }
            }
            for i in 0..n {
                e[i] = self.top_entry((addrs[i].into() >> (w - self.first)) as usize);
            }
            let mut bit = self.first;
            loop {
                // Branch-free: an address whose route is already found
                // loads from group 0 (reserved, never a route's group)
                // and keeps its entry, so mixed bursts mispredict nothing.
                let mut more = 0u32;
                if self.prefetch {
                    for i in 0..n {
                        let x = e[i];
                        let g = if x & EXT != 0 { x & VALUE_MASK } else { 0 };
                        let b = ((addrs[i].into() >> (w - bit - 8)) & 0xff) as usize;
                        prefetch(self.group_ref(g, b));
                    }
                }
                for i in 0..n {
                    let x = e[i];
                    let ext = x & EXT != 0;
                    let g = if ext { x & VALUE_MASK } else { 0 };
                    let b = ((addrs[i].into() >> (w - bit - 8)) & 0xff) as usize;
                    let y = self.group_entry(g, b);
                    e[i] = if ext { y } else { x };
                    more |= e[i] & EXT;
                }
                if more == 0 {
                    break;
                }
                bit += 8;
            }
            for i in 0..n {
                out[i] = decode(e[i]);
            }
        }
    }

    /// Prefetches the first-level entry of IPv4 `addr` (where the table
    /// prefetches at all, see [`PREFETCH_ROUTES`]): a caller with other
    /// work to do before its burst lookup lets the misses overlap that.
    #[inline(always)]
    pub fn prefetch_v4(&self, addr: u32) {
        if self.prefetch {
            prefetch(self.top_ref((addr >> 8) as usize));
        }
    }

    /// [`LpmTable::lookup_burst`] for IPv4, in 32-bit arithmetic: the
    /// first level is one load per address (24 bits), the second, for
    /// the few routes longer than /24, a branch-free pass.
    #[inline]
    pub fn lookup_burst_v4(&self, addrs: &[u32], out: &mut [Option<u32>]) {
        debug_assert_eq!(self.width, 32);
        const N: usize = 64;
        for (addrs, out) in addrs.chunks(N).zip(out.chunks_mut(N)) {
            let n = addrs.len().min(out.len());
            let mut e = [0u32; N];
            let mut ext = 0u32;
            // Prefetching every entry first, then loading, beats the loads
            // alone on random destinations of a full table (`fibprobe`):
            // more misses overlap.
            if self.prefetch {
                for &a in &addrs[..n] {
                    prefetch(self.top_ref((a >> 8) as usize));
                }
            }
            for i in 0..n {
                let x = self.top_entry((addrs[i] >> 8) as usize);
                e[i] = x;
                ext |= x;
            }
            if ext & EXT != 0 {
                for i in 0..n {
                    let x = e[i];
                    let is_ext = x & EXT != 0;
                    let g = if is_ext { x & VALUE_MASK } else { 0 };
                    let y = self.group_entry(g, (addrs[i] & 0xff) as usize);
                    e[i] = if is_ext { y } else { x };
                }
            }
            for i in 0..n {
                out[i] = decode(e[i]);
            }
        }
    }

    /// The table as runs over the top 64 bits of an IPv6 address, in
    /// order: `(first, value)` for every place where the value changes,
    /// starting at 0, where the value is the target id, [`RUN_NONE`] where
    /// no route covers the run, or [`RUN_LONG`] for a single top-64 value
    /// under which some route is longer than /64 (its answer depends on
    /// the low bits: look it up here). Walks every entry: off the fast
    /// path (tens of milliseconds for 200,000 routes).
    pub fn runs64(&self) -> Vec<(u64, u32)> {
        assert_eq!(self.width, 128, "runs64 is for IPv6 tables");
        let mut out: Vec<(u64, u32)> = Vec::new();
        let mut emit = |start: u64, v: u32| {
            if out.last().is_none_or(|&(_, last)| last != v) {
                out.push((start, v));
            }
        };
        let span = 64 - self.first;
        for i in 0..1usize << self.first {
            self.walk64(self.top_entry(i), (i as u64) << span, self.first, &mut emit);
        }
        out
    }

    /// [`LpmTable::runs64`] below entry `e`, which covers the top-64
    /// values from `start` on, `bit` bits of the address fixed.
    fn walk64(&self, e: u32, start: u64, bit: u32, emit: &mut impl FnMut(u64, u32)) {
        if e & EXT == 0 {
            emit(start, decode(e).unwrap_or(RUN_NONE));
        } else if bit >= 64 {
            emit(start, RUN_LONG);
        } else {
            let g = e & VALUE_MASK;
            for b in 0..256usize {
                let at = start + ((b as u64) << (64 - bit - 8));
                self.walk64(self.group_entry(g, b), at, bit + 8, emit);
            }
        }
    }

    /// Bytes held by the pages (the zero page all tables share not
    /// counted).
    pub fn memory_usage(&self) -> usize {
        let zero = zero_page();
        self.top
            .iter()
            .chain(&self.groups)
            .filter(|p| !Arc::ptr_eq(p, &zero))
            .map(|p| p.len() * 4)
            .sum()
    }

    /// Number of pages shared with `other` (for tests of copy on write).
    pub fn shared_pages(&self, other: &LpmTable) -> usize {
        self.top
            .iter()
            .chain(&self.groups)
            .zip(other.top.iter().chain(&other.groups))
            .filter(|(a, b)| Arc::ptr_eq(a, b))
            .count()
    }
}

/// What an update does to a route entry.
#[derive(Clone, Copy)]
enum Op {
    /// A prefix of this length is added: overwrite entries written by
    /// prefixes no longer than it.
    Add { len: u32, entry: u32 },
    /// The prefix of this length is removed: entries it wrote get the
    /// replacement (the longest remaining covering prefix, or nothing).
    Remove { len: u32, replacement: u32 },
}

impl Op {
    #[inline]
    fn apply(self, e: u32) -> u32 {
        match self {
            Op::Add { len, entry } if depth(e) <= len + 1 => entry,
            Op::Remove { len, replacement } if depth(e) == len + 1 => replacement,
            _ => e,
        }
    }
}

/// An error of a route update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LpmError {
    /// The prefix length exceeds the family's width.
    BadLength(u32),
    /// The target id is too large.
    BadTarget(u32),
    /// The prefix has bits set past its length.
    HostBits,
    /// Removing a prefix that is not there.
    NotFound,
    /// No group left.
    Full,
}

impl std::fmt::Display for LpmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LpmError::BadLength(l) => write!(f, "prefix length {l} is too long"),
            LpmError::BadTarget(t) => write!(f, "target {t} exceeds {MAX_TARGET}"),
            LpmError::HostBits => write!(f, "prefix has host bits set"),
            LpmError::NotFound => write!(f, "no such route"),
            LpmError::Full => write!(f, "the table has no group left"),
        }
    }
}

impl std::error::Error for LpmError {}

/// The working copy of a routing table for one family: the routes
/// themselves (per prefix length) and the lookup table they expand to.
#[derive(Clone, Debug)]
pub struct Lpm {
    table: LpmTable,
    /// Routes by length: prefix (host bits clear) -> target.
    rib: Vec<HashMap<u128, u32>>,
    free_groups: Vec<u32>,
    ngroups: u32,
    routes: usize,
}

impl Lpm {
    /// An empty IPv4 table (24-bit first level).
    pub fn new_v4() -> Lpm {
        Lpm::with_shape(32, 24)
    }

    /// An empty IPv6 table (16-bit first level).
    pub fn new_v6() -> Lpm {
        Lpm::with_shape(128, 16)
    }

    fn with_shape(width: u32, first: u32) -> Lpm {
        let mut table = LpmTable::new(width, first);
        // Group 0 is reserved: the burst lookup's loads for addresses
        // already resolved go there.
        table.groups.push(zero_page());
        Lpm {
            table,
            rib: vec![HashMap::new(); width as usize + 1],
            free_groups: Vec::new(),
            ngroups: 1,
            routes: 0,
        }
    }

    /// Address width in bits (32 or 128).
    pub fn width(&self) -> u32 {
        self.table.width
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes
    }

    /// Whether there is no route.
    pub fn is_empty(&self) -> bool {
        self.routes == 0
    }

    /// The lookup table as it stands (cheap to clone: shares pages).
    pub fn table(&self) -> &LpmTable {
        &self.table
    }

    /// The lookup table to publish: [`Lpm::table`], prefetching in burst
    /// lookups from [`PREFETCH_ROUTES`] routes on.
    pub fn snapshot(&self) -> LpmTable {
        LpmTable {
            prefetch: self.routes >= PREFETCH_ROUTES,
            ..self.table.clone()
        }
    }

    /// Groups in use (the reserved group 0 not counted).
    pub fn groups(&self) -> u32 {
        self.ngroups - 1 - self.free_groups.len() as u32
    }

    /// The target of exactly this route, if present.
    pub fn get(&self, prefix: u128, len: u32) -> Option<u32> {
        self.rib.get(len as usize)?.get(&prefix).copied()
    }

    /// Every route: (prefix, length, target).
    pub fn routes(&self) -> impl Iterator<Item = (u128, u32, u32)> + '_ {
        self.rib
            .iter()
            .enumerate()
            .flat_map(|(l, m)| m.iter().map(move |(&p, &t)| (p, l as u32, t)))
    }

    /// The mask of a prefix of `len` bits in this family's width.
    fn mask(&self, len: u32) -> u128 {
        let w = self.table.width;
        if len == 0 {
            return 0;
        }
        let full = u128::MAX >> (128 - w);
        full & !((1u128 << (w - len)) - 1)
    }

    fn check(&self, prefix: u128, len: u32) -> Result<(), LpmError> {
        if len > self.table.width {
            return Err(LpmError::BadLength(len));
        }
        if prefix & !self.mask(len) != 0 {
            return Err(LpmError::HostBits);
        }
        Ok(())
    }

    /// Adds a route, or replaces the target of an existing one. Returns
    /// the previous target.
    pub fn insert(&mut self, prefix: u128, len: u32, target: u32) -> Result<Option<u32>, LpmError> {
        self.check(prefix, len)?;
        if target > MAX_TARGET {
            return Err(LpmError::BadTarget(target));
        }
        let old = self.rib[len as usize].insert(prefix, target);
        if old.is_none() {
            self.routes += 1;
        }
        if let Err(e) = self.walk(
            prefix,
            len,
            Op::Add {
                len,
                entry: leaf(len, target),
            },
        ) {
            // Out of groups: put the routes back as they were.
            match old {
                Some(t) => {
                    self.rib[len as usize].insert(prefix, t);
                }
                None => {
                    self.rib[len as usize].remove(&prefix);
                    self.routes -= 1;
                }
            }
            return Err(e);
        }
        Ok(old)
    }

    /// Removes a route, returning its target.
    pub fn remove(&mut self, prefix: u128, len: u32) -> Result<u32, LpmError> {
        self.check(prefix, len)?;
        let target = self.rib[len as usize]
            .remove(&prefix)
            .ok_or(LpmError::NotFound)?;
        self.routes -= 1;
        // The longest remaining prefix covering this one takes its place.
        let replacement = (0..len)
            .rev()
            .find_map(|l| {
                let p = prefix & self.mask(l);
                self.rib[l as usize].get(&p).map(|&t| leaf(l, t))
            })
            .unwrap_or(0);
        self.walk(prefix, len, Op::Remove { len, replacement })
            .expect("removal allocates no group");
        Ok(target)
    }

    fn alloc_group(&mut self, fill: u32) -> Result<u32, LpmError> {
        let g = match self.free_groups.pop() {
            Some(g) => g,
            None => {
                if self.ngroups >= MAX_GROUPS {
                    return Err(LpmError::Full);
                }
                let g = self.ngroups;
                self.ngroups += 1;
                if g as usize / GROUPS_PER_PAGE >= self.table.groups.len() {
                    self.table.groups.push(Arc::new(Page::zeroed()));
                }
                g
            }
        };
        self.group_mut(g).fill(fill);
        Ok(g)
    }

    fn group_mut(&mut self, g: u32) -> &mut [u32] {
        let g = g as usize;
        let page = Arc::make_mut(&mut self.table.groups[g / GROUPS_PER_PAGE]);
        let at = (g % GROUPS_PER_PAGE) * 256;
        &mut page[at..at + 256]
    }

    fn group(&self, g: u32) -> &[u32] {
        let g = g as usize;
        let at = (g % GROUPS_PER_PAGE) * 256;
        &self.table.groups[g / GROUPS_PER_PAGE][at..at + 256]
    }

    fn top_mut(&mut self, i: usize) -> &mut u32 {
        &mut Arc::make_mut(&mut self.table.top[i >> PAGE_BITS])[i & (PAGE - 1)]
    }

    /// Applies `op` to an entry and, for a group, to all its entries.
    fn apply_entry(&mut self, e: u32, op: Op) -> u32 {
        if e & EXT == 0 {
            return op.apply(e);
        }
        let g = e & VALUE_MASK;
        for b in 0..256 {
            let x = self.group(g)[b];
            let y = self.apply_entry(x, op);
            if y != x {
                self.group_mut(g)[b] = y;
            }
        }
        self.collapse(e)
    }

    /// A group whose 256 entries are one and the same route is replaced
    /// by that route, and recycled.
    fn collapse(&mut self, e: u32) -> u32 {
        if e & EXT == 0 {
            return e;
        }
        let g = e & VALUE_MASK;
        let grp = self.group(g);
        let first = grp[0];
        if first & EXT == 0 && grp.iter().all(|&x| x == first) {
            self.free_groups.push(g);
            return first;
        }
        e
    }

    /// Walks the entries `prefix/len` covers and applies `op` to them,
    /// creating groups where the prefix ends below an entry that is still
    /// a route.
    fn walk(&mut self, prefix: u128, len: u32, op: Op) -> Result<(), LpmError> {
        let (w, f) = (self.table.width, self.table.first);
        let top = (prefix >> (w - f)) as usize;
        if len <= f {
            // A page at a time: routes are rewritten in place under one
            // copy-on-write check per page (a default route covers 16 M
            // entries), groups afterwards, one by one. A page nothing
            // changes in is not copied.
            let end = top + (1usize << (f - len));
            let mut i = top;
            let mut groups = Vec::new();
            while i < end {
                let p = i >> PAGE_BITS;
                let stop = end.min((p + 1) << PAGE_BITS);
                let (lo, hi) = (i & (PAGE - 1), (stop - 1) & (PAGE - 1));
                let page = &self.table.top[p][lo..=hi];
                let changes = page.iter().any(|&e| e & EXT == 0 && op.apply(e) != e);
                groups.extend((i..stop).filter(|&j| page[j - i] & EXT != 0));
                if changes {
                    let page = &mut Arc::make_mut(&mut self.table.top[p])[lo..=hi];
                    for e in page.iter_mut().filter(|e| **e & EXT == 0) {
                        *e = op.apply(*e);
                    }
                }
                i = stop;
            }
            for j in groups {
                let e = self.table.top_entry(j);
                let y = self.apply_entry(e, op);
                if y != e {
                    *self.top_mut(j) = y;
                }
            }
            return Ok(());
        }
        // Descend, creating groups as needed; remember the path to
        // collapse groups that end up uniform.
        let mut e = self.table.top_entry(top);
        if e & EXT == 0 {
            let g = self.alloc_group(e)?;
            e = EXT | g;
            *self.top_mut(top) = e;
        }
        let mut path: Vec<(u32, usize)> = Vec::new(); // (group, index in it)
        let mut g = e & VALUE_MASK;
        let mut bit = f;
        loop {
            let next = bit + 8;
            let b = ((prefix >> (w - next)) & 0xff) as usize;
            if len <= next {
                let n = 1usize << (next - len);
                for i in b..b + n {
                    let x = self.group(g)[i];
                    let y = self.apply_entry(x, op);
                    if y != x {
                        self.group_mut(g)[i] = y;
                    }
                }
                break;
            }
            let x = self.group(g)[b];
            let child = if x & EXT == 0 {
                let c = self.alloc_group(x)?;
                self.group_mut(g)[b] = EXT | c;
                c
            } else {
                x & VALUE_MASK
            };
            path.push((g, b));
            g = child;
            bit = next;
        }
        // Bottom-up: fold groups that became uniform into their parent.
        let mut child = g;
        while let Some((parent, b)) = path.pop() {
            let folded = self.collapse(EXT | child);
            if folded & EXT != 0 {
                return Ok(());
            }
            self.group_mut(parent)[b] = folded;
            child = parent;
        }
        let folded = self.collapse(EXT | child);
        if folded & EXT == 0 {
            *self.top_mut(top) = folded;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_basics() {
        let mut t = Lpm::new_v4();
        assert_eq!(t.table().lookup_v4(0x0a00_0001), None);
        t.insert(0x0a00_0000, 8, 1).unwrap();
        t.insert(0x0a01_0000, 16, 2).unwrap();
        t.insert(0x0a01_0180, 25, 3).unwrap();
        t.insert(0, 0, 9).unwrap();
        let l = |t: &Lpm, a: u32| t.table().lookup_v4(a);
        assert_eq!(l(&t, 0x0a00_0001), Some(1));
        assert_eq!(l(&t, 0x0a01_0001), Some(2));
        assert_eq!(l(&t, 0x0a01_0181), Some(3));
        assert_eq!(l(&t, 0x0a01_0101), Some(2));
        assert_eq!(l(&t, 0x0b00_0000), Some(9));
        assert_eq!(t.remove(0x0a01_0000, 16), Ok(2));
        assert_eq!(l(&t, 0x0a01_0001), Some(1));
        assert_eq!(l(&t, 0x0a01_0181), Some(3));
        assert_eq!(t.remove(0x0a01_0180, 25), Ok(3));
        assert_eq!(l(&t, 0x0a01_0181), Some(1));
        assert_eq!(t.groups(), 0, "the /25's group is recycled");
        assert_eq!(t.remove(0x0a01_0180, 25), Err(LpmError::NotFound));
        assert_eq!(t.insert(0x0a01_0181, 25, 3), Err(LpmError::HostBits));
        assert_eq!(t.insert(0, 33, 3), Err(LpmError::BadLength(33)));
    }

    #[test]
    fn v6_basics() {
        let mut t = Lpm::new_v6();
        let p = 0x2001_0db8u128 << 96;
        t.insert(p, 32, 1).unwrap();
        t.insert(p | (0xabcdu128 << 80), 48, 2).unwrap();
        t.insert(p | 1, 128, 3).unwrap();
        assert_eq!(t.table().lookup(p | 5), Some(1));
        assert_eq!(t.table().lookup(p | (0xabcdu128 << 80) | 7), Some(2));
        assert_eq!(t.table().lookup(p | 1), Some(3));
        assert_eq!(t.table().lookup(0x2002u128 << 112), None);
    }
}
