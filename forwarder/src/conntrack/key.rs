//! What connection tracking reads of a packet: the connection it belongs
//! to (one key for both directions) and what kind of packet it is, or
//! the connection an ICMP error quotes.

use super::tcp;
use crate::wire::{proto, Parsed, L3};

/// A connection, the same for both its directions: the two ends sorted
/// (address, then port), the protocol, the family, the VRF and, for ICMP
/// queries, the request's type and which end asked (a query each way
/// between two hosts, with the same identifier, is two connections, as
/// in Linux). Five words, compared whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Key {
    /// IPv6: the lower end's address (2 words), the higher end's (2
    /// words), and the lower port, the higher port, protocol, family, VRF
    /// and the ICMP request type, from the lowest bits. IPv4: each end
    /// (address above port) in one word (words 0 and 2; 1 and 3 zero),
    /// and in the last word the same but the ports: an IPv4 key is built
    /// and hashed without splitting its ends.
    pub w: [u64; 5],
}

/// One end of a connection: address and port (ICMP: the query's
/// identifier).
pub type End = (u128, u16);

impl Key {
    /// The key of a packet from `a` to `b`, and whether `a` is the
    /// higher end (the packet goes from the higher end to the lower);
    /// `extra` is an ICMP query's request type, `asker` whether `b`
    /// asked it (the packet is an answer).
    #[inline(always)]
    pub fn new(l3: L3, vrf: u8, proto: u8, extra: u8, a: End, b: End, asker: bool) -> (Key, bool) {
        if l3 == L3::V4 {
            // An IPv4 end (address, port) fits 48 bits, compared as one
            // word: the same order as the general case's (the addresses'
            // high bits are 0), in a third of its instructions
            // (callgrind: the `u128` tuples' compare and swap took 30).
            let x = (a.0 as u64) << 16 | a.1 as u64;
            let y = (b.0 as u64) << 16 | b.1 as u64;
            let rev = x > y;
            let last = Key::last(l3, vrf, proto, extra, asker, rev);
            return (
                Key {
                    w: [x.min(y), 0, x.max(y), 0, last],
                },
                rev,
            );
        }
        Key::wide(l3, vrf, proto, extra, a, b, asker)
    }

    /// The last word but its ports (IPv6's): protocol, family (with
    /// whether the asking end is the higher one), VRF and ICMP request
    /// type.
    #[inline(always)]
    fn last(l3: L3, vrf: u8, proto: u8, extra: u8, asker: bool, rev: bool) -> u64 {
        let hi_asks = (rev != asker) && extra != 0;
        (proto as u64) << 32
            | (l3 as u64 | (hi_asks as u64) << 7) << 40
            | (vrf as u64) << 48
            | (extra as u64) << 56
    }

    /// [`Key::new`] by the general rule, for either family: the ends
    /// compared as (address, port) tuples.
    #[inline(always)]
    pub(super) fn wide(
        l3: L3,
        vrf: u8,
        proto: u8,
        extra: u8,
        a: End,
        b: End,
        asker: bool,
    ) -> (Key, bool) {
        let rev = a > b;
        let (lo, hi) = if rev { (b, a) } else { (a, b) };
        let last = Key::last(l3, vrf, proto, extra, asker, rev);
        if l3 == L3::V4 {
            let end = |(a, p): End| (a as u64) << 16 | p as u64;
            return (
                Key {
                    w: [end(lo), 0, end(hi), 0, last],
                },
                rev,
            );
        }
        (
            Key {
                w: [
                    lo.0 as u64,
                    (lo.0 >> 64) as u64,
                    hi.0 as u64,
                    (hi.0 >> 64) as u64,
                    last | lo.1 as u64 | (hi.1 as u64) << 16,
                ],
            },
            rev,
        )
    }

    /// Whether `o` is the same connection: the words compared at once
    /// ([`crate::swar::words5_equal`]; `==` on the array called
    /// `memcmp`, a call a lookup).
    #[inline(always)]
    pub fn same(&self, o: &Key) -> bool {
        crate::swar::words5_equal(&self.w, &o.w)
    }

    /// The lower end and the higher end.
    pub fn ends(&self) -> (End, End) {
        let w = &self.w;
        if self.l3() == L3::V4 {
            let end = |e: u64| ((e >> 16) as u128, e as u16);
            return (end(w[0]), end(w[2]));
        }
        (
            (w[0] as u128 | (w[1] as u128) << 64, w[4] as u16),
            (w[2] as u128 | (w[3] as u128) << 64, (w[4] >> 16) as u16),
        )
    }

    /// The transport protocol.
    pub fn proto(&self) -> u8 {
        (self.w[4] >> 32) as u8
    }

    /// The family.
    pub fn l3(&self) -> L3 {
        if (self.w[4] >> 40) as u8 & 0x7f == L3::V6 as u8 {
            L3::V6
        } else {
            L3::V4
        }
    }

    /// The VRF.
    pub fn vrf(&self) -> u8 {
        (self.w[4] >> 48) as u8
    }

    /// The ICMP request type of an ICMP query's connection (0 otherwise).
    pub fn icmp_type(&self) -> u8 {
        (self.w[4] >> 56) as u8
    }
}

/// What a packet is to connection tracking: its connection's key
/// (none: all zero) and one word saying the rest ([`Seen::view`]). Kept a
/// packet a burst between the tracking stage's passes, and so packed:
/// an enum of the same facts was stored field by field (ten stores and
/// their spills a packet, against six).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The connection (of a packet, or the one an error quotes).
    pub key: Key,
    /// Class (bits 0-1), direction or error's destination (bit 2), kind
    /// (bits 3-5), whether the established path may take it
    /// ([`ESTABLISHED`]) and TCP flags (bits 8-15). A whole word: the
    /// struct has no padding to copy.
    what: u64,
}

/// The bit of [`Seen`]'s word for a UDP datagram or a TCP segment of
/// flag class ACK ([`tcp::Class::Ack`]): what an established
/// connection's packets are, and what the established path
/// (`established.rs`) takes.
const ESTABLISHED: u64 = 1 << 6;

/// [`Seen`] taken apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// A packet of the connection ([`Seen::key`]), sent by its higher
    /// end when `rev`.
    Packet { rev: bool, kind: Kind },
    /// An ICMP error quoting a packet of the connection; it is related
    /// only if it goes back to the quoted packet's source (`to_source`:
    /// Linux's check that the error's destination is the connection's).
    Error { to_source: bool },
    /// Fits no connection and can start none (`ct state invalid`).
    Invalid,
    /// Not tracked: ICMPv6 neighbour discovery and multicast listener
    /// messages (Linux leaves them untracked too).
    Untracked,
}

/// [`Seen`]'s classes (bits 0-1): the first two have a connection.
const PACKET: u64 = 0;
const ERROR: u64 = 1;
const INVALID: u64 = 2;
const UNTRACKED: u64 = 3;
/// [`Seen`]'s kind bits (3-5): [`Kind`]'s variants in order, TCP 0.
const KIND: u64 = 7 << 3;

impl Seen {
    /// Fits no connection and can start none.
    pub const INVALID: Seen = Seen {
        key: Key { w: [0; 5] },
        what: INVALID,
    };
    /// Not tracked.
    pub const UNTRACKED: Seen = Seen {
        key: Key { w: [0; 5] },
        what: UNTRACKED,
    };

    /// A packet of connection `key`, sent by its higher end when `rev`.
    #[inline(always)]
    pub fn packet(key: Key, rev: bool, kind: Kind) -> Seen {
        let k = match kind {
            Kind::Tcp(flags) => {
                let ack = tcp::class(flags) == tcp::Class::Ack;
                (flags as u64) << 8 | if ack { ESTABLISHED } else { 0 }
            }
            Kind::Udp => 1 << 3 | ESTABLISHED,
            Kind::IcmpRequest => 2 << 3,
            Kind::IcmpReply => 3 << 3,
            Kind::Other => 4 << 3,
        };
        Seen {
            key,
            what: PACKET | (rev as u64) << 2 | k,
        }
    }

    /// An ICMP error quoting a packet of connection `key`.
    pub fn error(key: Key, to_source: bool) -> Seen {
        Seen {
            key,
            what: ERROR | (to_source as u64) << 2,
        }
    }

    /// The connection, if the packet has one (its own, or quoted).
    #[inline(always)]
    pub fn key(&self) -> Option<&Key> {
        (self.what & 3 < INVALID).then_some(&self.key)
    }

    /// For a packet the established path may take (a UDP datagram, a
    /// TCP segment of class ACK): whether it goes from the key's higher
    /// end, and whether it is TCP.
    #[inline(always)]
    pub fn established(&self) -> Option<(bool, bool)> {
        (self.what & ESTABLISHED != 0).then_some((self.what & 4 != 0, self.what & KIND == 0))
    }

    /// What the packet is.
    #[inline(always)]
    pub fn view(&self) -> View {
        let bit = self.what & 4 != 0;
        match self.what & 3 {
            PACKET => View::Packet {
                rev: bit,
                kind: match (self.what & KIND) >> 3 {
                    0 => Kind::Tcp((self.what >> 8) as u8),
                    1 => Kind::Udp,
                    2 => Kind::IcmpRequest,
                    3 => Kind::IcmpReply,
                    _ => Kind::Other,
                },
            },
            ERROR => View::Error { to_source: bit },
            INVALID => View::Invalid,
            _ => View::Untracked,
        }
    }
}

impl Default for Seen {
    fn default() -> Seen {
        Seen::INVALID
    }
}

const _: () = assert!(std::mem::size_of::<Seen>() == 48);

/// The kind of a packet of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// TCP, with its flags.
    Tcp(u8),
    /// UDP.
    Udp,
    /// An ICMP query (echo, timestamp, information, address mask; ICMPv6
    /// echo and node information): may open a connection.
    IcmpRequest,
    /// Its answer: never opens one.
    IcmpReply,
    /// Any other protocol, by addresses alone.
    Other,
}

/// ICMP's query types and their answers' (Linux's `invmap`).
const ICMP4_QUERIES: [(u8, u8); 4] = [(8, 0), (13, 14), (15, 16), (17, 18)];
const ICMP6_QUERIES: [(u8, u8); 2] = [(128, 129), (139, 140)];

/// A query's request type and whether `t` is the answer, for an ICMP
/// query type `t`.
fn query(v6: bool, t: u8) -> Option<(u8, bool)> {
    let q: &[(u8, u8)] = if v6 { &ICMP6_QUERIES } else { &ICMP4_QUERIES };
    q.iter().find_map(|&(req, rep)| {
        if t == req {
            Some((req, false))
        } else if t == rep {
            Some((req, true))
        } else {
            None
        }
    })
}

/// Whether ICMP type `t` is an error that quotes a packet.
fn is_error(v6: bool, t: u8) -> bool {
    if v6 {
        (1..=4).contains(&t)
    } else {
        matches!(t, 3 | 4 | 5 | 11 | 12)
    }
}

fn be16(f: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(f.get(at..at + 2)?.try_into().ok()?))
}

/// What packet `p` (parsed from `frame`) is to connection tracking.
#[inline]
pub fn seen(p: &Parsed, frame: &[u8]) -> Seen {
    seen_in(p, || frame)
}

/// [`seen`], the frame asked for only where the parse does not say
/// enough (TCP's flags, ICMP): a UDP datagram's costs no bounds check.
#[inline(always)]
pub fn seen_in<'a>(p: &Parsed, frame: impl FnOnce() -> &'a [u8]) -> Seen {
    let l4 = p.l4_off as usize;
    let (a, b) = ((p.src, p.sport), (p.dst, p.dport));
    let key = |proto, extra, a, b, asker| Key::new(p.l3, p.vrf, proto, extra, a, b, asker);
    match p.proto {
        proto::TCP | proto::UDP if !p.l4_ok => Seen::INVALID,
        proto::TCP => {
            let frame = frame();
            // The flags' byte, and a whole header (Linux: "short packet").
            let Some(&flags) = frame.get(l4 + 13) else {
                return Seen::INVALID;
            };
            let doff = frame.get(l4 + 12).map_or(0, |d| (d >> 4) as usize * 4);
            if doff < 20 || l4 + doff > frame.len() || !tcp::valid_flags(flags) {
                return Seen::INVALID;
            }
            let (key, rev) = key(proto::TCP, 0, a, b, false);
            Seen::packet(key, rev, Kind::Tcp(flags))
        }
        proto::UDP => {
            let (key, rev) = key(proto::UDP, 0, a, b, false);
            Seen::packet(key, rev, Kind::Udp)
        }
        proto::ICMP | proto::ICMPV6 => {
            let frame = frame();
            let v6 = p.proto == proto::ICMPV6;
            if !p.l4_ok || v6 != (p.l3 == L3::V6) {
                return Seen::INVALID;
            }
            let t = (p.sport >> 8) as u8;
            if let Some((req, answer)) = query(v6, t) {
                let Some(id) = be16(frame, l4 + 4) else {
                    return Seen::INVALID;
                };
                let (key, rev) = key(p.proto, req, (p.src, id), (p.dst, id), answer);
                let kind = if answer {
                    Kind::IcmpReply
                } else {
                    Kind::IcmpRequest
                };
                return Seen::packet(key, rev, kind);
            }
            if is_error(v6, t) {
                return quoted(p, frame, v6).unwrap_or(Seen::INVALID);
            }
            if v6 && matches!(t, 130..=137 | 143) {
                return Seen::UNTRACKED;
            }
            Seen::INVALID
        }
        other => {
            let (key, rev) = key(other, 0, (p.src, 0), (p.dst, 0), false);
            Seen::packet(key, rev, Kind::Other)
        }
    }
}

/// The connection an ICMP error quotes: the IP header it carries after
/// its own 8 bytes, and the first 8 bytes of that packet's transport
/// header (ports, or a query's type and identifier). An IPv6 quote with
/// extension headers is not followed.
fn quoted(p: &Parsed, frame: &[u8], v6: bool) -> Option<Seen> {
    let at = p.l4_off as usize + 8;
    let (src, dst, proto, l4) = if v6 {
        let h = frame.get(at..at + 40)?;
        if h[0] >> 4 != 6 {
            return None;
        }
        let src = u128::from_be_bytes(h[8..24].try_into().ok()?);
        let dst = u128::from_be_bytes(h[24..40].try_into().ok()?);
        (src, dst, h[6], at + 40)
    } else {
        let h = frame.get(at..at + 20)?;
        if h[0] >> 4 != 4 || h[0] & 15 < 5 {
            return None;
        }
        let src = u32::from_be_bytes(h[12..16].try_into().ok()?) as u128;
        let dst = u32::from_be_bytes(h[16..20].try_into().ok()?) as u128;
        (src, dst, h[9], at + (h[0] & 15) as usize * 4)
    };
    let key = |proto, extra, a, b, asker| Key::new(p.l3, p.vrf, proto, extra, a, b, asker).0;
    let key = match proto {
        proto::TCP | proto::UDP => {
            let (sp, dp) = (be16(frame, l4)?, be16(frame, l4 + 2)?);
            key(proto, 0, (src, sp), (dst, dp), false)
        }
        proto::ICMP | proto::ICMPV6 => {
            let t = *frame.get(l4)?;
            let (req, answer) = query(v6, t)?;
            let id = be16(frame, l4 + 4)?;
            key(proto, req, (src, id), (dst, id), answer)
        }
        other => key(other, 0, (src, 0), (dst, 0), false),
    };
    Some(Seen::error(key, p.dst == src))
}
