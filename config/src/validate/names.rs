//! Names of a section's items, refusing duplicates.

use crate::error::{ConfigError, Located};
use std::collections::HashMap;
use toml::Spanned;

/// Names to indices, refusing duplicates.
pub(super) fn index<'a, T>(
    loc: &Located,
    items: &'a [T],
    name: impl Fn(&'a T) -> &'a Spanned<String>,
    what: &str,
) -> Result<HashMap<&'a str, usize>, ConfigError> {
    let mut m = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        let n = name(it);
        if m.insert(n.get_ref().as_str(), i).is_some() {
            return Err(loc.of(n, format!("duplicate {what} name `{}`", n.get_ref())));
        }
    }
    Ok(m)
}
