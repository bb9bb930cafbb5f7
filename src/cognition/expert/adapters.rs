//! The expert's ports, connected: loop and tool events go to the durable log through `emit()`
//! (and, as spans, to the tracer), and the agent loop calls tools through the tool manager
//! (both gates).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::{
    cognition::agent::{
        LoopEvent, LoopEvents, RecordError as LoopRecordError, ToolExecutor, ToolFailure,
    },
    core::{
        envelope::Envelope,
        event_kind::EventKind,
        ids::EventId,
        trace::{SpanContext, SpanKind, Tracer, now_ns},
    },
    llm::{BoxFuture, ToolSpec},
    memory::{EmitError, emit},
    protocol::Payload,
    spine::durable::AnyLog,
    tools::{CallContext, RecordError, ToolEvent, ToolEvents, ToolManager, events::RecordFuture},
};

/// Writes an expert's events under `sessions/<session>` (or `tasks/<task>`), caused by the
/// task's inbound event.
#[derive(Clone)]
pub(super) struct Recorder {
    pub log: AnyLog,
    pub tenant: String,
    pub namespace: Vec<String>,
    pub actor: String,
    pub cause: Option<EventId>,
    /// The task every event of this recorder belongs to (added to each payload as
    /// `task_id`, so a view can put model calls and tool calls under their task).
    pub task_id: Option<String>,
    /// The task's span, under which its model and tool calls are traced.
    pub trace: Option<TaskTrace>,
}

/// The spans of one task's model and tool calls, children of the expert's span, named and
/// attributed after the OpenTelemetry GenAI conventions (`chat <model>`,
/// `execute_tool <tool>`).
#[derive(Clone)]
pub(super) struct TaskTrace {
    tracer: Tracer,
    parent: SpanContext,
    /// Tool calls started and not yet answered: call id → (start, tool).
    open: Arc<Mutex<HashMap<String, (u64, String)>>>,
}

impl TaskTrace {
    pub fn new(tracer: Tracer, parent: SpanContext) -> Self {
        Self {
            tracer,
            parent,
            open: Arc::default(),
        }
    }

    fn observe(&self, event: &LoopEvent) {
        let end = now_ns();
        let since = |ms: u64| end.saturating_sub(ms.saturating_mul(1_000_000));
        match event {
            LoopEvent::ModelCalled {
                backend,
                model,
                usage,
                finish,
                latency_ms,
                ..
            } => {
                let mut span = self.tracer.start_at(
                    format!("chat {model}"),
                    SpanKind::Client,
                    Some(self.parent),
                    since(*latency_ms),
                );
                let finish = serde_json::to_value(finish)
                    .ok()
                    .and_then(|f| f.as_str().map(str::to_string))
                    .unwrap_or_default();
                span.set("gen_ai.operation.name", "chat")
                    .set("gen_ai.provider.name", backend.as_str())
                    .set("gen_ai.request.model", model.as_str())
                    .set("gen_ai.response.model", model.as_str())
                    .set("gen_ai.usage.input_tokens", usage.input_tokens)
                    .set("gen_ai.usage.output_tokens", usage.output_tokens)
                    .set("gen_ai.response.finish_reasons", finish);
                span.end_at(end);
            }
            LoopEvent::ModelFailed {
                code,
                message,
                latency_ms,
                ..
            } => {
                let mut span = self.tracer.start_at(
                    "chat",
                    SpanKind::Client,
                    Some(self.parent),
                    since(*latency_ms),
                );
                span.set("gen_ai.operation.name", "chat")
                    .fail(code, message.as_str());
                span.end_at(end);
            }
            LoopEvent::ToolCall { call, .. } => {
                self.lock()
                    .insert(call.id.clone(), (end, call.name.clone()));
            }
            LoopEvent::ToolResult {
                call_id,
                name,
                result,
                ..
            } => {
                let start = self.lock().remove(call_id).map_or(end, |(at, _)| at);
                let mut span = self.tracer.start_at(
                    format!("execute_tool {name}"),
                    SpanKind::Internal,
                    Some(self.parent),
                    start,
                );
                span.set("gen_ai.operation.name", "execute_tool")
                    .set("gen_ai.tool.name", name.as_str())
                    .set("gen_ai.tool.call.id", call_id.as_str());
                if let Err(e) = result {
                    span.fail("tool_error", e.to_string());
                }
                span.end_at(end);
            }
            _ => {}
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, String)>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Recorder {
    /// Writes `payload` as an event of its kind.
    pub async fn record<T: Payload>(
        &self,
        payload: &T,
        cause: Option<EventId>,
    ) -> Result<EventId, EmitError> {
        self.write(T::KIND, payload.to_value(), cause).await
    }

    /// Writes an event of `kind` with `payload` (which gets the task's id when it has none).
    pub async fn write(
        &self,
        kind: EventKind,
        payload: Value,
        cause: Option<EventId>,
    ) -> Result<EventId, EmitError> {
        let mut payload = payload;
        if let (Some(task), Some(fields)) = (&self.task_id, payload.as_object_mut()) {
            fields
                .entry("task_id")
                .or_insert_with(|| Value::String(task.clone()));
        }
        let mut e = Envelope::new(
            self.tenant.clone(),
            self.namespace.clone(),
            self.actor.clone(),
            kind,
            payload,
        );
        if let Some(c) = cause.or_else(|| self.cause.clone()) {
            e = e.with_cause(c);
        }
        emit(&self.log, &e).await.map(|x| x.event_id)
    }
}

impl LoopEvents for Recorder {
    fn record<'a>(&'a self, event: &'a LoopEvent) -> BoxFuture<'a, Result<(), LoopRecordError>> {
        if let Some(trace) = &self.trace {
            trace.observe(event);
        }
        Box::pin(async move {
            let kind = match event.name() {
                "model_called" | "model_failed" => EventKind::ModelCalled,
                "interjection_read" => EventKind::InterjectionRead,
                "finished" => EventKind::ExpertFinished,
                // Questions and answers are written by the expert with the question's id when
                // it asks the operator and when the answer comes (see `operator`).
                // Tool calls and results are written by the tool manager, gate decisions included.
                _ => return Ok(()),
            };
            let payload = serde_json::to_value(event).unwrap_or(Value::Null);
            self.write(kind, payload, None)
                .await
                .map(|_| ())
                .map_err(|e| LoopRecordError(e.to_string()))
        })
    }
}

impl ToolEvents for Recorder {
    fn record(&self, event: ToolEvent) -> RecordFuture<'_> {
        let kind: EventKind = event.kind.into();
        let cause = event.cause.as_deref().and_then(|c| EventId::parse(c).ok());
        let payload = event.payload();
        Box::pin(async move {
            self.write(kind, payload, cause)
                .await
                .map(|id| id.to_string())
                .map_err(|e| RecordError(e.to_string()))
        })
    }
}

/// The agent loop's tools: the manager's roster, called through both gates.
pub(super) struct ManagedTools {
    pub manager: Arc<ToolManager>,
    pub task: String,
    pub cause: Option<String>,
}

impl ToolExecutor for ManagedTools {
    fn tools(&self) -> Vec<ToolSpec> {
        self.manager
            .model_tools()
            .into_iter()
            .map(|t| ToolSpec {
                name: t.name,
                description: t.description.unwrap_or_default(),
                parameters: t.input_schema,
            })
            .collect()
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let ctx = CallContext {
                task: self.task.clone(),
                cause: self.cause.clone(),
            };
            match self.manager.call(name, arguments.clone(), &ctx).await {
                Ok(out) if out.is_error => Err(ToolFailure::Reported(out.result.to_string())),
                Ok(out) => Ok(out.result),
                Err(e) => Err(ToolFailure::NotRun(
                    self.manager.redactor().text(&e.to_string()),
                )),
            }
        })
    }
}
