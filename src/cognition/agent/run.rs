//! The loop itself. Each pass: read interjections (the boundary), check the limits, call the
//! model, then run its tool calls one by one in the order asked. It ends with a
//! [`TaskStatus`], never a panic; a question to the operator pauses it in a [`TaskState`]
//! that [`AgentLoop::resume`] continues with the answer.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::budget::{BudgetLimit, Limits, Spend};
use super::ports::{
    Interjections, LoopEvent, LoopEvents, NoEvents, NoInterjections, Prompt, RecordError,
    ToolExecutor, ToolFailure,
};
use super::prompt::{ExpertBrief, system_prompt, wrap_tool_output};
use crate::llm::{ChatModel, ChatRequest, Message, ToolCall, ToolSpec};

/// Name of the built-in tool that pauses the task with a question for the operator.
pub const ASK_OPERATOR: &str = "ask_operator";

/// How an operator correction starts when added to the conversation; the task's own marker
/// follows it (see [`TaskState::correction`]).
pub const CORRECTION_PREFIX: &str = "Operator correction";

/// The built-in `ask_operator` tool as offered to the model.
pub fn ask_operator_spec() -> ToolSpec {
    ToolSpec {
        name: ASK_OPERATOR.to_string(),
        description: "Pause the task and ask the operator one question, when you cannot continue \
without a fact, decision or permission only they can give. The task resumes with their answer."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question, complete and specific."}
            },
            "required": ["question"]
        }),
    }
}

pub use crate::protocol::payload::TaskInput;

/// A question waiting for the operator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingQuestion {
    /// Id of the `ask_operator` call the answer goes to.
    pub call_id: String,
    /// The question.
    pub question: String,
    /// Tool calls of the same model answer that came after the question; they run, in order,
    /// after the answer.
    pub deferred: Vec<ToolCall>,
}

/// Everything needed to continue a task: the conversation, what it spent, and the open
/// question, if any. It serializes, so a paused task can be kept outside the process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    /// The conversation, system prompt first.
    pub messages: Vec<Message>,
    /// Model calls made.
    pub iterations: u32,
    /// Tokens and cost spent.
    pub spend: Spend,
    /// The open question.
    pub pending: Option<PendingQuestion>,
    /// A secret of this task: operator corrections carry it, so that text in the instruction
    /// or in data that calls itself a correction is recognisably not one.
    pub marker: String,
    /// How many of `messages` a recorded model call already carried (each `model_called`
    /// records only the messages after these).
    #[serde(default)]
    pub recorded: usize,
}

impl TaskState {
    /// How this task's operator corrections begin: `Operator correction [<marker>]:`.
    pub fn correction(&self) -> String {
        correction(&self.marker)
    }
}

/// The system message of an expert's task: its brief, what it was given, and how its
/// operator's corrections begin.
pub fn system_message(brief: &ExpertBrief, input: &TaskInput, marker: &str) -> Message {
    Message::system(system_prompt(
        brief,
        &correction(marker),
        input.memory.as_deref(),
        input.perception.as_deref(),
    ))
}

fn correction(marker: &str) -> String {
    format!("{CORRECTION_PREFIX} [{marker}]:")
}

/// How a run of the loop ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TaskStatus {
    /// The model answered without asking for tools.
    Done {
        /// Its answer.
        answer: String,
    },
    /// The model asked the operator a question; resume with the answer.
    NeedsAnswer {
        /// The question.
        question: String,
    },
    /// A token or cost bound was passed.
    BudgetExceeded {
        /// Which bound.
        limit: BudgetLimit,
        /// The text of the last answer, if it had one.
        partial: Option<String>,
    },
    /// The model-call bound was reached with work still asked for.
    MaxIterations {
        /// Model calls made.
        iterations: u32,
    },
    /// The model failed (after retries and failover).
    ModelError {
        /// Stable error code (`unauthorized`, `all_backends_failed`, …).
        code: String,
        /// The error.
        message: String,
    },
    /// An event could not be recorded, so the loop stopped.
    EventLogFailed {
        /// The recording error.
        message: String,
    },
}

impl TaskStatus {
    /// The status code: `done`, `needs_answer`, `budget_exceeded`, `max_iterations`,
    /// `model_error`, `event_log_failed`.
    pub fn code(&self) -> &'static str {
        match self {
            TaskStatus::Done { .. } => "done",
            TaskStatus::NeedsAnswer { .. } => "needs_answer",
            TaskStatus::BudgetExceeded { .. } => "budget_exceeded",
            TaskStatus::MaxIterations { .. } => "max_iterations",
            TaskStatus::ModelError { .. } => "model_error",
            TaskStatus::EventLogFailed { .. } => "event_log_failed",
        }
    }
}

/// The status with what the task spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskOutcome {
    /// How it ended.
    pub status: TaskStatus,
    /// Model calls made, over the whole task.
    pub iterations: u32,
    /// Spent, over the whole task.
    pub spend: Spend,
}

/// One expert's loop: a model, a tool executor, and optional interjections and event sink.
pub struct AgentLoop<'a> {
    model: &'a dyn ChatModel,
    tools: &'a dyn ToolExecutor,
    interjections: &'a dyn Interjections,
    events: &'a dyn LoopEvents,
    limits: Limits,
}

impl std::fmt::Debug for AgentLoop<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentLoop")
            .field("model", &self.model.name())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<'a> AgentLoop<'a> {
    /// A loop with no interjections and no event sink.
    pub fn new(model: &'a dyn ChatModel, tools: &'a dyn ToolExecutor, limits: Limits) -> Self {
        Self {
            model,
            tools,
            interjections: &NoInterjections,
            events: &NoEvents,
            limits,
        }
    }

    /// Reads corrections from `interjections` at each boundary.
    pub fn with_interjections(mut self, interjections: &'a dyn Interjections) -> Self {
        self.interjections = interjections;
        self
    }

    /// Records events to `events`.
    pub fn with_events(mut self, events: &'a dyn LoopEvents) -> Self {
        self.events = events;
        self
    }

    /// A fresh task: the system prompt and the instruction.
    pub fn start(brief: &ExpertBrief, input: &TaskInput) -> TaskState {
        Self::start_with_marker(brief, input, Self::fresh_marker())
    }

    /// A new task's correction marker.
    pub fn fresh_marker() -> String {
        uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
    }

    /// [`AgentLoop::start`] with a given correction marker (a replay uses the one the record
    /// shows).
    pub fn start_with_marker(brief: &ExpertBrief, input: &TaskInput, marker: String) -> TaskState {
        Self::resume_from(
            vec![
                system_message(brief, input, &marker),
                Message::user(input.instruction.trim()),
            ],
            0,
            marker,
        )
    }

    /// A task whose conversation so far is `messages`, after `iterations` model calls (a fork
    /// of a recorded task starts so).
    pub fn resume_from(messages: Vec<Message>, iterations: u32, marker: String) -> TaskState {
        TaskState {
            messages,
            iterations,
            spend: Spend::default(),
            pending: None,
            marker,
            recorded: 0,
        }
    }

    /// Runs until an answer, a question or a limit. With a question still open it returns
    /// [`TaskStatus::NeedsAnswer`] again without calling the model.
    pub async fn run(&self, state: &mut TaskState) -> TaskOutcome {
        let status = match &state.pending {
            Some(p) => Ok(TaskStatus::NeedsAnswer {
                question: p.question.clone(),
            }),
            None => self.drive(state).await,
        };
        self.finish(state, status).await
    }

    /// Gives the operator's `answer` to the open question, runs the tool calls deferred
    /// behind it, and continues. Without an open question the answer is added as a
    /// correction.
    pub async fn resume(&self, state: &mut TaskState, answer: &str) -> TaskOutcome {
        let status = self.answer_then_drive(state, answer).await;
        self.finish(state, status).await
    }

    async fn answer_then_drive(
        &self,
        state: &mut TaskState,
        answer: &str,
    ) -> Result<TaskStatus, RecordError> {
        match state.pending.take() {
            Some(p) => {
                self.record(LoopEvent::AnswerReceived {
                    call_id: p.call_id.clone(),
                    answer: answer.to_string(),
                })
                .await?;
                state.messages.push(Message::Tool {
                    call_id: p.call_id,
                    name: ASK_OPERATOR.to_string(),
                    content: format!("The operator answered: {answer}"),
                    is_error: false,
                });
                let offered = self.offered();
                if let Some(status) = self.run_calls(state, &offered, p.deferred).await? {
                    return Ok(status);
                }
            }
            None => {
                let prefix = state.correction();
                state
                    .messages
                    .push(Message::user(format!("{prefix} {answer}")))
            }
        }
        self.drive(state).await
    }

    async fn finish(
        &self,
        state: &TaskState,
        status: Result<TaskStatus, RecordError>,
    ) -> TaskOutcome {
        let mut status = status.unwrap_or_else(|e| TaskStatus::EventLogFailed {
            message: e.to_string(),
        });
        if !matches!(status, TaskStatus::EventLogFailed { .. }) {
            let finished = LoopEvent::Finished {
                status: status.code().to_string(),
                spend: state.spend,
            };
            if let Err(e) = self.record(finished).await {
                status = TaskStatus::EventLogFailed {
                    message: e.to_string(),
                };
            }
        }
        TaskOutcome {
            status,
            iterations: state.iterations,
            spend: state.spend,
        }
    }

    async fn record(&self, event: LoopEvent) -> Result<(), RecordError> {
        self.events.record(&event).await
    }

    /// Tools offered this task: the executor's, then `ask_operator` (which replaces any
    /// executor tool of that name).
    /// The tools the model is offered: the executor's, and `ask_operator`.
    pub fn offered(&self) -> Vec<ToolSpec> {
        let mut tools: Vec<ToolSpec> = self
            .tools
            .tools()
            .into_iter()
            .filter(|t| t.name != ASK_OPERATOR)
            .collect();
        tools.push(ask_operator_spec());
        tools
    }

    async fn drive(&self, state: &mut TaskState) -> Result<TaskStatus, RecordError> {
        let offered = self.offered();
        loop {
            // The boundary: corrections that arrived meanwhile join the conversation now.
            for text in self.interjections.take() {
                self.record(LoopEvent::InterjectionRead { text: text.clone() })
                    .await?;
                let prefix = state.correction();
                state
                    .messages
                    .push(Message::user(format!("{prefix} {text}")));
            }
            if let Some(limit) = self.limits.budget.exhausted(&state.spend) {
                return Ok(TaskStatus::BudgetExceeded {
                    limit,
                    partial: last_text(&state.messages),
                });
            }
            if state.iterations >= self.limits.max_iterations {
                return Ok(TaskStatus::MaxIterations {
                    iterations: state.iterations,
                });
            }
            let request = ChatRequest {
                messages: state.messages.clone(),
                tools: offered.clone(),
                ..Default::default()
            };
            state.iterations += 1;
            let iteration = state.iterations;
            let asked = std::time::Instant::now();
            let answer = self.model.chat(&request).await;
            let latency_ms = asked.elapsed().as_millis() as u64;
            let response = match answer {
                Ok(r) => r,
                Err(e) => {
                    self.record(LoopEvent::ModelFailed {
                        iteration,
                        code: e.code().to_string(),
                        message: e.to_string(),
                        latency_ms,
                    })
                    .await?;
                    return Ok(TaskStatus::ModelError {
                        code: e.code().to_string(),
                        message: e.to_string(),
                    });
                }
            };
            state.spend.add_call(response.usage, response.cost_usd);
            self.record(LoopEvent::ModelCalled {
                iteration,
                backend: response.backend.clone(),
                model: response.model.clone(),
                prompt: Prompt::of(&request.messages, state.recorded, &state.marker),
                calls: response.tool_calls.clone(),
                usage: response.usage,
                cost_usd: response.cost_usd,
                finish: response.finish.clone(),
                text: response.text.clone(),
                tool_calls: response.tool_calls.iter().map(|c| c.name.clone()).collect(),
                latency_ms,
            })
            .await?;
            state.recorded = request.messages.len();
            state.messages.push(response.to_message());
            if let Some(limit) = self.limits.budget.exceeded(&state.spend) {
                return Ok(TaskStatus::BudgetExceeded {
                    limit,
                    partial: response.text,
                });
            }
            if response.tool_calls.is_empty() {
                return Ok(TaskStatus::Done {
                    answer: response.text.unwrap_or_default(),
                });
            }
            if let Some(status) = self.run_calls(state, &offered, response.tool_calls).await? {
                return Ok(status);
            }
        }
    }

    /// Runs `calls` one at a time, in order. Stops at an `ask_operator` call with a
    /// question, deferring the calls after it.
    async fn run_calls(
        &self,
        state: &mut TaskState,
        offered: &[ToolSpec],
        calls: Vec<ToolCall>,
    ) -> Result<Option<TaskStatus>, RecordError> {
        let iteration = state.iterations;
        let mut calls = calls.into_iter();
        while let Some(call) = calls.next() {
            self.record(LoopEvent::ToolCall {
                iteration,
                call: call.clone(),
            })
            .await?;
            if call.name == ASK_OPERATOR {
                match question_of(&call.arguments) {
                    Some(question) => {
                        self.record(LoopEvent::QuestionAsked {
                            call_id: call.id.clone(),
                            question: question.clone(),
                        })
                        .await?;
                        state.pending = Some(PendingQuestion {
                            call_id: call.id,
                            question: question.clone(),
                            deferred: calls.collect(),
                        });
                        return Ok(Some(TaskStatus::NeedsAnswer { question }));
                    }
                    None => {
                        let result = Err(ToolFailure::BadArguments(
                            "ask_operator needs arguments {\"question\": \"...\"} with a non-empty question"
                                .to_string(),
                        ));
                        self.push_result(state, iteration, &call, result).await?;
                        continue;
                    }
                }
            }
            let result = if !offered.iter().any(|t| t.name == call.name) {
                let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
                Err(ToolFailure::Unknown {
                    name: call.name.clone(),
                    offered: names.join(", "),
                })
            } else if !call.arguments.is_object() {
                Err(ToolFailure::BadArguments(format!(
                    "the arguments must be a JSON object matching the tool's schema; got {}",
                    call.arguments
                )))
            } else {
                self.tools.call(&call.name, &call.arguments).await
            };
            self.push_result(state, iteration, &call, result).await?;
        }
        Ok(None)
    }

    async fn push_result(
        &self,
        state: &mut TaskState,
        iteration: u32,
        call: &ToolCall,
        result: Result<Value, ToolFailure>,
    ) -> Result<(), RecordError> {
        let content = wrap_tool_output(&call.name, &call.id, &result);
        let is_error = result.is_err();
        self.record(LoopEvent::ToolResult {
            iteration,
            call_id: call.id.clone(),
            name: call.name.clone(),
            result,
        })
        .await?;
        state.messages.push(Message::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        });
        Ok(())
    }
}

fn question_of(arguments: &Value) -> Option<String> {
    arguments
        .get("question")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_string)
}

fn last_text(messages: &[Message]) -> Option<String> {
    messages.iter().rev().find_map(|m| match m {
        Message::Assistant {
            content: Some(t), ..
        } => Some(t.clone()),
        _ => None,
    })
}
