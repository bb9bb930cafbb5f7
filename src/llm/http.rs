//! The HTTP plumbing the networked backends share: one POST of JSON with a timeout, and the
//! mapping of statuses and transport failures to [`LlmError`].

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

use super::error::ConfigError;
use super::error::{LlmError, truncate};
use super::secret::{KeyRef, Secret, SecretSource};

/// Longest stretch of a bad body quoted in an error.
const BODY_SNIPPET: usize = 200;

/// Builds the client the backend of `settings` keeps for its lifetime: every request is
/// bounded by its timeout, connecting by the smaller of that and 10 s.
pub(crate) fn client(settings: &HttpSettings) -> Result<reqwest::Client, ConfigError> {
    reqwest::Client::builder()
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout.min(Duration::from_secs(10)))
        .build()
        .map_err(|source| ConfigError::HttpClient {
            backend: settings.name.clone(),
            source,
        })
}

/// Resolves an optional key reference now.
pub(crate) fn resolve_key(
    backend: &str,
    key: Option<&KeyRef>,
    secrets: &dyn SecretSource,
) -> Result<Option<Secret>, LlmError> {
    match key {
        None => Ok(None),
        Some(k) => k
            .resolve(secrets)
            .map(Some)
            .ok_or_else(|| LlmError::MissingKey {
                backend: backend.to_string(),
                variable: k.variable().to_string(),
            }),
    }
}

/// One POST: sends `body`, returns the JSON answer of a 2xx, or the classified error. Every
/// server text that ends in an error is cut and scrubbed of the key.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    backend: &str,
    url: &str,
    headers: HeaderMap,
    body: &Value,
    timeout: Duration,
    secret: Option<&Secret>,
) -> Result<Value, LlmError> {
    let scrub = |s: &str| match secret {
        Some(k) => k.scrub(s),
        None => s.to_string(),
    };
    let transport = |e: reqwest::Error| {
        if e.is_timeout() {
            LlmError::Timeout {
                backend: backend.to_string(),
                after: timeout,
            }
        } else {
            LlmError::Connection {
                backend: backend.to_string(),
                url: url.to_string(),
                message: scrub(&error_chain(&e)),
            }
        }
    };
    let response = client
        .post(url)
        .headers(headers)
        .json(body)
        .send()
        .await
        .map_err(transport)?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let bytes = response.bytes().await.map_err(transport)?;
    let text = String::from_utf8_lossy(&bytes);
    if !(200..300).contains(&status) {
        let message = truncate(&scrub(&server_message(&text)));
        let backend = backend.to_string();
        return Err(match status {
            429 => LlmError::RateLimited {
                backend,
                message,
                retry_after,
            },
            401 | 403 => LlmError::Unauthorized {
                backend,
                status,
                message,
            },
            500..=599 => LlmError::Server {
                backend,
                status,
                message,
            },
            _ => LlmError::Rejected {
                backend,
                status,
                message,
            },
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| LlmError::Malformed {
        backend: backend.to_string(),
        message: format!("not JSON ({e}); body starts {:?}", snippet(&scrub(&text))),
    })
}

/// The human part of an error body: `error.message`, `message`, `error` (a string), else the
/// body itself.
fn server_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let found = v
            .pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str);
        if let Some(m) = found {
            return m.to_string();
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        "(empty body)".to_string()
    } else {
        trimmed.to_string()
    }
}

/// The start of `text`, for quoting.
pub(crate) fn snippet(text: &str) -> String {
    text.chars().take(BODY_SNIPPET).collect()
}

/// An error and its sources, joined by `: `.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

/// Joins a base URL and a path with exactly one `/`.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_messages_are_found_in_the_usual_places() {
        assert_eq!(
            server_message(r#"{"error":{"message":"bad model"}}"#),
            "bad model"
        );
        assert_eq!(server_message(r#"{"message":"m"}"#), "m");
        assert_eq!(server_message(r#"{"error":"e"}"#), "e");
        assert_eq!(server_message("plain text"), "plain text");
        assert_eq!(server_message(""), "(empty body)");
    }

    #[test]
    fn urls_join_with_one_slash() {
        assert_eq!(
            join_url("http://h/v1/", "/chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            join_url("http://h/v1", "chat/completions"),
            "http://h/v1/chat/completions"
        );
    }
}

/// What a networked backend (OpenAI-compatible or Anthropic) is built from.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Configured backend name (appears in errors and responses).
    pub name: String,
    /// Base URL: for OpenAI-compatible servers up to and including `/v1`
    /// (`http://127.0.0.1:11434/v1`); for Anthropic the host (`https://api.anthropic.com`).
    pub base_url: String,
    /// Model name sent to the server.
    pub model: String,
    /// Key reference; `None` for servers that need no key (a local Ollama).
    pub api_key: Option<KeyRef>,
    /// Bound on every request, connect to last byte.
    pub timeout: Duration,
    /// Output-token cap sent when the request gives none.
    pub max_tokens: Option<u32>,
    /// Prices for cost estimates.
    pub prices: Option<super::model::Prices>,
}
