//! The frame parser on arbitrary bytes (never panics) and on random valid
//! frames (reads back what was built; a rewrite keeps IPv4 checksums
//! valid).

use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::{checksum, parse, rewrite, Drop, L3};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(p) = parse(&bytes) {
            let mut f = bytes.clone();
            let _ = rewrite(&mut f, &p, [0; 6], [0; 6]);
        }
    }

    #[test]
    fn mutated_frames_never_panic(seed in any::<u64>(), at in 0usize..80, b in any::<u8>(), cut in 0usize..100) {
        let mut f = if seed % 2 == 0 {
            ipv4(seed as u32, (seed >> 32) as u32, 64, L4::Tcp(1, 2), 10)
        } else {
            ipv6(seed as u128, !seed as u128, 64, L4::Udp(3, 4), 10)
        };
        if at < f.len() {
            f[at] = b;
        }
        f.truncate(f.len().saturating_sub(cut));
        if let Ok(p) = parse(&f) {
            let _ = rewrite(&mut f, &p, [1; 6], [2; 6]);
        }
    }

    #[test]
    fn built_frames_read_back(src in any::<u32>(), dst in any::<u32>(), ttl in 0u8.., sp in any::<u16>(), dp in any::<u16>(), udp in any::<bool>(), payload in 0usize..64) {
        let l4 = if udp { L4::Udp(sp, dp) } else { L4::Tcp(sp, dp) };
        let mut f = ipv4(src, dst, ttl, l4, payload);
        let p = parse(&f).unwrap();
        prop_assert_eq!((p.l3, p.src, p.dst, p.ttl, p.sport, p.dport), (L3::V4, src as u128, dst as u128, ttl, sp, dp));
        match rewrite(&mut f, &p, [9; 6], [8; 6]) {
            Ok(()) => {
                prop_assert_eq!(checksum(&f[14..34]), 0);
                prop_assert_eq!(f[22], ttl - 1);
            }
            Err(e) => prop_assert!(ttl <= 1 && e == Drop::TtlExpired),
        }
    }
}
