//! What the agent loop needs from the layers around it: a tool executor, a source of
//! operator interjections, and a sink for loop events. Each is a small trait so the expert
//! process can connect the gates, the control plane and the durable log.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::budget::Spend;
use crate::llm::{BoxFuture, FinishReason, Message, ToolCall, ToolSpec, Usage};

/// Runs tools for the loop (in the expert process: the tool manager behind both gates).
pub trait ToolExecutor: Send + Sync {
    /// Tools offered to the model. Names must fit the providers' rule, `[A-Za-z0-9_-]{1,64}`
    /// (so `server/tool` needs a mapping such as `server__tool`).
    fn tools(&self) -> Vec<ToolSpec>;

    /// Calls `name` with `arguments` (a JSON object). `Ok` carries the output; `Err` why
    /// there is none, in words the model can read (a refusal by a gate, a failure of the tool).
    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>>;
}

/// Why a tool call gave the model no output. The text of each is what the model reads, so
/// it says what happened and, where it can, what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolFailure {
    /// The model named a tool it is not offered.
    #[error("unknown tool {name:?}; the tools available are: {offered}")]
    Unknown {
        /// The name it used.
        name: String,
        /// What it may call, comma-separated (`none` when nothing).
        offered: String,
    },
    /// The arguments are not what the tool takes.
    #[error("{0}")]
    BadArguments(String),
    /// The tool ran and reported an error: its own output.
    #[error("{0}")]
    Reported(String),
    /// The call was not made or did not complete (a gate refused it, its server would not
    /// start or stopped, it timed out): the tools layer's account, secrets redacted.
    #[error("{0}")]
    NotRun(String),
    /// A built-in tool of the expert (`delegate`, `deliver`) refused or failed, in its words.
    #[error("{0}")]
    Builtin(String),
}

/// Offers no tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl ToolExecutor for NoTools {
    fn tools(&self) -> Vec<ToolSpec> {
        Vec::new()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        _: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            Err(ToolFailure::Unknown {
                name: name.to_string(),
                offered: "none".into(),
            })
        })
    }
}

/// Operator corrections waiting to be read; the loop drains it at each boundary (before each
/// model call).
pub trait Interjections: Send + Sync {
    /// Every correction that arrived since the last call, oldest first; never blocks.
    fn take(&self) -> Vec<String>;
}

/// Never has anything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInterjections;

impl Interjections for NoInterjections {
    fn take(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Sends corrections to a running loop.
#[derive(Debug, Clone)]
pub struct InterjectionSender(mpsc::UnboundedSender<String>);

impl InterjectionSender {
    /// Queues `text`; `false` when the loop's inbox is gone.
    pub fn send(&self, text: impl Into<String>) -> bool {
        self.0.send(text.into()).is_ok()
    }
}

/// The loop's side of [`interjection_channel`].
#[derive(Debug)]
pub struct InterjectionInbox(Mutex<mpsc::UnboundedReceiver<String>>);

impl Interjections for InterjectionInbox {
    fn take(&self) -> Vec<String> {
        let mut rx = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        while let Ok(text) = rx.try_recv() {
            out.push(text);
        }
        out
    }
}

/// A channel for corrections: the sender goes to whoever receives them (the expert's
/// interjection service), the inbox to the loop.
pub fn interjection_channel() -> (InterjectionSender, InterjectionInbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    (InterjectionSender(tx), InterjectionInbox(Mutex::new(rx)))
}

/// Something the loop did, in the order it did it. Serializes with an `event` tag
/// (`model_called`, `tool_call`, …) for the durable log's payload.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LoopEvent {
    /// A model answered.
    ModelCalled {
        /// 1-based model call of this task.
        iteration: u32,
        /// Backend that answered.
        backend: String,
        /// Model it used.
        model: String,
        /// What it was asked.
        prompt: Prompt,
        /// The tools it asked for, with their ids and arguments (`tool_calls` names them).
        calls: Vec<ToolCall>,
        /// Tokens used.
        usage: Usage,
        /// Estimated cost, when priced.
        cost_usd: Option<f64>,
        /// Why it stopped.
        finish: FinishReason,
        /// Its text, if any.
        text: Option<String>,
        /// Names of the tools it asked for, in order.
        tool_calls: Vec<String>,
        /// How long the call took, failover included (milliseconds).
        latency_ms: u64,
    },
    /// A model call failed (after any failover).
    ModelFailed {
        /// The call that failed.
        iteration: u32,
        /// Stable error code.
        code: String,
        /// The error.
        message: String,
        /// How long it took to fail (milliseconds).
        latency_ms: u64,
    },
    /// A tool is about to be called (written before it runs).
    ToolCall {
        /// Model call that asked for it.
        iteration: u32,
        /// The call.
        call: ToolCall,
    },
    /// A tool returned.
    ToolResult {
        /// Model call that asked for it.
        iteration: u32,
        /// The call's id.
        call_id: String,
        /// Tool name.
        name: String,
        /// Output (`Ok`) or why there is none (`Err`, serialised as its text).
        #[serde(serialize_with = "ser_result")]
        result: Result<Value, ToolFailure>,
    },
    /// An operator correction was read and added to the conversation.
    InterjectionRead {
        /// The correction.
        text: String,
    },
    /// The model asked the operator a question; the task pauses.
    QuestionAsked {
        /// Id of the `ask_operator` call.
        call_id: String,
        /// The question.
        question: String,
    },
    /// The operator answered; the task resumes.
    AnswerReceived {
        /// Id of the `ask_operator` call.
        call_id: String,
        /// The answer.
        answer: String,
    },
    /// The loop stopped (done, paused, or ended by a limit or failure).
    Finished {
        /// The status code (`done`, `needs_answer`, `budget_exceeded`, …).
        status: String,
        /// What the task spent so far.
        spend: Spend,
    },
}

/// What one model request held: its size, and the messages it added to the conversation
/// since the previous request (all of them for the first), so the conversation can be read
/// back from the log call by call, and a task replayed against it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Messages in the conversation sent.
    pub messages: usize,
    /// Characters in them (text and tool-call arguments).
    pub chars: usize,
    /// The messages that were not in the previous request, with the task's correction marker
    /// written as [`MARKER_SHOWN`].
    pub new: Vec<Message>,
}

/// How a task's correction marker (a secret of the running task) is written on the log.
pub const MARKER_SHOWN: &str = "(marker)";

impl Prompt {
    /// The request `messages`, of which the first `known` were in the previous one; `marker`
    /// is kept off the record.
    pub fn of(messages: &[Message], known: usize, marker: &str) -> Self {
        let chars = messages
            .iter()
            .map(|m| {
                let calls = match m {
                    Message::Assistant { tool_calls, .. } => tool_calls
                        .iter()
                        .map(|c| c.name.chars().count() + c.arguments.to_string().chars().count())
                        .sum(),
                    _ => 0,
                };
                m.text().map_or(0, |t| t.chars().count()) + calls
            })
            .sum();
        let new = messages
            .get(known..)
            .unwrap_or_default()
            .iter()
            .map(|m| swap_marker(m, marker, MARKER_SHOWN))
            .collect();
        Self {
            messages: messages.len(),
            chars,
            new,
        }
    }
}

/// `m` with every `from` written as `to` (a task's marker as the record shows it, and back).
pub fn swap_marker(m: &Message, from: &str, to: &str) -> Message {
    let hide = |t: &str| t.replace(from, to);
    match m {
        Message::System { content } => Message::system(hide(content)),
        Message::User { content } => Message::user(hide(content)),
        Message::Assistant {
            content,
            tool_calls,
        } => Message::Assistant {
            content: content.as_deref().map(hide),
            tool_calls: tool_calls.clone(),
        },
        Message::Tool {
            call_id,
            name,
            content,
            is_error,
        } => Message::Tool {
            call_id: call_id.clone(),
            name: name.clone(),
            content: hide(content),
            is_error: *is_error,
        },
    }
}

fn ser_result<S: serde::Serializer>(
    r: &Result<Value, ToolFailure>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(1))?;
    match r {
        Ok(v) => m.serialize_entry("ok", v)?,
        Err(e) => m.serialize_entry("error", &e.to_string())?,
    }
    m.end()
}

impl LoopEvent {
    /// The event's name (its `event` tag).
    pub fn name(&self) -> &'static str {
        match self {
            LoopEvent::ModelCalled { .. } => "model_called",
            LoopEvent::ModelFailed { .. } => "model_failed",
            LoopEvent::ToolCall { .. } => "tool_call",
            LoopEvent::ToolResult { .. } => "tool_result",
            LoopEvent::InterjectionRead { .. } => "interjection_read",
            LoopEvent::QuestionAsked { .. } => "question_asked",
            LoopEvent::AnswerReceived { .. } => "answer_received",
            LoopEvent::Finished { .. } => "finished",
        }
    }
}

/// The loop could not record an event; it stops rather than go on unrecorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot record a loop event: {0}")]
pub struct RecordError(pub String);

/// Where loop events go (in the expert process: the durable log). Recording is awaited before
/// the loop goes on, so a `tool_call` is on the log before the tool runs.
pub trait LoopEvents: Send + Sync {
    /// Records one event.
    fn record<'a>(&'a self, event: &'a LoopEvent) -> BoxFuture<'a, Result<(), RecordError>>;
}

/// Discards events.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl LoopEvents for NoEvents {
    fn record<'a>(&'a self, _: &'a LoopEvent) -> BoxFuture<'a, Result<(), RecordError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Keeps every event in memory (tests, demos, the console's live view).
#[derive(Debug, Default)]
pub struct EventRecorder(Mutex<Vec<LoopEvent>>);

impl EventRecorder {
    /// Every event so far.
    pub fn events(&self) -> Vec<LoopEvent> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The names of every event so far.
    pub fn names(&self) -> Vec<&'static str> {
        self.events().iter().map(LoopEvent::name).collect()
    }
}

impl LoopEvents for EventRecorder {
    fn record<'a>(&'a self, event: &'a LoopEvent) -> BoxFuture<'a, Result<(), RecordError>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event.clone());
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{FinishReason, ToolCall, Usage};
    use crate::protocol::Payload;
    use crate::protocol::payload::{ExpertFinished, InterjectionRead, ModelCall};

    /// `event` as the expert's recorder writes it (with its task), read back as `T` and
    /// written again.
    fn recorded<T: Payload>(event: &LoopEvent) -> (String, String) {
        let mut written = serde_json::to_value(event).unwrap();
        written["task_id"] = "t1".into();
        let read: T =
            serde_json::from_value(written.clone()).unwrap_or_else(|e| panic!("{e}: {written}"));
        (written.to_string(), read.to_value().to_string())
    }

    #[test]
    fn what_the_loop_records_is_read_by_the_protocol_unchanged() {
        let called = LoopEvent::ModelCalled {
            iteration: 2,
            backend: "openai".into(),
            model: "small".into(),
            prompt: Prompt::of(
                &[Message::User {
                    content: "hi (m)".into(),
                }],
                0,
                "(m)",
            ),
            calls: vec![ToolCall {
                id: "c1".into(),
                name: "files__read".into(),
                arguments: serde_json::json!({"path": "a"}),
            }],
            usage: Usage {
                input_tokens: 12,
                output_tokens: 3,
            },
            cost_usd: None,
            finish: FinishReason::ToolCalls,
            text: None,
            tool_calls: vec!["files__read".into()],
            latency_ms: 40,
        };
        let failed = LoopEvent::ModelFailed {
            iteration: 3,
            code: "timeout".into(),
            message: "no answer in 30 s".into(),
            latency_ms: 30_000,
        };
        let corrected = LoopEvent::InterjectionRead {
            text: "use official sources".into(),
        };
        let finished = LoopEvent::Finished {
            status: "done".into(),
            spend: Spend {
                model_calls: 2,
                input_tokens: 20,
                output_tokens: 5,
                cost_usd: 0.25,
            },
        };
        for (written, read) in [
            recorded::<ModelCall>(&called),
            recorded::<ModelCall>(&failed),
            recorded::<InterjectionRead>(&corrected),
            recorded::<ExpertFinished>(&finished),
        ] {
            assert_eq!(read, written);
        }
    }

    #[test]
    fn interjections_drain_in_order_and_only_once() {
        let (tx, inbox) = interjection_channel();
        assert!(tx.send("one"));
        assert!(tx.send("two"));
        assert_eq!(inbox.take(), ["one", "two"]);
        assert!(inbox.take().is_empty());
        drop(inbox);
        assert!(!tx.send("late"));
    }

    #[test]
    fn events_serialize_with_their_name_as_tag() {
        let e = LoopEvent::ToolResult {
            iteration: 1,
            call_id: "c".into(),
            name: "t".into(),
            result: Err(ToolFailure::Reported("no".into())),
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["event"], e.name());
        assert_eq!(v["result"]["error"], "no");
    }
}
