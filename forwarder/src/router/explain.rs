//! What the slow path answers to a frame a trace hands it: the slow
//! path's own code, run on a private copy (its own queues, the live
//! neighbours copied in, every rate limit full, the hosts' sides
//! recorded instead of written), so that `forwarder trace` can say what
//! a punted packet earns (an ICMP error, an echo reply, a reset, a
//! solicitation while the packet waits, the host's TAP) without touching
//! the running slow path.

use super::slow::{Entry, Host, SlowPath};
use crate::neigh::{nkey, NeighView, State};
use crate::punt::{Buf, RouterShared};
use crate::tables::Tables;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// One thing the slow path did with a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Sent this frame out of this port.
    Sent {
        /// The port.
        port: u16,
        /// The frame.
        frame: Vec<u8>,
    },
    /// Gave the frame to the host's side of the port (its TAP).
    ToHost {
        /// The port.
        port: u16,
    },
    /// Holds a frame until this neighbour answers.
    Held {
        /// The port.
        port: u16,
        /// The neighbour.
        addr: IpAddr,
        /// Its state now.
        state: State,
        /// Whether what waits is the router's own answer (an echo reply,
        /// an ICMP error), not the packet.
        own: bool,
    },
}

/// A host's side that keeps what it is given.
struct Recorder(Arc<Mutex<Vec<Vec<u8>>>>);

impl Host for Recorder {
    fn write(&mut self, frame: &[u8]) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(frame.to_vec());
        true
    }
    fn read(&mut self, _: &mut [u8]) -> Option<usize> {
        None
    }
}

/// What the slow path does with `buf` (a frame a pipeline punted) under
/// `t`, the neighbours being `neighbours`, at `now` (milliseconds on the
/// slow path's clock).
pub fn answers(t: &Tables, neighbours: &[NeighView], buf: &Buf, now: u64) -> Vec<Answer> {
    let shared = Arc::new(RouterShared::with_pool(1, t.ports.len(), 64));
    let given = Arc::new(Mutex::new(Vec::new()));
    let hosts = t
        .ports
        .iter()
        .map(|p| {
            p.tap
                .as_ref()
                .map(|_| Box::new(Recorder(given.clone())) as Box<dyn Host>)
        })
        .collect();
    let mut sp = SlowPath::new(shared.clone()).with_hosts(hosts);
    sp.adopt(t, now);
    // The announcements a new slow path sends are not the frame's.
    drain(&shared);
    for v in neighbours {
        let key = (v.port, nkey(v.addr.is_ipv6(), config::ip_bits(v.addr)));
        sp.neigh.entry(key).or_insert_with(|| Entry {
            mac: v.mac,
            state: v.state,
            since: now.saturating_sub(v.age_ms),
            updated: now.saturating_sub(v.age_ms),
            sent: now,
            probes: v.probes,
            held: VecDeque::new(),
            held_bytes: 0,
            fixed: false,
        });
    }
    sp.handle(t, buf, now);
    let mut out: Vec<Answer> = drain(&shared)
        .into_iter()
        .map(|(port, frame)| Answer::Sent { port, frame })
        .collect();
    if !given.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
        out.push(Answer::ToHost { port: buf.port });
    }
    for (&(port, key), e) in &sp.neigh {
        if let Some(h) = e.held.back() {
            out.push(Answer::Held {
                port,
                addr: crate::neigh::key_ip(key),
                state: e.state,
                own: h.ethertype.is_some(),
            });
        }
    }
    out
}

/// The frames the slow path queued to send: (port, frame).
fn drain(shared: &RouterShared) -> Vec<(u16, Vec<u8>)> {
    let mut v = Vec::new();
    for q in &shared.inject {
        while let Some(b) = q.pop() {
            v.push((b.port, b.frame().to_vec()));
            let _ = shared.free.push(b);
        }
    }
    v
}
