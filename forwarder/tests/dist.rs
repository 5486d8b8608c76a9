//! What `dist/` ships beside the unit: shell completions and manual
//! pages, generated from the forwarder's own command line. They must be
//! what this very binary generates, so an option added without them
//! fails here (`FORWARDER_BLESS=1 cargo test -p forwarder --test dist`
//! writes them anew).

use std::path::{Path, PathBuf};
use std::process::Command;

fn forwarder() -> Command {
    Command::new(env!("CARGO_BIN_EXE_forwarder"))
}

fn dist() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist")
}

fn bless() -> bool {
    std::env::var_os("FORWARDER_BLESS").is_some()
}

/// `want` (what the binary generates) against the shipped file `path`;
/// written instead when blessing.
fn same(path: &Path, want: &[u8], stale: &mut Vec<String>) {
    if bless() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, want).unwrap();
        return;
    }
    if std::fs::read(path).ok().as_deref() != Some(want) {
        stale.push(path.display().to_string());
    }
}

#[test]
fn the_shipped_completions_are_the_binarys() {
    let mut stale = Vec::new();
    for (shell, file) in [
        ("bash", "forwarder.bash"),
        ("zsh", "_forwarder"),
        ("fish", "forwarder.fish"),
    ] {
        let o = forwarder().args(["completions", shell]).output().unwrap();
        assert!(o.status.success(), "{o:?}");
        let text = String::from_utf8_lossy(&o.stdout);
        // Every command and a command's own option are offered.
        for word in ["capture", "route", "offline", "socket"] {
            assert!(text.contains(word), "{shell}: no {word}");
        }
        same(
            &dist().join("completions").join(file),
            &o.stdout,
            &mut stale,
        );
    }
    assert!(
        stale.is_empty(),
        "stale: {stale:?}: FORWARDER_BLESS=1 cargo test -p forwarder --test dist"
    );
    // The bash script is bash, and it registers the completion.
    let script = dist().join("completions/forwarder.bash");
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(". {} && complete -p forwarder", script.display()))
        .output()
        .unwrap();
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("forwarder"),
        "{o:?}"
    );
}

#[test]
fn the_shipped_manual_pages_are_the_binarys() {
    let scratch = std::env::temp_dir().join(format!("fwd-man-{}", std::process::id()));
    let o = forwarder()
        .args(["man", "--dir"])
        .arg(&scratch)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let mut made: Vec<String> = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    made.sort();
    // A page for the command and each of its commands, nested ones too.
    for page in ["forwarder.1", "forwarder-run.1", "forwarder-route-get.1"] {
        assert!(made.iter().any(|m| m == page), "{page}: {made:?}");
    }
    let main = std::fs::read_to_string(scratch.join("forwarder.1")).unwrap();
    assert!(main.starts_with(".ie") && main.contains(".SH SUBCOMMANDS"));
    let mut stale = Vec::new();
    for page in &made {
        let want = std::fs::read(scratch.join(page)).unwrap();
        same(&dist().join("man").join(page), &want, &mut stale);
    }
    // No page shipped for a command that is gone.
    let shipped: Vec<String> = std::fs::read_dir(dist().join("man"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    for page in shipped.iter().filter(|p| !made.contains(p)) {
        if bless() {
            std::fs::remove_file(dist().join("man").join(page)).unwrap();
        } else {
            stale.push(format!("dist/man/{page} (no such command)"));
        }
    }
    std::fs::remove_dir_all(&scratch).ok();
    assert!(
        stale.is_empty(),
        "stale: {stale:?}: FORWARDER_BLESS=1 cargo test -p forwarder --test dist"
    );
}
