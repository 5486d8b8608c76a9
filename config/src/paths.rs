//! Where the control socket of a running forwarder is: the runtime
//! directory, and the socket a configuration file names or implies.

use std::path::Path;

/// The control socket of the forwarder started with configuration file
/// `config`, where `[control] socket` does not say: a name derived from
/// the file's canonical path, so that `forwarder stats --config FILE`
/// finds the instance run with `FILE`, in [`runtime_dir`].
pub fn default_socket(config: &Path) -> std::path::PathBuf {
    let canon = std::fs::canonicalize(config).unwrap_or_else(|_| config.to_path_buf());
    // FNV-1a: stable across builds and runs.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canon.to_string_lossy().bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    runtime_dir().join(format!("{h:016x}.sock"))
}

/// The directory of this user's control sockets, which only this user
/// may write: `$RUNTIME_DIRECTORY` when systemd gives one (a unit's
/// `RuntimeDirectory=forwarder` is `/run/forwarder`, owned by its `User=`,
/// where root's clients look too), else `/run/forwarder` for root, else
/// `$XDG_RUNTIME_DIR/forwarder` (systemd's per-user runtime directory),
/// else `forwarder-UID` in the temporary directory. The forwarder
/// creates it (mode 0700) and refuses one that another user owns or
/// could write to.
pub fn runtime_dir() -> std::path::PathBuf {
    use std::os::unix::fs::MetadataExt;
    if let Some(d) = std::env::var_os("RUNTIME_DIRECTORY") {
        // Several directories are separated by colons; the first is ours.
        let first = d
            .to_string_lossy()
            .split(':')
            .next()
            .unwrap_or("")
            .to_string();
        let d = std::path::PathBuf::from(first);
        if d.is_absolute() {
            return d;
        }
    }
    // The process's own uid, as the owner of its /proc entry (no libc
    // call, and this crate forbids `unsafe`).
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    match uid {
        Some(0) => std::path::PathBuf::from("/run/forwarder"),
        _ => match std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from) {
            Some(d) if d.is_absolute() => d.join("forwarder"),
            _ => std::env::temp_dir().join(format!(
                "forwarder-{}",
                uid.map_or("unknown".to_string(), |u| u.to_string())
            )),
        },
    }
}

/// [`control_socket`] for a client: an error naming the file when there
/// is none (the socket's name is derived from the file, so without it
/// any answer would be about some other path).
pub fn socket_for(config: &Path) -> Result<std::path::PathBuf, String> {
    match std::fs::metadata(config) {
        Ok(_) => Ok(control_socket(config)),
        Err(e) => Err(format!(
            "{}: {e} (the configuration the forwarder was started with: --config)",
            config.display()
        )),
    }
}

/// The control socket of the instance run with `config`, read leniently:
/// a file with errors elsewhere (the reason for a reload) still names its
/// socket.
pub fn control_socket(config: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(config).unwrap_or_default();
    let explicit = match text.parse::<toml::Table>() {
        Ok(t) => t
            .get("control")
            .and_then(|c| c.get("socket"))
            .and_then(|s| s.as_str())
            .map(std::path::PathBuf::from),
        // Not TOML as a whole: the `socket = "..."` line of `[control]`.
        Err(_) => {
            let mut in_control = false;
            let mut found = None;
            for line in text.lines().map(str::trim) {
                if line.starts_with('[') {
                    in_control = line == "[control]";
                } else if let (true, Some(v)) = (in_control, line.strip_prefix("socket")) {
                    let v = v.trim_start();
                    if let Some(v) = v.strip_prefix('=') {
                        let v = v.split('#').next().unwrap_or("").trim();
                        found = v
                            .strip_prefix('"')
                            .and_then(|v| v.strip_suffix('"'))
                            .map(std::path::PathBuf::from);
                    }
                }
            }
            found
        }
    };
    match explicit {
        Some(p) if p.is_relative() => config.parent().unwrap_or(Path::new(".")).join(p),
        Some(p) => p,
        None => default_socket(config),
    }
}
