//! The nft text forms: set declarations (`type ipv4_addr . inet_service :
//! verdict`), elements (`192.0.2.0/24 . 1000-2000 : drop`) and keys
//! (`192.0.2.7 . 1500`).
//!
//! Fields are separated by a `.` standing alone between spaces (IPv4
//! addresses have dots of their own); map data follows a `:` standing alone
//! (MAC and IPv6 addresses have colons of their own).

use crate::error::excerpt;
use crate::error::SetError;
use crate::field::{FieldType, Range};
use std::fmt;

/// Most fields a concatenation may have (the kernel's `NFT_PIPAPO_MAX_FIELDS`).
pub const MAX_FIELDS: usize = 16;

/// What a map associates with each element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `: verdict`: accept, drop, continue, return, jump NAME, goto NAME.
    Verdict,
    /// `: TYPE`: a value of one of the field types.
    Value(FieldType),
}

/// An nft verdict.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// `accept`
    Accept,
    /// `drop`
    Drop,
    /// `continue`
    Continue,
    /// `return`
    Return,
    /// `jump NAME`
    Jump(String),
    /// `goto NAME`
    Goto(String),
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Accept => f.write_str("accept"),
            Verdict::Drop => f.write_str("drop"),
            Verdict::Continue => f.write_str("continue"),
            Verdict::Return => f.write_str("return"),
            Verdict::Jump(n) => write!(f, "jump {n}"),
            Verdict::Goto(n) => write!(f, "goto {n}"),
        }
    }
}

/// The data a map element carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Data {
    /// A verdict (`: verdict` maps).
    Verdict(Verdict),
    /// A value of the map's data type.
    Value(FieldType, u128),
}

impl fmt::Display for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Data::Verdict(v) => write!(f, "{v}"),
            Data::Value(t, v) => f.write_str(&t.format_value(*v)),
        }
    }
}

/// How a set treats elements that share keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// nft's: elements never overlap, an insert that would is refused.
    #[default]
    Disjoint,
    /// `flags priority`: elements may overlap, and a key matches the first
    /// of them in rank order: lowest `priority N` (0 when not given), then
    /// the order they were added in (a file's listing order). This is the
    /// ACL semantics of DPDK's rte_acl, VPP and hardware ACLs.
    FirstMatch,
}

impl Policy {
    /// The TOML spelling (`policy = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            Policy::Disjoint => "disjoint",
            Policy::FirstMatch => "first-match",
        }
    }

    /// Parses the TOML spelling.
    pub fn parse(s: &str) -> Result<Policy, String> {
        match s {
            "disjoint" => Ok(Policy::Disjoint),
            "first-match" => Ok(Policy::FirstMatch),
            _ => Err(format!(
                "unknown set policy `{}` (disjoint, first-match)",
                excerpt(s)
            )),
        }
    }
}

/// A set's declaration: its field types, for maps the data type, and how
/// it treats overlapping elements.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SetDecl {
    fields: Vec<FieldType>,
    data: Option<DataType>,
    policy: Policy,
    /// `flags timeout`: elements may carry a `timeout`, and stop matching
    /// once it has passed.
    timeouts: bool,
    /// `timeout T`: the timeout of elements added without one, in
    /// milliseconds.
    timeout: Option<u64>,
}

impl SetDecl {
    /// A declaration of 1 to 16 fields.
    pub fn new(fields: Vec<FieldType>, data: Option<DataType>) -> Result<SetDecl, String> {
        if fields.is_empty() || fields.len() > MAX_FIELDS {
            return Err(format!(
                "a set has 1 to {MAX_FIELDS} fields, not {}",
                fields.len()
            ));
        }
        Ok(SetDecl {
            fields,
            data,
            policy: Policy::Disjoint,
            timeouts: false,
            timeout: None,
        })
    }

    /// The same declaration with another policy.
    pub fn with_policy(mut self, policy: Policy) -> SetDecl {
        self.policy = policy;
        self
    }

    /// Parses `type F1 . F2 ... [: DATATYPE] [; flags FLAG[, FLAG]] [;
    /// timeout T]` (the leading `type` is optional). Flags: `priority` (see
    /// [`Policy::FirstMatch`]), `timeout` (elements may expire; a set
    /// `timeout` implies it) and `interval` (every set here is one;
    /// accepted as nft writes it). Durations as nft writes them: `30s`,
    /// `10m`, `1h30m`, `2d`, `500ms`.
    pub fn parse(s: &str) -> Result<SetDecl, String> {
        let s = s.trim().trim_end_matches(';').trim();
        let mut clauses = s.split(';');
        let t = clauses.next().unwrap_or("").trim();
        let mut policy = Policy::Disjoint;
        let (mut timeouts, mut timeout) = (false, None);
        for c in clauses.map(str::trim) {
            if let Some(d) = c
                .strip_prefix("timeout")
                .filter(|r| r.starts_with(char::is_whitespace))
            {
                timeout = Some(parse_duration(d.trim())?);
                timeouts = true;
            } else {
                let (p, t) = parse_flags(c)?;
                policy = if p == Policy::FirstMatch { p } else { policy };
                timeouts |= t;
            }
        }
        if timeouts && policy == Policy::FirstMatch {
            return Err(
                "`flags timeout` with `flags priority`: an expired element would still hide \
                 the ones ranked after it; use a set without `priority`"
                    .into(),
            );
        }
        let mut d = SetDecl::parse_type(t)?.with_policy(policy);
        d.timeouts = timeouts;
        d.timeout = timeout;
        Ok(d)
    }

    /// Whether elements may expire (`flags timeout`).
    pub fn has_timeouts(&self) -> bool {
        self.timeouts
    }

    /// The timeout of elements added without one (`timeout T`), in
    /// milliseconds.
    pub fn default_timeout(&self) -> Option<u64> {
        self.timeout
    }

    fn parse_type(s: &str) -> Result<SetDecl, String> {
        let body = s
            .strip_prefix("type")
            .filter(|b| b.starts_with(char::is_whitespace));
        let body = body.unwrap_or(s).trim();
        let (key, data) = match split_data(body) {
            Some((k, d)) => (k, Some(d)),
            None => (body, None),
        };
        let mut fields = Vec::new();
        for name in split_fields(key) {
            let name = name.trim();
            fields.push(
                FieldType::from_name(name)
                    .ok_or_else(|| format!("unknown field type `{}`", excerpt(name)))?,
            );
        }
        let data = match data.map(str::trim) {
            None => None,
            Some("verdict") => Some(DataType::Verdict),
            Some(d) => Some(DataType::Value(
                FieldType::from_name(d)
                    .ok_or_else(|| format!("unknown data type `{}`", excerpt(d)))?,
            )),
        };
        SetDecl::new(fields, data)
    }

    /// The field types, in order.
    pub fn fields(&self) -> &[FieldType] {
        &self.fields
    }

    /// The map's data type, `None` for a plain set.
    pub fn data(&self) -> Option<DataType> {
        self.data
    }

    /// How the set treats overlapping elements.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Length in bytes of a lookup key: the fields' bytes back to back.
    pub fn key_len(&self) -> usize {
        self.fields.iter().map(|f| f.bytes()).sum()
    }

    /// Byte offset of each field within a key.
    pub fn key_offsets(&self) -> Vec<usize> {
        let mut off = 0;
        self.fields
            .iter()
            .map(|f| {
                let o = off;
                off += f.bytes();
                o
            })
            .collect()
    }

    /// Parses an element: one value, prefix or range per field, then
    /// ` : DATA` for maps. A trailing comma is ignored.
    pub fn parse_element(&self, s: &str) -> Result<Element, SetError> {
        self.parse_element_text(s).map_err(SetError::invalid)
    }

    /// Parses an element's key only; map data, if present, is checked
    /// but dropped (what `delete element` needs).
    pub fn parse_element_key(&self, s: &str) -> Result<Box<[Range]>, SetError> {
        let text = s.trim();
        let text = text.strip_suffix(',').unwrap_or(text).trim_end();
        let key = match split_data(text) {
            Some((k, _)) => k,
            None => text,
        };
        let bare = SetDecl {
            fields: self.fields.clone(),
            data: None,
            ..self.clone()
        };
        bare.parse_element_text(key)
            .map(|e| e.key)
            .map_err(SetError::invalid)
    }

    fn parse_element_text(&self, s: &str) -> Result<Element, String> {
        let text = s.trim();
        let text = text.strip_suffix(',').unwrap_or(text).trim_end();
        if text.is_empty() {
            return Err("empty element".into());
        }
        let quoted = excerpt(text);
        let (key, data) = match split_data(text) {
            Some((k, d)) => (k, Some(d.trim())),
            None => (text, None),
        };
        let (key, timeout) = self.split_timeout(key, &quoted)?;
        let (key, priority) = self.split_priority(key, &quoted)?;
        let parts: Vec<&str> = split_fields(key).collect();
        if parts.len() != self.fields.len() {
            return Err(format!(
                "`{quoted}` has {} field{}, the set's type has {}",
                parts.len(),
                if parts.len() == 1 { "" } else { "s" },
                self.fields.len()
            ));
        }
        let mut ranges = Vec::with_capacity(parts.len());
        for (t, p) in self.fields.iter().zip(parts) {
            let p: String = p.split_whitespace().collect();
            ranges.push(t.parse_range(&p).map_err(|e| format!("`{quoted}`: {e}"))?);
        }
        let data = match (self.data, data) {
            (None, None) => None,
            (None, Some(d)) => {
                return Err(format!(
                    "`{quoted}`: data `{}` given, but this is a set, not a map",
                    excerpt(d)
                ))
            }
            (Some(_), None) => return Err(format!("`{quoted}`: a map element needs ` : DATA`")),
            (Some(dt), Some(d)) => Some(parse_data(dt, d)?),
        };
        Ok(Element {
            key: ranges.into_boxed_slice(),
            data,
            priority,
            timeout,
            expires: None,
        })
    }

    /// Splits ` timeout T` off the end of an element's key text (nft's
    /// element option; `expires`, which listings show, is not taken).
    fn split_timeout<'a>(
        &self,
        key: &'a str,
        quoted: &str,
    ) -> Result<(&'a str, Option<u64>), String> {
        let t = key.trim_end();
        if let Some((head, _)) = t.rsplit_once(char::is_whitespace) {
            let head = head.trim_end();
            if head.ends_with("expires") {
                return Err(format!(
                    "`{quoted}`: `expires` is what a listing shows; give `timeout`"
                ));
            }
        }
        let Some((head, d)) = t.rsplit_once(char::is_whitespace) else {
            return Ok((key, None));
        };
        let Some(head) = head.trim_end().strip_suffix("timeout") else {
            return Ok((key, None));
        };
        if !head.is_empty() && !head.ends_with(char::is_whitespace) {
            return Ok((key, None));
        }
        if !self.timeouts {
            return Err(format!(
                "`{quoted}`: `timeout` needs a set with `flags timeout`"
            ));
        }
        let d = parse_duration(d).map_err(|e| format!("`{quoted}`: {e}"))?;
        Ok((head, Some(d)))
    }

    /// Splits ` priority N` off the end of an element's key text (before
    /// its ` : DATA`, where nft puts an element's options).
    fn split_priority<'a>(
        &self,
        key: &'a str,
        quoted: &str,
    ) -> Result<(&'a str, Option<u32>), String> {
        let t = key.trim_end();
        let Some((head, n)) = t.rsplit_once(char::is_whitespace) else {
            return Ok((key, None));
        };
        let Some(head) = head.trim_end().strip_suffix("priority") else {
            return Ok((key, None));
        };
        if !head.is_empty() && !head.ends_with(char::is_whitespace) {
            return Ok((key, None));
        }
        if self.policy != Policy::FirstMatch {
            return Err(format!(
                "`{quoted}`: `priority` needs a set with `flags priority`"
            ));
        }
        let n = n.parse::<u32>().map_err(|_| {
            format!(
                "`{quoted}`: priority `{}` is not a number 0 to 4294967295",
                excerpt(n)
            )
        })?;
        Ok((head, Some(n)))
    }

    /// Parses a lookup key: one single value per field (`192.0.2.7 . 1500`),
    /// into key bytes.
    pub fn parse_key(&self, s: &str) -> Result<Vec<u8>, String> {
        let text = s.trim();
        let parts: Vec<&str> = split_fields(text).collect();
        if parts.len() != self.fields.len() {
            return Err(format!(
                "key `{}` has {} field(s), the set's type has {}",
                excerpt(text),
                parts.len(),
                self.fields.len()
            ));
        }
        let mut key = vec![0u8; self.key_len()];
        let mut off = 0;
        for (t, p) in self.fields.iter().zip(parts) {
            let v = t.parse_value(p.trim())?;
            t.write_key(v, &mut key[off..]);
            off += t.bytes();
        }
        Ok(key)
    }

    /// Builds key bytes from one value per field.
    pub fn key_from_values(&self, values: &[u128]) -> Vec<u8> {
        let mut key = vec![0u8; self.key_len()];
        let mut off = 0;
        for (t, &v) in self.fields.iter().zip(values) {
            t.write_key(v, &mut key[off..]);
            off += t.bytes();
        }
        key
    }

    /// Reads the fields' values out of key bytes.
    pub fn values_of_key(&self, key: &[u8]) -> Vec<u128> {
        let mut off = 0;
        self.fields
            .iter()
            .map(|t| {
                let v = t.read_key(&key[off..]);
                off += t.bytes();
                v
            })
            .collect()
    }

    /// Prints an element canonically, as `nft -n list set` does.
    pub fn format_element(&self, e: &Element) -> String {
        self.format_element_at(e, None)
    }

    /// [`SetDecl::format_element`], with ` expires T` (the time left,
    /// as nft lists it) for an element with a deadline when `now` (on the
    /// deadline's clock) is given.
    pub fn format_element_at(&self, e: &Element, now: Option<u64>) -> String {
        let mut s = String::new();
        for (i, (t, r)) in self.fields.iter().zip(e.key.iter()).enumerate() {
            if i > 0 {
                s.push_str(" . ");
            }
            s.push_str(&t.format_range(*r));
        }
        if let Some(p) = e.priority {
            s.push_str(&format!(" priority {p}"));
        }
        if let Some(t) = e.timeout {
            s.push_str(&format!(" timeout {}", format_duration(t)));
        }
        if let (Some(d), Some(now)) = (e.expires, now) {
            s.push_str(&format!(
                " expires {}",
                format_duration(d.saturating_sub(now))
            ));
        }
        if let Some(d) = &e.data {
            s.push_str(" : ");
            s.push_str(&d.to_string());
        }
        s
    }

    /// Prints a key the way it would be written in a key file.
    pub fn format_key(&self, key: &[u8]) -> String {
        let vals = self.values_of_key(key);
        let parts: Vec<String> = self
            .fields
            .iter()
            .zip(vals)
            .map(|(t, v)| t.format_value(v))
            .collect();
        parts.join(" . ")
    }
}

impl fmt::Display for SetDecl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("type ")?;
        for (i, t) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(" . ")?;
            }
            f.write_str(t.name())?;
        }
        match self.data {
            None => Ok(()),
            Some(DataType::Verdict) => f.write_str(" : verdict"),
            Some(DataType::Value(t)) => write!(f, " : {}", t.name()),
        }?;
        match self.policy {
            Policy::Disjoint => Ok(()),
            Policy::FirstMatch => f.write_str("; flags priority"),
        }?;
        if self.timeouts {
            f.write_str("; flags timeout")?;
        }
        match self.timeout {
            Some(t) => write!(f, "; timeout {}", format_duration(t)),
            None => Ok(()),
        }
    }
}

/// The policy and whether elements may expire, as `flags A, B` (the
/// clause after a `;`) asks.
fn parse_flags(f: &str) -> Result<(Policy, bool), String> {
    let Some(list) = f
        .strip_prefix("flags")
        .filter(|r| r.starts_with(char::is_whitespace))
    else {
        return Err(format!(
            "expected `flags ...` or `timeout ...` after `;`, found `{}`",
            excerpt(f)
        ));
    };
    let mut policy = Policy::Disjoint;
    let mut timeouts = false;
    for flag in list.split(',').map(str::trim) {
        match flag {
            "priority" => policy = Policy::FirstMatch,
            "timeout" => timeouts = true,
            "interval" => {}
            _ => {
                return Err(format!(
                    "unknown set flag `{}` (interval, priority, timeout)",
                    excerpt(flag)
                ))
            }
        }
    }
    Ok((policy, timeouts))
}

/// Milliseconds a duration as nft writes it gives: one or more of a
/// number and a unit (`d`, `h`, `m`, `s`, `ms`), largest first:
/// `1h30m`, `10s`, `250ms`. At least 1 ms, at most 10 years.
pub fn parse_duration(s: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "`{}` is not a duration (e.g. 30s, 10m, 1h30m, 2d, 500ms)",
            excerpt(s)
        )
    };
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: u64 = 0;
    let mut last_unit = u64::MAX;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits > 12 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (1, 2)
        } else {
            match rest.chars().next() {
                Some('s') => (1_000, 1),
                Some('m') => (60_000, 1),
                Some('h') => (3_600_000, 1),
                Some('d') => (86_400_000, 1),
                _ => return Err(bad()),
            }
        };
        if unit >= last_unit {
            return Err(bad());
        }
        last_unit = unit;
        rest = &rest[len..];
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
    }
    if total == 0 || total > 10 * 365 * 86_400_000 {
        return Err(format!("`{}`: a timeout is 1 ms to 10 years", excerpt(s)));
    }
    Ok(total)
}

/// A duration in milliseconds as nft prints it: `1h30m`, `10s`, `2s500ms`.
pub fn format_duration(ms: u64) -> String {
    if ms == 0 {
        return "0ms".into();
    }
    let mut s = String::new();
    let mut left = ms;
    for (unit, name) in [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
        (1, "ms"),
    ] {
        if left >= unit {
            s.push_str(&format!("{}{name}", left / unit));
            left %= unit;
        }
    }
    s
}

/// One element of a set: a range per field and, for maps, its data.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Element {
    /// One inclusive range per field.
    pub key: Box<[Range]>,
    /// The map data, `None` in a plain set.
    pub data: Option<Data>,
    /// `priority N` (first-match sets only): lower ranks first; `None`
    /// ranks as 0.
    pub priority: Option<u32>,
    /// `timeout T` (sets with `flags timeout` only), in milliseconds: how
    /// long the element lives once added.
    pub timeout: Option<u64>,
    /// When it stops matching, in milliseconds on the caller's clock (the
    /// forwarder's: see its `clock` module); set by whoever adds it, from
    /// its `timeout` or the set's. Not part of the element's text.
    pub expires: Option<u64>,
}

impl Element {
    /// An element of a plain set: these ranges, no data, no priority, no
    /// timeout.
    pub fn of(key: impl Into<Box<[Range]>>) -> Element {
        Element {
            key: key.into(),
            data: None,
            priority: None,
            timeout: None,
            expires: None,
        }
    }

    /// Whether the element matches a key given as one value per field.
    pub fn matches(&self, values: &[u128]) -> bool {
        self.key.iter().zip(values).all(|(r, &v)| r.contains(v))
    }

    /// Whether two elements share at least one key.
    pub fn overlaps(&self, o: &Element) -> bool {
        self.key
            .iter()
            .zip(o.key.iter())
            .all(|(a, b)| a.intersects(b))
    }
}

fn parse_data(dt: DataType, d: &str) -> Result<Data, String> {
    match dt {
        DataType::Verdict => {
            let mut w = d.split_whitespace();
            let verb = w.next().unwrap_or("");
            let arg = w.next();
            let v = match (verb, arg) {
                ("accept", None) => Verdict::Accept,
                ("drop", None) => Verdict::Drop,
                ("continue", None) => Verdict::Continue,
                ("return", None) => Verdict::Return,
                ("jump", Some(n)) if valid_chain(n) => Verdict::Jump(n.to_string()),
                ("goto", Some(n)) if valid_chain(n) => Verdict::Goto(n.to_string()),
                _ => return Err(format!("`{}` is not a verdict (accept, drop, continue, return, jump CHAIN, goto CHAIN)", excerpt(d))),
            };
            if w.next().is_some() {
                return Err(format!("`{}` is not a verdict: trailing words", excerpt(d)));
            }
            Ok(Data::Verdict(v))
        }
        DataType::Value(t) => Ok(Data::Value(t, t.parse_value(d)?)),
    }
}

fn valid_chain(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 256
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

/// Splits the key part at ` . ` separators (a dot that stands alone).
fn split_fields(s: &str) -> impl Iterator<Item = &str> {
    SplitAlone {
        rest: Some(s),
        sep: '.',
    }
}

/// Splits off map data at the first ` : ` that stands alone.
fn split_data(s: &str) -> Option<(&str, &str)> {
    let mut it = SplitAlone {
        rest: Some(s),
        sep: ':',
    };
    let first = it.next()?;
    let rest = it.rest?;
    Some((first, rest))
}

/// Iterates over the parts of a string separated by `sep` characters that
/// have whitespace (or the string's end) on both sides.
struct SplitAlone<'a> {
    rest: Option<&'a str>,
    sep: char,
}

impl<'a> Iterator for SplitAlone<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        let s = self.rest?;
        let b = s.as_bytes();
        for (i, c) in s.char_indices() {
            if c != self.sep {
                continue;
            }
            let before = i == 0 || b[i - 1].is_ascii_whitespace();
            let after = i + 1 == b.len() || b[i + 1].is_ascii_whitespace();
            if before && after {
                self.rest = Some(&s[i + 1..]);
                return Some(&s[..i]);
            }
        }
        self.rest = None;
        Some(s)
    }
}

#[cfg(test)]
mod tests;
