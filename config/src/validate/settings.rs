//! `[forwarder]`, `[neighbour]`, `[icmp]`, `[flow_cache]`,
//! `[route_cache]` and `[control]`.

use crate::error::{ConfigError, Located};
use crate::schema;
use crate::types::*;
use std::path::Path;
use toml::Spanned;

pub(super) fn router(
    loc: &Located,
    n: &Option<schema::Neighbour>,
    i: &Option<schema::Icmp>,
) -> Result<RouterSettings, ConfigError> {
    let mut r = RouterSettings::default();
    fn ms(
        loc: &Located,
        v: &Option<Spanned<u64>>,
        min: u64,
        to: &mut u64,
    ) -> Result<(), ConfigError> {
        if let Some(v) = v {
            if !(min..=3_600_000).contains(v.get_ref()) {
                return Err(loc.of(v, format!("{} ms is outside {min}-3600000", v.get_ref())));
            }
            *to = *v.get_ref();
        }
        Ok(())
    }
    if let Some(n) = n {
        ms(loc, &n.reachable_ms, 1, &mut r.neighbour.reachable_ms)?;
        ms(loc, &n.retrans_ms, 1, &mut r.neighbour.retrans_ms)?;
        ms(loc, &n.delay_ms, 0, &mut r.neighbour.delay_ms)?;
        if let Some(p) = &n.probes {
            if !(1..=100).contains(p.get_ref()) {
                return Err(loc.of(p, format!("probes = {} is outside 1-100", p.get_ref())));
            }
            r.neighbour.probes = *p.get_ref();
        }
        if let Some(h) = &n.hold_bytes {
            if *h.get_ref() > MAX_HOLD_BYTES {
                return Err(loc.of(
                    h,
                    format!("hold_bytes = {} is outside 0-{MAX_HOLD_BYTES}", h.get_ref()),
                ));
            }
            r.neighbour.hold_bytes = *h.get_ref() as usize;
        }
    }
    if let Some(i) = i {
        ms(loc, &i.ratelimit_ms, 0, &mut r.icmp.ratelimit_ms)?;
        for (v, to) in [
            (&i.msgs_per_sec, &mut r.icmp.msgs_per_sec),
            (&i.msgs_burst, &mut r.icmp.msgs_burst),
        ] {
            if let Some(v) = v {
                if *v.get_ref() > 1_000_000 {
                    return Err(loc.of(v, format!("{} is more than 1000000", v.get_ref())));
                }
                *to = *v.get_ref();
            }
        }
    }
    Ok(r)
}

/// The most a neighbour may hold while it resolves (64 MiB: a second of
/// 500 Mbit/s towards it).
const MAX_HOLD_BYTES: u64 = 64 << 20;

pub(super) fn forwarder(
    loc: &Located,
    f: Option<schema::Forwarder>,
) -> Result<Forwarder, ConfigError> {
    let Some(f) = f else {
        return Ok(Forwarder {
            cores: vec![0],
            burst: DEFAULT_BURST,
            cores_at: loc.file.to_string(),
        });
    };
    let (cores, cores_at) = match f.cores {
        None => (vec![0], loc.file.to_string()),
        Some(c) => {
            if c.get_ref().is_empty() {
                return Err(loc.of(&c, "`cores` lists no core"));
            }
            let mut seen = c.get_ref().clone();
            seen.sort_unstable();
            if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
                return Err(loc.of(&c, format!("core {} is listed twice", w[0])));
            }
            let at = loc.place(&c);
            (c.into_inner(), at)
        }
    };
    let burst = match f.burst {
        None => DEFAULT_BURST,
        Some(b) if (1..=64).contains(b.get_ref()) => b.into_inner(),
        Some(b) => return Err(loc.of(&b, format!("burst {} is outside 1-64", b.get_ref()))),
    };
    Ok(Forwarder {
        cores,
        burst,
        cores_at,
    })
}

pub(super) fn control(
    loc: &Located,
    c: Option<&schema::Control>,
    dir: &Path,
) -> Result<ControlConfig, ConfigError> {
    let Some(c) = c else {
        return Ok(ControlConfig {
            watch: true,
            ..ControlConfig::default()
        });
    };
    Ok(ControlConfig {
        socket: match &c.socket {
            Some(s) if s.get_ref().is_empty() => {
                return Err(loc.of(s, "`socket` is empty"));
            }
            Some(s) => Some(dir.join(s.get_ref())),
            None => None,
        },
        prometheus: match &c.prometheus {
            Some(a) => Some(a.get_ref().parse().map_err(|_| {
                loc.of(
                    a,
                    format!(
                        "`{}` is not an address:port such as 127.0.0.1:9100",
                        a.get_ref()
                    ),
                )
            })?),
            None => None,
        },
        watch: c.watch.unwrap_or(true),
        group: match &c.group {
            Some(g) if g.get_ref().is_empty() => return Err(loc.of(g, "`group` is empty")),
            Some(g) => Some(g.get_ref().clone()),
            None => None,
        },
        allow_uids: c
            .allow_uids
            .as_ref()
            .map(|u| u.get_ref().clone())
            .unwrap_or_default(),
    })
}

/// `[flow_cache]`, and whether the rule sets `sets` fit its entries.
pub(super) fn flow_cache(
    loc: &Located,
    c: Option<schema::FlowCache>,
    sets: &[schema::Set],
) -> Result<FlowCache, ConfigError> {
    let flow_cache = match c {
        None => FlowCache::default(),
        Some(c) => {
            if let Some(n) = c.entries.as_ref().filter(|n| *n.get_ref() > 1 << 22) {
                return Err(loc.of(
                    n,
                    format!("{} flow cache entries is more than 4194304", n.get_ref()),
                ));
            }
            if let Some(n) = c
                .insert_one_in
                .as_ref()
                .filter(|n| !(1..=65536).contains(n.get_ref()))
            {
                return Err(loc.of(
                    n,
                    format!("insert_one_in = {} is not in 1..=65536", n.get_ref()),
                ));
            }
            FlowCache {
                entries: c.entries.map(Spanned::into_inner),
                insert_one_in: c.insert_one_in.map(Spanned::into_inner),
            }
        }
    };
    match sets.get(FlowCache::MAX_SETS) {
        Some(s) if flow_cache.entries != Some(0) => Err(loc.of(
            &s.name,
            format!(
                "set `{}`: the flow cache records the matches of at most {} rule sets; \
                 with more, turn it off (`[flow_cache] entries = 0`)",
                s.name.get_ref(),
                FlowCache::MAX_SETS
            ),
        )),
        _ => Ok(flow_cache),
    }
}

pub(super) fn route_cache(
    loc: &Located,
    c: Option<schema::RouteCache>,
) -> Result<RouteCache, ConfigError> {
    let Some(c) = c else {
        return Ok(RouteCache {
            hint: None,
            dst_cache_entries: None,
            hash: None,
        });
    };
    if let Some(h) = &c.hash {
        if !["jhash", "jhash2", "ahash"].contains(&h.get_ref().as_str()) {
            return Err(loc.of(
                h,
                format!("unknown hash `{}` (jhash, jhash2, ahash)", h.get_ref()),
            ));
        }
    }
    if let Some(n) = &c.dst_cache_entries {
        if *n.get_ref() > 1 << 20 {
            return Err(loc.of(
                n,
                format!("{} dst cache entries is more than 1048576", n.get_ref()),
            ));
        }
    }
    Ok(RouteCache {
        hint: c.hint,
        dst_cache_entries: c.dst_cache_entries.map(Spanned::into_inner),
        hash: c.hash.map(Spanned::into_inner),
    })
}

/// `[conntrack]`, and whether a set that matches `ct state` has it on.
pub(super) fn conntrack(
    loc: &Located,
    c: Option<schema::Conntrack>,
    sets: &[schema::Set],
) -> Result<Conntrack, ConfigError> {
    let mut ct = Conntrack::default();
    if let Some(c) = c {
        ct.enabled = c.enabled.unwrap_or(false);
        ct.acct = c.acct.unwrap_or(false);
        if let Some(m) = &c.max {
            if !(1..=1 << 24).contains(m.get_ref()) {
                return Err(loc.of(m, format!("max = {} is not in 1..=16777216", m.get_ref())));
            }
            ct.max = *m.get_ref();
        }
        let t = &mut ct.timeouts;
        let tcp = [
            &c.tcp_timeout_syn_sent,
            &c.tcp_timeout_syn_recv,
            &c.tcp_timeout_established,
            &c.tcp_timeout_fin_wait,
            &c.tcp_timeout_close_wait,
            &c.tcp_timeout_last_ack,
            &c.tcp_timeout_time_wait,
            &c.tcp_timeout_close,
        ];
        let mut all: Vec<(String, &Option<Spanned<u32>>, &mut u32)> = Vec::new();
        for ((v, name), to) in tcp.into_iter().zip(CtTimeouts::TCP_NAMES).zip(&mut t.tcp) {
            all.push((format!("tcp_timeout_{name}"), v, to));
        }
        all.push(("udp_timeout".into(), &c.udp_timeout, &mut t.udp));
        all.push((
            "udp_timeout_stream".into(),
            &c.udp_timeout_stream,
            &mut t.udp_stream,
        ));
        all.push(("icmp_timeout".into(), &c.icmp_timeout, &mut t.icmp));
        all.push(("generic_timeout".into(), &c.generic_timeout, &mut t.generic));
        for (name, v, to) in all {
            let Some(v) = v else { continue };
            // A day's worth of ticks past 100 years would wrap the
            // deadline clock; Linux's longest default is 5 days.
            if !(1..=31_536_000).contains(v.get_ref()) {
                return Err(loc.of(
                    v,
                    format!("{name} = {} is not in 1..=31536000 seconds", v.get_ref()),
                ));
            }
            *to = *v.get_ref();
        }
    }
    if !ct.enabled {
        for s in sets {
            let m = s.match_.get_ref();
            if m.split(" . ")
                .any(|p| Source::parse(p) == Ok(Source::CtState))
            {
                return Err(loc.of(
                    &s.match_,
                    format!(
                        "set `{}` matches `ct state`, which needs connection tracking: \
                         add `[conntrack] enabled = true`",
                        s.name.get_ref()
                    ),
                ));
            }
        }
    }
    Ok(ct)
}
