//! What the control socket answers: one line of JSON, or lines a thread
//! of their own streams (a route listing, a capture, a live trace).

use std::os::unix::net::UnixStream;

/// What writes a streamed answer, on a thread of its own.
pub type Job = Box<dyn FnOnce(&mut UnixStream) + Send>;

/// An answer: one line of JSON, or lines a thread streams.
pub enum Reply {
    /// One line.
    Line(serde_json::Value),
    /// Lines written by `Job` until it is done.
    Stream(Job),
}

impl From<serde_json::Value> for Reply {
    fn from(v: serde_json::Value) -> Reply {
        Reply::Line(v)
    }
}
