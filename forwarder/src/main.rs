//! The `forwarder` command.

use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "forwarder",
    version,
    about = "User-space packet forwarder",
    after_help = "--config (-c) goes before or after the command; without it, a command reads \
                  $FORWARDER_CONFIG, else examples/forwarder.toml under the working directory if \
                  there is one (a checkout), else /etc/forwarder/forwarder.toml (an installed \
                  forwarder). `capture -c N` is tcpdump's count: there, --config."
)]
struct Cli {
    /// The configuration file, for any command (a command's own
    /// `--config` wins); else $FORWARDER_CONFIG.
    #[arg(long, short = 'c', env = "FORWARDER_CONFIG", value_name = "CONFIG")]
    config: Option<PathBuf>,
    /// The running forwarder's control socket, instead of the one the
    /// configuration names (for the commands that talk to it).
    #[arg(long, global = true, env = "FORWARDER_SOCKET", value_name = "PATH")]
    socket: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Forward packets; print rates once a second and a summary at the end
    ///
    /// Workers on the configured cores, the control socket, the router's
    /// slow path and the kernel mirror, until `--duration` is over or
    /// Ctrl-C.
    Run {
        /// The configuration file.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        /// Stop after this long (`10s`, `500ms`, `2m`); default: Ctrl-C.
        #[arg(long, value_parser = parse_duration)]
        duration: Option<std::time::Duration>,
        /// Run only part of the pipeline, to measure a stage: `io` (receive
        /// and send out of the first port, frames untouched), `mac` (MACs
        /// set to the first next hop's, nothing parsed), `rewrite` (parse,
        /// MAC/TTL rewrite towards the first next hop), `route`
        /// (+ routing, no rule sets), `full` (default).
        #[arg(long, default_value = "full", value_parser = parse_mode)]
        mode: forwarder::pipeline::Mode,
        /// The log on standard error: `text` (`forwarder: LEVEL:
        /// message`) or `json` (one object a line: `ts`, `level`, `msg`,
        /// and the event's fields: `event`, `generation`, `file`, `line`,
        /// ...).
        #[arg(long, default_value = "text", value_parser = ["text", "json"])]
        log_format: String,
    },
    /// Make the running forwarder reload its configuration now
    ///
    /// It also reloads on SIGHUP and when its files change. A refused
    /// reload changes nothing: the tables in force stay.
    Reload {
        /// The configuration file the forwarder was started with.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        /// Check the configuration first (as `forwarder check`) and, if it
        /// has problems, print them and ask nothing of the forwarder.
        #[arg(long)]
        check: bool,
        /// Print what the reload changes (sets rebuilt, elements added and
        /// removed, routes, next hops, ECMP groups; with their lines),
        /// worked out from the very configuration it then applies.
        #[arg(long)]
        diff: bool,
        /// Print the answer as JSON on standard output, a refusal too
        /// (`result`, `error`, `errors` placed as `check --json` places
        /// them; exit 1); with `--diff`, the diff inside.
        #[arg(long)]
        json: bool,
    },
    /// Check a configuration without running it
    ///
    /// As `run` would read it (the TOML, every set and route file,
    /// drivers, interfaces, cores, the tables built) without opening a
    /// port or touching a running forwarder: a summary and exit 0, or
    /// every problem as `file:line:col: message` and exit 1.
    Check {
        /// The configuration file.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        /// Print JSON (`ok`, and `errors` or the summary's figures).
        #[arg(long)]
        json: bool,
        /// Check it for another host: everything but this host's
        /// interfaces and cores (the ports' drivers, files, sets, routes
        /// and tables all the same).
        #[arg(long, conflicts_with = "diff")]
        offline: bool,
        /// Also print what a reload of it would change in the running
        /// forwarder (applying nothing).
        #[arg(long)]
        diff: bool,
        /// With `--diff`: the configuration the running forwarder was
        /// started with (default: `--config` itself, edited since).
        #[arg(long, requires = "diff")]
        against: Option<PathBuf>,
    },
    /// Print the running forwarder's counters (JSON), or its rates
    ///
    /// One JSON object; `--watch` prints the rates once a second, as
    /// `run` does.
    Stats {
        /// The configuration file the forwarder was started with.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        /// Print rates once a second, as `run` does.
        #[arg(long)]
        watch: bool,
        /// With `--watch`: stop after this many seconds.
        #[arg(long)]
        count: Option<u64>,
    },
    /// Print the running forwarder's neighbour table (JSON)
    ///
    /// ARP and neighbour discovery: each neighbour's address, port, MAC
    /// and state.
    Neighbours {
        /// The configuration file the forwarder was started with.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
    },
    /// Explain what the pipeline does to a packet, stage by stage
    ///
    /// In the order the pipeline runs (the port's filter, the parse, the
    /// flow cache, each set, the route, the ECMP member, the next hop and
    /// its neighbour, the rewrite, the fate), against the running
    /// forwarder's tables (`--offline`: the file's; `--candidate`: also a
    /// new file's, with what changes), or `--live` the next packets of a
    /// port.
    Trace(forwarder::cmd::trace::Args),
    /// Capture the running forwarder's frames as pcapng
    ///
    /// Received, sent, and those not forwarded with why (tcpdump, tshark
    /// and Wireshark read it); copied on the workers into bounded rings
    /// (a full ring loses the copy, counted and reported, never a
    /// packet). `-w -` writes to standard output: `forwarder capture
    /// --port wan -w - | tcpdump -r - -n`.
    Capture(forwarder::cmd::capture::Args),
    /// Show the running forwarder's routes: `get ADDR`, `list`
    ///
    /// `route get ADDR` (as `ip route get`) and `route list [PREFIX]
    /// [--origin KIND]` (as `ip route show`), each route with where it
    /// came from.
    Route {
        #[command(subcommand)]
        cmd: forwarder::cmd::route::Cmd,
    },
    /// List, count or flush the running forwarder's tracked connections
    ///
    /// As `conntrack -L`, `-C` and `-F` (with `[conntrack] enabled =
    /// true`).
    Conntrack {
        #[command(subcommand)]
        cmd: forwarder::cmd::conntrack::Cmd,
    },
    /// Add, delete or list a set's elements in the running forwarder
    ///
    /// As `nft add|delete element` and `nft list set`: in force at once,
    /// kept across reloads, dropped at restart.
    Element {
        #[command(subcommand)]
        cmd: ElementCmd,
    },
    /// Print the shell completion script for bash, zsh, fish, elvish or
    /// powershell
    ///
    /// `forwarder completions bash > /etc/bash_completion.d/forwarder`;
    /// `dist/completions/` holds them ready-made.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the manual pages (roff): forwarder(1) and one a command
    ///
    /// Into `--dir` (`forwarder.1`, `forwarder-run.1`, ...), or the main
    /// page to standard output; `dist/man/` holds them ready-made.
    Man {
        /// The directory to write them into.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Classify keys from a file against a set file, without packets
    ///
    /// Prints the element each key matches, or `nomatch`; or, with
    /// `--classbench RULES --trace TRACE`, a ClassBench rule set as a
    /// first-match set and the matching rule's number (0-based line) per
    /// trace header.
    Lookup {
        /// Set file: a `type ...` line, then one element per line.
        #[arg(
            long,
            required_unless_present = "classbench",
            conflicts_with = "classbench"
        )]
        set: Option<PathBuf>,
        /// Key file: one key per line (`192.0.2.7 . 1500`).
        #[arg(
            long,
            required_unless_present = "classbench",
            conflicts_with = "classbench"
        )]
        keys: Option<PathBuf>,
        /// ClassBench rule file (`@SRC/LEN DST/LEN SP : SP DP : DP
        /// PROTO/MASK FLAGS/MASK`, flags ignored as rte_acl's test does).
        #[arg(long, requires = "trace", conflicts_with = "delete")]
        classbench: Option<PathBuf>,
        /// ClassBench trace file (`SRC DST SPORT DPORT PROTO ...`).
        #[arg(long, requires = "classbench")]
        trace: Option<PathBuf>,
        /// Elements to delete after loading, before the lookups.
        #[arg(long)]
        delete: Option<PathBuf>,
        /// Lookup implementation: scalar, avx2 or avx512 (default:
        /// MATCHER_IMPL, else the fastest this CPU runs).
        #[arg(long = "impl")]
        imp: Option<String>,
        /// Print each answer after its key: `KEY -> ELEMENT` (or
        /// `-> nomatch`).
        #[arg(long)]
        with_keys: bool,
    },
}

#[derive(Subcommand)]
enum ElementCmd {
    /// Add elements (all or none)
    ///
    /// `forwarder element add blocklist '192.0.2.7 . 22'`.
    Add(ElementArgs),
    /// Delete elements by their exact key (all or none)
    Delete(ElementArgs),
    /// Print the set's elements in force, as `nft -n list set` does
    List {
        /// The configuration file the forwarder was started with.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        /// The set's name.
        set: String,
    },
    /// Set the element counters of a set (`counter = true`), or of every
    /// set, back to zero, as `nft reset set` and `nft reset counters`
    Reset {
        /// The configuration file the forwarder was started with.
        #[arg(long, short = 'c')]
        config: Option<PathBuf>,
        /// The set's name (none: every counted set).
        set: Option<String>,
    },
}

#[derive(clap::Args)]
struct ElementArgs {
    /// The configuration file the forwarder was started with.
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// The set's name.
    set: String,
    /// Elements in the set file's syntax (`192.0.2.0/24 . 22`).
    elements: Vec<String>,
    /// Also the elements of this file, one a line (`-`: standard input).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Print the answer as JSON on standard output, a refusal too
    /// (`result`, `error`, `errors`; exit 1).
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let out = &mut std::io::stdout().lock();
    let global = cli.config.clone();
    if let Some(s) = cli.socket.clone() {
        forwarder::cmd::set_socket(s);
    }
    let conf = |c: Option<PathBuf>| {
        c.or_else(|| global.clone())
            .unwrap_or_else(forwarder::cmd::default_config)
    };
    let r = match cli.cmd {
        Cmd::Run {
            config,
            duration,
            mode,
            log_format,
        } => {
            if let Some(s) = &cli.socket {
                return report(Err(format!(
                    "--socket {}: `run` listens where its configuration says ([control] socket); \
                     --socket is for the commands that talk to a running forwarder",
                    s.display()
                )));
            }
            forwarder::log::set_json(log_format == "json");
            forwarder::cmd::run::run_mode(&conf(config), duration, mode, out)
        }
        Cmd::Check {
            config,
            json,
            offline,
            diff,
            against,
        } => {
            use forwarder::cmd::check::Host;
            let config = conf(config);
            let host = if offline { Host::Other } else { Host::This };
            return match forwarder::cmd::check::run(&config, host, json, out) {
                Ok(true) if diff => {
                    let against = against.unwrap_or_else(|| config.clone());
                    report(forwarder::cmd::client::diff(&config, &against, json, out))
                }
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => report(Err(e)),
            };
        }
        Cmd::Reload {
            config,
            check,
            diff,
            json,
        } => {
            let config = conf(config);
            if check {
                if let Err(errs) =
                    forwarder::cmd::check::check(&config, forwarder::cmd::check::Host::This)
                {
                    let e = format!(
                        "{}\nnot reloaded: the configuration has the problems above",
                        errs.join("\n")
                    );
                    return report(forwarder::cmd::client::failed_as_json(Err(e), json, out));
                }
            }
            let r = if diff {
                forwarder::cmd::client::reload_diff(&config, json, out)
            } else {
                forwarder::cmd::client::reload(&config, json, out)
            };
            forwarder::cmd::client::failed_as_json(r, json, out)
        }
        Cmd::Stats {
            config,
            watch,
            count,
        } => forwarder::cmd::client::stats(&conf(config), watch, count, out),
        Cmd::Capture(a) => forwarder::cmd::capture::run(&conf(a.config.clone()), &a),
        Cmd::Route { cmd } => {
            let json = cmd.json();
            let r = forwarder::cmd::route::run(cmd, conf, out);
            forwarder::cmd::client::failed_as_json(r, json, out)
        }
        Cmd::Conntrack { cmd } => {
            let json = cmd.json();
            let r = forwarder::cmd::conntrack::run(cmd, conf, out);
            forwarder::cmd::client::failed_as_json(r, json, out)
        }
        Cmd::Trace(a) => {
            let r = forwarder::cmd::trace::run(&conf(a.config.clone()), &a, out);
            forwarder::cmd::client::failed_as_json(r, a.json, out)
        }
        Cmd::Neighbours { config } => forwarder::cmd::client::neighbours(&conf(config), out),
        Cmd::Element { cmd } => {
            use forwarder::control::ElementOp;
            let (op, a) = match cmd {
                ElementCmd::Add(a) => (ElementOp::Add, a),
                ElementCmd::Delete(a) => (ElementOp::Delete, a),
                ElementCmd::List { config, set } => {
                    return report(forwarder::cmd::client::list(&conf(config), &set, out));
                }
                ElementCmd::Reset { config, set } => {
                    return report(forwarder::cmd::client::reset(
                        &conf(config),
                        set.as_deref(),
                        out,
                    ));
                }
            };
            let r = forwarder::cmd::client::element(
                &conf(a.config),
                op,
                &a.set,
                a.elements,
                a.file.as_deref(),
                a.json,
                out,
            );
            forwarder::cmd::client::failed_as_json(r, a.json, out)
        }
        Cmd::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "forwarder", out);
            Ok(())
        }
        Cmd::Man { dir } => man(dir.as_deref(), out),
        Cmd::Lookup {
            set,
            keys,
            classbench,
            trace,
            delete,
            imp,
            with_keys,
        } => match (classbench, trace, set, keys) {
            (Some(rules), Some(trace), _, _) => {
                forwarder::cmd::lookup::classbench(&rules, &trace, imp.as_deref(), out)
            }
            (_, _, Some(set), Some(keys)) => {
                let files = (set.as_path(), keys.as_path(), delete.as_deref());
                forwarder::cmd::lookup::run(files, imp.as_deref(), with_keys, out)
            }
            _ => Err("error: lookup needs --set and --keys, or --classbench and --trace".into()),
        },
    };
    report(r)
}

/// `forwarder man`: forwarder(1) to `out`, or it and a page a command
/// (`forwarder-run.1`, `forwarder-route-get.1`, ...) into `dir`.
fn man(dir: Option<&std::path::Path>, out: &mut dyn std::io::Write) -> Result<(), String> {
    let mut cmd = Cli::command();
    cmd.build();
    let Some(dir) = dir else {
        return clap_mangen::Man::new(cmd)
            .render(out)
            .map_err(|e| e.to_string());
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // A page each, named by its path of commands; clap's `help` is left
    // out (the pages are the help).
    let mut pages = vec![("forwarder".to_string(), cmd)];
    let mut i = 0;
    while i < pages.len() {
        let (name, cmd) = pages[i].clone();
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let full = format!("{name}-{}", sub.get_name());
            pages.push((full.clone(), sub.clone().name(full)));
        }
        i += 1;
    }
    for (name, cmd) in pages {
        let path = dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut buf)
            .map_err(|e| e.to_string())?;
        std::fs::write(&path, buf).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// The exit code of a subcommand's result; an error is printed (unless
/// the command said it already, as JSON).
fn report(r: Result<(), String>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e == forwarder::cmd::client::SAID => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_mode(s: &str) -> Result<forwarder::pipeline::Mode, String> {
    forwarder::pipeline::Mode::parse(s)
        .ok_or_else(|| format!("`{s}`: io, mac, rewrite, route or full"))
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let (n, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|i| s.split_at(i))
        .unwrap_or((s, "s"));
    let v: f64 = n
        .parse()
        .map_err(|_| format!("`{s}` is not a duration such as 10s"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" | "" => v,
        "m" => v * 60.0,
        _ => return Err(format!("`{s}`: unknown unit `{unit}` (ms, s, m)")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{s}` is not a duration"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}
