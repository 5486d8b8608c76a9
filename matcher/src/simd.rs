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
        fn and(res: &mut [u64], src: Option<&[u64]>, b: &[&[u64]]) -> bool {
            let n = res.len();
            debug_assert!(n.is_multiple_of(4) && b.iter().all(|x| x.len() == n));
            debug_assert!(src.is_none_or(|s| s.len() == n));
            // SAFETY: this kernel is only instantiated in `lookup_avx2` and
            // `burst_avx2`, compiled with AVX2 and called only once the CPU
            // is known to have it. `res`, `src` and every bucket have the
            // same length `n`, a multiple of 4 words (lookup_core rounds
            // windows to LANES inside 512-bit-padded buckets), so each
            // 32-byte access at word `w < n` stays inside its slice.
            unsafe {
                let mut any = _mm256_setzero_si256();
                let mut w = 0;
                while w < n {
                    let mut acc = match src {
                        Some(s) => _mm256_loadu_si256(s.as_ptr().add(w).cast()),
                        None => _mm256_set1_epi64x(-1),
                    };
                    for bk in b {
                        acc = _mm256_and_si256(acc, _mm256_loadu_si256(bk.as_ptr().add(w).cast()));
                    }
                    _mm256_storeu_si256(res.as_mut_ptr().add(w).cast(), acc);
                    any = _mm256_or_si256(any, acc);
                    w += 4;
                }
                _mm256_testz_si256(any, any) == 0
            }
        }
    }

    pub(super) struct Avx512;

    impl AndKernel for Avx512 {
        const LANES: usize = 8;
        #[inline(always)]
        fn and(res: &mut [u64], src: Option<&[u64]>, b: &[&[u64]]) -> bool {
            let n = res.len();
            debug_assert!(n.is_multiple_of(8) && b.iter().all(|x| x.len() == n));
            debug_assert!(src.is_none_or(|s| s.len() == n));
            // SAFETY: as for AVX2, with AVX-512F checked before any call
            // and windows rounded to 8 words (one 512-bit chunk), so each
            // 64-byte access at word `w < n` stays inside its slice.
            unsafe {
                let mut any = _mm512_setzero_si512();
                let mut w = 0;
                while w < n {
                    let mut acc = match src {
                        Some(s) => _mm512_loadu_si512(s.as_ptr().add(w).cast()),
                        None => _mm512_set1_epi64(-1),
                    };
                    for bk in b {
                        acc = _mm512_and_si512(acc, _mm512_loadu_si512(bk.as_ptr().add(w).cast()));
                    }
                    _mm512_storeu_si512(res.as_mut_ptr().add(w).cast(), acc);
                    any = _mm512_or_si512(any, acc);
                    w += 8;
                }
                _mm512_test_epi64_mask(any, any) != 0
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

    #[inline(always)]
    pub(super) fn prefetch(words: &[u64], at: usize) {
        if at < words.len() {
            // SAFETY: a prefetch is a hint that never faults; the address
            // is inside `words` anyway. SSE is part of x86-64.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(words.as_ptr().add(at).cast()) }
        }
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

/// Prefetches the cache line holding `words[at]` (no-op past the end or
/// off x86-64).
#[inline(always)]
pub(crate) fn prefetch(words: &[u64], at: usize) {
    #[cfg(target_arch = "x86_64")]
    x86::prefetch(words, at);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (words, at);
}
