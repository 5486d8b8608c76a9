//! The reload engine: it owns the working copies of every table (one
//! pipapo [`Set`] per rule set, the [`Fib`]), applies a new configuration
//! to them incrementally, and publishes the result as one new [`Snapshot`]
//! snapshot with a single atomic swap.

use super::build::{self, Working};
use crate::pipeline::Snapshot;
use crate::shared::Shared;
use config::{Config, Loader, RouteConfig, Via};
use matcher::{Element, InsertMode, Set};
use routecache::Fib;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one applied reload changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reload {
    /// The published generation.
    pub generation: u64,
    /// Rule sets built anew (new, or type / fields / action changed).
    pub sets_rebuilt: usize,
    /// Elements added to kept sets.
    pub elements_added: usize,
    /// Elements removed from kept sets.
    pub elements_removed: usize,
    /// Routes added, changed or removed (when the FIB was kept).
    pub routes_changed: usize,
    /// Whether the FIB was built anew (next hops or groups changed).
    pub fib_rebuilt: bool,
    /// Whether a new snapshot was published (false: nothing changed).
    pub published: bool,
    /// Reading, parsing and checking the files (overlaps included).
    pub parse: Duration,
    /// Parse to swap.
    pub took: Duration,
}

/// The control side's state.
pub struct Control {
    path: PathBuf,
    /// The configuration as its files give it; the elements in force are
    /// these with the run-time changes on top ([`Control::with_runtime`]).
    pub(super) cfg: Config,
    /// The working copies; `sets` in the order of `cfg.sets`.
    pub(super) w: Working,
    /// What the configuration's files gave at the last load: a reload
    /// reads and checks only the files that changed.
    loader: Loader,
    /// Run-time element changes, per set name, applied again on every
    /// reload (see [`super::elements`]).
    pub(super) runtime: HashMap<String, super::elements::Overlay>,
    flow_seed: u32,
    pub(super) shared: Arc<Shared>,
    /// Since when a set's snapshot has been a quick one (run-time element
    /// changes beside its last full commit), and the last such change:
    /// see [`Control::compact_due`].
    pub(super) quick_since: Option<(Instant, Instant)>,
    /// Replaced snapshots, kept until no worker holds them, so that the
    /// last reference (and the freeing of their tables: milliseconds for
    /// large sets) is dropped here, never on a worker's core.
    retired: Vec<Arc<Snapshot>>,
    /// The kernel table's mirror, with `[routes] source = "kernel"`.
    pub(super) mirror: Option<super::mirror::Mirror>,
    /// The prefixes the last staged route change touched.
    staged_keys: Vec<super::mirror::VrfKey>,
    /// The live traces being served.
    pub(super) live: Vec<super::live::Live>,
}

type RouteKey = (bool, u128, u32);

/// See [`Control::compact_due`]: a full commit of a large set takes
/// milliseconds (`bench load`), which a request arriving meanwhile waits
/// for; a detector's changes come in bursts, so the pause after one is
/// the time.
pub const COMPACT_QUIET: Duration = Duration::from_millis(200);
/// See [`Control::compact_due`].
pub const COMPACT_MAX_AGE: Duration = Duration::from_secs(5);

/// Element changes to a kept set above which it is built anew instead
/// (or above an eighth of its size, whichever is more).
const REBUILD_ABOVE: usize = 256;

fn route_key(r: &RouteConfig) -> (u16, RouteKey) {
    (r.vrf, (r.v6, r.prefix, r.len))
}

/// `file:line:1` of the first line of `path` that starts with `what`.
fn locate(path: &Path, what: &str) -> String {
    let line = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| t.lines().position(|l| l.trim_start().starts_with(what)))
        .map(|i| i + 1)
        .unwrap_or(1);
    format!("{}:{line}:1", path.display())
}

impl Control {
    /// Loads `path`, builds every table and publishes generation 1.
    pub fn start(path: &Path) -> Result<Control, String> {
        let mut loader = Loader::new();
        let cfg = loader.load(path).map_err(|e| e.to_string())?;
        Control::with_config(path, cfg, loader)
    }

    /// As [`Control::start`], from a configuration `loader` has just
    /// loaded from `path` (reloads reuse what it remembers of the files).
    pub fn with_config(path: &Path, cfg: Config, loader: Loader) -> Result<Control, String> {
        let workers = cfg.forwarder.cores.len();
        let ports = cfg.ports.len();
        let mut c = Control {
            path: path.to_path_buf(),
            w: Working::build(&cfg)?,
            cfg,
            loader,
            runtime: HashMap::new(),
            quick_since: None,
            flow_seed: routecache::hash::random_seed(),
            retired: Vec::new(),
            mirror: None,
            staged_keys: Vec::new(),
            live: Vec::new(),
            shared: Arc::new(Shared::new(Snapshot::empty(), workers, ports)),
        };
        let fib = c.w.fib.publish();
        let t = c.assemble(1, fib, false);
        c.publish(t).prepare();
        Ok(c)
    }

    /// The tables configuration file `path` would give if this control
    /// reloaded it: a control of its own (nothing of this one's changes),
    /// its run-time elements on top as a reload would put them; and why
    /// a reload of it would be refused, if it would (ports or
    /// `[forwarder]` changed: the candidate is still built, to be traced).
    pub fn candidate(&self, path: &Path) -> Result<(Control, Option<String>), String> {
        let mut loader = Loader::new();
        let cfg = loader.load(path).map_err(|e| e.to_string())?;
        let refused = self.restart_only(&cfg).err();
        let in_force = self.with_runtime(cfg.clone())?;
        let workers = cfg.forwarder.cores.len();
        let ports = cfg.ports.len();
        let mut c = Control {
            path: path.to_path_buf(),
            w: Working::build(&in_force)?,
            cfg,
            loader,
            runtime: self.runtime.clone(),
            quick_since: None,
            flow_seed: self.flow_seed,
            retired: Vec::new(),
            mirror: None,
            staged_keys: Vec::new(),
            live: Vec::new(),
            shared: Arc::new(Shared::new(Snapshot::empty(), workers, ports)),
        };
        // The kernel's routes as this control mirrors them now, on the
        // candidate's FIB as a reload would put them back.
        if let (Some(m), Some(mut mine)) = (&self.mirror, super::mirror::Mirror::detached(&c.cfg)) {
            mine.kernel = m.kernel.clone();
            c.mirror = Some(mine);
            c.kernel_reinstall();
        }
        let fib = c.w.fib.publish();
        let t = c.assemble(1, fib, false);
        c.publish(t).prepare();
        Ok((c, refused))
    }

    /// What the workers share with this side.
    pub fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The configuration file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The files a reload reads: the configuration and the set files it
    /// includes.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut v = vec![self.path.clone()];
        v.extend(self.cfg.sets.iter().filter_map(|s| s.file.clone()));
        v.extend(self.cfg.route_file.clone());
        v
    }

    /// The tables of generation `generation`: every set's pending changes
    /// committed (`quick`: beside its last full commit's tables, see
    /// [`matcher::Set::commit_quick`]; else in full, which also compacts).
    fn assemble(
        &mut self,
        generation: u64,
        fib: Arc<routecache::FibSnapshot>,
        quick: bool,
    ) -> Snapshot {
        if quick {
            let now = Instant::now();
            self.quick_since = Some((self.quick_since.map_or(now, |q| q.0), now));
        } else {
            self.quick_since = None;
        }
        build::assemble(
            &self.cfg,
            &mut self.w,
            fib,
            generation,
            self.flow_seed,
            quick,
        )
    }

    /// Swaps `t` in for the workers; returns its FIB, to be prepared
    /// ([`routecache::FibSnapshot::prepare`]) once the swap is done.
    fn publish(&mut self, t: Snapshot) -> Arc<routecache::FibSnapshot> {
        self.shared.status.generation.store(t.generation, Relaxed);
        let fib = t.fib.clone();
        let old = self.shared.snapshot.swap(Arc::new(t));
        self.retired.push(old);
        fib
    }

    /// Publishes the working FIB (and the sets as they are) as a new
    /// generation; returns it. with its IPv6 range tree if `prepare`.
    pub(super) fn publish_fib(&mut self, prepare: bool) -> u64 {
        let generation = self.shared.status.generation.load(Relaxed) + 1;
        let fib = self.w.fib.publish();
        let t = self.assemble(generation, fib, self.quick_since.is_some());
        let fib = self.publish(t);
        if prepare {
            fib.prepare();
        }
        generation
    }

    /// Follows the kernel table: subscribes, reads it and installs it.
    pub fn start_mirror(&mut self) -> Result<(), String> {
        self.mirror = super::mirror::Mirror::open(&self.cfg)?;
        self.kernel_start()
    }

    /// A mirror without sockets, fed by [`Control::kernel_apply`] (tests).
    pub fn detached_mirror(&mut self) {
        self.mirror = super::mirror::Mirror::detached(&self.cfg);
    }

    /// The notification socket of the kernel mirror, to wait on.
    pub fn mirror_fd(&self) -> Option<std::os::fd::RawFd> {
        self.mirror.as_ref().and_then(|m| m.fd())
    }

    /// Publishes the working copies as they are (the FIB unchanged) as a
    /// new generation; returns it.
    pub(super) fn publish_sets(&mut self, quick: bool) -> u64 {
        let generation = self.shared.status.generation.load(Relaxed) + 1;
        let fib = match self.w.fib.published() {
            Some(f) => f,
            None => self.w.fib.publish(),
        };
        let t = self.assemble(generation, fib, quick);
        self.publish(t).prepare();
        generation
    }

    /// Whether the quick snapshots of run-time changes are due to be
    /// compacted: once changes pause ([`COMPACT_QUIET`]), and at the latest
    /// [`COMPACT_MAX_AGE`] after the first, so that lookups pay for the
    /// changes beside the tables only for a while.
    pub fn compact_due(&self) -> bool {
        self.quick_since.is_some_and(|(first, last)| {
            last.elapsed() >= COMPACT_QUIET || first.elapsed() >= COMPACT_MAX_AGE
        })
    }

    /// Commits every set in full and publishes the result: the same
    /// elements, in tables of their own. Returns the generation.
    pub fn compact(&mut self) -> u64 {
        self.publish_sets(false)
    }

    /// Frees the replaced snapshots no worker holds any more; returns how
    /// many are still held. The control thread calls it every tick.
    pub fn reclaim(&mut self) -> usize {
        self.retired.retain(|t| Arc::strong_count(t) > 1);
        self.retired.len()
    }

    /// Reads the configuration file again and applies it. On error nothing
    /// changes; the error names `file:line:col`.
    pub fn reload(&mut self) -> Result<Reload, String> {
        self.reload_with(false).map(|r| r.0)
    }

    /// [`Control::reload`], with what it changes said first (see
    /// [`Control::diff`]): worked out from the configuration it then
    /// applies, so nothing can come between the two.
    pub fn reload_with_diff(&mut self) -> Result<(Reload, serde_json::Value), String> {
        self.reload_with(true)
    }

    /// [`Control::reload`], with the diff when `diff` (else null).
    pub fn reload_with(&mut self, diff: bool) -> Result<(Reload, serde_json::Value), String> {
        self.reclaim();
        let start = Instant::now();
        let mut said = serde_json::Value::Null;
        let r = self
            .loader
            .load(&self.path)
            .map_err(|e| e.to_string())
            .and_then(|new| {
                let parse = start.elapsed();
                if diff {
                    said = self.diff(&new, &self.path.display().to_string());
                }
                self.apply(new, start).map(|r| Reload { parse, ..r })
            });
        let st = &self.shared.status;
        // The time, the outcome and the duration all of this attempt, a
        // refused one too (an earlier success's duration beside this
        // failure would describe two reloads as one).
        let at = crate::clock::unix_ns() / 1_000_000;
        st.last_reload_at_ms.store(at, Relaxed);
        match &r {
            Ok(rep) => {
                st.reloads.fetch_add(1, Relaxed);
                st.last_reload_us
                    .store(rep.took.as_micros() as u64, Relaxed);
                st.set_last("");
            }
            Err(e) => {
                st.failed.fetch_add(1, Relaxed);
                st.last_reload_us
                    .store(start.elapsed().as_micros() as u64, Relaxed);
                st.set_last(e);
            }
        }
        r.map(|r| (r, said))
    }

    /// Applies a configuration loaded from this control's file.
    pub fn apply(&mut self, new: Config, start: Instant) -> Result<Reload, String> {
        self.restart_only(&new)?;
        // Both sides with the run-time changes on top: the diff is between
        // the elements in force, and the files' own are kept.
        let files = new.clone();
        let new = self.with_runtime(new)?;
        let old = self.with_runtime(self.cfg.clone())?;
        let mut rep = Reload::default();
        // Sets: stage every change in the working copies; on the first
        // error roll back those touched.
        let mut touched = Vec::new();
        let staged = self.stage_sets(&old, &new, &mut touched, &mut rep);
        let (plan, mut fresh) = match staged {
            Ok(v) => v,
            Err(e) => {
                for &j in &touched {
                    self.w.sets[j].abort();
                }
                return Err(e);
            }
        };
        // Routes: in place when the targets stay, else a new FIB.
        let fib_changed = match self.stage_fib(&new, &mut rep) {
            Ok(c) => c,
            Err(e) => {
                for &j in &touched {
                    self.w.sets[j].abort();
                }
                return Err(e);
            }
        };
        // Nothing to publish when nothing changed (a file saved as it
        // was): the generation, and every core's dst cache, stay.
        let same_order =
            plan.iter().enumerate().all(|(i, p)| *p == Some(i)) && plan.len() == self.w.sets.len();
        if same_order
            && !fib_changed
            && rep.elements_added + rep.elements_removed == 0
            && build::route_cache(&new) == build::route_cache(&self.cfg)
            && build::flow_cache(&new) == build::flow_cache(&self.cfg)
        {
            self.cfg = files;
            rep.generation = self.shared.status.generation.load(Relaxed);
            rep.took = start.elapsed();
            return Ok(rep);
        }
        // Nothing can fail from here on.
        let mut old: Vec<Option<Set>> = std::mem::take(&mut self.w.sets)
            .into_iter()
            .map(Some)
            .collect();
        self.w.sets = plan
            .iter()
            .zip(fresh.iter_mut())
            .map(|(p, f)| match p {
                Some(j) => old[*j].take().expect("each kept set once"),
                None => f.take().expect("a fresh set"),
            })
            .collect();
        self.cfg = files;
        if rep.fib_rebuilt {
            self.kernel_reinstall();
        } else if fib_changed {
            let keys = std::mem::take(&mut self.staged_keys);
            self.kernel_reconsider(keys);
        }
        let fib = match (fib_changed, self.w.fib.published()) {
            (false, Some(f)) => f,
            _ => self.w.fib.publish(),
        };
        let generation = self.shared.status.generation.load(Relaxed) + 1;
        let t = self.assemble(generation, fib, false);
        let fib = self.publish(t);
        rep.published = true;
        rep.generation = generation;
        rep.took = start.elapsed();
        // The IPv6 range tree, built after the swap: the workers route
        // with the new snapshot's trie meanwhile, with the same answers
        // (a no-op when the FIB did not change: its tree is built).
        fib.prepare();
        Ok(rep)
    }

    pub(super) fn restart_only(&self, new: &Config) -> Result<(), String> {
        if new.forwarder != self.cfg.forwarder {
            return Err(format!(
                "{}: [forwarder] changed: cores and burst take effect on restart; nothing was changed",
                locate(&self.path, "[forwarder]")
            ));
        }
        if new.control != self.cfg.control {
            return Err(format!(
                "{}: [control] changed: it takes effect on restart; nothing was changed",
                locate(&self.path, "[control]")
            ));
        }
        if new.kernel != self.cfg.kernel {
            return Err(format!(
                "{}: [routes] changed: the kernel table's mirror takes it on restart; nothing was changed",
                locate(&self.path, "[routes]")
            ));
        }
        // The mirror maps each followed table to its VRF's index.
        let followed = |c: &Config| -> Vec<(usize, u32)> {
            c.vrfs
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some((i, v.table?)))
                .collect()
        };
        if followed(new) != followed(&self.cfg) {
            return Err(format!(
                "{}: a VRF's kernel table changed (or moved): the kernel tables' mirror takes it on restart; nothing was changed",
                locate(&self.path, "[[vrf]]")
            ));
        }
        let same = |a: &config::PortConfig, b: &config::PortConfig| {
            a.name == b.name
                && a.driver == b.driver
                && a.mac == b.mac
                && a.tap == b.tap
                && a.kernel_interface == b.kernel_interface
        };
        if new.ports.len() != self.cfg.ports.len()
            || new
                .ports
                .iter()
                .zip(&self.cfg.ports)
                .any(|(a, b)| !same(a, b))
        {
            let at = new
                .ports
                .iter()
                .zip(&self.cfg.ports)
                .find(|(a, b)| !same(a, b))
                .map(|(a, _)| a.at.clone())
                .unwrap_or_else(|| locate(&self.path, "[[port]]"));
            return Err(format!(
                "{at}: ports changed: ports take effect on restart; nothing was changed"
            ));
        }
        Ok(())
    }

    /// For each new set, the kept working copy's index (`Some`) or a
    /// freshly built set.
    #[allow(clippy::type_complexity)]
    fn stage_sets(
        &mut self,
        old_cfg: &Config,
        new: &Config,
        touched: &mut Vec<usize>,
        rep: &mut Reload,
    ) -> Result<(Vec<Option<usize>>, Vec<Option<Set>>), String> {
        let mut plan = Vec::new();
        let mut fresh = Vec::new();
        for ns in &new.sets {
            let kept = old_cfg.sets.iter().position(|os| {
                os.name == ns.name
                    && os.decl == ns.decl
                    && os.sources == ns.sources
                    && os.action == ns.action
            });
            let Some(j) = kept else {
                fresh.push(Some(build::build_set(ns)?));
                plan.push(None);
                rep.sets_rebuilt += 1;
                continue;
            };
            if old_cfg.sets[j].elements == ns.elements {
                plan.push(Some(j));
                fresh.push(None);
                continue;
            }
            let (gone, came) = config::diff_elements(&old_cfg.sets[j].elements, &ns.elements);
            let (removed, added) = (gone.len(), came.len());
            // A delete shifts the tables of every field (bitmap_cut), so a
            // large diff costs more element by element than a fresh
            // build, by orders of magnitude (`bench reload`).
            // In a first-match set, elements of equal priority rank by
            // the order they were added: a change in place keeps the
            // file's order only when what it adds comes after everything
            // it keeps; otherwise the set is built in the file's order.
            let in_order = ns.decl.policy() != matcher::Policy::FirstMatch || {
                let old: HashSet<&Element> = old_cfg.sets[j].elements.iter().collect();
                let now: HashSet<&Element> = ns.elements.iter().collect();
                let first_added = ns.elements.iter().position(|e| !old.contains(e));
                let last_kept = ns.elements.iter().rposition(|e| old.contains(e));
                let kept_new = ns.elements.iter().filter(|e| old.contains(*e));
                let kept_old = old_cfg.sets[j].elements.iter().filter(|e| now.contains(*e));
                kept_new.eq(kept_old)
                    && match (first_added, last_kept) {
                        (Some(a), Some(k)) => a > k,
                        _ => true,
                    }
            };
            if !in_order || removed + added > REBUILD_ABOVE.max(ns.elements.len() / 8) {
                fresh.push(Some(build::build_set(ns)?));
                plan.push(None);
                rep.sets_rebuilt += 1;
                continue;
            }
            touched.push(j);
            let set = &mut self.w.sets[j];
            let err = |e: matcher::SetError| format!("set `{}`: {e}", ns.name);
            for e in gone {
                set.delete(&e.key).map_err(err)?;
                rep.elements_removed += 1;
            }
            for e in came {
                set.insert(e.clone(), InsertMode::Add).map_err(err)?;
                rep.elements_added += 1;
            }
            plan.push(Some(j));
            fresh.push(None);
        }
        Ok((plan, fresh))
    }

    /// Stages the routes of `new` in the FIB; returns whether it changed.
    fn stage_fib(&mut self, new: &Config, rep: &mut Reload) -> Result<bool, String> {
        let targets_kept = new.next_hops == self.cfg.next_hops
            && new.ecmp == self.cfg.ecmp
            && new.vrf_count() == self.cfg.vrf_count()
            && new
                .ports
                .iter()
                .map(|p| (p.mac, &p.addresses, p.vrf))
                .eq(self.cfg.ports.iter().map(|p| (p.mac, &p.addresses, p.vrf)));
        if !targets_kept {
            let mut fib = Fib::succeeding(&self.w.fib);
            let t = build::fill_fib(new, &mut fib)?;
            self.w.fib = fib;
            self.w.hops = t.hops;
            self.w.groups = t.groups;
            self.w.kinds = t.kinds.into();
            rep.fib_rebuilt = true;
            return Ok(true);
        }
        // The common case of a set-only change: nothing to diff (a full
        // table is a million routes; an unchanged route file gives the
        // same shared routes, compared by pointer).
        if new.routes == self.cfg.routes
            && new.file_routes == self.cfg.file_routes
            && new.vrfs.iter().map(|v| &v.file_routes).eq(self
                .cfg
                .vrfs
                .iter()
                .map(|v| &v.file_routes))
        {
            return Ok(false);
        }
        let old: HashMap<(u16, RouteKey), Via> = self
            .cfg
            .all_routes()
            .map(|r| (route_key(r), r.via))
            .collect();
        let now: HashMap<(u16, RouteKey), Via> =
            new.all_routes().map(|r| (route_key(r), r.via)).collect();
        let mut done: Vec<(RouteConfig, Option<Via>)> = Vec::new();
        let mut result = Ok(());
        for r in self.cfg.all_routes() {
            if !now.contains_key(&route_key(r)) {
                let f = build::family(r);
                if let Err(e) = self.w.fib.remove_in(r.vrf as usize, f, r.prefix, r.len) {
                    result = Err(format!("route {:#x}/{}: {e}", r.prefix, r.len));
                    break;
                }
                done.push((*r, Some(r.via)));
            }
        }
        if result.is_ok() {
            for r in new.all_routes() {
                if old.get(&route_key(r)) == Some(&r.via) {
                    continue;
                }
                let t = build::route_target(r, &self.w.hops, &self.w.groups);
                if let Err(e) = build::insert_route(&mut self.w.fib, r, t) {
                    result = Err(e);
                    break;
                }
                done.push((*r, old.get(&route_key(r)).copied()));
            }
        }
        if let Err(e) = result {
            // Put back what was changed, in reverse.
            for (r, before) in done.into_iter().rev() {
                match before {
                    Some(via) => {
                        let r = RouteConfig { via, ..r };
                        let t = build::route_target(&r, &self.w.hops, &self.w.groups);
                        let _ = build::insert_route(&mut self.w.fib, &r, t);
                    }
                    None => {
                        let _ = self.w.fib.remove_in(
                            r.vrf as usize,
                            build::family(&r),
                            r.prefix,
                            r.len,
                        );
                    }
                }
            }
            return Err(e);
        }
        rep.routes_changed = done.len();
        self.staged_keys = done.iter().map(|(r, _)| route_key(r)).collect();
        Ok(!done.is_empty())
    }
}
