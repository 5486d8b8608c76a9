//! The simplest correct matcher: a linear scan over the elements. Every
//! fast path is tested against it, and the bench uses it as a baseline.

use crate::syntax::{Element, SetDecl};

/// A list of elements looked up by trying each in turn.
#[derive(Clone, Debug)]
pub struct LinearSet {
    decl: SetDecl,
    elems: Vec<Element>,
}

impl LinearSet {
    /// A linear set of `elems`, tried in rank order: lowest `priority`
    /// first (0 when not given), then in the order given (what a
    /// first-match set answers; elements of a disjoint set never share a
    /// key, so their order does not matter).
    pub fn new(decl: SetDecl, mut elems: Vec<Element>) -> LinearSet {
        elems.sort_by_key(|e| e.priority.unwrap_or(0));
        LinearSet { decl, elems }
    }

    /// The elements.
    pub fn elements(&self) -> &[Element] {
        &self.elems
    }

    /// The first element matching the key bytes.
    pub fn lookup(&self, key: &[u8]) -> Option<&Element> {
        let values = self.decl.values_of_key(key);
        self.lookup_values(&values)
    }

    /// The first element matching one value per field.
    pub fn lookup_values(&self, values: &[u128]) -> Option<&Element> {
        self.elems.iter().find(|e| e.matches(values))
    }
}
