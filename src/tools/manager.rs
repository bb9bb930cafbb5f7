//! The tool manager of one expert: what it may call, how each server is reached, both
//! gates, and an event for every decision.
//!
//! Built from the compiled catalog (the expert's resolved grants and clearance) and
//! `tool_manifest.json` (the roster: descriptors, and probe records with schemas and
//! annotations). `local` servers start on demand at their first call, are started again
//! on the next call after they crashed, hung or broke the protocol, and are stopped when
//! the manager is shut down or dropped. `native` and `remote` servers are called through
//! [`RemoteTools`].
//!
//! A call goes: name → `(server, tool)` → gate 1 on the recorded effect → (local) start
//! the server → gate 1 again with the live server's annotation, which may only raise the
//! effect → gate 2 (for a `write` or `destructive` tool: governance, roots and secrets; for
//! a `read` tool: secrets) → `tool_call` event → the
//! call, bounded by the expert's tool timeout → `tool_result` event. A refusal writes
//! `gate_denied` and nothing is called.

use super::client::{Confine, LaunchSpec, LiveTool, McpClient};
use super::env::{EnvMap, expand};
use super::error::{DenialReason, Gate, GateDenial, ToolError};
use super::events::{ToolEvent, ToolEventKind, ToolEvents, ToolOutcome};
use super::names::{ToolNames, ToolRef};
use super::paths::{Access, PathPolicy, SchemaHints, ServerPlace, server_root};
use super::redact::Redactor;
use super::remote::{RemoteCaller, RemoteServer, RemoteTools};
use crate::aem::{Catalog, ExpertEntry, ManifestServer, ServerDescriptor, ToolGrant, ToolManifest};
use crate::core::effect::{Effect, resolve_effect};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use thiserror::Error;

/// Default time a local server has to start and answer the MCP handshake.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(60);

/// What a manager needs besides the catalog and manifest. Dependencies are passed in;
/// nothing is read from process-wide state.
#[derive(Clone)]
pub struct ManagerSetup {
    /// Where events go.
    pub events: Arc<dyn ToolEvents>,
    /// The bridge to `native`/`remote` servers, if connected.
    pub remote: Option<Arc<dyn RemoteTools>>,
    /// Gate 2's governance paths and granted roots.
    pub paths: PathPolicy,
    /// The directory local servers' relative arguments are taken against, and the
    /// working directory of a server with no root of its own (see `server_roots`).
    pub workdir: PathBuf,
    /// Environment `${VAR}` references expand from.
    pub env: EnvMap,
    /// Per-call timeout; default: the expert's `timeouts.tool_secs`.
    pub call_timeout: Option<Duration>,
    /// Start + handshake timeout of a local server.
    pub start_timeout: Duration,
    /// Roots relative paths are taken against, per server (default: see
    /// [`super::paths::server_root`]). A local server is started in its root, so gate 2
    /// and the server resolve a relative path to the same file.
    pub server_roots: BTreeMap<String, PathBuf>,
    /// Where local servers start confined (an expert with a scratch); `None`: as declared.
    pub confine: Option<Arc<dyn Confine>>,
}

impl ManagerSetup {
    /// A setup with no remote bridge, the expert's own tool timeout and
    /// [`DEFAULT_START_TIMEOUT`].
    pub fn new(
        events: Arc<dyn ToolEvents>,
        paths: PathPolicy,
        workdir: impl Into<PathBuf>,
        env: EnvMap,
    ) -> ManagerSetup {
        ManagerSetup {
            events,
            remote: None,
            paths,
            workdir: workdir.into(),
            env,
            call_timeout: None,
            start_timeout: DEFAULT_START_TIMEOUT,
            server_roots: BTreeMap::new(),
            confine: None,
        }
    }

    /// Connects the bridge for `native`/`remote` servers.
    pub fn with_remote(mut self, remote: Arc<dyn RemoteTools>) -> ManagerSetup {
        self.remote = Some(remote);
        self
    }

    /// Overrides the per-call timeout.
    pub fn with_call_timeout(mut self, timeout: Duration) -> ManagerSetup {
        self.call_timeout = Some(timeout);
        self
    }

    /// Overrides the start timeout.
    pub fn with_start_timeout(mut self, timeout: Duration) -> ManagerSetup {
        self.start_timeout = timeout;
        self
    }

    /// Starts every local server through `confine`.
    pub fn with_confinement(mut self, confine: Arc<dyn Confine>) -> ManagerSetup {
        self.confine = Some(confine);
        self
    }

    /// Sets the root `server`'s relative paths are taken against.
    pub fn with_server_root(mut self, server: &str, root: impl Into<PathBuf>) -> ManagerSetup {
        self.server_roots.insert(server.to_string(), root.into());
        self
    }
}

/// Why a manager could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ManagerError {
    /// The catalog has no such expert.
    #[error("the catalog has no expert `{0}`")]
    UnknownExpert(String),
    /// The expert's mesh is parked.
    #[error("expert `{0}` is not spawnable (its mesh is parked)")]
    NotSpawnable(String),
    /// The expert names a server its mesh does not register (catalog corrupted).
    #[error("expert `{expert}` names server `{server}`, which its mesh does not register")]
    UnknownServer {
        /// Expert id.
        expert: String,
        /// Server name.
        server: String,
    },
    /// `tool_manifest.json` lacks a server of the catalog, or describes another
    /// descriptor: the two files are from different builds. Run `iron catalog build`.
    #[error(
        "tool_manifest.json does not match catalog.json for `{key}` ({detail}); rebuild the catalog"
    )]
    ManifestOutOfDate {
        /// `<mesh>/<server>`.
        key: String,
        /// What differs.
        detail: String,
    },
}

/// Who is calling and why, for events and the remote bridge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// The task the call belongs to.
    pub task: String,
    /// The event that caused the call (e.g. the model turn), if known.
    pub cause: Option<String>,
}

impl CallContext {
    /// A context for `task` with no cause.
    pub fn task(task: impl Into<String>) -> CallContext {
        CallContext {
            task: task.into(),
            cause: None,
        }
    }
}

/// The result of a call that reached its tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Which tool.
    pub tool: ToolRef,
    /// The effect gate 1 enforced.
    pub effect: Effect,
    /// The result as JSON: an MCP `CallToolResult` for local servers, the bridge's
    /// `result_json` for native/remote ones.
    pub result: Value,
    /// The tool reported an error in its result (the call itself worked).
    pub is_error: bool,
    /// Id of the `tool_call` event.
    pub call_event: String,
}

impl ToolOutput {
    /// The text blocks of the result, joined by newlines (or the JSON when there are none).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .result
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if texts.is_empty() {
            self.result.to_string()
        } else {
            texts.join("\n")
        }
    }
}

/// A tool as offered to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTool {
    /// The exposed name, `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// Which tool it stands for.
    pub tool: ToolRef,
    /// Description (from the probe record, if any).
    pub description: Option<String>,
    /// Input schema (from the probe record; an open object schema otherwise).
    pub input_schema: Value,
    /// The effect recorded in the catalog.
    pub effect: Effect,
}

struct Slot {
    descriptor: ServerDescriptor,
    manifest: ManifestServer,
    /// Its root (and, for a local server, its working directory) and home.
    place: ServerPlace,
    conn: tokio::sync::Mutex<Option<Arc<McpClient>>>,
}

/// The tool manager of one expert. Dropping it kills every server it started;
/// [`ToolManager::shutdown`] stops them gracefully.
pub struct ToolManager {
    expert: ExpertEntry,
    servers: BTreeMap<String, Slot>,
    names: ToolNames,
    setup: ManagerSetup,
    timeout: Duration,
    closed: AtomicBool,
    /// The secrets its servers are given, cut out of every result.
    redactor: Arc<Redactor>,
}

impl std::fmt::Debug for ToolManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolManager")
            .field("expert", &self.expert.id)
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl ToolManager {
    /// The manager of `expert_id`, from the compiled catalog and tool manifest.
    pub fn new(
        catalog: &Catalog,
        manifest: &ToolManifest,
        expert_id: &str,
        setup: ManagerSetup,
    ) -> Result<ToolManager, ManagerError> {
        let expert = catalog
            .expert(expert_id)
            .ok_or_else(|| ManagerError::UnknownExpert(expert_id.to_string()))?
            .clone();
        if !expert.spawnable {
            return Err(ManagerError::NotSpawnable(expert.id));
        }
        let mesh = catalog
            .mesh(&expert.mesh)
            .ok_or_else(|| ManagerError::UnknownExpert(expert_id.to_string()))?;
        let mut servers = BTreeMap::new();
        for name in &expert.servers {
            let entry = mesh
                .servers
                .get(name)
                .ok_or_else(|| ManagerError::UnknownServer {
                    expert: expert.id.clone(),
                    server: name.clone(),
                })?;
            let key = format!("{}/{name}", expert.mesh);
            let listed =
                manifest
                    .servers
                    .get(&key)
                    .ok_or_else(|| ManagerError::ManifestOutOfDate {
                        key: key.clone(),
                        detail: "the manifest does not list it".into(),
                    })?;
            if listed.descriptor_hash != entry.descriptor_hash
                || listed.descriptor != entry.descriptor
            {
                return Err(ManagerError::ManifestOutOfDate {
                    key,
                    detail: "descriptor hashes differ".into(),
                });
            }
            let root = match (&setup.server_roots.get(name), &entry.descriptor) {
                (Some(root), _) => (*root).clone(),
                (None, ServerDescriptor::Local { args, .. }) => {
                    let expanded: Vec<String> = args
                        .iter()
                        .filter_map(|a| expand(a, &setup.env).ok())
                        .collect();
                    server_root(&expanded, &setup.workdir)
                }
                (None, _) => setup.workdir.clone(),
            };
            // The home a local server expands `~` against: what its environment declares.
            // Unknown otherwise, and home-relative paths are refused.
            let home = match &entry.descriptor {
                ServerDescriptor::Local { env, .. } => env
                    .get("HOME")
                    .and_then(|h| expand(h, &setup.env).ok())
                    .filter(|h| Path::new(h).is_absolute())
                    .map(PathBuf::from),
                _ => None,
            };
            servers.insert(
                name.clone(),
                Slot {
                    descriptor: entry.descriptor.clone(),
                    manifest: listed.clone(),
                    place: ServerPlace { root, home },
                    conn: tokio::sync::Mutex::new(None),
                },
            );
        }
        let names = ToolNames::build(
            expert
                .tools
                .values()
                .map(|g| ToolRef::new(g.server.clone(), g.tool.clone())),
        );
        let timeout = setup
            .call_timeout
            .unwrap_or(Duration::from_secs(expert.timeouts.tool_secs.max(1)));
        let local = || {
            servers.values().filter_map(|slot| match &slot.descriptor {
                ServerDescriptor::Local { env, args, .. } => Some((env, args)),
                _ => None,
            })
        };
        let redactor = Arc::new(Redactor::from_declared(
            local().flat_map(|(env, _)| env.values()),
            local().flat_map(|(_, args)| args.iter()),
            &setup.env,
        ));
        Ok(ToolManager {
            expert,
            servers,
            names,
            setup,
            timeout,
            closed: AtomicBool::new(false),
            redactor,
        })
    }

    /// What cuts this expert's server secrets out of text (also for what it delivers).
    pub fn redactor(&self) -> Arc<Redactor> {
        self.redactor.clone()
    }

    /// The expert this manager serves.
    pub fn expert(&self) -> &ExpertEntry {
        &self.expert
    }

    /// The names the model sees, mapped to tools.
    pub fn names(&self) -> &ToolNames {
        &self.names
    }

    /// The per-call timeout in force.
    pub fn call_timeout(&self) -> Duration {
        self.timeout
    }

    /// The granted tools as a model should be offered them.
    pub fn model_tools(&self) -> Vec<ModelTool> {
        self.names
            .iter()
            .filter_map(|(name, tref)| {
                let grant = self.expert.tools.get(&tref.key())?;
                let probed = self
                    .servers
                    .get(&tref.server)
                    .and_then(|s| s.manifest.current_probe())
                    .and_then(|p| p.tools.get(&tref.tool));
                Some(ModelTool {
                    name: name.to_string(),
                    tool: tref.clone(),
                    description: probed.and_then(|p| p.description.clone()),
                    input_schema: probed
                        .map(|p| p.input_schema.clone())
                        .unwrap_or_else(|| serde_json::json!({"type": "object"})),
                    effect: grant.effect,
                })
            })
            .collect()
    }

    /// Calls a tool by the name the model was given.
    pub async fn call(
        &self,
        exposed_name: &str,
        arguments: Value,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        match self.names.resolve(exposed_name).cloned() {
            Some(tref) => {
                self.call_tool(&tref.server, &tref.tool, arguments, ctx)
                    .await
            }
            None => Err(self
                .deny(
                    Box::new(GateDenial {
                        gate: Gate::Clearance,
                        tool: exposed_name.to_string(),
                        reason: DenialReason::NotGranted,
                    }),
                    &arguments,
                    ctx,
                )
                .await),
        }
    }

    /// Calls `server/tool` through both gates.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(ToolError::ShutDown);
        }
        let tref = ToolRef::new(server, tool);
        let key = tref.key();
        let denial = |reason| {
            Box::new(GateDenial {
                gate: Gate::Clearance,
                tool: key.clone(),
                reason,
            })
        };
        // Gate 1 on what the catalog recorded.
        let (Some(grant), Some(slot)) = (self.expert.tools.get(&key), self.servers.get(server))
        else {
            return Err(self
                .deny(denial(DenialReason::NotGranted), &arguments, ctx)
                .await);
        };
        let recorded = recorded_annotation(grant, &slot.manifest);
        if let Err(d) = self.clearance(&key, grant, recorded) {
            return Err(self.deny(d, &arguments, ctx).await);
        }
        // Reach the server; for a local one, its live annotation and schema.
        let (client, live) = match &slot.descriptor {
            ServerDescriptor::Local { .. } => match self.connect(server, slot).await {
                Ok(client) => {
                    let live = client.tool(tool).cloned();
                    if live.is_none() {
                        let offered = client
                            .tools()
                            .iter()
                            .map(|t| t.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ");
                        let e = ToolError::NotOffered {
                            server: server.to_string(),
                            tool: tool.to_string(),
                            offered,
                        };
                        return self
                            .failed_before_call(&key, grant.effect, &arguments, ctx, e)
                            .await;
                    }
                    (Some(client), live)
                }
                Err(e) => {
                    return self
                        .failed_before_call(&key, grant.effect, &arguments, ctx, e)
                        .await;
                }
            },
            _ => (None, None),
        };
        // Gate 1 again: the live annotation may only raise the effect.
        let annotation = recorded.max(live.as_ref().and_then(LiveTool::annotation));
        let effect = match self.clearance(&key, grant, annotation) {
            Ok(effect) => effect,
            Err(d) => return Err(self.deny(d, &arguments, ctx).await),
        };
        // Gate 2: what a write may change, and what no call may read.
        let schema = live
            .as_ref()
            .map(|t| t.input_schema.clone())
            .or_else(|| {
                slot.manifest
                    .current_probe()
                    .and_then(|p| p.tools.get(tool))
                    .map(|t| t.input_schema.clone())
            })
            .unwrap_or(Value::Null);
        // Only the schemas Iron ships may exempt an argument; a server's may not.
        let hints = match &slot.descriptor {
            ServerDescriptor::Native => {
                SchemaHints::shipped(&crate::aem::native::native_schema(server, tool))
            }
            _ => SchemaHints::of(&schema),
        };
        let access = if effect >= Effect::Write {
            Access::Write
        } else {
            Access::Read
        };
        if let Err(d) = self
            .setup
            .paths
            .check(&key, access, &slot.place, &arguments, &hints)
        {
            return Err(self.deny(d, &arguments, ctx).await);
        }
        let call_event = self.record_call(&key, effect, &arguments, ctx).await?;
        let outcome = match client {
            Some(client) => client.call(tool, &arguments, self.timeout).await.map(|r| {
                let is_error = r.is_error == Some(true);
                (serde_json::to_value(&r).unwrap_or(Value::Null), is_error)
            }),
            None => self.call_remote(server, slot, tool, &arguments, ctx).await,
        };
        // What a server says goes to the log and the model only without the secrets it holds.
        let outcome = outcome.map(|(result, is_error)| (self.redactor.value(result), is_error));
        let event_outcome = match &outcome {
            Ok((result, is_error)) => ToolOutcome::Answered {
                is_error: *is_error,
                result: result.clone(),
            },
            Err(e) => ToolOutcome::Failed {
                error_kind: e.kind().to_string(),
                message: self.redactor.text(&e.to_string()),
            },
        };
        self.record_result(&key, &arguments, ctx, event_outcome, &call_event)
            .await;
        let (result, is_error) = outcome?;
        Ok(ToolOutput {
            tool: tref,
            effect,
            result,
            is_error,
            call_event,
        })
    }

    /// Gate 1: the effect for this call, or the refusal.
    fn clearance(
        &self,
        key: &str,
        grant: &ToolGrant,
        annotation: Option<Effect>,
    ) -> Result<Effect, Box<GateDenial>> {
        let resolution = resolve_effect(&grant.tool, annotation, grant.declared)
            .map_err(|refused| GateDenial::over_reach(key, &refused))?;
        // Never below what the catalog recorded.
        let effect = resolution.effect.max(grant.effect);
        if !self.expert.clearance.permits(effect) {
            return Err(Box::new(GateDenial {
                gate: Gate::Clearance,
                tool: key.to_string(),
                reason: DenialReason::AboveClearance {
                    effect,
                    clearance: self.expert.clearance,
                },
            }));
        }
        Ok(effect)
    }

    async fn connect(&self, server: &str, slot: &Slot) -> Result<Arc<McpClient>, ToolError> {
        let mut conn = slot.conn.lock().await;
        if let Some(c) = conn.as_ref()
            && c.is_alive()
        {
            return Ok(c.clone());
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(ToolError::ShutDown);
        }
        // A broken connection is dropped here (its process group is killed).
        *conn = None;
        let spec = LaunchSpec::from_descriptor(
            server,
            &slot.descriptor,
            &self.setup.env,
            &self.setup.workdir,
        )
        .ok_or_else(|| ToolError::StartFailed {
            server: server.to_string(),
            reason: "not a local server".into(),
            stderr: Vec::new(),
        })??
        // Started where gate 2 takes its relative paths.
        .started_in(&slot.place.root);
        let client = Arc::new(
            McpClient::start(
                &spec,
                self.setup.start_timeout,
                self.setup.confine.as_deref(),
            )
            .await?,
        );
        tracing::debug!(server, pid = client.pid(), "tool server started");
        *conn = Some(client.clone());
        Ok(client)
    }

    async fn call_remote(
        &self,
        server: &str,
        slot: &Slot,
        tool: &str,
        arguments: &Value,
        ctx: &CallContext,
    ) -> Result<(Value, bool), ToolError> {
        let (service, native) = match &slot.descriptor {
            ServerDescriptor::Native => (format!("/iron/tools/{server}"), true),
            ServerDescriptor::Remote { service } => (service.clone(), false),
            ServerDescriptor::Local { .. } => unreachable!("local servers are called directly"),
        };
        let Some(bridge) = &self.setup.remote else {
            return Err(ToolError::NoBridge {
                server: server.to_string(),
                service,
            });
        };
        let target = RemoteServer {
            server: server.to_string(),
            service,
            native,
        };
        let caller = RemoteCaller {
            caller: self.expert.id.clone(),
            task_id: ctx.task.clone(),
        };
        match tokio::time::timeout(self.timeout, bridge.call(&target, tool, arguments, &caller))
            .await
        {
            Err(_) => Err(ToolError::Timeout {
                server: server.to_string(),
                tool: tool.to_string(),
                secs: self.timeout.as_secs().max(1),
            }),
            Ok(Ok(value)) => Ok((value, false)),
            Ok(Err(e)) => Err(ToolError::Remote {
                server: server.to_string(),
                tool: tool.to_string(),
                message: e.to_string(),
            }),
        }
    }

    fn event(
        &self,
        kind: ToolEventKind,
        tool: &str,
        arguments: &Value,
        outcome: ToolOutcome,
        cause: Option<String>,
        ctx: &CallContext,
    ) -> ToolEvent {
        ToolEvent {
            kind,
            actor: self.expert.id.clone(),
            task: ctx.task.clone(),
            tool: tool.to_string(),
            // What is recorded never holds a server's secret, whoever wrote it.
            arguments: self.redactor.value(arguments.clone()),
            outcome,
            cause,
        }
    }

    /// Records a refusal and returns it as the call's error.
    async fn deny(
        &self,
        denial: Box<GateDenial>,
        arguments: &Value,
        ctx: &CallContext,
    ) -> ToolError {
        let event = self.event(
            ToolEventKind::GateDenied,
            &denial.tool,
            arguments,
            ToolOutcome::Denied {
                gate: denial.gate,
                gate_number: denial.gate.number(),
                message: denial.to_string(),
                denial: (*denial).clone(),
            },
            ctx.cause.clone(),
            ctx,
        );
        if let Err(e) = self.setup.events.record(event).await {
            tracing::error!(tool = %denial.tool, "gate_denied could not be recorded: {e}");
        }
        ToolError::Denied(denial)
    }

    async fn record_call(
        &self,
        key: &str,
        effect: Effect,
        arguments: &Value,
        ctx: &CallContext,
    ) -> Result<String, ToolError> {
        let event = self.event(
            ToolEventKind::ToolCall,
            key,
            arguments,
            ToolOutcome::Admitted { effect },
            ctx.cause.clone(),
            ctx,
        );
        self.setup
            .events
            .record(event)
            .await
            .map_err(|e| ToolError::NotRecorded(e.to_string()))
    }

    async fn record_result(
        &self,
        key: &str,
        arguments: &Value,
        ctx: &CallContext,
        outcome: ToolOutcome,
        call_event: &str,
    ) {
        let event = self.event(
            ToolEventKind::ToolResult,
            key,
            arguments,
            outcome,
            Some(call_event.to_string()),
            ctx,
        );
        if let Err(e) = self.setup.events.record(event).await {
            tracing::error!(tool = %key, "tool_result could not be recorded: {e}");
        }
    }

    /// A call admitted on the recorded effect whose server could not be reached: recorded
    /// as a `tool_call` followed by a failed `tool_result`.
    async fn failed_before_call(
        &self,
        key: &str,
        effect: Effect,
        arguments: &Value,
        ctx: &CallContext,
        error: ToolError,
    ) -> Result<ToolOutput, ToolError> {
        let call_event = self.record_call(key, effect, arguments, ctx).await?;
        let outcome = ToolOutcome::Failed {
            error_kind: error.kind().to_string(),
            message: error.to_string(),
        };
        self.record_result(key, arguments, ctx, outcome, &call_event)
            .await;
        Err(error)
    }

    /// Process id of a running local server (None when not started or broken).
    pub async fn server_pid(&self, server: &str) -> Option<u32> {
        let slot = self.servers.get(server)?;
        let conn = slot.conn.lock().await;
        conn.as_ref().filter(|c| c.is_alive()).map(|c| c.pid())
    }

    /// Stops every server gracefully; later calls fail with [`ToolError::ShutDown`].
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for slot in self.servers.values() {
            let client = slot.conn.lock().await.take();
            if let Some(client) = client {
                client.shutdown().await;
            }
        }
    }
}

/// The strongest annotation recorded for a grant: the catalog's (AEM.md) and the probe's.
fn recorded_annotation(grant: &ToolGrant, manifest: &ManifestServer) -> Option<Effect> {
    let probed = manifest
        .current_probe()
        .and_then(|p| p.tools.get(&grant.tool))
        .and_then(|t| t.annotation);
    grant.annotation.max(probed)
}
