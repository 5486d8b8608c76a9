//! What a configuration's included files gave at their last read, so
//! that loading it again reads only what changed.
//!
//! [`Files`] (kept by a [`crate::Loader`]) remembers, for every file a configuration includes (set
//! files, the route file), what the file held when it was last read, and
//! what it gave: a set's checked elements, the route file's routes. A
//! reload then reads, parses and checks only the files that changed;
//! the others give the same shared values as at their last read (`Arc`s, so that the
//! reload engine sees them unchanged with a pointer compare).
//!
//! Whether a file changed is decided in two steps:
//!
//! 1. Its stamp: device, inode, size, and the modification and status
//!    change times in nanoseconds. Editors and `mv` replace a file by a
//!    new inode; any write changes the status change time (`ctime`),
//!    which, unlike the modification time, no program can set back. An
//!    equal stamp is taken as an unchanged file, without reading it: a
//!    full table's route file is 30 MB.
//! 2. When the stamp differs, the file is read and its content hashed;
//!    an equal hash (a file touched or saved unchanged) still reuses what
//!    it gave, so only real changes are parsed and checked.
//!
//! What a file gives also depends on the rest of the configuration (a
//! set's type and inline elements; the next hops and ECMP groups routes
//! name): that is part of the key, and a change of it means a new parse.

use crate::types::RouteConfig;
use matcher::{Element, SetDecl};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What identifies a file's version without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

fn content_hash(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// A file as [`Files::get`] finds it.
pub(crate) enum Got<T> {
    /// Unchanged, and what it gave fits: reuse it.
    Reused(T),
    /// Its text, to be parsed (what it gives then goes to
    /// [`Files::gave`]).
    Text(String),
}

/// What a file gave at its last read.
#[derive(Clone)]
pub(crate) enum Gave {
    /// A set file: the set's checked elements (inline ones first), for
    /// this type and these inline elements.
    Set {
        decl: SetDecl,
        inline: Vec<Element>,
        elements: Arc<Vec<Element>>,
        /// The file's elements' lines.
        lines: Arc<Vec<u32>>,
    },
    /// The route file: its routes, sorted by prefix, for these next hop
    /// and ECMP group names.
    Routes {
        hops: Vec<String>,
        groups: Vec<String>,
        /// The VRF the routes were read for (they say it).
        vrf: u16,
        routes: Arc<[RouteConfig]>,
    },
}

struct Entry {
    stamp: Stamp,
    hash: u64,
    gave: Gave,
}

/// How many included files a load read and parsed, and how many it
/// reused unchanged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Files read and parsed (new or changed).
    pub parsed: usize,
    /// Files whose stamp or content was unchanged: not parsed again.
    pub reused: usize,
}

/// What every included file gave at its last read, and what the load
/// under way read (see the module's documentation).
#[derive(Default)]
pub(crate) struct Files {
    files: HashMap<PathBuf, Entry>,
    /// The stamp or hash of files read in the load under way, kept until
    /// they give something.
    pending: HashMap<PathBuf, (Stamp, u64)>,
    pub(crate) stats: LoadStats,
}

impl Files {
    /// Starts a load: nothing read in it yet.
    pub(crate) fn begin(&mut self) {
        self.stats = LoadStats::default();
        self.pending.clear();
    }

    /// `path` unchanged since its last read, with what `fits` takes of
    /// what it gave (`None`: it does not fit this configuration); else
    /// its text, read now.
    pub(crate) fn get<T>(
        &mut self,
        path: &Path,
        fits: impl Fn(&Gave) -> Option<T>,
    ) -> std::io::Result<Got<T>> {
        let stamp = Stamp::of(&std::fs::metadata(path)?);
        let unchanged = self.files.get(path).is_some_and(|e| e.stamp == stamp);
        let text = if unchanged {
            None
        } else {
            let text = std::fs::read_to_string(path)?;
            let hash = content_hash(&text);
            match self.files.get_mut(path) {
                // Saved or touched without a change.
                Some(e) if e.hash == hash => {
                    e.stamp = stamp;
                    None
                }
                _ => {
                    self.pending.insert(path.to_path_buf(), (stamp, hash));
                    Some(text)
                }
            }
        };
        if text.is_none() {
            if let Some(v) = self.files.get(path).and_then(|e| fits(&e.gave)) {
                self.stats.reused += 1;
                return Ok(Got::Reused(v));
            }
        }
        match text {
            Some(t) => Ok(Got::Text(t)),
            // Unchanged, but what it gave does not fit (another type,
            // other next hops): read it to parse it again.
            None => {
                let text = std::fs::read_to_string(path)?;
                self.pending
                    .insert(path.to_path_buf(), (stamp, content_hash(&text)));
                Ok(Got::Text(text))
            }
        }
    }

    /// What `path` gave at its last successful read, changed since or not.
    pub(crate) fn previous(&self, path: &Path) -> Option<&Gave> {
        self.files.get(path).map(|e| &e.gave)
    }

    /// Remembers what `path`, read in this load, gave.
    pub(crate) fn gave(&mut self, path: &Path, gave: Gave) {
        self.stats.parsed += 1;
        if let Some((stamp, hash)) = self.pending.remove(path) {
            self.files
                .insert(path.to_path_buf(), Entry { stamp, hash, gave });
        }
    }
}

/// Routes sorted by their prefix, so that one given again elsewhere is
/// found by a binary search.
pub(crate) fn sort_routes(routes: &mut [RouteConfig]) {
    routes.sort_unstable_by_key(|r| (r.v6, r.prefix, r.len));
}

/// Whether sorted `routes` hold the prefix `(v6, prefix, len)`.
pub(crate) fn holds(routes: &[RouteConfig], key: (bool, u128, u32)) -> bool {
    routes
        .binary_search_by_key(&key, |r| (r.v6, r.prefix, r.len))
        .is_ok()
}
