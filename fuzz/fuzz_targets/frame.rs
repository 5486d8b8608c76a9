//! The frame parser (its fast path agreeing with the general one), the rewrite and the transport checksum helpers: no
//! panic on any bytes, a rewritten IPv4 header still checksums to zero,
//! and a transport checksum set in full checks as valid.
#![no_main]

use forwarder::wire::{
    checksum, finish_partial_checksum, l4_checksum_ok, parse, parse_reference, rewrite, set_l4_checksum,
    L3,
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
    let Ok(p) = parse(data) else { return };
    let mut f = data.to_vec();
    let l3 = p.l3_off as usize;
    let ihl = (f[l3] & 0xf) as usize * 4;
    let valid_before = p.l3 == L3::V4 && checksum(&f[l3..l3 + ihl]) == 0;
    if rewrite(&mut f, &p, [1; 6], [2; 6]).is_ok() && valid_before {
        assert_eq!(checksum(&f[l3..l3 + ihl]), 0);
    }
});
