//! Errors that say where: `file:line:col: message`, and the positions
//! in one file's text they are computed from.

use std::fmt;
use std::ops::Range;
use toml::Spanned;

/// An error with where it is: `file:line:col: message` (line and column
/// from 1; 0 when the error concerns the whole file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file's name as given.
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub col: usize,
    /// What is wrong, quoting the offending value.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.col, self.message
            )
        }
    }
}

impl std::error::Error for ConfigError {}

/// Positions in one text.
pub(crate) struct Located<'a> {
    pub(crate) file: &'a str,
    pub(crate) text: &'a str,
}

impl Located<'_> {
    pub(crate) fn at(&self, span: Range<usize>, message: impl Into<String>) -> ConfigError {
        let before = &self.text[..span.start.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
        ConfigError {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
        }
    }

    /// The line (from 1) of `v`.
    pub(crate) fn line<T>(&self, v: &Spanned<T>) -> u32 {
        self.of(v, "").line as u32
    }

    pub(crate) fn of<T>(&self, v: &Spanned<T>, message: impl Into<String>) -> ConfigError {
        self.at(v.span(), message)
    }

    /// `file:line:col` of `v`, for errors found later (by a driver, by
    /// the system).
    pub(crate) fn place<T>(&self, v: &Spanned<T>) -> String {
        let e = self.of(v, "");
        format!("{}:{}:{}", e.file, e.line, e.col)
    }
}
