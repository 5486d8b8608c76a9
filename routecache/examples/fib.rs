//! A FIB built and routed through: `cargo run -p routecache --example fib`.
//!
//! Two next hops, an ECMP group of both, routes to them; a published
//! snapshot answers longest-prefix lookups, and an ECMP group picks its
//! member by the flow's hash.
use routecache::{Family, Fib, FlowKey, NextHop};

fn main() {
    let mut fib = Fib::new();
    let hop = |port, last| NextHop {
        port,
        dst_mac: [2, 0, 0, 0, 0, last],
        src_mac: [2, 0, 0, 0, 1, port as u8],
    };
    let a = fib.add_next_hop(hop(0, 0xa));
    let b = fib.add_next_hop(hop(1, 0xb));
    let both = fib.add_ecmp_group(&[a, b]).expect("a group");
    let v4 = |s: &str| u32::from(s.parse::<std::net::Ipv4Addr>().expect("an address")) as u128;
    fib.insert(Family::V4, v4("0.0.0.0"), 0, both)
        .expect("a route");
    fib.insert(Family::V4, v4("198.51.100.0"), 24, a)
        .expect("a route");
    fib.insert(Family::V4, v4("198.51.100.128"), 25, b)
        .expect("a route");
    let snap = fib.publish();
    for (dst, sport) in [
        ("198.51.100.7", 1),
        ("198.51.100.200", 1),
        ("203.0.113.9", 1),
        ("203.0.113.9", 2),
    ] {
        let flow = FlowKey {
            src: v4("192.0.2.1"),
            dst: v4(dst),
            sport,
            dport: 80,
            proto: 6,
        };
        let nh = snap.route(Family::V4, &flow, 7).expect("a route");
        println!(
            "{dst} (source port {sport}): port {}, MAC {:02x?}",
            nh.port, nh.dst_mac
        );
    }
}
