//! The house rules hold for the whole workspace: no Rust file over 800
//! lines, no import loop in any crate. And the checker itself finds what
//! it should, on small crates written here.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn no_file_is_over_800_lines() {
    let long = house::long_files(&workspace());
    assert!(long.is_empty(), "split these by job: {long:?}");
}

#[test]
fn no_crate_has_an_import_loop() {
    let roots = house::crate_roots(&workspace());
    assert!(roots.len() >= 6, "crates found: {roots:?}");
    let mut said = Vec::new();
    let mut modules = 0;
    for r in roots {
        let g = house::graph(&r);
        modules += g.len();
        for l in house::loops(&g) {
            said.push(format!("{}: {}", r.display(), house::describe(&g, &l)));
        }
        let top = house::top_level(&g);
        for l in house::loops(&top) {
            said.push(format!("{}: {}", r.display(), house::describe(&top, &l)));
        }
    }
    assert!(modules > 100, "only {modules} modules read");
    assert!(said.is_empty(), "import loops:\n{}", said.join("\n"));
}

/// A scratch crate of `files` (path, text), returning its root file.
fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("house-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (p, t) in files {
        let f = dir.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    }
    dir.join("src/lib.rs")
}

fn loop_names(root: &Path) -> Vec<Vec<String>> {
    let g = house::graph(root);
    house::loops(&g)
        .into_iter()
        .map(|l| l.iter().map(|m| house::name(m)).collect())
        .collect()
}

#[test]
fn a_loop_through_siblings_and_a_parent_is_found() {
    let root = scratch(
        "loop",
        &[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
            (
                "src/b/mod.rs",
                "mod c;\npub struct B;\nfn f() { let _ = c::C; }\n",
            ),
            ("src/b/c.rs", "use crate::a::A;\npub struct C;\n"),
        ],
    );
    assert_eq!(loop_names(&root), vec![vec!["a", "b", "b::c"]]);
}

#[test]
fn a_loop_between_directories_is_found_where_no_two_files_loop() {
    let root = scratch(
        "dirs",
        &[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a/mod.rs", "mod x;\nmod y;\n"),
            ("src/a/x.rs", "use crate::b::p::P;\npub struct X;\n"),
            ("src/a/y.rs", "pub struct Y;\n"),
            ("src/b/mod.rs", "pub mod p;\nmod q;\n"),
            ("src/b/p.rs", "pub struct P;\n"),
            ("src/b/q.rs", "use crate::a::y::Y;\n"),
        ],
    );
    assert_eq!(loop_names(&root), Vec::<Vec<String>>::new());
    let g = house::graph(&root);
    let top: Vec<Vec<String>> = house::loops(&house::top_level(&g))
        .into_iter()
        .map(|l| l.iter().map(|m| house::name(m)).collect())
        .collect();
    assert_eq!(top, vec![vec!["a", "b"]]);
}

#[test]
fn facades_tests_comments_and_strings_make_no_loop() {
    let root = scratch(
        "facade",
        &[
            // The root re-exports; its children import from the modules
            // that define the names, or through the re-export.
            ("src/lib.rs", "mod a;\nmod b;\npub use a::A;\npub use b::*;\n"),
            ("src/a.rs", "use crate::B;\npub struct A;\n// use crate::a::A;\n#[cfg(test)]\nmod tests {\n    use crate::b::x;\n}\n"),
            ("src/b.rs", "pub struct B;\npub fn x() -> &'static str { \"crate::a::A\" }\nmod inner {\n    use super::B;\n}\n"),
        ],
    );
    assert_eq!(loop_names(&root), Vec::<Vec<String>>::new());
    let g = house::graph(&root);
    let a_imports: Vec<String> = g[&vec!["a".to_string()]]
        .keys()
        .map(|m| house::name(m))
        .collect();
    assert_eq!(
        a_imports,
        ["b"],
        "crate::B resolves to b, where it is defined"
    );
}

#[test]
fn use_trees_give_every_path() {
    assert_eq!(
        house::use_paths("crate::{a::{self, B}, c::D as E}"),
        vec![
            vec!["crate", "a"],
            vec!["crate", "a", "B"],
            vec!["crate", "c", "D"],
        ]
    );
}
