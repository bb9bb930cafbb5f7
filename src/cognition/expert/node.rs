//! The expert as a managed node.

use crate::protocol::{TaskContext, TaskOutcome};
use crate::spine::control::lifecycle::RunError;
use crate::tools::CallerKey;
use crate::tools::packages::PackageStore;
use crate::workspace::sandbox::Sandbox;
use std::{path::Path, sync::Arc, time::Duration};

use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{
    adapters::{ManagedTools, Recorder, TaskTrace},
    confined,
    delegate::{Delegation, ExpertTools},
    deliver::Deliveries,
    operator::{OperatorDesk, Refused},
    scratch::ExpertScratch,
    wake::Mounts,
};
use crate::{
    aem::{Catalog, ExpertEntry, roots::SCRATCH_VAR},
    cognition::agent::{AgentLoop, ExpertBrief, Limits, TaskInput, TaskStatus},
    core::{
        config::Config,
        event_kind::EventKind,
        identity::Authority,
        trace::{SpanContext, SpanKind},
    },
    interfaces::{AolTask, AolTaskFeedback, AolTaskResult},
    llm::{ChatModel, ModelRegistry, ModelsConfig, OfflineBackend, offline::OrOffline},
    spine::{
        control::{
            action::{ActionOptions, ActionServer, GoalHandle, GoalRequest},
            lifecycle::{CallbackError, ManagedNode, NodeContext},
        },
        durable::AnyLog,
    },
    tools::{ManagerSetup, RosTools, ToolManager, roots},
};

/// An expert process for `<mesh>/<role>`.
#[derive(Debug, Clone)]
pub struct ExpertNode {
    /// `<mesh>/<role>` in the catalog.
    pub expert: String,
}

/// What `configure` built from the catalog entry.
pub struct ExpertDeps {
    config: Config,
    log: AnyLog,
    entry: ExpertEntry,
    brief: ExpertBrief,
    model: Arc<dyn ChatModel>,
    tools: Arc<ToolManager>,
    server: ActionServer<AolTask>,
    goals: Mutex<tokio::sync::mpsc::Receiver<GoalRequest<AolTask>>>,
    desk: OperatorDesk,
    mounts: Mounts,
    /// Peers it may delegate to, with what each does.
    peers: Vec<(String, String)>,
    /// Its mesh, for the delivery channels it holds.
    mesh: Arc<crate::aem::MeshEntry>,
    /// Delivery channels it is granted that the mesh declares.
    channels: Vec<String>,
    /// Caller of delivery bridges.
    bridges: Arc<RosTools>,
    /// On-demand sources this expert started (stopped at shutdown).
    started: Mutex<crate::msp::demand::Started>,
    /// Its scratch, when its mesh declares a workspace its servers work in.
    scratch: Option<ExpertScratch>,
    ctx: NodeContext,
}

/// How long an on-demand source may take to start and show its first state.
const SOURCE_START: Duration = Duration::from_secs(5);

fn refuse(why: impl std::fmt::Display) -> CallbackError {
    CallbackError::Failure(why.to_string())
}

impl ManagedNode for ExpertNode {
    type Deps = ExpertDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<ExpertDeps, CallbackError> {
        let config = Config::load().map_err(refuse)?;
        let log = AnyLog::open(&config).await.map_err(refuse)?;
        let catalog: Catalog = crate::aem::read_state_catalog(&config).map_err(refuse)?;
        let entry = catalog
            .expert(&self.expert)
            .cloned()
            .ok_or_else(|| refuse(format!("no expert {} in the catalog", self.expert)))?;
        if !entry.spawnable {
            return Err(refuse(format!("{} belongs to a parked mesh", self.expert)));
        }
        let brief = ExpertBrief::from_catalog(&catalog, &self.expert).expect("the entry exists");
        let embedder = crate::llm::embeddings::from_config(&config).map_err(refuse)?;
        let mounts = Mounts::new(&entry, &catalog, &config).with_embedder(embedder);
        // No `models:` block: the offline backend. With one, the offline backend still
        // answers when every configured backend fails.
        let base = std::env::current_dir().map_err(refuse)?;
        let model: Arc<dyn ChatModel> = match config.models.clone() {
            // Its claim judgment reads meanings with the local model when one was pulled.
            None => Arc::new(match crate::llm::local::models_dir_from_env(None) {
                Ok(dir) => OfflineBackend::with_models(dir),
                Err(_) => OfflineBackend::lexical(),
            }),
            Some(models) => {
                let models: ModelsConfig =
                    serde_norway::from_value(models).map_err(|e| refuse(format!("models: {e}")))?;
                let model = ModelRegistry::new(models, &base)
                    .model(&entry.model)
                    .map_err(|e| {
                        refuse(format!("model {:?} of {}: {e}", entry.model, self.expert))
                    })?;
                Arc::new(OrOffline::new(model))
            }
        };

        let recorder = Recorder {
            log: log.clone(),
            tenant: config.tenant.clone(),
            namespace: vec!["experts".into(), entry.mesh.clone(), entry.role.clone()],
            actor: self.expert.clone(),
            cause: None,
            task_id: None,
            trace: None,
        };
        let manifest_path = config.state_path(Path::new(crate::aem::TOOL_MANIFEST_FILE));
        let manifest = crate::aem::read_tool_manifest(&manifest_path)
            .unwrap_or_else(|_| catalog.tool_manifest());
        let mut env = roots::scrub_env(std::env::vars().collect());
        // A scratch, when its mesh declares a workspace its servers work in: named to them by
        // IRON_SCRATCH (which no inherited environment may set) and granted by gate 2.
        let scratch =
            ExpertScratch::open(&entry, &catalog, &config.state_dir, &base, ctx.node.name())
                .await
                .map_err(refuse)?;
        if let Some(s) = &scratch {
            env.insert(SCRATCH_VAR.to_string(), s.dir().display().to_string());
        }
        // Gate 2 lets the expert write only in the workspace roots of its write-capable servers,
        // and in its scratch, which is also the root of the confined commands it runs.
        let (mut policy, mut granted) =
            roots::expert_policy(&entry, &catalog, &base, &config.state_dir, &env)
                .map_err(refuse)?;
        if let Some(s) = &scratch {
            policy = policy.grant_root(s.dir()).map_err(refuse)?;
            granted.push(roots::GrantedRoot {
                server: confined::SERVER.to_string(),
                dir: s.dir().to_path_buf(),
            });
        }
        // `native`/`remote` servers are reached over ROS; the manager bounds each call with the
        // expert's own tool timeout, so the bridge's is only a backstop.
        let key = CallerKey::open(&config.state_dir)
            .map_err(|e| CallbackError::Failure(e.to_string()))?;
        let bridge = RosTools::new(ctx.node.clone(), Duration::from_secs(600), key.clone());
        let run_policy = mesh_workspace(&catalog, &entry)
            .map(|w| crate::workspace::sandbox::RunPolicy::of(w, &config.state_dir))
            .unwrap_or_default();
        // With a scratch, the local servers run confined in it as well.
        let servers = match &scratch {
            Some(s) => Some(Arc::new(confined::ConfinedServers {
                sandbox: Sandbox::locate().await.map_err(Arc::new),
                scratch: s.dir().to_path_buf(),
                policy: run_policy.clone(),
                store: PackageStore::from_env(|k| env.get(k).cloned()),
                cpu: Duration::from_secs(entry.timeouts.task_secs.max(1)),
            })),
            None => None,
        };
        let remote = confined::ConfinedTools::new(
            Arc::new(bridge),
            scratch.as_ref().map(|s| s.dir().to_path_buf()),
            run_policy,
        );
        let mut setup = granted.into_iter().fold(
            ManagerSetup::new(Arc::new(recorder), policy, &base, env).with_remote(Arc::new(remote)),
            |setup, root| setup.with_server_root(&root.server, root.dir),
        );
        if let Some(servers) = servers {
            setup = setup.with_confinement(servers);
        }
        let tools = ToolManager::new(&catalog, &manifest, &self.expert, setup).map_err(refuse)?;

        // On-demand sources it holds and nobody serves yet are started now, and stop with it.
        let granted: Vec<(String, crate::aem::SourceEntry)> = catalog
            .mesh(&entry.mesh)
            .map(|m| {
                entry
                    .sources
                    .iter()
                    .filter_map(|s| m.sources.get(s).map(|e| (s.clone(), e.clone())))
                    .collect()
            })
            .unwrap_or_default();
        let started = crate::msp::demand::Started::start_missing(
            &ctx.node,
            &log,
            &crate::core::exe::beside_current("source_node"),
            &entry.mesh,
            &granted,
            SOURCE_START,
        )
        .await;

        let peers = catalog
            .peers(&entry.id)
            .iter()
            .map(|p| {
                let what = catalog
                    .expert(p)
                    .map(|e| e.description.clone())
                    .unwrap_or_default();
                (p.clone(), what)
            })
            .collect();
        let mesh = Arc::new(
            catalog
                .mesh(&entry.mesh)
                .cloned()
                .ok_or_else(|| refuse(format!("no mesh {} in the catalog", entry.mesh)))?,
        );
        let channels: Vec<String> = entry
            .delivery
            .iter()
            .filter(|c| mesh.delivery.contains_key(*c))
            .cloned()
            .collect();
        let action = format!("{}/task", ctx.fqn());
        let (server, goals) =
            ActionServer::<AolTask>::new(&ctx.node, &action, ActionOptions::default())
                .map_err(|e| CallbackError::Error(e.to_string()))?;
        info!(
            "expert {} ready: model {}, {} tool(s), memory {:?}, lessons {:?}, sources {:?}",
            self.expert,
            model.name(),
            tools.model_tools().len(),
            mounts.prefixes,
            mounts.lessons,
            entry.sources,
        );
        let authority = Authority::new(&config.state_dir, &config.operators);
        let desk = OperatorDesk::new(&ctx.node, authority)
            .map_err(|e| CallbackError::Error(e.to_string()))?;
        Ok(ExpertDeps {
            config,
            log,
            entry,
            brief,
            model,
            tools: Arc::new(tools),
            server,
            goals: Mutex::new(goals),
            desk,
            mounts,
            peers,
            mesh,
            channels,
            bridges: Arc::new(RosTools::new(
                ctx.node.clone(),
                Duration::from_secs(60),
                key,
            )),
            started: Mutex::new(started),
            scratch,
            ctx: ctx.clone(),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<ExpertDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        deps.server.set_accepting(true);
        let mut goals = deps.goals.lock().await;
        let idle = Duration::from_secs(deps.entry.idle_secs.max(1));
        loop {
            tokio::select! {
                goal = goals.recv() => {
                    let Some(goal) = goal else { break };
                    // One task at a time: an expert process is a lease on one role for one task.
                    deps.clone().work(goal).await;
                }
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(idle) => {
                    info!("idle for {idle:?}; shutting down");
                    let ctx = deps.ctx.clone();
                    tokio::spawn(async move { ctx.request_transition("shutdown").await });
                    break;
                }
            }
        }
        deps.server.set_accepting(false);
        Ok(())
    }

    async fn shutdown(&self, deps: Option<Arc<ExpertDeps>>) -> Result<(), CallbackError> {
        if let Some(d) = deps {
            d.tools.shutdown().await;
            if let Some(s) = &d.scratch {
                s.close().await;
            }
            d.started
                .lock()
                .await
                .stop(&d.ctx.node, Duration::from_secs(2))
                .await;
        }
        Ok(())
    }
}

impl ExpertDeps {
    async fn work(self: Arc<Self>, request: GoalRequest<AolTask>) {
        let (goal, handle) = request.accept().await;
        // The engine checked the context; one that is malformed all the same is refused here,
        // never read as empty (it would lose the task's owner and cause).
        let context = match TaskContext::parse(&goal.context_json) {
            Ok(context) => context,
            Err(e) => {
                warn!(task = %goal.task_id, "refused: {e}");
                handle
                    .abort(AolTaskResult {
                        status: TaskOutcome::Failed.to_string(),
                        text: e.to_string(),
                        result_json: "{}".into(),
                    })
                    .await;
                return;
            }
        };
        let cause = context.cause.clone();
        // The task's span: a child of the engine's, when the goal carries it.
        let trace_parent = context.traceparent.as_deref().and_then(SpanContext::parse);
        let mut span = self.ctx.tracer.start(
            format!("invoke_agent {}", self.entry.id),
            SpanKind::Server,
            trace_parent,
        );
        span.set("gen_ai.operation.name", "invoke_agent")
            .set("gen_ai.agent.name", self.entry.id.as_str())
            .set("iron.task_id", goal.task_id.as_str());
        let recorder = Recorder {
            log: self.log.clone(),
            tenant: self.config.tenant.clone(),
            namespace: if goal.session_id.is_empty() {
                vec!["tasks".into(), goal.task_id.clone()]
            } else {
                vec!["sessions".into(), goal.session_id.clone()]
            },
            actor: self.entry.id.clone(),
            cause: cause.clone(),
            task_id: Some(goal.task_id.clone()),
            trace: Some(TaskTrace::new(self.ctx.tracer.clone(), span.context())),
        };
        let cause = cause.map(|c| c.to_string());
        let owner = context.user_id.clone();
        let tools = ExpertTools {
            managed: ManagedTools {
                manager: self.tools.clone(),
                task: goal.task_id.clone(),
                cause: cause.clone(),
            },
            delegation: (!self.peers.is_empty()).then(|| Delegation {
                expert: self.entry.id.clone(),
                peers: self.peers.clone(),
                depth: goal.depth,
                task_id: goal.task_id.clone(),
                session_id: goal.session_id.clone(),
                owner: owner.clone(),
                cause: context.cause.clone(),
                timeout: Duration::from_secs(self.entry.timeouts.delegation_secs.max(1)),
                node: self.ctx.node.clone(),
                trace_parent: Some(span.context()),
            }),
            deliveries: (!self.channels.is_empty()).then(|| Deliveries {
                expert: self.entry.id.clone(),
                mesh: self.mesh.clone(),
                channels: self.channels.clone(),
                task_id: goal.task_id.clone(),
                tools: self.bridges.clone(),
                recorder: recorder.clone(),
                redactor: self.tools.redactor(),
            }),
        };
        // Who may answer and correct this task: the person whose message started it (a
        // delegation inherits it), besides the configured operators.
        let desk = {
            let recorder = recorder.clone();
            let runtime = tokio::runtime::Handle::current();
            self.desk.open(
                &goal.task_id,
                owner.clone(),
                Arc::new(move |refused: Refused| {
                    let recorder = recorder.clone();
                    runtime.spawn(async move {
                        let payload = serde_json::json!({
                            "task_id": refused.task_id, "operator_id": refused.operator_id,
                            "what": refused.what,
                            "reason": refused.why,
                        });
                        if let Err(e) = recorder
                            .write(EventKind::OperatorRefused, payload, None)
                            .await
                        {
                            warn!(task = %refused.task_id, "the refusal is not on the log: {e}");
                        }
                    });
                }),
            )
        };
        let started = std::time::Instant::now();
        let agent = AgentLoop::new(
            self.model.as_ref(),
            &tools,
            Limits::from(&self.entry.budget),
        )
        .with_events(&recorder)
        .with_interjections(&desk.interjections);
        // Memory: the conversation so far (from the engine) and what the expert's own mounts
        // recall for this instruction. Perception: each granted source, read now.
        let conversation = context.memory.clone();
        let recalled = match self.mounts.recall(&goal.instruction).await {
            Some(injected) => {
                let mut payload = serde_json::to_value(&injected).unwrap_or_default();
                payload["task"] = serde_json::json!(goal.task_id);
                if let Err(e) = recorder
                    .write(EventKind::MemoryInjected, payload, None)
                    .await
                {
                    warn!(task = %goal.task_id, "could not record what memory was given: {e}");
                }
                Some(injected.text)
            }
            None => None,
        };
        let memory = match (conversation, recalled) {
            (Some(c), Some(r)) => Some(format!("{}\n{r}", c.trim_end())),
            (c, r) => c.or(r),
        };
        let readings = self
            .mounts
            .perceive(&self.ctx.node, &self.log, &self.entry.id)
            .await;
        if !readings.is_empty() {
            let payload = serde_json::json!({"task": goal.task_id, "sources": readings});
            if let Err(e) = recorder
                .write(EventKind::PerceptionRead, payload, None)
                .await
            {
                warn!(task = %goal.task_id, "could not record what was perceived: {e}");
            }
        }
        let perception = (!readings.is_empty()).then(|| crate::msp::reader::compose(&readings));
        // Structured tasks are performed only for durable jobs (the gateway's goals).
        let instruction = if context.job.is_some() {
            goal.instruction.clone()
        } else {
            crate::llm::offline::defuse_tasks(&goal.instruction)
        };
        let mut state = AgentLoop::start(
            &self.brief,
            &TaskInput {
                instruction,
                memory,
                perception,
            },
        );
        let limit = Duration::from_secs(self.entry.timeouts.task_secs.max(1));
        // Runs the loop; each question goes to the operator and the task waits (within its
        // time limit, or until the goal is canceled) for the answer, then resumes.
        let drive = async {
            let mut outcome = agent.run(&mut state).await;
            loop {
                let TaskStatus::NeedsAnswer { question } = &outcome.status else {
                    return Some(outcome);
                };
                let question_id = match self.desk.ask(&goal.task_id, &self.entry.id, question).await
                {
                    Ok(id) => id,
                    Err(e) => {
                        warn!(task = %goal.task_id, "could not ask the operator: {e}");
                        return Some(outcome);
                    }
                };
                // On the log, so a question outlives this process and any listener's.
                let asked = serde_json::json!({
                    "question_id": question_id, "task_id": goal.task_id,
                    "expert": self.entry.id, "question": question,
                });
                if let Err(e) = recorder.write(EventKind::QuestionAsked, asked, None).await {
                    warn!(task = %goal.task_id, "the question is not on the log: {e}");
                }
                info!(task = %goal.task_id, question = %question_id, "asked the operator: {question}");
                feedback(&handle, "question", &format!("{question_id}: {question}")).await;
                let answer = tokio::select! {
                    a = desk.answer(&question_id) => a,
                    _ = handle.cancel_requested() => return None,
                };
                let Some(answer) = answer else {
                    return Some(outcome);
                };
                feedback(
                    &handle,
                    "answered",
                    &format!("{} answered {question_id}", answer.operator_id),
                )
                .await;
                let answered = serde_json::json!({
                    "question_id": question_id, "task_id": goal.task_id,
                    "operator_id": answer.operator_id, "answer": answer.text,
                });
                if let Err(e) = recorder
                    .write(EventKind::AnswerReceived, answered, None)
                    .await
                {
                    warn!(task = %goal.task_id, "the answer is not on the log: {e}");
                }
                outcome = agent.resume(&mut state, &answer.text).await;
            }
        };
        let outcome = tokio::time::timeout(limit, drive).await;
        // What the task spent against what it was allowed, on every ending.
        let result_json = serde_json::json!({
            "expert": self.entry.id,
            "spent": {
                "model_calls": state.iterations,
                "input_tokens": state.spend.input_tokens,
                "output_tokens": state.spend.output_tokens,
                "cost_usd": state.spend.cost_usd,
                "secs": started.elapsed().as_secs_f64(),
            },
            "budget": budget_json(&self.entry),
        })
        .to_string();
        let outcome = match outcome {
            Ok(None) => {
                let result = AolTaskResult {
                    status: TaskOutcome::Canceled.to_string(),
                    text: "canceled while waiting for the operator's answer".into(),
                    result_json,
                };
                handle.canceled(result).await;
                return;
            }
            Ok(Some(o)) => Ok(o),
            Err(e) => Err(e),
        };
        let (status, text) = match outcome {
            Err(_) => (
                TaskOutcome::TimedOut,
                format!("the task ran past {limit:?}"),
            ),
            Ok(o) => match o.status {
                TaskStatus::Done { answer } => (TaskOutcome::Succeeded, answer),
                TaskStatus::NeedsAnswer { question } => (TaskOutcome::NeedsAnswer, question),
                TaskStatus::BudgetExceeded { limit, partial } => (
                    TaskOutcome::BudgetExceeded,
                    match partial {
                        Some(p) if !p.trim().is_empty() => format!("{limit}; the last answer: {p}"),
                        _ => limit.to_string(),
                    },
                ),
                TaskStatus::MaxIterations { iterations } => (
                    TaskOutcome::MaxIterations,
                    format!(
                        "the budget of {iterations} model calls is spent with work still asked for"
                    ),
                ),
                TaskStatus::ModelError { .. } => {
                    (TaskOutcome::ModelError, format!("{:?}", o.status))
                }
                TaskStatus::EventLogFailed { .. } => {
                    (TaskOutcome::EventLogFailed, format!("{:?}", o.status))
                }
            },
        };
        // What it changed in its scratch goes to review, whatever the ending.
        let text = match &self.scratch {
            Some(s) => {
                let proposal = s.propose(&goal.task_id, &self.entry.id, &recorder).await;
                match proposal.note(&goal.task_id, s.dir()) {
                    Some(note) => format!("{text}\n\n{note}"),
                    None => text,
                }
            }
            None => text,
        };
        let result = AolTaskResult {
            status: status.to_string(),
            text,
            result_json,
        };
        if status.succeeded() {
            span.end();
            handle.succeed(result).await;
        } else {
            warn!(task = %goal.task_id, "task ended {status}");
            span.fail(status.as_str(), result.text.clone());
            span.end();
            handle.abort(result).await;
        }
    }
}

/// The `workspace:` of `entry`'s mesh, if it declares one.
fn mesh_workspace<'a>(
    catalog: &'a Catalog,
    entry: &ExpertEntry,
) -> Option<&'a crate::aem::WorkspaceEntry> {
    catalog.mesh(&entry.mesh).and_then(|m| m.workspace.as_ref())
}

/// The limits `entry` declares, as reported in a task's result (unbounded axes are `null`).
fn budget_json(entry: &crate::aem::ExpertEntry) -> serde_json::Value {
    let b = &entry.budget;
    serde_json::json!({
        "max_iterations": b.max_iterations,
        "max_tokens": b.max_tokens,
        "max_cost_usd": b.max_cost_usd(),
        "task_secs": entry.timeouts.task_secs,
    })
}

/// Feedback without a progress figure (`progress < 0` means unknown; `iron task send` then
/// prints no percentage).
async fn feedback(handle: &GoalHandle<AolTask>, stage: &str, message: &str) {
    let _ = handle
        .feedback(AolTaskFeedback {
            stage: stage.into(),
            message: message.into(),
            progress: -1.0,
        })
        .await;
}
