//! The expert's ports, connected: loop and tool events go to the durable log through `emit()`,
//! and the agent loop calls tools through the tool manager (both gates).

use std::sync::Arc;

use serde_json::Value;

use crate::{
    cognition::agent::{
        LoopEvent, LoopEvents, RecordError as LoopRecordError, ToolExecutor, ToolFailure,
    },
    core::{envelope::Envelope, event_kind::EventKind, ids::EventId},
    llm::{BoxFuture, ToolSpec},
    memory::{EmitError, emit},
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
}

impl Recorder {
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
        let payload = serde_json::json!({
            "task": event.task,
            "tool": event.tool,
            "arguments": event.arguments,
            "outcome": serde_json::to_value(&event.outcome).unwrap_or(Value::Null),
        });
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
