use super::write::Writer;
use super::*;
use routecache::gen::Rng;

/// What is written reads back: frames, interfaces, times, flags,
/// comments, losses.
#[test]
fn pcapng_round_trip() {
    let names = vec!["wan".to_string(), "lan".to_string()];
    let mut w = Writer::new(Vec::new(), &names, 65535).unwrap();
    let mut rng = Rng(3);
    let mut want = Vec::new();
    for i in 0..200u64 {
        let n = rng.below(1600) as usize;
        let mut data = vec![0u8; n];
        rng.fill(&mut data);
        let iface = (i % 2) as u32;
        let t = 1_700_000_000_000_000_000 + i * 1_234_567;
        let flags = if i % 3 == 0 { INBOUND } else { OUTBOUND };
        let comment = (i % 5 == 0).then(|| format!("drop: rule {i}"));
        w.packet(iface, t, &data, n as u32 + 4, flags, comment.as_deref())
            .unwrap();
        want.push(Frame {
            data,
            len: n as u32 + 4,
            interface: iface,
            time_ns: t,
            flags,
            comments: comment.into_iter().collect(),
        });
    }
    w.stats(1, 5, 17).unwrap();
    let bytes = w.into_inner();
    let c = read(&bytes).unwrap();
    assert_eq!(c.interfaces, names);
    assert_eq!(c.dropped, vec![None, Some(17)]);
    assert_eq!(c.frames.len(), want.len());
    for (a, b) in c.frames.iter().zip(&want) {
        // Timestamps go through a float only in the reader's unit
        // conversion: nanoseconds stay within one.
        assert!(
            a.time_ns.abs_diff(b.time_ns) <= 256,
            "{} {}",
            a.time_ns,
            b.time_ns
        );
        assert_eq!(
            (&a.data, a.len, a.interface, a.flags, &a.comments),
            (&b.data, b.len, b.interface, b.flags, &b.comments)
        );
    }
    // A file cut short keeps the frames before the cut.
    let cut = read(&bytes[..bytes.len() / 2]).unwrap();
    assert!(!cut.frames.is_empty() && cut.frames.len() < want.len());
}

/// Classic pcap, both byte orders and both time units.
#[test]
fn pcap_files() {
    for (magic, be, nanos) in [
        (0xa1b2_c3d4u32, false, false),
        (0xa1b2_c3d4, true, false),
        (0xa1b2_3c4d, false, true),
    ] {
        let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut b = Vec::new();
        b.extend_from_slice(&w32(magic));
        b.extend_from_slice(&w16(2));
        b.extend_from_slice(&w16(4));
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&w32(65535));
        b.extend_from_slice(&w32(1));
        for i in 0..3u32 {
            b.extend_from_slice(&w32(100 + i));
            b.extend_from_slice(&w32(7));
            b.extend_from_slice(&w32(4));
            b.extend_from_slice(&w32(60));
            b.extend_from_slice(&[i as u8; 4]);
        }
        let c = read(&b).unwrap();
        assert_eq!(c.frames.len(), 3);
        assert_eq!(c.frames[2].data, vec![2; 4]);
        assert_eq!(c.frames[2].len, 60);
        let frac = if nanos { 7 } else { 7000 };
        assert_eq!(c.frames[1].time_ns, 101 * 1_000_000_000 + frac);
    }
    assert!(read(b"nope").unwrap_err().contains("not a pcap"));
    assert!(read(b"").is_err());
}

/// No panic on any bytes.
#[test]
fn any_bytes() {
    let mut rng = Rng(9);
    let names = vec!["p".to_string()];
    let mut w = Writer::new(Vec::new(), &names, 65535).unwrap();
    for _ in 0..20 {
        w.packet(0, 1, &[1, 2, 3, 4, 5], 5, INBOUND, Some("x"))
            .unwrap();
    }
    let good = w.into_inner();
    for _ in 0..20_000 {
        let mut b = good.clone();
        for _ in 0..1 + rng.below(4) {
            let i = rng.below(b.len() as u64) as usize;
            b[i] = rng.next_u64() as u8;
        }
        let cut = rng.below(b.len() as u64 + 1) as usize;
        let _ = read(&b[..cut]);
    }
}
