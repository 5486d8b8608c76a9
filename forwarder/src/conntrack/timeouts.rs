//! Connection tracking's deadline clock, and its timeouts in its ticks.

use super::tcp;

/// Milliseconds of [`crate::clock::now_ms`] per tick of the deadlines:
/// a `u32` of 16 ms ticks spans 2.2 years, compared with wrapping
/// arithmetic (a timeout may be up to a year).
pub(super) const TICK_SHIFT: u32 = 4;

/// The deadline clock now.
pub fn ticks() -> u32 {
    (crate::clock::now_ms() >> TICK_SHIFT) as u32
}

fn ticks_of(secs: u32) -> u32 {
    ((secs as u64 * 1000) >> TICK_SHIFT) as u32
}

/// Timeouts in ticks.
#[derive(Clone, Copy, Debug)]
pub(super) struct Timeouts {
    /// By TCP state, [`tcp::NONE`] to [`tcp::SYN_SENT2`].
    pub(super) tcp: [u32; 10],
    pub(super) udp: u32,
    pub(super) udp_stream: u32,
    pub(super) icmp: u32,
    pub(super) generic: u32,
    /// The established path's (`established.rs`), by TCP or UDP and
    /// whether a reply was seen: UDP unreplied and replied, TCP's
    /// ESTABLISHED (twice).
    pub(super) established: [[u32; 2]; 2],
}

impl Timeouts {
    pub(super) fn of(t: &config::CtTimeouts) -> Timeouts {
        let mut tcp = [0; 10];
        for (i, s) in t.tcp.iter().enumerate() {
            tcp[i + 1] = ticks_of(*s);
        }
        // SYN_SENT2 has SYN_SENT's (Linux: both 2 minutes).
        tcp[tcp::SYN_SENT2 as usize] = tcp[tcp::SYN_SENT as usize];
        tcp[tcp::NONE as usize] = tcp[tcp::SYN_SENT as usize];
        let (udp, udp_stream) = (ticks_of(t.udp), ticks_of(t.udp_stream));
        let est = tcp[tcp::ESTABLISHED as usize];
        Timeouts {
            tcp,
            udp,
            udp_stream,
            icmp: ticks_of(t.icmp),
            generic: ticks_of(t.generic),
            established: [[udp, udp_stream], [est, est]],
        }
    }
}
