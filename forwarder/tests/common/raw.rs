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

/// A control message as [`recv_msg`] gives it: level, type, data.
pub type Cmsg = (libc::c_int, libc::c_int, Vec<u8>);

/// A frame received on `fd` into `buf` (`flags` for recvmsg): its
/// length, whether it was one sent through the interface
/// (`PACKET_OUTGOING`), and its control messages as (level, type, data);
/// `None` when nothing came.
pub fn recv_msg(
    fd: &OwnedFd,
    buf: &mut [u8],
    flags: libc::c_int,
) -> Option<(usize, bool, Vec<Cmsg>)> {
    let mut control = [0u64; 16];
    // SAFETY: all-zero `sockaddr_ll` and `msghdr` are valid; the message
    // header points at our buffers with their sizes; the control
    // messages are read within `control` by the kernel's own macros.
    unsafe {
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = (&mut sll as *mut libc::sockaddr_ll).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        let n = libc::recvmsg(fd.as_raw_fd(), &mut msg, flags);
        if n <= 0 {
            return None;
        }
        let mut cmsgs = Vec::new();
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
            let data = std::slice::from_raw_parts(libc::CMSG_DATA(c), len).to_vec();
            cmsgs.push(((*c).cmsg_level, (*c).cmsg_type, data));
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        Some((n as usize, sll.sll_pkttype == libc::PACKET_OUTGOING, cmsgs))
    }
}

/// The first frame arriving on `dev` (in the calling thread's namespace)
/// that `wanted` accepts, within `limit`, and when the kernel received
/// it (`SO_TIMESTAMPNS`: the interface's receive, before any thread of
/// ours wakes up to read it). The socket is open when this sends
/// `ready` its message.
pub fn first_arrival(
    dev: &str,
    ready: std::sync::mpsc::Sender<()>,
    limit: Duration,
    wanted: impl Fn(&[u8]) -> bool,
) -> Option<std::time::SystemTime> {
    let fd = packet_socket(dev);
    let on: libc::c_int = 1;
    // SAFETY: setting an int socket option on our socket, from a live
    // value of the size given.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_TIMESTAMPNS: {}", std::io::Error::last_os_error());
    ready.send(()).unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 2048];
    while start.elapsed() < limit {
        let Some((n, outgoing, cmsgs)) = recv_msg(&fd, &mut buf, 0) else {
            continue;
        };
        if outgoing || !wanted(&buf[..n]) {
            continue;
        }
        return cmsgs.iter().find_map(|(level, ty, data)| {
            let ts = (*level == libc::SOL_SOCKET && *ty == libc::SCM_TIMESTAMPNS)
                .then(|| data.first_chunk::<16>())??;
            let sec = u64::from_ne_bytes(ts[..8].try_into().ok()?);
            let nsec = u64::from_ne_bytes(ts[8..].try_into().ok()?);
            Some(std::time::UNIX_EPOCH + Duration::new(sec, nsec as u32))
        });
    }
    None
}
