//! TCP's connection states as Linux's `nf_conntrack_proto_tcp` follows
//! them: the same states, the same table of transitions by direction and
//! flags, the same reopening of a closed connection by a new SYN. The
//! sequence windows are not tracked: every segment is taken as in window,
//! as Linux does with `nf_conntrack_tcp_be_liberal = 1` (Linux still marks
//! an out-of-window RST invalid there; here it closes the connection).

/// A TCP connection's state (Linux's `enum tcp_conntrack`, its order).
pub const NONE: u8 = 0;
/// The first SYN seen.
pub const SYN_SENT: u8 = 1;
/// The SYN-ACK seen.
pub const SYN_RECV: u8 = 2;
/// The handshake's last ACK seen (or a connection picked up mid-stream).
pub const ESTABLISHED: u8 = 3;
/// A FIN seen.
pub const FIN_WAIT: u8 = 4;
/// The other side's ACK of a FIN.
pub const CLOSE_WAIT: u8 = 5;
/// The second FIN.
pub const LAST_ACK: u8 = 6;
/// Both FINs acknowledged.
pub const TIME_WAIT: u8 = 7;
/// Reset.
pub const CLOSE: u8 = 8;
/// A SYN from each side (simultaneous open).
pub const SYN_SENT2: u8 = 9;
/// Not a state: the segment is invalid in this state.
const IV: u8 = 10;
/// Not a state: the segment changes nothing (Linux's "ignore").
const IG: u8 = 11;

/// The states' names as `conntrack -L` prints them.
pub const NAMES: [&str; 10] = [
    "NONE",
    "SYN_SENT",
    "SYN_RECV",
    "ESTABLISHED",
    "FIN_WAIT",
    "CLOSE_WAIT",
    "LAST_ACK",
    "TIME_WAIT",
    "CLOSE",
    "SYN_SENT2",
];

/// Which of Linux's flag classes a segment is in: RST, SYN-ACK, SYN, FIN,
/// ACK, none, in that precedence (`get_conntrack_index`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// SYN without ACK.
    Syn = 0,
    /// SYN with ACK.
    SynAck = 1,
    /// FIN (no SYN, no RST).
    Fin = 2,
    /// ACK alone.
    Ack = 3,
    /// RST.
    Rst = 4,
    /// None of these.
    None = 5,
}

/// TCP flag bits.
pub mod flag {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// PSH.
    pub const PSH: u8 = 0x08;
    /// ACK.
    pub const ACK: u8 = 0x10;
    /// URG.
    pub const URG: u8 = 0x20;
    /// ECE.
    pub const ECE: u8 = 0x40;
    /// CWR.
    pub const CWR: u8 = 0x80;
}

/// The class of a segment with `flags`.
pub fn class(flags: u8) -> Class {
    if flags & flag::RST != 0 {
        Class::Rst
    } else if flags & flag::SYN != 0 {
        if flags & flag::ACK != 0 {
            Class::SynAck
        } else {
            Class::Syn
        }
    } else if flags & flag::FIN != 0 {
        Class::Fin
    } else if flags & flag::ACK != 0 {
        Class::Ack
    } else {
        Class::None
    }
}

/// Whether a segment's flags are a combination Linux lets through
/// (`tcp_valid_flags`, with ECE, CWR and PSH left aside): SYN, SYN+URG,
/// SYN+ACK, RST, RST+ACK, FIN+ACK, FIN+ACK+URG, ACK, ACK+URG. Any other
/// (no flag at all, SYN+FIN, FIN without ACK, ...) is invalid.
pub fn valid_flags(flags: u8) -> bool {
    use flag::*;
    let f = flags & !(ECE | CWR | PSH);
    [
        SYN,
        SYN | URG,
        SYN | ACK,
        RST,
        RST | ACK,
        FIN | ACK,
        FIN | ACK | URG,
        ACK,
        ACK | URG,
    ]
    .contains(&f)
}

use self::{
    CLOSE as CL, CLOSE_WAIT as CW, ESTABLISHED as ES, FIN_WAIT as FW, LAST_ACK as LA, NONE as NO,
    SYN_RECV as SR, SYN_SENT as SS, SYN_SENT2 as S2, TIME_WAIT as TW,
};

/// The next state, by direction (0 original, 1 reply), class and state:
/// Linux's `tcp_conntracks`, as of its simultaneous-open rework (a SYN-ACK
/// from the originator answers a SYN_SENT2, a reply's SYN may reopen a
/// TIME_WAIT).
const NEXT: [[[u8; 10]; 6]; 2] = [
    [
        // states: NO  SS  SR  ES  FW  CW  LA  TW  CL  S2
        [SS, SS, IG, IG, IG, IG, IG, SS, SS, S2], // syn
        [IV, IV, SR, IV, IV, IV, IV, IV, IV, SR], // syn-ack
        [IV, IV, FW, FW, LA, LA, LA, TW, CL, IV], // fin
        [ES, IV, ES, ES, CW, CW, TW, TW, CL, IV], // ack
        [IV, CL, CL, CL, CL, CL, CL, CL, CL, CL], // rst
        [IV, IV, IV, IV, IV, IV, IV, IV, IV, IV], // none
    ],
    [
        [IV, S2, IV, IV, IV, IV, IV, SS, IV, S2], // syn
        [IV, SR, IG, IG, IG, IG, IG, IG, IG, SR], // syn-ack
        [IV, IV, FW, FW, LA, LA, LA, TW, CL, IV], // fin
        [IV, IG, SR, ES, CW, CW, TW, TW, CL, IG], // ack
        [IV, CL, CL, CL, CL, CL, CL, CL, CL, CL], // rst
        [IV, IV, IV, IV, IV, IV, IV, IV, IV, IV], // none
    ],
];

/// What a segment does to a connection in state `state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The connection goes to this state.
    To(u8),
    /// Nothing changes; the segment passes as part of the connection.
    Ignore,
    /// As `Ignore`, and the segment is not even kept as the last one:
    /// the challenge ACK (RFC 5961) of a SYN ignored in LAST_ACK, which
    /// must not be taken for the last FIN's.
    Skip,
    /// The segment does not fit the connection: `ct state invalid`.
    Invalid,
    /// A SYN that reopens a closed connection: the old one goes, the
    /// segment starts a new one.
    Reopen,
}

/// What a connection remembers of the last segment it took (Linux's
/// `last_index` and `last_dir`, and its `IP_CT_EXP_CHALLENGE_ACK`), as a
/// new segment's direction sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Last {
    /// It was a RST from the new segment's side.
    pub rst_here: bool,
    /// It was a SYN from the other side.
    pub syn_there: bool,
    /// A SYN was ignored in LAST_ACK: the other side's ACK is due.
    pub challenge: bool,
}

/// The step a segment of class `c` in direction `reply` makes from
/// `state`; `closing` is whether either side has sent a FIN.
///
/// Beside the table, what Linux decides by the last segment (`last`):
/// a SYN reopens TIME_WAIT or CLOSE after a FIN, or after a RST from its
/// own side; a SYN-ACK the table ignores but that answers a SYN it
/// ignored (a connection picked up mid-stream, then opened again by its
/// hosts) puts the connection back in step at SYN_RECV (Linux also
/// checks that it acknowledges that SYN: sequence numbers are not kept
/// here); the challenge ACK of a SYN ignored in LAST_ACK changes
/// nothing.
pub fn step(state: u8, reply: bool, c: Class, closing: bool, last: Last) -> Step {
    let next = NEXT[reply as usize][c as usize][state.min(S2) as usize];
    match next {
        IV => Step::Invalid,
        IG if c == Class::SynAck && last.syn_there => Step::To(SYN_RECV),
        IG => Step::Ignore,
        SS if state >= TW => {
            if closing || last.rst_here {
                Step::Reopen
            } else {
                Step::Ignore
            }
        }
        TW if state == LA && c == Class::Ack && last.syn_there && last.challenge => Step::Skip,
        s => Step::To(s),
    }
}

/// The state a segment of class `c` opens a connection in: SYN_SENT for
/// a SYN, ESTABLISHED for an ACK (Linux's `nf_conntrack_tcp_loose`: a
/// connection is picked up mid-stream), none for the rest.
pub fn open(c: Class) -> Option<u8> {
    match NEXT[0][c as usize][NO as usize] {
        IV | IG => None,
        s => Some(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handshake_and_a_close_walk_the_states() {
        let mut s = open(Class::Syn).unwrap();
        assert_eq!(s, SYN_SENT);
        for (reply, c, want) in [
            (true, Class::SynAck, SYN_RECV),
            (false, Class::Ack, ESTABLISHED),
            (false, Class::Fin, FIN_WAIT),
            (true, Class::Ack, CLOSE_WAIT),
            (true, Class::Fin, LAST_ACK),
            (false, Class::Ack, TIME_WAIT),
        ] {
            match step(s, reply, c, false, Last::default()) {
                Step::To(n) => s = n,
                other => panic!("{c:?} from {}: {other:?}", NAMES[s as usize]),
            }
            assert_eq!(s, want);
        }
        // A new SYN on a closed connection opens a new one.
        assert_eq!(
            step(s, false, Class::Syn, true, Last::default()),
            Step::Reopen
        );
        assert_eq!(
            step(s, false, Class::Syn, false, Last::default()),
            Step::Ignore
        );
    }

    #[test]
    fn what_cannot_start_or_continue_is_invalid() {
        assert_eq!(open(Class::SynAck), None);
        assert_eq!(open(Class::Fin), None);
        assert_eq!(open(Class::Rst), None);
        assert_eq!(open(Class::Ack), Some(ESTABLISHED));
        assert_eq!(
            step(SYN_SENT, false, Class::Ack, false, Last::default()),
            Step::Invalid
        );
        assert_eq!(
            step(ESTABLISHED, true, Class::Syn, false, Last::default()),
            Step::Invalid
        );
        assert_eq!(
            step(ESTABLISHED, false, Class::Rst, false, Last::default()),
            Step::To(CLOSE)
        );
        assert!(!valid_flags(0));
        assert!(!valid_flags(flag::SYN | flag::FIN));
        assert!(!valid_flags(flag::FIN));
        assert!(valid_flags(flag::FIN | flag::ACK | flag::PSH));
        assert!(valid_flags(flag::SYN | flag::ECE | flag::CWR));
    }

    #[test]
    fn the_last_segment_reopens_resynchronises_and_skips() {
        let none = Last::default();
        let rst_here = Last {
            rst_here: true,
            ..none
        };
        assert_eq!(
            step(CLOSE, false, Class::Syn, false, rst_here),
            Step::Reopen
        );
        // A SYN-ACK answering an ignored SYN; without one, ignored.
        let syn_there = Last {
            syn_there: true,
            ..none
        };
        assert_eq!(
            step(ESTABLISHED, true, Class::SynAck, false, syn_there),
            Step::To(SYN_RECV)
        );
        assert_eq!(
            step(ESTABLISHED, true, Class::SynAck, false, none),
            Step::Ignore
        );
        // The challenge ACK in LAST_ACK, then an ordinary one.
        let challenge = Last {
            challenge: true,
            ..syn_there
        };
        assert_eq!(
            step(LAST_ACK, true, Class::Ack, true, challenge),
            Step::Skip
        );
        assert_eq!(
            step(LAST_ACK, true, Class::Ack, true, syn_there),
            Step::To(TIME_WAIT)
        );
    }
}
