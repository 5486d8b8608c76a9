//! Who may reach the control socket. It lives in a directory only the
//! forwarder's user may write (created with mode 0700 when it is the
//! default one), is created with mode 0600 (0660 and the configured
//! group with `[control] group`), never replaces anything but a stale
//! socket of our own (a symlink or file planted there is an error), and
//! serves a request only from our own uid, root, or a uid that
//! `[control] allow_uids` lists, as the kernel reports the peer
//! (`SO_PEERCRED`).
#![allow(unsafe_code)]

use config::ControlConfig;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

/// This process's effective uid.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The uid of the process at the other end of `s`.
pub(crate) fn peer_uid(s: &UnixStream) -> io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED writes a `ucred` of at most `len` bytes into
    // `cred`, which we own.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    if r == 0 {
        Ok(cred.uid)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether a request from `uid` is served.
pub(crate) fn allowed(cfg: &ControlConfig, uid: u32) -> bool {
    uid == euid() || uid == 0 || cfg.allow_uids.contains(&uid)
}

/// The gid of group `g`: a number, or a name in `/etc/group`.
fn gid_of(g: &str) -> Result<u32, String> {
    if let Ok(n) = g.parse() {
        return Ok(n);
    }
    let groups = std::fs::read_to_string("/etc/group").unwrap_or_default();
    groups
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let gid = f.nth(1)?.parse().ok()?;
            (name == g).then_some(gid)
        })
        .next()
        .ok_or_else(|| format!("[control] group `{g}`: no such group in /etc/group"))
}

/// Makes `dir` (the default socket directory) exist as a directory of
/// ours that no one else may write: created with mode 0700, else checked.
fn private_dir(dir: &Path) -> Result<(), String> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    }
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !m.file_type().is_dir() {
        return Err(format!(
            "{}: not a directory (a symlink?): refusing to put the control socket there",
            dir.display()
        ));
    }
    if m.uid() != euid() {
        return Err(format!(
            "{}: owned by uid {}, not by this user ({}): refusing to put the control socket there",
            dir.display(),
            m.uid(),
            euid()
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!(
            "{}: writable by other users (mode {:o}): refusing to put the control socket there",
            dir.display(),
            m.mode() & 0o7777
        ));
    }
    Ok(())
}

/// A configured socket's directory: another user may write there only if
/// it is sticky (as /tmp), where no one can remove or replace our files.
fn shared_dir(dir: &Path) -> Result<(), String> {
    let m = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 && m.uid() != euid() {
        return Err(format!(
            "{}: writable by other users and not sticky: refusing to put the control socket there",
            dir.display()
        ));
    }
    Ok(())
}

/// Removes what is left at `socket` by an instance that is gone: only a
/// socket of ours that nobody answers. Anything else there is an error.
fn clear_stale(socket: &Path) -> Result<(), String> {
    let Ok(m) = std::fs::symlink_metadata(socket) else {
        return Ok(());
    };
    if !m.file_type().is_socket() || m.uid() != euid() {
        return Err(format!(
            "{}: exists and is not a socket of this user's: refusing to replace it",
            socket.display()
        ));
    }
    if UnixStream::connect(socket).is_ok() {
        return Err(format!(
            "control socket {} is in use: is a forwarder already running with this configuration?",
            socket.display()
        ));
    }
    std::fs::remove_file(socket).map_err(|e| format!("{}: {e}", socket.display()))
}

/// Creates the control socket at `socket` as the module's documentation
/// says: in a private directory when `cfg` names no socket (the default
/// one), else in the configured socket's directory, checked.
pub(crate) fn listen(socket: &Path, cfg: &ControlConfig) -> Result<UnixListener, String> {
    let dir = socket
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if cfg.socket.is_none() {
        private_dir(dir)?;
    } else {
        shared_dir(dir)?;
    }
    clear_stale(socket)?;
    let gid = cfg.group.as_deref().map(gid_of).transpose()?;
    // Created with no access for others from the first moment (a chmod
    // after bind would leave a window): the umask is the process's, set
    // around the bind alone, before any other thread creates files.
    let mask = if gid.is_some() { 0o117 } else { 0o177 };
    // SAFETY: umask only swaps the process's file creation mask.
    let old = unsafe { libc::umask(mask) };
    let bound = UnixListener::bind(socket);
    // SAFETY: as above, restoring the mask.
    unsafe { libc::umask(old) };
    let listener = bound.map_err(|e| format!("control socket {}: {e}", socket.display()))?;
    if let Some(g) = gid {
        std::os::unix::fs::chown(socket, None, Some(g))
            .map_err(|e| format!("control socket {}: group {g}: {e}", socket.display()))?;
    }
    Ok(listener)
}

/// Waits until one of `fds` can be read (a connection to accept, bytes
/// of a request), or `timeout` passes: the control thread sleeps in the
/// kernel between its ticks, yet takes a request as soon as it comes.
pub(crate) fn wait_readable(fds: &[std::os::fd::RawFd], timeout: std::time::Duration) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` holds `p.len()` pollfds we own, for descriptors the
    // caller keeps open.
    unsafe {
        libc::poll(
            p.as_mut_ptr(),
            p.len() as libc::nfds_t,
            timeout.as_millis() as libc::c_int,
        )
    };
}
