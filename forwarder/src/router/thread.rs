//! The slow path's thread.

use super::slow::{Host, SlowPath};
use crate::shared::Shared;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Starts the slow path's thread: it serves punted frames as they come
/// (parked when idle: a punt wakes it, else it looks every 200 µs),
/// moves the neighbour timers every 10 ms and publishes the table when
/// it changed. It ends when `shared` says stop. On `core` where given (one
/// no worker polls on): a slow path the scheduler put beside a polling
/// worker would serve its punts a slice of several milliseconds late,
/// and a flow to a resolving neighbour would overflow the punt queues.
pub fn spawn(
    shared: Arc<Shared>,
    taps: Vec<Option<crate::kernel::tap::Tap>>,
    core: Option<usize>,
) -> Result<std::thread::JoinHandle<()>, String> {
    std::thread::Builder::new()
        .name("router".into())
        .spawn(move || {
            if let Some(id) = core {
                let _ = core_affinity::set_for_current(core_affinity::CoreId { id });
            }
            let r = shared.router.clone();
            let hosts = taps
                .into_iter()
                .map(|t| t.map(|t| Box::new(t) as Box<dyn Host>))
                .collect();
            let mut sp = SlowPath::new(r.clone()).with_hosts(hosts);
            let start = Instant::now();
            let mut last_tick = 0;
            let mut next_port = 0;
            while !shared.stop.load(Relaxed) {
                let now = start.elapsed().as_millis() as u64;
                let t = shared.snapshot.load_full();
                if !t.routing {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                sp.adopt(&t, now);
                let mut n = 0;
                while let Some(b) = r.next_punt(&mut next_port) {
                    sp.handle(&t, &b, now);
                    r.served(b.worker as usize);
                    let _ = r.free.push(b);
                    n += 1;
                    if n >= 256 {
                        break;
                    }
                }
                n += sp.from_hosts();
                // Frames held for neighbours resolved meanwhile, as the
                // inject queues take them (not counted as work: a full
                // queue is emptied by its worker while this one naps).
                sp.drain_held(&t);
                sp.publish();
                if now >= last_tick + 10 {
                    sp.tick(&t, now);
                    last_tick = now;
                    *shared.neighbours.lock().unwrap_or_else(|e| e.into_inner()) = sp.view(now);
                }
                drop(t);
                if n == 0 {
                    r.wait(Duration::from_micros(200));
                }
            }
        })
        .map_err(|e| format!("cannot start the router thread: {e}"))
}
