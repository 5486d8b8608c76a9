//! The control side end to end, through the binary: a running forwarder
//! reloads when its file changes, on SIGHUP and on `forwarder reload`;
//! refuses a broken file (saying where) and keeps serving; answers
//! `forwarder stats` (JSON, and `--watch` rates) and Prometheus scrapes.

mod common;

use common::*;
use serde_json::Value;
use std::io::{BufRead, Write};
use std::process::Command;
use std::time::{Duration, Instant};

fn config(prom: u16, extra: &str) -> String {
    format!(
        r#"
route = [{{ prefix = "0.0.0.0/0", via = "gw" }}, {{ prefix = "::/0", via = "gw" }}]
[forwarder]
cores = [0]
[[port]]
name = "p0"
[port.options]
flows = 64
set_hit_percent = 50
[[set]]
name = "deny"
type = "ipv4_addr . inet_service"
match = "ip daddr . th dport"
action = "drop"
elements = ["10.0.0.0/8 . 0-1000"{extra}]
[[next_hop]]
name = "gw"
port = "p0"
mac = "02:00:00:00:00:99"
[[vrf]]
name = "blue"
[control]
prometheus = "127.0.0.1:{prom}"
"#
    )
}

/// Polls `stats` until `ok` holds (or fails after 10 s).
fn wait_for(cfg: &std::path::Path, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let v = stats(cfg);
        if ok(&v) {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "waited for {what}: {v}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn reload_by_file_signal_and_socket_and_statistics() {
    let dir = std::env::temp_dir().join(format!("fwd-ctl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("c.toml");
    let prom = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    std::fs::write(&cfg, config(prom, "")).unwrap();
    let (mut child, log, mut stdout) = run_logged(&cfg, &[]);
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.starts_with("forwarder:"), "{first}");
    let mut second = String::new();
    stdout.read_line(&mut second).unwrap();
    assert!(second.starts_with("control socket "), "{second}");
    let mut third = String::new();
    stdout.read_line(&mut third).unwrap();
    assert_eq!(
        third,
        format!("prometheus http://127.0.0.1:{prom}/metrics\n")
    );
    drain(stdout);

    let v = wait_for(&cfg, "traffic", |v| v["total"]["tx"].as_u64() > Some(1000));
    assert_eq!(v["generation"], 1);
    assert_eq!(v["last_reload"], "ok");
    assert_eq!(v["last_reload_at"], serde_json::Value::Null, "none yet");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let time = v["time"].as_f64().unwrap();
    assert!((time - now.as_secs_f64()).abs() < 60.0, "{v}");
    assert!(
        v["uptime_s"].as_f64().is_some_and(|u| u > 0.0 && u < 600.0),
        "{v}"
    );
    assert_eq!(v["cores"].as_array().unwrap().len(), 1);
    assert!(v["sets"]["deny"]["drop"].as_u64() > Some(0), "{v}");
    assert!(v["ports"]["p0"]["rx"].as_u64() > Some(0), "{v}");

    // The file changes: reloaded by the watch.
    std::fs::write(&cfg, config(prom, ", \"192.0.2.1 . 80\"")).unwrap();
    wait_for(&cfg, "the file change", |v| v["generation"] == 2);
    // SIGHUP.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGHUP) };
    wait_for(&cfg, "SIGHUP", |v| v["reloads"].as_u64() >= Some(2));
    // `forwarder reload`: in words, or as JSON.
    let (ok, out) = fwd(&["reload"], &cfg);
    assert!(ok, "{out}");
    assert!(
        out.starts_with("nothing changed: generation 2 serves on ("),
        "{out}"
    );
    let (ok, out) = fwd(&["reload", "--json"], &cfg);
    assert!(ok, "{out}");
    let r: Value = serde_json::from_str(&out).unwrap();
    // Nothing changed since: nothing is published, the generation stays.
    assert_eq!(
        (
            r["result"].as_str(),
            r["published"].as_bool(),
            r["generation"].as_u64()
        ),
        (Some("ok"), Some(false), Some(2))
    );
    // A route added, and `forwarder reload` asked at once: the request
    // or the watch (whichever comes first) publishes it, the other finds
    // nothing changed.
    let with_route = config(prom, ", \"192.0.2.1 . 80\"").replace(
        "route = [",
        "route = [{ prefix = \"192.0.2.0/24\", via = \"gw\" }, ",
    );
    std::fs::write(&cfg, with_route).unwrap();
    let (ok, out) = fwd(&["reload"], &cfg);
    assert!(ok, "{out}");
    wait_for(&cfg, "the route's reloads", |v| {
        v["reloads"].as_u64() >= Some(4)
    });
    assert_eq!(stats(&cfg)["generation"], 3);

    // A broken file: refused with its location, generation 3 serves on.
    std::fs::write(&cfg, config(prom, ", \"10.1.2.3 . 80\"")).unwrap();
    let o = forwarder()
        .args(["reload", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let at = format!("{}:15:36: overlap", cfg.display());
    assert!(err.contains(&at) && err.contains("generation 3"), "{err}");
    // As JSON: the refusal on standard output, its error placed.
    let (ok, out) = fwd(&["reload", "--json"], &cfg);
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(
        !ok && r["result"] == "error" && r["generation"] == 3,
        "{out}"
    );
    let first = &r["errors"][0];
    assert_eq!(
        (first["line"].as_u64(), first["col"].as_u64()),
        (Some(15), Some(36)),
        "{out}"
    );
    assert_eq!(first["file"], cfg.display().to_string());
    let v = wait_for(&cfg, "the refusal", |v| {
        v["last_reload"].as_str().is_some_and(|s| s.contains(&at))
    });
    assert_eq!(v["generation"], 3);
    // When and how long: this refusal's, not the last success's.
    let when = v["last_reload_at"].as_f64().unwrap();
    assert!(when <= v["time"].as_f64().unwrap() && when > time, "{v}");
    assert!(v["last_reload_us"].as_u64().is_some(), "{v}");
    let before = v["total"]["tx"].as_u64().unwrap();
    wait_for(&cfg, "traffic after the refusal", |v| {
        v["total"]["tx"].as_u64() > Some(before)
    });

    // The flow cache serves the 64 flows (one miss stored in 32).
    wait_for(&cfg, "flow cache hits", |v| {
        v["flow_cache"]["hits"].as_u64() > Some(0)
    });

    let m = scrape(prom);
    assert!(m.starts_with("HTTP/1.0 200 OK"), "{m}");
    for want in [
        "forwarder_generation 3",
        "forwarder_reloads_total{result=\"failed\"}",
        "forwarder_last_reload_ok 0",
        "forwarder_set_matches_total{core=\"0\",set=\"deny\",verdict=\"drop\"}",
        "forwarder_port_rx_packets_total{core=\"0\",port=\"p0\"}",
        "forwarder_port_tx_bytes_total{core=\"0\",port=\"p0\"}",
        "forwarder_drops_total{core=\"0\",reason=\"rule\"}",
        "forwarder_route_cache_lookups_total{core=\"0\",result=\"misses\"}",
        "forwarder_flow_cache_lookups_total{core=\"0\",result=\"hits\"}",
        "forwarder_router_punted_total ",
        &format!(
            "forwarder_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        ),
        "forwarder_start_time_seconds 1",
        // Per VRF: the default one has p0's traffic, blue none.
        "forwarder_vrf_rx_packets_total{vrf=\"default\"} ",
        "forwarder_vrf_tx_bytes_total{vrf=\"blue\"} 0",
    ] {
        assert!(m.contains(want), "no `{want}` in\n{m}");
    }
    // The official client reads it all: each family once, with its type.
    let body = m.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    if let Some(said) = promtool_problems(body) {
        assert!(said.trim().is_empty(), "promtool check metrics: {said}");
    }
    if let Some(families) = parsed_by_python(body) {
        let names: Vec<&str> = families
            .iter()
            .filter_map(|l| l.split(' ').next())
            .collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{families:?}");
        for want in [
            "forwarder_port_tx_bytes counter",
            "forwarder_port_rx_bytes counter",
            "forwarder_build_info gauge",
            "forwarder_vrf_rx_packets counter",
        ] {
            assert!(
                families.iter().any(|l| l.starts_with(want)),
                "{want}: {families:?}"
            );
        }
    }
    let o = forwarder()
        .args(["stats", "--watch", "--count", "1", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let w = String::from_utf8_lossy(&o.stdout);
    assert!(
        w.contains("generation 3")
            && w.contains("  total (core 0): rx")
            && w.contains("  port p0: rx ")
            && w.contains("Mpps"),
        "{w}"
    );

    // `--socket` (or $FORWARDER_SOCKET) reaches it without the
    // configuration file, from anywhere.
    let socket = config::socket_for(&cfg).unwrap();
    for (args, env) in [
        (vec!["--socket", socket.to_str().unwrap(), "stats"], None),
        (vec!["stats", "--socket", socket.to_str().unwrap()], None),
        (vec!["stats"], Some(socket.to_str().unwrap())),
    ] {
        let mut c = forwarder();
        c.args(&args).current_dir("/");
        if let Some(e) = env {
            c.env("FORWARDER_SOCKET", e);
        }
        let o = c.output().unwrap();
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&o.stderr)));
        assert_eq!(v["generation"], 3, "{args:?}");
    }
    let o = forwarder()
        .args(["--socket", "/nonexistent.sock", "run", "-c"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("`run` listens where its configuration says"),
        "{o:?}"
    );

    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    assert!(child.0.wait().unwrap().success());
    let log: Vec<String> = log.try_iter().collect();
    let log = log.join("\n");
    for want in [
        "reload (file changed): generation 2",
        "reload (SIGHUP): nothing changed, generation 2 serves on",
        "reload (request): generation 3",
        "refused, still serving generation 3",
    ] {
        assert!(log.contains(want), "no `{want}` in the log:\n{log}");
    }
    assert!(
        !config::default_socket(&cfg).exists(),
        "the socket is removed at exit"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// Starts `forwarder run` on `cfg` and waits for its control socket line.
fn start(cfg: &std::path::Path) -> Running {
    run_local(cfg)
}

/// `forwarder stats` as uid/gid `id` (root runs the test), with the
/// binary `bin` (a copy that user may run wherever the build is).
fn stats_as(bin: &std::path::Path, cfg: &std::path::Path, id: u32) -> (bool, String) {
    use std::os::unix::process::CommandExt;
    // A thread of this test process that forks while the copy is being
    // written holds its descriptor until it execs: the kernel then
    // refuses to run the copy (ETXTBSY) for a moment.
    let o = (0..100)
        .find_map(|_| {
            match Command::new(bin)
                .args(["stats", "--config"])
                .arg(cfg)
                .uid(id)
                .gid(id)
                .output()
            {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(Duration::from_millis(10));
                    None
                }
                o => Some(o.unwrap()),
            }
        })
        .expect("the binary's copy stays busy");
    outcome(o)
}

/// Whether a command succeeded, and what it printed (both streams).
fn outcome(o: std::process::Output) -> (bool, String) {
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

/// The control socket: mode 0600 in a private directory by default; 0660
/// and a group when configured; a request from a uid neither ours, root's
/// nor in `allow_uids` refused (SO_PEERCRED); a symlink planted where the
/// socket goes refused, not followed. Needs root (to act as another user).
#[test]
fn the_control_socket_serves_only_whom_it_should() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !root_or_skip("control socket access (acts as another user)") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("fwd-acc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join("forwarder");
    std::fs::copy(env!("CARGO_BIN_EXE_forwarder"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = dir.join("c.toml");
    let prom = |extra: &str| {
        let p = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        format!("{}{extra}", config(p, ""))
    };
    // The default: a private directory, mode 0600.
    std::fs::write(&cfg, prom("")).unwrap();
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    let child = start(&cfg);
    let sock = config::default_socket(&cfg);
    let m = std::fs::metadata(&sock).unwrap();
    assert_eq!(m.mode() & 0o777, 0o600, "{}", sock.display());
    let d = std::fs::metadata(sock.parent().unwrap()).unwrap();
    assert_eq!((d.mode() & 0o777, d.uid()), (0o700, 0));
    // Root is served. A failure of this first request is printed and
    // the request tried once more: one such failure (in about 40 runs)
    // was never explained, and this keeps what it said.
    let (mut ok, mut out) = stats_as(&bin, &cfg, 0);
    if !ok {
        eprintln!("the first stats request as root failed: {out}");
        std::thread::sleep(Duration::from_millis(200));
        (ok, out) = stats_as(&bin, &cfg, 0);
    }
    assert!(ok, "{out}");
    drop(child);

    // A group's members reach it (0660); another uid is refused by the
    // server, unless allowed.
    let nobody = 65534;
    let sock = dir.join("c.sock");
    let with = |allow: &str| {
        prom(&format!(
            "socket = \"{}\"\ngroup = \"{nobody}\"\n{allow}",
            sock.display()
        ))
    };
    std::fs::write(&cfg, with("")).unwrap();
    let child = start(&cfg);
    let m = std::fs::metadata(&sock).unwrap();
    assert_eq!((m.mode() & 0o777, m.gid()), (0o660, nobody));
    let (ok, out) = stats_as(&bin, &cfg, nobody);
    assert!(!ok && out.contains("uid 65534 may not use"), "{out}");
    drop(child);
    let _ = std::fs::remove_file(&sock);
    std::fs::write(&cfg, with("allow_uids = [65534]\n")).unwrap();
    let child = start(&cfg);
    let (ok, out) = stats_as(&bin, &cfg, nobody);
    assert!(ok && out.contains("\"generation\""), "{out}");
    drop(child);
    let _ = std::fs::remove_file(&sock);

    // Something planted where the socket goes is not replaced.
    std::os::unix::fs::symlink(dir.join("elsewhere"), &sock).unwrap();
    let o = forwarder()
        .args(["run", "--duration", "1s", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("is not a socket of this user's"),
        "{err}"
    );
    assert!(!dir.join("elsewhere").exists());
    std::fs::remove_dir_all(dir).ok();
}

/// `forwarder ARGS` to completion: success and what it printed.
fn fwd(args: &[&str], cfg: &std::path::Path) -> (bool, String) {
    outcome(
        forwarder()
            .args(args)
            .arg("--config")
            .arg(cfg)
            .output()
            .unwrap(),
    )
}

/// A fresh directory for test `name`, its configuration's path there,
/// and a free port for Prometheus.
fn scratch(name: &str) -> (std::path::PathBuf, std::path::PathBuf, u16) {
    let dir = std::env::temp_dir().join(format!("fwd-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prom = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    (dir.clone(), dir.join("c.toml"), prom)
}

/// Elements added and deleted at run time: in force at once, all or
/// nothing per request, listed as nft lists a set, kept across a reload
/// of the configuration; garbage and overlong requests get an error and
/// the forwarder keeps serving.
#[test]
fn run_time_elements() {
    let (dir, cfg, prom) = scratch("elem");
    std::fs::write(&cfg, config(prom, "")).unwrap();
    let _child = start(&cfg);
    let generation = |cfg: &std::path::Path| stats(cfg)["generation"].as_u64().unwrap();
    assert_eq!(generation(&cfg), 1);

    let (ok, out) = fwd(
        &["element", "add", "deny", "192.0.2.1 . 80", "192.0.2.2 . 81"],
        &cfg,
    );
    assert!(
        ok && out.starts_with("added 2 element(s) in set `deny`: generation 2 in force"),
        "{out}"
    );
    assert_eq!(generation(&cfg), 2, "in force at once");
    // An overlap refuses the whole request.
    let (ok, out) = fwd(
        &[
            "element",
            "add",
            "deny",
            "192.0.2.3 . 82",
            "10.1.0.0/16 . 500",
        ],
        &cfg,
    );
    assert!(
        !ok && out.contains("overlap") && out.contains("10.0.0.0/8 . 0-1000"),
        "{out}"
    );
    assert!(out.contains("nothing was changed"), "{out}");
    // The same refusal as JSON, on standard output; success as JSON too.
    let (ok, out) = fwd(
        &["element", "add", "--json", "deny", "10.1.0.0/16 . 500"],
        &cfg,
    );
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(
        !ok && r["result"] == "error" && r["generation"] == 2,
        "{out}"
    );
    assert!(
        r["error"].as_str().is_some_and(|e| e.contains("overlap")),
        "{out}"
    );
    // (An exact duplicate is no error, as in nft.)
    let (ok, out) = fwd(
        &["element", "add", "--json", "deny", "192.0.2.2 . 81"],
        &cfg,
    );
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(
        ok && r["result"] == "ok" && r["op"] == "add" && r["elements"] == 1,
        "{out}"
    );
    // A failure before any answer is JSON as well.
    let o = forwarder()
        .args([
            "element",
            "add",
            "--json",
            "deny",
            "192.0.2.2 . 81",
            "--config",
            "/nonexistent.toml",
        ])
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(!o.status.success() && o.stderr.is_empty(), "{o:?}");
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.contains("/nonexistent.toml")),
        "{r}"
    );
    let (ok, out) = fwd(&["element", "add", "deny", "192.0.2.300 . 1"], &cfg);
    assert!(!ok && out.contains("192.0.2.300"), "{out}");
    // Bulk from a file in the set file's form.
    let bulk = dir.join("bulk.set");
    std::fs::write(
        &bulk,
        "type ipv4_addr . inet_service\n# more\n198.51.100.0/24 . 53\n",
    )
    .unwrap();
    let (ok, out) = fwd(
        &["element", "add", "deny", "--file", bulk.to_str().unwrap()],
        &cfg,
    );
    assert!(ok, "{out}");
    let (ok, out) = fwd(
        &[
            "element",
            "delete",
            "deny",
            "192.0.2.1 . 80",
            "10.0.0.0/8 . 0-1000",
        ],
        &cfg,
    );
    assert!(ok, "{out}");
    let (ok, list) = fwd(&["element", "list", "deny"], &cfg);
    assert!(ok, "{list}");
    assert!(
        list.starts_with(
            "table inet forwarder {\n\tset deny {\n\t\ttype ipv4_addr . inet_service\n"
        ),
        "{list}"
    );
    for (e, there) in [
        ("192.0.2.2 . 81", true),
        ("198.51.100.0/24 . 53", true),
        ("192.0.2.3 . 82", false),
        ("192.0.2.1 . 80", false),
        ("10.0.0.0/8 . 0-1000", false),
    ] {
        assert_eq!(list.contains(e), there, "{e} in\n{list}");
    }

    // A reload (the file changed) keeps the run-time changes on top of
    // what the file now says.
    let before = generation(&cfg);
    std::fs::write(&cfg, config(prom, ", \"203.0.113.0/24 . 443\"")).unwrap();
    wait_for(&cfg, "the reload", |v| {
        v["generation"].as_u64() > Some(before)
    });
    let (_, list) = fwd(&["element", "list", "deny"], &cfg);
    for (e, there) in [
        ("203.0.113.0/24 . 443", true),
        ("192.0.2.2 . 81", true),
        ("198.51.100.0/24 . 53", true),
        ("10.0.0.0/8 . 0-1000", false),
    ] {
        assert_eq!(list.contains(e), there, "{e} after the reload in\n{list}");
    }

    // Garbage, a bad set, an overlong line: errors, and still serving.
    let sock = config::control_socket(&cfg);
    for req in [
        "{not json".to_string(),
        "{\"request\":\"list\",\"set\":\"nope\"}".to_string(),
        "x".repeat(17 << 20),
    ] {
        let answer = forwarder::control::server::request(&sock, &req).unwrap_or_else(|e| e);
        assert!(
            answer.contains("error") || answer.contains("Broken pipe") || answer.contains("reset"),
            "{}",
            &answer[..answer.len().min(300)]
        );
    }
    assert_eq!(stats(&cfg)["last_reload"], "ok");
    // Half a request holds up only its own connection: others are
    // answered meanwhile, at once.
    let mut half = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    half.write_all(b"{\"request\":\"li").unwrap();
    let t = Instant::now();
    assert_eq!(stats(&cfg)["last_reload"], "ok");
    let (ok, out) = fwd(&["element", "add", "deny", "192.0.2.9 . 9"], &cfg);
    assert!(ok, "{out}");
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "answered after {:?} behind half a request",
        t.elapsed()
    );
    drop(half);
    std::fs::remove_dir_all(dir).ok();
}

/// 10,000 run-time changes through the socket (adds, deletes, re-adds,
/// some refused) while two workers forward, a reload of the file among
/// them: afterwards the set in force is exactly the acknowledged
/// changes on top of the file, element by element, and both workers
/// judge by the last generation.
#[test]
fn ten_thousand_run_time_changes_under_traffic() {
    let (dir, cfg, prom) = scratch("load");
    let text = config(prom, "").replace("cores = [0]", "cores = [0, 1]");
    std::fs::write(&cfg, &text).unwrap();
    let _child = start(&cfg);
    wait_for(&cfg, "traffic", |v| v["total"]["tx"].as_u64() > Some(1000));
    let sock = config::control_socket(&cfg);
    let ask = |op: &str, e: &str| {
        let req = format!(
            "{{\"request\":\"element\",\"op\":\"{op}\",\"set\":\"deny\",\"elements\":[\"{e}\"]}}"
        );
        let a = forwarder::control::server::request(&sock, &req).unwrap();
        a.contains("\"result\":\"ok\"")
    };
    let mut model: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut refused = 0;
    for i in 0..10_000u32 {
        let x = rng.next_u64();
        let e = format!("198.51.100.{} . {}", x % 64, 1000 + (x >> 8) % 16);
        let ok = match x % 10 {
            // An overlap with the file's element, or an absent key:
            // refused, and nothing changes.
            0 => ask("add", "10.1.0.0/16 . 500"),
            1 => ask("delete", "192.0.2.77 . 7"),
            2..=5 => ask("add", &e),
            _ => ask("delete", &e),
        };
        match (x % 10, ok) {
            (0 | 1, false) => refused += 1,
            (0 | 1, true) => panic!("change {i} should have been refused"),
            (2..=5, true) => {
                model.insert(e);
            }
            (_, true) => {
                assert!(model.remove(&e), "change {i}: deleted `{e}`, never added");
            }
            (_, false) => {
                // Deleting what is not there is refused, as nft does.
                assert!(!model.contains(&e), "change {i}: `{e}` refused");
                refused += 1;
            }
        }
        if i == 5_000 {
            // A reload among the changes: the file's set again, with one
            // more element; the run-time changes stay on top.
            std::fs::write(
                &cfg,
                text.replace(
                    "\"10.0.0.0/8 . 0-1000\"",
                    "\"10.0.0.0/8 . 0-1000\", \"203.0.113.9 . 9\"",
                ),
            )
            .unwrap();
        }
    }
    assert!(refused > 1_000, "{refused} refused");
    wait_for(&cfg, "the reload", |v| v["reloads"].as_u64() >= Some(1));
    let (ok, list) = fwd(&["element", "list", "deny"], &cfg);
    assert!(ok, "{list}");
    let body = list.split("elements = {").nth(1).unwrap_or("");
    let got: std::collections::BTreeSet<String> = body
        .split([',', '}'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    model.insert("10.0.0.0/8 . 0-1000".into());
    model.insert("203.0.113.9 . 9".into());
    assert_eq!(got, model);
    // Both workers judge by the generation now published.
    let v = wait_for(&cfg, "both workers on the last generation", |v| {
        v["cores"]
            .as_array()
            .is_some_and(|c| c.iter().all(|c| c["loaded_generation"] == v["generation"]))
    });
    assert!(v["generation"].as_u64() > Some(5_000), "{v}");
    assert_eq!(v["last_reload"], "ok");
    std::fs::remove_dir_all(dir).ok();
}
