//! The burst: up to [`MAX_BURST`] frames carried through the pipeline in
//! place, in the burst's own buffers or (zero copy) in a port's.

/// Bytes each frame buffer holds.
pub const FRAME_CAP: usize = 2048;
/// Most frames a burst holds.
pub const MAX_BURST: usize = 64;

/// Distance between two frame buffers: one cache line more than their
/// size. With a power-of-two stride every frame's first lines fall into
/// the same two L1 sets and evict each other (`examples/stages` shows
/// what copying a burst in costs).
const STRIDE: usize = FRAME_CAP + 64;

/// Bytes free before each of the burst's own buffers (the line between
/// two buffers sits in front of each, not behind it): room for VLAN
/// tags pushed onto a frame without moving it ([`Burst::set_tags`]).
const HEADROOM: usize = STRIDE - FRAME_CAP;

/// Bytes of tags the pipeline may push onto a frame: what a port that
/// lends its own buffers must leave free before each frame.
pub const TAG_ROOM: usize = 8;

/// The bytes [`Burst::push_strided`] copies for a frame of `l` bytes
/// from a generator's arena: whole lines up to two (fixed-size copies,
/// inline), the frame itself past them.
#[inline(always)]
const fn copied(l: usize) -> usize {
    if l <= 64 {
        64
    } else if l <= 128 {
        128
    } else {
        l
    }
}

/// Writes `tags` (none, one or two, 4 bytes each) at the start of `to`,
/// with fixed-size copies: a copy of a length known only at run time is
/// a call into memmove, which cost as much as the rest of a tagged
/// frame's rewrite.
#[inline(always)]
fn put_tags(to: &mut [u8], tags: &[u8]) {
    match (tags.first_chunk::<8>(), tags.first_chunk::<4>()) {
        (Some(t), _) if tags.len() == 8 => {
            if let Some(d) = to.first_chunk_mut::<8>() {
                *d = *t;
            }
        }
        (_, Some(t)) if tags.len() == 4 => {
            if let Some(d) = to.first_chunk_mut::<4>() {
                *d = *t;
            }
        }
        _ => {}
    }
}

/// Where the burst's own buffer `i` starts in `data`.
#[inline(always)]
const fn base(i: usize) -> usize {
    HEADROOM + i * STRIDE
}

/// A burst of frames. Each frame lives in one of the burst's own
/// preallocated buffers, or outside it (a DPDK mbuf's data, received
/// in place: zero copy), in which case its port's `handle` goes with it.
/// The pipeline parses, classifies and rewrites frames where they are.
pub struct Burst {
    data: Vec<u8>,
    ptrs: [*mut u8; MAX_BURST],
    lens: [u16; MAX_BURST],
    handles: [usize; MAX_BURST],
    len: usize,
    /// The frames whose start or length [`Burst::set_tags`] changed, a
    /// bit each: a port that sends lent buffers as they are (DPDK's
    /// mbufs) tells its device where those now start.
    moved: u64,
    /// Per frame, how far its start has moved since it was received
    /// (negative: back, into the room before it).
    shift: [i16; MAX_BURST],
}

impl Default for Burst {
    fn default() -> Self {
        Burst::new()
    }
}

impl Burst {
    /// An empty burst with room for [`MAX_BURST`] frames.
    pub fn new() -> Burst {
        Burst {
            data: vec![0; base(MAX_BURST)],
            ptrs: [std::ptr::null_mut(); MAX_BURST],
            lens: [0; MAX_BURST],
            handles: [0; MAX_BURST],
            len: 0,
            moved: 0,
            shift: [0; MAX_BURST],
        }
    }

    /// Frames held.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the burst holds no frame.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the burst (keeping its buffers). Frames held outside it
    /// must have been released by their port ([`Port::release`](super::Port::release)).
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        if self.moved != 0 {
            self.moved = 0;
            self.shift = [0; MAX_BURST];
        }
    }

    /// The frames [`Burst::set_tags`] moved or resized, a bit each
    /// (frame `i` at bit `i`).
    #[inline]
    pub fn moved(&self) -> u64 {
        self.moved
    }

    /// Replaces the `old` bytes of VLAN tags that follow frame `i`'s
    /// source MAC with `tags` (TPID and TCI each, outer first: 4 or 8
    /// bytes; empty to pop them all). The MACs move by the difference and
    /// the rest of the frame stays where it is: the frame starts earlier
    /// when tags are pushed (into the [`TAG_ROOM`] bytes every buffer has
    /// before it) and later when they are popped. False, with nothing
    /// done, for a frame shorter than its MACs and tags, or one whose
    /// start would move more than [`TAG_ROOM`] bytes before where it was
    /// received.
    #[inline]
    #[allow(unsafe_code)]
    pub fn set_tags(&mut self, i: usize, old: usize, tags: &[u8]) -> bool {
        assert!(i < self.len);
        let len = self.lens[i] as usize;
        let p = self.ptrs[i];
        let shift = self.shift[i] as isize + old as isize - tags.len() as isize;
        if len < 12 + old || !matches!(tags.len(), 0 | 4 | 8) || shift < -(TAG_ROOM as isize) {
            return false;
        }
        if tags.len() == old {
            // A swap: the frame stays.
            put_tags(&mut self.frame_mut(i)[12..], tags);
            return true;
        }
        let to = p.wrapping_add(old).wrapping_sub(tags.len());
        // SAFETY: the frame's `len >= 12 + old` bytes at `p` are ours
        // (as in `frame_mut`), and so are the `TAG_ROOM` bytes before
        // where it was received: the burst's own buffers have `HEADROOM`
        // bytes in front, a lending port guarantees `TAG_ROOM`
        // (`commit_slots`). `to` is at most `TAG_ROOM` before that start
        // (`shift`, checked above) and at most `old` after `p`, so the 12
        // MAC bytes moved (`copy`: the two may overlap) stay inside those
        // bytes. The tags are written after them through the frame's new
        // slice.
        unsafe {
            std::ptr::copy(p, to, 12);
        }
        self.ptrs[i] = to;
        self.lens[i] = (len - old + tags.len()) as u16;
        self.shift[i] = shift as i16;
        self.moved |= 1 << i;
        put_tags(&mut self.frame_mut(i)[12..], tags);
        true
    }

    /// Frame `i` (panics if `i` is not below [`Burst::len`]).
    #[inline]
    #[allow(unsafe_code)]
    pub fn frame(&self, i: usize) -> &[u8] {
        assert!(i < self.len);
        // SAFETY: frame `i < len` points to `lens[i]` bytes that stay
        // valid while it is held: one of our buffers (inside `data`,
        // whose heap block never moves), or an external frame whose
        // validity `commit_slots`'s caller guaranteed.
        unsafe { std::slice::from_raw_parts(self.ptrs[i], self.lens[i] as usize) }
    }

    /// Frame `i`'s length (0 past the burst's room): one load, without
    /// the slice [`Burst::frame`] makes.
    #[inline(always)]
    pub fn frame_len(&self, i: usize) -> usize {
        self.lens.get(i).copied().unwrap_or(0) as usize
    }

    /// The bytes of the frames `which` lists (one not held counts 0): what
    /// a port sends, summed from the lengths alone.
    #[inline]
    pub fn bytes_of(&self, which: &[u8]) -> u64 {
        let lens = &self.lens[..self.len.min(MAX_BURST)];
        which
            .iter()
            .map(|&i| lens.get(i as usize).copied().unwrap_or(0) as u64)
            .sum()
    }

    /// The bytes of frames `first..len`: what one receive appended, summed
    /// from the lengths alone (a port counts received bytes a burst, not
    /// a frame: one add instead of a store per frame).
    #[inline]
    pub fn bytes_from(&self, first: usize) -> u64 {
        let end = self.len.min(MAX_BURST);
        self.lens[first.min(end)..end]
            .iter()
            .map(|&l| l as u64)
            .sum()
    }

    /// Frame `i`, writable (panics if `i` is not below [`Burst::len`]).
    #[inline]
    #[allow(unsafe_code)]
    pub fn frame_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(i < self.len);
        // SAFETY: as in `frame`; frames never overlap, and `&mut self`
        // makes this the only live view.
        unsafe { std::slice::from_raw_parts_mut(self.ptrs[i], self.lens[i] as usize) }
    }

    /// The port handle of frame `i` (0: the frame is in our buffers).
    #[inline]
    pub fn handle(&self, i: usize) -> usize {
        self.handles[i]
    }

    /// The port handles of all frames (0: in our buffers, or taken).
    #[inline]
    pub fn handles(&self) -> &[usize] {
        &self.handles[..self.len]
    }

    /// Takes the handle of frame `i` (a port that sent the external frame
    /// itself, zero copy); its receiving port will not release it.
    #[inline]
    pub fn take_handle(&mut self, i: usize) -> usize {
        std::mem::take(&mut self.handles[i])
    }

    #[inline]
    #[allow(unsafe_code)]
    fn own_buffer(&mut self, i: usize) -> *mut u8 {
        // SAFETY: `i < MAX_BURST`, so the offset is inside `data`.
        unsafe { self.data.as_mut_ptr().add(base(i)) }
    }

    /// Appends a frame by writing it into the next buffer (what a NIC's
    /// DMA does); frames longer than [`FRAME_CAP`] are cut. Returns false
    /// when the burst is full.
    #[inline(always)]
    pub fn push(&mut self, frame: &[u8]) -> bool {
        let i = self.len;
        if i >= MAX_BURST {
            return false;
        }
        let n = frame.len().min(FRAME_CAP);
        // One bounds check for the buffer (always inside `data`); the
        // slot arrays are indexed below `MAX_BURST`.
        let Some(buf) = self.data.get_mut(base(i)..base(i) + FRAME_CAP) else {
            return false;
        };
        if (32..=64).contains(&n) {
            // Two fixed 32-byte copies that overlap in the middle: inline
            // vector moves instead of a call into memmove, whose dispatch
            // cost as much as the copy for minimum-size frames.
            buf[..32].copy_from_slice(&frame[..32]);
            buf[n - 32..n].copy_from_slice(&frame[n - 32..n]);
        } else {
            buf[..n].copy_from_slice(&frame[..n]);
        }
        self.ptrs[i] = buf.as_mut_ptr();
        self.lens[i] = n as u16;
        self.handles[i] = 0;
        self.len = i + 1;
        true
    }

    /// Appends frames laid out `stride` bytes apart in `src`, frame `j`
    /// at `j * stride` and `lens[j]` bytes long, as [`Burst::push`] would
    /// one by one, until the burst is full; frames running past `src`'s
    /// end are cut there. Returns how many it appended. The bounds of the
    /// buffers are checked once for the run instead of once a frame (a
    /// generator's receive is mostly this copy).
    #[inline]
    pub fn push_strided(&mut self, src: &[u8], stride: usize, lens: &[u16]) -> usize {
        let start = self.len;
        let n = lens.len().min(MAX_BURST - start);
        if let Some(n) = self.push_strided_whole(src, stride, &lens[..n]) {
            return n;
        }
        let frames = src.chunks(stride.max(1)).zip(&lens[..n]);
        let bufs = self.data[base(start)..].chunks_exact_mut(STRIDE);
        let mut done = 0;
        for ((f, &len), buf) in frames.zip(bufs) {
            let f = &f[..(len as usize).min(f.len()).min(FRAME_CAP)];
            let n = f.len();
            if let (64, Some(to), Some(from)) =
                (n, buf.first_chunk_mut::<64>(), f.first_chunk::<64>())
            {
                // Minimum-size frames, the generator's usual: one fixed
                // copy.
                *to = *from;
            } else if (32..=64).contains(&n) {
                // As in `push`.
                buf[..32].copy_from_slice(&f[..32]);
                buf[n - 32..n].copy_from_slice(&f[n - 32..n]);
            } else {
                buf[..n].copy_from_slice(f);
            }
            let i = start + done;
            self.ptrs[i] = buf.as_mut_ptr();
            self.lens[i] = n as u16;
            self.handles[i] = 0;
            done += 1;
        }
        self.len = start + done;
        done
    }

    /// [`Burst::push_strided`] of a run that fits: every frame at most
    /// [`FRAME_CAP`] and `stride` long and wholly inside `src` (the whole
    /// lines copied of it too), as a generator's arena holds them, and room for
    /// all. Those bounds are checked once for the run, then each frame is
    /// one copy and three stores (the general loop's cuts and checks
    /// would be a good part of io mode's work).
    /// `None`, having done nothing, for any other run.
    #[inline(always)]
    #[allow(unsafe_code)]
    fn push_strided_whole(&mut self, src: &[u8], stride: usize, lens: &[u16]) -> Option<usize> {
        let start = self.len;
        let n = lens.len();
        let longest = lens.iter().copied().max().unwrap_or(0) as usize;
        if n == 0
            || start + n > MAX_BURST
            || longest > FRAME_CAP.min(stride)
            || (n - 1).checked_mul(stride)?.checked_add(copied(longest))? > src.len()
            || self.data.len() < base(start + n)
        {
            return None;
        }
        let slots = self.ptrs[start..start + n]
            .iter_mut()
            .zip(&mut self.lens[start..start + n])
            .zip(&mut self.handles[start..start + n])
            .zip(lens);
        let mut from = src.as_ptr();
        // SAFETY: `start + n <= MAX_BURST` and `data` holds `base(start +
        // n)` bytes (both checked above), so buffer `start` is inside
        // `data`.
        let mut to = unsafe { self.data.as_mut_ptr().add(base(start)) };
        for (((ptr, len), handle), &l) in slots {
            let l = l as usize;
            // SAFETY: the `j`-th frame of the run starts at `from = src +
            // j * stride`, and `copied(l) <= copied(longest)` bytes from
            // there are inside `src` since `(n - 1) * stride +
            // copied(longest) <= src.len()`; `to` is buffer `start + j`,
            // `FRAME_CAP >= copied(l)` bytes inside `data` (checked
            // above); `src` never overlaps `data`, which `&mut self` owns.
            unsafe {
                if l <= 64 {
                    // Minimum-size frames, the generator's usual: one
                    // fixed copy of 64 bytes, inline, whatever the length
                    // (the bytes past the frame are the buffer's own; the
                    // compiler merges an exact 64-byte copy with the other
                    // branch into a call of memcpy).
                    let f = std::ptr::read_unaligned(from as *const [u8; 64]);
                    std::ptr::write_unaligned(to as *mut [u8; 64], f);
                } else if l <= 128 {
                    // Up to two lines (a tagged IPv6 frame's 66 bytes):
                    // two fixed copies, not a call.
                    let f = std::ptr::read_unaligned(from as *const [u8; 64]);
                    std::ptr::write_unaligned(to as *mut [u8; 64], f);
                    let g = std::ptr::read_unaligned(from.add(64) as *const [u8; 64]);
                    std::ptr::write_unaligned(to.add(64) as *mut [u8; 64], g);
                } else {
                    std::ptr::copy_nonoverlapping(from, to, l);
                }
            }
            *ptr = to;
            *len = l as u16;
            *handle = 0;
            // Past the ends after the last frame, never read there.
            from = from.wrapping_add(stride);
            to = to.wrapping_add(STRIDE);
        }
        self.len = start + n;
        Some(n)
    }

    /// The buffer of the next frame, to be filled in place and committed
    /// with [`Burst::commit`] (for ports that write frames directly).
    #[inline]
    pub fn next_buffer(&mut self) -> Option<&mut [u8]> {
        if self.len == MAX_BURST {
            return None;
        }
        let at = base(self.len);
        Some(&mut self.data[at..at + FRAME_CAP])
    }

    /// Commits the frame written into [`Burst::next_buffer`].
    #[inline]
    pub fn commit(&mut self, len: usize) {
        self.ptrs[self.len] = self.own_buffer(self.len);
        self.lens[self.len] = len.min(FRAME_CAP) as u16;
        self.handles[self.len] = 0;
        self.len += 1;
    }

    /// The free frame slots, for a port that receives frames in place in
    /// bulk (a DPDK shim filling the arrays directly): where the next
    /// frames' pointers, lengths and handles go, and how many fit. The
    /// port commits what it filled with [`Burst::commit_slots`].
    #[inline]
    #[allow(unsafe_code)]
    pub fn free_slots(&mut self) -> Slots {
        // SAFETY: `len <= MAX_BURST`: each pointer is within its array
        // or one past its end (with `room` 0).
        unsafe {
            Slots {
                ptrs: self.ptrs.as_mut_ptr().add(self.len),
                lens: self.lens.as_mut_ptr().add(self.len),
                handles: self.handles.as_mut_ptr().add(self.len),
                room: MAX_BURST - self.len,
            }
        }
    }

    /// Commits `n` frames written into the [`Burst::free_slots`]: frames
    /// that stay where they are, outside the burst (zero copy), each with
    /// its port's handle.
    ///
    /// # Safety
    /// `n` is at most the slots' `room`; each of the `n` slots holds a
    /// non-zero handle, and a pointer to as many writable bytes as its
    /// length says, with [`TAG_ROOM`] writable bytes before them (where
    /// [`Burst::set_tags`] pushes tags), which nothing else reads or
    /// writes until the frame is
    /// released (its handle taken, or the burst handed to
    /// [`Port::release`](super::Port::release)) and the burst cleared.
    #[inline]
    #[allow(unsafe_code)]
    pub unsafe fn commit_slots(&mut self, n: usize) {
        debug_assert!(self.len + n <= MAX_BURST);
        self.len += n;
    }

    /// The handles and lengths of all slots, for a port that sends
    /// external frames in bulk and takes (zeroes) the handles of those it
    /// sent. Writing anything but 0 into a handle is not allowed.
    #[inline]
    pub fn raw_handles(&mut self) -> (*mut usize, *const u16) {
        (self.handles.as_mut_ptr(), self.lens.as_ptr())
    }
}

/// Raw views of a burst's free frame slots ([`Burst::free_slots`]).
pub struct Slots {
    /// Where the frames' pointers go.
    pub ptrs: *mut *mut u8,
    /// Where their lengths go.
    pub lens: *mut u16,
    /// Where their ports' handles go.
    pub handles: *mut usize,
    /// How many slots are free.
    pub room: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use routecache::gen::Rng;

    /// `push_strided` appends what `push` of each frame would: the same
    /// frames, cut alike, up to the same fullness; for random lengths
    /// (around the copy's 32 and 64 byte paths and past the cap), strides
    /// and bursts already partly filled, and sources that end mid-frame.
    #[test]
    fn strided_pushes_are_single_pushes() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut next = move || rng.next_u64();
        let mut whole_runs = 0;
        for round in 0..3000 {
            let stride = [1, 31, 64, 65, 128, 2112, 2200][next() as usize % 7];
            let frames = next() as usize % 80;
            let lens: Vec<u16> = (0..frames)
                .map(|_| match next() % 4 {
                    0 => 64,
                    1 => (30 + next() % 40) as u16,
                    2 => (next() % stride as u64 + 1) as u16,
                    _ => (next() % 2100) as u16,
                })
                .collect();
            let mut src: Vec<u8> = (0..frames * stride + stride)
                .map(|_| next() as u8)
                .collect();
            if round % 5 == 0 {
                src.truncate(next() as usize % (src.len() + 1));
            }
            let (mut want, mut got) = (Burst::new(), Burst::new());
            for _ in 0..next() % 70 {
                let f = [next() as u8; 60];
                want.push(&f);
                got.push(&f);
            }
            let start = want.len();
            let mut pushed = 0;
            for (j, &len) in lens.iter().enumerate() {
                let from = (j * stride).min(src.len());
                let f = &src[from..];
                if !want.push(&f[..(len as usize).min(f.len()).min(stride)]) {
                    break;
                }
                pushed += 1;
            }
            let cut: Vec<u16> = lens.iter().map(|&l| l.min(stride as u16)).collect();
            // A run only ever gets frames that start inside `src`.
            let whole = src.len().div_ceil(stride).min(cut.len());
            let run = &cut[..whole.min(MAX_BURST - start)];
            let longest = run.iter().copied().max().unwrap_or(0) as usize;
            if !run.is_empty()
                && longest <= FRAME_CAP
                && (run.len() - 1) * stride + copied(longest) <= src.len()
            {
                // What `push_strided_whole` takes.
                whole_runs += 1;
            }
            let n = got.push_strided(&src, stride, &cut[..whole]);
            assert_eq!(n, pushed.min(whole), "round {round}");
            assert_eq!(got.len(), start + n);
            for i in 0..got.len() {
                assert_eq!(got.frame(i), want.frame(i), "round {round} frame {i}");
                assert_eq!(got.handle(i), 0);
            }
        }
        // Both ways are taken, the one for whole runs often.
        assert!(
            (1000..2900).contains(&whole_runs),
            "{whole_runs} whole runs"
        );
    }

    /// `bytes_of` sums the listed frames' lengths, repeats included, and
    /// counts an index past the burst's frames as 0.
    #[test]
    fn bytes_of_sums_the_listed_frames() {
        let mut b = Burst::new();
        for n in [60, 64, 1500] {
            b.push(&vec![1; n]);
        }
        assert_eq!(b.bytes_of(&[]), 0);
        assert_eq!(b.bytes_of(&[0, 2]), 1560);
        assert_eq!(b.bytes_of(&[1, 1, 3, 63, 255]), 128);
        b.clear();
        assert_eq!(b.bytes_of(&[0, 1, 2]), 0);
    }

    #[test]
    fn bytes_from_sums_what_a_receive_appended() {
        let mut b = Burst::new();
        assert_eq!(b.bytes_from(0), 0);
        for n in [60, 64, 1500] {
            b.push(&vec![1; n]);
        }
        assert_eq!(b.bytes_from(0), 1624);
        assert_eq!(b.bytes_from(1), 1564);
        assert_eq!(b.bytes_from(3), 0);
        assert_eq!(b.bytes_from(200), 0);
    }

    /// Tags pushed, swapped and popped leave the frame's MACs first and
    /// everything after the old tags as it was, in our buffers (the
    /// first one too) and up to the room there is.
    #[test]
    fn tags_are_pushed_swapped_and_popped() {
        let mut b = Burst::new();
        let plain: Vec<u8> = (0..64u8).collect();
        for _ in 0..3 {
            b.push(&plain);
        }
        let tag = [0x81, 0, 0, 100];
        let two = [0x88, 0xa8, 0, 200, 0x81, 0, 0, 7];
        assert!(b.set_tags(0, 0, &tag));
        assert!(b.set_tags(1, 0, &two));
        let mut want = plain[..12].to_vec();
        want.extend(tag);
        want.extend(&plain[12..]);
        assert_eq!(b.frame(0), &want[..]);
        assert_eq!(b.frame(1)[12..20], two);
        assert_eq!(b.frame(1)[20..], plain[12..]);
        assert_eq!(b.moved(), 0b11);
        // A swap of the same length, then popped and pushed again: the
        // frame is where it was received, then back by 8 again.
        assert!(b.set_tags(0, 4, &[0x81, 0, 0, 5]));
        assert_eq!(b.frame(0)[12..16], [0x81, 0, 0, 5]);
        assert!(b.set_tags(0, 4, &[]));
        assert_eq!(b.frame(0), &plain[..]);
        assert!(b.set_tags(0, 0, &two));
        assert!(
            !b.set_tags(0, 8, &[0; 8][..4].repeat(3)),
            "12 bytes of tags"
        );
        assert!(b.set_tags(0, 8, &[]));
        // Back by more than the room: refused.
        assert!(b.set_tags(1, 8, &tag));
        assert!(b.set_tags(1, 4, &two));
        assert!(!b.set_tags(1, 0, &tag), "12 bytes back");
        // Popped: the frame starts 4 bytes later.
        assert!(b.set_tags(2, 4, &[]));
        assert_eq!(b.frame(2).len(), 60);
        assert_eq!(b.frame(2)[..12], plain[..12]);
        assert_eq!(b.frame(2)[12..], plain[16..]);
        // Too short, or too much pushed.
        b.push(&plain[..13]);
        assert!(!b.set_tags(3, 4, &[]));
        assert!(!b.set_tags(3, 0, &[0; 12]));
        b.clear();
        assert_eq!(b.moved(), 0);
    }

    /// Frames written through the raw slots are the burst's next frames;
    /// zeroing a handle through the raw view is what `take_handle` does.
    #[test]
    #[allow(unsafe_code)]
    fn slots_fill_and_handles_are_taken() {
        let mut outside = [[0u8; 60]; 3];
        for (i, f) in outside.iter_mut().enumerate() {
            f[0] = i as u8 + 1;
        }
        let mut b = Burst::new();
        assert!(b.push(&[9; 64]));
        let s = b.free_slots();
        assert_eq!(s.room, MAX_BURST - 1);
        // SAFETY: three slots of the room; the frames outlive the burst's
        // use of them below.
        unsafe {
            for (k, f) in outside.iter_mut().enumerate() {
                *s.ptrs.add(k) = f.as_mut_ptr();
                *s.lens.add(k) = 60 - k as u16;
                *s.handles.add(k) = 100 + k;
            }
            b.commit_slots(3);
        }
        assert_eq!(b.len(), 4);
        assert_eq!(b.handle(0), 0);
        for k in 0..3 {
            assert_eq!(b.frame(k + 1)[0], k as u8 + 1);
            assert_eq!(b.frame(k + 1).len(), 60 - k);
            assert_eq!(b.handle(k + 1), 100 + k);
        }
        let (h, lens) = b.raw_handles();
        // SAFETY: index 2 is a frame of the burst.
        unsafe {
            assert_eq!(*lens.add(2), 59);
            *h.add(2) = 0;
        }
        assert_eq!(b.take_handle(2), 0);
        assert_eq!(b.take_handle(3), 102);
        assert_eq!(b.free_slots().room, MAX_BURST - 4);
    }
}
