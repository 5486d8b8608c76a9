//! `forwarder run` end to end on synthetic ports: it forwards, every frame
//! that comes out passes the port's own check (TTL decremented once, our
//! MAC as source), rule drops are counted, and a bad configuration is
//! refused with its location.

mod common;

use common::*;

/// The text of `examples/NAME`.
fn example(name: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join("examples").join(name)).unwrap()
}

/// A fresh directory for test `name`, and `examples/forwarder.toml`'s
/// text with its set files named by absolute path (so that it runs from
/// that directory).
fn example_elsewhere(name: &str) -> (std::path::PathBuf, String) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::temp_dir().join(format!("fwd-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = example("forwarder.toml")
        .replace("\"sets/", &format!("\"{}/examples/sets/", root.display()));
    (dir, text)
}

/// Writes `text` to `cfg`, runs `forwarder run` on it, expects it to be
/// refused, and returns what it said on standard error.
fn refused(cfg: &std::path::Path, text: &str) -> String {
    std::fs::write(cfg, text).unwrap();
    let o = forwarder()
        .args(["run", "--duration", "1s", "--config"])
        .arg(cfg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `forwarder run` on `cfg` for a second, expects it to succeed,
/// and returns what it printed.
fn ran(cfg: &std::path::Path) -> String {
    let o = forwarder()
        .args(["run", "--duration", "1s", "--config"])
        .arg(cfg)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn runs_forwards_and_verifies() {
    let dir = std::env::temp_dir().join(format!("fwd-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("f.toml");
    std::fs::write(
        &cfg,
        r#"
route = [{ prefix = "0.0.0.0/0", via = "gw" }, { prefix = "::/0", via = "gw" }]
[forwarder]
cores = [0, 1]
[[port]]
name = "p0"
mac = "02:00:00:00:00:01"
[port.options]
flows = 256
verify = 1
set_hit_percent = 25
[[set]]
name = "s"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["0.0.0.0/1 . 0-32767", "128.0.0.0/1 . 0-32767"]
[[next_hop]]
name = "gw"
port = "p0"
mac = "02:00:00:00:00:99"
"#,
    )
    .unwrap();
    let out = ran(&cfg);
    assert!(out.contains("core 0:") && out.contains("core 1:"), "{out}");
    assert!(
        out.contains("sent frames the synthetic port's self-check found wrong (TTL or MACs): 0"),
        "{out}"
    );
    // Rates say their unit, drops too.
    assert!(
        out.lines().any(|l| l.starts_with("  total: rx")
            && l.contains(" Mpps  drops rule ")
            && l.ends_with(" Mpps")),
        "{out}"
    );
    let total = out
        .lines()
        .find(|l| l.starts_with("  total: rx") && l.contains("forwarded"))
        .unwrap();
    // Counts with thousands separators; rates per port, in packets and
    // bits.
    let tx: u64 = total
        .split_whitespace()
        .nth(4)
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap();
    assert!(tx > 10_000, "{total}");
    assert!(
        total.split_whitespace().nth(4).unwrap().contains(','),
        "{total}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("  port p0: rx ") && l.contains(" Gbit/s  tx ")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("    port p0: rx ") && l.contains(", bytes rx ")),
        "{out}"
    );
    assert!(total.contains("drops: rule"), "{total}");
    // A broken configuration: nothing runs, the error says where.
    std::fs::write(&cfg, "[forwarder]\ncores = [0]\nburst = 0\n").unwrap();
    let o = forwarder()
        .args(["run", "--duration", "1s", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("f.toml:3:9: burst 0 is outside 1-64"), "{err}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_readme_default_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let o = forwarder()
        .current_dir(&root)
        .args(["run", "--duration", "1s"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("Mpps forwarded"), "{out}");
}

/// The once-a-second lines name the core each worker is pinned to, as
/// the summary does: a single worker on core 1 is "core 1", not "core 0"
/// (its index).
#[test]
fn rate_lines_name_the_workers_core() {
    let (dir, text) = example_elsewhere("core");
    let cfg = dir.join("c.toml");
    let text = text.replace("cores = [0]", "cores = [1]");
    assert!(text.contains("cores = [1]"));
    std::fs::write(&cfg, text).unwrap();
    let out = ran(&cfg);
    // One worker: its core's line would repeat the total; the total
    // names the core instead.
    let rates: Vec<&str> = out.lines().filter(|l| l.contains("Mpps  tx")).collect();
    assert!(!rates.is_empty(), "{out}");
    assert!(
        rates.iter().all(|l| l.starts_with("  total (core 1): rx")),
        "{out}"
    );
    assert!(
        out.contains("  core 1: rx ") && !out.contains("  core 0:"),
        "{out}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// The threads beside the workers keep off their cores: with the worker
/// on core 1, the control and router threads are pinned to core 0 (the
/// router thread left to the scheduler could share a polling worker's
/// core and serve punts a slice of milliseconds late).
#[test]
fn the_slow_path_and_control_keep_off_the_workers_core() {
    let allowed: Vec<usize> = core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect();
    if !allowed.contains(&0) || !allowed.contains(&1) {
        eprintln!("skipped: this process may not run on cores 0 and 1 ({allowed:?})");
        return;
    }
    let (dir, text) = example_elsewhere("pinned");
    let cfg = dir.join("p.toml");
    std::fs::write(&cfg, text.replace("cores = [0]", "cores = [1]")).unwrap();
    let child = run_local(&cfg);
    let tasks = format!("/proc/{}/task", child.0.id());
    // A thread's name and the cores it may run on.
    let threads = || -> Vec<(String, String)> {
        let Ok(dir) = std::fs::read_dir(&tasks) else {
            return Vec::new();
        };
        dir.filter_map(|t| {
            let t = t.ok()?.path();
            let comm = std::fs::read_to_string(t.join("comm")).ok()?;
            let status = std::fs::read_to_string(t.join("status")).ok()?;
            let cpus = status
                .lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
            Some((comm.trim().to_string(), cpus.trim().to_string()))
        })
        .collect()
    };
    // Each thread pins itself as it starts: looked at until they have.
    let start = std::time::Instant::now();
    let mut seen = threads();
    while ["router", "control"]
        .iter()
        .any(|n| !seen.iter().any(|(c, cpus)| c == n && cpus == "0"))
        && start.elapsed() < std::time::Duration::from_secs(5)
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
        seen = threads();
    }
    for name in ["router", "control"] {
        assert!(
            seen.iter().any(|(c, cpus)| c == name && cpus == "0"),
            "{name} not on core 0 alone: {seen:?}"
        );
    }
    drop(child);
    std::fs::remove_dir_all(dir).ok();
}

/// `--config` (or `-c`) before or after the command, or
/// `$FORWARDER_CONFIG`; a command's own wins over the others.
#[test]
fn the_configuration_is_found_every_way() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let good = root.join("examples/forwarder.toml");
    let good = good.to_str().unwrap();
    let checked = |args: &[&str], env: Option<&str>| {
        let mut c = forwarder();
        c.args(args).current_dir("/");
        if let Some(e) = env {
            c.env("FORWARDER_CONFIG", e);
        }
        let o = c.output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (v["ok"].as_bool(), v["config"].as_str().map(str::to_string))
    };
    let ok = (Some(true), Some(good.to_string()));
    assert_eq!(checked(&["--config", good, "check", "--json"], None), ok);
    assert_eq!(checked(&["-c", good, "check", "--json"], None), ok);
    assert_eq!(checked(&["check", "-c", good, "--json"], None), ok);
    assert_eq!(checked(&["check", "--json"], Some(good)), ok);
    assert_eq!(
        checked(&["check", "--json", "-c", good], Some("/nonexistent.toml")),
        ok
    );
    let (_, said) = checked(&["check", "--json"], Some("/nonexistent.toml"));
    assert_eq!(said.as_deref(), Some("/nonexistent.toml"));
}

/// A client given a configuration file that is not there says so, not
/// which socket it could not reach (its name comes from the file).
#[test]
fn clients_name_a_missing_configuration() {
    for args in [
        &["stats"][..],
        &["reload"],
        &["neighbours"],
        &["route", "get", "192.0.2.1"],
    ] {
        let o = forwarder()
            .args(args)
            .args(["--config", "/nonexistent/nope.toml"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(
            err.contains("/nonexistent/nope.toml: No such file or directory"),
            "{args:?}: {err}"
        );
    }
    // Asked for JSON, the failure is JSON, on standard output.
    for args in [
        &["reload", "--json"][..],
        &["element", "add", "s", "192.0.2.1", "--json"],
        &["route", "get", "192.0.2.1", "--json"],
        &["route", "list", "--json"],
        &["trace", "--packet", "ip daddr 192.0.2.1", "--json"],
    ] {
        let o = forwarder()
            .args(args)
            .args(["--config", "/nonexistent/nope.toml"])
            .output()
            .unwrap();
        assert!(
            !o.status.success() && o.stderr.is_empty(),
            "{args:?}: {o:?}"
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["result"], "error", "{args:?}");
        assert!(
            v["errors"][0]["message"]
                .as_str()
                .is_some_and(|e| e.contains("/nonexistent/nope.toml")),
            "{args:?}: {v}"
        );
    }
}

/// A second forwarder started on a core the first one polls says so,
/// naming the first (its pid and configuration), and still runs.
#[test]
fn a_core_polled_twice_is_said() {
    let (dir, text) = example_elsewhere("twice");
    let run = dir.join("run");
    let (a, b) = (dir.join("a.toml"), dir.join("b.toml"));
    std::fs::write(&a, &text).unwrap();
    std::fs::write(&b, &text).unwrap();
    let mut first = forwarder()
        .env("RUNTIME_DIRECTORY", &run)
        .args(["run", "--duration", "4s", "--config"])
        .arg(&a)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = run.join("core-0.lock");
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.starts_with(&first.id().to_string())) {
        assert!(
            start.elapsed().as_secs() < 10,
            "the first never claimed core 0"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = forwarder()
        .env("RUNTIME_DIRECTORY", &run)
        .args(["run", "--duration", "1s", "--config"])
        .arg(&b)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let said = format!(
        "core 0 is already polled by another forwarder's worker (pid {}, {})",
        first.id(),
        a.display()
    );
    assert!(err.contains(&said), "{err}");
    first.wait().unwrap();
    std::fs::remove_dir_all(dir).ok();
}

/// `examples/linux.toml` loads; a bad option is refused as the file loads,
/// naming the value's place; an interface this namespace lacks is an
/// error naming where the port is declared.
#[test]
fn af_packet_ports_report_where() {
    let text = example("linux.toml");
    let dir = std::env::temp_dir().join(format!("fwd-afp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("l.toml");
    let run = |text: &str| refused(&cfg, text);
    let line = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    // The interface names no interface here (names longer than any the
    // test machine has); without root the socket is refused first.
    let missing = text.replace("\"eth1\"", "\"fwdt-none0\"");
    let err = run(&missing);
    let at = format!(
        "l.toml:{}:8: port `wan` on interface `fwdt-none0`: ",
        line("name = \"wan\"")
    );
    assert!(err.contains(&at), "{err}");
    assert!(
        err.contains("no such interface") || err.contains("CAP_NET_RAW"),
        "{err}"
    );
    let bad = text.replace("ring_frames = 4096", "ring_frames = 3");
    let err = run(&bad);
    assert!(
        err.contains(&format!(
            "l.toml:{}:15: port `wan`: option `ring_frames` must be an integer from 64 to 1048576",
            line("ring_frames = 4096")
        )),
        "{err}"
    );
    let bad = text.replace("fanout = \"hash\"", "fanout = \"rr\"\nspeed = 1");
    let err = run(&bad);
    assert!(err.contains("port `wan`: option `fanout` must be"), "{err}");
    let bad = text.replace("fanout = \"hash\"", "spede = 1");
    assert!(run(&bad).contains("unknown option `spede` for the af_packet driver"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn af_xdp_ports_report_where() {
    let text = example("af_xdp.toml");
    let dir = std::env::temp_dir().join(format!("fwd-afx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("x.toml");
    let run = |text: &str| refused(&cfg, text);
    let at = text
        .lines()
        .position(|l| l.contains("name = \"wan\""))
        .unwrap()
        + 1;
    let missing = text.replace("\"eth1\"", "\"fwdt-none0\"");
    let err = run(&missing);
    assert!(
        err.contains(&format!(
            "x.toml:{at}:8: port `wan` on interface `fwdt-none0` (af_xdp, queue 0): "
        )),
        "{err}"
    );
    assert!(
        err.contains("no such interface") || err.contains("needs root"),
        "{err}"
    );
    let bad = text.replace("frames = 4096", "frames = 3000");
    let frames_at = text
        .lines()
        .position(|l| l.contains("frames = 4096"))
        .unwrap()
        + 1;
    assert!(
        run(&bad).contains(&format!(
            "x.toml:{frames_at}:10: port `wan`: option `frames` must be a power of two from 64 to 65536"
        )),
        "{}",
        run(&bad)
    );
    let bad = text.replace("xdp_mode = \"auto\"", "xdp_mode = \"hw\"");
    assert!(run(&bad).contains("option `xdp_mode` must be `native`, `skb` or `auto`"));
    let bad = text.replace("zero_copy = \"auto\"", "ring_frames = 1");
    assert!(run(&bad).contains("unknown option `ring_frames` for the af_xdp driver"));
    std::fs::remove_dir_all(dir).ok();
}

/// What the configuration's syntax cannot show is checked before anything
/// starts: a core this process cannot be pinned to, no ports, no routes,
/// more sets than the flow cache records. Each names its place.
#[test]
fn unusable_configurations_are_refused_before_starting() {
    let (dir, text) = example_elsewhere("pre");
    let cfg = dir.join("p.toml");
    let cores_line = text
        .lines()
        .position(|l| l.starts_with("cores = [0]"))
        .unwrap()
        + 1;
    let err = refused(&cfg, &text.replacen("cores = [0]", "cores = [4095]", 1));
    assert!(
        err.contains(&format!(
            "p.toml:{cores_line}:9: core 4095 cannot be pinned: it does not exist, is offline or is outside this process's CPU affinity"
        )),
        "{err}"
    );
    let err = refused(&cfg, "");
    assert!(
        err.contains("p.toml: no [[port]]: nothing to receive from or send to"),
        "{err}"
    );
    let err = refused(&cfg, "[[port]]\nname = \"p0\"\n");
    assert!(
        err.contains("p.toml: no routes ([[route]], route_file, port addresses or [routes] source = \"kernel\")"),
        "{err}"
    );
    let mut many = String::from("[[port]]\nname = \"p0\"\n");
    for i in 0..17 {
        many.push_str(&format!(
            "[[set]]\nname = \"s{i}\"\ntype = \"inet_service\"\nmatch = \"th dport\"\naction = \"drop\"\n"
        ));
    }
    let err = refused(&cfg, &many);
    assert!(
        err.contains(
            "p.toml:84:8: set `s16`: the flow cache records the matches of at most 16 rule sets"
        ),
        "{err}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// The summary says what each rule set did in words, as the rate lines
/// name drop reasons.
#[test]
fn the_summary_reads_set_matches_in_words() {
    let (dir, text) = example_elsewhere("sum");
    let cfg = dir.join("s.toml");
    std::fs::write(&cfg, text).unwrap();
    let out = ran(&cfg);
    let line = out
        .lines()
        .find(|l| l.starts_with("    set blocklist: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.ends_with(" dropped"), "{line}");
    let n: u64 = line["    set blocklist: ".len()..line.len() - " dropped".len()]
        .replace(',', "")
        .parse()
        .unwrap();
    assert!(n > 1000, "{line}");
    assert!(!out.contains("set matches [["), "{out}");
    std::fs::remove_dir_all(dir).ok();
}

/// `forwarder check`: a good configuration gives a summary and exit 0
/// (text and JSON), opening nothing; a bad one every problem at its
/// place and exit 1; `reload --check` refuses a bad configuration
/// without asking any forwarder; without `--config` and outside a
/// checkout, the installed configuration is the one read.
#[test]
fn check_reports_everything_and_opens_nothing() {
    let (dir, text) = example_elsewhere("check");
    let cfg = dir.join("c.toml");
    std::fs::write(&cfg, &text).unwrap();
    let check = |args: &[&str]| {
        let o = forwarder()
            .arg("check")
            .args(args)
            .arg("--config")
            .arg(&cfg)
            .current_dir(&dir)
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    let (ok, out) = check(&[]);
    assert!(ok, "{out}");
    assert!(
        out.starts_with(&format!(
            "{}: ok: 2 sets: `blocklist` (1024 elements)",
            cfg.display()
        )),
        "{out}"
    );
    assert!(out.contains("304 IPv4 and 41 IPv6 routes"), "{out}");
    let (ok, out) = check(&["--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["routes"]["ipv6"], 41);
    assert!(v["table_bytes"].as_u64().unwrap() > 1 << 20);

    // Two problems at once: a core that cannot be pinned, an interface
    // that is not here.
    let line = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let bad = text.replacen("cores = [0]", "cores = [4095]", 1)
        + "[[port]]\nname = \"lan\"\ndriver = \"af_packet\"\n[port.options]\ninterface = \"fwdt-none0\"\n";
    std::fs::write(&cfg, &bad).unwrap();
    let lan = bad
        .lines()
        .position(|l| l.contains("name = \"lan\""))
        .unwrap()
        + 1;
    let (ok, out) = check(&[]);
    assert!(!ok);
    let name = cfg.display();
    assert!(
        out.contains(&format!(
            "{name}:{}:9: core 4095 cannot be pinned",
            line("cores = [0]")
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{name}:{lan}:8: port `lan` on interface `fwdt-none0`: no such interface"
        )),
        "{out}"
    );
    let (ok, out) = check(&["--json"]);
    assert!(!ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["errors"].as_array().unwrap().len(), 2, "{out}");
    // Checked for another host: the rest is good, and it says what it
    // left out.
    let (ok, out) = check(&["--offline"]);
    assert!(ok, "{out}");
    assert!(
        out.trim_end()
            .ends_with("(offline: interfaces and cores not checked)"),
        "{out}"
    );
    let (ok, out) = check(&["--offline", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(ok && v["offline"] == true && v["cores"][0] == 4095, "{out}");
    // ... but not what another host would refuse just the same.
    std::fs::write(&cfg, bad.replacen("burst = 64", "burst = 99", 1)).unwrap();
    let (ok, out) = check(&["--offline"]);
    assert!(!ok && out.contains("burst 99"), "{out}");
    std::fs::write(&cfg, &bad).unwrap();

    // Not TOML: that error, with its place.
    std::fs::write(&cfg, text.replacen("cores = [0]", "cores = [0", 1)).unwrap();
    let (ok, out) = check(&[]);
    assert!(!ok && out.contains(&format!("{name}:")), "{out}");
    // Errors in several sections: each of them, at its place.
    let many = text
        .replacen("burst = 64", "burst = 99", 1)
        .replacen("mac = \"02:00:00:00:01:01\"", "mac = \"02:00:00:00:01\"", 1)
        + "[[set]]\nname = \"bad\"\ntype = \"ipv4_addr\"\nmatch = \"th dport\"\naction = \"drop\"\n";
    std::fs::write(&cfg, &many).unwrap();
    let (ok, out) = check(&["--json"]);
    assert!(!ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let errs: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["text"].as_str())
        .collect();
    // Each with its place apart: the file, line and column, and the
    // message.
    for e in v["errors"].as_array().unwrap() {
        let text = format!(
            "{}:{}:{}: {}",
            e["file"].as_str().unwrap(),
            e["line"],
            e["col"],
            e["message"].as_str().unwrap()
        );
        assert_eq!(e["text"].as_str(), Some(text.as_str()), "{e}");
    }
    assert!(errs.iter().any(|e| e.contains("burst 99")), "{errs:?}");
    assert!(
        errs.iter().any(|e| e.contains("02:00:00:00:01")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|e| e.contains("a ipv4_addr field is fed")),
        "{errs:?}"
    );
    assert!(
        errs.iter().all(|e| e.starts_with(&format!("{name}:"))),
        "{errs:?}"
    );

    // reload --check: refused on the problems, no forwarder asked.
    std::fs::write(&cfg, &bad).unwrap();
    let o = forwarder()
        .args(["reload", "--check", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("core 4095 cannot be pinned") && err.contains("not reloaded"),
        "{err}"
    );

    // Without --config, outside a checkout: the installed configuration.
    let o = forwarder().arg("check").current_dir(&dir).output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.starts_with("/etc/forwarder/forwarder.toml"), "{said}");
    std::fs::remove_dir_all(dir).ok();
}

/// Every configuration in `examples/` is good: all of it but the
/// interfaces and cores of the host it is written for (`check
/// --offline`: the Linux examples name interfaces this machine lacks).
#[test]
fn every_example_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut seen = 0;
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let o = forwarder()
            .args(["check", "--offline", "--json", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            o.status.success() && v["ok"] == true,
            "{}: {v}",
            path.display()
        );
        seen += 1;
    }
    assert!(seen >= 5, "{seen} examples");
}
