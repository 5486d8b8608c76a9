//! `forwarder reload` and `forwarder stats`: requests to a running
//! forwarder through its control socket (found from its configuration
//! file, as the forwarder derived it).

use crate::control::server::request;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

pub(crate) fn ask(config: &Path, what: &str) -> Result<Value, String> {
    let socket = super::socket(config)?;
    let line = request(&socket, what)?;
    let v: Value = serde_json::from_str(&line)
        .map_err(|e| format!("bad answer from the forwarder: {e}: {line}"))?;
    // A request the forwarder refused outright (not a refused reload,
    // which reports the generation still serving).
    if v["result"] == "error" && v.get("generation").is_none() {
        return Err(format!(
            "{}: {}",
            socket.display(),
            v["error"].as_str().unwrap_or("refused")
        ));
    }
    Ok(v)
}

/// `forwarder reload`: the forwarder reloads its configuration now. Fails
/// (with the error's `file:line:col`) when the new configuration is
/// refused; the forwarder then keeps what it had.
pub fn reload(config: &Path, json: bool, out: &mut dyn Write) -> Result<(), String> {
    answered(
        ask(config, "reload")?,
        "reload refused",
        json,
        reload_words,
        out,
    )
}

/// A reload's answer in words: what it changed, or that nothing did.
fn reload_words(v: &Value) -> String {
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    let ms = n("took_us") as f64 / 1e3;
    if v["published"] == false {
        return format!(
            "nothing changed: generation {} serves on ({ms:.1} ms)",
            n("generation")
        );
    }
    format!(
        "reloaded: generation {}: {} set(s) rebuilt, +{} -{} element(s), {} route change(s){} in {ms:.1} ms",
        n("generation"),
        n("sets_rebuilt"),
        n("elements_added"),
        n("elements_removed"),
        n("routes_changed"),
        if v["fib_rebuilt"] == true { ", FIB rebuilt," } else { "" },
    )
}

/// An element request's answer in words.
fn element_words(v: &Value) -> String {
    format!(
        "{} {} element(s) in set `{}`: generation {} in force ({:.2} ms)",
        if v["op"] == "delete" {
            "deleted"
        } else {
            "added"
        },
        v["elements"].as_u64().unwrap_or(0),
        v["set"].as_str().unwrap_or("?"),
        v["generation"],
        v["took_us"].as_u64().unwrap_or(0) as f64 / 1e3
    )
}

/// `forwarder reload --diff`: what the reload changes (worked out from
/// the configuration the forwarder then applies), then the reload's
/// answer; `json`: the answer alone, its `diff` inside.
pub fn reload_diff(config: &Path, json: bool, out: &mut dyn Write) -> Result<(), String> {
    let v = ask(
        config,
        &serde_json::json!({ "request": "reload", "diff": true }).to_string(),
    )?;
    if v["result"] == "ok" && !json {
        let d = crate::control::diff::render(&v["diff"]);
        out.write_all(d.as_bytes()).map_err(|e| e.to_string())?;
        return writeln!(out, "{}", reload_words(&v)).map_err(|e| e.to_string());
    }
    answered(v, "reload refused", json, reload_words, out)
}

/// `forwarder check --diff`: what a reload of `config` would change in
/// the forwarder running with `against`'s configuration, applying
/// nothing.
pub fn diff(config: &Path, against: &Path, json: bool, out: &mut dyn Write) -> Result<(), String> {
    let abs = std::fs::canonicalize(config).map_err(|e| format!("{}: {e}", config.display()))?;
    let v = ask(
        against,
        &serde_json::json!({ "request": "diff", "config": abs.display().to_string() }).to_string(),
    )?;
    if v["result"] != "ok" {
        return Err(v["error"].as_str().unwrap_or("refused").to_string());
    }
    let text = if json {
        format!("{v}\n")
    } else {
        crate::control::diff::render(&v)
    };
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

/// Prints an answer. With `json`, the answer itself whatever it says
/// (a refusal too, its `errors` placed as `check --json` places them,
/// and the command then fails with nothing more to say: see
/// [`SAID`]); else an `ok` in `words`, and a refusal as the error, with
/// the generation that still serves.
fn answered(
    mut v: Value,
    refused: &str,
    json: bool,
    words: fn(&Value) -> String,
    out: &mut dyn Write,
) -> Result<(), String> {
    let ok = v["result"] == "ok";
    if json {
        if !ok {
            let errors = crate::log::located_all(v["error"].as_str().unwrap_or(""));
            v["errors"] = Value::Array(errors);
        }
        writeln!(out, "{v}").map_err(|e| e.to_string())?;
        return if ok { Ok(()) } else { Err(SAID.into()) };
    }
    if ok {
        writeln!(out, "{}", words(&v)).map_err(|e| e.to_string())
    } else {
        Err(format!(
            "{refused} (still serving generation {}): {}",
            v["generation"],
            v["error"].as_str().unwrap_or("?")
        ))
    }
}

/// The error of a command that has said everything already (its JSON
/// answer, a refusal): it fails without another word.
pub const SAID: &str = "";

/// A client command's failure before any answer (no configuration, no
/// forwarder listening, `reload --check`'s problems), as `--json` prints
/// it: `{"result": "error", "error": ..., "errors": [...]}` on standard
/// output; the command then fails with nothing more to say.
pub fn failed_as_json(
    r: Result<(), String>,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), String> {
    match r {
        Err(e) if json && e != SAID => {
            let errors = crate::log::located_all(&e);
            let v = serde_json::json!({ "result": "error", "error": e, "errors": errors });
            writeln!(out, "{v}").map_err(|e| e.to_string())?;
            Err(SAID.into())
        }
        r => r,
    }
}

/// `forwarder stats`: the counters as JSON; with `watch`, the per-second
/// rates, as `forwarder run` prints them, until interrupted (or for
/// `count` seconds).
pub fn stats(
    config: &Path,
    watch: bool,
    count: Option<u64>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let mut before = ask(config, "stats")?;
    if !watch {
        return writeln!(out, "{before}").map_err(|e| e.to_string());
    }
    let start = Instant::now();
    let mut t0 = Instant::now();
    let mut n = 0;
    while count.is_none_or(|c| n < c) {
        std::thread::sleep(Duration::from_secs(1));
        let now = ask(config, "stats")?;
        let dt = t0.elapsed().as_secs_f64();
        t0 = Instant::now();
        let mut s = format!(
            "[{:.0}s] generation {}, last reload {}\n",
            start.elapsed().as_secs_f64(),
            now["generation"],
            now["last_reload"]
        );
        s.push_str(&super::console::rate_lines(
            &super::console::Tick::of_stats(&before),
            &super::console::Tick::of_stats(&now),
            dt,
        ));
        out.write_all(s.as_bytes()).map_err(|e| e.to_string())?;
        before = now;
        n += 1;
    }
    Ok(())
}

/// The elements of `file` (`-`: standard input): one a line, comments
/// and blank lines skipped, a leading `type` line too (set files).
fn elements_of(file: &Path) -> Result<Vec<String>, String> {
    let text = if file == Path::new("-") {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
            .map_err(|e| format!("standard input: {e}"))?;
        t
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?
    };
    let mut lines: Vec<String> = matcher::file::content_lines(&text)
        .map(|(_, l)| l.to_string())
        .collect();
    if lines
        .first()
        .is_some_and(|l| l.strip_prefix("type").is_some_and(|r| r.starts_with(' ')))
    {
        lines.remove(0);
    }
    Ok(lines)
}

/// `forwarder element add|delete`: one request, all or nothing; prints
/// the forwarder's answer (the new generation).
pub fn element(
    config: &Path,
    op: crate::control::ElementOp,
    set: &str,
    mut elements: Vec<String>,
    file: Option<&Path>,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), String> {
    if let Some(f) = file {
        elements.extend(elements_of(f)?);
    }
    if elements.is_empty() {
        return Err("no elements given (arguments, or --file FILE)".into());
    }
    let op = match op {
        crate::control::ElementOp::Add => "add",
        crate::control::ElementOp::Delete => "delete",
    };
    let req =
        serde_json::json!({ "request": "element", "op": op, "set": set, "elements": elements });
    answered(
        ask(config, &req.to_string())?,
        "refused",
        json,
        element_words,
        out,
    )
}

/// Prints the neighbour table of the forwarder running with `config`
/// (JSON: `neighbours`, each with `port`, `address`, `mac`, `state`,
/// `age_ms`, `probes`).
pub fn neighbours(config: &Path, out: &mut dyn Write) -> Result<(), String> {
    let v = ask(config, "neighbours")?;
    if v["result"] != "ok" {
        return Err(format!(
            "neighbours refused: {}",
            v["error"].as_str().unwrap_or("?")
        ));
    }
    writeln!(out, "{v}").map_err(|e| e.to_string())
}

/// `forwarder element list`: the set's elements in force, as `nft -n list
/// set` prints a set.
pub fn list(config: &Path, set: &str, out: &mut dyn Write) -> Result<(), String> {
    let req = serde_json::json!({ "request": "list", "set": set });
    let v = ask(config, &req.to_string())?;
    let kind = if v["map"] == true { "map" } else { "set" };
    let counters = v["counters"].as_array();
    let elements: Vec<String> = v["elements"]
        .as_array()
        .map(|a| {
            a.iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    let e = e.as_str()?;
                    // nft's way: `ELEMENT counter packets N bytes M`.
                    Some(match counters.and_then(|c| c.get(i)) {
                        Some(c) => format!(
                            "{e} counter packets {} bytes {}",
                            c[0].as_u64().unwrap_or(0),
                            c[1].as_u64().unwrap_or(0)
                        ),
                        None => e.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    // The declaration's clauses (`type ...; flags ...; timeout T`) on
    // their own lines, the flags on one, as nft lists them.
    let mut clauses = v["type"].as_str().unwrap_or("").split(';').map(str::trim);
    let mut s = format!(
        "table inet forwarder {{\n\t{kind} {set} {{\n\t\t{}\n",
        clauses.next().unwrap_or("")
    );
    let mut flags = vec!["interval"];
    let counter = v["counters"].is_array();
    let mut timeout = None;
    for c in clauses {
        if let Some(f) = c.strip_prefix("flags ") {
            flags.extend(f.split(',').map(str::trim));
        } else if !c.is_empty() {
            timeout = Some(c);
        }
    }
    s.push_str(&format!("\t\tflags {}\n", flags.join(",")));
    if let Some(t) = timeout {
        s.push_str(&format!("\t\t{t}\n"));
    }
    if counter {
        s.push_str("\t\tcounter\n");
    }
    if !elements.is_empty() {
        s.push_str(&format!(
            "\t\telements = {{ {} }}\n",
            elements.join(",\n\t\t\t     ")
        ));
    }
    s.push_str("\t}\n}\n");
    out.write_all(s.as_bytes()).map_err(|e| e.to_string())
}

/// `forwarder element reset [SET]`: the element counters of `set` (every
/// counted set: `None`) back to zero.
pub fn reset(config: &Path, set: Option<&str>, out: &mut dyn Write) -> Result<(), String> {
    let req = serde_json::json!({ "request": "reset", "set": set });
    let v = ask(config, &req.to_string())?;
    if v["result"] != "ok" {
        return Err(format!(
            "reset refused: {}",
            v["error"].as_str().unwrap_or("?")
        ));
    }
    writeln!(
        out,
        "counters reset: {}",
        set.unwrap_or("every counted set")
    )
    .map_err(|e| e.to_string())
}
