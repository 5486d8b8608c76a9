//! A set built and queried: `cargo run -p matcher --example set`.
//!
//! Declares a verdict map over addresses and ports, adds two elements in
//! nft's syntax, commits a snapshot and looks keys up in it, as a worker
//! does (one scratch per worker, reused for every lookup).
use matcher::{InsertMode, Set, SetDecl};

fn main() {
    let decl = SetDecl::parse("type ipv4_addr . inet_service : verdict").expect("a declaration");
    let mut set = Set::new(decl.clone());
    for e in [
        "192.0.2.0/24 . 1000-2000 : drop",
        "198.51.100.7 . 443 : accept",
    ] {
        let e = decl.parse_element(e).expect("an element");
        set.insert(e, InsertMode::Add).expect("no overlap");
    }
    let snap = set.commit();
    let mut scratch = snap.scratch();
    for key in ["192.0.2.9 . 1500", "198.51.100.7 . 443", "203.0.113.1 . 80"] {
        let k = decl.parse_key(key).expect("a key");
        match snap.lookup_element(&k, &mut scratch) {
            Some(e) => println!("{key}: {}", decl.format_element(e)),
            None => println!("{key}: no match"),
        }
    }
}
