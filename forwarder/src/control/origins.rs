//! Where the tables' entries come from, as `forwarder trace` and
//! `forwarder route get|list` say it: a route from the configuration
//! (`file:line`), the route file (`file:line`), the kernel table (its
//! protocol and metric), a port's address (connected, local); an element
//! from the configuration or its set file (`file:line`), or added at run
//! time; the configured names of next hops and ECMP groups.

use super::reload::Control;
use crate::kernel::RouteKey;
use matcher::Element;
use routecache::ECMP_FLAG;
use serde_json::{json, Value};

impl Control {
    /// Where the route `key` of VRF `vrf` comes from (see
    /// [`crate::trace::Origins`]).
    pub fn route_origin(&self, vrf: u16, key: RouteKey) -> Value {
        let o = self.classify(vrf, key, |k| {
            self.cfg
                .routes
                .iter()
                .find(|r| r.vrf == vrf && (r.v6, r.prefix, r.len) == k)
                .map(|r| r.line)
        });
        self.origin_names(vrf).origin(o)
    }

    /// Where element `e` of the set at index `set` comes from.
    pub fn element_origin(&self, set: usize, e: &Element) -> Value {
        let Some(s) = self.cfg.sets.get(set) else {
            return json!({ "from": "unknown" });
        };
        // The element as the files give it (a run-time element may share
        // the key only once deleted from the files' view, see
        // `elements`): its index gives its line.
        if let Some(i) = s
            .elements
            .iter()
            .position(|x| x.key == e.key && x.data == e.data && x.priority == e.priority)
        {
            return match s.lines.of(i) {
                Some((true, line)) => json!({
                    "from": "set_file",
                    "file": s.file.as_ref().map(|f| f.display().to_string()).unwrap_or_default(),
                    "line": line,
                }),
                Some((false, line)) => json!({
                    "from": "config",
                    "file": self.path().display().to_string(),
                    "line": line,
                }),
                None => json!({ "from": "unknown" }),
            };
        }
        match self.runtime.get(&s.name) {
            Some(o) if o.added.iter().any(|a| a.key == e.key) => {
                let left = e.expires.map(|d| d.saturating_sub(crate::clock::now_ms()));
                json!({ "from": "run_time", "expires_in_ms": left })
            }
            _ => json!({ "from": "unknown" }),
        }
    }

    /// The configured name of FIB hop `hop`.
    pub fn hop_name(&self, hop: u32) -> Option<String> {
        let i = self.w.hops.iter().position(|&t| t == hop)?;
        self.cfg.next_hops.get(i).map(|h| h.name.clone())
    }

    /// The configured name of ECMP group `group` (its index).
    pub fn group_name(&self, group: u32) -> Option<String> {
        let i = self.w.groups.iter().position(|&t| t == ECMP_FLAG | group)?;
        self.cfg.ecmp.get(i).map(|g| g.name.clone())
    }
}

impl crate::trace::Origins for Control {
    fn route(&self, vrf: u8, v6: bool, prefix: u128, len: u32) -> Value {
        self.route_origin(vrf as u16, (v6, prefix, len))
    }
    fn element(&self, set: usize, e: &Element) -> Value {
        self.element_origin(set, e)
    }
    fn hop_name(&self, hop: u32) -> Option<String> {
        Control::hop_name(self, hop)
    }
    fn group_name(&self, group: u32) -> Option<String> {
        Control::group_name(self, group)
    }
}
