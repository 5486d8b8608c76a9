//! `cargo run -p house [graph]`: the workspace's files over the limit and
//! import loops (none, or it exits 1); with `graph`, every crate's import
//! graph, one module a line with the modules it imports.
#![forbid(unsafe_code)]

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let show = std::env::args().nth(1).as_deref() == Some("graph");
    let mut bad = 0;
    for (f, n) in house::long_files(&root) {
        println!("{}: {n} lines (at most {})", f.display(), house::MAX_LINES);
        bad += 1;
    }
    for r in house::crate_roots(&root) {
        let g = house::graph(&r);
        if show {
            println!("{}", r.display());
            for (m, to) in &g {
                let t: Vec<String> = to.keys().map(|t| house::name(t)).collect();
                println!("  {} -> {}", house::name(m), t.join(", "));
            }
        }
        for l in house::loops(&g) {
            println!("{}: import loop: {}", r.display(), house::describe(&g, &l));
            bad += 1;
        }
        let top = house::top_level(&g);
        for l in house::loops(&top) {
            println!(
                "{}: import loop between parts: {}",
                r.display(),
                house::describe(&top, &l)
            );
            bad += 1;
        }
    }
    if bad > 0 {
        std::process::exit(1);
    }
    println!(
        "house: no file over {} lines, no import loop",
        house::MAX_LINES
    );
}
