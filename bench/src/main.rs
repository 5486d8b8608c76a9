//! `bench`: reproducible benchmarks, each figure printed beside the
//! baselines measured in the same run.
//!
//! - `bench forward`: the pipeline on synthetic ports, stage by stage, on
//!   one and two cores;
//! - `bench matcher`: the kernel selftest's performance table, per lookup;
//! - `bench routecache`: FIB lookups alone and behind the route hint and the
//!   dst cache, by number of destinations; FIB build, update and memory;
//! - `bench hash`: the hash functions the dst cache may use, in a 65,536-slot
//!   table, by key size and fill;
//! - `bench load`: bulk loads of large sets (overlap checks included), and
//!   the cost of adding or deleting one element in the loaded set;
//! - `bench dpdk`: the forwarder on DPDK ports beside DPDK's testpmd, with
//!   and without huge pages;
//! - `bench l3fwd`: the forwarder beside DPDK's l3fwd (LPM and ACL), built
//!   from Debian's `dpdk-doc` sources, on the same pcap devices;
//! - `bench ovs`: the forwarder with connection tracking beside Open
//!   vSwitch's userspace datapath with its conntrack, on the same pcap
//!   devices;
//! - `bench reload`: file change to serving, by set size and kind of
//!   change; the workers' longest gap between bursts in a reload storm.

#![deny(unsafe_code)]

use clap::{Parser, Subcommand};

#[cfg(feature = "dpdk")]
mod acl;
mod classbench;
mod dpdk;
mod forward;
mod hash;
mod l3fwd;
mod load;
mod matcher;
mod ovs;
mod reload;
mod route;
mod stats;

#[derive(Parser)]
#[command(name = "bench", about = "Forwarder benchmarks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The nft_concat_range.sh performance table: every lookup structure
    /// side by side on the same keys.
    Matcher {
        /// Print JSON Lines instead of Markdown tables.
        #[arg(long)]
        json: bool,
        /// Fewer keys and repetitions (under a minute in all).
        #[arg(long)]
        quick: bool,
        /// Write each case's set file and key file (`forwarder lookup`
        /// formats) into this directory.
        #[arg(long)]
        dump: Option<std::path::PathBuf>,
        /// Measure only this SIMD implementation (scalar, avx2, avx512).
        #[arg(long = "impl")]
        imp: Option<String>,
        /// Only these cases (e.g. `net,port`, `hosts-x-services`);
        /// repeatable.
        #[arg(long = "case")]
        cases: Vec<String>,
        /// Instead of the cases: ClassBench's rule sets and traces in this
        /// directory (plain or .gz, e.g. `testdata/classbench`), our
        /// first-match sets against rte_acl (feature `dpdk`).
        #[arg(long)]
        classbench: Option<std::path::PathBuf>,
    },
    /// The pipeline on synthetic ports, stage by stage, 1 and 2 cores.
    Forward {
        /// Print JSON Lines instead of a Markdown table.
        #[arg(long)]
        json: bool,
        /// Smaller table, shorter runs (under a minute).
        #[arg(long)]
        quick: bool,
        /// Runs of every variant (round-robin; the median is reported).
        #[arg(long)]
        runs: Option<usize>,
        /// Seconds per run.
        #[arg(long)]
        seconds: Option<f64>,
        /// Only the variants with these names (e.g. `full`,
        /// `full+flowcache@16384`); repeatable.
        #[arg(long = "variant")]
        variants: Vec<String>,
        /// Packets per burst (default: the example's); repeatable: every
        /// variant then runs at each size, alternating.
        #[arg(long = "burst", value_parser = clap::value_parser!(u16).range(1..=forwarder::port::MAX_BURST as i64))]
        bursts: Vec<u16>,
    },
    /// The route-hint series' table, and the FIB's own figures.
    Routecache {
        /// Print JSON Lines instead of Markdown tables.
        #[arg(long)]
        json: bool,
        /// Smaller tables and fewer repetitions (under a minute).
        #[arg(long)]
        quick: bool,
    },
    /// Hash functions by key size and table fill (the BPF hashmap table).
    Hash {
        /// Print JSON Lines instead of a Markdown table.
        #[arg(long)]
        json: bool,
        /// Fewer lookups and repetitions.
        #[arg(long)]
        quick: bool,
    },
    /// The forwarder on DPDK devices beside dpdk-testpmd (needs root and
    /// `cargo build --release -p forwarder --features dpdk`).
    Dpdk {
        /// Print JSON Lines instead of a Markdown table.
        #[arg(long)]
        json: bool,
        /// Shorter runs (under two minutes).
        #[arg(long)]
        quick: bool,
        /// mbufs per port of the forwarder's pools (default 16384).
        #[arg(long, default_value_t = 16384)]
        mbufs: usize,
        /// Rounds of every variant, alternating (default 3; 2 with
        /// `--quick`): figures are medians over the rounds, ratios the
        /// median of each round's ratio.
        #[arg(long)]
        rounds: Option<usize>,
    },
    /// The forwarder beside DPDK's l3fwd, built from the installed example
    /// sources (dpdk-doc), on the same pcap devices, alternating rounds
    /// (needs root and `cargo build --release -p forwarder --features
    /// dpdk`).
    L3fwd {
        /// Print JSON Lines instead of a Markdown table.
        #[arg(long)]
        json: bool,
        /// Shorter runs, 2 rounds, 100,000 extra routes.
        #[arg(long)]
        quick: bool,
        /// Rounds of every variant, alternating (default 5).
        #[arg(long)]
        rounds: Option<usize>,
        /// Generated IPv4 routes added to both for the full-table
        /// variants (default 1,000,000; 0: none).
        #[arg(long)]
        routes: Option<usize>,
        /// Every program on 2 MiB pages (reserved for the run and put
        /// back): the pcap devices cost a third less a frame.
        #[arg(long)]
        huge: bool,
    },
    /// The forwarder with connection tracking beside Open vSwitch's
    /// userspace datapath with its conntrack (Debian's
    /// openvswitch-switch-dpdk), established traffic on the same pcap
    /// devices, alternating rounds (needs root and `cargo build --release
    /// -p forwarder --features dpdk`).
    Ovs {
        /// Print JSON Lines instead of a Markdown table.
        #[arg(long)]
        json: bool,
        /// Shorter runs, 2 rounds.
        #[arg(long)]
        quick: bool,
        /// Rounds of every variant, alternating (default 5).
        #[arg(long)]
        rounds: Option<usize>,
        /// Connections, each a datagram from the lan and its answer.
        #[arg(long, default_value_t = 4096)]
        flows: usize,
    },
    /// Reloads: file change to serving; gaps between bursts meanwhile.
    Reload {
        /// Print JSON Lines instead of Markdown tables.
        #[arg(long)]
        json: bool,
        /// Smaller tables, fewer changes (about a minute).
        #[arg(long)]
        quick: bool,
    },
    /// Bulk-load large sets and time single updates in them.
    Load {
        /// Print JSON Lines instead of a Markdown table.
        #[arg(long)]
        json: bool,
        /// Smaller sets, for a quick check.
        #[arg(long)]
        quick: bool,
    },
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Forward {
            json,
            quick,
            runs,
            seconds,
            variants,
            bursts,
        } => {
            let bursts: Vec<usize> = bursts.into_iter().map(usize::from).collect();
            forward::run(json, quick, runs, seconds, &variants, &bursts);
            Ok(())
        }
        Cmd::Routecache { json, quick } => {
            route::run(json, quick);
            Ok(())
        }
        Cmd::Hash { json, quick } => {
            hash::run(json, quick);
            Ok(())
        }
        Cmd::Dpdk {
            json,
            quick,
            mbufs,
            rounds,
        } => dpdk::run(json, quick, mbufs, rounds),
        Cmd::L3fwd {
            json,
            quick,
            rounds,
            routes,
            huge,
        } => l3fwd::run(l3fwd::Options {
            json,
            quick,
            rounds,
            routes,
            huge,
        }),
        Cmd::Ovs {
            json,
            quick,
            rounds,
            flows,
        } => ovs::run(ovs::Options {
            json,
            quick,
            rounds,
            flows,
        }),
        Cmd::Reload { json, quick } => {
            reload::run(json, quick);
            Ok(())
        }
        Cmd::Load { json, quick } => {
            load::run(json, quick);
            Ok(())
        }
        Cmd::Matcher {
            json,
            quick,
            dump,
            imp,
            cases,
            classbench,
        } => (|| {
            // One the CPU lacks would measure the scalar fallback under
            // the asked name.
            let imp = imp
                .map(|s| ::matcher::Impl::parse_supported(&s).map_err(|e| format!("--impl: {e}")))
                .transpose()?;
            if let Some(dir) = classbench {
                return classbench::run(classbench::Options {
                    dir,
                    json,
                    quick,
                    imp,
                });
            }
            let cases = if cases.is_empty() {
                matcher::Bench::all()
            } else {
                cases
                    .iter()
                    .map(|c| {
                        matcher::Bench::from_name(c).ok_or_else(|| format!("unknown case `{c}`"))
                    })
                    .collect::<Result<_, _>>()?
            };
            matcher::run(matcher::Options {
                json,
                quick,
                dump,
                imp,
                cases,
            })
        })(),
    };
    if let Err(e) = r {
        eprintln!("bench: error: {e}");
        std::process::exit(1);
    }
}
