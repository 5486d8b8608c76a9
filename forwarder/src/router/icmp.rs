//! The router's ICMP: errors about packets it cannot forward and echo
//! replies, within Linux's rate limits (`[icmp]`: a bucket per core, and
//! one per destination for errors); `reject`'s TCP resets and
//! unreachables; and routing the router's own packets out.

use super::slow::{family, Bucket, Held, SlowPath};
use crate::neigh::nkey;
use crate::punt::{Buf, Counter};
use crate::tables::{HopKind, Tables};
use crate::wire::icmp::{self as messages, v4, v6};
use crate::wire::{self, ethertype, ip, proto, tcp};

/// Per-destination error buckets hold this many messages (Linux's
/// XRLIM_BURST_FACTOR).
const DST_BURST: f64 = 6.0;

/// Per-destination buckets kept before the oldest are forgotten.
const DST_BUCKETS: usize = 4096;

/// An ICMP error the router sends: its type and code for each family,
/// and the counter it counts in.
#[derive(Clone, Copy, Debug)]
pub(super) struct IcmpError {
    v4: (u8, u8),
    v6: (u8, u8),
    counter: Counter,
}

impl IcmpError {
    /// Time exceeded: the TTL or hop limit ran out.
    pub(super) const TIME_EXCEEDED: IcmpError = IcmpError {
        v4: (v4::TIME_EXCEEDED, 0),
        v6: (v6::TIME_EXCEEDED, 0),
        counter: Counter::IcmpTimeExceeded,
    };
    /// No route to the destination.
    pub(super) const NET_UNREACH: IcmpError = IcmpError {
        v4: (v4::UNREACH, v4::NET_UNREACH),
        v6: (v6::UNREACH, v6::NO_ROUTE),
        counter: Counter::IcmpUnreachable,
    };
    /// `reject` of UDP, or UDP to a port of ours nothing serves.
    pub(super) const PORT_UNREACH: IcmpError = IcmpError {
        v4: (v4::UNREACH, v4::PORT_UNREACH),
        v6: (v6::UNREACH, v6::PORT_UNREACH),
        counter: Counter::IcmpUnreachable,
    };
    /// `reject` of anything but TCP and UDP.
    pub(super) const ADMIN_PROHIBITED: IcmpError = IcmpError {
        v4: (v4::UNREACH, v4::ADMIN_PROHIBITED),
        v6: (v6::UNREACH, v6::ADMIN_PROHIBITED),
        counter: Counter::IcmpUnreachable,
    };
    /// Larger than the egress port's MTU: fragmentation needed, packet too
    /// big.
    pub(super) const TOO_BIG: IcmpError = IcmpError {
        v4: (v4::UNREACH, v4::FRAG_NEEDED),
        v6: (v6::TOO_BIG, 0),
        counter: Counter::IcmpTooBig,
    };
}

impl SlowPath {
    /// A frame larger than its egress port's MTU: packet too big, or
    /// fragmentation needed where the IPv4 packet says not to fragment
    /// (no fragmentation here: one that may be fragmented is dropped,
    /// counted as too big).
    pub(super) fn too_big(&mut self, t: &Tables, b: &Buf, w: u16) {
        let f = b.frame();
        let mtu = t
            .fib
            .targets()
            .hops()
            .get(b.hop as usize)
            .and_then(|h| t.ports.get(h.port as usize))
            .map_or(1500, |p| p.mtu);
        let v4_df = ip::ipv4_parts(f).is_some_and(|(.., pkt)| pkt[6] & 0x40 != 0);
        let v6 = ip::ipv6_parts(f).is_some();
        if !v6 && !v4_df {
            return;
        }
        let rest = if v6 {
            (mtu as u32).to_be_bytes()
        } else {
            let m = mtu.to_be_bytes();
            [0, 0, m[0], m[1]]
        };
        self.error(t, b.port, w, f, IcmpError::TOO_BIG, rest);
    }

    /// Whether the rate limits let one more ICMP message go: the
    /// worker's bucket, and for errors the destination's.
    pub(super) fn allow(&mut self, w: u16, dst: u128, error: bool) -> bool {
        let now = self.now;
        let s = self.settings.icmp;
        let ok = if s.msgs_per_sec == 0 {
            true
        } else {
            let last = self.workers.len() - 1;
            let b = &mut self.workers[(w as usize).min(last)];
            b.take(
                now,
                s.msgs_per_sec as f64 / 1000.0,
                s.msgs_burst.max(1) as f64,
            )
        };
        let ok = ok
            && (!error || s.ratelimit_ms == 0 || {
                if self.per_dst.len() >= DST_BUCKETS && !self.per_dst.contains_key(&dst) {
                    self.per_dst.clear();
                }
                self.per_dst
                    .entry(dst)
                    .or_insert(Bucket {
                        tokens: DST_BURST,
                        at: now,
                    })
                    .take(now, 1.0 / s.ratelimit_ms as f64, DST_BURST)
            });
        if !ok {
            self.shared.counters.inc(Counter::IcmpRateLimited);
        }
        ok
    }

    /// Sends error `e` about the packet of `f` (punted by worker `w` from
    /// `port`) to its source, with `rest` as the 4 bytes after the
    /// checksum, if the packet may have one and the rate limits allow.
    pub(super) fn error(
        &mut self,
        t: &Tables,
        port: u16,
        w: u16,
        f: &[u8],
        e: IcmpError,
        rest: [u8; 4],
    ) {
        let IcmpError { v4, v6, counter } = e;
        let sh = self.shared.clone();
        let c = &sh.counters;
        let too_big = counter == Counter::IcmpTooBig;
        let (is6, osrc) = if let Some((s, ..)) = ip::ipv4_parts(f) {
            if !messages::v4_errors_allowed(f) {
                c.inc(Counter::IcmpSuppressed);
                return;
            }
            (false, s as u128)
        } else if let Some((s, ..)) = ip::ipv6_parts(f) {
            if !messages::v6_errors_allowed(f, too_big) {
                c.inc(Counter::IcmpSuppressed);
                return;
            }
            (true, s)
        } else {
            c.inc(Counter::IcmpSuppressed);
            return;
        };
        let Some(src) = Self::source(t, port, is6, osrc) else {
            c.inc(Counter::IcmpSuppressed);
            return;
        };
        let pkt = if is6 {
            messages::icmp6_error(f, src, v6.0, v6.1, rest)
        } else {
            messages::icmp4_error(f, src as u32, v4.0, v4.1, rest)
        };
        let Some(pkt) = pkt else { return };
        // As Linux: path MTU discovery's messages are not limited per
        // destination (limiting them breaks it), only per core.
        if self.allow(w, osrc, !too_big) {
            self.route_out(t, w, t.vrf_of(port), is6, osrc, pkt, counter);
        }
    }

    pub(super) fn reject(&mut self, t: &Tables, port: u16, w: u16, f: &[u8]) {
        let Ok(p) = wire::parse(f) else { return };
        let l4 = p.proto;
        if l4 == proto::TCP {
            let Some(rst) = tcp::tcp_reset(f) else {
                return;
            };
            let (v6, dst) = (p.l3 == wire::L3::V6, p.src);
            if self.allow(w, dst, true) {
                self.route_out(t, w, t.vrf_of(port), v6, dst, rst, Counter::TcpResets);
            }
        } else if l4 == proto::UDP {
            self.error(t, port, w, f, IcmpError::PORT_UNREACH, [0; 4])
        } else {
            self.error(t, port, w, f, IcmpError::ADMIN_PROHIBITED, [0; 4])
        }
    }

    /// Routes an IP packet of our own to `dst` in VRF `vrf` (the port's
    /// whose packet it answers) and sends it (or holds it while its
    /// neighbour resolves), counting `counter` when it goes.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn route_out(
        &mut self,
        t: &Tables,
        w: u16,
        vrf: u8,
        v6: bool,
        dst: u128,
        pkt: Vec<u8>,
        counter: Counter,
    ) {
        let sh = self.shared.clone();
        let c = &sh.counters;
        let targets = t.fib.targets();
        let Some(hop) = t
            .fib
            .vrf(vrf as usize)
            .and_then(|r| r.lookup(family(v6), dst))
            .and_then(|tg| targets.resolve_index(tg, 0))
        else {
            c.inc(Counter::InjectDropped);
            return;
        };
        let nh = targets.hops()[hop as usize];
        let et = if v6 { ethertype::IPV6 } else { ethertype::IPV4 };
        c.inc(counter);
        let key = match t.hop_kinds.get(hop as usize) {
            Some(HopKind::Static) => {
                self.out(
                    w as usize,
                    nh.port,
                    &ip::ether(nh.dst_mac, nh.src_mac, et, &pkt),
                );
                return;
            }
            Some(&HopKind::Gateway { addr, v6 }) => (nh.port, nkey(v6, addr)),
            Some(HopKind::Connected) => (nh.port, nkey(v6, dst)),
            _ => {
                c.inc(Counter::InjectDropped);
                return;
            }
        };
        self.send_via(
            t,
            key,
            Held {
                bytes: pkt,
                ethertype: Some(et),
                worker: w,
            },
        );
    }
}
