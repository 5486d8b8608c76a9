//! Connection tracking in the pipeline: a stateful policy ("from the wan,
//! only established and related") decides by `ct state`, checked frame by
//! frame against a reference written apart from the fast path (a map of
//! both tuples of each connection, as Linux keeps them), over hand-written
//! exchanges and random ones; with each connection's stored decision
//! (the one lookup a packet) and without it, across reloads.

use forwarder::conntrack::{state, tcp};
use forwarder::control::build;
use forwarder::pipeline::{Pipeline, Snapshot};
use forwarder::port::Burst;
use forwarder::wire::build::{ipv4, ipv6, L4};
use routecache::gen::Rng;
use std::path::Path;

mod conntrack_model;
use conntrack_model::Reference;

const CONFIG: &str = r#"
route = [
  { prefix = "192.0.2.0/24", via = "lan" },
  { prefix = "198.51.100.0/24", via = "wan" },
  { prefix = "2001:db8:1::/48", via = "lan" },
  { prefix = "2001:db8:2::/48", via = "wan" },
]

[[port]]
name = "p0"
mac = "02:00:00:00:00:01"

[[port]]
name = "p1"
mac = "02:00:00:00:00:02"

[[next_hop]]
name = "lan"
port = "p0"
mac = "02:00:00:00:0a:01"

[[next_hop]]
name = "wan"
port = "p1"
mac = "02:00:00:00:0b:01"

# Before the states' verdicts: a lan host's established traffic to a
# port dropped, its new traffic let through (a decision that changes
# with the state; and with the reloads, which change the elements).
[[set]]
name = "lan_established"
type = "ipv4_addr . inet_service . ct_state"
match = "ip saddr . th dport . ct state"
action = "drop"
elements = [LANEST]

[[set]]
name = "state"
type = "ct_state : verdict"
match = "ct state"
action = "verdict"
elements = ["established : accept", "related : accept", "invalid : drop"]

[[set]]
name = "wan_new"
type = "ipv4_addr . ct_state"
match = "ip saddr . ct state"
action = "drop"
elements = ["198.51.100.0/24 . new"]

[[set]]
name = "wan_new6"
type = "ipv6_addr . ct_state"
match = "ip6 saddr . ct state"
action = "drop"
elements = ["2001:db8:2::/48 . new"]
EXTRA
[conntrack]
enabled = true
max = 100000
"#;

/// A set that reads the MACs: then connections keep no decision.
const MACS: &str = r#"
[[set]]
name = "macs"
type = "ether_addr"
match = "ether saddr"
action = "drop"
elements = ["02:00:00:00:ee:ee"]
"#;

/// The lan hosts (their last byte) whose established traffic to a
/// port the `lan_established` set drops: one element, or two.
fn lan_established(two: bool) -> Vec<(u8, u16)> {
    if two {
        vec![(2, 81), (1, 80)]
    } else {
        vec![(2, 81)]
    }
}

fn snapshot(extra: &str, generation: u64) -> Snapshot {
    snapshot_with(extra, generation, false)
}

fn snapshot_with(extra: &str, generation: u64, two: bool) -> Snapshot {
    let elements: Vec<String> = lan_established(two)
        .iter()
        .map(|(h, p)| format!("\"192.0.2.{h} . {p} . established\""))
        .collect();
    let text = CONFIG
        .replace("EXTRA", extra)
        .replace("LANEST", &elements.join(", "));
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    build::snapshot(&cfg, generation).unwrap()
}

/// A host: lan hosts are 192.0.2.x / 2001:db8:1::x, wan hosts
/// 198.51.100.x / 2001:db8:2::x.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Host {
    wan: bool,
    n: u8,
}

fn addr(v6: bool, h: Host) -> u128 {
    match (v6, h.wan) {
        (false, false) => 0xc000_0200 | h.n as u128,
        (false, true) => 0xc633_6400 | h.n as u128,
        (true, false) => 0x2001_0db8_0001u128 << 80 | h.n as u128,
        (true, true) => 0x2001_0db8_0002u128 << 80 | h.n as u128,
    }
}

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum What {
    Tcp(u16, u16, u8),
    Udp(u16, u16),
    /// ICMP type (v4 numbering: 8 request, 0 reply; mapped for v6) and id.
    Echo(bool, u16),
    /// An ICMP error (destination unreachable) quoting a UDP packet from
    /// `.0` to `.1` with ports.
    Error(Host, Host, u16, u16),
}

#[derive(Clone, Copy, Debug)]
struct Pkt {
    v6: bool,
    from: Host,
    to: Host,
    what: What,
}

fn frame(p: &Pkt) -> Vec<u8> {
    let (s, d) = (addr(p.v6, p.from), addr(p.v6, p.to));
    let l4 = match p.what {
        What::Tcp(sp, dp, _) => L4::Tcp(sp, dp),
        What::Udp(sp, dp) => L4::Udp(sp, dp),
        What::Echo(reply, _) => match (p.v6, reply) {
            (false, false) => L4::Icmp(8, 0),
            (false, true) => L4::Icmp(0, 0),
            (true, false) => L4::Icmp(128, 0),
            (true, true) => L4::Icmp(129, 0),
        },
        What::Error(..) => L4::Icmp(if p.v6 { 1 } else { 3 }, 3),
    };
    // The quoted packet, for an error.
    let quoted = match p.what {
        What::Error(a, b, sp, dp) => {
            let q = if p.v6 {
                ipv6(addr(true, a), addr(true, b), 64, L4::Udp(sp, dp), 0)
            } else {
                ipv4(
                    addr(false, a) as u32,
                    addr(false, b) as u32,
                    64,
                    L4::Udp(sp, dp),
                    0,
                )
            };
            q[14..].to_vec()
        }
        _ => Vec::new(),
    };
    let mut f = if p.v6 {
        ipv6(s, d, 64, l4, quoted.len())
    } else {
        ipv4(s as u32, d as u32, 64, l4, quoted.len())
    };
    let l4_off = if p.v6 { 54 } else { 34 };
    match p.what {
        What::Tcp(_, _, flags) => f[l4_off + 13] = flags,
        What::Echo(_, id) => f[l4_off + 4..l4_off + 6].copy_from_slice(&id.to_be_bytes()),
        What::Error(..) => f[l4_off + 8..l4_off + 8 + quoted.len()].copy_from_slice(&quoted),
        _ => {}
    }
    f
}

/// The policy's verdict for a packet from a host with `ct state` `s`
/// (`lan_est`: the `lan_established` set's elements).
fn forwarded(p: &Pkt, s: u8, lan_est: &[(u8, u16)]) -> bool {
    let dport = match p.what {
        What::Tcp(_, d, _) | What::Udp(_, d) => Some(d),
        _ => None,
    };
    if let Some(d) = dport {
        if s == state::ESTABLISHED && !p.v6 && !p.from.wan && lan_est.contains(&(p.from.n, d)) {
            return false;
        }
    }
    match s {
        state::ESTABLISHED | state::RELATED => true,
        state::INVALID => false,
        _ => !p.from.wan,
    }
}

struct Run {
    pipe: Pipeline,
    snap: Snapshot,
    reference: Reference,
    frames: u64,
    /// Every packet sent, with the reference's state, for messages.
    history: Vec<(Pkt, u8)>,
    /// The `lan_established` set's elements in force.
    lan_est: Vec<(u8, u16)>,
}

impl Run {
    fn new(extra: &str) -> Run {
        let snap = snapshot(extra, 1);
        Run {
            pipe: Pipeline::new(&snap, 2),
            snap,
            reference: Reference::default(),
            frames: 0,
            history: Vec::new(),
            lan_est: lan_established(false),
        }
    }

    /// Sends `pkts` through both, a burst for each run of packets from
    /// one side (a burst comes in on one port); their states.
    fn bursts(&mut self, pkts: &[Pkt]) -> Vec<u8> {
        let mut states = Vec::new();
        for run in pkts.chunk_by(|a, b| a.from.wan == b.from.wan) {
            states.extend(self.burst(run));
        }
        states
    }

    /// Sends a burst of `pkts` through both; panics where they differ.
    fn burst(&mut self, pkts: &[Pkt]) -> Vec<u8> {
        let mut b = Burst::new();
        let mut want = Vec::new();
        let mut states = Vec::new();
        self.reference.fresh.clear();
        for p in pkts {
            b.push(&frame(p));
            let (s, c) = self.reference.track(p);
            let fwd = forwarded(p, s, &self.lan_est);
            if let (true, Some(c)) = (fwd, c) {
                self.reference.enter(c);
            }
            want.push(fwd);
            states.push(s);
        }
        self.pipe.rx_port = pkts.first().is_some_and(|p| p.from.wan) as u16;
        self.pipe.process(&self.snap, &mut b);
        for (i, p) in pkts.iter().enumerate() {
            let out = if p.to.wan { 1 } else { 0 };
            let sent = self.pipe.out[out].contains(&(i as u8));
            if sent != want[i] {
                // The connection's history, for the message.
                let ends = |q: &Pkt| {
                    let mut e = [(q.from, q.v6), (q.to, q.v6)];
                    e.sort_by_key(|x| (x.0.wan, x.0.n));
                    e
                };
                for (j, (q, st)) in self.history.iter().enumerate() {
                    if ends(q) == ends(p) {
                        eprintln!("frame {j}: {q:?} state {st}");
                    }
                }
                for (j, q) in pkts.iter().enumerate() {
                    eprintln!("this burst {j}: {q:?} state {}", states[j]);
                }
                for v in self.pipe.conntrack().map(|c| c.list(0)).unwrap_or_default() {
                    eprintln!("{}", v.line());
                }
            }
            assert_eq!(
                sent,
                want[i],
                "frame {} of the run, {i} of its burst: {p:?}, reference state {}",
                self.frames + i as u64,
                states[i]
            );
        }
        // The counters hold with refused entries about: connections by
        // protocol add up to the entries, which are those listed (nothing
        // expires during a run).
        let ct = self.pipe.conntrack().unwrap();
        let st = ct.stats();
        assert_eq!(st.entries, st.by_proto.iter().sum::<u64>(), "{st:?}");
        assert_eq!(st.entries, ct.list(0).len() as u64, "{st:?}");
        self.frames += pkts.len() as u64;
        self.history
            .extend(pkts.iter().copied().zip(states.iter().copied()));
        states
    }
}

fn lan(n: u8) -> Host {
    Host { wan: false, n }
}

fn wan(n: u8) -> Host {
    Host { wan: true, n }
}

use tcp::flag::{ACK, FIN, RST, SYN};

#[test]
fn a_stateful_policy_lets_answers_in_and_nothing_else() {
    for v6 in [false, true] {
        let mut r = Run::new("");
        let p = |from, to, what| Pkt { v6, from, to, what };
        let (a, b) = (lan(1), wan(1));
        let tcp = |f| What::Tcp(40000, 80, f);
        let back = |f| What::Tcp(80, 40000, f);
        // A handshake from the lan, data both ways, a close.
        let s = r.bursts(&[
            p(a, b, tcp(SYN)),
            p(b, a, back(SYN | ACK)),
            p(a, b, tcp(ACK)),
            p(b, a, back(ACK)),
            p(a, b, tcp(FIN | ACK)),
            p(b, a, back(FIN | ACK)),
            p(a, b, tcp(ACK)),
        ]);
        assert_eq!(s[0], state::NEW);
        assert_eq!(s[1..], [state::ESTABLISHED; 6]);
        // The wan's own connections: a SYN, an unsolicited ACK (picked up
        // as new, so dropped), a SYN-ACK nobody asked for (invalid).
        let s = r.bursts(&[
            p(b, a, What::Tcp(5555, 22, SYN)),
            p(b, a, What::Tcp(5556, 22, ACK)),
            p(b, a, What::Tcp(5557, 22, SYN | ACK)),
            p(b, a, What::Tcp(5557, 22, SYN | FIN)),
        ]);
        assert_eq!(s, [state::NEW, state::NEW, state::INVALID, state::INVALID]);
        // UDP: an answer gets in, an unsolicited datagram does not.
        let s = r.bursts(&[
            p(a, b, What::Udp(5353, 53)),
            p(b, a, What::Udp(53, 5353)),
            p(b, a, What::Udp(53, 5354)),
        ]);
        assert_eq!(s, [state::NEW, state::ESTABLISHED, state::NEW]);
        // Echo: the reply gets in, a reply nobody asked for is invalid.
        let s = r.bursts(&[
            p(a, b, What::Echo(false, 7)),
            p(b, a, What::Echo(true, 7)),
            p(b, a, What::Echo(true, 8)),
        ]);
        assert_eq!(s, [state::NEW, state::ESTABLISHED, state::INVALID]);
        // An error from beyond quoting the lan host's datagram is
        // related; quoting a datagram never sent, invalid.
        let s = r.bursts(&[
            p(wan(9), a, What::Error(a, b, 5353, 53)),
            p(wan(9), a, What::Error(a, b, 5353, 54)),
            p(wan(9), lan(2), What::Error(a, b, 5353, 53)),
        ]);
        assert_eq!(s, [state::RELATED, state::INVALID, state::INVALID]);
        // A refused connection: the reset before any answer ends it, so
        // a later ACK from the wan is new again.
        let s = r.bursts(&[
            p(a, b, What::Tcp(41000, 81, SYN)),
            p(b, a, What::Tcp(81, 41000, RST | ACK)),
            p(b, a, What::Tcp(81, 41000, ACK)),
        ]);
        assert_eq!(s, [state::NEW, state::ESTABLISHED, state::NEW]);
        // An answer in the very burst of the packet it answers (never
        // from a port's own traffic but for a hairpin): not met, and it
        // opens nothing; the connection is there for the next burst.
        let s = r.burst(&[
            p(a, b, What::Udp(6000, 53)),
            p(b, a, What::Udp(53, 6000)),
            p(a, b, What::Tcp(42000, 82, SYN)),
            p(b, a, What::Tcp(82, 42000, SYN | ACK)),
        ]);
        assert_eq!(s, [state::NEW, state::NEW, state::NEW, state::INVALID]);
        let s = r.bursts(&[
            p(b, a, What::Udp(53, 6000)),
            p(b, a, What::Tcp(82, 42000, SYN | ACK)),
        ]);
        assert_eq!(s, [state::ESTABLISHED; 2]);
        let st = r.pipe.conntrack_stats().unwrap();
        assert_eq!(st.created, 6, "{st:?}");
        assert!(st.invalid >= 4, "{st:?}");
    }
}

/// Random exchanges between few hosts and ports (so that packets meet
/// connections in every state), both families, in bursts; with stored
/// decisions and without (a set that reads MACs), and a reload now and
/// then (stored decisions go stale, connections stay).
#[test]
fn random_exchanges_agree_with_the_reference() {
    for extra in ["", MACS] {
        let mut r = Run::new(extra);
        let mut rng = Rng(0x00c0_ffee);
        let flags = [
            SYN,
            SYN | ACK,
            ACK,
            FIN | ACK,
            RST,
            RST | ACK,
            ACK,
            ACK,
            SYN | FIN,
            0,
            FIN,
        ];
        let mut counts = [0u64; 65];
        for round in 0..3000 {
            if round % 500 == 499 {
                // A reload: stored decisions go stale (the elements
                // change every other time), connections stay.
                let two = round % 1000 == 499;
                r.snap = snapshot_with(extra, round + 2, two);
                r.lan_est = lan_established(two);
            }
            let mut pkts = Vec::new();
            // A burst comes in on one port: from the lan or from the wan.
            let out = rng.below(2) == 0;
            for _ in 0..1 + rng.below(16) {
                let v6 = rng.below(4) == 0;
                let (x, y) = (lan(1 + rng.below(2) as u8), wan(1 + rng.below(2) as u8));
                let (from, to) = if out { (x, y) } else { (y, x) };
                let (p1, p2) = (1000 + rng.below(3) as u16, 80 + rng.below(2) as u16);
                let (sp, dp) = if out { (p1, p2) } else { (p2, p1) };
                let what = match rng.below(10) {
                    0..=5 => What::Tcp(sp, dp, flags[rng.below(flags.len() as u64) as usize]),
                    6 | 7 => What::Udp(sp, dp),
                    8 => What::Echo(rng.below(2) == 0, rng.below(2) as u16),
                    // Now and then quoting another host's packet: not
                    // related to the one it goes to.
                    _ if rng.below(4) == 0 => What::Error(Host { n: 3 - to.n, ..to }, from, dp, sp),
                    _ => What::Error(to, from, dp, sp),
                };
                pkts.push(Pkt { v6, from, to, what });
            }
            for s in r.burst(&pkts) {
                counts[s as usize] += 1;
            }
        }
        // Every state was met, often.
        for s in [
            state::NEW,
            state::ESTABLISHED,
            state::RELATED,
            state::INVALID,
        ] {
            assert!(counts[s as usize] > 500, "{extra}: {counts:?}");
        }
    }
}

/// A full table: an unassured connection makes room for a new one; when
/// only assured ones are left, new connections are dropped and counted,
/// and the assured ones keep working.
#[test]
fn a_full_table_keeps_assured_connections() {
    let text = CONFIG
        .replace("EXTRA", "")
        .replace("LANEST", "\"192.0.2.9 . 9 . new\"")
        .replace("max = 100000", "max = 40");
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    let snap = build::snapshot(&cfg, 1).unwrap();
    let mut pipe = Pipeline::new(&snap, 2);
    // A burst for each run of packets from one side.
    let send = |pipe: &mut Pipeline, pkts: &[Pkt]| -> Vec<bool> {
        let mut sent = Vec::new();
        for run in pkts.chunk_by(|a, b| a.from.wan == b.from.wan) {
            let mut b = Burst::new();
            for p in run {
                b.push(&frame(p));
            }
            pipe.rx_port = run[0].from.wan as u16;
            pipe.process(&snap, &mut b);
            sent.extend(
                run.iter()
                    .enumerate()
                    .map(|(i, p)| pipe.out[p.to.wan as usize].contains(&(i as u8))),
            );
        }
        sent
    };
    let p = |from, to, what| Pkt {
        v6: false,
        from,
        to,
        what,
    };
    // 40 assured UDP exchanges (an answer, then another datagram).
    for port in 0..40u16 {
        let sent = send(
            &mut pipe,
            &[
                p(lan(1), wan(1), What::Udp(2000 + port, 53)),
                p(wan(1), lan(1), What::Udp(53, 2000 + port)),
                p(lan(1), wan(1), What::Udp(2000 + port, 53)),
                p(wan(1), lan(1), What::Udp(53, 2000 + port)),
            ],
        );
        assert_eq!(sent, [true; 4]);
    }
    assert_eq!(pipe.conntrack_stats().unwrap().entries, 40);
    // A flood of new connections from the lan: no room, dropped, counted.
    let flood: Vec<Pkt> = (0..32)
        .map(|i| p(lan(2), wan(2), What::Udp(9000 + i, 53)))
        .collect();
    assert_eq!(send(&mut pipe, &flood), [false; 32]);
    let st = pipe.conntrack_stats().unwrap();
    assert_eq!((st.insert_failed, st.entries), (32, 40), "{st:?}");
    // The assured ones still answer.
    for port in 0..40u16 {
        assert_eq!(
            send(&mut pipe, &[p(wan(1), lan(1), What::Udp(53, 2000 + port))]),
            [true]
        );
    }
    assert_eq!(
        pipe.counters.drops[forwarder::reason::DropReason::ConntrackFull.index()],
        32
    );
}

/// Unassured connections give way to new ones (early drop). This table
/// has four buckets, and one left empty as it fills (a few runs in a
/// hundred, as chance spreads 16 entries) holds no victim for a key whose
/// both choices it is: a few buckets beyond are looked at then, so none
/// is refused.
#[test]
fn unassured_connections_are_dropped_early() {
    let text = CONFIG
        .replace("EXTRA", "")
        .replace("LANEST", "\"192.0.2.9 . 9 . new\"")
        .replace("max = 100000", "max = 16");
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    let snap = build::snapshot(&cfg, 1).unwrap();
    let mut pipe = Pipeline::new(&snap, 2);
    for i in 0..200u16 {
        let mut b = Burst::new();
        b.push(&frame(&Pkt {
            v6: false,
            from: lan(1),
            to: wan(1),
            what: What::Udp(3000 + i, 53),
        }));
        pipe.process(&snap, &mut b);
        assert_eq!(pipe.out[1].len(), 1, "datagram {i}");
    }
    let st = pipe.conntrack_stats().unwrap();
    assert_eq!(st.created, 200);
    assert_eq!(st.entries, 16, "{st:?}");
    assert_eq!(st.early_drop, 200 - st.entries, "{st:?}");
    assert_eq!(st.insert_failed, 0);
}

/// Entries go after their timeout: a datagram's answer that comes after
/// the unreplied timeout is no longer an answer.
#[test]
fn entries_expire() {
    let text = CONFIG
        .replace("EXTRA", "")
        .replace("LANEST", "\"192.0.2.9 . 9 . new\"")
        .replace("max = 100000", "max = 100\nudp_timeout = 1");
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    let snap = build::snapshot(&cfg, 1).unwrap();
    let mut pipe = Pipeline::new(&snap, 2);
    let send = |pipe: &mut Pipeline, p: Pkt| {
        let mut b = Burst::new();
        b.push(&frame(&p));
        pipe.process(&snap, &mut b);
        pipe.out[p.to.wan as usize].len() == 1
    };
    let out = Pkt {
        v6: false,
        from: lan(1),
        to: wan(1),
        what: What::Udp(4000, 53),
    };
    let answer = Pkt {
        from: wan(1),
        to: lan(1),
        what: What::Udp(53, 4000),
        ..out
    };
    assert!(send(&mut pipe, out));
    assert_eq!(pipe.conntrack().unwrap().list(0).len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(1300));
    assert!(pipe.conntrack().unwrap().list(0).is_empty());
    assert!(!send(&mut pipe, answer));
    pipe.conntrack_turn();
    let st = pipe.conntrack_stats().unwrap();
    assert_eq!((st.entries, st.expired), (0, 1), "{st:?}");
}

/// A flow the sets drop as new has no connection (none counted or
/// listed), but its next packets take the decision its first one got
/// without being classified again; a reload judges it anew; an answer
/// the other way opens the connection in its place, and a packet that
/// could not open one is invalid.
#[test]
fn refused_flows_keep_their_decision_not_a_connection() {
    use forwarder::pipeline::{FlowStage, Stages};
    let snap = snapshot("", 1);
    let mut pipe = Pipeline::new(&snap, 2);
    // Forwarded, and the trace's word on the entry: a miss, a
    // connection's decision taken, or a refused flow's (here every `new`
    // packet that takes a decision takes a refused one: no connection
    // sees a second packet before its answer).
    let send = |pipe: &mut Pipeline, snap: &Snapshot, p: Pkt| -> (bool, FlowStage) {
        let mut b = Burst::new();
        b.push(&frame(&p));
        let mut st = [Stages::default()];
        pipe.rx_port = p.from.wan as u16;
        pipe.explain(snap, &mut b, &mut st);
        assert_eq!(
            st[0].ct_refused,
            st[0].flow == FlowStage::Hit && st[0].ct == state::NEW,
            "{:?} {}",
            st[0].flow,
            st[0].ct
        );
        (pipe.out[p.to.wan as usize].len() == 1, st[0].flow)
    };
    let pkt = |from, to, what| Pkt {
        v6: false,
        from,
        to,
        what,
    };
    let new_in = pkt(wan(1), lan(1), What::Udp(5000, 53));
    // Dropped as new: the first classified, the next ones not.
    assert_eq!(send(&mut pipe, &snap, new_in), (false, FlowStage::Miss));
    for _ in 0..3 {
        assert_eq!(send(&mut pipe, &snap, new_in), (false, FlowStage::Hit));
    }
    let st = pipe.conntrack_stats().unwrap();
    assert_eq!(
        (st.entries, st.created, st.by_proto, st.refused),
        (0, 0, [0; 4], 1),
        "{st:?}"
    );
    assert!(pipe.conntrack().unwrap().list(0).is_empty());
    // A TCP segment that cannot open a connection meets a refused one as
    // it would meet none: invalid.
    let syn = pkt(wan(2), lan(1), What::Tcp(6000, 22, SYN));
    let rst = pkt(wan(2), lan(1), What::Tcp(6000, 22, RST));
    assert!(!send(&mut pipe, &snap, syn).0);
    let invalid = pipe.conntrack_stats().unwrap().invalid;
    assert!(!send(&mut pipe, &snap, rst).0);
    assert_eq!(pipe.conntrack_stats().unwrap().invalid, invalid + 1);
    // The other way: the lan host's datagram opens the connection, and
    // the wan host's answer is established.
    let out = pkt(lan(1), wan(1), What::Udp(53, 5000));
    assert_eq!(send(&mut pipe, &snap, out), (true, FlowStage::Miss));
    assert!(send(&mut pipe, &snap, new_in).0);
    // Its next answer takes the connection's decision, not a refused one.
    assert_eq!(send(&mut pipe, &snap, new_in), (true, FlowStage::Hit));
    let st = pipe.conntrack_stats().unwrap();
    assert_eq!(
        (st.entries, st.created, st.by_proto[1]),
        (1, 1, 1),
        "{st:?}"
    );
    // A reload that lets the wan's new flows in: the refused SYN's flow
    // is judged again, and forwarded.
    let text = CONFIG
        .replace("EXTRA", "")
        .replace("LANEST", "\"192.0.2.9 . 9 . new\"")
        .replace("\"198.51.100.0/24 . new\"", "\"198.51.100.99 . new\"");
    let cfg = config::parse("t.toml", &text, Path::new(".")).unwrap();
    let open = build::snapshot(&cfg, 2).unwrap();
    assert_eq!(send(&mut pipe, &open, syn), (true, FlowStage::Miss));
    let st = pipe.conntrack_stats().unwrap();
    assert_eq!((st.entries, st.created), (2, 2), "{st:?}");
}

/// `conntrack -L`'s lines.
#[test]
fn entries_list_as_conntrack_does() {
    let mut r = Run::new("");
    let p = |from, to, what| Pkt {
        v6: false,
        from,
        to,
        what,
    };
    r.bursts(&[
        p(lan(1), wan(1), What::Tcp(40000, 80, SYN)),
        p(wan(1), lan(1), What::Tcp(80, 40000, SYN | ACK)),
        p(lan(1), wan(1), What::Tcp(40000, 80, ACK)),
        p(lan(1), wan(1), What::Udp(5353, 53)),
        p(lan(1), wan(1), What::Echo(false, 9)),
    ]);
    let mut lines: Vec<String> = r
        .pipe
        .conntrack()
        .unwrap()
        .list(0)
        .iter()
        .map(|v| v.line())
        .collect();
    lines.sort();
    let want = [
        "icmp     1  29 src=192.0.2.1 dst=198.51.100.1 type=8 code=0 id=9 [UNREPLIED] src=198.51.100.1 dst=192.0.2.1 type=0 code=0 id=9",
        "tcp      6  431999 ESTABLISHED src=192.0.2.1 dst=198.51.100.1 sport=40000 dport=80 src=198.51.100.1 dst=192.0.2.1 sport=80 dport=40000 [ASSURED]",
        "udp      17 29 src=192.0.2.1 dst=198.51.100.1 sport=5353 dport=53 [UNREPLIED] src=198.51.100.1 dst=192.0.2.1 sport=53 dport=5353",
    ];
    assert_eq!(lines, want);
}

/// With two workers, the packets of connections the other worker tracks
/// go to it a burst at a time: one batch holding their frames whole, in
/// order, with the port each came in on. A batch that finds the other's
/// queue full leaves its packets dropped as `handoff_full`, not handed.
#[test]
fn handed_frames_go_a_burst_at_a_time() {
    use forwarder::handoff::QUEUED;
    use forwarder::punt::RouterShared;
    use forwarder::reason::DropReason::{HandedOff, HandoffFull};
    let snap = snapshot("", 1);
    let r = std::sync::Arc::new(RouterShared::new(2, 2));
    let mut pipe = Pipeline::new(&snap, 2)
        .with_router(r.clone(), &snap)
        .for_worker(0);
    let frames: Vec<Vec<u8>> = (1..=32u8)
        .map(|n| {
            let what = What::Udp(1000 + n as u16, 53);
            frame(&Pkt {
                v6: false,
                from: lan(n),
                to: wan(1),
                what,
            })
        })
        .collect();
    let run = |pipe: &mut Pipeline, why| -> Vec<usize> {
        let mut b = Burst::new();
        for f in &frames {
            b.push(f);
        }
        pipe.rx_port = 0;
        pipe.process(&snap, &mut b);
        (0..frames.len())
            .filter(|&i| pipe.dropped_reason(i) == Some(why))
            .collect()
    };
    let handed = run(&mut pipe, HandedOff);
    assert!(
        !handed.is_empty() && handed.len() < frames.len(),
        "{handed:?}"
    );
    for _ in 1..QUEUED {
        assert_eq!(run(&mut pipe, HandedOff), handed);
    }
    // The queue holds `QUEUED` batches: the next finds it full.
    assert_eq!(run(&mut pipe, HandoffFull), handed);
    for _ in 0..QUEUED {
        let b = r.handoff.take(1).expect("a batch a burst");
        let got: Vec<&[u8]> = b.frames().collect();
        let want: Vec<&[u8]> = handed.iter().map(|&i| &frames[i][..]).collect();
        assert_eq!((b.port(), got), (0, want));
        r.handoff.done(b);
    }
    assert!(r.handoff.take(1).is_none() && r.handoff.take(0).is_none());
    assert_eq!(run(&mut pipe, HandedOff), handed);
}
