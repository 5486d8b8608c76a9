//! The frames of the oracle test (`conntrack_oracle.rs`): the hosts,
//! sequences of steps between them, and the frames a sequence's steps
//! make, TCP's sequence numbers kept as two hosts would keep them; and
//! the sequences themselves, written out and random ([`course`]).

pub mod course;

use forwarder::wire::{ethertype, ip, proto, set_l4_checksum};

/// The hosts' and the routers' MACs (the same in both routers'
/// namespaces: they never meet).
pub const LAN_HOST: [u8; 6] = [2, 0, 0, 0, 1, 2];
pub const LAN_ROUTER: [u8; 6] = [2, 0, 0, 0, 1, 1];
pub const WAN_HOST: [u8; 6] = [2, 0, 0, 0, 2, 2];
pub const WAN_ROUTER: [u8; 6] = [2, 0, 0, 0, 2, 1];

/// The lan host.
pub fn lan(v6: bool) -> u128 {
    if v6 {
        0x2001_0db8_0001u128 << 80 | 2
    } else {
        0xc000_0202
    }
}

/// A wan host: on the wan's link (`n` = 2) or beyond its router, in
/// 203.0.113.0/24 / 2001:db8:3::/64.
pub fn wan(v6: bool, beyond: bool, n: u8) -> u128 {
    match (v6, beyond) {
        (false, false) => 0xc633_6400 | n as u128,
        (false, true) => 0xcb00_7100 | n as u128,
        (true, false) => 0x2001_0db8_0002u128 << 80 | n as u128,
        (true, true) => 0x2001_0db8_0003u128 << 80 | n as u128,
    }
}

/// An IP packet (no Ethernet header) from `src` to `dst` around the
/// transport bytes `l4`.
pub fn packet(v6: bool, src: u128, dst: u128, proto: u8, l4: &[u8]) -> Vec<u8> {
    if v6 {
        ip::ipv6(src, dst, proto, 64, l4)
    } else {
        ip::ipv4(src as u32, dst as u32, proto, 64, l4)
    }
}

/// `p` as a frame sent by the lan host (`from_wan` false) or the wan
/// host to its router, with its transport checksum set.
pub fn frame(v6: bool, from_wan: bool, p: &[u8]) -> Vec<u8> {
    let (dst, src) = if from_wan {
        (WAN_ROUTER, WAN_HOST)
    } else {
        (LAN_ROUTER, LAN_HOST)
    };
    let et = if v6 { ethertype::IPV6 } else { ethertype::IPV4 };
    let mut f = ip::frame(dst, src, et, p);
    assert!(set_l4_checksum(&mut f));
    f
}

pub fn tcp_bytes(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, data: u16) -> Vec<u8> {
    let mut t = vec![0u8; 20 + data as usize];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12] = 5 << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&64240u16.to_be_bytes());
    for (i, b) in t[20..].iter_mut().enumerate() {
        *b = i as u8;
    }
    t
}

pub fn udp_bytes(sport: u16, dport: u16, data: usize) -> Vec<u8> {
    let mut u = vec![0u8; 8 + data];
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&((8 + data) as u16).to_be_bytes());
    u
}

/// An echo request or reply.
pub fn echo_bytes(v6: bool, reply: bool, id: u16, seq: u16) -> Vec<u8> {
    let ty = match (v6, reply) {
        (false, false) => 8,
        (false, true) => 0,
        (true, false) => 128,
        (true, true) => 129,
    };
    let mut e = vec![ty, 0, 0, 0];
    e.extend_from_slice(&id.to_be_bytes());
    e.extend_from_slice(&seq.to_be_bytes());
    e.extend_from_slice(&[0xab; 8]);
    e
}

/// A destination unreachable (port unreachable) quoting `quoted`'s IP
/// header and the first 8 bytes of its transport header, as routers
/// send them.
pub fn error_bytes(v6: bool, quoted: &[u8]) -> Vec<u8> {
    let hl = if v6 { 40 } else { 20 };
    let (ty, code) = if v6 { (1, 4) } else { (3, 3) };
    let mut e = vec![ty, code, 0, 0, 0, 0, 0, 0];
    e.extend_from_slice(&quoted[..(hl + 8).min(quoted.len())]);
    e
}

/// One step of a sequence.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// A TCP segment from the lan host or the wan host with these flags
    /// and this many bytes of data.
    Tcp { wan: bool, flags: u8, data: u16 },
    /// A datagram.
    Udp { wan: bool },
    /// An echo request or reply.
    Echo { wan: bool, reply: bool },
    /// An ICMP error from the wan host's side (`wan`; `beyond`: from a
    /// router past the wan host's network) or the lan host, to the other.
    Error {
        wan: bool,
        beyond: bool,
        quote: Quote,
    },
    /// The sequence's step `.0` sent again as it was.
    Again(usize),
}

/// What an ICMP error quotes.
#[derive(Clone, Copy, Debug)]
pub enum Quote {
    /// A packet of the sequence's connection sent by the error's
    /// receiver: `related` when the connection is tracked.
    Sent,
    /// A packet of the connection the other way round (sent by the
    /// error's sender): never related.
    Received,
    /// A packet of a connection nobody opened.
    Nothing,
}

/// What a sequence's connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Tcp,
    Udp,
    Echo,
}

/// A sequence of frames between the lan host and one wan host, on ports
/// (or an echo identifier) of its own.
#[derive(Clone, Debug)]
pub struct Sequence {
    pub v6: bool,
    pub kind: Kind,
    /// The wan host is past the wan's router.
    pub beyond: bool,
    /// The lan host's port (the echo identifier).
    pub lport: u16,
    /// The wan host's port.
    pub wport: u16,
    /// The two hosts' initial sequence numbers (lan, wan).
    pub isn: [u32; 2],
    pub steps: Vec<Step>,
}

/// The frames of a sequence, built step by step, with TCP's sequence
/// numbers as two hosts would keep them.
pub struct Emitter<'a> {
    s: &'a Sequence,
    /// Each host's next sequence number (lan, wan).
    nxt: [u32; 2],
    /// What each host last acknowledged in a segment that was forwarded.
    acked: [Option<u32>; 2],
    /// The frames sent so far, by step (for `Again`): frame, from the wan.
    sent: Vec<(Vec<u8>, bool)>,
    echo_seq: u16,
}

impl<'a> Emitter<'a> {
    pub fn new(s: &'a Sequence) -> Emitter<'a> {
        Emitter {
            s,
            nxt: s.isn,
            acked: [None, None],
            sent: Vec::new(),
            echo_seq: 0,
        }
    }

    pub fn hosts(&self, wan_side: bool) -> (u128, u128) {
        let (l, w) = (lan(self.s.v6), wan(self.s.v6, self.s.beyond, 2));
        if wan_side {
            (w, l)
        } else {
            (l, w)
        }
    }

    /// A packet of the sequence's connection from the wan host's side or
    /// the lan host's, as it would be quoted (UDP-shaped for TCP too:
    /// the first 8 bytes are the ports and a sequence number).
    pub fn conn_packet(&self, from_wan: bool, other_port: bool) -> Vec<u8> {
        let v6 = self.s.v6;
        let (src, dst) = self.hosts(from_wan);
        let lport = if other_port {
            self.s.lport ^ 0x8000
        } else {
            self.s.lport
        };
        let (sp, dp) = if from_wan {
            (self.s.wport, lport)
        } else {
            (lport, self.s.wport)
        };
        match self.s.kind {
            Kind::Tcp => {
                let i = from_wan as usize;
                let t = tcp_bytes(sp, dp, self.nxt[i], 0, 0x18, 0);
                packet(v6, src, dst, proto::TCP, &t)
            }
            Kind::Udp => packet(v6, src, dst, proto::UDP, &udp_bytes(sp, dp, 4)),
            Kind::Echo => {
                let icmp = if v6 { proto::ICMPV6 } else { proto::ICMP };
                let e = echo_bytes(v6, from_wan, lport, 1);
                packet(v6, src, dst, icmp, &e)
            }
        }
    }

    /// Step `i`'s frame and whether it comes from the wan.
    pub fn frame(&mut self, i: usize) -> (Vec<u8>, bool) {
        let v6 = self.s.v6;
        let out = match self.s.steps[i] {
            Step::Again(j) => self.sent[j.min(self.sent.len() - 1)].clone(),
            Step::Tcp { wan, flags, data } => {
                let (me, peer) = (wan as usize, !wan as usize);
                let rst = flags & 0x04 != 0;
                // A reset Linux takes carries what its peer last
                // acknowledged.
                let seq = match (rst, self.acked[peer]) {
                    (true, Some(a)) => a,
                    _ => self.nxt[me],
                };
                let ack = if flags & 0x10 != 0 { self.nxt[peer] } else { 0 };
                let data = if flags & 0x07 != 0 && flags & 0x01 == 0 {
                    0
                } else {
                    data
                };
                let (sp, dp) = if wan {
                    (self.s.wport, self.s.lport)
                } else {
                    (self.s.lport, self.s.wport)
                };
                let (src, dst) = self.hosts(wan);
                let t = tcp_bytes(sp, dp, seq, ack, flags, data);
                if !rst {
                    self.nxt[me] = self.nxt[me]
                        .wrapping_add(data as u32)
                        .wrapping_add((flags & 0x02 != 0) as u32)
                        .wrapping_add((flags & 0x01 != 0) as u32);
                }
                (frame(v6, wan, &packet(v6, src, dst, proto::TCP, &t)), wan)
            }
            Step::Udp { wan } => {
                let p = self.conn_packet(wan, false);
                (frame(v6, wan, &p), wan)
            }
            Step::Echo { wan, reply } => {
                let icmp = if v6 { proto::ICMPV6 } else { proto::ICMP };
                let (src, dst) = self.hosts(wan);
                self.echo_seq += 1;
                let e = echo_bytes(v6, reply, self.s.lport, self.echo_seq);
                (frame(v6, wan, &packet(v6, src, dst, icmp, &e)), wan)
            }
            Step::Error {
                wan: from_wan,
                beyond,
                quote,
            } => {
                let quoted = match quote {
                    Quote::Sent => self.conn_packet(!from_wan, false),
                    Quote::Received => self.conn_packet(from_wan, false),
                    Quote::Nothing => self.conn_packet(!from_wan, true),
                };
                let (mut src, dst) = self.hosts(from_wan);
                if beyond && from_wan {
                    src = wan(v6, true, 254);
                }
                let icmp = if v6 { proto::ICMPV6 } else { proto::ICMP };
                let e = error_bytes(v6, &quoted);
                (
                    frame(v6, from_wan, &packet(v6, src, dst, icmp, &e)),
                    from_wan,
                )
            }
        };
        self.sent.push(out.clone());
        out
    }

    /// Told that step `i` was forwarded (or not).
    pub fn fate(&mut self, i: usize, forwarded: bool) {
        if let (true, Step::Tcp { wan, flags, .. }) = (forwarded, self.s.steps[i]) {
            if flags & 0x10 != 0 && flags & 0x04 == 0 {
                self.acked[wan as usize] = Some(self.nxt[!wan as usize]);
            }
        }
    }
}
