//! The router's slow path: any bytes punted for any reason from any
//! port, then the timers, never panic; whatever it sends is an Ethernet
//! frame a port can take; its parsers never panic, and what its builders
//! make of a frame they accept checks (valid checksums).
#![no_main]

use forwarder::wire::arp::Arp;
use forwarder::wire::nd::Nd;
use forwarder::wire::{icmp, ip, tcp};
use forwarder::reason::DropReason;
use forwarder::punt::{Buf, RouterShared};
use forwarder::router::SlowPath;
use forwarder::control::build;
use forwarder::pipeline::Snapshot;
use forwarder::wire::l4_checksum_ok;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

fn tables() -> &'static Snapshot {
    static T: OnceLock<Snapshot> = OnceLock::new();
    T.get_or_init(|| {
        let text = r#"
route = [{ prefix = "203.0.113.0/24", via = "198.51.100.254" }, { prefix = "2001:db8:3::/48", via = "2001:db8:2::fe" }]
[[port]]
name = "p0"
address = ["192.0.2.1/24", "2001:db8:1::1/64"]
[[port]]
name = "p1"
address = ["198.51.100.1/24", "2001:db8:2::1/64"]
mtu = 1280
"#;
        let cfg = config::parse("fuzz.toml", text, std::path::Path::new(".")).unwrap();
        build::snapshot(&cfg, 1).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&head, frame)) = data.split_first() else {
        return;
    };
    let _ = Arp::parse(frame);
    let _ = Nd::parse(frame);
    if let Some(r) = icmp::echo_reply(frame) {
        let v6 = r[0] >> 4 == 6;
        let et = if v6 { 0x86dd } else { 0x0800 };
        assert_eq!(
            l4_checksum_ok(&ip::ether([2; 6], [4; 6], et, &r)),
            Some(true)
        );
    }
    if let Some(r) = tcp::tcp_reset(frame) {
        let v6 = r[0] >> 4 == 6;
        let et = if v6 { 0x86dd } else { 0x0800 };
        assert_eq!(
            l4_checksum_ok(&ip::ether([2; 6], [4; 6], et, &r)),
            Some(true)
        );
    }
    let t = tables();
    let shared = Arc::new(RouterShared::new(2, 2));
    let mut sp = SlowPath::new(shared.clone());
    sp.adopt(t, 0);
    let reason = DropReason::ALL[(head & 15) as usize % DropReason::ALL.len()];
    let port = ((head >> 3) & 1) as u16;
    let hop = (head >> 4) as u32 % (t.hop_kinds.len() as u32 + 1);
    // Twice: the second finds what the first left (an entry, a bucket).
    for now in [1, 2] {
        sp.handle(
            t,
            &Buf::holding(frame, port, (head >> 7) as u16, reason, hop),
            now,
        );
    }
    for now in (0..5000).step_by(500) {
        sp.tick(t, now);
        sp.publish();
    }
    for q in &shared.inject {
        while let Some(b) = q.pop() {
            assert!(b.frame().len() >= 60, "a padded Ethernet frame");
        }
    }
});
