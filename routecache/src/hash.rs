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
    #[inline]
    pub fn hash(&self, seed: u32) -> u32 {
        let fold =
            |x: u128| (x as u32) ^ ((x >> 32) as u32) ^ ((x >> 64) as u32) ^ ((x >> 96) as u32);
        let ports = ((self.sport as u32) << 16 | self.dport as u32) ^ ((self.proto as u32) << 8);
        jhash_3words(fold(self.src), fold(self.dst), ports, seed)
    }
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
}
