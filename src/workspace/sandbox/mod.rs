//! Confined execution: a command run under bubblewrap (`bwrap`) so that it can change nothing
//! but its scratch directory and reach nothing it was not given.
//!
//! What the sandbox is, for each run:
//! - an allow-list of the filesystem ([`mounts`]): the system's programs, libraries and
//!   `/etc` (without its secrets) read-only, the scratch writable (its governance read-only
//!   again), a private `/tmp` and home directory, declared toolchains read-only; nothing of
//!   `/run`, the host's `/tmp`, the user's home, the real working tree or the state directory;
//! - its own user, PID, IPC, UTS, cgroup and network namespaces (`--unshare-all`) and no
//!   capabilities (`--cap-drop ALL`, so even root inside cannot remount), which also means no
//!   new privileges: never the host's network; a run granted network gets a user-mode
//!   network that reaches the outside but not the host's loopback ([`net`]);
//! - resource limits ([`limits`]): memory and CPU time per process, how many processes the
//!   run may add, the size of a file, the size of `TMPDIR`;
//! - a clean environment (`--clearenv`; `PATH`, `LANG`, `HOME` and `TMPDIR` only, plus what the
//!   run names), a new session (no terminal injection), and death with its parent;
//! - a time limit and an output limit: past either, the whole sandbox is killed and the run
//!   says which.
//!
//! Where `bwrap` is not on `PATH` or cannot create namespaces, [`Sandbox::locate`] refuses
//! with why, and a run granted network refuses where `slirp4netns` is missing; nothing here
//! ever runs a command unconfined or on the host's network.

mod cgroup;
mod limits;
pub mod mounts;
mod net;

pub use limits::Limits;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::sync::Notify;

/// Credential stores a declared toolchain may never be, hold or lie in.
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
    /// slirp4netns, found on the same search path: the network of a run granted one.
    slirp: Option<PathBuf>,
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
    /// What it may use besides time and output.
    pub limits: Limits,
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
            limits: Limits::default(),
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
        let slirp = find_in(path, "slirp4netns");
        let bwrap = find_in(path, "bwrap").ok_or_else(|| {
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
        Ok(Sandbox { bwrap, slirp })
    }

    /// The bwrap arguments for `run` (everything before the command).
    fn arguments(
        run: &Confined,
        scratch: &Path,
        cwd: &Path,
        generated: &mut mounts::Generated,
    ) -> Result<Vec<OsString>, SandboxError> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute() && h != Path::new("/"))
            .unwrap_or_else(|| PathBuf::from("/home/iron"));
        let mut a = mounts::arguments(run, scratch, &home, generated)?;
        let mut add = |words: &[&str]| a.extend(words.iter().map(OsString::from));
        add(&[
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
        ]);
        if run.network {
            add(&["--info-fd", &INFO_FD.to_string()]);
        }
        let mut path: Vec<String> = run
            .path_first
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        path.push(SANDBOX_PATH.to_string());
        add(&["--clearenv", "--setenv", "PATH", &path.join(":")]);
        add(&[
            "--setenv",
            "LANG",
            "C.UTF-8",
            "--setenv",
            "TMPDIR",
            PRIVATE_TMP,
        ]);
        for (k, v) in &run.env {
            add(&["--setenv", k, v]);
        }
        a.extend([
            OsString::from("--setenv"),
            OsString::from("HOME"),
            home.into_os_string(),
            OsString::from("--chdir"),
            cwd.as_os_str().to_os_string(),
            OsString::from("--"),
        ]);
        if run.network {
            a.extend(net::GATE.iter().map(OsString::from));
        }
        Ok(a)
    }

    /// The bubblewrap command that runs `run` confined, its limits set between fork and exec,
    /// and what must outlive the process. Standard streams are left to the caller. For a run
    /// granted network, `info_fd` is the write end of bubblewrap's `--info-fd` pipe.
    fn prepare(
        &self,
        run: &Confined,
        info_fd: Option<i32>,
    ) -> Result<(Command, Held), SandboxError> {
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
        let mut generated = mounts::Generated::default();
        let mut cmd = Command::new(&self.bwrap);
        cmd.args(Self::arguments(run, &scratch, &cwd, &mut generated)?)
            .arg(&run.program)
            .args(&run.args)
            .kill_on_drop(true);
        let rlimits = limits::Rlimits::of(&run.limits, run.timeout);
        let group = cgroup::RunGroup::make(
            &format!("iron-sandbox-{}", uuid::Uuid::new_v4().simple()),
            &run.limits,
        );
        // SAFETY: getuid cannot fail and has no side effects.
        if !group.caps_processes && unsafe { libc::getuid() } == 0 {
            // The kernel never applies RLIMIT_NPROC to root: without a pids group a fork bomb
            // inside would have no bound.
            return Err(SandboxError::Unavailable(
                "running as root, the process limit needs a pids control group this process \
                 can make (cgroup v1 `pids` or v2 with `pids` delegated), and there is none"
                    .into(),
            ));
        }
        let joiner = group.joiner();
        // SAFETY: only setrlimit, dup2 and fcntl run in the child, all async-signal-safe; the
        // descriptor stays open in the parent until spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                joiner.join()?;
                rlimits.apply()?;
                if let Some(fd) = info_fd {
                    inherit_as(fd, INFO_FD)?;
                }
                Ok(())
            });
        }
        Ok((
            cmd,
            Held {
                _generated: generated,
                group: Some(group),
            },
        ))
    }

    /// The command that starts `run` confined for a caller that talks to it over its standard
    /// streams for as long as it lives (a tool server), with what must live as long as the
    /// process does. Such a run has no network and no time limit of its own (its CPU time is
    /// still bounded by `run.timeout`); the caller pipes its streams and ends it.
    pub fn command(&self, run: &Confined) -> Result<(Command, Held), SandboxError> {
        if run.network {
            return Err(SandboxError::Unavailable(
                "a confined process spoken to over its standard streams has no network".into(),
            ));
        }
        self.prepare(run, None)
    }

    /// Runs `run` confined, within its time and output limits.
    pub async fn run(&self, run: &Confined) -> Result<RunOutput, SandboxError> {
        let slirp = match (run.network, &self.slirp) {
            (false, _) => None,
            (true, Some(slirp)) => Some(slirp.clone()),
            (true, None) => return Err(net::missing()),
        };
        let info = match &slirp {
            Some(_) => {
                let (tx, rx) = tokio::net::unix::pipe::pipe().map_err(io("making a pipe"))?;
                Some((rx, tx.into_blocking_fd().map_err(io("making a pipe"))?))
            }
            None => None,
        };
        let info_fd = info
            .as_ref()
            .map(|(_, tx)| std::os::fd::AsRawFd::as_raw_fd(tx));
        let (mut cmd, held) = self.prepare(run, info_fd)?;
        cmd.stdin(if slirp.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(io(&format!("starting {}", self.bwrap.display())))?;
        let _network = match (slirp, info) {
            (Some(slirp), Some((mut rx, tx))) => {
                drop(tx);
                let gate = child.stdin.take().ok_or_else(|| {
                    SandboxError::Unavailable("user-mode network: no gate to open".into())
                })?;
                match net::attach(&slirp, &mut rx, gate).await {
                    Ok(attached) => Some(attached),
                    Err(e) => {
                        let _ = child.kill().await;
                        return Err(e);
                    }
                }
            }
            _ => None,
        };
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
        let out = RunOutput {
            ended,
            stdout: collect(stdout).await,
            stderr: collect(stderr).await,
            elapsed: started.elapsed(),
        };
        held.release().await;
        Ok(out)
    }
}

/// What a confined process needs kept while it runs: the files made for it and its control
/// groups, removed when it is released or dropped.
pub struct Held {
    _generated: mounts::Generated,
    group: Option<cgroup::RunGroup>,
}

impl Held {
    /// Removes what was kept, once the process is gone.
    pub async fn release(mut self) {
        if let Some(group) = self.group.take() {
            group.remove().await;
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Dropped without release (a tool server stopped with its handle): the groups are
        // removed in the background once the killed processes are reaped.
        if let Some(group) = self.group.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(group.remove());
        }
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").finish_non_exhaustive()
    }
}

fn io(what: &str) -> impl FnOnce(std::io::Error) -> SandboxError {
    let what = what.to_string();
    move |source| SandboxError::Io { what, source }
}

/// The descriptor bubblewrap writes its `--info-fd` document to.
const INFO_FD: i32 = 3;

/// Makes `fd` the child's descriptor `target`, kept across exec. Runs between fork and exec.
fn inherit_as(fd: i32, target: i32) -> std::io::Result<()> {
    // SAFETY: dup2 and fcntl on descriptors this process owns; async-signal-safe.
    let ok = unsafe {
        if fd == target {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) >= 0
        } else {
            libc::dup2(fd, target) >= 0
        }
    };
    if ok {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
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

/// The executable `name` on the search path `path`.
fn find_in(path: &std::ffi::OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
