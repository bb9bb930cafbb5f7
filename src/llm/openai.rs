//! OpenAI-compatible chat completions with tool calling (`POST {base_url}/chat/completions`).
//! Works against OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter and Gemini's
//! OpenAI-compatible endpoint. The key, when configured, goes in `Authorization: Bearer`.

use std::sync::Arc;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};

use super::error::ConfigError;
use super::error::LlmError;
use super::http::{self, HttpSettings};
use super::model::{BoxFuture, ChatModel};
use super::secret::{Secret, SecretSource};
use super::types::{ChatRequest, ChatResponse, FinishReason, Message, ToolCall, Usage};

/// A backend speaking the OpenAI chat-completions protocol.
pub struct OpenAiBackend {
    settings: HttpSettings,
    url: String,
    client: reqwest::Client,
    secrets: Arc<dyn SecretSource>,
}

impl std::fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiBackend")
            .field("settings", &self.settings)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl OpenAiBackend {
    /// A backend; the key reference is resolved from `secrets` at each call.
    pub fn new(
        settings: HttpSettings,
        secrets: Arc<dyn SecretSource>,
    ) -> Result<Self, ConfigError> {
        let client = http::client(&settings)?;
        Ok(Self {
            url: http::join_url(&settings.base_url, "chat/completions"),
            settings,
            client,
            secrets,
        })
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let name = &self.settings.name;
        let (headers, secret) = bearer(&self.settings, &*self.secrets)?;
        let body = request_body(&self.settings, request);
        tracing::debug!(backend = %name, url = %self.url, messages = request.messages.len(), "chat completion");
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

impl ChatModel for OpenAiBackend {
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

/// The `Authorization: Bearer` header of `settings`' key, resolved now (none without a key),
/// and the key, to scrub from errors.
pub(crate) fn bearer(
    settings: &HttpSettings,
    secrets: &dyn SecretSource,
) -> Result<(HeaderMap, Option<Secret>), LlmError> {
    let secret = http::resolve_key(&settings.name, settings.api_key.as_ref(), secrets)?;
    let mut headers = HeaderMap::new();
    if let Some(key) = &secret {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {}", key.expose())).map_err(|_| {
                LlmError::MissingKey {
                    backend: settings.name.clone(),
                    variable: format!(
                        "{} (its value is not a valid header)",
                        settings.api_key.as_ref().map_or("", |k| k.variable())
                    ),
                }
            })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok((headers, secret))
}

/// The JSON body of one chat-completions request.
pub(crate) fn request_body(settings: &HttpSettings, request: &ChatRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(settings.model));
    body.insert(
        "messages".into(),
        Value::Array(request.messages.iter().map(wire_message).collect()),
    );
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = request.max_tokens.or(settings.max_tokens) {
        body.insert("max_tokens".into(), json!(max));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    Value::Object(body)
}

fn wire_message(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut m = Map::new();
            m.insert("role".into(), json!("assistant"));
            m.insert("content".into(), json!(content));
            if !tool_calls.is_empty() {
                let calls = tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": arguments_text(&c.arguments)},
                        })
                    })
                    .collect();
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(m)
        }
        Message::Tool {
            call_id, content, ..
        } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
    }
}

/// Arguments as the protocol carries them: a JSON text.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// Reads a chat-completions answer.
pub(crate) fn parse_response(backend: &str, answer: &Value) -> Result<ChatResponse, LlmError> {
    let malformed = |what: &str| LlmError::Malformed {
        backend: backend.to_string(),
        message: format!("{what}; got {:?}", http::snippet(&answer.to_string())),
    };
    let choice = answer
        .pointer("/choices/0")
        .ok_or_else(|| malformed("no choices[0]"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed("choices[0] has no message"))?;
    let text = message
        .get("content")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (i, call) in calls.iter().enumerate() {
            let name = call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("a tool call has no function.name"))?;
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("call_{i}"), str::to_string);
            tool_calls.push(ToolCall {
                id,
                name: name.to_string(),
                arguments: parse_arguments(call.pointer("/function/arguments")),
            });
        }
    }
    let finish = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("stop") | Some("end_turn") => FinishReason::Stop,
        Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_string()),
        None if !tool_calls.is_empty() => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let count = |p: &str| answer.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    Ok(ChatResponse {
        text,
        tool_calls,
        usage: Usage {
            input_tokens: count("/usage/prompt_tokens"),
            output_tokens: count("/usage/completion_tokens"),
        },
        finish,
        backend: backend.to_string(),
        model: String::new(),
        cost_usd: None,
    })
}

/// Arguments arrive as a JSON text (OpenAI) or an object (some local servers). Text that is
/// not JSON is kept as a string for the caller to report.
fn parse_arguments(raw: Option<&Value>) -> Value {
    match raw {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::ToolSpec;
    use std::time::Duration;

    fn settings() -> HttpSettings {
        HttpSettings {
            name: "local".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            model: "m".into(),
            api_key: None,
            timeout: Duration::from_secs(1),
            max_tokens: Some(256),
            prices: None,
        }
    }

    #[test]
    fn request_carries_tools_and_tool_results_in_protocol_shape() {
        let request = ChatRequest {
            messages: vec![
                Message::system("sys"),
                Message::user("hi"),
                Message::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "lookup".into(),
                        arguments: json!({"q": "x"}),
                    }],
                },
                Message::Tool {
                    call_id: "c1".into(),
                    name: "lookup".into(),
                    content: "found".into(),
                    is_error: false,
                },
            ],
            tools: vec![ToolSpec {
                name: "lookup".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            ..Default::default()
        };
        let body = request_body(&settings(), &request);
        assert_eq!(body["model"], "m");
        assert_eq!(body["max_tokens"], 256);
        assert_eq!(body["tools"][0]["function"]["name"], "lookup");
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            r#"{"q":"x"}"#
        );
        assert_eq!(body["messages"][3]["role"], "tool");
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
    }

    #[test]
    fn response_tool_calls_keep_order_and_bad_arguments_stay_visible() {
        let answer = json!({
            "choices": [{"message": {"content": null, "tool_calls": [
                {"id": "a", "function": {"name": "one", "arguments": "{\"n\":1}"}},
                {"function": {"name": "two", "arguments": "not json"}},
                {"id": "c", "function": {"name": "three", "arguments": {"n": 3}}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3}
        });
        let r = parse_response("b", &answer).unwrap();
        let names: Vec<_> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["one", "two", "three"]);
        assert_eq!(r.tool_calls[0].arguments, json!({"n": 1}));
        assert_eq!(r.tool_calls[1].id, "call_1");
        assert_eq!(r.tool_calls[1].arguments, json!("not json"));
        assert_eq!(r.tool_calls[2].arguments, json!({"n": 3}));
        assert_eq!(r.finish, FinishReason::ToolCalls);
        assert_eq!(r.usage.total(), 10);
        assert!(r.text.is_none());
    }

    #[test]
    fn a_body_without_choices_is_malformed() {
        let err = parse_response("b", &json!({"object": "list"})).unwrap_err();
        assert_eq!(err.code(), "malformed_response");
    }
}
