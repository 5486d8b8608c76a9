//! The `af_xdp` driver: a Linux interface through an AF_XDP socket.
//!
//! An XDP program on the interface (loaded here, no libbpf: six BPF
//! instructions) redirects every frame of a receive queue to the socket
//! registered for that queue in an `XSKMAP`, and passes frames of queues
//! without one to the kernel. One program and map per interface and
//! process, shared by the workers' sockets (one per worker and port, bound
//! to the receive queue of the worker's index), detached when the last of
//! them closes (the program is attached through a BPF link, which the
//! kernel also removes if the process dies).
//!
//! Each socket has its own UMEM: half its frames feed the fill ring
//! (receive), half are free for transmission. Receive copies a frame into
//! the burst and puts its UMEM frame straight back on the fill ring;
//! transmit copies into a free frame, queues a descriptor and kicks the
//! kernel with one `sendto` per burst; completed frames are reclaimed on
//! the next transmit. No system call on receive unless the kernel asks to
//! be woken (`XDP_USE_NEED_WAKEUP`).
//!
//! Only frames for us are passed on (destination MAC the port's own, and
//! ARP); where the configured MAC differs from the interface's, the
//! interface is put in promiscuous mode while the port is open.
//!
//! Options (`[port.options]`): `interface` (default: the port's name),
//! `frames` (UMEM frames per socket, a power of two from 64 to 65536,
//! default 4096), `xdp_mode` (`native`, `skb` or `auto`, default `auto`:
//! native where the driver has it, else generic), `zero_copy` (`auto`
//! default: the kernel decides; `false` forces copy mode).
#![allow(unsafe_code)]

use super::burst::{Burst, MAX_BURST};
use super::linux::{self, os_err, setsockopt, Mapping, Throttled};
use super::queue::{Port, PortStats};
use crate::wire;
use config::driver::{AfXdpOptions, XdpMode};
use config::Config;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{
    AtomicU32,
    Ordering::{Acquire, Release},
};
use std::sync::{Arc, Mutex, Weak};

/// Bytes per UMEM frame.
const FRAME: usize = 2048;
/// Descriptors a copy-mode send takes at most (the kernel's
/// `TX_BATCH_SIZE`); it answers `EAGAIN` for the rest.
const KERNEL_TX_BATCH: usize = 32;

/// The `bpf(2)` system call on a 128-byte attribute block, for a command
/// that returns a descriptor.
fn bpf(cmd: u32, attr: &mut [u8; 128]) -> io::Result<OwnedFd> {
    // SAFETY: the kernel reads (and for some commands writes) at most the
    // size passed of `attr`, which we own; pointers inside it point to
    // live data of the caller.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: only called with commands that return a new descriptor
    // (map create, program load, link create), which we now own; the
    // others go through `bpf_no_fd`.
    Ok(unsafe { OwnedFd::from_raw_fd(r as i32) })
}

/// `bpf(2)` for a command that returns no descriptor.
fn bpf_no_fd(cmd: u32, attr: &mut [u8; 128]) -> io::Result<()> {
    // SAFETY: as in `bpf`.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn put32(a: &mut [u8; 128], at: usize, v: u32) {
    a[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

fn put64(a: &mut [u8; 128], at: usize, v: u64) {
    a[at..at + 8].copy_from_slice(&v.to_ne_bytes());
}

const BPF_MAP_CREATE: u32 = 0;
const BPF_MAP_UPDATE_ELEM: u32 = 2;
const BPF_PROG_LOAD: u32 = 5;
const BPF_LINK_CREATE: u32 = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
/// Queues an interface's map can serve.
const MAX_QUEUES: u32 = 64;

/// One BPF instruction.
fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    let mut b = [0u8; 8];
    b[0] = code;
    b[1] = (src << 4) | dst;
    b[2..4].copy_from_slice(&off.to_le_bytes());
    b[4..8].copy_from_slice(&imm.to_le_bytes());
    u64::from_ne_bytes(b)
}

/// `return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);`
fn program(map_fd: i32) -> [u64; 6] {
    [
        // r2 = *(u32 *)(r1 + offsetof(struct xdp_md, rx_queue_index))
        insn(0x61, 2, 1, 16, 0),
        // r1 = the map (64-bit immediate, BPF_PSEUDO_MAP_FD)
        insn(0x18, 1, 1, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        // r3 = XDP_PASS: what a queue without a socket does
        insn(0xb7, 3, 0, 0, 2),
        // call bpf_redirect_map
        insn(0x85, 0, 0, 0, 51),
        insn(0x95, 0, 0, 0, 0),
    ]
}

/// An interface's XDP program, map and link, shared by its sockets.
struct Attachment {
    map: OwnedFd,
    _prog: OwnedFd,
    _link: OwnedFd,
    /// The interface was put in promiscuous mode for us (undone on drop).
    _promisc: Option<OwnedFd>,
}

/// Attachments by interface index, while any socket uses them.
static ATTACHED: Mutex<Option<HashMap<u32, Weak<Attachment>>>> = Mutex::new(None);

fn attach(ifindex: u32, mode: XdpMode, promisc: bool) -> Result<Arc<Attachment>, String> {
    let mut reg = ATTACHED.lock().unwrap_or_else(|e| e.into_inner());
    let reg = reg.get_or_insert_with(HashMap::new);
    if let Some(a) = reg.get(&ifindex).and_then(Weak::upgrade) {
        return Ok(a);
    }
    let mut a = [0u8; 128];
    put32(&mut a, 0, BPF_MAP_TYPE_XSKMAP);
    put32(&mut a, 4, 4);
    put32(&mut a, 8, 4);
    put32(&mut a, 12, MAX_QUEUES);
    let map = bpf(BPF_MAP_CREATE, &mut a)
        .map_err(|e| format!("creating the XSKMAP (needs CAP_BPF / root): {e}"))?;
    let insns = program(map.as_raw_fd());
    let license = c"GPL";
    let mut log = vec![0u8; 4096];
    let mut a = [0u8; 128];
    put32(&mut a, 0, BPF_PROG_TYPE_XDP);
    put32(&mut a, 4, insns.len() as u32);
    put64(&mut a, 8, insns.as_ptr() as u64);
    put64(&mut a, 16, license.as_ptr() as u64);
    put32(&mut a, 24, 1);
    put32(&mut a, 28, log.len() as u32);
    put64(&mut a, 32, log.as_mut_ptr() as u64);
    a[48..48 + 9].copy_from_slice(b"fwd_xsks\0");
    put32(&mut a, 68, BPF_XDP);
    let prog = bpf(BPF_PROG_LOAD, &mut a).map_err(|e| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        format!(
            "loading the XDP program: {e} {}",
            String::from_utf8_lossy(&log[..end]).trim()
        )
    })?;
    let modes: &[u32] = match mode {
        XdpMode::Native => &[XDP_FLAGS_DRV_MODE],
        XdpMode::Skb => &[XDP_FLAGS_SKB_MODE],
        XdpMode::Auto => &[XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE],
    };
    let mut last = None;
    let mut link = None;
    for &flags in modes {
        let mut a = [0u8; 128];
        put32(&mut a, 0, prog.as_raw_fd() as u32);
        put32(&mut a, 4, ifindex);
        put32(&mut a, 8, BPF_XDP);
        put32(&mut a, 12, flags);
        match bpf(BPF_LINK_CREATE, &mut a) {
            Ok(l) => {
                link = Some(l);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(link) = link else {
        return Err(format!(
            "attaching the XDP program: {} (another XDP program on the interface?)",
            last.map(|e| e.to_string()).unwrap_or_default()
        ));
    };
    let promisc = if promisc {
        Some(promiscuous(ifindex)?)
    } else {
        None
    };
    let at = Arc::new(Attachment {
        map,
        _prog: prog,
        _link: link,
        _promisc: promisc,
    });
    reg.insert(ifindex, Arc::downgrade(&at));
    Ok(at)
}

/// A packet socket whose membership keeps the interface promiscuous until
/// it is closed.
fn promiscuous(ifindex: u32) -> Result<OwnedFd, String> {
    let fd = linux::socket(
        libc::AF_PACKET,
        libc::SOCK_RAW,
        "packet socket for promiscuous mode",
    )?;
    linux::add_promiscuous(&fd, ifindex).map_err(|e| format!("promiscuous mode: {e}"))?;
    Ok(fd)
}

/// One of the four rings shared with the kernel: a producer index, a
/// consumer index, flags and `size` descriptors of type `T`.
struct Ring<T> {
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut T,
    mask: u32,
    /// The pointers above point into it.
    _map: Mapping,
}

impl<T> Ring<T> {
    /// Maps a ring of `size` entries at page offset `pgoff` of the socket.
    fn map(
        fd: &OwnedFd,
        off: &libc::xdp_ring_offset,
        size: u32,
        pgoff: u64,
    ) -> Result<Ring<T>, String> {
        let len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        let map = Mapping::new(Some(fd), len, pgoff).map_err(|e| format!("a ring: {e}"))?;
        let at = |o: u64| map.ptr().wrapping_add(o as usize);
        // The offsets the kernel gave lie inside the mapping, and the
        // indices and flags are aligned 32-bit words.
        Ok(Ring {
            producer: at(off.producer) as *const AtomicU32,
            consumer: at(off.consumer) as *const AtomicU32,
            flags: at(off.flags) as *const AtomicU32,
            desc: at(off.desc) as *mut T,
            mask: size - 1,
            _map: map,
        })
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into our mapping, which lives as long as `self`;
        // shared with the kernel, hence atomic.
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as `producer`.
        unsafe { &*self.consumer }
    }

    fn needs_wakeup(&self) -> bool {
        // SAFETY: as `producer`.
        unsafe { &*self.flags }.load(Acquire) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    /// Entry `i` (any index: masked).
    ///
    /// # Safety
    /// The entry must be ours: between the consumer and the producer of a
    /// ring we consume, or past the producer of one we fill.
    unsafe fn at(&self, i: u32) -> *mut T {
        // SAFETY: `i & mask < size`: inside the descriptor array.
        unsafe { self.desc.add((i & self.mask) as usize) }
    }
}

/// One worker's queue of a Linux interface.
pub struct AfXdpPort {
    name: String,
    mac: [u8; 6],
    /// The port has addresses: IPv6 multicast (neighbour discovery) is
    /// for us too.
    router: bool,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    /// UMEM frames free for transmission (their offsets).
    free_tx: Vec<u64>,
    /// Transmitted frames the kernel may still hold.
    tx_outstanding: u32,
    /// The kernel left descriptors on the transmit ring at the last
    /// kick: the next poll kicks again.
    tx_pending: bool,
    umem: Mapping,
    fd: OwnedFd,
    _attached: Arc<Attachment>,
    stats: PortStats,
    /// The kernel's receive drops (`XDP_STATISTICS`).
    kernel_drops: Throttled,
}

// SAFETY: the raw pointers point into the port's own mappings, which move
// with it; nothing else holds them.
unsafe impl Send for AfXdpPort {}

impl AfXdpPort {
    /// Opens queue `queue` of port `index` of `cfg` on its interface.
    pub fn open(
        cfg: &Config,
        index: usize,
        queue: usize,
        o: &AfXdpOptions,
    ) -> Result<AfXdpPort, String> {
        let p = &cfg.ports[index];
        let ctx = |e: String| {
            format!(
                "{}: port `{}` on interface `{}` (af_xdp, queue {queue}): {e}",
                p.at, p.name, o.interface
            )
        };
        if queue as u32 >= MAX_QUEUES {
            return Err(ctx(format!("at most {MAX_QUEUES} queues")));
        }
        let ifindex = linux::ifindex(&o.interface).map_err(ctx)?;
        let fd = linux::socket(
            libc::AF_XDP,
            libc::SOCK_RAW,
            "AF_XDP socket (needs root and XDP sockets)",
        )
        .map_err(ctx)?;
        let umem =
            Mapping::new(None, o.frames * FRAME, 0).map_err(|e| ctx(format!("the UMEM: {e}")))?;
        let half = (o.frames / 2) as u32;
        let (rx, tx, fill, comp) = umem_rings(&fd, &umem, half).map_err(ctx)?;
        let attached = linux::interface_mac(&o.interface)
            .and_then(|m| attach(ifindex, o.mode, m != p.mac))
            .map_err(ctx)?;
        let port = AfXdpPort {
            name: p.name.clone(),
            mac: p.mac,
            router: cfg.addressed(index),
            rx,
            tx,
            fill,
            comp,
            free_tx: (half..2 * half).map(|f| f as u64 * FRAME as u64).collect(),
            tx_outstanding: 0,
            tx_pending: false,
            umem,
            fd,
            _attached: attached,
            stats: PortStats::default(),
            kernel_drops: Throttled::default(),
        };
        // The first half of the frames on the fill ring.
        for f in 0..half {
            // SAFETY: the fill ring is empty and has `half` entries.
            unsafe { *port.fill.at(f) = f as u64 * FRAME as u64 };
        }
        port.fill.producer().store(half, Release);

        let mut flags = libc::XDP_USE_NEED_WAKEUP;
        if !o.zero_copy {
            flags |= libc::XDP_COPY;
        }
        let sxdp = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue as u32,
            sxdp_shared_umem_fd: 0,
        };
        linux::bind(&port.fd, &sxdp)
            .map_err(|e| ctx(format!("bind (does the interface have this queue?): {e}")))?;
        // Register the socket for its queue: from now on the program
        // redirects the queue's frames to it.
        let (key, value) = (queue as u32, port.fd.as_raw_fd() as u32);
        let mut a = [0u8; 128];
        put32(&mut a, 0, port._attached.map.as_raw_fd() as u32);
        put64(&mut a, 8, &key as *const u32 as u64);
        put64(&mut a, 16, &value as *const u32 as u64);
        bpf_no_fd(BPF_MAP_UPDATE_ELEM, &mut a)
            .map_err(|e| ctx(format!("registering the socket in the XSKMAP: {e}")))?;
        Ok(port)
    }

    /// Frame `addr`'s bytes in the UMEM.
    ///
    /// # Safety
    /// The frame must be ours (received and not yet given back, or free
    /// for transmission), and `addr + len` within the UMEM.
    unsafe fn frame(&mut self, addr: u64, len: usize) -> &mut [u8] {
        // SAFETY: the caller's promises.
        unsafe { std::slice::from_raw_parts_mut(self.umem.ptr().add(addr as usize), len) }
    }

    /// Takes back the frames the kernel has transmitted.
    fn reclaim(&mut self) {
        let prod = self.comp.producer().load(Acquire);
        let mut cons = self.comp.consumer().load(Acquire);
        while cons != prod {
            // SAFETY: between the consumer and the producer: ours.
            let addr = unsafe { *self.comp.at(cons) };
            self.free_tx.push(addr & !(FRAME as u64 - 1));
            cons = cons.wrapping_add(1);
            self.tx_outstanding -= 1;
        }
        self.comp.consumer().store(cons, Release);
    }

    /// Kicks the kernel to send what the transmit ring holds (copy mode
    /// sends only then; zero copy when it asks). A copy-mode send takes
    /// at most [`KERNEL_TX_BATCH`] descriptors, and a burst holds up to
    /// [`MAX_BURST`]: kick until the kernel has taken the ring, a few
    /// sends at most, and leave what it still refuses (a full device
    /// queue) to the next poll. Kicking once left a burst's last frames
    /// on the ring until more traffic came.
    fn kick(&mut self) {
        for _ in 0..=MAX_BURST.div_ceil(KERNEL_TX_BATCH) {
            if linux::kick(&self.fd) {
                self.tx_pending = false;
                return;
            }
        }
        self.tx_pending = true;
    }
}

/// Registers `umem` (`2 * half` frames) with the AF_XDP socket `fd` and
/// maps its four rings of `half` entries: receive, transmit, fill,
/// completion.
#[allow(clippy::type_complexity)]
fn umem_rings(
    fd: &OwnedFd,
    umem: &Mapping,
    half: u32,
) -> Result<
    (
        Ring<libc::xdp_desc>,
        Ring<libc::xdp_desc>,
        Ring<u64>,
        Ring<u64>,
    ),
    String,
> {
    let reg = libc::xdp_umem_reg {
        addr: umem.ptr() as u64,
        len: umem.len() as u64,
        chunk_size: FRAME as u32,
        headroom: 0,
        flags: 0,
        tx_metadata_len: 0,
    };
    setsockopt(fd, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg)
        .map_err(|e| format!("XDP_UMEM_REG: {e}"))?;
    for (opt, what) in [
        (libc::XDP_UMEM_FILL_RING, "XDP_UMEM_FILL_RING"),
        (libc::XDP_UMEM_COMPLETION_RING, "XDP_UMEM_COMPLETION_RING"),
        (libc::XDP_RX_RING, "XDP_RX_RING"),
        (libc::XDP_TX_RING, "XDP_TX_RING"),
    ] {
        setsockopt(fd, libc::SOL_XDP, opt, &half)
            .map_err(|e| format!("{what} ({half} entries): {e}"))?;
    }
    let off: libc::xdp_mmap_offsets = linux::getsockopt(fd, libc::SOL_XDP, libc::XDP_MMAP_OFFSETS)
        .ok_or_else(|| os_err("XDP_MMAP_OFFSETS"))?;
    Ok((
        Ring::map(fd, &off.rx, half, libc::XDP_PGOFF_RX_RING as u64)?,
        Ring::map(fd, &off.tx, half, libc::XDP_PGOFF_TX_RING as u64)?,
        Ring::map(fd, &off.fr, half, libc::XDP_UMEM_PGOFF_FILL_RING)?,
        Ring::map(fd, &off.cr, half, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?,
    ))
}

impl Port for AfXdpPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn rx_burst(&mut self, burst: &mut Burst, max: usize) -> usize {
        // Bytes summed in a register as frames are taken, stored once.
        let mut bytes = 0u64;
        if self.tx_pending {
            self.kick();
        }
        let prod = self.rx.producer().load(Acquire);
        let mut cons = self.rx.consumer().load(Acquire);
        let fill_at = self.fill.producer().load(Acquire);
        let mac = self.mac;
        let router = self.router;
        let mut refill = 0u32;
        let mut n = 0;
        while cons != prod && n < max {
            let Some(buf) = burst.next_buffer() else {
                break;
            };
            // SAFETY: between the consumer and the producer: ours.
            let d = unsafe { std::ptr::read(self.rx.at(cons)) };
            cons = cons.wrapping_add(1);
            let (addr, len) = (d.addr, d.len as usize);
            if addr as usize + len > self.umem.len() || len > buf.len() {
                self.stats.rx_truncated += 1;
            } else {
                // SAFETY: a received frame, ours until it goes back on the
                // fill ring below.
                let data = unsafe { self.frame(addr, len) };
                let for_us = if router {
                    wire::addressed_to_router(data, mac)
                } else {
                    wire::addressed_to(data, mac)
                };
                if !for_us {
                    self.stats.rx_ignored += 1;
                } else {
                    buf[..len].copy_from_slice(data);
                    burst.commit(len);
                    bytes += len as u64;
                    n += 1;
                }
            }
            // The frame goes straight back to the kernel.
            // SAFETY: past the fill ring's producer: ours to write; the
            // ring has room for every frame we received.
            unsafe { *self.fill.at(fill_at.wrapping_add(refill)) = addr & !(FRAME as u64 - 1) };
            refill += 1;
        }
        if refill > 0 {
            self.rx.consumer().store(cons, Release);
            self.fill
                .producer()
                .store(fill_at.wrapping_add(refill), Release);
        }
        if self.fill.needs_wakeup() {
            // SAFETY: a zero-length non-blocking receive on our socket
            // wakes the kernel to refill from the fill ring.
            unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    std::ptr::null_mut(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
        }
        self.stats.rx_bytes += bytes;
        self.stats.rx += n as u64;
        n
    }

    fn tx_burst(&mut self, burst: &mut Burst, which: &[u8]) -> usize {
        if self.tx_outstanding > 0 {
            self.reclaim();
        }
        let prod = self.tx.producer().load(Acquire);
        let room = self.tx.mask + 1 - prod.wrapping_sub(self.tx.consumer().load(Acquire));
        let mut queued = 0u32;
        for &w in which {
            let f = burst.frame(w as usize);
            if f.len() > FRAME || queued == room {
                self.stats.tx_dropped += 1;
                continue;
            }
            let Some(addr) = self.free_tx.pop() else {
                self.stats.tx_dropped += 1;
                continue;
            };
            // SAFETY: a free frame: ours until its descriptor is queued.
            unsafe { self.frame(addr, f.len()) }.copy_from_slice(f);
            // SAFETY: past the producer, within the ring's room: ours.
            unsafe {
                *self.tx.at(prod.wrapping_add(queued)) = libc::xdp_desc {
                    addr,
                    len: f.len() as u32,
                    options: 0,
                }
            };
            self.stats.tx_bytes += f.len() as u64;
            queued += 1;
        }
        if queued > 0 {
            self.tx.producer().store(prod.wrapping_add(queued), Release);
            self.tx_outstanding += queued;
            self.kick();
        }
        self.stats.tx += queued as u64;
        queued as usize
    }

    fn stats(&self) -> PortStats {
        let rx_dropped = self.kernel_drops.get(|_| {
            let st: libc::xdp_statistics =
                linux::getsockopt(&self.fd, libc::SOL_XDP, libc::XDP_STATISTICS)?;
            Some(st.rx_dropped + st.rx_ring_full + st.rx_fill_ring_empty_descs)
        });
        PortStats {
            rx_dropped,
            ..self.stats
        }
    }
}
