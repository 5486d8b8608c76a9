//! The frame parser (its fast path agreeing with the general one, the
//! express way's reading of plain frames agreeing with the parse), the
//! rewrite and the transport checksum helpers: no
//! panic on any bytes, a rewritten IPv4 header still checksums to zero,
//! and a transport checksum set in full checks as valid.
#![no_main]

use forwarder::wire::{
    checksum, finish_partial_checksum, l4_checksum_ok, parse, parse_reference, plain_dst,
    plain_flow, rewrite, set_l4_checksum, PlainDst, L3,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = l4_checksum_ok(data);
    let mut g = data.to_vec();
    let _ = finish_partial_checksum(&mut g);
    if set_l4_checksum(&mut g) {
        assert_eq!(l4_checksum_ok(&g), Some(true));
    }
    // The fast path for plain frames agrees with the general parse.
    assert_eq!(parse(data), parse_reference(data));
    // The express way reads exactly the plain frames (untagged, at
    // fixed offsets) as the parse does.
    if let Some(d) = plain_dst(data) {
        let p = parse(data).expect("a plain frame parses");
        let v6 = matches!(d, PlainDst::V6(_));
        let dst = match d {
            PlainDst::V4(a) => a as u128,
            PlainDst::V6(a) => a,
        };
        assert_eq!((p.l3_off, p.l3 == L3::V6, p.dst), (14, v6, dst));
        assert_eq!(
            plain_flow(data, v6),
            Some((p.src, p.dst, p.sport, p.dport, p.proto))
        );
    }
    let Ok(p) = parse(data) else { return };
    let mut f = data.to_vec();
    let l3 = p.l3_off as usize;
    let ihl = (f[l3] & 0xf) as usize * 4;
    let valid_before = p.l3 == L3::V4 && checksum(&f[l3..l3 + ihl]) == 0;
    if rewrite(&mut f, &p, [1; 6], [2; 6]).is_ok() && valid_before {
        assert_eq!(checksum(&f[l3..l3 + ihl]), 0);
    }
});
