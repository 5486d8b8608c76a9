//! The `forwarder` subcommands: [`run`] forwards, [`lookup`] classifies
//! keys from files against a set file, [`client`] asks a running
//! forwarder to `reload` or for its `stats`, [`check`] verifies a
//! configuration without running it, [`console`] prints rates and the
//! summary for `run` and `stats --watch`.

pub mod capture;
pub mod check;
pub mod client;
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

/// The configuration of an installed forwarder.
pub const INSTALLED_CONFIG: &str = "/etc/forwarder/forwarder.toml";
