//! `forwarder trace`: explain a packet stage by stage (see
//! [`crate::trace`]), against the running forwarder's tables, against a
//! configuration file (`--offline`), or both against a candidate file
//! (`--candidate`); or, with `--live`, the next packets of a port.

use crate::control::server::{request, request_stream};
use crate::control::Control;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The arguments of `forwarder trace`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The configuration file (the running forwarder's, or the one to
    /// trace against with `--offline`).
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// The packet in the words of a set's `match`: `iif wan ip saddr
    /// 192.0.2.7 ip daddr 198.51.100.9 tcp dport 443` (fields not given
    /// take stated defaults).
    #[arg(long, conflicts_with_all = ["hex", "pcap", "live"])]
    pub packet: Option<String>,
    /// The packet as a frame in hexadecimal.
    #[arg(long, conflicts_with_all = ["pcap", "live"])]
    pub hex: Option<String>,
    /// The packet as the first frame of a pcap or pcapng file.
    #[arg(long, conflicts_with = "live")]
    pub pcap: Option<PathBuf>,
    /// The port the packet arrives on (for `--hex` and `--pcap`; words
    /// may say `iif`); with `--live`, the port whose packets are traced.
    #[arg(long)]
    pub port: Option<String>,
    /// Trace against the configuration file, not the running forwarder.
    #[arg(long)]
    pub offline: bool,
    /// Also trace against this configuration file, as a reload of it
    /// would make the tables, and say what changes for the packet.
    #[arg(long)]
    pub candidate: Option<PathBuf>,
    /// Trace the next packets of `--port` on the workers themselves.
    #[arg(long, requires = "port", conflicts_with_all = ["offline", "candidate"])]
    pub live: bool,
    /// With `--live`: how many packets (default 1).
    #[arg(long, default_value_t = 1)]
    pub count: u64,
    /// With `--live`: only packets that pass this filter (the words of a
    /// set's `match`).
    #[arg(long)]
    pub filter: Option<String>,
    /// With `--live`: give up after this many seconds without the packets.
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The request the arguments describe.
fn request_of(a: &Args) -> Result<Value, String> {
    let mut v = json!({ "request": "trace" });
    if let Some(p) = &a.packet {
        v["packet"] = json!(p);
    } else if let Some(h) = &a.hex {
        v["hex"] = json!(h);
    } else if let Some(f) = &a.pcap {
        let bytes = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let c = crate::pcap::read(&bytes).map_err(|e| format!("{}: {e}", f.display()))?;
        let first = c
            .frames
            .first()
            .ok_or_else(|| format!("{}: no frame in it", f.display()))?;
        v["hex"] = json!(first
            .data
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>());
    } else {
        return Err(
            "trace needs a packet: --packet WORDS, --hex FRAME or --pcap FILE (or --live --port P)"
                .into(),
        );
    }
    if let Some(p) = &a.port {
        v["port"] = json!(p);
    }
    if let Some(c) = &a.candidate {
        let abs = std::fs::canonicalize(c).map_err(|e| format!("{}: {e}", c.display()))?;
        v["candidate"] = json!(abs.display().to_string());
    }
    Ok(v)
}

/// `forwarder trace`.
pub fn run(config: &Path, a: &Args, out: &mut dyn Write) -> Result<(), String> {
    if a.live {
        return live_trace(config, a, out);
    }
    let req = request_of(a)?;
    let answer = if a.offline {
        let c = Control::start(config)?;
        c.trace_request(&req)
    } else {
        let socket = super::socket(config)?;
        let line = request(&socket, &req.to_string()).map_err(|e| {
            format!("{e}\n(to trace against the file without a running forwarder: --offline)")
        })?;
        serde_json::from_str(&line)
            .map_err(|e| format!("bad answer from the forwarder: {e}: {line}"))?
    };
    if answer["result"] != "ok" {
        return Err(answer["error"]
            .as_str()
            .unwrap_or("trace refused")
            .to_string());
    }
    let t = &answer["trace"];
    let text = if a.json {
        format!("{t}\n")
    } else {
        crate::trace::render(t)
    };
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

/// `forwarder trace --live`: the next packets of a port, traced on the
/// workers, described as they come.
pub fn live_trace(
    config: &Path,
    a: &super::trace::Args,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut req = json!({
        "request": "trace_live",
        "port": a.port,
        "count": a.count,
        "json": a.json,
        "timeout_s": a.timeout,
    });
    if let Some(f) = &a.filter {
        req["filter"] = json!(f);
    }
    let socket = super::socket(config)?;
    let mut failed = None;
    request_stream(&socket, &req.to_string(), |line| {
        match out.write_all(line).and_then(|_| out.flush()) {
            Ok(()) => true,
            Err(e) => {
                failed = (e.kind() != std::io::ErrorKind::BrokenPipe).then(|| e.to_string());
                false
            }
        }
    })?;
    failed.map_or(Ok(()), Err)
}
