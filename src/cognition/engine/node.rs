//! The engine as a managed node.

use crate::protocol::payload::{
    ReplyDelivered, RouteMethod, RoutingContext, RoutingDecided, TaskDelegated, TaskJudged,
    TaskRejected,
};
use crate::protocol::report::{RunReport, StepReport};
use crate::protocol::{Payload, TaskContext, TaskOutcome, TaskReport};
use crate::spine::control::lifecycle::RunError;
use crate::tools::CallerKey;
use serde_json::Map;
use std::{path::PathBuf, sync::Arc, time::Duration};

use tokio::{sync::Mutex, task::JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{
    background::Background,
    validate::{Rejection, validate},
};
use crate::{
    aem::Catalog,
    cognition::{
        delegation::{DelegationOptions, Delegator},
        delivery,
    },
    core::{
        config::Config,
        envelope::Envelope,
        ids::EventId,
        trace::{Span, SpanContext, SpanKind, Tracer},
    },
    interfaces::{AolTask, AolTaskFeedback, AolTaskGoal, AolTaskResult},
    llm::{
        ModelRegistry, ModelsConfig,
        router::{Assignment, ModelRouter, OfflineRouter, Router},
    },
    memory::emit,
    spine::{
        control::{
            action::{ActionOptions, ActionServer, GoalHandle, GoalRequest, GoalStatus},
            lifecycle::{CallbackError, ManagedNode, NodeContext},
        },
        durable::AnyLog,
    },
    tools::{RemoteCaller, RosTools},
};

/// The engine's router: the model named by `models.router` (offline scoring whenever its
/// answer is unusable), or offline scoring alone when no router model is configured.
/// Unrouted work that matches nobody goes to `core/assistant` when the catalog has it.
fn routing(config: &Config, catalog: &Catalog) -> Result<Box<dyn Router>, CallbackError> {
    let mut offline = OfflineRouter::new(catalog);
    if catalog.expert(FALLBACK_EXPERT).is_some_and(|e| e.spawnable) {
        offline = offline
            .with_fallback(FALLBACK_EXPERT)
            .map_err(|e| CallbackError::refused_while("router", e))?;
    }
    let models: Option<ModelsConfig> = match &config.models {
        Some(raw) => Some(
            serde_norway::from_value(raw.clone())
                .map_err(|e| CallbackError::refused_while("router: models", e))?,
        ),
        None => None,
    };
    let Some((models, name)) = models.and_then(|m| m.router.clone().map(|r| (m, r))) else {
        info!(
            "engine: {} expert(s) in the catalog; offline router",
            catalog.experts.len()
        );
        return Ok(Box::new(offline));
    };
    let base = std::env::current_dir().map_err(|e| CallbackError::refused_while("router", e))?;
    let model = ModelRegistry::new(models, &base)
        .model(&name)
        .map_err(|e| CallbackError::refused_while(format!("router: model {name:?}"), e))?;
    info!(
        "engine: {} expert(s) in the catalog; routing with model {name}",
        catalog.experts.len()
    );
    Ok(Box::new(ModelRouter::new(model, catalog, offline)))
}

/// Characters of the instruction and of the answer a `task_judged` event keeps.
const JUDGED_CHARS: usize = 8_000;
/// Where work that matches no expert goes.
const FALLBACK_EXPERT: &str = "core/assistant";

/// What one routed assignment came to.
struct Step {
    domain: String,
    status: GoalStatus,
    /// The status word reported in the result (`succeeded`, `failed`, the expert's own…).
    result_status: TaskOutcome,
    text: String,
    expert_node: String,
    error: String,
    answered: bool,
    judged: Option<EventId>,
    /// What the expert spent and its budget, as it reported them (none when it reported
    /// nothing).
    report: Option<TaskReport>,
}

impl Step {
    fn failed(domain: String, error: String) -> Step {
        Step {
            domain,
            status: GoalStatus::Aborted,
            result_status: TaskOutcome::Failed,
            text: String::new(),
            expert_node: String::new(),
            error,
            answered: false,
            judged: None,
            report: None,
        }
    }
}

/// How much longer than an expert's own task limit the engine waits for its result.
const TASK_GRACE: Duration = Duration::from_secs(15);

/// How long a delivery through a tool bridge may take.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// How the engine runs experts.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// The expert executable; `expert_node` beside the engine's own binary by default.
    pub expert_executable: Option<PathBuf>,
    /// Extra arguments for every expert process.
    pub expert_args: Vec<String>,
    /// Bound on an expert's start-up.
    pub startup_timeout: Duration,
    /// Bound on every task, overriding each expert's `timeouts.task_secs` (tests).
    pub task_timeout: Option<Duration>,
    /// How long a delegation beyond the concurrency limit waits for a slot.
    pub slot_wait: Duration,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            expert_executable: None,
            expert_args: Vec::new(),
            startup_timeout: Duration::from_secs(20),
            task_timeout: None,
            slot_wait: Duration::from_secs(30),
        }
    }
}

/// The engine node.
#[derive(Debug, Default)]
pub struct EngineNode {
    pub options: EngineOptions,
}

/// What `configure` built.
pub struct EngineDeps {
    config: Config,
    log: AnyLog,
    catalog: Catalog,
    server: ActionServer<AolTask>,
    goals: Mutex<tokio::sync::mpsc::Receiver<GoalRequest<AolTask>>>,
    delegator: Delegator,
    router: Box<dyn Router>,
    tools: RosTools,
    task_timeout: Option<Duration>,
    tracer: Tracer,
}

impl ManagedNode for EngineNode {
    type Deps = EngineDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<EngineDeps, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let log = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        let catalog = crate::aem::read_state_catalog(&config).map_err(CallbackError::refused_by)?;
        let (server, goals) =
            ActionServer::<AolTask>::new(&ctx.node, "/iron/engine/task", ActionOptions::default())
                .map_err(CallbackError::broken_by)?;
        // A goal response carries no reason: each refusal goes out on
        // /iron/engine/task/rejections as well, for `iron task send` and `ros2 topic echo`.
        server
            .publish_rejections(&ctx.node, |goal: &AolTaskGoal| goal.task_id.clone())
            .map_err(CallbackError::broken_by)?;
        let executable = self.options.expert_executable.clone().unwrap_or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(|d| d.join("expert_node")))
                .unwrap_or_else(|| PathBuf::from("expert_node"))
        });
        let delegator = Delegator::new(
            ctx.node.clone(),
            DelegationOptions {
                executable,
                args: self.options.expert_args.clone(),
                router: ctx.control.config().router.clone(),
                startup_timeout: self.options.startup_timeout,
                slot_wait: self.options.slot_wait,
            },
        );
        let router = routing(&config, &catalog)?;
        let key = CallerKey::open(&config.state_dir).map_err(CallbackError::refused_by)?;
        Ok(EngineDeps {
            config,
            log,
            catalog,
            server,
            goals: Mutex::new(goals),
            delegator,
            router,
            tools: RosTools::new(ctx.node.clone(), DELIVERY_TIMEOUT, key),
            task_timeout: self.options.task_timeout,
            tracer: ctx.tracer.clone(),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<EngineDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        deps.server.set_accepting(true);
        let mut goals = deps.goals.lock().await;
        let mut running = JoinSet::new();
        loop {
            tokio::select! {
                goal = goals.recv() => {
                    let Some(goal) = goal else { break };
                    running.spawn(deps.clone().handle(goal));
                }
                _ = shutdown.cancelled() => break,
                Some(_) = running.join_next(), if !running.is_empty() => {}
            }
        }
        deps.server.set_accepting(false);
        while running.join_next().await.is_some() {}
        Ok(())
    }
}

/// The fields of the goal's context the engine uses.
#[derive(Default)]
struct Context {
    /// The context as the goal carried it.
    carried: TaskContext,
    cause: Option<EventId>,
    source: String,
    destination: String,
    /// The durable job that asked (through the gateway): its answer goes back to the job.
    job: Option<String>,
    /// The span the caller traced this goal under (W3C `traceparent`).
    trace_parent: Option<SpanContext>,
}

impl Context {
    /// The engine's view of a goal's context (`None`: it was malformed, and the goal is
    /// refused).
    fn of(carried: Option<TaskContext>) -> Self {
        let Some(carried) = carried else {
            return Self::default();
        };
        Self {
            cause: carried.cause.clone(),
            source: carried.source.clone().unwrap_or_default(),
            destination: carried.destination.clone().unwrap_or_default(),
            job: carried.job.clone(),
            trace_parent: carried.traceparent.as_deref().and_then(SpanContext::parse),
            carried,
        }
    }
}

impl EngineDeps {
    /// What memory knows before this task is routed (empty when the projection is missing or
    /// does not answer within a second).
    async fn background(&self, goal: &AolTaskGoal, context: &TaskContext) -> Background {
        let projection = self.config.state_path(&self.config.memory.projection);
        let tenant = self.config.tenant.clone();
        let session = goal.session_id.clone();
        // Searched by its prose only: a task block's data (a newsroom's window of thousands of
        // items) made each search run on past the timeout below, a core busy for seconds.
        let instruction = crate::cognition::expert::wake::recall_query(&goal.instruction);
        let current: Vec<String> = context.turns.iter().map(EventId::to_string).collect();
        let read = tokio::task::spawn_blocking(move || {
            Background::gather(&projection, &tenant, &session, &current, &instruction)
        });
        match tokio::time::timeout(Duration::from_secs(1), read).await {
            Ok(Ok(b)) => b,
            _ => {
                warn!(task = %goal.task_id, "no background: the projection did not answer in time");
                Background::default()
            }
        }
    }

    /// Writes one event of this task; a failure to write is logged loudly, never swallowed.
    async fn record<T: Payload>(
        &self,
        goal: &AolTaskGoal,
        payload: &T,
        cause: Option<&EventId>,
    ) -> Option<EventId> {
        let ns: Vec<&str> = if goal.session_id.is_empty() {
            vec!["tasks", goal.task_id.as_str()]
        } else {
            vec!["sessions", goal.session_id.as_str()]
        };
        let mut envelope = Envelope::new(
            self.config.tenant.clone(),
            ns,
            "engine",
            T::KIND,
            payload.to_value(),
        );
        if let Some(c) = cause {
            envelope = envelope.with_cause(c.clone());
        }
        match emit(&self.log, &envelope).await {
            Ok(e) => Some(e.event_id),
            Err(e) => {
                warn!(task = %goal.task_id, "could not write {} to the log: {e}", envelope.kind);
                None
            }
        }
    }

    async fn handle(self: Arc<Self>, request: GoalRequest<AolTask>) {
        let goal = request.goal().clone();
        let checked = validate(&goal, &self.catalog);
        // A goal refused for its context has none: its refusal has no cause.
        let ctx = Context::of(
            checked
                .as_ref()
                .ok()
                .cloned()
                .or_else(|| TaskContext::parse(&goal.context_json).ok()),
        );
        if let Err(why) = checked {
            warn!(task = %goal.task_id, "rejected: {why}");
            self.record(
                &goal,
                &TaskRejected {
                    task_id: goal.task_id.clone(),
                    domain: Some(goal.domain.clone()),
                    code: why.code().to_string(),
                    reason: why.to_string(),
                    rest: Map::new(),
                },
                ctx.cause.as_ref(),
            )
            .await;
            request.reject(why.code(), &why.to_string());
            return;
        }
        let (mut goal, handle) = request.accept().await;
        let mut span = self
            .tracer
            .start("invoke_agent engine", SpanKind::Server, ctx.trace_parent);
        span.set("gen_ai.operation.name", "invoke_agent")
            .set("gen_ai.agent.name", "engine")
            .set("iron.task_id", goal.task_id.clone());
        let background = self.background(&goal, &ctx.carried).await;
        let memory = background.conversation_text();
        // Every part carries what memory knew and the engine's span, for its expert.
        let mut context = ctx.carried.clone();
        if !memory.is_empty() {
            context.memory = Some(memory);
        }
        context.traceparent = Some(span.context().traceparent());
        goal.context_json = context.to_json();
        let (assignments, by) = self.route(&goal, &background, &handle).await;
        if assignments.is_empty() {
            let why = Rejection::NoRouter.to_string();
            span.fail("no_route", why.clone());
            self.record(
                &goal,
                &TaskRejected {
                    task_id: goal.task_id.clone(),
                    domain: None,
                    code: Rejection::NoRouter.code().to_string(),
                    reason: why.clone(),
                    rest: Map::new(),
                },
                ctx.cause.as_ref(),
            )
            .await;
            handle
                .abort(AolTaskResult {
                    status: TaskOutcome::Rejected.to_string(),
                    text: why,
                    result_json: "{}".into(),
                })
                .await;
            return;
        }

        // The assignments run in the order routed, each by its own expert process; the first
        // that does not succeed ends the run (later steps may rest on it).
        let total = assignments.len();
        let mut steps: Vec<Step> = Vec::with_capacity(total);
        for (i, a) in assignments.into_iter().enumerate() {
            let mut part = goal.clone();
            part.domain = a.domain;
            part.instruction = a.instruction;
            if total > 1 {
                part.task_id = format!("{}-{}", goal.task_id, i + 1);
                part.parent_task_id = goal.task_id.clone();
            }
            let step = self
                .run_step(&part, &handle, &ctx, &by, &background.summary(), (i, total))
                .await;
            let succeeded = step.status == GoalStatus::Succeeded;
            steps.push(step);
            if !succeeded {
                break;
            }
        }
        self.conclude(&goal, handle, span, &ctx, &steps, total)
            .await;
    }

    /// The assignments of `goal`: the expert it names, else the router's choice in the light of
    /// what the conversation holds (none when the router fails).
    async fn route(
        &self,
        goal: &AolTaskGoal,
        background: &Background,
        handle: &GoalHandle<AolTask>,
    ) -> (Vec<Assignment>, RouteMethod) {
        if !goal.domain.is_empty() {
            let given = Assignment {
                domain: goal.domain.clone(),
                instruction: goal.instruction.clone(),
            };
            return (vec![given], RouteMethod::Given);
        }
        feedback(handle, "routing", "choosing an expert", 0.05).await;
        let known = background.known();
        match self.router.route_in(&goal.instruction, &known).await {
            Ok(decision) => (decision.assignments, decision.method),
            Err(e) => {
                warn!(task = %goal.task_id, "routing failed: {e}");
                (Vec::new(), RouteMethod::Given)
            }
        }
    }

    /// Ends `goal` on what its `steps` (of `total` routed) came to: a person's task answered
    /// in full is delivered, and the result carries the last step's status and every step's
    /// spend.
    async fn conclude(
        &self,
        goal: &AolTaskGoal,
        handle: GoalHandle<AolTask>,
        mut span: Span,
        ctx: &Context,
        steps: &[Step],
        total: usize,
    ) {
        let last = steps.last().expect("at least one assignment ran");
        let all_answered = steps.len() == total && steps.iter().all(|s| s.answered);
        let text = if total == 1 {
            last.text.clone()
        } else {
            steps
                .iter()
                .filter(|s| !s.text.trim().is_empty())
                .map(|s| format!("[{}] {}", s.domain, s.text.trim()))
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        // A delegation's answer goes back to the expert that asked, and a job's to the job (as
        // the goal's result); only a person's task is delivered.
        if all_answered && goal.depth == 0 && ctx.job.is_none() {
            feedback(&handle, "delivering", "delivering the reply", 0.9).await;
            let mesh = last.domain.split_once('/').map_or("", |(m, _)| m);
            self.deliver(goal, mesh, ctx, &text, last.judged.as_ref())
                .await;
        }
        let status = last.status;
        if status != GoalStatus::Succeeded {
            span.fail(last.result_status.as_str(), last.error.clone());
        }
        let result = AolTaskResult {
            status: last.result_status.to_string(),
            text: if last.error.is_empty() {
                text
            } else {
                last.error.clone()
            },
            result_json: RunReport {
                expert: last.expert_node.clone(),
                domain: last.domain.clone(),
                answered: all_answered,
                steps: steps
                    .iter()
                    .map(|s| StepReport {
                        domain: s.domain.clone(),
                        expert: s.expert_node.clone(),
                        status: s.result_status,
                        spent: s.report.as_ref().map(|r| r.spent),
                        budget: s.report.as_ref().map(|r| r.budget),
                    })
                    .collect(),
            }
            .to_json(),
        };
        match status {
            GoalStatus::Succeeded => handle.succeed(result).await,
            GoalStatus::Canceled => handle.canceled(result).await,
            _ => handle.abort(result).await,
        }
    }

    /// Routes one assignment to a new expert process and judges what came back:
    /// `routing_decided` → `task_delegated` → `task_judged`, each caused by the one before.
    async fn run_step(
        &self,
        part: &AolTaskGoal,
        handle: &GoalHandle<AolTask>,
        ctx: &Context,
        by: &RouteMethod,
        known: &RoutingContext,
        (index, total): (usize, usize),
    ) -> Step {
        let domain = part.domain.clone();
        let fork = ctx.carried.fork.as_ref();
        let decided = RoutingDecided {
            task_id: part.task_id.clone(),
            domain: domain.clone(),
            instruction: part.instruction.clone(),
            by: by.clone(),
            part: index + 1,
            of: total,
            context: known.clone(),
            depth: part.depth,
            parent_task_id: part.parent_task_id.clone(),
            // A fork names the task and the model call it branches from.
            forked_from: fork.map(|f| f.from.clone()),
            fork_at: fork.map(|f| f.at),
            // A job's step names the job and the signal its answer goes back on.
            job: ctx.job.clone(),
            signal: ctx
                .job
                .as_ref()
                .map(|_| ctx.carried.signal.clone().unwrap_or_default()),
        };
        let routed = self.record(part, &decided, ctx.cause.as_ref()).await;
        feedback(handle, "spawning", &format!("starting {domain}"), 0.1).await;
        let (fb_tx, mut fb_rx) = tokio::sync::mpsc::unbounded_channel();
        let Some((mesh, role)) = part.domain.split_once('/') else {
            return Step::failed(domain.clone(), format!("{domain:?} is not <mesh>/<role>"));
        };
        let Some(expert) = self.catalog.expert(&domain).filter(|e| e.spawnable) else {
            return Step::failed(
                domain.clone(),
                format!("the router chose {domain}, which is not a spawnable expert"),
            );
        };
        // The expert's own declared limit, and a little more so that it reports a timeout
        // itself rather than being cut off.
        let limit = self
            .task_timeout
            .unwrap_or_else(|| Duration::from_secs(expert.timeouts.task_secs) + TASK_GRACE);
        let run = self.delegator.run(mesh, role, part.clone(), limit, fb_tx);
        tokio::pin!(run);
        let delegated = loop {
            tokio::select! {
                biased;
                Some(fb) = fb_rx.recv() => { let _ = handle.feedback(fb).await; }
                d = &mut run => break d,
            }
        };
        // What the expert said just before it finished goes out before its result.
        while let Ok(fb) = fb_rx.try_recv() {
            let _ = handle.feedback(fb).await;
        }
        let (status, text, expert_node, error) = match &delegated {
            Ok(d) => (
                d.status,
                d.result.text.clone(),
                d.node.clone(),
                String::new(),
            ),
            Err(e) => (
                GoalStatus::Aborted,
                String::new(),
                String::new(),
                e.to_string(),
            ),
        };
        let report = match &delegated {
            Ok(d) => TaskReport::parse(&d.result.result_json).unwrap_or_else(|e| {
                warn!(task = %part.task_id, "{domain} reported nothing readable: {e}");
                None
            }),
            Err(_) => None,
        };
        let delegated_id = self
            .record(
                part,
                &TaskDelegated {
                    task_id: part.task_id.clone(),
                    domain: domain.clone(),
                    expert: expert_node.clone(),
                    status: format!("{status:?}").to_lowercase(),
                    error: error.clone(),
                    spent: report.as_ref().map(|r| r.spent),
                    budget: report.as_ref().map(|r| r.budget),
                    rest: Map::new(),
                },
                routed.as_ref(),
            )
            .await;
        let result_status = match (&delegated, status) {
            (Err(_), _) => TaskOutcome::Failed,
            (Ok(_), GoalStatus::Succeeded) => TaskOutcome::Succeeded,
            (Ok(_), GoalStatus::Canceled) => TaskOutcome::Canceled,
            (Ok(d), _) => d.result.status.parse().unwrap_or_else(|e| {
                warn!(task = %part.task_id, "{domain} ended with {e}; counted as failed");
                TaskOutcome::Failed
            }),
        };
        let answered = status == GoalStatus::Succeeded && !text.trim().is_empty();
        let verdict = judgement(part, &domain, answered, &text, &error, result_status);
        let judged = self.record(part, &verdict, delegated_id.as_ref()).await;
        Step {
            domain,
            status,
            result_status,
            text,
            expert_node,
            error,
            answered,
            judged,
            report,
        }
    }

    /// Sends the reply through the mesh's declared channel for the message's source (or the
    /// terminal, if declared). A failed delivery is recorded as not delivered, with why.
    async fn deliver(
        &self,
        goal: &AolTaskGoal,
        mesh: &str,
        ctx: &Context,
        text: &str,
        cause: Option<&EventId>,
    ) {
        let Some(m) = self.catalog.mesh(mesh) else {
            return;
        };
        let channel = if m.delivery.contains_key(&ctx.source) {
            ctx.source.clone()
        } else {
            "terminal".to_string()
        };
        let message = delivery::Message {
            dest: &ctx.destination,
            text,
            source: &ctx.source,
            ..delivery::Message::default()
        };
        let caller = RemoteCaller {
            caller: "engine".into(),
            task_id: goal.task_id.clone(),
        };
        // The channel's answer, with what it says of the send taken into the typed fields.
        let mut answer =
            match delivery::send(&self.tools, m, &channel, &message, &caller, mesh).await {
                Ok(serde_json::Value::Object(answer)) => answer,
                Ok(other) => serde_json::Map::from_iter([("answer".to_string(), other)]),
                Err(reason) => {
                    warn!(task = %goal.task_id, "reply not delivered: {reason}");
                    serde_json::Map::from_iter([
                        ("delivered".to_string(), false.into()),
                        ("reason".to_string(), reason.to_string().into()),
                    ])
                }
            };
        let delivered = answer.remove("delivered").and_then(|d| d.as_bool());
        let reason = answer.remove("reason");
        let data = answer.remove("data");
        answer.insert("destination".into(), ctx.destination.clone().into());
        let reply = ReplyDelivered {
            task_id: goal.task_id.clone(),
            delivered: delivered.unwrap_or(false),
            channel: Some(channel),
            text: text.to_string(),
            reason: reason.and_then(|r| r.as_str().map(String::from)),
            data,
            rest: answer,
        };
        self.record(goal, &reply, cause).await;
    }
}

async fn feedback(handle: &GoalHandle<AolTask>, stage: &str, message: &str, progress: f32) {
    let _ = handle
        .feedback(AolTaskFeedback {
            stage: stage.into(),
            message: message.into(),
            progress,
        })
        .await;
}

/// The engine's verdict on step `part`, run by `domain`: answered or not, and why not (for
/// the procedural reviewer: repeated reasons become lessons), with what was asked and
/// answered, clipped (memory learns from it).
fn judgement(
    part: &AolTaskGoal,
    domain: &str,
    answered: bool,
    text: &str,
    error: &str,
    result_status: TaskOutcome,
) -> TaskJudged {
    let reason = if answered {
        String::new()
    } else if !error.is_empty() {
        error.to_string()
    } else if !text.trim().is_empty() {
        format!("{result_status}: {}", text.trim())
    } else {
        format!("ended {result_status} with no answer")
    };
    let clip = |t: &str| t.chars().take(JUDGED_CHARS).collect::<String>();
    TaskJudged {
        task_id: part.task_id.clone(),
        domain: domain.to_string(),
        answered,
        method: Some("status_and_nonempty_text".into()),
        instruction: Some(clip(&part.instruction)),
        answer: Some(if answered { clip(text) } else { String::new() }),
        reason: Some(clip(&reason)),
        rest: Map::new(),
    }
}
