//! Elements added and deleted at run time, nft's way (`forwarder element
//! add|delete|list`, or one JSON request on the control socket).
//!
//! A request names one set and any number of elements in the set file's
//! syntax. It is all-or-nothing: every element is parsed, then applied to
//! the set's working copy as one batch (`add` is nft's `add element`: an
//! exact duplicate is no error, the same key with other data is `exists`,
//! a shared key is `overlap` naming both; `delete` needs the exact key);
//! on the first error nothing changes. Then one new snapshot is
//! published, and the answer names its generation.
//!
//! Run-time changes are kept apart from the configuration's elements, as
//! an overlay per set: a reload of the configuration applies them again
//! on top of what the files now say (a file element deleted at run time
//! stays deleted; an added one stays), and a reload that would conflict
//! with one (an overlap, a changed type) is refused, so an acknowledged
//! change is never lost while the forwarder runs. A restart drops them:
//! the files are the durable source.

use matcher::{Element, Range, SetDecl};
use std::collections::HashSet;

/// A set's run-time changes.
#[derive(Clone, Default)]
pub(super) struct Overlay {
    /// The set's type when they were made.
    pub(super) decl: Option<SetDecl>,
    /// Elements added at run time.
    pub(super) added: Vec<Element>,
    /// Keys deleted at run time (of elements the files give).
    pub(super) deleted: HashSet<Box<[Range]>>,
}

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementOp {
    /// `add element`.
    Add,
    /// `delete element`.
    Delete,
}

impl ElementOp {
    /// `add` or `delete`.
    pub fn parse(s: &str) -> Option<ElementOp> {
        match s {
            "add" => Some(ElementOp::Add),
            "delete" => Some(ElementOp::Delete),
            _ => None,
        }
    }
}

/// A set's elements as `forwarder element list` shows them.
pub struct Listing {
    /// `type ...` (with ` : DATA` for maps).
    pub decl: String,
    /// Whether the set is a map.
    pub map: bool,
    /// Each element in the set file's syntax.
    pub elements: Vec<String>,
    /// Each element's key, in the same order.
    pub keys: Vec<Box<[Range]>>,
    /// Whether its elements count (`counter = true`).
    pub counter: bool,
}
