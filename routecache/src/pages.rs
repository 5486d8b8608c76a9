//! Table pages backed by transparent huge pages where the kernel grants
//! them.
//!
//! A route lookup is one or a few loads at random places in tens of
//! megabytes: with 4 KiB pages nearly every load also misses the TLB and
//! walks the page table. Each page here is one 2 MiB-aligned allocation
//! of 2 MiB, advised `MADV_HUGEPAGE`, so a single TLB entry covers it.
//! Where huge pages are off or exhausted it is ordinary memory.
#![allow(unsafe_code)]

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Bytes of a huge page (x86-64, and the usual size elsewhere).
pub const HUGE: usize = 2 << 20;
/// `u32` entries in a page.
pub const ENTRIES: usize = HUGE / 4;

/// 2 MiB of `u32`s, zeroed when made, huge-page backed where possible.
pub struct Page {
    ptr: NonNull<u32>,
}

// SAFETY: a `Page` owns its allocation outright (like a `Box<[u32]>`);
// nothing else holds the pointer, so moving or sharing it between threads
// is as safe as for a boxed slice.
unsafe impl Send for Page {}
// SAFETY: as above; `&Page` only gives `&[u32]`.
unsafe impl Sync for Page {}

fn layout() -> Layout {
    Layout::from_size_align(HUGE, HUGE).expect("2 MiB is a valid layout")
}

impl Page {
    /// A zeroed page.
    pub fn zeroed() -> Page {
        let layout = layout();
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<u32>()) else {
            handle_alloc_error(layout)
        };
        // Advise before the first write: the allocator's own zeroing of an
        // over-aligned block would fault it in as small pages first.
        advise_huge(raw, HUGE);
        // SAFETY: `raw` is valid for `HUGE` bytes of writes (just
        // allocated with that size); zero bytes are valid `u32`s.
        unsafe { std::ptr::write_bytes(raw, 0, HUGE) };
        Page { ptr }
    }
}

/// Asks the CPU to bring the cache line holding `x` into the cache,
/// without waiting for it: a burst lookup prefetches every address's
/// entry before loading any, so their cache misses overlap.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    prefetch_ptr(x as *const T)
}

/// [`prefetch`] of an address that need not be valid: a prefetch never
/// faults, so a table's entry can be prefetched at an index computed
/// with `wrapping_add`, without the bounds check that a reference to it
/// costs (the load that follows checks it).
#[inline(always)]
pub fn prefetch_ptr<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults, whatever the
    // address, and reads nothing the program sees.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(target_os = "linux")]
fn advise_huge(p: *mut u8, len: usize) {
    // SAFETY: `p..p + len` is one live allocation of ours, 2 MiB aligned;
    // madvise only changes how the kernel backs it and fails harmlessly
    // (huge pages off or unsupported), in which case it stays as it is.
    unsafe {
        libc::madvise(p.cast(), len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_: *mut u8, _: usize) {}

impl Deref for Page {
    type Target = [u32];
    #[inline(always)]
    fn deref(&self) -> &[u32] {
        // SAFETY: `ptr` points to `ENTRIES` initialised (zeroed, then
        // written) `u32`s that this page owns for its whole life.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), ENTRIES) }
    }
}

impl DerefMut for Page {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u32] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), ENTRIES) }
    }
}

impl Clone for Page {
    fn clone(&self) -> Page {
        let mut p = Page::zeroed();
        p.copy_from_slice(self);
        p
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this very layout, and freed
        // once, here.
        unsafe { dealloc(self.ptr.as_ptr().cast(), layout()) }
    }
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Page({} entries)", ENTRIES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_zeroed_aligned_and_cloned() {
        let mut p = Page::zeroed();
        assert!(p.iter().all(|&x| x == 0));
        assert_eq!(p.as_ptr() as usize % HUGE, 0);
        p[7] = 9;
        p[ENTRIES - 1] = 3;
        let q = p.clone();
        assert_eq!((q[7], q[ENTRIES - 1]), (9, 3));
        assert_ne!(p.as_ptr(), q.as_ptr());
    }
}
