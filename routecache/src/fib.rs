//! The forwarding table: IPv4 and IPv6 routes to targets, where a target
//! is a next hop (egress port, destination MAC, source MAC) or an ECMP
//! group of next hops. Updates go to a working copy; [`Fib::publish`]
//! makes an immutable [`FibSnapshot`] with a new generation.

use crate::hash::FlowKey;
use crate::lpm::{Lpm, LpmError, LpmTable, MAX_TARGET};
use crate::ranges::{Answer, RangeTree};
use std::sync::{Arc, OnceLock};

/// Where a packet leaves: port and the MACs of the rewritten frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct NextHop {
    /// Egress port index.
    pub port: u16,
    /// The neighbour's MAC: the frame's new destination.
    pub dst_mac: [u8; 6],
    /// Our MAC on the egress port: the frame's new source.
    pub src_mac: [u8; 6],
}

/// A route's target id: a next hop's index, or an ECMP group's index with
/// [`ECMP_FLAG`] set.
pub type TargetId = u32;

/// Set in a [`TargetId`] that names an ECMP group.
pub const ECMP_FLAG: u32 = 1 << 22;

/// An address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// IPv4: addresses in the low 32 bits of a `u128`.
    V4,
    /// IPv6.
    V6,
}

impl Family {
    /// Address width in bits.
    pub fn width(self) -> u32 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }
}

/// An error of a FIB update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FibError {
    /// The route table refused the prefix.
    Route(LpmError),
    /// A route or group names a next hop or group that does not exist.
    UnknownTarget(TargetId),
    /// An ECMP group needs at least one member.
    EmptyGroup,
    /// No VRF of this index.
    UnknownVrf(usize),
}

impl std::fmt::Display for FibError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FibError::Route(e) => write!(f, "{e}"),
            FibError::UnknownTarget(t) if t & ECMP_FLAG != 0 => {
                write!(f, "unknown ECMP group {}", t & !ECMP_FLAG)
            }
            FibError::UnknownTarget(t) => write!(f, "unknown next hop {t}"),
            FibError::EmptyGroup => write!(f, "an ECMP group needs at least one member"),
            FibError::UnknownVrf(v) => write!(f, "no VRF {v}"),
        }
    }
}

impl std::error::Error for FibError {}

impl From<LpmError> for FibError {
    fn from(e: LpmError) -> Self {
        FibError::Route(e)
    }
}

/// Next hops and ECMP groups, shared by snapshots.
#[derive(Clone, Debug, Default)]
pub struct Targets {
    hops: Vec<NextHop>,
    groups: Vec<Box<[u32]>>,
}

impl Targets {
    /// Whether `t` names an existing next hop or group.
    pub fn contains(&self, t: TargetId) -> bool {
        if t & ECMP_FLAG != 0 {
            ((t & !ECMP_FLAG) as usize) < self.groups.len()
        } else {
            (t as usize) < self.hops.len()
        }
    }

    /// The next hop a packet of a flow with hash `flow_hash` takes to `t`:
    /// an ECMP group picks a member by the flow hash, so that a flow
    /// always leaves through the same member.
    #[inline]
    pub fn resolve(&self, t: TargetId, flow_hash: u32) -> Option<&NextHop> {
        self.hops.get(self.resolve_index(t, flow_hash)? as usize)
    }

    /// [`Targets::resolve`], as the next hop's index in [`Targets::hops`]
    /// (`None` for an unknown target).
    #[inline]
    pub fn resolve_index(&self, t: TargetId, flow_hash: u32) -> Option<u32> {
        let i = if t & ECMP_FLAG == 0 {
            t
        } else {
            let m = self.groups.get((t & !ECMP_FLAG) as usize)?;
            // Lemire's multiply-shift maps the hash onto the members evenly.
            m[((flow_hash as u64 * m.len() as u64) >> 32) as usize]
        };
        ((i as usize) < self.hops.len()).then_some(i)
    }

    /// Whether `t` is an ECMP group.
    pub fn is_ecmp(t: TargetId) -> bool {
        t & ECMP_FLAG != 0
    }

    /// The next hops.
    pub fn hops(&self) -> &[NextHop] {
        &self.hops
    }

    /// The members of ECMP group `t`.
    pub fn group(&self, t: TargetId) -> Option<&[u32]> {
        self.groups.get((t & !ECMP_FLAG) as usize).map(|g| &**g)
    }
}

/// The working copy of the forwarding table.
#[derive(Clone, Debug)]
pub struct Fib {
    v4: Lpm,
    v6: Lpm,
    /// The routes of VRFs 1.. (VRF 0's are `v4` and `v6`): every VRF
    /// routes to the same next hops, so a route may lead into another
    /// VRF's ports (a leak) where the configuration says so.
    vrfs: Vec<(Lpm, Lpm)>,
    targets: Arc<Targets>,
    generation: u32,
    published: Option<Arc<FibSnapshot>>,
}

impl Default for Fib {
    fn default() -> Self {
        Fib::new()
    }
}

impl Fib {
    /// An empty table.
    ///
    /// ```
    /// use routecache::{Family, Fib, NextHop};
    /// let mut fib = Fib::new();
    /// let gw = fib.add_next_hop(NextHop { port: 1, dst_mac: [2, 0, 0, 0, 0, 1], src_mac: [2; 6] });
    /// fib.insert(Family::V4, 0xc633_6400, 24, gw).unwrap(); // 198.51.100.0/24
    /// let snap = fib.publish();
    /// assert_eq!(snap.lookup_v4(0xc633_6407), Some(gw));
    /// assert_eq!(snap.lookup_v4(0xc000_0201), None);
    /// ```
    pub fn new() -> Fib {
        Fib {
            v4: Lpm::new_v4(),
            v6: Lpm::new_v6(),
            vrfs: Vec::new(),
            targets: Arc::new(Targets::default()),
            generation: 0,
            published: None,
        }
    }

    /// Sets the number of VRFs (at least 1): new ones start empty, the
    /// ones past `n` go with their routes.
    pub fn set_vrfs(&mut self, n: usize) {
        self.vrfs
            .resize_with(n.max(1) - 1, || (Lpm::new_v4(), Lpm::new_v6()));
    }

    /// The number of VRFs.
    pub fn vrfs(&self) -> usize {
        self.vrfs.len() + 1
    }

    /// An empty table that replaces `old`: its snapshots' generations
    /// continue after `old`'s, so a dst cache filled from `old` sees its
    /// entries as stale (a fresh table's generations would restart at 1
    /// and could match them).
    pub fn succeeding(old: &Fib) -> Fib {
        Fib {
            generation: old.generation,
            ..Fib::new()
        }
    }

    /// Adds a next hop; returns its target id.
    pub fn add_next_hop(&mut self, nh: NextHop) -> TargetId {
        let t = Arc::make_mut(&mut self.targets);
        t.hops.push(nh);
        (t.hops.len() - 1) as TargetId
    }

    /// Adds an ECMP group of next hops; returns its target id.
    pub fn add_ecmp_group(&mut self, members: &[TargetId]) -> Result<TargetId, FibError> {
        if members.is_empty() {
            return Err(FibError::EmptyGroup);
        }
        if let Some(&m) = members
            .iter()
            .find(|&&m| m & ECMP_FLAG != 0 || !self.targets.contains(m))
        {
            return Err(FibError::UnknownTarget(m));
        }
        let t = Arc::make_mut(&mut self.targets);
        t.groups.push(members.into());
        Ok(ECMP_FLAG | (t.groups.len() - 1) as u32)
    }

    /// The next hops and groups.
    pub fn targets(&self) -> &Targets {
        &self.targets
    }

    fn lpm(&mut self, vrf: usize, f: Family) -> Result<&mut Lpm, FibError> {
        let (v4, v6) = match vrf {
            0 => (&mut self.v4, &mut self.v6),
            v => {
                let (v4, v6) = self.vrfs.get_mut(v - 1).ok_or(FibError::UnknownVrf(v))?;
                (v4, v6)
            }
        };
        Ok(match f {
            Family::V4 => v4,
            Family::V6 => v6,
        })
    }

    /// The routes of a family (VRF 0's).
    pub fn routes(&self, f: Family) -> &Lpm {
        self.routes_in(0, f).unwrap_or(&self.v4)
    }

    /// The routes of a family in VRF `vrf`.
    pub fn routes_in(&self, vrf: usize, f: Family) -> Option<&Lpm> {
        let (v4, v6) = match vrf {
            0 => (&self.v4, &self.v6),
            v => {
                let (v4, v6) = self.vrfs.get(v - 1)?;
                (v4, v6)
            }
        };
        Some(match f {
            Family::V4 => v4,
            Family::V6 => v6,
        })
    }

    /// Adds or replaces a route (VRF 0's); returns the previous target.
    pub fn insert(
        &mut self,
        f: Family,
        prefix: u128,
        len: u32,
        target: TargetId,
    ) -> Result<Option<TargetId>, FibError> {
        self.insert_in(0, f, prefix, len, target)
    }

    /// Adds or replaces a route of VRF `vrf`; returns the previous target.
    pub fn insert_in(
        &mut self,
        vrf: usize,
        f: Family,
        prefix: u128,
        len: u32,
        target: TargetId,
    ) -> Result<Option<TargetId>, FibError> {
        if target > MAX_TARGET || !self.targets.contains(target) {
            return Err(FibError::UnknownTarget(target));
        }
        Ok(self.lpm(vrf, f)?.insert(prefix, len, target)?)
    }

    /// Removes a route (VRF 0's); returns its target.
    pub fn remove(&mut self, f: Family, prefix: u128, len: u32) -> Result<TargetId, FibError> {
        self.remove_in(0, f, prefix, len)
    }

    /// Removes a route of VRF `vrf`; returns its target.
    pub fn remove_in(
        &mut self,
        vrf: usize,
        f: Family,
        prefix: u128,
        len: u32,
    ) -> Result<TargetId, FibError> {
        Ok(self.lpm(vrf, f)?.remove(prefix, len)?)
    }

    /// Generation of the last published snapshot (0 before any).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Publishes the working copy: an immutable snapshot with the next
    /// generation. Pages not changed since the last publication are
    /// shared with it, so this costs a copy of the page pointers.
    pub fn publish(&mut self) -> Arc<FibSnapshot> {
        self.generation = self.generation.wrapping_add(1).max(1);
        let snap = Arc::new(FibSnapshot {
            main: VrfTables::of(&self.v4, &self.v6),
            more: self
                .vrfs
                .iter()
                .map(|(v4, v6)| VrfTables::of(v4, v6))
                .collect(),
            targets: self.targets.clone(),
            generation: self.generation,
        });
        self.published = Some(snap.clone());
        snap
    }

    /// The last published snapshot.
    pub fn published(&self) -> Option<Arc<FibSnapshot>> {
        self.published.clone()
    }
}

/// Fewest IPv6 addresses a burst looks up in the range tree rather than
/// the trie: fewer do not overlap enough of its levels.
const MIN_RANGE_BURST: usize = 4;

/// One VRF's published routes, both families.
#[derive(Clone, Debug)]
pub struct VrfTables {
    v4: LpmTable,
    v6: LpmTable,
    /// The IPv6 table as a range tree, once [`VrfTables::prepare`] has
    /// built it (shared by clones); IPv6 lookups use the trie until then.
    v6_ranges: Arc<OnceLock<RangeTree>>,
}

/// An immutable, published forwarding table: the routes of every VRF and
/// the next hops they share.
#[derive(Clone, Debug)]
pub struct FibSnapshot {
    /// VRF 0's routes, in place: a router without VRFs (and every
    /// untagged burst of a VRF 0 port) reaches them with no indirection.
    main: VrfTables,
    /// VRFs 1.. .
    more: Box<[VrfTables]>,
    targets: Arc<Targets>,
    generation: u32,
}

impl std::ops::Deref for FibSnapshot {
    type Target = VrfTables;

    /// VRF 0's routes: what a FIB without VRFs is.
    #[inline(always)]
    fn deref(&self) -> &VrfTables {
        &self.main
    }
}

impl FibSnapshot {
    /// The generation: every publication has a new one (never 0), which
    /// invalidates what the dst caches learnt from older ones.
    #[inline]
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The routes of VRF `vrf`; `None` past the last.
    #[inline(always)]
    pub fn vrf(&self, vrf: usize) -> Option<&VrfTables> {
        match vrf {
            0 => Some(&self.main),
            v => self.more.get(v - 1),
        }
    }

    /// The number of VRFs.
    pub fn vrfs(&self) -> usize {
        self.more.len() + 1
    }

    /// Builds every VRF's IPv6 range tree (see [`VrfTables::prepare`]).
    pub fn prepare(&self) {
        self.main.prepare();
        for v in self.more.iter() {
            v.prepare();
        }
    }

    /// The next hop of `dst` for a flow in VRF 0: route lookup, then
    /// ECMP choice.
    #[inline]
    pub fn route(&self, f: Family, flow: &FlowKey, seed: u32) -> Option<&NextHop> {
        let t = self.lookup(f, flow.dst)?;
        self.targets.resolve(t, flow.hash(seed))
    }

    /// Bytes held by every VRF's lookup tables (pages shared with other
    /// snapshots are counted in full) and IPv6 range trees.
    pub fn memory_usage(&self) -> usize {
        self.main.memory_usage() + self.more.iter().map(VrfTables::memory_usage).sum::<usize>()
    }

    /// Next hops and ECMP groups, shared by every VRF.
    #[inline]
    pub fn targets(&self) -> &Targets {
        &self.targets
    }
}

impl VrfTables {
    fn of(v4: &Lpm, v6: &Lpm) -> VrfTables {
        VrfTables {
            v4: v4.snapshot(),
            v6: v6.snapshot(),
            v6_ranges: Arc::new(OnceLock::new()),
        }
    }

    /// IPv4 longest-prefix match.
    #[inline(always)]
    pub fn lookup_v4(&self, dst: u32) -> Option<TargetId> {
        self.v4.lookup_v4(dst)
    }

    /// Builds the IPv6 range tree ([`crate::ranges`]) if it is not built
    /// yet, after which IPv6 bursts go through it. Off the fast path: it
    /// walks the whole IPv6 table (a fraction of a second for a full one:
    /// `bench routecache`'s `prepare_ms`). Lookups meanwhile use the trie,
    /// with the same answers; a snapshot nobody prepares just keeps using
    /// it.
    pub fn prepare(&self) {
        self.v6_ranges.get_or_init(|| RangeTree::build(&self.v6));
    }

    /// The IPv6 range tree, if [`VrfTables::prepare`] has built it.
    pub fn v6_ranges(&self) -> Option<&RangeTree> {
        self.v6_ranges.get()
    }

    /// IPv6 longest-prefix match, in the trie: alone, a lookup in the
    /// range tree is a chain of seven dependent loads, slower than the
    /// trie's five (bursts are where the tree wins).
    #[inline]
    pub fn lookup_v6(&self, dst: u128) -> Option<TargetId> {
        self.v6.lookup(dst)
    }

    /// IPv4 longest-prefix match of a burst (see [`LpmTable::lookup_burst`]).
    #[inline]
    pub fn lookup_burst_v4(&self, dsts: &[u32], out: &mut [Option<TargetId>]) {
        self.v4.lookup_burst_v4(dsts, out)
    }

    /// Prefetches what [`FibSnapshot::lookup_burst_v4`] will load first
    /// for `dst` (in a full table, a cache miss): issued before other work
    /// on the burst, its latency hides behind that work.
    #[inline(always)]
    pub fn prefetch_v4(&self, dst: u32) {
        self.v4.prefetch_v4(dst)
    }

    /// IPv6 longest-prefix match of a burst: through the range tree once
    /// it is built (bursts of 4 or more), the trie answering only
    /// addresses under routes longer than /64; through the trie before.
    #[inline]
    pub fn lookup_burst_v6(&self, dsts: &[u128], out: &mut [Option<TargetId>]) {
        let Some(t) = self
            .v6_ranges
            .get()
            .filter(|_| dsts.len() >= MIN_RANGE_BURST)
        else {
            return self.v6.lookup_burst(dsts, out);
        };
        const N: usize = 32;
        let mut xs = [0u64; N];
        let mut found = [Answer::Long; N];
        for (dsts, out) in dsts.chunks(N).zip(out.chunks_mut(N)) {
            let n = dsts.len().min(out.len());
            for (x, &d) in xs.iter_mut().zip(&dsts[..n]) {
                *x = (d >> 64) as u64;
            }
            t.lookup_burst(&xs[..n], &mut found[..n]);
            for ((o, f), &d) in out.iter_mut().zip(&found[..n]).zip(dsts) {
                *o = match *f {
                    Answer::Found(t) => t,
                    Answer::Long => self.v6.lookup(d),
                };
            }
        }
    }

    /// Longest-prefix match in either family.
    #[inline]
    pub fn lookup(&self, f: Family, dst: u128) -> Option<TargetId> {
        match f {
            Family::V4 => self.lookup_v4(dst as u32),
            Family::V6 => self.lookup_v6(dst),
        }
    }

    /// The route `dst` matches in family `f`, as (prefix, length,
    /// target), from the published table (see
    /// [`LpmTable::lookup_prefix`]); IPv4 in the low 32 bits.
    pub fn lookup_prefix(&self, f: Family, dst: u128) -> Option<(u128, u32, TargetId)> {
        let t = self.table(f);
        let width = f.width();
        let (len, target) = t.lookup_prefix(dst)?;
        let mask = if len == 0 {
            0
        } else {
            (u128::MAX >> (128 - width)) & !((1u128 << (width - len)).wrapping_sub(1))
        };
        Some((dst & mask, len, target))
    }

    /// The lookup tables (for memory figures and copy-on-write checks).
    pub fn table(&self, f: Family) -> &LpmTable {
        match f {
            Family::V4 => &self.v4,
            Family::V6 => &self.v6,
        }
    }

    /// Bytes held by the lookup tables (pages shared with other snapshots
    /// are counted in full) and the IPv6 range tree, if built.
    pub fn memory_usage(&self) -> usize {
        self.v4.memory_usage()
            + self.v6.memory_usage()
            + self.v6_ranges.get().map_or(0, RangeTree::memory_usage)
    }
}
