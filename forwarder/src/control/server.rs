//! The control thread: reloads on a change of the configuration or of a
//! set file it includes (inotify, debounced), on SIGHUP and on request
//! through the control socket; answers `stats` there; serves Prometheus
//! metrics over HTTP when configured. It never runs on a worker's core
//! where another is free, and it never makes a worker wait: all it hands
//! the workers is a new snapshot, swapped in atomically.
//!
//! The control socket speaks one line each way: the client sends
//! `reload`, `stats` or a JSON object, the server answers one line of
//! JSON. The control thread reads its connections without blocking (at
//! most [`MAX_CONNECTIONS`] at once, each given [`READ_TIMEOUT`] to send
//! its line): a client that sends half a request holds up only itself.

use super::reply::{Job, Reply};
use super::stats::Source;
use super::watch::watch;
use super::{Control, ElementOp};
use crate::log::{log, log_with, Level};
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long file changes must settle before a reload (editors write in
/// several steps).
pub const DEBOUNCE: Duration = Duration::from_millis(100);
/// How often the control thread looks at its inputs.
const TICK: Duration = Duration::from_millis(10);

/// Connections read at once; more wait in the listener's backlog.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a connection may take to send its request line.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// The running control thread.
pub struct Server {
    thread: JoinHandle<()>,
    /// Where the control socket is.
    pub socket: PathBuf,
}

impl Server {
    /// Waits for the control thread (after the workers' stop flag is set).
    pub fn join(self) {
        let _ = self.thread.join();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// A connection whose request is being read.
struct Conn {
    s: UnixStream,
    /// Who it is (`SO_PEERCRED`), or why that is unknown.
    peer: Result<u32, String>,
    /// What it sent so far.
    buf: Vec<u8>,
    since: Instant,
}

impl Conn {
    /// Reads what `s` has without waiting; the request once it is whole
    /// (a line, the end of the stream, too long, or too slow).
    fn poll(&mut self) -> Option<Result<Vec<u8>, String>> {
        let mut chunk = [0u8; 64 << 10];
        loop {
            match self.s.read(&mut chunk) {
                Ok(0) => return Some(Ok(std::mem::take(&mut self.buf))),
                Ok(n) => {
                    if let Some(i) = chunk[..n].iter().position(|&b| b == b'\n') {
                        self.buf.extend_from_slice(&chunk[..i]);
                        return Some(Ok(std::mem::take(&mut self.buf)));
                    }
                    self.buf.extend_from_slice(&chunk[..n]);
                    if self.buf.len() as u64 > MAX_REQUEST {
                        return Some(Err(format!(
                            "request longer than {MAX_REQUEST} bytes: refused"
                        )));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    return (self.since.elapsed() > READ_TIMEOUT).then(|| {
                        Err(format!(
                            "no whole request line within {} s",
                            READ_TIMEOUT.as_secs()
                        ))
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Some(Err(format!("reading the request: {e}"))),
            }
        }
    }

    /// Hands the connection to a thread of its own that writes `job`'s
    /// lines (a listing, a capture, a live trace: answers that stream)
    /// and closes it; a reader that stops reading for a minute is given
    /// up.
    fn stream(self, job: Job) {
        let mut s = self.s;
        let _ = s.set_nonblocking(false);
        let _ = s.set_write_timeout(Some(Duration::from_secs(60)));
        let spawned = std::thread::Builder::new()
            .name("control-stream".into())
            .spawn(move || job(&mut s));
        if let Err(e) = spawned {
            log(
                Level::Error,
                &format!("control socket: no thread for a stream: {e}"),
            );
        }
    }

    /// Writes `answer` (waiting at most a few seconds for a slow reader)
    /// and closes.
    fn finish(self, answer: &str) {
        let mut s = self.s;
        let _ = s.set_nonblocking(false);
        let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
        let _ = writeln!(s, "{answer}");
    }
}

/// Starts the control thread for `control`, serving `stats`.
pub fn start(
    control: Control,
    stats: Arc<Source>,
    worker_cores: &[usize],
) -> Result<Server, String> {
    let cfg = control.config().control.clone();
    let socket = cfg
        .socket
        .clone()
        .unwrap_or_else(|| config::default_socket(control.path()));
    let listener = super::access::listen(&socket, &cfg)?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("control socket: {e}"))?;
    let hup = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, hup.clone())
        .map_err(|e| format!("SIGHUP handler: {e}"))?;
    if let Some(addr) = cfg.prometheus {
        let l = std::net::TcpListener::bind(addr)
            .map_err(|e| format!("prometheus listener on {addr}: {e}"))?;
        let stats = stats.clone();
        std::thread::Builder::new()
            .name("prometheus".into())
            .spawn(move || super::prometheus::serve(l, &stats))
            .map_err(|e| e.to_string())?;
    }
    let free = crate::worker::free_cores(worker_cores);
    if free.is_empty() {
        log(
            Level::Warn,
            "every core this process may use runs a worker: the control and router threads run \
             unpinned, beside them (give the workers fewer cores than the process has to keep \
             them apart)",
        );
    }
    // Watching before `start` returns: a file changed right after is not
    // missed while the control thread starts.
    let watching = cfg.watch;
    let w = if watching {
        match watch(&control.files()) {
            Ok(w) => Some(w),
            Err(e) => {
                log(
                    Level::Warn,
                    &format!("{e}; reload with SIGHUP or `forwarder reload`"),
                );
                None
            }
        }
    } else {
        None
    };
    let thread = std::thread::Builder::new()
        .name("control".into())
        .spawn(move || {
            if let Some(&c) = free.first() {
                let _ = core_affinity::set_for_current(core_affinity::CoreId { id: c });
            }
            control_loop(control, listener, hup, (watching, w), &stats)
        })
        .map_err(|e| e.to_string())?;
    Ok(Server { thread, socket })
}

fn reload(control: &mut Control, why: &str, diff: bool) -> serde_json::Value {
    match control.reload_with(diff) {
        Ok((r, said)) => {
            // What the reload did, once: the log's fields and the answer.
            let figures = json!({
                "published": r.published,
                "generation": r.generation,
                "sets_rebuilt": r.sets_rebuilt,
                "elements_added": r.elements_added,
                "elements_removed": r.elements_removed,
                "routes_changed": r.routes_changed,
                "fib_rebuilt": r.fib_rebuilt,
                "parse_us": r.parse.as_micros() as u64,
                "took_us": r.took.as_micros() as u64,
            });
            let msg = if !r.published {
                format!(
                    "reload ({why}): nothing changed, generation {} serves on ({:.1} ms)",
                    r.generation,
                    r.took.as_secs_f64() * 1e3
                )
            } else {
                format!(
                    "reload ({why}): generation {}: {} set(s) rebuilt, +{} -{} element(s), {} route change(s){}, in {:.1} ms ({:.1} ms reading and checking the files)",
                    r.generation,
                    r.sets_rebuilt,
                    r.elements_added,
                    r.elements_removed,
                    r.routes_changed,
                    if r.fib_rebuilt { ", FIB rebuilt" } else { "" },
                    r.took.as_secs_f64() * 1e3,
                    r.parse.as_secs_f64() * 1e3
                )
            };
            let mut fields = figures.clone();
            fields["event"] = json!("reload");
            fields["trigger"] = json!(why);
            log_with(Level::Info, &msg, fields);
            let mut answer = figures;
            answer["result"] = json!("ok");
            answer["diff"] = said;
            answer
        }
        Err(e) => {
            let serving = control.shared().status.generation.load(Relaxed);
            // The first error's place as fields of their own (what a
            // pipeline alerts on), every error placed beside.
            let errors = crate::log::located_all(&e);
            let mut fields = json!({ "event": "reload_refused", "trigger": why,
                                     "generation": serving, "errors": errors });
            for k in ["file", "line", "col"] {
                if let Some(v) = errors.first().and_then(|f| f.get(k)) {
                    fields[k] = v.clone();
                }
            }
            log_with(
                Level::Error,
                &format!("reload ({why}) refused, still serving generation {serving}: {e}"),
                fields,
            );
            json!({
                "result": "error",
                "error": e,
                "generation": control.shared().status.generation.load(Relaxed),
            })
        }
    }
}

fn control_loop(
    mut control: Control,
    listener: UnixListener,
    hup: Arc<AtomicBool>,
    (watching, mut w): (bool, Option<super::watch::Watch>),
    stats: &Source,
) {
    let shared = control.shared();
    let mut files = control.files();
    let mut changed: Option<Instant> = None;
    let mut conns: Vec<Conn> = Vec::new();
    let mut links = Links::of(control.config());
    while !shared.stop.load(Relaxed) {
        control.reclaim();
        links.poll();
        if hup.swap(false, Relaxed) {
            reload(&mut control, "SIGHUP", false);
        }
        if let Some(watch) = &w {
            while watch.events.try_recv().is_ok() {
                changed = Some(Instant::now());
            }
        }
        if changed.is_some_and(|t| t.elapsed() >= DEBOUNCE) {
            changed = None;
            reload(&mut control, "file changed", false);
        }
        control.expire();
        control.serve_live();
        control.kernel_poll();
        if control.compact_due() {
            control.compact();
        }
        if watching && control.files() != files {
            // A set file added or removed: watch what the new
            // configuration reads.
            files = control.files();
            w = watch(&files).map_err(|e| log(Level::Warn, &e)).ok();
        }
        // Requests as they come; between them, the next tick.
        let mut fds = vec![listener.as_raw_fd()];
        fds.extend(conns.iter().map(|c| c.s.as_raw_fd()));
        fds.extend(control.mirror_fd());
        super::access::wait_readable(&fds, TICK);
        while conns.len() < MAX_CONNECTIONS {
            match listener.accept() {
                Ok((s, _)) => {
                    let _ = s.set_nonblocking(true);
                    conns.push(Conn {
                        peer: super::access::peer_uid(&s).map_err(|e| e.to_string()),
                        s,
                        buf: Vec::new(),
                        since: Instant::now(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    log(Level::Error, &format!("control socket: {e}"));
                    break;
                }
            }
        }
        let mut i = 0;
        while i < conns.len() {
            match conns[i].poll() {
                None => i += 1,
                Some(line) => {
                    let c = conns.swap_remove(i);
                    match answer(&c.peer, &line, &mut control, stats) {
                        Reply::Line(a) => c.finish(&a.to_string()),
                        Reply::Stream(job) => c.stream(job),
                    }
                }
            }
        }
    }
}

/// The link state of the Linux interfaces the ports run on, as the
/// kernel reports it (`/sys/class/net/IF/operstate`), read once a second;
/// a change is logged (a cable pulled, a peer's veth gone down).
struct Links {
    ports: Vec<(String, String, String)>,
    last: Instant,
}

impl Links {
    fn of(cfg: &config::Config) -> Links {
        let ports = cfg
            .ports
            .iter()
            .filter_map(|p| match &p.driver {
                config::Driver::AfPacket(o) => Some((p.name.clone(), o.interface.clone())),
                config::Driver::AfXdp(o) => Some((p.name.clone(), o.interface.clone())),
                _ => None,
            })
            .map(|(name, dev)| {
                let state = Links::state(&dev);
                (name, dev, state)
            })
            .collect();
        Links {
            ports,
            last: Instant::now(),
        }
    }

    fn state(dev: &str) -> String {
        std::fs::read_to_string(Path::new("/sys/class/net").join(dev).join("operstate"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "gone".into())
    }

    fn poll(&mut self) {
        if self.ports.is_empty() || self.last.elapsed() < Duration::from_secs(1) {
            return;
        }
        self.last = Instant::now();
        for (name, dev, was) in &mut self.ports {
            let now = Links::state(dev);
            if now != *was {
                let level = if now == "up" {
                    Level::Info
                } else {
                    Level::Warn
                };
                log_with(
                    level,
                    &format!("port `{name}` ({dev}): link {was} -> {now}"),
                    json!({ "event": "link", "port": name, "device": dev, "from": was, "to": now }),
                );
                *was = now;
            }
        }
    }
}

/// The answer to the request `line` from `peer` (or why neither is
/// known).
fn answer(
    peer: &Result<u32, String>,
    line: &Result<Vec<u8>, String>,
    control: &mut Control,
    stats: &Source,
) -> Reply {
    // The request was read whoever sent it: a client refused before it
    // finished writing would see a broken pipe instead of the answer.
    match peer {
        Ok(uid) if super::access::allowed(&control.config().control, *uid) => {}
        who => {
            let who = who
                .as_ref()
                .map_or_else(|e| format!("an unknown peer ({e})"), |u| format!("uid {u}"));
            log_with(
                Level::Warn,
                &format!("control socket: refused a request from {who}"),
                json!({ "event": "request_refused", "peer": who }),
            );
            return json!({
                "result": "error",
                "error": format!(
                    "{who} may not use this forwarder's control socket ([control] allow_uids)"
                ),
            })
            .into();
        }
    }
    let line = match line {
        Ok(l) => l,
        Err(e) => return json!({ "result": "error", "error": e }).into(),
    };
    let Ok(text) = std::str::from_utf8(line) else {
        return json!({ "result": "error", "error": "the request is not UTF-8" }).into();
    };
    match text.trim() {
        "reload" => reload(control, "request", false).into(),
        "stats" => stats.json().into(),
        "neighbours" => stats.neighbours().into(),
        t if t.starts_with("conntrack ") => stats.conntrack(t["conntrack ".len()..].trim()).into(),
        t if t.starts_with('{') => json_request(control, t, stats),
        other => json!({
            "result": "error",
            "error": format!(
                "unknown request `{}` (reload, stats, neighbours, conntrack list|count|flush, \
                 or a JSON object)",
                matcher::excerpt(other)
            ),
        })
        .into(),
    }
}

/// The longest request line served: room for a bulk element request of
/// about a hundred thousand elements.
const MAX_REQUEST: u64 = 16 << 20;

/// A request as a JSON object: `{"request": "element", "op": "add" |
/// "delete", "set": NAME, "elements": [TEXT, ...]}` or `{"request":
/// "list", "set": NAME}`.
fn json_request(control: &mut Control, text: &str, stats: &Source) -> Reply {
    let v: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return json!({ "result": "error", "error": format!("bad JSON request: {e}") }).into()
        }
    };
    match v["request"].as_str() {
        Some("route_list") => {
            let within = v["prefix"].as_str();
            let json = v["json"].as_bool().unwrap_or(false);
            return match control.route_list(within, v["origin"].as_str(), v["vrf"].as_str()) {
                Ok(list) => Reply::Stream(Box::new(move |s: &mut UnixStream| {
                    let _ = list.write(s, json);
                })),
                Err(e) => json!({ "result": "error", "error": e }).into(),
            };
        }
        Some("reload") => return reload(control, "request", v["diff"] == true).into(),
        Some("diff") => {
            return control
                .diff_file(v["config"].as_str().map(std::path::Path::new))
                .into()
        }
        Some("capture") => {
            return match control.capture_request(&v) {
                Ok(job) => Reply::Stream(job),
                Err(e) => e.into(),
            }
        }
        Some("trace_live") => {
            return match control.live_trace_request(&v) {
                Ok(job) => Reply::Stream(job),
                Err(e) => e.into(),
            }
        }
        Some("route_get") => {
            return control
                .route_get(v["address"].as_str().unwrap_or(""), v["vrf"].as_str())
                .into()
        }
        _ => {}
    }
    element_request(control, &v, stats).into()
}

/// The requests about elements, and traces.
fn element_request(
    control: &mut Control,
    v: &serde_json::Value,
    stats: &Source,
) -> serde_json::Value {
    let set = v["set"].as_str().unwrap_or("");
    match v["request"].as_str() {
        Some("element") => {
            let Some(op) = v["op"].as_str().and_then(ElementOp::parse) else {
                return json!({ "result": "error", "error": "`op` must be `add` or `delete`" });
            };
            let Some(list) = v["elements"].as_array() else {
                return json!({ "result": "error", "error": "`elements` must be an array of strings" });
            };
            let texts: Option<Vec<String>> =
                list.iter().map(|e| e.as_str().map(String::from)).collect();
            let Some(texts) = texts else {
                return json!({ "result": "error", "error": "`elements` must be an array of strings" });
            };
            let start = Instant::now();
            match control.elements(op, set, &texts) {
                Ok(generation) => {
                    log_with(
                        Level::Info,
                        &format!(
                            "element {} ({} in set `{set}`): generation {generation} in {:.2} ms",
                            v["op"].as_str().unwrap_or(""),
                            texts.len(),
                            start.elapsed().as_secs_f64() * 1e3
                        ),
                        json!({ "event": "element", "op": v["op"], "set": set,
                                "elements": texts.len(), "generation": generation }),
                    );
                    json!({
                        "result": "ok",
                        "generation": generation,
                        "op": v["op"],
                        "set": set,
                        "elements": texts.len(),
                        "took_us": start.elapsed().as_micros() as u64,
                    })
                }
                Err(e) => json!({
                    "result": "error",
                    "error": e,
                    "generation": control.shared().status.generation.load(Relaxed),
                }),
            }
        }
        Some("list") => match control.list(set) {
            Ok(l) => {
                let mut a = json!({
                    "result": "ok",
                    "set": set,
                    "type": l.decl,
                    "map": l.map,
                    "elements": l.elements,
                });
                if l.counter {
                    match stats.element_counters(set) {
                        Ok(by_key) => {
                            let c: Vec<[u64; 2]> = (l.keys.iter())
                                .map(|k| by_key.get(k).copied().unwrap_or([0; 2]))
                                .collect();
                            a["counters"] = json!(c);
                        }
                        Err(e) => return json!({ "result": "error", "error": e }),
                    }
                }
                a
            }
            Err(e) => json!({ "result": "error", "error": e }),
        },
        Some("reset") => {
            // nft's `reset set` (one set) and `reset counters` (all).
            let name = v["set"].as_str();
            if let Some(Err(e)) = name.map(|n| control.set_index(n)) {
                return json!({ "result": "error", "error": e });
            }
            match stats.reset_element_counters(name) {
                Ok(()) => json!({ "result": "ok", "set": name }),
                Err(e) => json!({ "result": "error", "error": e }),
            }
        }
        Some("trace") => control.trace_request(v),
        _ => {
            json!({ "result": "error", "error": "`request` must be `element`, `list`, `reset` or `trace`" })
        }
    }
}

/// Sends `request` to the control socket `socket`; returns the reply line.
pub fn request(socket: &Path, request: &str) -> Result<String, String> {
    let mut s = UnixStream::connect(socket).map_err(|e| {
        format!(
            "cannot reach the forwarder at {}: {e} (is it running with this configuration?)",
            socket.display()
        )
    })?;
    s.set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(|e| e.to_string())?;
    // A forwarder that stops reading (a request too long) may already
    // have answered: its answer is read even when the write failed.
    let wrote = writeln!(s, "{request}");
    let mut line = String::new();
    let read = BufReader::new(s).read_line(&mut line);
    if !line.is_empty() {
        return Ok(line.trim_end().to_string());
    }
    Err(match (wrote, read) {
        (Err(e), _) => format!("sending to {}: {e}", socket.display()),
        (_, Err(e)) => format!("no answer from {}: {e}", socket.display()),
        _ => format!("no answer from {}", socket.display()),
    })
}

/// Sends `request` to the control socket `socket` and hands each line of
/// the answer to `line` until the forwarder closes the connection or
/// `line` returns false (a streamed answer: a listing, a capture's
/// frames, a live trace). A first line that is a JSON error is the
/// error.
pub fn request_stream(
    socket: &Path,
    request: &str,
    mut line: impl FnMut(&[u8]) -> bool,
) -> Result<(), String> {
    let mut s = UnixStream::connect(socket).map_err(|e| {
        format!(
            "cannot reach the forwarder at {}: {e} (is it running with this configuration?)",
            socket.display()
        )
    })?;
    writeln!(s, "{request}").map_err(|e| format!("sending to {}: {e}", socket.display()))?;
    let mut r = BufReader::with_capacity(1 << 16, s);
    let mut buf = Vec::new();
    let mut first = true;
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| format!("reading from {}: {e}", socket.display()))?;
        if n == 0 {
            return Ok(());
        }
        if first && buf.starts_with(b"{") {
            let v: serde_json::Value = serde_json::from_slice(&buf).unwrap_or_default();
            if v["result"] == "error" {
                return Err(v["error"].as_str().unwrap_or("refused").to_string());
            }
        }
        first = false;
        if !line(&buf) {
            return Ok(());
        }
    }
}
