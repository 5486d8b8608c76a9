//! The first request for a new neighbour leaves from the worker that met
//! the miss, not from the slow path's thread (which may take
//! milliseconds to be scheduled): a burst to an unresolved gateway and
//! to an unresolved host of a connected network puts one ARP request and
//! one neighbour solicitation on the worker's inject queue, and the slow
//! path, told so, holds the frames without asking again; an answer that
//! overtakes the frames finds its question; retransmissions stay the
//! slow path's.

use forwarder::control::build;
use forwarder::pipeline::Pipeline;
use forwarder::port::Burst;
use forwarder::punt::{Counter, RouterShared};
use forwarder::router::SlowPath;
use forwarder::wire::arp::{Arp, BROADCAST};
use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::nd::{self, Nd};
use std::path::Path;
use std::sync::Arc;

const CONFIG: &str = r#"
route = [{ prefix = "203.0.113.0/24", via = "198.51.100.254" }]
[[port]]
name = "p0"
mac = "02:00:00:00:00:01"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[[port]]
name = "p1"
mac = "02:00:00:00:00:02"
address = ["198.51.100.1/24", "2001:db8:2::1/64"]
[neighbour]
retrans_ms = 100
"#;

const P0: [u8; 6] = [2, 0, 0, 0, 0, 1];
const P1: [u8; 6] = [2, 0, 0, 0, 0, 2];
const GATEWAY: u32 = 0xc633_64fe;
const HOST6: u128 = 0x2001_0db8_0002_0000_0000_0000_0000_0009;

/// Three datagrams to a host behind the gateway, two to a host on p1's
/// IPv6 network, all received on p0.
fn burst() -> Burst {
    let mut b = Burst::new();
    for i in 0..3 {
        let mut f = ipv4(0xc000_0202, 0xcb00_7105, 64, L4::Udp(i, 9), 10);
        f[..6].copy_from_slice(&P0);
        b.push(&f);
    }
    for i in 0..2 {
        let src = 0x2001_0db8_0001_0000_0000_0000_0000_0002;
        let mut f = ipv6(src, HOST6, 64, L4::Udp(i, 9), 10);
        f[..6].copy_from_slice(&P0);
        b.push(&f);
    }
    b
}

/// What the slow path gave worker 0 to send: (port, frame).
fn injected(r: &RouterShared) -> Vec<(u16, Vec<u8>)> {
    let mut v = Vec::new();
    while let Some(b) = r.inject[0].pop() {
        v.push((b.port, b.frame().to_vec()));
        let _ = r.free.push(b);
    }
    v
}

fn the_requests_are(mut out: Vec<(u16, Vec<u8>)>) {
    assert_eq!(out.len(), 2, "one ARP request and one solicitation");
    // The ARP request (60 bytes) first, in whatever order they came.
    out.sort_by_key(|(_, f)| f.len());
    let (port, f) = &out[0];
    assert_eq!(*port, 1);
    assert_eq!(&f[..6], &BROADCAST);
    let a = Arp::parse(f).expect("an ARP frame");
    assert_eq!(
        (a.op, a.sha, a.spa, a.tpa),
        (Arp::REQUEST, P1, 0xc633_6401, GATEWAY)
    );
    let (port, f) = &out[1];
    assert_eq!(*port, 1);
    let group = nd::solicited_node(HOST6);
    assert_eq!(&f[..6], &nd::multicast_mac(group));
    let s = Nd::parse(f).expect("a valid solicitation (checksum and all)");
    assert_eq!(
        (s.ty, s.src, s.dst, s.target, s.lladdr),
        (
            forwarder::wire::icmp::v6::NS,
            0x2001_0db8_0002_0000_0000_0000_0000_0001,
            group,
            HOST6,
            Some(P1)
        )
    );
}

#[test]
fn the_worker_asks_first_and_the_slow_path_does_not_ask_again() {
    let cfg = config::parse("t.toml", CONFIG, Path::new(".")).unwrap();
    let t = build::snapshot(&cfg, 1).unwrap();
    let r = Arc::new(RouterShared::new(1, cfg.ports.len()));
    let mut p = Pipeline::new(&t, 2).with_router(r.clone(), &t);
    let mut b = burst();
    p.rx_port = 0;
    p.process(&t, &mut b);
    assert!(p.out.iter().all(|o| o.is_empty()), "nothing forwarded yet");
    // The worker's own requests, one per neighbour, before the slow path
    // has run at all.
    the_requests_are(injected(&r));
    assert_eq!(r.counters.get(Counter::ArpRequestsOut), 1);
    assert_eq!(r.counters.get(Counter::NsOut), 1);
    // Every frame is handed over.
    let mut next = 0;
    let mut punts = Vec::new();
    while let Some(b) = r.next_punt(&mut next) {
        punts.push(b);
    }
    assert_eq!(punts.len(), 5);
    // The slow path holds them and sends nothing more.
    let mut sp = SlowPath::new(r.clone());
    sp.adopt(&t, 0);
    let _ = injected(&r);
    for b in &punts {
        sp.handle(&t, b, 1);
    }
    assert_eq!(r.counters.get(Counter::Held), 5);
    assert!(injected(&r).is_empty(), "no second request");
    let view = sp.view(1);
    assert_eq!(view.len(), 2);
    assert!(view.iter().all(|n| n.mac.is_none() && n.probes == 1));
    // The same frames again: the worker remembers it asked.
    sp.publish();
    let mut b = burst();
    p.process(&t, &mut b);
    assert!(injected(&r).is_empty(), "asked once per neighbour");
    // The slow path retransmits after `retrans_ms`, as it would had it
    // sent the first request itself.
    sp.tick(&t, 101);
    the_requests_are(injected(&r));
    assert!(sp.view(101).iter().all(|n| n.probes == 2));
}

/// The answer, a control frame the slow path serves first, may come
/// before the frame that met the miss: it is taken as the answer to the
/// worker's question, and the frame then leaves at once.
#[test]
fn an_answer_that_overtakes_the_frames_is_taken() {
    use forwarder::wire::arp::Arp;
    let cfg = config::parse("t.toml", CONFIG, Path::new(".")).unwrap();
    let t = build::snapshot(&cfg, 1).unwrap();
    let r = Arc::new(RouterShared::new(1, cfg.ports.len()));
    let mut p = Pipeline::new(&t, 2).with_router(r.clone(), &t);
    let mut sp = SlowPath::new(r.clone());
    sp.adopt(&t, 0);
    let _ = injected(&r);
    let mut b = burst();
    p.rx_port = 0;
    p.process(&t, &mut b);
    the_requests_are(injected(&r));
    const GW_MAC: [u8; 6] = [2, 0, 0, 0, 0xbb, 2];
    let reply = Arp {
        op: Arp::REPLY,
        sha: GW_MAC,
        spa: GATEWAY,
        tha: P1,
        tpa: 0xc633_6401,
    }
    .frame(P1);
    sp.handle(
        &t,
        &forwarder::punt::Buf::holding(&reply, 1, 0, forwarder::reason::DropReason::Arp, 0),
        1,
    );
    let mut next = 0;
    let mut sent = 0;
    while let Some(b) = r.next_punt(&mut next) {
        sp.handle(&t, &b, 2);
    }
    for (port, f) in injected(&r) {
        if f[..6] == GW_MAC {
            assert_eq!(port, 1);
            sent += 1;
        }
    }
    assert_eq!(sent, 3, "the gateway's three frames, resolved");
    let gw = sp.view(2).into_iter().find(|n| n.mac == Some(GW_MAC));
    assert!(gw.is_some(), "the answer was taken");
}
