//! The file watch: inotify (through `notify`) on the directories of the
//! configuration and the files it includes, since editors replace a file
//! by renaming another over it.

use notify::Watcher;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Watches the directories of `files` (editors replace files by
/// renaming) and reports changes of those files.
pub(crate) struct Watch {
    _watcher: notify::RecommendedWatcher,
    pub(crate) events: mpsc::Receiver<()>,
}

pub(crate) fn watch(files: &[PathBuf]) -> Result<Watch, String> {
    let wanted: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| {
            let dir = f
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            Some(std::fs::canonicalize(dir).ok()?.join(f.file_name()?))
        })
        .collect();
    let (tx, rx) = mpsc::channel();
    let w = wanted.clone();
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        if let Ok(ev) = ev {
            if ev.kind.is_access() {
                return;
            }
            if ev.paths.iter().any(|p| w.contains(p)) {
                let _ = tx.send(());
            }
        }
    })
    .map_err(|e| format!("file watch: {e}"))?;
    let mut dirs: Vec<&Path> = wanted.iter().filter_map(|p| p.parent()).collect();
    dirs.sort();
    dirs.dedup();
    for d in dirs {
        watcher
            .watch(d, notify::RecursiveMode::NonRecursive)
            .map_err(|e| format!("file watch on {}: {e}", d.display()))?;
    }
    Ok(Watch {
        _watcher: watcher,
        events: rx,
    })
}
