//! Copying captured frames into a slot without pulling the slot's lines
//! into the worker's cache: non-temporal stores, whole lines at a time.
//! The writer thread on another core read those lines last; ordinary
//! stores would first fetch each line back from that core (a cache miss
//! a line, tens of nanoseconds a frame on the fast path), streaming
//! stores write them without reading them.

/// A cache line of a slot: frames start on a line of their own, and the
/// entries are packed four a line, so that both are written whole lines
/// at a time.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Line(pub [u8; 64]);

/// The lines' bytes.
pub fn as_bytes(lines: &[Line]) -> &[u8] {
    // SAFETY: `Line` is `repr(C)` around `[u8; 64]` with no padding (its
    // size is its alignment, 64): the lines are their bytes, in order.
    #[allow(unsafe_code)]
    unsafe {
        std::slice::from_raw_parts(lines.as_ptr() as *const u8, lines.len() * 64)
    }
}

/// Writes `src` into `dst` (which has `src.len()` rounded up to lines;
/// the last line's tail is zeroed) with streaming stores on x86-64, plain
/// copies elsewhere. Follow with [`fence`] before another thread reads.
#[inline]
pub fn stream(dst: &mut [Line], src: &[u8]) {
    for (d, chunk) in dst.iter_mut().zip(src.chunks(64)) {
        let mut tail = [0u8; 64];
        let line: &[u8; 64] = match chunk.try_into() {
            Ok(l) => l,
            Err(_) => {
                tail[..chunk.len()].copy_from_slice(chunk);
                &tail
            }
        };
        store(d, line);
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn store(d: &mut Line, s: &[u8; 64]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let to = d as *mut Line as *mut __m128i;
    let from = s.as_ptr() as *const __m128i;
    // SAFETY: SSE2 is part of x86-64. `to` is a 64-byte aligned line we
    // hold exclusively (so each 16-byte part is 16-byte aligned, as a
    // streaming store needs); `from` points to 64 readable bytes (read
    // unaligned).
    #[allow(unsafe_code)]
    unsafe {
        for k in 0..4 {
            _mm_stream_si128(to.add(k), _mm_loadu_si128(from.add(k)));
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn store(d: &mut Line, s: &[u8; 64]) {
    d.0 = *s;
}

/// Orders the streaming stores before what follows (handing the slot to
/// another thread): they are not ordered by the queue's release.
#[inline]
pub fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64; a fence has no other effect.
    #[allow(unsafe_code)]
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
}
