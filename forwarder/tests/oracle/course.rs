//! The sequences: exchanges written out, and random ones built from a
//! connection's natural course.

use super::{Kind, Quote, Sequence, Step};
use crate::common::Rng;

pub fn tcp(wan: bool, flags: u8) -> Step {
    Step::Tcp {
        wan,
        flags,
        data: 0,
    }
}

pub fn data(wan: bool) -> Step {
    Step::Tcp {
        wan,
        flags: 0x18,
        data: 100,
    }
}

pub const SYN: u8 = 0x02;
pub const SYNACK: u8 = 0x12;
pub const ACK: u8 = 0x10;
pub const FINACK: u8 = 0x11;
pub const RST: u8 = 0x04;
pub const RSTACK: u8 = 0x14;

/// Exchanges written out: what each one pins is in its name.
pub fn hand_written() -> Vec<(&'static str, Kind, Vec<Step>)> {
    use Step::*;
    let (l, w) = (false, true);
    let err = |quote| Error {
        wan: true,
        beyond: true,
        quote,
    };
    vec![
        (
            "handshake, data both ways, FIN from each side",
            Kind::Tcp,
            vec![
                tcp(l, SYN),
                tcp(w, SYNACK),
                tcp(l, ACK),
                data(l),
                data(w),
                tcp(l, ACK),
                tcp(l, FINACK),
                tcp(w, ACK),
                tcp(w, FINACK),
                tcp(l, ACK),
                data(w),
            ],
        ),
        (
            "the wan opens: dropped, its answer is not established",
            Kind::Tcp,
            vec![tcp(w, SYN), tcp(l, SYNACK), tcp(w, ACK), data(w)],
        ),
        (
            "an unsolicited SYN-ACK and ACK from the wan",
            Kind::Tcp,
            vec![tcp(w, SYNACK), tcp(w, ACK), data(w)],
        ),
        (
            "picked up mid-stream from the lan, answered",
            Kind::Tcp,
            vec![data(l), data(w), tcp(l, FINACK), tcp(w, FINACK)],
        ),
        (
            "refused by the wan with a RST, then the wan's data",
            Kind::Tcp,
            vec![
                tcp(l, SYN),
                tcp(w, RSTACK),
                data(w),
                tcp(l, SYN),
                tcp(w, SYNACK),
            ],
        ),
        (
            "reset by the lan when established, then the wan's data",
            Kind::Tcp,
            vec![
                tcp(l, SYN),
                tcp(w, SYNACK),
                tcp(l, ACK),
                data(w),
                tcp(l, ACK),
                tcp(l, RST),
                data(w),
            ],
        ),
        (
            "bad flags from the lan: none, SYN+FIN, FIN alone, SYN+RST",
            Kind::Tcp,
            vec![
                tcp(l, 0),
                tcp(l, 0x03),
                tcp(l, 0x01),
                tcp(l, 0x06),
                tcp(l, SYN),
                tcp(w, SYNACK),
                tcp(w, 0x03),
                tcp(w, 0),
            ],
        ),
        (
            "retransmitted SYN and SYN-ACK, simultaneous open",
            Kind::Tcp,
            vec![
                tcp(l, SYN),
                Again(0),
                tcp(w, SYN),
                tcp(w, SYNACK),
                Again(3),
                tcp(l, SYNACK),
                tcp(l, ACK),
                data(w),
            ],
        ),
        (
            "TIME_WAIT reopened by a new SYN from the lan, not from the wan",
            Kind::Tcp,
            vec![
                tcp(l, SYN),
                tcp(w, SYNACK),
                tcp(l, ACK),
                tcp(l, FINACK),
                tcp(w, FINACK),
                tcp(l, ACK),
                tcp(w, SYN),
                tcp(l, SYN),
                tcp(w, SYNACK),
                tcp(l, ACK),
            ],
        ),
        (
            "a SYN the table ignored (picked up mid-stream), answered: back in step",
            Kind::Tcp,
            vec![
                data(l),
                tcp(l, SYN),
                tcp(w, SYNACK),
                tcp(l, SYNACK),
                tcp(l, ACK),
                data(w),
            ],
        ),
        (
            "an ICMP error quoting the connection, the wrong way round, and nothing",
            Kind::Tcp,
            vec![
                err(Quote::Sent),
                tcp(l, SYN),
                err(Quote::Sent),
                err(Quote::Received),
                err(Quote::Nothing),
                Error {
                    wan: false,
                    beyond: false,
                    quote: Quote::Sent,
                },
            ],
        ),
        (
            "UDP: unsolicited, then asked and answered, errors",
            Kind::Udp,
            vec![
                Udp { wan: w },
                err(Quote::Sent),
                Udp { wan: l },
                err(Quote::Sent),
                err(Quote::Nothing),
                Udp { wan: w },
                Udp { wan: w },
                Udp { wan: l },
            ],
        ),
        (
            "echo: a reply nobody asked for, a request from the wan, a lan ping",
            Kind::Echo,
            vec![
                Echo {
                    wan: w,
                    reply: true,
                },
                Echo {
                    wan: w,
                    reply: false,
                },
                Echo {
                    wan: l,
                    reply: true,
                },
                Echo {
                    wan: l,
                    reply: false,
                },
                Echo {
                    wan: w,
                    reply: true,
                },
                err(Quote::Sent),
                Echo {
                    wan: w,
                    reply: false,
                },
            ],
        ),
    ]
}

/// A random sequence: a connection's natural course (a lan host's or a
/// wan host's), with steps swapped for random ones, left out, sent
/// twice, and ICMP errors among them.
pub fn random_sequence(rng: &mut Rng, i: usize) -> Sequence {
    let v6 = rng.below(2) == 1;
    let kind = match rng.below(10) {
        0..=5 => Kind::Tcp,
        6..=7 => Kind::Udp,
        _ => Kind::Echo,
    };
    // The wan host opens one time in five.
    let o = rng.below(5) == 0;
    let (a, b) = (o, !o);
    let course: Vec<Step> = match kind {
        Kind::Tcp => {
            let mut c = vec![tcp(a, SYN), tcp(b, SYNACK), tcp(a, ACK), data(a), data(b)];
            c.extend(match rng.below(4) {
                0 => vec![
                    tcp(a, ACK),
                    tcp(a, FINACK),
                    tcp(b, ACK),
                    tcp(b, FINACK),
                    tcp(a, ACK),
                ],
                1 => vec![tcp(b, FINACK), tcp(a, FINACK), tcp(b, ACK)],
                2 => vec![tcp(a, RST)],
                _ => vec![tcp(b, RSTACK)],
            });
            c.push(data(b));
            c
        }
        Kind::Udp => (0..4)
            .map(|j| Step::Udp {
                wan: (j % 2 == 1) ^ o,
            })
            .collect(),
        Kind::Echo => (0..4)
            .map(|j| Step::Echo {
                wan: (j % 2 == 1) ^ o,
                reply: j % 2 == 1,
            })
            .collect(),
    };
    let mut steps = Vec::new();
    for st in course {
        match rng.below(20) {
            0 | 1 => continue,
            2 | 3 => steps.push(random_step(rng, kind)),
            4 if !steps.is_empty() => {
                steps.push(st);
                steps.push(Step::Again(steps.len() - 1));
                continue;
            }
            _ => {}
        }
        if rng.below(12) == 0 {
            steps.push(random_error(rng));
        }
        steps.push(st);
    }
    let keep = 1 + rng.below(steps.len() as u64) as usize;
    steps.truncate(keep.max(steps.len().min(3)));
    Sequence {
        v6,
        kind,
        beyond: rng.below(4) == 0,
        // Ports of its own: a sequence never meets another's connection
        // (past 60,000 sequences, the wan's ports change).
        lport: 1024 + (i % 60_000) as u16,
        wport: [80, 443, 53, 5201][rng.below(4) as usize] + (i / 60_000) as u16 * 10,
        isn: [rng.next_u64() as u32, rng.next_u64() as u32],
        steps,
    }
}

pub fn random_error(rng: &mut Rng) -> Step {
    Step::Error {
        wan: rng.below(5) != 0,
        beyond: rng.below(2) == 0,
        quote: [Quote::Sent, Quote::Sent, Quote::Received, Quote::Nothing][rng.below(4) as usize],
    }
}

pub fn random_step(rng: &mut Rng, kind: Kind) -> Step {
    let wan = rng.below(2) == 0;
    match kind {
        Kind::Tcp => {
            const FLAGS: [u8; 12] = [
                SYN, SYNACK, ACK, ACK, 0x18, FINACK, RST, RSTACK, 0x00, 0x03, 0x01, 0x29,
            ];
            let flags = FLAGS[rng.below(FLAGS.len() as u64) as usize];
            Step::Tcp {
                wan,
                flags,
                data: if rng.below(2) == 0 { 0 } else { 40 },
            }
        }
        Kind::Udp => Step::Udp { wan },
        Kind::Echo => Step::Echo {
            wan,
            reply: rng.below(2) == 0,
        },
    }
}
