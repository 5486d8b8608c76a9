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

use super::burst::Burst;
use super::linux::{self, setsockopt, Mapping, Throttled};
use super::queue::{Port, PortStats};
use crate::wire;
use config::driver::{AfPacketOptions, Fanout};
use config::Config;
use std::os::fd::OwnedFd;
use std::sync::atomic::{
    AtomicU32,
    Ordering::{Acquire, Release},
};

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
    /// The port has addresses: IPv6 multicast (neighbour discovery) is
    /// for us too.
    router: bool,
    rx: Ring,
    tx: Ring,
    /// Both rings (receive, then transmit); unmapped before the socket
    /// closes (fields drop in order).
    _map: Mapping,
    fd: OwnedFd,
    /// Frames queued on the transmit ring that the last kick did not get
    /// out (the kernel said "try again").
    tx_pending: bool,
    stats: PortStats,
    /// The kernel's receive drops, summed (each read resets its count).
    kernel_drops: Throttled,
}

// SAFETY: the raw pointers point into the port's own mapping, which moves
// with it; nothing else holds them.
unsafe impl Send for AfPacketPort {}

impl AfPacketPort {
    /// Opens queue `queue` of port `index` of `cfg` on its interface.
    pub fn open(
        cfg: &Config,
        index: usize,
        queue: usize,
        o: &AfPacketOptions,
    ) -> Result<AfPacketPort, String> {
        let p = &cfg.ports[index];
        let ctx = |e: String| {
            format!(
                "{}: port `{}` on interface `{}`: {e}",
                p.at, p.name, o.interface
            )
        };
        // Protocol 0: the socket receives nothing until it is bound, with
        // its rings in place.
        let fd = linux::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW,
            "packet socket (needs CAP_NET_RAW)",
        )
        .map_err(ctx)?;
        let ifindex = linux::ifindex(&o.interface).map_err(ctx)?;
        let if_mac = linux::interface_mac(&o.interface).map_err(ctx)?;
        let slots = o.ring_frames.div_ceil(SLOTS_PER_BLOCK) * SLOTS_PER_BLOCK;
        let map = rings(&fd, o.qdisc_bypass, slots).map_err(ctx)?;

        // SAFETY: an all-zero `sockaddr_ll` is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        linux::bind(&fd, &sll).map_err(|e| ctx(format!("bind: {e}")))?;
        if if_mac != p.mac {
            linux::add_promiscuous(&fd, ifindex)
                .map_err(|e| ctx(format!("promiscuous mode: {e}")))?;
        } else if cfg.addressed(index) {
            linux::add_allmulti(&fd, ifindex)
                .map_err(|e| ctx(format!("all-multicast mode: {e}")))?;
        }
        if cfg.forwarder.cores.len() > 1 {
            // One group per port of this process.
            let group = std::process::id()
                .wrapping_mul(64)
                .wrapping_add(index as u32)
                & 0xffff;
            let mode = match o.fanout {
                Fanout::Hash => libc::PACKET_FANOUT_HASH,
                Fanout::Lb => libc::PACKET_FANOUT_LB,
                Fanout::Cpu => libc::PACKET_FANOUT_CPU,
            };
            setsockopt(
                &fd,
                libc::SOL_PACKET,
                libc::PACKET_FANOUT,
                &(group | mode << 16),
            )
            .map_err(|e| ctx(format!("PACKET_FANOUT (queue {queue}): {e}")))?;
        }
        let base = map.ptr();
        Ok(AfPacketPort {
            name: p.name.clone(),
            mac: p.mac,
            router: cfg.addressed(index),
            rx: Ring {
                base,
                slots,
                head: 0,
            },
            tx: Ring {
                // The transmit ring follows the receive ring inside the
                // mapping (never dereferenced past it: `slots` bounds it).
                base: base.wrapping_add(slots * SLOT),
                slots,
                head: 0,
            },
            _map: map,
            fd,
            tx_pending: false,
            stats: PortStats::default(),
            kernel_drops: Throttled::default(),
        })
    }

    /// Asks the kernel to send what the transmit ring holds.
    fn kick(&mut self) {
        self.tx_pending = !linux::kick(&self.fd);
    }
}

/// Sets up `fd`'s receive and transmit rings of `slots` slots each
/// (`TPACKET_V2`) and maps them, receive ring first.
fn rings(fd: &OwnedFd, qdisc_bypass: bool, slots: usize) -> Result<Mapping, String> {
    let v2 = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_VERSION, &v2)
        .map_err(|e| format!("PACKET_VERSION: {e}"))?;
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_LOSS, &1i32)
        .map_err(|e| format!("PACKET_LOSS: {e}"))?;
    if qdisc_bypass {
        setsockopt(fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1i32)
            .map_err(|e| format!("PACKET_QDISC_BYPASS: {e}"))?;
    }
    // Our own transmissions are not received back (kernels before 4.20
    // lack the option; the receive path skips them anyway).
    let _ = setsockopt(fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &1i32);
    let req = libc::tpacket_req {
        tp_block_size: (SLOT * SLOTS_PER_BLOCK) as u32,
        tp_block_nr: (slots / SLOTS_PER_BLOCK) as u32,
        tp_frame_size: SLOT as u32,
        tp_frame_nr: slots as u32,
    };
    for (opt, what) in [
        (libc::PACKET_RX_RING, "PACKET_RX_RING"),
        (libc::PACKET_TX_RING, "PACKET_TX_RING"),
    ] {
        setsockopt(fd, libc::SOL_PACKET, opt, &req)
            .map_err(|e| format!("{what} ({slots} slots): {e}"))?;
    }
    Mapping::new(Some(fd), 2 * slots * SLOT, 0).map_err(|e| format!("the rings: {e}"))
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
        // Bytes summed in a register as frames are taken, stored once.
        let mut bytes = 0u64;
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
            let for_us = if self.router {
                wire::addressed_to_router(data, self.mac)
            } else {
                wire::addressed_to(data, self.mac)
            } && sll.sll_pkttype != libc::PACKET_OUTGOING;
            if hdr.tp_snaplen < hdr.tp_len {
                self.stats.rx_truncated += 1;
            } else if !for_us {
                self.stats.rx_ignored += 1;
            } else if let Some(len) = take_frame(slot, &hdr, buf) {
                if hdr.tp_status & libc::TP_STATUS_CSUMNOTREADY != 0 {
                    wire::finish_partial_checksum(&mut buf[..len]);
                }
                burst.commit(len);
                bytes += len as u64;
                n += 1;
            } else {
                self.stats.rx_truncated += 1;
            }
            self.rx.status(i).store(libc::TP_STATUS_KERNEL, Release);
            self.rx.head = if i + 1 == self.rx.slots { 0 } else { i + 1 };
        }
        self.stats.rx_bytes += bytes;
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
        let rx_dropped = self.kernel_drops.get(|sum| {
            // PACKET_STATISTICS resets the kernel's counters: keep the
            // sum.
            linux::getsockopt::<libc::tpacket_stats>(
                &self.fd,
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
            )
            .map(|st| sum + st.tp_drops as u64)
        });
        PortStats {
            rx_dropped,
            ..self.stats
        }
    }
}
