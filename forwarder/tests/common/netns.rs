//! Network namespaces for the tests that send real packets: who may
//! build them (the skip rule), commands run in them, and the topology
//! most tests use.

use std::os::fd::AsRawFd;
use std::process::{Child, Command};

/// Whether `.ci/run` asked for the root-only tests
/// (`FORWARDER_NETNS_TESTS=1`): then a skip is a failure.
pub fn wanted() -> bool {
    std::env::var("FORWARDER_NETNS_TESTS").is_ok_and(|v| v == "1")
}

/// Whether this process is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The one skip rule for root-only tests: true (run) as root; otherwise
/// `test` is skipped, said on standard error, unless `.ci/run` asked for
/// it ([`wanted`]), where that fails.
pub fn root_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    assert!(!wanted(), "{test}: FORWARDER_NETNS_TESTS=1 but not root");
    eprintln!("{test}: skipped (needs root)");
    false
}

/// [`Topology::create`] under the skip rule: `None` when the test is
/// skipped (not root, or this machine cannot build namespaces), unless
/// asked for, where that fails.
pub fn topology_or_skip(test: &str, shape: &Shape) -> Option<Topology> {
    if !root_or_skip(test) {
        return None;
    }
    match Topology::create(shape) {
        Ok(t) => Some(t),
        Err(e) => {
            assert!(!wanted(), "{test}: cannot build the namespaces: {e}");
            eprintln!("{test}: skipped ({e})");
            None
        }
    }
}

/// A MAC as `ip` writes it.
pub fn mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Runs a command; its standard error on failure.
pub fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `ip -n NS REST...`.
pub fn ipn(ns: &str, rest: &str) -> Result<(), String> {
    let mut a = vec!["ip", "-n", ns];
    a.extend(rest.split_whitespace());
    run(&a)
}

/// Segmentation and receive offloads off on `dev` in `ns` (`tx`: the
/// checksums too, computed in full: a frame through a user-space switch
/// leaves as it came, with nothing left to a NIC).
pub fn offloads_off(ns: &str, dev: &str, tx: bool) -> Result<(), String> {
    let mut args = vec![
        "ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off",
    ];
    if tx {
        args.extend(["tx", "off"]);
    }
    run(&args)
}

/// Network namespaces made anew (any of the same names left by an
/// earlier run go first) and removed when dropped.
pub struct Namespaces {
    pub names: Vec<String>,
}

impl Namespaces {
    /// `prefix` and each of `names`, as namespaces.
    pub fn create(prefix: &str, names: &[&str]) -> Result<Namespaces, String> {
        let n = Namespaces {
            names: names.iter().map(|x| format!("{prefix}{x}")).collect(),
        };
        for x in &n.names {
            let _ = run(&["ip", "netns", "del", x]);
            run(&["ip", "netns", "add", x])?;
        }
        Ok(n)
    }

    /// Namespace `i`.
    pub fn ns(&self, i: usize) -> &str {
        &self.names[i]
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = run(&["ip", "netns", "del", n]);
        }
    }
}

/// A TCP stream of 256 KiB from namespace `from` to `dst` (an address
/// of namespace `to`), echoed back whole; `what` names it in failures.
pub fn tcp_echo(from: &str, to: &str, dst: std::net::IpAddr, what: String) {
    use std::io::{Read, Write};
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let server = in_netns(to, move || {
        let l = std::net::TcpListener::bind((dst, 0)).unwrap();
        port_tx.send(l.local_addr().unwrap().port()).unwrap();
        let (mut c, _) = l.accept().unwrap();
        c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut all = Vec::new();
        c.read_to_end(&mut all).unwrap();
        c.write_all(&all).unwrap();
    });
    let port = port_rx.recv().unwrap();
    in_netns(from, move || {
        let mut c = std::net::TcpStream::connect_timeout(
            &(dst, port).into(),
            std::time::Duration::from_secs(5),
        )
        .unwrap_or_else(|e| panic!("{what}: TCP: {e}"));
        c.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let sent: Vec<u8> = (0..256 * 1024u32).map(|i| (i * 7 % 251) as u8).collect();
        c.write_all(&sent).unwrap();
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).unwrap();
        assert!(
            back == sent,
            "{what}: every byte back ({} of {})",
            back.len(),
            sent.len()
        );
    })
    .join()
    .expect("the stream");
    server.join().expect("the stream's server");
}

/// `sysctl -qw KV` in namespace `ns`.
pub fn sysctl(ns: &str, kv: &str) -> Result<(), String> {
    run(&["ip", "netns", "exec", ns, "sysctl", "-qw", kv])
}

/// Runs `f` on a thread that has entered network namespace `ns`: the
/// sockets it opens live there.
pub fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on a namespace file we hold open; it changes only
        // this thread's network namespace.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
}

/// The driver a test runs the forwarder's ports with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// `af_packet`.
    AfPacket,
    /// `af_xdp`.
    AfXdp,
    /// `dpdk` (`net_af_packet` on the veths; the `dpdk` feature).
    Dpdk,
}

impl Driver {
    /// One letter that keeps the namespaces of tests running at once
    /// apart.
    pub fn letter(self) -> char {
        match self {
            Driver::AfPacket => 'a',
            Driver::AfXdp => 'x',
            Driver::Dpdk => 'd',
        }
    }

    /// The `driver` of the forwarder's two ports on `f0` and `f1`, and
    /// each one's `[port.options]` (`qpairs`: DPDK's queue pairs a
    /// device, one a worker).
    pub fn port_options(self, qpairs: u32) -> (&'static str, String, String) {
        match self {
            Driver::AfPacket => (
                "af_packet",
                "interface = \"f0\"\nring_frames = 1024".into(),
                "interface = \"f1\"".into(),
            ),
            Driver::AfXdp => (
                "af_xdp",
                "interface = \"f0\"\nframes = 2048".into(),
                "interface = \"f1\"".into(),
            ),
            Driver::Dpdk => (
                "dpdk",
                format!(
                    "device = \"net_af_packet0\"\neal = [\"--no-huge\", \"-m\", \"512\", \"--no-pci\", \"--vdev\", \"net_af_packet0,iface=f0,qpairs={qpairs}\", \"--vdev\", \"net_af_packet1,iface=f1,qpairs={qpairs}\"]\nmbufs = 4096"
                ),
                "device = \"net_af_packet1\"\nmbufs = 4096".into(),
            ),
        }
    }

    /// Whether the hosts must compute their checksums in full: neither
    /// AF_XDP nor DPDK's af_packet driver sees which a sending host left
    /// to the NIC.
    pub fn full_checksums(self) -> bool {
        self != Driver::AfPacket
    }
}

/// How a [`Topology`] is built.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Tells the test files' namespaces apart.
    pub tag: &'static str,
    /// Tells one file's tests apart (tests run at once).
    pub variant: char,
    /// Receive and transmit queues per veth (0: the kernel's one).
    pub queues: u32,
    /// The MACs of a0, f0, f1 and b0 (`None`: the kernel's).
    pub macs: [Option<[u8; 6]>; 4],
    /// The hosts compute their checksums in full (see
    /// [`Driver::full_checksums`]).
    pub full_checksums: bool,
    /// The hosts announce a changed MAC (gratuitous ARP, unsolicited
    /// NA), as hosts that move do.
    pub announce: bool,
    /// Host a's and host b's addresses (`192.0.2.2/24`, `2001:db8:1::2/64`).
    pub hosts: [(&'static str, &'static str); 2],
    /// Each host's default gateways (IPv4, IPv6), if any.
    pub gateways: [Option<(&'static str, &'static str)>; 2],
}

impl Shape {
    /// Host a (192.0.2.2/25, 2001:db8:1::2/64) and host b
    /// (198.51.100.2/25, 2001:db8:2::2/64), each routed by the
    /// forwarder's `.1`, the forwarder's ports with MACs `f0` and `f1`,
    /// the kernel's one queue, the checksums left to the NIC.
    pub fn routed(tag: &'static str, variant: char, f0: [u8; 6], f1: [u8; 6]) -> Shape {
        Shape {
            tag,
            variant,
            queues: 0,
            macs: [None, Some(f0), Some(f1), None],
            full_checksums: false,
            announce: false,
            hosts: [
                ("192.0.2.2/25", "2001:db8:1::2/64"),
                ("198.51.100.2/25", "2001:db8:2::2/64"),
            ],
            gateways: [
                Some(("192.0.2.1", "2001:db8:1::1")),
                Some(("198.51.100.1", "2001:db8:2::1")),
            ],
        }
    }
}

/// The forwarder's ports `f0` and `f1` of [`Shape::routed`] over
/// `af_packet`, with MACs `m0` and `m1` and the hosts' gateway
/// addresses, and `f0`'s and `f1`'s lines of their own, as TOML.
pub fn routed_ports(m0: [u8; 6], m1: [u8; 6], f0: &str, f1: &str) -> String {
    format!(
        r#"[[port]]
name = "f0"
driver = "af_packet"
mac = "{m0}"
address = ["192.0.2.1/25", "2001:db8:1::1/64"]
{f0}
[port.options]
ring_frames = 1024
[[port]]
name = "f1"
driver = "af_packet"
mac = "{m1}"
address = ["198.51.100.1/25", "2001:db8:2::1/64"]
{f1}
[port.options]
ring_frames = 1024
"#,
        m0 = mac(m0),
        m1 = mac(m1)
    )
}

/// The forwarder's ports `trunk` (on f0, MAC `m0`, no address: VLANs
/// come as sub-interfaces) and `lan` (on f1, MAC `m1`, 203.0.113.1/24
/// and 2001:db8:3::1/64) over `driver`, as TOML.
pub fn trunk_and_lan(driver: Driver, m0: [u8; 6], m1: [u8; 6]) -> String {
    let (d, opts0, opts1) = driver.port_options(1);
    format!(
        r#"[[port]]
name = "trunk"
driver = "{d}"
mac = "{m0}"
[port.options]
{opts0}
[[port]]
name = "lan"
driver = "{d}"
mac = "{m1}"
address = ["203.0.113.1/24", "2001:db8:3::1/64"]
[port.options]
{opts1}
"#,
        m0 = mac(m0),
        m1 = mac(m1)
    )
}

/// Two hosts joined to a forwarder's namespace by veth pairs: `a0` in
/// host a's namespace to `f0` in the forwarder's, `f1` to `b0` in host
/// b's. The forwarder's own kernel stays off its ports (no IPv6, no
/// addresses). Dropping it kills `children` and removes the namespaces
/// with their veths.
pub struct Topology {
    names: [String; 3],
    /// Processes that live in the namespaces (BIRD), killed first.
    pub children: Vec<Child>,
}

impl Drop for Topology {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.names {
            let _ = run(&["ip", "netns", "del", n]);
        }
    }
}

impl Topology {
    /// Builds it (any namespaces of the same names left by an earlier run
    /// go first).
    pub fn create(s: &Shape) -> Result<Topology, String> {
        let tag = format!("{}{}{}", s.tag, std::process::id(), s.variant);
        let t = Topology {
            names: [format!("{tag}a"), format!("{tag}f"), format!("{tag}b")],
            children: Vec::new(),
        };
        for n in &t.names {
            let _ = run(&["ip", "netns", "del", n]);
            run(&["ip", "netns", "add", n])?;
        }
        let (a, f, b) = (t.ns(0), t.ns(1), t.ns(2));
        let q = s.queues.to_string();
        for (h, hns, p) in [("a0", a, "f0"), ("b0", b, "f1")] {
            let mut args = vec!["ip", "link", "add", h, "netns", hns];
            if s.queues > 0 {
                args.extend(["numtxqueues", &q, "numrxqueues", &q]);
            }
            args.extend(["type", "veth", "peer", "name", p, "netns", f]);
            if s.queues > 0 {
                args.extend(["numtxqueues", &q, "numrxqueues", &q]);
            }
            run(&args)?;
        }
        for (i, (ns, dev)) in [(a, "a0"), (f, "f0"), (f, "f1"), (b, "b0")]
            .into_iter()
            .enumerate()
        {
            if let Some(m) = s.macs[i] {
                ipn(ns, &format!("link set {dev} address {}", mac(m)))?;
            }
            let mut off = vec![
                "ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro",
                "off",
            ];
            if s.full_checksums && ns != f {
                off.extend(["tx", "off"]);
            }
            run(&off)?;
        }
        for dev in ["f0", "f1"] {
            sysctl(f, &format!("net.ipv6.conf.{dev}.disable_ipv6=1"))?;
            ipn(f, &format!("link set {dev} up"))?;
        }
        // `lo` up gives the forwarder's kernel a local table, which routes
        // by IPv4 gateways need.
        ipn(f, "link set lo up")?;
        for (i, (ns, dev)) in [(a, "a0"), (b, "b0")].into_iter().enumerate() {
            if s.announce {
                sysctl(ns, &format!("net.ipv4.conf.{dev}.arp_notify=1"))?;
                sysctl(ns, &format!("net.ipv6.conf.{dev}.ndisc_notify=1"))?;
            }
            let (v4, v6) = s.hosts[i];
            ipn(ns, &format!("addr add {v4} dev {dev}"))?;
            ipn(ns, &format!("-6 addr add {v6} dev {dev} nodad"))?;
            ipn(ns, &format!("link set {dev} up"))?;
            ipn(ns, "link set lo up")?;
            if let Some((gw4, gw6)) = s.gateways[i] {
                ipn(ns, &format!("route add default via {gw4}"))?;
                ipn(ns, &format!("-6 route add default via {gw6}"))?;
            }
        }
        Ok(t)
    }

    /// Namespace `i`: 0 host a, 1 the forwarder, 2 host b.
    pub fn ns(&self, i: usize) -> &str {
        &self.names[i]
    }

    /// `ip -n NS REST...` in namespace `i`.
    pub fn ip(&self, i: usize, rest: &str) -> Result<(), String> {
        ipn(self.ns(i), rest)
    }
}
