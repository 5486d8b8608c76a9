//! The frame parser on arbitrary bytes (never panics) and on random valid
//! frames (reads back what was built; a rewrite keeps IPv4 checksums
//! valid).

use forwarder::reason::DropReason;
use forwarder::wire::build::{ipv4, ipv6, L4};
use forwarder::wire::{
    checksum, finish_partial_checksum, l4_checksum_ok, parse, parse_reference, rewrite,
    set_l4_checksum, L3,
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

    /// The parse's fast path for plain frames gives exactly what the
    /// general parse gives, on frames of every protocol with their
    /// headers' fields changed (ethertype, version and header length, the
    /// length field, fragment fields, next header), random bytes changed,
    /// cut or padded.
    #[test]
    fn the_fast_path_agrees_with_the_general_parse(
        v6 in any::<bool>(),
        proto in prop::sample::select(vec![6u8, 17, 132, 1, 58, 47, 0, 43, 44, 51, 60, 255]),
        payload in 0usize..24,
        ethertype in prop::option::of(prop::sample::select(vec![0x0800u16, 0x86dd, 0x8100, 0x0806])),
        version in prop::option::of(prop::sample::select(vec![0x45u8, 0x44, 0x46, 0x4f, 0x55, 0x60, 0x6f, 0x40])),
        length in prop::option::of(0u16..90),
        frag in prop::option::of(prop::sample::select(vec![0u16, 1, 0x20, 0x1fff, 0x2000, 0x4000])),
        edits in proptest::collection::vec((0usize..64, any::<u8>()), 0..3),
        cut in 0usize..30,
        pad in 0usize..8,
    ) {
        let l4 = match proto {
            6 => L4::Tcp(1000, 80),
            17 => L4::Udp(53, 5353),
            1 | 58 => L4::Icmp(8, 0),
            _ => L4::Udp(7, 9),
        };
        let mut f = if v6 {
            ipv6(0x2001_0db8 << 96 | 5, 0x2001_0db8 << 96 | 9, 64, l4, payload)
        } else {
            ipv4(0xc000_0205, 0xc633_6409, 64, l4, payload)
        };
        let (proto_at, length_at) = if v6 { (20, 18) } else { (23, 16) };
        f[proto_at] = proto;
        if let Some(e) = ethertype {
            f[12..14].copy_from_slice(&e.to_be_bytes());
        }
        if let Some(v) = version {
            f[14] = v;
        }
        if let Some(l) = length {
            f[length_at..length_at + 2].copy_from_slice(&l.to_be_bytes());
        }
        if let (Some(x), false) = (frag, v6) {
            f[20..22].copy_from_slice(&x.to_be_bytes());
        }
        for (at, b) in edits {
            if at < f.len() {
                f[at] = b;
            }
        }
        f.truncate(f.len().saturating_sub(cut));
        f.extend(std::iter::repeat_n(0xa5, pad));
        prop_assert_eq!(parse(&f), parse_reference(&f));
        // And behind one or two tags (802.1Q, 802.1ad, or a TPID that is
        // not one), where the fast path reads 4 bytes on.
        for tags in [&[0x8100u16][..], &[0x88a8], &[0x88a8, 0x8100], &[0x9100]] {
            let mut g = f[..12.min(f.len())].to_vec();
            for (k, t) in tags.iter().enumerate() {
                g.extend(t.to_be_bytes());
                g.extend((100 + k as u16).to_be_bytes());
            }
            g.extend(f.get(12..).unwrap_or_default());
            prop_assert_eq!(parse(&g), parse_reference(&g));
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
            Err(e) => prop_assert!(ttl <= 1 && e == DropReason::TtlExpired),
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
