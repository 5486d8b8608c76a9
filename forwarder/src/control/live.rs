//! A live trace the control side is serving (see `taps`): the session
//! armed on the workers, where its described records go, how many it
//! wants and until when.

use crate::tap::Session;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::Instant;

/// A live trace being served.
pub(super) struct Live {
    pub(super) session: Arc<Session>,
    pub(super) lines: SyncSender<String>,
    pub(super) json: bool,
    pub(super) wanted: u64,
    pub(super) sent: u64,
    pub(super) until: Instant,
}
