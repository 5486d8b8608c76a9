//! The synthetic port: needs no privileges or NIC. Its receive side
//! writes pre-built frames of a configurable flow mix into the burst's
//! buffers on every receive, as a NIC's DMA would; its transmit side
//! counts what comes out and checks it (TTL decremented once, source MAC
//! the egress port's own).

use super::burst::{Burst, MAX_BURST};
use super::queue::{Port, PortStats};
use crate::wire::build::{ipv4, ipv6, L4};
use config::driver::SyntheticOptions;
use config::{Config, Source};
use routecache::gen::Rng;

/// TTL / hop limit of every generated frame.
pub const TTL: u8 = 64;

/// Replaces `cfg`'s routes with a full table: `v4` IPv4 and `v6` IPv6
/// generated routes (a fixed seed: the same table every time) over its
/// next hops, in turn. What `bench forward` and `examples/turns` route
/// in; synthetic ports then aim their flows at these routes.
pub fn full_table(cfg: &mut Config, v4: usize, v6: usize) {
    let hops = cfg.next_hops.len().max(1);
    cfg.routes.clear();
    cfg.file_routes = Vec::new().into();
    for (f, n, v6) in [
        (routecache::Family::V4, v4, false),
        (routecache::Family::V6, v6, true),
    ] {
        for (i, (prefix, len)) in routecache::gen::prefixes(f, n, 0xf00d)
            .into_iter()
            .enumerate()
        {
            cfg.routes.push(config::RouteConfig {
                v6,
                prefix,
                len,
                via: config::Via::NextHop(i % hops),
                line: 0,
                vrf: 0,
            });
        }
    }
}

/// Makes `cfg`'s next hops gateways given by address, as if ARP or
/// neighbour discovery had resolved them to their configured MACs: port
/// `i` gets the address `2001:db8:ffff:i::1/64` (a network no synthetic
/// flow aims at), next hop `j` the address `2001:db8:ffff:i::100+j` on its
/// port and no MAC. Returns the neighbour table the slow path would have
/// published: what `bench forward`'s `+resolved` variants and
/// `examples/turns` (with `TURNS_RESOLVED=1`) give the workers.
pub fn gateways_resolved(cfg: &mut Config) -> crate::neigh::NeighTable {
    let net = |p: usize| 0x2001_0db8_ffffu128 << 80 | (p as u128) << 64;
    for (i, p) in cfg.ports.iter_mut().enumerate() {
        p.addresses = vec![config::PortAddress {
            ip: std::net::IpAddr::V6(std::net::Ipv6Addr::from(net(i) | 1)),
            len: 64,
        }];
    }
    let mut t = crate::neigh::NeighTable::default();
    for (j, h) in cfg.next_hops.iter_mut().enumerate() {
        let addr = net(h.port) | (0x100 + j as u128);
        if let Some(mac) = h.mac.take() {
            t.map
                .insert((h.port as u16, crate::neigh::nkey(true, addr)), Some(mac));
        }
        h.address = Some(std::net::IpAddr::V6(std::net::Ipv6Addr::from(addr)));
    }
    t
}

/// Puts `cfg`'s traffic on VLAN `vid`: every synthetic port's frames
/// tagged (the tag counts in `frame_size`: a frame is as long as
/// untagged, but for IPv6's, 66 bytes at least tagged) and received by a
/// sub-interface `NAME.VID` of the port, every next hop moved to its
/// port's sub-interface. Frames then come and leave tagged (the tag
/// swapped), where untagged traffic's are not: what `bench forward`'s
/// `+vlan` variants and `examples/turns` (with `TURNS_VLAN=1`) run.
pub fn on_vlans(cfg: &mut Config, vid: u16) {
    let physical = cfg.physical_ports();
    for i in 0..physical {
        let p = &mut cfg.ports[i];
        if let config::Driver::Synthetic(o) = &mut p.driver {
            o.vlan = vid;
        }
        let sub = config::PortConfig {
            name: format!("{}.{vid}", p.name),
            driver: config::Driver::Vlan(config::driver::VlanOptions {
                parent: i,
                tags: vec![vid],
            }),
            addresses: Vec::new(),
            tap: None,
            kernel_interface: None,
            ..p.clone()
        };
        cfg.ports.push(sub);
    }
    for h in &mut cfg.next_hops {
        if h.port < physical {
            h.port += physical;
        }
    }
}

/// Puts every port and route of `cfg` in a VRF of its own (`tenant`,
/// VRF 1): the same traffic and routes, looked up in a VRF's table
/// behind the snapshot's index rather than the default one's in place.
/// What `bench forward`'s `+vrf` variants and `examples/turns` (with
/// `TURNS_VRF=1`) run.
pub fn in_vrf(cfg: &mut Config) {
    let file_routes: Vec<config::RouteConfig> = cfg
        .file_routes
        .iter()
        .map(|r| config::RouteConfig { vrf: 1, ..*r })
        .collect();
    cfg.file_routes = Vec::new().into();
    cfg.vrfs.push(config::VrfConfig {
        name: "tenant".into(),
        table: None,
        route_file: None,
        file_routes: file_routes.into(),
    });
    for p in &mut cfg.ports {
        p.vrf = 1;
    }
    for r in &mut cfg.routes {
        r.vrf = 1;
    }
}

/// One queue of a synthetic port.
pub struct SyntheticPort {
    name: String,
    mac: [u8; 6],
    /// The frames, back to back from `base`, `stride` bytes apart (whole
    /// cache lines, the first one aligned), the way a NIC's receive ring
    /// holds them: a burst's receive reads consecutive lines, not one
    /// heap block per frame.
    arena: Vec<u8>,
    base: usize,
    stride: usize,
    lens: Vec<u16>,
    /// `upto[i]`: the bytes of frames `0..i` of the mix, so that a run's
    /// bytes are one subtraction (received bytes are counted without
    /// going over the run's lengths again).
    upto: Vec<u64>,
    next: usize,
    verify: bool,
    stats: PortStats,
}

/// A random host address inside one of `routes`.
fn host_in(rng: &mut Rng, routes: &[&config::RouteConfig], v6: bool) -> Option<u128> {
    if routes.is_empty() {
        return None;
    }
    let r = routes[rng.below(routes.len() as u64) as usize];
    let w = if v6 { 128 } else { 32 };
    let rand = (rng.next_u64() as u128) << 64 | rng.next_u64() as u128;
    let host = match w - r.len {
        0 => 0,
        128 => rand,
        h => rand & ((1u128 << h) - 1),
    };
    Some(r.prefix | host)
}

impl SyntheticPort {
    /// Queue `queue` of port `index` of `cfg`, which must be a synthetic
    /// port (what the benchmarks replay elsewhere).
    pub fn of(cfg: &Config, index: usize, queue: usize) -> Result<SyntheticPort, String> {
        let p = &cfg.ports[index];
        match &p.driver {
            config::Driver::Synthetic(o) => SyntheticPort::new(cfg, index, queue, o),
            d => Err(format!(
                "{}: port `{}` has the `{}` driver, not the synthetic one",
                p.at,
                p.name,
                d.name()
            )),
        }
    }

    /// A queue of port `index` of `cfg`, generating its flow mix. Flows
    /// go to addresses inside the configured routes; `set_hit_percent` of
    /// them take the destination and port of an element of the first set
    /// fed by a destination address and a destination port.
    pub fn new(
        cfg: &Config,
        index: usize,
        queue: usize,
        o: &SyntheticOptions,
    ) -> Result<SyntheticPort, String> {
        let p = &cfg.ports[index];
        let mut rng = Rng(o.seed ^ ((index as u64) << 32) ^ queue as u64);
        let hit_set = cfg.sets.iter().find(|s| {
            s.sources.len() == 2
                && matches!(s.sources[0], Source::IpDaddr | Source::Ip6Daddr)
                && matches!(s.sources[1], Source::Dport(_))
                && !s.elements.is_empty()
        });
        let mut frames = Vec::with_capacity(o.flows);
        let v4_routes: Vec<_> = cfg.all_routes().filter(|r| !r.v6).collect();
        let v6_routes: Vec<_> = cfg.all_routes().filter(|r| r.v6).collect();
        for _ in 0..o.flows {
            let v6 = rng.below(100) < o.ipv6_percent as u64;
            let routes = if v6 { &v6_routes } else { &v4_routes };
            let mut dst = host_in(&mut rng, routes, v6);
            let mut dport = 1024 + rng.below(60000) as u16;
            let mut v6 = v6 && dst.is_some();
            if let Some(s) = hit_set.filter(|_| rng.below(100) < o.set_hit_percent as u64) {
                let e = &s.elements[rng.below(s.elements.len() as u64) as usize];
                v6 = s.sources[0] == Source::Ip6Daddr;
                dst = Some(e.key[0].start);
                dport = e.key[1].start as u16;
            }
            let src = rng.next_u64() as u128;
            let sport = 1024 + rng.below(60000) as u16;
            // The headers, a VLAN tag's 4 bytes among them: a frame is
            // `frame_size` bytes whether tagged or not.
            let tag = if o.vlan > 0 { 4 } else { 0 };
            let payload = o
                .frame_size
                .saturating_sub(if v6 { 14 + 40 + 8 } else { 14 + 20 + 8 } + tag);
            let l4 = L4::Udp(sport, dport);
            let frame = match (v6, dst) {
                (true, Some(d)) => ipv6(0x2001_0db8_ffff << 80 | src, d, TTL, l4, payload),
                (false, Some(d)) => ipv4(
                    0xc000_0200 | (src as u32 & 0xff),
                    d as u32,
                    TTL,
                    l4,
                    payload,
                ),
                // No route of that family: traffic that will be dropped
                // as unroutable, which is traffic too.
                (_, None) => ipv4(0xc000_0201, 0xcb00_7101, TTL, l4, payload),
            };
            frames.push(match o.vlan {
                0 => frame,
                // Tagged for a sub-interface: the tag after the source
                // MAC, the frame 4 bytes longer.
                id => [&frame[..12], &[0x81, 0], &id.to_be_bytes(), &frame[12..]].concat(),
            });
        }
        let stride = frames
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .div_ceil(64)
            .max(1)
            * 64;
        let mut arena = vec![0u8; frames.len() * stride + 64];
        let base = arena.as_ptr().align_offset(64).min(64);
        for (i, f) in frames.iter().enumerate() {
            arena[base + i * stride..][..f.len()].copy_from_slice(f);
        }
        Ok(SyntheticPort {
            name: p.name.clone(),
            mac: p.mac,
            arena,
            base,
            stride,
            lens: frames.iter().map(|f| f.len() as u16).collect(),
            upto: std::iter::once(0)
                .chain(frames.iter().scan(0u64, |sum, f| {
                    *sum += f.len() as u64;
                    Some(*sum)
                }))
                .collect(),
            next: 0,
            verify: o.verify,
            stats: PortStats::default(),
        })
    }
}

impl SyntheticPort {
    /// The frames this queue generates, in order (what `bench dpdk`
    /// writes into a pcap file for DPDK's pcap device to replay).
    pub fn frames(&self) -> Vec<Vec<u8>> {
        (0..self.lens.len())
            .map(|i| self.frame(i).to_vec())
            .collect()
    }

    /// Frame `i` of the mix.
    #[inline(always)]
    fn frame(&self, i: usize) -> &[u8] {
        &self.arena[self.base + i * self.stride..][..self.lens[i] as usize]
    }
}

impl Port for SyntheticPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn rx_burst(&mut self, burst: &mut Burst, max: usize) -> usize {
        let mut left = max.min(MAX_BURST - burst.len());
        let mut n = 0;
        // The mix's next frames, a run up to the end of the mix at a time,
        // then from its start again (more than twice for a mix smaller
        // than a burst).
        while left > 0 && !self.lens.is_empty() {
            let run = left.min(self.lens.len() - self.next);
            let from = self.base + self.next * self.stride;
            let got = burst.push_strided(
                &self.arena[from..],
                self.stride,
                &self.lens[self.next..self.next + run],
            );
            n += got;
            left -= got;
            self.stats.rx_bytes += self.upto[self.next + got] - self.upto[self.next];
            self.next += got;
            if self.next == self.lens.len() {
                self.next = 0;
            }
            if got < run {
                break;
            }
        }
        self.stats.rx += n as u64;
        n
    }

    fn tx_burst(&mut self, burst: &mut Burst, which: &[u8]) -> usize {
        // Summed in a register from the lengths: added to the counter
        // frame by frame, it is a store each.
        self.stats.tx_bytes += burst.bytes_of(which);
        if self.verify {
            for &i in which {
                // What a forwarded frame must look like: our MAC as
                // source, the TTL or hop limit decremented exactly once.
                let f = burst.frame(i as usize);
                let ttl = match crate::wire::parse(f) {
                    Ok(p) => p.ttl,
                    Err(_) => 0,
                };
                if f[6..12] != self.mac || ttl != TTL - 1 {
                    self.stats.tx_bad += 1;
                }
            }
        }
        self.stats.tx += which.len() as u64;
        which.len()
    }

    fn stats(&self) -> PortStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Receives from the arena give exactly the generated frames, in
    /// order and wrapping around, whatever room each burst has; here with
    /// a frame size that is not whole cache lines, IPv4 and IPv6 frames.
    #[test]
    fn receives_replay_the_frames_in_order() {
        let text = r#"
route = [{ prefix = "198.51.100.0/24", via = "gw" }, { prefix = "2001:db8::/32", via = "gw" }]
[[port]]
name = "p"
mac = "02:00:00:00:00:01"
[port.options]
flows = 37
ipv6_percent = 50
frame_size = 100
[[next_hop]]
name = "gw"
port = "p"
mac = "02:00:00:00:00:02"
"#;
        let cfg = config::parse("t.toml", text, std::path::Path::new(".")).unwrap();
        let mut port = SyntheticPort::of(&cfg, 0, 0).unwrap();
        let frames = port.frames();
        assert_eq!(frames.len(), 37);
        assert!(frames.iter().all(|f| f.len() == 100));
        // Read back from the arena where they were laid: whole frames.
        assert!(frames.iter().all(|f| crate::wire::parse(f).is_ok()));
        let v6 = frames.iter().filter(|f| f[12..14] == [0x86, 0xdd]).count();
        assert!(v6 > 0 && v6 < 37, "{v6} IPv6 frames of 37");
        let mut burst = Burst::new();
        let mut want = frames.iter().cycle();
        for round in 0..40 {
            burst.clear();
            // Part of the burst already taken, then more asked than
            // fits, or less.
            for _ in 0..round % 3 {
                burst.push(&[0; 64]);
            }
            let before = burst.len();
            let bytes = port.stats().rx_bytes;
            let max = [5, 32, 64, 70][round % 4];
            let n = port.rx_burst(&mut burst, max);
            assert_eq!(n, max.min(MAX_BURST - before));
            // Received bytes: the frames' lengths, summed once a run.
            assert_eq!(port.stats().rx_bytes - bytes, burst.bytes_from(before));
            for i in before..burst.len() {
                assert_eq!(burst.frame(i), want.next().unwrap().as_slice());
            }
        }
    }
}
