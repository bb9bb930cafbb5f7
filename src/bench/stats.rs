//! What the `iron bench` commands share: the statistics they compute from their samples, the
//! executables they start and the environment they start them with, the private router they
//! measure on and the connection they open to it.

use std::{
    ffi::{OsStr, OsString},
    path::{Path, PathBuf},
    time::Duration,
};

use tokio_util::sync::CancellationToken;

use super::BenchError;
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

    /// Every line of `text` (what a bench wrote to a buffer: `log::log`).
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
pub(super) fn beside_iron(name: &str) -> Result<PathBuf, BenchError> {
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join(name)))
        .filter(|p| p.is_file())
        .ok_or_else(|| {
            BenchError::Failed(format!(
                "{name} is not beside iron; run `cargo build --release --bins`"
            ))
        })
}

/// A field of a process's `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`, `RssAnon`); `pid`
/// `None` is this process.
pub(super) fn status_kib(pid: Option<u32>, field: &str) -> Option<u64> {
    let path = pid.map_or_else(
        || "/proc/self/status".into(),
        |p| format!("/proc/{p}/status"),
    );
    let status = std::fs::read_to_string(path).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What a process and everything below it have used so far, read from `/proc` (Linux only).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct TreeUsage {
    /// Processes alive in the tree.
    pub processes: usize,
    /// User and system CPU of the living processes and of every child they have reaped (an
    /// expert process that has ended counts once its parent has waited for it).
    pub cpu: Duration,
    /// The highest peak resident set of one process, and the peaks summed over the living
    /// processes (an upper bound of the tree's peak: each process peaked at its own moment).
    pub peak_rss_max_kib: u64,
    pub peak_rss_sum_kib: u64,
}

/// [`TreeUsage`] of `root` and its descendants; `None` where `/proc` cannot be read.
pub(super) fn tree_usage(root: u32) -> Option<TreeUsage> {
    // SAFETY: sysconf has no preconditions; it reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks <= 0 {
        return None;
    }
    // (pid, parent, cpu ticks) of every process: fields 14-17 of `stat` are utime, stime,
    // cutime and cstime; the fields are counted after the command name's closing parenthesis.
    let mut all: Vec<(u32, u32, u64)> = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
        if let (Some(parent), Some(u), Some(s), Some(cu), Some(cs)) =
            (field(4), field(14), field(15), field(16), field(17))
        {
            all.push((pid, parent as u32, u + s + cu + cs));
        }
    }
    let mut tree = vec![root];
    let mut grew = true;
    while grew {
        grew = false;
        for (pid, parent, _) in &all {
            if tree.contains(parent) && !tree.contains(pid) {
                tree.push(*pid);
                grew = true;
            }
        }
    }
    let mut usage = TreeUsage::default();
    for (pid, _, cpu_ticks) in all.iter().filter(|(pid, _, _)| tree.contains(pid)) {
        usage.processes += 1;
        usage.cpu += Duration::from_secs_f64(*cpu_ticks as f64 / ticks as f64);
        let peak = status_kib(Some(*pid), "VmHWM").unwrap_or(0);
        usage.peak_rss_max_kib = usage.peak_rss_max_kib.max(peak);
        usage.peak_rss_sum_kib += peak;
    }
    (usage.processes > 0).then_some(usage)
}

/// The environment of every process a bench starts (its nodes, `iron up`, a tool server): the
/// caller's, without the variables Iron's processes take their configuration from, plus what
/// the bench means (its router, its configuration file). A bench measures the system it set
/// up, whatever the caller exported: an `IRON_STATE_DIR` of another deployment, an
/// `IRON_ROUTER`, a durable plane, a trace collector. This is the one place that decides it.
#[derive(Debug, Clone, Default)]
pub(super) struct BenchEnv {
    set: Vec<(String, OsString)>,
}

/// The prefixes of the variables a bench's processes never inherit: Iron's own (`IRON_*`,
/// see `core::config`) and the OpenTelemetry exporter's (`OTEL_*`: a bench decides itself
/// whether a node traces).
const NOT_INHERITED: &[&str] = &["IRON_", "OTEL_"];

fn not_inherited(key: &OsStr) -> bool {
    key.to_str()
        .is_some_and(|k| NOT_INHERITED.iter().any(|p| k.starts_with(p)))
}

impl BenchEnv {
    /// The caller's environment less what is not inherited; nothing set yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` for the started processes (after the caller's are removed).
    pub fn set(mut self, key: &str, value: impl AsRef<OsStr>) -> Self {
        self.set.retain(|(k, _)| k != key);
        self.set
            .push((key.to_string(), value.as_ref().to_os_string()));
        self
    }

    /// The router the processes join (`IRON_ROUTER`).
    pub fn router(self, endpoint: &str) -> Self {
        self.set(crate::spine::control::ROUTER_ENV, endpoint)
    }

    /// The configuration file they read (`IRON_CONFIG`), which names their state directory.
    pub fn config(self, path: &Path) -> Self {
        self.set("IRON_CONFIG", path)
    }

    /// A command for `program` with this environment.
    pub fn command(&self, program: impl AsRef<OsStr>) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(program);
        for (key, _) in std::env::vars_os() {
            if not_inherited(&key) {
                cmd.env_remove(key);
            }
        }
        cmd.envs(self.set.iter().map(|(k, v)| (k, v)));
        cmd
    }

    /// The whole environment as it would be given (variables that are not Unicode left out).
    pub fn vars(&self) -> std::collections::BTreeMap<String, String> {
        let mut vars: std::collections::BTreeMap<String, String> = std::env::vars_os()
            .filter(|(k, _)| !not_inherited(k))
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        for (k, v) in &self.set {
            if let Some(v) = v.to_str() {
                vars.insert(k.clone(), v.to_string());
            }
        }
        vars
    }
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
    pub async fn start() -> Result<Self, BenchError> {
        let port = crate::launch::nats::free_port().map_err(|source| BenchError::Io {
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
pub(super) fn scratch_dir() -> Result<tempfile::TempDir, BenchError> {
    tempfile::tempdir().map_err(|source| BenchError::Io {
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
    ) -> Result<Self, BenchError> {
        if let Some(url) = nats {
            return Ok(Self {
                url,
                monitor: None,
                local: None,
            });
        }
        let port = || {
            crate::launch::nats::free_port().map_err(|source| BenchError::Io {
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
    fn a_bench_gives_its_processes_its_own_configuration_not_the_callers() {
        assert!(not_inherited(OsStr::new("IRON_STATE_DIR")));
        assert!(not_inherited(OsStr::new("IRON_ROUTER")));
        assert!(not_inherited(OsStr::new("OTEL_EXPORTER_OTLP_ENDPOINT")));
        assert!(!not_inherited(OsStr::new("PATH")));
        assert!(!not_inherited(OsStr::new("HOME")));
        let env = BenchEnv::new()
            .router("tcp/127.0.0.1:1")
            .config(Path::new("/bench/iron.yaml"))
            .router("tcp/127.0.0.1:2");
        let vars = env.vars();
        assert_eq!(
            vars["IRON_ROUTER"], "tcp/127.0.0.1:2",
            "the last one set wins"
        );
        assert_eq!(vars["IRON_CONFIG"], "/bench/iron.yaml");
        assert!(
            vars.keys()
                .filter(|k| k.starts_with("IRON_") || k.starts_with("OTEL_"))
                .all(|k| k == "IRON_ROUTER" || k == "IRON_CONFIG"),
            "{vars:?}"
        );
        // The command removes each of the caller's (whatever this test process has) and sets
        // the bench's.
        let cmd = env.command("true");
        let envs: Vec<(&OsStr, Option<&OsStr>)> = cmd.as_std().get_envs().collect();
        for (key, _) in std::env::vars_os().filter(|(k, _)| not_inherited(k)) {
            assert!(
                envs.iter().any(|(k, _)| *k == key),
                "{key:?} is neither removed nor set"
            );
        }
        assert!(envs.contains(&(
            OsStr::new("IRON_ROUTER"),
            Some(OsStr::new("tcp/127.0.0.1:2"))
        )));
    }

    #[test]
    fn units_for_printing() {
        assert_eq!(us(Duration::from_micros(1_500)), 1_500.0);
        assert_eq!(ms(Duration::from_micros(1_500)), 1.5);
    }
}
