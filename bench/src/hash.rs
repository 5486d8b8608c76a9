//! `bench hash`: the BPF hashmap table of the jhash2 patch. A hash table
//! of 65,536 buckets (chained, as the kernel's htab), filled to 25, 50,
//! 75 and 100 %, keys of 4 to 64 bytes; lookups of present keys per
//! second with jhash, jhash2 (key sizes that are multiples of 4), ahash and
//! foldhash, and each one's gain over jhash.

use crate::stats::{median, round, row};
use routecache::gen::Rng;
use routecache::hash::{jhash, jhash2};
use serde_json::json;
use std::hash::BuildHasher;
use std::hint::black_box;
use std::time::Instant;

const SLOTS: usize = 65_536;
const KEY_SIZES: [usize; 9] = [4, 8, 12, 16, 20, 24, 28, 32, 64];
const FILLS: [usize; 4] = [25, 50, 75, 100];

#[derive(Clone, Copy, PartialEq, Eq)]
enum H {
    Jhash,
    Jhash2,
    Ahash,
    Foldhash,
}

impl H {
    fn name(self) -> &'static str {
        match self {
            H::Jhash => "jhash",
            H::Jhash2 => "jhash2",
            H::Ahash => "ahash",
            H::Foldhash => "foldhash",
        }
    }
}

/// Keys are stored as 32-bit words (so jhash2 reads them in place) and
/// handed to the byte hashes as the same memory.
struct Table {
    words: usize,
    keys: Vec<u32>,
    heads: Vec<u32>,
    next: Vec<u32>,
    h: H,
    ahash: ahash::RandomState,
    fold: foldhash::fast::FixedState,
}

const NIL: u32 = u32::MAX;

impl Table {
    #[inline(always)]
    fn hash(&self, key: &[u32]) -> u32 {
        let bytes: &[u8] = bytemuck::cast_slice(key);
        match self.h {
            H::Jhash => jhash(bytes, 0x5eed),
            H::Jhash2 => jhash2(key, 0x5eed),
            H::Ahash => self.ahash.hash_one(bytes) as u32,
            H::Foldhash => self.fold.hash_one(bytes) as u32,
        }
    }

    fn new(words: usize, keys: Vec<u32>, h: H) -> Table {
        let n = keys.len() / words;
        let mut t = Table {
            words,
            keys,
            heads: vec![NIL; SLOTS],
            next: vec![NIL; n],
            h,
            ahash: ahash::RandomState::with_seeds(1, 2, 3, 4),
            fold: foldhash::fast::FixedState::with_seed(5),
        };
        for i in 0..n {
            let b = t.hash(&t.keys[i * words..(i + 1) * words]) as usize & (SLOTS - 1);
            t.next[i] = t.heads[b];
            t.heads[b] = i as u32;
        }
        t
    }

    #[inline(always)]
    fn lookup(&self, key: &[u32]) -> Option<u32> {
        let mut i = self.heads[self.hash(key) as usize & (SLOTS - 1)];
        while i != NIL {
            let at = i as usize * self.words;
            if &self.keys[at..at + self.words] == key {
                return Some(i);
            }
            i = self.next[i as usize];
        }
        None
    }
}

pub fn run(json: bool, quick: bool) {
    let reps = if quick { 3 } else { 5 };
    let lookups = if quick { 1 << 18 } else { 1 << 20 };
    let mut rng = Rng(42);
    if !json {
        println!("M lookups/s, one core, {SLOTS} buckets, present keys in random order, median of {reps}; gain against jhash");
        println!();
        println!("| key bytes | fill | jhash | jhash2 | ahash | foldhash |");
        println!("|---:|---:|---:|---:|---:|---:|");
    }
    for ks in KEY_SIZES {
        let words = ks / 4;
        for fill in FILLS {
            let n = SLOTS * fill / 100;
            let keys: Vec<u32> = (0..n * words).map(|_| rng.next_u64() as u32).collect();
            let order: Vec<usize> = (0..lookups).map(|_| rng.below(n as u64) as usize).collect();
            let hs = [H::Jhash, H::Jhash2, H::Ahash, H::Foldhash];
            let tables: Vec<Table> = hs
                .iter()
                .map(|&h| Table::new(words, keys.clone(), h))
                .collect();
            let mut samples = vec![Vec::new(); hs.len()];
            for _ in 0..reps {
                for (i, t) in tables.iter().enumerate() {
                    let start = Instant::now();
                    let mut found = 0u64;
                    for &k in &order {
                        found += t.lookup(&t.keys[k * words..(k + 1) * words]).is_some() as u64;
                    }
                    assert_eq!(found as usize, order.len());
                    black_box(found);
                    samples[i].push(lookups as f64 / start.elapsed().as_secs_f64() / 1e6);
                }
            }
            let m: Vec<f64> = samples.iter_mut().map(|s| median(s)).collect();
            if json {
                for (i, h) in hs.iter().enumerate() {
                    row(json!({
                        "key_size": ks,
                        "fill_pct": fill,
                        "hash": h.name(),
                        "mlookups_per_s": round(m[i], 2),
                        "gain_vs_jhash_pct": round((m[i] / m[0] - 1.0) * 100.0, 1),
                    }));
                }
            } else {
                print!("| {ks} | {fill} % | {:.1} |", m[0]);
                for x in &m[1..] {
                    print!(" {:.1} ({:+.0} %) |", x, (x / m[0] - 1.0) * 100.0);
                }
                println!();
            }
        }
    }
}
