use super::*;
use crate::control::build;
use crate::pipeline::Snapshot;
use crate::wire::build::{ipv4, L4};

fn tables(generation: u64, extra_set: bool) -> Snapshot {
    let mut text = String::from(
        r#"
route = [{ prefix = "0.0.0.0/0", via = "gw" }]
[forwarder]
cores = [0, 1]
[[port]]
name = "p"
[[set]]
name = "deny"
type = "inet_service"
match = "udp dport"
action = "drop"
elements = ["53"]
[[next_hop]]
name = "gw"
port = "p"
mac = "02:00:00:00:00:fe"
"#,
    );
    if extra_set {
        text.push_str(
            "[[set]]\nname = \"more\"\ntype = \"inet_service\"\nmatch = \"tcp dport\"\naction = \"drop\"\nelements = [\"22\"]\n",
        );
    }
    let cfg = config::parse("t.toml", &text, std::path::Path::new(".")).unwrap();
    build::snapshot(&cfg, generation).unwrap()
}

fn state(slot: &Slot) -> Option<(bool, Vec<String>)> {
    let g = slot.0.lock().unwrap();
    Some((g.0, g.1.set_names.clone()))
}

/// A worker meeting a new generation takes the state prepared for it
/// (its own slot, no other) and leaves its previous state there, to
/// be freed with the snapshot off the worker; counts of a set kept by
/// name carry over.
#[test]
fn new_generations_take_the_state_prepared_for_the_worker() {
    let (t1, t2) = (tables(1, false), tables(2, true));
    assert_eq!(t2.slots.len(), 2);
    let mut pipe = Pipeline::new(&t1, 1).for_worker(1);
    // Built without touching a slot.
    assert!(state(&t1.slots[0]).unwrap().0);
    assert!(state(&t1.slots[1]).unwrap().0);
    let dns = ipv4(0x0a00_0001, 0xc000_0201, 64, L4::Udp(1000, 53), 0);
    let mut burst = Burst::new();
    burst.push(&dns);
    pipe.process(&t1, &mut burst);
    assert_eq!(pipe.counters.matches, vec![[1, 0, 0]]);
    pipe.process(&t2, &mut burst);
    assert_eq!(
        state(&t2.slots[1]),
        Some((false, vec!["deny".to_string()])),
        "the old state is left in the worker's slot"
    );
    assert!(state(&t2.slots[0]).unwrap().0, "not another worker's");
    assert_eq!(pipe.counters.set_names, ["deny", "more"]);
    assert_eq!(pipe.counters.matches, vec![[2, 0, 0], [0, 0, 0]]);
    // Without a slot for its index, a pipeline builds the state itself.
    let mut alone = Pipeline::new(&t1, 1).for_worker(7);
    alone.process(&t2, &mut burst);
    assert_eq!(alone.counters.set_names, ["deny", "more"]);
}
