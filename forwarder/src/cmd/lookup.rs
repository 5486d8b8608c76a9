//! `forwarder lookup`: load a set file, optionally delete elements, and
//! print the matching element (or `nomatch`) for every key of a key file;
//! or load a ClassBench rule set and print the matching rule's number for
//! every header of a trace.

use matcher::file::{parse_delete_file, parse_key_file, FileError, SetFile};
use matcher::{Impl, InsertMode, Set};
use std::io::Write;
use std::path::Path;

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: error: {e}", path.display()))
}

fn implementation(imp: Option<&str>) -> Result<Impl, String> {
    match imp {
        Some(s) => Impl::parse_supported(s).map_err(|e| format!("error: --impl: {e}")),
        None => Impl::from_env().map_err(|e| format!("error: {e}")),
    }
}

/// `--classbench RULES --trace TRACE`: the rules as a first-match set
/// (first rule first), the number of the rule each header matches (its
/// 0-based line) or `nomatch`, one line per header, in bursts of 32; the
/// output `dpdk-test-acl` gives for the same files.
pub fn classbench(
    rules_path: &Path,
    trace_path: &Path,
    imp: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), String> {
    use matcher::classbench as cb;
    let imp = implementation(imp)?;
    let name = rules_path.display().to_string();
    let rules = cb::parse_rules(&name, &read(rules_path)?).map_err(|e| e.to_string())?;
    let tname = trace_path.display().to_string();
    let keys = cb::parse_trace(&tname, &read(trace_path)?).map_err(|e| e.to_string())?;
    let mut set = Set::new(cb::decl());
    for e in rules.elements {
        set.insert(e, InsertMode::Create)
            .map_err(|e| format!("{name}: error: {e}"))?;
    }
    let snap = set.commit();
    let mut scratch = snap.scratch();
    let mut w = std::io::BufWriter::new(out);
    let mut found = [None; 32];
    let mut flat = Vec::with_capacity(32 * 13);
    for chunk in keys.chunks(32) {
        flat.clear();
        flat.extend(chunk.iter().flatten());
        let n = chunk.len();
        snap.lookup_burst_with(imp, &flat, 13, &mut found[..n], &mut scratch);
        for id in &found[..n] {
            let r = match id.and_then(|id| snap.element(id)).and_then(cb::rule_number) {
                Some(n) => writeln!(w, "{n}"),
                None => writeln!(w, "nomatch"),
            };
            r.map_err(|e| format!("error: writing output: {e}"))?;
        }
    }
    w.flush().map_err(|e| format!("error: writing output: {e}"))
}

/// Runs the command; every error comes back as `FILE:LINE: error: ...`.
/// `imp` chooses the lookup implementation (`None`: `MATCHER_IMPL`, else
/// the fastest this CPU runs); keys are looked up in bursts of 32, as the
/// data plane does.
/// With `with_keys` each answer follows its key (`KEY -> ANSWER`), so
/// that the output reads without the key file beside it.
pub fn run(
    (set_path, keys_path, delete_path): (&Path, &Path, Option<&Path>),
    imp: Option<&str>,
    with_keys: bool,
    out: &mut dyn Write,
) -> Result<(), String> {
    let imp = implementation(imp)?;
    let set_name = set_path.display().to_string();
    let file = SetFile::parse(&set_name, &read(set_path)?).map_err(|e| e.to_string())?;
    let decl = file.decl.clone();
    let mut set = Set::new(decl.clone());
    for (line, e) in file.elements {
        set.insert(e, InsertMode::Add).map_err(|error| {
            FileError {
                file: set_name.clone(),
                line,
                error,
            }
            .to_string()
        })?;
    }
    set.commit();
    if let Some(p) = delete_path {
        let name = p.display().to_string();
        for (line, key) in parse_delete_file(&decl, &name, &read(p)?).map_err(|e| e.to_string())? {
            set.delete(&key).map_err(|error| {
                FileError {
                    file: name.clone(),
                    line,
                    error,
                }
                .to_string()
            })?;
        }
    }
    let snap = set.commit();
    let keys_name = keys_path.display().to_string();
    let keys = parse_key_file(&decl, &keys_name, &read(keys_path)?).map_err(|e| e.to_string())?;
    let mut scratch = snap.scratch();
    let mut w = std::io::BufWriter::new(out);
    let klen = decl.key_len();
    let mut burst = Vec::with_capacity(32 * klen);
    let mut found = [None; 32];
    for chunk in keys.chunks(32) {
        burst.clear();
        for (_, k) in chunk {
            burst.extend_from_slice(k);
        }
        let n = chunk.len();
        snap.lookup_burst_with(imp, &burst, klen, &mut found[..n], &mut scratch);
        for (id, (_, key)) in found[..n].iter().zip(chunk) {
            if with_keys {
                let _ = write!(w, "{} -> ", decl.format_key(key));
            }
            let r = match id.and_then(|id| snap.element(id)) {
                Some(e) => writeln!(w, "{}", decl.format_element(e)),
                None => writeln!(w, "nomatch"),
            };
            r.map_err(|e| format!("error: writing output: {e}"))?;
        }
    }
    w.flush().map_err(|e| format!("error: writing output: {e}"))
}
