//! ICMP from a host's side: raw sockets, echo requests and what comes
//! back (the router and VLAN namespace tests' pings).

use super::raw::timed;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// A raw ICMP (or ICMPv6) socket, with a short receive timeout.
pub fn icmp_socket(v6: bool) -> OwnedFd {
    let (dom, p) = if v6 {
        (libc::AF_INET6, libc::IPPROTO_ICMPV6)
    } else {
        (libc::AF_INET, libc::IPPROTO_ICMP)
    };
    // SAFETY: plain system calls on values we own.
    unsafe {
        let fd = libc::socket(dom, libc::SOCK_RAW | libc::SOCK_CLOEXEC, p);
        assert!(fd >= 0, "raw socket: {}", std::io::Error::last_os_error());
        let fd = OwnedFd::from_raw_fd(fd);
        timed(fd)
    }
}

pub fn sum(data: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in data.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while s > 0xffff {
        s = (s >> 16) + (s & 0xffff);
    }
    !(s as u16)
}

pub fn send_to(fd: &OwnedFd, dst: IpAddr, msg: &[u8]) {
    // SAFETY: the address structures are plain data, passed with their
    // sizes.
    let r = unsafe {
        match dst {
            IpAddr::V4(a) => {
                let mut sa: libc::sockaddr_in = std::mem::zeroed();
                sa.sin_family = libc::AF_INET as u16;
                sa.sin_addr.s_addr = u32::from(a).to_be();
                libc::sendto(
                    fd.as_raw_fd(),
                    msg.as_ptr() as *const _,
                    msg.len(),
                    0,
                    &sa as *const _ as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in>() as u32,
                )
            }
            IpAddr::V6(a) => {
                let mut sa: libc::sockaddr_in6 = std::mem::zeroed();
                sa.sin6_family = libc::AF_INET6 as u16;
                sa.sin6_addr.s6_addr = a.octets();
                libc::sendto(
                    fd.as_raw_fd(),
                    msg.as_ptr() as *const _,
                    msg.len(),
                    0,
                    &sa as *const _ as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in6>() as u32,
                )
            }
        }
    };
    assert_eq!(
        r,
        msg.len() as isize,
        "sendto {dst}: {}",
        std::io::Error::last_os_error()
    );
}

/// An ICMP message received: its sender and the message (IPv4's header
/// taken off).
pub fn recv_icmp(fd: &OwnedFd, v6: bool) -> Option<(IpAddr, Vec<u8>)> {
    let mut buf = [0u8; 2048];
    // SAFETY: recvfrom writes at most the lengths given.
    let (n, from) = unsafe {
        let mut ss: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as u32;
        let n = libc::recvfrom(
            fd.as_raw_fd(),
            buf.as_mut_ptr() as *mut _,
            buf.len(),
            0,
            &mut ss as *mut _ as *mut libc::sockaddr,
            &mut len,
        );
        if n <= 0 {
            return None;
        }
        let from = if v6 {
            let sa = *(&ss as *const _ as *const libc::sockaddr_in6);
            IpAddr::from(sa.sin6_addr.s6_addr)
        } else {
            let sa = *(&ss as *const _ as *const libc::sockaddr_in);
            IpAddr::from(u32::from_be(sa.sin_addr.s_addr).to_be_bytes())
        };
        (n as usize, from)
    };
    let msg = if v6 {
        buf[..n].to_vec()
    } else {
        let ihl = (buf[0] & 0xf) as usize * 4;
        buf[ihl..n].to_vec()
    };
    Some((from, msg))
}

/// Echo requests to `dst` until one is answered (or `within` passes):
/// how long the first answer took.
pub fn ping(dst: &str, within: Duration) -> Option<Duration> {
    let dst: IpAddr = dst.parse().unwrap();
    let v6 = dst.is_ipv6();
    let fd = icmp_socket(v6);
    let start = Instant::now();
    let id = (std::process::id() & 0xffff) as u16;
    let mut seq = 0u16;
    while start.elapsed() < within {
        seq += 1;
        let mut m = vec![if v6 { 128 } else { 8 }, 0, 0, 0];
        m.extend(id.to_be_bytes());
        m.extend(seq.to_be_bytes());
        m.extend(b"forwarder router test");
        if !v6 {
            let c = sum(&m);
            m[2..4].copy_from_slice(&c.to_be_bytes());
        }
        send_to(&fd, dst, &m);
        let sent = Instant::now();
        while sent.elapsed() < Duration::from_millis(300) {
            if let Some((from, r)) = recv_icmp(&fd, v6) {
                let reply = if v6 { 129 } else { 0 };
                if from == dst && r[0] == reply && r[4..6] == id.to_be_bytes() && r[8..] == m[8..] {
                    return Some(start.elapsed());
                }
            }
        }
    }
    None
}

/// An ICMP error (type, code, sender, the message) that a datagram sent
/// by `send` brings back, if one comes within a second.
pub fn icmp_error_for(
    v6: bool,
    types: &[u8],
    send: impl FnOnce(),
) -> Option<(u8, u8, IpAddr, Vec<u8>)> {
    let fd = icmp_socket(v6);
    send();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        if let Some((from, m)) = recv_icmp(&fd, v6) {
            if types.contains(&m[0]) {
                return Some((m[0], m[1], from, m));
            }
        }
    }
    None
}

/// A datagram of `payload` bytes from `local` to `dst` with hop limit
/// `hops`, sent however large (no path MTU discovery).
pub fn udp_with_hops(local: &str, dst: &str, hops: u32, payload: usize) {
    let s = UdpSocket::bind(local).unwrap();
    let dst: SocketAddr = dst.parse().unwrap();
    if dst.is_ipv6() {
        // SAFETY: a setsockopt on our socket with an int.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::IPPROTO_IPV6,
                libc::IPV6_UNICAST_HOPS,
                &hops as *const _ as *const libc::c_void,
                4,
            );
            // Send as large as asked, whatever the path MTU learnt says
            // (IPV6_PMTUDISC_PROBE).
            let pmtu: i32 = 3;
            libc::setsockopt(
                s.as_raw_fd(),
                libc::IPPROTO_IPV6,
                libc::IPV6_MTU_DISCOVER,
                &pmtu as *const _ as *const libc::c_void,
                4,
            );
        }
    } else {
        s.set_ttl(hops).unwrap();
        // SAFETY: as above; IP_PMTUDISC_PROBE sets DF and ignores the
        // path MTU learnt.
        unsafe {
            let pmtu: i32 = 3;
            libc::setsockopt(
                s.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_MTU_DISCOVER,
                &pmtu as *const _ as *const libc::c_void,
                4,
            );
        }
    }
    s.send_to(&vec![0x5a; payload], dst).unwrap();
}
