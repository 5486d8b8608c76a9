//! Reloads after one-element changes to a large set file, for profilers:
//! what a reload's work is made of. Arguments: ELEMENTS [ROUNDS].

use forwarder::control::Control;
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: usize = a.get(1).map_or(100_000, |s| s.parse().expect("ELEMENTS"));
    let rounds: usize = a.get(2).map_or(10, |s| s.parse().expect("ROUNDS"));
    let dir = std::env::temp_dir().join(format!("fwd-reload-one-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut text = String::new();
    for i in 0..n as u32 {
        let a = i << 8 | 0x0a00_0000;
        text.push_str(&format!(
            "{}.{}.{}.0/24 . {}\n",
            a >> 24,
            (a >> 16) & 255,
            (a >> 8) & 255,
            1000 + i % 5
        ));
    }
    let set = dir.join("s.set");
    std::fs::write(&set, &text).expect("write");
    let cfg = dir.join("f.toml");
    std::fs::write(
        &cfg,
        format!(
            "route = [{{ prefix = \"0.0.0.0/0\", via = \"gw\" }}]\n[forwarder]\ncores = [0]\n\
             [[port]]\nname = \"p0\"\n[[set]]\nname = \"s\"\ntype = \"ipv4_addr . inet_service\"\n\
             match = \"ip daddr . th dport\"\naction = \"drop\"\nfile = \"{}\"\n\
             [[next_hop]]\nname = \"gw\"\nport = \"p0\"\nmac = \"02:00:00:00:00:01\"\n",
            set.display()
        ),
    )
    .expect("write");
    let mut c = Control::start(&cfg).expect("start");
    for r in 0..rounds {
        let t = if r % 2 == 0 {
            format!("{text}203.0.113.0/24 . 53\n")
        } else {
            text.clone()
        };
        std::fs::write(&set, t).expect("write");
        let start = Instant::now();
        let rep = c.reload().expect("reload");
        println!(
            "reload {r}: {:.1} ms ({:.1} ms reading and checking), +{} -{}",
            start.elapsed().as_secs_f64() * 1e3,
            rep.parse.as_secs_f64() * 1e3,
            rep.elements_added,
            rep.elements_removed
        );
        c.reclaim();
    }
    std::fs::remove_dir_all(dir).ok();
}
