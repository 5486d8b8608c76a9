//! Packets and packet filters in the words a set's `match` uses: `ip
//! saddr 192.0.2.0/24 tcp dport { 22, 443 }`. One language for rules,
//! traces and captures: the packet fields are the configuration's
//! [`Source`]s (`ip saddr`, `th dport`, `meta l4proto`, `ether daddr`,
//! ...), their values are written as the set types write them (a
//! prefix, a range `a-b`, a service or protocol name), and a few words
//! only a packet has are added: `iif PORT` (also `meta iifname`), `ip
//! ttl`, `ip6 hoplimit`, `meta length` (the frame's), and the protocol
//! words alone (`ip`, `ip6`, `arp`, `tcp`, `udp`, `sctp`, `icmp`,
//! `icmpv6`).
//!
//! A filter is terms that must all hold (`and` between them may be
//! written); a term is a field, `==` (the default) or `!=`, and a value
//! or `{ a, b, ... }` (any of them). As in nft, a field implies its
//! protocol: `tcp dport != 22` holds for TCP packets to other ports, not
//! for UDP ones. [`packet`] builds a frame from the same words.

pub mod packet;

use crate::wire::{self, proto, Parsed, L3};
use config::Source;
use matcher::{FieldType, Range};
use std::fmt;

/// A packet field a filter tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// A field a set's `match` names.
    Source(Source),
    /// `ip ttl` (IPv4) or `ip6 hoplimit` (IPv6).
    Ttl(L3),
    /// `meta length`: the frame's length in bytes.
    Length,
    /// `iif NAME` / `meta iifname NAME`: the port it came in on.
    Iif,
    /// `ip`, `ip6`, `arp` alone: the ethertype (after any VLAN tags).
    Ethertype,
}

impl Field {
    /// The words that name it (for messages).
    pub fn words(self) -> &'static str {
        match self {
            Field::Source(s) => s.words(),
            Field::Ttl(L3::V4) => "ip ttl",
            Field::Ttl(L3::V6) => "ip6 hoplimit",
            Field::Length => "meta length",
            Field::Iif => "iif",
            Field::Ethertype => "ether type",
        }
    }

    /// Its value in a frame received on `port`, parsed as `parsed` (`None`
    /// when the parse failed): `None` when the packet has no such field
    /// (an IPv6 address of an IPv4 packet, a TCP port of a UDP one).
    pub fn value(self, frame: &[u8], parsed: Option<&Parsed>, port: u16) -> Option<u128> {
        match self {
            // A frame that does not parse still has its MACs.
            Field::Source(s @ (Source::EtherSaddr | Source::EtherDaddr)) => {
                source_value(s, &Parsed::default(), frame)
            }
            Field::Source(s) => source_value(s, parsed?, frame),
            Field::Ttl(l3) => parsed.filter(|p| p.l3 == l3).map(|p| p.ttl as u128),
            Field::Length => Some(frame.len() as u128),
            Field::Iif => Some(port as u128),
            Field::Ethertype => ethertype(frame).map(u128::from),
        }
    }
}

/// The ethertype of a frame after its VLAN tags, if it has one.
pub fn ethertype(frame: &[u8]) -> Option<u16> {
    let mut at = 12;
    loop {
        let t = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
        if t != 0x8100 && t != 0x88a8 {
            return Some(t);
        }
        at += 4;
    }
}

/// The value a set's key takes from a packet for source `s` (addresses
/// and ports as numbers, MACs as 48-bit numbers): `None` when the packet
/// lacks the field, exactly when the pipeline's burst key writer skips the
/// packet for the set (see [`crate::tables::Need`]); the classify stage's
/// differential test holds the two together.
pub fn source_value(s: Source, p: &Parsed, frame: &[u8]) -> Option<u128> {
    match s {
        Source::IpSaddr | Source::IpDaddr if p.l3 == L3::V4 => {
            let a = if s == Source::IpSaddr { p.src } else { p.dst };
            Some(a & 0xffff_ffff)
        }
        Source::Ip6Saddr | Source::Ip6Daddr if p.l3 == L3::V6 => {
            Some(if s == Source::Ip6Saddr { p.src } else { p.dst })
        }
        Source::Sport(want) | Source::Dport(want)
            if p.l4_ok
                && matches!(p.proto, proto::TCP | proto::UDP | proto::SCTP)
                && want.is_none_or(|x| x == p.proto) =>
        {
            Some(if matches!(s, Source::Sport(_)) {
                p.sport
            } else {
                p.dport
            } as u128)
        }
        Source::L4proto => Some(p.proto as u128),
        Source::IcmpType(v6)
            if p.l4_ok
                && p.l3 == if v6 { L3::V6 } else { L3::V4 }
                && p.proto == crate::tables::icmp_of(p.l3) =>
        {
            Some((p.sport >> 8) as u128)
        }
        Source::EtherSaddr | Source::EtherDaddr => {
            let at = if s == Source::EtherSaddr { 6 } else { 0 };
            let m = frame.get(at..at + 6)?;
            Some(m.iter().fold(0u128, |a, &b| a << 8 | b as u128))
        }
        // Frames from ports carry no mark.
        Source::Mark => Some(0),
        Source::Dscp(v6) if p.l3 == if v6 { L3::V6 } else { L3::V4 } => {
            crate::wire::dscp(p, frame).map(u128::from)
        }
        _ => None,
    }
}

/// One term: a field, `==` or `!=`, and the values it compares with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    /// The field.
    pub field: Field,
    /// `!=`: the field is present and none of `values` holds it.
    pub negate: bool,
    /// Any of these.
    pub values: Vec<Range>,
}

impl Term {
    fn holds(&self, frame: &[u8], parsed: Option<&Parsed>, port: u16) -> bool {
        match self.field.value(frame, parsed, port) {
            None => false,
            Some(v) => self.values.iter().any(|r| r.contains(v)) != self.negate,
        }
    }
}

/// A filter: terms that must all hold. The empty filter takes every
/// packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// The terms.
    pub terms: Vec<Term>,
    text: String,
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Filter {
    /// Parses `text`; `ports` names the ports (`iif NAME`). The error
    /// quotes the word it could not take.
    ///
    /// ```
    /// use forwarder::filter::Filter;
    /// use forwarder::wire::build::{ipv4, L4};
    /// let ports = ["wan".to_string(), "lan".to_string()];
    /// let f = Filter::parse("iif wan ip daddr 198.51.100.0/24 tcp dport { 22, 443 }", &ports).unwrap();
    /// let frame = ipv4(0xc000_0207, 0xc633_6409, 64, L4::Tcp(40000, 443), 0);
    /// assert!(f.matches(&frame, 0));
    /// assert!(!f.matches(&frame, 1));
    /// assert!(Filter::parse("ip daddr 198.51.100.300", &ports).is_err());
    /// ```
    pub fn parse(text: &str, ports: &[String]) -> Result<Filter, String> {
        let mut terms = Vec::new();
        let mut words = Words::new(text)?;
        while let Some(w) = words.next() {
            if w == "and" || w == "&&" {
                continue;
            }
            terms.push(term(w, &mut words, ports)?);
        }
        Ok(Filter {
            terms,
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
        })
    }

    /// Whether the filter takes no packet out (it has no term).
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether a frame received on port `port` passes (the frame is
    /// parsed here: off the fast path).
    pub fn matches(&self, frame: &[u8], port: u16) -> bool {
        if self.terms.is_empty() {
            return true;
        }
        let parsed = wire::parse(frame).ok();
        self.matches_parsed(frame, parsed.as_ref(), port)
    }

    /// [`Filter::matches`] with the frame's parse given (`None`: it failed).
    pub fn matches_parsed(&self, frame: &[u8], parsed: Option<&Parsed>, port: u16) -> bool {
        self.terms.iter().all(|t| t.holds(frame, parsed, port))
    }
}

/// The words of a filter: whitespace apart, `{`, `}` and `,` words of
/// their own.
pub(crate) struct Words<'a> {
    words: std::vec::IntoIter<&'a str>,
}

impl<'a> Words<'a> {
    pub(crate) fn new(text: &'a str) -> Result<Words<'a>, String> {
        let mut out = Vec::new();
        for chunk in text.split_whitespace() {
            let mut rest = chunk;
            while !rest.is_empty() {
                match rest.find(['{', '}', ',']) {
                    Some(0) => {
                        out.push(&rest[..1]);
                        rest = &rest[1..];
                    }
                    Some(i) => {
                        out.push(&rest[..i]);
                        rest = &rest[i..];
                    }
                    None => {
                        out.push(rest);
                        rest = "";
                    }
                }
            }
        }
        if out.len() > 4096 {
            return Err(format!("{} words: a filter has at most 4096", out.len()));
        }
        Ok(Words {
            words: out.into_iter(),
        })
    }

    pub(crate) fn peek(&self) -> Option<&'a str> {
        self.words.as_slice().first().copied()
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        self.words.next()
    }
}

/// What the words alone name: a protocol word as a term.
fn keyword(w: &str) -> Option<Term> {
    let eq = |field, v: u128| Term {
        field,
        negate: false,
        values: vec![Range::single(v)],
    };
    Some(match w {
        "ip" => eq(Field::Ethertype, 0x0800),
        "ip6" => eq(Field::Ethertype, 0x86dd),
        "arp" => eq(Field::Ethertype, 0x0806),
        "tcp" => eq(Field::Source(Source::L4proto), proto::TCP as u128),
        "udp" => eq(Field::Source(Source::L4proto), proto::UDP as u128),
        "sctp" => eq(Field::Source(Source::L4proto), proto::SCTP as u128),
        "icmp" => eq(Field::Source(Source::L4proto), proto::ICMP as u128),
        "icmpv6" | "ipv6-icmp" => eq(Field::Source(Source::L4proto), proto::ICMPV6 as u128),
        _ => return None,
    })
}

/// The words a filter knows, for messages.
pub const KNOWN: &str = "iif, meta iifname|l4proto|mark|length, ip saddr|daddr|protocol|ttl, \
                         ip6 saddr|daddr|nexthdr|hoplimit, tcp|udp|sctp|th sport|dport, \
                         ether saddr|daddr, or alone: ip, ip6, arp, tcp, udp, sctp, icmp, icmpv6";

/// The field the words starting with `w` name (taking its second word
/// from `words`), or `None` when `w` is a protocol word alone.
fn field(w: &str, words: &mut Words) -> Result<Option<Field>, String> {
    let second = words.peek();
    let pair = |s: &str| Source::parse(&format!("{w} {s}")).ok();
    let f = match (w, second) {
        ("iif", _) => Field::Iif,
        ("meta", Some("iifname" | "iif")) => Field::Iif,
        ("meta", Some("length")) => Field::Length,
        ("ip", Some("ttl")) => Field::Ttl(L3::V4),
        ("ip6", Some("hoplimit")) => Field::Ttl(L3::V6),
        // Not in the frame: what the workers' connection tracking says
        // of it (a trace shows it for each packet).
        ("ct", Some("state")) => {
            return Err(
                "`ct state` is not in the packet: filters and traced packets cannot \
                        name it (`forwarder trace` shows each packet's ct state)"
                    .into(),
            )
        }
        (_, Some(s)) if pair(s).is_some() => Field::Source(pair(s).unwrap_or(Source::Mark)),
        _ if keyword(w).is_some() => return Ok(None),
        _ => {
            let what = match second {
                Some(s)
                    if matches!(
                        w,
                        "ip" | "ip6" | "tcp" | "udp" | "sctp" | "th" | "ether" | "meta"
                    ) =>
                {
                    format!("{w} {s}")
                }
                _ => w.to_string(),
            };
            return Err(format!(
                "unknown packet field `{}` (known: {KNOWN})",
                matcher::excerpt(&what)
            ));
        }
    };
    if w != "iif" {
        words.next();
    }
    Ok(Some(f))
}

/// One term, starting at word `w`.
fn term(w: &str, words: &mut Words, ports: &[String]) -> Result<Term, String> {
    let Some(f) = field(w, words)? else {
        return Ok(keyword(w).expect("a keyword"));
    };
    let mut negate = false;
    match words.peek() {
        Some("!=") => {
            negate = true;
            words.next();
        }
        Some("==") => {
            words.next();
        }
        _ => {}
    }
    let mut values = Vec::new();
    match words.next() {
        None => return Err(format!("`{}` needs a value", f.words())),
        Some("{") => loop {
            match words.next() {
                None => return Err(format!("`{}`: a `{{` without its `}}`", f.words())),
                Some("}") => break,
                Some(",") => continue,
                Some(v) => values.push(value(f, v, ports)?),
            }
        },
        Some(v) => values.push(value(f, v, ports)?),
    }
    if values.is_empty() {
        return Err(format!("`{}`: an empty `{{ }}`", f.words()));
    }
    Ok(Term {
        field: f,
        negate,
        values,
    })
}

/// A value (single, prefix or range) of field `f`.
fn value(f: Field, v: &str, ports: &[String]) -> Result<Range, String> {
    let quoted = matcher::excerpt(v);
    match f {
        Field::Source(s) => s
            .field_type()
            .parse_range(v)
            .map_err(|e| format!("`{}`: {e}", f.words())),
        Field::Iif => ports
            .iter()
            .position(|p| p == v)
            .map(|i| Range::single(i as u128))
            .ok_or_else(|| format!("`iif {quoted}`: no such port (ports: {})", ports.join(", "))),
        Field::Ttl(_) | Field::Length => {
            let max = if f == Field::Length { 65535 } else { 255 };
            let num = |s: &str| {
                s.parse::<u128>().ok().filter(|&n| n <= max).ok_or_else(|| {
                    format!(
                        "`{}`: `{quoted}` is not a number from 0 to {max}",
                        f.words()
                    )
                })
            };
            match v.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b {
                        return Err(format!("`{}`: the range `{quoted}` is empty", f.words()));
                    }
                    Ok(Range::new(a, b))
                }
                None => num(v).map(Range::single),
            }
        }
        Field::Ethertype => FieldType::InetService
            .parse_value(v)
            .map(Range::single)
            .map_err(|e| format!("ethertype: {e}")),
    }
}

#[cfg(test)]
mod tests;
