//! The frame parser and the rewrite: no panic on any bytes, and a
//! rewritten IPv4 header still checksums to zero.
#![no_main]

use forwarder::wire::{checksum, parse, rewrite, L3};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = parse(data) else { return };
    let mut f = data.to_vec();
    let l3 = p.l3_off as usize;
    let ihl = (f[l3] & 0xf) as usize * 4;
    let valid_before = p.l3 == L3::V4 && checksum(&f[l3..l3 + ihl]) == 0;
    if rewrite(&mut f, &p, [1; 6], [2; 6]).is_ok() && valid_before {
        assert_eq!(checksum(&f[l3..l3 + ihl]), 0);
    }
});
