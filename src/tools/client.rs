//! An MCP client for one `local` server: a child process spoken to over stdio through
//! `rmcp`. [`McpClient`] is the handle; tasks own the I/O (rmcp's service task, a task that
//! checks every line the server writes before rmcp sees it, one that keeps the server's
//! last stderr lines, and one that owns the child process).
//!
//! **Environment.** The child starts with an empty environment plus exactly what its
//! descriptor declares (each `${VAR}` / `${VAR:-default}` expanded from the environment the
//! caller passes in), plus `PATH` from that environment so `npx`, `uvx` or `python`
//! resolve — unless the descriptor sets `PATH` itself. Nothing else leaks: not `HOME`, not
//! API keys, not the expert's own variables. A server that needs more (`HOME` for a
//! cache, a proxy setting) declares it, e.g. `HOME: "${HOME}"`.
//!
//! **Faults.** A server that cannot start, exits or closes its output mid-call, sends a
//! line that is not a JSON-RPC message, or does not answer within the timeout gives a
//! [`ToolError`]; the handle is then broken ([`McpClient::is_alive`] is false) and the
//! process is stopped. Nothing here panics or hangs the caller.
//!
//! The process is its own process group, so stopping it also stops what it spawned (npx
//! runs node as a child). Dropping the handle kills the group.

use super::env::{EnvError, EnvMap, expand};
use super::error::ToolError;
use crate::aem::ServerDescriptor;
use crate::core::effect::Effect;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};
use tokio::sync::{oneshot, watch};

/// Variables passed through from the caller's environment to every local server.
pub const PASS_THROUGH: &[&str] = &["PATH"];
/// Longest line a server may write before it counts as malformed.
pub const MAX_LINE_BYTES: u64 = 16 * 1024 * 1024;
const STDERR_LINES: usize = 20;
const STDERR_LINE_CHARS: usize = 300;
const EXCERPT_CHARS: usize = 120;
const GRACE: Duration = Duration::from_secs(2);

/// Everything needed to start one local server, with references already expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSpec {
    /// Server name (for errors and logs).
    pub server: String,
    /// Program.
    pub command: String,
    /// Arguments.
    pub args: Vec<String>,
    /// The child's whole environment.
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub cwd: PathBuf,
}

impl LaunchSpec {
    /// The launch of a `local` descriptor: `${…}` in `command`, `args` and `env` expanded
    /// from `parent`, plus [`PASS_THROUGH`]. `None` for `native`/`remote` descriptors.
    pub fn from_descriptor(
        server: &str,
        descriptor: &ServerDescriptor,
        parent: &EnvMap,
        cwd: &Path,
    ) -> Option<Result<LaunchSpec, ToolError>> {
        let ServerDescriptor::Local { command, args, env } = descriptor else {
            return None;
        };
        let fail = |field: String, e: EnvError| ToolError::StartFailed {
            server: server.to_string(),
            reason: format!("{field}: {e}"),
            stderr: Vec::new(),
        };
        let build = || -> Result<LaunchSpec, ToolError> {
            let command = expand(command, parent).map_err(|e| fail("command".into(), e))?;
            let mut out_args = Vec::with_capacity(args.len());
            for (i, a) in args.iter().enumerate() {
                out_args.push(expand(a, parent).map_err(|e| fail(format!("args[{i}]"), e))?);
            }
            let mut child_env = BTreeMap::new();
            for var in PASS_THROUGH {
                if let Some(v) = parent.get(*var) {
                    child_env.insert(var.to_string(), v.clone());
                }
            }
            for (k, v) in env {
                child_env.insert(
                    k.clone(),
                    expand(v, parent).map_err(|e| fail(format!("env.{k}"), e))?,
                );
            }
            Ok(LaunchSpec {
                server: server.to_string(),
                command,
                args: out_args,
                env: child_env,
                cwd: cwd.to_path_buf(),
            })
        };
        Some(build())
    }
}

impl LaunchSpec {
    /// The same launch, started in `dir`: each relative argument that names an existing
    /// file or directory from the old working directory (a script, `./workspace/notes`) is
    /// made absolute first, so it still names the same thing.
    pub fn started_in(mut self, dir: &Path) -> LaunchSpec {
        if dir == self.cwd {
            return self;
        }
        for arg in &mut self.args {
            let p = Path::new(arg.as_str());
            if arg.starts_with('-') || p.is_absolute() {
                continue;
            }
            let from_old = self.cwd.join(p);
            if from_old.exists() {
                *arg = from_old.display().to_string();
            }
        }
        self.cwd = dir.to_path_buf();
        self
    }
}

/// Why a server cannot be started confined (a missing sandbox, a package not installed).
pub type ConfineError = Box<dyn std::error::Error + Send + Sync>;

/// Starts local servers confined instead of on the host as they are: the expert's sandbox,
/// implemented in a layer above this one.
pub trait Confine: Send + Sync {
    /// The command that starts `spec` confined (its standard streams left to the caller),
    /// and what must live as long as its process; or why it cannot be confined, in which
    /// case the server is not started.
    fn command(&self, spec: &LaunchSpec) -> Result<(Command, Box<dyn Send + Sync>), ConfineError>;
}

/// A tool as the running server lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveTool {
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// JSON schema of its arguments.
    pub input_schema: Value,
    /// `readOnlyHint`.
    pub read_only_hint: Option<bool>,
    /// `destructiveHint`.
    pub destructive_hint: Option<bool>,
    /// `idempotentHint`.
    pub idempotent_hint: Option<bool>,
    /// `openWorldHint`.
    pub open_world_hint: Option<bool>,
}

impl LiveTool {
    /// The effect the hints claim, if they claim one (it may only raise, never lower).
    pub fn annotation(&self) -> Option<Effect> {
        Effect::from_mcp_hints(self.read_only_hint, self.destructive_hint)
    }
}

/// What broke a connection, as seen by the I/O tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fault {
    Malformed(String),
    Closed(String),
    Exited(String),
}

/// Why a server that was spawned did not become a client.
#[derive(Debug, thiserror::Error)]
enum NotStarted {
    /// The MCP handshake failed.
    #[error("the MCP handshake failed: {0}")]
    Handshake(#[source] Box<rmcp::service::ClientInitializeError>),
    /// Listing its tools failed.
    #[error("listing its tools failed: {0}")]
    ListTools(#[source] ServiceError),
    /// It broke the protocol or stopped first.
    #[error("{}", match .0 {
        Some(Fault::Malformed(line)) => format!("it wrote a line that is not JSON-RPC: {line:?}"),
        Some(Fault::Closed(d) | Fault::Exited(d)) => d.clone(),
        None => "it stopped".to_string(),
    })]
    Fault(Option<Fault>),
    /// No answer in time.
    #[error("no answer to the MCP handshake within {} s", .0.as_secs())]
    TimedOut(Duration),
}

/// The handle to one running server.
pub struct McpClient {
    server: String,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientConfig>>>,
    peer: Peer<RoleClient>,
    faults: watch::Receiver<Option<Fault>>,
    tools: Vec<LiveTool>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    process: ProcessGuard,
    broken: AtomicBool,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.server)
            .field("pid", &self.process.pid)
            .field("alive", &self.is_alive())
            .finish()
    }
}

/// Kills the child's process group when dropped (unless it already exited).
struct ProcessGuard {
    pid: i32,
    exited: Arc<AtomicBool>,
    kill: Mutex<Option<oneshot::Sender<()>>>,
    /// What a confined server's sandbox keeps while it runs, released after the kill.
    _held: Option<Box<dyn Send + Sync>>,
}

impl ProcessGuard {
    fn kill_now(&self) {
        if !self.exited.load(Ordering::SeqCst) && self.pid > 0 {
            // SAFETY: killpg has no memory effects; the group is the child's own
            // (process_group(0)) and has not been reaped (exited is false).
            unsafe {
                libc::killpg(self.pid, libc::SIGKILL);
            }
        }
        if let Ok(mut k) = self.kill.lock()
            && let Some(tx) = k.take()
        {
            let _ = tx.send(());
        }
    }
}

impl Drop for ProcessGuard {
    fn drop(&mut self) {
        self.kill_now();
    }
}

fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if text.chars().count() > EXCERPT_CHARS {
        out.push('…');
    }
    out
}

/// Sets the fault unless one is already set (the first cause wins), except that a known
/// exit status replaces a bare "output closed".
fn set_fault(tx: &watch::Sender<Option<Fault>>, fault: Fault) {
    tx.send_if_modified(|current| match (current.as_ref(), &fault) {
        (None, _) | (Some(Fault::Closed(_)), Fault::Exited(_)) => {
            *current = Some(fault.clone());
            true
        }
        _ => false,
    });
}

/// A JSON-RPC message (or a batch of them): what may be passed on to rmcp.
fn is_jsonrpc(line: &[u8]) -> bool {
    fn one(v: &Value) -> bool {
        v.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
    }
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Array(items)) => !items.is_empty() && items.iter().all(one),
        Ok(v) => one(&v),
        Err(_) => false,
    }
}

/// Reads the server's stdout line by line and passes on only JSON-RPC messages; anything
/// else breaks the connection with [`Fault::Malformed`].
async fn tap_stdout(
    stdout: ChildStdout,
    mut to_rmcp: tokio::io::DuplexStream,
    faults: watch::Sender<Option<Fault>>,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) => {
                set_fault(&faults, Fault::Closed("it closed its output".into()));
                break;
            }
            Ok(_) => {
                if line.len() as u64 >= MAX_LINE_BYTES && !line.ends_with(b"\n") {
                    set_fault(
                        &faults,
                        Fault::Malformed(format!("a line longer than {MAX_LINE_BYTES} bytes")),
                    );
                    break;
                }
                let body = line.trim_ascii();
                if body.is_empty() {
                    continue;
                }
                if !is_jsonrpc(body) {
                    set_fault(&faults, Fault::Malformed(excerpt(body)));
                    break;
                }
                let mut ok = to_rmcp.write_all(body).await.is_ok();
                ok = ok && to_rmcp.write_all(b"\n").await.is_ok();
                if !ok {
                    break;
                }
            }
            Err(e) => {
                set_fault(
                    &faults,
                    Fault::Closed(format!("reading its output failed: {e}")),
                );
                break;
            }
        }
    }
    let _ = to_rmcp.shutdown().await;
}

async fn keep_stderr(server: String, stderr: ChildStderr, ring: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "iron::tools::stderr", server = %server, "{line}");
        if let Ok(mut ring) = ring.lock() {
            if ring.len() == STDERR_LINES {
                ring.pop_front();
            }
            ring.push_back(line.chars().take(STDERR_LINE_CHARS).collect());
        }
    }
}

async fn supervise(
    mut child: Child,
    kill: oneshot::Receiver<()>,
    exited: Arc<AtomicBool>,
    faults: watch::Sender<Option<Fault>>,
) {
    tokio::select! {
        status = child.wait() => {
            exited.store(true, Ordering::SeqCst);
            let detail = match status {
                Ok(s) => format!("it exited ({s})"),
                Err(e) => format!("waiting for it failed: {e}"),
            };
            set_fault(&faults, Fault::Exited(detail));
        }
        _ = kill => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            exited.store(true, Ordering::SeqCst);
            set_fault(&faults, Fault::Exited("it was stopped".into()));
        }
    }
}

/// What must live as long as a confined server's process.
type Held = Option<Box<dyn Send + Sync>>;

/// The command that starts `spec`: as it is, its environment exactly the spec's, or through
/// `confine`, with what must live as long as its process.
fn command_of(
    spec: &LaunchSpec,
    confine: Option<&dyn Confine>,
) -> Result<(Command, Held), ConfineError> {
    match confine {
        None => {
            let mut cmd = Command::new(&spec.command);
            cmd.args(&spec.args)
                .env_clear()
                .envs(&spec.env)
                .current_dir(&spec.cwd);
            Ok((cmd, None))
        }
        Some(confine) => {
            let (cmd, held) = confine.command(spec)?;
            Ok((cmd, Some(held)))
        }
    }
}

impl LiveTool {
    /// A tool as the server's `tools/list` gave it.
    fn listed(t: &rmcp::model::Tool) -> LiveTool {
        let a = t.annotations.as_ref();
        LiveTool {
            name: t.name.to_string(),
            description: t.description.as_ref().map(|d| d.to_string()),
            input_schema: Value::Object((*t.input_schema).clone()),
            read_only_hint: a.and_then(|a| a.read_only_hint),
            destructive_hint: a.and_then(|a| a.destructive_hint),
            idempotent_hint: a.and_then(|a| a.idempotent_hint),
            open_world_hint: a.and_then(|a| a.open_world_hint),
        }
    }
}

impl McpClient {
    /// Starts the server (through `confine` when given), performs the MCP handshake and
    /// lists its tools, all within `start_timeout`.
    pub async fn start(
        spec: &LaunchSpec,
        start_timeout: Duration,
        confine: Option<&dyn Confine>,
    ) -> Result<McpClient, ToolError> {
        let server = spec.server.clone();
        let start_failed = |reason: String, stderr: Vec<String>| ToolError::StartFailed {
            server: server.clone(),
            reason,
            stderr,
        };
        let (mut cmd, held) = command_of(spec, confine).map_err(|reason| {
            start_failed(format!("it cannot run confined: {reason}"), Vec::new())
        })?;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| {
            start_failed(
                format!(
                    "cannot run `{}` in `{}`: {e}",
                    spec.command,
                    spec.cwd.display()
                ),
                Vec::new(),
            )
        })?;
        let pid = child.id().map(|p| p as i32).unwrap_or(0);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(start_failed(
                "its stdio could not be piped".into(),
                Vec::new(),
            ));
        };
        let (fault_tx, faults) = watch::channel(None);
        let ring = Arc::new(Mutex::new(VecDeque::new()));
        let exited = Arc::new(AtomicBool::new(false));
        let (kill_tx, kill_rx) = oneshot::channel();
        let process = ProcessGuard {
            pid,
            exited: exited.clone(),
            kill: Mutex::new(Some(kill_tx)),
            _held: held,
        };
        let (tap_end, rmcp_end) = tokio::io::duplex(256 * 1024);
        tokio::spawn(tap_stdout(stdout, tap_end, fault_tx.clone()));
        tokio::spawn(keep_stderr(server.clone(), stderr, ring.clone()));
        tokio::spawn(supervise(child, kill_rx, exited, fault_tx));

        let config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("iron", env!("CARGO_PKG_VERSION")),
        );
        let mut fault_rx = faults.clone();
        let handshake = async {
            let service = config
                .serve((rmcp_end, stdin))
                .await
                .map_err(|e| NotStarted::Handshake(Box::new(e)))?;
            let tools = service
                .peer()
                .list_all_tools()
                .await
                .map_err(NotStarted::ListTools)?;
            Ok::<_, NotStarted>((service, tools))
        };
        let outcome = tokio::select! {
            biased;
            f = fault_rx.wait_for(Option::is_some) => {
                let fault = f.map(|f| f.clone()).ok().flatten();
                Err(NotStarted::Fault(fault))
            }
            r = tokio::time::timeout(start_timeout, handshake) => {
                r.unwrap_or(Err(NotStarted::TimedOut(start_timeout)))
            }
        };
        let tail = || {
            ring.lock()
                .map(|r| r.iter().cloned().collect())
                .unwrap_or_default()
        };
        let (service, tools) = match outcome {
            Ok(v) => v,
            Err(reason) => {
                process.kill_now();
                // Let the stderr task catch the last words before reporting them.
                tokio::task::yield_now().await;
                return Err(start_failed(reason.to_string(), tail()));
            }
        };
        let tools = tools.iter().map(LiveTool::listed).collect();
        Ok(McpClient {
            server,
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            faults,
            tools,
            stderr: ring,
            process,
            broken: AtomicBool::new(false),
        })
    }

    /// Server name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// Process id of the server (its process group has the same id).
    pub fn pid(&self) -> u32 {
        self.process.pid.max(0) as u32
    }

    /// The tools the server listed when it started.
    pub fn tools(&self) -> &[LiveTool] {
        &self.tools
    }

    /// The listed tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&LiveTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// False once the server exited, broke the protocol, or a call timed out.
    pub fn is_alive(&self) -> bool {
        !self.broken.load(Ordering::SeqCst) && self.faults.borrow().is_none()
    }

    fn stderr_tail(&self) -> Vec<String> {
        self.stderr
            .lock()
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn fault_error(&self, tool: &str, fault: Fault) -> ToolError {
        match fault {
            Fault::Malformed(line) => ToolError::Malformed {
                server: self.server.clone(),
                tool: tool.to_string(),
                line,
            },
            Fault::Closed(detail) | Fault::Exited(detail) => ToolError::Crashed {
                server: self.server.clone(),
                tool: tool.to_string(),
                detail,
                stderr: self.stderr_tail(),
            },
        }
    }

    fn current_fault(&self) -> Option<Fault> {
        self.faults.borrow().clone()
    }

    fn break_connection(&self) {
        self.broken.store(true, Ordering::SeqCst);
        self.process.kill_now();
    }

    /// Calls `tool` with `arguments` (an object, or `null` for none). Every call is bounded
    /// by `timeout`; on a timeout, a crash or a malformed message the connection is broken
    /// and the server stopped.
    pub async fn call(
        &self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
    ) -> Result<CallToolResult, ToolError> {
        if let Some(fault) = self.current_fault() {
            return Err(self.fault_error(tool, fault));
        }
        let mut params = CallToolRequestParams::new(tool.to_string());
        match arguments {
            Value::Object(map) => params = params.with_arguments(map.clone()),
            Value::Null => {}
            other => {
                return Err(ToolError::Rejected {
                    server: self.server.clone(),
                    tool: tool.to_string(),
                    message: format!("arguments must be a JSON object, not {other}"),
                });
            }
        }
        let mut faults = self.faults.clone();
        let outcome = tokio::select! {
            biased;
            f = faults.wait_for(Option::is_some) => {
                Err(f.ok().and_then(|f| f.clone()).map(|f| self.fault_error(tool, f)).unwrap_or(ToolError::Crashed {
                    server: self.server.clone(),
                    tool: tool.to_string(),
                    detail: "its I/O tasks ended".into(),
                    stderr: self.stderr_tail(),
                }))
            }
            r = tokio::time::timeout(timeout, self.peer.call_tool(params)) => match r {
                Err(_) => Err(ToolError::Timeout {
                    server: self.server.clone(),
                    tool: tool.to_string(),
                    secs: timeout.as_secs().max(1),
                }),
                Ok(Ok(result)) => Ok(result),
                Ok(Err(e)) => Err(self.service_error(tool, e)),
            },
        };
        if let Err(e) = &outcome
            && matches!(
                e,
                ToolError::Timeout { .. } | ToolError::Crashed { .. } | ToolError::Malformed { .. }
            )
        {
            self.break_connection();
        }
        outcome
    }

    fn service_error(&self, tool: &str, e: ServiceError) -> ToolError {
        if let Some(fault) = self.current_fault() {
            return self.fault_error(tool, fault);
        }
        match e {
            ServiceError::McpError(data) => ToolError::Rejected {
                server: self.server.clone(),
                tool: tool.to_string(),
                message: data.message.to_string(),
            },
            ServiceError::Timeout { timeout } => ToolError::Timeout {
                server: self.server.clone(),
                tool: tool.to_string(),
                secs: timeout.as_secs().max(1),
            },
            ServiceError::UnexpectedResponse => ToolError::Malformed {
                server: self.server.clone(),
                tool: tool.to_string(),
                line: "an answer of the wrong type".into(),
            },
            other => ToolError::Crashed {
                server: self.server.clone(),
                tool: tool.to_string(),
                detail: other.to_string(),
                stderr: self.stderr_tail(),
            },
        }
    }

    /// Stops the server: closes its input (the MCP way to ask a stdio server to exit),
    /// waits a short grace period, then kills its process group.
    pub async fn shutdown(&self) {
        self.broken.store(true, Ordering::SeqCst);
        if let Some(service) = self.service.lock().await.take() {
            let _ = tokio::time::timeout(GRACE, service.cancel()).await;
        }
        let mut faults = self.faults.clone();
        let _ = tokio::time::timeout(
            GRACE,
            faults.wait_for(|f| matches!(f, Some(Fault::Exited(_)))),
        )
        .await;
        self.process.kill_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_started_elsewhere_keeps_its_relative_arguments() {
        let old = tempfile::tempdir().unwrap();
        let old = old.path().canonicalize().unwrap();
        std::fs::create_dir_all(old.join("workspace/notes")).unwrap();
        std::fs::write(old.join("server.py"), "").unwrap();
        let spec = LaunchSpec {
            server: "s".into(),
            command: "python".into(),
            args: ["server.py", "-y", "./workspace/notes", "pkg@1.2.3", "/abs"]
                .map(String::from)
                .to_vec(),
            env: BTreeMap::new(),
            cwd: old.clone(),
        };
        let moved = spec.started_in(&old.join("workspace/notes"));
        assert_eq!(moved.cwd, old.join("workspace/notes"));
        assert_eq!(
            moved.args,
            [
                old.join("server.py").display().to_string(),
                "-y".into(),
                old.join("./workspace/notes").display().to_string(),
                "pkg@1.2.3".into(),
                "/abs".into(),
            ]
        );
    }
}
