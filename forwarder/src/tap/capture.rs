//! The consumer of a capture: a thread of the control side that empties
//! the workers' rings into a pcapng stream (the control socket's
//! connection to `forwarder capture`), until the count is reached, the
//! reader goes away or the forwarder stops; then it disarms the capture
//! and writes, per port, how many copies a full ring lost.

use super::{Direction, Session, Taps, Work};
use crate::pcap::write::Writer;
use crate::pcap::{INBOUND, OUTBOUND};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a capture ended.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Ended {
    /// Frames written.
    pub written: u64,
    /// Copies lost (rings full).
    pub lost: u64,
    /// Why it ended: `count`, `reader gone`, `stopped`.
    pub why: &'static str,
}

/// Whether the reader at the other end of `s` is gone (a read without
/// waiting finds the end of the stream or an error).
pub fn gone(s: &mut UnixStream) -> bool {
    if s.set_nonblocking(true).is_err() {
        return true;
    }
    let mut b = [0u8; 64];
    let r = match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    let _ = s.set_nonblocking(false);
    r
}

/// Writes capture `s` to `out` as pcapng, one interface block for each
/// of `ports` (index, name), until `count` frames (all when `None`), the
/// reader goes away or `stop` is set; disarms it in `taps`.
pub fn serve(
    taps: &Taps,
    s: Arc<Session>,
    ports: &[(u16, String)],
    count: Option<u64>,
    stop: &AtomicBool,
    out: &mut UnixStream,
) -> Ended {
    let mut end = Ended {
        why: "stopped",
        ..Ended::default()
    };
    let Work::Capture { rings, snaplen, .. } = &s.work else {
        taps.disarm(&s);
        return end;
    };
    let names: Vec<String> = ports.iter().map(|p| p.1.clone()).collect();
    let iface = |port: u16| ports.iter().position(|p| p.0 == port).map(|i| i as u32);
    let Ok(mut w) = out
        .try_clone()
        .map(|o| std::io::BufWriter::with_capacity(1 << 16, o))
        .and_then(|o| Writer::new(o, &names, *snaplen as u32))
    else {
        taps.disarm(&s);
        end.why = "reader gone";
        return end;
    };
    let mut idle = Instant::now();
    'outer: loop {
        let mut any = false;
        for ring in rings {
            while let Some(b) = ring.take() {
                any = true;
                let mut failed = false;
                let mut enough = false;
                let mut kept = 0;
                for e in b.entries() {
                    let (flags, comment) = match e.dir {
                        Direction::Rx => (INBOUND, None),
                        Direction::Tx => (OUTBOUND, None),
                        Direction::Drop(d, punted) => (
                            INBOUND,
                            Some(format!(
                                "{}: {}",
                                if punted { "punt" } else { "drop" },
                                d.name()
                            )),
                        ),
                    };
                    let Some(i) = iface(e.port) else { continue };
                    if w.packet(
                        i,
                        e.time_ns,
                        b.bytes(&e),
                        e.len as u32,
                        flags,
                        comment.as_deref(),
                    )
                    .is_err()
                    {
                        failed = true;
                        break;
                    }
                    end.written += 1;
                    kept += 1;
                    // The rest of the slot is not wanted: not lost.
                    if count.is_some_and(|c| end.written >= c) {
                        enough = true;
                        break;
                    }
                }
                ring.give_back(b);
                // Counted a slot at a time: the workers' lines stay theirs.
                s.taken.fetch_add(kept, Relaxed);
                taps.totals.captured.fetch_add(kept, Relaxed);
                if failed {
                    end.why = "reader gone";
                    break 'outer;
                }
                if enough {
                    end.why = "count";
                    break 'outer;
                }
            }
        }
        if stop.load(Relaxed) {
            break;
        }
        if any {
            idle = Instant::now();
            continue;
        }
        if w.flush().is_err() {
            end.why = "reader gone";
            break;
        }
        // Nothing came: is anyone still reading?
        if idle.elapsed() > Duration::from_millis(100) {
            idle = Instant::now();
            if gone(out) {
                end.why = "reader gone";
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    taps.disarm(&s);
    end.lost = s.lost();
    if end.why != "reader gone" {
        let now = crate::clock::unix_ns();
        for (i, (port, _)) in ports.iter().enumerate() {
            let lost = s
                .lost
                .get(*port as usize)
                .map(|l| l.load(Relaxed))
                .unwrap_or(0);
            let _ = w.stats(i as u32, now, lost);
        }
        let _ = w.flush();
    }
    end
}

/// What a pcapng stream says as it passes (the capture command counts
/// the frames it writes and reads the losses from the statistics
/// blocks): blocks are split whole, so the stream can be passed on as it
/// comes.
#[derive(Default)]
pub struct Scan {
    buf: Vec<u8>,
    /// Packet blocks seen.
    pub frames: u64,
    /// Copies lost, from the interface statistics blocks.
    pub lost: u64,
    /// Whether an interface statistics block came (the capture ended
    /// orderly).
    pub ended: bool,
}

impl Scan {
    /// Takes `bytes` of the stream.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        let mut at = 0;
        while self.buf.len() >= at + 12 {
            let b = &self.buf[at..];
            let kind = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let len = u32::from_le_bytes([b[4], b[5], b[6], b[7]]) as usize;
            if len < 12 || b.len() < len {
                break;
            }
            match kind {
                6 => self.frames += 1,
                5 => {
                    self.ended = true;
                    // isb_ifdrop: the first option after the 12-byte head.
                    let opts = &b[20..len - 4];
                    if opts.len() >= 12 && u16::from_le_bytes([opts[0], opts[1]]) == 5 {
                        let v: [u8; 8] = opts[4..12].try_into().unwrap_or([0; 8]);
                        self.lost += u64::from_le_bytes(v);
                    }
                }
                _ => {}
            }
            at += len;
        }
        self.buf.drain(..at);
    }
}

/// Copies a capture stream from `from` to `to`, scanning it; returns what
/// it saw. Stops quietly when `to` is closed (`| head`).
pub fn relay(from: &mut dyn Read, to: &mut dyn Write) -> Result<Scan, String> {
    let mut scan = Scan::default();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        };
        scan.feed(&buf[..n]);
        match to.write_all(&buf[..n]).and_then(|_| to.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(scan)
}
