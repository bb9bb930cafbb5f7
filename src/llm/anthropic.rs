//! The Anthropic Messages API with tool use (`POST {base_url}/v1/messages`). The key goes in
//! `x-api-key`; the API version in `anthropic-version`.

use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::error::ConfigError;
use super::error::LlmError;
use super::http::{self, HttpSettings};
use super::model::{BoxFuture, ChatModel};
use super::secret::SecretSource;
use super::types::{ChatRequest, ChatResponse, FinishReason, Message, ToolCall, Usage};

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Output-token cap when neither the request nor the configuration gives one (the API
/// requires a cap).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A backend speaking the Anthropic Messages API.
pub struct AnthropicBackend {
    settings: HttpSettings,
    url: String,
    client: reqwest::Client,
    secrets: Arc<dyn SecretSource>,
}

impl std::fmt::Debug for AnthropicBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicBackend")
            .field("settings", &self.settings)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl AnthropicBackend {
    /// A backend; the key reference is resolved from `secrets` at each call.
    pub fn new(
        settings: HttpSettings,
        secrets: Arc<dyn SecretSource>,
    ) -> Result<Self, ConfigError> {
        let client = http::client(&settings)?;
        Ok(Self {
            url: http::join_url(&settings.base_url, "v1/messages"),
            settings,
            client,
            secrets,
        })
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let name = &self.settings.name;
        let secret = http::resolve_key(name, self.settings.api_key.as_ref(), &*self.secrets)?;
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        if let Some(key) = &secret {
            let mut value =
                HeaderValue::from_str(key.expose()).map_err(|_| LlmError::MissingKey {
                    backend: name.clone(),
                    variable: format!(
                        "{} (its value is not a valid header)",
                        self.settings.api_key.as_ref().map_or("", |k| k.variable())
                    ),
                })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        let body = request_body(&self.settings, request);
        tracing::debug!(backend = %name, url = %self.url, messages = request.messages.len(), "messages call");
        let answer = http::post_json(
            &self.client,
            name,
            &self.url,
            headers,
            &body,
            self.settings.timeout,
            secret.as_ref(),
        )
        .await?;
        let mut response = parse_response(name, &answer)?;
        response.model = answer
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&self.settings.model)
            .to_string();
        response.cost_usd = self.settings.prices.map(|p| p.cost(&response.usage));
        Ok(response)
    }
}

impl ChatModel for AnthropicBackend {
    fn name(&self) -> &str {
        &self.settings.name
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(self.call(request))
    }
}

/// The JSON body of one Messages request. System messages are joined into `system`;
/// consecutive messages of one role are merged into one message of content blocks (tool
/// results travel in a user message, first, as the API requires).
pub(crate) fn request_body(settings: &HttpSettings, request: &ChatRequest) -> Value {
    let mut system = Vec::new();
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, block: Value| match messages.last_mut() {
        Some((last, blocks)) if *last == role => blocks.push(block),
        _ => messages.push((role, vec![block])),
    };
    for message in &request.messages {
        match message {
            Message::System { content } => system.push(content.as_str()),
            Message::User { content } => push("user", json!({"type": "text", "text": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    push("assistant", json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    let input = match &call.arguments {
                        Value::Object(_) => call.arguments.clone(),
                        // The API takes an object; keep what the model wrote, visibly.
                        other => json!({"_raw_arguments": other}),
                    };
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                    );
                }
            }
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}),
            ),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    body.insert(
        "max_tokens".into(),
        json!(
            request
                .max_tokens
                .or(settings.max_tokens)
                .unwrap_or(DEFAULT_MAX_TOKENS)
        ),
    );
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert(
        "messages".into(),
        Value::Array(
            messages
                .into_iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect(),
        ),
    );
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    Value::Object(body)
}

/// Reads a Messages answer.
pub(crate) fn parse_response(backend: &str, answer: &Value) -> Result<ChatResponse, LlmError> {
    let malformed = |what: &str| LlmError::Malformed {
        backend: backend.to_string(),
        message: format!("{what}; got {:?}", http::snippet(&answer.to_string())),
    };
    let blocks = answer
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no content array"))?;
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    texts.push(t.to_string());
                }
            }
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("a tool_use block has no name"))?;
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("toolu_{i}"), str::to_string);
                tool_calls.push(ToolCall {
                    id,
                    name: name.to_string(),
                    arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
                });
            }
            // Thinking and other blocks carry nothing the loop uses.
            _ => {}
        }
    }
    let text = Some(texts.join("")).filter(|t| !t.is_empty());
    let finish = match answer.get("stop_reason").and_then(Value::as_str) {
        Some("end_turn") | Some("stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_string()),
        None if !tool_calls.is_empty() => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let count = |p: &str| answer.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: Usage {
            input_tokens: count("/usage/input_tokens"),
            output_tokens: count("/usage/output_tokens"),
        },
        finish,
        backend: backend.to_string(),
        model: String::new(),
        cost_usd: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn settings() -> HttpSettings {
        HttpSettings {
            name: "claude".into(),
            base_url: "http://127.0.0.1:1".into(),
            model: "m".into(),
            api_key: None,
            timeout: Duration::from_secs(1),
            max_tokens: None,
            prices: None,
        }
    }

    #[test]
    fn tool_results_and_a_following_correction_share_one_user_message() {
        let request = ChatRequest {
            messages: vec![
                Message::system("a"),
                Message::system("b"),
                Message::user("q"),
                Message::Assistant {
                    content: Some("looking".into()),
                    tool_calls: vec![
                        ToolCall {
                            id: "t1".into(),
                            name: "x".into(),
                            arguments: json!({}),
                        },
                        ToolCall {
                            id: "t2".into(),
                            name: "y".into(),
                            arguments: json!({}),
                        },
                    ],
                },
                Message::Tool {
                    call_id: "t1".into(),
                    name: "x".into(),
                    content: "1".into(),
                    is_error: false,
                },
                Message::Tool {
                    call_id: "t2".into(),
                    name: "y".into(),
                    content: "2".into(),
                    is_error: true,
                },
                Message::user("correction"),
            ],
            ..Default::default()
        };
        let body = request_body(&settings(), &request);
        assert_eq!(body["system"], "a\n\nb");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
        let last = msgs[2]["content"].as_array().unwrap();
        assert_eq!(last[0]["tool_use_id"], "t1");
        assert_eq!(last[1]["is_error"], true);
        assert_eq!(last[2]["text"], "correction");
    }

    #[test]
    fn tool_use_blocks_become_ordered_tool_calls() {
        let answer = json!({
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "a", "name": "first", "input": {"k": 1}},
                {"type": "tool_use", "id": "b", "name": "second", "input": {}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 11, "output_tokens": 4}
        });
        let r = parse_response("claude", &answer).unwrap();
        assert_eq!(r.text.as_deref(), Some("Let me check."));
        assert_eq!(r.tool_calls[0].name, "first");
        assert_eq!(r.tool_calls[1].id, "b");
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.usage.input_tokens, 11);
    }
}
