//! The kernel table followed (`[routes] source = "kernel"`): the
//! mirror's changes (see [`super::mirror`]) applied to the working FIB in
//! batches and published, and installed again when the FIB is rebuilt.

use super::mirror::{prefix_text, Mirror, VrfKey};
use super::reload::Control;
use crate::kernel::{Action, Event, Route};
use crate::log::{log, log_with, Level};
use crate::tables::HopKind;
use routecache::{Family, NextHop, TargetId};
use serde_json::Value;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The most notifications applied in one batch (one publication).
const BATCH: usize = 16_384;

/// The longest a batch reads before it publishes.
const BATCH_TIME: Duration = Duration::from_millis(20);

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
        let tables = m.table_numbers();
        let Some(req) = m.requests.as_mut() else {
            return Ok(());
        };
        let routes = req.dump_routes(&tables)?;
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
        let mut fields = m.clone();
        if let Some(o) = fields.as_object_mut() {
            o.insert("event".into(), "kernel_table".into());
        }
        log_with(
            Level::Info,
            &format!(
                "kernel table {}: {} route(s), {} installed, {} shadowed by the configuration, {} unusable",
                m["table"], m["routes"], m["installed"], m["shadowed"], m["unusable"]
            ),
            fields,
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
    /// load pauses and the last snapshot is prepared (the tree of a full
    /// IPv6 table takes a fraction of a second to build: `bench
    /// routecache`).
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
            let tables = m.table_numbers();
            if let Some(req) = m.requests.as_mut() {
                match req.dump_routes(&tables) {
                    Ok(routes) => {
                        m.resyncs += 1;
                        let old: Vec<VrfKey> = m.kernel.keys().copied().collect();
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
    pub(super) fn kernel_sync(&mut self, keys: impl Iterator<Item = VrfKey>) -> bool {
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
            let (vrf, (v6, prefix, len)) = key;
            let f = if v6 { Family::V6 } else { Family::V4 };
            match want {
                Some(t) => match self.w.fib.insert_in(vrf as usize, f, prefix, len, t) {
                    Ok(_) => {
                        m.installed.insert(key, t);
                        changed = true;
                    }
                    Err(e) => {
                        m.unusable.insert(key, "refused by the FIB");
                        log(
                            Level::Warn,
                            &format!("kernel route {}: {e}", prefix_text(key.1)),
                        );
                    }
                },
                None => {
                    if have.is_some() && self.w.fib.remove_in(vrf as usize, f, prefix, len).is_ok()
                    {
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
        let keys: Vec<VrfKey> = m.kernel.keys().copied().collect();
        self.kernel_sync(keys.into_iter());
        self.kernel_view();
    }

    /// After the configuration's routes changed in place: the prefixes
    /// it gave up go back to the kernel's routes; those it took are
    /// shadowed.
    pub(super) fn kernel_reconsider(&mut self, keys: Vec<VrfKey>) {
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
            table: 254,
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

    /// The routes of VRF `vrf` that `dst` finds, as in [`lookup`].
    fn lookup_in(c: &Control, vrf: usize, dst: u128) -> Option<u32> {
        c.shared()
            .snapshot
            .load_full()
            .fib
            .vrf(vrf)?
            .lookup(Family::V4, dst)
    }

    /// A VRF's table feeds that VRF alone; the configuration's routes
    /// shadow the kernel's of their own VRF only.
    #[test]
    fn each_vrf_follows_its_own_table() {
        // blue's route file: a /28 the kernel's table 100 has too.
        let d = std::env::temp_dir().join(format!("fwd-mirror-vrf-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("blue.routes"), "203.0.113.0/28 g2\n").unwrap();
        let (mut c, _) = control(
            "vrf",
            "[[vrf]]\nname = \"blue\"\ntable = 100\nroute_file = \"blue.routes\"\n\
             [[port]]\nname = \"p2\"\nvrf = \"blue\"\naddress = [\"192.0.2.129/25\"]\n",
        );
        let in_table = |table: u32, len: u32| Route {
            table,
            ..route(false, NET, len, 10, via(&[GW2], false))
        };
        c.kernel_apply(
            vec![
                Event::New(in_table(100, 24), false),
                Event::New(in_table(100, 28), false),
                Event::New(in_table(254, 26), false),
                Event::New(in_table(7, 27), false),
            ],
            Instant::now(),
        );
        // Table 100's /24 in blue, main's /26 in the default VRF; table
        // 7 is nobody's.
        let t = c.shared().snapshot.load_full();
        let blue = t.fib.vrf(1).unwrap();
        assert_eq!(
            blue.lookup_prefix(Family::V4, NET + 100).map(|r| r.1),
            Some(24)
        );
        assert_eq!(
            t.fib.lookup_prefix(Family::V4, NET + 5).map(|r| r.1),
            Some(26)
        );
        assert_eq!(lookup_in(&c, 0, NET + 100), None);
        // blue's configured /28 shadows table 100's, not main's.
        let v = c.shared().kernel.lock().unwrap().clone();
        assert_eq!(
            (v["installed"].as_u64(), v["shadowed"].as_u64()),
            (Some(2), Some(1)),
            "{v}"
        );
        assert_eq!(
            v["tables"],
            serde_json::json!([{"table": 254, "vrf": 0}, {"table": 100, "vrf": 1}])
        );
        // Gone from table 100: gone from blue.
        c.kernel_apply(vec![Event::Del(in_table(100, 24))], Instant::now());
        assert_eq!(lookup_in(&c, 1, NET + 100), None);
        assert!(lookup_in(&c, 0, NET + 5).is_some());
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
