//! The `dpdk` driver: a port on DPDK's ethdev (Debian's DPDK 22.11,
//! bound by our own `dpdk-sys`), behind the cargo feature `dpdk`.
//!
//! - The EAL is initialised once per process, with the `eal` arguments of
//!   the first `dpdk` port (say `--no-huge -m 512 --no-pci --vdev
//!   net_null0`); unless given, `--file-prefix fwd<pid>` keeps instances
//!   apart and `--lcores 0@(all CPUs)` keeps EAL from pinning the thread
//!   that starts it. Workers register with EAL (`rte_thread_register`)
//!   on their first burst, so mbuf pools use their per-lcore caches.
//! - A device is configured when its first queue opens: one RX and one TX
//!   queue per worker, RSS over them where the device has it, one mbuf
//!   pool, promiscuous mode. It is stopped and closed when its last queue
//!   closes; [`shutdown`] then releases the EAL and removes its runtime
//!   files and huge-page files.
//! - Zero copy: a received mbuf's data goes into the burst as it is (the
//!   shim writes mbufs, data pointers and lengths into the burst's free
//!   slots); the pipeline rewrites it in place and a `dpdk` port
//!   transmits the same mbuf. Frames from other ports are
//!   copied into mbufs of the transmitting port's pool; mbufs nobody sent
//!   are freed by the receiving port (`Port::release`).
//! - Only frames for the port's MAC (and ARP, which the pipeline counts)
//!   are taken; the others count as `rx_ignored`.
//!
//! Options (`[port.options]`): `eal` (array of strings), `device` (an
//! ethdev name such as `net_null0` or a PCI address; default: the port's
//! name), `rx_descriptors` / `tx_descriptors` (default 1024), `mbufs`
//! (pool size, default 8191 per queue), `promiscuous` (default true).
#![allow(unsafe_code)]

use super::burst::{Burst, MAX_BURST};
use super::queue::{Port, PortStats};
use config::{Config, Driver};
use dpdk_sys as sys;
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use config::driver::DpdkOptions as Options;

/// A configured device and its open queues.
struct Device {
    pool: *mut sys::rte_mempool,
    open: usize,
}

/// The process's EAL and devices.
struct Eal {
    prefix: String,
    devices: HashMap<u16, Device>,
    released: bool,
}

// SAFETY: the pool pointers are DPDK objects usable from any thread; the
// mutex serialises what this module does with them.
unsafe impl Send for Eal {}

static EAL: Mutex<Option<Eal>> = Mutex::new(None);

/// `what: ` and DPDK's message for `rte_errno`.
pub fn last_error(what: &str) -> String {
    // SAFETY: rte_strerror returns a static, NUL-terminated string.
    let msg = unsafe { CStr::from_ptr(sys::rte_strerror(sys::fwd_errno())) };
    format!("{what}: {}", msg.to_string_lossy())
}

/// `what: ` and DPDK's message for the negative error `ret`.
pub fn errno_msg(what: &str, ret: i32) -> String {
    // SAFETY: as above.
    let msg = unsafe { CStr::from_ptr(sys::rte_strerror(-ret)) };
    format!("{what}: {}", msg.to_string_lossy())
}

/// Initialises the EAL with `args` (plus our defaults).
fn eal_init(args: &[String], cores: usize) -> Result<Eal, String> {
    let has = |flag: &str| {
        args.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    let prefix = args
        .iter()
        .position(|a| a == "--file-prefix")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| {
            args.iter()
                .find_map(|a| a.strip_prefix("--file-prefix=").map(String::from))
        })
        .unwrap_or_else(|| format!("fwd{}", std::process::id()));
    let mut argv = vec!["forwarder".to_string()];
    argv.extend(args.iter().cloned());
    if !has("--file-prefix") {
        argv.extend(["--file-prefix".into(), prefix.clone()]);
    }
    if !has("-l") && !has("--lcores") && !has("-c") {
        argv.extend(["--lcores".into(), format!("0@(0-{})", cores.max(1) - 1)]);
    }
    let c: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_str()).map_err(|_| format!("EAL argument `{a}` holds a NUL")))
        .collect::<Result<_, _>>()?;
    let mut ptrs: Vec<*mut libc::c_char> = c.iter().map(|s| s.as_ptr() as *mut _).collect();
    // SAFETY: argv of `ptrs.len()` valid C strings that outlive the call
    // (EAL may permute the pointer array, which is ours).
    let r = unsafe { sys::rte_eal_init(ptrs.len() as i32, ptrs.as_mut_ptr()) };
    if r < 0 {
        let e = last_error(&format!("EAL init ({})", argv[1..].join(" ")));
        if !has("--file-prefix") {
            // Our own prefix (our process id): whatever the failed init
            // left there is ours. A prefix the operator chose may be
            // another running instance's, so its files stay.
            let _ = std::fs::remove_dir_all(runtime_dir(&prefix));
            remove_hugepage_files(&prefix);
        }
        return Err(e);
    }
    Ok(Eal {
        prefix,
        devices: HashMap::new(),
        released: false,
    })
}

fn configure(
    port: u16,
    o: &Options,
    queues: u16,
    router: bool,
) -> Result<*mut sys::rte_mempool, String> {
    let mut info = sys::rte_eth_dev_info::default();
    // SAFETY: `port` is valid; `info` is ours.
    let r = unsafe { sys::rte_eth_dev_info_get(port, &mut info) };
    if r != 0 {
        return Err(errno_msg("device info", r));
    }
    if info.max_rx_queues < queues || info.max_tx_queues < queues {
        return Err(format!(
            "{queues} workers need {queues} RX and TX queues; the device has {} and {}",
            info.max_rx_queues, info.max_tx_queues
        ));
    }
    let mut conf = sys::rte_eth_conf::default();
    if queues > 1 && info.flow_type_rss_offloads != 0 {
        conf.rxmode.mq_mode = sys::rte_eth_rx_mq_mode_RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads;
    }
    // SAFETY: `conf` is ours and initialised.
    let r = unsafe { sys::rte_eth_dev_configure(port, queues, queues, &conf) };
    if r != 0 {
        return Err(errno_msg("configure", r));
    }
    let (mut rxd, mut txd) = (o.rx_descriptors, o.tx_descriptors);
    // SAFETY: plain call with our counters.
    unsafe { sys::rte_eth_dev_adjust_nb_rx_tx_desc(port, &mut rxd, &mut txd) };
    // SAFETY: plain call.
    let socket = unsafe { sys::rte_eth_dev_socket_id(port) };
    let socket = if socket < 0 { 0 } else { socket };
    let n = if o.mbufs > 0 {
        o.mbufs
    } else {
        8191 * queues as u32
    };
    let name = CString::new(format!("fwd_pool_{port}")).expect("no NUL");
    // SAFETY: a named pool, standard mbuf sizes.
    let pool = unsafe {
        sys::rte_pktmbuf_pool_create(
            name.as_ptr(),
            n,
            256,
            0,
            sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
            socket,
        )
    };
    if pool.is_null() {
        return Err(last_error(&format!("mbuf pool of {n}")));
    }
    for q in 0..queues {
        // SAFETY: valid port, queue within those configured, our pool.
        let r = unsafe {
            sys::rte_eth_rx_queue_setup(port, q, rxd, socket as u32, std::ptr::null(), pool)
        };
        if r != 0 {
            return Err(errno_msg(&format!("RX queue {q}"), r));
        }
        // SAFETY: as above.
        let r =
            unsafe { sys::rte_eth_tx_queue_setup(port, q, txd, socket as u32, std::ptr::null()) };
        if r != 0 {
            return Err(errno_msg(&format!("TX queue {q}"), r));
        }
    }
    // SAFETY: a configured port.
    let r = unsafe { sys::rte_eth_dev_start(port) };
    if r != 0 {
        return Err(errno_msg("start", r));
    }
    if o.promiscuous {
        // Virtual devices may not support it: not an error.
        // SAFETY: a started port.
        unsafe { sys::rte_eth_promiscuous_enable(port) };
    } else if router {
        // A router's port hears the neighbour discovery groups.
        // SAFETY: a started port.
        unsafe { sys::rte_eth_allmulticast_enable(port) };
    }
    Ok(pool)
}

/// One worker's queue of a DPDK device.
pub struct DpdkPort {
    name: String,
    mac: [u8; 6],
    /// The port has addresses: IPv6 multicast (neighbour discovery) is
    /// for us too.
    router: bool,
    port: u16,
    queue: u16,
    pool: *mut sys::rte_mempool,
    mbufs: [*mut sys::rte_mbuf; MAX_BURST],
    /// For each mbuf handed to the device in `tx_burst`: the burst frame
    /// it carries as it is, or `usize::MAX` for a copy.
    from: [usize; MAX_BURST],
    stats: PortStats,
    dev_drops: Cell<u64>,
    dev_read: Cell<Option<Instant>>,
}

// SAFETY: the pointers are DPDK objects (pool, mbufs in flight within one
// call) usable from the thread that owns the port.
unsafe impl Send for DpdkPort {}

thread_local! {
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// Registers the calling thread with EAL once (an lcore id: per-lcore
/// mempool caches).
#[inline]
fn register_thread() {
    REGISTERED.with(|r| {
        if !r.get() {
            // SAFETY: plain call; failure (no free lcore) leaves the thread
            // working without a cache.
            unsafe { sys::rte_thread_register() };
            r.set(true);
        }
    });
}

impl DpdkPort {
    /// Opens queue `queue` of port `index` of `cfg`, initialising the EAL
    /// and configuring the device on first use.
    pub fn open(cfg: &Config, index: usize, queue: usize, o: &Options) -> Result<DpdkPort, String> {
        let p = &cfg.ports[index];
        let ctx = |e: String| {
            format!(
                "{}: port `{}` (DPDK device `{}`): {e}",
                p.at, p.name, o.device
            )
        };
        let mut g = EAL.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            // The EAL arguments of the first dpdk port that gives some.
            let args = cfg
                .ports
                .iter()
                .find_map(|q| match &q.driver {
                    Driver::Dpdk(o) => o.eal.clone(),
                    _ => None,
                })
                .unwrap_or_default();
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            *g = Some(eal_init(&args, cores).map_err(ctx)?);
        }
        let eal = g.as_mut().expect("initialised");
        if eal.released {
            return Err(ctx("the EAL was released in this process; restart".into()));
        }
        let dev = CString::new(o.device.clone()).map_err(|_| ctx("bad name".into()))?;
        let mut port: u16 = 0;
        // SAFETY: a C string and our output.
        if unsafe { sys::rte_eth_dev_get_port_by_name(dev.as_ptr(), &mut port) } != 0 {
            // SAFETY: plain call.
            let n = unsafe { sys::rte_eth_dev_count_avail() };
            return Err(ctx(format!(
                "no such DPDK port ({n} available; a virtual device needs `--vdev {}` in `eal`)",
                o.device
            )));
        }
        let queues = cfg.forwarder.cores.len() as u16;
        let pool = match eal.devices.get_mut(&port) {
            Some(d) => {
                d.open += 1;
                d.pool
            }
            None => {
                let pool = configure(port, o, queues, cfg.addressed(index)).map_err(ctx)?;
                eal.devices.insert(port, Device { pool, open: 1 });
                pool
            }
        };
        Ok(DpdkPort {
            name: p.name.clone(),
            mac: p.mac,
            router: cfg.addressed(index),
            port,
            queue: queue as u16,
            pool,
            mbufs: [std::ptr::null_mut(); MAX_BURST],
            from: [0; MAX_BURST],
            stats: PortStats::default(),
            dev_drops: Cell::new(0),
            dev_read: Cell::new(None),
        })
    }
}

impl Drop for DpdkPort {
    fn drop(&mut self) {
        let mut g = EAL.lock().unwrap_or_else(|e| e.into_inner());
        let Some(eal) = g.as_mut() else { return };
        let last = match eal.devices.get_mut(&self.port) {
            Some(d) => {
                d.open -= 1;
                d.open == 0
            }
            None => false,
        };
        if last {
            let d = eal.devices.remove(&self.port).expect("present");
            // SAFETY: the last queue of a started device: stop it, close
            // it, then free its pool (no mbuf of it is held any more:
            // bursts are released before the worker ends).
            unsafe {
                sys::rte_eth_dev_stop(self.port);
                sys::rte_eth_dev_close(self.port);
                sys::rte_mempool_free(d.pool);
            }
        }
    }
}

/// Releases the EAL once every DPDK port is closed, and removes its
/// runtime files (a port left attached must not break the next start).
/// A no-op when the EAL was never started.
pub fn shutdown() {
    let mut g = EAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(eal) = g.as_mut() else { return };
    if eal.released || !eal.devices.is_empty() {
        return;
    }
    // SAFETY: no port is open; called once.
    unsafe { sys::rte_eal_cleanup() };
    eal.released = true;
    let _ = std::fs::remove_dir_all(runtime_dir(&eal.prefix));
    remove_hugepage_files(&eal.prefix);
}

/// Where hugetlbfs is mounted (from `/proc/mounts`).
pub fn hugetlbfs_dirs() -> Vec<String> {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"hugetlbfs")).then(|| f[1].to_string())
        })
        .collect()
}

/// Removes the huge-page files EAL made for `prefix`. It keeps them after
/// `rte_eal_cleanup` (for secondary processes, which we do not have), so
/// each run left its pages taken until some later EAL start cleared them:
/// a second instance could then find too few pages free.
fn remove_hugepage_files(prefix: &str) {
    for dir in hugetlbfs_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let ours = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix))
                .is_some_and(|rest| rest.starts_with("map_"));
            if ours {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Where the EAL keeps the runtime files of `prefix`.
fn runtime_dir(prefix: &str) -> std::path::PathBuf {
    // SAFETY: geteuid has no preconditions.
    let base = if unsafe { libc::geteuid() } == 0 {
        std::path::PathBuf::from("/var/run/dpdk")
    } else {
        std::env::var_os("XDG_RUNTIME_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(std::env::temp_dir)
            .join("dpdk")
    };
    base.join(prefix)
}

/// How often `stats` asks the device for its drop counters.
const DEV_STATS_EVERY: Duration = Duration::from_millis(100);

impl Port for DpdkPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn rx_burst(&mut self, burst: &mut Burst, max: usize) -> usize {
        let first = burst.len();
        register_thread();
        let slots = burst.free_slots();
        let room = slots.room.min(max).min(MAX_BURST);
        let (mut segmented, mut ignored) = (0, 0);
        // SAFETY: the slot arrays have room for `room` frames; the shim
        // writes a received mbuf (non-zero) into each handle it keeps,
        // with its data pointer and length, and frees the others. Only
        // frames for us (our MAC, or ARP) are kept: in promiscuous mode
        // the device takes every station's. Chained (multi-segment)
        // mbufs are not handled.
        let n = unsafe {
            sys::fwd_rx_burst_for(
                self.port,
                self.queue,
                room as u16,
                self.mac.as_ptr(),
                self.router as i32,
                slots.handles,
                slots.ptrs,
                slots.lens,
                &mut segmented,
                &mut ignored,
            )
        } as usize;
        // SAFETY: the shim filled `n <= room` slots with mbufs that stay
        // valid and ours until this port's `release` frees them or a port
        // sends them (taking the handle); nothing else touches their data
        // meanwhile.
        unsafe { burst.commit_slots(n) };
        self.stats.rx_truncated += segmented;
        self.stats.rx_ignored += ignored;
        self.stats.rx_bytes += burst.bytes_from(first);
        self.stats.rx += n as u64;
        n
    }

    fn tx_burst(&mut self, burst: &mut Burst, which: &[u8]) -> usize {
        register_thread();
        if burst.moved() != 0 {
            reshape_moved(burst);
        }
        if which.len() <= MAX_BURST {
            // Zero copy: every frame is a received mbuf, rewritten in
            // place; the device takes those it sends (their handles are
            // zeroed: their receiving port must not free them).
            let (handles, lens) = burst.raw_handles();
            // SAFETY: the handle and length arrays have the burst's
            // `len()` frames (the shim checks every index against it); a
            // non-zero handle is an mbuf of a `dpdk` port's burst, ours
            // to send; the shim sends nothing when a handle is 0 or an
            // index is listed twice.
            let sent = unsafe {
                sys::fwd_tx_burst_handles(
                    self.port,
                    self.queue,
                    handles,
                    lens,
                    burst.len() as u16,
                    which.as_ptr(),
                    which.len() as u16,
                    &mut self.stats.tx_bytes,
                )
            };
            if sent >= 0 {
                let sent = sent as usize;
                self.stats.tx += sent as u64;
                self.stats.tx_dropped += (which.len() - sent) as u64;
                return sent;
            }
        }
        // Some frames are in our buffers (from another kind of port):
        // those are copied into mbufs of our pool.
        let mut k = 0;
        let mut lens = [0u16; MAX_BURST];
        // Frames already gathered (an index listed twice is sent as a
        // copy the second time: one mbuf must not go out twice).
        let mut seen = 0u64;
        for &w in which {
            let i = w as usize;
            if k == MAX_BURST {
                self.stats.tx_dropped += 1;
                continue;
            }
            let h = burst.handle(i);
            let again = seen & (1 << (i % 64)) != 0;
            seen |= 1 << (i % 64);
            if h != 0 && !again {
                // Zero copy: the received mbuf, rewritten in place.
                self.mbufs[k] = h as *mut sys::rte_mbuf;
                self.from[k] = i;
                lens[k] = burst.frame(i).len() as u16;
                k += 1;
                continue;
            }
            let f = burst.frame(i);
            // SAFETY: our pool; the new mbuf is ours.
            let m = unsafe { sys::fwd_mbuf_alloc(self.pool) };
            // SAFETY: `m` is a fresh one-segment mbuf (checked non-null).
            if m.is_null() || unsafe { sys::fwd_mbuf_room(m) } < f.len() as u16 {
                if !m.is_null() {
                    // SAFETY: ours, unused.
                    unsafe { sys::fwd_mbuf_free(m) };
                }
                self.stats.tx_dropped += 1;
                continue;
            }
            // SAFETY: the mbuf's data room holds `f.len()` bytes (checked).
            unsafe {
                std::ptr::copy_nonoverlapping(f.as_ptr(), sys::fwd_mbuf_data(m), f.len());
                sys::fwd_mbuf_set_len(m, f.len() as u16);
            }
            self.mbufs[k] = m;
            self.from[k] = usize::MAX;
            lens[k] = f.len() as u16;
            k += 1;
        }
        // SAFETY: `k` valid mbufs; the device takes those it accepts.
        let sent =
            unsafe { sys::fwd_tx_burst(self.port, self.queue, self.mbufs.as_mut_ptr(), k as u16) }
                as usize;
        for (j, (&i, &m)) in self.from[..k].iter().zip(&self.mbufs[..k]).enumerate() {
            if j < sent {
                if i != usize::MAX {
                    // The device owns it now: its receiving port must not
                    // free it.
                    burst.take_handle(i);
                }
                self.stats.tx_bytes += lens[j] as u64;
            } else if i == usize::MAX {
                // A copy the device did not take.
                // SAFETY: ours, not sent.
                unsafe { sys::fwd_mbuf_free(m) };
            }
        }
        self.stats.tx += sent as u64;
        self.stats.tx_dropped += (k - sent) as u64;
        sent
    }

    fn release(&mut self, burst: &mut Burst) {
        // Usually every frame went out: one branch-free pass finds
        // whether any handle is left before the gathering one.
        if burst.handles().iter().fold(0, |a, &h| a | h) == 0 {
            return;
        }
        let mut k = 0;
        for i in 0..burst.len() {
            let h = burst.take_handle(i);
            if h != 0 {
                self.mbufs[k] = h as *mut sys::rte_mbuf;
                k += 1;
            }
        }
        if k > 0 {
            // SAFETY: mbufs this port received that no port sent.
            unsafe { sys::fwd_mbuf_free_bulk(self.mbufs.as_mut_ptr(), k as u32) };
        }
    }

    fn stats(&self) -> PortStats {
        if self.queue == 0
            && self
                .dev_read
                .get()
                .is_none_or(|t| t.elapsed() >= DEV_STATS_EVERY)
        {
            self.dev_read.set(Some(Instant::now()));
            let mut s = sys::rte_eth_stats::default();
            // SAFETY: a valid port; `s` is ours.
            if unsafe { sys::rte_eth_stats_get(self.port, &mut s) } == 0 {
                self.dev_drops.set(s.imissed + s.rx_nombuf);
            }
        }
        PortStats {
            rx_dropped: self.dev_drops.get(),
            ..self.stats
        }
    }
}

/// Starts the EAL for a program that uses DPDK without ports (a
/// benchmark's `rte_acl` column); a no-op when it runs already.
pub fn init_eal(args: &[String]) -> Result<(), String> {
    let mut g = EAL.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        *g = Some(eal_init(args, cores)?);
    }
    Ok(())
}

/// Tells the mbufs of the frames whose VLAN tags the pipeline pushed or
/// popped ([`Burst::set_tags`]) where their data now starts and how long
/// it is: the device sends an mbuf as it describes itself.
#[cold]
fn reshape_moved(burst: &mut Burst) {
    let mut moved = burst.moved();
    while moved != 0 {
        let i = moved.trailing_zeros() as usize;
        moved &= moved - 1;
        if i >= burst.len() {
            break;
        }
        let h = burst.handle(i);
        if h == 0 {
            continue;
        }
        let f = burst.frame(i);
        // SAFETY: a non-zero handle is a `dpdk` port's received mbuf, not
        // yet sent or freed (its handle is still in the burst); the frame
        // lies inside its buffer (the pipeline moved its start at most
        // `TAG_ROOM` bytes back, which the receive checked the mbuf has,
        // or forward within the data), so the new offset and length
        // describe bytes of that buffer.
        unsafe { sys::fwd_mbuf_reshape(h as *mut sys::rte_mbuf, f.as_ptr(), f.len() as u16) };
    }
}
