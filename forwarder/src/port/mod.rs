//! Ports: where frames come from and go to. Each worker owns one queue of
//! every port ([`Port`]): `rx_burst` appends frames to a [`Burst`],
//! `tx_burst` sends some of them, `release` gives back what the port lent.
//!
//! - [`synthetic`]: the built-in generator (no NIC, no privileges);
//! - [`af_packet`]: a Linux interface through a packet socket with mmap
//!   rings; [`af_xdp`]: through AF_XDP sockets and an XDP program of our
//!   own; both share [`linux`]'s socket helpers;
//! - `dpdk`: DPDK's ethdev, zero copy, behind the cargo feature `dpdk`.
//!
//! A port's driver and its options are typed by the configuration
//! ([`config::Driver`]), which checks them as the file loads; [`open`]
//! turns them into a queue, and [`check`] says before anything starts
//! whether this build has every driver the configuration names.

mod burst;
pub use burst::{Burst, Slots, FRAME_CAP, MAX_BURST};

pub mod af_packet;
pub mod af_xdp;
#[cfg(feature = "dpdk")]
pub mod dpdk;
pub mod linux;
pub mod synthetic;

use config::{Config, Driver};

/// A port's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames received and passed on.
    pub rx: u64,
    /// Frames the kernel dropped before we could read them (ring full).
    pub rx_dropped: u64,
    /// Frames received but not for us (another station's, a group's
    /// other than ARP, our own going out), not passed on.
    pub rx_ignored: u64,
    /// Frames longer than a ring slot (receive offloads such as GRO
    /// merging segments on the interface), not passed on.
    pub rx_truncated: u64,
    /// Frames sent.
    pub tx: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Frames the port could not send.
    pub tx_dropped: u64,
    /// Frames that failed the port's own check of what came out (the
    /// synthetic port checks TTL and MACs).
    pub tx_bad: u64,
}

impl PortStats {
    /// The counters' names, in [`PortStats::values`] order (the names of
    /// the `stats` JSON and the Prometheus `counter` label).
    pub const NAMES: [&'static str; 8] = [
        "rx",
        "tx",
        "tx_bytes",
        "tx_dropped",
        "tx_bad",
        "rx_dropped",
        "rx_ignored",
        "rx_truncated",
    ];

    /// The counters, in [`PortStats::NAMES`] order.
    pub fn values(&self) -> [u64; 8] {
        [
            self.rx,
            self.tx,
            self.tx_bytes,
            self.tx_dropped,
            self.tx_bad,
            self.rx_dropped,
            self.rx_ignored,
            self.rx_truncated,
        ]
    }
}

/// One queue of a port, owned by one worker.
pub trait Port: Send {
    /// The port's name.
    fn name(&self) -> &str;
    /// Receives up to `max` frames into `burst` (appending); returns how
    /// many.
    fn rx_burst(&mut self, burst: &mut Burst, max: usize) -> usize;
    /// Sends the frames of `burst` at indices `which`; returns how many
    /// went out. A port that sends an external frame as it is (zero copy)
    /// takes its handle.
    fn tx_burst(&mut self, burst: &mut Burst, which: &[u8]) -> usize;
    /// Gives back what a burst this port received still holds of it
    /// (external frames whose handle no port took). Called once per
    /// received burst, after transmission.
    fn release(&mut self, _burst: &mut Burst) {}
    /// Counters.
    fn stats(&self) -> PortStats;
}

/// Why a `dpdk` port cannot open in a build without the feature.
#[cfg(not(feature = "dpdk"))]
pub(crate) fn without_dpdk(p: &config::PortConfig) -> String {
    format!(
        "{}: port `{}`: built without DPDK support (build with `--features dpdk`)",
        p.at, p.name
    )
}

/// Opens queue `queue` of port `index` of `cfg` with its driver.
pub fn open(cfg: &Config, index: usize, queue: usize) -> Result<Box<dyn Port>, String> {
    let p = &cfg.ports[index];
    Ok(match &p.driver {
        Driver::Synthetic(o) => Box::new(synthetic::SyntheticPort::new(cfg, index, queue, o)?),
        Driver::AfPacket(o) => Box::new(af_packet::AfPacketPort::open(cfg, index, queue, o)?),
        Driver::AfXdp(o) => Box::new(af_xdp::AfXdpPort::open(cfg, index, queue, o)?),
        #[cfg(feature = "dpdk")]
        Driver::Dpdk(o) => Box::new(dpdk::DpdkPort::open(cfg, index, queue, o)?),
        #[cfg(not(feature = "dpdk"))]
        Driver::Dpdk(_) => return Err(without_dpdk(p)),
    })
}

/// Opens queue `queue` of every port of `cfg` (a worker's ports).
pub fn open_all(cfg: &Config, queue: usize) -> Result<Vec<Box<dyn Port>>, String> {
    (0..cfg.ports.len()).map(|i| open(cfg, i, queue)).collect()
}
