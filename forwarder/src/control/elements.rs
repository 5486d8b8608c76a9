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

use super::Control;
use config::Config;
use matcher::{Element, Op, Range, SetDecl};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A set's run-time changes.
#[derive(Default)]
pub(super) struct Overlay {
    /// The set's type when they were made.
    decl: Option<SetDecl>,
    /// Elements added at run time.
    added: Vec<Element>,
    /// Keys deleted at run time (of elements the files give).
    deleted: HashSet<Box<[Range]>>,
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
}

impl Control {
    fn set_index(&self, set: &str) -> Result<usize, String> {
        self.cfg
            .sets
            .iter()
            .position(|s| s.name == set)
            .ok_or_else(|| {
                let names: Vec<&str> = self.cfg.sets.iter().map(|s| s.name.as_str()).collect();
                format!(
                    "no set `{}` (sets: {})",
                    matcher::excerpt(set),
                    names.join(", ")
                )
            })
    }

    /// Adds or deletes `texts` (elements in the set file's syntax) in set
    /// `set`, all or nothing, and publishes the result; returns the new
    /// generation.
    pub fn elements(&mut self, op: ElementOp, set: &str, texts: &[String]) -> Result<u64, String> {
        let j = self.set_index(set)?;
        let decl = self.cfg.sets[j].decl.clone();
        let mut parsed = Vec::with_capacity(texts.len());
        for (i, t) in texts.iter().enumerate() {
            let e = match op {
                ElementOp::Add => decl.parse_element(t),
                ElementOp::Delete => decl.parse_element_key(t).map(|key| Element {
                    key,
                    data: None,
                    priority: None,
                }),
            };
            parsed.push(e.map_err(|e| format!("set `{set}`, element {}: {e}", i + 1))?);
        }
        let ops = parsed.iter().map(|e| match op {
            ElementOp::Add => Op::Add(e.clone()),
            ElementOp::Delete => Op::Delete(e.key.clone()),
        });
        let before = self.w.sets[j].len();
        self.w.sets[j]
            .apply(ops)
            .map_err(|e| format!("set `{set}`: {e}; nothing was changed"))?;
        let grew = self.w.sets[j].len().saturating_sub(before);
        // What the reload engine compares the next configuration with: the
        // elements in force.
        let elements = Arc::make_mut(&mut self.cfg.sets[j].elements);
        let overlay = self.runtime.entry(set.to_string()).or_default();
        overlay.decl = Some(decl);
        match op {
            ElementOp::Add => {
                // Exact duplicates change nothing; when the set grew by
                // every element, none was one (the usual case: no scan of
                // the set's elements).
                let new: Vec<Element> = if grew == parsed.len() {
                    parsed
                } else {
                    let present: HashSet<&Element> = elements.iter().collect();
                    let mut seen = HashSet::new();
                    parsed
                        .into_iter()
                        .filter(|e| !present.contains(e) && seen.insert(e.clone()))
                        .collect()
                };
                for e in &new {
                    overlay.deleted.remove(&e.key);
                }
                elements.extend(new.iter().cloned());
                overlay.added.extend(new);
            }
            ElementOp::Delete => {
                let keys: HashSet<Box<[Range]>> = parsed.into_iter().map(|e| e.key).collect();
                elements.retain(|e| !keys.contains(&e.key));
                // An element added at run time goes; a key the files give
                // stays hidden across reloads.
                overlay.added.retain(|e| !keys.contains(&e.key));
                overlay.deleted.extend(keys);
            }
        }
        Ok(self.publish_sets())
    }

    /// Set `set`'s elements in force (the files' with the run-time
    /// changes).
    pub fn list(&self, set: &str) -> Result<Listing, String> {
        let j = self.set_index(set)?;
        let decl = &self.cfg.sets[j].decl;
        Ok(Listing {
            decl: decl.to_string(),
            map: decl.data().is_some(),
            elements: self.w.sets[j]
                .elements()
                .map(|e| decl.format_element(e))
                .collect(),
        })
    }

    /// `new` (a configuration just loaded) with the run-time changes on
    /// top of its sets' elements; an error when they no longer fit.
    pub(super) fn with_runtime(&self, mut new: Config) -> Result<Config, String> {
        for s in &mut new.sets {
            let Some(o) = self.runtime.get(&s.name) else {
                continue;
            };
            if o.added.is_empty() && o.deleted.is_empty() {
                continue;
            }
            if o.decl.as_ref() != Some(&s.decl) {
                return Err(format!(
                    "set `{}`: its type changed to `{}`, but it has run-time elements of `{}`; \
                     delete them first (forwarder element delete) or restart; nothing was changed",
                    s.name,
                    s.decl,
                    o.decl.as_ref().map(|d| d.to_string()).unwrap_or_default()
                ));
            }
            let elements = Arc::make_mut(&mut s.elements);
            elements.retain(|e| !o.deleted.contains(&e.key));
            let present: HashMap<&[Range], &Element> =
                elements.iter().map(|e| (&e.key[..], e)).collect();
            let mut extra = Vec::new();
            for a in &o.added {
                match present.get(&a.key[..]) {
                    Some(e) if *e == a => {}
                    Some(e) => {
                        return Err(format!(
                            "set `{}`: the files now give `{}`, whose key a run-time element has \
                             with other data (`{}`); nothing was changed",
                            s.name,
                            s.decl.format_element(e),
                            s.decl.format_element(a)
                        ))
                    }
                    None => extra.push(a.clone()),
                }
            }
            elements.extend(extra);
        }
        Ok(new)
    }
}
