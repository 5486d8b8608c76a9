//! Set files: the first line that is not blank or a comment declares the
//! type (`type ipv4_addr . inet_service : verdict`), every other line holds
//! one element. `#` starts a comment anywhere on a line (no element syntax
//! uses it); a trailing comma is ignored.

use crate::error::SetError;
use crate::field::Range;
use crate::syntax::{Element, SetDecl};
use std::fmt;

/// An error in a file, with where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileError {
    /// The file's name as given.
    pub file: String,
    /// The line, counted from 1.
    pub line: usize,
    /// What is wrong.
    pub error: SetError,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: error: {}", self.file, self.line, self.error)
    }
}

impl std::error::Error for FileError {}

/// The lines of a file that carry content: `(line number, text)` with
/// comments and surrounding blanks removed.
pub fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, l)| {
        let l = l.split('#').next().unwrap_or("").trim();
        (!l.is_empty()).then_some((i + 1, l))
    })
}

/// A parsed set file.
#[derive(Clone, Debug)]
pub struct SetFile {
    /// The declaration.
    pub decl: SetDecl,
    /// The elements with their line numbers.
    pub elements: Vec<(usize, Element)>,
}

impl SetFile {
    /// Parses a set file's text; `name` is used in errors.
    pub fn parse(name: &str, text: &str) -> Result<SetFile, FileError> {
        let err = |line, error| FileError {
            file: name.to_string(),
            line,
            error,
        };
        let mut lines = content_lines(text);
        let Some((n, first)) = lines.next() else {
            return Err(err(
                1,
                SetError::invalid("no `type ...` line: the file declares no set"),
            ));
        };
        if !first.starts_with("type") {
            return Err(err(
                n,
                SetError::invalid(format!(
                    "expected `type F1 . F2 ...`, found `{}`",
                    crate::error::excerpt(first)
                )),
            ));
        }
        let mut lines = lines.peekable();
        let decl = parse_decl(first, &mut lines).map_err(|e| err(n, SetError::invalid(e)))?;
        let mut elements = Vec::new();
        for (n, l) in lines {
            elements.push((n, decl.parse_element(l).map_err(|e| err(n, e))?));
        }
        Ok(SetFile { decl, elements })
    }

    /// Parses the elements of a set whose type is declared elsewhere (a
    /// configuration's `type`): the same files as [`SetFile::parse`]
    /// reads, their `type` line optional; when there is one, it must
    /// declare `decl`.
    pub fn parse_elements(
        name: &str,
        text: &str,
        decl: &SetDecl,
    ) -> Result<Vec<(usize, Element)>, FileError> {
        let err = |line, error| FileError {
            file: name.to_string(),
            line,
            error,
        };
        let mut lines = content_lines(text).peekable();
        if let Some(&(n, first)) = lines.peek() {
            if is_type_line(first) {
                lines.next();
                let declared =
                    parse_decl(first, &mut lines).map_err(|e| err(n, SetError::invalid(e)))?;
                if declared != *decl {
                    return Err(err(
                        n,
                        SetError::invalid(format!(
                            "the file declares `{declared}`, the set is `{decl}`"
                        )),
                    ));
                }
            }
        }
        lines
            .map(|(n, l)| decl.parse_element(l).map(|e| (n, e)).map_err(|e| err(n, e)))
            .collect()
    }
}

/// The declaration of a `type` line, with the `flags ...` line that may
/// follow it (`flags priority`; see [`crate::Policy`]), which it takes
/// from `lines`.
fn parse_decl<'a>(
    first: &str,
    lines: &mut std::iter::Peekable<impl Iterator<Item = (usize, &'a str)>>,
) -> Result<SetDecl, String> {
    match lines.peek() {
        Some(&(_, l))
            if l.strip_prefix("flags")
                .is_some_and(|r| r.starts_with(char::is_whitespace)) =>
        {
            lines.next();
            SetDecl::parse(&format!("{}; {l}", first.trim_end_matches(';')))
        }
        _ => SetDecl::parse(first),
    }
}

/// Whether a content line is a declaration (`type` and a space), not an
/// element.
fn is_type_line(l: &str) -> bool {
    l.strip_prefix("type")
        .is_some_and(|rest| rest.starts_with(char::is_whitespace))
}

/// Element keys with the line each came from.
pub type KeyLines = Vec<(usize, Box<[Range]>)>;

/// Parses a file of element keys to delete (map data, if given, is
/// ignored, as `nft delete element` ignores it).
pub fn parse_delete_file(decl: &SetDecl, name: &str, text: &str) -> Result<KeyLines, FileError> {
    content_lines(text)
        .map(|(n, l)| {
            decl.parse_element_key(l)
                .map(|k| (n, k))
                .map_err(|error| FileError {
                    file: name.to_string(),
                    line: n,
                    error,
                })
        })
        .collect()
}

/// Parses a file of keys, one per line, into key bytes.
pub fn parse_key_file(
    decl: &SetDecl,
    name: &str,
    text: &str,
) -> Result<Vec<(usize, Vec<u8>)>, FileError> {
    content_lines(text)
        .map(|(n, l)| {
            decl.parse_key(l).map(|k| (n, k)).map_err(|e| FileError {
                file: name.to_string(),
                line: n,
                error: SetError::invalid(e),
            })
        })
        .collect()
}
