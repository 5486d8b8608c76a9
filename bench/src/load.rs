//! Bulk-load times: every insert is checked for duplicates and overlaps,
//! so this is where a quadratic overlap check would show (firewalld users
//! report 20 minutes for 25,000 elements on the kernel).

use crate::stats::{round, row};
use matcher::selftest::Case;
use matcher::{Element, FieldType, InsertMode, Range, Set, SetDecl};
use serde_json::json;
use std::time::Instant;

struct Workload {
    name: &'static str,
    decl: SetDecl,
    elems: Vec<Element>,
}

/// `n` distinct IPv4 networks (/24 to /32) with a port or a port range:
/// a blocklist of services.
fn net_port(n: usize) -> Workload {
    let decl = SetDecl::new(vec![FieldType::Ipv4Addr, FieldType::InetService], None).unwrap();
    let elems = (0..n as u128)
        .map(|i| {
            // Each element owns a /24's worth of space; the prefix inside
            // it varies from /24 to /32.
            let len = 24 + (i % 9) as u32;
            let base = 0x0b00_0000 + (i << 8);
            let host = (1u128 << (32 - len)) - 1;
            let port = if i % 5 == 0 {
                Range::new(1024, 65535)
            } else {
                Range::single(1 + (i * 7) % 10_000)
            };
            Element::of(vec![Range::new(base, base | host), port])
        })
        .collect();
    Workload {
        name: "ipv4_addr . inet_service",
        decl,
        elems,
    }
}

/// `n` single addresses, as an ipset-style blocklist.
fn addresses(n: usize) -> Workload {
    let decl = SetDecl::new(vec![FieldType::Ipv4Addr], None).unwrap();
    let elems = (0..n as u128)
        .map(|i| {
            let a = 0x0b00_0000 + i * 97;
            Element::of(vec![Range::single(a)])
        })
        .collect();
    Workload {
        name: "ipv4_addr",
        decl,
        elems,
    }
}

fn selftest(case: Case, n: usize) -> Workload {
    Workload {
        name: case.name(),
        decl: case.decl(),
        elems: case.entries(n),
    }
}

pub fn run(json: bool, quick: bool) {
    let scale = if quick { 10 } else { 1 };
    let loads = [
        selftest(Case::PortProto, 30_000 / scale),
        addresses(25_000 / scale),
        net_port(100_000 / scale),
        selftest(Case::Net6PortMacProto, 10_000 / scale),
    ];
    if !json {
        println!("| set | elements | load + commit (s) | per element (µs) | add one (µs) | delete one (µs) | commit (µs) | memory (MiB) | groups |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    }
    for w in loads {
        let mut set = Set::new(w.decl.clone());
        let n = w.elems.len();
        let t = Instant::now();
        for e in &w.elems {
            set.insert(e.clone(), InsertMode::Create)
                .expect("workload elements are disjoint");
        }
        let snap = set.commit();
        let load = t.elapsed().as_secs_f64();
        let (add_us, commit_us, del_us) =
            crate::stats::time_single_update(&mut set, &w.elems[n - 1]);
        let mem = snap.memory_usage().total();
        let groups: Vec<String> = snap
            .fields()
            .iter()
            .map(|f| f.group_bits().to_string())
            .collect();
        if json {
            row(json!({
                "set": w.name,
                "elements": n,
                "load_s": round(load, 4),
                "add_us": round(add_us, 1),
                "delete_us": round(del_us, 1),
                "commit_us": round(commit_us, 1),
                "memory_bytes": mem,
                "group_bits": groups.iter().map(|g| g.parse::<u64>().unwrap_or(0)).collect::<Vec<_>>(),
            }));
        } else {
            println!(
                "| {} | {n} | {load:.3} | {:.2} | {add_us:.0} | {del_us:.0} | {commit_us:.0} | {:.1} | {} |",
                w.name,
                load * 1e6 / n as f64,
                mem as f64 / (1 << 20) as f64,
                groups.join("/")
            );
        }
    }
}
