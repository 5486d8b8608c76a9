//! The reference of `conntrack.rs`: Linux's connection tracking written
//! plainly, each connection entered under both its tuples, apart from the
//! fast path's table and keys.

use super::{addr, Pkt, What};
use forwarder::conntrack::{state, tcp};
use std::collections::HashMap;

/// One direction of a connection, as Linux's tuples name it: family,
/// source, destination, protocol, and ports (ICMP: the identifier both
/// ways, and the message type in place of the destination port).
type Tuple = (bool, u128, u128, u8, u16, u16);

/// The reference: Linux's model written plainly, each connection entered
/// under both its tuples.
#[derive(Default)]
pub struct Reference {
    conns: Vec<Conn>,
    by_tuple: HashMap<Tuple, (usize, u8)>,
    /// The connections entered by packets of the burst being sent: Linux
    /// meets them once their packet is confirmed, a burst decides its
    /// packets together; so within their burst only packets in their
    /// original direction meet them (an answer or an error in the same
    /// burst would have come through the same port, before the packet it
    /// answers had left).
    pub fresh: std::collections::HashSet<usize>,
}

#[derive(Clone, Copy, Debug)]
pub struct Conn {
    tuples: [Tuple; 2],
    tcp: u8,
    seen_reply: bool,
    closing: bool,
    /// The last segment taken (Linux's `last_dir`, `last_index`).
    last: Option<(u8, tcp::Class)>,
    /// A SYN was ignored in LAST_ACK: a challenge ACK is due.
    challenge: bool,
    live: bool,
}

fn tuple_of(p: &Pkt) -> Option<Tuple> {
    let (s, d) = (addr(p.v6, p.from), addr(p.v6, p.to));
    Some(match p.what {
        What::Tcp(sp, dp, _) => (p.v6, s, d, 6, sp, dp),
        What::Udp(sp, dp) => (p.v6, s, d, 17, sp, dp),
        What::Echo(reply, id) => (p.v6, s, d, 1, id, reply as u16),
        What::Error(..) => return None,
    })
}

fn reply_of(t: Tuple) -> Tuple {
    let (v6, s, d, pr, sp, dp) = t;
    if pr == 1 {
        // An echo request's answer: the other way, the answer's type.
        (v6, d, s, pr, sp, 1 - dp)
    } else {
        (v6, d, s, pr, dp, sp)
    }
}

impl Reference {
    fn find(&self, t: &Tuple) -> Option<(usize, u8)> {
        self.by_tuple
            .get(t)
            .copied()
            .filter(|&(c, _)| self.conns[c].live)
    }

    fn kill(&mut self, c: usize) {
        self.conns[c].live = false;
        for t in self.conns[c].tuples {
            self.by_tuple.remove(&t);
        }
    }

    /// The packet's `ct state`, its connection moved on; and what to
    /// enter if it is forwarded.
    pub fn track(&mut self, p: &Pkt) -> (u8, Option<Conn>) {
        if let What::Error(a, b, sp, dp) = p.what {
            let inner: Tuple = (p.v6, addr(p.v6, a), addr(p.v6, b), 17, sp, dp);
            return match self.find(&reply_of(inner)) {
                Some((c, _)) if self.fresh.contains(&c) => (state::INVALID, None),
                Some(_) if addr(p.v6, p.to) == inner.1 => (state::RELATED, None),
                _ => (state::INVALID, None),
            };
        }
        let Some(t) = tuple_of(p) else { unreachable!() };
        let new = |tcp| Conn {
            tuples: [t, reply_of(t)],
            tcp,
            seen_reply: false,
            closing: false,
            last: None,
            challenge: false,
            live: true,
        };
        let Some((c, dir)) = self.find(&t) else {
            return match p.what {
                What::Tcp(.., f) if !tcp::valid_flags(f) => (state::INVALID, None),
                What::Tcp(.., f) => match tcp::open(tcp::class(f)) {
                    Some(s) => (state::NEW, Some(new(s))),
                    None => (state::INVALID, None),
                },
                What::Echo(true, _) => (state::INVALID, None),
                _ => (state::NEW, Some(new(0))),
            };
        };
        let conn = self.conns[c];
        if dir == 1 && self.fresh.contains(&c) {
            // Not met: see `fresh`; nor can it open its own.
            let opens = match p.what {
                What::Tcp(.., f) => tcp::valid_flags(f) && tcp::open(tcp::class(f)).is_some(),
                What::Echo(true, _) => false,
                _ => true,
            };
            return (if opens { state::NEW } else { state::INVALID }, None);
        }
        let ctstate = if dir == 1 || conn.seen_reply {
            state::ESTABLISHED
        } else {
            state::NEW
        };
        if let What::Tcp(.., f) = p.what {
            if !tcp::valid_flags(f) {
                return (state::INVALID, None);
            }
            let class = tcp::class(f);
            let last = tcp::Last {
                rst_here: conn.last == Some((dir, tcp::Class::Rst)),
                syn_there: matches!(conn.last, Some((d, tcp::Class::Syn)) if d != dir),
                challenge: conn.challenge,
            };
            let step = tcp::step(conn.tcp, dir == 1, class, conn.closing, last);
            let k = &mut self.conns[c];
            if matches!(step, tcp::Step::Ignore | tcp::Step::To(_)) {
                k.last = Some((dir, class));
            }
            match step {
                tcp::Step::Invalid => return (state::INVALID, None),
                tcp::Step::Reopen => {
                    self.kill(c);
                    return (state::NEW, Some(new(tcp::open(class).unwrap())));
                }
                tcp::Step::Skip => k.challenge = false,
                tcp::Step::Ignore => {
                    k.challenge = class == tcp::Class::Syn && conn.tcp == tcp::LAST_ACK;
                }
                tcp::Step::To(n) => {
                    k.challenge = false;
                    k.tcp = n;
                    k.closing |= n == tcp::FIN_WAIT;
                    if !k.seen_reply && class == tcp::Class::Rst {
                        self.kill(c);
                        return (ctstate, None);
                    }
                }
            }
        }
        if dir == 1 {
            self.conns[c].seen_reply = true;
        }
        (ctstate, None)
    }

    pub fn enter(&mut self, c: Conn) {
        if self.find(&c.tuples[0]).is_some() {
            return;
        }
        let i = self.conns.len();
        self.fresh.insert(i);
        self.conns.push(c);
        self.by_tuple.insert(c.tuples[0], (i, 0));
        self.by_tuple.insert(c.tuples[1], (i, 1));
    }
}
