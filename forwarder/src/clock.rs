//! The clock element deadlines are kept on: milliseconds of the
//! monotonic clock at its coarse resolution (a jiffy, 1-4 ms), which the
//! vDSO serves without a system call, so a worker may read it once a
//! burst when some element can expire.
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
