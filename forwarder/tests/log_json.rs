//! `run --log-format json`: one JSON object a line, and each event's
//! own fields beside the words (`event`, `generation`, the refused
//! file's `file`, `line`, `col`, the worker's `core`), so that a log
//! pipeline filters on fields.

mod common;

use common::*;
use serde_json::Value;
use std::io::BufRead;
use std::time::Duration;

const GOOD: &str = r#"
route = [{ prefix = "0.0.0.0/0", via = "gw" }]
[forwarder]
cores = [0]
[[port]]
name = "p0"
[[next_hop]]
name = "gw"
port = "p0"
mac = "02:00:00:00:00:99"
"#;

#[test]
fn json_log_lines_carry_each_events_fields() {
    let dir = std::env::temp_dir().join(format!("fwd-logjson-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("j.toml");
    std::fs::write(&cfg, GOOD).unwrap();
    let (mut child, log, mut stdout) = run_logged(&cfg, &["--log-format", "json"]);
    for _ in 0..2 {
        let mut l = String::new();
        stdout.read_line(&mut l).unwrap();
    }
    drain(stdout);
    let reload = || {
        forwarder()
            .args(["reload", "--config"])
            .arg(&cfg)
            .output()
            .unwrap()
    };
    // Refused: the error's place, as fields.
    let broken = GOOD.replace("cores = [0]", "cores = [0]\nburst = 0");
    let at = broken.lines().position(|l| l == "burst = 0").unwrap() as u64 + 1;
    std::fs::write(&cfg, &broken).unwrap();
    assert!(!reload().status.success());
    // Applied: a new generation.
    let two = r#"{ prefix = "0.0.0.0/1", via = "gw" }, { prefix = "128.0.0.0/1", via = "gw" }"#;
    std::fs::write(
        &cfg,
        GOOD.replace(r#"{ prefix = "0.0.0.0/0", via = "gw" }"#, two),
    )
    .unwrap();
    let o = reload();
    assert!(o.status.success(), "{o:?}");

    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    assert!(child.0.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(100));
    let lines: Vec<String> = log.try_iter().collect();
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {e}: {l}")))
        .collect();
    let find = |event: &str| {
        events
            .iter()
            .find(|v| v["event"] == event)
            .unwrap_or_else(|| panic!("no `{event}` in {lines:#?}"))
    };
    for v in &events {
        assert!(v["ts"].as_f64().unwrap() > 1.7e9, "{v}");
        assert!(v["level"].is_string() && v["msg"].is_string(), "{v}");
    }
    let pinned = find("worker_pinned");
    assert_eq!(
        (pinned["core"].as_u64(), pinned["worker"].as_u64()),
        (Some(0), Some(0))
    );
    let refused = find("reload_refused");
    assert_eq!(refused["level"], "error");
    assert_eq!(refused["file"], cfg.display().to_string());
    assert_eq!(
        (refused["line"].as_u64(), refused["col"].as_u64()),
        (Some(at), Some(9))
    );
    assert_eq!(refused["generation"], 1, "still serving");
    assert_eq!(refused["trigger"], "request");
    assert!(
        refused["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("burst 0")),
        "{refused}"
    );
    let applied = events
        .iter()
        .find(|v| v["event"] == "reload" && v["published"] == true)
        .unwrap_or_else(|| panic!("no applied reload in {lines:#?}"));
    assert_eq!(applied["generation"], 2);
    // 0.0.0.0/0 out, its two halves in.
    assert_eq!(applied["routes_changed"], 3, "{applied}");
    assert!(applied["took_us"].as_u64().is_some(), "{applied}");
    std::fs::remove_dir_all(dir).ok();
}
