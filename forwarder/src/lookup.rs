//! `forwarder lookup`: load a set file, optionally delete elements, and
//! print the matching element (or `nomatch`) for every key of a key file.

use matcher::file::{parse_delete_file, parse_key_file, FileError, SetFile};
use matcher::{InsertMode, Set};
use std::io::Write;
use std::path::Path;

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: error: {e}", path.display()))
}

/// Runs the command; every error comes back as `FILE:LINE: error: ...`.
pub fn run(
    set_path: &Path,
    keys_path: &Path,
    delete_path: Option<&Path>,
    out: &mut dyn Write,
) -> Result<(), String> {
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
    for (_, key) in keys {
        let r = match snap.lookup_element(&key, &mut scratch) {
            Some(e) => writeln!(w, "{}", decl.format_element(e)),
            None => writeln!(w, "nomatch"),
        };
        r.map_err(|e| format!("error: writing output: {e}"))?;
    }
    w.flush().map_err(|e| format!("error: writing output: {e}"))
}
