//! Which cores this process's workers poll: a lock file a core, so that
//! a second forwarder started on a core another already polls says so
//! instead of quietly running both at half speed.
//!
//! Each core's file (`core-N.lock` in the runtime directory) is locked
//! with `flock` for the process's life: the kernel lets go of the lock
//! when the process ends, however it ends, so a crash leaves no stale
//! claim. The file holds the holder's pid and configuration, for the
//! message. Only forwarders that share the runtime directory (the same
//! user, or root's `/run/forwarder`) see each other.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// The cores this process holds (released when dropped or at exit).
pub struct CoreLocks {
    _held: Vec<File>,
}

/// Claims `cores` in `dir` for the forwarder run with `config`: the
/// locks taken, and one warning for each core another process holds
/// already (naming it) or whose lock could not be taken at all. Nothing
/// here stops the start: two forwarders on one core work, slowly.
pub fn claim(dir: &Path, cores: &[usize], config: &Path) -> (CoreLocks, Vec<String>) {
    let mut held = Vec::new();
    let mut warnings = Vec::new();
    // Private, as the control side makes it (it may come first: 0700,
    // the mode the control socket's directory is checked for).
    let made = {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    };
    if let Err(e) = made {
        warnings.push(format!(
            "{}: {e}: cannot tell whether another forwarder polls cores {cores:?}",
            dir.display()
        ));
        return (CoreLocks { _held: held }, warnings);
    }
    for &core in cores {
        let path = dir.join(format!("core-{core}.lock"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path);
        let mut file = match file {
            Ok(f) => f,
            Err(e) => {
                warnings.push(format!(
                    "{}: {e}: cannot tell whether another forwarder polls core {core}",
                    path.display()
                ));
                continue;
            }
        };
        match file.try_lock() {
            Ok(()) => {
                let me = format!("{} {}\n", std::process::id(), config.display());
                let _ = file
                    .set_len(0)
                    .and_then(|_| file.rewind())
                    .and_then(|_| file.write_all(me.as_bytes()));
                held.push(file);
            }
            Err(TryLockError::WouldBlock) => {
                let mut who = String::new();
                let _ = file.read_to_string(&mut who);
                let who = match who.trim().split_once(' ') {
                    Some((pid, cfg)) => format!("pid {pid}, {cfg}"),
                    None => "a process that did not say which".to_string(),
                };
                warnings.push(format!(
                    "core {core} is already polled by another forwarder's worker ({who}): \
                     both run at a fraction of their speed; give each forwarder cores of its own \
                     ([forwarder] cores)"
                ));
            }
            Err(TryLockError::Error(e)) => warnings.push(format!(
                "{}: {e}: cannot tell whether another forwarder polls core {core}",
                path.display()
            )),
        }
    }
    (CoreLocks { _held: held }, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A core held is reported to the next claimant with the holder's pid
    /// and configuration; released, it is free again; other cores are not
    /// touched.
    #[test]
    fn a_core_polled_twice_is_named() {
        let dir = std::env::temp_dir().join(format!("corelock-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (first, w) = claim(&dir, &[3, 5], Path::new("/etc/a.toml"));
        assert!(w.is_empty(), "{w:?}");
        let (_second, w) = claim(&dir, &[5, 6], Path::new("/etc/b.toml"));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("core 5 is already polled by another forwarder's worker (pid ")
                && w[0].contains(&format!("pid {}, /etc/a.toml", std::process::id())),
            "{}",
            w[0]
        );
        drop(first);
        let (_third, w) = claim(&dir, &[3, 5], Path::new("/etc/c.toml"));
        assert!(w.is_empty(), "released with its holder: {w:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
