//! A trace for people: the JSON answer's summaries, one stage a line, in
//! order, then the fate.

use serde_json::Value;
use std::fmt::Write;

/// The lines of trace `v` (as [`super::describe`] makes it); with a
/// `candidate` part (`--candidate`), both traces and what changed.
pub fn render(v: &Value) -> String {
    let mut s = String::new();
    if let Some(c) = v.get("candidate") {
        let _ = writeln!(s, "running (generation {}):", v["running"]["generation"]);
        s.push_str(&one(&v["running"], "  "));
        let _ = writeln!(
            s,
            "candidate ({}):",
            v["candidate_file"].as_str().unwrap_or("")
        );
        s.push_str(&one(c, "  "));
        let changed = v["changed"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        if changed.is_empty() {
            let _ = writeln!(s, "the candidate changes nothing for this packet");
        } else {
            let _ = writeln!(s, "what changes for this packet:");
            for c in changed {
                let _ = writeln!(s, "  {}", c.as_str().unwrap_or(""));
            }
        }
        if let Some(n) = v["reload_refused"].as_str() {
            let _ = writeln!(s, "note: a reload of it would be refused: {n}");
        }
        return s;
    }
    s.push_str(&one(v, ""));
    s
}

/// One trace.
fn one(v: &Value, indent: &str) -> String {
    let mut s = String::new();
    let p = &v["packet"];
    let defaults: Vec<&str> = p["defaults"]
        .as_array()
        .map(|a| a.iter().filter_map(|d| d.as_str()).collect())
        .unwrap_or_default();
    let _ = write!(
        s,
        "{indent}packet: {} bytes on {}, generation {}",
        p["length"],
        p["port"].as_str().unwrap_or("?"),
        v["generation"]
    );
    if !defaults.is_empty() {
        let _ = write!(s, " (defaults: {})", defaults.join(", "));
    }
    s.push('\n');
    let empty = Vec::new();
    for (i, st) in v["stages"].as_array().unwrap_or(&empty).iter().enumerate() {
        let name = st["stage"].as_str().unwrap_or("").replace('_', " ");
        let _ = writeln!(
            s,
            "{indent}{:>2} {:<10} {}",
            i + 1,
            name,
            st["summary"].as_str().unwrap_or("")
        );
    }
    let _ = writeln!(
        s,
        "{indent}fate: {}",
        v["fate"]["summary"].as_str().unwrap_or("?")
    );
    s
}
