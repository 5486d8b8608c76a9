//! The neighbour table as the workers read it: (port, address) to the
//! MAC to send to, published by the slow path (which resolves and
//! ages the neighbours: see [`crate::router`]) through an `ArcSwap` the
//! workers load, and what `forwarder neighbours` lists.

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
