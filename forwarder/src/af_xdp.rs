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

use crate::af_packet::{interface_name, os_err, setsockopt};
use crate::port::{Burst, Port, PortStats};
use crate::wire;
use config::{Config, PortConfig};
use std::collections::HashMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{
    AtomicU32,
    Ordering::{Acquire, Release},
};
use std::sync::{Arc, Mutex, Weak};

/// Bytes per UMEM frame.
const FRAME: usize = 2048;

/// How XDP is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver (`XDP_FLAGS_DRV_MODE`).
    Native,
    /// Generic, on socket buffers (`XDP_FLAGS_SKB_MODE`): every driver.
    Skb,
    /// Native, falling back to generic.
    Auto,
}

/// Options of an `af_xdp` port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The Linux interface.
    pub interface: String,
    /// UMEM frames per socket.
    pub frames: usize,
    /// How the program is attached.
    pub mode: XdpMode,
    /// Whether zero copy may be used (the kernel's choice) or copy mode
    /// is forced.
    pub zero_copy: bool,
}

impl Options {
    /// Reads `[port.options]`; unknown keys and bad values are errors.
    pub fn parse(p: &PortConfig) -> Result<Options, String> {
        let mut o = Options {
            interface: p.name.clone(),
            frames: 4096,
            mode: XdpMode::Auto,
            zero_copy: true,
        };
        let bad = |k: &str, want: &str| {
            format!("{}: port `{}`: option `{k}` must be {want}", p.at, p.name)
        };
        for (k, v) in &p.options {
            match k.as_str() {
                "interface" => {
                    o.interface = interface_name(v.as_str())
                        .ok_or_else(|| bad(k, "an interface name (1-15 bytes)"))?
                }
                "frames" => {
                    let n = v
                        .as_integer()
                        .filter(|n| (64..=65536).contains(n) && (*n as u64).is_power_of_two())
                        .ok_or_else(|| bad(k, "a power of two from 64 to 65536"))?;
                    o.frames = n as usize;
                }
                "xdp_mode" => {
                    o.mode = match v.as_str() {
                        Some("native") => XdpMode::Native,
                        Some("skb") => XdpMode::Skb,
                        Some("auto") => XdpMode::Auto,
                        _ => return Err(bad(k, "`native`, `skb` or `auto`")),
                    }
                }
                "zero_copy" => {
                    o.zero_copy = match (v.as_str(), v.as_bool()) {
                        (Some("auto"), _) | (_, Some(true)) => true,
                        (_, Some(false)) => false,
                        _ => return Err(bad(k, "`auto` or false")),
                    }
                }
                _ => {
                    return Err(format!(
                        "{}: port `{}`: unknown option `{k}` for the af_xdp driver \
                         (interface, frames, xdp_mode, zero_copy)",
                        p.at, p.name
                    ))
                }
            }
        }
        Ok(o)
    }
}

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
    // SAFETY: plain system call.
    let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(os_err("packet socket for promiscuous mode"));
    }
    // SAFETY: a socket we just opened and own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    crate::af_packet::add_promiscuous(&fd, ifindex)
        .map_err(|e| format!("promiscuous mode: {e}"))?;
    Ok(fd)
}

/// One of the four rings shared with the kernel: a producer index, a
/// consumer index, flags and `size` descriptors of type `T`.
struct Ring<T> {
    map: *mut u8,
    map_len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut T,
    mask: u32,
}

impl<T> Ring<T> {
    /// Maps a ring of `size` entries at page offset `pgoff` of the socket.
    fn map(
        fd: &OwnedFd,
        off: &libc::xdp_ring_offset,
        size: u32,
        pgoff: u64,
    ) -> Result<Ring<T>, String> {
        let map_len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        // SAFETY: maps the ring the socket set up for this offset, as the
        // AF_XDP interface defines.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                pgoff as libc::off_t,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(os_err("mmap of a ring"));
        }
        let map = map as *mut u8;
        // SAFETY: the offsets the kernel gave lie inside the mapping, and
        // the indices and flags are aligned 32-bit words.
        unsafe {
            Ok(Ring {
                map,
                map_len,
                producer: map.add(off.producer as usize) as *const AtomicU32,
                consumer: map.add(off.consumer as usize) as *const AtomicU32,
                flags: map.add(off.flags as usize) as *const AtomicU32,
                desc: map.add(off.desc as usize) as *mut T,
                mask: size - 1,
            })
        }
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

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
    }
}

/// One worker's queue of a Linux interface.
pub struct AfXdpPort {
    name: String,
    mac: [u8; 6],
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    /// UMEM frames free for transmission (their offsets).
    free_tx: Vec<u64>,
    /// Transmitted frames the kernel may still hold.
    tx_outstanding: u32,
    umem: *mut u8,
    umem_len: usize,
    fd: OwnedFd,
    _attached: Arc<Attachment>,
    stats: PortStats,
}

// SAFETY: the raw pointers point into the port's own mappings, which move
// with it; nothing else holds them.
unsafe impl Send for AfXdpPort {}

impl AfXdpPort {
    /// Opens queue `queue` of port `index` of `cfg` on its interface.
    pub fn open(cfg: &Config, index: usize, queue: usize) -> Result<AfXdpPort, String> {
        let p = &cfg.ports[index];
        let o = Options::parse(p)?;
        let ctx = |e: String| {
            format!(
                "{}: port `{}` on interface `{}` (af_xdp, queue {queue}): {e}",
                p.at, p.name, o.interface
            )
        };
        if queue as u32 >= MAX_QUEUES {
            return Err(ctx(format!("at most {MAX_QUEUES} queues")));
        }
        let ifname = CString::new(o.interface.clone()).map_err(|e| ctx(e.to_string()))?;
        // SAFETY: `ifname` is a NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(ifname.as_ptr()) };
        if ifindex == 0 {
            return Err(ctx("no such interface in this network namespace".into()));
        }
        // SAFETY: plain system call.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(ctx(os_err("AF_XDP socket (needs root and XDP sockets)")));
        }
        // SAFETY: a socket we just opened and own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };

        let umem_len = o.frames * FRAME;
        // SAFETY: an anonymous private mapping we own until `drop`.
        let umem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                umem_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if umem == libc::MAP_FAILED {
            return Err(ctx(os_err("mmap of the UMEM")));
        }
        let umem = umem as *mut u8;
        // From here on the port owns the mappings (dropped on error).
        let half = (o.frames / 2) as u32;
        let reg = libc::xdp_umem_reg {
            addr: umem as u64,
            len: umem_len as u64,
            chunk_size: FRAME as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        let r = setsockopt(&fd, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg)
            .map_err(|e| format!("XDP_UMEM_REG: {e}"))
            .and_then(|()| {
                for (opt, what) in [
                    (libc::XDP_UMEM_FILL_RING, "XDP_UMEM_FILL_RING"),
                    (libc::XDP_UMEM_COMPLETION_RING, "XDP_UMEM_COMPLETION_RING"),
                    (libc::XDP_RX_RING, "XDP_RX_RING"),
                    (libc::XDP_TX_RING, "XDP_TX_RING"),
                ] {
                    setsockopt(&fd, libc::SOL_XDP, opt, &half)
                        .map_err(|e| format!("{what} ({half} entries): {e}"))?;
                }
                Ok(())
            });
        if let Err(e) = r {
            // SAFETY: the UMEM mapping made above, not yet owned by a port.
            unsafe { libc::munmap(umem as *mut libc::c_void, umem_len) };
            return Err(ctx(e));
        }
        // SAFETY: an all-zero `xdp_mmap_offsets` is a valid value.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: XDP_MMAP_OFFSETS writes an `xdp_mmap_offsets` of the
        // size passed.
        let r = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                &mut off as *mut libc::xdp_mmap_offsets as *mut libc::c_void,
                &mut len,
            )
        };
        let rings = (|| -> Result<_, String> {
            if r != 0 {
                return Err(os_err("XDP_MMAP_OFFSETS"));
            }
            Ok((
                Ring::map(&fd, &off.rx, half, libc::XDP_PGOFF_RX_RING as u64)?,
                Ring::map(&fd, &off.tx, half, libc::XDP_PGOFF_TX_RING as u64)?,
                Ring::map(&fd, &off.fr, half, libc::XDP_UMEM_PGOFF_FILL_RING)?,
                Ring::map(&fd, &off.cr, half, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?,
            ))
        })();
        let (rx, tx, fill, comp) = match rings {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: as above.
                unsafe { libc::munmap(umem as *mut libc::c_void, umem_len) };
                return Err(ctx(e));
            }
        };
        let attached =
            match interface_mac(&ifname).and_then(|m| attach(ifindex, o.mode, m != p.mac)) {
                Ok(a) => a,
                Err(e) => {
                    // SAFETY: as above.
                    unsafe { libc::munmap(umem as *mut libc::c_void, umem_len) };
                    return Err(ctx(e));
                }
            };
        let port = AfXdpPort {
            name: p.name.clone(),
            mac: p.mac,
            rx,
            tx,
            fill,
            comp,
            free_tx: (half..2 * half).map(|f| f as u64 * FRAME as u64).collect(),
            tx_outstanding: 0,
            umem,
            umem_len,
            fd,
            _attached: attached,
            stats: PortStats::default(),
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
        // SAFETY: `sxdp` is a valid address of the size passed.
        let r = unsafe {
            libc::bind(
                port.fd.as_raw_fd(),
                &sxdp as *const libc::sockaddr_xdp as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(ctx(os_err("bind (does the interface have this queue?)")));
        }
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
        unsafe { std::slice::from_raw_parts_mut(self.umem.add(addr as usize), len) }
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
    /// sends only then; zero copy when it asks).
    fn kick(&self) {
        // SAFETY: a zero-length send on our socket: the documented way to
        // make the kernel walk the transmit ring.
        unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
    }
}

/// The interface's MAC address.
fn interface_mac(name: &CString) -> Result<[u8; 6], String> {
    // SAFETY: plain system call.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(os_err("socket for SIOCGIFHWADDR"));
    }
    // SAFETY: a socket we just opened and own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    crate::af_packet::interface_mac(&fd, name)
}

impl Drop for AfXdpPort {
    fn drop(&mut self) {
        // SAFETY: the UMEM mapping made in `open`, unmapped once and not
        // touched after; the kernel pinned its pages at registration and
        // lets go of them when the socket (dropped right after) closes.
        unsafe { libc::munmap(self.umem as *mut libc::c_void, self.umem_len) };
    }
}

impl Port for AfXdpPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn rx_burst(&mut self, burst: &mut Burst, max: usize) -> usize {
        let prod = self.rx.producer().load(Acquire);
        let mut cons = self.rx.consumer().load(Acquire);
        let fill_at = self.fill.producer().load(Acquire);
        let mac = self.mac;
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
            if addr as usize + len > self.umem_len || len > buf.len() {
                self.stats.rx_truncated += 1;
            } else {
                // SAFETY: a received frame, ours until it goes back on the
                // fill ring below.
                let data = unsafe { self.frame(addr, len) };
                if !wire::addressed_to(data, mac) {
                    self.stats.rx_ignored += 1;
                } else {
                    buf[..len].copy_from_slice(data);
                    burst.commit(len);
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
        // SAFETY: an all-zero `xdp_statistics` is a valid value.
        let mut st: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: XDP_STATISTICS writes an `xdp_statistics` of at most
        // the size passed.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                &mut st as *mut libc::xdp_statistics as *mut libc::c_void,
                &mut len,
            )
        };
        let dropped = if r == 0 {
            st.rx_dropped + st.rx_ring_full + st.rx_fill_ring_empty_descs
        } else {
            0
        };
        PortStats {
            rx_dropped: dropped,
            ..self.stats
        }
    }
}
