//! The payloads of a task's run: the engine's routing, and what an expert process records
//! from waking to finishing (the model calls, the operator's questions, answers and
//! corrections, what it was given and what it spent).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Payload;
use crate::core::event_kind::EventKind;

/// `routing_decided`: the engine chose the expert of one part of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutingDecided {
    /// The part's task (`<task>-<n>` when the task was split).
    pub task_id: String,
    /// The expert chosen (`<mesh>/<role>`).
    pub domain: String,
    /// What the expert is asked.
    pub instruction: String,
    /// How the expert was chosen.
    pub by: RouteMethod,
    /// Which part this is (1-based), and of how many.
    pub part: usize,
    /// How many parts the task was split into.
    pub of: usize,
    /// What the engine knew of the conversation when it routed.
    pub context: RoutingContext,
    /// How deep in delegation the task is (0: asked by a person or a job).
    pub depth: u8,
    /// The task this one is a part or a delegation of; empty for a task of its own.
    pub parent_task_id: String,
    /// For a fork: the task it branches from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<String>,
    /// For a fork: the model call (1-based) it makes first, live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_at: Option<u32>,
    /// For a job's step: the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// For a job's step: the signal its answer goes back on (empty when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

impl Payload for RoutingDecided {
    const KIND: EventKind = EventKind::RoutingDecided;
}

/// How a routing decision was reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum RouteMethod {
    /// The goal named its expert; nothing was chosen.
    Given,
    /// Lexical scoring; the best score of each assignment, in order.
    Offline {
        /// Scores, one per assignment.
        scores: Vec<f64>,
    },
    /// A model's answer, validated against the catalog.
    Model {
        /// The model (logical name) that answered.
        model: String,
    },
    /// The model's answer was unusable; the offline router decided.
    OfflineFallback {
        /// Why the model's answer was not used.
        reason: String,
        /// Offline scores, one per assignment.
        scores: Vec<f64>,
    },
}

impl RouteMethod {
    /// Its name as written (`given`, `offline`, `model`, `offline_fallback`).
    pub fn name(&self) -> &'static str {
        match self {
            RouteMethod::Given => "given",
            RouteMethod::Offline { .. } => "offline",
            RouteMethod::Model { .. } => "model",
            RouteMethod::OfflineFallback { .. } => "offline_fallback",
        }
    }
}

/// What the engine knew of a conversation when it routed a task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoutingContext {
    /// Turns of the conversation it read.
    pub turns: usize,
    /// Facts it recalled.
    pub facts: usize,
    /// The experts' records it weighed.
    pub scorecard: Vec<Score>,
    /// Perception sources with recent items about the instruction (`<mesh>/<source>`).
    pub perceived: Vec<String>,
}

/// One expert's record: tasks answered of those judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The expert.
    pub domain: String,
    /// Tasks it answered.
    pub answered: u64,
    /// Tasks judged.
    pub judged: u64,
}

/// `expert_woke`: what an expert process started a task with (a replay starts from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpertWoke {
    /// The task.
    pub task_id: String,
    /// The model it runs on (its name).
    pub model: String,
    /// What it was handed.
    pub input: TaskInput,
    /// The tools offered to its model.
    pub tools: Vec<ToolSpec>,
    /// For a fork: where it branches from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<ForkedAt>,
}

impl Payload for ExpertWoke {
    const KIND: EventKind = EventKind::ExpertWoke;
}

/// The task as handed to an expert.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TaskInput {
    /// What to do.
    pub instruction: String,
    /// InjectedItem memory to inject, if any.
    pub memory: Option<String>,
    /// Perception to inject, if any.
    pub perception: Option<String>,
}

/// A tool offered to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name the model calls it by. Providers accept `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its arguments (an `object` schema).
    pub parameters: Value,
}

/// Where a fork branches from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedAt {
    /// The task it is forked from.
    pub from: String,
    /// Its first model call (1-based): the ones before it are the record's, given, not made.
    pub at: u32,
}

/// `memory_injected`: what an expert's memory mounts recalled for its task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryInjected {
    /// The task.
    pub task_id: String,
    /// The task again, under the name recall events had before `task_id` was added to all.
    pub task: String,
    /// The namespace prefixes searched.
    pub prefixes: Vec<String>,
    /// The events recalled, best first.
    pub items: Vec<InjectedItem>,
}

impl Payload for MemoryInjected {
    const KIND: EventKind = EventKind::MemoryInjected;
}

/// One recalled event in a memory block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectedItem {
    /// Its id.
    pub event_id: String,
    /// Where it lives.
    pub namespace: String,
    /// Its kind.
    pub kind: String,
    /// For a saved document (`document_saved`): which of its passages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passage: Option<u64>,
}

/// `perception_read`: the perception sources an expert read when it woke.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerceptionRead {
    /// The task.
    pub task_id: String,
    /// The task again (as [`MemoryInjected::task`]).
    pub task: String,
    /// Each source, as read.
    pub sources: Vec<SourceRead>,
}

impl Payload for PerceptionRead {
    const KIND: EventKind = EventKind::PerceptionRead;
}

/// One perception source as an expert read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRead {
    /// The source.
    pub source: String,
    /// What reading it gave.
    #[serde(flatten)]
    pub outcome: ReadOutcome,
}

/// What reading one perception source gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ReadOutcome {
    /// Its state.
    Read {
        /// Items in it.
        items: u32,
        /// When the source refreshed it (Unix ms).
        updated_at_ms: i64,
        /// The source's own note on its last refresh (a feed that failed …).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        warning: String,
    },
    /// Not running (not listed in the phone book).
    NotRunning,
    /// Listed, but no state came back.
    Failed {
        /// Why.
        reason: String,
    },
}

impl ReadOutcome {
    /// Its status as written (`read`, `not_running`, `failed`).
    pub fn status(&self) -> &'static str {
        match self {
            ReadOutcome::Read { .. } => "read",
            ReadOutcome::NotRunning => "not_running",
            ReadOutcome::Failed { .. } => "failed",
        }
    }
}

/// `model_called`: one model call of an expert's loop, answered or failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ModelCall {
    /// The model answered.
    ModelCalled {
        /// The task.
        task_id: String,
        /// 1-based model call of the task.
        iteration: u32,
        /// The backend that answered.
        backend: String,
        /// The model it used.
        model: String,
        /// Tokens used.
        usage: Usage,
        /// Estimated cost, when priced.
        cost_usd: Option<f64>,
        /// Its text, if any.
        text: Option<String>,
        /// Names of the tools it asked for, in order.
        tool_calls: Vec<String>,
        /// How long the call took, failover included (milliseconds).
        latency_ms: u64,
        /// What it was asked (absent from calls recorded before prompts were).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<RecordedPrompt>,
        /// The tools it asked for, with their ids and arguments.
        calls: Vec<ToolCall>,
        /// Why it stopped.
        finish: FinishReason,
    },
    /// The call failed (after any failover).
    ModelFailed {
        /// The task.
        task_id: String,
        /// The call that failed.
        iteration: u32,
        /// A stable error code.
        code: String,
        /// The error.
        message: String,
        /// How long it took to fail (milliseconds).
        latency_ms: u64,
    },
}

impl Payload for ModelCall {
    const KIND: EventKind = EventKind::ModelCalled;
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Id the result must carry (the provider's, or one made up when it gave none).
    pub id: String,
    /// Tool name, as offered in [`ToolSpec::name`].
    pub name: String,
    /// Arguments. Normally a JSON object; when the model wrote arguments that are not JSON,
    /// the raw text as a JSON string, so the caller can tell the model what was wrong.
    pub arguments: Value,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It wants tool results.
    ToolCalls,
    /// It hit the output-token cap.
    Length,
    /// A content filter stopped it.
    ContentFilter,
    /// Anything else, as the provider named it.
    Other(String),
}

/// What one model request held: its size, and the messages it added to the conversation
/// since the previous request (all of them for the first), so the conversation can be read
/// back call by call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedPrompt {
    /// Messages in the conversation sent.
    pub messages: usize,
    /// Characters in them (text and tool-call arguments).
    pub chars: usize,
    /// The messages that were not in the previous request, as the models layer writes its
    /// messages.
    pub new: Vec<Value>,
}

/// Tokens a model call used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// `interjection_read`: an operator's correction, read into the expert's conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterjectionRead {
    /// The task.
    pub task_id: String,
    /// The correction.
    pub text: String,
    /// The loop's name for what happened (`interjection_read`).
    pub event: String,
}

impl Payload for InterjectionRead {
    const KIND: EventKind = EventKind::InterjectionRead;
}

/// `expert_finished`: an expert's loop stopped (done, paused for an answer, or ended by a
/// limit or a failure), with what the task spent so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpertFinished {
    /// The task.
    pub task_id: String,
    /// Why it stopped (`done`, `needs_answer`, `budget_exceeded`, …).
    pub status: String,
    /// What the task spent, a resumed run's earlier calls included.
    pub spend: Spend,
    /// The loop's name for what happened (`finished`).
    pub event: String,
}

impl Payload for ExpertFinished {
    const KIND: EventKind = EventKind::ExpertFinished;
}

/// What a task has spent.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spend {
    /// Model calls that answered.
    pub model_calls: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Estimated cost in US dollars.
    pub cost_usd: f64,
}

impl Spend {
    /// Adds one model call that used `usage` and cost `cost_usd` (nothing when unpriced).
    pub fn add_call(&mut self, usage: Usage, cost_usd: Option<f64>) {
        self.model_calls += 1;
        self.input_tokens = self.input_tokens.saturating_add(usage.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(usage.output_tokens);
        self.cost_usd += cost_usd.unwrap_or(0.0);
    }

    /// Adds what another run spent.
    pub fn add(&mut self, other: &Spend) {
        self.model_calls += other.model_calls;
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cost_usd += other.cost_usd;
    }

    /// Input plus output tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// `question_asked`: an expert asked the operator a question; its task waits for the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionAsked {
    /// The question's id (the answer names it).
    pub question_id: String,
    /// The task.
    pub task_id: String,
    /// The expert asking.
    pub expert: String,
    /// The question.
    pub question: String,
}

impl Payload for QuestionAsked {
    const KIND: EventKind = EventKind::QuestionAsked;
}

/// `answer_received`: an operator answered an expert's question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerReceived {
    /// The question answered.
    pub question_id: String,
    /// The task.
    pub task_id: String,
    /// Who answered.
    pub operator_id: String,
    /// The answer.
    pub answer: String,
}

impl Payload for AnswerReceived {
    const KIND: EventKind = EventKind::AnswerReceived;
}

/// `operator_refused`: an operator's action was refused (not an operator, a bad signature,
/// not the task's owner), by whichever node refused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperatorRefused {
    /// The task it was about, when it was about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who acted.
    pub operator_id: String,
    /// What they tried (`interjection`, `answer`, `hunk decision`, …).
    pub what: String,
    /// Why it was refused.
    pub reason: String,
}

impl Payload for OperatorRefused {
    const KIND: EventKind = EventKind::OperatorRefused;
}
