//! Reproducible routing tables shaped like the Internet's, from a seed:
//! prefix lengths drawn from the distribution of today's BGP tables, and
//! longer prefixes clustered inside shorter allocations, as registries hand
//! them out.

use crate::fib::Family;

/// The workspace's seeded random numbers (splitmix64): the same seed
/// gives the same sequence on every machine, so a generated table, a test
/// or a benchmark is reproducible.
///
/// ```
/// use routecache::gen::Rng;
/// let (mut a, mut b) = (Rng(7), Rng(7));
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// The next 128 random bits.
    pub fn u128(&mut self) -> u128 {
        (self.next_u64() as u128) << 64 | self.next_u64() as u128
    }

    /// True `percent` times in 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// One of `xs` (not empty).
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }

    /// `buf` filled with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let w = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
    }
}

/// IPv4 prefix lengths, in per mille of a full table (BGP tables of the
/// 2020s: half of all routes are /24s; /25 and longer are rare there but
/// common inside networks, so a few are kept to exercise the 8-bit level).
const V4_LENGTHS: &[(u32, u32)] = &[
    (8, 1),
    (10, 1),
    (11, 2),
    (12, 4),
    (13, 7),
    (14, 12),
    (15, 20),
    (16, 40),
    (17, 25),
    (18, 40),
    (19, 60),
    (20, 70),
    (21, 80),
    (22, 120),
    (23, 100),
    (24, 408),
    (25, 3),
    (26, 3),
    (27, 2),
    (28, 1),
    (29, 1),
];

/// IPv6 prefix lengths, per mille (/48 dominates, then /32, /44, /40...).
const V6_LENGTHS: &[(u32, u32)] = &[
    (19, 1),
    (20, 2),
    (24, 3),
    (28, 6),
    (29, 25),
    (30, 5),
    (31, 3),
    (32, 120),
    (33, 15),
    (34, 10),
    (35, 8),
    (36, 35),
    (37, 5),
    (38, 10),
    (39, 8),
    (40, 60),
    (41, 5),
    (42, 15),
    (43, 8),
    (44, 100),
    (45, 12),
    (46, 30),
    (47, 30),
    (48, 460),
    (56, 8),
    (64, 10),
    (128, 2),
];

fn pick_len(rng: &mut Rng, table: &[(u32, u32)]) -> u32 {
    let total: u32 = table.iter().map(|x| x.1).sum();
    let mut r = rng.below(total as u64) as u32;
    for &(l, w) in table {
        if r < w {
            return l;
        }
        r -= w;
    }
    table[table.len() - 1].0
}

/// The registries' IPv6 pools: 2001::/16 and the five RIRs' /12s
/// (2400::/12 APNIC, 2600::/12 ARIN, 2800::/12 LACNIC, 2a00::/12 RIPE,
/// 2c00::/12 AFRINIC), as (first 16 bits, bits fixed).
const V6_POOLS: &[(u128, u32)] = &[
    (0x2001, 16),
    (0x2400, 12),
    (0x2600, 12),
    (0x2800, 12),
    (0x2a00, 12),
    (0x2c00, 12),
];

/// A random address inside one of the registry pools.
fn v6_in_pool(rng: &mut Rng) -> u128 {
    let (top, fixed) = V6_POOLS[rng.below(V6_POOLS.len() as u64) as usize];
    let rand = (rng.next_u64() as u128) << 64 | rng.next_u64() as u128;
    (top << 112) | (rand & (u128::MAX >> fixed))
}

/// `n` distinct prefixes `(prefix, len)` of a family, reproducible from
/// `seed`. IPv4 prefixes fall in 1.0.0.0-223.255.255.255. IPv6 ones fall
/// in the registries' pools, and those longer than /32 inside a few
/// thousand /32 allocations, as LIRs announce them.
pub fn prefixes(f: Family, n: usize, seed: u64) -> Vec<(u128, u32)> {
    let mut rng = Rng(seed);
    let mut seen = std::collections::HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    let blocks: Vec<u128> = (0..(n / 40).max(16))
        .map(|_| v6_in_pool(&mut rng) & (u128::MAX << 96))
        .collect();
    while out.len() < n {
        let (p, len) = match f {
            Family::V4 => {
                let len = pick_len(&mut rng, V4_LENGTHS);
                let a = (1 + rng.below(223) as u128) << 24 | (rng.next_u64() as u128 & 0xff_ffff);
                let mask = if len == 0 {
                    0
                } else {
                    (u32::MAX << (32 - len)) as u128
                };
                (a & mask, len)
            }
            Family::V6 => {
                let len = pick_len(&mut rng, V6_LENGTHS);
                let a = if len > 32 {
                    blocks[rng.below(blocks.len() as u64) as usize]
                        | ((rng.next_u64() as u128) << 32 | rng.next_u64() as u128)
                            & ((1u128 << 96) - 1)
                } else {
                    v6_in_pool(&mut rng)
                };
                let mask = if len == 0 {
                    0
                } else {
                    u128::MAX << (128 - len)
                };
                (a & mask, len)
            }
        };
        if seen.insert((p, len)) {
            out.push((p, len));
        }
    }
    out
}
