//! The vocabulary every chat backend speaks: messages, tool definitions, requests, responses.
//!
//! These types are the provider-neutral shape; each backend translates them to its own wire
//! format and back. They serialize, so a conversation can be written to the log or kept
//! across a pause (a question to the operator).

use serde::{Deserialize, Serialize};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions from the system (identity, instructions, memory, perception).
    System {
        /// The text.
        content: String,
    },
    /// A turn from the user or the operator.
    User {
        /// The text.
        content: String,
    },
    /// A turn from the model: text, tool calls, or both.
    Assistant {
        /// Text the model wrote, if any.
        #[serde(default)]
        content: Option<String>,
        /// Tools the model asked for, in the order asked.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answering the call with the same id.
    Tool {
        /// Id of the call this answers.
        call_id: String,
        /// Name of the tool that was called.
        name: String,
        /// What the model reads (already wrapped by the caller when it is untrusted data).
        content: String,
        /// True when the call failed.
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// The text of a system, user or tool message, or the text part of an assistant message.
    pub fn text(&self) -> Option<&str> {
        match self {
            Message::System { content } | Message::User { content } => Some(content),
            Message::Tool { content, .. } => Some(content),
            Message::Assistant { content, .. } => content.as_deref(),
        }
    }
}

pub use crate::protocol::payload::ToolCall;
pub use crate::protocol::payload::ToolSpec;

/// One call to a chat model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<Message>,
    /// Tools the model may call; empty for none.
    pub tools: Vec<ToolSpec>,
    /// Cap on output tokens for this call; the backend's configured cap when `None`.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; the server's default when `None`.
    pub temperature: Option<f32>,
}

pub use crate::protocol::payload::Usage;

pub use crate::protocol::payload::FinishReason;

/// A model's answer to one [`ChatRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Text, if the model wrote any.
    pub text: Option<String>,
    /// Tool calls, in the order the model asked for them.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    pub usage: Usage,
    /// Why it stopped.
    pub finish: FinishReason,
    /// Name of the configured backend that answered.
    pub backend: String,
    /// Model name the backend used.
    pub model: String,
    /// Estimated cost in US dollars from the backend's configured prices; `None` when the
    /// backend has no prices configured.
    pub cost_usd: Option<f64>,
}

impl ChatResponse {
    /// The assistant message to append to the conversation.
    pub fn to_message(&self) -> Message {
        Message::Assistant {
            content: self.text.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// The first JSON value in a model's `text`, tolerating code fences and prose around it.
pub(crate) fn first_json(text: &str) -> Option<serde_json::Value> {
    for (i, c) in text.char_indices() {
        if c == '{' || c == '[' {
            let mut stream =
                serde_json::Deserializer::from_str(&text[i..]).into_iter::<serde_json::Value>();
            if let Some(Ok(v)) = stream.next() {
                return Some(v);
            }
        }
    }
    None
}

#[cfg(test)]
mod json_tests {
    use super::first_json;

    #[test]
    fn json_is_found_inside_fences_and_prose() {
        let v = first_json("Sure!\n```json\n{\"routes\": []}\n```").unwrap();
        assert!(v["routes"].is_array());
        assert!(first_json("no json here").is_none());
        assert_eq!(first_json("x [1, 2] y").unwrap()[1], 2);
    }
}
