//! The pcap and pcapng reader (`trace --pcap`): no panic on any bytes;
//! and what the pcapng writer (`capture`) writes of any frames reads back
//! as those frames.
#![no_main]

use forwarder::pcap::write::Writer;
use forwarder::pcap::{read, INBOUND};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read(data);
    // The same bytes as frames: cut where a byte says.
    let mut frames = Vec::new();
    let mut rest = data;
    while let Some((&n, tail)) = rest.split_first() {
        let n = (n as usize).min(tail.len());
        frames.push(&tail[..n]);
        rest = &tail[n..];
    }
    let mut w = Writer::new(Vec::new(), &["p0".to_string()], 65535).expect("in memory");
    for (i, f) in frames.iter().enumerate() {
        let comment = (i % 2 == 1).then_some("drop: no route");
        w.packet(0, i as u64, f, f.len() as u32, INBOUND, comment)
            .expect("in memory");
    }
    let bytes = w.into_inner();
    let back = read(&bytes).expect("our own file reads");
    assert_eq!(back.frames.len(), frames.len());
    for (i, (b, f)) in back.frames.iter().zip(&frames).enumerate() {
        assert_eq!((&b.data[..], b.time_ns, b.flags), (*f, i as u64, INBOUND));
        assert_eq!(b.comments.len(), i % 2);
    }
});
