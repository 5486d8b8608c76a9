//! The control side of captures and live traces: a request arms a tap
//! (see [`crate::tap`]) and hands its connection to a thread that streams
//! the answer. A capture's thread writes pcapng straight from the
//! workers' rings. A live trace's records are described here, on the
//! control thread (which knows where each element and route came from),
//! each tick, and passed to its thread as lines.

use super::live::Live;
use super::reload::Control;
use super::reply::Job;
use crate::filter::Filter;
use crate::log::{log_with, Level};
use crate::punt::Buf;
use crate::tap::{Session, Work};
use crate::trace::Context;
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{sync_channel, Receiver, TrySendError};
use std::time::{Duration, Instant};

fn error(e: impl Into<String>) -> Value {
    json!({ "result": "error", "error": e.into() })
}

impl Control {
    /// The port with queues that `name` names (a capture and a live
    /// trace take frames off a port's queues: a VLAN sub-interface has
    /// none, and is refused with its parent's name).
    fn port_index(&self, name: &str) -> Result<u16, Value> {
        if let Some(p) = self.cfg.ports.iter().find(|p| p.name == name) {
            if let config::Driver::Vlan(o) = &p.driver {
                let parent = self.cfg.ports.get(o.parent).map_or("", |q| q.name.as_str());
                return Err(error(format!(
                    "port `{name}` is a VLAN sub-interface: its frames pass through `{parent}`'s queues, tagged {:?}; name `{parent}`",
                    o.tags
                )));
            }
        }
        self.cfg
            .ports
            .iter()
            .position(|p| p.name == name)
            .map(|i| i as u16)
            .ok_or_else(|| {
                let names: Vec<&str> = self.cfg.ports.iter().map(|p| p.name.as_str()).collect();
                error(format!(
                    "no port `{}` (ports: {})",
                    matcher::excerpt(name),
                    names.join(", ")
                ))
            })
    }

    fn filter_of(&self, v: &Value) -> Result<Filter, Value> {
        let names: Vec<String> = self.cfg.ports.iter().map(|p| p.name.clone()).collect();
        Filter::parse(v["filter"].as_str().unwrap_or(""), &names)
            .map_err(|e| error(format!("filter: {e}")))
    }

    /// `{"request": "capture", "ports": [NAME, ...], "rx": B, "tx": B,
    /// "drops": B, "filter": EXPR, "count": N, "snaplen": N, "slots": N,
    /// "per_burst": N}`:
    /// arms a capture (received and sent frames when none of `rx`, `tx`,
    /// `drops` is asked) and returns the job that streams it as pcapng.
    pub fn capture_request(&self, v: &Value) -> Result<Job, Value> {
        let names: Vec<&str> = match v["ports"].as_array() {
            Some(a) if !a.is_empty() => a.iter().filter_map(|p| p.as_str()).collect(),
            _ => return Err(error("a capture needs `ports`: the ports to capture")),
        };
        let mut ports = Vec::new();
        let mut mask = 0u64;
        for n in names {
            let i = self.port_index(n)?;
            if i >= 64 {
                return Err(error(format!(
                    "port `{n}`: captures reach the first 64 ports"
                )));
            }
            if mask & 1 << i == 0 {
                ports.push((i, n.to_string()));
            }
            mask |= 1 << i;
        }
        let flag = |k: &str| v[k].as_bool().unwrap_or(false);
        let (mut rx, mut tx, drops) = (flag("rx"), flag("tx"), flag("drops"));
        if !rx && !tx && !drops {
            (rx, tx) = (true, true);
        }
        let on = |b: bool| if b { mask } else { 0 };
        let filter = self.filter_of(v)?;
        let snaplen = v["snaplen"]
            .as_u64()
            .unwrap_or(crate::port::FRAME_CAP as u64)
            .clamp(64, crate::port::FRAME_CAP as u64) as u16;
        let slots = v["slots"]
            .as_u64()
            .unwrap_or(crate::tap::CAPTURE_SLOTS as u64)
            .clamp(16, 1 << 20) as usize;
        let count = v["count"].as_u64().filter(|&c| c > 0);
        let per_burst = v["per_burst"]
            .as_u64()
            .unwrap_or(crate::tap::PER_BURST as u64)
            .min(u32::MAX as u64) as u32;
        let workers = self.cfg.forwarder.cores.len();
        let session = Session::capture(
            filter,
            (on(rx), on(tx), on(drops)),
            (snaplen, per_burst),
            (workers, self.cfg.ports.len()),
            slots,
        );
        let shared = self.shared.clone();
        let session = shared.taps.arm(session).map_err(error)?;
        log_with(
            Level::Info,
            &format!(
                "capture {} armed: ports {}{}{}{}",
                session.id,
                ports
                    .iter()
                    .map(|p| p.1.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                if rx { " rx" } else { "" },
                if tx { " tx" } else { "" },
                if drops { " drops" } else { "" },
            ),
            serde_json::json!({ "event": "capture_armed", "capture": session.id,
                                "ports": ports.iter().map(|p| p.1.as_str()).collect::<Vec<_>>() }),
        );
        Ok(Box::new(move |s: &mut UnixStream| {
            let id = session.id;
            let end =
                crate::tap::capture::serve(&shared.taps, session, &ports, count, &shared.stop, s);
            log_with(
                Level::Info,
                &format!(
                    "capture {id} ended ({}): {} frames written, {} lost (rings full)",
                    end.why, end.written, end.lost
                ),
                serde_json::json!({ "event": "capture_ended", "capture": id, "why": end.why,
                                    "written": end.written, "lost": end.lost }),
            );
        }))
    }

    /// `{"request": "trace_live", "port": NAME, "count": N, "filter": EXPR,
    /// "json": B, "timeout_s": N}`: arms a live trace of the next `count`
    /// packets received on the port that pass the filter; returns the job
    /// that streams the descriptions, one a line.
    pub fn live_trace_request(&mut self, v: &Value) -> Result<Job, Value> {
        let port = self.port_index(v["port"].as_str().unwrap_or(""))?;
        let filter = self.filter_of(v)?;
        let count = v["count"].as_u64().unwrap_or(1).clamp(1, 1 << 20);
        let timeout = v["timeout_s"].as_u64().unwrap_or(60).clamp(1, 86_400);
        let session = Session::trace(filter, port, count, self.cfg.forwarder.cores.len());
        let session = self.shared.taps.arm(session).map_err(error)?;
        let (lines, rx) = sync_channel(256);
        let watched = session.clone();
        self.live.push(Live {
            session,
            lines,
            json: v["json"].as_bool().unwrap_or(false),
            wanted: count,
            sent: 0,
            until: Instant::now() + Duration::from_secs(timeout),
        });
        Ok(Box::new(move |s: &mut UnixStream| {
            stream_lines(rx, s, &watched)
        }))
    }

    /// Describes what the workers traced for the live traces since the
    /// last tick and passes it on; ends those done (all their packets, or
    /// their time is up, or their reader gone). The control loop calls it
    /// every tick.
    pub fn serve_live(&mut self) {
        if self.live.is_empty() {
            return;
        }
        let neighbours = self.neighbours();
        let snap = self.shared.snapshot.load_full();
        let mut live = std::mem::take(&mut self.live);
        live.retain_mut(|l| {
            let Work::Trace { rings, .. } = &l.session.work else {
                return false;
            };
            let mut alive = !l.session.done.load(Relaxed);
            for ring in rings {
                while let Some(r) = ring.take() {
                    let cx = Context {
                        origins: &*self,
                        neigh: neighbours.0.clone(),
                        neighbours: &neighbours.1,
                        now_ms: crate::clock::now_ms(),
                    };
                    // What the slow path answers, from the frame's head.
                    let punted = match (r.punted, r.fate, r.hop) {
                        (true, crate::pipeline::Fated::Dropped(d), h) => Some(Buf::holding(
                            r.frame(),
                            r.port,
                            0,
                            d,
                            h.and_then(|h| h.ok()).unwrap_or(0),
                        )),
                        _ => None,
                    };
                    let mut d =
                        crate::trace::describe(&r, &snap, &cx, punted.as_deref(), false, true);
                    d["time_ns"] = json!(r.time_ns);
                    if r.generation != snap.generation {
                        d["note"] = json!(format!(
                            "judged by generation {}; names and origins from generation {}",
                            r.generation, snap.generation
                        ));
                    }
                    ring.give_back(r);
                    l.sent += 1;
                    self.shared.taps.totals.traced.fetch_add(1, Relaxed);
                    l.session.taken.fetch_add(1, Relaxed);
                    let line = if l.json {
                        d.to_string()
                    } else {
                        crate::trace::render(&d)
                    };
                    match l.lines.try_send(line) {
                        Ok(()) => {}
                        // The reader is slow: this record is lost to it.
                        Err(TrySendError::Full(_)) => l.session.lose(0, 1),
                        Err(TrySendError::Disconnected(_)) => alive = false,
                    }
                }
            }
            let done = l.sent >= l.wanted;
            let late = Instant::now() >= l.until;
            if alive && (done || late) {
                let end = json!({
                    "end": true,
                    "traced": l.sent,
                    "lost": l.session.lost(),
                    "why": if done { "count" } else { "timeout" },
                });
                let line = if l.json {
                    end.to_string()
                } else {
                    format!(
                        "{} packet(s) traced{}{}",
                        l.sent,
                        if late && !done {
                            " before the time ran out"
                        } else {
                            ""
                        },
                        match l.session.lost() {
                            0 => String::new(),
                            n => format!(", {n} lost (the rings or the reader were too slow)"),
                        }
                    )
                };
                let _ = l.lines.try_send(line);
            }
            let keep = alive && !done && !late;
            if !keep {
                self.shared.taps.disarm(&l.session);
            }
            keep
        });
        self.live = live;
    }
}

/// Writes the lines of a live trace to its reader until the control
/// side ends it (drops the sender) or the reader goes away (then the
/// session is marked done: the workers stop tracing at once, and the
/// control side disarms it at its next tick).
fn stream_lines(rx: Receiver<String>, s: &mut UnixStream, session: &Session) {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                let text = if line.ends_with('\n') {
                    line
                } else {
                    line + "\n"
                };
                if s.write_all(text.as_bytes()).is_err() {
                    break;
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if crate::tap::capture::gone(s) {
                    break;
                }
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
    session.done.store(true, Relaxed);
}
