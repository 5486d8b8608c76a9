//! `forwarder route get|list`: the routes the running forwarder's
//! workers use, with where each came from (see
//! [`crate::control::routes`]); `--offline`, those a configuration file
//! gives.

use crate::control::server::{request, request_stream};
use crate::control::Control;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `forwarder route ...`.
#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// The route an address takes, as `ip route get`
    ///
    /// Its prefix and where it came from, the next hop or ECMP group,
    /// each next hop's port, MAC and neighbour state.
    Get {
        /// The address.
        address: String,
        /// In this VRF (`default` where not given), as `ip route get vrf`.
        #[arg(long)]
        vrf: Option<String>,
        /// The configuration file.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        /// The file's tables, not the running forwarder's.
        #[arg(long)]
        offline: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List routes, as `ip route show`
    ///
    /// Sorted, streamed: all of them, or those within PREFIX, or of one
    /// origin.
    List {
        /// Only routes equal to or inside this prefix.
        prefix: Option<String>,
        /// Only routes from here: config, route_file, kernel, connected,
        /// local, router.
        #[arg(long)]
        origin: Option<String>,
        /// The routes of this VRF (`default` where not given), as `ip
        /// route show vrf`.
        #[arg(long)]
        vrf: Option<String>,
        /// The configuration file.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        /// The file's tables, not the running forwarder's.
        #[arg(long)]
        offline: bool,
        /// One JSON object a line, and a last line with the count.
        #[arg(long)]
        json: bool,
    },
}

impl Cmd {
    /// Whether the answer is asked for as JSON.
    pub fn json(&self) -> bool {
        match self {
            Cmd::Get { json, .. } | Cmd::List { json, .. } => *json,
        }
    }
}

/// Runs `forwarder route ...` (`default` is the configuration when none
/// is given).
pub fn run(
    cmd: Cmd,
    default: impl Fn(Option<PathBuf>) -> PathBuf,
    out: &mut dyn Write,
) -> Result<(), String> {
    match cmd {
        Cmd::Get {
            address,
            vrf,
            config,
            offline,
            json,
        } => get(
            &default(config),
            (&address, vrf.as_deref()),
            offline,
            json,
            out,
        ),
        Cmd::List {
            prefix,
            origin,
            vrf,
            config,
            offline,
            json,
        } => list(
            &default(config),
            (prefix.as_deref(), origin.as_deref(), vrf.as_deref()),
            offline,
            json,
            out,
        ),
    }
}

fn get(
    config: &Path,
    (address, vrf): (&str, Option<&str>),
    offline: bool,
    as_json: bool,
    out: &mut dyn Write,
) -> Result<(), String> {
    let v: Value = if offline {
        Control::start(config)?.route_get(address, vrf)
    } else {
        let socket = super::socket(config)?;
        let line = request(
            &socket,
            &json!({ "request": "route_get", "address": address, "vrf": vrf }).to_string(),
        )?;
        serde_json::from_str(&line)
            .map_err(|e| format!("bad answer from the forwarder: {e}: {line}"))?
    };
    if v["result"] != "ok" {
        return Err(v["error"].as_str().unwrap_or("refused").to_string());
    }
    let text = if as_json {
        v.to_string()
    } else {
        let mut t = v["summary"].as_str().unwrap_or("").to_string();
        // A line a next hop (each member of an ECMP group): its port,
        // kind, and the neighbour the frames go to.
        for h in v["hops"].as_array().into_iter().flatten() {
            let n = &h["neighbour"];
            let neighbour = match (n["state"].as_str(), n["mac"].as_str()) {
                (Some(st), Some(m)) => format!("{} lladdr {m} {st}", s_of(&n["address"])),
                (Some(st), None) => format!("{} {st}", s_of(&n["address"])),
                (None, Some(m)) => format!("lladdr {m}"),
                (None, None) if h["kind"] == "local" => "this forwarder".to_string(),
                (None, None) => "no neighbour entry".to_string(),
            };
            t.push_str(&format!(
                "\n    nexthop {} dev {} {}: {neighbour}",
                s_of(&h["hop"]),
                s_of(&h["port"]),
                s_of(&h["kind"])
            ));
        }
        t
    };
    writeln!(out, "{text}").map_err(|e| e.to_string())
}

/// A JSON string's text, `-` where there is none.
fn s_of(v: &Value) -> &str {
    v.as_str().unwrap_or("-")
}

fn list(
    config: &Path,
    (within, origin, vrf): (Option<&str>, Option<&str>, Option<&str>),
    offline: bool,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), String> {
    if offline {
        let l = Control::start(config)?.route_list(within, origin, vrf)?;
        return l.write(out, json).map_err(|e| e.to_string());
    }
    let socket = super::socket(config)?;
    let mut req = serde_json::json!({ "request": "route_list", "json": json, "vrf": vrf });
    if let Some(p) = within {
        req["prefix"] = serde_json::json!(p);
    }
    if let Some(o) = origin {
        req["origin"] = serde_json::json!(o);
    }
    let mut failed = None;
    request_stream(&socket, &req.to_string(), |line| {
        match out.write_all(line) {
            Ok(()) => true,
            Err(e) => {
                // A reader that went away (`| head`) ends the listing.
                failed = (e.kind() != std::io::ErrorKind::BrokenPipe).then(|| e.to_string());
                false
            }
        }
    })?;
    failed.map_or(Ok(()), Err)
}
