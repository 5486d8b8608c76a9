//! Run-time element changes applied to the working copies and published
//! (see [`super::elements`] for their rules), their expiry, the sets'
//! listings, and the configuration with the changes on top that a reload
//! diffs against.

use super::elements::{ElementOp, Listing};
use super::reload::Control;
use config::Config;
use matcher::{Element, Op, Range};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

impl Control {
    pub(super) fn set_index(&self, set: &str) -> Result<usize, String> {
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
    /// generation. The set's snapshot is a quick one (the changes beside
    /// the last full commit's tables: time in the size of the change, not
    /// of the set); the control loop compacts it once requests pause.
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
                    timeout: None,
                    expires: None,
                }),
            };
            parsed.push(e.map_err(|e| format!("set `{set}`, element {}: {e}", i + 1))?);
        }
        // Deadlines: the element's own timeout, else the set's, from now.
        if op == ElementOp::Add && decl.has_timeouts() {
            let now = crate::clock::now_ms();
            for e in &mut parsed {
                e.timeout = e.timeout.or(decl.default_timeout());
                e.expires = e.timeout.map(|t| now + t);
            }
        }
        let working = &mut self.w.sets[j];
        // What each element does: an exact duplicate of one in force
        // changes nothing (nft's `add element`); the same element again
        // with a deadline gets the new deadline (a detector's repeated
        // report extends it): deleted and added in the same batch.
        let mut seen = HashSet::new();
        let mut ops = Vec::with_capacity(parsed.len());
        // Per element: whether it is new to the set, and whether it
        // renews one (which the overlay then holds with its old deadline).
        let mut fate = Vec::with_capacity(parsed.len());
        for e in &parsed {
            match op {
                ElementOp::Delete => ops.push(Op::Delete(e.key.clone())),
                ElementOp::Add => {
                    let first = seen.insert(&e.key);
                    let old = working.get(&e.key);
                    let renew = old.is_some_and(|old| {
                        old.data == e.data && old.priority == e.priority && old.expires.is_some()
                    });
                    if renew && first {
                        ops.push(Op::Delete(e.key.clone()));
                    }
                    ops.push(Op::Add(e.clone()));
                    fate.push((first && (renew || old.is_none()), first && renew));
                }
            }
        }
        working
            .apply_quick(ops)
            .map_err(|e| format!("set `{set}`: {e}; nothing was changed"))?;
        // What a reload puts back on top of the files.
        let overlay = self.runtime.entry(set.to_string()).or_default();
        overlay.decl = Some(decl);
        match op {
            ElementOp::Add => {
                let renewed: HashSet<&[Range]> = parsed
                    .iter()
                    .zip(&fate)
                    .filter(|(_, f)| f.1)
                    .map(|(e, _)| &e.key[..])
                    .collect();
                if !renewed.is_empty() {
                    overlay.added.retain(|a| !renewed.contains(&a.key[..]));
                }
                for (e, (new, _)) in parsed.iter().zip(fate) {
                    if new {
                        overlay.deleted.remove(&e.key);
                        overlay.added.push(e.clone());
                    }
                }
            }
            ElementOp::Delete => {
                let mut keys: HashSet<Box<[Range]>> = parsed.into_iter().map(|e| e.key).collect();
                // One added at run time is simply gone; a key the files
                // give stays hidden across reloads.
                overlay.added.retain(|e| !keys.remove(&e.key));
                overlay.deleted.extend(keys);
            }
        }
        Ok(self.publish_sets(true))
    }

    /// Removes the run-time elements whose deadline has passed, in one
    /// batch a set, and publishes the sets without them; returns how many
    /// went. The control loop calls it every tick; until then, workers
    /// treat a match past its deadline as none.
    pub fn expire(&mut self) -> usize {
        let now = crate::clock::now_ms();
        let mut gone = 0;
        for j in 0..self.w.sets.len() {
            if self.w.sets[j].snapshot().next_expiry() > now {
                continue;
            }
            let Some(o) = self.runtime.get_mut(&self.cfg.sets[j].name) else {
                continue;
            };
            let keys: Vec<Box<[Range]>> = o
                .added
                .iter()
                .filter(|e| e.expires.is_some_and(|d| d <= now))
                .map(|e| e.key.clone())
                .collect();
            if keys.is_empty() {
                continue;
            }
            o.added.retain(|e| e.expires.is_none_or(|d| d > now));
            gone += keys.len();
            // Each is in the working copy (the overlay and the set change
            // together), so the batch cannot fail; should it, the elements
            // stay in the set and keep being ignored past their deadline.
            if let Err(e) = self.w.sets[j].apply_quick(keys.into_iter().map(Op::Delete)) {
                crate::log::log(
                    crate::log::Level::Error,
                    &format!(
                        "set `{}`: expired elements not removed: {e}",
                        self.cfg.sets[j].name
                    ),
                );
            }
        }
        if gone > 0 {
            self.shared
                .status
                .expired
                .fetch_add(gone as u64, std::sync::atomic::Ordering::Relaxed);
            self.publish_sets(true);
        }
        gone
    }

    /// Set `set`'s elements in force (the files' with the run-time
    /// changes).
    pub fn list(&self, set: &str) -> Result<Listing, String> {
        let j = self.set_index(set)?;
        let decl = &self.cfg.sets[j].decl;
        let now = crate::clock::now_ms();
        // Past its deadline an element matches nothing, whether or not
        // the control loop has removed it yet.
        let live: Vec<&matcher::Element> = self.w.sets[j]
            .elements()
            .filter(|e| e.expires.is_none_or(|d| d > now))
            .collect();
        Ok(Listing {
            decl: decl.to_string(),
            map: decl.data().is_some(),
            elements: live
                .iter()
                .map(|e| decl.format_element_at(e, Some(now)))
                .collect(),
            keys: live.iter().map(|e| e.key.clone()).collect(),
            counter: self.cfg.sets[j].counter,
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
