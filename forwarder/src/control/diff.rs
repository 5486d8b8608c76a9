//! What a reload would change, said before it is applied (`forwarder
//! reload --diff`, `forwarder check --diff`): the sets built anew, the
//! elements each kept set gains and loses (with their lines), the
//! routes added, removed or sent elsewhere, the next hops and ECMP
//! groups added, removed or changed, and what only a restart takes.
//! Both sides are compared as they are in force: the run-time elements
//! on top, as a reload puts them back.

use super::reload::Control;
use config::{Config, RouteConfig, SetConfig, Via};
use matcher::Element;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};

/// Most items a diff lists of each kind (the counts are always whole).
pub const LIST: usize = 1000;

fn via(cfg: &Config, v: Via) -> String {
    match v {
        Via::NextHop(i) => cfg.next_hops.get(i).map(|h| h.name.clone()),
        Via::Ecmp(g) => cfg.ecmp.get(g).map(|g| format!("ECMP group {}", g.name)),
    }
    .unwrap_or_else(|| "?".into())
}

/// Where element `e` of `s` (as the files give it) was written.
fn element_place(
    path: &str,
    s: &SetConfig,
    at: &HashMap<&[matcher::Range], usize>,
    e: &Element,
) -> String {
    match at.get(&e.key[..]).and_then(|&i| s.lines.of(i)) {
        Some((true, line)) => format!(
            "{}:{line}",
            s.file
                .as_ref()
                .map(|f| f.display().to_string())
                .unwrap_or_default()
        ),
        Some((false, line)) => format!("{path}:{line}"),
        None => "run time".into(),
    }
}

fn view(m: &HashMap<Vec<matcher::Range>, usize>) -> HashMap<&[matcher::Range], usize> {
    m.iter().map(|(k, v)| (&k[..], *v)).collect()
}

fn capped(v: Vec<Value>) -> Value {
    json!(v.into_iter().take(LIST).collect::<Vec<_>>())
}

impl Control {
    /// What applying `new` (a configuration just loaded from `path`)
    /// would change, as JSON with a `summary` of counts.
    pub fn diff(&self, new: &Config, path: &str) -> Value {
        let restart = self.restart_only(new).err();
        let (old_f, new_f) = (&self.cfg, new);
        // In force: the run-time elements on top of both.
        let (old, new) = match (
            self.with_runtime(old_f.clone()),
            self.with_runtime(new_f.clone()),
        ) {
            (Ok(a), Ok(b)) => (a, b),
            (_, Err(e)) | (Err(e), _) => return json!({ "result": "error", "error": e }),
        };
        let old_path = self.path().display().to_string();
        // Sets.
        let mut sets = Vec::new();
        let (mut added_n, mut removed_n) = (0usize, 0usize);
        for s in &new.sets {
            let Some(o) = old.sets.iter().find(|o| o.name == s.name) else {
                sets.push(json!({
                    "set": s.name, "change": "added", "type": s.decl.to_string(),
                    "elements": s.elements.len(),
                }));
                continue;
            };
            if o.decl != s.decl || o.sources != s.sources || o.action != s.action {
                sets.push(json!({
                    "set": s.name, "change": "rebuilt",
                    "type": [o.decl.to_string(), s.decl.to_string()],
                    "elements": [o.elements.len(), s.elements.len()],
                }));
                continue;
            }
            if o.hook != s.hook {
                // Its elements stay; where the packets meet it moves.
                sets.push(json!({
                    "set": s.name, "change": "hook",
                    "hook": [o.hook.name(), s.hook.name()],
                }));
            }
            let (gone, came) = config::diff_elements(&o.elements, &s.elements);
            if gone.is_empty() && came.is_empty() {
                continue;
            }
            added_n += came.len();
            removed_n += gone.len();
            let index = |c: &SetConfig| -> HashMap<Vec<matcher::Range>, usize> {
                c.elements
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (e.key.to_vec(), i))
                    .collect()
            };
            let find = |cfg: &Config| cfg.sets.iter().find(|x| x.name == s.name).cloned();
            let (of, nf) = (find(old_f), find(new_f));
            let (oi, ni) = (
                of.as_ref().map(index).unwrap_or_default(),
                nf.as_ref().map(index).unwrap_or_default(),
            );
            let (oi, ni) = (view(&oi), view(&ni));
            let list = |els: &[&Element],
                        cfg: Option<&SetConfig>,
                        at: &HashMap<&[matcher::Range], usize>,
                        p: &str| {
                capped(
                    els.iter()
                        .map(|e| {
                            json!({
                                "element": s.decl.format_element(e),
                                "at": cfg.map_or("run time".into(), |c| element_place(p, c, at, e)),
                            })
                        })
                        .collect(),
                )
            };
            sets.push(json!({
                "set": s.name, "change": "elements",
                "added": came.len(), "removed": gone.len(),
                "add": list(&came, nf.as_ref(), &ni, path),
                "remove": list(&gone, of.as_ref(), &oi, &old_path),
            }));
        }
        for o in &old.sets {
            if !new.sets.iter().any(|s| s.name == o.name) {
                sets.push(
                    json!({ "set": o.name, "change": "removed", "elements": o.elements.len() }),
                );
            }
        }
        // Routes, by VRF (its name: VRFs may be added before others) and
        // prefix; where they lead, by name.
        fn key<'a>(r: &RouteConfig, cfg: &'a Config) -> (&'a str, bool, u128, u32) {
            (cfg.vrf_name(r.vrf), r.v6, r.prefix, r.len)
        }
        let place = |r: &RouteConfig, cfg: &Config, p: &str| {
            if cfg.routes.iter().any(|x| key(x, cfg) == key(r, cfg)) {
                format!("{p}:{}", r.line)
            } else {
                format!(
                    "{}:{}",
                    cfg.route_file_of(r.vrf)
                        .map(|f| f.display().to_string())
                        .unwrap_or_default(),
                    r.line
                )
            }
        };
        // A route outside the default VRF says its VRF (`vrf red
        // 10.0.0.0/8`, as `ip route show vrf` would be read).
        let text = |r: &RouteConfig, cfg: &Config| {
            let p = crate::trace::describe::prefix(r.v6, r.prefix, r.len);
            match r.vrf {
                0 => p,
                v => format!("vrf {} {p}", cfg.vrf_name(v)),
            }
        };
        let mut routes = (Vec::new(), Vec::new(), Vec::new());
        let mut counts = (0usize, 0usize, 0usize);
        let same_routes = new.routes == old.routes
            && std::sync::Arc::ptr_eq(&new.file_routes, &old.file_routes)
            && new.vrfs.len() == old.vrfs.len()
            && new.vrfs.iter().zip(&old.vrfs).all(|(a, b)| {
                a.name == b.name && std::sync::Arc::ptr_eq(&a.file_routes, &b.file_routes)
            });
        if !same_routes {
            let was: HashMap<_, &RouteConfig> =
                old.all_routes().map(|r| (key(r, &old), r)).collect();
            let now: HashMap<_, &RouteConfig> =
                new.all_routes().map(|r| (key(r, &new), r)).collect();
            let mut sorted: Vec<&RouteConfig> = new.all_routes().collect();
            sorted.sort_by_key(|r| key(r, &new));
            for r in sorted {
                match was.get(&key(r, &new)) {
                    None => {
                        counts.0 += 1;
                        if routes.0.len() < LIST {
                            routes.0.push(json!({ "prefix": text(r, &new), "via": via(&new, r.via), "at": place(r, &new, path) }));
                        }
                    }
                    Some(o) if via(&old, o.via) != via(&new, r.via) => {
                        counts.2 += 1;
                        if routes.2.len() < LIST {
                            routes.2.push(json!({
                                "prefix": text(r, &new),
                                "via": [via(&old, o.via), via(&new, r.via)],
                                "at": place(r, &new, path),
                            }));
                        }
                    }
                    _ => {}
                }
            }
            let mut gone: Vec<&RouteConfig> = old
                .all_routes()
                .filter(|r| !now.contains_key(&key(r, &old)))
                .collect();
            gone.sort_by_key(|r| key(r, &old));
            counts.1 = gone.len();
            routes.1 = gone
                .iter()
                .take(LIST)
                .map(|r| json!({ "prefix": text(r, &old), "via": via(&old, r.via), "was_at": place(r, &old, &old_path) }))
                .collect();
        }
        // Next hops and groups, by name.
        let hop = |cfg: &Config, h: &config::NextHopConfig| {
            json!({
                "port": cfg.ports.get(h.port).map(|p| p.name.clone()),
                "mac": h.mac.map(|m| crate::trace::describe::mac(&m)),
                "address": h.address.map(|a| a.to_string()),
            })
        };
        let by_name =
            |a: Vec<(String, Value)>| -> BTreeMap<String, Value> { a.into_iter().collect() };
        let hops_old = by_name(
            old.next_hops
                .iter()
                .map(|h| (h.name.clone(), hop(&old, h)))
                .collect(),
        );
        let hops_new = by_name(
            new.next_hops
                .iter()
                .map(|h| (h.name.clone(), hop(&new, h)))
                .collect(),
        );
        let group = |cfg: &Config, g: &config::EcmpGroup| {
            json!(g
                .members
                .iter()
                .map(|&m| cfg.next_hops.get(m).map(|h| h.name.clone()))
                .collect::<Vec<_>>())
        };
        let groups_old = by_name(
            old.ecmp
                .iter()
                .map(|g| (g.name.clone(), group(&old, g)))
                .collect(),
        );
        let groups_new = by_name(
            new.ecmp
                .iter()
                .map(|g| (g.name.clone(), group(&new, g)))
                .collect(),
        );
        let changes = |a: &BTreeMap<String, Value>, b: &BTreeMap<String, Value>| -> Vec<Value> {
            let mut v = Vec::new();
            for (k, nv) in b {
                match a.get(k) {
                    None => v.push(json!({ "name": k, "change": "added", "now": nv })),
                    Some(ov) if ov != nv => {
                        v.push(json!({ "name": k, "change": "changed", "was": ov, "now": nv }))
                    }
                    _ => {}
                }
            }
            for (k, ov) in a {
                if !b.contains_key(k) {
                    v.push(json!({ "name": k, "change": "removed", "was": ov }));
                }
            }
            v
        };
        let hops = changes(&hops_old, &hops_new);
        let groups = changes(&groups_old, &groups_new);
        let settings: Vec<&str> = [
            ("route_cache", old.route_cache != new.route_cache),
            ("flow_cache", old.flow_cache != new.flow_cache),
            ("router", old.router != new.router),
        ]
        .iter()
        .filter(|x| x.1)
        .map(|x| x.0)
        .collect();
        let changed = !sets.is_empty()
            || counts != (0, 0, 0)
            || !hops.is_empty()
            || !groups.is_empty()
            || !settings.is_empty()
            || restart.is_some();
        json!({
            "result": "ok",
            "file": path,
            "changes": changed,
            "sets": sets,
            "elements_added": added_n,
            "elements_removed": removed_n,
            "routes": {
                "added": counts.0, "removed": counts.1, "changed": counts.2,
                "add": routes.0, "remove": routes.1, "change": routes.2,
            },
            "next_hops": hops,
            "ecmp": groups,
            "settings": settings,
            "restart": restart,
            "listed_at_most": LIST,
        })
    }

    /// [`Control::diff`] of the configuration file `path` as it is now
    /// (this control's own file when `None`).
    pub fn diff_file(&self, path: Option<&std::path::Path>) -> Value {
        let p = path.unwrap_or(self.path()).to_path_buf();
        match config::load(&p) {
            Ok(new) => self.diff(&new, &p.display().to_string()),
            Err(e) => json!({ "result": "error", "error": e.to_string() }),
        }
    }
}

/// A diff for people.
pub fn render(d: &Value) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let empty = Vec::new();
    let arr = |v: &Value| v.as_array().unwrap_or(&empty).clone();
    if d["changes"] == false {
        return format!(
            "{}: a reload would change nothing\n",
            d["file"].as_str().unwrap_or("")
        );
    }
    if let Some(r) = d["restart"].as_str() {
        let _ = writeln!(s, "a reload would be refused: {r}");
    }
    for set in arr(&d["sets"]) {
        let name = set["set"].as_str().unwrap_or("");
        match set["change"].as_str().unwrap_or("") {
            "added" => {
                let _ = writeln!(
                    s,
                    "set {name}: added ({}, {} elements)",
                    set["type"].as_str().unwrap_or(""),
                    set["elements"]
                );
            }
            "removed" => {
                let _ = writeln!(s, "set {name}: removed ({} elements)", set["elements"]);
            }
            "hook" => {
                let _ = writeln!(
                    s,
                    "set {name}: runs at hook {} (was {})",
                    set["hook"][1].as_str().unwrap_or(""),
                    set["hook"][0].as_str().unwrap_or("")
                );
            }
            "rebuilt" => {
                let _ = writeln!(
                    s,
                    "set {name}: built anew (type, fields or action changed): {} -> {} elements",
                    set["elements"][0], set["elements"][1]
                );
            }
            _ => {
                let _ = writeln!(
                    s,
                    "set {name}: +{} -{} elements",
                    set["added"], set["removed"]
                );
                for e in arr(&set["add"]) {
                    let _ = writeln!(
                        s,
                        "  + {}  ({})",
                        e["element"].as_str().unwrap_or(""),
                        e["at"].as_str().unwrap_or("")
                    );
                }
                for e in arr(&set["remove"]) {
                    let _ = writeln!(
                        s,
                        "  - {}  (was {})",
                        e["element"].as_str().unwrap_or(""),
                        e["at"].as_str().unwrap_or("")
                    );
                }
            }
        }
    }
    let r = &d["routes"];
    if r["added"] != 0 || r["removed"] != 0 || r["changed"] != 0 {
        let _ = writeln!(
            s,
            "routes: +{} -{} ~{}",
            r["added"], r["removed"], r["changed"]
        );
        for x in arr(&r["add"]) {
            let _ = writeln!(
                s,
                "  + {} via {}  ({})",
                x["prefix"].as_str().unwrap_or(""),
                x["via"].as_str().unwrap_or(""),
                x["at"].as_str().unwrap_or("")
            );
        }
        for x in arr(&r["remove"]) {
            let _ = writeln!(
                s,
                "  - {} via {}  (was {})",
                x["prefix"].as_str().unwrap_or(""),
                x["via"].as_str().unwrap_or(""),
                x["was_at"].as_str().unwrap_or("")
            );
        }
        for x in arr(&r["change"]) {
            let _ = writeln!(
                s,
                "  ~ {} via {} -> {}  ({})",
                x["prefix"].as_str().unwrap_or(""),
                x["via"][0].as_str().unwrap_or(""),
                x["via"][1].as_str().unwrap_or(""),
                x["at"].as_str().unwrap_or("")
            );
        }
    }
    for (what, key) in [("next hop", "next_hops"), ("ECMP group", "ecmp")] {
        for c in arr(&d[key]) {
            let _ = writeln!(
                s,
                "{what} {}: {}{}",
                c["name"].as_str().unwrap_or(""),
                c["change"].as_str().unwrap_or(""),
                match c["change"].as_str() {
                    Some("changed") => format!(": {}", fields_changed(&c["was"], &c["now"])),
                    Some("added") => format!(" {}", c["now"]),
                    _ => String::new(),
                }
            );
        }
    }
    for x in arr(&d["settings"]) {
        let _ = writeln!(s, "[{}] changed", x.as_str().unwrap_or(""));
    }
    s
}

/// `field old -> new` for each field that differs (a next hop's port,
/// MAC, address; a group's members).
fn fields_changed(was: &Value, now: &Value) -> String {
    match (was.as_object(), now.as_object()) {
        (Some(a), Some(b)) => b
            .iter()
            .filter(|(k, v)| a.get(*k) != Some(v))
            .map(|(k, v)| format!("{k} {} -> {}", a.get(k).unwrap_or(&Value::Null), v))
            .collect::<Vec<_>>()
            .join(", "),
        _ => format!("{was} -> {now}"),
    }
}
