//! Taps on the data path: captures (`forwarder capture`) and live traces
//! (`forwarder trace --live`), armed by the control side, served by the
//! workers, collected off the fast path.
//!
//! While nothing is armed a worker reads one counter a turn
//! ([`Taps::armed`]) and tests it once a burst; nothing else of this
//! module runs. While a tap is armed, bursts go through [`worker::tapped`]:
//! frames are copied into a ring of preallocated slots each worker has
//! of its own for the session ([`Ring`]: a bounded pool and a bounded
//! queue, nothing allocated per packet), and a thread of the control side
//! empties the rings (pcapng for a capture, each record described for a
//! trace). A full ring loses the copy, counted; forwarding never waits.

pub mod capture;
pub mod worker;

use crate::filter::Filter;
use crate::pipeline::Stages;
use crate::port::FRAME_CAP;
use crate::reason::DropReason;
use arc_swap::ArcSwap;
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// Slots a worker's ring of a capture has by default: with 2 KiB frames,
/// 8 MiB a worker, about a millisecond of a worker's full rate to ride
/// out the writer's pauses.
pub const CAPTURE_SLOTS: usize = 4096;
/// Records a worker's ring of a live trace has.
pub const TRACE_SLOTS: usize = 64;

/// Why a frame was captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Received on the port.
    Rx,
    /// Sent out of the port.
    Tx,
    /// Received and not forwarded: dropped for this reason, `true` when
    /// handed to the slow path.
    Drop(DropReason, bool),
}

/// A captured frame.
pub struct Frame {
    /// When (nanoseconds since the Unix epoch).
    pub time_ns: u64,
    /// The port it was received on or sent out of.
    pub port: u16,
    /// Which way.
    pub dir: Direction,
    /// Its length on the wire.
    pub len: u16,
    /// Bytes kept (at most the snap length).
    pub kept: u16,
    /// The bytes.
    pub data: [u8; FRAME_CAP],
}

impl Frame {
    fn new() -> Box<Frame> {
        Box::new(Frame {
            time_ns: 0,
            port: 0,
            dir: Direction::Rx,
            len: 0,
            kept: 0,
            data: [0; FRAME_CAP],
        })
    }

    /// The bytes kept.
    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.kept as usize]
    }
}

/// One worker's ring of a session: slots to fill, slots filled. The
/// worker pops a free slot, fills it and pushes it filled; the consumer
/// pops a filled one and gives it back. Both queues are bounded and were
/// filled when the session was armed.
pub struct Ring<T> {
    free: ArrayQueue<Box<T>>,
    full: ArrayQueue<Box<T>>,
}

impl<T> Ring<T> {
    fn new(slots: usize, make: impl Fn() -> Box<T>) -> Ring<T> {
        let slots = slots.max(1);
        let free = ArrayQueue::new(slots);
        for _ in 0..slots {
            let _ = free.push(make());
        }
        Ring {
            free,
            full: ArrayQueue::new(slots),
        }
    }

    /// Worker side: a slot to fill, or `None` (the caller counts the
    /// copy lost).
    #[inline]
    pub fn slot(&self) -> Option<Box<T>> {
        self.free.pop()
    }

    /// Worker side: a filled slot.
    #[inline]
    pub fn put(&self, s: Box<T>) {
        // The two queues hold the same boxes between them: there is room.
        let _ = self.full.push(s);
    }

    /// Consumer side: the next filled slot.
    pub fn take(&self) -> Option<Box<T>> {
        self.full.pop()
    }

    /// Consumer side: a slot read, given back.
    pub fn give_back(&self, s: Box<T>) {
        let _ = self.free.push(s);
    }
}

/// What a session asks of the workers.
pub enum Work {
    /// Copy frames.
    Capture {
        /// Ports (a bit each) whose received frames are copied.
        rx: u64,
        /// Ports whose sent frames are copied.
        tx: u64,
        /// Ports whose received frames that are not forwarded are copied,
        /// with why.
        drops: u64,
        /// Bytes of a frame kept.
        snaplen: u16,
        /// Per worker.
        rings: Vec<Ring<Frame>>,
    },
    /// Trace packets received on a port.
    Trace {
        /// The port.
        port: u16,
        /// Packets still to trace (workers take them from here).
        left: AtomicI64,
        /// Per worker.
        rings: Vec<Ring<Stages>>,
    },
}

/// An armed capture or live trace.
pub struct Session {
    /// Its number (for messages).
    pub id: u64,
    /// Which packets.
    pub filter: Filter,
    /// What to do with them.
    pub work: Work,
    /// Frames or records handed to the consumer.
    pub taken: AtomicU64,
    /// Set by the consumer when it is done (the workers stop at once).
    pub done: AtomicBool,
    /// Copies lost because a ring was full, per port (a trace's at 0).
    pub lost: Vec<AtomicU64>,
}

impl Session {
    /// A capture of `rx`, `tx` and `drops` (port bit masks) for
    /// `workers` workers, `slots` frames a worker.
    pub fn capture(
        filter: Filter,
        (rx, tx, drops): (u64, u64, u64),
        snaplen: u16,
        (workers, ports): (usize, usize),
        slots: usize,
    ) -> Session {
        Session {
            lost: (0..ports.max(1)).map(|_| AtomicU64::new(0)).collect(),
            id: 0,
            filter,
            work: Work::Capture {
                rx,
                tx,
                drops,
                snaplen,
                rings: (0..workers.max(1))
                    .map(|_| Ring::new(slots, Frame::new))
                    .collect(),
            },
            taken: AtomicU64::new(0),
            done: AtomicBool::new(false),
        }
    }

    /// A live trace of `count` packets received on `port`.
    pub fn trace(filter: Filter, port: u16, count: u64, workers: usize) -> Session {
        Session {
            lost: vec![AtomicU64::new(0)],
            id: 0,
            filter,
            work: Work::Trace {
                port,
                left: AtomicI64::new(count.min(i64::MAX as u64) as i64),
                rings: (0..workers.max(1))
                    .map(|_| Ring::new(TRACE_SLOTS, || Box::new(Stages::default())))
                    .collect(),
            },
            taken: AtomicU64::new(0),
            done: AtomicBool::new(false),
        }
    }

    /// Copies lost, all ports.
    pub fn lost(&self) -> u64 {
        self.lost.iter().map(|l| l.load(Relaxed)).sum()
    }

    /// Worker side: a copy lost on `port`.
    #[inline]
    pub fn lose(&self, port: u16) {
        if let Some(l) = self.lost.get(port as usize).or(self.lost.first()) {
            l.fetch_add(1, Relaxed);
        }
    }
}

/// The taps every worker looks at: what is armed, and the counts
/// statistics report.
#[derive(Default)]
pub struct Taps {
    /// How many sessions are armed: 0 lets the workers skip everything
    /// else here.
    pub armed: AtomicUsize,
    sessions: ArcSwap<Vec<Arc<Session>>>,
    change: Mutex<u64>,
    /// Totals over ended sessions and counted as they go: captures and
    /// traces started, frames written, frames lost, packets traced,
    /// records lost.
    pub totals: TapTotals,
}

/// Counts of the taps, for `stats` and Prometheus.
#[derive(Default)]
pub struct TapTotals {
    /// Captures armed since the start.
    pub captures: AtomicU64,
    /// Frames captured and written.
    pub captured: AtomicU64,
    /// Frames a full ring lost.
    pub capture_lost: AtomicU64,
    /// Live traces armed since the start.
    pub traces: AtomicU64,
    /// Packets traced live.
    pub traced: AtomicU64,
    /// Records a full ring lost.
    pub trace_lost: AtomicU64,
}

impl Taps {
    /// The sessions armed now (workers load this only when `armed` is
    /// not 0).
    #[inline]
    pub fn sessions(&self) -> arc_swap::Guard<Arc<Vec<Arc<Session>>>> {
        self.sessions.load()
    }

    /// Arms `s`; returns it numbered.
    pub fn arm(&self, mut s: Session) -> Arc<Session> {
        let mut n = self.change.lock().unwrap_or_else(|e| e.into_inner());
        *n += 1;
        s.id = *n;
        match s.work {
            Work::Capture { .. } => self.totals.captures.fetch_add(1, Relaxed),
            Work::Trace { .. } => self.totals.traces.fetch_add(1, Relaxed),
        };
        let s = Arc::new(s);
        let mut v: Vec<Arc<Session>> = (**self.sessions.load()).clone();
        v.push(s.clone());
        self.armed.store(v.len(), Relaxed);
        self.sessions.store(Arc::new(v));
        s
    }

    /// Disarms `s` and counts what it lost.
    pub fn disarm(&self, s: &Arc<Session>) {
        s.done.store(true, Relaxed);
        let _g = self.change.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<Arc<Session>> = (**self.sessions.load()).clone();
        let before = v.len();
        v.retain(|x| !Arc::ptr_eq(x, s));
        if v.len() == before {
            return;
        }
        self.armed.store(v.len(), Relaxed);
        self.sessions.store(Arc::new(v));
        match s.work {
            Work::Capture { .. } => self.totals.capture_lost.fetch_add(s.lost(), Relaxed),
            Work::Trace { .. } => self.totals.trace_lost.fetch_add(s.lost(), Relaxed),
        };
    }

    /// The counts, with the armed sessions' losses so far.
    pub fn json(&self) -> serde_json::Value {
        let t = &self.totals;
        let live = self.sessions();
        let lost = |capture: bool| -> u64 {
            live.iter()
                .filter(|s| matches!(s.work, Work::Capture { .. }) == capture)
                .map(|s| s.lost())
                .sum()
        };
        let count = |capture: bool| {
            live.iter()
                .filter(|s| matches!(s.work, Work::Capture { .. }) == capture)
                .count()
        };
        serde_json::json!({
            "capture": {
                "armed": count(true),
                "started": t.captures.load(Relaxed),
                "frames": t.captured.load(Relaxed),
                "lost": t.capture_lost.load(Relaxed) + lost(true),
            },
            "trace": {
                "armed": count(false),
                "started": t.traces.load(Relaxed),
                "packets": t.traced.load(Relaxed),
                "lost": t.trace_lost.load(Relaxed) + lost(false),
            },
        })
    }
}

#[cfg(test)]
mod tests;
