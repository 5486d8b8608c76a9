//! `[[set]]`: declarations, the packet fields feeding them, actions,
//! inline elements and set files, checked for duplicates and overlaps.

use super::names::index;
use crate::error::{ConfigError, Located};
use crate::files::{Files, Gave, Got};
use crate::schema;
use crate::types::*;
use matcher::file::SetFile;
use matcher::{DataType, Element, InsertMode, SetDecl};
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;

/// The sets, each checked whatever the others gave: every set's first
/// error.
pub(super) fn sets(
    loc: &Located,
    raw: &[schema::Set],
    dir: &Path,
    files: &mut Files,
) -> Result<Vec<SetConfig>, Vec<ConfigError>> {
    index(loc, raw, |s| &s.name, "set").map_err(|e| vec![e])?;
    if let Some(s) = raw.get(MAX_SETS) {
        return Err(vec![loc.of(
            &s.name,
            format!("set `{}`: at most {MAX_SETS} rule sets", s.name.get_ref()),
        )]);
    }
    let mut sets: Vec<SetConfig> = Vec::new();
    let mut errs = Vec::new();
    // The sets run in the order written, the prerouting ones before the
    // route decision and the forward ones after it: a prerouting set
    // after a forward one would read as running later than it does.
    let mut forward_set: Option<&str> = None;
    for s in raw {
        match validate_set(loc, s, dir, files) {
            Ok(c) => {
                match (c.hook, forward_set) {
                    (Hook::Forward, None) => forward_set = Some(s.name.get_ref()),
                    (Hook::Prerouting, Some(f)) => errs.push(loc.of(
                        s.hook.as_ref().unwrap_or(&s.name),
                        format!(
                            "set `{}` (hook prerouting) comes after set `{f}` (hook \
                             forward): the sets run in the order written, the \
                             prerouting ones before the route decision, so they come \
                             first",
                            c.name
                        ),
                    )),
                    _ => {}
                }
                sets.push(c)
            }
            Err(e) => errs.push(e),
        }
    }
    if errs.is_empty() {
        Ok(sets)
    } else {
        Err(errs)
    }
}

/// Changes to a set file past which the full check is the cheaper one.
const FEW_CHANGES: usize = 64;

/// Whether `new`, which differs from the checked `prev` in at most
/// [`FEW_CHANGES`] elements, is a valid set too: every element added is
/// valid, takes no timeout, has a key no other element has and, in a
/// disjoint set, overlaps none of them. `false` also when the changes
/// are many: the caller then checks `new` in full.
pub(super) fn few_changes_fit(prev: &[Element], new: &[Element], decl: &SetDecl) -> bool {
    let (removed, added) = crate::diff_elements(prev, new);
    // The diff sees an element twice as once: a count that does not add
    // up is a duplicate (of an element `prev` has).
    if removed.len() + added.len() > FEW_CHANGES
        || new.len() + removed.len() != prev.len() + added.len()
    {
        return false;
    }
    let mut alone = matcher::Set::new(decl.clone());
    for a in &added {
        if a.timeout.is_some() || alone.insert((*a).clone(), InsertMode::Create).is_err() {
            return false;
        }
    }
    let disjoint = decl.policy() == matcher::Policy::Disjoint;
    new.iter().all(|e| {
        added
            .iter()
            .all(|a| std::ptr::eq(*a, e) || (a.key != e.key && !(disjoint && a.overlaps(e))))
    })
}

/// Why a configuration's elements take no `timeout`.
const NO_FILE_TIMEOUTS: &str = "an element of the configuration or a set file has no `timeout`: \
     they are the durable elements (each reload and restart would start its clock again); \
     elements that expire are added at run time (`forwarder element add`), where the set's \
     `timeout` or their own applies";

pub(super) fn validate_set(
    loc: &Located,
    s: &schema::Set,
    dir: &Path,
    files: &mut Files,
) -> Result<SetConfig, ConfigError> {
    let mut decl = SetDecl::parse(s.type_.get_ref()).map_err(|e| loc.of(&s.type_, e))?;
    if let Some(p) = &s.policy {
        let policy = matcher::Policy::parse(p.get_ref()).map_err(|e| loc.of(p, e))?;
        if policy == matcher::Policy::FirstMatch && decl.has_timeouts() {
            return Err(loc.of(
                p,
                format!(
                    "`policy = \"{}\"` with `flags timeout` (`{decl}`): an expired element \
                     would still hide the ones ranked after it",
                    p.get_ref()
                ),
            ));
        }
        if decl.policy() != matcher::Policy::Disjoint && decl.policy() != policy {
            return Err(loc.of(
                p,
                format!(
                    "`policy = \"{}\"` contradicts the type's flags (`{decl}`)",
                    p.get_ref()
                ),
            ));
        }
        decl = decl.with_policy(policy);
    }
    let mut sources = Vec::new();
    for part in s.match_.get_ref().split(" . ") {
        sources.push(Source::parse(part).map_err(|e| loc.of(&s.match_, e))?);
    }
    if sources.len() != decl.fields().len() {
        return Err(loc.of(
            &s.match_,
            format!(
                "`{}` names {} packet fields, the set's type has {}",
                s.match_.get_ref(),
                sources.len(),
                decl.fields().len()
            ),
        ));
    }
    for (src, t) in sources.iter().zip(decl.fields()) {
        if src.field_type() != *t {
            return Err(loc.of(
                &s.match_,
                format!(
                    "`{}`: a {} field is fed a {}",
                    s.match_.get_ref(),
                    t,
                    src.field_type()
                ),
            ));
        }
    }
    let hook = match s.hook.as_ref().map(|h| (h, h.get_ref().as_str())) {
        None | Some((_, "prerouting")) => Hook::Prerouting,
        Some((_, "forward")) => Hook::Forward,
        Some((h, other)) => {
            return Err(loc.of(
                h,
                format!("unknown hook `{other}` (prerouting, the default, or forward)"),
            ))
        }
    };
    if hook == Hook::Prerouting && sources.contains(&Source::Oifname) {
        return Err(loc.of(
            &s.match_,
            format!(
                "`{}`: `meta oifname` is known only once the packet is routed; a set \
                 that reads it runs after the route decision: `hook = \"forward\"`",
                s.match_.get_ref()
            ),
        ));
    }
    let is_verdict_map = decl.data() == Some(DataType::Verdict);
    let action = match (&s.action, is_verdict_map) {
        (None, true) => Action::Verdict,
        (None, false) => {
            return Err(loc.of(
                &s.name,
                format!("set `{}` needs an action: drop or accept", s.name.get_ref()),
            ))
        }
        (Some(a), _) => match (a.get_ref().as_str(), is_verdict_map) {
            ("drop", false) => Action::Drop,
            ("accept", false) => Action::Accept,
            ("reject", false) => Action::Reject,
            ("verdict", true) => Action::Verdict,
            ("verdict", false) => {
                return Err(loc.of(a, "`verdict` needs a map with `: verdict` data"))
            }
            (other, true) => {
                return Err(loc.of(
                    a,
                    format!("a verdict map's action is `verdict`, not `{other}`"),
                ))
            }
            (other, false) => {
                return Err(loc.of(
                    a,
                    format!("unknown action `{other}` (drop, accept, reject, verdict)"),
                ))
            }
        },
    };
    // Elements: inline ones located at their string, file ones at their
    // line in that file; overlaps and duplicates checked by the set itself.
    let mut inline = Vec::new();
    let inline_lines: Vec<u32> = s.elements.iter().map(|e| loc.line(e)).collect();
    for e in &s.elements {
        let el = decl
            .parse_element(e.get_ref())
            .map_err(|err| loc.of(e, err.to_string()))?;
        if el.timeout.is_some() {
            return Err(loc.of(e, NO_FILE_TIMEOUTS));
        }
        inline.push(el);
    }
    let mut set = matcher::Set::new(decl.clone());
    for (el, e) in inline.iter().zip(&s.elements) {
        set.insert(el.clone(), InsertMode::Create)
            .map_err(|err| loc.of(e, err.to_string()))?;
    }
    let (file, (elements, file_lines)) = match &s.file {
        None => (None, (Arc::new(inline), Arc::default())),
        Some(f) => {
            let path = dir.join(f.get_ref());
            let got = set_file(loc, f, &path, &decl, inline, set, files)?;
            (Some(path), got)
        }
    };
    Ok(SetConfig {
        name: s.name.get_ref().clone(),
        decl,
        sources,
        action,
        elements,
        file,
        lines: ElementLines {
            inline: inline_lines,
            file: file_lines,
        },
        counter: s.counter,
        hook,
    })
}

/// A set's elements (inline ones first) and the lines of its file's.
type Elements = (Arc<Vec<Element>>, Arc<Vec<u32>>);

/// A set's elements with those of its file `f` at `path`: `inline` and
/// the file's, checked together in `set` (which holds `inline`). What an
/// unchanged file gave with the same type and inline elements is reused
/// without a parse or a check.
pub(super) fn set_file(
    loc: &Located,
    f: &Spanned<String>,
    path: &Path,
    decl: &SetDecl,
    inline: Vec<Element>,
    mut set: matcher::Set,
    files: &mut Files,
) -> Result<Elements, ConfigError> {
    let cannot = |e: std::io::Error| loc.of(f, format!("cannot read `{}`: {e}", f.get_ref()));
    let same = |g: &Gave| match g {
        Gave::Set {
            decl: d,
            inline: i,
            elements,
            lines,
        } if d == decl && *i == inline => Some((elements.clone(), lines.clone())),
        _ => None,
    };
    let text = match files.get(path, same).map_err(cannot)? {
        Got::Reused(elements) => return Ok(elements),
        Got::Text(t) => t,
    };
    let name = path.display().to_string();
    // The same files `forwarder lookup --set` reads: a `type` line is
    // optional, and must be the set's when given.
    let parsed = SetFile::parse_elements(&name, &text, decl).map_err(|e| ConfigError {
        file: e.file.clone(),
        line: e.line,
        col: 1,
        message: e.error.to_string(),
    })?;
    // A file edited in a few places: only the elements it adds are
    // checked, against the file's others; anything amiss (or many
    // changes) goes through the full check below, which says where.
    let prev = match files.previous(path) {
        Some(Gave::Set {
            decl: d,
            inline: i,
            elements,
            ..
        }) if d == decl && *i == inline => Some(elements.clone()),
        _ => None,
    };
    let lines: Vec<u32> = parsed.iter().map(|(l, _)| *l as u32).collect();
    if let Some(prev) = prev {
        let mut new = inline.clone();
        new.extend(parsed.iter().map(|(_, e)| e.clone()));
        if few_changes_fit(&prev, &new, decl) {
            return Ok(remember(files, path, decl, inline, (new, lines)));
        }
    }
    let mut elements = inline.clone();
    for (line, el) in parsed {
        if el.timeout.is_some() {
            return Err(ConfigError {
                file: name.clone(),
                line,
                col: 1,
                message: format!("`{}`: {NO_FILE_TIMEOUTS}", decl.format_element(&el)),
            });
        }
        set.insert(el.clone(), InsertMode::Create)
            .map_err(|err| ConfigError {
                file: name.clone(),
                line,
                col: 1,
                message: err.to_string(),
            })?;
        elements.push(el);
    }
    Ok(remember(files, path, decl, inline, (elements, lines)))
}

/// Remembers what set file `path` gave (for this type and these inline
/// elements), and gives it.
fn remember(
    files: &mut Files,
    path: &Path,
    decl: &SetDecl,
    inline: Vec<Element>,
    (elements, lines): (Vec<Element>, Vec<u32>),
) -> Elements {
    let elements = Arc::new(elements);
    let lines = Arc::new(lines);
    files.gave(
        path,
        Gave::Set {
            decl: decl.clone(),
            inline,
            elements: elements.clone(),
            lines: lines.clone(),
        },
    );
    (elements, lines)
}
