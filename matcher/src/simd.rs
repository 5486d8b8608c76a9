//! The vectorised bucket ANDs: AVX2 (256 bits) and AVX-512 (512 bits),
//! next to the scalar kernel in [`crate::lookup`] that they must agree
//! with. Only the AND of a field's buckets differs between them; the
//! windows, refill and early exits are shared code, instantiated here with
//! each kernel inside a function compiled for its instruction set.
//!
//! Tables and scratch bitmaps are 64-byte aligned and padded to whole
//! 512-bit chunks, so a window rounded out to whole vectors never leaves
//! its bucket.
#![allow(unsafe_code)]

use crate::lookup::Impl;
use crate::table::FieldTable;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use crate::lookup::{burst_core, lookup_core, AndKernel};
    use crate::table::FieldTable;
    use std::arch::x86_64::*;

    pub(super) struct Avx2;

    impl AndKernel for Avx2 {
        const LANES: usize = 4;
        #[inline(always)]
        fn and(res: &mut [u64], src: Option<&[u64]>, lt: &[u64], at: &[usize]) -> (usize, usize) {
            let n = res.len();
            assert!(n.is_multiple_of(4) && at.iter().all(|&a| a + n <= lt.len()));
            assert!(src.is_none_or(|s| s.len() == n));
            // SAFETY: this kernel is only instantiated in `lookup_avx2` and
            // `burst_avx2`, compiled with AVX2 and called only once the CPU
            // is known to have it. `res` and `src` have length `n`, a
            // multiple of 4 words, and every bucket window `at[g]..at[g]+n`
            // lies inside `lt` (asserted above), so each 32-byte access at
            // word `w < n` stays inside its slice.
            unsafe {
                let zero = _mm256_setzero_si256();
                let (mut first, mut last) = (usize::MAX, 0);
                let mut w = 0;
                while w < n {
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
                    w += 4;
                }
                (first, last)
            }
        }
    }

    pub(super) struct Avx512;

    impl AndKernel for Avx512 {
        const LANES: usize = 8;
        #[inline(always)]
        fn and(res: &mut [u64], src: Option<&[u64]>, lt: &[u64], at: &[usize]) -> (usize, usize) {
            let n = res.len();
            assert!(n.is_multiple_of(8) && at.iter().all(|&a| a + n <= lt.len()));
            assert!(src.is_none_or(|s| s.len() == n));
            // SAFETY: as for AVX2, with AVX-512F checked before any call
            // and windows rounded to 8 words (one 512-bit chunk), so each
            // 64-byte access at word `w < n` stays inside its slice.
            unsafe {
                let (mut first, mut last) = (usize::MAX, 0);
                let mut w = 0;
                while w < n {
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
                    w += 8;
                }
                (first, last)
            }
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn lookup_avx2(
        fields: &[FieldTable],
        key: &[u8],
        res: &mut [u64],
        fill: &mut [u64],
    ) -> Option<u32> {
        lookup_core::<Avx2>(fields, key, res, fill)
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn lookup_avx512(
        fields: &[FieldTable],
        key: &[u8],
        res: &mut [u64],
        fill: &mut [u64],
    ) -> Option<u32> {
        lookup_core::<Avx512>(fields, key, res, fill)
    }

    #[target_feature(enable = "avx2")]
    pub(super) fn burst_avx2(
        fields: &[FieldTable],
        keys: &[u8],
        stride: usize,
        out: &mut [Option<u32>],
        res: &mut [u64],
        fill: &mut [u64],
    ) {
        burst_core::<Avx2>(fields, keys, stride, out, res, fill)
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn burst_avx512(
        fields: &[FieldTable],
        keys: &[u8],
        stride: usize,
        out: &mut [Option<u32>],
        res: &mut [u64],
        fill: &mut [u64],
    ) {
        burst_core::<Avx512>(fields, keys, stride, out, res, fill)
    }
}

/// One lookup with a vector implementation, falling back to the scalar
/// one when this CPU lacks the instructions.
#[inline]
pub(crate) fn lookup(
    imp: Impl,
    fields: &[FieldTable],
    key: &[u8],
    res: &mut [u64],
    fill: &mut [u64],
) -> Option<u32> {
    #[cfg(target_arch = "x86_64")]
    match imp {
        // SAFETY: the target features are checked at run time just before.
        Impl::Avx2 if imp.supported() => {
            return unsafe { x86::lookup_avx2(fields, key, res, fill) }
        }
        // SAFETY: as above.
        Impl::Avx512 if imp.supported() => {
            return unsafe { x86::lookup_avx512(fields, key, res, fill) }
        }
        _ => {}
    }
    let _ = imp;
    crate::lookup::lookup_core::<crate::lookup::Scalar>(fields, key, res, fill)
}

/// A burst of lookups with a vector implementation (scalar fallback).
#[inline]
pub(crate) fn lookup_burst(
    imp: Impl,
    fields: &[FieldTable],
    keys: &[u8],
    stride: usize,
    out: &mut [Option<u32>],
    res: &mut [u64],
    fill: &mut [u64],
) {
    #[cfg(target_arch = "x86_64")]
    match imp {
        // SAFETY: the target features are checked at run time just before.
        Impl::Avx2 if imp.supported() => {
            return unsafe { x86::burst_avx2(fields, keys, stride, out, res, fill) }
        }
        // SAFETY: as above.
        Impl::Avx512 if imp.supported() => {
            return unsafe { x86::burst_avx512(fields, keys, stride, out, res, fill) }
        }
        _ => {}
    }
    let _ = imp;
    crate::lookup::burst_core::<crate::lookup::Scalar>(fields, keys, stride, out, res, fill)
}
