//! The kernel FIB mirror (`[routes] source = "kernel"`): the control
//! thread follows a kernel routing table over rtnetlink and applies each
//! change to the working FIB in place, then publishes once per batch of
//! notifications; nothing else is rebuilt.
//!
//! Precedence, per prefix: the router's own routes (a port address's
//! connected network and the address itself) first, then the
//! configuration's routes, then the kernel's. A kernel route for a
//! prefix the configuration also routes is kept aside ("shadowed") and
//! takes over if the configuration drops it. Of one prefix's kernel
//! routes, the lowest metric is used, as the kernel does.
//!
//! A kernel path maps to a port when its interface is one the port
//! names ([`config::PortConfig::kernel_names`]: `kernel_interface`, its
//! Linux interface, its TAP). A path by a gateway becomes a next hop
//! resolved by the router on that port; a path without one is a
//! connected route (the destination is the neighbour). A multipath
//! route becomes an ECMP group (weights by repetition when they sum to
//! at most 64). Paths by other interfaces are dropped from a route; a
//! route left with none, and blackhole, unreachable, prohibit and throw
//! routes, are counted and listed as unusable and not installed, so
//! their packets follow the next shorter prefix.
//!
//! Next hops and groups are added to the FIB as routes first need them
//! and kept until the FIB is next rebuilt (a reload that changes next
//! hops or port addresses), when the kernel's routes are installed
//! again on the new one.

use super::reload::Control;
use crate::kernel::{self, Action, Event, Requests, Route, RouteKey, Routes};
use crate::log::{log, Level};
use crate::tables::HopKind;
use config::Config;
use routecache::{Family, NextHop, TargetId};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// The most notifications applied in one batch (one publication).
const BATCH: usize = 16_384;
/// The longest a batch reads before it publishes.
const BATCH_TIME: Duration = Duration::from_millis(20);

/// The mirror's state; its sockets are absent in unit tests.
pub struct Mirror {
    events: Option<Routes>,
    requests: Option<Requests>,
    table: u32,
    protocols: Vec<u8>,
    /// The kernel's routes of the table, per prefix by metric.
    kernel: HashMap<RouteKey, BTreeMap<u32, Route>>,
    /// Interface index to port.
    ifmap: HashMap<u32, u16>,
    /// Prefixes the router's own routes and the configuration's inline
    /// routes hold (the route file's are searched in it, sorted).
    configured: HashSet<RouteKey>,
    /// What the mirror installed, per prefix.
    installed: HashMap<RouteKey, TargetId>,
    shadowed: HashSet<RouteKey>,
    unusable: HashMap<RouteKey, &'static str>,
    hop_ids: HashMap<(u16, Option<(bool, u128)>), TargetId>,
    group_ids: HashMap<Vec<TargetId>, TargetId>,
    events_seen: u64,
    /// The last snapshot published was not prepared (a load under way).
    unprepared: bool,
    batches: u64,
    resyncs: u64,
    last_batch: Duration,
    max_batch: Duration,
}

impl Mirror {
    /// A mirror of `cfg`'s kernel table with no sockets (tests).
    pub fn detached(cfg: &Config) -> Option<Mirror> {
        let k = cfg.kernel.as_ref()?;
        Some(Mirror {
            events: None,
            requests: None,
            table: k.table,
            protocols: k.protocols.clone(),
            kernel: HashMap::new(),
            ifmap: Mirror::map_interfaces(cfg),
            configured: Mirror::configured_of(cfg),
            installed: HashMap::new(),
            shadowed: HashSet::new(),
            unusable: HashMap::new(),
            hop_ids: HashMap::new(),
            group_ids: HashMap::new(),
            events_seen: 0,
            unprepared: false,
            batches: 0,
            resyncs: 0,
            last_batch: Duration::ZERO,
            max_batch: Duration::ZERO,
        })
    }

    /// Subscribes to `cfg`'s kernel table (the table itself is read by
    /// [`Control::kernel_start`]).
    pub fn open(cfg: &Config) -> Result<Option<Mirror>, String> {
        let Some(mut m) = Mirror::detached(cfg) else {
            return Ok(None);
        };
        m.events = Some(Routes::subscribe(m.table)?);
        m.requests = Some(Requests::open()?);
        Ok(Some(m))
    }

    /// The notification socket, to wait on.
    pub fn fd(&self) -> Option<std::os::fd::RawFd> {
        self.events.as_ref().map(|e| e.fd())
    }

    fn wanted(&self, r: &Route) -> bool {
        self.protocols.is_empty() || self.protocols.contains(&r.protocol)
    }

    /// Interface index to port, from the interfaces that exist now.
    fn map_interfaces(cfg: &Config) -> HashMap<u32, u16> {
        let mut m = HashMap::new();
        for (i, p) in cfg.ports.iter().enumerate() {
            for name in p.kernel_names() {
                if let Some(x) = kernel::ifindex(&name) {
                    m.insert(x, i as u16);
                }
            }
        }
        m
    }

    /// The prefixes that shadow kernel routes, but for the route file's.
    fn configured_of(cfg: &Config) -> HashSet<RouteKey> {
        let mut s: HashSet<RouteKey> = cfg.routes.iter().map(|r| (r.v6, r.prefix, r.len)).collect();
        for p in &cfg.ports {
            for a in &p.addresses {
                let full = if a.v6() { 128 } else { 32 };
                s.insert((a.v6(), a.bits(), full));
                s.insert((a.v6(), a.network(), a.len));
            }
        }
        s
    }

    fn is_configured(&self, cfg: &Config, key: RouteKey) -> bool {
        self.configured.contains(&key)
            || cfg
                .file_routes
                .binary_search_by_key(&key, |r| (r.v6, r.prefix, r.len))
                .is_ok()
    }

    /// What the stats show.
    pub fn view(&self) -> Value {
        let mut reasons: BTreeMap<&str, u64> = BTreeMap::new();
        for why in self.unusable.values() {
            *reasons.entry(why).or_default() += 1;
        }
        let mut some: Vec<(&RouteKey, &&str)> = self.unusable.iter().collect();
        some.sort();
        let listed: Vec<Value> = some
            .iter()
            .take(20)
            .map(|(k, why)| json!({ "prefix": prefix_text(**k), "why": **why }))
            .collect();
        json!({
            "table": self.table,
            "routes": self.kernel.len(),
            "installed": self.installed.len(),
            "shadowed": self.shadowed.len(),
            "unusable": self.unusable.len(),
            "unusable_by_reason": reasons,
            "unusable_first": listed,
            "next_hops": self.hop_ids.len(),
            "groups": self.group_ids.len(),
            "events": self.events_seen,
            "batches": self.batches,
            "resyncs": self.resyncs,
            "last_batch_us": self.last_batch.as_micros() as u64,
            "max_batch_us": self.max_batch.as_micros() as u64,
        })
    }

    /// Takes one notification into the kernel table; returns the prefix
    /// it touched.
    fn take(&mut self, ev: Event) -> Option<RouteKey> {
        match ev {
            Event::New(r, append) => {
                if !self.wanted(&r) {
                    return None;
                }
                let key = r.key;
                let e = self.kernel.entry(key).or_default();
                match (append, e.get_mut(&r.metric)) {
                    (true, Some(old)) => {
                        if let (Action::Forward(a), Action::Forward(b)) =
                            (&mut old.action, r.action)
                        {
                            for p in b {
                                if !a.contains(&p) {
                                    a.push(p);
                                }
                            }
                        }
                    }
                    _ => {
                        e.insert(r.metric, r);
                    }
                }
                Some(key)
            }
            Event::Del(r) => {
                let key = r.key;
                let e = self.kernel.get_mut(&key)?;
                if let Some(old) = e.get_mut(&r.metric) {
                    // IPv6 removes one path of a multipath route by
                    // naming it; a deletion naming all paths (or none)
                    // removes the route.
                    let keep = match (&mut old.action, &r.action) {
                        (Action::Forward(a), Action::Forward(b)) if !b.is_empty() => {
                            a.retain(|p| {
                                !b.iter()
                                    .any(|q| q.ifindex == p.ifindex && q.gateway == p.gateway)
                            });
                            !a.is_empty()
                        }
                        _ => false,
                    };
                    if !keep {
                        e.remove(&r.metric);
                    }
                }
                if e.is_empty() {
                    self.kernel.remove(&key);
                }
                Some(key)
            }
            Event::Link | Event::Overrun => None,
        }
    }
}

/// `192.0.2.0/24`, `2001:db8::/32`.
pub fn prefix_text((v6, p, len): RouteKey) -> String {
    if v6 {
        format!("{}/{len}", std::net::Ipv6Addr::from(p))
    } else {
        format!("{}/{len}", std::net::Ipv4Addr::from(p as u32))
    }
}

fn gcd(a: u16, b: u16) -> u16 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Control {
    /// Reads the kernel table and installs it (at start): the first
    /// publication with kernel routes.
    pub fn kernel_start(&mut self) -> Result<(), String> {
        let Some(m) = self.mirror.as_mut() else {
            return Ok(());
        };
        let Some(req) = m.requests.as_mut() else {
            return Ok(());
        };
        let routes = req.dump_routes(m.table)?;
        let start = Instant::now();
        m.ifmap = Mirror::map_interfaces(&self.cfg);
        m.configured = Mirror::configured_of(&self.cfg);
        let mut keys = Vec::new();
        for r in routes {
            keys.extend(m.take(Event::New(r, false)));
        }
        self.kernel_sync(keys.into_iter());
        let n = self.kernel_publish(start, true);
        let m = self
            .mirror
            .as_ref()
            .map(|m| m.view())
            .unwrap_or(Value::Null);
        log(
            Level::Info,
            &format!(
                "kernel table {}: {} route(s), {} installed, {} shadowed by the configuration, {} unusable",
                m["table"], m["routes"], m["installed"], m["shadowed"], m["unusable"]
            ),
        );
        let _ = n;
        Ok(())
    }

    /// Applies the notifications that have arrived (up to a batch) and
    /// publishes once if the FIB changed. The control thread calls it
    /// every turn.
    pub fn kernel_poll(&mut self) {
        let Some(m) = self.mirror.as_mut() else {
            return;
        };
        let Some(src) = m.events.as_mut() else {
            return;
        };
        let start = Instant::now();
        let mut evs = Vec::new();
        let mut more = false;
        loop {
            let before = evs.len();
            if let Err(e) = src.poll(BATCH - evs.len(), &mut evs) {
                log(Level::Error, &format!("kernel routes: {e}"));
                break;
            }
            if evs.len() == before {
                break;
            }
            if evs.len() >= BATCH || start.elapsed() >= BATCH_TIME {
                more = true;
                break;
            }
        }
        if evs.is_empty() {
            if std::mem::take(&mut m.unprepared) {
                self.shared.snapshot.load().fib.prepare();
            }
            return;
        }
        self.apply_batch(evs, start, more);
    }

    /// Applies `evs` to the FIB and publishes once (tests: without a
    /// socket).
    pub fn kernel_apply(&mut self, evs: Vec<Event>, start: Instant) {
        self.apply_batch(evs, start, false);
    }

    /// Applies `evs` to the FIB and publishes once. With `more` to come
    /// (a load under way), the snapshot's IPv6 range tree is not built:
    /// workers route with its trie, with the same answers, until the
    /// load pauses and the last snapshot is prepared (the tree of a
    /// 200,000-route table takes 184 ms to build).
    fn apply_batch(&mut self, evs: Vec<Event>, start: Instant, more: bool) {
        let Some(m) = self.mirror.as_mut() else {
            return;
        };
        m.events_seen += evs.len() as u64;
        let mut keys = Vec::new();
        let mut all = false;
        let mut resync = false;
        for ev in evs {
            match ev {
                Event::Link => {
                    let now = Mirror::map_interfaces(&self.cfg);
                    if now != m.ifmap {
                        m.ifmap = now;
                        all = true;
                    }
                    // Linux removes the IPv4 routes of an interface that
                    // goes without saying so: read the table again.
                    resync = true;
                }
                Event::Overrun => resync = true,
                ev => keys.extend(m.take(ev)),
            }
        }
        if resync {
            if let Some(req) = m.requests.as_mut() {
                match req.dump_routes(m.table) {
                    Ok(routes) => {
                        m.resyncs += 1;
                        let old: Vec<RouteKey> = m.kernel.keys().copied().collect();
                        m.kernel.clear();
                        for r in routes {
                            m.take(Event::New(r, false));
                        }
                        keys.extend(old);
                        all = true;
                    }
                    Err(e) => log(Level::Error, &format!("kernel routes: reading table: {e}")),
                }
            }
        }
        if all {
            keys.extend(m.kernel.keys().copied());
            keys.extend(m.installed.keys().copied());
            keys.extend(m.unusable.keys().copied());
            keys.extend(m.shadowed.iter().copied());
        }
        let changed = self.kernel_sync(keys.into_iter());
        if changed {
            self.kernel_publish(start, !more);
        } else if let Some(m) = self.mirror.as_mut() {
            m.batches += 1;
        }
        self.kernel_view();
    }

    fn kernel_view(&self) {
        let v = self
            .mirror
            .as_ref()
            .map(|m| m.view())
            .unwrap_or(Value::Null);
        *self.shared.kernel.lock().unwrap_or_else(|e| e.into_inner()) = v;
    }

    fn kernel_publish(&mut self, start: Instant, prepare: bool) -> u64 {
        let g = self.publish_fib(prepare);
        if let Some(m) = self.mirror.as_mut() {
            m.unprepared = !prepare;
            m.batches += 1;
            m.last_batch = start.elapsed();
            m.max_batch = m.max_batch.max(m.last_batch);
        }
        self.kernel_view();
        g
    }

    /// Brings the FIB's entries for `keys` in line with the kernel's
    /// routes and the precedence; returns whether the FIB changed.
    pub(super) fn kernel_sync(&mut self, keys: impl Iterator<Item = RouteKey>) -> bool {
        let Some(mut m) = self.mirror.take() else {
            return false;
        };
        let mut changed = false;
        let mut seen = HashSet::new();
        for key in keys {
            if !seen.insert(key) {
                continue;
            }
            let best = m.kernel.get(&key).and_then(|e| e.values().next()).cloned();
            let configured = m.is_configured(&self.cfg, key);
            m.shadowed.remove(&key);
            m.unusable.remove(&key);
            let want = match &best {
                None => None,
                Some(_) if configured => {
                    m.shadowed.insert(key);
                    // The configuration's route stands where the kernel's
                    // was: forget it, do not remove it.
                    m.installed.remove(&key);
                    continue;
                }
                Some(r) => match self.kernel_target(&mut m, r) {
                    Ok(t) => Some(t),
                    Err(why) => {
                        m.unusable.insert(key, why);
                        None
                    }
                },
            };
            let have = m.installed.get(&key).copied();
            if want == have {
                continue;
            }
            let f = if key.0 { Family::V6 } else { Family::V4 };
            match want {
                Some(t) => match self.w.fib.insert(f, key.1, key.2, t) {
                    Ok(_) => {
                        m.installed.insert(key, t);
                        changed = true;
                    }
                    Err(e) => {
                        m.unusable.insert(key, "refused by the FIB");
                        log(
                            Level::Warn,
                            &format!("kernel route {}: {e}", prefix_text(key)),
                        );
                    }
                },
                None => {
                    if have.is_some() && self.w.fib.remove(f, key.1, key.2).is_ok() {
                        changed = true;
                    }
                    m.installed.remove(&key);
                }
            }
        }
        self.mirror = Some(m);
        changed
    }

    /// The FIB target for kernel route `r`'s paths, adding next hops and
    /// a group as needed; why not, if none of its paths is usable.
    fn kernel_target(&mut self, m: &mut Mirror, r: &Route) -> Result<TargetId, &'static str> {
        let paths = match &r.action {
            Action::Unusable(why) => return Err(why),
            Action::Forward(p) => p,
        };
        let mut members: Vec<(TargetId, u16)> = Vec::new();
        let mut why = "no path by a forwarder port";
        for p in paths {
            let Some(&port) = m.ifmap.get(&p.ifindex) else {
                continue;
            };
            let fam_v6 = p.gateway.map_or(r.key.0, |g| g.0);
            let pc = &self.cfg.ports[port as usize];
            if !pc.addresses.iter().any(|a| a.v6() == fam_v6) {
                why = "the port has no address of the family";
                continue;
            }
            let key = (port, p.gateway);
            let id = match m.hop_ids.get(&key) {
                Some(&id) => id,
                None => {
                    let id = self.w.fib.add_next_hop(NextHop {
                        port,
                        dst_mac: [0; 6],
                        src_mac: pc.mac,
                    });
                    let mut kinds = self.w.kinds.to_vec();
                    kinds.push(match p.gateway {
                        Some((v6, addr)) => HopKind::Gateway { addr, v6 },
                        None => HopKind::Connected,
                    });
                    self.w.kinds = kinds.into();
                    m.hop_ids.insert(key, id);
                    id
                }
            };
            members.push((id, p.weight.max(1)));
        }
        match members.len() {
            0 => Err(why),
            1 => Ok(members[0].0),
            _ => {
                members.sort_unstable();
                members.dedup_by_key(|x| x.0);
                let g = members.iter().fold(0, |g, x| gcd(g, x.1));
                let sum: u32 = members.iter().map(|x| (x.1 / g) as u32).sum();
                let list: Vec<TargetId> = if sum <= 64 {
                    members
                        .iter()
                        .flat_map(|&(id, w)| std::iter::repeat_n(id, (w / g) as usize))
                        .collect()
                } else {
                    members.iter().map(|x| x.0).collect()
                };
                if list.len() == 1 {
                    return Ok(list[0]);
                }
                if let Some(&id) = m.group_ids.get(&list) {
                    return Ok(id);
                }
                let id = self
                    .w
                    .fib
                    .add_ecmp_group(&list)
                    .map_err(|_| "refused by the FIB")?;
                m.group_ids.insert(list, id);
                Ok(id)
            }
        }
    }

    /// After the FIB was built anew from the configuration: the kernel's
    /// routes installed on it again, with new next hops and groups.
    pub(super) fn kernel_reinstall(&mut self) {
        let Some(m) = self.mirror.as_mut() else {
            return;
        };
        m.hop_ids.clear();
        m.group_ids.clear();
        m.installed.clear();
        m.configured = Mirror::configured_of(&self.cfg);
        m.ifmap = Mirror::map_interfaces(&self.cfg);
        let keys: Vec<RouteKey> = m.kernel.keys().copied().collect();
        self.kernel_sync(keys.into_iter());
        self.kernel_view();
    }

    /// After the configuration's routes changed in place: the prefixes
    /// it gave up go back to the kernel's routes; those it took are
    /// shadowed.
    pub(super) fn kernel_reconsider(&mut self, keys: Vec<RouteKey>) {
        let Some(m) = self.mirror.as_mut() else {
            return;
        };
        m.configured = Mirror::configured_of(&self.cfg);
        self.kernel_sync(keys.into_iter());
        self.kernel_view();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Path;

    const LO: u32 = 1;

    fn cfg(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
        let p = dir.join("k.toml");
        std::fs::write(
            &p,
            format!(
                r#"
route = [{{ prefix = "203.0.113.128/25", via = "g2" }}]
[forwarder]
cores = [0]
[routes]
source = "kernel"
[[port]]
name = "p0"
address = ["192.0.2.1/24"]
[[port]]
name = "p1"
address = ["198.51.100.1/24", "2001:db8:2::1/64"]
kernel_interface = "lo"
[[next_hop]]
name = "g2"
port = "p1"
address = "198.51.100.2"
{extra}
"#
            ),
        )
        .unwrap();
        p
    }

    fn control(name: &str, extra: &str) -> (Control, std::path::PathBuf) {
        let d = std::env::temp_dir().join(format!("fwd-mirror-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = cfg(&d, extra);
        let mut c = Control::start(&p).unwrap();
        c.detached_mirror();
        c.kernel_apply(vec![Event::Link], Instant::now());
        (c, p)
    }

    fn route(v6: bool, p: u128, len: u32, metric: u32, action: Action) -> Route {
        Route {
            key: (v6, p, len),
            metric,
            protocol: 12,
            action,
        }
    }

    fn via(gws: &[u128], v6: bool) -> Action {
        Action::Forward(
            gws.iter()
                .map(|&g| Path {
                    ifindex: LO,
                    gateway: Some((v6, g)),
                    weight: 1,
                })
                .collect(),
        )
    }

    /// The hop kinds a destination's route leads to (every ECMP member).
    fn lookup(c: &Control, v6: bool, dst: u128) -> Option<Vec<HopKind>> {
        let t = c.shared().snapshot.load_full();
        let f = if v6 { Family::V6 } else { Family::V4 };
        let target = t.fib.lookup(f, dst)?;
        let ids: Vec<u32> = match t.fib.targets().group(target) {
            Some(g) if routecache::fib::Targets::is_ecmp(target) => g.to_vec(),
            _ => vec![target],
        };
        Some(ids.iter().map(|&i| t.hop_kinds[i as usize]).collect())
    }

    const GW2: u128 = 0xc633_6402; // 198.51.100.2
    const GW3: u128 = 0xc633_6403;
    const NET: u128 = 0xcb00_7100; // 203.0.113.0

    fn gw(a: u128) -> HopKind {
        HopKind::Gateway { addr: a, v6: false }
    }

    #[test]
    fn routes_follow_the_kernel_lowest_metric_first() {
        let (mut c, _) = control("follow", "");
        assert_eq!(lookup(&c, false, NET + 5), None);
        c.kernel_apply(
            vec![Event::New(
                route(false, NET, 28, 100, via(&[GW2], false)),
                false,
            )],
            Instant::now(),
        );
        assert_eq!(lookup(&c, false, NET + 5), Some(vec![gw(GW2)]));
        // A better metric takes over; when it goes, the other is back.
        c.kernel_apply(
            vec![Event::New(
                route(false, NET, 28, 10, via(&[GW3], false)),
                false,
            )],
            Instant::now(),
        );
        assert_eq!(lookup(&c, false, NET + 5), Some(vec![gw(GW3)]));
        c.kernel_apply(
            vec![Event::Del(route(false, NET, 28, 10, via(&[GW3], false)))],
            Instant::now(),
        );
        assert_eq!(lookup(&c, false, NET + 5), Some(vec![gw(GW2)]));
        // Multipath: an ECMP group of both gateways.
        c.kernel_apply(
            vec![Event::New(
                route(false, NET, 28, 100, via(&[GW2, GW3], false)),
                false,
            )],
            Instant::now(),
        );
        let mut k = lookup(&c, false, NET + 5).unwrap();
        k.sort_by_key(|h| format!("{h:?}"));
        assert_eq!(k, vec![gw(GW2), gw(GW3)]);
        // Unusable: not installed, counted.
        c.kernel_apply(
            vec![Event::New(
                route(false, NET, 28, 100, Action::Unusable("blackhole")),
                false,
            )],
            Instant::now(),
        );
        assert_eq!(lookup(&c, false, NET + 5), None);
        let v = c.shared().kernel.lock().unwrap().clone();
        assert_eq!(v["unusable_by_reason"]["blackhole"], 1);
        c.kernel_apply(
            vec![Event::Del(route(
                false,
                NET,
                28,
                100,
                Action::Forward(vec![]),
            ))],
            Instant::now(),
        );
        let v = c.shared().kernel.lock().unwrap().clone();
        assert_eq!(
            (v["routes"].as_u64(), v["unusable"].as_u64()),
            (Some(0), Some(0))
        );
    }

    #[test]
    fn ipv6_paths_go_one_by_one_and_other_interfaces_do_not_count() {
        let (mut c, _) = control("v6", "");
        let p = 0x2001_0db8_0005u128 << 80;
        let g = |x: u128| (0x2001_0db8_0002u128 << 80) | x;
        c.kernel_apply(
            vec![Event::New(
                route(true, p, 64, 1024, via(&[g(2), g(3)], true)),
                false,
            )],
            Instant::now(),
        );
        assert_eq!(lookup(&c, true, p | 5).map(|k| k.len()), Some(2));
        c.kernel_apply(
            vec![Event::Del(route(true, p, 64, 1024, via(&[g(3)], true)))],
            Instant::now(),
        );
        assert_eq!(
            lookup(&c, true, p | 5),
            Some(vec![HopKind::Gateway {
                addr: g(2),
                v6: true
            }])
        );
        // By an interface no port names: unusable.
        let other = Action::Forward(vec![Path {
            ifindex: 999_999,
            gateway: None,
            weight: 1,
        }]);
        c.kernel_apply(
            vec![Event::New(route(true, p, 64, 1024, other), false)],
            Instant::now(),
        );
        assert_eq!(lookup(&c, true, p | 5), None);
        let v = c.shared().kernel.lock().unwrap().clone();
        assert_eq!(v["unusable_by_reason"]["no path by a forwarder port"], 1);
        // A port without an address of the family cannot resolve: port
        // p0 has no IPv6 address... but only p1 is named by `lo`; a
        // direct route is connected.
        let direct = Action::Forward(vec![Path {
            ifindex: LO,
            gateway: None,
            weight: 1,
        }]);
        c.kernel_apply(
            vec![Event::New(route(true, p, 64, 1024, direct), false)],
            Instant::now(),
        );
        assert_eq!(lookup(&c, true, p | 5), Some(vec![HopKind::Connected]));
    }

    #[test]
    fn the_configuration_wins_and_reloads_keep_the_kernel_routes() {
        let (mut c, path) = control("precedence", "");
        let over = NET | 0x80;
        c.kernel_apply(
            vec![
                Event::New(
                    route(false, over, 25, 0, Action::Unusable("unreachable")),
                    false,
                ),
                Event::New(route(false, NET, 28, 0, via(&[GW3], false)), false),
                // The port's connected network: the router's own.
                Event::New(route(false, 0xc633_6400, 24, 0, via(&[GW3], false)), false),
            ],
            Instant::now(),
        );
        let v = c.shared().kernel.lock().unwrap().clone();
        assert_eq!(v["shadowed"], 2);
        assert_eq!(lookup(&c, false, over + 5), Some(vec![gw(GW2)]));
        assert_eq!(
            lookup(&c, false, 0xc633_6409),
            Some(vec![HopKind::Connected])
        );
        // The configuration drops its route: the kernel's (unusable) is
        // what is left, so nothing routes there.
        std::fs::write(
            &path,
            std::fs::read_to_string(&path).unwrap().replace(
                r#"route = [{ prefix = "203.0.113.128/25", via = "g2" }]"#,
                "",
            ),
        )
        .unwrap();
        let r = c.reload().unwrap();
        assert!(!r.fib_rebuilt);
        assert_eq!(lookup(&c, false, over + 5), None);
        assert_eq!(lookup(&c, false, NET + 5), Some(vec![gw(GW3)]));
        // A change that builds the FIB anew (a new next hop) installs the
        // kernel's routes again.
        let text = std::fs::read_to_string(&path).unwrap()
            + "[[next_hop]]\nname = \"x\"\nport = \"p0\"\nmac = \"02:00:00:00:00:99\"\n";
        std::fs::write(&path, text).unwrap();
        let r = c.reload().unwrap();
        assert!(r.fib_rebuilt);
        assert_eq!(lookup(&c, false, NET + 5), Some(vec![gw(GW3)]));
        let v = c.shared().kernel.lock().unwrap().clone();
        assert_eq!(
            (v["installed"].as_u64(), v["shadowed"].as_u64()),
            (Some(1), Some(1))
        );
    }

    #[test]
    fn what_the_mirror_and_the_taps_start_with_changes_on_restart() {
        let (mut c, path) = control("restart", "");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            &path,
            text.replace("source = \"kernel\"", "source = \"kernel\"\ntable = 7"),
        )
        .unwrap();
        let e = c.reload().unwrap_err();
        assert!(e.contains(":5:1: [routes] changed"), "{e}");
        std::fs::write(
            &path,
            text.replace(
                "kernel_interface = \"lo\"",
                "kernel_interface = \"lo\"\npunt = \"tap\"",
            ),
        )
        .unwrap();
        let e = c.reload().unwrap_err();
        assert!(e.contains("ports changed"), "{e}");
        std::fs::write(&path, text).unwrap();
        assert!(c.reload().is_ok());
    }
}
