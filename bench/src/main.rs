//! `bench`: reproducible benchmarks, each figure printed beside the
//! baselines measured in the same run.
//!
//! - `bench load`: bulk loads of large sets (overlap checks included), and
//!   the cost of adding or deleting one element in the loaded set.

use clap::{Parser, Subcommand};

mod load;

#[derive(Parser)]
#[command(name = "bench", about = "Forwarder benchmarks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
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
    match cli.cmd {
        Cmd::Load { json, quick } => load::run(json, quick),
    }
}
