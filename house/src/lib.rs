//! The house rules of this workspace, checked by its tests and printed by
//! `cargo run -p house`:
//!
//! - no Rust source file over [`MAX_LINES`] lines ([`long_files`]);
//! - no module that imports, directly or through others, a module that
//!   imports it back ([`loops`]).
//!
//! The import graph is read from the source text, as a reader would:
//! `use` declarations and paths that start with `crate::`, `super::` or a
//! child module's name, in code that is not a test. A name a module
//! re-exports (`pub use`) counts as an import of the module that defines
//! it, so a facade (`lib.rs`, a `mod.rs` that re-exports its children)
//! ties nothing together; inside an inline `mod x { ... }`, `super::` is
//! the file's own module. Types are not resolved: `impl Foo` blocks in a
//! child module that use their parent's `Foo` are imports of the parent,
//! method calls are not imports.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file may be.
pub const MAX_LINES: usize = 800;

/// A module's path inside its crate (`[]` is the crate root).
pub type ModPath = Vec<String>;

/// The name of a module path as Rust writes it (`crate` for the root).
pub fn name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// Every `.rs` file below `dir` (not `target`), sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let n = e.file_name();
            if p.is_dir() {
                if n != "target" && !n.to_string_lossy().starts_with('.') {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The `.rs` files below `dir` longer than [`MAX_LINES`], with their
/// line counts.
pub fn long_files(dir: &Path) -> Vec<(PathBuf, usize)> {
    rust_files(dir)
        .into_iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(&p).ok()?.lines().count();
            (n > MAX_LINES).then_some((p, n))
        })
        .collect()
}

/// The modules of the crate whose root file is `root` (`src/lib.rs` or
/// `src/main.rs`), by path, with their files: the root's `mod NAME;`
/// declarations followed as the compiler does (`NAME.rs` or
/// `NAME/mod.rs` beside a root or `mod.rs` file, else in the directory
/// named after the file), test modules left out.
pub fn modules(root: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut out = BTreeMap::new();
    let mut todo = vec![(Vec::new(), root.to_path_buf())];
    while let Some((m, f)) = todo.pop() {
        let text = code(&std::fs::read_to_string(&f).unwrap_or_default());
        let dir = match f.file_name().and_then(|n| n.to_str()) {
            Some("lib.rs" | "main.rs" | "mod.rs") => f.parent().map(Path::to_path_buf),
            _ => f
                .parent()
                .map(|p| p.join(f.file_stem().unwrap_or_default())),
        }
        .unwrap_or_default();
        for name in declared_modules(&text) {
            for c in [
                dir.join(format!("{name}.rs")),
                dir.join(&name).join("mod.rs"),
            ] {
                if c.is_file() {
                    let mut cm = m.clone();
                    cm.push(name.clone());
                    todo.push((cm, c));
                    break;
                }
            }
        }
        out.insert(m, f);
    }
    out
}

/// The names of the `mod NAME;` declarations in `code` (test modules are
/// gone from it).
fn declared_modules(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = code[i..].find("mod ") {
        let at = i + p;
        i = at + 4;
        if !word_start(b, at) {
            continue;
        }
        // Back to a `pub` or `pub(...)` before it, if any.
        let mut s = at;
        let before = code[..at].trim_end();
        if before.ends_with("pub") {
            s = before.len() - 3;
        } else if before.ends_with(')') {
            if let Some(q) = before.rfind("pub(") {
                s = q;
            }
        }
        if let Some((len, None)) = module_decl(&code[s..]) {
            let decl = &code[s..s + len];
            let name = decl
                .trim_end_matches(';')
                .split_whitespace()
                .last()
                .unwrap_or("")
                .to_string();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// `text` with comments, string and character literals blanked out (the
/// line structure kept).
pub fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c as char);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"'
                    && b[j + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&x| x == b'#')
                        .count()
                        == hashes
                {
                    j += 1 + hashes;
                    break;
                }
                if b[j] == b'\n' {
                    out.push('\n');
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                if i < b.len() && b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == b'\'' {
            // A character literal ('x', '\n', '\''), or a lifetime.
            let lit = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|p| i + 2 + p + 1)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 3)
            } else {
                None
            };
            match lit {
                Some(end) => {
                    out.push_str("' '");
                    i = end;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            // Multi-byte characters go through whole.
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The end of the block whose `{` is at `open` (the index after its `}`).
fn block_end(t: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (j, &c) in t.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    t.len()
}

/// The code of a file as the graph reads it: stripped, without its test
/// modules (`#[cfg(test)] mod x { ... }` and `#[cfg(test)] mod x;`), with
/// `super::` inside an inline module written as `self::`.
pub fn code(text: &str) -> String {
    let s = strip(text);
    let mut out = String::new();
    let mut i = 0;
    let b = s.as_bytes();
    while i < s.len() {
        if s[i..].starts_with("#[cfg(test)]") {
            let rest = s[i + 12..].trim_start();
            let at = s.len() - rest.len();
            if let Some(m) = module_decl(&s[at..]) {
                i = match m {
                    (_, Some(brace)) => block_end(b, at + brace),
                    (len, None) => at + len,
                };
                continue;
            }
        }
        if let Some((len, Some(brace))) = module_decl(&s[i..]).filter(|_| word_start(b, i)) {
            let end = block_end(b, i + brace);
            out.push_str(&s[i..i + len.min(brace + 1)]);
            out.push_str(&s[i + brace + 1..end].replace("super::", "self::"));
            i = end;
            continue;
        }
        let ch = s[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

fn word_start(b: &[u8], i: usize) -> bool {
    i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// At the start of `s`: `mod NAME;` (its length, `None`) or `mod NAME {`
/// (the length to the brace, and the brace's offset), after an optional
/// `pub` or `pub(...)`.
fn module_decl(s: &str) -> Option<(usize, Option<usize>)> {
    let mut r = s;
    if let Some(x) = r.strip_prefix("pub") {
        r = x.trim_start();
        if r.starts_with('(') {
            r = &r[r.find(')')? + 1..];
        }
        r = r.trim_start();
    }
    let x = r.strip_prefix("mod")?;
    if !x.starts_with(char::is_whitespace) {
        return None;
    }
    let x = x.trim_start();
    let n = x.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    if n == 0 {
        return None;
    }
    let after = x[n..].trim_start();
    let off = s.len() - after.len();
    match after.chars().next()? {
        ';' => Some((off + 1, None)),
        '{' => Some((off, Some(off))),
        _ => None,
    }
}

/// One `use` tree's paths: `a::{b, c::{d, e}}` gives `a::b`, `a::c::d`,
/// `a::c::e` (`self` inside braces names the prefix itself; `as` renames
/// are dropped).
pub fn use_paths(tree: &str) -> Vec<Vec<String>> {
    fn walk(prefix: &[String], t: &str, out: &mut Vec<Vec<String>>) {
        let t = t.trim();
        if let Some(inner) = t.strip_prefix('{').and_then(|x| x.strip_suffix('}')) {
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        walk(prefix, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            walk(prefix, &inner[start..], out);
            return;
        }
        if t.is_empty() {
            return;
        }
        let (head, rest) = match t.split_once("::") {
            Some((h, r)) if !h.contains('{') => (h.trim(), Some(r)),
            _ => (t, None),
        };
        let head = head.split(" as ").next().unwrap_or(head).trim();
        let mut p = prefix.to_vec();
        if head != "self" {
            p.push(head.to_string());
        }
        match rest {
            Some(r) => walk(&p, r, out),
            None => out.push(p),
        }
    }
    let mut out = Vec::new();
    walk(&[], tree, &mut out);
    out
}

/// The `use` declarations of `code`: each tree's paths, and whether it is
/// a re-export (`pub use`).
fn uses(code: &str) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while let Some(p) = code[i..].find("use ") {
        let at = i + p;
        i = at + 4;
        if !word_start(b, at) {
            continue;
        }
        let before = code[..at].trim_end();
        let is_pub = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let Some(end) = code[at..].find(';') else {
            break;
        };
        let tree = code[at + 4..at + end].trim();
        if tree.contains("\"") || tree.contains('(') {
            continue;
        }
        for path in use_paths(tree) {
            out.push((path, is_pub));
        }
        i = at + end;
    }
    out
}

/// Paths written in `code` that start with `crate::`, `super::` or one of
/// `children`'s names, outside `use` declarations.
fn inline_paths(code: &str, children: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_alphabetic() || b[i] == b'_')
            || !word_start(b, i)
            || i > 0 && b[i - 1] == b':'
        {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut parts = Vec::new();
        loop {
            let s = j;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            parts.push(code[s..j].to_string());
            let rest = &code[j..];
            let t = rest.trim_start();
            if let Some(after) = t.strip_prefix("::") {
                let after = after.trim_start();
                if after.starts_with(|c: char| c.is_alphabetic() || c == '_') {
                    j = code.len() - after.len();
                    continue;
                }
            }
            break;
        }
        let first = parts[0].as_str();
        if parts.len() > 1
            && (first == "crate" || first == "super" || children.iter().any(|c| c == first))
        {
            out.push(parts);
        }
        i = j.max(i + 1);
    }
    out
}

/// The names a module defines with `pub`, `pub(crate)` or `pub(super)`.
fn defined(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in code.lines() {
        let l = line.trim_start();
        let Some(mut r) = l.strip_prefix("pub") else {
            continue;
        };
        if r.starts_with('(') {
            match r.find(')') {
                Some(p) => r = &r[p + 1..],
                None => continue,
            }
        }
        let r = r.trim_start();
        let r = r.strip_prefix("unsafe ").unwrap_or(r);
        for kw in [
            "fn ", "struct ", "enum ", "const ", "type ", "trait ", "static ", "mod ", "union ",
        ] {
            if let Some(x) = r.strip_prefix(kw) {
                let n: String = x
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !n.is_empty() {
                    out.insert(n);
                }
            }
        }
    }
    out
}

/// The import graph of the crate whose root file is `root`: for each
/// module, the modules it imports, each with the paths that import it.
pub fn graph(root: &Path) -> BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>> {
    let mods = modules(root);
    let codes: BTreeMap<ModPath, String> = mods
        .iter()
        .map(|(m, f)| {
            (
                m.clone(),
                code(&std::fs::read_to_string(f).unwrap_or_default()),
            )
        })
        .collect();
    let children = |m: &ModPath| -> Vec<String> {
        mods.keys()
            .filter(|c| c.len() == m.len() + 1 && c.starts_with(m))
            .map(|c| c[m.len()].clone())
            .collect()
    };
    // Where a path written in module `m` starts.
    let absolute = |m: &ModPath, p: &[String]| -> Vec<String> {
        let mut base: Vec<String> = match p.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            _ => m.clone(),
        };
        let mut rest = match p.first().map(String::as_str) {
            Some("crate") | Some("self") => &p[1..],
            _ => p,
        };
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        base
    };
    // Re-exports: (module, name) -> the module the name is taken from.
    let mut reexports: BTreeMap<(ModPath, String), ModPath> = BTreeMap::new();
    let mut globs: BTreeMap<ModPath, Vec<ModPath>> = BTreeMap::new();
    let longest = |full: &[String]| -> (ModPath, usize) {
        for k in (0..=full.len()).rev() {
            if mods.contains_key(&full[..k]) {
                return (full[..k].to_vec(), k);
            }
        }
        (Vec::new(), 0)
    };
    for (m, c) in &codes {
        let kids = children(m);
        for (p, is_pub) in uses(c) {
            if !is_pub {
                continue;
            }
            let rooted = matches!(
                p.first().map(String::as_str),
                Some("crate" | "super" | "self")
            ) || p.first().is_some_and(|f| kids.contains(f));
            if !rooted {
                continue;
            }
            let full = absolute(m, &p);
            if full.last().is_some_and(|l| l == "*") {
                let (t, k) = longest(&full[..full.len() - 1]);
                if k == full.len() - 1 {
                    globs.entry(m.clone()).or_default().push(t);
                }
                continue;
            }
            let (t, k) = longest(&full);
            if let Some(n) = full.last() {
                reexports.insert(
                    (m.clone(), n.clone()),
                    if k == full.len() { full.clone() } else { t },
                );
            }
        }
    }
    let defs: BTreeMap<ModPath, BTreeSet<String>> =
        codes.iter().map(|(m, c)| (m.clone(), defined(c))).collect();
    let target = |full: &[String]| -> ModPath {
        let (mut t, k) = longest(full);
        if k < full.len() {
            let n = &full[k];
            for _ in 0..16 {
                if let Some(to) = reexports.get(&(t.clone(), n.clone())) {
                    if *to == t {
                        break;
                    }
                    t = to.clone();
                    continue;
                }
                if !defs.get(&t).is_some_and(|d| d.contains(n)) {
                    if let Some(g) = globs.get(&t).and_then(|gs| {
                        gs.iter().find(|g| {
                            defs.get(*g).is_some_and(|d| d.contains(n))
                                || reexports.contains_key(&((*g).clone(), n.clone()))
                        })
                    }) {
                        t = g.clone();
                        continue;
                    }
                }
                break;
            }
        }
        t
    };
    let mut out: BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>> = BTreeMap::new();
    for (m, c) in &codes {
        let kids = children(m);
        let mut paths: Vec<Vec<String>> = Vec::new();
        for (p, is_pub) in uses(c) {
            let rooted = matches!(
                p.first().map(String::as_str),
                Some("crate" | "super" | "self")
            ) || p.first().is_some_and(|f| kids.contains(f));
            if rooted && !is_pub {
                paths.push(p);
            }
        }
        // Paths outside `use` declarations (those were read above).
        let mut body = String::new();
        let mut rest = c.as_str();
        while let Some(p) = rest.find("use ") {
            body.push_str(&rest[..p]);
            let end = rest[p..].find(';').map_or(rest.len(), |e| p + e + 1);
            rest = &rest[end..];
        }
        body.push_str(rest);
        paths.extend(inline_paths(&body, &kids));
        for p in paths {
            let mut full = absolute(m, &p);
            if full.last().is_some_and(|l| l == "*") {
                full.pop();
            }
            let t = target(&full);
            if &t != m {
                out.entry(m.clone())
                    .or_default()
                    .entry(t)
                    .or_default()
                    .insert(name(&full));
            }
        }
        out.entry(m.clone()).or_default();
    }
    out
}

/// The loops of a graph: each strongly connected set of two or more
/// modules (Tarjan's algorithm).
pub fn loops(g: &BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>>) -> Vec<Vec<ModPath>> {
    struct St<'a> {
        g: &'a BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on: BTreeSet<ModPath>,
        next: usize,
        out: Vec<Vec<ModPath>>,
    }
    fn visit(s: &mut St, v: &ModPath) {
        s.index.insert(v.clone(), s.next);
        s.low.insert(v.clone(), s.next);
        s.next += 1;
        s.stack.push(v.clone());
        s.on.insert(v.clone());
        let edges: Vec<ModPath> =
            s.g.get(v)
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default();
        for w in edges {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let l = s.low[v].min(s.low[&w]);
                s.low.insert(v.clone(), l);
            } else if s.on.contains(&w) {
                let l = s.low[v].min(s.index[&w]);
                s.low.insert(v.clone(), l);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(&w);
                let done = &w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in g.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The crate roots of the workspace at `root`: each member's
/// `src/lib.rs` and `src/main.rs`.
pub fn crate_roots(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(root) else {
        return out;
    };
    let mut dirs: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    for d in dirs {
        for f in ["src/lib.rs", "src/main.rs"] {
            if d.join(f).is_file() {
                out.push(d.join(f));
            }
        }
    }
    out
}

/// The graph of a crate's top-level modules (a directory and the
/// modules in it are one): an import between two of them is an import
/// between any of their modules. A loop here is one between parts of the
/// crate even where no two files import each other.
pub fn top_level(
    g: &BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>>,
) -> BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>> {
    let top = |m: &ModPath| -> ModPath { m.iter().take(1).cloned().collect() };
    let mut out: BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>> = BTreeMap::new();
    for (a, to) in g {
        let ta = top(a);
        let e = out.entry(ta.clone()).or_default();
        for (b, why) in to {
            let tb = top(b);
            // The crate root re-exports and declares; it is above them all.
            if tb != ta && !ta.is_empty() && !tb.is_empty() {
                e.entry(tb)
                    .or_default()
                    .extend(why.iter().map(|w| format!("{} uses {w}", name(a))));
            }
        }
    }
    out
}

/// A loop for people: its modules and the imports that close it.
pub fn describe(
    g: &BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>>,
    l: &[ModPath],
) -> String {
    let mut s = l.iter().map(|m| name(m)).collect::<Vec<_>>().join(", ");
    for a in l {
        for (b, why) in &g[a] {
            if l.contains(b) {
                let w: Vec<&String> = why.iter().take(3).collect();
                s.push_str(&format!("\n    {} -> {}: {:?}", name(a), name(b), w));
            }
        }
    }
    s
}
