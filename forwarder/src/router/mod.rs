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
//! - `slow`: the slow path's state, and what it takes up of a snapshot;
//! - this file: the dispatch of a punted frame by its reason;
//! - `neighbours`: the neighbour table's state machine, ARP and ND, the
//!   frames held while a neighbour resolves;
//! - `icmp`: ICMP errors and echo replies with their rate limits,
//!   `reject`'s answers, and routing the router's own packets;
//! - `host`: the host's side of a port (its TAP);
//! - `thread`: the thread that runs it all;
//! - `explain`: the slow path run privately on a traced packet.

mod explain;
mod host;
mod icmp;
mod neighbours;
mod slow;
#[cfg(test)]
mod tests;
mod thread;

pub use explain::{answers, Answer};
pub use neighbours::LOCKTIME_MS;
pub use slow::{Host, SlowPath};
pub use thread::spawn;

use crate::punt::{Buf, Counter};
use crate::reason::DropReason;
use crate::tables::Tables;
use crate::wire::{self, ip, nd, proto};
use icmp::IcmpError;

impl SlowPath {
    /// Serves one punted frame, at `now` (milliseconds on the slow path's
    /// clock).
    pub fn handle(&mut self, t: &Tables, b: &Buf, now: u64) {
        self.now = now;
        self.take_asked();
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
        if !Self::ours(t, port, v6, dst) {
            // Groups (ff02::1, OSPFv3's, ...): the host's, if it has a
            // side on this port.
            if !self.give_host(port, f) {
                c.inc(Counter::LocalIgnored);
            }
            return;
        }
        if let Some(reply) = wire::icmp::echo_reply(f) {
            if self.allow(w, src, false) {
                self.route_out(t, w, t.vrf_of(port), v6, src, reply, Counter::IcmpEchoReply);
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
