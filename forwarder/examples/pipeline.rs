//! A pipeline on synthetic ports: `cargo run -p forwarder --example pipeline`.
//!
//! The shipped configuration (`examples/forwarder.toml`: two synthetic
//! ports, a 1,024-element rule set, an IPv6 verdict map, 330 routes), its
//! tables built as the control side builds them, and one worker's
//! pipeline fed bursts from each port as the worker loop does, without
//! threads: receive, process, send, release.
use forwarder::control::build;
use forwarder::pipeline::{Outcome, Pipeline};
use forwarder::port::{self, Burst};
use forwarder::reason::DropReason;

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/forwarder.toml");
    let cfg = config::load(std::path::Path::new(path)).expect("the example's configuration");
    let snapshot = build::snapshot(&cfg, 1).expect("its tables");
    let mut ports = port::open_all(&cfg, 0).expect("the synthetic ports");
    let mut pipe = Pipeline::new(&snapshot, ports.len());
    let mut burst = Burst::new();
    for _ in 0..1000 {
        for rx in 0..ports.len() {
            burst.clear();
            ports[rx].rx_burst(&mut burst, cfg.forwarder.burst);
            pipe.process(&snapshot, &mut burst);
            for (tx, which) in pipe.out.iter().enumerate() {
                ports[tx].tx_burst(&mut burst, which);
            }
            ports[rx].release(&mut burst);
        }
    }
    let c = &pipe.counters;
    println!("received {}, sent {}", c.rx, c.tx);
    for r in DropReason::ALL {
        if c.drops[r.index()] > 0 {
            println!("dropped, {}: {}", r.name(), c.drops[r.index()]);
        }
    }
    for (name, m) in c.set_names.iter().zip(&c.matches) {
        let (d, a) = (m[Outcome::Drop.index()], m[Outcome::Accept.index()]);
        println!("set {name}: {d} matches dropped, {a} accepted");
    }
    for p in &ports {
        let s = p.stats();
        println!(
            "port {}: sent {}, failing its own check {}",
            p.name(),
            s.tx,
            s.tx_bad
        );
    }
}
