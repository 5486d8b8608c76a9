//! The forwarder's binary as the tests run it: a command, a process that
//! is killed if the test fails before stopping it, its JSON answers.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The binary this build made.
pub fn forwarder() -> Command {
    Command::new(env!("CARGO_BIN_EXE_forwarder"))
}

/// A forwarder process, killed when dropped (a test that fails before
/// stopping it leaves nothing behind).
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What `forwarder ARGS --config CFG` prints on standard output, as
/// JSON; it must succeed.
pub fn json(args: &[&str], cfg: &Path) -> serde_json::Value {
    let o = forwarder()
        .args(args)
        .arg("--config")
        .arg(cfg)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: {e}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// `forwarder stats` of the instance run with `cfg`.
pub fn stats(cfg: &Path) -> serde_json::Value {
    json(&["stats"], cfg)
}

/// The forwarder, started in namespace `ns`; returns once its ports are
/// open (it prints its first line after opening them).
pub fn start_forwarder(
    ns: &str,
    cfg: &Path,
    as_user: Option<&Path>,
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

/// `forwarder run` on `cfg` (synthetic ports: no namespace), returned
/// once it serves its control socket (its second line).
pub fn run_local(cfg: &Path) -> Running {
    let (child, _log, mut stdout) = run_logged(cfg, &[]);
    for _ in 0..2 {
        let mut l = String::new();
        stdout.read_line(&mut l).unwrap();
    }
    drain(stdout);
    child
}

/// `forwarder run ARGS --config CFG` for a minute at most: the process,
/// its standard error a line at a time, and its standard output to read
/// from (the caller reads what it needs, then [`drain`]s it).
pub fn run_logged(
    cfg: &Path,
    args: &[&str],
) -> (
    Running,
    mpsc::Receiver<String>,
    BufReader<std::process::ChildStdout>,
) {
    let mut child = Running(
        forwarder()
            .args(["run", "--duration", "60s"])
            .args(args)
            .arg("--config")
            .arg(cfg)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (tx, log) = mpsc::channel();
    let stderr = child.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let stdout = BufReader::new(child.0.stdout.take().unwrap());
    (child, log, stdout)
}

/// Reads `r` to its end on a thread of its own (a process whose output
/// nobody reads would block on a full pipe).
pub fn drain(mut r: impl std::io::Read + Send + 'static) {
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = r.read_to_end(&mut sink);
    });
}
