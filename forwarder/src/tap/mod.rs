//! Taps on the data path: captures (`forwarder capture`) and live traces
//! (`forwarder trace --live`), armed by the control side, served by the
//! workers, collected off the fast path.
//!
//! While nothing is armed a worker reads one counter a turn
//! ([`Taps::armed`]) and tests it once a burst; nothing else of this
//! module runs. While a tap is armed, bursts go through [`worker::tapped`]:
//! frames are copied into a ring of preallocated slots each worker has
//! of its own for the session ([`Ring`]: a bounded pool and a bounded
//! queue, nothing allocated per packet; a capture's slot takes a whole
//! burst, so that a burst costs one slot taken and handed over), and a
//! thread of the control side empties the rings (pcapng for a capture,
//! each record described for a trace). A full ring loses the copies,
//! counted; forwarding never waits.

pub mod capture;
mod lines;
pub mod worker;

use crate::filter::Filter;
use crate::pipeline::Stages;
use crate::port::{FRAME_CAP, MAX_BURST};
use crate::reason::DropReason;
use arc_swap::ArcSwap;
use crossbeam_queue::ArrayQueue;
use crossbeam_utils::CachePadded;
pub use lines::Line;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Arc, Mutex};

/// Slots a worker's ring of a capture has by default: 16 of 1,024
/// frames (16,384 minimum-size frames, about 0.5 ms of a worker's full
/// rate to ride out the writer's pauses), 4.5 MiB a worker.
pub const CAPTURE_SLOTS: usize = 16;
/// Captures and live traces armed at once, at most: a worker holds a
/// slot of each capture while it runs a burst.
pub const MAX_TAPS: usize = 8;
/// Frames of a burst a worker copies for a capture, by default: bursts of
/// up to 8 frames (traffic below a worker's full rate) are kept whole;
/// of a full burst of 64, the first 8, and the rest counted as not kept.
/// What that costs forwarding at full rate, and what copying every frame
/// does: `bench forward`'s `+capture` variants (BENCHMARKS.md).
pub const PER_BURST: u32 = 8;
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

/// One captured frame of a [`Frames`]: where it is and what it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The port it was received on or sent out of.
    pub port: u16,
    /// Which way.
    pub dir: Direction,
    /// Its length on the wire.
    pub len: u16,
    /// Bytes kept (at most the snap length).
    pub kept: u16,
    /// Its first line in the slot.
    at: u32,
    /// When it was received or sent (nanoseconds since the Unix epoch).
    pub time_ns: u64,
}

impl Direction {
    fn code(self) -> u16 {
        match self {
            Direction::Rx => 0,
            Direction::Tx => 1,
            Direction::Drop(d, punted) => 2 + 2 * d.index() as u16 + punted as u16,
        }
    }

    fn of(code: u16) -> Direction {
        match code {
            0 => Direction::Rx,
            1 => Direction::Tx,
            c => Direction::Drop(
                DropReason::ALL[((c - 2) / 2) as usize % DropReason::COUNT],
                (c - 2) % 2 == 1,
            ),
        }
    }
}

/// A run of captured frames (received, sent, not forwarded) one after
/// another, from as many bursts as fill it or [`FLUSH_NS`]: a worker
/// keeps its slot across bursts, so that the cost of taking and handing
/// over a slot is spread over many frames. Its lines (the frames' bytes,
/// their entries) are written with streaming stores: the writer on
/// another core read them last, and ordinary stores would fetch each
/// back first (`bench forward`'s `+capture`: half the rate without
/// them).
pub struct Frames {
    /// When its first frame came (nanoseconds since the Unix epoch).
    pub time_ns: u64,
    count: usize,
    /// The entries being packed into a line.
    stage: Line,
    /// The entries, 16 bytes each, four a line.
    index: Vec<Line>,
    /// The frames' bytes, each from the start of a line.
    lines: Vec<Line>,
    used: usize,
}

/// Frames a slot holds: sixteen bursts.
pub const SLOT_FRAMES: usize = 16 * MAX_BURST;
/// Lines a slot holds: four lines a frame (128 full-size frames).
pub const SLOT_LINES: usize = SLOT_FRAMES * 4;
const _: () = assert!(SLOT_LINES * 64 >= 64 * FRAME_CAP);
/// The longest a worker keeps a slot it has begun before handing it
/// over, so that a capture's frames reach the writer within a
/// millisecond or so even when few come.
pub const FLUSH_NS: u64 = 1_000_000;

impl Frames {
    fn new() -> Box<Frames> {
        Box::new(Frames {
            time_ns: 0,
            count: 0,
            stage: Line([0; 64]),
            index: vec![Line([0; 64]); SLOT_FRAMES / 4],
            lines: vec![Line([0; 64]); SLOT_LINES],
            used: 0,
        })
    }

    /// How many frames it holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The frames, in order (once [`Frames::seal`]ed).
    pub fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        (0..self.count).map(|i| {
            let b = &self.index[i / 4].0[(i % 4) * 16..(i % 4) * 16 + 16];
            let u16_at = |k: usize| u16::from_le_bytes([b[k], b[k + 1]]);
            let u32_at = |k: usize| u32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
            Entry {
                port: u16_at(0),
                dir: Direction::of(u16_at(2)),
                len: u16_at(4),
                kept: u16_at(6),
                at: u32_at(8),
                time_ns: self.time_ns + u32_at(12) as u64,
            }
        })
    }

    /// Frame `e`'s bytes.
    pub fn bytes(&self, e: &Entry) -> &[u8] {
        let first = e.at as usize;
        let n = (e.kept as usize).div_ceil(64);
        let lines = self.lines.get(first..first + n).unwrap_or(&[]);
        let all = lines::as_bytes(lines);
        &all[..(e.kept as usize).min(all.len())]
    }

    /// Appends `f` unless the slot is full (nothing allocates); false if
    /// it is.
    #[inline]
    pub fn push(
        &mut self,
        f: &[u8],
        port: u16,
        dir: Direction,
        snaplen: u16,
        time_ns: u64,
    ) -> bool {
        let kept = f.len().min(snaplen as usize);
        let n = kept.div_ceil(64);
        if self.count == SLOT_FRAMES || self.used + n > self.lines.len() {
            return false;
        }
        if self.count == 0 {
            self.time_ns = time_ns;
        }
        let k = (self.count % 4) * 16;
        let e = &mut self.stage.0[k..k + 16];
        e[0..2].copy_from_slice(&port.to_le_bytes());
        e[2..4].copy_from_slice(&dir.code().to_le_bytes());
        e[4..6].copy_from_slice(&(f.len() as u16).to_le_bytes());
        e[6..8].copy_from_slice(&(kept as u16).to_le_bytes());
        e[8..12].copy_from_slice(&(self.used as u32).to_le_bytes());
        let dt = time_ns.saturating_sub(self.time_ns).min(u32::MAX as u64) as u32;
        e[12..16].copy_from_slice(&dt.to_le_bytes());
        self.count += 1;
        if self.count.is_multiple_of(4) {
            let at = self.count / 4 - 1;
            lines::stream(&mut self.index[at..at + 1], &self.stage.0);
        }
        lines::stream(&mut self.lines[self.used..self.used + n], &f[..kept]);
        self.used += n;
        true
    }

    /// Writes out the entries still being packed and makes every
    /// streaming store visible, before the slot is handed over (they are
    /// not ordered by the queue's release).
    #[inline]
    pub fn seal(&mut self) {
        if !self.count.is_multiple_of(4) {
            let at = self.count / 4;
            let stage = self.stage.0;
            lines::stream(&mut self.index[at..at + 1], &stage);
        }
        lines::fence();
    }

    /// Empties it for reuse.
    pub fn clear(&mut self) {
        self.count = 0;
        self.used = 0;
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
        /// Frames a worker copies of one burst, at most (0: all): at full
        /// rate a capture samples each burst's first frames and counts
        /// the rest as not kept, so that forwarding keeps its rate; below
        /// it (bursts this short) it keeps every frame.
        per_burst: u32,
        /// Per worker.
        rings: Vec<Ring<Frames>>,
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
    /// Frames or records handed to the consumer (on a line of its own:
    /// the consumer writes it while the workers read `done` and `work`).
    pub taken: CachePadded<AtomicU64>,
    /// Set by the consumer when it is done (the workers stop at once).
    pub done: AtomicBool,
    /// Copies not kept, per port (a trace's at 0): a ring was full, or
    /// the burst was over the worker's budget ([`Work::Capture`]'s
    /// `per_burst`).
    pub lost: Vec<AtomicU64>,
}

impl Session {
    /// A capture of `rx`, `tx` and `drops` (port bit masks) for
    /// `workers` workers, `slots` frames a worker.
    pub fn capture(
        filter: Filter,
        (rx, tx, drops): (u64, u64, u64),
        (snaplen, per_burst): (u16, u32),
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
                per_burst,
                rings: (0..workers.max(1))
                    .map(|_| Ring::new(slots, Frames::new))
                    .collect(),
            },
            taken: CachePadded::new(AtomicU64::new(0)),
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
            taken: CachePadded::new(AtomicU64::new(0)),
            done: AtomicBool::new(false),
        }
    }

    /// Copies lost, all ports.
    pub fn lost(&self) -> u64 {
        self.lost.iter().map(|l| l.load(Relaxed)).sum()
    }

    /// Worker side: `n` copies lost on `port`.
    #[inline]
    pub fn lose(&self, port: u16, n: u64) {
        if n == 0 {
            return;
        }
        if let Some(l) = self.lost.get(port as usize).or(self.lost.first()) {
            l.fetch_add(n, Relaxed);
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
    /// Bumped each time `sessions` is replaced: a worker keeps its own
    /// hold on the list and loads it again only when this moved (one
    /// plain load a burst, where loading the list is two fenced writes).
    pub changes: AtomicU64,
    change: Mutex<u64>,
    /// Totals over ended sessions and counted as they go: captures and
    /// traces started, frames written, frames lost, packets traced,
    /// records lost. On lines of their own: the writers count while every
    /// worker reads `armed` a turn, and a line both touch would move
    /// between their cores.
    pub totals: CachePadded<TapTotals>,
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

    /// Arms `s`; returns it numbered, or why not (too many armed).
    pub fn arm(&self, mut s: Session) -> Result<Arc<Session>, String> {
        let mut n = self.change.lock().unwrap_or_else(|e| e.into_inner());
        if self.sessions.load().len() >= MAX_TAPS {
            return Err(format!(
                "{MAX_TAPS} captures and live traces are armed already: end one first"
            ));
        }
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
        self.changes.fetch_add(1, Release);
        Ok(s)
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
        self.changes.fetch_add(1, Release);
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
