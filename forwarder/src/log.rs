//! The forwarder's log: one line per event on standard error (where the
//! journal picks it up), with its level: `forwarder: LEVEL: message`, or
//! with `run --log-format json` one JSON object a line (`ts`, seconds
//! since the epoch; `level`; `msg`; and the event's own fields: `event`
//! and, by event, `generation`, `file`, `line`, `col`, `core`, `port`,
//! `set` ...) for log pipelines, which filter on fields, not on words.

use serde_json::{json, Value};
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
    line_with(level, msg, Value::Null)
}

/// The line `msg` at `level` with the event's `fields` (an object) is
/// written as: in JSON the fields beside `ts`, `level` and `msg` (which
/// they cannot replace); in text `msg` alone, which says them in words.
pub fn line_with(level: Level, msg: &str, fields: Value) -> String {
    if JSON.load(Relaxed) {
        let ts = crate::clock::unix_ns() as f64 / 1e9;
        let mut o = serde_json::Map::new();
        o.insert("ts".into(), json!((ts * 1e3).round() / 1e3));
        o.insert("level".into(), json!(level.name()));
        o.insert("msg".into(), json!(msg));
        if let Value::Object(f) = fields {
            for (k, v) in f {
                o.entry(k).or_insert(v);
            }
        }
        Value::Object(o).to_string()
    } else {
        format!("forwarder: {}: {msg}", level.name())
    }
}

/// Writes `msg` at `level` to standard error, one line.
pub fn log(level: Level, msg: &str) {
    log_with(level, msg, Value::Null)
}

/// Writes `msg` at `level` with the event's `fields` (see [`line_with`]).
pub fn log_with(level: Level, msg: &str, fields: Value) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "{}",
        line_with(level, msg, fields)
    );
}

/// Errors, one a line, each [`located`].
pub fn located_all(text: &str) -> Vec<Value> {
    text.lines().map(located).collect()
}

/// An error line `FILE:LINE:COL: MESSAGE` as JSON: `file`, `line`,
/// `col`, `message`, and the whole `text` (a line without a place has
/// only `message` and `text`). `check --json` and the log's refused
/// reloads give their errors so.
pub fn located(e: &str) -> Value {
    let place = e.split_once(": ").and_then(|(at, message)| {
        let mut parts = at.rsplitn(3, ':');
        let col: u64 = parts.next()?.parse().ok()?;
        let line: u64 = parts.next()?.parse().ok()?;
        let file = parts.next()?;
        Some(json!({ "file": file, "line": line, "col": col, "message": message, "text": e }))
    });
    place.unwrap_or_else(|| json!({ "message": e, "text": e }))
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

    #[test]
    fn an_events_fields_go_beside_the_message_in_json_only() {
        let fields = || json!({ "event": "reload", "generation": 4, "msg": "not this" });
        assert_eq!(
            line_with(Level::Info, "reloaded", fields()),
            "forwarder: info: reloaded"
        );
        set_json(true);
        let l = line_with(Level::Info, "reloaded", fields());
        set_json(false);
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["event"], "reload");
        assert_eq!(v["generation"], 4);
        assert_eq!(v["msg"], "reloaded");
    }

    #[test]
    fn errors_are_placed() {
        assert_eq!(
            located("/a/b.toml:3:9: burst 0 is outside 1-64"),
            json!({ "file": "/a/b.toml", "line": 3, "col": 9,
                    "message": "burst 0 is outside 1-64",
                    "text": "/a/b.toml:3:9: burst 0 is outside 1-64" })
        );
        assert_eq!(located("no place")["message"], "no place");
        assert!(located("no place").get("line").is_none());
    }
}
