//! One queue of a port, as a worker owns it: the interface every driver
//! implements, and its counters.

use super::burst::Burst;

/// A port's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames received and passed on.
    pub rx: u64,
    /// Bytes of the frames received and passed on (Ethernet header to
    /// the end of the payload, no FCS: as the kernel's `rx_bytes`).
    pub rx_bytes: u64,
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
    /// How many counters a port has.
    pub const N: usize = 9;

    /// The counters' names, in [`PortStats::values`] order (the names of
    /// the `stats` JSON and the Prometheus `counter` label).
    pub const NAMES: [&'static str; Self::N] = [
        "rx",
        "rx_bytes",
        "tx",
        "tx_bytes",
        "tx_dropped",
        "tx_bad",
        "rx_dropped",
        "rx_ignored",
        "rx_truncated",
    ];

    /// The counters, in [`PortStats::NAMES`] order.
    pub fn values(&self) -> [u64; Self::N] {
        [
            self.rx,
            self.rx_bytes,
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
