//! The network of a run that a mesh grants network: the sandbox keeps its own network
//! namespace (never the host's), and `slirp4netns` gives it a user-mode network that reaches
//! the outside the way a program on the host would, but never the host's loopback: not
//! `127.0.0.1` (that is the sandbox's own loopback) and not slirp's gateway to it
//! (`--disable-host-loopback`), so the Zenoh router, NATS and the console stay out of reach.
//!
//! The command must not start before its network is up, so a networked run starts as a
//! small gate, `sh -c 'read -r _ && exec "$@"'`, that waits on its standard input; the
//! network is attached to the sandbox's process (found by bubblewrap's `--info-fd`), and one
//! line on the gate's input, then end of file, lets the command start with an empty input.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};

use super::SandboxError;

/// The sandbox's address for the name server slirp4netns forwards to the host's.
pub(super) const RESOLV_CONF: &str = "nameserver 10.0.2.3\n";

/// How long the network may take to come up.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// The arguments that make a command wait for [`attach`]: `sh -c GATE iron-sandbox CMD…`.
pub(super) const GATE: &[&str] = &["/bin/sh", "-c", "read -r _ && exec \"$@\"", "iron-sandbox"];

/// Why a run granted network is refused where slirp4netns is missing.
pub(super) fn missing() -> SandboxError {
    SandboxError::Unavailable(
        "a run with network needs slirp4netns, which is not on PATH; install it \
         (Debian: apt-get install slirp4netns)"
            .to_string(),
    )
}

/// The network attached to a running sandbox; gone when dropped.
pub(super) struct Attached {
    _slirp: Child,
}

/// Reads the sandbox's process id from bubblewrap's `--info-fd` output, attaches a user-mode
/// network to it, waits until it is up, then opens `gate`.
pub(super) async fn attach(
    slirp: &Path,
    info: &mut (impl tokio::io::AsyncRead + Unpin),
    mut gate: ChildStdin,
) -> Result<Attached, SandboxError> {
    let unavailable = |why: String| SandboxError::Unavailable(format!("user-mode network: {why}"));
    let pid = tokio::time::timeout(READY_WITHIN, child_pid(info))
        .await
        .map_err(|_| unavailable("bubblewrap did not say which process to attach to".into()))??;
    let (ready_w, mut ready_r) =
        tokio::net::unix::pipe::pipe().map_err(|e| unavailable(format!("a pipe: {e}")))?;
    let ready_fd = ready_w
        .into_blocking_fd()
        .map_err(|e| unavailable(format!("a pipe: {e}")))?;
    let mut cmd = Command::new(slirp);
    cmd.args([
        "--configure",
        "--mtu=65520",
        "--disable-host-loopback",
        "--ready-fd=3",
        &pid.to_string(),
        "tap0",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    let raw = std::os::fd::AsRawFd::as_raw_fd(&ready_fd);
    // SAFETY: only dup2/fcntl between fork and exec; `ready_fd` stays open in the parent
    // until spawn returns.
    unsafe {
        cmd.pre_exec(move || super::inherit_as(raw, 3));
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| unavailable(format!("starting {}: {e}", slirp.display())))?;
    drop(ready_fd);
    let mut byte = [0u8; 1];
    let ready = tokio::time::timeout(READY_WITHIN, ready_r.read(&mut byte)).await;
    if !matches!(ready, Ok(Ok(1))) {
        let mut said = String::new();
        if let Some(mut err) = child.stderr.take() {
            let _ =
                tokio::time::timeout(Duration::from_secs(1), err.read_to_string(&mut said)).await;
        }
        let _ = child.kill().await;
        return Err(unavailable(format!(
            "slirp4netns did not come up: {}",
            said.trim()
        )));
    }
    gate.write_all(b"go\n")
        .await
        .map_err(|e| unavailable(format!("starting the command: {e}")))?;
    drop(gate);
    Ok(Attached { _slirp: child })
}

/// The `child-pid` of bubblewrap's first `--info-fd` document.
async fn child_pid(info: &mut (impl tokio::io::AsyncRead + Unpin)) -> Result<u32, SandboxError> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = info.read(&mut chunk).await.map_err(|e| SandboxError::Io {
            what: "reading bubblewrap's info".into(),
            source: e,
        })?;
        if n == 0 {
            return Err(SandboxError::Unavailable(
                "user-mode network: bubblewrap ended before it said which process to attach to"
                    .into(),
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&buf) {
            return doc
                .get("child-pid")
                .and_then(serde_json::Value::as_u64)
                .and_then(|p| u32::try_from(p).ok())
                .ok_or_else(|| {
                    SandboxError::Unavailable(format!(
                        "user-mode network: no child-pid in bubblewrap's info {doc}"
                    ))
                });
        }
    }
}
