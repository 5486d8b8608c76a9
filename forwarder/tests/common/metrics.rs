//! The Prometheus exposition as Prometheus's own tools read it: the
//! official Python client's parser and `promtool check metrics`.

use super::netns::wanted;
use std::io::Write;

/// The exposition read by the official Python client's parser (the
/// names, types and samples a Prometheus server takes): the families it
/// finds. `None` where the client is not installed, unless asked for
/// (`.ci/run` installs it).
pub fn parsed_by_python(body: &str) -> Option<Vec<String>> {
    let script = "import sys\n\
from prometheus_client.parser import text_string_to_metric_families as p\n\
for f in p(sys.stdin.read()):\n    print(f.name, f.type, len(f.samples))\n";
    // Debian's Python, where `.ci/run` installs the client (a `python3`
    // earlier on the PATH may be another one).
    let python = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| !p.starts_with('/') || std::path::Path::new(p).exists())
        .unwrap_or("python3");
    let child = std::process::Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(!wanted(), "no python3 to parse the metrics");
        return None;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if err.contains("No module named 'prometheus_client'") && !wanted() {
        return None;
    }
    assert!(
        o.status.success(),
        "the Python client refused the metrics: {err}"
    );
    Some(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

/// `promtool check metrics` on the exposition (Prometheus's own linter:
/// counters end in `_total`, units are base units, help is given):
/// what it says, or `None` where it is not installed, unless asked for
/// (`.ci/run` installs Debian's `prometheus`, which ships it).
pub fn promtool_problems(body: &str) -> Option<String> {
    let child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(!wanted(), "no promtool to lint the metrics");
        return None;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    Some(if o.status.success() {
        said
    } else {
        format!("exit {:?}: {said}", o.status.code())
    })
}
