//! Errors of updates and of the text forms.

use std::fmt;

/// What went wrong with an update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The element exists already (`create`), or its key exists with other data.
    Exists,
    /// The element shares keys with another element.
    Overlap,
    /// The element is malformed.
    Invalid,
    /// No such element (delete).
    NotFound,
}

impl ErrorKind {
    /// The word used in messages: `exists`, `overlap`, `invalid`, `not found`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Exists => "exists",
            ErrorKind::Overlap => "overlap",
            ErrorKind::Invalid => "invalid",
            ErrorKind::NotFound => "not found",
        }
    }
}

/// An update's error: its kind and a message naming the elements involved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What happened, naming the elements in canonical form.
    pub message: String,
}

impl SetError {
    pub(crate) fn new(kind: ErrorKind, message: String) -> SetError {
        SetError { kind, message }
    }

    /// An `invalid` error.
    pub fn invalid(message: impl Into<String>) -> SetError {
        SetError::new(ErrorKind::Invalid, message.into())
    }
}

impl fmt::Display for SetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl std::error::Error for SetError {}

/// Bytes of a quoted value shown in full; a longer one is cut.
const EXCERPT: usize = 64;

/// `s` as an error message quotes it: whole when short, else its first
/// bytes, `...` and its length, so that a 5 MB line in a file is not
/// echoed back whole.
pub fn excerpt(s: &str) -> std::borrow::Cow<'_, str> {
    if s.len() <= EXCERPT {
        return s.into();
    }
    let mut end = EXCERPT - 16;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len()).into()
}
