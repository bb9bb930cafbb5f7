//! An offline backend that replays a script: for tests and demos, no network, deterministic.
//!
//! # Script format
//!
//! A YAML (or JSON) document with one key, `turns`: a list used in order, one turn per model
//! call. Each turn has:
//!
//! | key | meaning | default |
//! |---|---|---|
//! | `text` | what the model says | none |
//! | `tool_calls` | list of `{name, arguments, id}`; `arguments` is any JSON value, `id` is optional (`call_<turn>_<index>`) | none |
//! | `expect` | a substring the last user or tool message must contain; a mismatch is an error | none |
//! | `expect_system` | substrings the system prompt must each contain (e.g. injected memory or perception); a mismatch is an error | none |
//! | `absent_system` | substrings the system prompt must not contain; a match is an error | none |
//! | `usage` | `{input_tokens, output_tokens}` reported for the call | about four characters a token, counted from the request and the reply |
//!
//! Each turn needs `text`, `tool_calls` or both. Unknown keys are errors. When every turn has
//! been used, the next call fails with [`LlmError::ScriptExhausted`].
//!
//! ```yaml
//! turns:
//!   - expect: "harbour"
//!     tool_calls:
//!       - name: search_sources
//!         arguments: {query: "harbour reopened"}
//!   - expect: "Port authority"
//!     text: "Corroborated by two independent sources."
//! ```

use std::path::Path;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;

use super::error::ConfigError;
use super::error::LlmError;
use super::model::{BoxFuture, ChatModel, Prices};
use super::types::{ChatRequest, ChatResponse, FinishReason, Message, ToolCall, Usage};

/// A whole script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Turns, in order.
    pub turns: Vec<ScriptTurn>,
}

/// One scripted model answer.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    /// Substring the last user or tool message must contain.
    #[serde(default)]
    pub expect: Option<String>,
    /// Substrings the system prompt must each contain.
    #[serde(default)]
    pub expect_system: Vec<String>,
    /// Substrings the system prompt must not contain.
    #[serde(default)]
    pub absent_system: Vec<String>,
    /// Text of the answer.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls of the answer, in order.
    #[serde(default)]
    pub tool_calls: Vec<ScriptCall>,
    /// Usage to report instead of the estimate.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCall {
    /// Call id; made up when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments.
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl Script {
    /// Parses a script from YAML or JSON text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let script: Script = serde_norway::from_str(text).map_err(|e| ConfigError::Script {
            script: origin.to_string(),
            message: e.to_string(),
        })?;
        for (i, turn) in script.turns.iter().enumerate() {
            if turn.text.is_none() && turn.tool_calls.is_empty() {
                return Err(ConfigError::Script {
                    script: origin.to_string(),
                    message: format!("turn {} has neither `text` nor `tool_calls`", i + 1),
                });
            }
        }
        Ok(script)
    }

    /// Reads and parses a script file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Script {
            script: path.display().to_string(),
            message: format!("cannot read it: {e}"),
        })?;
        Self::parse(&text, &path.display().to_string())
    }
}

/// Replays a [`Script`], one turn per call.
#[derive(Debug)]
pub struct ScriptedBackend {
    name: String,
    origin: String,
    turns: Vec<ScriptTurn>,
    next: Mutex<usize>,
    prices: Option<Prices>,
}

impl ScriptedBackend {
    /// A backend named `name` replaying `script`; `origin` (a path, or `inline`) names it in
    /// errors.
    pub fn new(name: impl Into<String>, origin: impl Into<String>, script: Script) -> Self {
        Self {
            name: name.into(),
            origin: origin.into(),
            turns: script.turns,
            next: Mutex::new(0),
            prices: None,
        }
    }

    /// Loads the script at `path`.
    pub fn from_file(name: impl Into<String>, path: &Path) -> Result<Self, ConfigError> {
        Ok(Self::new(
            name,
            path.display().to_string(),
            Script::load(path)?,
        ))
    }

    /// Sets prices, so cost budgets can be exercised offline.
    pub fn with_prices(mut self, prices: Option<Prices>) -> Self {
        self.prices = prices;
        self
    }

    /// Turns not yet used.
    pub fn remaining(&self) -> usize {
        let next = *self.next.lock().unwrap_or_else(|p| p.into_inner());
        self.turns.len().saturating_sub(next)
    }

    fn answer(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let index = *next;
        let turn = self
            .turns
            .get(index)
            .ok_or_else(|| LlmError::ScriptExhausted {
                backend: self.name.clone(),
                script: self.origin.clone(),
                turns: self.turns.len(),
            })?;
        if let Some(expected) = &turn.expect {
            let actual = last_user_or_tool(&request.messages).unwrap_or("");
            if !actual.contains(expected.as_str()) {
                return Err(LlmError::ScriptMismatch {
                    part: "the last user or tool message",
                    backend: self.name.clone(),
                    script: self.origin.clone(),
                    turn: index + 1,
                    expected: format!("to contain {expected:?}"),
                    actual: actual.chars().take(200).collect(),
                });
            }
        }
        let system = system_prompt(&request.messages);
        let mismatch = |expected: String| LlmError::ScriptMismatch {
            part: "the system prompt",
            backend: self.name.clone(),
            script: self.origin.clone(),
            turn: index + 1,
            expected,
            actual: system.chars().take(200).collect(),
        };
        if let Some(missing) = turn
            .expect_system
            .iter()
            .find(|e| !system.contains(e.as_str()))
        {
            return Err(mismatch(format!("to contain {missing:?}")));
        }
        if let Some(present) = turn
            .absent_system
            .iter()
            .find(|e| system.contains(e.as_str()))
        {
            return Err(mismatch(format!("not to contain {present:?}")));
        }
        *next += 1;
        let tool_calls: Vec<ToolCall> = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: c
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{}_{}", index + 1, i + 1)),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        let usage = turn.usage.unwrap_or_else(|| estimate(request, turn));
        Ok(ChatResponse {
            text: turn.text.clone(),
            finish: if tool_calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            },
            tool_calls,
            usage,
            backend: self.name.clone(),
            model: format!("scripted:{}", self.origin),
            cost_usd: self.prices.map(|p| p.cost(&usage)),
        })
    }
}

impl ChatModel for ScriptedBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        let answer = self.answer(request);
        Box::pin(async move { answer })
    }
}

fn system_prompt(messages: &[Message]) -> &str {
    messages
        .iter()
        .find_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or("")
}

fn last_user_or_tool(messages: &[Message]) -> Option<&str> {
    messages.iter().rev().find_map(|m| match m {
        Message::User { content } | Message::Tool { content, .. } => Some(content.as_str()),
        _ => None,
    })
}

/// About four characters a token, rounded up.
fn estimate(request: &ChatRequest, turn: &ScriptTurn) -> Usage {
    let tokens = |chars: usize| chars.div_ceil(4) as u64;
    let input: usize = request
        .messages
        .iter()
        .map(|m| m.text().map_or(0, str::len))
        .sum();
    let output = turn.text.as_deref().map_or(0, str::len)
        + turn
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.to_string().len())
            .sum::<usize>();
    Usage {
        input_tokens: tokens(input),
        output_tokens: tokens(output),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_without_text_or_calls_is_refused() {
        let err = Script::parse("turns:\n  - expect: x\n", "s.yaml").unwrap_err();
        assert!(err.to_string().contains("turn 1"), "{err}");
        let err = Script::parse("turns:\n  - txet: x\n", "s.yaml").unwrap_err();
        assert!(err.to_string().contains("txet"), "{err}");
    }

    #[test]
    fn json_scripts_parse_too() {
        let s = Script::parse(
            r#"{"turns": [{"tool_calls": [{"name": "a", "arguments": {"x": 1}}]}, {"text": "done"}]}"#,
            "inline",
        )
        .unwrap();
        assert_eq!(s.turns.len(), 2);
        assert_eq!(s.turns[0].tool_calls[0].arguments["x"], 1);
    }

    #[test]
    fn system_prompt_expectations_are_checked_and_do_not_use_up_the_turn() {
        let script = Script::parse(
            "turns:\n  - expect_system: [harbour]\n    absent_system: [secret]\n    text: ok\n",
            "inline",
        )
        .unwrap();
        let model = ScriptedBackend::new("s", "inline", script);
        let ask = |system: &str| ChatRequest {
            messages: vec![
                Message::System {
                    content: system.into(),
                },
                Message::User {
                    content: "hi".into(),
                },
            ],
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
        };
        let err = model.answer(&ask("about the bridge")).unwrap_err();
        assert!(err.to_string().contains("harbour"), "{err}");
        let err = model.answer(&ask("harbour and a secret")).unwrap_err();
        assert!(
            err.to_string()
                .contains("system prompt not to contain \"secret\""),
            "{err}"
        );
        assert_eq!(model.remaining(), 1);
        let ok = model.answer(&ask("the harbour")).unwrap();
        assert_eq!(ok.text.as_deref(), Some("ok"));
    }
}
