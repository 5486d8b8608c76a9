use super::worker::{tapped, WorkerTaps};
use super::*;
use crate::control::build;
use crate::pipeline::{Fated, Pipeline, Snapshot};
use crate::port::Burst;
use crate::wire::build::{ipv4, L4};

fn snapshot() -> Snapshot {
    let text = r#"
route = [{ prefix = "198.51.100.0/24", via = "gw" }]
[forwarder]
cores = [0]
[[port]]
name = "in"
[[port]]
name = "out"
[[set]]
name = "deny"
type = "inet_service"
match = "udp dport"
action = "drop"
elements = ["53"]
[[next_hop]]
name = "gw"
port = "out"
mac = "02:00:00:00:00:fe"
"#;
    let cfg = config::parse("t.toml", text, std::path::Path::new(".")).unwrap();
    build::snapshot(&cfg, 1).unwrap()
}

fn names() -> Vec<String> {
    vec!["in".into(), "out".into()]
}

/// 64 frames: even ones forwarded, odd ones dropped (a rule, or no route).
fn burst() -> (Burst, Vec<Vec<u8>>) {
    let mut b = Burst::new();
    let mut frames = Vec::new();
    for i in 0..64u32 {
        let f = match i % 4 {
            1 => ipv4(
                0xc000_0201,
                0xc633_6400 | i,
                64,
                L4::Udp(1000 + i as u16, 53),
                0,
            ),
            3 => ipv4(
                0xc000_0201,
                0xcb00_7100 | i,
                64,
                L4::Udp(1000 + i as u16, 80),
                0,
            ),
            _ => ipv4(
                0xc000_0201,
                0xc633_6400 | i,
                64,
                L4::Udp(1000 + i as u16, 80),
                0,
            ),
        };
        b.push(&f);
        frames.push(f);
    }
    (b, frames)
}

/// Received, sent and dropped frames land in the worker's ring as they
/// were, with their port, direction and reason; a filter picks; a full
/// ring loses copies, counted per port; forwarding is what it is without
/// the capture.
#[test]
fn captures_copy_what_the_burst_did() {
    let t = snapshot();
    let taps = Taps::default();
    let all = Filter::default();
    let s = taps
        .arm(Session::capture(
            all,
            (0b01, 0b10, 0b01),
            (2048, 0),
            (1, 2),
            4,
        ))
        .unwrap();
    let mut pipe = Pipeline::new(&t, 2);
    let mut plain = Pipeline::new(&t, 2);
    let (mut b, frames) = burst();
    let (mut c, _) = burst();
    let mut mine = WorkerTaps::default();
    pipe.rx_port = 0;
    tapped(&taps, 0, &mut pipe, &t, &mut b, 0, &mut mine);
    mine.hand_over(0);
    plain.process(&t, &mut c);
    assert_eq!(
        pipe.out, plain.out,
        "the capture changes nothing of forwarding"
    );
    let Work::Capture { rings, .. } = &s.work else {
        unreachable!()
    };
    let mut got = Vec::new();
    while let Some(b) = rings[0].take() {
        for e in b.entries() {
            got.push((e.port, e.dir, b.bytes(&e).to_vec()));
        }
        rings[0].give_back(b);
    }
    let rx: Vec<_> = got.iter().filter(|g| g.1 == Direction::Rx).collect();
    let tx: Vec<_> = got.iter().filter(|g| g.1 == Direction::Tx).collect();
    let dropped: Vec<_> = got
        .iter()
        .filter(|g| matches!(g.1, Direction::Drop(..)))
        .collect();
    assert_eq!(rx.len(), 64);
    for (g, f) in rx.iter().zip(&frames) {
        assert_eq!((g.0, &g.2), (0, f), "received frames as they came in");
    }
    assert_eq!(tx.len(), 32);
    for (g, &i) in tx.iter().zip(&plain.out[1]) {
        assert_eq!(
            (g.0, &g.2[..]),
            (1, c.frame(i as usize)),
            "sent frames as they left"
        );
    }
    assert_eq!(dropped.len(), 32);
    for (k, g) in dropped.iter().enumerate() {
        let i = 2 * k + 1;
        let why = if i % 4 == 1 {
            DropReason::Rule
        } else {
            DropReason::NoRoute
        };
        assert_eq!((g.1, &g.2), (Direction::Drop(why, false), &frames[i]));
    }
    assert_eq!(s.lost(), 0);
    taps.disarm(&s);
    assert_eq!(taps.armed.load(Relaxed), 0);
    // Too many at once: refused, saying so.
    let many: Vec<_> = (0..MAX_TAPS)
        .map(|_| {
            taps.arm(Session::trace(Filter::default(), 0, 1, 1))
                .unwrap()
        })
        .collect();
    assert!(taps
        .arm(Session::trace(Filter::default(), 0, 1, 1))
        .is_err());
    for m in &many {
        taps.disarm(m);
    }

    // A filter, and a ring of one slot. The worker keeps filling its slot
    // across bursts; handed over, it is the writer's, and while the
    // writer has not given it back the next burst's copies are lost,
    // counted on the port.
    let f = Filter::parse("udp dport 80", &names()).unwrap();
    let s = taps
        .arm(Session::capture(f, (0b01, 0, 0), (2048, 0), (1, 2), 1))
        .unwrap();
    let Work::Capture { rings, .. } = &s.work else {
        unreachable!()
    };
    for _ in 0..2 {
        let (mut b, _) = burst();
        tapped(&taps, 0, &mut pipe, &t, &mut b, 0, &mut mine);
    }
    mine.hand_over(0);
    let (mut b2, _) = burst();
    tapped(&taps, 0, &mut pipe, &t, &mut b2, 0, &mut mine);
    let lost = || s.lost.first().map(|l| l.load(Relaxed));
    assert_eq!(lost(), Some(48));
    let b = rings[0].take().unwrap();
    assert_eq!(b.len(), 96);
    assert!(b
        .entries()
        .all(|e| crate::wire::parse(b.bytes(&e)).unwrap().dport == 80));
    rings[0].give_back(b);
    let (mut c, _) = burst();
    tapped(&taps, 0, &mut pipe, &t, &mut c, 0, &mut mine);
    mine.hand_over(0);
    assert_eq!(rings[0].take().unwrap().len(), 48);
    assert_eq!(lost(), Some(48));
    taps.disarm(&s);
    assert_eq!(taps.json()["capture"]["lost"], 48);
    // A slot that fills is handed over and the next one taken: 1,024
    // frames a slot.
    let (mut d, _) = burst();
    let s2 = taps
        .arm(Session::capture(
            Filter::default(),
            (0b01, 0, 0),
            (2048, 0),
            (1, 2),
            4,
        ))
        .unwrap();
    for _ in 0..17 {
        tapped(&taps, 0, &mut pipe, &t, &mut d, 0, &mut mine);
    }
    let Work::Capture { rings: r2, .. } = &s2.work else {
        unreachable!()
    };
    assert_eq!(s2.lost(), 0);
    assert_eq!(r2[0].take().unwrap().len(), SLOT_FRAMES);
    assert!(
        r2[0].take().is_none(),
        "the second slot is still being filled"
    );
    taps.disarm(&s2);
    mine.hand_over(0);
}

/// A live trace records the next packets of its port that pass its
/// filter, as the pipeline decided them, and no more than asked.
#[test]
fn live_traces_record_the_packets_asked_for() {
    let t = snapshot();
    let taps = Taps::default();
    let f = Filter::parse("udp dport 53", &names()).unwrap();
    let s = taps.arm(Session::trace(f, 0, 5, 1)).unwrap();
    let mut pipe = Pipeline::new(&t, 2);
    let mut mine = WorkerTaps::default();
    let (mut b, frames) = burst();
    tapped(&taps, 0, &mut pipe, &t, &mut b, 0, &mut mine);
    let Work::Trace { rings, left, .. } = &s.work else {
        unreachable!()
    };
    let mut n = 0;
    while let Some(r) = rings[0].take() {
        assert_eq!(r.fate, Fated::Dropped(DropReason::Rule));
        assert_eq!(r.frame(), &frames[4 * n + 1][..]);
        assert!(r.time_ns > 0);
        rings[0].give_back(r);
        n += 1;
    }
    assert_eq!(n, 5);
    assert!(left.load(Relaxed) <= 0);
    // Another port's bursts are not traced.
    let (mut b, _) = burst();
    tapped(&taps, 0, &mut pipe, &t, &mut b, 1, &mut mine);
    assert!(rings[0].take().is_none());
}
