//! Loading a configuration, and loading it again without reading what
//! did not change (see [`crate::files`]).

use crate::error::ConfigError;
use crate::files::{Files, LoadStats};
use crate::types::Config;
use std::path::Path;

/// Loads configurations, remembering what each included file gave (see
/// the module's documentation).
#[derive(Default)]
pub struct Loader {
    files: Files,
}

impl Loader {
    /// A loader that remembers nothing yet.
    pub fn new() -> Loader {
        Loader::default()
    }

    /// Reads and validates a configuration file, as [`crate::load`],
    /// reusing what unchanged included files gave at the last load.
    pub fn load(&mut self, path: &Path) -> Result<Config, ConfigError> {
        self.load_all(path).map_err(|mut errs| errs.swap_remove(0))
    }

    /// [`Loader::load`], with every error found (see `forwarder check`),
    /// never an empty list.
    pub fn load_all(&mut self, path: &Path) -> Result<Config, Vec<ConfigError>> {
        self.files.begin();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![ConfigError {
                file: name.clone(),
                line: 0,
                col: 0,
                message: format!("cannot read: {e}"),
            }]
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        crate::validate::validate_all(&name, &text, dir, &mut self.files)
    }

    /// Validates configuration text (see [`crate::parse`]).
    pub(crate) fn parse(
        &mut self,
        name: &str,
        text: &str,
        dir: &Path,
    ) -> Result<Config, ConfigError> {
        self.files.begin();
        crate::validate::validate(name, text, dir, &mut self.files)
    }

    /// What the last [`Loader::load`] read and reused.
    pub fn stats(&self) -> LoadStats {
        self.files.stats
    }
}
