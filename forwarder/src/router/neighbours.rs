//! Neighbours as Linux keeps them: INCOMPLETE, REACHABLE, STALE, PROBE,
//! FAILED, with its timers (`[neighbour]`); answers to ARP and neighbour
//! solicitations for the ports' addresses; what the network says of a
//! MAC, with Linux's lock time; and the frames held while a neighbour
//! resolves.

use super::slow::{Entry, Held, SlowPath};
use crate::neigh::nkey;
use crate::neigh::{key_ip, unkey, NeighTable, NeighView, State};
use crate::punt::Buf;
use crate::punt::Counter;
use crate::tables::HopKind;
use crate::tables::Tables;
use crate::wire::arp::Arp;
use crate::wire::icmp;
use crate::wire::{self, ip, nd};
use std::collections::VecDeque;
use std::sync::Arc;

/// What all neighbours together hold at most while they resolve: a scan
/// of a connected network's addresses makes a neighbour of each, and
/// `hold_bytes` apiece would add up without bound (Linux bounds its
/// entries instead, `gc_thresh3`). Frames past it are dropped, counted.
pub const HOLD_TOTAL: usize = 16 << 20;

/// A known MAC is replaced by another only once it is this old, unless
/// the neighbour announces the new one (gratuitous ARP, an unsolicited
/// advertisement with the override flag): Linux's `locktime` (1 s), which
/// keeps a late reply to an earlier probe, or a second station answering
/// for the address, from undoing an announcement.
pub const LOCKTIME_MS: u64 = 1000;

/// What a message says of a neighbour's MAC.
#[derive(Clone, Copy, Debug)]
pub(super) struct Heard {
    /// An answer to our solicitation: the neighbour is reachable.
    pub(super) confirmed: bool,
    /// A request to us: an entry may be created (stale until confirmed,
    /// as Linux's `neigh_event_ns`).
    pub(super) create: bool,
    /// The neighbour announces it (gratuitous ARP, an unsolicited
    /// advertisement with the override flag): it overrides
    /// [`LOCKTIME_MS`].
    pub(super) announced: bool,
}

impl Heard {
    /// A request or solicitation to us, from the neighbour.
    pub(super) const ASKED: Heard = Heard {
        confirmed: false,
        create: true,
        announced: false,
    };
}

impl SlowPath {
    /// A neighbour solicitation or advertisement: a solicitation for one
    /// of our addresses is answered (and teaches its sender), an
    /// advertisement tells a neighbour's MAC.
    pub(super) fn nd(&mut self, t: &Tables, port: u16, w: u16, f: &[u8], m: nd::Nd) {
        let c = &self.shared.clone().counters;
        if m.ty == icmp::v6::NS {
            if !Self::ours_on(t, port, true, m.target) {
                c.inc(Counter::NeighIgnored);
                return;
            }
            c.inc(Counter::NsIn);
            if m.src == 0 {
                // Duplicate address detection by someone else: ours to
                // defend, not to learn from.
                return;
            }
            let reply_mac = m
                .lladdr
                .unwrap_or_else(|| f[6..12].try_into().unwrap_or([0; 6]));
            if let Some(mac) = m.lladdr {
                self.learn(t, (port, m.src), mac, Heard::ASKED);
            }
            let Some(pm) = t.ports.get(port as usize).map(|p| p.mac) else {
                return;
            };
            self.out(
                w as usize,
                port,
                &nd::na(m.target, m.src, m.target, pm, reply_mac, true),
            );
            c.inc(Counter::NaOut);
            return;
        }
        c.inc(Counter::NaIn);
        self.give_host(port, f);
        let Some(mac) = m.lladdr else {
            c.inc(Counter::NeighIgnored);
            return;
        };
        let heard = Heard {
            confirmed: m.solicited,
            create: false,
            announced: m.override_ && !m.solicited,
        };
        if !self.learn(t, (port, m.target), mac, heard) {
            c.inc(Counter::NeighIgnored);
        }
    }

    /// Takes up the neighbours the workers asked for themselves (see
    /// `Pipeline::ask`): each one not known yet is resolving, its first
    /// request sent. Before any frame is served, so that an answer finds
    /// its question.
    pub(super) fn take_asked(&mut self) {
        while let Some(key) = self.shared.next_asked() {
            if let std::collections::hash_map::Entry::Vacant(v) = self.neigh.entry(key) {
                v.insert(Entry::incomplete(self.now));
            }
        }
    }

    /// A frame whose next hop (or connected destination) has no MAC yet:
    /// held while the neighbour resolves.
    pub(super) fn unresolved(&mut self, t: &Tables, b: &Buf, w: u16) {
        let f = b.frame();
        let Some(nh) = t.fib.targets().hops().get(b.hop as usize) else {
            return;
        };
        let key = match t.hop_kinds.get(b.hop as usize) {
            Some(&HopKind::Gateway { addr, v6 }) => (nh.port, nkey(v6, addr)),
            Some(HopKind::Connected) => match wire::parse(f) {
                Ok(p) => (nh.port, nkey(p.l3 == wire::L3::V6, p.dst)),
                Err(_) => return,
            },
            _ => return,
        };
        let held = Held {
            bytes: f.to_vec(),
            ethertype: None,
            worker: w,
        };
        self.send_via(t, key, held);
    }

    /// Takes up a snapshot's configured neighbours (next hops with both
    /// `mac` and `address`) in place of the last one's.
    pub(super) fn configure_neighbours(&mut self, t: &Tables) {
        let now = self.now;
        self.neigh.retain(|_, e| !e.fixed);
        for &(port, v6, addr, mac) in t.static_neighbours.iter() {
            self.neigh.insert(
                (port, nkey(v6, addr)),
                Entry {
                    mac: Some(mac),
                    state: State::Reachable,
                    since: now,
                    updated: now,
                    sent: now,
                    probes: 0,
                    held: VecDeque::new(),
                    held_bytes: 0,
                    fixed: true,
                },
            );
        }
    }

    /// An ARP request or reply.
    pub(super) fn arp(&mut self, t: &Tables, port: u16, f: &[u8]) {
        let sh = self.shared.clone();
        let c = &sh.counters;
        let Some(a) = Arp::parse(f) else {
            c.inc(Counter::NeighIgnored);
            return;
        };
        let to_us = Self::ours_on(t, port, false, a.tpa as u128);
        let gratuitous = a.spa == a.tpa;
        let key = (port, nkey(false, a.spa as u128));
        match a.op {
            Arp::REQUEST if to_us => {
                c.inc(Counter::ArpRequestsIn);
                // A request to us creates or refreshes its sender's entry
                // (Linux's neigh_event_ns: stale until confirmed).
                if crate::wire::icmp::v4_source_ok(a.spa) && a.spa != 0 {
                    self.learn(t, key, a.sha, Heard::ASKED);
                }
                let Some(pm) = t.ports.get(port as usize).map(|p| p.mac) else {
                    return;
                };
                let reply = Arp {
                    op: Arp::REPLY,
                    sha: pm,
                    spa: a.tpa,
                    tha: a.sha,
                    tpa: a.spa,
                };
                self.out(0, port, &reply.frame(a.sha));
                c.inc(Counter::ArpRepliesOut);
            }
            Arp::REPLY if to_us || gratuitous => {
                c.inc(Counter::ArpRepliesIn);
                // The host resolves for its own packets (through the TAP):
                // it sees the answers.
                self.give_host(port, f);
                let heard = Heard {
                    confirmed: true,
                    create: false,
                    announced: gratuitous,
                };
                if !self.learn(t, key, a.sha, heard) {
                    c.inc(Counter::NeighIgnored);
                }
            }
            Arp::REQUEST if gratuitous => {
                // An announcement: updates an entry we have, creates none
                // (arp_accept = 0).
                let heard = Heard {
                    confirmed: false,
                    create: false,
                    announced: true,
                };
                if !self.learn(t, key, a.sha, heard) {
                    c.inc(Counter::NeighIgnored);
                }
            }
            _ => c.inc(Counter::NeighIgnored),
        }
    }

    /// What the network says of `key`'s MAC (see [`Heard`]). Returns
    /// false if ignored (no entry and none to create, a configured one, or
    /// a change within the lock time).
    pub(super) fn learn(
        &mut self,
        t: &Tables,
        key: (u16, u128),
        mac: [u8; 6],
        heard: Heard,
    ) -> bool {
        let Heard {
            confirmed,
            create,
            announced,
        } = heard;
        let now = self.now;
        let e = match self.neigh.get_mut(&key) {
            Some(e) => e,
            None if create => {
                self.neigh.insert(
                    key,
                    Entry {
                        mac: Some(mac),
                        state: State::Stale,
                        since: now,
                        updated: now,
                        sent: now,
                        probes: 0,
                        held: VecDeque::new(),
                        held_bytes: 0,
                        fixed: false,
                    },
                );
                self.dirty = true;
                return true;
            }
            None => return false,
        };
        if e.fixed {
            return false;
        }
        let changed = e.mac != Some(mac);
        if changed && e.mac.is_some() && !announced && now < e.updated + LOCKTIME_MS {
            return false;
        }
        let state = if confirmed {
            State::Reachable
        } else if changed || e.state != State::Reachable {
            State::Stale
        } else {
            e.state
        };
        if changed || state != e.state {
            self.dirty |= changed || e.mac.is_none();
            if changed {
                e.updated = now;
            }
            e.mac = Some(mac);
            e.state = state;
            e.since = now;
            e.probes = 0;
        }
        if !e.held.is_empty() && !self.draining.contains(&key) {
            self.draining.push(key);
        }
        self.drain_held(t);
        true
    }

    /// Sends the frames held for resolved neighbours, oldest first, as
    /// long as the workers' inject queues take them (a resolution after
    /// 10 ms at line rate holds thousands: more than a queue); a
    /// neighbour whose frames are all out is published (`dirty`), so the
    /// workers send its next ones themselves. Returns how many went.
    pub fn drain_held(&mut self, t: &Tables) -> usize {
        let mut sent = 0;
        let mut i = 0;
        while i < self.draining.len() {
            let key = self.draining[i];
            // (Failed or forgotten meanwhile: what it held is gone.)
            while let Some(e) = self.neigh.get_mut(&key).filter(|e| e.mac.is_some()) {
                let Some(w) = e.held.front().map(|h| h.worker as usize) else {
                    break;
                };
                if !self.shared.can_inject(w) {
                    break;
                }
                let Some(h) = e.held.pop_front() else { break };
                let n = h.bytes.len().min(e.held_bytes);
                e.held_bytes -= n;
                self.held_total -= n.min(self.held_total);
                self.release(t, key, h);
                sent += 1;
            }
            // Published once all it held is queued to the workers: they
            // take up the table only once this thread has served all they
            // handed over, and then send what is queued first (see
            // `Pipeline::begin_turn`), so no frame overtakes another.
            let done = self
                .neigh
                .get(&key)
                .is_none_or(|e| e.mac.is_none() || e.held.is_empty());
            if done {
                self.draining.swap_remove(i);
                self.dirty = true;
            } else {
                i += 1;
            }
        }
        sent
    }

    /// Sends a held frame to `key`'s MAC.
    pub(super) fn release(&self, t: &Tables, key: (u16, u128), h: Held) {
        let Some(mac) = self.neigh.get(&key).and_then(|e| e.mac) else {
            return;
        };
        let Some(pm) = t.ports.get(key.0 as usize).map(|p| p.mac) else {
            return;
        };
        let frame = match h.ethertype {
            Some(et) => ip::ether(mac, pm, et, &h.bytes),
            None => {
                let mut f = h.bytes;
                let Ok(p) = wire::parse(&f) else { return };
                if wire::rewrite(&mut f, &p, mac, pm).is_err() {
                    return;
                }
                f
            }
        };
        self.out(h.worker as usize, key.0, &frame);
    }

    /// Sends `h` to neighbour `key`: now if its MAC is known, else held
    /// while it resolves.
    pub(super) fn send_via(&mut self, t: &Tables, key: (u16, u128), h: Held) {
        let now = self.now;
        let limit = self.settings.neighbour.hold_bytes;
        let e = match self.neigh.get_mut(&key) {
            // Resolved, nothing held before it: out now (unless its
            // worker's queue is full: then held, and sent as it empties).
            Some(e)
                if e.mac.is_some()
                    && e.held.is_empty()
                    && self.shared.can_inject(h.worker as usize) =>
            {
                self.release(t, key, h);
                return;
            }
            Some(e) if e.state == State::Failed => {
                self.shared.counters.inc(Counter::UnresolvedDropped);
                return;
            }
            // Resolving, or resolved with frames still going out: behind
            // them.
            Some(e) => {
                if e.mac.is_some() && !self.draining.contains(&key) {
                    self.draining.push(key);
                }
                e
            }
            None => {
                let w = h.worker;
                self.neigh.insert(key, Entry::incomplete(now));
                self.dirty = true;
                // The request first: the frame waits for its answer.
                self.solicit(t, key, None, w as usize);
                match self.neigh.get_mut(&key) {
                    Some(e) => e,
                    None => return,
                }
            }
        };
        // Held by bytes, as Linux's `unres_qlen_bytes`: the oldest go
        // first past the limit (a frame larger than it is not held).
        let c = &self.shared.counters;
        let len = h.bytes.len();
        if self.held_total + len > HOLD_TOTAL {
            c.inc(Counter::UnresolvedDropped);
            return;
        }
        e.held_bytes += len;
        self.held_total += len;
        e.held.push_back(h);
        c.inc(Counter::Held);
        while e.held_bytes > limit {
            let Some(old) = e.held.pop_front() else { break };
            let n = old.bytes.len().min(e.held_bytes);
            e.held_bytes -= n;
            self.held_total -= n.min(self.held_total);
            c.inc(Counter::UnresolvedDropped);
        }
    }

    /// Asks for `key`'s MAC: broadcast (multicast) or, when probing a
    /// known one, unicast to it.
    pub(super) fn solicit(
        &self,
        t: &Tables,
        key: (u16, u128),
        unicast: Option<[u8; 6]>,
        worker: usize,
    ) {
        let port = key.0;
        let (v6, addr) = unkey(key.1);
        let Some(p) = t.ports.get(port as usize) else {
            return;
        };
        let Some(src) = Self::source(t, port, v6, addr) else {
            return;
        };
        let r = crate::neigh::Request::new(p.mac, src, key.1, unicast);
        self.shared.counters.inc(if r.is_v6() {
            Counter::NsOut
        } else {
            Counter::ArpRequestsOut
        });
        self.out(worker, port, r.frame());
    }

    /// Moves every neighbour's state on by the clock: retransmits,
    /// expiry, probes, failure.
    pub fn tick(&mut self, t: &Tables, now: u64) {
        self.now = now;
        let s = self.settings.neighbour;
        let mut solicit = Vec::new();
        let mut failed = 0;
        let mut dropped = 0;
        self.neigh.retain(|&key, e| {
            if e.fixed {
                return true;
            }
            match e.state {
                State::Incomplete | State::Probe if now >= e.sent + s.retrans_ms => {
                    if e.probes >= s.probes {
                        e.state = State::Failed;
                        e.mac = None;
                        e.since = now;
                        dropped += e.held.len();
                        e.held.clear();
                        e.held_bytes = 0;
                        failed += 1;
                        self.dirty = true;
                    } else {
                        e.probes += 1;
                        e.sent = now;
                        solicit.push((key, if e.state == State::Probe { e.mac } else { None }));
                    }
                }
                State::Reachable if now >= e.since + s.reachable_ms => {
                    e.state = State::Stale;
                    e.since = now;
                }
                State::Stale if now >= e.since + s.delay_ms => {
                    e.state = State::Probe;
                    e.since = now;
                    e.sent = now;
                    e.probes = 1;
                    solicit.push((key, e.mac));
                }
                State::Failed if now >= e.since + s.retrans_ms => {
                    // Forgotten: the next packet to it starts a new
                    // resolution.
                    self.dirty = true;
                    return false;
                }
                _ => {}
            }
            true
        });
        // Counted again, exactly: entries also go with their ports or
        // are replaced by configured ones.
        self.held_total = self.neigh.values().map(|e| e.held_bytes).sum();
        let sh = self.shared.clone();
        let c = &sh.counters;
        for _ in 0..failed {
            c.inc(Counter::ResolutionsFailed);
        }
        for _ in 0..dropped {
            c.inc(Counter::UnresolvedDropped);
        }
        for (key, mac) in solicit {
            self.solicit(t, key, mac, 0);
        }
    }

    /// Publishes the table to the workers if it changed, and frees the
    /// tables no worker holds any more.
    pub fn publish(&mut self) {
        self.retired.retain(|a| Arc::strong_count(a) > 1);
        if !self.dirty {
            return;
        }
        self.dirty = false;
        // What the workers see: a MAC once it is known and nothing is
        // held for it any more; a failed neighbour, as one without a MAC
        // (its frames dropped on the workers, counted); a neighbour still
        // resolving, or still sending what it held, not at all, so that
        // its frames keep coming here to be held behind the others.
        let map = self
            .neigh
            .iter()
            .filter_map(|(&k, e)| match (e.mac, e.state) {
                (Some(m), _) if e.held.is_empty() => Some((k, Some(m))),
                (None, State::Failed) => Some((k, None)),
                _ => None,
            })
            .collect();
        let old = self.shared.neigh.swap(Arc::new(NeighTable { map }));
        self.retired.push(old);
    }

    /// The current table for listing: states and ages as of `now`.
    pub fn view(&self, now: u64) -> Vec<NeighView> {
        let mut v: Vec<NeighView> = self
            .neigh
            .iter()
            .map(|(&(port, addr), e)| NeighView {
                port,
                addr: key_ip(addr),
                mac: e.mac,
                state: e.state,
                age_ms: now.saturating_sub(e.since),
                probes: e.probes,
            })
            .collect();
        v.sort_by_key(|v| (v.port, v.addr));
        v
    }
}
