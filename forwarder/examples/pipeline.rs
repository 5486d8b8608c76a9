//! A pipeline on a synthetic port: `cargo run -p forwarder --example pipeline`.
//!
//! A configuration in a string (one synthetic port whose flows half hit a
//! rule set, a default route), its tables built as the control side
//! builds them, and one worker's pipeline fed bursts from the port, as the
//! worker loop does, without threads: receive, process, send, release.
use forwarder::control::build;
use forwarder::pipeline::{Outcome, Pipeline};
use forwarder::port::{self, Burst};
use forwarder::reason::DropReason;

const CONFIG: &str = r#"
route = [{ prefix = "0.0.0.0/0", via = "gw" }, { prefix = "::/0", via = "gw" }]
[[port]]
name = "p0"
mac = "02:00:00:00:00:01"
[port.options]
flows = 256
set_hit_percent = 50
[[set]]
name = "deny"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["10.0.0.0/8 . 0-1000"]
[[next_hop]]
name = "gw"
port = "p0"
mac = "02:00:00:00:00:fe"
"#;

fn main() {
    let cfg =
        config::parse("example.toml", CONFIG, std::path::Path::new(".")).expect("a configuration");
    let snapshot = build::snapshot(&cfg, 1).expect("tables");
    let mut ports = port::open_all(&cfg, 0).expect("the synthetic port");
    let mut pipe = Pipeline::new(&snapshot, ports.len());
    let mut burst = Burst::new();
    for _ in 0..1000 {
        burst.clear();
        ports[0].rx_burst(&mut burst, cfg.forwarder.burst);
        pipe.process(&snapshot, &mut burst);
        for (tx, which) in pipe.out.iter().enumerate() {
            ports[tx].tx_burst(&mut burst, which);
        }
        ports[0].release(&mut burst);
    }
    let c = &pipe.counters;
    println!("received {}, sent {}", c.rx, c.tx);
    println!(
        "dropped by the rule set: {}",
        c.drops[DropReason::Rule.index()]
    );
    for (name, m) in c.set_names.iter().zip(&c.matches) {
        println!("set {name}: {} matches dropped", m[Outcome::Drop.index()]);
    }
    let s = ports[0].stats();
    println!("the port's own check of what came out: {} bad", s.tx_bad);
}
