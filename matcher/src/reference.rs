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
    /// A linear set of `elems`.
    pub fn new(decl: SetDecl, elems: Vec<Element>) -> LinearSet {
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
