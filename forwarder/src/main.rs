//! The `forwarder` command.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "forwarder", version, about = "User-space packet forwarder")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Load a set file and print the element each key matches, or `nomatch`.
    Lookup {
        /// Set file: a `type ...` line, then one element per line.
        #[arg(long)]
        set: PathBuf,
        /// Key file: one key per line (`192.0.2.7 . 1500`).
        #[arg(long)]
        keys: PathBuf,
        /// Elements to delete after loading, before the lookups.
        #[arg(long)]
        delete: Option<PathBuf>,
        /// Lookup implementation: scalar, avx2 or avx512 (default:
        /// MATCHER_IMPL, else the fastest this CPU runs).
        #[arg(long = "impl")]
        imp: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Lookup {
            set,
            keys,
            delete,
            imp,
        } => forwarder::lookup::run(
            &set,
            &keys,
            delete.as_deref(),
            imp.as_deref(),
            &mut std::io::stdout().lock(),
        ),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
