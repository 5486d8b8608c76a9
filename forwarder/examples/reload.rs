//! A reload: `cargo run -p forwarder --example reload`.
//!
//! The control side started on a copy of the shipped configuration, its
//! set file edited, the change applied incrementally (elements in and
//! out of the set's working copy, nothing rebuilt) and published as a new
//! generation; then a broken file refused with its `file:line:col`, the
//! published tables kept. A running forwarder does the same on a file
//! change, SIGHUP or `forwarder reload`.
use forwarder::control::Control;
use std::path::Path;

fn main() {
    let examples = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples"));
    let dir = std::env::temp_dir().join(format!("forwarder-reload-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sets")).expect("a directory");
    let config = dir.join("forwarder.toml");
    let set = dir.join("sets/blocklist.set");
    std::fs::copy(examples.join("forwarder.toml"), &config).expect("the configuration");
    std::fs::copy(examples.join("sets/blocklist.set"), &set).expect("the set file");

    let mut control = Control::start(&config).expect("the first publication");
    let shared = control.shared();
    println!("generation {}", shared.snapshot.load().generation);

    let text = std::fs::read_to_string(&set).expect("the set file");
    std::fs::write(&set, format!("{text}192.0.2.99 . 2222\n")).expect("the set file");
    let r = control.reload().expect("a good file");
    println!(
        "generation {}: {} element(s) added, {} removed, {} set(s) rebuilt, {:?} in all",
        r.generation, r.elements_added, r.elements_removed, r.sets_rebuilt, r.took
    );

    std::fs::write(&set, format!("{text}192.0.2.99 . 99999\n")).expect("the set file");
    match control.reload() {
        Ok(_) => println!("accepted?"),
        Err(e) => println!("refused: {e}"),
    }
    println!("still generation {}", shared.snapshot.load().generation);
    let _ = std::fs::remove_dir_all(&dir);
}
