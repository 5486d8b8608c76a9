//! What the Linux drivers (`af_packet`, `af_xdp`) share: sockets and
//! their options, an interface's index and MAC, promiscuous mode, shared
//! memory mappings that unmap themselves, the zero-length send that makes
//! the kernel walk a transmit ring, and kernel counters read at most every
//! `KERNEL_STATS_EVERY` (a system call: never once per `stats()` call).
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// `what: ` and the last OS error.
pub(crate) fn os_err(what: &str) -> String {
    format!("{what}: {}", io::Error::last_os_error())
}

/// A new socket of `domain` and `kind` (close-on-exec), or the OS error
/// after `what`.
pub(crate) fn socket(domain: i32, kind: i32, what: &str) -> Result<OwnedFd, String> {
    // SAFETY: plain system call.
    let raw = unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(os_err(what));
    }
    // SAFETY: `raw` is a socket we just opened and own.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// `Ok` for a system call's 0, else the OS error.
fn ok_if_zero(r: i32) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `setsockopt(fd, level, name, v)`.
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
    ok_if_zero(r)
}

/// `getsockopt(fd, level, name)` of a plain-data `T` (statistics,
/// offsets): `None` when the kernel refuses.
pub(crate) fn getsockopt<T: Copy>(fd: &OwnedFd, level: i32, name: i32) -> Option<T> {
    let mut v = std::mem::MaybeUninit::<T>::zeroed();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `v`, which we
    // own.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            v.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    // SAFETY: every caller's `T` is a C struct of integers, for which the
    // zeroed bytes (or the kernel's) are a valid value.
    (r == 0).then(|| unsafe { v.assume_init() })
}

/// `bind(fd, addr)` for a socket address `A`.
pub(crate) fn bind<A>(fd: &OwnedFd, addr: &A) -> io::Result<()> {
    // SAFETY: `addr` is a live socket address of the size passed.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            addr as *const A as *const libc::sockaddr,
            std::mem::size_of::<A>() as libc::socklen_t,
        )
    };
    ok_if_zero(r)
}

/// Interface `name`'s index in this network namespace.
pub(crate) fn ifindex(name: &str) -> Result<u32, String> {
    let c = CString::new(name).map_err(|e| e.to_string())?;
    // SAFETY: `c` is a NUL-terminated string.
    match unsafe { libc::if_nametoindex(c.as_ptr()) } {
        0 => Err("no such interface in this network namespace".into()),
        i => Ok(i),
    }
}

/// Interface `name`'s MAC address.
pub(crate) fn interface_mac(name: &str) -> Result<[u8; 6], String> {
    let fd = socket(libc::AF_INET, libc::SOCK_DGRAM, "socket for SIOCGIFHWADDR")?;
    // SAFETY: an all-zero `ifreq` is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    // The name fits: the configuration checked it is 1-15 bytes; the
    // last byte stays NUL.
    for (d, &s) in ifr.ifr_name.iter_mut().zip(name.as_bytes()).take(15) {
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

/// Makes interface `ifindex` promiscuous for as long as the packet socket
/// `fd` is open (a membership, counted by the kernel, not a flag we would
/// have to clear).
pub(crate) fn add_promiscuous(fd: &OwnedFd, ifindex: u32) -> io::Result<()> {
    add_membership(fd, ifindex, libc::PACKET_MR_PROMISC)
}

/// Puts the interface in all-multicast mode for as long as the socket is
/// open: a NIC's multicast filter then passes the neighbour discovery
/// groups a router port answers in.
pub(crate) fn add_allmulti(fd: &OwnedFd, ifindex: u32) -> io::Result<()> {
    add_membership(fd, ifindex, libc::PACKET_MR_ALLMULTI)
}

fn add_membership(fd: &OwnedFd, ifindex: u32, kind: libc::c_int) -> io::Result<()> {
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex as i32,
        mr_type: kind as u16,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
}

/// Asks the kernel to send what the socket's transmit ring holds (a
/// zero-length, non-blocking send: the documented way for packet and
/// AF_XDP sockets). Returns false when the kernel could not take it all
/// now (try again later).
pub(crate) fn kick(fd: &OwnedFd) -> bool {
    // SAFETY: a zero-length send on a socket we own; no buffer is read.
    let r = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            std::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null(),
            0,
        )
    };
    r >= 0
}

/// A memory mapping owned by a port (rings shared with the kernel, a
/// UMEM): unmapped when dropped, on every error path too.
pub(crate) struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `fd` at `offset` shared, or anonymous private
    /// memory when `fd` is `None`; pages are populated now, not on the
    /// fast path.
    pub(crate) fn new(fd: Option<&OwnedFd>, len: usize, offset: u64) -> Result<Mapping, String> {
        let (flags, raw) = match fd {
            Some(f) => (libc::MAP_SHARED, f.as_raw_fd()),
            None => (libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1),
        };
        // SAFETY: a new mapping at an address the kernel picks; nothing
        // else refers to it until it is returned.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags | libc::MAP_POPULATE,
                raw,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_err("mmap"));
        }
        Ok(Mapping {
            ptr: p as *mut u8,
            len,
        })
    }

    /// Its first byte.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; its owner
        // keeps no slice into it past a call.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// How often a port asks the kernel for its drop counters.
pub(crate) const KERNEL_STATS_EVERY: Duration = Duration::from_millis(100);

/// A kernel counter read through a system call at most every
/// [`KERNEL_STATS_EVERY`]; between two reads the last value is served.
#[derive(Default)]
pub(crate) struct Throttled {
    value: Cell<u64>,
    read: Cell<Option<Instant>>,
}

impl Throttled {
    /// The counter: the last value if read recently, else `read()`'s
    /// (`None`, a refused read, keeps the last value). `read` returns
    /// the counter's new value.
    pub(crate) fn get(&self, read: impl FnOnce(u64) -> Option<u64>) -> u64 {
        if self
            .read
            .get()
            .is_none_or(|t| t.elapsed() >= KERNEL_STATS_EVERY)
        {
            self.read.set(Some(Instant::now()));
            if let Some(v) = read(self.value.get()) {
                self.value.set(v);
            }
        }
        self.value.get()
    }
}
