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
//! turns them into a queue; `forwarder check` and `run` say before
//! anything starts whether this build has every driver the configuration
//! names.

mod burst;
mod queue;
pub use burst::{Burst, Slots, FRAME_CAP, MAX_BURST};
pub use queue::{Port, PortStats};

pub mod af_packet;
pub mod af_xdp;
#[cfg(feature = "dpdk")]
pub mod dpdk;
pub mod linux;
pub mod synthetic;

use config::{Config, Driver};

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
        Driver::Vlan(_) => {
            return Err(format!(
                "{}: port `{}` is a VLAN sub-interface: it has no queues (its parent's carry its frames)",
                p.at, p.name
            ))
        }
    })
}

/// Opens queue `queue` of every port of `cfg` with a driver (a worker's
/// ports; the VLAN sub-interfaces, numbered after them, go through
/// their parents').
pub fn open_all(cfg: &Config, queue: usize) -> Result<Vec<Box<dyn Port>>, String> {
    (0..cfg.physical_ports())
        .map(|i| open(cfg, i, queue))
        .collect()
}
