//! The queues between the workers and the router's slow path: a worker
//! *punts* a frame it will not forward itself (ARP, a packet for the
//! router, one whose neighbour is unresolved, one that earns an ICMP
//! error), copying it into a buffer taken from a shared pool, onto a
//! bounded lock-free queue (crossbeam's `ArrayQueue`); the slow path
//! hands frames to send back through each worker's *inject* queue, which
//! the worker drains every turn of its loop. Pool empty or queue full,
//! the frame is dropped and counted, never waited for. The slow path's
//! counters live here too: both sides count.

use crate::neigh::NeighTable;
use crate::reason::DropReason;
use crossbeam_queue::ArrayQueue;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst},
};

/// Bytes a frame buffer holds.
pub const BUF_CAP: usize = crate::port::FRAME_CAP;

/// A frame on its way between a worker and the slow path.
pub struct Buf {
    /// Bytes used of `data`.
    pub len: u16,
    /// The port it came in on (punted) or goes out of (injected).
    pub port: u16,
    /// The worker that punted it (whose inject queue gets the answer).
    pub worker: u16,
    /// Why it was punted.
    pub reason: DropReason,
    /// For [`DropReason::Unresolved`] and [`DropReason::TooBig`]: the FIB next
    /// hop's index the frame was to leave by.
    pub hop: u32,
    /// The frame.
    pub data: [u8; BUF_CAP],
}

impl Buf {
    fn new() -> Box<Buf> {
        Box::new(Buf {
            len: 0,
            port: 0,
            worker: 0,
            reason: DropReason::Local,
            hop: 0,
            data: [0; BUF_CAP],
        })
    }

    /// A buffer holding `frame`, punted by `worker` from `port` for
    /// `reason` (tests, the fuzz target: workers take theirs from the
    /// pool).
    pub fn holding(frame: &[u8], port: u16, worker: u16, reason: DropReason, hop: u32) -> Box<Buf> {
        let mut b = Buf::new();
        b.set(frame);
        b.port = port;
        b.worker = worker;
        b.reason = reason;
        b.hop = hop;
        b
    }

    /// The frame it holds.
    pub fn frame(&self) -> &[u8] {
        &self.data[..self.len as usize]
    }

    /// Holds `frame` (cut to the buffer's size).
    pub fn set(&mut self, frame: &[u8]) {
        let n = frame.len().min(BUF_CAP);
        self.data[..n].copy_from_slice(&frame[..n]);
        self.len = n as u16;
    }

    /// Holds `frame` without the `strip` bytes of VLAN tags after its
    /// source MAC (all of it, untouched, if it is shorter than those).
    pub fn set_untagged(&mut self, frame: &[u8], strip: usize) {
        match (frame.get(..12), frame.get(12 + strip..)) {
            (Some(macs), Some(rest)) if strip > 0 => {
                let n = rest.len().min(BUF_CAP - 12);
                self.data[..12].copy_from_slice(macs);
                self.data[12..12 + n].copy_from_slice(&rest[..n]);
                self.len = (12 + n) as u16;
            }
            _ => self.set(frame),
        }
    }
}

/// Whether a frame belongs to a control protocol whose loss costs the
/// router its neighbours or sessions: ARP, neighbour discovery (ICMPv6
/// 133-137), BGP (TCP port 179 either way), BFD (UDP 3784, 3785, 4784),
/// OSPF (IP protocol 89). Read from fixed offsets (no VLAN tags, no
/// IPv6 extension headers): what it misses is served as any other
/// frame.
pub fn is_control(f: &[u8]) -> bool {
    let b = |i: usize| f.get(i).copied().unwrap_or(0);
    let port = |i: usize| u16::from_be_bytes([b(i), b(i + 1)]);
    let l4 = |proto: u8, at: usize| match proto {
        89 => true,
        6 => port(at) == 179 || port(at + 2) == 179,
        17 => matches!(port(at + 2), 3784 | 3785 | 4784),
        _ => false,
    };
    match port(12) {
        0x0806 => true,
        0x0800 => {
            let at = 14 + (b(14) & 0xf) as usize * 4;
            // A later fragment has no ports.
            port(20) & 0x1fff == 0 && l4(b(23), at)
        }
        0x86dd => match b(20) {
            58 => (133..=137).contains(&b(54)),
            p => l4(p, 54),
        },
        _ => false,
    }
}

/// Buffers in the shared pool.
pub const POOL: usize = 2048;
/// Frames each port's punt queue holds.
pub const PUNT_QUEUE: usize = 512;
/// Frames the control-protocol punt queue holds (ARP, neighbour
/// discovery, BGP, BFD, OSPF: served first).
pub const CONTROL_QUEUE: usize = 256;
/// Frames each worker's inject queue holds.
pub const INJECT_QUEUE: usize = 512;
/// Neighbours the workers' own first requests may name before the slow
/// path takes them up.
const ASKED_QUEUE: usize = 1024;

/// The slow path's counters (the `stats` JSON's `router` object and the
/// Prometheus `forwarder_router_NAME_total` families).
#[derive(Default)]
pub struct Counters {
    values: [AtomicU64; Counter::ALL.len()],
}

/// One of the slow path's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// ARP requests received for our addresses.
    ArpRequestsIn,
    /// ARP replies received.
    ArpRepliesIn,
    /// ARP requests sent (resolution and probes).
    ArpRequestsOut,
    /// ARP replies sent.
    ArpRepliesOut,
    /// Neighbour solicitations received for our addresses.
    NsIn,
    /// Neighbour advertisements received.
    NaIn,
    /// Neighbour solicitations sent.
    NsOut,
    /// Neighbour advertisements sent.
    NaOut,
    /// ARP and ND messages ignored: malformed, for others' addresses,
    /// unsolicited for a neighbour we do not know, or trying to change a
    /// static one.
    NeighIgnored,
    /// Frames held while their neighbour resolved.
    Held,
    /// Frames dropped unresolved: the hold queue full (the oldest goes)
    /// or the resolution failed.
    UnresolvedDropped,
    /// Resolutions that failed (no answer after every probe).
    ResolutionsFailed,
    /// Echo replies sent.
    IcmpEchoReply,
    /// Time exceeded sent.
    IcmpTimeExceeded,
    /// Destination unreachable sent (no route, port, prohibited).
    IcmpUnreachable,
    /// Packet too big / fragmentation needed sent.
    IcmpTooBig,
    /// TCP resets sent for `reject`.
    TcpResets,
    /// ICMP messages not sent: over the rate limit.
    IcmpRateLimited,
    /// ICMP errors not sent: the packet may not have one (an ICMP error,
    /// a broadcast or multicast, a later fragment, a bad source).
    IcmpSuppressed,
    /// Frames punted by workers.
    Punted,
    /// Frames a worker could not punt (pool empty or queue full).
    PuntDropped,
    /// Frames for the router it does not serve (other protocols to its
    /// addresses, groups it does not handle).
    LocalIgnored,
    /// Frames the slow path could not hand to a worker (pool empty,
    /// inject queue full) or route.
    InjectDropped,
    /// Frames given to a port's TAP (for the host's stack).
    ToHost,
    /// Frames the TAP did not take (its queue full).
    ToHostDropped,
    /// Frames the host sent through a TAP, out of its port.
    FromHost,
}

impl Counter {
    /// Every counter, in [`Counters::values`] order.
    pub const ALL: [Counter; 26] = [
        Counter::ArpRequestsIn,
        Counter::ArpRepliesIn,
        Counter::ArpRequestsOut,
        Counter::ArpRepliesOut,
        Counter::NsIn,
        Counter::NaIn,
        Counter::NsOut,
        Counter::NaOut,
        Counter::NeighIgnored,
        Counter::Held,
        Counter::UnresolvedDropped,
        Counter::ResolutionsFailed,
        Counter::IcmpEchoReply,
        Counter::IcmpTimeExceeded,
        Counter::IcmpUnreachable,
        Counter::IcmpTooBig,
        Counter::TcpResets,
        Counter::IcmpRateLimited,
        Counter::IcmpSuppressed,
        Counter::Punted,
        Counter::PuntDropped,
        Counter::LocalIgnored,
        Counter::InjectDropped,
        Counter::ToHost,
        Counter::ToHostDropped,
        Counter::FromHost,
    ];

    /// Its name in statistics.
    pub fn name(self) -> &'static str {
        match self {
            Counter::ArpRequestsIn => "arp_requests_in",
            Counter::ArpRepliesIn => "arp_replies_in",
            Counter::ArpRequestsOut => "arp_requests_out",
            Counter::ArpRepliesOut => "arp_replies_out",
            Counter::NsIn => "nd_solicitations_in",
            Counter::NaIn => "nd_advertisements_in",
            Counter::NsOut => "nd_solicitations_out",
            Counter::NaOut => "nd_advertisements_out",
            Counter::NeighIgnored => "neighbour_messages_ignored",
            Counter::Held => "held",
            Counter::UnresolvedDropped => "unresolved_dropped",
            Counter::ResolutionsFailed => "resolutions_failed",
            Counter::IcmpEchoReply => "icmp_echo_reply",
            Counter::IcmpTimeExceeded => "icmp_time_exceeded",
            Counter::IcmpUnreachable => "icmp_unreachable",
            Counter::IcmpTooBig => "icmp_too_big",
            Counter::TcpResets => "tcp_resets",
            Counter::IcmpRateLimited => "icmp_rate_limited",
            Counter::IcmpSuppressed => "icmp_suppressed",
            Counter::Punted => "punted",
            Counter::PuntDropped => "punt_dropped",
            Counter::LocalIgnored => "local_ignored",
            Counter::InjectDropped => "inject_dropped",
            Counter::ToHost => "to_host",
            Counter::ToHostDropped => "to_host_dropped",
            Counter::FromHost => "from_host",
        }
    }
}

impl Counters {
    /// Adds one.
    pub fn inc(&self, c: Counter) {
        self.values[c as usize].fetch_add(1, Relaxed);
    }

    /// Every counter, in [`Counter::ALL`] order.
    pub fn values(&self) -> Vec<(&'static str, u64)> {
        Counter::ALL
            .iter()
            .map(|&c| (c.name(), self.values[c as usize].load(Relaxed)))
            .collect()
    }

    /// One counter.
    pub fn get(&self, c: Counter) -> u64 {
        self.values[c as usize].load(Relaxed)
    }
}

/// What the workers and the slow path share.
pub struct RouterShared {
    /// Free buffers.
    pub free: ArrayQueue<Box<Buf>>,
    /// Frames punted by workers, per port: a flood on one port leaves
    /// the others their share.
    pub punt: Vec<ArrayQueue<Box<Buf>>>,
    /// Frames of the control protocols ([`is_control`]), from any port:
    /// served before the rest, so that a flood to the router's address
    /// does not starve its neighbours and sessions.
    pub control: ArrayQueue<Box<Buf>>,
    /// Per worker, frames to send.
    pub inject: Vec<ArrayQueue<Box<Buf>>>,
    /// Neighbours (port, key) a worker has sent the first request for
    /// itself (`Pipeline::ask`), for the slow path to take up before the
    /// next frame it serves: the answer may come (as a control frame,
    /// served first) before the frame that met the miss.
    asked: ArrayQueue<(u16, u128)>,
    /// Frames workers hand each other: those of connections another
    /// tracks ([`crate::conntrack`]), a burst's at a time.
    pub handoff: crate::handoff::Handoff,
    /// The neighbours, for the workers.
    pub neigh: arc_swap::ArcSwap<NeighTable>,
    /// Counters.
    pub counters: Counters,
    /// The slow path's thread, parked while it has nothing to do (see
    /// [`RouterShared::wait`]); a punt wakes it.
    waiter: std::sync::OnceLock<std::thread::Thread>,
    /// Whether it is parked, or about to be: set by it, cleared by the
    /// first punt that wakes it (one wake a nap, not one a punt).
    parked: AtomicBool,
    /// Per worker, the frames it handed over (written by it alone) and
    /// those of them the slow path has served (written by the slow path
    /// alone): a worker takes up a new neighbour table only once the two
    /// agree (see [`RouterShared::caught_up`]).
    punted: Vec<CachePadded<AtomicU64>>,
    handled: Vec<CachePadded<AtomicU64>>,
}

impl RouterShared {
    /// Queues and a pool for `workers` workers and `ports` ports.
    pub fn new(workers: usize, ports: usize) -> RouterShared {
        RouterShared::with_pool(workers, ports, POOL)
    }

    /// [`RouterShared::new`] with `pool` buffers (a trace's private slow
    /// path needs a few, not a forwarder's thousands).
    pub fn with_pool(workers: usize, ports: usize, pool: usize) -> RouterShared {
        let free = ArrayQueue::new(pool.max(1));
        for _ in 0..pool.max(1) {
            let _ = free.push(Buf::new());
        }
        RouterShared {
            free,
            punt: (0..ports.max(1))
                .map(|_| ArrayQueue::new(PUNT_QUEUE))
                .collect(),
            control: ArrayQueue::new(CONTROL_QUEUE),
            inject: (0..workers.max(1))
                .map(|_| ArrayQueue::new(INJECT_QUEUE))
                .collect(),
            asked: ArrayQueue::new(ASKED_QUEUE),
            handoff: crate::handoff::Handoff::new(workers),
            neigh: arc_swap::ArcSwap::from_pointee(NeighTable::default()),
            counters: Counters::default(),
            waiter: std::sync::OnceLock::new(),
            parked: AtomicBool::new(false),
            punted: (0..workers.max(1))
                .map(|_| CachePadded::default())
                .collect(),
            handled: (0..workers.max(1))
                .map(|_| CachePadded::default())
                .collect(),
        }
    }

    /// Whether the slow path has served every frame worker `w` handed it
    /// (worker side). Until it has, the worker keeps its neighbour table:
    /// a frame it handed over under the old one, and which the slow path
    /// then sends, would otherwise leave after ones the worker sends
    /// itself under the new one.
    pub fn caught_up(&self, w: usize) -> bool {
        let w = w.min(self.punted.len() - 1);
        self.handled[w].load(Acquire) >= self.punted[w].load(Relaxed)
    }

    /// How many frames worker `w` has handed over so far.
    pub fn punted(&self, w: usize) -> u64 {
        self.punted[w.min(self.punted.len() - 1)].load(Relaxed)
    }

    /// The slow path has served a frame of worker `w` (what it sent for
    /// it, if anything, is in `w`'s inject queue).
    pub fn served(&self, w: usize) {
        let h = &self.handled[w.min(self.handled.len() - 1)];
        h.store(h.load(Relaxed) + 1, Release);
    }

    /// How many workers share the handoff queues.
    pub fn workers(&self) -> usize {
        self.handoff.workers()
    }

    /// Whether nothing punted waits for the slow path.
    pub fn punts_empty(&self) -> bool {
        self.control.is_empty() && self.punt.iter().all(|q| q.is_empty())
    }

    /// Whether worker `w`'s inject queue, and the pool, have room for a
    /// frame (the slow path sends held frames only as they do).
    pub fn can_inject(&self, w: usize) -> bool {
        let q = &self.inject[w.min(self.inject.len() - 1)];
        q.len() < q.capacity() && !self.free.is_empty()
    }

    /// The slow path's thread waits (at most `max`) for the next punt:
    /// the first frame of a new flow to an unresolved neighbour wakes it
    /// at once, so that its request goes out within microseconds, not
    /// after a nap. Called from that thread only.
    pub fn wait(&self, max: std::time::Duration) {
        let _ = self.waiter.set(std::thread::current());
        self.parked.store(true, SeqCst);
        // A punt pushed before `parked` was seen set is found here; one
        // pushed after sees it set and wakes us (an unpark before the
        // park makes the park return at once).
        if self.punts_empty() {
            std::thread::park_timeout(max);
        }
        self.parked.store(false, Relaxed);
    }

    /// Wakes the slow path's thread if it is parked (worker side, after a
    /// punt): a system call at most once a nap.
    #[cold]
    fn wake(&self) {
        if self.parked.swap(false, AcqRel) {
            if let Some(t) = self.waiter.get() {
                t.unpark();
            }
        }
    }

    /// Punts `frame` (worker side), without the `strip` bytes of VLAN
    /// tags after its source MAC (those of `port`, a sub-interface): false
    /// if it could not (counted).
    #[inline]
    pub fn punt(
        &self,
        frame: &[u8],
        strip: usize,
        port: u16,
        worker: u16,
        reason: DropReason,
        hop: u32,
    ) -> bool {
        let Some(mut b) = self.free.pop() else {
            self.counters.inc(Counter::PuntDropped);
            return false;
        };
        b.set_untagged(frame, strip);
        b.port = port;
        b.worker = worker;
        b.reason = reason;
        b.hop = hop;
        let q = if is_control(b.frame()) {
            &self.control
        } else {
            &self.punt[(port as usize).min(self.punt.len() - 1)]
        };
        match q.push(b) {
            Ok(()) => {
                let p = &self.punted[(worker as usize).min(self.punted.len() - 1)];
                p.store(p.load(Relaxed) + 1, Relaxed);
                // Seen after the push (the fence), or the slow path sees
                // the frame before it parks.
                std::sync::atomic::fence(SeqCst);
                if self.parked.load(Relaxed) {
                    self.wake();
                }
                true
            }
            Err(b) => {
                let _ = self.free.push(b);
                self.counters.inc(Counter::PuntDropped);
                false
            }
        }
    }

    /// The next punted frame to serve (slow path side): control
    /// protocols first, then the ports in turn from `*next`.
    pub fn next_punt(&self, next: &mut usize) -> Option<Box<Buf>> {
        if let Some(b) = self.control.pop() {
            return Some(b);
        }
        let n = self.punt.len();
        for k in 0..n {
            let i = (*next + k) % n;
            if let Some(b) = self.punt[i].pop() {
                *next = i + 1;
                return Some(b);
            }
        }
        None
    }

    /// Worker side: it has queued the first request for neighbour `key`
    /// on `port` (and sends it at its next turn, after this). With the
    /// queue full the slow path is not told, and asks again itself.
    pub fn asked(&self, port: u16, key: u128) {
        let _ = self.asked.push((port, key));
    }

    /// Slow path side: the next neighbour a worker asked for.
    pub fn next_asked(&self) -> Option<(u16, u128)> {
        self.asked.pop()
    }

    /// Hands `frame` to worker `worker` to send on `port` (slow path
    /// side): false if it could not (counted).
    pub fn inject(&self, worker: usize, port: u16, frame: &[u8]) -> bool {
        let q = &self.inject[worker.min(self.inject.len() - 1)];
        let Some(mut b) = self.free.pop() else {
            self.counters.inc(Counter::InjectDropped);
            return false;
        };
        b.set(frame);
        b.port = port;
        match q.push(b) {
            Ok(()) => true,
            Err(b) => {
                let _ = self.free.push(b);
                self.counters.inc(Counter::InjectDropped);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build::{ipv4, ipv6, L4};

    #[test]
    fn control_protocols_are_told_apart_and_served_first() {
        let (a, b) = (0xc000_0201, 0xc000_0202);
        let (a6, b6) = (0x2001_0db8u128 << 96 | 1, 0x2001_0db8u128 << 96 | 2);
        let mut ospf = ipv4(a, b, 1, L4::Udp(1, 2), 20);
        ospf[23] = 89;
        let mut arp = ipv4(a, b, 1, L4::Udp(1, 2), 20);
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let mut later_fragment = ipv4(a, b, 64, L4::Tcp(179, 40000), 0);
        later_fragment[20] = 0x01;
        for (f, want) in [
            (ipv4(a, b, 64, L4::Tcp(40000, 179), 0), true),
            (ipv4(a, b, 64, L4::Tcp(179, 40000), 0), true),
            (ipv4(a, b, 255, L4::Udp(49152, 3784), 0), true),
            (ospf, true),
            (arp, true),
            (ipv6(a6, b6, 255, L4::Icmp(135, 0), 24), true),
            (ipv6(a6, b6, 64, L4::Tcp(40000, 179), 0), true),
            (ipv4(a, b, 64, L4::Udp(40000, 53), 0), false),
            (ipv4(a, b, 64, L4::Tcp(40000, 22), 0), false),
            (ipv4(a, b, 64, L4::Icmp(8, 0), 8), false),
            (ipv6(a6, b6, 64, L4::Icmp(128, 0), 8), false),
            (later_fragment, false),
            (vec![0; 10], false),
        ] {
            assert_eq!(is_control(&f), want, "{:02x?}", &f[..f.len().min(60)]);
        }
        // A full port's queue drops its own frames only; control frames
        // and the other port's go on, control first, then port by port.
        let r = RouterShared::new(1, 2);
        let udp = ipv4(a, b, 64, L4::Udp(40000, 53), 0);
        let bgp = ipv4(a, b, 64, L4::Tcp(40000, 179), 0);
        let mut taken = 0;
        while r.punt(&udp, 0, 0, 0, DropReason::Local, 0) {
            taken += 1;
        }
        assert_eq!(taken, PUNT_QUEUE);
        assert!(r.punt(&udp, 0, 1, 0, DropReason::Local, 0));
        assert!(r.punt(&bgp, 0, 0, 0, DropReason::Local, 0));
        let mut next = 0;
        assert_eq!(
            r.next_punt(&mut next).map(|b| b.frame().to_vec()),
            Some(bgp)
        );
        let ports: Vec<u16> = (0..3)
            .filter_map(|_| r.next_punt(&mut next).map(|b| b.port))
            .collect();
        assert_eq!(ports, [0, 1, 0]);
    }
}
