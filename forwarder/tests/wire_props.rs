//! The frame parser on arbitrary bytes (never panics) and on random valid
//! frames (reads back what was built; a rewrite keeps IPv4 checksums
//! valid).

use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::{
    checksum, finish_partial_checksum, l4_checksum_ok, parse, rewrite, set_l4_checksum, Drop, L3,
};
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

    /// Finishing a checksum the sender left partial gives what computing
    /// it in full gives, for every payload length (odd ones included) and
    /// random padding after the IP packet; any single flipped bit in the
    /// segment then fails the check.
    #[test]
    fn partial_checksums_finish_to_the_full_one(
        src in any::<u128>(), dst in any::<u128>(), sp in any::<u16>(), dp in any::<u16>(),
        udp in any::<bool>(), v6 in any::<bool>(), payload in proptest::collection::vec(any::<u8>(), 0..300),
        pad in 0usize..20, flip in any::<usize>(),
    ) {
        let l4 = if udp { L4::Udp(sp, dp) } else { L4::Tcp(sp, dp) };
        let mut f = if v6 {
            ipv6(src, dst, 64, l4, payload.len())
        } else {
            ipv4(src as u32, dst as u32, 64, l4, payload.len())
        };
        let start = f.len() - payload.len();
        f[start..].copy_from_slice(&payload);
        prop_assert!(set_l4_checksum(&mut f));
        prop_assert_eq!(l4_checksum_ok(&f), Some(true));
        let p = parse(&f).unwrap();
        let field = p.l4_off as usize + if udp { 6 } else { 16 };
        let full = [f[field], f[field + 1]];
        // What the sender seeds the field with: the pseudo-header's sum,
        // derived here from the full checksum (~full = pseudo + segment)
        // without the library's pseudo-header code.
        let mut seg = f[p.l4_off as usize..].to_vec();
        seg[field - p.l4_off as usize..field - p.l4_off as usize + 2].fill(0);
        let seg_sum = !checksum(&seg);
        let want = !u16::from_be_bytes(full);
        let pseudo = {
            let d = want as u32 + (!seg_sum) as u32;
            let d = (d & 0xffff) + (d >> 16);
            ((d & 0xffff) + (d >> 16)) as u16
        };
        let mut partial = f.clone();
        partial[field..field + 2].copy_from_slice(&pseudo.to_be_bytes());
        partial.extend(std::iter::repeat_n(0xa5u8, pad));
        prop_assert!(finish_partial_checksum(&mut partial));
        prop_assert_eq!(&partial[field..field + 2], &full[..]);
        let bit = flip % ((f.len() - p.l4_off as usize) * 8);
        let mut bad = f.clone();
        bad[p.l4_off as usize + bit / 8] ^= 1 << (bit % 8);
        // (A UDP checksum flipped to zero reads as "none" over IPv4.)
        if !(udp && !v6 && bad[field..field + 2] == [0, 0]) {
            prop_assert_eq!(l4_checksum_ok(&bad), Some(false));
        }
    }
}
