//! Every decision is an event: the port through which the tool manager reports each call,
//! each result and each refusal. The durable log (`emit()`) lives in a higher layer; it
//! implements [`ToolEvents`].

use crate::core::event_kind::EventKind;
pub use crate::protocol::tool::ToolOutcome;
use crate::protocol::{Payload, tool::ToolRecord};
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::sync::Mutex;
use thiserror::Error;

/// The kinds of event the tools layer writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolEventKind {
    /// Both gates admitted a call; it is about to be made.
    ToolCall,
    /// A call that was made finished (result, tool-level error, or fault).
    ToolResult,
    /// A gate refused a call; it was not made.
    GateDenied,
}

impl ToolEventKind {
    /// The snake_case word (`tool_call`, `tool_result`, `gate_denied`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolEventKind::ToolCall => "tool_call",
            ToolEventKind::ToolResult => "tool_result",
            ToolEventKind::GateDenied => "gate_denied",
        }
    }
}

impl From<ToolEventKind> for EventKind {
    /// The kernel's kind for the durable log's envelope.
    fn from(kind: ToolEventKind) -> EventKind {
        match kind {
            ToolEventKind::ToolCall => EventKind::ToolCall,
            ToolEventKind::ToolResult => EventKind::ToolResult,
            ToolEventKind::GateDenied => EventKind::GateDenied,
        }
    }
}

impl fmt::Display for ToolEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event. The log assigns its id (returned by [`ToolEvents::record`]); `cause` links
/// a result to its call and a call to whatever caused it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolEvent {
    /// What kind.
    pub kind: ToolEventKind,
    /// The expert id (`<mesh>/<role>`) that called.
    pub actor: String,
    /// The task the call belongs to.
    pub task: String,
    /// `server/tool`; for a name that maps to nothing, the name as given.
    pub tool: String,
    /// The arguments as the model gave them.
    pub arguments: Value,
    /// What happened.
    pub outcome: ToolOutcome,
    /// The event that caused this one: the `tool_call` for a `tool_result`, the caller's
    /// cause for a `tool_call` or `gate_denied`.
    pub cause: Option<String>,
}

impl ToolEvent {
    /// The payload of the event on the durable log (the kind, actor and cause go in the
    /// envelope).
    pub fn payload(&self) -> Value {
        ToolRecord {
            task: self.task.clone(),
            tool: self.tool.clone(),
            arguments: self.arguments.clone(),
            outcome: self.outcome.clone(),
        }
        .to_value()
    }
}

/// The event log refused or failed to record.
#[derive(Debug, Clone, Error)]
#[error("event log: {0}")]
pub struct RecordError(pub String);

/// The port the manager writes events through. `record` returns only after the log has
/// the event, with the id the log gave it. A `tool_call` that cannot be recorded is not
/// made.
pub trait ToolEvents: Send + Sync {
    /// Records one event and returns its id once the event is durable. Asynchronous end to
    /// end: a call waiting on the log does not hold a worker thread.
    fn record(&self, event: ToolEvent) -> RecordFuture<'_>;
}

/// The future a [`ToolEvents::record`] returns.
pub type RecordFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, RecordError>> + Send + 'a>>;

/// An in-memory [`ToolEvents`]: keeps every event, ids `ev-1`, `ev-2`, …. For tests and
/// benchmarks, and for callers that have no log yet.
#[derive(Debug, Default)]
pub struct MemoryEvents {
    events: Mutex<Vec<(String, ToolEvent)>>,
}

impl MemoryEvents {
    /// Every event recorded so far, with its id, in order.
    pub fn events(&self) -> Vec<(String, ToolEvent)> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// The events of one kind, in order.
    pub fn of_kind(&self, kind: ToolEventKind) -> Vec<ToolEvent> {
        self.events()
            .into_iter()
            .filter(|(_, e)| e.kind == kind)
            .map(|(_, e)| e)
            .collect()
    }
}

impl ToolEvents for MemoryEvents {
    fn record(&self, event: ToolEvent) -> RecordFuture<'_> {
        let recorded = self
            .events
            .lock()
            .map_err(|e| RecordError(format!("memory log poisoned: {e}")))
            .map(|mut events| {
                let id = format!("ev-{}", events.len() + 1);
                events.push((id.clone(), event));
                id
            });
        Box::pin(std::future::ready(recorded))
    }
}
