//! Table pages backed by transparent huge pages where the kernel grants
//! them.
//!
//! A route lookup is one or a few loads at random places in tens of
//! megabytes: with 4 KiB pages nearly every load also misses the TLB and
//! walks the page table. Each page here is one 2 MiB-aligned allocation
//! of 2 MiB, advised `MADV_HUGEPAGE`, so a single TLB entry covers it;
//! [`Huge`] is the same for any table of a huge page or more (the
//! connection table's buckets and entries, the classifier's leaf groups).
//! Where huge pages are off or exhausted it is ordinary memory.
//!
//! A crate of its own because both `routecache` and `matcher` need it and
//! neither should depend on the other. All of it is allocation and
//! hints to the CPU and the kernel, so `unsafe` is allowed throughout,
//! each block with its SAFETY comment.
#![allow(unsafe_code)]
#![warn(missing_docs)]

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Bytes of a huge page (x86-64, and the usual size elsewhere).
pub const HUGE: usize = 2 << 20;
/// `u32` entries in a page.
pub const ENTRIES: usize = HUGE / 4;

/// Types for which a value of all zero bytes is a valid one (what
/// [`Huge::new`] hands out before the caller writes anything).
///
/// # Safety
/// Implement only for `Copy` types whose every field is valid as zero
/// bytes: integers, arrays and `repr(C)` structs of them, no references,
/// no enums without a zero variant.
pub unsafe trait Zeroable: Copy {}

// SAFETY: zero is a valid integer.
unsafe impl Zeroable for u32 {}
// SAFETY: zero is a valid integer.
unsafe impl Zeroable for u64 {}

/// A fixed-length, zeroed slice of `T`, huge-page backed where it is at
/// least a huge page long: a table read at random places (DIR-24-8's
/// pages, a connection table's buckets) then costs a TLB entry per
/// 2 MiB, not per 4 KiB.
pub struct Huge<T: Zeroable> {
    ptr: NonNull<T>,
    len: usize,
}

/// 2 MiB of `u32`s: a DIR-24-8 page. Its own type, not `Huge<u32>`,
/// so that its length is a constant: a lookup's index masked to it needs
/// no bounds check.
#[derive(Clone, Debug)]
pub struct Page(Huge<u32>);

// SAFETY: a `Huge` owns its allocation outright (like a `Box<[T]>`);
// nothing else holds the pointer, so moving it between threads is as
// safe as moving a boxed slice of `T`.
unsafe impl<T: Zeroable + Send> Send for Huge<T> {}
// SAFETY: as above; `&Huge<T>` only gives `&[T]`.
unsafe impl<T: Zeroable + Sync> Sync for Huge<T> {}

/// The allocation for `len` values of `T`: whole huge pages, 2 MiB
/// aligned, from one huge page up; the type's own alignment (at least a
/// cache line's) below that. `None` for no bytes at all.
fn layout_for<T>(len: usize) -> Option<Layout> {
    let bytes = len
        .checked_mul(std::mem::size_of::<T>())
        .expect("a table's size fits in memory");
    if bytes == 0 {
        return None;
    }
    let align = std::mem::align_of::<T>().max(64);
    Some(
        if bytes >= HUGE {
            Layout::from_size_align(bytes.next_multiple_of(HUGE), HUGE)
        } else {
            Layout::from_size_align(bytes, align)
        }
        .expect("a table's size fits in memory"),
    )
}

impl<T: Zeroable> Huge<T> {
    /// `len` zeroed values.
    pub fn new(len: usize) -> Huge<T> {
        Huge::filled(len, |_| 0)
    }

    /// A copy of `values`: written once, where `new` and a copy wrote
    /// the bytes twice (a built table settled into huge pages: megabytes
    /// on every rebuild of a large set).
    pub fn from_slice(values: &[T]) -> Huge<T> {
        Huge::filled(values.len(), |p| {
            // SAFETY: `p` has room for `values.len()` values (`filled`'s
            // allocation for that length), a fresh allocation that cannot
            // overlap `values`.
            unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), p, values.len()) };
            values.len()
        })
    }

    /// `len` values: as many as `fill` says it wrote (at most `len`,
    /// given where they go), then every byte after them zeroed.
    fn filled(len: usize, fill: impl FnOnce(*mut T) -> usize) -> Huge<T> {
        let Some(layout) = layout_for::<T>(len) else {
            return Huge {
                ptr: NonNull::dangling(),
                len,
            };
        };
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<T>()) else {
            handle_alloc_error(layout)
        };
        // Advise before the first write: the allocator's own zeroing of an
        // over-aligned block would fault it in as small pages first.
        if layout.align() == HUGE {
            advise_huge(raw, layout.size());
        }
        let written = fill(ptr.as_ptr()).min(len) * std::mem::size_of::<T>();
        // SAFETY: `raw` is valid for `layout.size()` bytes of writes (just
        // allocated with that size, at least `written`), and zero bytes
        // are valid `T`s (`Zeroable`).
        unsafe { std::ptr::write_bytes(raw.add(written), 0, layout.size() - written) };
        Huge { ptr, len }
    }
}

impl Page {
    /// A zeroed DIR-24-8 page.
    pub fn zeroed() -> Page {
        Page(Huge::new(ENTRIES))
    }
}

impl Deref for Page {
    type Target = [u32];
    #[inline(always)]
    fn deref(&self) -> &[u32] {
        // SAFETY: the page owns `ENTRIES` initialised values (`zeroed`).
        unsafe { std::slice::from_raw_parts(self.0.ptr.as_ptr(), ENTRIES) }
    }
}

impl DerefMut for Page {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [u32] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference.
        unsafe { std::slice::from_raw_parts_mut(self.0.ptr.as_ptr(), ENTRIES) }
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

impl<T: Zeroable> Huge<T> {
    /// Bytes allocated: the values' own, rounded up to whole huge pages
    /// from one huge page up (what a table's memory figure should say).
    pub fn allocated(&self) -> usize {
        layout_for::<T>(self.len).map_or(0, |l| l.size())
    }
}

impl<T: Zeroable> Deref for Huge<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialised (zeroed, then written)
        // values that this slice owns for its whole life (or is dangling
        // and well aligned where they take no bytes).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> DerefMut for Huge<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> Clone for Huge<T> {
    fn clone(&self) -> Huge<T> {
        Huge::from_slice(self)
    }
}

impl<T: Zeroable> Drop for Huge<T> {
    fn drop(&mut self) {
        if let Some(layout) = layout_for::<T>(self.len) {
            // SAFETY: allocated in `new` with this very layout (the same
            // length gives the same one), and freed once, here.
            unsafe { dealloc(self.ptr.as_ptr().cast(), layout) }
        }
    }
}

impl<T: Zeroable> std::fmt::Debug for Huge<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Huge({} x {} bytes)", self.len, std::mem::size_of::<T>())
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

    #[test]
    fn copies_of_slices_hold_their_values() {
        for len in [0, 1, 7, HUGE / 8 - 1, HUGE / 8 + 1, 3 * HUGE / 8] {
            let v: Vec<u64> = (0..len as u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9) | 1)
                .collect();
            let h = Huge::from_slice(&v);
            assert_eq!(&h[..], &v[..], "{len}");
            assert_eq!(
                h.as_ptr() as usize % if len * 8 >= HUGE { HUGE } else { 8 },
                0
            );
            assert_eq!(h.allocated(), Huge::<u64>::new(len).allocated());
        }
    }

    #[test]
    fn slices_of_any_length_are_zeroed_and_aligned_to_their_size() {
        for len in [0, 1, 7, HUGE / 8 - 1, HUGE / 8, HUGE / 8 + 1, 3 * HUGE / 8] {
            let mut s: Huge<u64> = Huge::new(len);
            assert_eq!(s.len(), len);
            assert!(s.iter().all(|&x| x == 0));
            // No bytes, no allocation: a dangling, aligned pointer.
            let align = match len * 8 {
                0 => 8,
                b if b >= HUGE => HUGE,
                _ => 64,
            };
            assert_eq!(s.as_ptr() as usize % align, 0, "{len}");
            let bytes = match len * 8 {
                b if b >= HUGE => b.next_multiple_of(HUGE),
                b => b,
            };
            assert_eq!(s.allocated(), bytes, "{len}");
            if let Some(last) = s.last_mut() {
                *last = 5;
            }
            let t = s.clone();
            assert_eq!(t.last(), s.last());
        }
    }
}
