//! The hash functions the route cache may use: the Linux kernel's `jhash`
//! (over bytes) and `jhash2` (over 32-bit words), which are Bob Jenkins'
//! lookup3 `hashlittle` and `hashword`, and a 5-tuple flow hash for ECMP.
//! ahash and foldhash come from their crates; the bench compares them all.

#[inline(always)]
fn rot(x: u32, k: u32) -> u32 {
    x.rotate_left(k)
}

/// lookup3's `mix`: reversible mixing of three words.
#[inline(always)]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= rot(*c, 4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= rot(*a, 6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= rot(*b, 8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= rot(*c, 16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= rot(*a, 19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= rot(*b, 4);
    *b = b.wrapping_add(*a);
}

/// lookup3's `final`: irreversible final mixing of three words into `c`.
#[inline(always)]
fn finalize(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(rot(*b, 14));
    *a ^= *c;
    *a = a.wrapping_sub(rot(*c, 11));
    *b ^= *a;
    *b = b.wrapping_sub(rot(*a, 25));
    *c ^= *b;
    *c = c.wrapping_sub(rot(*b, 16));
    *a ^= *c;
    *a = a.wrapping_sub(rot(*c, 4));
    *b ^= *a;
    *b = b.wrapping_sub(rot(*a, 14));
    *c ^= *b;
    *c = c.wrapping_sub(rot(*b, 24));
}

/// The kernel's `JHASH_INITVAL` (lookup3's starting value).
pub const JHASH_INITVAL: u32 = 0xdead_beef;

/// `jhash(key, length, initval)`: Linux's byte hash, equal to lookup3's
/// `hashlittle` (bytes read little-endian).
pub fn jhash(key: &[u8], initval: u32) -> u32 {
    let mut a = JHASH_INITVAL
        .wrapping_add(key.len() as u32)
        .wrapping_add(initval);
    let (mut b, mut c) = (a, a);
    let mut k = key;
    let word = |s: &[u8]| u32::from_le_bytes([s[0], s[1], s[2], s[3]]);
    while k.len() > 12 {
        a = a.wrapping_add(word(&k[0..]));
        b = b.wrapping_add(word(&k[4..]));
        c = c.wrapping_add(word(&k[8..]));
        mix(&mut a, &mut b, &mut c);
        k = &k[12..];
    }
    if k.is_empty() {
        return c;
    }
    // The last 1 to 12 bytes, zero-padded, as lookup3's switch adds them.
    let mut tail = [0u8; 12];
    tail[..k.len()].copy_from_slice(k);
    a = a.wrapping_add(word(&tail[0..]));
    b = b.wrapping_add(word(&tail[4..]));
    c = c.wrapping_add(word(&tail[8..]));
    finalize(&mut a, &mut b, &mut c);
    c
}

/// `jhash2(k, length, initval)`: Linux's hash of 32-bit words, equal to
/// lookup3's `hashword`.
pub fn jhash2(k: &[u32], initval: u32) -> u32 {
    let mut a = JHASH_INITVAL
        .wrapping_add((k.len() as u32) << 2)
        .wrapping_add(initval);
    let (mut b, mut c) = (a, a);
    let mut k = k;
    while k.len() > 3 {
        a = a.wrapping_add(k[0]);
        b = b.wrapping_add(k[1]);
        c = c.wrapping_add(k[2]);
        mix(&mut a, &mut b, &mut c);
        k = &k[3..];
    }
    match k.len() {
        3 => {
            c = c.wrapping_add(k[2]);
            b = b.wrapping_add(k[1]);
            a = a.wrapping_add(k[0]);
        }
        2 => {
            b = b.wrapping_add(k[1]);
            a = a.wrapping_add(k[0]);
        }
        1 => a = a.wrapping_add(k[0]),
        _ => return c,
    }
    finalize(&mut a, &mut b, &mut c);
    c
}

/// Linux's `jhash_3words(a, b, c, initval)`: three words, no length.
#[inline]
pub fn jhash_3words(a: u32, b: u32, c: u32, initval: u32) -> u32 {
    let init = JHASH_INITVAL.wrapping_add(initval).wrapping_add(12);
    let (mut a, mut b, mut c) = (
        a.wrapping_add(init),
        b.wrapping_add(init),
        c.wrapping_add(init),
    );
    finalize(&mut a, &mut b, &mut c);
    c
}

/// Linux's `jhash_1word(a, initval)`.
#[inline]
pub fn jhash_1word(a: u32, initval: u32) -> u32 {
    jhash_3words(a, 0, 0, initval)
}

/// A flow's 5-tuple, for the ECMP member choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FlowKey {
    /// Source address (IPv4 in the low 32 bits).
    pub src: u128,
    /// Destination address (IPv4 in the low 32 bits).
    pub dst: u128,
    /// Source port (0 for protocols without ports).
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// IP protocol.
    pub proto: u8,
}

impl FlowKey {
    /// A stable hash of the 5-tuple: every packet of a flow gets the same
    /// value (for a given seed), so a flow stays on one ECMP member.
    ///
    /// Three folded multiplies (a 64x64->128-bit product, its halves
    /// xored), as foldhash and wyhash mix: the addresses in one, the
    /// ports, protocol and seed in another, both into the third: about
    /// 17 instructions fewer than `jhash_3words` over the folded words
    /// on each frame routed through ECMP (callgrind, `examples/turns`
    /// route mode: 270.5 -> 267.2 a packet, where a fifth of the
    /// example's frames go through ECMP). The member is picked from the
    /// high bits (`resolve_index`'s multiply-shift). Two multiplies were
    /// tried first and spread unevenly where few bits differ (a subnet's
    /// hosts, protocols): `the_member_hash_spreads_*` pin the spread. Not
    /// a keyed hash against an adversary (neither was the jhash): the
    /// seed keeps a flow's member from being the same on every forwarder.
    #[inline]
    pub fn hash(&self, seed: u32) -> u32 {
        let fold = |x: u128| (x as u64) ^ ((x >> 64) as u64);
        let ports = ((self.sport as u64) << 16 | self.dport as u64) | (self.proto as u64) << 32;
        // The seed spread over 64 bits, so that it moves high bits too.
        let s = (seed as u64 | 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let a = fold_mul(fold(self.src) ^ s, fold(self.dst) ^ 0x2436_a788_5a30_8d31);
        let b = fold_mul(ports ^ 0x1319_8a2e_0370_7344, s ^ 0xa409_3822_299f_31d0);
        let h = fold_mul(a ^ 0x082e_fa98_ec4e_6c89, b ^ 0x4528_21e6_38d0_1377);
        (h >> 32) as u32 ^ h as u32
    }
}

/// The 128-bit product of `a` and `b`, its two halves xored: the mixing
/// step of ahash's fallback and of wyhash (the ECMP member hash here,
/// the forwarder's flow cache hash).
#[inline(always)]
pub fn fold_mul(a: u64, b: u64) -> u64 {
    let m = a as u128 * b as u128;
    (m as u64) ^ ((m >> 64) as u64)
}

/// A random 32-bit seed, different in every process (from the standard
/// library's randomly keyed hasher), so that traffic cannot aim at one
/// bucket of a cache.
pub fn random_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x5eed);
    let x = h.finish();
    (x ^ (x >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// lookup3.c's driver5 vectors for `hashlittle`.
    #[test]
    fn lookup3_published_vectors() {
        assert_eq!(jhash(b"", 0), 0xdeadbeef);
        assert_eq!(jhash(b"", 0xdeadbeef), 0xbd5b7dde);
        assert_eq!(jhash(b"", 0xbd5b7dde), 0x9c093ccd);
        let four = b"Four score and seven years ago";
        assert_eq!(jhash(four, 0), 0x17770551);
        assert_eq!(jhash(four, 1), 0xcd628161);
    }

    /// `hashword` over words equals `hashlittle` over the same words'
    /// little-endian bytes, for every length (lookup3's own check).
    #[test]
    fn jhash2_equals_jhash_on_words() {
        let mut rng = crate::gen::Rng(0x1234_5678);
        for n in 0..20 {
            let words: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            for init in [0, 1, 0xdeadbeef] {
                assert_eq!(jhash2(&words, init), jhash(&bytes, init), "{n} words");
            }
        }
    }

    #[test]
    fn jhash_3words_is_jhash2_of_three_words_without_length() {
        // jhash_3words starts from INITVAL + initval + 12, as jhash2 of three
        // words does (length 3 << 2), then finalizes without a mix.
        assert_eq!(jhash_3words(1, 2, 3, 7), jhash2(&[1, 2, 3], 7));
    }

    #[test]
    fn flow_hash_is_stable_and_spreads() {
        let f = FlowKey {
            src: 0xc000_0201,
            dst: 0xc633_6401,
            sport: 1234,
            dport: 80,
            proto: 6,
        };
        assert_eq!(f.hash(9), f.hash(9));
        let g = FlowKey { sport: 1235, ..f };
        assert_ne!(f.hash(9), g.hash(9));
        assert_ne!(f.hash(9), f.hash(10));
    }

    /// The member `resolve_index` picks from `n` for hash `h`.
    fn member(h: u32, n: u64) -> usize {
        ((h as u64 * n) >> 32) as usize
    }

    /// Each member's share of `flows` over `n` members stays within 5
    /// standard deviations of the even share (as random choices would,
    /// but for one in 1.7 million checks).
    fn spreads_evenly(flows: &[FlowKey], seed: u32, n: u64, what: &str) {
        let mut count = vec![0usize; n as usize];
        for f in flows {
            count[member(f.hash(seed), n)] += 1;
        }
        let even = flows.len() as f64 / n as f64;
        let sd = (even * (1.0 - 1.0 / n as f64)).sqrt();
        for (m, &c) in count.iter().enumerate() {
            assert!(
                (c as f64 - even).abs() <= 5.0 * sd,
                "{what}: member {m} of {n} got {c} of {} flows (seed {seed:#x})",
                flows.len()
            );
        }
    }

    #[test]
    fn the_member_hash_spreads_random_flows() {
        let mut rng = crate::gen::Rng(0xec3b);
        let flows: Vec<FlowKey> = (0..40_000)
            .map(|_| FlowKey {
                src: rng.next_u64() as u32 as u128,
                dst: rng.next_u64() as u128 | (rng.next_u64() as u128) << 64,
                sport: rng.next_u64() as u16,
                dport: rng.next_u64() as u16,
                proto: [6, 17, 1][rng.below(3) as usize],
            })
            .collect();
        for seed in [0, 1, 0xdead_beef, rng.next_u64() as u32] {
            for n in 2..=8 {
                spreads_evenly(&flows, seed, n, "random flows");
            }
        }
    }

    /// The shapes traffic has: one client's connections (source ports in
    /// a row), a subnet's hosts to one service, IPv6 hosts differing in
    /// the low bits of their interface identifiers, one protocol apart.
    #[test]
    fn the_member_hash_spreads_flows_that_differ_in_few_bits() {
        let base = FlowKey {
            src: 0xc000_0201,
            dst: 0xcb00_7105,
            sport: 0,
            dport: 443,
            proto: 6,
        };
        let ports: Vec<FlowKey> = (0..4096)
            .map(|p| FlowKey {
                sport: 32768 + p as u16,
                ..base
            })
            .collect();
        let hosts: Vec<FlowKey> = (0..4096u128)
            .map(|h| FlowKey {
                src: 0xc633_6400 + (h & 0xff),
                sport: 40000 + (h >> 8) as u16,
                ..base
            })
            .collect();
        let v6: Vec<FlowKey> = (0..4096u128)
            .map(|h| FlowKey {
                src: 0x2001_0db8_0000_0001_0000_0000_0000_0000 | h,
                dst: 0x2001_0db8_0000_0002_0000_0000_0000_0001,
                ..base
            })
            .collect();
        let protos: Vec<FlowKey> = (0..=255u8)
            .flat_map(|p| {
                (0..16).map(move |d| FlowKey {
                    proto: p,
                    dport: d,
                    ..base
                })
            })
            .collect();
        // One source to many destinations, a grid of sources by
        // destinations.
        let dsts: Vec<FlowKey> = (0..4096u128)
            .map(|d| FlowKey {
                dst: 0xcb00_7100 + d,
                ..base
            })
            .collect();
        let grid: Vec<FlowKey> = (0..4096u128)
            .map(|i| FlowKey {
                src: 0xc000_0200 + (i & 63),
                dst: 0xcb00_7100 + (i >> 6),
                ..base
            })
            .collect();
        // Many seeds: a weak mix shows on some seeds only.
        let mut rng = crate::gen::Rng(0x5eed);
        let seeds: Vec<u32> = [0, 7]
            .into_iter()
            .chain((0..30).map(|_| rng.next_u64() as u32))
            .collect();
        for seed in seeds {
            for n in [2, 3, 4, 8] {
                spreads_evenly(&dsts, seed, n, "one source to many destinations");
                spreads_evenly(&grid, seed, n, "sources by destinations");
                spreads_evenly(&ports, seed, n, "source ports in a row");
                spreads_evenly(&hosts, seed, n, "a subnet's hosts");
                spreads_evenly(&v6, seed, n, "IPv6 interface identifiers");
                spreads_evenly(&protos, seed, n, "protocols and ports");
            }
        }
    }

    /// Another seed moves about half the flows between two members: the
    /// seed reaches the bits the member is picked from.
    #[test]
    fn another_seed_moves_half_the_flows() {
        let flows: Vec<FlowKey> = (0..8192u32)
            .map(|i| FlowKey {
                src: 0xc000_0200 | (i & 0xff) as u128,
                dst: 0xcb00_7100 | (i >> 8) as u128,
                sport: 1024 + i as u16,
                dport: 53,
                proto: 17,
            })
            .collect();
        let moved = flows
            .iter()
            .filter(|f| member(f.hash(1), 2) != member(f.hash(2), 2))
            .count();
        assert!((3500..=4700).contains(&moved), "{moved} of 8192 moved");
    }
}
