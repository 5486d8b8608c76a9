//! `forwarder capture`: the frames of ports of the running forwarder as
//! pcapng (received, sent, and those not forwarded with why), copied on
//! the workers and written by a thread of the control side (see
//! [`crate::tap`]).

use crate::tap::capture::relay;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The arguments of `forwarder capture`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The configuration file the forwarder was started with.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// A port to capture (repeat for more: one interface block each).
    #[arg(long, required = true)]
    pub port: Vec<String>,
    /// The frames the ports receive.
    #[arg(long)]
    pub rx: bool,
    /// The frames the ports send (after the rewrite; the slow path's
    /// answers too).
    #[arg(long)]
    pub tx: bool,
    /// The frames the ports receive that are not forwarded, each with
    /// why (`opt_comment` `drop: REASON`, or `punt: REASON` for those
    /// handed to the slow path). Without `--rx`, `--tx` or `--drops`:
    /// received and sent.
    #[arg(long)]
    pub drops: bool,
    /// Only frames that pass this filter (the words of a set's `match`).
    #[arg(long)]
    pub filter: Option<String>,
    /// Stop after this many frames.
    #[arg(short = 'c', long = "count")]
    pub count: Option<u64>,
    /// Bytes kept of each frame (default: all, up to 2048).
    #[arg(short = 's', long = "snaplen")]
    pub snaplen: Option<u16>,
    /// Slots of 1,024 frames each worker's ring holds (default 16): a
    /// larger ring rides out longer pauses of the writer.
    #[arg(long)]
    pub ring: Option<u64>,
    /// Frames a worker copies of each burst, at most (default 8; 0: all).
    /// Below full rate bursts are short and every frame is kept; at full
    /// rate each burst's first frames are, the rest counted as not kept,
    /// so that forwarding keeps its rate. `0` keeps everything the
    /// writer keeps up with, at a cost to forwarding (BENCHMARKS.md).
    #[arg(long)]
    pub per_burst: Option<u32>,
    /// Where to write: a file, or `-` for standard output.
    #[arg(short = 'w', long = "write")]
    pub write: String,
}

/// `forwarder capture`.
pub fn run(config: &Path, a: &Args) -> Result<(), String> {
    let mut req = json!({
        "request": "capture",
        "ports": a.port,
        "rx": a.rx,
        "tx": a.tx,
        "drops": a.drops,
    });
    if let Some(f) = &a.filter {
        req["filter"] = json!(f);
    }
    if let Some(c) = a.count {
        req["count"] = json!(c);
    }
    if let Some(s) = a.snaplen {
        req["snaplen"] = json!(s);
    }
    if let Some(r) = a.ring {
        req["slots"] = json!(r);
    }
    if let Some(b) = a.per_burst {
        req["per_burst"] = json!(b);
    }
    let socket = super::socket(config)?;
    let mut s = std::os::unix::net::UnixStream::connect(&socket).map_err(|e| {
        format!(
            "cannot reach the forwarder at {}: {e} (is it running with this configuration?)",
            socket.display()
        )
    })?;
    writeln!(s, "{req}").map_err(|e| format!("sending to {}: {e}", socket.display()))?;
    // A refusal is one line of JSON; a capture starts with a section
    // header block.
    let mut first = [0u8; 1];
    use std::io::Read;
    let n = s.read(&mut first).map_err(|e| e.to_string())?;
    if n == 0 {
        return Err("the forwarder closed the capture without a word".into());
    }
    if first[0] == b'{' {
        let mut rest = String::new();
        let _ = s.read_to_string(&mut rest);
        let v: serde_json::Value = serde_json::from_str(&format!("{{{rest}")).unwrap_or_default();
        return Err(v["error"].as_str().unwrap_or("capture refused").to_string());
    }
    let mut out: Box<dyn Write> = if a.write == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(std::fs::File::create(&a.write).map_err(|e| format!("{}: {e}", a.write))?)
    };
    let mut stream = std::io::Cursor::new(first).chain(s);
    let scan = relay(&mut stream, &mut out)?;
    eprintln!(
        "capture: {} frame(s) written{}",
        scan.frames,
        match (scan.ended, scan.lost) {
            (false, _) => ", ended early (the forwarder stopped?)".to_string(),
            (true, 0) => ", none lost".to_string(),
            (true, n) => format!(
                ", {n} lost: the workers' rings were full (a larger --ring, a narrower --filter)"
            ),
        }
    );
    Ok(())
}
