//! The first request for a neighbour's MAC, sent by the worker that meets
//! the miss.
//!
//! The slow path holds a new neighbour's frames and would send the
//! request itself, but it runs on a thread that must first be woken and
//! scheduled: on a busy machine (two cores, the hosts' threads on the
//! other one) that took from 0.1 to several milliseconds. The worker is
//! running already: it builds the request in place (no allocation), puts
//! it on its own inject queue (out at the start of its next turn,
//! microseconds later) and tells the slow path that it asked, through a
//! queue of their own that the slow path empties before it serves any
//! frame (the answer, a control frame served first, may overtake the
//! frame that met the miss: had the slow path not heard of the question
//! by then, it would ignore the answer and wait a retransmission).
//! Retransmissions, probes and the answer stay the slow path's.

use super::Pipeline;
use crate::neigh::{source_among, unkey, Request};
use crate::punt::Counter;

impl Pipeline {
    /// Sends the request for neighbour `key` (see [`crate::neigh::nkey`])
    /// on `port` unless this worker asked lately, and tells the slow path
    /// (before the request leaves: this worker sends its inject queue at
    /// its next turn).
    #[cold]
    #[inline(never)]
    pub(super) fn ask(&mut self, port: u16, key: u128) {
        let Some(r) = &self.router else { return };
        if self.asked.knows(port, key) {
            return;
        }
        let Some(a) = self.askers.get(port as usize) else {
            return;
        };
        let (v6, addr) = unkey(key);
        let Some(src) = source_among(&a.addrs, v6, addr) else {
            return;
        };
        let req = Request::new(a.mac, src, key, None);
        // Told only once the request is queued: a neighbour whose request
        // did not fit is the slow path's to ask for. One that fits but
        // cannot be told is asked for twice: harmless.
        if !r.inject(self.worker, port, req.frame()) {
            return;
        }
        r.asked(port, key);
        r.counters.inc(if req.is_v6() {
            Counter::NsOut
        } else {
            Counter::ArpRequestsOut
        });
        self.asked.note(port, key);
    }
}
