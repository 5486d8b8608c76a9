//! Frames one worker hands another: with connection tracking on several
//! workers, a packet of a connection another worker tracks goes to that
//! worker ([`crate::conntrack::owner`]).
//!
//! They go a burst at a time: a worker fills one [`Batch`] per worker it
//! hands to while it tracks a burst, and queues each once the burst is
//! tracked; the owner runs a batch as a burst of its own. One frame a
//! queue operation, on queues and a pool that every worker shares, left
//! two workers at a third of one worker's rate (6.5 Mpps against 17.6 on
//! the example's synthetic ports, medians of 9 alternating rounds,
//! 2026-12-06: the queues' atomics a third of the time); a queue
//! operation a burst is paid once for up to 64 frames (13.0 Mpps, 2.1x).

use crate::port::{FRAME_CAP, MAX_BURST};
use crossbeam_queue::ArrayQueue;

/// Batches waiting for each worker: room for 1,024 frames, as a frame a
/// slot had before.
pub const QUEUED: usize = 1024 / MAX_BURST;

/// The frames of one burst handed to one worker. Its own buffers, not a
/// [`crate::port::Burst`]: a burst may point into a port's memory (zero
/// copy) and stays with its worker.
pub struct Batch {
    /// The port the burst came in on.
    port: u16,
    /// Frames held.
    n: usize,
    /// Each frame's length, and its index in the burst it was handed
    /// from (for its sender, should the batch find no room).
    len: [u16; MAX_BURST],
    index: [u8; MAX_BURST],
    data: Box<[[u8; FRAME_CAP]]>,
}

impl Batch {
    fn new() -> Box<Batch> {
        Box::new(Batch {
            port: 0,
            n: 0,
            len: [0; MAX_BURST],
            index: [0; MAX_BURST],
            data: vec![[0; FRAME_CAP]; MAX_BURST].into_boxed_slice(),
        })
    }

    /// Adds `frame` (packet `index` of its burst); false when the batch
    /// is full (never within one burst: a batch holds a burst's worth).
    pub fn push(&mut self, frame: &[u8], index: usize) -> bool {
        let Some(d) = self.data.get_mut(self.n) else {
            return false;
        };
        let k = frame.len().min(FRAME_CAP);
        d[..k].copy_from_slice(&frame[..k]);
        self.len[self.n] = k as u16;
        self.index[self.n] = index.min(u8::MAX as usize) as u8;
        self.n += 1;
        true
    }

    /// How many frames it holds.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The port its frames came in on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its frames.
    pub fn frames(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.n).map(|i| &self.data[i][..self.len[i] as usize])
    }

    /// The indexes its frames had in the sender's burst.
    pub fn indexes(&self) -> impl Iterator<Item = usize> + '_ {
        self.index[..self.n].iter().map(|&i| i as usize)
    }
}

/// The queues of batches, one per worker, and their pool.
pub struct Handoff {
    queues: Vec<ArrayQueue<Box<Batch>>>,
    free: ArrayQueue<Box<Batch>>,
}

impl Handoff {
    /// Queues for `workers` workers (none with one: nothing is handed)
    /// and enough batches to fill them while every worker also holds one
    /// for every other.
    pub fn new(workers: usize) -> Handoff {
        if workers < 2 {
            return Handoff {
                queues: vec![ArrayQueue::new(1)],
                free: ArrayQueue::new(1),
            };
        }
        let n = (QUEUED + workers) * workers;
        let free = ArrayQueue::new(n);
        for _ in 0..n {
            let _ = free.push(Batch::new());
        }
        Handoff {
            queues: (0..workers).map(|_| ArrayQueue::new(QUEUED)).collect(),
            free,
        }
    }

    /// How many workers it serves.
    pub fn workers(&self) -> usize {
        self.queues.len()
    }

    /// An empty batch from the pool for frames received on `port`, if
    /// one is left.
    pub fn batch(&self, port: u16) -> Option<Box<Batch>> {
        let mut b = self.free.pop()?;
        b.port = port;
        Some(b)
    }

    /// Queues `b` for worker `to`; gives it back if its queue is full.
    pub fn send(&self, to: usize, b: Box<Batch>) -> Result<(), Box<Batch>> {
        match self.queues.get(to) {
            Some(q) => q.push(b),
            None => Err(b),
        }
    }

    /// The next batch handed to worker `q`.
    pub fn take(&self, q: usize) -> Option<Box<Batch>> {
        self.queues.get(q)?.pop()
    }

    /// Whether anything waits for worker `q`.
    pub fn waiting(&self, q: usize) -> bool {
        self.queues.get(q).is_some_and(|x| !x.is_empty())
    }

    /// A batch back to the pool, emptied.
    pub fn done(&self, mut b: Box<Batch>) {
        b.n = 0;
        let _ = self.free.push(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches carry their frames whole, in order, between threads, and
    /// the pool gets every one back.
    #[test]
    fn batches_go_whole_and_come_back() {
        let h = std::sync::Arc::new(Handoff::new(2));
        let pooled = h.free.len();
        let sender = {
            let h = h.clone();
            std::thread::spawn(move || {
                let mut sent = 0u32;
                while sent < 2000 {
                    let Some(mut b) = h.batch((sent % 3) as u16) else {
                        std::thread::yield_now();
                        continue;
                    };
                    for i in 0..(sent % MAX_BURST as u32) as usize + 1 {
                        let f = [(sent % 251) as u8; 100];
                        assert!(b.push(&f[..60 + i % 40], i));
                    }
                    while let Err(back) = h.send(1, b) {
                        b = back;
                        std::thread::yield_now();
                    }
                    sent += 1;
                }
            })
        };
        let mut got = 0u32;
        while got < 2000 {
            let Some(b) = h.take(1) else {
                std::thread::yield_now();
                continue;
            };
            assert_eq!(b.len(), (got % MAX_BURST as u32) as usize + 1);
            assert_eq!(b.port(), (got % 3) as u16);
            for (i, (f, ix)) in b.frames().zip(b.indexes()).enumerate() {
                assert_eq!((ix, f.len()), (i, 60 + i % 40));
                assert!(f.iter().all(|&x| x == (got % 251) as u8));
            }
            h.done(b);
            got += 1;
        }
        sender.join().unwrap();
        assert_eq!(h.free.len(), pooled);
        assert!(h.take(0).is_none() && h.take(1).is_none());
    }

    /// A full batch refuses more; one worker has nothing to hand.
    #[test]
    fn full_batches_and_one_worker() {
        let h = Handoff::new(2);
        let mut b = h.batch(0).unwrap();
        for i in 0..MAX_BURST {
            assert!(b.push(&[1; 64], i));
        }
        assert!(!b.push(&[1; 64], 0));
        assert_eq!(b.len(), MAX_BURST);
        h.done(b);
        let one = Handoff::new(1);
        assert!(one.batch(0).is_none());
        assert_eq!(one.workers(), 1);
    }
}
