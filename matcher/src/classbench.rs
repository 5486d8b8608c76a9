//! ClassBench rule sets and header traces (IPv4 5-tuple), read as DPDK's
//! `dpdk-test-acl` reads them, into a first-match set.
//!
//! A rule line is `@SRC/LEN DST/LEN SPLO : SPHI DPLO : DPHI PROTO/MASK
//! FLAGS/MASK`; the first rule has the highest priority. The flags field
//! is ignored (rte_acl's test ignores it too, and the reference answers
//! in `shared/classbench` come from it). A trace line is `SRC DST SPORT
//! DPORT PROTO ...` in decimal; columns past the fifth are ignored.
//!
//! The set is `type ipv4_addr . ipv4_addr . inet_service . inet_service .
//! inet_proto : mark; flags priority`, each element's data its rule's
//! number (0-based line index), listed in file order. A rule whose five
//! fields repeat an earlier rule's exactly can never match first: it is
//! left out and counted.

use crate::error::{excerpt, SetError};
use crate::field::{FieldType, Range};
use crate::file::FileError;
use crate::syntax::{Data, Element, Policy, SetDecl};
use std::collections::HashSet;

/// The declaration of a ClassBench set.
pub fn decl() -> SetDecl {
    SetDecl::parse("type ipv4_addr . ipv4_addr . inet_service . inet_service . inet_proto : mark")
        .expect("valid declaration")
        .with_policy(Policy::FirstMatch)
}

/// A parsed rule file.
#[derive(Clone, Debug)]
pub struct Rules {
    /// The elements, in priority order, their data their rule numbers.
    pub elements: Vec<Element>,
    /// Rules in the file.
    pub rules: usize,
    /// Rules left out because an earlier rule has the same five fields.
    pub shadowed: usize,
}

fn prefix(text: &str) -> Result<Range, String> {
    let (a, l) = text
        .split_once('/')
        .ok_or_else(|| format!("`{}` is not ADDRESS/LENGTH", excerpt(text)))?;
    let addr: std::net::Ipv4Addr = a
        .parse()
        .map_err(|_| format!("`{}` is not an IPv4 address", excerpt(a)))?;
    let len: u32 = l
        .parse()
        .ok()
        .filter(|&l| l <= 32)
        .ok_or_else(|| format!("prefix length `{}` is not 0 to 32", excerpt(l)))?;
    let a = u32::from(addr) as u128;
    let host = if len == 32 {
        0
    } else {
        (1u128 << (32 - len)) - 1
    };
    Ok(Range::new(a & !host, a | host))
}

fn number(text: &str, max: u128, what: &str) -> Result<u128, String> {
    let v = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(h) => u128::from_str_radix(h, 16).ok(),
        None => text.parse::<u128>().ok(),
    };
    v.filter(|&v| v <= max)
        .ok_or_else(|| format!("{what} `{}` is not a number 0 to {max}", excerpt(text)))
}

/// A value under a mask whose set bits lead (`0xFF`, `0xF0`, `0x00`):
/// the range of values that agree with it under the mask.
fn masked(value: u128, mask: u128, max: u128, text: &str) -> Result<Range, String> {
    let free = !mask & max;
    if free & (free + 1) != 0 {
        return Err(format!(
            "`{}`: mask {mask:#x} is not a prefix mask (leading ones)",
            excerpt(text)
        ));
    }
    Ok(Range::new(value & mask, (value & mask) | free))
}

fn port_range(lo: &str, hi: &str) -> Result<Range, String> {
    let (a, b) = (number(lo, 65535, "port")?, number(hi, 65535, "port")?);
    if a > b {
        return Err(format!("port range `{a} : {b}` ends before it starts"));
    }
    Ok(Range::new(a, b))
}

/// One rule line (after `@`) into its five ranges.
fn rule(line: &str) -> Result<[Range; 5], String> {
    let t: Vec<&str> = line.split_whitespace().collect();
    // SRC DST SPLO : SPHI DPLO : DPHI PROTO/MASK [FLAGS/MASK]
    if t.len() < 9 || t[3] != ":" || t[6] != ":" {
        return Err(format!(
            "`{}` is not `@SRC/LEN DST/LEN SPLO : SPHI DPLO : DPHI PROTO/MASK FLAGS/MASK`",
            excerpt(line)
        ));
    }
    let (pv, pm) = t[8]
        .split_once('/')
        .ok_or_else(|| format!("protocol `{}` is not VALUE/MASK", excerpt(t[8])))?;
    let proto = masked(
        number(pv, 255, "protocol")?,
        number(pm, 255, "protocol mask")?,
        255,
        t[8],
    )?;
    Ok([
        prefix(t[0])?,
        prefix(t[1])?,
        port_range(t[2], t[4])?,
        port_range(t[5], t[7])?,
        proto,
    ])
}

/// Parses a ClassBench rule file; `name` is used in errors.
pub fn parse_rules(name: &str, text: &str) -> Result<Rules, FileError> {
    let mut elements = Vec::new();
    let mut seen = HashSet::new();
    let mut rules = 0;
    let mut shadowed = 0;
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        let err = |m: String| FileError {
            file: name.to_string(),
            line: i + 1,
            error: SetError::invalid(m),
        };
        let body = l
            .strip_prefix('@')
            .ok_or_else(|| err(format!("`{}` does not start with `@`", excerpt(l))))?;
        let key = rule(body).map_err(err)?;
        let n = rules;
        rules += 1;
        if !seen.insert(key) {
            shadowed += 1;
            continue;
        }
        elements.push(Element {
            key: key.into(),
            data: Some(Data::Value(FieldType::Mark, n as u128)),
            priority: None,
            timeout: None,
            expires: None,
        });
    }
    Ok(Rules {
        elements,
        rules,
        shadowed,
    })
}

/// Parses a ClassBench trace into keys of [`decl`], one per header.
pub fn parse_trace(name: &str, text: &str) -> Result<Vec<[u8; 13]>, FileError> {
    let mut keys = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let err = |m: String| FileError {
            file: name.to_string(),
            line: i + 1,
            error: SetError::invalid(m),
        };
        let t: Vec<&str> = l.split_whitespace().take(5).collect();
        if t.len() < 5 {
            return Err(err(format!(
                "`{}` has fewer than five columns (SRC DST SPORT DPORT PROTO)",
                excerpt(l)
            )));
        }
        let mut k = [0u8; 13];
        let src = number(t[0], u32::MAX as u128, "source address").map_err(err)? as u32;
        let dst = number(t[1], u32::MAX as u128, "destination address").map_err(err)? as u32;
        let sp = number(t[2], 65535, "source port").map_err(err)? as u16;
        let dp = number(t[3], 65535, "destination port").map_err(err)? as u16;
        let pr = number(t[4], 255, "protocol").map_err(err)? as u8;
        k[0..4].copy_from_slice(&src.to_be_bytes());
        k[4..8].copy_from_slice(&dst.to_be_bytes());
        k[8..10].copy_from_slice(&sp.to_be_bytes());
        k[10..12].copy_from_slice(&dp.to_be_bytes());
        k[12] = pr;
        keys.push(k);
    }
    Ok(keys)
}

/// The rule number an element of a ClassBench set carries.
pub fn rule_number(e: &Element) -> Option<u32> {
    match e.data {
        Some(Data::Value(_, n)) => Some(n as u32),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_readme_example() {
        let r = parse_rules(
            "r",
            "@56.78.55.145/32\t180.189.159.78/32\t0 : 65535\t2110 : 2110\t0x06/0xFF\t0x1000/0x1000\t\n\
             @0.0.0.0/0\t10.0.0.0/8\t0 : 65535\t0 : 65535\t0x00/0x00\t0x0000/0x0000\n",
        )
        .unwrap();
        assert_eq!(r.rules, 2);
        let d = decl();
        assert_eq!(
            d.format_element(&r.elements[0]),
            "56.78.55.145 . 180.189.159.78 . 0-65535 . 2110 . 6 : 0x00000000"
        );
        assert_eq!(
            d.format_element(&r.elements[1]),
            "0.0.0.0/0 . 10.0.0.0/8 . 0-65535 . 0-65535 . 0-255 : 0x00000001"
        );
        let k = parse_trace("t", "944650225\t3426426879\t0\t65535\t6\t512\t774\n").unwrap();
        assert_eq!(
            d.format_key(&k[0]),
            "56.78.55.241 . 204.59.31.255 . 0 . 65535 . 6"
        );
    }

    #[test]
    fn bad_lines_name_their_line_and_value() {
        let e =
            parse_rules("r", "\n@1.2.3.4/33 5.6.7.8/32 0 : 1 0 : 1 0x06/0xFF 0/0\n").unwrap_err();
        assert_eq!((e.line, e.file.as_str()), (2, "r"));
        assert!(e.to_string().contains("`33`"), "{e}");
        let e = parse_rules("r", "@1.2.3.4/32 5.6.7.8/32 0 : 1 0 : 1 0x06/0x0F 0/0\n").unwrap_err();
        assert!(e.to_string().contains("prefix mask"), "{e}");
        let e = parse_rules("r", "@1.2.3.4/32 5.6.7.8/32 9 : 1 0 : 1 0x06/0xFF 0/0\n").unwrap_err();
        assert!(e.to_string().contains("ends before"), "{e}");
        let e = parse_trace("t", "1 2 3 70000 6\n").unwrap_err();
        assert!(e.to_string().contains("`70000`"), "{e}");
    }
}
