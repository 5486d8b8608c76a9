//! systemd's readiness protocol (`sd_notify`, for `Type=notify` units):
//! one datagram to the socket `$NOTIFY_SOCKET` names. Without the
//! variable (not started by systemd) it does nothing.

use std::os::unix::net::UnixDatagram;

/// Sends `state` (lines such as `READY=1`, `STATUS=...`) to systemd;
/// an error says why it could not be sent.
pub fn notify(state: &str) -> Result<(), String> {
    match std::env::var_os("NOTIFY_SOCKET") {
        Some(path) => notify_to(&path, state),
        None => Ok(()),
    }
}

/// [`notify()`] to the socket `path` (`@NAME`: an abstract one).
pub fn notify_to(path: &std::ffi::OsStr, state: &str) -> Result<(), String> {
    let sock = UnixDatagram::unbound().map_err(|e| format!("sd_notify: {e}"))?;
    let bytes = path.as_encoded_bytes();
    let sent = match bytes.strip_prefix(b"@") {
        // An abstract socket (Linux): `@` stands for the leading NUL.
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)
                .map_err(|e| format!("sd_notify: {e}"))?;
            sock.send_to_addr(state.as_bytes(), &addr)
        }
        None => sock.send_to(state.as_bytes(), path),
    };
    sent.map(|_| ())
        .map_err(|e| format!("sd_notify to {}: {e}", path.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_to_the_named_socket_plain_or_abstract() {
        let dir = std::env::temp_dir().join(format!("fwd-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        notify_to(path.as_os_str(), "READY=1\nSTATUS=forwarding").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\nSTATUS=forwarding");
        use std::os::linux::net::SocketAddrExt;
        let name = format!("fwd-notify-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx = UnixDatagram::bind_addr(&addr).unwrap();
        notify_to(std::ffi::OsStr::new(&format!("@{name}")), "READY=1").unwrap();
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        assert!(notify_to(dir.join("none").as_os_str(), "READY=1").is_err());
        std::fs::remove_dir_all(dir).ok();
    }
}
