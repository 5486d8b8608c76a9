//! The classify stage: each rule set in turn looks up the keys of the
//! packets it applies to, one burst lookup a set, and decides their fate
//! (dropped, accepted, or on to the next set). It runs twice a burst
//! where some set is of the forward hook: the prerouting sets before
//! the route decision, the forward ones after it (for the packets that
//! are forwarded).

use super::counters::Outcome;
use super::flowcache::MAX_SETS;
use super::{Fate, Pipeline};
use crate::port::Burst;
use crate::reason::DropReason;
use crate::tables::{RuleSet, Tables};
use crate::wire::Parsed;
use config::{Action, Source};
use matcher::{Data, Verdict};

impl Pipeline {
    // Out of line: inlined into `process`, its per-set state (see
    // `Found`) made the whole stage sequence allocate registers worse
    // (`examples/turns` under callgrind: about 1 % more instructions a
    // packet); a call per burst costs nothing next to that.
    //
    // The sets `from..to`: those of one hook. The loop is the one that
    // runs every set, with two compares a set and burst: a generic
    // stage, or one over a slice of the sets, made the prerouting pass
    // cost 0.4-0.8 % more instructions a packet (the inliner and the
    // register allocator chose otherwise).
    #[inline(never)]
    pub(super) fn classify(
        &mut self,
        tables: &Tables,
        burst: &Burst,
        n: usize,
        (from, to): (usize, usize),
    ) {
        if tables.reads_iifname && from == 0 {
            // Each packet's port (or sub-interface), by name.
            for i in 0..n {
                let port = self.ingress_of(i).0 as usize;
                self.iif[i] = tables.ifnames.get(port).copied().unwrap_or(0);
            }
        }
        for (si, set) in tables.sets.iter().enumerate() {
            if si < from {
                continue;
            }
            if si >= to {
                break;
            }
            let klen = set.key_len;
            let (keys, found) = &mut self.keys[si];
            // The packets the set applies to (an IPv6 set looks nothing
            // up for IPv4 packets), then their keys, packed, one source
            // at a time across all of them.
            let mut m = 0;
            for i in 0..n {
                if self.fate[i] == Fate::Go && set.need.applies(&self.parsed[i]) {
                    found.which[m] = i as u8;
                    m += 1;
                }
            }
            found.m = m as u8;
            if m == 0 {
                continue;
            }
            write_keys(
                &set.sources,
                &self.parsed,
                (&self.ct_state, &self.iif, &self.oif),
                burst,
                &found.which[..m],
                &mut keys[..m * klen],
                klen,
            );
            set.snap
                .lookup_burst(keys, klen, &mut found.ids[..m], &mut self.scratch[si]);
            for j in 0..m {
                let Some(id) = found.ids[j] else { continue };
                if self.expired_at != 0 && set.snap.expires(id) <= self.expired_at {
                    continue;
                }
                let i = found.which[j] as usize;
                let fate = decision(set, id);
                if set.counter {
                    if let Some(Some(t)) = self.tally.sets.get_mut(si) {
                        t.add(id, 1, burst.frame_len(i) as u64);
                    }
                    self.counted |= 1 << i;
                }
                let outcome = match fate {
                    Fate::Dropped(_) => Outcome::Drop,
                    Fate::Accepted => Outcome::Accept,
                    Fate::Go | Fate::Cached => Outcome::Continue,
                } as usize;
                self.counters.matches[si][outcome] += 1;
                // What the flow cache stores of it: two bits a set, the
                // outcome's index plus one (0: no match). The
                // configuration allows the cache with at most `MAX_SETS`
                // sets.
                if si < MAX_SETS {
                    self.match_bits[i] |= (outcome as u32 + 1) << (2 * si);
                }
                self.fate[i] = fate;
            }
        }
    }
}

/// What a match of element `id` of `set` does to the packet.
#[inline(always)]
pub(super) fn decision(set: &RuleSet, id: u32) -> Fate {
    match set.action {
        Action::Drop => Fate::Dropped(DropReason::Rule),
        Action::Reject => Fate::Dropped(DropReason::Reject),
        Action::Accept => Fate::Accepted,
        Action::Verdict => match set.snap.element(id).and_then(|e| e.data.as_ref()) {
            Some(Data::Verdict(Verdict::Drop)) => Fate::Dropped(DropReason::Rule),
            Some(Data::Verdict(Verdict::Accept)) => Fate::Accepted,
            // continue, return, jump and goto: no chains here, the packet
            // goes on to the next set.
            _ => Fate::Go,
        },
    }
}

/// Writes the keys of the packets `which` (each has every field the
/// sources need: see [`Need`]) into `keys`, `klen` bytes
/// apart: source after source, each across all the packets, so that
/// which field a source reads is decided once per burst, not per packet.
#[inline]
fn write_keys(
    sources: &[Source],
    parsed: &[Parsed],
    (ct, iif, oif): (&[u8], &[u128], &[u128]),
    burst: &Burst,
    which: &[u8],
    keys: &mut [u8],
    klen: usize,
) {
    let mut off = 0;
    for s in sources {
        let packets = which
            .iter()
            .map(|&i| i as usize)
            .zip(keys.chunks_exact_mut(klen));
        match *s {
            Source::IpSaddr | Source::IpDaddr => {
                let src = *s == Source::IpSaddr;
                for (i, k) in packets {
                    let p = &parsed[i];
                    let a = if src { p.src } else { p.dst } as u32;
                    k[off..off + 4].copy_from_slice(&a.to_be_bytes());
                }
                off += 4;
            }
            Source::Ip6Saddr | Source::Ip6Daddr => {
                let src = *s == Source::Ip6Saddr;
                for (i, k) in packets {
                    let p = &parsed[i];
                    let a = if src { p.src } else { p.dst };
                    k[off..off + 16].copy_from_slice(&a.to_be_bytes());
                }
                off += 16;
            }
            Source::Sport(_) | Source::Dport(_) => {
                let sport = matches!(s, Source::Sport(_));
                for (i, k) in packets {
                    let p = &parsed[i];
                    let v = if sport { p.sport } else { p.dport };
                    k[off..off + 2].copy_from_slice(&v.to_be_bytes());
                }
                off += 2;
            }
            Source::L4proto => {
                for (i, k) in packets {
                    k[off] = parsed[i].proto;
                }
                off += 1;
            }
            Source::IcmpType(_) => {
                // The parse puts an ICMP header's type and code where a
                // transport header's source port is.
                for (i, k) in packets {
                    k[off] = (parsed[i].sport >> 8) as u8;
                }
                off += 1;
            }
            Source::CtState => {
                // What connection tracking found (0 without it).
                for (i, k) in packets {
                    k[off] = ct[i];
                }
                off += 1;
            }
            Source::EtherSaddr | Source::EtherDaddr => {
                let at = if *s == Source::EtherSaddr { 6 } else { 0 };
                for (i, k) in packets {
                    k[off..off + 6].copy_from_slice(&burst.frame(i)[at..at + 6]);
                }
                off += 6;
            }
            Source::Mark => {
                // Frames from ports carry no mark.
                for (_, k) in packets {
                    k[off..off + 4].fill(0);
                }
                off += 4;
            }
            Source::Iifname | Source::Oifname => {
                let names = if *s == Source::Iifname { iif } else { oif };
                for (i, k) in packets {
                    k[off..off + 16].copy_from_slice(&names[i].to_be_bytes());
                }
                off += 16;
            }
            Source::Dscp(_) => {
                // The packet's family is the set's (see `Need`).
                for (i, k) in packets {
                    k[off] = crate::wire::dscp(&parsed[i], burst.frame(i)).unwrap_or(0);
                }
                off += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::Need;
    use crate::wire;
    use crate::wire::L3;
    use routecache::gen::Rng;

    /// The reference: one packet's key, source by source, from the
    /// values the filter language reads ([`crate::filter::source_value`]):
    /// false when the packet lacks one of the fields. The burst writer and
    /// the filters (captures, live traces) agree through it.
    fn extract(
        sources: &[Source],
        p: &Parsed,
        (ct, iif, oif): (u8, u128, u128),
        frame: &[u8],
        key: &mut [u8],
    ) -> bool {
        let mut off = 0;
        for s in sources {
            // `ct state` is not in the frame: connection tracking's; nor
            // is the port.
            let v = match s {
                Source::CtState => Some(ct as u128),
                Source::Iifname => Some(iif),
                Source::Oifname => Some(oif),
                _ => crate::filter::source_value(*s, p, frame),
            };
            let Some(v) = v else {
                return false;
            };
            let t = s.field_type();
            t.write_key(v, &mut key[off..off + t.bytes()]);
            off += t.bytes();
        }
        true
    }

    /// The burst's keys and the packets they are written for agree with
    /// the per-packet reference, for random packets and source lists.
    #[test]
    fn burst_keys_agree_with_the_reference() {
        let all = [
            Source::IpSaddr,
            Source::IpDaddr,
            Source::Ip6Saddr,
            Source::Ip6Daddr,
            Source::Sport(None),
            Source::Dport(None),
            Source::Sport(Some(wire::proto::TCP)),
            Source::Dport(Some(wire::proto::UDP)),
            Source::Sport(Some(wire::proto::SCTP)),
            Source::L4proto,
            Source::IcmpType(false),
            Source::IcmpType(true),
            Source::EtherSaddr,
            Source::EtherDaddr,
            Source::Mark,
            Source::CtState,
            Source::Iifname,
            Source::Oifname,
            Source::Dscp(false),
            Source::Dscp(true),
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut next = move || rng.next_u64();
        let mut burst = Burst::new();
        for _ in 0..32 {
            let f: Vec<u8> = (0..64).map(|_| next() as u8).collect();
            burst.push(&f);
        }
        let protos = [
            wire::proto::TCP,
            wire::proto::UDP,
            wire::proto::SCTP,
            wire::proto::ICMP,
            wire::proto::ICMPV6,
            47,
        ];
        for _ in 0..2000 {
            let sources: Vec<Source> = (0..1 + next() % 4)
                .map(|_| all[next() as usize % all.len()])
                .collect();
            let klen: usize = sources
                .iter()
                .map(|s| match s {
                    Source::IpSaddr | Source::IpDaddr | Source::Mark => 4,
                    Source::Ip6Saddr | Source::Ip6Daddr | Source::Iifname | Source::Oifname => 16,
                    Source::Sport(_) | Source::Dport(_) => 2,
                    Source::L4proto | Source::IcmpType(_) | Source::CtState | Source::Dscp(_) => 1,
                    Source::EtherSaddr | Source::EtherDaddr => 6,
                })
                .sum();
            let parsed: Vec<Parsed> = (0..32)
                .map(|_| Parsed {
                    l3: if next() % 2 == 0 { L3::V4 } else { L3::V6 },
                    src: (next() as u128) << 64 | next() as u128,
                    dst: (next() as u128) << 64 | next() as u128,
                    proto: protos[next() as usize % protos.len()],
                    sport: next() as u16,
                    dport: next() as u16,
                    l4_ok: next() % 4 != 0,
                    ..Parsed::default()
                })
                .collect();
            let ct: Vec<u8> = (0..32)
                .map(|_| [1u8, 2, 4, 8, 64][next() as usize % 5])
                .collect();
            let iif: Vec<u128> = (0..32)
                .map(|_| {
                    crate::tables::ifname_key(["wan", "lan0", "trunk.100"][next() as usize % 3])
                })
                .collect();
            let oif: Vec<u128> = (0..32)
                .map(|_| crate::tables::ifname_key(["lan", "wan0"][next() as usize % 2]))
                .collect();
            let need = Need::of(&sources);
            let mut want = vec![0u8; 32 * klen];
            let mut which = Vec::new();
            for (i, p) in parsed.iter().enumerate() {
                let mut k = vec![0u8; klen];
                let ok = extract(&sources, p, (ct[i], iif[i], oif[i]), burst.frame(i), &mut k);
                assert_eq!(need.applies(p), ok, "{sources:?} {p:?}");
                if ok {
                    want[which.len() * klen..(which.len() + 1) * klen].copy_from_slice(&k);
                    which.push(i as u8);
                }
            }
            let mut got = vec![0u8; which.len() * klen];
            write_keys(
                &sources,
                &parsed,
                (&ct, &iif, &oif),
                &burst,
                &which,
                &mut got,
                klen,
            );
            assert_eq!(got, want[..which.len() * klen], "{sources:?}");
        }
    }
}
