use super::*;
use crate::control::build;
use crate::neigh::{nkey, State};
use crate::pipeline::Snapshot;
use crate::punt::RouterShared;
use crate::reason::DropReason;
use crate::tables::HopKind;
use crate::wire::arp::{Arp, BROADCAST};
use crate::wire::build::{ipv4, ipv6, L4};
use crate::wire::nd;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

const P0: [u8; 6] = [2, 0, 0, 0, 0, 1];
const HOST: [u8; 6] = [2, 0, 0, 0, 0xaa, 1];
const GW: [u8; 6] = [2, 0, 0, 0, 0xbb, 2];

/// [`tables`] with more `[neighbour]` settings.
fn tables_with(neighbour: &str) -> Snapshot {
    let text = r#"
route = [{ prefix = "203.0.113.0/24", via = "198.51.100.254" }]
[[port]]
name = "p0"
mac = "02:00:00:00:00:01"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[[port]]
name = "p1"
mac = "02:00:00:00:00:02"
address = ["198.51.100.1/24"]
[[next_hop]]
name = "fixed"
port = "p1"
mac = "02:00:00:00:cc:cc"
address = "198.51.100.7"
[neighbour]
retrans_ms = 100
probes = 3
reachable_ms = 1000
delay_ms = 100
"#;
    let text = format!("{text}{neighbour}\n");
    let cfg = config::parse("r.toml", &text, std::path::Path::new(".")).unwrap();
    build::snapshot(&cfg, 1).unwrap()
}

fn setup() -> (SlowPath, Arc<RouterShared>, Snapshot) {
    setup_with("")
}

fn setup_with(neighbour: &str) -> (SlowPath, Arc<RouterShared>, Snapshot) {
    let r = Arc::new(RouterShared::new(2, 2));
    let mut sp = SlowPath::new(r.clone());
    let t = tables_with(neighbour);
    sp.adopt(&t, 0);
    drain(&r);
    (sp, r, t)
}

/// Frames injected for worker 0 (and 1), taken off their queues.
fn drain(r: &RouterShared) -> Vec<(u16, Vec<u8>)> {
    let mut v = Vec::new();
    for q in &r.inject {
        while let Some(b) = q.pop() {
            v.push((b.port, b.frame().to_vec()));
            let _ = r.free.push(b);
        }
    }
    v
}

fn punt(
    sp: &mut SlowPath,
    t: &Snapshot,
    f: &[u8],
    port: u16,
    reason: DropReason,
    hop: u32,
    now: u64,
) {
    sp.handle(t, &Buf::holding(f, port, 0, reason, hop), now);
}

/// An ARP frame punted by worker 0 from `port`.
fn arp_in(sp: &mut SlowPath, t: &Snapshot, f: &[u8], port: u16, now: u64) {
    punt(sp, t, f, port, DropReason::Arp, 0, now);
}

/// Host a (192.0.2.2, `HOST`) resolved by its request for our address,
/// and the answer taken off the queues.
fn host_resolved(sp: &mut SlowPath, r: &RouterShared, t: &Snapshot) {
    arp_in(
        sp,
        t,
        &arp(Arp::REQUEST, HOST, 0xc000_0202, 0xc000_0201, BROADCAST),
        0,
        0,
    );
    drain(r);
}

fn arp(op: u16, sha: [u8; 6], spa: u32, tpa: u32, to: [u8; 6]) -> Vec<u8> {
    Arp {
        op,
        sha,
        spa,
        tha: [0; 6],
        tpa,
    }
    .frame(to)
}

#[test]
fn requests_for_our_address_are_answered_and_teach_the_sender() {
    let (mut sp, r, t) = setup();
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REQUEST, HOST, 0xc000_0202, 0xc000_0201, BROADCAST),
        0,
        5,
    );
    let out = drain(&r);
    assert_eq!(out.len(), 1);
    let reply = Arp::parse(&out[0].1).unwrap();
    assert_eq!(
        (reply.op, reply.sha, reply.spa, reply.tpa),
        (Arp::REPLY, P0, 0xc000_0201, 0xc000_0202)
    );
    assert_eq!(&out[0].1[..6], &HOST);
    sp.publish();
    let n = r.neigh.load();
    assert_eq!(n.get(0, nkey(false, 0xc000_0202)), Some(Some(HOST)));
    assert_eq!(sp.view(5)[0].state, State::Stale);
}

#[test]
fn a_new_mac_within_the_lock_time_needs_an_announcement() {
    let (mut sp, r, t) = setup();
    let other = [2, 0, 0, 0, 0xaa, 9];
    let ip = 0xc000_0202;
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REQUEST, HOST, ip, 0xc000_0201, BROADCAST),
        0,
        5,
    );
    let mac_now = |sp: &mut SlowPath| {
        sp.publish();
        r.neigh.load().get(0, nkey(false, ip as u128))
    };
    // A reply claiming another MAC 100 ms later: ignored.
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REPLY, other, ip, 0xc000_0201, P0),
        0,
        105,
    );
    assert_eq!(mac_now(&mut sp), Some(Some(HOST)));
    // The neighbour announcing it (gratuitous ARP): taken at once.
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REQUEST, other, ip, ip, BROADCAST),
        0,
        200,
    );
    assert_eq!(mac_now(&mut sp), Some(Some(other)));
    // A late reply with the old MAC: ignored; after the lock time, taken.
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REPLY, HOST, ip, 0xc000_0201, P0),
        0,
        300,
    );
    assert_eq!(mac_now(&mut sp), Some(Some(other)));
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REPLY, HOST, ip, 0xc000_0201, P0),
        0,
        1300,
    );
    assert_eq!(mac_now(&mut sp), Some(Some(HOST)));
}

#[test]
fn what_nobody_asked_for_is_ignored_and_static_entries_stay() {
    let (mut sp, r, t) = setup();
    // A reply nobody asked for; a request for someone else's address;
    // a reply claiming the configured neighbour.
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REPLY, HOST, 0xc000_0209, 0xc000_0201, P0),
        0,
        1,
    );
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REQUEST, HOST, 0xc000_0209, 0xc000_0299, BROADCAST),
        0,
        1,
    );
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REPLY, HOST, 0xc633_6407, 0xc633_6401, P0),
        1,
        1,
    );
    // Garbage, and an NS for an address that is not ours.
    punt(&mut sp, &t, &[0xff; 30], 0, DropReason::Arp, 0, 1);
    let target = 0x2001_0db8_0001u128 << 80 | 0x99;
    let ns = nd::ns(
        0x2001_0db8_0001u128 << 80 | 2,
        nd::solicited_node(target),
        target,
        HOST,
        nd::multicast_mac(nd::solicited_node(target)),
    );
    punt(&mut sp, &t, &ns, 0, DropReason::Local, 0, 1);
    assert!(drain(&r).is_empty(), "nothing answered");
    assert_eq!(r.counters.get(Counter::NeighIgnored), 5);
    sp.publish();
    let n = r.neigh.load();
    assert_eq!(n.get(0, nkey(false, 0xc000_0209)), None);
    assert_eq!(
        n.get(1, nkey(false, 0xc633_6407)),
        Some(Some([2, 0, 0, 0, 0xcc, 0xcc]))
    );
}

#[test]
fn unresolved_frames_are_held_resolved_and_sent_rewritten() {
    let (mut sp, r, t) = setup();
    let gw_hop = t
        .hop_kinds
        .iter()
        .position(|k| matches!(k, HopKind::Gateway { .. }))
        .unwrap() as u32;
    let mut f = ipv4(0xc000_0202, 0xcb00_7105, 64, L4::Udp(1, 2), 10);
    f[..6].copy_from_slice(&P0);
    for _ in 0..4 {
        punt(&mut sp, &t, &f, 0, DropReason::Unresolved, gw_hop, 10);
    }
    let out = drain(&r);
    assert_eq!(out.len(), 1, "one request");
    let req = Arp::parse(&out[0].1).unwrap();
    assert_eq!(
        (out[0].0, req.op, req.tpa, req.spa),
        (1, Arp::REQUEST, 0xc633_64fe, 0xc633_6401)
    );
    assert_eq!(
        (
            r.counters.get(Counter::Held),
            r.counters.get(Counter::UnresolvedDropped)
        ),
        (4, 0),
        "all held: 4 frames are far below hold_bytes"
    );
    sp.publish();
    // Resolving: not in the workers' table, so that they hand its frames
    // here too (to be held behind these).
    assert_eq!(r.neigh.load().get(1, nkey(false, 0xc633_64fe)), None);
    arp_in(
        &mut sp,
        &t,
        &arp(Arp::REPLY, GW, 0xc633_64fe, 0xc633_6401, [2, 0, 0, 0, 0, 2]),
        1,
        20,
    );
    let out = drain(&r);
    assert_eq!(out.len(), 4, "the four held frames");
    for (port, g) in out {
        assert_eq!(port, 1);
        assert_eq!(&g[..12], &[GW, [2, 0, 0, 0, 0, 2]].concat()[..]);
        assert_eq!(g[22], 63, "TTL decremented");
        assert_eq!(crate::wire::checksum(&g[14..34]), 0);
    }
    sp.publish();
    assert_eq!(
        r.neigh.load().get(1, nkey(false, 0xc633_64fe)),
        Some(Some(GW))
    );
}

/// The gateway's hop and frames to it, their UDP source ports 0, 1, 2...
fn to_gateway(t: &Snapshot, n: u16) -> (u32, Vec<Vec<u8>>) {
    let gw_hop = t
        .hop_kinds
        .iter()
        .position(|k| matches!(k, HopKind::Gateway { .. }))
        .unwrap() as u32;
    let frames = (0..n)
        .map(|i| {
            let mut f = ipv4(0xc000_0202, 0xcb00_7105, 64, L4::Udp(i, 2), 10);
            f[..6].copy_from_slice(&P0);
            f
        })
        .collect();
    (gw_hop, frames)
}

/// The UDP source ports of IPv4 frames.
fn sports(out: &[(u16, Vec<u8>)]) -> Vec<u16> {
    out.iter()
        .map(|(_, g)| u16::from_be_bytes([g[34], g[35]]))
        .collect()
}

/// Past `hold_bytes` the oldest frames go first, counted; what is left
/// goes out once resolved.
#[test]
fn the_hold_is_bounded_by_bytes_oldest_dropped_first() {
    // Frames of 52 bytes: two fit in 104, a third does not.
    let (mut sp, r, t) = setup_with("hold_bytes = 104");
    let (hop, frames) = to_gateway(&t, 5);
    assert_eq!(frames[0].len(), 52);
    for f in &frames {
        punt(&mut sp, &t, f, 0, DropReason::Unresolved, hop, 10);
    }
    drain(&r);
    assert_eq!(
        (
            r.counters.get(Counter::Held),
            r.counters.get(Counter::UnresolvedDropped)
        ),
        (5, 3)
    );
    let reply = arp(Arp::REPLY, GW, 0xc633_64fe, 0xc633_6401, [2, 0, 0, 0, 0, 2]);
    arp_in(&mut sp, &t, &reply, 1, 20);
    assert_eq!(sports(&drain(&r)), [3, 4], "the newest two, in order");
    // Nothing held at all.
    let (mut sp, r, t) = setup_with("hold_bytes = 0");
    let (hop, frames) = to_gateway(&t, 2);
    for f in &frames {
        punt(&mut sp, &t, f, 0, DropReason::Unresolved, hop, 10);
    }
    assert_eq!(r.counters.get(Counter::UnresolvedDropped), 2);
    assert_eq!(drain(&r).len(), 1, "the request alone");
}

/// All neighbours together hold at most `HOLD_TOTAL`: a scan of a
/// connected network cannot hold without bound.
#[test]
fn all_neighbours_together_hold_a_bounded_amount() {
    let (mut sp, r, t) = setup();
    let connected = t
        .hop_kinds
        .iter()
        .position(|k| *k == HopKind::Connected)
        .unwrap() as u32;
    let src = 0x2001_0db8_0002u128 << 80;
    let per = 150;
    let neighbours = super::neighbours::HOLD_TOTAL / (per * 1462) + 5;
    for n in 0..neighbours {
        let dst = 0x2001_0db8_0001u128 << 80 | (0x100 + n as u128);
        let mut f = ipv6(src, dst, 64, L4::Udp(1, 2), 1400);
        assert_eq!(f.len(), 1462);
        f[..6].copy_from_slice(&P0);
        for _ in 0..per {
            punt(&mut sp, &t, &f, 0, DropReason::Unresolved, connected, 0);
        }
        drain(&r);
    }
    assert!(sp.held_total <= super::neighbours::HOLD_TOTAL);
    assert!(sp.held_total > super::neighbours::HOLD_TOTAL - 1462 * per);
    let held: usize = sp.neigh.values().map(|e| e.held_bytes).sum();
    assert_eq!(held, sp.held_total);
    // Each neighbour holds up to hold_bytes (145 of these frames), the
    // rest were dropped, counted.
    let dropped = r.counters.get(Counter::UnresolvedDropped) as usize;
    assert_eq!(dropped + held / 1462, neighbours * per);
    sp.tick(&t, 1);
    assert_eq!(held, sp.held_total, "counted again at the tick, the same");
}

/// More held than an inject queue takes: sent in order as the queue
/// empties, and the MAC published only once all are out (until then new
/// frames are held behind them, so none overtakes another).
#[test]
fn a_long_hold_goes_out_in_order_before_the_mac_is_published() {
    let (mut sp, r, t) = setup();
    let n = crate::punt::INJECT_QUEUE as u16 + 100;
    let (hop, frames) = to_gateway(&t, n + 10);
    for f in &frames[..n as usize] {
        punt(&mut sp, &t, f, 0, DropReason::Unresolved, hop, 10);
    }
    drain(&r);
    let reply = arp(Arp::REPLY, GW, 0xc633_64fe, 0xc633_6401, [2, 0, 0, 0, 0, 2]);
    arp_in(&mut sp, &t, &reply, 1, 20);
    sp.publish();
    let key = nkey(false, 0xc633_64fe);
    assert_eq!(
        r.neigh.load().get(1, key),
        None,
        "still sending what it held"
    );
    let mut out = drain(&r);
    assert_eq!(out.len(), crate::punt::INJECT_QUEUE, "a queue's worth");
    // Frames still punted meanwhile queue up behind the held ones.
    for f in &frames[n as usize..] {
        punt(&mut sp, &t, f, 0, DropReason::Unresolved, hop, 21);
    }
    while sp.drain_held(&t) > 0 {
        out.extend(drain(&r));
    }
    sp.publish();
    assert_eq!(r.neigh.load().get(1, key), Some(Some(GW)));
    assert_eq!(sports(&out), (0..n + 10).collect::<Vec<_>>());
    assert_eq!(r.counters.get(Counter::UnresolvedDropped), 0);
}

#[test]
fn an_unanswered_resolution_retries_fails_and_is_forgotten() {
    let (mut sp, r, t) = setup();
    let mut f = ipv6(
        0x2001_0db8_0002u128 << 80,
        0x2001_0db8_0001u128 << 80 | 0x77,
        64,
        L4::Udp(1, 2),
        10,
    );
    f[..6].copy_from_slice(&P0);
    let connected = t
        .hop_kinds
        .iter()
        .position(|k| *k == HopKind::Connected)
        .unwrap() as u32;
    punt(&mut sp, &t, &f, 0, DropReason::Unresolved, connected, 0);
    let mut sent = drain(&r).len();
    for now in (10..=400).step_by(10) {
        sp.tick(&t, now);
        sent += drain(&r).len();
    }
    assert_eq!(sent, 3, "probes solicitations");
    assert_eq!(r.counters.get(Counter::NsOut), 3);
    assert_eq!(r.counters.get(Counter::ResolutionsFailed), 1);
    assert_eq!(r.counters.get(Counter::UnresolvedDropped), 1);
    let left = sp.view(400);
    assert!(
        left.iter()
            .all(|n| n.addr != IpAddr::V6(Ipv6Addr::from(0x2001_0db8_0001u128 << 80 | 0x77))),
        "forgotten after a failure's hold: {left:?}"
    );
    assert_eq!(left.len(), 1, "the configured neighbour stays");
}

#[test]
fn echo_floods_are_rate_limited_per_core() {
    let (mut sp, r, t) = setup();
    // Host a resolved first, so that replies go out at once.
    host_resolved(&mut sp, &r, &t);
    let mut f = ipv4(0xc000_0202, 0xc000_0201, 64, L4::Icmp(8, 0), 8);
    f[..6].copy_from_slice(&P0);
    for _ in 0..200 {
        punt(&mut sp, &t, &f, 0, DropReason::Local, 0, 1);
    }
    let out = drain(&r);
    assert_eq!(out.len(), 50, "the bucket's depth");
    assert_eq!(r.counters.get(Counter::IcmpRateLimited), 150);
    // A second later, a second's worth more.
    for _ in 0..2000 {
        punt(&mut sp, &t, &f, 0, DropReason::Local, 0, 1001);
    }
    assert_eq!(drain(&r).len(), 50);
}

#[test]
fn no_error_about_errors_broadcasts_or_later_fragments() {
    let (mut sp, r, t) = setup();
    host_resolved(&mut sp, &r, &t);
    let mut err = ipv4(0xc000_0202, 0xcb00_7101, 1, L4::Icmp(3, 1), 28);
    err[..6].copy_from_slice(&P0);
    let mut bcast = ipv4(0xc000_0202, 0xcb00_7101, 1, L4::Udp(1, 2), 8);
    bcast[..6].copy_from_slice(&BROADCAST);
    let mut frag = ipv4(0xc000_0202, 0xcb00_7101, 1, L4::Udp(1, 2), 8);
    frag[..6].copy_from_slice(&P0);
    frag[21] = 10;
    for f in [&err, &bcast, &frag] {
        punt(&mut sp, &t, f, 0, DropReason::TtlExpired, 0, 5);
    }
    assert!(drain(&r).is_empty());
    assert_eq!(r.counters.get(Counter::IcmpSuppressed), 3);
    let mut ok = ipv4(0xc000_0202, 0xcb00_7101, 1, L4::Udp(1, 2), 8);
    ok[..6].copy_from_slice(&P0);
    punt(&mut sp, &t, &ok, 0, DropReason::TtlExpired, 0, 5);
    let out = drain(&r);
    assert_eq!(out.len(), 1);
    assert_eq!(&out[0].1[..6], &HOST);
    assert_eq!(out[0].1[34], 11, "time exceeded");
}
