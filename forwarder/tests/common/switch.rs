//! A user-space 802.1Q switch for the namespace tests: this machine's
//! kernel has no VLAN devices, so hosts on VLANs sit behind this. It has
//! access ports, each on one VLAN, and a trunk: a frame an access port
//! receives leaves the trunk tagged with that port's VLAN; a frame the
//! trunk receives tagged leaves the VLAN's access port untagged. The
//! kernel takes a received tag out of the frame into the packet's
//! auxiliary data (`PACKET_AUXDATA`), where the switch reads it back.
//! It runs on a thread of its own inside a namespace, and counts what it
//! carried and what it could not place.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// What a switch carried.
#[derive(Debug, Default, Clone)]
pub struct Carried {
    /// Frames from each VLAN's access port onto the trunk.
    pub up: BTreeMap<u16, u64>,
    /// Frames from the trunk to each VLAN's access port.
    pub down: BTreeMap<u16, u64>,
    /// Frames from the trunk that no access port takes (untagged, or a
    /// VLAN the switch lacks), and the first few of them.
    pub stray: u64,
    pub strays: Vec<Vec<u8>>,
}

/// A running switch; stopped when dropped.
pub struct Switch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    carried: Arc<Mutex<Carried>>,
}

impl Switch {
    /// Starts a switch in namespace `ns` between `trunk` and the access
    /// ports `access` (interface, VLAN ID); returns once its sockets are
    /// open.
    pub fn start(ns: &str, trunk: &str, access: &[(&str, u16)]) -> Switch {
        let stop = Arc::new(AtomicBool::new(false));
        let carried = Arc::new(Mutex::new(Carried::default()));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let trunk = trunk.to_string();
        let access: Vec<(String, u16)> = access.iter().map(|&(d, v)| (d.to_string(), v)).collect();
        let (s, c) = (stop.clone(), carried.clone());
        let thread = super::netns::in_netns(ns, move || {
            let t = socket(&trunk);
            let ports: Vec<(OwnedFd, u16)> = access.iter().map(|(d, v)| (socket(d), *v)).collect();
            ready_tx.send(()).unwrap();
            run(&t, &ports, &s, &c);
        });
        ready_rx.recv().expect("the switch starts");
        Switch {
            stop,
            thread: Some(thread),
            carried,
        }
    }

    /// What it carried so far.
    pub fn carried(&self) -> Carried {
        self.carried.lock().unwrap().clone()
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A packet socket on `dev` that reports stripped tags.
fn socket(dev: &str) -> OwnedFd {
    let fd = super::raw::packet_socket(dev);
    let on: libc::c_int = 1;
    // SAFETY: a plain system call on our socket with an int option.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_AUXDATA,
            &on as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    assert_eq!(r, 0, "PACKET_AUXDATA: {}", std::io::Error::last_os_error());
    fd
}

/// The next frame `fd` received (not one sent through it), with the tag
/// the kernel took off put back; `None` when nothing is waiting.
fn recv(fd: &OwnedFd) -> Option<Option<Vec<u8>>> {
    let mut buf = [0u8; 2048];
    let (n, outgoing, cmsgs) = super::raw::recv_msg(fd, &mut buf, libc::MSG_DONTWAIT)?;
    if outgoing {
        return Some(None);
    }
    let mut f = buf[..n].to_vec();
    for (level, ty, data) in cmsgs {
        if level != libc::SOL_PACKET
            || ty != libc::PACKET_AUXDATA
            || data.len() < std::mem::size_of::<libc::tpacket_auxdata>()
        {
            continue;
        }
        // SAFETY: the kernel wrote a whole `tpacket_auxdata` there (its
        // length checked), read unaligned from our copy.
        let aux: libc::tpacket_auxdata = unsafe { std::ptr::read_unaligned(data.as_ptr().cast()) };
        if aux.tp_status & libc::TP_STATUS_VLAN_VALID != 0 && f.len() >= 12 {
            let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                aux.tp_vlan_tpid
            } else {
                0x8100
            };
            let mut tag = tpid.to_be_bytes().to_vec();
            tag.extend(aux.tp_vlan_tci.to_be_bytes());
            f.splice(12..12, tag);
        }
    }
    Some(Some(f))
}

/// Sends `f` out of `fd`'s interface; a frame the interface refuses is
/// lost, as on a switch.
fn put(fd: &OwnedFd, f: &[u8]) {
    // SAFETY: sends `f`'s bytes on our socket.
    unsafe { libc::send(fd.as_raw_fd(), f.as_ptr().cast(), f.len(), 0) };
}

fn run(trunk: &OwnedFd, ports: &[(OwnedFd, u16)], stop: &AtomicBool, carried: &Mutex<Carried>) {
    let mut fds: Vec<libc::pollfd> = std::iter::once(trunk)
        .chain(ports.iter().map(|(f, _)| f))
        .map(|f| libc::pollfd {
            fd: f.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    while !stop.load(Relaxed) {
        // SAFETY: `fds` is ours, with its length.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 20) };
        while let Some(f) = recv(trunk) {
            let Some(f) = f else { continue };
            let vid = (f.len() >= 18 && f[12..14] == [0x81, 0x00])
                .then(|| u16::from_be_bytes([f[14], f[15]]) & 0xfff);
            let to = vid.and_then(|v| ports.iter().find(|(_, p)| *p == v));
            let mut c = carried.lock().unwrap();
            match to {
                Some((fd, v)) => {
                    let mut g = f[..12].to_vec();
                    g.extend(&f[16..]);
                    put(fd, &g);
                    *c.down.entry(*v).or_default() += 1;
                }
                None => {
                    c.stray += 1;
                    if c.strays.len() < 8 {
                        c.strays.push(f);
                    }
                }
            }
        }
        for (fd, v) in ports {
            while let Some(f) = recv(fd) {
                let Some(f) = f else { continue };
                if f.len() < 14 {
                    continue;
                }
                let mut g = f[..12].to_vec();
                g.extend(0x8100u16.to_be_bytes());
                g.extend(v.to_be_bytes());
                g.extend(&f[12..]);
                put(trunk, &g);
                *carried.lock().unwrap().up.entry(*v).or_default() += 1;
            }
        }
    }
}
