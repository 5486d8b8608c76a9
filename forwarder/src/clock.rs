//! The clock element deadlines are kept on: milliseconds of the
//! monotonic clock at its coarse resolution (a jiffy, 1-4 ms), which the
//! vDSO serves without a system call, so a worker may read it once a
//! burst when some element can expire. And the wall clock timestamps
//! are written in ([`unix_ns`]).
#![allow(unsafe_code)]

/// Milliseconds since an arbitrary point (the system's boot), never
/// going back.
#[inline]
pub fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_COARSE
    // exists on every Linux this runs on, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Nanoseconds since the Unix epoch at `t` (0 before it): the wall
/// clock of timestamps (captures, logs, statistics), not of deadlines.
pub fn unix_ns_of(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Nanoseconds since the Unix epoch, now (a vDSO read: tens of
/// nanoseconds, so a worker takes it once a turn at most).
pub fn unix_ns() -> u64 {
    unix_ns_of(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    #[test]
    fn it_moves_forward_in_milliseconds() {
        let a = super::now_ms();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = super::now_ms();
        assert!(b >= a + 20 && b < a + 1000, "{a} -> {b}");
    }
}
