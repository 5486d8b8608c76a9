//! The kernel mirror's reading of rtnetlink notifications: any bytes
//! give events or nothing, never a panic, and every route read has a
//! prefix length that fits its family (what else is odd in a prefix, the
//! FIB refuses with an error the mirror counts).
#![no_main]

use forwarder::kernel::{events, Event};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    // The main table and a VRF's.
    events(data, &[254, 100], &mut out);
    for e in out {
        if let Event::New(r, _) | Event::Del(r) = e {
            let (v6, _, len) = r.key;
            assert!(len <= if v6 { 128 } else { 32 });
        }
    }
});
