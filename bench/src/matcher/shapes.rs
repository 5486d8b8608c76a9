//! Sets shaped like firewall policies, beside the kernel selftest's: the
//! cases of the table.

use super::keys::balanced_keys;
use crate::stats::Rng;
use matcher::selftest::Case;
use matcher::{Element, SetDecl, Snapshot};

/// A case of the table: one of the kernel selftest's, or a shape of
/// real policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bench {
    Selftest(Case),
    Shape(Shape),
}

impl Bench {
    /// Every case: the selftest's, then the shapes.
    pub fn all() -> Vec<Bench> {
        Case::ALL
            .into_iter()
            .map(Bench::Selftest)
            .chain(Shape::ALL.into_iter().map(Bench::Shape))
            .collect()
    }

    pub fn from_name(s: &str) -> Option<Bench> {
        Case::from_name(s).map(Bench::Selftest).or_else(|| {
            Shape::ALL
                .into_iter()
                .find(|x| x.name() == s)
                .map(Bench::Shape)
        })
    }
}

/// Sets shaped like firewall policies, where fields repeat across
/// elements: what the selftest's sets (every field distinct per entry)
/// never show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `ipv4_addr . inet_service . inet_proto`: 200 servers × the same 20
    /// service ports, tcp (4,000).
    HostsServices,
    /// `ipv4_addr . inet_service`: 1,000 /24 networks × the same 5 port
    /// ranges (5,000).
    NetsRanges,
    /// `ipv4_addr . inet_service`: 100 hosts × 100 ports (10,000): no
    /// field alone narrows a key below 100 candidates.
    Grid,
    /// `ipv4_addr`: a blocklist of 25,000 /24s and 25,000 /32s (50,000).
    Blocklist,
}

impl Shape {
    pub const ALL: [Shape; 4] = [
        Shape::HostsServices,
        Shape::NetsRanges,
        Shape::Grid,
        Shape::Blocklist,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Shape::HostsServices => "hosts-x-services",
            Shape::NetsRanges => "nets-x-ranges",
            Shape::Grid => "grid-100x100",
            Shape::Blocklist => "blocklist",
        }
    }

    pub(super) fn decl(self) -> SetDecl {
        SetDecl::parse(match self {
            Shape::HostsServices => "type ipv4_addr . inet_service . inet_proto",
            Shape::NetsRanges | Shape::Grid => "type ipv4_addr . inet_service",
            Shape::Blocklist => "type ipv4_addr",
        })
        .expect("valid")
    }

    pub(super) fn elements(self) -> Vec<Element> {
        use matcher::Range;
        let el = |key: Vec<Range>| Element::of(key);
        let mut rng = Rng(0x5a5e ^ self as u64);
        match self {
            Shape::HostsServices => {
                const PORTS: [u128; 20] = [
                    22, 25, 53, 80, 110, 123, 143, 389, 443, 465, 587, 636, 993, 995, 1194, 3306,
                    5432, 6379, 8080, 8443,
                ];
                let mut out = Vec::new();
                for h in 0..200u128 {
                    // Servers scattered over a /16, as a DMZ's are.
                    let addr = 0x0a01_0000 | (h * 257 + rng.below(200) as u128) & 0xffff;
                    for p in PORTS {
                        out.push(el(vec![
                            Range::single(addr),
                            Range::single(p),
                            Range::single(6),
                        ]));
                    }
                }
                out.sort_by_key(|e| (e.key[0].start, e.key[1].start));
                out.dedup_by_key(|e| (e.key[0].start, e.key[1].start));
                out
            }
            Shape::NetsRanges => {
                const RANGES: [(u128, u128); 5] = [
                    (0, 1023),
                    (1024, 4999),
                    (5000, 9999),
                    (10000, 32767),
                    (49152, 65535),
                ];
                let mut out = Vec::new();
                for n in 0..1000u128 {
                    let net = 0x0a00_0000 | ((n * 97 % 65536) << 8);
                    for (lo, hi) in RANGES {
                        out.push(el(vec![Range::new(net, net | 0xff), Range::new(lo, hi)]));
                    }
                }
                out
            }
            Shape::Grid => {
                let mut out = Vec::new();
                for h in 0..100u128 {
                    for p in 0..100u128 {
                        out.push(el(vec![
                            Range::single(0x0a02_0000 | (h * 131)),
                            Range::single(1000 + p * 7),
                        ]));
                    }
                }
                out
            }
            Shape::Blocklist => {
                let mut out = Vec::new();
                // /24s at even /16-offsets, /32s in the odd ones: disjoint.
                for k in 0..25_000u128 {
                    let a = (0x0b00_0000 + (k * 2) * 256) & 0xffff_ff00;
                    out.push(el(vec![Range::new(a, a | 0xff)]));
                    let b = 0x0b00_0000 + (k * 2 + 1) * 256 + rng.below(256) as u128;
                    out.push(el(vec![Range::single(b)]));
                }
                out
            }
        }
    }
}

/// Keys for a shape: half hits (an element's ranges, a random value in
/// each), half misses (a hit with one field taken from another element:
/// known hosts on ports they do not serve; or values from nowhere).
pub(super) fn shape_keys(elems: &[Element], snap: &Snapshot, n: usize, rng: &mut Rng) -> Vec<u8> {
    let decl = snap.decl().clone();
    let pick = |rng: &mut Rng, r: &matcher::Range| {
        r.start + rng.below((r.end - r.start + 1) as u64) as u128
    };
    balanced_keys(snap, n, rng, |rng, want_hit, _| {
        let e = &elems[rng.below(elems.len() as u64) as usize];
        let mut values: Vec<u128> = e.key.iter().map(|r| pick(rng, r)).collect();
        if !want_hit {
            let f = rng.below(values.len() as u64) as usize;
            let o = &elems[rng.below(elems.len() as u64) as usize];
            values[f] = if rng.below(4) == 0 {
                rng.next_u64() as u128 & decl.fields()[f].max()
            } else {
                pick(rng, &o.key[f])
            };
        }
        values
    })
}
