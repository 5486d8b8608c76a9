//! Connection tracking on any bytes: frames cut from the input go through
//! a small table (what a packet is, its connection moved on, entered or
//! not as the input decides); no panic, the table never over its
//! maximum, and every listed connection readable.
#![no_main]

use forwarder::conntrack::{key, Tracker};
use forwarder::decision::Decision;
use forwarder::reason::DropReason;
use forwarder::wire::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let c = config::Conntrack {
        enabled: true,
        max: 8,
        ..config::Conntrack::default()
    };
    let mut t = Tracker::new(&c, c.max);
    // Frames of the input's first byte's length, each followed by a byte
    // that says whether it is forwarded.
    let Some((&n, mut rest)) = data.split_first() else {
        return;
    };
    let n = (n as usize).max(14);
    while rest.len() > n {
        let (frame, tail) = rest.split_at(n);
        let forwarded = tail[0] & 1 == 1;
        rest = &tail[1..];
        let Ok(p) = parse(frame) else { continue };
        let seen = key::seen(&p, frame);
        let (tr, _) = t.track(&p, frame, true);
        let d = if forwarded {
            Decision::forward(0, 0)
        } else {
            Decision::drop(0, DropReason::Rule)
        };
        let h = t.hash(&seen);
        t.commit(&tr, &seen, h, d, true);
        assert!(t.stats().entries <= c.max as u64);
    }
    for v in t.list(0) {
        assert!(!v.line().is_empty());
    }
});
