//! One harness per backend so a test body runs unchanged against both.

use iron::core::durable::DurablePlane;
use iron::spine::durable::bootstrap::{self, BootstrapOptions};
use iron::spine::durable::{Embedded, EmbeddedOptions, JetStream, JetStreamOptions, StreamSpec};

use super::nats::NatsServer;

/// A backend a test can open, and restart as a crash would.
pub trait Harness: Send {
    /// The backend.
    type Log: DurablePlane;
    /// A handle on the backend (streams bootstrapped).
    fn open(&mut self) -> impl std::future::Future<Output = Self::Log> + Send;
    /// Crash and restart the storage (SIGKILL for the server; drop and reopen for SQLite),
    /// then return a fresh handle.
    fn restart(&mut self) -> impl std::future::Future<Output = Self::Log> + Send;
    /// Stop and start the storage cleanly (SIGTERM; drop and reopen), then a fresh handle.
    fn restart_clean(&mut self) -> impl std::future::Future<Output = Self::Log> + Send;
    /// A directory for the test's own files.
    fn dir(&self) -> std::path::PathBuf;
}

/// JetStream on a real nats-server.
pub struct NatsHarness {
    /// The server.
    pub server: NatsServer,
    dir: tempfile::TempDir,
}

impl NatsHarness {
    /// Starts a server.
    pub fn new() -> Self {
        Self {
            server: NatsServer::start(),
            dir: tempfile::tempdir().unwrap(),
        }
    }
}

/// Connects and bootstraps both streams.
pub async fn connect(server: &NatsServer) -> JetStream {
    let js = JetStream::connect(&server.url(), JetStreamOptions::default())
        .await
        .expect("connect to nats-server");
    bootstrap::bootstrap(
        &js,
        &StreamSpec::all(),
        &BootstrapOptions {
            monitor: Some(server.monitor()),
            quiet: false,
        },
    )
    .await
    .expect("bootstrap");
    js
}

impl Harness for NatsHarness {
    type Log = JetStream;
    async fn open(&mut self) -> JetStream {
        connect(&self.server).await
    }
    async fn restart(&mut self) -> JetStream {
        self.server.restart();
        connect(&self.server).await
    }
    async fn restart_clean(&mut self) -> JetStream {
        self.server.restart_clean();
        connect(&self.server).await
    }
    fn dir(&self) -> std::path::PathBuf {
        self.dir.path().to_path_buf()
    }
}

/// The embedded SQLite log in a temp directory.
pub struct EmbeddedHarness {
    dir: tempfile::TempDir,
}

impl EmbeddedHarness {
    /// A fresh directory.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }
}

impl Harness for EmbeddedHarness {
    type Log = Embedded;
    async fn open(&mut self) -> Embedded {
        Embedded::open(
            self.dir.path().join("log.db"),
            &StreamSpec::all(),
            EmbeddedOptions::default(),
        )
        .await
        .expect("open embedded log")
    }
    async fn restart(&mut self) -> Embedded {
        self.open().await
    }
    async fn restart_clean(&mut self) -> Embedded {
        self.open().await
    }
    fn dir(&self) -> std::path::PathBuf {
        self.dir.path().to_path_buf()
    }
}

/// Generates `mod jetstream` and `mod embedded`, each with one `#[tokio::test]` per named
/// generic test body `async fn name<H: Harness>(h: H)` of the enclosing file.
#[macro_export]
macro_rules! for_both_backends {
    ($($name:ident),* $(,)?) => {
        mod jetstream {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::support::harness::NatsHarness::new()).await
                }
            )*
        }
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::support::harness::EmbeddedHarness::new()).await
                }
            )*
        }
    };
}
