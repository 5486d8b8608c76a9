//! VLAN sub-interfaces on the fast path: which port a tagged frame came
//! in on, and the tags a port's frames leave with.
//!
//! A sub-interface (`parent`, `vlan` in `[[port]]`) is a port with an
//! index of its own (after every port with a driver) and no queues: its
//! frames arrive and leave through its parent's. A worker looks at a
//! frame's tags only when it has some (the parse put its IP header past
//! byte 14), so untagged traffic pays one compare a packet.

use config::{Driver, PortConfig};

/// 802.1Q's tag protocol identifier.
const TPID_8021Q: u16 = 0x8100;
/// 802.1ad's (an outer, service tag).
const TPID_8021AD: u16 = 0x88a8;

/// How a port's frames leave: through which port's queues, with which
/// tags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Link {
    /// The port with the queues (the port itself, or a sub-interface's
    /// parent).
    pub queue: u16,
    /// The tags as they follow the source MAC (TPID and TCI each, outer
    /// first); `len` bytes of them.
    pub tags: [u8; 8],
    /// 0 (untagged), 4 or 8.
    pub len: u8,
}

/// The sub-interfaces of a configuration, as the workers look them up.
#[derive(Clone, Debug, Default)]
pub struct Vlans {
    /// Per port, how its frames leave.
    pub links: Vec<Link>,
    /// Per port with a driver: its sub-interfaces by tag key (see
    /// [`key`]), sorted for a binary search.
    by_tag: Vec<Vec<(u32, u16)>>,
    /// Per port with a driver that has single-tagged sub-interfaces: by
    /// VLAN ID, the sub-interface's index plus one (0: none), so that
    /// the usual frame's lookup is one load.
    by_vid: Vec<Box<[u16]>>,
}

/// A sub-interface's key: its one VLAN ID, or both (with a bit that
/// keeps the two kinds apart).
fn key(tags: &[u16]) -> u32 {
    match tags {
        [one] => *one as u32 & 0xfff,
        [outer, inner, ..] => 1 << 24 | (*outer as u32 & 0xfff) << 12 | (*inner as u32 & 0xfff),
        [] => 0,
    }
}

/// Where a received frame belongs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ingress {
    /// To port `port`, whose tags (`strip` bytes after the source MAC)
    /// the slow path does not see: a sub-interface's, or a priority tag
    /// (VLAN ID 0) on its parent.
    Port {
        /// The port.
        port: u16,
        /// Bytes of tags.
        strip: u8,
    },
    /// Tagged for no sub-interface: dropped, counted.
    Unknown,
}

/// How port `port` of `ports` sends: through its own queues untagged,
/// or a sub-interface's through its parent's, tagged (untagged through
/// itself for a port `ports` lacks).
pub fn link_of(ports: &[PortConfig], port: u16) -> Link {
    match ports.get(port as usize).map(|p| &p.driver) {
        Some(Driver::Vlan(o)) => {
            let (tags, len) = o.wire();
            Link {
                queue: o.parent as u16,
                tags,
                len: len as u8,
            }
        }
        _ => Link {
            queue: port,
            ..Link::default()
        },
    }
}

impl Vlans {
    /// The sub-interfaces of `ports` (a checked configuration's: every
    /// sub-interface's parent has a driver).
    pub fn new(ports: &[PortConfig]) -> Vlans {
        let mut v = Vlans::default();
        for (i, p) in ports.iter().enumerate() {
            match &p.driver {
                Driver::Vlan(o) => {
                    if let Some(t) = v.by_tag.get_mut(o.parent) {
                        t.push((key(&o.tags), i as u16));
                    }
                }
                _ => v.by_tag.push(Vec::new()),
            }
            v.links.push(link_of(ports, i as u16));
        }
        for t in &mut v.by_tag {
            t.sort_unstable();
        }
        v.by_vid = v
            .by_tag
            .iter()
            .map(|t| {
                let mut ids = vec![0u16; if t.is_empty() { 0 } else { 4096 }];
                for &(k, port) in t.iter().filter(|(k, _)| *k < 4096) {
                    ids[k as usize] = port + 1;
                }
                ids.into_boxed_slice()
            })
            .collect();
        v
    }

    /// The port a frame received on port `queue` belongs to, from its
    /// tags: the sub-interface whose tags it carries (both of them when
    /// it has two), the port itself for a priority tag, or none.
    #[inline]
    pub fn ingress(&self, queue: u16, frame: &[u8]) -> Ingress {
        if let Some(i) = Vlans::one_tag_in(self.by_vid(queue), queue, frame) {
            return i;
        }
        let be16 = |at: usize| crate::wire::be16(frame, at);
        let tagged = |t: Option<u16>| matches!(t, Some(TPID_8021Q | TPID_8021AD));
        if !tagged(be16(12)) {
            return Ingress::Port {
                port: queue,
                strip: 0,
            };
        }
        let Some(outer) = be16(14).map(|t| t & 0xfff) else {
            return Ingress::Unknown;
        };
        let subs = self.by_tag.get(queue as usize).map_or(&[][..], |t| t);
        let find = |k: u32| {
            subs.binary_search_by_key(&k, |&(k, _)| k)
                .ok()
                .map(|i| subs[i].1)
        };
        if tagged(be16(16)) {
            let inner = be16(18).unwrap_or(0) & 0xfff;
            return match find(key(&[outer, inner])) {
                Some(port) => Ingress::Port { port, strip: 8 },
                None => Ingress::Unknown,
            };
        }
        Vlans::one_tag(self.by_vid(queue), queue, outer)
    }

    /// The sub-interfaces of port `queue` with one tag, by VLAN ID (the
    /// index plus one; 0: none), for [`Vlans::one_tag_in`].
    #[inline]
    pub fn by_vid(&self, queue: u16) -> &[u16] {
        self.by_vid.get(queue as usize).map_or(&[][..], |t| t)
    }

    /// [`Vlans::ingress`] of the usual tagged frame, given port `queue`'s
    /// [`Vlans::by_vid`]: one 802.1Q tag, read in one go; `None` for any
    /// other frame (which [`Vlans::ingress`] places).
    #[inline(always)]
    pub fn one_tag_in(ids: &[u16], queue: u16, frame: &[u8]) -> Option<Ingress> {
        let h = frame.get(12..)?.first_chunk::<8>()?;
        if h[..2] != [0x81, 0] || matches!(h[4..6], [0x81, 0] | [0x88, 0xa8]) {
            return None;
        }
        Some(Vlans::one_tag(
            ids,
            queue,
            u16::from_be_bytes([h[2], h[3]]) & 0xfff,
        ))
    }

    /// Where a frame with one tag, VLAN `vid`, received on `queue` (whose
    /// [`Vlans::by_vid`] is `ids`) belongs: its sub-interface, the port
    /// itself for a priority tag (VLAN 0), or none.
    #[inline(always)]
    fn one_tag(ids: &[u16], queue: u16, vid: u16) -> Ingress {
        match (vid, ids.get(vid as usize).copied().unwrap_or(0)) {
            (0, _) => Ingress::Port {
                port: queue,
                strip: 4,
            },
            (_, 0) => Ingress::Unknown,
            (_, port) => Ingress::Port {
                port: port - 1,
                strip: 4,
            },
        }
    }

    /// How port `port`'s frames leave (untagged through itself for a port
    /// it does not know).
    #[inline]
    pub fn link(&self, port: u16) -> Link {
        self.links.get(port as usize).copied().unwrap_or(Link {
            queue: port,
            ..Link::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports(text: &str) -> Vec<PortConfig> {
        config::parse("t.toml", text, std::path::Path::new("."))
            .unwrap_or_else(|e| panic!("{e:?}"))
            .ports
    }

    fn frame(tags: &[(u16, u16)]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        for &(tpid, id) in tags {
            f.extend(tpid.to_be_bytes());
            f.extend(id.to_be_bytes());
        }
        f.extend(0x0800u16.to_be_bytes());
        f.resize(64, 0);
        f
    }

    const CFG: &str = r#"
[[port]]
name = "lan.100"
parent = "lan"
vlan = 100
[[port]]
name = "lan"
[[port]]
name = "wan"
[[port]]
name = "lan.qinq"
parent = "lan"
vlan = [200, 7]
"#;

    /// Sub-interfaces come after the ports with drivers, whatever the
    /// file's order; each frame finds the port its tags name, and a tag
    /// naming none is unknown (also where only the outer one matches).
    #[test]
    fn frames_find_their_sub_interface() {
        let ps = ports(CFG);
        let names: Vec<&str> = ps.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["lan", "wan", "lan.100", "lan.qinq"]);
        let v = Vlans::new(&ps);
        assert!(!v.by_vid(0).is_empty() && v.by_vid(1).is_empty());
        let at = |q, f: &[u8]| v.ingress(q, f);
        let port = |port, strip| Ingress::Port { port, strip };
        assert_eq!(at(0, &frame(&[])), port(0, 0));
        assert_eq!(at(1, &frame(&[])), port(1, 0));
        assert_eq!(at(0, &frame(&[(0x8100, 100)])), port(2, 4));
        // The priority bits are not the VLAN's.
        assert_eq!(at(0, &frame(&[(0x8100, 0xe000 | 100)])), port(2, 4));
        assert_eq!(at(0, &frame(&[(0x8100, 0)])), port(0, 4));
        assert_eq!(at(0, &frame(&[(0x8100, 101)])), Ingress::Unknown);
        assert_eq!(at(1, &frame(&[(0x8100, 100)])), Ingress::Unknown);
        assert_eq!(at(0, &frame(&[(0x88a8, 200), (0x8100, 7)])), port(3, 8));
        assert_eq!(
            at(0, &frame(&[(0x88a8, 200), (0x8100, 8)])),
            Ingress::Unknown
        );
        assert_eq!(
            at(0, &frame(&[(0x8100, 100), (0x8100, 5)])),
            Ingress::Unknown
        );
        // A tag cut short.
        assert_eq!(at(0, &frame(&[(0x8100, 100)])[..15]), Ingress::Unknown);
        assert_eq!(
            v.link(0),
            Link {
                queue: 0,
                ..Link::default()
            }
        );
        let l = v.link(3);
        assert_eq!((l.queue, l.len), (0, 8));
        assert_eq!(l.tags, [0x88, 0xa8, 0, 200, 0x81, 0, 0, 7]);
        assert_eq!(v.link(2).tags[..4], [0x81, 0, 0, 100]);
        assert!(Vlans::new(&ports("[[port]]\nname = \"a\"\n"))
            .by_vid(0)
            .is_empty());
    }
}
