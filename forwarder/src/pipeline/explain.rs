//! The explaining mode: a burst run through the pipeline as it always
//! runs, then what each stage decided for each packet read back from
//! the stages' own state ([`Stages`]): `forwarder trace` reads it, for a
//! packet given by the operator (over a private pipeline) or for the
//! next packets of a port (on the worker's own pipeline, while a live
//! trace is armed). Nothing is decided here a second time: the stages
//! keep what a trace needs (each set's lookups in its own
//! [`super::prepared::Found`], the route's target, each drop's reason as
//! the packet's fate, a bit per punted packet), so the ordinary run pays
//! nothing for traces, not even a test.

use super::classify::decision;
use super::{Fate, Pipeline, Snapshot};
use crate::port::Burst;
use crate::reason::DropReason;
use crate::wire::{self, Parsed};
use routecache::TargetId;

/// Bytes of a frame a record keeps: every header the trace describes,
/// and what an ICMP error quotes.
pub const HEAD: usize = 256;

/// What one rule set did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetStage {
    /// Not looked up: the flow cache decided the packet (or the parse
    /// dropped it).
    NotLooked,
    /// Not looked up: an earlier set decided (dropped or accepted) the
    /// packet.
    Decided,
    /// Not looked up: the packet lacks a field of the set's key (an IPv4
    /// field of an IPv6 packet, a TCP port of a UDP packet).
    NotApplicable,
    /// Looked up: no element matched.
    NoMatch,
    /// Element `id` matched.
    Matched(u32),
    /// Element `id` matched, but its deadline had passed: as no match.
    Expired(u32),
    /// Not looked up: a set of the forward hook, and the packet is not
    /// forwarded (no route, or for the router itself).
    NotForwarded,
}

/// What the flow cache did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowStage {
    /// There is none (`[flow_cache] entries = 0`, or more sets than it
    /// records).
    Off,
    /// The packet did not reach it (the parse dropped it).
    NotLooked,
    /// It stood aside: an element's deadline has passed and the sets
    /// without it are not published yet.
    AsideExpiry,
    /// It stood aside: too few of the recent lookups hit (more flows
    /// than it holds); it tries again later.
    AsideHitRate,
    /// Hit: the stored decision was taken, no set or route looked up.
    Hit,
    /// Missed: the sets and routes decided, and the decision is offered
    /// to the cache (stored one time in `insert_one_in`).
    Miss,
}

/// Where a packet went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fated {
    /// Sent out of this port (index).
    Forwarded(u16),
    /// Not forwarded, for this reason (and handed to the slow path if
    /// [`Stages::punted`]).
    Dropped(DropReason),
}

/// A hop's state as the packet found it (the pipeline's hop kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopState {
    /// Its MACs are known (a static next hop, or a resolved gateway).
    Ready,
    /// A gateway the slow path has not heard of yet.
    Unresolved,
    /// A gateway being resolved (or failed).
    Pending,
    /// A connected network: the destination's own MAC.
    Connected,
    /// The router itself.
    Local,
}

/// What the pipeline did with one packet, stage by stage.
#[derive(Clone, Copy, Debug)]
pub struct Stages {
    /// Generation of the snapshot that judged it.
    pub generation: u64,
    /// When (nanoseconds since the Unix epoch; 0 when not taken).
    pub time_ns: u64,
    /// The port it came in on.
    pub port: u16,
    /// The VRF it was routed in (its port's, or its sub-interface's).
    pub vrf: u8,
    /// The frame's length as received.
    pub len: u16,
    /// The frame's first [`HEAD`] bytes as received.
    pub head: [u8; HEAD],
    /// The parse (the pipeline's own parser).
    pub parsed: Result<Parsed, DropReason>,
    /// The flow cache, or with connection tracking on, the decision kept
    /// in the packet's connection (`Hit`: taken; `Miss`: none to take).
    pub flow: FlowStage,
    /// Its `ct state` (nft's bit: `crate::conntrack::state`); 0 with
    /// connection tracking off.
    pub ct: u8,
    /// With `flow` a hit under connection tracking: the entry was a
    /// refused flow's (its opening packet dropped, no connection), whose
    /// drop the packet took.
    pub ct_refused: bool,
    /// Each rule set, in order (the first [`Stages::nsets`]).
    pub sets: [SetStage; config::MAX_SETS],
    /// How many sets the snapshot has.
    pub nsets: u16,
    /// The FIB's target for the destination, when routed (`Some(None)`:
    /// no route).
    pub target: Option<Option<TargetId>>,
    /// The next hop (an index in the FIB's hops; the ECMP member the
    /// flow's hash picked), or why none; from the flow cache on a hit.
    pub hop: Option<Result<u32, DropReason>>,
    /// The hop's state when the packet reached it.
    pub hop_state: Option<HopState>,
    /// Where it went.
    pub fate: Fated,
    /// Whether it was handed to the slow path.
    pub punted: bool,
    /// The frame as sent (when forwarded): its first bytes.
    pub out: [u8; 64],
    /// Its length.
    pub out_len: u16,
}

impl Default for Stages {
    fn default() -> Self {
        Stages {
            generation: 0,
            time_ns: 0,
            port: 0,
            vrf: 0,
            len: 0,
            head: [0; HEAD],
            parsed: Err(DropReason::Truncated),
            flow: FlowStage::NotLooked,
            ct: 0,
            ct_refused: false,
            sets: [SetStage::NotLooked; config::MAX_SETS],
            nsets: 0,
            target: None,
            hop: None,
            hop_state: None,
            fate: Fated::Dropped(DropReason::Truncated),
            punted: false,
            out: [0; 64],
            out_len: 0,
        }
    }
}

impl Stages {
    /// The frame as received (its first [`HEAD`] bytes).
    pub fn frame(&self) -> &[u8] {
        &self.head[..(self.len as usize).min(HEAD)]
    }

    /// The frame as sent (its first 64 bytes), if forwarded.
    pub fn sent(&self) -> Option<&[u8]> {
        matches!(self.fate, Fated::Forwarded(_))
            .then(|| &self.out[..(self.out_len as usize).min(64)])
    }

    /// The sets as recorded.
    pub fn sets(&self) -> &[SetStage] {
        &self.sets[..(self.nsets as usize).min(config::MAX_SETS)]
    }
}

impl Pipeline {
    /// [`Pipeline::process`], with what it did to each packet written to
    /// `out` (one record a frame of the burst; frames past `out`'s length
    /// are processed, not recorded). The same stages run, counters and
    /// caches included: on a worker this is the packets' real path.
    pub fn explain(&mut self, tables: &Snapshot, burst: &mut Burst, out: &mut [Stages]) {
        let n = burst.len().min(out.len());
        for (i, s) in out.iter_mut().enumerate().take(n) {
            let f = burst.frame(i);
            *s = Stages {
                port: self.rx_port,
                len: f.len() as u16,
                parsed: wire::parse(f),
                nsets: tables.sets.len().min(config::MAX_SETS) as u16,
                ..Stages::default()
            };
            let k = f.len().min(HEAD);
            s.head[..k].copy_from_slice(&f[..k]);
        }
        let bypassed = self.flow_cache_stats().bypassed;
        self.punted.set(0);
        // A burst the flow cache decides wholly looks no set up: what the
        // sets found last time must not be read as this burst's.
        for (_, f) in &mut self.keys {
            f.m = 0;
        }
        // The general way: its state is what the stages are read from.
        let off = std::mem::replace(&mut self.express_off, true);
        self.process(tables, burst);
        self.express_off = off;
        let aside = self.flow_cache_stats().bypassed > bypassed;
        for (i, s) in out.iter_mut().enumerate().take(n) {
            s.generation = self.generation;
            s.vrf = self.vrf_at(i);
            // A packet the cache looked up either missed (`pending`: its
            // decision to be stored) or hit; its fate no longer says
            // which (a drop writes its reason over `Cached`).
            s.ct = self.ct_state[i];
            s.flow = match &self.flows {
                _ if s.parsed.is_err() => FlowStage::NotLooked,
                _ if self.conntrack.is_some() && self.pending[i] => FlowStage::Miss,
                _ if self.conntrack.is_some() && s.ct != 0 => FlowStage::Hit,
                _ if self.conntrack.is_some() => FlowStage::NotLooked,
                None => FlowStage::Off,
                _ if self.expired_at != 0 => FlowStage::AsideExpiry,
                _ if aside => FlowStage::AsideHitRate,
                _ if self.pending[i] => FlowStage::Miss,
                _ => FlowStage::Hit,
            };
            let cached = s.flow == FlowStage::Hit;
            s.ct_refused = cached && self.conntrack.is_some() && self.tracked[i].refused;
            // Each set: the element it found, or why it looked nothing up
            // (a packet it applies to that it did not look up was decided
            // by an earlier set).
            let (mut decided, mut dropped) = (false, false);
            let mut routed = false;
            let forwarded = self.forwarding >> (i % 64) & 1 != 0;
            for (si, set) in tables.sets.iter().enumerate().take(config::MAX_SETS) {
                if si == tables.forward_from {
                    // The forward hook: a packet the prerouting sets did
                    // not drop was routed, and their `accept` ended only
                    // their hook.
                    (decided, routed) = (dropped, !dropped);
                }
                let f = &self.keys[si].1;
                let at = f.which[..f.m as usize]
                    .iter()
                    .position(|&j| j as usize == i);
                s.sets[si] = match (at, &s.parsed) {
                    (Some(j), _) => match f.ids[j] {
                        None => SetStage::NoMatch,
                        Some(id)
                            if self.expired_at != 0 && set.snap.expires(id) <= self.expired_at =>
                        {
                            SetStage::Expired(id)
                        }
                        Some(id) => {
                            match decision(set, id) {
                                Fate::Dropped(_) => (decided, dropped) = (true, true),
                                Fate::Accepted => decided = true,
                                _ => {}
                            }
                            SetStage::Matched(id)
                        }
                    },
                    (None, Err(_)) => SetStage::NotLooked,
                    (None, _) if cached => SetStage::NotLooked,
                    (None, _) if decided => SetStage::Decided,
                    (None, _) if routed && !forwarded => SetStage::NotForwarded,
                    (None, Ok(p)) if !set.need.applies(p) => SetStage::NotApplicable,
                    // Not reached otherwise: a packet still going that
                    // has the fields is looked up.
                    (None, Ok(_)) => SetStage::Decided,
                };
            }
            // Routed: parsed, not decided by the cache, not dropped by a
            // set; its target is the route stage's, its hop the same
            // function's answer (the flow's hash picks the ECMP member).
            if s.parsed.is_ok() && !cached && (!dropped || routed) && self.mode == super::Mode::Full
            {
                s.target = Some(self.targets[i]);
                s.hop = Some(self.next_hop(tables, i));
            }
            if cached {
                s.hop = Some(self.decisions[i].hop());
            }
            s.hop_state = match s.hop {
                Some(Ok(h)) => self.kinds.get(h as usize).map(|&k| match k {
                    super::prepared::UNRESOLVED => HopState::Unresolved,
                    super::prepared::PENDING => HopState::Pending,
                    super::prepared::CONNECTED => HopState::Connected,
                    super::prepared::LOCAL => HopState::Local,
                    _ => HopState::Ready,
                }),
                _ => None,
            };
            let sent = self.out.iter().position(|o| o.contains(&(i as u8)));
            s.fate = match (sent, self.fate[i]) {
                (Some(p), _) => Fated::Forwarded(p as u16),
                (None, Fate::Dropped(d)) => Fated::Dropped(d),
                // Every packet not sent was counted as dropped with its
                // reason; a mode that stops short of routing sends or
                // drops them all.
                (None, _) => Fated::Dropped(DropReason::UnknownNextHop),
            };
            s.punted = self.punted.get() >> (i % 64) & 1 != 0;
            if let Fated::Forwarded(_) = s.fate {
                let f = burst.frame(i);
                let k = f.len().min(64);
                s.out[..k].copy_from_slice(&f[..k]);
                s.out_len = f.len() as u16;
            }
        }
    }
}

impl Pipeline {
    /// Why packet `i` of the last burst was not forwarded (`None`: it
    /// was): each drop writes its reason as the packet's fate.
    pub fn dropped_reason(&self, i: usize) -> Option<DropReason> {
        match self.fate.get(i) {
            Some(Fate::Dropped(d)) => Some(*d),
            _ => None,
        }
    }

    /// Forgets which packets went to the slow path (before a burst whose
    /// [`Pipeline::was_punted`] will be asked).
    pub fn clear_punted(&self) {
        self.punted.set(0);
    }

    /// Whether packet `i` of the burst went to the slow path (since
    /// [`Pipeline::clear_punted`]).
    pub fn was_punted(&self, i: usize) -> bool {
        self.punted.get() >> (i % 64) & 1 != 0
    }
}
