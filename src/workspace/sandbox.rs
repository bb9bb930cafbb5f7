//! Confined execution: a command run under bubblewrap (`bwrap`) so that it can change nothing
//! but its scratch directory.
//!
//! What the sandbox is, for each run:
//! - the host's filesystem read-only (`--ro-bind / /`), the scratch directory writable, and
//!   inside the scratch the governance paths (`aem/`, `config/`, `.git`) read-only again;
//! - `/tmp` private and read-only but for [`PRIVATE_TMP`] (the run's `TMPDIR`), which is gone
//!   when the run ends; the home directory and every path
//!   in [`MASKED`] plus the ones the caller adds (the state directory, which holds the caller
//!   key) replaced by an empty read-only directory or an empty file, except what the run
//!   exposes read-only again (a toolchain under the home directory);
//! - its own user, PID, IPC, UTS, cgroup and network namespaces (`--unshare-all`) and no
//!   capabilities (`--cap-drop ALL`, so even root inside cannot remount): no network at all
//!   unless the run allows it (`--share-net`), no process outside visible or signalable, a
//!   fresh `/proc` and a minimal `/dev`;
//! - a clean environment (`--clearenv`; `PATH`, `LANG`, `HOME` and `TMPDIR` only, plus what the
//!   run names), a new session (no terminal injection), and death with its parent;
//! - a time limit and an output limit: past either, the whole sandbox is killed and the run
//!   says which.
//!
//! Where `bwrap` is not on `PATH` or cannot create namespaces, [`Sandbox::locate`] refuses
//! with why; nothing here ever runs a command unconfined.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::Notify;

/// Credential stores and secrets masked in every sandbox (when they exist on the host).
pub const MASKED: &[&str] = &[
    "/root",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/ssh",
    "/run/secrets",
    "/var/run/secrets",
];

/// Paths inside the scratch that stay read-only: the governance of the tree it is a copy of.
pub const READ_ONLY_IN_SCRATCH: &[&str] = &["aem", "config", ".git"];

/// The one writable temporary directory of a sandbox (its `TMPDIR`), gone when the run ends.
pub const PRIVATE_TMP: &str = "/tmp/iron-private";

/// The PATH a sandboxed command sees.
const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Directories under the home directory that hold credentials: never exposed as a toolchain.
const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config",
    ".password-store",
    ".netrc",
    ".git-credentials",
];

/// Files that hold credentials inside a toolchain (a registry token in `~/.cargo`): masked
/// again in an exposed tree.
const TOOLCHAIN_SECRETS: &[&str] = &[
    "credentials",
    "credentials.toml",
    ".credentials.toml",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
];

/// Variables that say where a toolchain is, passed from the host when a run has a toolchain.
const TOOLCHAIN_VARS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOROOT",
    "JAVA_HOME",
];

/// What a mesh's `workspace:` declares for every confined run.
#[derive(Debug, Clone, Default)]
pub struct RunPolicy {
    /// Whether runs may use the network.
    pub network: bool,
    /// Extra paths to mask (the state directory).
    pub mask: Vec<PathBuf>,
    /// `toolchain:` as declared (absolute or `~/…`).
    pub toolchain: Vec<String>,
}

impl RunPolicy {
    /// The policy `ws` declares, with `state_dir` (which holds the caller key) masked.
    pub fn of(ws: &crate::aem::WorkspaceEntry, state_dir: &Path) -> Self {
        Self {
            network: ws.network,
            mask: vec![state_dir.to_path_buf()],
            toolchain: ws.toolchain.clone(),
        }
    }
}

/// Why a command was not run, or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// bubblewrap is missing or cannot confine here: confined execution refuses to run.
    #[error("confined execution is unavailable: {0}")]
    Unavailable(String),
    /// The working directory is not inside the scratch.
    #[error("{} is not inside the scratch {}", cwd.display(), scratch.display())]
    OutsideScratch {
        /// The working directory asked for.
        cwd: PathBuf,
        /// The scratch.
        scratch: PathBuf,
    },
    /// A declared toolchain cannot be shown to the run.
    #[error("toolchain `{entry}` cannot be shown to a confined run: {why}")]
    Toolchain {
        /// The entry as declared.
        entry: String,
        /// Why not.
        why: String,
    },
    /// The run could not be started or watched.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The tree a `toolchain:` entry names here, resolved (links followed), or why it may not be
/// shown: it must exist and must not be, hold or lie in a credential store or one of the
/// run's own `masks` (the state directory, which holds the caller key).
fn toolchain_path(
    entry: &str,
    home: Option<&Path>,
    masks: &[PathBuf],
) -> Result<PathBuf, SandboxError> {
    let refuse = |why: String| SandboxError::Toolchain {
        entry: entry.to_string(),
        why,
    };
    let named = match entry.strip_prefix("~/") {
        Some(rest) => home
            .ok_or_else(|| refuse("HOME is not set".into()))?
            .join(rest),
        None => PathBuf::from(entry),
    };
    let path = named
        .canonicalize()
        .map_err(|e| refuse(format!("{}: {e}", named.display())))?;
    let home = home.and_then(|h| h.canonicalize().ok());
    let secret = MASKED
        .iter()
        .map(PathBuf::from)
        .filter(|m| Some(m) != home.as_ref() && m != Path::new("/root"))
        .chain(
            home.iter()
                .flat_map(|h| HOME_SECRETS.iter().map(move |s| h.join(s))),
        )
        .chain(
            masks
                .iter()
                .map(|m| m.canonicalize().unwrap_or_else(|_| m.clone())),
        )
        .find(|m| path.starts_with(m) || m.starts_with(&path));
    if let Some(m) = secret {
        return Err(refuse(format!(
            "{} is, holds or lies in {}, which the sandbox masks",
            path.display(),
            m.display()
        )));
    }
    if home.as_ref().is_some_and(|h| h.starts_with(&path)) || path == Path::new("/root") {
        return Err(refuse(format!(
            "{} holds the whole home directory",
            path.display()
        )));
    }
    Ok(path)
}

/// bubblewrap, found and known to work on this machine.
#[derive(Debug, Clone)]
pub struct Sandbox {
    bwrap: PathBuf,
}

/// One confined command.
#[derive(Debug, Clone)]
pub struct Confined {
    /// The program (looked up on the sandbox's `PATH` when it has no `/`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The scratch directory: the only writable tree.
    pub scratch: PathBuf,
    /// Working directory, inside the scratch (the scratch itself when `None`).
    pub cwd: Option<PathBuf>,
    /// Whether it may use the network.
    pub network: bool,
    /// Extra paths to mask (e.g. the state directory).
    pub mask: Vec<PathBuf>,
    /// Paths shown read-only even under a mask (a toolchain under the home directory); see
    /// [`Confined::under`].
    pub expose: Vec<PathBuf>,
    /// Directories put first on `PATH` (the `bin/` of an exposed toolchain).
    pub path_first: Vec<PathBuf>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Wall-clock limit.
    pub timeout: Duration,
    /// Most bytes kept of stdout and of stderr each; more kills the run.
    pub max_output: usize,
}

impl Confined {
    /// This run under `policy`: its network and masks, and its toolchain shown read-only
    /// (each `~/…` taken in this process's home directory), each tree's `bin/` first on
    /// `PATH`, the credential files inside it masked again, and the variables that locate a
    /// toolchain passed on. A toolchain entry that is missing, or that is or holds a
    /// credential store, is refused.
    pub fn under(mut self, policy: &RunPolicy) -> Result<Self, SandboxError> {
        self.network = policy.network;
        self.mask.extend(policy.mask.iter().cloned());
        let home = std::env::var_os("HOME").map(PathBuf::from);
        for entry in &policy.toolchain {
            let path = toolchain_path(entry, home.as_deref(), &policy.mask)?;
            for secret in TOOLCHAIN_SECRETS {
                self.mask.push(path.join(secret));
            }
            if path.join("bin").is_dir() {
                self.path_first.push(path.join("bin"));
            }
            self.expose.push(path);
        }
        if !policy.toolchain.is_empty() {
            for var in TOOLCHAIN_VARS {
                if let Ok(value) = std::env::var(var) {
                    self.env.push((var.to_string(), value));
                }
            }
        }
        Ok(self)
    }

    /// `program args…` in `scratch`: no network, 60 s, 1 MiB of output.
    pub fn new(program: &str, args: &[&str], scratch: &Path) -> Self {
        Self {
            program: program.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            scratch: scratch.to_path_buf(),
            cwd: None,
            network: false,
            mask: Vec::new(),
            expose: Vec::new(),
            path_first: Vec::new(),
            env: Vec::new(),
            timeout: Duration::from_secs(60),
            max_output: 1024 * 1024,
        }
    }
}

/// How a confined run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled,
    /// It ran past its time limit and was killed.
    TimedOut,
    /// It wrote more than its output limit and was killed.
    OutputLimit,
}

/// What a confined run did.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// How it ended.
    pub ended: Ended,
    /// Its stdout (at most the limit).
    pub stdout: Vec<u8>,
    /// Its stderr (at most the limit).
    pub stderr: Vec<u8>,
    /// How long it ran.
    pub elapsed: Duration,
}

impl RunOutput {
    /// Whether it exited 0.
    pub fn success(&self) -> bool {
        self.ended == Ended::Exited(0)
    }
}

impl Sandbox {
    /// Finds `bwrap` on `PATH` and checks that it can create the namespaces a run needs.
    pub async fn locate() -> Result<Sandbox, SandboxError> {
        Sandbox::locate_in(&std::env::var_os("PATH").unwrap_or_default()).await
    }

    /// [`Sandbox::locate`] on the search path `path`.
    pub async fn locate_in(path: &std::ffi::OsStr) -> Result<Sandbox, SandboxError> {
        let bwrap = std::env::split_paths(path)
            .map(|d| d.join("bwrap"))
            .find(|p| is_executable(p))
            .ok_or_else(|| {
                SandboxError::Unavailable(
                    "bubblewrap (`bwrap`) is not on PATH; install it (Debian: apt-get install bubblewrap)"
                        .to_string(),
                )
            })?;
        let probe = Command::new(&bwrap)
            .args([
                "--ro-bind",
                "/",
                "/",
                "--unshare-all",
                "--die-with-parent",
                "--",
                "true",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(10), probe)
            .await
            .map_err(|_| SandboxError::Unavailable(format!("{} did not answer", bwrap.display())))?
            .map_err(|e| SandboxError::Unavailable(format!("{}: {e}", bwrap.display())))?;
        if !out.status.success() {
            return Err(SandboxError::Unavailable(format!(
                "{} cannot create namespaces here: {}",
                bwrap.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(Sandbox { bwrap })
    }

    /// The bwrap arguments for `run` (everything before the command).
    fn arguments(&self, run: &Confined, scratch: &Path, cwd: &Path) -> Vec<OsString> {
        let mut a = Args::default();
        a.add(&["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
        // A private /tmp with one writable directory, TMPDIR; the rest of it (and the way to a
        // scratch that lives under /tmp) read-only once the scratch is mounted.
        a.add(&["--tmpfs", "/tmp", "--dir", PRIVATE_TMP]);
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let masks: Vec<(PathBuf, bool)> = MASKED
            .iter()
            .map(PathBuf::from)
            .chain(home.clone())
            .chain(run.mask.iter().cloned())
            .filter(|p| p != scratch)
            .filter_map(|p| std::fs::metadata(&p).ok().map(|m| (p, m.is_dir())))
            .collect();
        // Masks first, the scratch over them (a scratch under a masked tree stays reachable,
        // nothing else of that tree does), then masks inside the scratch.
        let (inside, outside): (Vec<_>, Vec<_>) =
            masks.iter().partition(|(p, _)| p.starts_with(scratch));
        // Secrets inside an exposed toolchain are masked after it is shown, the rest now.
        let in_exposed = |p: &Path| run.expose.iter().any(|e| p.starts_with(e) && p != e);
        let (in_toolchain, outside): (Vec<_>, Vec<_>) =
            outside.into_iter().partition(|(p, _)| in_exposed(p));
        for (path, dir) in &outside {
            a.mask(path, *dir);
        }
        a.bind("--bind", scratch);
        for dir in READ_ONLY_IN_SCRATCH {
            let p = scratch.join(dir);
            if p.exists() {
                a.bind("--ro-bind", &p);
            }
        }
        for (path, dir) in &inside {
            a.mask(path, *dir);
        }
        for path in run.expose.iter().filter(|p| p.exists()) {
            a.bind("--ro-bind", path);
        }
        for (path, dir) in &in_toolchain {
            a.mask(path, *dir);
        }
        // An empty mask is read-only too: a write that seems to work and then vanishes is
        // worse than one that fails. (A mask holding the scratch keeps the scratch writable:
        // the scratch is a mount of its own.)
        for (path, _) in masks.iter().filter(|(_, dir)| *dir) {
            a.add(&["--remount-ro"]);
            a.path(path);
        }
        a.add(&["--remount-ro", "/tmp", "--tmpfs", PRIVATE_TMP]);
        a.add(&[
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
        ]);
        if run.network {
            a.add(&["--share-net"]);
        }
        let mut path: Vec<String> = run
            .path_first
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        path.push(SANDBOX_PATH.to_string());
        a.add(&["--clearenv", "--setenv", "PATH", &path.join(":")]);
        a.add(&[
            "--setenv",
            "LANG",
            "C.UTF-8",
            "--setenv",
            "TMPDIR",
            PRIVATE_TMP,
        ]);
        a.add(&["--setenv", "HOME"]);
        a.path(&home.unwrap_or_else(|| PathBuf::from("/tmp")));
        for (k, v) in &run.env {
            a.add(&["--setenv", k, v]);
        }
        a.add(&["--chdir"]);
        a.path(cwd);
        a.add(&["--"]);
        a.0
    }

    /// Runs `run` confined, within its time and output limits.
    pub async fn run(&self, run: &Confined) -> Result<RunOutput, SandboxError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| SandboxError::Io { what, source }
        };
        let scratch = run.scratch.canonicalize().map_err(io(&format!(
            "resolving the scratch {}",
            run.scratch.display()
        )))?;
        let cwd = match &run.cwd {
            None => scratch.clone(),
            Some(c) => {
                let c = if c.is_absolute() {
                    c.clone()
                } else {
                    scratch.join(c)
                };
                let resolved = c
                    .canonicalize()
                    .map_err(io(&format!("resolving {}", c.display())))?;
                if !resolved.starts_with(&scratch) {
                    return Err(SandboxError::OutsideScratch { cwd: c, scratch });
                }
                resolved
            }
        };
        let mut child = Command::new(&self.bwrap)
            .args(self.arguments(run, &scratch, &cwd))
            .arg(&run.program)
            .args(&run.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(io(&format!("starting {}", self.bwrap.display())))?;
        let started = Instant::now();
        let cut = Arc::new(Notify::new());
        let stdout = tokio::spawn(read_capped(
            child.stdout.take(),
            run.max_output,
            cut.clone(),
        ));
        let stderr = tokio::spawn(read_capped(
            child.stderr.take(),
            run.max_output,
            cut.clone(),
        ));
        let ended = tokio::select! {
            status = child.wait() => match status.map_err(io("waiting for the sandbox"))?.code() {
                Some(code) => Ended::Exited(code),
                None => Ended::Signalled,
            },
            () = tokio::time::sleep(run.timeout) => Ended::TimedOut,
            () = cut.notified() => Ended::OutputLimit,
        };
        if !matches!(ended, Ended::Exited(_) | Ended::Signalled) {
            // bwrap dies, and with it (--die-with-parent, PID namespace) everything inside.
            let _ = child.kill().await;
        }
        // Everything inside is gone once its PID 1 is, so the pipes close; bounded anyway.
        let collect = |h: tokio::task::JoinHandle<Vec<u8>>| async move {
            match tokio::time::timeout(Duration::from_secs(5), h).await {
                Ok(Ok(bytes)) => bytes,
                _ => Vec::new(),
            }
        };
        Ok(RunOutput {
            ended,
            stdout: collect(stdout).await,
            stderr: collect(stderr).await,
            elapsed: started.elapsed(),
        })
    }
}

/// bwrap's command line, as it is built.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn add(&mut self, words: &[&str]) {
        self.0.extend(words.iter().map(OsString::from));
    }

    fn path(&mut self, p: &Path) {
        self.0.push(p.as_os_str().to_os_string());
    }

    /// `flag p p`: `p` mounted at itself.
    fn bind(&mut self, flag: &str, p: &Path) {
        self.add(&[flag]);
        self.path(p);
        self.path(p);
    }

    /// An empty directory over a directory, an empty file over a file.
    fn mask(&mut self, p: &Path, dir: bool) {
        if dir {
            self.add(&["--tmpfs"]);
        } else {
            self.add(&["--ro-bind", "/dev/null"]);
        }
        self.path(p);
    }
}

/// Reads `stream` to its end or until `limit` bytes, then wakes `cut` and stops.
async fn read_capped(
    stream: Option<impl AsyncRead + Unpin>,
    limit: usize,
    cut: Arc<Notify>,
) -> Vec<u8> {
    let Some(mut stream) = stream else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return out,
            Ok(n) => {
                let room = limit.saturating_sub(out.len());
                out.extend_from_slice(&buf[..n.min(room)]);
                if n > room {
                    cut.notify_one();
                    return out;
                }
            }
        }
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
