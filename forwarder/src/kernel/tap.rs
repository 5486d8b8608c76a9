//! A TAP interface: the host's side of a port. What arrives on the port
//! for the router and is not answered by the forwarder is written to it,
//! so the host's stack (and a routing daemon on it) sees it as if from a
//! NIC; what the host sends through it leaves by the port.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

const TUNSETIFF: libc::c_ulong = 0x400454ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;

/// An open TAP interface (removed when dropped).
pub struct Tap {
    file: File,
    /// Its name.
    pub name: String,
    /// Its index.
    pub ifindex: u32,
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

impl Tap {
    /// Creates TAP `name` with `mac`, `mtu` and `addresses`, up,
    /// non-blocking.
    pub fn create(
        name: &str,
        mac: [u8; 6],
        mtu: u16,
        addresses: &[config::PortAddress],
    ) -> Result<Tap, String> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(format!("TAP `{name}`: not an interface name"));
        }
        if super::ifindex(name).is_some() {
            return Err(format!(
                "TAP `{name}`: an interface of that name exists (give the port another `tap_name`)"
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(|e| format!("TAP `{name}`: /dev/net/tun: {e}"))?;
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TAP | IFF_NO_PI,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which
        // `IfReq` lays out (name, then the flags at offset 16, padded to
        // 40 bytes); the fd is an open /dev/net/tun.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut req) };
        if rc < 0 {
            return Err(format!(
                "TAP `{name}`: TUNSETIFF: {}",
                std::io::Error::last_os_error()
            ));
        }
        let ifindex =
            super::ifindex(name).ok_or_else(|| format!("TAP `{name}`: gone once created"))?;
        let mut nl = super::Requests::open()?;
        nl.link_up(ifindex, mac, mtu)
            .map_err(|e| format!("TAP `{name}`: setting MAC, MTU, up: {e}"))?;
        for a in addresses {
            nl.add_address(ifindex, a.ip, a.len as u8)
                .map_err(|e| format!("TAP `{name}`: address {}/{}: {e}", a.ip, a.len))?;
        }
        Ok(Tap {
            file,
            name: name.to_string(),
            ifindex,
        })
    }

    /// One frame the host sent, if any (into `buf`; its length).
    pub fn read(&mut self, buf: &mut [u8]) -> Option<usize> {
        match self.file.read(buf) {
            Ok(n) if n > 0 => Some(n),
            _ => None,
        }
    }

    /// Gives the host one frame; false if it was not taken (the host's
    /// queue full, the interface down).
    pub fn write(&mut self, frame: &[u8]) -> bool {
        self.file.write(frame).is_ok()
    }
}

/// One TAP per port with `punt = "tap"` (`None` for the others).
pub fn open_all(cfg: &config::Config) -> Result<Vec<Option<Tap>>, String> {
    cfg.ports
        .iter()
        .map(|p| {
            p.tap
                .as_deref()
                .map(|name| {
                    Tap::create(name, p.mac, p.mtu, &p.addresses)
                        .map_err(|e| format!("{}: port `{}`: {e}", p.at, p.name))
                })
                .transpose()
        })
        .collect()
}
