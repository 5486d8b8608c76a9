//! The `af_packet` driver: a Linux interface through a packet socket with
//! memory-mapped receive and transmit rings (`TPACKET_V2`).
//!
//! One socket per worker and port, each with its own pair of rings; with
//! several workers the sockets of a port join one fanout group
//! (`PACKET_FANOUT_HASH`), so the kernel spreads flows over the workers.
//!
//! - Receive walks the ring's slots that the kernel has handed over
//!   (`TP_STATUS_USER`), copies each frame into the burst and hands the
//!   slot back: no system call. Frames whose checksum the sending host
//!   left to a NIC (`TP_STATUS_CSUMNOTREADY`, traffic from a local socket
//!   or a veth peer) get it finished here, and a VLAN tag the kernel took
//!   off (`TP_STATUS_VLAN_VALID`) is put back, so the pipeline sees the
//!   frame as it was on the wire.
//! - Transmit copies frames into free slots, marks them
//!   `TP_STATUS_SEND_REQUEST` and kicks the kernel with one `sendto` per
//!   burst (`PACKET_QDISC_BYPASS` on by default, `PACKET_LOSS` so a frame
//!   the kernel refuses does not stall the ring).
//! - Only frames for us are passed on: destination MAC the port's own,
//!   and ARP (which the pipeline recognises and does not forward). Where
//!   the configured MAC differs from the interface's, the socket turns on
//!   promiscuous mode (released when the socket closes).
//!
//! The interface's receive offloads that merge frames (GRO, LRO) must be
//! off (`ethtool -K IF gro off lro off`, and `tso off gso off` on a veth
//! peer): a merged frame is longer than a slot and is counted as
//! `rx_truncated`, not forwarded. Frames are at most a slot's room
//! (about 1,980 bytes): no jumbo frames.
//!
//! Options (`[port.options]`): `interface` (default: the port's name),
//! `ring_frames` (slots per ring, default 4096), `qdisc_bypass` (default
//! true), `fanout` (`hash`, `lb` or `cpu`; default `hash`).
#![allow(unsafe_code)]

use crate::port::{Burst, Port, PortStats};
use crate::wire;
use config::{Config, PortConfig};
use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{
    AtomicU32,
    Ordering::{Acquire, Release},
};
use std::time::{Duration, Instant};

/// Bytes per ring slot.
const SLOT: usize = 2048;
/// Slots per ring block (a block is 64 KiB, a multiple of the page).
const SLOTS_PER_BLOCK: usize = 32;
/// Where a transmitted frame's bytes start in its slot:
/// `TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)`.
const TX_DATA: usize = libc::TPACKET2_HDRLEN - std::mem::size_of::<libc::sockaddr_ll>();
/// Where the `sockaddr_ll` of a received frame sits in its slot.
const RX_SLL: usize = (std::mem::size_of::<libc::tpacket2_hdr>() + libc::TPACKET_ALIGNMENT - 1)
    & !(libc::TPACKET_ALIGNMENT - 1);

/// Options of an `af_packet` port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The Linux interface.
    pub interface: String,
    /// Slots per ring (rounded up to a whole block).
    pub ring_frames: usize,
    /// Transmit straight to the driver, skipping the qdisc.
    pub qdisc_bypass: bool,
    /// The fanout mode with several workers (`PACKET_FANOUT_*`).
    pub fanout: u32,
}

impl Options {
    /// Reads `[port.options]`; unknown keys and bad values are errors.
    pub fn parse(p: &PortConfig) -> Result<Options, String> {
        let mut o = Options {
            interface: p.name.clone(),
            ring_frames: 4096,
            qdisc_bypass: true,
            fanout: libc::PACKET_FANOUT_HASH,
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
                "ring_frames" => {
                    let n = v
                        .as_integer()
                        .filter(|n| (64..=1 << 20).contains(n))
                        .ok_or_else(|| bad(k, "an integer from 64 to 1048576"))?;
                    o.ring_frames = (n as usize).div_ceil(SLOTS_PER_BLOCK) * SLOTS_PER_BLOCK;
                }
                "qdisc_bypass" => {
                    o.qdisc_bypass = v.as_bool().ok_or_else(|| bad(k, "true or false"))?
                }
                "fanout" => {
                    o.fanout = match v.as_str() {
                        Some("hash") => libc::PACKET_FANOUT_HASH,
                        Some("lb") => libc::PACKET_FANOUT_LB,
                        Some("cpu") => libc::PACKET_FANOUT_CPU,
                        _ => return Err(bad(k, "`hash`, `lb` or `cpu`")),
                    }
                }
                _ => {
                    return Err(format!(
                        "{}: port `{}`: unknown option `{k}` for the af_packet driver \
                         (interface, ring_frames, qdisc_bypass, fanout)",
                        p.at, p.name
                    ))
                }
            }
        }
        Ok(o)
    }
}

/// An `interface` option's value, if it can name a Linux interface.
pub(crate) fn interface_name(s: Option<&str>) -> Option<String> {
    let s = s?;
    let ok = !s.is_empty() && s.len() < libc::IFNAMSIZ && !s.contains(['/', '\0', ' ']);
    ok.then(|| s.to_string())
}

/// One ring of slots in the mapping.
struct Ring {
    base: *mut u8,
    slots: usize,
    head: usize,
}

impl Ring {
    /// The status word of slot `i`, shared with the kernel.
    #[inline(always)]
    fn status(&self, i: usize) -> &AtomicU32 {
        // SAFETY: `i < slots`, so the slot lies inside the mapping, which
        // lives as long as `self`; slots start on 2048-byte boundaries of
        // a page-aligned mapping, so the word is aligned; the kernel
        // accesses it concurrently, hence the atomic.
        unsafe { AtomicU32::from_ptr(self.base.add(i * SLOT) as *mut u32) }
    }

    /// Slot `i`'s bytes.
    ///
    /// # Safety
    /// The slot must be ours (status read with `Acquire` says so) until
    /// the returned slice is dropped.
    #[inline(always)]
    unsafe fn slot(&mut self, i: usize) -> &mut [u8] {
        // SAFETY: inside the mapping (`i < slots`); the caller owns it.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(i * SLOT), SLOT) }
    }
}

/// One worker's queue of a Linux interface.
pub struct AfPacketPort {
    name: String,
    mac: [u8; 6],
    fd: OwnedFd,
    map: *mut u8,
    map_len: usize,
    rx: Ring,
    tx: Ring,
    /// Frames queued on the transmit ring that the last kick did not get
    /// out (the kernel said "try again").
    tx_pending: bool,
    stats: PortStats,
    kernel_drops: Cell<u64>,
    /// When the kernel's drop counter was last read (a system call: at
    /// most every [`KERNEL_STATS_EVERY`]).
    kernel_read: Cell<Option<Instant>>,
}

/// How often [`Port::stats`] asks the kernel for its drop counter.
const KERNEL_STATS_EVERY: Duration = Duration::from_millis(100);

// SAFETY: the raw pointers point into the port's own mapping, which moves
// with it; nothing else holds them.
unsafe impl Send for AfPacketPort {}

pub(crate) fn os_err(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

/// Makes interface `ifindex` promiscuous for as long as the packet socket
/// `fd` is open (a membership, counted by the kernel, not a flag we would
/// have to clear).
pub(crate) fn add_promiscuous(fd: &OwnedFd, ifindex: u32) -> io::Result<()> {
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex as i32,
        mr_type: libc::PACKET_MR_PROMISC as u16,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
}

pub(crate) fn setsockopt<T>(fd: &OwnedFd, level: i32, name: i32, v: &T) -> io::Result<()> {
    // SAFETY: `v` points to a live `T` of the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            v as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The interface's MAC address (`fd`: any socket).
pub(crate) fn interface_mac(fd: &OwnedFd, name: &CString) -> Result<[u8; 6], String> {
    // SAFETY: an all-zero `ifreq` is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, &s) in ifr.ifr_name.iter_mut().zip(name.as_bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCGIFHWADDR reads the name and writes the address into
    // the `ifreq` we own.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFHWADDR, &mut ifr) } != 0 {
        return Err(os_err("SIOCGIFHWADDR"));
    }
    // SAFETY: the kernel filled the `hwaddr` member of the union.
    let sa = unsafe { ifr.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (d, &s) in mac.iter_mut().zip(&sa.sa_data) {
        *d = s as u8;
    }
    Ok(mac)
}

impl AfPacketPort {
    /// Opens queue `queue` of port `index` of `cfg` on its interface.
    pub fn open(cfg: &Config, index: usize, queue: usize) -> Result<AfPacketPort, String> {
        let p = &cfg.ports[index];
        let o = Options::parse(p)?;
        let queues = cfg.forwarder.cores.len();
        let ctx = |e: String| {
            format!(
                "{}: port `{}` on interface `{}`: {e}",
                p.at, p.name, o.interface
            )
        };
        let ifname = CString::new(o.interface.clone()).map_err(|e| ctx(e.to_string()))?;

        // Protocol 0: the socket receives nothing until it is bound, with
        // its rings in place.
        // SAFETY: plain system call.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(ctx(os_err("packet socket (needs CAP_NET_RAW)")));
        }
        // SAFETY: `raw` is a socket we just opened and own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: `ifname` is a NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(ifname.as_ptr()) };
        if ifindex == 0 {
            return Err(ctx("no such interface in this network namespace".into()));
        }
        let if_mac = interface_mac(&fd, &ifname).map_err(ctx)?;

        let v2 = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &v2)
            .map_err(|e| ctx(format!("PACKET_VERSION: {e}")))?;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_LOSS, &1i32)
            .map_err(|e| ctx(format!("PACKET_LOSS: {e}")))?;
        if o.qdisc_bypass {
            setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1i32)
                .map_err(|e| ctx(format!("PACKET_QDISC_BYPASS: {e}")))?;
        }
        // Our own transmissions are not received back (kernels before
        // 4.20 lack the option; the receive path skips them anyway).
        let _ = setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &1i32);

        let req = libc::tpacket_req {
            tp_block_size: (SLOT * SLOTS_PER_BLOCK) as u32,
            tp_block_nr: (o.ring_frames / SLOTS_PER_BLOCK) as u32,
            tp_frame_size: SLOT as u32,
            tp_frame_nr: o.ring_frames as u32,
        };
        for (opt, what) in [
            (libc::PACKET_RX_RING, "PACKET_RX_RING"),
            (libc::PACKET_TX_RING, "PACKET_TX_RING"),
        ] {
            setsockopt(&fd, libc::SOL_PACKET, opt, &req)
                .map_err(|e| ctx(format!("{what} ({} slots): {e}", o.ring_frames)))?;
        }
        let ring_len = o.ring_frames * SLOT;
        let map_len = 2 * ring_len;
        // SAFETY: maps the socket's two rings (receive first, then
        // transmit), as the packet socket's mmap interface defines.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(ctx(os_err("mmap of the rings")));
        }
        let map = map as *mut u8;
        let port = AfPacketPort {
            name: p.name.clone(),
            mac: p.mac,
            fd,
            map,
            map_len,
            rx: Ring {
                base: map,
                slots: o.ring_frames,
                head: 0,
            },
            tx: Ring {
                // SAFETY: the transmit ring follows the receive ring
                // inside the mapping.
                base: unsafe { map.add(ring_len) },
                slots: o.ring_frames,
                head: 0,
            },
            tx_pending: false,
            stats: PortStats::default(),
            kernel_drops: Cell::new(0),
            kernel_read: Cell::new(None),
        };

        // SAFETY: an all-zero `sockaddr_ll` is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: `sll` is a valid address of the size passed.
        let r = unsafe {
            libc::bind(
                port.fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(ctx(os_err("bind")));
        }
        if if_mac != p.mac {
            add_promiscuous(&port.fd, ifindex)
                .map_err(|e| ctx(format!("promiscuous mode: {e}")))?;
        }
        if queues > 1 {
            // One group per port of this process.
            let group = (std::process::id() as u32)
                .wrapping_mul(64)
                .wrapping_add(index as u32)
                & 0xffff;
            let arg = group | (o.fanout << 16);
            setsockopt(&port.fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg)
                .map_err(|e| ctx(format!("PACKET_FANOUT (queue {queue}): {e}")))?;
        }
        Ok(port)
    }

    /// Asks the kernel to send what the transmit ring holds.
    fn kick(&mut self) {
        // SAFETY: a zero-length send on our socket: the kernel walks the
        // transmit ring (the packet socket's documented way to flush it).
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        self.tx_pending = r < 0;
    }
}

impl Drop for AfPacketPort {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once; no slice into
        // it outlives a call.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
    }
}

/// Copies a received slot's frame into `buf` (putting back a VLAN tag the
/// kernel took off) and returns its length, or `None` if it does not fit.
#[inline]
fn take_frame(slot: &[u8], hdr: &libc::tpacket2_hdr, buf: &mut [u8]) -> Option<usize> {
    let at = hdr.tp_mac as usize;
    let len = hdr.tp_snaplen as usize;
    let data = slot.get(at..at.checked_add(len)?)?;
    if hdr.tp_status & libc::TP_STATUS_VLAN_VALID != 0 && len >= 12 {
        let tpid = if hdr.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
            hdr.tp_vlan_tpid
        } else {
            wire::ethertype::VLAN
        };
        let out = buf.get_mut(..len + 4)?;
        out[..12].copy_from_slice(&data[..12]);
        out[12..14].copy_from_slice(&tpid.to_be_bytes());
        out[14..16].copy_from_slice(&hdr.tp_vlan_tci.to_be_bytes());
        out[16..].copy_from_slice(&data[12..]);
        Some(len + 4)
    } else {
        buf.get_mut(..len)?.copy_from_slice(data);
        Some(len)
    }
}

impl Port for AfPacketPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn rx_burst(&mut self, burst: &mut Burst, max: usize) -> usize {
        if self.tx_pending {
            self.kick();
        }
        let mut n = 0;
        while n < max {
            let i = self.rx.head;
            if self.rx.status(i).load(Acquire) & libc::TP_STATUS_USER == 0 {
                break;
            }
            let Some(buf) = burst.next_buffer() else {
                break;
            };
            // SAFETY: the kernel handed the slot over (`TP_STATUS_USER`,
            // read with Acquire) and takes it back only after the Release
            // store below.
            let slot = unsafe { self.rx.slot(i) };
            // SAFETY: a slot starts with a `tpacket2_hdr`, 16-byte
            // aligned; `read` copies it out.
            let hdr = unsafe { std::ptr::read(slot.as_ptr() as *const libc::tpacket2_hdr) };
            // SAFETY: the `sockaddr_ll` the kernel writes after the header.
            let sll =
                unsafe { std::ptr::read(slot.as_ptr().add(RX_SLL) as *const libc::sockaddr_ll) };
            let data = &slot[(hdr.tp_mac as usize).min(SLOT)..];
            let for_us =
                wire::addressed_to(data, self.mac) && sll.sll_pkttype != libc::PACKET_OUTGOING;
            if hdr.tp_snaplen < hdr.tp_len {
                self.stats.rx_truncated += 1;
            } else if !for_us {
                self.stats.rx_ignored += 1;
            } else if let Some(len) = take_frame(slot, &hdr, buf) {
                if hdr.tp_status & libc::TP_STATUS_CSUMNOTREADY != 0 {
                    wire::finish_partial_checksum(&mut buf[..len]);
                }
                burst.commit(len);
                n += 1;
            } else {
                self.stats.rx_truncated += 1;
            }
            self.rx.status(i).store(libc::TP_STATUS_KERNEL, Release);
            self.rx.head = if i + 1 == self.rx.slots { 0 } else { i + 1 };
        }
        self.stats.rx += n as u64;
        n
    }

    fn tx_burst(&mut self, burst: &mut Burst, which: &[u8]) -> usize {
        let mut queued = 0;
        for &w in which {
            let f = burst.frame(w as usize);
            if f.len() > SLOT - TX_DATA {
                self.stats.tx_dropped += 1;
                continue;
            }
            let i = self.tx.head;
            let st = self.tx.status(i).load(Acquire);
            if st != libc::TP_STATUS_AVAILABLE && st != libc::TP_STATUS_WRONG_FORMAT {
                // The ring is full: the kernel has not sent what it holds.
                self.stats.tx_dropped += 1;
                continue;
            }
            // SAFETY: the slot is free (status read with Acquire); the
            // kernel reads it only after the Release store below.
            let slot = unsafe { self.tx.slot(i) };
            slot[TX_DATA..TX_DATA + f.len()].copy_from_slice(f);
            // tp_len, right after the status word.
            slot[4..8].copy_from_slice(&(f.len() as u32).to_ne_bytes());
            self.tx
                .status(i)
                .store(libc::TP_STATUS_SEND_REQUEST, Release);
            self.tx.head = if i + 1 == self.tx.slots { 0 } else { i + 1 };
            self.stats.tx_bytes += f.len() as u64;
            queued += 1;
        }
        if queued > 0 {
            self.kick();
        }
        self.stats.tx += queued as u64;
        queued
    }

    fn stats(&self) -> PortStats {
        if self
            .kernel_read
            .get()
            .is_some_and(|t| t.elapsed() < KERNEL_STATS_EVERY)
        {
            return PortStats {
                rx_dropped: self.kernel_drops.get(),
                ..self.stats
            };
        }
        self.kernel_read.set(Some(Instant::now()));
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: PACKET_STATISTICS writes a `tpacket_stats` of the size
        // passed (and resets the kernel's counters, hence the sum kept).
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        if r == 0 {
            self.kernel_drops
                .set(self.kernel_drops.get() + st.tp_drops as u64);
        }
        PortStats {
            rx_dropped: self.kernel_drops.get(),
            ..self.stats
        }
    }
}
