//! A snapshot's elements by id, in chunks that snapshots share, and the
//! check of a key against an element's ranges that the classifier's
//! leaves of wide fields need.

use crate::cuts::Verify;
use crate::syntax::Element;
use std::sync::Arc;

/// Element slots a chunk of [`Elems`] holds.
const CHUNK: usize = 256;

/// A snapshot's elements by id, in chunks that snapshots share: a commit
/// copies the chunks that changed since the last one, not the whole set
/// (a commit of one change to a 10,000-element set spent most of its
/// time cloning and then dropping 10,000 `Arc`s).
#[derive(Clone, Debug, Default)]
pub(crate) struct Elems {
    chunks: Vec<Arc<[Option<Arc<Element>>]>>,
    /// Per chunk, whether any of its elements has a deadline.
    expiring: Vec<bool>,
}

impl Elems {
    #[inline]
    pub(crate) fn get(&self, id: usize) -> Option<&Option<Arc<Element>>> {
        self.chunks.get(id / CHUNK)?.get(id % CHUNK)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Option<Arc<Element>>> {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    pub(crate) fn slots(&self) -> usize {
        self.chunks.iter().map(|c| c.len()).sum()
    }

    pub(crate) fn any_expiring(&self) -> bool {
        self.expiring.contains(&true)
    }

    /// Brings the chunks in line with `now` (the working copy's slots):
    /// a chunk whose every slot holds the same element (by pointer) is
    /// kept, the others are copied anew.
    pub(crate) fn update(&mut self, now: &[Option<Arc<Element>>]) {
        let n = now.len().div_ceil(CHUNK);
        self.chunks.truncate(n);
        self.expiring.truncate(n);
        for (i, part) in now.chunks(CHUNK).enumerate() {
            let same = self.chunks.get(i).is_some_and(|c| {
                c.len() == part.len()
                    && c.iter().zip(part).all(|(a, b)| match (a, b) {
                        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                        (None, None) => true,
                        _ => false,
                    })
            });
            if same {
                continue;
            }
            let c: Arc<[Option<Arc<Element>>]> = part.into();
            let exp = part.iter().flatten().any(|e| e.expires.is_some());
            if i < self.chunks.len() {
                self.chunks[i] = c;
                self.expiring[i] = exp;
            } else {
                self.chunks.push(c);
                self.expiring.push(exp);
            }
        }
    }
}

/// Checks a candidate of the classifier against every field in full (sets
/// with fields wider than 4 bytes), without allocating.
pub(crate) struct Verifier<'a> {
    pub(crate) elems: &'a Elems,
    pub(crate) fields: &'a [crate::FieldType],
}

impl Verify for Verifier<'_> {
    #[inline]
    fn holds(&self, id: u32, key: &[u8]) -> bool {
        let Some(Some(e)) = self.elems.get(id as usize) else {
            return false;
        };
        let mut off = 0;
        for (t, r) in self.fields.iter().zip(e.key.iter()) {
            let v = t.read_key(&key[off..]);
            off += t.bytes();
            if !r.contains(v) {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::{InsertMode, Set, SetDecl};
    use std::sync::Arc;

    /// A commit of one change shares every chunk of elements but the
    /// changed one with the snapshot before it, and both snapshots keep
    /// their own answers.
    #[test]
    fn a_commit_copies_only_the_changed_chunk_of_elements() {
        let decl = SetDecl::parse("ipv4_addr . inet_service; flags priority").unwrap();
        let mut set = Set::new(decl.clone());
        let el = |i: u32| {
            decl.parse_element(&format!("10.{}.{}.0/24 . 80", i >> 8, i & 255))
                .unwrap()
        };
        for i in 0..1000 {
            set.insert(el(i), InsertMode::Add).unwrap();
        }
        let before = set.commit();
        set.delete(&el(300).key).unwrap();
        let after = set.commit();
        let (b, a) = (before.elems(), after.elems());
        assert_eq!(b.chunks.len(), 4);
        let shared: Vec<bool> = b
            .chunks
            .iter()
            .zip(&a.chunks)
            .map(|(x, y)| Arc::ptr_eq(x, y))
            .collect();
        assert_eq!(shared, [true, false, true, true]);
        let key = decl.parse_key("10.1.44.9 . 80").unwrap();
        let mut scratch = before.scratch();
        assert!(before.lookup(&key, &mut scratch).is_some());
        assert!(after.lookup(&key, &mut scratch).is_none());
        assert_eq!(a.iter().flatten().count(), 999);
    }
}
