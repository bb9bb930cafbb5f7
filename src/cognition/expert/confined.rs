//! `sandbox/run_confined`: a command run under bubblewrap in the expert's scratch. The native
//! server `sandbox` is served by each expert process for itself, not by a node of its own:
//! only the process knows its scratch, and a bridge would have to take a caller's word for
//! which scratch is its. Both gates run before (the manager's: `run` is destructive unless
//! `capabilities.md` lowers it, and `cwd` must be inside the scratch, whose governance stays
//! unwritable); the sandbox then confines what the command itself may do (see
//! `crate::workspace::sandbox`). Without a usable `bwrap` the call is refused with why;
//! nothing ever runs unconfined. Every other server goes to `inner` (over ROS).
//!
//! [`ConfinedServers`] starts the expert's `local` tool servers in the same sandbox when it
//! has a scratch: the scratch is their working directory and the only tree they can write, a
//! pinned `npx`/`uvx` package runs from the package store (`iron tools install`), and they
//! have no network.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::tools::client::ConfineError;
use crate::tools::packages::{self, PackageStore};
use crate::tools::{
    Confine, LaunchSpec, RemoteCaller, RemoteServer, RemoteTools, remote::RemoteError,
    remote::RemoteFuture,
};
use crate::workspace::sandbox::{Confined, RunPolicy, Sandbox, SandboxError};

/// The native server name.
pub const SERVER: &str = crate::aem::workspace::SANDBOX_SERVER;
/// Its one tool.
pub const RUN_CONFINED: &str = "run_confined";
/// Longest time limit a call may ask for.
const MAX_SECS: u64 = 600;
/// Output kept of stdout and of stderr each.
const MAX_OUTPUT: usize = 256 * 1024;

/// Where an expert with a scratch confines what it runs: the scratch, the mesh's policy and
/// the sandbox located once for the process (or why there is none), shared by
/// `run_confined` and the local servers.
#[derive(Clone)]
pub(super) struct Confinement {
    /// The scratch: working directory and only writable tree.
    pub(super) scratch: PathBuf,
    /// The mesh's toolchain, masks and network.
    pub(super) policy: RunPolicy,
    /// The sandbox, or why there is none (then everything confined is refused).
    pub(super) sandbox: Result<Sandbox, Arc<SandboxError>>,
}

impl Confinement {
    /// Locates the sandbox for `scratch` under `policy`.
    pub(super) async fn locate(scratch: PathBuf, policy: RunPolicy) -> Self {
        Self {
            scratch,
            policy,
            sandbox: Sandbox::locate().await.map_err(Arc::new),
        }
    }
}

/// Remote tools with `sandbox/run_confined` answered here.
pub(super) struct ConfinedTools {
    inner: std::sync::Arc<dyn RemoteTools>,
    confinement: Option<Confinement>,
}

impl ConfinedTools {
    /// `inner` for every other server; commands run in the scratch of `confinement` (none:
    /// refused).
    pub(super) fn new(
        inner: std::sync::Arc<dyn RemoteTools>,
        confinement: Option<Confinement>,
    ) -> Self {
        Self { inner, confinement }
    }

    async fn run(&self, tool: &str, arguments: &Value) -> Result<Value, RemoteError> {
        let refuse = |message: String| RemoteError::Refused { message };
        if tool != RUN_CONFINED {
            return Err(refuse(format!(
                "no tool {tool:?} here; the sandbox offers {RUN_CONFINED}"
            )));
        }
        let confinement = self.confinement.as_ref().ok_or_else(|| {
            refuse("this expert has no scratch (its mesh declares no `workspace:`)".into())
        })?;
        let scratch = &confinement.scratch;
        let command = arguments
            .get("command")
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| refuse("`command` (a program name) is required".into()))?;
        let args: Vec<&str> = match arguments.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|a| {
                    a.as_str()
                        .ok_or_else(|| refuse("`args` must be strings".into()))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(refuse("`args` must be a list of strings".into())),
        };
        let secs = match arguments.get("timeout_secs") {
            None | Some(Value::Null) => 60,
            Some(v) => v
                .as_u64()
                .filter(|s| (1..=MAX_SECS).contains(s))
                .ok_or_else(|| refuse(format!("`timeout_secs` is 1 to {MAX_SECS}")))?,
        };
        let cwd = arguments.get("cwd").and_then(Value::as_str).unwrap_or(".");
        let sandbox = confinement
            .sandbox
            .as_ref()
            .map_err(|e| refuse(e.to_string()))?;
        let mut run = Confined::new(command, &args, scratch)
            .under(&confinement.policy)
            .map_err(|e| refuse(e.to_string()))?;
        run.cwd = Some(scratch.join(cwd));
        run.timeout = Duration::from_secs(secs);
        run.max_output = MAX_OUTPUT;
        let out = sandbox.run(&run).await.map_err(|e| refuse(e.to_string()))?;
        let exit = match out.ended {
            crate::workspace::sandbox::Ended::Exited(code) => json!(code),
            _ => Value::Null,
        };
        Ok(json!({
            "ended": format!("{:?}", out.ended), "exit_code": exit,
            "stdout": String::from_utf8_lossy(&out.stdout),
            "stderr": String::from_utf8_lossy(&out.stderr),
            "secs": out.elapsed.as_secs_f64(),
        }))
    }
}

impl RemoteTools for ConfinedTools {
    fn call<'a>(
        &'a self,
        server: &'a RemoteServer,
        tool: &'a str,
        arguments: &'a Value,
        caller: &'a RemoteCaller,
    ) -> RemoteFuture<'a> {
        if server.native && server.server == SERVER {
            Box::pin(self.run(tool, arguments))
        } else {
            self.inner.call(server, tool, arguments, caller)
        }
    }
}

/// The expert's `local` tool servers, started confined in its scratch.
pub(super) struct ConfinedServers {
    /// The scratch, policy and sandbox (the policy's network is never given to a server).
    pub(super) confinement: Confinement,
    /// Where pinned packages are installed.
    pub(super) store: Option<PackageStore>,
    /// The bound on each server process's CPU time (the task's time limit).
    pub(super) cpu: Duration,
}

impl Confine for ConfinedServers {
    fn command(
        &self,
        spec: &LaunchSpec,
    ) -> Result<(tokio::process::Command, Box<dyn Send + Sync>), ConfineError> {
        let Confinement {
            scratch,
            policy,
            sandbox,
        } = &self.confinement;
        let sandbox = sandbox.as_ref().map_err(|e| Box::new(e.clone()))?;
        let (program, args, reads) = match packages::declared(&spec.command, &spec.args) {
            None => (spec.command.clone(), spec.args.clone(), Vec::new()),
            Some(Err(e)) => return Err(e.into()),
            Some(Ok((package, rest))) => {
                let store = self
                    .store
                    .as_ref()
                    .ok_or("no package store (set IRON_TOOLS_DIR)")?;
                let installed = store.entry(&package)?;
                let mut args = installed.args;
                args.extend(rest);
                (installed.program, args, installed.reads)
            }
        };
        // What the package reads is shown as a toolchain is: refused if it is, holds or lies
        // in a credential store, the home directory or the state directory.
        let mut policy = policy.clone();
        policy
            .toolchain
            .extend(reads.iter().map(|p| p.display().to_string()));
        let mut run = Confined::new(&program, &[], scratch).under(&policy)?;
        run.args = args;
        run.network = false;
        run.cwd = spec.cwd.starts_with(scratch).then(|| spec.cwd.clone());
        run.env.extend(
            spec.env
                .iter()
                .filter(|(k, _)| k.as_str() != "PATH")
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        run.timeout = self.cpu;
        let (command, held) = sandbox.command(&run)?;
        Ok((command, Box::new(held)))
    }
}
