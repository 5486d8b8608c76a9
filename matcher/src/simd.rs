//! The vectorised bucket ANDs: AVX2 (256 bits) and AVX-512 (512 bits),
//! next to the scalar kernel in [`crate::lookup`] that they must agree
//! with. Only the AND of a field's buckets differs between them; the
//! windows, refill and early exits are the shared code of
//! [`crate::lookup`].
//!
//! Each vector AND is a function of its own compiled for its instruction
//! set, called for windows wider than one vector. The rest of the lookup
//! stays ordinary code: compiling all of it with AVX-512 enabled slows
//! the narrow-window lookups (most of them) down (`bench matcher`).
//!
//! Tables and scratch bitmaps are 64-byte aligned and padded to whole
//! 512-bit chunks, so a window rounded out to whole vectors never leaves
//! its bucket.
#![allow(unsafe_code)]

use crate::cpu::Impl;
use crate::cuts::{mask_scalar, pick_scalar, Classifier};
use crate::elems::Verifier;
use crate::lead::{burst_lead, lookup_lead, Lead};
use crate::lookup::{Scalar, Scratch};
use crate::table::FieldTable;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use crate::cuts::{Classifier, Node, Rows, BURST};
    use crate::elems::Verifier;
    use crate::lookup::AndKernel;
    use crate::tree::{Block, Intervals};
    use std::arch::x86_64::*;

    // The compares shared by the AVX2 and AVX-512 functions below, as
    // macros: expanded inside each `#[target_feature]` function, their
    // intrinsics inline there (a helper function of their own would call
    // each intrinsic out of line). Each is used inside an `unsafe` block
    // whose SAFETY comment covers its loads.

    /// Twice the values of block `$b` at or below `$x` among the lanes
    /// of `$mask`: two 256-bit unsigned compares (`max(v, x) == x` is `v
    /// <= x`) packed into one mask of two bits a lane, in the order
    /// `vpackssdw` leaves them (lanes 0-3, 8-11, 4-7, 12-15; lane 15 is
    /// bits 30 and 31), and a popcount: three instructions fewer than two
    /// masks joined, or LLVM's packing down to bytes.
    macro_rules! count2_le_avx2 {
        ($b:expr, $x:expr, $mask:expr) => {{
            let xv = _mm256_set1_epi32($x as i32);
            let p = $b.0.as_ptr();
            let lo = _mm256_loadu_si256(p.cast());
            let hi = _mm256_loadu_si256(p.add(8).cast());
            let le_lo = _mm256_cmpeq_epi32(_mm256_max_epu32(lo, xv), xv);
            let le_hi = _mm256_cmpeq_epi32(_mm256_max_epu32(hi, xv), xv);
            let both = _mm256_packs_epi32(le_lo, le_hi);
            (_mm256_movemask_epi8(both) as u32 & $mask).count_ones()
        }};
    }

    /// The mask of the lanes `$at..$at + 8` of a leaf group (rows of `$w`
    /// words at `$p`: lows, spans per dimension) whose ranges hold every
    /// value of `$vals`: `v - low <= span` is `min(v - low, span) == v -
    /// low`, unsigned, four instructions per dimension. The first `$wd`
    /// dimensions' rows are words; the others' are 16-bit halves (a row
    /// of lows then one of spans, in one row of words: `cuts::Groups`),
    /// compared in 16-bit lanes (the same four instructions, the wrap of
    /// `v - low` below 65,536 as exact as in 32 bits: every value, low
    /// and high is below it) and widened once.
    macro_rules! lanes8_avx2 {
        ($p:expr, $w:expr, $at:expr, $wd:expr, $vals:expr) => {{
            let mut a = _mm256_set1_epi32(-1);
            let mut h = _mm_set1_epi32(-1);
            for (d, &v) in $vals.iter().enumerate() {
                if d < $wd {
                    let x = _mm256_set1_epi32(v as i32);
                    let l = _mm256_loadu_si256($p.add(2 * d * $w + $at).cast());
                    let s = _mm256_loadu_si256($p.add((2 * d + 1) * $w + $at).cast());
                    let off = _mm256_sub_epi32(x, l);
                    a = _mm256_and_si256(a, _mm256_cmpeq_epi32(_mm256_min_epu32(off, s), off));
                } else {
                    // Lane `i`'s halves: `u16` `i` and `w + i` of the row.
                    let q = $p.add(($wd + d) * $w + $at / 2);
                    let x = _mm_set1_epi16(v as i16);
                    let l = _mm_loadu_si128(q.cast());
                    let s = _mm_loadu_si128(q.add($w / 2).cast());
                    let off = _mm_sub_epi16(x, l);
                    h = _mm_and_si128(h, _mm_cmpeq_epi16(_mm_min_epu16(off, s), off));
                }
            }
            if $wd < $vals.len() {
                a = _mm256_and_si256(a, _mm256_cvtepi16_epi32(h));
            }
            _mm256_movemask_ps(_mm256_castsi256_ps(a)) as u32
        }};
    }

    /// [`lanes8_avx2`] for a group of 4 lanes, with 128-bit compares (a
    /// row of halves is 4 lows then 4 spans, 8 bytes each).
    macro_rules! lanes4_sse {
        ($p:expr, $wd:expr, $vals:expr) => {{
            let mut a = _mm_set1_epi32(-1);
            let mut h = _mm_set1_epi32(-1);
            for (d, &v) in $vals.iter().enumerate() {
                if d < $wd {
                    let x = _mm_set1_epi32(v as i32);
                    let l = _mm_loadu_si128($p.add(2 * d * 4).cast());
                    let s = _mm_loadu_si128($p.add((2 * d + 1) * 4).cast());
                    let off = _mm_sub_epi32(x, l);
                    a = _mm_and_si128(a, _mm_cmpeq_epi32(_mm_min_epu32(off, s), off));
                } else {
                    let q = $p.add(($wd + d) * 4);
                    let x = _mm_set1_epi16(v as i16);
                    let l = _mm_loadl_epi64(q.cast());
                    let s = _mm_loadl_epi64(q.add(2).cast());
                    let off = _mm_sub_epi16(x, l);
                    h = _mm_and_si128(h, _mm_cmpeq_epi16(_mm_min_epu16(off, s), off));
                }
            }
            if $wd < $vals.len() {
                a = _mm_and_si128(a, _mm_cvtepi16_epi32(h));
            }
            _mm_movemask_ps(_mm_castsi128_ps(a)) as u32
        }};
    }

    /// Checks what the vector loops rely on: `res` and `src` of one length
    /// `n`, a multiple of `lanes`, and every bucket window `at[g]..at[g]+n`
    /// inside `lt`.
    #[inline(always)]
    fn check(res: &[u64], src: Option<&[u64]>, lt: &[u64], at: &[usize], lanes: usize) {
        let n = res.len();
        assert!(n.is_multiple_of(lanes) && at.iter().all(|&a| a + n <= lt.len()));
        assert!(src.is_none_or(|s| s.len() == n));
    }

    pub(crate) struct Avx2;

    impl AndKernel for Avx2 {
        const LANES: usize = 4;
        #[inline(always)]
        fn and(res: &mut [u64], src: Option<&[u64]>, lt: &[u64], at: &[usize]) -> (usize, usize) {
            check(res, src, lt, at, 4);
            // SAFETY: `Avx2` is only used after `Impl::Avx2.supported()`
            // (see `lookup` and `lookup_burst` below), and `check` holds.
            unsafe { and_avx2(res, src, lt, at) }
        }
        #[inline(always)]
        fn descend(t: &Intervals, xs: &[u32], ranks: &mut [u32]) {
            // SAFETY: as for `and` above: the CPU has AVX2.
            unsafe { descend_avx2(t, xs, ranks) }
        }
    }

    /// [`Intervals::descend`] counting a block with two 256-bit unsigned
    /// compares (`max(v, x) == x` is `v <= x`).
    ///
    /// SAFETY: the CPU has AVX2.
    #[target_feature(enable = "avx2,popcnt")]
    #[inline(never)]
    unsafe fn descend_avx2(t: &Intervals, xs: &[u32], ranks: &mut [u32]) {
        t.descend(xs, ranks, |b: &Block, x: u32| {
            // SAFETY: a block is sixteen `u32`, two 32-byte loads.
            unsafe { count2_le_avx2!(b, x, u32::MAX) >> 1 }
        })
    }

    /// SAFETY: the CPU has AVX2, and `check(res, src, lt, at, 4)` holds.
    #[target_feature(enable = "avx2")]
    #[inline(never)]
    unsafe fn and_avx2(
        res: &mut [u64],
        src: Option<&[u64]>,
        lt: &[u64],
        at: &[usize],
    ) -> (usize, usize) {
        let n = res.len();
        let zero = _mm256_setzero_si256();
        let (mut first, mut last) = (usize::MAX, 0);
        let mut w = 0;
        while w < n {
            // SAFETY: `w + 4 <= n` and every slice read or written holds
            // `n` words from the offset used (the caller's contract), so
            // each 32-byte access stays inside its slice.
            unsafe {
                let mut acc = match src {
                    Some(s) => _mm256_loadu_si256(s.as_ptr().add(w).cast()),
                    None => _mm256_set1_epi64x(-1),
                };
                for &a in at {
                    let b = _mm256_loadu_si256(lt.as_ptr().add(a + w).cast());
                    acc = _mm256_and_si256(acc, b);
                }
                _mm256_storeu_si256(res.as_mut_ptr().add(w).cast(), acc);
                let eq = _mm256_castsi256_pd(_mm256_cmpeq_epi64(acc, zero));
                let nz = !_mm256_movemask_pd(eq) as u32 & 0xf;
                if nz != 0 {
                    first = first.min(w + nz.trailing_zeros() as usize);
                    last = w + 32 - nz.leading_zeros() as usize;
                }
            }
            w += 4;
        }
        (first, last)
    }

    /// The classifier's lookups with AVX2: a node's child by two 256-bit
    /// compares, a leaf group's lanes by four per dimension (`max(a, b)
    /// == b` is `a <= b`, unsigned).
    ///
    /// SAFETY: the CPU has AVX2.
    #[target_feature(enable = "avx2,popcnt")]
    #[inline(never)]
    pub(crate) unsafe fn classify_avx2(
        c: &Classifier,
        keys: &[u8],
        stride: usize,
        out: &mut [Option<u32>],
        v: &Verifier,
    ) {
        // A node's cuts are its block's first 15 values (`count_cuts`).
        // Twice the count, the padding lane 15 masked off, is the byte
        // offset of the child.
        let pick = |n: &Node, x: u32| -> u32 {
            // SAFETY: a block is sixteen `u32`, two 32-byte loads; the
            // doubled count is even and at most 30, so the read is the
            // `u32` at byte `2 * c2 <= 60` of the 64-byte child array,
            // aligned.
            unsafe {
                let c2 = count2_le_avx2!(n.cuts, x, 0x3fff_ffff);
                n.child
                    .as_ptr()
                    .cast::<u8>()
                    .add(2 * c2 as usize)
                    .cast::<u32>()
                    .read()
            }
        };
        let mask = |r: &[u32], w: usize, wd: usize, vals: &[u32]| -> u32 {
            assert!(r.len() >= w * (vals.len() + wd) && matches!(w, 4 | 8 | 16));
            let p = r.as_ptr();
            // SAFETY: every load reads at most `w` words of a row of `w`
            // words, the last row being `vals.len() + wd - 1`: inside `r`
            // (checked above); SSE4.1 is part of AVX2.
            unsafe {
                match w {
                    4 => lanes4_sse!(p, wd, vals),
                    8 => lanes8_avx2!(p, 8, 0, wd, vals),
                    _ => lanes8_avx2!(p, 16, 0, wd, vals) | lanes8_avx2!(p, 16, 8, wd, vals) << 8,
                }
            }
        };
        c.burst((keys, stride), out, v, pick, mask, None)
    }

    /// The classifier's lookups with AVX-512: a node's child by one
    /// compare into a mask, a leaf group's lanes by two per dimension
    /// (groups of 4 and 8 lanes as with AVX2).
    ///
    /// SAFETY: the CPU has AVX-512F, BW and VL.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,popcnt")]
    #[inline(never)]
    pub(crate) unsafe fn classify_avx512(
        c: &Classifier,
        keys: &[u8],
        stride: usize,
        out: &mut [Option<u32>],
        v: &Verifier,
    ) {
        // A node's cuts are its block's first 15 values (`count_cuts`).
        let pick = |n: &Node, x: u32| -> u32 {
            // SAFETY: a block is sixteen `u32`, one 64-byte load.
            let v = unsafe { _mm512_loadu_si512(n.cuts.0.as_ptr().cast()) };
            let c = (_mm512_mask_cmple_epu32_mask(0x7fff, v, _mm512_set1_epi32(x as i32)) as u32)
                .count_ones();
            n.child[c as usize % 16]
        };
        let mask = |r: &[u32], w: usize, wd: usize, vals: &[u32]| -> u32 {
            assert!(r.len() >= w * (vals.len() + wd) && matches!(w, 4 | 8 | 16));
            let p = r.as_ptr();
            // SAFETY: every load reads at most `w` words of a row of `w`
            // words, the last row being `vals.len() + wd - 1`: inside `r`
            // (checked above); AVX2 and SSE4.1 come with AVX-512F
            // (`Impl::Avx512` checks for AVX2, BW and VL too).
            unsafe {
                match w {
                    16 => {
                        let mut m: __mmask16 = 0xffff;
                        // Rows of lows and spans: `v - low <= span`, in
                        // 32-bit lanes, or 16-bit ones for rows of halves
                        // (AVX-512BW and VL).
                        for (d, &v) in vals.iter().enumerate() {
                            if d < wd {
                                let x = _mm512_set1_epi32(v as i32);
                                let l = _mm512_loadu_si512(p.add(2 * d * 16).cast());
                                let s = _mm512_loadu_si512(p.add((2 * d + 1) * 16).cast());
                                m = _mm512_mask_cmple_epu32_mask(m, _mm512_sub_epi32(x, l), s);
                            } else {
                                // Sixteen 16-bit lows, then spans.
                                let q = p.add((wd + d) * 16);
                                let x = _mm256_set1_epi16(v as i16);
                                let l = _mm256_loadu_si256(q.cast());
                                let s = _mm256_loadu_si256(q.add(8).cast());
                                m = _mm256_mask_cmple_epu16_mask(m, _mm256_sub_epi16(x, l), s);
                            }
                        }
                        m as u32
                    }
                    8 => lanes8_avx2!(p, 8, 0, wd, vals),
                    _ => lanes4_sse!(p, wd, vals),
                }
            }
        };
        c.burst((keys, stride), out, v, pick, mask, Some(first_avx512))
    }

    /// A tree's first step for a burst, sixteen keys a vector: their
    /// values of the root's dimension (a gather from their rows), each cut
    /// compared with all sixteen and counted where it is at or below
    /// them, the child by the count (a permute of the sixteen children).
    /// Three instructions a cut for sixteen keys, where a step key by key
    /// is eighteen a key.
    ///
    /// SAFETY: the CPU has AVX-512F; `d < BURST_DIMS`, `n <= BURST`.
    #[target_feature(enable = "avx512f")]
    unsafe fn first_avx512(node: &Node, d: usize, rows: &Rows, n: usize) -> [u32; BURST] {
        let mut out = [0u32; BURST];
        let children = _mm512_loadu_si512(node.child.as_ptr().cast());
        let row = _mm512_setr_epi32(
            0, 16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240,
        );
        let one = _mm512_set1_epi32(1);
        for h in 0..n.div_ceil(16) {
            // Word `16 j + d` of `rows` is key `j`'s value: `j = 16 h +
            // l` below 32, `d` below 16.
            let at = _mm512_add_epi32(row, _mm512_set1_epi32((256 * h + d) as i32));
            // SAFETY: every index is below 32 * 16, inside `rows`.
            let x = unsafe { _mm512_i32gather_epi32::<4>(at, rows.as_ptr().cast()) };
            let mut count = _mm512_setzero_si512();
            for &c in &node.cuts.0[..15] {
                let le = _mm512_cmple_epu32_mask(_mm512_set1_epi32(c as i32), x);
                count = _mm512_mask_add_epi32(count, le, count, one);
            }
            let r = _mm512_permutexvar_epi32(count, children);
            // SAFETY: sixteen words at `16 h`, `h < 2`, inside `out`.
            unsafe { _mm512_storeu_si512(out.as_mut_ptr().add(16 * h).cast(), r) };
        }
        out
    }

    pub(crate) struct Avx512;

    impl AndKernel for Avx512 {
        const LANES: usize = 8;
        #[inline(always)]
        fn and(res: &mut [u64], src: Option<&[u64]>, lt: &[u64], at: &[usize]) -> (usize, usize) {
            check(res, src, lt, at, 8);
            // SAFETY: `Avx512` is only used after
            // `Impl::Avx512.supported()`, and `check` holds.
            unsafe { and_avx512(res, src, lt, at) }
        }
        #[inline(always)]
        fn descend(t: &Intervals, xs: &[u32], ranks: &mut [u32]) {
            // SAFETY: as for `and` above: the CPU has AVX-512F.
            unsafe { descend_avx512(t, xs, ranks) }
        }
    }

    /// [`Intervals::descend`] counting a block with one 512-bit unsigned
    /// compare into a mask.
    ///
    /// SAFETY: the CPU has AVX-512F.
    #[target_feature(enable = "avx512f,popcnt")]
    #[inline(never)]
    unsafe fn descend_avx512(t: &Intervals, xs: &[u32], ranks: &mut [u32]) {
        t.descend(xs, ranks, |b: &Block, x: u32| {
            // SAFETY: a block is sixteen `u32`, one 64-byte load.
            let v = unsafe { _mm512_loadu_si512(b.0.as_ptr().cast()) };
            let m = _mm512_cmple_epu32_mask(v, _mm512_set1_epi32(x as i32));
            (m as u32).count_ones()
        })
    }

    /// SAFETY: the CPU has AVX-512F, and `check(res, src, lt, at, 8)` holds.
    #[target_feature(enable = "avx512f")]
    #[inline(never)]
    unsafe fn and_avx512(
        res: &mut [u64],
        src: Option<&[u64]>,
        lt: &[u64],
        at: &[usize],
    ) -> (usize, usize) {
        let n = res.len();
        let (mut first, mut last) = (usize::MAX, 0);
        let mut w = 0;
        while w < n {
            // SAFETY: as in `and_avx2`, with 64-byte accesses and
            // `w + 8 <= n`.
            unsafe {
                let mut acc = match src {
                    Some(s) => _mm512_loadu_si512(s.as_ptr().add(w).cast()),
                    None => _mm512_set1_epi64(-1),
                };
                for &a in at {
                    let b = _mm512_loadu_si512(lt.as_ptr().add(a + w).cast());
                    acc = _mm512_and_si512(acc, b);
                }
                _mm512_storeu_si512(res.as_mut_ptr().add(w).cast(), acc);
                let nz = _mm512_test_epi64_mask(acc, acc) as u32;
                if nz != 0 {
                    first = first.min(w + nz.trailing_zeros() as usize);
                    last = w + 32 - nz.leading_zeros() as usize;
                }
            }
            w += 8;
        }
        (first, last)
    }
}

/// Looks `key` up with the chosen implementation: the vector kernels
/// where asked for and this CPU has them, the scalar one otherwise.
#[inline]
pub(crate) fn lookup(
    imp: Impl,
    fields: &[FieldTable],
    lead: &Lead,
    key: &[u8],
    scratch: &mut Scratch,
) -> Option<u32> {
    if fields[0].rules() == 0 {
        return None;
    }
    let (res, fill) = scratch.bitmaps();
    #[cfg(target_arch = "x86_64")]
    match imp {
        Impl::Avx2 if imp.supported() => {
            return lookup_lead::<x86::Avx2>(fields, lead, key, res, fill);
        }
        Impl::Avx512 if imp.supported() => {
            return lookup_lead::<x86::Avx512>(fields, lead, key, res, fill);
        }
        _ => {}
    }
    let _ = imp;
    lookup_lead::<Scalar>(fields, lead, key, res, fill)
}

/// Looks up a burst of keys (`keys` holds them back to back, `stride`
/// bytes apart) into `out`, one result per key, with the chosen
/// implementation (as [`lookup`]).
#[inline]
pub(crate) fn lookup_burst(
    imp: Impl,
    fields: &[FieldTable],
    lead: &Lead,
    keys: &[u8],
    stride: usize,
    out: &mut [Option<u32>],
    scratch: &mut Scratch,
) {
    if fields[0].rules() == 0 {
        out.fill(None);
        return;
    }
    let (res, fill) = scratch.bitmaps();
    #[cfg(target_arch = "x86_64")]
    match imp {
        Impl::Avx2 if imp.supported() => {
            return burst_lead::<x86::Avx2>(fields, lead, keys, stride, out, res, fill);
        }
        Impl::Avx512 if imp.supported() => {
            return burst_lead::<x86::Avx512>(fields, lead, keys, stride, out, res, fill);
        }
        _ => {}
    }
    let _ = imp;
    burst_lead::<Scalar>(fields, lead, keys, stride, out, res, fill)
}

/// One key through the classifier, with the chosen implementation.
#[inline]
pub(crate) fn classify(imp: Impl, c: &Classifier, key: &[u8], v: &Verifier) -> Option<u32> {
    let mut out = [None];
    #[cfg(target_arch = "x86_64")]
    match imp {
        // SAFETY: the CPU has the instructions (`supported`).
        Impl::Avx2 if imp.supported() => unsafe { x86::classify_avx2(c, key, 0, &mut out, v) },
        // SAFETY: as above.
        Impl::Avx512 if imp.supported() => unsafe { x86::classify_avx512(c, key, 0, &mut out, v) },
        _ => c.burst((key, 0), &mut out, v, pick_scalar, mask_scalar, None),
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = imp;
        c.burst((key, 0), &mut out, v, pick_scalar, mask_scalar, None);
    }
    out[0]
}

/// A burst through the classifier, with the chosen implementation.
#[inline]
pub(crate) fn classify_burst(
    imp: Impl,
    c: &Classifier,
    keys: &[u8],
    stride: usize,
    out: &mut [Option<u32>],
    v: &Verifier,
) {
    #[cfg(target_arch = "x86_64")]
    match imp {
        // SAFETY: the CPU has the instructions (`supported`).
        Impl::Avx2 if imp.supported() => unsafe { x86::classify_avx2(c, keys, stride, out, v) },
        // SAFETY: as above.
        Impl::Avx512 if imp.supported() => unsafe { x86::classify_avx512(c, keys, stride, out, v) },
        _ => c.burst((keys, stride), out, v, pick_scalar, mask_scalar, None),
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = imp;
        c.burst((keys, stride), out, v, pick_scalar, mask_scalar, None);
    }
}
