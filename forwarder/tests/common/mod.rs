//! What the namespace tests share: commands, entering a namespace, the
//! forwarder binary started in one.
#![allow(dead_code)]

use std::io::BufRead;
use std::io::BufReader;
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub fn mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

pub fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Runs `f` on a thread that has entered network namespace `ns`: the
/// sockets it opens live there.
pub fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on a namespace file we hold open; it changes only
        // this thread's network namespace.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
}

/// The forwarder, started in namespace `ns`; returns once its ports are
/// open (it prints its first line after opening them).
pub fn start_forwarder(
    ns: &str,
    cfg: &std::path::Path,
    as_user: Option<&std::path::Path>,
) -> (Child, mpsc::Receiver<String>) {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]);
    match as_user {
        None => {
            cmd.arg(env!("CARGO_BIN_EXE_forwarder"));
        }
        // An unprivileged user (nobody) with CAP_NET_RAW alone, as the
        // systemd unit runs it for af_packet ports: `bin` is a copy of the
        // binary that user may execute.
        Some(bin) => {
            cmd.args([
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--inh-caps=-all,+net_raw",
                "--ambient-caps=-all,+net_raw",
                "--bounding-set=-all,+net_raw",
            ])
            .arg(bin)
            .env_remove("XDG_RUNTIME_DIR");
        }
    }
    let mut child = cmd
        .arg("run")
        .arg("--config")
        .arg(cfg)
        .args(["--duration", "120s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the forwarder");
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx2.send(format!("stderr: {l}"));
        }
    });
    // The first line on standard output; what DPDK's EAL logs on
    // standard error comes before it.
    let mut said = Vec::new();
    loop {
        let l = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                panic!(
                    "the forwarder did not start; exit {:?}; it said:\n{}",
                    child.try_wait(),
                    said.join("\n")
                )
            });
        if l.starts_with("stderr: ") {
            said.push(l);
            continue;
        }
        assert!(
            l.starts_with("forwarder:"),
            "the forwarder failed to start: {l}\n{}",
            said.join("\n")
        );
        break;
    }
    (child, rx)
}

/// Kills the forwarder if the test fails before stopping it.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether `.ci/run` asked for the namespace tests (then a skip is a
/// failure).
pub fn wanted() -> bool {
    std::env::var("FORWARDER_NETNS_TESTS").is_ok_and(|v| v == "1")
}

/// `ip -n NS REST...`.
pub fn ipn(ns: &str, rest: &str) -> Result<(), String> {
    let mut a = vec!["ip", "-n", ns];
    a.extend(rest.split_whitespace());
    run(&a)
}

/// `sysctl -qw KV` in namespace `ns`.
pub fn sysctl(ns: &str, kv: &str) -> Result<(), String> {
    run(&["ip", "netns", "exec", ns, "sysctl", "-qw", kv])
}
