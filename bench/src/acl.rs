//! DPDK's packet classifier, `rte_acl`, behind a safe interface: rules of
//! fields read from keys at fixed offsets, each rule a value and a prefix
//! length (mask fields) or an inclusive range (range fields).
//!
//! Used by `bench matcher` for its `rte_acl` column, beside our sets on
//! the same rules and keys; the forwarder itself does not classify with
//! it. The EAL is started through the forwarder's DPDK port module
//! ([`forwarder::port::dpdk::init_eal`]), which owns it for the process.
#![allow(unsafe_code)]

use dpdk_sys as sys;
use forwarder::port::dpdk::{errno_msg, last_error};
use forwarder::port::MAX_BURST;
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// How a field matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `value/prefix_len`.
    Mask,
    /// `low..=high`.
    Range,
    /// `value & mask` (what dpdk-test-acl uses for the protocol).
    Bitmask,
}

/// rte_acl's classify methods, as `rte_acl_set_ctx_classify` names them
/// (the AVX-512 ones need the EAL's `--force-max-simd-bitwidth=512`).
pub const METHODS: [(&str, u32); 5] = [
    ("scalar", sys::rte_acl_classify_alg_RTE_ACL_CLASSIFY_SCALAR),
    ("sse", sys::rte_acl_classify_alg_RTE_ACL_CLASSIFY_SSE),
    ("avx2", sys::rte_acl_classify_alg_RTE_ACL_CLASSIFY_AVX2),
    (
        "avx512x16",
        sys::rte_acl_classify_alg_RTE_ACL_CLASSIFY_AVX512X16,
    ),
    (
        "avx512x32",
        sys::rte_acl_classify_alg_RTE_ACL_CLASSIFY_AVX512X32,
    ),
];

/// A field of the rules: its size (1, 2 or 4 bytes), where it is in
/// a key, and the 4-byte input word it belongs to (DPDK reads keys in
/// 4-byte words; the first field must be one byte, alone in word 0).
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// How it matches.
    pub kind: Kind,
    /// 1, 2 or 4 bytes.
    pub size: u8,
    /// Offset in the key.
    pub offset: u32,
    /// The input word.
    pub input: u8,
}

/// A rule: per field, (value, prefix length), (low, high) or (value,
/// mask) in host order; a match returns `userdata` (not 0). Where several
/// rules match, the highest `priority` wins.
#[derive(Clone, Debug)]
pub struct Rule {
    /// What a match returns (not 0: 0 is "no match").
    pub userdata: u32,
    /// Rank among overlapping rules: higher wins.
    pub priority: i32,
    /// Per field.
    pub fields: Vec<(u64, u64)>,
}

/// A built classifier.
pub struct Classifier {
    ctx: *mut sys::rte_acl_ctx,
    /// Bytes read past a key's start (the last field's end).
    reach: usize,
}

// SAFETY: a built context is read-only for classification.
unsafe impl Send for Classifier {}
unsafe impl Sync for Classifier {}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Bytes allocated from DPDK's heaps (all sockets): a context's memory is
/// the difference across its build (its rules and tries; the build's
/// scratch is freed by then).
pub fn heap_allocated() -> u64 {
    // SAFETY: reads rte_malloc's statistics; needs only a started EAL,
    // which every caller has (a classifier is built after `init_eal`).
    unsafe { sys::fwd_heap_allocated() }
}

/// Releases the EAL that rte_acl's columns started, and its runtime
/// files, however a run ends (declare it before the classifiers, so it
/// drops after them).
pub struct EalGuard;

impl Drop for EalGuard {
    fn drop(&mut self) {
        forwarder::port::dpdk::shutdown();
    }
}

/// Starts the EAL for rte_acl (once per process; later calls do nothing):
/// no huge pages, no devices, and SIMD up to 512 bits so that rte_acl may
/// pick, and be set to, its AVX-512 methods.
pub fn init_eal() -> Result<(), String> {
    let eal: Vec<String> = [
        "--no-huge",
        "-m",
        "4096",
        "--no-pci",
        "--force-max-simd-bitwidth=512",
        "--log-level",
        "lib.eal:error",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    forwarder::port::dpdk::init_eal(&eal)
}

impl Classifier {
    /// Creates and builds a classifier (the EAL must run).
    pub fn build(fields: &[Field], rules: &[Rule]) -> Result<Classifier, String> {
        if fields.is_empty() || fields.len() > sys::RTE_ACL_MAX_FIELDS as usize {
            return Err(format!("{} fields", fields.len()));
        }
        let head = std::mem::offset_of!(sys::rte_acl_rule, field);
        let fsz = std::mem::size_of::<sys::rte_acl_field>();
        let rule_size = head + fsz * fields.len();
        let name = CString::new(format!("fwd_acl_{}", SEQ.fetch_add(1, Relaxed))).expect("no NUL");
        let param = sys::rte_acl_param {
            name: name.as_ptr(),
            socket_id: -1,
            rule_size: rule_size as u32,
            max_rule_num: rules.len().max(1) as u32,
        };
        // SAFETY: a valid parameter block; the name outlives the call
        // (DPDK copies it).
        let ctx = unsafe { sys::rte_acl_create(&param) };
        if ctx.is_null() {
            return Err(last_error("rte_acl_create"));
        }
        let c = Classifier {
            ctx,
            reach: fields
                .iter()
                .map(|f| f.offset as usize + f.size as usize)
                .max()
                .unwrap_or(0),
        };
        // Rules as DPDK lays them out: rte_acl_rule_data, then one
        // rte_acl_field (value, mask_range: 8 bytes each) per field.
        let mut buf = vec![0u8; rule_size * rules.len()];
        for (r, out) in rules.iter().zip(buf.chunks_exact_mut(rule_size)) {
            if r.fields.len() != fields.len() || r.userdata == 0 {
                return Err("a rule's fields do not match, or its userdata is 0".into());
            }
            out[0..4].copy_from_slice(&1u32.to_ne_bytes()); // category mask
            out[4..8].copy_from_slice(&r.priority.to_ne_bytes());
            out[8..12].copy_from_slice(&r.userdata.to_ne_bytes());
            for (k, &(v, m)) in r.fields.iter().enumerate() {
                let at = head + k * fsz;
                out[at..at + 8].copy_from_slice(&v.to_ne_bytes());
                out[at + 8..at + 16].copy_from_slice(&m.to_ne_bytes());
            }
        }
        // SAFETY: `rules.len()` rules of `rule_size` bytes each, laid
        // out as the context was created for; DPDK copies them.
        let ret = unsafe {
            sys::rte_acl_add_rules(
                c.ctx,
                buf.as_ptr() as *const sys::rte_acl_rule,
                rules.len() as u32,
            )
        };
        if ret != 0 {
            return Err(errno_msg("rte_acl_add_rules", ret));
        }
        let mut cfg = sys::rte_acl_config {
            num_categories: 1,
            num_fields: fields.len() as u32,
            ..Default::default()
        };
        for (k, f) in fields.iter().enumerate() {
            cfg.defs[k] = sys::rte_acl_field_def {
                type_: match f.kind {
                    Kind::Mask => sys::RTE_ACL_FIELD_TYPE_MASK as u8,
                    Kind::Range => sys::RTE_ACL_FIELD_TYPE_RANGE as u8,
                    Kind::Bitmask => sys::RTE_ACL_FIELD_TYPE_BITMASK as u8,
                },
                size: f.size,
                field_index: k as u8,
                input_index: f.input,
                offset: f.offset,
            };
        }
        // SAFETY: a context with its rules; `cfg` describes them.
        let ret = unsafe { sys::rte_acl_build(c.ctx, &cfg) };
        if ret != 0 {
            return Err(errno_msg("rte_acl_build", ret));
        }
        Ok(c)
    }

    /// Classifies with `method` (one of [`METHODS`]) from now on; an
    /// error where this CPU or the EAL's SIMD width does not allow it.
    pub fn set_method(&self, method: u32) -> Result<(), String> {
        // SAFETY: our context; DPDK checks the method.
        let ret = unsafe { sys::rte_acl_set_ctx_classify(self.ctx, method) };
        if ret != 0 {
            return Err(errno_msg("rte_acl_set_ctx_classify", ret));
        }
        Ok(())
    }

    /// Classifies `n` keys laid `stride` bytes apart in `keys`: `out[i]`
    /// is the matching rule's userdata, or 0.
    pub fn classify(&self, keys: &[u8], stride: usize, out: &mut [u32]) {
        let n = out.len().min(MAX_BURST);
        if n == 0 {
            return;
        }
        // Every field of every key must lie inside `keys`.
        assert!(
            (n - 1) * stride + self.reach <= keys.len(),
            "keys too short"
        );
        let mut ptrs = [std::ptr::null::<u8>(); MAX_BURST];
        for (i, p) in ptrs.iter_mut().enumerate().take(n) {
            *p = keys[i * stride..].as_ptr();
        }
        // SAFETY: `n` pointers to keys whose fields lie inside `keys`
        // (checked above); `out` holds `n` results.
        unsafe {
            sys::rte_acl_classify(self.ctx, ptrs.as_mut_ptr(), out.as_mut_ptr(), n as u32, 1)
        };
    }
}

impl Drop for Classifier {
    fn drop(&mut self) {
        // SAFETY: our context, freed once.
        unsafe { sys::rte_acl_free(self.ctx) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rte_acl` behind our safe wrapper (the `bench matcher` column) agrees
    /// with a linear scan: IPv4 ranges and port ranges, random keys.
    #[test]
    fn acl_classifier_agrees_with_a_linear_scan() {
        use routecache::gen::Rng;
        forwarder::port::dpdk::init_eal(
            &[
                "--no-huge",
                "-m",
                "256",
                "--no-pci",
                "--log-level",
                "lib.eal:error",
            ]
            .map(String::from),
        )
        .unwrap();
        // Keys: 4-byte address, 2-byte port, 2 bytes of padding.
        let fields = [
            Field {
                kind: Kind::Range,
                size: 1,
                offset: 0,
                input: 0,
            },
            Field {
                kind: Kind::Range,
                size: 4,
                offset: 0,
                input: 1,
            },
            Field {
                kind: Kind::Range,
                size: 2,
                offset: 4,
                input: 2,
            },
            Field {
                kind: Kind::Range,
                size: 1,
                offset: 6,
                input: 2,
            },
            Field {
                kind: Kind::Range,
                size: 1,
                offset: 7,
                input: 2,
            },
        ];
        let mut rng = Rng(3);
        // Disjoint address blocks, random port ranges.
        let rules: Vec<(u32, u32, u16, u16)> = (0..500u32)
            .map(|i| {
                let lo = i << 20 | rng.below(1 << 10) as u32;
                let hi = lo + rng.below(1 << 12) as u32;
                let p = rng.below(60000) as u16;
                (lo, hi, p, p + rng.below(3000) as u16)
            })
            .collect();
        let acl = Classifier::build(
            &fields,
            &rules
                .iter()
                .enumerate()
                .map(|(i, &(lo, hi, p, q))| Rule {
                    userdata: i as u32 + 1,
                    priority: 1,
                    fields: vec![
                        (0, 255),
                        (lo as u64, hi as u64),
                        (p as u64, q as u64),
                        (0, 255),
                        (0, 255),
                    ],
                })
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let mut hits = 0;
        for _ in 0..200 {
            let mut keys = vec![0u8; 32 * 8];
            let mut want = [0u32; 32];
            for (j, w) in want.iter_mut().enumerate() {
                let (a, port) = if rng.below(2) == 0 {
                    let r = rules[rng.below(rules.len() as u64) as usize];
                    (
                        r.0 + rng.below((r.1 - r.0 + 1) as u64) as u32,
                        r.2 + rng.below((r.3 - r.2 + 1) as u64) as u16,
                    )
                } else {
                    (rng.next_u64() as u32 & 0x1fff_ffff, rng.next_u64() as u16)
                };
                keys[j * 8..j * 8 + 4].copy_from_slice(&a.to_be_bytes());
                keys[j * 8 + 4..j * 8 + 6].copy_from_slice(&port.to_be_bytes());
                *w = rules
                    .iter()
                    .position(|&(lo, hi, p, q)| (lo..=hi).contains(&a) && (p..=q).contains(&port))
                    .map_or(0, |i| i as u32 + 1);
            }
            let mut got = [0u32; 32];
            acl.classify(&keys, 8, &mut got);
            assert_eq!(got, want);
            hits += want.iter().filter(|&&w| w != 0).count();
        }
        assert!(hits > 2000, "{hits} hits");
        // The EAL this test started leaves no runtime files behind.
        drop(acl);
        forwarder::port::dpdk::shutdown();
    }
}
