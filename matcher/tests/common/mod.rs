//! Random sets and keys for the differential tests.
#![allow(dead_code)]

use matcher::field::FieldType;
use matcher::{Data, Element, Range, SetDecl, Verdict};

/// The workspace's seeded random numbers.
pub use routecache::gen::Rng;

/// Where one field's values concentrate: an anchor value whose bits
/// `pos .. pos + width` (counted from the least significant) vary. With
/// an IPv6 field and a middle position, keys differ in one middle octet.
#[derive(Clone, Debug)]
pub struct Window {
    pub t: FieldType,
    pub anchor: u128,
    pub pos: u32,
    pub width: u32,
}

impl Window {
    pub fn random(rng: &mut Rng, t: FieldType) -> Window {
        let bits = t.bits();
        let width = (1 + rng.below(10) as u32).min(bits);
        let pos = if rng.chance(50) {
            0
        } else {
            rng.below((bits - width + 1) as u64) as u32
        };
        Window {
            t,
            anchor: rng.u128() & t.max(),
            pos,
            width,
        }
    }

    fn mask(&self) -> u128 {
        (((1u128 << self.width) - 1) << self.pos) & self.t.max()
    }

    pub fn value(&self, rng: &mut Rng) -> u128 {
        match rng.below(20) {
            0 => 0,
            1 => self.t.max(),
            _ => (self.anchor & !self.mask()) | (rng.u128() & self.mask()),
        }
    }

    pub fn range(&self, rng: &mut Rng) -> Range {
        let bits = self.t.bits();
        match rng.below(10) {
            0..=2 => Range::single(self.value(rng)),
            3..=5 => {
                let (a, b) = (self.value(rng), self.value(rng));
                Range::new(a.min(b), a.max(b))
            }
            6..=7 => {
                // A prefix ending inside or just around the window.
                let lo = bits.saturating_sub(self.pos + self.width + 1);
                let hi = (bits - self.pos).min(bits);
                let len = lo + rng.below((hi - lo + 1) as u64) as u32;
                let host = bits - len;
                let hm = if host >= 128 {
                    u128::MAX
                } else {
                    (1u128 << host) - 1
                };
                let v = self.value(rng) & !hm;
                // A type whose values do not fill its bits (dscp) ends at
                // its largest.
                Range::new(v, (v | hm).min(self.t.max()))
            }
            8 => {
                let a = self.value(rng);
                Range::new(a, a.saturating_add(rng.below(40) as u128).min(self.t.max()))
            }
            _ => {
                if rng.chance(30) {
                    Range::new(0, self.t.max())
                } else {
                    let a = self.value(rng);
                    Range::new(a, self.t.max())
                }
            }
        }
    }
}

/// A random declaration, its per-field windows, and element/key makers.
pub struct Gen {
    pub decl: SetDecl,
    pub windows: Vec<Window>,
}

pub const CONCATS: [&str; 7] = [
    "type ipv4_addr . inet_service",
    "type inet_service . ipv4_addr",
    "type ipv6_addr . inet_service",
    "type inet_service . inet_proto",
    "type ipv6_addr . inet_service . ether_addr",
    "type ipv6_addr . inet_service . ether_addr . inet_proto",
    "type ipv4_addr . ether_addr",
];

impl Gen {
    pub fn new(rng: &mut Rng, decl: SetDecl) -> Gen {
        let windows = decl
            .fields()
            .iter()
            .map(|&t| Window::random(rng, t))
            .collect();
        Gen { decl, windows }
    }

    /// A random declaration: one of the selftest's seven concatenations,
    /// or 1 to 5 random field types, sometimes a verdict map.
    pub fn random(rng: &mut Rng) -> Gen {
        let mut text = if rng.chance(50) {
            rng.pick(&CONCATS).to_string()
        } else {
            let n = 1 + rng.below(5) as usize;
            // Not `ifname`: most 16-byte values are no name and have no
            // text; its lookups are `ipv6_addr`'s width, its text has
            // tests of its own (`parsers.rs`).
            let types: Vec<FieldType> = (FieldType::ALL.into_iter())
                .filter(|t| *t != FieldType::Ifname)
                .collect();
            let names: Vec<&str> = (0..n).map(|_| rng.pick(&types).name()).collect();
            format!("type {}", names.join(" . "))
        };
        if rng.chance(30) {
            text.push_str(" : verdict");
        }
        let decl = SetDecl::parse(&text).unwrap();
        Gen::new(rng, decl)
    }

    pub fn element(&self, rng: &mut Rng) -> Element {
        let key = self.windows.iter().map(|w| w.range(rng)).collect();
        let data = self.decl.data().map(|_| {
            Data::Verdict(if rng.chance(50) {
                Verdict::Accept
            } else {
                Verdict::Drop
            })
        });
        Element {
            key,
            data,
            priority: None,
            timeout: None,
            expires: None,
        }
    }

    /// A key aimed at an element's boundaries: each field at its range's
    /// start, end, start - 1, end + 1 or inside.
    pub fn boundary_key(&self, rng: &mut Rng, e: &Element) -> Vec<u128> {
        e.key
            .iter()
            .zip(&self.windows)
            .map(|(r, w)| match rng.below(6) {
                0 => r.start,
                1 => r.end,
                2 => r.start.wrapping_sub(1) & w.t.max(),
                3 => r.end.wrapping_add(1) & w.t.max(),
                4 => r.start + (r.end - r.start) / 2,
                _ => w.value(rng),
            })
            .collect()
    }

    pub fn random_key(&self, rng: &mut Rng) -> Vec<u128> {
        self.windows.iter().map(|w| w.value(rng)).collect()
    }
}
