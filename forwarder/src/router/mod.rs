//! The router's slow path: what the forwarder does as a station on its
//! ports' networks rather than as a forwarder between them. ARP and
//! neighbour discovery (answering for the ports' addresses, resolving
//! gateways and directly connected destinations), ICMP generation (echo
//! replies, time exceeded, unreachable, packet too big) and `reject`'s
//! TCP resets.
//!
//! It runs on one thread of its own ([`spawn`]), beside the control
//! thread, never on a worker. Workers hand it frames through the queues
//! of [`crate::punt`] and it sends through them; resolved neighbours
//! reach the workers as an immutable [`crate::neigh::NeighTable`]
//! published with arc-swap: a new MAC is in the fast path as soon as a
//! worker's next burst loads it, without a reload.
//!
//! - this file: the slow path's state, what it takes up of a snapshot,
//!   and the dispatch of a punted frame by its reason;
//! - `neighbours`: the neighbour table's state machine, ARP and ND, the
//!   frames held while a neighbour resolves;
//! - `icmp`: ICMP errors and echo replies with their rate limits,
//!   `reject`'s answers, and routing the router's own packets;
//! - `host`: the host's side of a port (its TAP);
//! - `thread`: the thread that runs it all.

mod host;
mod icmp;
mod neighbours;
#[cfg(test)]
mod tests;
mod thread;

pub use host::Host;
pub use neighbours::{HOLD, LOCKTIME_MS};
pub use thread::spawn;

use crate::neigh::{ip_of, NeighTable};
use crate::punt::{Buf, Counter, RouterShared};
use crate::reason::DropReason;
use crate::tables::Tables;
use crate::wire::arp::{Arp, BROADCAST};
use crate::wire::{self, ip, nd, proto};
use config::RouterSettings;
use icmp::{Bucket, IcmpError};
use neighbours::Entry;
use routecache::Family;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

/// The slow path's state: owned by its thread (or a test).
pub struct SlowPath {
    shared: Arc<RouterShared>,
    neigh: HashMap<(u16, u128), Entry>,
    dirty: bool,
    /// Published tables a worker may still hold: freed here, never on a
    /// worker, once only this list holds them.
    retired: Vec<Arc<NeighTable>>,
    workers: Vec<Bucket>,
    per_dst: HashMap<u128, Bucket>,
    /// Addresses announced (gratuitous ARP, unsolicited NA).
    announced: Vec<(u16, IpAddr)>,
    /// The generation whose static neighbours were taken up.
    generation: u64,
    settings: RouterSettings,
    /// Per port, the host's side (its TAP), where what is for the router
    /// and not answered here goes.
    hosts: Vec<Option<Box<dyn Host>>>,
    /// Which worker sends the host's next frame (in turn).
    next_worker: usize,
    /// The time of the frame or tick being served (milliseconds on the
    /// slow path's clock).
    now: u64,
}

pub(super) fn family(v6: bool) -> Family {
    if v6 {
        Family::V6
    } else {
        Family::V4
    }
}

pub(super) fn is_link_local(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80)
}

impl SlowPath {
    /// A slow path over `shared`'s queues.
    pub fn new(shared: Arc<RouterShared>) -> SlowPath {
        SlowPath {
            workers: vec![Bucket::FULL; shared.inject.len()],
            shared,
            neigh: HashMap::new(),
            dirty: false,
            retired: Vec::new(),
            per_dst: HashMap::new(),
            announced: Vec::new(),
            generation: u64::MAX,
            settings: RouterSettings::default(),
            hosts: Vec::new(),
            next_worker: 0,
            now: 0,
        }
    }

    /// The hosts' sides of the ports, by port index.
    pub fn with_hosts(mut self, hosts: Vec<Option<Box<dyn Host>>>) -> SlowPath {
        self.hosts = hosts;
        self
    }

    /// Takes up a new snapshot: its settings, its static neighbours, and
    /// announces addresses it has not announced yet.
    pub fn adopt(&mut self, t: &Tables, now: u64) {
        self.now = now;
        if t.generation == self.generation {
            return;
        }
        self.generation = t.generation;
        self.settings = t.router_settings;
        self.configure_neighbours(t);
        // Neighbours on ports that no longer have addresses go.
        self.neigh.retain(|&(p, _), _| {
            t.ports
                .get(p as usize)
                .is_some_and(|p| !p.addresses.is_empty())
        });
        self.dirty = true;
        for (i, p) in t.ports.iter().enumerate() {
            for a in &p.addresses {
                let key = (i as u16, a.ip);
                if self.announced.contains(&key) {
                    continue;
                }
                self.announced.push(key);
                let f = match a.ip {
                    IpAddr::V4(v4) => Arp {
                        op: Arp::REQUEST,
                        sha: p.mac,
                        spa: v4.into(),
                        tha: [0; 6],
                        tpa: v4.into(),
                    }
                    .frame(BROADCAST),
                    IpAddr::V6(v6) => {
                        let all = 0xff02_0000_0000_0000_0000_0000_0000_0001u128;
                        nd::na(
                            v6.into(),
                            all,
                            v6.into(),
                            p.mac,
                            nd::multicast_mac(all),
                            false,
                        )
                    }
                };
                self.out(0, i as u16, &f);
                self.shared.counters.inc(if a.v6() {
                    Counter::NaOut
                } else {
                    Counter::ArpRequestsOut
                });
            }
        }
    }

    pub(super) fn out(&self, worker: usize, port: u16, frame: &[u8]) {
        self.shared.inject(worker, port, frame);
    }

    /// Serves one punted frame, at `now` (milliseconds on the slow path's
    /// clock).
    pub fn handle(&mut self, t: &Tables, b: &Buf, now: u64) {
        self.now = now;
        self.shared.counters.inc(Counter::Punted);
        let f = b.frame();
        let w = b.worker;
        match b.reason {
            DropReason::Arp => self.arp(t, b.port, f),
            DropReason::Local => self.local(t, b.port, w, f),
            DropReason::Unresolved => self.unresolved(t, b, w),
            DropReason::TtlExpired => self.error(t, b.port, w, f, IcmpError::TIME_EXCEEDED, [0; 4]),
            DropReason::NoRoute => self.error(t, b.port, w, f, IcmpError::NET_UNREACH, [0; 4]),
            DropReason::Reject => self.reject(t, b.port, w, f),
            DropReason::TooBig => self.too_big(t, b, w),
            // Workers punt no frame for the other reasons.
            _ => {}
        }
    }

    /// The address we send from on `port` in family `v6`: one whose
    /// network holds `toward`, else the first global one, else (IPv6)
    /// the link-local one.
    pub(super) fn source(t: &Tables, port: u16, v6: bool, toward: u128) -> Option<u128> {
        let p = t.ports.get(port as usize)?;
        let fam = p.addresses.iter().filter(|a| a.v6() == v6);
        let toward = ip_of(v6, toward);
        fam.clone()
            .find(|a| a.covers(toward) && !is_link_local(a.ip))
            .or_else(|| fam.clone().find(|a| !is_link_local(a.ip)))
            .or_else(|| fam.clone().next())
            .map(|a| a.bits())
    }

    /// Whether `addr` is one of our addresses (any port's: the weak host
    /// model, as Linux).
    pub(super) fn ours(t: &Tables, v6: bool, addr: u128) -> bool {
        t.ports
            .iter()
            .any(|p| p.addresses.iter().any(|a| a.v6() == v6 && a.bits() == addr))
    }

    pub(super) fn ours_on(t: &Tables, port: u16, v6: bool, addr: u128) -> bool {
        t.ports
            .get(port as usize)
            .is_some_and(|p| p.addresses.iter().any(|a| a.v6() == v6 && a.bits() == addr))
    }

    /// A frame for the router: neighbour discovery, an echo request to
    /// one of its addresses, or what the host's side of the port takes.
    pub(super) fn local(&mut self, t: &Tables, port: u16, w: u16, f: &[u8]) {
        if let Some(m) = nd::Nd::parse(f) {
            self.nd(t, port, w, f, m);
            return;
        }
        let c = &self.shared.clone().counters;
        let (v6, src, dst, l4) = if let Some((s, d, p, ..)) = ip::ipv4_parts(f) {
            (false, s as u128, d as u128, p)
        } else if let Some((s, d, n, ..)) = ip::ipv6_parts(f) {
            (true, s, d, n)
        } else {
            c.inc(Counter::LocalIgnored);
            return;
        };
        if !Self::ours(t, v6, dst) {
            // Groups (ff02::1, OSPFv3's, ...): the host's, if it has a
            // side on this port.
            if !self.give_host(port, f) {
                c.inc(Counter::LocalIgnored);
            }
            return;
        }
        if let Some(reply) = wire::icmp::echo_reply(f) {
            if self.allow(w, src, false) {
                self.route_out(t, w, v6, src, reply, Counter::IcmpEchoReply);
            }
            return;
        }
        // The rest (BGP, SSH, BFD, ICMP errors and replies for the host's
        // own sessions) is the host's, if the port has a TAP.
        if self.give_host(port, f) {
            return;
        }
        // A host's answers to what it does not serve: a reset for TCP,
        // port unreachable for UDP.
        match l4 {
            proto::TCP | proto::UDP => self.reject(t, port, w, f),
            _ => c.inc(Counter::LocalIgnored),
        }
    }
}
