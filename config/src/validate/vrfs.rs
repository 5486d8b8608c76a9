//! `[[vrf]]` (names, kernel tables; their route files are read with the
//! routes) and
//! `vrf = NAME` on ports and routes.

use super::names::index;
use crate::error::{ConfigError, Located};
use crate::schema;
use crate::types::{KernelRoutes, DEFAULT_VRF};
use toml::Spanned;

/// The most VRFs besides the default one: 256 in all, as grout. A
/// VRF's index is a byte of the flow cache's key (where the TTL's byte
/// was: no decision depends on the TTL).
pub(super) const MAX_VRFS: usize = 255;

/// The VRFs' names, in file order (VRF `i + 1` is the `i`th), checked:
/// unique, not `default`, at most [`MAX_VRFS`], names Linux would take
/// for a VRF device; kernel tables (`kernel`: `[routes]`, needed for
/// any) distinct, and not the default VRF's.
pub(super) fn vrfs(
    loc: &Located,
    raw: &[schema::Vrf],
    kernel: Option<&KernelRoutes>,
) -> Result<Vec<String>, ConfigError> {
    let mut tables: Vec<(u32, &str)> = Vec::new();
    index(loc, raw, |v| &v.name, "VRF")?;
    if let Some(v) = raw.get(MAX_VRFS) {
        return Err(loc.of(
            &v.name,
            format!("more than {MAX_VRFS} VRFs (besides `{DEFAULT_VRF}`)"),
        ));
    }
    for v in raw {
        let name = v.name.get_ref();
        if name == DEFAULT_VRF {
            return Err(loc.of(
                &v.name,
                format!("`{DEFAULT_VRF}` is the VRF of ports and routes that name none: it needs no `[[vrf]]`"),
            ));
        }
        if name.is_empty() || name.len() > 15 || name.contains(['/', '\0', ' ', ':']) {
            return Err(loc.of(
                &v.name,
                format!("`{name}` is not a VRF name (1-15 characters, no `/`, `:` or space, as Linux's interface names)"),
            ));
        }
        let Some(t) = &v.table else { continue };
        let Some(k) = kernel else {
            return Err(loc.of(
                t,
                "`table` mirrors a kernel table into the VRF: it needs `[routes] source = \"kernel\"`",
            ));
        };
        let n = *t.get_ref();
        if n == 0 || n == 255 || n == u32::MAX {
            return Err(loc.of(
                t,
                format!("table {n} is not a routing table of routes to mirror (1-254, 256-...; not 255, local)"),
            ));
        }
        if n == k.table {
            return Err(loc.of(
                t,
                format!("table {n} is the `{DEFAULT_VRF}` VRF's (`[routes] table`)"),
            ));
        }
        if let Some((_, other)) = tables.iter().find(|(m, _)| *m == n) {
            return Err(loc.of(t, format!("table {n} is VRF `{other}`'s already")));
        }
        tables.push((n, name));
    }
    Ok(raw.iter().map(|v| v.name.get_ref().clone()).collect())
}

/// The VRF a `vrf = NAME` key names (0 where there is none).
pub(super) fn vrf_of(
    loc: &Located,
    names: &[String],
    v: &Option<Spanned<String>>,
) -> Result<u16, ConfigError> {
    let Some(v) = v else { return Ok(0) };
    let name = v.get_ref();
    if name == DEFAULT_VRF {
        return Ok(0);
    }
    match names.iter().position(|n| n == name) {
        Some(i) => Ok(i as u16 + 1),
        None => Err(loc.of(
            v,
            format!(
                "unknown VRF `{}` ({})",
                matcher::excerpt(name),
                std::iter::once(DEFAULT_VRF)
                    .chain(names.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}
