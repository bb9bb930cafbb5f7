//! An expert sending a message out of the system: the built-in `deliver` tool, offered only to
//! an expert whose `capabilities.md` grants delivery channels (`delivery: [...]`), and only for
//! those channels. Every other expert cannot send anything anywhere; the engine's own reply
//! to the person who asked needs no grant. Each send is recorded as `reply_delivered`.

use std::sync::Arc;

use serde_json::{Value, json};
use thiserror::Error;

use super::adapters::Recorder;
use crate::{
    aem::MeshEntry,
    cognition::delivery::{self, DeliveryError, Message},
    core::event_kind::EventKind,
    llm::ToolSpec,
    tools::{RemoteCaller, RosTools},
};

/// Name of the built-in tool.
pub const DELIVER: &str = crate::llm::offline::DELIVER_TOOL;

/// Why a `deliver` call sent nothing; the text is what the model reads.
#[derive(Debug, Error)]
pub enum DeliverError {
    /// A channel the expert does not hold.
    #[error("{channel:?} is not one of your delivery channels; you may use: {held}")]
    NotGranted {
        /// The channel asked for.
        channel: String,
        /// The channels held, comma-separated.
        held: String,
    },
    /// No text.
    #[error("deliver needs a non-empty `text`")]
    NoText,
    /// The channel did not deliver.
    #[error(transparent)]
    Failed(#[from] DeliveryError),
}

/// The channels an expert may send through, and how.
pub(super) struct Deliveries {
    /// `<mesh>/<role>`.
    pub expert: String,
    /// Its mesh (channels and servers).
    pub mesh: Arc<MeshEntry>,
    /// Granted channels the mesh declares, sorted.
    pub channels: Vec<String>,
    /// The running task.
    pub task_id: String,
    /// Caller of the delivery bridges.
    pub tools: Arc<RosTools>,
    /// Where sends are recorded.
    pub recorder: Recorder,
    /// The secrets of the expert's servers, cut out of everything it sends.
    pub redactor: Arc<crate::tools::redact::Redactor>,
}

impl Deliveries {
    /// The tool as offered to the model.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: DELIVER.to_string(),
            description: format!(
                "Send a message out of the system through one of your delivery channels ({}). \
A send is irreversible: send each message once. `delivery_id` names this delivery so a repeat \
is refused by the channel; `data` is a structured payload for channels that take one.",
                self.channels.join(", ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "channel": {"type": "string", "enum": self.channels},
                    "dest": {"type": "string", "description": "Where within the channel (address, chat id); empty for its default."},
                    "text": {"type": "string", "description": "The message."},
                    "delivery_id": {"type": "string"},
                    "data": {"type": "object"}
                },
                "required": ["channel", "text"]
            }),
        }
    }

    /// Sends one message; the error is a sentence the model can read.
    pub async fn call(&self, arguments: &Value) -> Result<Value, DeliverError> {
        let field = |k: &str| arguments.get(k).and_then(Value::as_str).unwrap_or("");
        let channel = field("channel");
        if !self.channels.iter().any(|c| c == channel) {
            return Err(DeliverError::NotGranted {
                channel: channel.to_string(),
                held: self.channels.join(", "),
            });
        }
        let text = self.redactor.text(field("text"));
        if text.trim().is_empty() {
            return Err(DeliverError::NoText);
        }
        let data = arguments
            .get("data")
            .filter(|d| !d.is_null())
            .map(|d| self.redactor.value(d.clone()));
        let message = Message {
            dest: field("dest"),
            text: &text,
            source: "",
            delivery_id: field("delivery_id"),
            data: data.as_ref(),
        };
        let caller = RemoteCaller {
            caller: self.expert.clone(),
            task_id: self.task_id.clone(),
        };
        let sent = delivery::send(
            &self.tools,
            &self.mesh,
            channel,
            &message,
            &caller,
            &self.expert,
        )
        .await;
        let mut record = match &sent {
            Ok(p) => p.clone(),
            Err(reason) => json!({"delivered": false, "reason": reason.to_string()}),
        };
        record["task_id"] = json!(self.task_id);
        record["channel"] = json!(channel);
        record["destination"] = json!(message.dest);
        record["delivery_id"] = json!(message.delivery_id);
        record["text"] = json!(text);
        if let Some(data) = &data {
            // The structured payload (a bulletin's claims) is what memory learns from.
            record["data"] = data.clone();
        }
        if let Err(e) = self
            .recorder
            .write(EventKind::ReplyDelivered, record, None)
            .await
        {
            tracing::warn!(task = %self.task_id, "a delivery was not recorded on the log: {e}");
        }
        Ok(sent?)
    }
}
