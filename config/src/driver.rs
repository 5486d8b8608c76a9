//! Port drivers and their options (`[port.options]`), read and checked
//! when the configuration loads: a bad option is a `file:line:col` error
//! naming its value before anything starts, like every other key. What
//! only the system can tell (does the interface exist, is DPDK built in)
//! is the driver's to check when it opens the port.

use crate::error::{ConfigError, Located};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use toml::{Spanned, Value};

/// A port's driver, with its options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Driver {
    /// The built-in traffic generator.
    Synthetic(SyntheticOptions),
    /// A Linux interface through a packet socket with mmap rings.
    AfPacket(AfPacketOptions),
    /// A Linux interface through AF_XDP sockets.
    AfXdp(AfXdpOptions),
    /// DPDK's ethdev (the cargo feature `dpdk`).
    Dpdk(DpdkOptions),
    /// A VLAN sub-interface (`parent`, `vlan`): no queues of its own, its
    /// frames go through its parent's, tagged.
    Vlan(VlanOptions),
}

/// A VLAN sub-interface's parent and tags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VlanOptions {
    /// The index of its parent port (a port with a driver; those come
    /// before every sub-interface in [`crate::Config::ports`]).
    pub parent: usize,
    /// Its VLAN IDs, outer first: one (802.1Q, TPID 0x8100) or two
    /// (802.1ad: outer TPID 0x88a8, inner 0x8100).
    pub tags: Vec<u16>,
}

impl VlanOptions {
    /// The tags as they follow the source MAC in a frame (TPID and TCI
    /// each, outer first), and how many bytes of them.
    pub fn wire(&self) -> ([u8; 8], usize) {
        let mut b = [0u8; 8];
        let n = self.tags.len().min(2);
        for (k, &id) in self.tags.iter().take(2).enumerate() {
            let tpid: u16 = if n == 2 && k == 0 { 0x88a8 } else { 0x8100 };
            b[4 * k..4 * k + 2].copy_from_slice(&tpid.to_be_bytes());
            b[4 * k + 2..4 * k + 4].copy_from_slice(&(id & 0x0fff).to_be_bytes());
        }
        (b, 4 * n)
    }
}

/// The drivers' names, as `driver = "..."` spells them.
pub const DRIVERS: [&str; 4] = ["synthetic", "af_packet", "af_xdp", "dpdk"];

impl Driver {
    /// Its name in the configuration.
    pub fn name(&self) -> &'static str {
        match self {
            Driver::Synthetic(_) => "synthetic",
            Driver::AfPacket(_) => "af_packet",
            Driver::AfXdp(_) => "af_xdp",
            Driver::Dpdk(_) => "dpdk",
            Driver::Vlan(_) => "vlan",
        }
    }
}

/// Options of a synthetic port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticOptions {
    /// Distinct flows (1 to 2^20).
    pub flows: usize,
    /// Share of IPv6 frames, in percent.
    pub ipv6_percent: u32,
    /// Bytes per frame (64 to 1518).
    pub frame_size: usize,
    /// Share of flows aimed at the first rule set's elements, in percent.
    pub set_hit_percent: u32,
    /// Seed of the flow mix.
    pub seed: u64,
    /// Check every transmitted frame (TTL, source MAC); off by default,
    /// since it parses each frame again.
    pub verify: bool,
    /// The VLAN every frame is tagged with (802.1Q), for a sub-interface
    /// of the port to receive; 0: untagged. The tag counts in
    /// `frame_size`.
    pub vlan: u16,
}

impl Default for SyntheticOptions {
    fn default() -> Self {
        SyntheticOptions {
            flows: 1024,
            ipv6_percent: 20,
            frame_size: 64,
            set_hit_percent: 10,
            seed: 1,
            verify: false,
            vlan: 0,
        }
    }
}

/// How an `af_packet` port's sockets share its traffic among workers
/// (`PACKET_FANOUT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fanout {
    /// By flow hash.
    Hash,
    /// Round robin.
    Lb,
    /// By the CPU the frame arrived on.
    Cpu,
}

/// Options of an `af_packet` port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfPacketOptions {
    /// The Linux interface (default: the port's name).
    pub interface: String,
    /// Slots per ring (64 to 2^20; the driver rounds up to a whole block).
    pub ring_frames: usize,
    /// Transmit straight to the driver, skipping the qdisc.
    pub qdisc_bypass: bool,
    /// The fanout mode with several workers.
    pub fanout: Fanout,
}

/// How an `af_xdp` port's XDP program is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver (`XDP_FLAGS_DRV_MODE`).
    Native,
    /// Generic, on socket buffers (`XDP_FLAGS_SKB_MODE`): every driver.
    Skb,
    /// Native, falling back to generic.
    Auto,
}

/// Options of an `af_xdp` port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfXdpOptions {
    /// The Linux interface (default: the port's name).
    pub interface: String,
    /// UMEM frames per socket (a power of two, 64 to 65536).
    pub frames: usize,
    /// How the program is attached.
    pub mode: XdpMode,
    /// Whether zero copy may be used (the kernel's choice) or copy mode
    /// is forced.
    pub zero_copy: bool,
}

/// Options of a `dpdk` port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DpdkOptions {
    /// EAL arguments (only the first `dpdk` port's are used).
    pub eal: Option<Vec<String>>,
    /// The ethdev's name (default: the port's name).
    pub device: String,
    /// RX descriptors per queue.
    pub rx_descriptors: u16,
    /// TX descriptors per queue.
    pub tx_descriptors: u16,
    /// Mbufs in the device's pool (0: 8191 per queue).
    pub mbufs: u32,
    /// Promiscuous mode.
    pub promiscuous: bool,
}

/// `[port.options]` as read, every key and value with its place.
pub(crate) type RawOptions = BTreeMap<Spanned<String>, Spanned<Value>>;

/// An integer option within `range`, or what it must be.
fn int(v: &Value, range: RangeInclusive<i64>) -> Result<i64, String> {
    v.as_integer()
        .filter(|n| range.contains(n))
        .ok_or_else(|| format!("an integer from {} to {}", range.start(), range.end()))
}

fn boolean(v: &Value) -> Result<bool, String> {
    v.as_bool().ok_or_else(|| "true or false".to_string())
}

/// One of `names` (a string), as the value at the same index of `values`.
fn choice<T: Copy>(v: &Value, names: &[&str], values: &[T]) -> Result<T, String> {
    v.as_str()
        .and_then(|s| names.iter().position(|n| *n == s))
        .map(|i| values[i])
        .ok_or_else(|| {
            let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            match quoted.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
                None => String::new(),
            }
        })
}

/// An `interface` option's value, if it can name a Linux interface
/// (1 to 15 bytes, no `/`, NUL or space).
fn interface(v: &Value) -> Result<String, String> {
    v.as_str()
        .filter(|s| !s.is_empty() && s.len() < 16 && !s.contains(['/', '\0', ' ']))
        .map(String::from)
        .ok_or_else(|| "an interface name (1-15 bytes)".to_string())
}

/// Reads every option of a port with `set`, which knows the driver's
/// `known` keys and returns what a bad value must be; errors point at the
/// unknown key or the bad value.
fn each(
    loc: &Located,
    port: &str,
    driver: &str,
    known: &[&str],
    raw: &RawOptions,
    mut set: impl FnMut(&str, &Value) -> Result<(), String>,
) -> Result<(), ConfigError> {
    for (k, v) in raw {
        let key = k.get_ref().as_str();
        if !known.contains(&key) {
            return Err(loc.of(
                k,
                format!(
                    "port `{port}`: unknown option `{key}` for the {driver} driver ({})",
                    known.join(", ")
                ),
            ));
        }
        set(key, v.get_ref())
            .map_err(|want| loc.of(v, format!("port `{port}`: option `{key}` must be {want}")))?;
    }
    Ok(())
}

/// The driver named `name` (already known to be one of [`DRIVERS`]) with
/// the options of port `port`.
pub(crate) fn parse(
    loc: &Located,
    name: &str,
    port: &str,
    raw: &RawOptions,
) -> Result<Driver, ConfigError> {
    Ok(match name {
        "af_packet" => {
            let mut o = AfPacketOptions {
                interface: port.to_string(),
                ring_frames: 4096,
                qdisc_bypass: true,
                fanout: Fanout::Hash,
            };
            let known = ["interface", "ring_frames", "qdisc_bypass", "fanout"];
            each(loc, port, name, &known, raw, |k, v| {
                match k {
                    "interface" => o.interface = interface(v)?,
                    "ring_frames" => o.ring_frames = int(v, 64..=1 << 20)? as usize,
                    "qdisc_bypass" => o.qdisc_bypass = boolean(v)?,
                    _ => {
                        o.fanout = choice(
                            v,
                            &["hash", "lb", "cpu"],
                            &[Fanout::Hash, Fanout::Lb, Fanout::Cpu],
                        )?
                    }
                }
                Ok(())
            })?;
            Driver::AfPacket(o)
        }
        "af_xdp" => {
            let mut o = AfXdpOptions {
                interface: port.to_string(),
                frames: 4096,
                mode: XdpMode::Auto,
                zero_copy: true,
            };
            let known = ["interface", "frames", "xdp_mode", "zero_copy"];
            each(loc, port, name, &known, raw, |k, v| {
                match k {
                    "interface" => o.interface = interface(v)?,
                    "frames" => {
                        o.frames = int(v, 64..=65536)
                            .ok()
                            .filter(|n| n.count_ones() == 1)
                            .ok_or("a power of two from 64 to 65536")?
                            as usize
                    }
                    "xdp_mode" => {
                        o.mode = choice(
                            v,
                            &["native", "skb", "auto"],
                            &[XdpMode::Native, XdpMode::Skb, XdpMode::Auto],
                        )?
                    }
                    _ => {
                        o.zero_copy = match (v.as_str(), v.as_bool()) {
                            (Some("auto"), _) | (_, Some(true)) => true,
                            (_, Some(false)) => false,
                            _ => return Err("`auto` or false".into()),
                        }
                    }
                }
                Ok(())
            })?;
            Driver::AfXdp(o)
        }
        "dpdk" => {
            let mut o = DpdkOptions {
                eal: None,
                device: port.to_string(),
                rx_descriptors: 1024,
                tx_descriptors: 1024,
                mbufs: 0,
                promiscuous: true,
            };
            let known = [
                "eal",
                "device",
                "rx_descriptors",
                "tx_descriptors",
                "mbufs",
                "promiscuous",
            ];
            each(loc, port, name, &known, raw, |k, v| {
                match k {
                    "eal" => {
                        let args = v.as_array().and_then(|a| {
                            a.iter()
                                .map(|s| s.as_str().map(String::from))
                                .collect::<Option<Vec<_>>>()
                        });
                        o.eal = Some(args.ok_or("an array of strings")?);
                    }
                    "device" => {
                        o.device = v
                            .as_str()
                            .filter(|s| !s.is_empty())
                            .ok_or("a device name")?
                            .to_string()
                    }
                    "rx_descriptors" => o.rx_descriptors = int(v, 32..=16384)? as u16,
                    "tx_descriptors" => o.tx_descriptors = int(v, 32..=16384)? as u16,
                    "mbufs" => o.mbufs = int(v, 1024..=1 << 24)? as u32,
                    _ => o.promiscuous = boolean(v)?,
                }
                Ok(())
            })?;
            Driver::Dpdk(o)
        }
        _ => {
            let mut o = SyntheticOptions::default();
            let known = [
                "flows",
                "ipv6_percent",
                "frame_size",
                "set_hit_percent",
                "seed",
                "verify",
                "vlan",
            ];
            each(loc, port, name, &known, raw, |k, v| {
                match k {
                    "flows" => o.flows = int(v, 1..=1 << 20)? as usize,
                    "ipv6_percent" => o.ipv6_percent = int(v, 0..=100)? as u32,
                    "frame_size" => o.frame_size = int(v, 64..=1518)? as usize,
                    "set_hit_percent" => o.set_hit_percent = int(v, 0..=100)? as u32,
                    "seed" => o.seed = int(v, 0..=i64::MAX)? as u64,
                    "vlan" => o.vlan = int(v, 0..=4094)? as u16,
                    // `true`/`false`, and `1`/`0` alike.
                    _ => {
                        o.verify = match (v.as_bool(), v.as_integer()) {
                            (Some(b), _) => b,
                            (_, Some(n @ 0..=1)) => n == 1,
                            _ => return Err("true or false".into()),
                        }
                    }
                }
                Ok(())
            })?;
            Driver::Synthetic(o)
        }
    })
}
