//! The slow path's thread: the neighbour table and its state machine,
//! answers to ARP and ND, ICMP generation with its rate limits, and the
//! frames held while their neighbour resolves.

use super::packets::{self, icmp, icmp6, Arp, Nd};
use super::{Buf, Counter, NeighTable, NeighView, Reason, RouterShared, State};
use crate::snapshot::{HopKind, Shared, Tables};
use crate::wire::{self, ethertype, proto};
use config::RouterSettings;
use routecache::Family;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Frames held per unresolved neighbour, as Linux's `unres_qlen`
/// default of 3 packets (older ones are dropped first).
pub const HOLD: usize = 3;

/// A frame waiting for its neighbour's MAC.
struct Held {
    /// A forwarded frame (still to be rewritten: MACs, TTL) or, for a
    /// packet of our own, the IP packet with its ethertype.
    bytes: Vec<u8>,
    ethertype: Option<u16>,
    worker: u16,
}

struct Entry {
    mac: Option<[u8; 6]>,
    state: State,
    /// When the state last changed, and when the last solicitation went.
    since: u64,
    /// When the MAC was last set (see [`LOCKTIME_MS`]).
    updated: u64,
    sent: u64,
    probes: u32,
    held: VecDeque<Held>,
    /// Configured (a next hop with both `mac` and `address`): never
    /// changed by what the network says.
    fixed: bool,
}

/// A token bucket.
#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: u64,
}

impl Bucket {
    fn take(&mut self, now: u64, per_ms: f64, depth: f64) -> bool {
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

/// A known MAC is replaced by another only once it is this old, unless
/// the neighbour announces the new one (gratuitous ARP, an unsolicited
/// advertisement with the override flag): Linux's `locktime` (1 s), which
/// keeps a late reply to an earlier probe, or a second station answering
/// for the address, from undoing an announcement.
pub const LOCKTIME_MS: u64 = 1000;

/// Per-destination error buckets hold this many messages (Linux's
/// XRLIM_BURST_FACTOR).
const DST_BURST: f64 = 6.0;
/// Per-destination buckets kept before the oldest are forgotten.
const DST_BUCKETS: usize = 4096;

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
}

/// The host's side of a port: a TAP in the forwarder, a list in tests.
pub trait Host: Send {
    /// Gives the host a frame; false if it was not taken.
    fn write(&mut self, frame: &[u8]) -> bool;
    /// A frame the host sent, if any (its length in `buf`).
    fn read(&mut self, buf: &mut [u8]) -> Option<usize>;
}

impl Host for crate::kernel::tap::Tap {
    fn write(&mut self, frame: &[u8]) -> bool {
        crate::kernel::tap::Tap::write(self, frame)
    }
    fn read(&mut self, buf: &mut [u8]) -> Option<usize> {
        crate::kernel::tap::Tap::read(self, buf)
    }
}

/// Frames read from the hosts' sides per turn, per port.
const HOST_BURST: usize = 64;

fn family(v6: bool) -> Family {
    if v6 {
        Family::V6
    } else {
        Family::V4
    }
}

fn ip_of(v6: bool, a: u128) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(a))
    } else {
        IpAddr::V4(Ipv4Addr::from(a as u32))
    }
}

impl SlowPath {
    /// A slow path over `shared`'s queues.
    pub fn new(shared: Arc<RouterShared>) -> SlowPath {
        SlowPath {
            workers: vec![
                Bucket {
                    tokens: f64::MAX,
                    at: 0
                };
                shared.inject.len()
            ],
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
        }
    }

    /// The hosts' sides of the ports, by port index.
    pub fn with_hosts(mut self, hosts: Vec<Option<Box<dyn Host>>>) -> SlowPath {
        self.hosts = hosts;
        self
    }

    /// Gives `f` to the host's side of `port`; false if the port has
    /// none.
    fn give_host(&mut self, port: u16, f: &[u8]) -> bool {
        let Some(Some(h)) = self.hosts.get_mut(port as usize) else {
            return false;
        };
        let ok = h.write(f);
        self.shared.counters.inc(if ok {
            Counter::ToHost
        } else {
            Counter::ToHostDropped
        });
        true
    }

    /// Sends what the hosts wrote to their TAPs out of their ports (up
    /// to [`HOST_BURST`] frames a port); returns how many.
    pub fn from_hosts(&mut self) -> usize {
        let mut buf = [0u8; 16384];
        let mut n = 0;
        let workers = self.shared.inject.len().max(1);
        for port in 0..self.hosts.len() {
            for _ in 0..HOST_BURST {
                let Some(Some(h)) = self.hosts.get_mut(port) else {
                    break;
                };
                let Some(len) = h.read(&mut buf) else {
                    break;
                };
                if len > super::BUF_CAP {
                    // Over the buffers' size (a TAP MTU above the port's
                    // frames): not sent, counted.
                    self.shared.counters.inc(Counter::InjectDropped);
                    continue;
                }
                self.next_worker = (self.next_worker + 1) % workers;
                self.shared.counters.inc(Counter::FromHost);
                self.out(self.next_worker, port as u16, &buf[..len]);
                n += 1;
            }
        }
        n
    }

    /// Takes up a new snapshot: its settings, its static neighbours, and
    /// announces addresses it has not announced yet.
    pub fn adopt(&mut self, t: &Tables, now: u64) {
        if t.generation == self.generation {
            return;
        }
        self.generation = t.generation;
        self.settings = t.router_settings;
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
                    fixed: true,
                },
            );
        }
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
                    .frame(packets::BROADCAST),
                    IpAddr::V6(v6) => {
                        let all = 0xff02_0000_0000_0000_0000_0000_0000_0001u128;
                        packets::na(
                            v6.into(),
                            all,
                            v6.into(),
                            p.mac,
                            packets::multicast_mac(all),
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

    fn out(&self, worker: usize, port: u16, frame: &[u8]) {
        self.shared.inject(worker, port, frame);
    }

    /// Serves one punted frame.
    pub fn handle(&mut self, t: &Tables, b: &Buf, now: u64) {
        self.shared.counters.inc(Counter::Punted);
        let f = b.frame();
        let w = b.worker;
        match b.reason {
            Reason::Arp => self.arp(t, b.port, f, now),
            Reason::Local => self.local(t, b.port, w, f, now),
            Reason::Unresolved => {
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
                self.send_via(
                    t,
                    key,
                    Held {
                        bytes: f.to_vec(),
                        ethertype: None,
                        worker: w,
                    },
                    now,
                );
            }
            Reason::TtlExpired => self.error(
                t,
                b.port,
                w,
                f,
                (icmp::TIME_EXCEEDED, 0),
                (icmp6::TIME_EXCEEDED, 0),
                [0; 4],
                Counter::IcmpTimeExceeded,
                now,
            ),
            Reason::NoRoute => self.error(
                t,
                b.port,
                w,
                f,
                (icmp::UNREACH, icmp::NET_UNREACH),
                (icmp6::UNREACH, icmp6::NO_ROUTE),
                [0; 4],
                Counter::IcmpUnreachable,
                now,
            ),
            Reason::Reject => self.reject(t, b.port, w, f, now),
            Reason::TooBig => {
                let mtu = t
                    .fib
                    .targets()
                    .hops()
                    .get(b.hop as usize)
                    .and_then(|h| t.ports.get(h.port as usize))
                    .map_or(1500, |p| p.mtu);
                let v4_df = packets::ipv4_parts(f).is_some_and(|(.., pkt)| pkt[6] & 0x40 != 0);
                let v6 = packets::ipv6_parts(f).is_some();
                if !v6 && !v4_df {
                    // No fragmentation here: a packet that may be
                    // fragmented is dropped (counted as too big).
                    return;
                }
                self.error(
                    t,
                    b.port,
                    w,
                    f,
                    (icmp::UNREACH, icmp::FRAG_NEEDED),
                    (icmp6::TOO_BIG, 0),
                    if v6 {
                        (mtu as u32).to_be_bytes()
                    } else {
                        let m = mtu.to_be_bytes();
                        [0, 0, m[0], m[1]]
                    },
                    Counter::IcmpTooBig,
                    now,
                )
            }
        }
    }

    /// The address we send from on `port` in family `v6`: one whose
    /// network holds `toward`, else the first global one, else (IPv6)
    /// the link-local one.
    fn source(t: &Tables, port: u16, v6: bool, toward: u128) -> Option<u128> {
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
    fn ours(t: &Tables, v6: bool, addr: u128) -> bool {
        t.ports
            .iter()
            .any(|p| p.addresses.iter().any(|a| a.v6() == v6 && a.bits() == addr))
    }

    fn ours_on(t: &Tables, port: u16, v6: bool, addr: u128) -> bool {
        t.ports
            .get(port as usize)
            .is_some_and(|p| p.addresses.iter().any(|a| a.v6() == v6 && a.bits() == addr))
    }

    fn arp(&mut self, t: &Tables, port: u16, f: &[u8], now: u64) {
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
                if packets::v4_source_ok(a.spa) && a.spa != 0 {
                    self.learn(t, key, a.sha, false, true, false, now);
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
                if !self.learn(t, key, a.sha, true, false, gratuitous, now) {
                    c.inc(Counter::NeighIgnored);
                }
            }
            Arp::REQUEST if gratuitous => {
                // An announcement: updates an entry we have, creates none
                // (arp_accept = 0).
                if !self.learn(t, key, a.sha, false, false, true, now) {
                    c.inc(Counter::NeighIgnored);
                }
            }
            _ => c.inc(Counter::NeighIgnored),
        }
    }

    /// What the network says of `key`'s MAC. `confirmed`: an answer to
    /// our solicitation (reachable); `create`: an entry may be created
    /// (a request to us); `announced`: the neighbour announces it
    /// (overrides [`LOCKTIME_MS`]). Returns false if ignored (no entry and
    /// none to create, a configured one, or a change within the lock
    /// time).
    #[allow(clippy::too_many_arguments)]
    fn learn(
        &mut self,
        t: &Tables,
        key: (u16, u128),
        mac: [u8; 6],
        confirmed: bool,
        create: bool,
        announced: bool,
        now: u64,
    ) -> bool {
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
        let held: Vec<Held> = e.held.drain(..).collect();
        for h in held {
            self.release(t, key, h);
        }
        true
    }

    /// Sends a held frame to `key`'s MAC.
    fn release(&self, t: &Tables, key: (u16, u128), h: Held) {
        let Some(mac) = self.neigh.get(&key).and_then(|e| e.mac) else {
            return;
        };
        let Some(pm) = t.ports.get(key.0 as usize).map(|p| p.mac) else {
            return;
        };
        let frame = match h.ethertype {
            Some(et) => packets::ether(mac, pm, et, &h.bytes),
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
    fn send_via(&mut self, t: &Tables, key: (u16, u128), h: Held, now: u64) {
        if let Some(e) = self.neigh.get_mut(&key) {
            if e.mac.is_some() {
                self.release(t, key, h);
                return;
            }
            if e.state == State::Failed {
                self.shared.counters.inc(Counter::UnresolvedDropped);
                return;
            }
            if e.held.len() >= HOLD {
                e.held.pop_front();
                self.shared.counters.inc(Counter::UnresolvedDropped);
            }
            e.held.push_back(h);
            self.shared.counters.inc(Counter::Held);
            return;
        }
        let w = h.worker;
        let mut held = VecDeque::new();
        held.push_back(h);
        self.shared.counters.inc(Counter::Held);
        self.neigh.insert(
            key,
            Entry {
                mac: None,
                state: State::Incomplete,
                since: now,
                updated: now,
                sent: now,
                probes: 1,
                held,
                fixed: false,
            },
        );
        self.dirty = true;
        self.solicit(t, key, None, w as usize);
    }

    /// Asks for `key`'s MAC: broadcast (multicast) or, when probing a
    /// known one, unicast to it.
    fn solicit(&self, t: &Tables, key: (u16, u128), unicast: Option<[u8; 6]>, worker: usize) {
        let port = key.0;
        let (v6, addr) = unkey(key.1);
        let Some(p) = t.ports.get(port as usize) else {
            return;
        };
        let Some(src) = Self::source(t, port, v6, addr) else {
            return;
        };
        let f = if v6 {
            let (dst, dmac) = match unicast {
                Some(m) => (addr, m),
                None => {
                    let g = packets::solicited_node(addr);
                    (g, packets::multicast_mac(g))
                }
            };
            self.shared.counters.inc(Counter::NsOut);
            packets::ns(src, dst, addr, p.mac, dmac)
        } else {
            self.shared.counters.inc(Counter::ArpRequestsOut);
            Arp {
                op: Arp::REQUEST,
                sha: p.mac,
                spa: src as u32,
                tha: [0; 6],
                tpa: addr as u32,
            }
            .frame(unicast.unwrap_or(packets::BROADCAST))
        };
        self.out(worker, port, &f);
    }

    fn local(&mut self, t: &Tables, port: u16, w: u16, f: &[u8], now: u64) {
        let sh = self.shared.clone();
        let c = &sh.counters;
        if let Some(nd) = Nd::parse(f) {
            let key_src = (port, nd.src);
            let key_target = (port, nd.target);
            if nd.ty == icmp6::NS {
                if !Self::ours_on(t, port, true, nd.target) {
                    c.inc(Counter::NeighIgnored);
                    return;
                }
                c.inc(Counter::NsIn);
                if nd.src == 0 {
                    // Duplicate address detection by someone else: ours
                    // to defend, not to learn from.
                    return;
                }
                let reply_mac = nd
                    .lladdr
                    .unwrap_or_else(|| f[6..12].try_into().unwrap_or([0; 6]));
                if let Some(m) = nd.lladdr {
                    self.learn(t, key_src, m, false, true, false, now);
                }
                let Some(pm) = t.ports.get(port as usize).map(|p| p.mac) else {
                    return;
                };
                self.out(
                    w as usize,
                    port,
                    &packets::na(nd.target, nd.src, nd.target, pm, reply_mac, true),
                );
                c.inc(Counter::NaOut);
            } else {
                c.inc(Counter::NaIn);
                self.give_host(port, f);
                let Some(m) = nd.lladdr else {
                    c.inc(Counter::NeighIgnored);
                    return;
                };
                if !self.learn(
                    t,
                    key_target,
                    m,
                    nd.solicited,
                    false,
                    nd.override_ && !nd.solicited,
                    now,
                ) {
                    c.inc(Counter::NeighIgnored);
                }
            }
            return;
        }
        let (v6, src, dst, l4) = if let Some((s, d, p, ..)) = packets::ipv4_parts(f) {
            (false, s as u128, d as u128, p)
        } else if let Some((s, d, n, ..)) = packets::ipv6_parts(f) {
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
        if let Some(reply) = packets::echo_reply(f) {
            if self.allow(w, src, false, now) {
                self.route_out(t, w, v6, src, reply, Counter::IcmpEchoReply, now);
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
            proto::TCP => self.reject(t, port, w, f, now),
            proto::UDP => self.reject(t, port, w, f, now),
            _ => c.inc(Counter::LocalIgnored),
        }
    }

    /// Whether the rate limits let one more ICMP message go: the
    /// worker's bucket, and for errors the destination's.
    fn allow(&mut self, w: u16, dst: u128, error: bool, now: u64) -> bool {
        let s = self.settings.icmp;
        let ok = if s.msgs_per_sec == 0 {
            true
        } else {
            let last = self.workers.len() - 1;
            let b = &mut self.workers[(w as usize).min(last)];
            b.take(
                now,
                s.msgs_per_sec as f64 / 1000.0,
                s.msgs_burst.max(1) as f64,
            )
        };
        let ok = ok
            && (!error || s.ratelimit_ms == 0 || {
                if self.per_dst.len() >= DST_BUCKETS && !self.per_dst.contains_key(&dst) {
                    self.per_dst.clear();
                }
                self.per_dst
                    .entry(dst)
                    .or_insert(Bucket {
                        tokens: DST_BURST,
                        at: now,
                    })
                    .take(now, 1.0 / s.ratelimit_ms as f64, DST_BURST)
            });
        if !ok {
            self.shared.counters.inc(Counter::IcmpRateLimited);
        }
        ok
    }

    #[allow(clippy::too_many_arguments)]
    fn error(
        &mut self,
        t: &Tables,
        port: u16,
        w: u16,
        f: &[u8],
        v4: (u8, u8),
        v6: (u8, u8),
        rest: [u8; 4],
        counter: Counter,
        now: u64,
    ) {
        let sh = self.shared.clone();
        let c = &sh.counters;
        let too_big = counter == Counter::IcmpTooBig;
        let (is6, osrc) = if let Some((s, ..)) = packets::ipv4_parts(f) {
            if !packets::v4_errors_allowed(f) {
                c.inc(Counter::IcmpSuppressed);
                return;
            }
            (false, s as u128)
        } else if let Some((s, ..)) = packets::ipv6_parts(f) {
            if !packets::v6_errors_allowed(f, too_big) {
                c.inc(Counter::IcmpSuppressed);
                return;
            }
            (true, s)
        } else {
            c.inc(Counter::IcmpSuppressed);
            return;
        };
        let Some(src) = Self::source(t, port, is6, osrc) else {
            c.inc(Counter::IcmpSuppressed);
            return;
        };
        let pkt = if is6 {
            packets::icmp6_error(f, src, v6.0, v6.1, rest)
        } else {
            packets::icmp4_error(f, src as u32, v4.0, v4.1, rest)
        };
        let Some(pkt) = pkt else { return };
        // As Linux: path MTU discovery's messages are not limited per
        // destination (limiting them breaks it), only per core.
        if self.allow(w, osrc, !too_big, now) {
            self.route_out(t, w, is6, osrc, pkt, counter, now);
        }
    }

    fn reject(&mut self, t: &Tables, port: u16, w: u16, f: &[u8], now: u64) {
        let Ok(p) = wire::parse(f) else { return };
        let l4 = p.proto;
        if l4 == proto::TCP {
            let Some(rst) = packets::tcp_reset(f) else {
                return;
            };
            let (v6, dst) = (p.l3 == wire::L3::V6, p.src);
            if self.allow(w, dst, true, now) {
                self.route_out(t, w, v6, dst, rst, Counter::TcpResets, now);
            }
        } else if l4 == proto::UDP {
            self.error(
                t,
                port,
                w,
                f,
                (icmp::UNREACH, icmp::PORT_UNREACH),
                (icmp6::UNREACH, icmp6::PORT_UNREACH),
                [0; 4],
                Counter::IcmpUnreachable,
                now,
            )
        } else {
            self.error(
                t,
                port,
                w,
                f,
                (icmp::UNREACH, icmp::ADMIN_PROHIBITED),
                (icmp6::UNREACH, icmp6::ADMIN_PROHIBITED),
                [0; 4],
                Counter::IcmpUnreachable,
                now,
            )
        }
    }

    /// Routes an IP packet of our own to `dst` and sends it (or holds it
    /// while its neighbour resolves), counting `counter` when it goes.
    #[allow(clippy::too_many_arguments)]
    fn route_out(
        &mut self,
        t: &Tables,
        w: u16,
        v6: bool,
        dst: u128,
        pkt: Vec<u8>,
        counter: Counter,
        now: u64,
    ) {
        let sh = self.shared.clone();
        let c = &sh.counters;
        let targets = t.fib.targets();
        let Some(hop) = t
            .fib
            .lookup(family(v6), dst)
            .and_then(|tg| targets.resolve_index(tg, 0))
        else {
            c.inc(Counter::InjectDropped);
            return;
        };
        let nh = targets.hops()[hop as usize];
        let et = if v6 { ethertype::IPV6 } else { ethertype::IPV4 };
        c.inc(counter);
        let key = match t.hop_kinds.get(hop as usize) {
            Some(HopKind::Static) => {
                self.out(
                    w as usize,
                    nh.port,
                    &packets::ether(nh.dst_mac, nh.src_mac, et, &pkt),
                );
                return;
            }
            Some(&HopKind::Gateway { addr, v6 }) => (nh.port, nkey(v6, addr)),
            Some(HopKind::Connected) => (nh.port, nkey(v6, dst)),
            _ => {
                c.inc(Counter::InjectDropped);
                return;
            }
        };
        self.send_via(
            t,
            key,
            Held {
                bytes: pkt,
                ethertype: Some(et),
                worker: w,
            },
            now,
        );
    }

    /// Moves every neighbour's state on by the clock: retransmits,
    /// expiry, probes, failure.
    pub fn tick(&mut self, t: &Tables, now: u64) {
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
        let map = self.neigh.iter().map(|(&k, e)| (k, e.mac)).collect();
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

/// A neighbour's key address: IPv6 as it is, IPv4 as its IPv4-mapped
/// IPv6 address (`::ffff:a.b.c.d`, which no IPv6 neighbour has), so
/// that one table holds both families.
#[inline]
pub fn nkey(v6: bool, addr: u128) -> u128 {
    if v6 {
        addr
    } else {
        0xffff_0000_0000 | (addr & 0xffff_ffff)
    }
}

/// The family and address of a key.
fn unkey(k: u128) -> (bool, u128) {
    if k >> 32 == 0xffff {
        (false, k & 0xffff_ffff)
    } else {
        (true, k)
    }
}

fn key_ip(k: u128) -> IpAddr {
    let (v6, a) = unkey(k);
    ip_of(v6, a)
}

fn is_link_local(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80)
}

/// Starts the slow path's thread: it serves punted frames as they come
/// (polling every 200 µs when idle), moves the neighbour timers every
/// 10 ms and publishes the table when it changed. It ends when `shared`
/// says stop.
pub fn spawn(
    shared: Arc<Shared>,
    taps: Vec<Option<crate::kernel::tap::Tap>>,
) -> Result<std::thread::JoinHandle<()>, String> {
    std::thread::Builder::new()
        .name("router".into())
        .spawn(move || {
            let r = shared.router.clone();
            let hosts = taps
                .into_iter()
                .map(|t| t.map(|t| Box::new(t) as Box<dyn Host>))
                .collect();
            let mut sp = SlowPath::new(r.clone()).with_hosts(hosts);
            let start = Instant::now();
            let mut last_tick = 0;
            let mut next_port = 0;
            while !shared.stop.load(Relaxed) {
                let now = start.elapsed().as_millis() as u64;
                let t = shared.tables.load_full();
                if !t.routing {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                sp.adopt(&t, now);
                let mut n = 0;
                while let Some(b) = r.next_punt(&mut next_port) {
                    sp.handle(&t, &b, now);
                    let _ = r.free.push(b);
                    n += 1;
                    if n >= 256 {
                        break;
                    }
                }
                n += sp.from_hosts();
                sp.publish();
                if now >= last_tick + 10 {
                    sp.tick(&t, now);
                    last_tick = now;
                    *shared.neighbours.lock().unwrap_or_else(|e| e.into_inner()) = sp.view(now);
                }
                drop(t);
                if n == 0 {
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        })
        .map_err(|e| format!("cannot start the router thread: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::packets::BROADCAST;
    use crate::wire::build::{ipv4, ipv6, L4};

    const P0: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const HOST: [u8; 6] = [2, 0, 0, 0, 0xaa, 1];
    const GW: [u8; 6] = [2, 0, 0, 0, 0xbb, 2];

    fn tables() -> Tables {
        let text = r#"
route = [{ prefix = "203.0.113.0/24", via = "198.51.100.254" }]
[[port]]
name = "p0"
mac = "02:00:00:00:00:01"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[[port]]
name = "p1"
mac = "02:00:00:00:00:02"
address = ["198.51.100.1/24"]
[[next_hop]]
name = "fixed"
port = "p1"
mac = "02:00:00:00:cc:cc"
address = "198.51.100.7"
[neighbour]
retrans_ms = 100
probes = 3
reachable_ms = 1000
delay_ms = 100
"#;
        let cfg = config::parse("r.toml", text, std::path::Path::new(".")).unwrap();
        Tables::build(&cfg, 1).unwrap()
    }

    fn setup() -> (SlowPath, Arc<RouterShared>, Tables) {
        let r = Arc::new(RouterShared::new(2, 2));
        let mut sp = SlowPath::new(r.clone());
        let t = tables();
        sp.adopt(&t, 0);
        drain(&r);
        (sp, r, t)
    }

    /// Frames injected for worker 0 (and 1), taken off their queues.
    fn drain(r: &RouterShared) -> Vec<(u16, Vec<u8>)> {
        let mut v = Vec::new();
        for q in &r.inject {
            while let Some(b) = q.pop() {
                v.push((b.port, b.frame().to_vec()));
                let _ = r.free.push(b);
            }
        }
        v
    }

    fn punt(
        sp: &mut SlowPath,
        t: &Tables,
        f: &[u8],
        port: u16,
        reason: Reason,
        hop: u32,
        now: u64,
    ) {
        sp.handle(t, &Buf::holding(f, port, 0, reason, hop), now);
    }

    fn arp(op: u16, sha: [u8; 6], spa: u32, tpa: u32, to: [u8; 6]) -> Vec<u8> {
        Arp {
            op,
            sha,
            spa,
            tha: [0; 6],
            tpa,
        }
        .frame(to)
    }

    #[test]
    fn requests_for_our_address_are_answered_and_teach_the_sender() {
        let (mut sp, r, t) = setup();
        punt(
            &mut sp,
            &t,
            &arp(Arp::REQUEST, HOST, 0xc000_0202, 0xc000_0201, BROADCAST),
            0,
            Reason::Arp,
            0,
            5,
        );
        let out = drain(&r);
        assert_eq!(out.len(), 1);
        let reply = Arp::parse(&out[0].1).unwrap();
        assert_eq!(
            (reply.op, reply.sha, reply.spa, reply.tpa),
            (Arp::REPLY, P0, 0xc000_0201, 0xc000_0202)
        );
        assert_eq!(&out[0].1[..6], &HOST);
        sp.publish();
        let n = r.neigh.load();
        assert_eq!(n.get(0, nkey(false, 0xc000_0202)), Some(Some(HOST)));
        assert_eq!(sp.view(5)[0].state, State::Stale);
    }

    #[test]
    fn a_new_mac_within_the_lock_time_needs_an_announcement() {
        let (mut sp, r, t) = setup();
        let other = [2, 0, 0, 0, 0xaa, 9];
        let ip = 0xc000_0202;
        punt(
            &mut sp,
            &t,
            &arp(Arp::REQUEST, HOST, ip, 0xc000_0201, BROADCAST),
            0,
            Reason::Arp,
            0,
            5,
        );
        let mac_now = |sp: &mut SlowPath| {
            sp.publish();
            r.neigh.load().get(0, nkey(false, ip as u128))
        };
        // A reply claiming another MAC 100 ms later: ignored.
        punt(
            &mut sp,
            &t,
            &arp(Arp::REPLY, other, ip, 0xc000_0201, P0),
            0,
            Reason::Arp,
            0,
            105,
        );
        assert_eq!(mac_now(&mut sp), Some(Some(HOST)));
        // The neighbour announcing it (gratuitous ARP): taken at once.
        punt(
            &mut sp,
            &t,
            &arp(Arp::REQUEST, other, ip, ip, BROADCAST),
            0,
            Reason::Arp,
            0,
            200,
        );
        assert_eq!(mac_now(&mut sp), Some(Some(other)));
        // A late reply with the old MAC: ignored; after the lock time, taken.
        punt(
            &mut sp,
            &t,
            &arp(Arp::REPLY, HOST, ip, 0xc000_0201, P0),
            0,
            Reason::Arp,
            0,
            300,
        );
        assert_eq!(mac_now(&mut sp), Some(Some(other)));
        punt(
            &mut sp,
            &t,
            &arp(Arp::REPLY, HOST, ip, 0xc000_0201, P0),
            0,
            Reason::Arp,
            0,
            1300,
        );
        assert_eq!(mac_now(&mut sp), Some(Some(HOST)));
    }

    #[test]
    fn what_nobody_asked_for_is_ignored_and_static_entries_stay() {
        let (mut sp, r, t) = setup();
        // A reply nobody asked for; a request for someone else's address;
        // a reply claiming the configured neighbour.
        punt(
            &mut sp,
            &t,
            &arp(Arp::REPLY, HOST, 0xc000_0209, 0xc000_0201, P0),
            0,
            Reason::Arp,
            0,
            1,
        );
        punt(
            &mut sp,
            &t,
            &arp(Arp::REQUEST, HOST, 0xc000_0209, 0xc000_0299, BROADCAST),
            0,
            Reason::Arp,
            0,
            1,
        );
        punt(
            &mut sp,
            &t,
            &arp(Arp::REPLY, HOST, 0xc633_6407, 0xc633_6401, P0),
            1,
            Reason::Arp,
            0,
            1,
        );
        // Garbage, and an NS for an address that is not ours.
        punt(&mut sp, &t, &[0xff; 30], 0, Reason::Arp, 0, 1);
        let target = 0x2001_0db8_0001u128 << 80 | 0x99;
        let ns = packets::ns(
            0x2001_0db8_0001u128 << 80 | 2,
            packets::solicited_node(target),
            target,
            HOST,
            packets::multicast_mac(packets::solicited_node(target)),
        );
        punt(&mut sp, &t, &ns, 0, Reason::Local, 0, 1);
        assert!(drain(&r).is_empty(), "nothing answered");
        assert_eq!(r.counters.get(Counter::NeighIgnored), 5);
        sp.publish();
        let n = r.neigh.load();
        assert_eq!(n.get(0, nkey(false, 0xc000_0209)), None);
        assert_eq!(
            n.get(1, nkey(false, 0xc633_6407)),
            Some(Some([2, 0, 0, 0, 0xcc, 0xcc]))
        );
    }

    #[test]
    fn unresolved_frames_are_held_resolved_and_sent_rewritten() {
        let (mut sp, r, t) = setup();
        let gw_hop = t
            .hop_kinds
            .iter()
            .position(|k| matches!(k, HopKind::Gateway { .. }))
            .unwrap() as u32;
        let mut f = ipv4(0xc000_0202, 0xcb00_7105, 64, L4::Udp(1, 2), 10);
        f[..6].copy_from_slice(&P0);
        for _ in 0..4 {
            punt(&mut sp, &t, &f, 0, Reason::Unresolved, gw_hop, 10);
        }
        let out = drain(&r);
        assert_eq!(out.len(), 1, "one request");
        let req = Arp::parse(&out[0].1).unwrap();
        assert_eq!(
            (out[0].0, req.op, req.tpa, req.spa),
            (1, Arp::REQUEST, 0xc633_64fe, 0xc633_6401)
        );
        assert_eq!(
            (
                r.counters.get(Counter::Held),
                r.counters.get(Counter::UnresolvedDropped)
            ),
            (4, 1)
        );
        sp.publish();
        assert_eq!(r.neigh.load().get(1, nkey(false, 0xc633_64fe)), Some(None));
        punt(
            &mut sp,
            &t,
            &arp(Arp::REPLY, GW, 0xc633_64fe, 0xc633_6401, [2, 0, 0, 0, 0, 2]),
            1,
            Reason::Arp,
            0,
            20,
        );
        let out = drain(&r);
        assert_eq!(out.len(), 3, "the three held frames");
        for (port, g) in out {
            assert_eq!(port, 1);
            assert_eq!(&g[..12], &[GW, [2, 0, 0, 0, 0, 2]].concat()[..]);
            assert_eq!(g[22], 63, "TTL decremented");
            assert_eq!(crate::wire::checksum(&g[14..34]), 0);
        }
        sp.publish();
        assert_eq!(
            r.neigh.load().get(1, nkey(false, 0xc633_64fe)),
            Some(Some(GW))
        );
    }

    #[test]
    fn an_unanswered_resolution_retries_fails_and_is_forgotten() {
        let (mut sp, r, t) = setup();
        let mut f = ipv6(
            0x2001_0db8_0002u128 << 80,
            0x2001_0db8_0001u128 << 80 | 0x77,
            64,
            L4::Udp(1, 2),
            10,
        );
        f[..6].copy_from_slice(&P0);
        let connected = t
            .hop_kinds
            .iter()
            .position(|k| *k == HopKind::Connected)
            .unwrap() as u32;
        punt(&mut sp, &t, &f, 0, Reason::Unresolved, connected, 0);
        let mut sent = drain(&r).len();
        for now in (10..=400).step_by(10) {
            sp.tick(&t, now);
            sent += drain(&r).len();
        }
        assert_eq!(sent, 3, "probes solicitations");
        assert_eq!(r.counters.get(Counter::NsOut), 3);
        assert_eq!(r.counters.get(Counter::ResolutionsFailed), 1);
        assert_eq!(r.counters.get(Counter::UnresolvedDropped), 1);
        let left = sp.view(400);
        assert!(
            left.iter()
                .all(|n| n.addr != IpAddr::V6(Ipv6Addr::from(0x2001_0db8_0001u128 << 80 | 0x77))),
            "forgotten after a failure's hold: {left:?}"
        );
        assert_eq!(left.len(), 1, "the configured neighbour stays");
    }

    #[test]
    fn echo_floods_are_rate_limited_per_core() {
        let (mut sp, r, t) = setup();
        // Host a resolved first, so that replies go out at once.
        punt(
            &mut sp,
            &t,
            &arp(Arp::REQUEST, HOST, 0xc000_0202, 0xc000_0201, BROADCAST),
            0,
            Reason::Arp,
            0,
            0,
        );
        drain(&r);
        let mut f = ipv4(0xc000_0202, 0xc000_0201, 64, L4::Icmp(8, 0), 8);
        f[..6].copy_from_slice(&P0);
        for _ in 0..200 {
            punt(&mut sp, &t, &f, 0, Reason::Local, 0, 1);
        }
        let out = drain(&r);
        assert_eq!(out.len(), 50, "the bucket's depth");
        assert_eq!(r.counters.get(Counter::IcmpRateLimited), 150);
        // A second later, a second's worth more.
        for _ in 0..2000 {
            punt(&mut sp, &t, &f, 0, Reason::Local, 0, 1001);
        }
        assert_eq!(drain(&r).len(), 50);
    }

    #[test]
    fn no_error_about_errors_broadcasts_or_later_fragments() {
        let (mut sp, r, t) = setup();
        punt(
            &mut sp,
            &t,
            &arp(Arp::REQUEST, HOST, 0xc000_0202, 0xc000_0201, BROADCAST),
            0,
            Reason::Arp,
            0,
            0,
        );
        drain(&r);
        let mut err = ipv4(0xc000_0202, 0xcb00_7101, 1, L4::Icmp(3, 1), 28);
        err[..6].copy_from_slice(&P0);
        let mut bcast = ipv4(0xc000_0202, 0xcb00_7101, 1, L4::Udp(1, 2), 8);
        bcast[..6].copy_from_slice(&BROADCAST);
        let mut frag = ipv4(0xc000_0202, 0xcb00_7101, 1, L4::Udp(1, 2), 8);
        frag[..6].copy_from_slice(&P0);
        frag[21] = 10;
        for f in [&err, &bcast, &frag] {
            punt(&mut sp, &t, f, 0, Reason::TtlExpired, 0, 5);
        }
        assert!(drain(&r).is_empty());
        assert_eq!(r.counters.get(Counter::IcmpSuppressed), 3);
        let mut ok = ipv4(0xc000_0202, 0xcb00_7101, 1, L4::Udp(1, 2), 8);
        ok[..6].copy_from_slice(&P0);
        punt(&mut sp, &t, &ok, 0, Reason::TtlExpired, 0, 5);
        let out = drain(&r);
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0].1[..6], &HOST);
        assert_eq!(out[0].1[34], 11, "time exceeded");
    }
}
