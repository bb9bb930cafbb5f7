//! What the `iron bench` commands share: the statistics they compute from their samples, the
//! executables they start, and the private router they measure on.

use std::{path::PathBuf, time::Duration};

use tokio_util::sync::CancellationToken;

use super::CliError;
use crate::spine::control::router::{Router, RouterConfig};

pub(super) use crate::core::stats::percentile as pct;

/// The first line of every bench: the machine and the build it ran on, as a `#` comment (every
/// other line is `bench <name> <value> <unit>`).
pub(super) fn print_machine(bench: &str) {
    println!(
        "# bench {bench}: {} cpu(s), {} build of {}, {} {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        env!("IRON_BUILD_COMMIT"),
        std::env::consts::OS,
        std::env::consts::ARCH,
    );
}

/// A bench's output lines, kept until [`Figures::print`] writes them with the ratios (lines
/// whose unit is `x`) first, so the verdicts lead; otherwise in the order added.
#[derive(Default)]
pub(super) struct Figures {
    lines: Vec<String>,
}

impl Figures {
    /// One figure, its value already formatted to the precision it deserves.
    pub fn add(&mut self, name: impl Into<String>, value: String, unit: &'static str) {
        self.line(format!("bench {} {value} {unit}", name.into()));
    }

    /// One whole line (`bench <name> <value> <unit>`, or a `#` comment).
    pub fn line(&mut self, line: String) {
        self.lines.push(line);
    }

    /// Every line of `text` (what a bench in a lower layer wrote).
    pub fn lines_of(&mut self, text: &[u8]) {
        for line in String::from_utf8_lossy(text).lines() {
            self.line(line.to_string());
        }
    }

    /// Writes the ratios, then the rest.
    pub fn print(self) {
        let (ratios, rest): (Vec<_>, Vec<_>) =
            self.lines.into_iter().partition(|l| l.ends_with(" x"));
        for line in ratios.into_iter().chain(rest) {
            println!("{line}");
        }
    }
}

/// Microseconds, as a float for printing.
pub(super) fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Milliseconds, as a float for printing.
pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Iron's executable `name` beside the running `iron`; an error says how to build it.
pub(super) fn beside_iron(name: &str) -> Result<PathBuf, CliError> {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file())
        .ok_or_else(|| {
            CliError::Failed(format!(
                "{name} is not beside iron; run `cargo build --release --bins`"
            ))
        })
}

/// A router on a free loopback port, so a benchmark never meets another system's nodes.
pub(super) struct PrivateRouter {
    /// Its endpoint, `tcp/127.0.0.1:<port>`.
    pub endpoint: String,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), crate::spine::control::ControlError>>,
}

impl PrivateRouter {
    /// Starts the router.
    pub async fn start() -> Result<Self, CliError> {
        let port = crate::launch::nats::free_port().map_err(|source| CliError::Io {
            what: "finding a free port".into(),
            source,
        })?;
        let endpoint = format!("tcp/127.0.0.1:{port}");
        let router = Router::start(RouterConfig {
            listen: vec![endpoint.clone()],
            connect: Vec::new(),
        })
        .await?;
        let stop = CancellationToken::new();
        let task = tokio::spawn(router.run(stop.clone()));
        Ok(Self {
            endpoint,
            stop,
            task,
        })
    }

    /// Stops the router and waits for it.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// A temporary directory for a bench's files, removed when dropped.
pub(super) fn scratch_dir() -> Result<tempfile::TempDir, CliError> {
    tempfile::tempdir().map_err(|source| CliError::Io {
        what: "creating a temporary directory".into(),
        source,
    })
}

/// The NATS server a benchmark runs against: the one given, or else a local `nats-server`
/// on free ports with its store under `dir` (stopped by [`BenchNats::stop`]).
pub(super) struct BenchNats {
    /// Client URL.
    pub url: String,
    /// The local server's monitoring address (to check it fsyncs); `None` for a given one.
    pub monitor: Option<String>,
    local: Option<crate::launch::nats::LocalNats>,
}

impl BenchNats {
    pub async fn given_or_local(
        nats: Option<String>,
        dir: &std::path::Path,
    ) -> Result<Self, CliError> {
        if let Some(url) = nats {
            return Ok(Self {
                url,
                monitor: None,
                local: None,
            });
        }
        let port = || {
            crate::launch::nats::free_port().map_err(|source| CliError::Io {
                what: "finding a free port".into(),
                source,
            })
        };
        let server = crate::launch::nats::LocalNats::start(
            std::path::Path::new("config/nats-server.conf"),
            &dir.join("nats"),
            port()?,
            port()?,
        )
        .await?;
        Ok(Self {
            url: server.url.clone(),
            monitor: Some(server.monitor.clone()),
            local: Some(server),
        })
    }

    /// Stops the local server, if one was started.
    pub async fn stop(self) {
        if let Some(server) = self.local {
            server.stop().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_for_printing() {
        assert_eq!(us(Duration::from_micros(1_500)), 1_500.0);
        assert_eq!(ms(Duration::from_micros(1_500)), 1.5);
    }
}
