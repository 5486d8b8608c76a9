//! The DPDK port's receive filter and send paths, in process, on a
//! `net_ring` device (what is sent on it comes back on its receive side,
//! in order), against a reference: a frame is taken when it holds an
//! Ethernet header and is addressed to the port's MAC or carries ARP;
//! the others are counted as ignored. Whatever path a send takes (the
//! received mbufs as they are, gathered in another order, or copies of
//! frames in our own buffers), the same bytes come back. Bursts range
//! from wholly usual frames (for us, with an Ethernet header) to mostly
//! frames just off them (short, one bit from our MAC), whichever way the
//! shim's loop is written.
//!
//! Its own test binary: the EAL is started once per process and released
//! at the end.

#[cfg(feature = "dpdk")]
mod ring {
    use forwarder::port::dpdk::DpdkPort;
    use forwarder::port::{Burst, Port, MAX_BURST};
    use routecache::gen::Rng;

    const MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];

    fn port() -> DpdkPort {
        let dir = std::env::temp_dir();
        let text = format!(
            r#"
[forwarder]
cores = [0]
[[port]]
name = "r"
driver = "dpdk"
mac = "02:00:00:00:00:02"
[port.options]
device = "net_ring7"
eal = ["--no-huge", "-m", "256", "--no-pci", "--vdev", "net_ring7", "--file-prefix", "fwdport{}", "--log-level", "lib.eal:error"]
mbufs = 4096
"#,
            std::process::id()
        );
        let cfg = config::parse("dpdk_port.toml", &text, &dir).unwrap();
        let config::Driver::Dpdk(o) = &cfg.ports[0].driver else {
            panic!("a dpdk port")
        };
        DpdkPort::open(&cfg, 0, 0, o).unwrap()
    }

    /// A random frame: with `usual` percent probability the usual kind
    /// (for us, 15 bytes or more), else one
    /// just off it (short, another MAC by one bit, broadcast, random) or
    /// ARP.
    fn frame(rng: &mut Rng, usual: u64) -> Vec<u8> {
        let mut f: Vec<u8> = (0..15 + rng.below(1500))
            .map(|_| rng.next_u64() as u8)
            .collect();
        f[..6].copy_from_slice(&MAC);
        if rng.below(100) < usual {
            return f;
        }
        match rng.below(6) {
            // Around the header's 14 bytes, or shorter still.
            0 => f.truncate([13, 14, rng.below(13)][rng.below(3) as usize] as usize),
            1 => f[rng.below(6) as usize] ^= 1 << rng.below(8),
            2 => f[..6].fill(0xff),
            3 => f[..6].copy_from_slice(&rng.next_u64().to_le_bytes()[..6]),
            _ => {}
        }
        if f.len() >= 14 && rng.below(4) == 0 {
            f[12..14].copy_from_slice(&[0x08, 0x06]);
        }
        f
    }

    fn wanted(f: &[u8]) -> bool {
        f.len() >= 14 && (f[..6] == MAC || f[12..14] == [0x08, 0x06])
    }

    /// Receives until the `sent` frames came back, taken or ignored (the
    /// ring gives back what was sent at once; a few polls are allowed),
    /// and checks that `n` were taken.
    fn receive(p: &mut DpdkPort, b: &mut Burst, sent: usize, n: usize) {
        let seen = |p: &DpdkPort| {
            let s = p.stats();
            s.rx + s.rx_ignored + s.rx_truncated
        };
        let until = seen(p) + sent as u64;
        b.clear();
        for _ in 0..100 {
            if seen(p) >= until {
                break;
            }
            p.rx_burst(b, MAX_BURST);
        }
        assert_eq!(seen(p), until, "frames back");
        assert_eq!(b.len(), n, "frames taken");
    }

    fn frames(b: &Burst) -> Vec<Vec<u8>> {
        (0..b.len()).map(|i| b.frame(i).to_vec()).collect()
    }

    /// Releases the EAL and removes its runtime files when dropped, after
    /// the port (declared after it): a failing assertion leaves nothing
    /// under /var/run/dpdk either.
    struct Eal;

    impl Drop for Eal {
        fn drop(&mut self) {
            forwarder::port::dpdk::shutdown();
        }
    }

    #[test]
    fn the_filter_and_every_send_path_agree_with_the_reference() {
        let _eal = Eal;
        let mut p = port();
        let mut rng = Rng(7);
        let (mut out, mut back) = (Burst::new(), Burst::new());
        let mut ignored = 0;
        let mut rx_bytes = 0u64;
        for round in 0..1000 {
            // Frames in our buffers: sent as copies.
            out.clear();
            let sent: Vec<Vec<u8>> = (0..1 + rng.below(MAX_BURST as u64))
                .map(|_| frame(&mut rng, [0, 50, 95, 100][round % 4]))
                .collect();
            for f in &sent {
                assert!(out.push(f));
            }
            let all: Vec<u8> = (0..out.len() as u8).collect();
            assert_eq!(p.tx_burst(&mut out, &all), sent.len(), "round {round}");
            let want: Vec<Vec<u8>> = sent.iter().filter(|f| wanted(f)).cloned().collect();
            ignored += sent.len() - want.len();
            receive(&mut p, &mut back, sent.len(), want.len());
            assert_eq!(frames(&back), want, "round {round}: the filter");
            assert_eq!(p.stats().rx_ignored, ignored as u64, "round {round}");
            rx_bytes += want.iter().map(|f| f.len() as u64).sum::<u64>();
            assert_eq!(
                p.stats().rx_bytes,
                rx_bytes,
                "round {round}: bytes received"
            );
            let n = back.len();
            if n == 0 {
                continue;
            }
            // The received mbufs sent back: in order (handed to the
            // device as they are), in some other order (gathered), or with
            // one listed twice (the second a copy).
            let which: Vec<u8> = match round % 3 {
                0 => (0..n as u8).collect(),
                1 => (0..n as u8).rev().collect(),
                _ => {
                    let mut w: Vec<u8> = (0..n as u8).collect();
                    if n < MAX_BURST {
                        w.push(rng.below(n as u64) as u8);
                    }
                    w
                }
            };
            let expect: Vec<Vec<u8>> = which
                .iter()
                .map(|&i| back.frame(i as usize).to_vec())
                .collect();
            let before = p.stats();
            assert_eq!(p.tx_burst(&mut back, &which), which.len(), "round {round}");
            let after = p.stats();
            assert_eq!(after.tx - before.tx, which.len() as u64);
            assert_eq!(
                after.tx_bytes - before.tx_bytes,
                expect.iter().map(|f| f.len() as u64).sum::<u64>(),
                "round {round}: bytes sent"
            );
            // Every mbuf went to the device: nothing is left to free.
            assert!(back.handles().iter().all(|&h| h == 0), "round {round}");
            p.release(&mut back);
            let mut again = Burst::new();
            receive(&mut p, &mut again, which.len(), which.len());
            assert_eq!(frames(&again), expect, "round {round}: sent back");
            rx_bytes += expect.iter().map(|f| f.len() as u64).sum::<u64>();
            assert_eq!(
                p.stats().rx_bytes,
                rx_bytes,
                "round {round}: bytes received"
            );
            p.release(&mut again);
        }
        assert!(ignored > 1000, "{ignored} ignored");
        assert_eq!(p.stats().rx_truncated, 0);
    }
}

/// Without the feature the module above is not built: one ignored test
/// says so in the run's listing.
#[cfg(not(feature = "dpdk"))]
#[test]
#[ignore = "needs `--features dpdk` and Debian's DPDK (dpdk, libdpdk-dev, pkg-config, libclang-dev)"]
fn dpdk_port_on_net_ring() {}
