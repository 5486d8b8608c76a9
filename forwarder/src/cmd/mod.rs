//! The `forwarder` subcommands: [`run`] forwards, [`lookup`] classifies
//! keys from files against a set file, [`client`] asks a running
//! forwarder to `reload` or for its `stats`, [`check`] verifies a
//! configuration without running it, [`console`] prints rates and the
//! summary for `run` and `stats --watch`.

pub mod capture;
pub mod check;
pub mod client;
pub mod conntrack;
pub mod console;
pub mod lookup;
pub mod notify;
pub mod route;
pub mod run;
pub mod trace;

/// Where a command finds its configuration without `--config`:
/// `examples/forwarder.toml` under the working directory (a checkout),
/// else `/etc/forwarder/forwarder.toml` (an installed forwarder).
pub fn default_config() -> std::path::PathBuf {
    let local = std::path::Path::new("examples/forwarder.toml");
    if local.is_file() {
        local.to_path_buf()
    } else {
        std::path::PathBuf::from(INSTALLED_CONFIG)
    }
}

/// The control socket `--socket` (or `$FORWARDER_SOCKET`) names, for
/// every client command of this process: set once, by `main`.
static SOCKET: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Makes the client commands talk to `path` instead of the socket their
/// configuration names (a forwarder whose configuration file is not at
/// hand: another host's copy, another user's `allow_uids`). Only the
/// first call counts.
pub fn set_socket(path: std::path::PathBuf) {
    let _ = SOCKET.set(path);
}

/// The control socket of the forwarder a client command talks to: the
/// one `--socket` gave, else the one `config` names (`[control] socket`,
/// or derived from the file's path; a missing file is named).
pub fn socket(config: &std::path::Path) -> Result<std::path::PathBuf, String> {
    match SOCKET.get() {
        Some(s) => Ok(s.clone()),
        None => config::socket_for(config),
    }
}

/// The configuration of an installed forwarder.
pub const INSTALLED_CONFIG: &str = "/etc/forwarder/forwarder.toml";
