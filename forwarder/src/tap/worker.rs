//! The worker's side of the taps: a burst run with the armed captures
//! and live traces served. Out of line and cold: a worker comes here only
//! while something is armed.

use super::{Direction, Frames, Session, Taps, Work, MAX_TAPS};
use crate::pipeline::{Pipeline, Snapshot, Stages};
use crate::port::{Burst, MAX_BURST};
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;

/// What a worker keeps for the taps: the slot it is filling for each
/// capture (kept across bursts, handed over when full or
/// [`super::FLUSH_NS`] old), and its records for live traces (allocated
/// the first time a trace reaches it; nothing while nothing is armed).
pub struct WorkerTaps {
    held: Vec<(Arc<Session>, Box<Frames>)>,
    records: Vec<Stages>,
    /// The armed sessions as of [`Taps::changes`] `seen` (`None`: not
    /// loaded yet).
    sessions: Option<(u64, Arc<Vec<Arc<Session>>>)>,
    /// The clock as first read in this turn (0: not read yet; [`turn`]
    /// clears it): the time of the frames the turn copies.
    now: u64,
    /// Turns while holding slots, to look at their age every
    /// [`AGE_EVERY`] turns.
    ticks: u32,
}

/// How many turns apart a worker that holds slots reads the clock for
/// their age: a turn takes from about 100 ns (idle) to a few
/// microseconds, far below [`super::FLUSH_NS`], while a reading of the
/// clock costs tens of nanoseconds (about 50 on this guest).
const AGE_EVERY: u32 = 64;

impl Default for WorkerTaps {
    fn default() -> Self {
        WorkerTaps {
            held: Vec::with_capacity(MAX_TAPS),
            records: Vec::new(),
            sessions: None,
            now: 0,
            ticks: 0,
        }
    }
}

impl WorkerTaps {
    /// The armed sessions, taken out of `self` (put them back with
    /// [`WorkerTaps::keep`]): the worker's own hold, loaded again only
    /// when they changed. Neither touches a count other workers touch.
    #[inline]
    fn sessions(&mut self, taps: &Taps) -> (u64, Arc<Vec<Arc<Session>>>) {
        let now = taps.changes.load(Acquire);
        match self.sessions.take() {
            Some((seen, list)) if seen == now => (seen, list),
            _ => (now, taps.sessions().clone()),
        }
    }

    #[inline]
    fn keep(&mut self, sessions: (u64, Arc<Vec<Arc<Session>>>)) {
        self.sessions = Some(sessions);
    }

    /// Whether it holds anything of a session (slots, or the list).
    #[inline]
    pub fn holds(&self) -> bool {
        self.sessions.is_some()
    }

    /// Nothing is armed any more: lets go of what it held (the slots go
    /// back to their rings, the sessions' memory is freed with their last
    /// hold).
    #[cold]
    #[inline(never)]
    pub fn let_go(&mut self, q: usize) {
        self.hand_over(q);
        self.sessions = None;
    }

    /// Hands over every slot it holds (worker `q`'s), filled or not.
    pub fn hand_over(&mut self, q: usize) {
        self.flush(q, 0, true);
    }

    /// Hands over the slots begun before `now - FLUSH_NS` (all with
    /// `all`), and gives back those of captures that ended.
    fn flush(&mut self, q: usize, now: u64, all: bool) {
        let mut i = 0;
        while i < self.held.len() {
            let (s, f) = &self.held[i];
            let done = s.done.load(Relaxed);
            if !done && !all && now.saturating_sub(f.time_ns) < super::FLUSH_NS {
                i += 1;
                continue;
            }
            let (s, b) = self.held.swap_remove(i);
            let Work::Capture { rings, .. } = &s.work else {
                continue;
            };
            let Some(ring) = rings.get(q).or(rings.first()) else {
                continue;
            };
            // The slot goes back to its ring either way: empty or of an
            // ended capture to its pool, filled to the writer. (The last
            // hold on an ended capture may be this one: it is then freed
            // here, once a capture.)
            let mut b = b;
            if done || b.is_empty() {
                ring.give_back(b);
            } else {
                b.seal();
                ring.put(b);
            }
        }
    }
}

#[inline]
fn bit(port: u16) -> u64 {
    1u64.checked_shl(port as u32).unwrap_or(0)
}

/// One received burst through the pipeline, as a worker runs it: `armed`
/// is the turn's reading of [`Taps::armed`]; while it is 0 (nothing
/// armed) this is [`Pipeline::process`] and one test.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn run_burst(
    taps: &Taps,
    armed: usize,
    q: usize,
    pipe: &mut Pipeline,
    tables: &Snapshot,
    burst: &mut Burst,
    rx: u16,
    mine: &mut WorkerTaps,
) {
    if armed == 0 {
        pipe.process(tables, burst);
    } else {
        tapped(taps, q, pipe, tables, burst, rx, mine);
    }
}

/// What a capture may still copy of the burst being run.
#[derive(Clone, Copy)]
struct Budget {
    /// Frames it may still copy.
    left: u32,
    /// Its ring had no free slot: no more tries this burst.
    dry: bool,
}

impl Budget {
    fn of(s: &Session) -> Budget {
        let per_burst = match &s.work {
            Work::Capture { per_burst, .. } => *per_burst,
            Work::Trace { .. } => 0,
        };
        Budget {
            left: if per_burst == 0 { u32::MAX } else { per_burst },
            dry: false,
        }
    }
}

/// Copies the frames `frames` yields that pass capture `s`'s filter (as
/// received on `iif`) into the slot worker `q` fills for it, out of or
/// into `port`, taking a fresh slot when it is full, within `budget`;
/// counts those it did not keep, once. Past the budget, or once the ring
/// is dry, frames that pass the filter are counted, not copied.
#[allow(clippy::too_many_arguments)]
fn copy<'f>(
    mine: &mut WorkerTaps,
    s: &Arc<Session>,
    q: usize,
    frames: impl ExactSizeIterator<Item = &'f [u8]>,
    iif: u16,
    port: u16,
    dir: Direction,
    budget: &mut Budget,
) {
    let Work::Capture { rings, snaplen, .. } = &s.work else {
        return;
    };
    let Some(ring) = rings.get(q).or(rings.first()) else {
        return;
    };
    let mut at = mine.held.iter().position(|(h, _)| Arc::ptr_eq(h, s));
    let mut lost = 0;
    let mut now = mine.now;
    let all = s.filter.is_empty();
    let mut frames = frames;
    while let Some(f) = frames.next() {
        if all && (budget.left == 0 || budget.dry) {
            // Everything is asked for and nothing more is kept: the
            // rest are lost, counted at once (looked at one by one, they
            // cost a full-rate capture 3 % of the forwarding rate).
            lost += 1 + frames.len() as u64;
            break;
        }
        // The filter first, even past the budget: what is counted lost
        // is what the capture asked for and did not get.
        if !s.filter.matches(f, iif) {
            continue;
        }
        if budget.left == 0 || budget.dry {
            lost += 1;
            continue;
        }
        if now == 0 {
            // The turn's first copy: its one reading of the clock.
            now = crate::clock::unix_ns();
            mine.now = now;
        }
        budget.left -= 1;
        if let Some(i) = at {
            if mine.held[i].1.push(f, port, dir, *snaplen, now) {
                continue;
            }
            // Full: to the writer, and on with a fresh one.
            let (_, mut b) = mine.held.swap_remove(i);
            b.seal();
            ring.put(b);
            at = None;
        }
        match ring.slot() {
            Some(mut b) if mine.held.len() < mine.held.capacity() => {
                b.clear();
                if b.push(f, port, dir, *snaplen, now) {
                    mine.held.push((s.clone(), b));
                    at = Some(mine.held.len() - 1);
                } else {
                    ring.give_back(b);
                    lost += 1;
                }
            }
            Some(b) => {
                ring.give_back(b);
                lost += 1;
            }
            None => {
                budget.dry = true;
                lost += 1;
            }
        }
    }
    s.lose(port, lost);
}

/// Runs `burst` (received on port `rx` by worker `q`) through `pipe`
/// with the armed taps served: received frames copied as they came in,
/// a live trace's packets explained (the pipeline's explaining run: the
/// same stages, counters and caches), sent frames copied as they leave,
/// frames not forwarded copied with why. Each capture copies at most its
/// per-burst budget of the burst (received, sent and dropped together)
/// into the slot the worker holds for it.
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
    let held = mine.sessions(taps);
    let sessions = &held.1;
    let n = burst.len();
    let mut budgets = [Budget { left: 0, dry: true }; MAX_TAPS];
    let mut drops = false;
    for (k, s) in sessions.iter().enumerate().take(MAX_TAPS) {
        if s.done.load(Relaxed) {
            continue;
        }
        if let Work::Capture {
            rx: m, drops: d, ..
        } = &s.work
        {
            budgets[k] = Budget::of(s);
            drops |= d & bit(rx) != 0;
            if m & bit(rx) != 0 {
                let frames = (0..n).map(|i| burst.frame(i));
                copy(mine, s, q, frames, rx, rx, Direction::Rx, &mut budgets[k]);
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
                if mine.now == 0 {
                    mine.now = crate::clock::unix_ns();
                }
                let now = mine.now;
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
                        None => s.lose(0, 1),
                    }
                }
            }
        }
        None => pipe.process(tables, burst),
    }
    for (k, s) in sessions.iter().enumerate().take(MAX_TAPS) {
        let Work::Capture { tx, drops, .. } = &s.work else {
            continue;
        };
        if s.done.load(Relaxed) {
            continue;
        }
        let (tx, drops, budget) = (*tx, *drops, &mut budgets[k]);
        for (p, list) in pipe.out.iter().enumerate() {
            if tx & bit(p as u16) != 0 && !list.is_empty() {
                let frames = list.iter().map(|&i| burst.frame(i as usize));
                copy(mine, s, q, frames, rx, p as u16, Direction::Tx, budget);
            }
        }
        if drops & bit(rx) != 0 {
            // A frame not forwarded was never rewritten: these are its
            // bytes as received. (One reason a frame: the copy goes with
            // its own direction.)
            for i in 0..n {
                if let Some(d) = pipe.dropped_reason(i) {
                    let dir = Direction::Drop(d, pipe.was_punted(i));
                    copy(
                        mine,
                        s,
                        q,
                        std::iter::once(burst.frame(i)),
                        rx,
                        rx,
                        dir,
                        budget,
                    );
                }
            }
        }
    }
    mine.keep(held);
}

/// The start of a turn of worker `q` while taps are armed. The clock is
/// read at the turn's first copy, once (the time of a frame is its
/// turn's, a few microseconds at most; a turn that copies nothing reads
/// nothing). Every [`AGE_EVERY`] turns while it holds slots, it hands
/// over those begun more than [`super::FLUSH_NS`] ago (the frames of a
/// capture whose port went quiet still reach the writer), and those of
/// ended captures.
#[cold]
#[inline(never)]
pub fn turn(q: usize, mine: &mut WorkerTaps) {
    mine.now = 0;
    if mine.held.is_empty() {
        return;
    }
    mine.ticks = mine.ticks.wrapping_add(1);
    if mine.ticks.is_multiple_of(AGE_EVERY) {
        let now = crate::clock::unix_ns();
        mine.now = now;
        mine.flush(q, now, false);
    }
}

/// The frames the slow path had worker `q` send out of `port` (`which`
/// of `burst`), copied for the captures of that port's sent frames (a
/// filter's `iif` is that port: they came in on none).
#[cold]
#[inline(never)]
pub fn injected(
    taps: &Taps,
    q: usize,
    burst: &Burst,
    which: &[u8],
    port: u16,
    mine: &mut WorkerTaps,
) {
    let held = mine.sessions(taps);
    for s in held.1.iter().filter(|s| !s.done.load(Relaxed)) {
        if let Work::Capture { tx, .. } = &s.work {
            if tx & bit(port) != 0 {
                let frames = which.iter().map(|&i| burst.frame(i as usize));
                copy(
                    mine,
                    s,
                    q,
                    frames,
                    port,
                    port,
                    Direction::Tx,
                    &mut Budget::of(s),
                );
            }
        }
    }
    mine.keep(held);
}
