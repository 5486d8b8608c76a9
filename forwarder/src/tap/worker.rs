//! The worker's side of the taps: a burst run with the armed captures
//! and live traces served. Out of line and cold: a worker comes here only
//! while something is armed.

use super::{Direction, Session, Taps, Work};
use crate::pipeline::{Pipeline, Snapshot, Stages};
use crate::port::{Burst, MAX_BURST};
use std::sync::atomic::Ordering::Relaxed;

/// What a worker keeps for the taps: its records for live traces,
/// allocated the first time a trace reaches it (never while nothing is
/// armed).
#[derive(Default)]
pub struct WorkerTaps {
    records: Vec<Stages>,
}

/// Now, in nanoseconds since the Unix epoch (one reading a burst).
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

#[inline]
fn bit(port: u16) -> u64 {
    1u64.checked_shl(port as u32).unwrap_or(0)
}

/// Copies `f` into a slot of worker `q`'s ring of `s`, or counts it lost.
fn copy(s: &Session, q: usize, f: &[u8], port: u16, dir: Direction, time_ns: u64) {
    let Work::Capture { rings, snaplen, .. } = &s.work else {
        return;
    };
    let Some(ring) = rings.get(q).or(rings.first()) else {
        return;
    };
    let Some(mut slot) = ring.slot() else {
        s.lose(port);
        return;
    };
    let kept = f.len().min(*snaplen as usize).min(slot.data.len());
    slot.data[..kept].copy_from_slice(&f[..kept]);
    slot.time_ns = time_ns;
    slot.port = port;
    slot.dir = dir;
    slot.len = f.len() as u16;
    slot.kept = kept as u16;
    ring.put(slot);
}

/// Runs `burst` (received on port `rx` by worker `q`) through `pipe`
/// with the armed taps served: received frames copied as they came in,
/// a live trace's packets explained (the pipeline's explaining run: the
/// same stages, counters and caches), sent frames copied as they leave,
/// frames not forwarded copied with why.
#[cold]
#[inline(never)]
pub fn tapped(
    taps: &Taps,
    q: usize,
    pipe: &mut Pipeline,
    tables: &Snapshot,
    burst: &mut Burst,
    rx: u16,
    mine: &mut WorkerTaps,
) {
    let sessions = taps.sessions();
    let now = now_ns();
    let n = burst.len();
    let mut drops = false;
    for s in sessions.iter().filter(|s| !s.done.load(Relaxed)) {
        if let Work::Capture {
            rx: m, drops: d, ..
        } = &s.work
        {
            drops |= d & bit(rx) != 0;
            if m & bit(rx) != 0 {
                for i in 0..n {
                    let f = burst.frame(i);
                    if s.filter.matches(f, rx) {
                        copy(s, q, f, rx, Direction::Rx, now);
                    }
                }
            }
        }
    }
    // A live trace of this port: which packets pass its filter, judged on
    // the frames as they came in.
    let trace = sessions.iter().find(|s| {
        !s.done.load(Relaxed)
            && matches!(&s.work, Work::Trace { port, left, .. } if *port == rx && left.load(Relaxed) > 0)
    });
    if drops {
        pipe.clear_punted();
    }
    match trace {
        Some(s) => {
            let mut wanted = 0u64;
            for i in 0..n {
                if s.filter.matches(burst.frame(i), rx) {
                    wanted |= 1 << i;
                }
            }
            if mine.records.len() < MAX_BURST {
                mine.records = vec![Stages::default(); MAX_BURST];
            }
            pipe.explain(tables, burst, &mut mine.records);
            if let Work::Trace { left, rings, .. } = &s.work {
                for (i, r) in mine.records.iter_mut().enumerate().take(n) {
                    if wanted >> i & 1 == 0 || left.fetch_sub(1, Relaxed) <= 0 {
                        continue;
                    }
                    r.time_ns = now;
                    match rings
                        .get(q)
                        .or(rings.first())
                        .and_then(|ring| ring.slot().map(|s| (ring, s)))
                    {
                        Some((ring, mut slot)) => {
                            *slot = *r;
                            ring.put(slot);
                        }
                        None => s.lose(0),
                    }
                }
            }
        }
        None => pipe.process(tables, burst),
    }
    for s in sessions.iter().filter(|s| !s.done.load(Relaxed)) {
        let Work::Capture { tx, drops, .. } = &s.work else {
            continue;
        };
        for (p, list) in pipe.out.iter().enumerate() {
            if tx & bit(p as u16) == 0 {
                continue;
            }
            for &i in list {
                let f = burst.frame(i as usize);
                if s.filter.matches(f, rx) {
                    copy(s, q, f, p as u16, Direction::Tx, now);
                }
            }
        }
        if drops & bit(rx) != 0 {
            // A frame not forwarded was never rewritten: these are its
            // bytes as received.
            for i in 0..n {
                if let Some(d) = pipe.dropped_reason(i) {
                    let f = burst.frame(i);
                    if s.filter.matches(f, rx) {
                        copy(s, q, f, rx, Direction::Drop(d, pipe.was_punted(i)), now);
                    }
                }
            }
        }
    }
}

/// The frames the slow path had worker `q` send out of `port` (`which`
/// of `burst`), copied for the captures of that port's sent frames (a
/// filter's `iif` is that port: they came in on none).
#[cold]
#[inline(never)]
pub fn injected(taps: &Taps, q: usize, burst: &Burst, which: &[u8], port: u16) {
    let sessions = taps.sessions();
    let now = now_ns();
    for s in sessions.iter().filter(|s| !s.done.load(Relaxed)) {
        if let Work::Capture { tx, .. } = &s.work {
            if tx & bit(port) != 0 {
                for &i in which {
                    let f = burst.frame(i as usize);
                    if s.filter.matches(f, port) {
                        copy(s, q, f, port, Direction::Tx, now);
                    }
                }
            }
        }
    }
}
