//! The host's side of a port: its TAP, where what is for the router and
//! not answered by the slow path goes (BGP, OSPF, SSH: the routing
//! daemon's own traffic), and what the host sends out of the port.

use super::slow::{Host, SlowPath};
use crate::punt::Counter;

impl Host for crate::kernel::tap::Tap {
    fn write(&mut self, frame: &[u8]) -> bool {
        crate::kernel::tap::Tap::write(self, frame)
    }
    fn read(&mut self, buf: &mut [u8]) -> Option<usize> {
        crate::kernel::tap::Tap::read(self, buf)
    }
}

/// Frames read from the hosts' sides per turn, per port.
const HOST_BURST: usize = 64;

impl SlowPath {
    /// Gives `f` to the host's side of `port`; false if the port has
    /// none.
    pub(super) fn give_host(&mut self, port: u16, f: &[u8]) -> bool {
        let Some(Some(h)) = self.hosts.get_mut(port as usize) else {
            return false;
        };
        let ok = h.write(f);
        self.shared.counters.inc(if ok {
            Counter::ToHost
        } else {
            Counter::ToHostDropped
        });
        true
    }

    /// Sends what the hosts wrote to their TAPs out of their ports (up
    /// to `HOST_BURST` frames a port); returns how many.
    pub fn from_hosts(&mut self) -> usize {
        let mut buf = [0u8; 16384];
        let mut n = 0;
        let workers = self.shared.inject.len().max(1);
        for port in 0..self.hosts.len() {
            for _ in 0..HOST_BURST {
                let Some(Some(h)) = self.hosts.get_mut(port) else {
                    break;
                };
                let Some(len) = h.read(&mut buf) else {
                    break;
                };
                if len > crate::punt::BUF_CAP {
                    // Over the buffers' size (a TAP MTU above the port's
                    // frames): not sent, counted.
                    self.shared.counters.inc(Counter::InjectDropped);
                    continue;
                }
                self.next_worker = (self.next_worker + 1) % workers;
                self.shared.counters.inc(Counter::FromHost);
                self.out(self.next_worker, port as u16, &buf[..len]);
                n += 1;
            }
        }
        n
    }
}
