//! Raw frames on an interface: a packet socket to send test frames and
//! to see what arrives (the hosts' side of the namespace tests).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// `fd` with a receive timeout of 100 ms: a test reading frames that do
/// not come polls its deadline instead of hanging.
pub fn timed(fd: OwnedFd) -> OwnedFd {
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 100_000,
    };
    // SAFETY: a plain system call on a socket we own and a timeval that
    // outlives it.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as u32,
        );
    }
    fd
}

/// A packet socket bound to `dev` (in the calling thread's namespace).
pub fn packet_socket(dev: &str) -> OwnedFd {
    // SAFETY: plain system calls on values we own.
    unsafe {
        let fd = libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            (libc::ETH_P_ALL as u16).to_be() as i32,
        );
        assert!(
            fd >= 0,
            "packet socket: {}",
            std::io::Error::last_os_error()
        );
        let fd = OwnedFd::from_raw_fd(fd);
        let name = std::ffi::CString::new(dev).unwrap();
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
        assert!(sll.sll_ifindex > 0, "no {dev}");
        let r = libc::bind(
            fd.as_raw_fd(),
            &sll as *const _ as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        );
        assert_eq!(r, 0, "bind {dev}: {}", std::io::Error::last_os_error());
        timed(fd)
    }
}

pub fn send_frame(fd: &OwnedFd, f: &[u8]) {
    // SAFETY: sends `f`'s bytes on our socket.
    let r = unsafe {
        libc::send(
            fd.as_raw_fd(),
            f.as_ptr() as *const libc::c_void,
            f.len(),
            0,
        )
    };
    assert_eq!(
        r,
        f.len() as isize,
        "send: {}",
        std::io::Error::last_os_error()
    );
}

/// Frames arriving on `fd` (not those going out) until `quiet` passes
/// without one or `limit` is reached.
pub fn capture(fd: &OwnedFd, quiet: Duration, limit: Duration) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let start = Instant::now();
    let mut last = Instant::now();
    let mut buf = vec![0u8; 4096];
    while last.elapsed() < quiet && start.elapsed() < limit {
        // SAFETY: an all-zero `sockaddr_ll` is valid; recvfrom writes at
        // most the lengths passed.
        let (n, sll) = unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            let n = libc::recvfrom(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                0,
                &mut sll as *mut _ as *mut libc::sockaddr,
                &mut len,
            );
            (n, sll)
        };
        if n > 0 && sll.sll_pkttype != libc::PACKET_OUTGOING {
            out.push(buf[..n as usize].to_vec());
            last = Instant::now();
        }
    }
    out
}
