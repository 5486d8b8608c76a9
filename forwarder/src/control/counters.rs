//! Element counters (`counter = true` on a set) as the control side reads
//! them: every worker is asked for its own through its mailbox
//! ([`crate::worker::Mailbox`]), served between two of its turns, and the
//! counts are summed by element.

use super::stats::Source;
use crate::worker::MailOp;
use matcher::Range;
use std::collections::HashMap;

impl Source {
    /// Set `set`'s element counters summed over the workers, by element
    /// key (elements that counted nothing are absent).
    pub fn element_counters(&self, set: &str) -> Result<HashMap<Box<[Range]>, [u64; 2]>, String> {
        self.ask_each(|m, seq| m.post_set(seq, MailOp::Counters, set))?;
        let mut sum: HashMap<Box<[Range]>, [u64; 2]> = HashMap::new();
        for (_, p) in &self.workers {
            for (k, c) in p.mailbox.take_counts().unwrap_or_default() {
                let s = sum.entry(k).or_default();
                s[0] += c[0];
                s[1] += c[1];
            }
        }
        Ok(sum)
    }

    /// Sets the element counters of `set` (every counted set: `None`)
    /// back to zero in every worker.
    pub fn reset_element_counters(&self, set: Option<&str>) -> Result<(), String> {
        self.ask_each(|m, seq| m.post_set(seq, MailOp::Reset, set.unwrap_or("")))
    }
}
