//! `forwarder conntrack list|count|flush`: the control side asks each
//! worker for its connections through its mailbox
//! ([`crate::worker::Mailbox`]) and waits for the answers, served
//! between two of the worker's turns.

use super::stats::Source;
use crate::conntrack::CtView;
use crate::worker::{MailOp, Mailbox};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Requests' sequence numbers (unique for the process).
static SEQ: AtomicU64 = AtomicU64::new(1);

/// How long the workers have to answer (a worker turns in microseconds;
/// one that does not answer in this long is stuck).
const WAIT: Duration = Duration::from_secs(2);

impl Source {
    /// Posts a request to every worker (`post` on its mailbox) and waits
    /// for them all to serve it.
    pub(super) fn ask_each(&self, post: impl Fn(&Mailbox, u64) -> u64) -> Result<(), String> {
        let seq = SEQ.fetch_add(1, Relaxed);
        let posted: Vec<u64> = self
            .workers
            .iter()
            .map(|(_, p)| post(&p.mailbox, seq))
            .collect();
        let start = Instant::now();
        for ((core, p), v) in self.workers.iter().zip(&posted) {
            while !p.mailbox.answered(*v) {
                if start.elapsed() > WAIT {
                    return Err(format!("the worker on core {core} did not answer"));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        Ok(())
    }

    /// Asks every worker `op`; their connections (a listing).
    fn ask_workers(&self, op: MailOp) -> Result<Vec<CtView>, String> {
        self.ask_each(|m, seq| m.post(seq, op))?;
        Ok(self
            .workers
            .iter()
            .flat_map(|(_, p)| p.mailbox.take())
            .collect())
    }

    /// The answer to `conntrack list|count|flush`.
    pub fn conntrack(&self, what: &str) -> Value {
        if !self.shared.snapshot.load().conntrack.enabled {
            return json!({
                "result": "error",
                "error": "connection tracking is off (`[conntrack] enabled = true` turns it on)",
            });
        }
        let op = match what {
            "list" | "count" => MailOp::List,
            "flush" => MailOp::Flush,
            other => {
                return json!({
                    "result": "error",
                    "error": format!("unknown conntrack request `{}` (list, count, flush)", matcher::excerpt(other)),
                })
            }
        };
        let before = self.ct_entries();
        match self.ask_workers(op) {
            Err(e) => json!({ "result": "error", "error": e }),
            Ok(list) => match what {
                "list" => json!({
                    "result": "ok",
                    "connections": list.iter().map(|c| c.json()).collect::<Vec<_>>(),
                }),
                "count" => json!({ "result": "ok", "count": list.len() }),
                _ => json!({ "result": "ok", "flushed": before }),
            },
        }
    }

    /// The entries the workers last published.
    fn ct_entries(&self) -> u64 {
        self.workers
            .iter()
            .map(|(_, p)| p.conntrack[0].load(Relaxed))
            .sum()
    }
}
