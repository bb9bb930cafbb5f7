//! One task in an expert process, in the order it happens: the goal's context is read (a
//! malformed one is refused), the expert wakes with what memory and perception give it, the
//! agent loop runs (asking the operator and waiting when the model asks), and the outcome is
//! reported with what the task spent, its scratch's changes proposed for review.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::{
    StartError,
    adapters::{ManagedTools, Recorder, TaskTrace},
    delegate::{Delegation, ExpertTools},
    deliver::Deliveries,
    node::ExpertDeps,
    operator::{Refused, TaskDesk},
};
use crate::{
    cognition::agent::{self, AgentLoop, Limits, TaskInput, TaskState, TaskStatus},
    core::trace::{Span, SpanContext, SpanKind},
    interfaces::{AolTask, AolTaskFeedback, AolTaskGoal, AolTaskResult},
    llm::Message,
    msp::reader::Reading,
    protocol::payload::{
        AnswerReceived, ExpertWoke, ForkedAt, MemoryInjected, OperatorRefused, PerceptionRead,
        QuestionAsked,
    },
    protocol::report::{Allowed, Spent, TaskReport},
    protocol::{Fork, TaskContext, TaskOutcome},
    spine::control::action::{GoalHandle, GoalRequest},
};

impl ExpertDeps {
    /// One goal, from acceptance to its result.
    pub(super) async fn work(self: Arc<Self>, request: GoalRequest<AolTask>) {
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
        let recorder = self.recorder(&goal, &context, &span);
        let tools = self.tools_for(&goal, &context, &recorder, &span);
        let desk = self.open_desk(&goal, context.user_id.clone(), &recorder);
        let started = Instant::now();
        let model = match context.fork.as_ref().and_then(|f| f.model.as_deref()) {
            None => Ok(self.model.clone()),
            // Without a `models:` block every name is the offline backend: a name asked for
            // would be silently ignored.
            Some(name) if self.config.models.is_none() => Err(StartError::NoModels(name.into())),
            Some(name) => {
                let base = std::env::current_dir().unwrap_or_default();
                super::node::model_named(&self.config, &self.embedder, &base, name)
            }
        };
        let prepared = model.and_then(|model| {
            let forked = context
                .fork
                .as_ref()
                .map(|f| fork_state(f, context.job.is_some()))
                .transpose()?;
            Ok((model, forked))
        });
        let (model, forked) = match prepared {
            Ok(prepared) => prepared,
            Err(why) => {
                warn!(task = %goal.task_id, "refused the fork: {why}");
                handle
                    .abort(AolTaskResult {
                        status: TaskOutcome::Failed.to_string(),
                        text: format!("cannot fork: {why}"),
                        result_json: "{}".into(),
                    })
                    .await;
                return;
            }
        };
        let agent = AgentLoop::new(model.as_ref(), &tools, Limits::from(&self.entry.budget))
            .with_events(&recorder)
            .with_interjections(&desk.interjections);
        // A fork starts from the recorded conversation (which holds what that task's wake
        // gave); any other task wakes.
        let (input, mut state) = match forked {
            Some(state) => (TaskInput::default(), state),
            None => {
                let input = self.wake(&goal, &context, &recorder).await;
                let state = AgentLoop::start(&self.brief, &input);
                (input, state)
            }
        };
        // What a replay of this task starts from.
        let woke = ExpertWoke {
            task_id: goal.task_id.clone(),
            model: model.name().to_string(),
            input,
            tools: agent.offered().to_vec(),
            fork: context.fork.as_ref().map(|f| ForkedAt {
                from: f.from.clone(),
                at: f.at,
            }),
        };
        if let Err(e) = recorder.record(&woke, None).await {
            warn!(task = %goal.task_id, "could not record the task's start: {e}");
        }
        let limit = Duration::from_secs(self.entry.timeouts.task_secs.max(1));
        let ran = tokio::time::timeout(
            limit,
            self.drive(&agent, &mut state, &goal, &desk, &recorder, &handle),
        )
        .await;
        let result_json = self.spent(&state, started);
        let (status, text) = match ran {
            Ok(None) => {
                let result = AolTaskResult {
                    status: TaskOutcome::Canceled.to_string(),
                    text: "canceled while waiting for the operator's answer".into(),
                    result_json,
                };
                handle.canceled(result).await;
                return;
            }
            Ok(Some(outcome)) => ending(outcome.status),
            Err(_) => (
                TaskOutcome::TimedOut,
                format!("the task ran past {limit:?}"),
            ),
        };
        self.finish(&goal, handle, span, &recorder, status, text, result_json)
            .await;
    }

    /// Where the task's events go: its session (or the task itself), caused by what caused
    /// the task, traced under its span.
    fn recorder(&self, goal: &AolTaskGoal, context: &TaskContext, span: &Span) -> Recorder {
        Recorder {
            log: self.log.clone(),
            tenant: self.config.tenant.clone(),
            namespace: if goal.session_id.is_empty() {
                vec!["tasks".into(), goal.task_id.clone()]
            } else {
                vec!["sessions".into(), goal.session_id.clone()]
            },
            actor: self.entry.id.clone(),
            cause: context.cause.clone(),
            task_id: Some(goal.task_id.clone()),
            trace: Some(TaskTrace::new(self.ctx.tracer.clone(), span.context())),
        }
    }

    /// What the model may call in this task: the managed tools, delegation to its peers (as
    /// the task's owner), and its delivery channels.
    fn tools_for(
        &self,
        goal: &AolTaskGoal,
        context: &TaskContext,
        recorder: &Recorder,
        span: &Span,
    ) -> ExpertTools {
        ExpertTools {
            managed: ManagedTools {
                manager: self.tools.clone(),
                task: goal.task_id.clone(),
                cause: context.cause.as_ref().map(ToString::to_string),
            },
            delegation: (!self.peers.is_empty()).then(|| Delegation {
                expert: self.entry.id.clone(),
                peers: self.peers.clone(),
                depth: goal.depth,
                task_id: goal.task_id.clone(),
                session_id: goal.session_id.clone(),
                owner: context.user_id.clone(),
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
        }
    }

    /// The task's place at the operator desk. Who may answer and correct it: the person whose
    /// message started it (a delegation inherits it), besides the configured operators; a
    /// refused answer or correction is recorded.
    fn open_desk(
        &self,
        goal: &AolTaskGoal,
        owner: Option<String>,
        recorder: &Recorder,
    ) -> TaskDesk {
        let recorder = recorder.clone();
        let runtime = tokio::runtime::Handle::current();
        self.desk.open(
            &goal.task_id,
            owner,
            Arc::new(move |refused: Refused| {
                let recorder = recorder.clone();
                runtime.spawn(async move {
                    let payload = OperatorRefused {
                        task_id: Some(refused.task_id.clone()),
                        operator_id: refused.operator_id,
                        what: refused.what.to_string(),
                        reason: refused.why,
                    };
                    if let Err(e) = recorder.record(&payload, None).await {
                        warn!(task = %refused.task_id, "the refusal is not on the log: {e}");
                    }
                });
            }),
        )
    }

    /// What the expert wakes with. Memory: the conversation so far (from the engine) and what
    /// its own mounts recall for this instruction. Perception: each granted source, read now.
    /// Both are recorded as given.
    async fn wake(
        &self,
        goal: &AolTaskGoal,
        context: &TaskContext,
        recorder: &Recorder,
    ) -> TaskInput {
        let recalled = match self.mounts.recall(&goal.instruction).await {
            Some(injected) => {
                let given = MemoryInjected {
                    task_id: goal.task_id.clone(),
                    task: goal.task_id.clone(),
                    prefixes: injected.prefixes.clone(),
                    items: injected.items.clone(),
                };
                if let Err(e) = recorder.record(&given, None).await {
                    warn!(task = %goal.task_id, "could not record what memory was given: {e}");
                }
                Some(injected.text)
            }
            None => None,
        };
        let memory = match (context.memory.clone(), recalled) {
            (Some(c), Some(r)) => Some(format!("{}\n{r}", c.trim_end())),
            (c, r) => c.or(r),
        };
        let readings = self
            .mounts
            .perceive(&self.ctx.node, &self.log, &self.entry.id)
            .await;
        if !readings.is_empty() {
            let payload = PerceptionRead {
                task_id: goal.task_id.clone(),
                task: goal.task_id.clone(),
                sources: readings.iter().map(Reading::record).collect(),
            };
            if let Err(e) = recorder.record(&payload, None).await {
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
        TaskInput {
            instruction,
            memory,
            perception,
        }
    }

    /// Runs the loop; each question goes to the operator, on the log, and the task waits for
    /// the answer (until the goal is canceled: `None`), then resumes.
    async fn drive(
        &self,
        agent: &AgentLoop<'_>,
        state: &mut TaskState,
        goal: &AolTaskGoal,
        desk: &TaskDesk,
        recorder: &Recorder,
        handle: &GoalHandle<AolTask>,
    ) -> Option<agent::TaskOutcome> {
        let mut outcome = agent.run(state).await;
        loop {
            let TaskStatus::NeedsAnswer { question } = &outcome.status else {
                return Some(outcome);
            };
            let question_id = match self.desk.ask(&goal.task_id, &self.entry.id, question).await {
                Ok(id) => id,
                Err(e) => {
                    warn!(task = %goal.task_id, "could not ask the operator: {e}");
                    return Some(outcome);
                }
            };
            // On the log, so a question outlives this process and any listener's.
            let asked = QuestionAsked {
                question_id: question_id.clone(),
                task_id: goal.task_id.clone(),
                expert: self.entry.id.clone(),
                question: question.clone(),
            };
            if let Err(e) = recorder.record(&asked, None).await {
                warn!(task = %goal.task_id, "the question is not on the log: {e}");
            }
            info!(task = %goal.task_id, question = %question_id, "asked the operator: {question}");
            feedback(handle, "question", &format!("{question_id}: {question}")).await;
            let answer = tokio::select! {
                a = desk.answer(&question_id) => a,
                _ = handle.cancel_requested() => return None,
            };
            let Some(answer) = answer else {
                return Some(outcome);
            };
            feedback(
                handle,
                "answered",
                &format!("{} answered {question_id}", answer.operator_id),
            )
            .await;
            let answered = AnswerReceived {
                question_id: question_id.clone(),
                task_id: goal.task_id.clone(),
                operator_id: answer.operator_id.clone(),
                answer: answer.text.clone(),
            };
            if let Err(e) = recorder.record(&answered, None).await {
                warn!(task = %goal.task_id, "the answer is not on the log: {e}");
            }
            outcome = agent.resume(state, &answer.text).await;
        }
    }

    /// What the task spent against what it was allowed (the result's `result_json`, on every
    /// ending).
    fn spent(&self, state: &TaskState, started: Instant) -> String {
        let b = &self.entry.budget;
        TaskReport {
            expert: self.entry.id.clone(),
            spent: Spent {
                model_calls: state.iterations,
                input_tokens: state.spend.input_tokens,
                output_tokens: state.spend.output_tokens,
                cost_usd: state.spend.cost_usd,
                secs: started.elapsed().as_secs_f64(),
            },
            budget: Allowed {
                max_iterations: b.max_iterations,
                max_tokens: b.max_tokens,
                max_cost_usd: b.max_cost_usd(),
                task_secs: self.entry.timeouts.task_secs,
            },
        }
        .to_json()
    }

    /// Reports how the task ended. What it changed in its scratch goes to review whatever
    /// the ending, and the result says so.
    #[allow(clippy::too_many_arguments)] // the task's parts, each used once here
    async fn finish(
        &self,
        goal: &AolTaskGoal,
        handle: GoalHandle<AolTask>,
        mut span: Span,
        recorder: &Recorder,
        status: TaskOutcome,
        text: String,
        result_json: String,
    ) {
        let text = match &self.scratch {
            Some(s) => {
                let proposal = s.propose(&goal.task_id, &self.entry.id, recorder).await;
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

/// How the loop's ending reads as a task outcome, with the result's text.
/// The state a fork starts in: the recorded conversation with a fresh correction marker in
/// the record's place, after the model calls before the fork's. A fork that no job asked for
/// performs no structured task, as any such task (see `wake`).
fn fork_state(fork: &Fork, for_job: bool) -> Result<TaskState, StartError> {
    if fork.at == 0 || fork.prefix.len() < 2 {
        return Err(StartError::ForkTooEarly);
    }
    let marker = AgentLoop::fresh_marker();
    let messages = fork
        .prefix
        .iter()
        .map(|m| {
            let m: Message = serde_json::from_value(m.clone()).map_err(StartError::ForkMessage)?;
            let m = agent::swap_marker(&m, agent::MARKER_SHOWN, &marker);
            Ok(match m {
                Message::User { content } if !for_job => {
                    Message::user(crate::llm::offline::defuse_tasks(&content))
                }
                other => other,
            })
        })
        .collect::<Result<Vec<_>, StartError>>()?;
    Ok(AgentLoop::resume_from(messages, fork.at - 1, marker))
}

fn ending(status: TaskStatus) -> (TaskOutcome, String) {
    match status {
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
            format!("the budget of {iterations} model calls is spent with work still asked for"),
        ),
        other @ TaskStatus::ModelError { .. } => (TaskOutcome::ModelError, format!("{other:?}")),
        other @ TaskStatus::EventLogFailed { .. } => {
            (TaskOutcome::EventLogFailed, format!("{other:?}"))
        }
    }
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
