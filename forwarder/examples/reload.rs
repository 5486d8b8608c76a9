//! A reload: `cargo run -p forwarder --example reload`.
//!
//! The control side started on a configuration file, the file changed,
//! the change applied incrementally and published as a new generation,
//! and a broken file refused with its `file:line:col` while the
//! published tables stay. A running forwarder does the same on a file
//! change, SIGHUP or `forwarder reload`.
use forwarder::control::Control;

const CONFIG: &str = r#"
route = [{ prefix = "0.0.0.0/0", via = "gw" }]
[[port]]
name = "p0"
[[set]]
name = "deny"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["192.0.2.0/24 . 22"]
[[next_hop]]
name = "gw"
port = "p0"
mac = "02:00:00:00:00:fe"
"#;

fn main() {
    let dir = std::env::temp_dir().join(format!("forwarder-reload-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let path = dir.join("forwarder.toml");
    std::fs::write(&path, CONFIG).expect("the file");
    let mut control = Control::start(&path).expect("the first publication");
    let shared = control.shared();
    let elements = |c: &Control| c.config().sets[0].elements.len();
    println!(
        "generation {}: {} element(s)",
        shared.snapshot.load().generation,
        elements(&control)
    );

    std::fs::write(
        &path,
        CONFIG.replace(
            "\"192.0.2.0/24 . 22\"",
            "\"192.0.2.0/24 . 22\", \"198.51.100.0/24 . 23\"",
        ),
    )
    .expect("the file");
    let r = control.reload().expect("a good file");
    println!(
        "generation {}: {} added, {} removed, {} set(s) rebuilt, in {:?}",
        r.generation, r.elements_added, r.elements_removed, r.sets_rebuilt, r.took
    );

    std::fs::write(&path, CONFIG.replace("0.0.0.0/0", "0.0.0.0/33")).expect("the file");
    match control.reload() {
        Ok(_) => println!("accepted?"),
        Err(e) => println!("refused: {e}"),
    }
    println!("still generation {}", shared.snapshot.load().generation);
    let _ = std::fs::remove_dir_all(&dir);
}
