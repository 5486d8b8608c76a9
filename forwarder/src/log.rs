//! The forwarder's log: one line per event on standard error (where the
//! journal picks it up), with its level: `forwarder: LEVEL: message`, or
//! with `run --log-format json` one JSON object a line (`ts`, seconds
//! since the epoch; `level`; `msg`) for log pipelines.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

static JSON: AtomicBool = AtomicBool::new(false);

/// How bad an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Something failed and was not done (a reload refused, a socket
    /// error).
    Error,
    /// Something works less well than configured (a worker unpinned).
    Warn,
    /// What happened (a reload applied, a worker pinned).
    Info,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
        }
    }
}

/// Lines as JSON objects from now on (`--log-format json`).
pub fn set_json(on: bool) {
    JSON.store(on, Relaxed);
}

/// The line `msg` at `level` is written as.
pub fn line(level: Level, msg: &str) -> String {
    if JSON.load(Relaxed) {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        serde_json::json!({ "ts": (ts * 1e3).round() / 1e3, "level": level.name(), "msg": msg })
            .to_string()
    } else {
        format!("forwarder: {}: {msg}", level.name())
    }
}

/// Writes `msg` at `level` to standard error, one line.
pub fn log(level: Level, msg: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", line(level, msg));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_json_lines() {
        assert_eq!(line(Level::Warn, "a b"), "forwarder: warn: a b");
        set_json(true);
        let l = line(Level::Error, "reload refused: \"x\"");
        set_json(false);
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["level"], "error");
        assert_eq!(v["msg"], "reload refused: \"x\"");
        assert!(v["ts"].as_f64().unwrap() > 1.7e9);
    }
}
