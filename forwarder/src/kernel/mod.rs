//! The forwarder's side of the host's kernel: its routing table read and
//! followed over rtnetlink ([`Routes`], for the mirror the control thread
//! keeps in the FIB), and TAP interfaces that carry what is for the
//! router itself to the host's stack and routing daemons ([`tap`]).
//!
//! Messages are built and parsed by `netlink-packet-route`; the sockets
//! are `netlink-sys`'s.

pub mod tap;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressHeaderFlags, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteMessage, RouteNextHopFlags, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::net::IpAddr;

/// A route's key: IPv6, prefix (IPv4 in the low 32 bits), length.
pub type RouteKey = (bool, u128, u32);

/// One path of a kernel route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path {
    /// The interface it leaves by.
    pub ifindex: u32,
    /// The gateway, if any: IPv6, address (IPv4 in the low 32 bits).
    pub gateway: Option<(bool, u128)>,
    /// Its weight in a multipath route (1-256).
    pub weight: u16,
}

/// What a kernel route does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Forward over these paths (one, or a multipath route's).
    Forward(Vec<Path>),
    /// A route type the forwarder does not mirror: blackhole,
    /// unreachable, prohibit, throw, or paths it cannot express (a
    /// nexthop object, an encapsulation); the name says which.
    Unusable(&'static str),
}

/// A route of a mirrored table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Its table.
    pub table: u32,
    /// Its prefix.
    pub key: RouteKey,
    /// Its metric (the lowest of one prefix's routes is the one used).
    pub metric: u32,
    /// Who installed it (`RTPROT_*`).
    pub protocol: u8,
    /// What it does.
    pub action: Action,
}

/// A change to the mirrored table, as the kernel announced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A route added or replaced (`append`: a path added to a
    /// multipath route).
    New(Route, bool),
    /// A route removed (with the paths the kernel said went).
    Del(Route),
    /// An interface appeared, went or changed.
    Link,
    /// The kernel dropped notifications (the socket's buffer ran over):
    /// the table must be read again.
    Overrun,
}

const RECV_BUF: usize = 1 << 16;

/// Sends `msg` as a request on `sock` with sequence number `seq`.
fn send(sock: &Socket, msg: RouteNetlinkMessage, flags: u16, seq: u32) -> Result<(), String> {
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    header.sequence_number = seq;
    let mut m = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
    m.finalize();
    let mut buf = vec![0u8; m.buffer_len()];
    m.serialize(&mut buf);
    sock.send(&buf, 0)
        .map(|_| ())
        .map_err(|e| format!("rtnetlink: {e}"))
}

/// Reads the answers to request `seq` until its end (a dump's DONE, an
/// acknowledgement, or an error), passing each inner message to `each`.
fn answers(
    sock: &Socket,
    seq: u32,
    mut each: impl FnMut(&NetlinkHeader, RouteNetlinkMessage),
) -> Result<(), String> {
    let mut buf = vec![0u8; RECV_BUF];
    loop {
        let n = sock
            .recv(&mut &mut buf[..], 0)
            .map_err(|e| format!("rtnetlink: {e}"))?;
        let mut off = 0;
        while off < n {
            let m = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf[off..n])
                .map_err(|e| format!("rtnetlink: {e}"))?;
            let len = m.header.length as usize;
            if len == 0 {
                return Err("rtnetlink: a message of length 0".into());
            }
            off += (len + 3) & !3;
            if m.header.sequence_number != seq {
                continue;
            }
            match m.payload {
                NetlinkPayload::Done(_) => return Ok(()),
                NetlinkPayload::Error(e) => {
                    return match e.code {
                        None => Ok(()),
                        Some(c) => Err(std::io::Error::from_raw_os_error(-c.get()).to_string()),
                    }
                }
                NetlinkPayload::InnerMessage(inner) => each(&m.header, inner),
                _ => {}
            }
        }
    }
}

/// A request socket: link and address changes, dumps.
pub struct Requests {
    sock: Socket,
    seq: u32,
}

impl Requests {
    /// Opens one.
    pub fn open() -> Result<Requests, String> {
        let mut sock = Socket::new(NETLINK_ROUTE).map_err(|e| format!("rtnetlink: {e}"))?;
        sock.bind_auto().map_err(|e| format!("rtnetlink: {e}"))?;
        sock.connect(&SocketAddr::new(0, 0))
            .map_err(|e| format!("rtnetlink: {e}"))?;
        Ok(Requests { sock, seq: 0 })
    }

    fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        each: impl FnMut(&NetlinkHeader, RouteNetlinkMessage),
    ) -> Result<(), String> {
        self.seq = self.seq.wrapping_add(1);
        send(&self.sock, msg, flags, self.seq)?;
        answers(&self.sock, self.seq, each)
    }

    /// Sets an interface's MAC and MTU and brings it up.
    pub fn link_up(&mut self, ifindex: u32, mac: [u8; 6], mtu: u16) -> Result<(), String> {
        let mut m = LinkMessage::default();
        m.header.index = ifindex;
        m.header.flags = LinkFlags::Up;
        m.header.change_mask = LinkFlags::Up;
        m.attributes.push(LinkAttribute::Address(mac.to_vec()));
        m.attributes.push(LinkAttribute::Mtu(mtu as u32));
        self.request(
            RouteNetlinkMessage::SetLink(m),
            NLM_F_REQUEST | NLM_F_ACK,
            |_, _| {},
        )
    }

    /// Adds an address to an interface (an address it already has is
    /// not an error).
    pub fn add_address(&mut self, ifindex: u32, ip: IpAddr, len: u8) -> Result<(), String> {
        let mut m = AddressMessage::default();
        m.header.family = if ip.is_ipv6() {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        m.header.prefix_len = len;
        m.header.index = ifindex;
        // The forwarder answers for the address already: no duplicate
        // detection to wait for.
        m.header.flags = AddressHeaderFlags::Nodad;
        m.attributes.push(AddressAttribute::Local(ip));
        m.attributes.push(AddressAttribute::Address(ip));
        const NLM_F_CREATE: u16 = 0x400;
        const NLM_F_REPLACE: u16 = 0x100;
        self.request(
            RouteNetlinkMessage::NewAddress(m),
            NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
            |_, _| {},
        )
    }

    /// Every route of both families in `tables`, as [`parse`] reads
    /// them.
    pub fn dump_routes(&mut self, tables: &[u32]) -> Result<Vec<Route>, String> {
        let mut out = Vec::new();
        for family in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut m = RouteMessage::default();
            m.header.address_family = family;
            self.request(
                RouteNetlinkMessage::GetRoute(m),
                NLM_F_REQUEST | NLM_F_DUMP,
                |_, msg| {
                    if let RouteNetlinkMessage::NewRoute(r) = msg {
                        if let Some(r) = parse(&r, tables) {
                            out.push(r);
                        }
                    }
                },
            )?;
        }
        Ok(out)
    }
}

/// The index of interface `name`, if it exists.
#[allow(unsafe_code)]
pub fn ifindex(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: `c` is a NUL-terminated string that outlives the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

/// The route notifications of both families and the link
/// notifications, read without blocking.
pub struct Routes {
    sock: Socket,
    tables: Vec<u32>,
    buf: Vec<u8>,
}

impl Routes {
    /// Subscribes to the notifications (before the table is dumped, so
    /// that nothing between the dump and the first event is missed).
    pub fn subscribe(tables: &[u32]) -> Result<Routes, String> {
        let mut sock = Socket::new(NETLINK_ROUTE).map_err(|e| format!("rtnetlink: {e}"))?;
        sock.bind_auto().map_err(|e| format!("rtnetlink: {e}"))?;
        for g in [
            libc::RTNLGRP_IPV4_ROUTE,
            libc::RTNLGRP_IPV6_ROUTE,
            libc::RTNLGRP_LINK,
        ] {
            sock.add_membership(g)
                .map_err(|e| format!("rtnetlink: joining group {g}: {e}"))?;
        }
        // A full table's load (a BGP session coming up) arrives faster
        // than one thread applies it: room for a few hundred thousand
        // notifications; past that the kernel says so (ENOBUFS) and the
        // table is read again.
        let _ = sock.set_rx_buf_sz(64 << 20);
        sock.set_non_blocking(true)
            .map_err(|e| format!("rtnetlink: {e}"))?;
        Ok(Routes {
            sock,
            tables: tables.to_vec(),
            buf: vec![0; RECV_BUF],
        })
    }

    /// The socket, to wait on.
    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.sock.as_raw_fd()
    }

    /// Reads what has arrived, up to `max` events (at least one read).
    pub fn poll(&mut self, max: usize, out: &mut Vec<Event>) -> Result<(), String> {
        let start = out.len();
        while out.len() - start < max {
            let n = match self.sock.recv(&mut &mut self.buf[..], 0) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    out.push(Event::Overrun);
                    continue;
                }
                Err(e) => return Err(format!("rtnetlink: {e}")),
            };
            events(&self.buf[..n], &self.tables, out);
        }
        Ok(())
    }
}

/// The events of one datagram of notifications: route changes of
/// `tables`, link changes, overruns. What cannot be read ends it (the
/// rest of a datagram is lost with the message that does not parse).
pub fn events(buf: &[u8], tables: &[u32], out: &mut Vec<Event>) {
    let mut off = 0;
    while off < buf.len() {
        let Ok(m) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf[off..]) else {
            break;
        };
        let len = m.header.length as usize;
        if len == 0 {
            break;
        }
        off += (len + 3) & !3;
        const NLM_F_APPEND: u16 = 0x800;
        match m.payload {
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(r)) => {
                if let Some(r) = parse(&r, tables) {
                    out.push(Event::New(r, m.header.flags & NLM_F_APPEND != 0));
                }
            }
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelRoute(r)) => {
                if let Some(r) = parse(&r, tables) {
                    out.push(Event::Del(r));
                }
            }
            NetlinkPayload::InnerMessage(
                RouteNetlinkMessage::NewLink(_) | RouteNetlinkMessage::DelLink(_),
            ) => out.push(Event::Link),
            NetlinkPayload::Overrun(_) => out.push(Event::Overrun),
            _ => {}
        }
    }
}

fn addr_bits(a: &RouteAddress) -> Option<(bool, u128)> {
    match a {
        RouteAddress::Inet(v) => Some((false, u32::from(*v) as u128)),
        RouteAddress::Inet6(v) => Some((true, u128::from(*v))),
        _ => None,
    }
}

/// A route message of one of `tables`, as the mirror reads it; `None`
/// for what is not a route of those tables to mirror: other tables, cached
/// clones, the local and broadcast routes of the host's own addresses,
/// IPv6 link-local and multicast routes (the router's own), policy
/// routes by source or TOS.
pub fn parse(m: &RouteMessage, tables: &[u32]) -> Option<Route> {
    let h = &m.header;
    let v6 = match h.address_family {
        AddressFamily::Inet => false,
        AddressFamily::Inet6 => true,
        _ => return None,
    };
    let mut t = h.table as u32;
    let mut dst = 0u128;
    let mut oif = None;
    let mut gateway = None;
    let mut metric = 0;
    let mut multipath = None;
    let mut unusable = None;
    for a in &m.attributes {
        match a {
            RouteAttribute::Table(x) => t = *x,
            RouteAttribute::Destination(d) => dst = addr_bits(d)?.1,
            RouteAttribute::Oif(i) => oif = Some(*i),
            RouteAttribute::Gateway(g) => gateway = addr_bits(g),
            RouteAttribute::Via(_) => unusable = Some("gateway of the other family"),
            RouteAttribute::Priority(p) => metric = *p,
            RouteAttribute::MultiPath(hops) => multipath = Some(hops),
            RouteAttribute::NhId(_) => unusable = Some("nexthop object"),
            RouteAttribute::Encap(_) | RouteAttribute::EncapType(_) => {
                unusable = Some("encapsulation")
            }
            _ => {}
        }
    }
    if !tables.contains(&t) || h.flags.contains(RouteFlags::Cloned) {
        return None;
    }
    if h.source_prefix_length != 0 || h.tos != 0 {
        return None;
    }
    let len = h.destination_prefix_length as u32;
    if len > if v6 { 128 } else { 32 } {
        return None;
    }
    if v6 && len >= 8 && (dst >> 120 == 0xff || (len >= 10 && dst >> 118 == 0xfe80 >> 6)) {
        return None;
    }
    let action = match h.kind {
        RouteType::Unicast => match (unusable, multipath) {
            (Some(why), _) => Action::Unusable(why),
            (None, Some(hops)) => {
                let mut paths = Vec::new();
                for nh in hops {
                    if nh.flags.contains(RouteNextHopFlags::Dead) {
                        continue;
                    }
                    let mut gw = None;
                    for a in &nh.attributes {
                        match a {
                            RouteAttribute::Gateway(g) => gw = addr_bits(g),
                            RouteAttribute::Via(_) => {
                                return Some(Route {
                                    table: t,
                                    key: (v6, dst, len),
                                    metric,
                                    protocol: h.protocol.into(),
                                    action: Action::Unusable("gateway of the other family"),
                                })
                            }
                            _ => {}
                        }
                    }
                    paths.push(Path {
                        ifindex: nh.interface_index,
                        gateway: gw,
                        weight: nh.hops as u16 + 1,
                    });
                }
                Action::Forward(paths)
            }
            (None, None) => match oif {
                Some(i) => Action::Forward(vec![Path {
                    ifindex: i,
                    gateway,
                    weight: 1,
                }]),
                None => Action::Unusable("no interface"),
            },
        },
        RouteType::BlackHole => Action::Unusable("blackhole"),
        RouteType::Unreachable => Action::Unusable("unreachable"),
        RouteType::Prohibit => Action::Unusable("prohibit"),
        RouteType::Throw => Action::Unusable("throw"),
        // The host's own addresses, broadcast and multicast: the router
        // has its own.
        _ => return None,
    };
    Some(Route {
        table: t,
        key: (v6, dst, len),
        metric,
        protocol: h.protocol.into(),
        action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::route::{RouteNextHop, RouteProtocol};
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn msg(
        v6: bool,
        dst: IpAddr,
        len: u8,
        kind: RouteType,
        attrs: Vec<RouteAttribute>,
    ) -> RouteMessage {
        let mut m = RouteMessage::default();
        m.header.address_family = if v6 {
            AddressFamily::Inet6
        } else {
            AddressFamily::Inet
        };
        m.header.destination_prefix_length = len;
        m.header.table = 254;
        m.header.kind = kind;
        m.header.protocol = RouteProtocol::Bird;
        m.attributes.push(RouteAttribute::Destination(dst.into()));
        m.attributes.extend(attrs);
        m
    }

    #[test]
    fn route_messages_read_as_the_mirror_needs_them() {
        let v4 = |s: &str| IpAddr::V4(s.parse::<Ipv4Addr>().unwrap());
        let v6 = |s: &str| IpAddr::V6(s.parse::<Ipv6Addr>().unwrap());
        let m = msg(
            false,
            v4("203.0.113.0"),
            24,
            RouteType::Unicast,
            vec![
                RouteAttribute::Oif(7),
                RouteAttribute::Gateway(v4("198.51.100.2").into()),
                RouteAttribute::Priority(32),
            ],
        );
        let r = parse(&m, &[254]).unwrap();
        assert_eq!(r.key, (false, 0xcb00_7100, 24));
        assert_eq!((r.metric, r.protocol), (32, 12));
        assert_eq!(
            r.action,
            Action::Forward(vec![Path {
                ifindex: 7,
                gateway: Some((false, 0xc633_6402)),
                weight: 1
            }])
        );
        assert_eq!(parse(&m, &[100]), None, "another table");
        assert_eq!(parse(&m, &[100, 254]).map(|r| r.table), Some(254));
        let mut hop = RouteNextHop::default();
        hop.interface_index = 3;
        hop.hops = 2;
        hop.attributes
            .push(RouteAttribute::Gateway(v6("2001:db8:2::2").into()));
        let mut dead = hop.clone();
        dead.flags = RouteNextHopFlags::Dead;
        let m = msg(
            true,
            v6("2001:db8:5::"),
            64,
            RouteType::Unicast,
            vec![RouteAttribute::MultiPath(vec![hop, dead])],
        );
        let r = parse(&m, &[254]).unwrap();
        assert_eq!(
            r.action,
            Action::Forward(vec![Path {
                ifindex: 3,
                gateway: Some((true, 0x2001_0db8_0002_0000_0000_0000_0000_0002)),
                weight: 3
            }])
        );
        let m = msg(false, v4("192.0.2.0"), 24, RouteType::BlackHole, vec![]);
        assert_eq!(
            parse(&m, &[254]).unwrap().action,
            Action::Unusable("blackhole")
        );
        let m = msg(
            true,
            v6("fe80::"),
            64,
            RouteType::Unicast,
            vec![RouteAttribute::Oif(2)],
        );
        assert_eq!(parse(&m, &[254]), None, "link-local is the router's own");
        let m = msg(false, v4("192.0.2.1"), 32, RouteType::Local, vec![]);
        assert_eq!(parse(&m, &[254]), None, "the host's own address");
        let mut m = msg(
            false,
            v4("192.0.2.0"),
            24,
            RouteType::Unicast,
            vec![RouteAttribute::Oif(2)],
        );
        m.header.flags = RouteFlags::Cloned;
        assert_eq!(parse(&m, &[254]), None, "a cached clone");
        let m = msg(false, v4("192.0.2.0"), 24, RouteType::Unicast, vec![]);
        assert_eq!(
            parse(&m, &[254]).unwrap().action,
            Action::Unusable("no interface")
        );
    }
}
