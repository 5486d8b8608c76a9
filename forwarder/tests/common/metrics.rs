//! The Prometheus exposition as Prometheus's own tools read it: the
//! official Python client's parser and `promtool check metrics`.

use super::netns::wanted;
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// What `program args` did with `body` on its standard input; `None`
/// where the program is not installed, unless asked for (`.ci/run`
/// installs what these need), where that fails the test.
fn fed(program: &str, args: &[&str], body: &str) -> Option<Output> {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        assert!(!wanted(), "no {program} to read the metrics");
        return None;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    Some(child.wait_with_output().unwrap())
}

/// The exposition read by the official Python client's parser (the
/// names, types and samples a Prometheus server takes): the families it
/// finds. `None` where the client is not installed, unless asked for.
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
    let o = fed(python, &["-c", script], body)?;
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
/// (Debian ships it in `prometheus`).
pub fn promtool_problems(body: &str) -> Option<String> {
    let o = fed("promtool", &["check", "metrics"], body)?;
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

/// `GET /metrics` from the forwarder's Prometheus endpoint on
/// 127.0.0.1:`port`: the whole HTTP answer.
pub fn scrape(port: u16) -> String {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut s = String::new();
    c.read_to_string(&mut s).unwrap();
    s
}
