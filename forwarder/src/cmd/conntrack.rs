//! `forwarder conntrack list|count|flush`: the running forwarder's
//! tracked connections, as `conntrack -L`, `-C` and `-F` print them.

use std::io::Write;
use std::path::PathBuf;

/// `forwarder conntrack ...`.
#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// List the connections, as `conntrack -L`
    ///
    /// Protocol, seconds left, TCP's state, the original and the reply
    /// direction, `[UNREPLIED]` or `[ASSURED]` (and packets and bytes
    /// each way with `[conntrack] acct = true`).
    List(Args),
    /// Count the connections, as `conntrack -C`
    Count(Args),
    /// Forget every connection, as `conntrack -F`
    Flush(Args),
}

/// What every `conntrack` subcommand takes.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The configuration file the forwarder was started with.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Print JSON (`connections`, `count` or `flushed`).
    #[arg(long)]
    pub json: bool,
}

impl Cmd {
    /// Whether the answer is asked for as JSON.
    pub fn json(&self) -> bool {
        let (Cmd::List(a) | Cmd::Count(a) | Cmd::Flush(a)) = self;
        a.json
    }
}

/// Runs `forwarder conntrack ...` (`default` is the configuration when
/// none is given).
pub fn run(
    cmd: Cmd,
    default: impl Fn(Option<PathBuf>) -> PathBuf,
    out: &mut dyn Write,
) -> Result<(), String> {
    let (what, a) = match cmd {
        Cmd::List(a) => ("list", a),
        Cmd::Count(a) => ("count", a),
        Cmd::Flush(a) => ("flush", a),
    };
    let v = super::client::ask(&default(a.config), &format!("conntrack {what}"))?;
    let text = if a.json {
        format!("{v}\n")
    } else {
        match what {
            "list" => {
                let conns = v["connections"].as_array().cloned().unwrap_or_default();
                let mut s: String = conns
                    .iter()
                    .filter_map(|c| c["line"].as_str())
                    .map(|l| format!("{l}\n"))
                    .collect();
                s += &format!("conntrack: {} flow entries have been shown.\n", conns.len());
                s
            }
            "count" => format!("{}\n", v["count"].as_u64().unwrap_or(0)),
            _ => format!(
                "conntrack: {} flow entries have been deleted.\n",
                v["flushed"].as_u64().unwrap_or(0)
            ),
        }
    };
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
}
