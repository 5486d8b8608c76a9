use super::key::{seen, Key, Kind, Seen, View};
use super::table::{flag, Room, Table, NO_SLOT};
use super::*;
use crate::wire::build::{ipv4, ipv6, L4};
use crate::wire::{parse, L3};
use routecache::gen::Rng;
use std::collections::HashMap;

/// Both directions of a connection have one key, and the reversed flag
/// tells them apart; an ICMP query asked each way is two connections.
#[test]
fn both_directions_share_a_key() {
    let mut rng = Rng(7);
    for _ in 0..1000 {
        // IPv4 addresses: 32 bits.
        let a = (rng.next_u64() as u32 as u128, rng.next_u64() as u16);
        let b = (rng.next_u64() as u128 & 0xff, rng.below(3) as u16);
        let (k1, r1) = Key::new(L3::V4, 3, 6, 0, a, b, false);
        let (k2, r2) = Key::new(L3::V4, 3, 6, 0, b, a, false);
        assert_eq!(k1, k2);
        assert!(r1 != r2 || a == b);
        assert_eq!((k1.proto(), k1.vrf(), k1.l3()), (6, 3, L3::V4));
        let (lo, hi) = k1.ends();
        assert_eq!((lo.min(hi), lo.max(hi)), (a.min(b), a.max(b)));
        // An answer from b to a is a's query's; b's own query is another.
        let (q, _) = Key::new(L3::V6, 0, 58, 128, a, b, false);
        let (ans, _) = Key::new(L3::V6, 0, 58, 128, b, a, true);
        let (other, _) = Key::new(L3::V6, 0, 58, 128, b, a, false);
        assert_eq!(q, ans);
        assert!(q != other || a == b);
        assert_eq!(q.l3(), L3::V6);
    }
}

/// IPv4's one-word compare of the ends makes the key the general rule
/// makes: same order, same words, same direction, for queries too.
#[test]
fn ipv4_keys_are_the_general_rule_s() {
    let mut rng = Rng(11);
    for _ in 0..20_000 {
        // Few distinct values, so that addresses and ports tie often.
        let mut end = || {
            let a = match rng.below(3) {
                0 => rng.below(4) as u128,
                1 => u32::MAX as u128 - rng.below(2) as u128,
                _ => rng.next_u64() as u32 as u128,
            };
            let p = if rng.below(2) == 0 {
                rng.below(3) as u16
            } else {
                rng.next_u64() as u16
            };
            (a, p)
        };
        let (a, b) = (end(), end());
        let (proto, extra) = [(6, 0), (17, 0), (1, 8), (1, 13), (47, 0)][rng.below(5) as usize];
        let (vrf, asker) = (rng.below(4) as u8, rng.below(2) == 1);
        assert_eq!(
            Key::new(L3::V4, vrf, proto, extra, a, b, asker),
            Key::wide(L3::V4, vrf, proto, extra, a, b, asker),
            "{a:?} {b:?} {proto} {extra} {asker}"
        );
    }
}

#[test]
fn packets_are_seen_as_linux_sees_them() {
    let tcp = |flags: u8| {
        let mut f = ipv4(0xc000_0201, 0xc633_6401, 64, L4::Tcp(1000, 80), 0);
        f[34 + 13] = flags;
        f
    };
    let kind = |f: &[u8]| match seen(&parse(f).unwrap(), f).view() {
        View::Packet { kind, .. } => Some(kind),
        _ => None,
    };
    assert_eq!(kind(&tcp(tcp::flag::SYN)), Some(Kind::Tcp(tcp::flag::SYN)));
    assert_eq!(kind(&tcp(0)), None);
    // A TCP header cut short is invalid.
    let mut short = tcp(tcp::flag::ACK);
    short[34 + 12] = 0xf0;
    assert_eq!(seen(&parse(&short).unwrap(), &short), Seen::INVALID);
    let echo = ipv4(0xc000_0201, 0xc633_6401, 64, L4::Icmp(8, 0), 4);
    assert_eq!(kind(&echo), Some(Kind::IcmpRequest));
    let reply = ipv6(1, 2, 64, L4::Icmp(129, 0), 0);
    assert_eq!(kind(&reply), Some(Kind::IcmpReply));
    let ns = ipv6(1, 2, 255, L4::Icmp(135, 0), 16);
    assert_eq!(seen(&parse(&ns).unwrap(), &ns), Seen::UNTRACKED);
    let redirect_v6 = ipv6(1, 2, 255, L4::Icmp(137, 0), 16);
    assert_eq!(
        seen(&parse(&redirect_v6).unwrap(), &redirect_v6),
        Seen::UNTRACKED
    );
    let router_advert = ipv4(1, 2, 1, L4::Icmp(9, 0), 8);
    assert_eq!(
        seen(&parse(&router_advert).unwrap(), &router_advert),
        Seen::INVALID
    );
    // An error quoting a UDP datagram names its connection and sender.
    let inner = ipv4(0xc000_0201, 0xc633_6401, 64, L4::Udp(5353, 53), 0);
    let mut err = ipv4(
        0xc633_64fe,
        0xc000_0201,
        64,
        L4::Icmp(3, 3),
        inner.len() - 14,
    );
    err[42..42 + inner.len() - 14].copy_from_slice(&inner[14..]);
    let p = parse(&err).unwrap();
    let want = Key::new(
        L3::V4,
        0,
        17,
        0,
        (0xc000_0201, 5353),
        (0xc633_6401, 53),
        false,
    )
    .0;
    assert_eq!(seen(&p, &err), Seen::error(want, true));
    // Cut inside the quote: invalid.
    let cut = &err[..50];
    let mut p = parse(&err).unwrap();
    p.l4_ok = true;
    assert_eq!(seen(&p, cut), Seen::INVALID);
}

/// A packed `Seen` says what it was made from, and the established
/// path's bit is set for UDP and TCP's flag class ACK alone.
#[test]
fn seen_words_round_trip() {
    let (key, _) = Key::new(L3::V4, 0, 6, 0, (1, 2), (3, 4), false);
    for rev in [false, true] {
        let mut kinds = vec![Kind::Udp, Kind::IcmpRequest, Kind::IcmpReply, Kind::Other];
        kinds.extend((0..=255).map(Kind::Tcp));
        for kind in kinds {
            let s = Seen::packet(key, rev, kind);
            assert_eq!(s.view(), View::Packet { rev, kind });
            assert_eq!(s.key(), Some(&key));
            let fast = match kind {
                Kind::Tcp(f) => tcp::class(f) == tcp::Class::Ack,
                k => k == Kind::Udp,
            };
            let is_tcp = matches!(kind, Kind::Tcp(_));
            assert_eq!(s.established(), fast.then_some((rev, is_tcp)), "{kind:?}");
        }
    }
    for to_source in [false, true] {
        let s = Seen::error(key, to_source);
        assert_eq!((s.view(), s.key()), (View::Error { to_source }, Some(&key)));
        assert_eq!(s.established(), None);
    }
    for s in [Seen::INVALID, Seen::UNTRACKED] {
        assert_eq!((s.key(), s.established()), (None, None));
    }
    assert_eq!(Seen::INVALID.view(), View::Invalid);
    assert_eq!(Seen::UNTRACKED.view(), View::Untracked);
}

/// The table against a map: random inserts, finds (also from a slot
/// hint, right or stale) and frees, with the count and the early drops
/// of unassured entries.
#[test]
fn the_table_agrees_with_a_map() {
    let mut rng = Rng(99);
    for max in [1usize, 7, 64, 1000] {
        let mut t = Table::new(max, rng.next_u64());
        let mut map: HashMap<Key, usize> = HashMap::new();
        let mut held: HashMap<Key, u32> = HashMap::new();
        let key = |n: u64| Key::new(L3::V4, 0, 17, 0, (n as u128, 1), (0, 2), false).0;
        for _ in 0..20_000 {
            let n = rng.below(3 * max as u64 + 3);
            let k = key(n);
            let h = t.hash(&k);
            let want = map.get(&k).copied();
            assert_eq!(t.find(h, &k), want, "max {max}");
            // From the prefetch's slot, and from one the key held before
            // (freed since, or another key's now): the same answer.
            assert_eq!(t.find_from(h, &k, t.prefetch_entry(h, t.prefetch(h))), want);
            let old = held.get(&k).copied().unwrap_or(NO_SLOT);
            assert_eq!(t.find_from(h, &k, old), want, "max {max}");
            match (rng.below(3), want) {
                (0, Some(s)) => {
                    t.free(s);
                    map.remove(&k);
                }
                (_, None) => match t.insert(h, &k, 0, |_| panic!("nothing expires")) {
                    Some((s, room)) => {
                        if let Room::EarlyDrop(old) = room {
                            assert_eq!(map.remove(&old), Some(s));
                        }
                        let e = t.entry_mut(s);
                        e.deadline = 1000;
                        // Half of them assured: never dropped early.
                        if n.is_multiple_of(2) {
                            e.flags |= flag::ASSURED;
                        }
                        map.insert(k, s);
                        held.insert(k, s as u32);
                    }
                    None => assert!(map.len() >= max || t.count >= max, "max {max}"),
                },
                _ => {}
            }
            assert_eq!(t.count, map.len());
            assert!(t.count <= max);
        }
        // Sweeping at a time past every deadline empties it.
        let mut cursor = 0;
        let mut gone = 0;
        t.sweep(&mut cursor, t.slots(), 2000, |_| gone += 1);
        assert_eq!((t.count, gone), (0, map.len()));
    }
}

/// The table against a map as time goes by: entries expire, and an
/// insert frees the expired entries of its buckets in any of their ways
/// (each way's tag alone, ways 4-7 in the second word), with sweeps
/// between.
#[test]
fn expired_entries_make_room() {
    let mut rng = Rng(7);
    for max in [1usize, 7, 64, 1000] {
        let mut t = Table::new(max, rng.next_u64());
        // Key -> (slot, deadline).
        let mut map: HashMap<Key, (usize, u32)> = HashMap::new();
        let key = |n: u64| Key::new(L3::V6, 0, 6, 0, (n as u128, 9), (7, 2), false).0;
        let mut cursor = 0;
        for now in 0..20_000u32 {
            let k = key(rng.below(3 * max as u64 + 3));
            let h = t.hash(&k);
            assert_eq!(t.find(h, &k), map.get(&k).map(|e| e.0), "max {max}");
            if map.get(&k).is_some_and(|e| e.1 <= now) {
                t.free(map.remove(&k).unwrap().0);
            }
            if !map.contains_key(&k) {
                let mut gone = Vec::new();
                let got = t.insert(h, &k, now, |e| gone.push((e.key, e.deadline)));
                for (g, d) in gone {
                    assert!(d <= now, "max {max}: not expired");
                    assert!(map.remove(&g).is_some(), "max {max}: not in the table");
                }
                match got {
                    Some((s, room)) => {
                        if let Room::EarlyDrop(old) = room {
                            assert_eq!(map.remove(&old).map(|e| e.0), Some(s));
                        }
                        assert!(map.values().all(|e| e.0 != s), "max {max}: slot {s} twice");
                        let deadline = now + 1 + rng.below(4 * max as u64) as u32;
                        t.entry_mut(s).deadline = deadline;
                        map.insert(k, (s, deadline));
                    }
                    None => assert!(t.count >= max, "max {max}"),
                }
            }
            if now % 16 == 0 {
                let mut gone = Vec::new();
                t.sweep(&mut cursor, 8, now, |e| gone.push(e.key));
                for g in gone {
                    assert!(map.remove(&g).is_some_and(|e| e.1 <= now), "max {max}");
                }
            }
            assert_eq!(t.count, map.len(), "max {max}");
            assert!(t.count <= max);
            for (k, (s, _)) in &map {
                assert!(t.used(*s) && t.entry(*s).key == *k, "max {max}");
            }
        }
    }
}

/// A full table makes room from a refused flow's entry before it drops
/// any connection early, and says which it took. Up to 4 entries the
/// table is one bucket: every key's choices hold every entry.
#[test]
fn refused_entries_go_first() {
    use super::table::REFUSED;
    let mut rng = Rng(3);
    let key = |n: u64| Key::new(L3::V4, 0, 17, 0, (n as u128, 1), (0, 2), false).0;
    for round in 0..200 {
        let max = 1 + round % 4;
        let mut t = Table::new(max, rng.next_u64());
        let mut refused = 0;
        let mut n = 0;
        // Full: unassured connections, some refused entries.
        while t.count < max {
            let k = key(n);
            n += 1;
            let (s, room) = t.insert(t.hash(&k), &k, 0, |_| {}).unwrap();
            assert_eq!(room, Room::Free);
            let e = t.entry_mut(s);
            e.deadline = 1000;
            if rng.below(3) == 0 {
                e.state = REFUSED;
                refused += 1;
            }
        }
        for _ in 0..2 * max {
            let k = key(n);
            n += 1;
            let got = t.insert(t.hash(&k), &k, 1, |_| panic!("nothing expires"));
            let (s, room) = got.expect("an unassured entry to take");
            if refused > 0 {
                assert_eq!(room, Room::Refused, "max {max}, {refused} refused");
                refused -= 1;
            } else {
                assert!(matches!(room, Room::EarlyDrop(_)), "max {max}");
            }
            t.entry_mut(s).deadline = 1000;
            assert_eq!(t.count, max);
        }
    }
}

#[test]
fn stats_round_trip() {
    let s = CtStats {
        entries: 1,
        created: 2,
        expired: 3,
        early_drop: 4,
        insert_failed: 5,
        invalid: 6,
        by_proto: [7, 8, 9, 10],
        refused: 11,
    };
    assert_eq!(CtStats::from_values(s.values()), s);
}

/// Keys that differ in a port or an address's low bits alone (a client's
/// connections, a scan) spread over the buckets: a table fills to its
/// `max` with none refused or dropped early, in either family.
#[test]
fn near_keys_spread_over_the_buckets() {
    let max = 1 << 16;
    for (l3, hi) in [(L3::V4, 0u128), (L3::V6, 0x2001_0db8u128 << 96)] {
        for vary_port in [true, false] {
            let mut t = Table::new(max, 0x5eed);
            let key = |n: u64| {
                let (port, addr) = if vary_port {
                    (n as u16, 0xc000_0202)
                } else {
                    (443, 0xc633_0000 + n as u128)
                };
                let (a, b) = ((hi | addr, port), (hi | 0xcb00_7101, 80));
                Key::new(l3, 0, 6, 0, a, b, false).0
            };
            for n in 0..max as u64 {
                let k = key(n);
                let h = t.hash(&k);
                let got = t.insert(h, &k, 0, |_| panic!("nothing expires"));
                assert!(
                    matches!(got, Some((_, Room::Free))),
                    "{l3:?} key {n} of {max}: {got:?}"
                );
                let e = t.entry_mut(got.unwrap().0);
                e.deadline = 1000;
                e.flags |= flag::ASSURED;
            }
            assert_eq!(t.count, max);
            // Grown to every bucket, each entry found where it went.
            let (in_use, all) = t.buckets_in_use();
            assert_eq!(in_use, all);
            for n in 0..max as u64 {
                let k = key(n);
                assert!(t.find(t.hash(&k), &k).is_some(), "{l3:?} key {n}");
            }
            t.clear();
            assert!(t.buckets_in_use().0 < all);
        }
    }
}

/// The first buckets of keys that differ in a port or an address alone
/// are as even as chance makes them: four keys a bucket on average leave
/// about e^-4 (1.8 %) of the buckets empty and none with 20.
#[test]
fn first_buckets_are_even() {
    let mut rng = Rng(17);
    for round in 0..8 {
        let t = Table::new(1 << 15, rng.next_u64());
        let (_, all) = t.buckets_in_use();
        let mut t = t;
        // Grown to every bucket (the growth's own path).
        let mut n = 0u64;
        while t.buckets_in_use().0 < all {
            let k = Key::new(L3::V4, 1, 17, 0, (n as u128, 7), (3, 9), false).0;
            let (s, _) = t.insert(t.hash(&k), &k, 0, |_| {}).unwrap();
            t.entry_mut(s).deadline = 1000;
            n += 1;
        }
        let mut per = vec![0u32; all];
        for i in 0..4 * all as u64 {
            let (a, b) = match round % 4 {
                0 => ((0xc000_0201, 1024 + i as u16), (0xc633_6401, 53)),
                1 => ((0xc000_0201, 53), (0xc633_0000 + i as u128, 53)),
                2 => (
                    (0xc000_0201 + (i as u128 >> 16), i as u16),
                    (0xcb00_7101, 443),
                ),
                _ => (
                    (rng.next_u64() as u32 as u128, 80),
                    (7, rng.next_u64() as u16),
                ),
            };
            let k = Key::new(L3::V4, 0, 6, 0, a, b, false).0;
            per[t.first_bucket(t.hash(&k))] += 1;
        }
        let empty = per.iter().filter(|&&c| c == 0).count();
        let most = *per.iter().max().unwrap();
        assert!(
            empty * 100 < 4 * all && most < 20,
            "round {round}: {empty} of {all} empty, {most} at most"
        );
    }
}

/// A full small table always finds an unassured entry to drop for a new
/// one, also when the new key's two buckets hold none (one left empty as
/// the table filled): a few buckets beyond give one up.
#[test]
fn a_full_small_table_always_drops_early() {
    let mut rng = Rng(23);
    for _ in 0..200 {
        let mut t = Table::new(16, rng.next_u64());
        let key = |n: u64| Key::new(L3::V4, 0, 17, 0, (n as u128, 5), (9, 53), false).0;
        for n in 0..2000u64 {
            let k = key(n);
            let h = t.hash(&k);
            let (s, room) = t.insert(h, &k, 0, |_| panic!("nothing expires")).unwrap();
            assert_eq!(room == Room::Free, n < 16, "key {n}: {room:?}");
            t.entry_mut(s).deadline = 1000 + n as u32;
            assert_eq!(t.find(h, &k), Some(s));
            assert_eq!(t.count, (n as usize + 1).min(16));
        }
    }
}

/// A table grows its buckets in use with its entries, a bucket at a
/// time, and every entry stays found as the buckets split under it.
#[test]
fn buckets_come_into_use_as_entries_come() {
    let mut rng = Rng(3);
    let mut t = Table::new(100_000, rng.next_u64());
    let key = |n: u64| Key::new(L3::V4, 0, 17, 0, (n as u128, 53), (1, 9), false).0;
    let (first, all) = t.buckets_in_use();
    assert!(first < all);
    let mut last = first;
    for n in 0..100_000u64 {
        let k = key(n);
        let h = t.hash(&k);
        let (s, _) = t.insert(h, &k, 0, |_| panic!("nothing expires")).unwrap();
        t.entry_mut(s).deadline = 1000;
        let (in_use, _) = t.buckets_in_use();
        assert!(in_use >= last && in_use <= last + 1);
        // No more than 2 entries a bucket in use on average.
        assert!(t.count <= 2 * in_use + 1 || in_use == all, "{n}");
        last = in_use;
        if n % 997 == 0 {
            for m in (0..=n).step_by(13) {
                let k = key(m);
                assert_eq!(t.find(t.hash(&k), &k).map(|s| t.entry(s).key), Some(k));
            }
        }
    }
}

/// A million connections fit in 256 MiB (a cache line an entry, buckets
/// of eight ways for twice as many, without per-connection counters:
/// about 84 MiB).
#[test]
fn a_million_connections_fit() {
    let c = config::Conntrack {
        enabled: true,
        max: 1 << 20,
        ..config::Conntrack::default()
    };
    let t = Tracker::new(&c, c.max);
    assert!(t.bytes() <= 256 << 20, "{} bytes", t.bytes());
}

/// Connections spread over the workers, even those that differ in a
/// port alone.
#[test]
fn owners_spread() {
    for workers in [2usize, 3, 8] {
        let mut n = vec![0; workers];
        for port in 0..4000u16 {
            let (key, rev) = Key::new(
                L3::V4,
                0,
                17,
                0,
                (0xc000_0202, 20000 + port),
                (0xc633_6402, 7000),
                false,
            );
            let seen = Seen::packet(key, rev, Kind::Udp);
            n[owner(&seen, workers).unwrap()] += 1;
        }
        for c in &n {
            assert!(*c > 4000 / workers * 8 / 10, "{n:?}");
        }
        // A client's consecutive ports go to every worker, soon.
        let first: std::collections::BTreeSet<usize> = (0..8 * workers as u16)
            .map(|port| {
                let (key, rev) = Key::new(L3::V4, 0, 17, 0, (1, 20000 + port), (2, 53), false);
                owner(&Seen::packet(key, rev, Kind::Udp), workers).unwrap()
            })
            .collect();
        assert_eq!(first.len(), workers);
    }
}

/// The established path (`established.rs`) is the general path where it
/// takes a packet: two trackers alike slot for slot, one taking each
/// packet the established way where it can and the general way
/// otherwise (as the pipeline does), the other always the general way,
/// meet random packets of a few connections (TCP flags of every class,
/// both directions, refused flows, stale and wrong slot hints, expiry,
/// new epochs, decisions kept or not): every packet's tracking, every
/// entry, the counters and the per-connection counts stay equal.
#[test]
fn established_path_is_the_general_one() {
    use tcp::flag::*;
    const FLAGS: [u8; 14] = [
        ACK,
        ACK,
        ACK,
        ACK,
        ACK,
        ACK,
        ACK | PSH,
        ACK | URG,
        ACK | ECE | CWR,
        SYN,
        SYN | ACK,
        FIN | ACK,
        RST,
        RST | ACK,
    ];
    for (round, acct) in [(0u64, false), (1, true), (2, false), (3, true)] {
        let c = config::Conntrack {
            enabled: true,
            max: 48,
            acct,
            ..config::Conntrack::default()
        };
        let seed = 0x5eed ^ round;
        let (mut a, mut b) = (
            Tracker::seeded(&c, c.max, seed),
            Tracker::seeded(&c, c.max, seed),
        );
        let mut rng = Rng(round + 41);
        let mut now = 1000u32;
        let (mut taken, mut refused) = (0, 0);
        for step in 0..40_000 {
            // A few hosts and ports each way: connections recur, and the
            // table fills (early drops, refused entries taken first).
            let v6 = rng.below(8) == 0;
            let l3 = if v6 { L3::V6 } else { L3::V4 };
            let x = (1 + rng.below(2) as u128, 1000 + rng.below(4) as u16);
            let y = (9, 53 + rng.below(2) as u16);
            let (src, dst) = if rng.below(2) == 0 { (x, y) } else { (y, x) };
            let seen = match rng.below(16) {
                0..=6 => {
                    let (key, rev) = Key::new(l3, 0, 17, 0, src, dst, false);
                    Seen::packet(key, rev, Kind::Udp)
                }
                7..=13 => {
                    let (key, rev) = Key::new(l3, 0, 6, 0, src, dst, false);
                    let flags = FLAGS[rng.below(FLAGS.len() as u64) as usize];
                    Seen::packet(key, rev, Kind::Tcp(flags))
                }
                14 => {
                    let answer = rng.below(2) == 0;
                    let (key, rev) = Key::new(l3, 0, 1, 8, (src.0, 7), (dst.0, 7), answer);
                    let kind = if answer {
                        Kind::IcmpReply
                    } else {
                        Kind::IcmpRequest
                    };
                    Seen::packet(key, rev, kind)
                }
                _ => {
                    let (key, _) = Key::new(l3, 0, 17, 0, src, dst, false);
                    Seen::error(key, rng.below(2) == 0)
                }
            };
            match rng.below(400) {
                0..=2 => now = now.wrapping_add(rng.below(3000) as u32),
                6 => {
                    a.new_epoch();
                    b.new_epoch();
                }
                _ => now = now.wrapping_add(1),
            }
            a.set_now(now);
            b.set_now(now);
            let h = a.hash(&seen);
            assert_eq!(h, b.hash(&seen));
            let hint = match rng.below(20) {
                0 => table::NO_SLOT,
                1 => rng.below(c.max as u64) as u32,
                _ => a.prefetch_entry(h, a.prefetch_tags(h)),
            };
            let len = 64 + rng.below(1400) as usize;
            let cached = rng.below(10) != 0;
            let mut t = Tracked::default();
            let fast = if cached {
                a.established(&seen, hint, || len, &mut t)
            } else {
                None
            };
            let ra = match fast {
                Some(d) => {
                    taken += 1;
                    refused += t.refused as usize;
                    (t, Some(d))
                }
                None => a.track_seen(&seen, h, hint, len, cached),
            };
            let rb = b.track_seen(&seen, h, hint, len, cached);
            assert_eq!(ra, rb, "round {round} step {step}: {seen:?}");
            if ra.1.is_none() {
                let d = if rng.below(4) == 0 {
                    Decision::drop(1, crate::reason::DropReason::Rule)
                } else {
                    Decision::forward(2, rng.below(3) as u32)
                };
                let keep = rng.below(8) != 0;
                assert_eq!(
                    a.commit(&ra.0, &seen, h, d, keep),
                    b.commit(&rb.0, &seen, h, d, keep)
                );
            }
            if ra.0.slot != NO_SLOT {
                let s = ra.0.slot as usize;
                assert_eq!(
                    format!("{:?}", a.table.entry(s)),
                    format!("{:?}", b.table.entry(s)),
                    "round {round} step {step}"
                );
            }
            if step % 1000 == 0 {
                for s in 0..c.max {
                    assert_eq!(a.table.used(s), b.table.used(s));
                    assert_eq!(
                        format!("{:?}", a.table.entry(s)),
                        format!("{:?}", b.table.entry(s))
                    );
                }
            }
        }
        assert_eq!(a.stats(), b.stats());
        assert_eq!(a.counts, b.counts);
        // The established path took a good share, refused flows among
        // them.
        assert!(
            taken > 4000 && refused > 100,
            "{taken} taken, {refused} refused"
        );
    }
}
