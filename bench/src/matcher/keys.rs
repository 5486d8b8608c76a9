//! Header records the keys are extracted from, as a packet's headers
//! would be, and the extraction every column pays for: half of a case's
//! keys hit, half miss.

use crate::stats::Rng;
use matcher::{FieldType, Impl, SetDecl, Snapshot};

/// Bytes of one synthetic packet header record keys are extracted from.
pub(super) const REC: usize = 64;
/// Keys per burst, as the forwarder uses.
pub(super) const BURST: usize = 32;

/// Where each field type sits in a header record (a stand-in for the
/// packet's headers: MAC, address, port, protocol, mark).
pub(super) fn field_offset(t: FieldType) -> usize {
    match t {
        FieldType::EtherAddr => 0,
        FieldType::Ipv4Addr | FieldType::Ipv6Addr => 12,
        FieldType::InetService => 28,
        FieldType::InetProto => 30,
        FieldType::IcmpType | FieldType::Icmpv6Type => 31,
        FieldType::Mark => 32,
        FieldType::CtState => 36,
        // The port's name is not in the headers: a stand-in after them.
        FieldType::Ifname => 40,
        FieldType::Dscp => 37,
    }
}

/// Copies a case's fields out of header records into keys: the work every
/// column does, and all the baseline does.
pub(super) struct Extractor {
    parts: Vec<(usize, usize, usize)>, // (record offset, key offset, length)
    pub(super) klen: usize,
}

impl Extractor {
    pub(super) fn new(decl: &SetDecl) -> Extractor {
        let mut off = 0;
        let parts = decl
            .fields()
            .iter()
            .map(|&t| {
                let p = (field_offset(t), off, t.bytes());
                off += t.bytes();
                p
            })
            .collect();
        Extractor { parts, klen: off }
    }

    /// Copies 16 bytes per field (records have room past every field,
    /// key buffers have 16 bytes of slack): a fixed-size move instead of
    /// a `memcpy` call; the bytes past a field are overwritten by the next
    /// field or key, or land in the slack.
    #[inline(always)]
    pub(super) fn extract(&self, rec: &[u8], key: &mut [u8]) {
        for &(src, dst, _) in &self.parts {
            let b: [u8; 16] = rec[src..src + 16].try_into().unwrap();
            key[dst..dst + 16].copy_from_slice(&b);
        }
    }
}

pub(super) fn write_record(decl: &SetDecl, values: &[u128], rec: &mut [u8]) {
    for (&t, &v) in decl.fields().iter().zip(values) {
        t.write_key(v, &mut rec[field_offset(t)..]);
    }
}

/// Header records of `n` keys, half hits and half misses as the
/// snapshot answers them: `values(rng, hit, desperate)` makes a key meant
/// to hit or miss (`desperate` once 50 tries a key have not given the
/// balance, when any key is taken).
pub(super) fn balanced_keys(
    snap: &Snapshot,
    n: usize,
    rng: &mut Rng,
    mut values: impl FnMut(&mut Rng, bool, bool) -> Vec<u128>,
) -> Vec<u8> {
    let decl = snap.decl().clone();
    let mut scratch = snap.scratch();
    let mut recs = vec![0u8; n * REC];
    let (mut hits, mut misses, mut i, mut guard) = (0, 0, 0, 0usize);
    while i < n {
        guard += 1;
        let want_hit = hits * 2 < n && (misses * 2 >= n || rng.below(2) == 0);
        let values = values(rng, want_hit, guard > 50 * n);
        let key = decl.key_from_values(&values);
        let hit = snap.lookup_with(Impl::Scalar, &key, &mut scratch).is_some();
        if hit != want_hit && guard <= 50 * n {
            continue;
        }
        if hit {
            hits += 1;
        } else {
            misses += 1;
        }
        write_record(&decl, &values, &mut recs[i * REC..(i + 1) * REC]);
        i += 1;
    }
    recs
}
