//! The neighbour table as the workers read it: (port, address) to the
//! MAC to send to, published by the slow path (which resolves and
//! ages the neighbours: see [`crate::router`]) through an `ArcSwap` the
//! workers load, and what `forwarder neighbours` lists.

use crate::wire::{arp::Arp, nd};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A neighbour's state, as Linux names them (`ip neigh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Being resolved: solicitations sent, no answer yet.
    Incomplete,
    /// Confirmed within the reachable time.
    Reachable,
    /// Its MAC is used, unconfirmed since the reachable time ran out;
    /// probed after `delay_ms` (Linux waits in a state of its own, DELAY,
    /// once traffic uses a stale entry: the workers do not report use, so
    /// every stale entry waits and is probed).
    Stale,
    /// Being confirmed by unicast solicitations.
    Probe,
    /// No answer to any solicitation.
    Failed,
}

impl State {
    /// Its name, lower case.
    pub fn name(self) -> &'static str {
        match self {
            State::Incomplete => "incomplete",
            State::Reachable => "reachable",
            State::Stale => "stale",
            State::Probe => "probe",
            State::Failed => "failed",
        }
    }

    /// Every state.
    pub const ALL: [State; 5] = [
        State::Incomplete,
        State::Reachable,
        State::Stale,
        State::Probe,
        State::Failed,
    ];
}

/// A neighbour as `forwarder neighbours` lists it.
#[derive(Clone, Debug)]
pub struct NeighView {
    /// The port's index.
    pub port: u16,
    /// Its address.
    pub addr: std::net::IpAddr,
    /// Its MAC, once known.
    pub mac: Option<[u8; 6]>,
    /// Its state.
    pub state: State,
    /// Milliseconds since its state last changed.
    pub age_ms: u64,
    /// Solicitations sent in the current resolution or probe.
    pub probes: u32,
}

/// The neighbours as the workers see them: (port, address) to the MAC
/// to send to, `None` while resolving or failed (the worker drops the
/// packet, counted, instead of punting every one). Immutable once
/// published.
#[derive(Default)]
pub struct NeighTable {
    /// The lookup table.
    pub map: HashMap<(u16, u128), Option<[u8; 6]>, ahash::RandomState>,
}

impl NeighTable {
    /// The MAC to send to `addr` on `port`: `Some(None)` while it
    /// resolves, `None` when the slow path has not heard of it.
    #[inline]
    pub fn get(&self, port: u16, addr: u128) -> Option<Option<[u8; 6]>> {
        self.map.get(&(port, addr)).copied()
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

/// The family and address of a key (see [`nkey`]).
pub fn unkey(k: u128) -> (bool, u128) {
    if k >> 32 == 0xffff {
        (false, k & 0xffff_ffff)
    } else {
        (true, k)
    }
}

/// The address of a key.
pub fn key_ip(k: u128) -> IpAddr {
    let (v6, a) = unkey(k);
    ip_of(v6, a)
}

/// An address of family `v6` (IPv4 in the low 32 bits) as an `IpAddr`.
pub fn ip_of(v6: bool, a: u128) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(a))
    } else {
        IpAddr::V4(Ipv4Addr::from(a as u32))
    }
}

/// Whether `ip` is an IPv6 link-local address (fe80::/10).
pub fn is_link_local(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80)
}

/// The address a port with `addrs` sends from in family `v6`: one whose
/// network holds `toward`, else the first global one, else (IPv6) the
/// link-local one.
pub fn source_among(addrs: &[config::PortAddress], v6: bool, toward: u128) -> Option<u128> {
    let fam = addrs.iter().filter(|a| a.v6() == v6);
    let toward = ip_of(v6, toward);
    fam.clone()
        .find(|a| a.covers(toward) && !is_link_local(a.ip))
        .or_else(|| fam.clone().find(|a| !is_link_local(a.ip)))
        .or_else(|| fam.clone().next())
        .map(|a| a.bits())
}

/// A request for a neighbour's MAC as it leaves: an ARP request or a
/// neighbour solicitation, built in place (a worker sends the first one
/// without allocating).
pub struct Request {
    bytes: [u8; nd::NS_FRAME],
    len: usize,
}

impl Request {
    /// The request for neighbour `key` (see [`nkey`]) from a port with MAC
    /// `mac` and address `src`: broadcast (to the solicited-node group),
    /// or unicast to `unicast` when probing a known MAC.
    pub fn new(mac: [u8; 6], src: u128, key: u128, unicast: Option<[u8; 6]>) -> Request {
        let mut bytes = [0u8; nd::NS_FRAME];
        let len = match unkey(key) {
            (true, addr) => {
                let (dst, dmac) = match unicast {
                    Some(m) => (addr, m),
                    None => {
                        let g = nd::solicited_node(addr);
                        (g, nd::multicast_mac(g))
                    }
                };
                bytes = nd::ns_bytes(src, dst, addr, mac, dmac);
                nd::NS_FRAME
            }
            (false, addr) => {
                let a = Arp {
                    op: Arp::REQUEST,
                    sha: mac,
                    spa: src as u32,
                    tha: [0; 6],
                    tpa: addr as u32,
                }
                .bytes(unicast.unwrap_or(crate::wire::arp::BROADCAST));
                bytes[..a.len()].copy_from_slice(&a);
                a.len()
            }
        };
        Request { bytes, len }
    }

    /// Whether it is a neighbour solicitation (else an ARP request).
    pub fn is_v6(&self) -> bool {
        self.len == nd::NS_FRAME
    }

    /// The frame.
    pub fn frame(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The neighbours a worker remembers asking for. A neighbour it still
/// remembers is not asked for again by the worker (the slow path owns
/// its resolution); one it forgot may be asked for twice, which is
/// harmless.
const RECENT: usize = 16;

/// What a worker needs to ask on a port: its MAC and addresses (taken
/// with each snapshot, off the fast path).
#[derive(Clone, Default)]
pub struct Asker {
    /// The port's MAC.
    pub mac: [u8; 6],
    /// Its addresses.
    pub addrs: Vec<config::PortAddress>,
}

/// Per port of `ports`, what asking there takes.
pub fn askers(ports: &[config::PortConfig]) -> Vec<Asker> {
    ports
        .iter()
        .map(|p| Asker {
            mac: p.mac,
            addrs: p.addresses.clone(),
        })
        .collect()
}

/// The neighbours (port, key) a worker asked for lately (see
/// `Pipeline::ask`), oldest overwritten first.
#[derive(Clone, Copy)]
pub struct Asked {
    recent: [(u16, u128); RECENT],
    next: usize,
}

impl Default for Asked {
    fn default() -> Self {
        // No neighbour has key 0 (`::`) on port `u16::MAX`.
        Asked {
            recent: [(u16::MAX, 0); RECENT],
            next: 0,
        }
    }
}

impl Asked {
    /// Whether (`port`, `key`) is remembered.
    pub fn knows(&self, port: u16, key: u128) -> bool {
        self.recent.contains(&(port, key))
    }

    /// Remembers (`port`, `key`), forgetting the oldest.
    pub fn note(&mut self, port: u16, key: u128) {
        self.recent[self.next % RECENT] = (port, key);
        self.next = self.next.wrapping_add(1);
    }
}
