//! The slow path's state: its neighbours, rate limits, hosts' sides and
//! the snapshot settings it took up, and what it asks of a snapshot (our
//! addresses, the address to send from).

use crate::neigh::{NeighTable, State};
use crate::punt::{Counter, RouterShared};
use crate::tables::Tables;
use crate::wire::arp::{Arp, BROADCAST};
use crate::wire::nd;
use config::RouterSettings;
use routecache::Family;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;

/// The slow path's state: owned by its thread (or a test).
pub struct SlowPath {
    pub(super) shared: Arc<RouterShared>,
    pub(super) neigh: HashMap<(u16, u128), Entry>,
    pub(super) dirty: bool,
    /// Published tables a worker may still hold: freed here, never on a
    /// worker, once only this list holds them.
    pub(super) retired: Vec<Arc<NeighTable>>,
    pub(super) workers: Vec<Bucket>,
    pub(super) per_dst: HashMap<u128, Bucket>,
    /// Addresses announced (gratuitous ARP, unsolicited NA).
    pub(super) announced: Vec<(u16, IpAddr)>,
    /// The generation whose static neighbours were taken up.
    pub(super) generation: u64,
    pub(super) settings: RouterSettings,
    /// Per port, the host's side (its TAP), where what is for the router
    /// and not answered here goes.
    pub(super) hosts: Vec<Option<Box<dyn Host>>>,
    /// Which worker sends the host's next frame (in turn).
    pub(super) next_worker: usize,
    /// The time of the frame or tick being served (milliseconds on the
    /// slow path's clock).
    pub(super) now: u64,
    /// Neighbours resolved with frames still held: sent as the workers'
    /// inject queues take them, in order, before the MAC is published
    /// (until then the workers punt the neighbour's frames here, behind
    /// the held ones, so that none overtakes another).
    pub(super) draining: Vec<(u16, u128)>,
    /// The bytes all neighbours hold (kept as frames come and go, and
    /// counted again every tick).
    pub(super) held_total: usize,
}

/// A frame waiting for its neighbour's MAC.
pub(super) struct Held {
    /// A forwarded frame (still to be rewritten: MACs, TTL) or, for a
    /// packet of our own, the IP packet with its ethertype.
    pub(super) bytes: Vec<u8>,
    pub(super) ethertype: Option<u16>,
    pub(super) worker: u16,
}

pub(super) struct Entry {
    pub(super) mac: Option<[u8; 6]>,
    pub(super) state: State,
    /// When the state last changed, and when the last solicitation went.
    pub(super) since: u64,
    /// When the MAC was last set (see [`LOCKTIME_MS`]).
    pub(super) updated: u64,
    pub(super) sent: u64,
    pub(super) probes: u32,
    pub(super) held: VecDeque<Held>,
    /// The bytes of `held` (bounded by `[neighbour] hold_bytes`).
    pub(super) held_bytes: usize,
    /// Configured (a next hop with both `mac` and `address`): never
    /// changed by what the network says.
    pub(super) fixed: bool,
}

impl Entry {
    /// A neighbour being resolved from `now`, its first request sent.
    pub(super) fn incomplete(now: u64) -> Entry {
        Entry {
            mac: None,
            state: State::Incomplete,
            since: now,
            updated: now,
            sent: now,
            probes: 1,
            held: std::collections::VecDeque::new(),
            held_bytes: 0,
            fixed: false,
        }
    }
}

/// A token bucket.
#[derive(Clone, Copy)]
pub(super) struct Bucket {
    pub(super) tokens: f64,
    pub(super) at: u64,
}

impl Bucket {
    /// A bucket that never runs dry before its first refill (the
    /// settings' depth caps it then).
    pub(super) const FULL: Bucket = Bucket {
        tokens: f64::MAX,
        at: 0,
    };

    pub(super) fn take(&mut self, now: u64, per_ms: f64, depth: f64) -> bool {
        self.tokens = (self.tokens + (now.saturating_sub(self.at)) as f64 * per_ms).min(depth);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The host's side of a port: a TAP in the forwarder, a list in tests.
pub trait Host: Send {
    /// Gives the host a frame; false if it was not taken.
    fn write(&mut self, frame: &[u8]) -> bool;
    /// A frame the host sent, if any (its length in `buf`).
    fn read(&mut self, buf: &mut [u8]) -> Option<usize>;
}

pub(super) fn family(v6: bool) -> Family {
    if v6 {
        Family::V6
    } else {
        Family::V4
    }
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
            draining: Vec::new(),
            held_total: 0,
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

    /// The address we send from on `port` in family `v6`: one whose
    /// network holds `toward`, else the first global one, else (IPv6)
    /// the link-local one.
    pub(super) fn source(t: &Tables, port: u16, v6: bool, toward: u128) -> Option<u128> {
        crate::neigh::source_among(&t.ports.get(port as usize)?.addresses, v6, toward)
    }

    /// Whether `addr` is one of our addresses in the VRF of `port`
    /// (any of its ports': the weak host model, as Linux; a VRF's
    /// addresses are not another's, as with Linux's VRF devices).
    pub(super) fn ours(t: &Tables, port: u16, v6: bool, addr: u128) -> bool {
        let vrf = t.vrf_of(port);
        t.ports.iter().any(|p| {
            p.vrf as u8 == vrf && p.addresses.iter().any(|a| a.v6() == v6 && a.bits() == addr)
        })
    }

    pub(super) fn ours_on(t: &Tables, port: u16, v6: bool, addr: u128) -> bool {
        t.ports
            .get(port as usize)
            .is_some_and(|p| p.addresses.iter().any(|a| a.v6() == v6 && a.bits() == addr))
    }
}
