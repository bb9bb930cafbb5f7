//! What can go wrong when calling a model, and which failures are worth retrying.

use std::time::Duration;

/// Longest server message kept in an error, in characters.
pub const MAX_SERVER_MESSAGE: usize = 2_000;

/// A failed model call. Every variant names the configured backend.
///
/// Retryable ([`LlmError::is_retryable`]): [`RateLimited`](LlmError::RateLimited),
/// [`Server`](LlmError::Server), [`Timeout`](LlmError::Timeout),
/// [`Connection`](LlmError::Connection). Everything else fails at once: retrying cannot fix a
/// rejected key, a bad request, a missing variable or a script that ran out.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// HTTP 429. Retry after a pause (the server's `retry-after`, when it gave one).
    #[error("backend {backend}: rate limited (HTTP 429): {message}")]
    RateLimited {
        /// Configured backend name.
        backend: String,
        /// What the server said.
        message: String,
        /// The server's `retry-after`, if any.
        retry_after: Option<Duration>,
    },
    /// HTTP 5xx (including Anthropic's 529 "overloaded"). Retry, then try another backend.
    #[error("backend {backend}: server error (HTTP {status}): {message}")]
    Server {
        /// Configured backend name.
        backend: String,
        /// HTTP status.
        status: u16,
        /// What the server said.
        message: String,
    },
    /// No complete answer within the backend's timeout.
    #[error("backend {backend}: no answer within {}s; raise `timeout_secs` or check the server", after.as_secs_f64())]
    Timeout {
        /// Configured backend name.
        backend: String,
        /// The timeout that expired.
        after: Duration,
    },
    /// The server could not be reached or the connection broke.
    #[error("backend {backend}: connection failed to {url}: {message}")]
    Connection {
        /// Configured backend name.
        backend: String,
        /// Endpoint called (never carries the key).
        url: String,
        /// What failed.
        message: String,
    },
    /// HTTP 401 or 403: the key is missing, wrong or lacks access. Fix the key; not retried.
    #[error(
        "backend {backend}: not authorized (HTTP {status}): {message}; check the key the `api_key` reference points at"
    )]
    Unauthorized {
        /// Configured backend name.
        backend: String,
        /// HTTP status.
        status: u16,
        /// What the server said.
        message: String,
    },
    /// Any other 4xx: the server rejected the request. Not retried.
    #[error("backend {backend}: request rejected (HTTP {status}): {message}")]
    Rejected {
        /// Configured backend name.
        backend: String,
        /// HTTP status.
        status: u16,
        /// What the server said.
        message: String,
    },
    /// The server answered 2xx with a body this backend cannot read (not JSON, or not the
    /// expected shape). Not retried: it usually means the base URL points at the wrong API.
    #[error("backend {backend}: unreadable response: {message}; check `base_url` and `kind`")]
    Malformed {
        /// Configured backend name.
        backend: String,
        /// What was wrong, with the start of the body.
        message: String,
    },
    /// The environment variable the key reference names is not set.
    #[error(
        "backend {backend}: environment variable {variable} (from its `api_key` reference) is not set"
    )]
    MissingKey {
        /// Configured backend name.
        backend: String,
        /// The variable.
        variable: String,
    },
    /// The scripted backend has no turn left.
    #[error(
        "scripted backend {backend}: the script {script} has {turns} turn(s) and all were used; add a turn"
    )]
    ScriptExhausted {
        /// Configured backend name.
        backend: String,
        /// Where the script came from.
        script: String,
        /// How many turns it had.
        turns: usize,
    },
    /// A scripted turn's `expect` did not match the conversation.
    #[error(
        "scripted backend {backend}: turn {turn} of {script} expects {part} {expected}, but it was {actual:?}"
    )]
    ScriptMismatch {
        /// What was checked: `the last user or tool message`, `the system prompt`.
        part: &'static str,
        /// Configured backend name.
        backend: String,
        /// Where the script came from.
        script: String,
        /// 1-based turn number.
        turn: usize,
        /// What was expected of it: `to contain "x"`, `not to contain "y"`.
        expected: String,
        /// The start of the actual text.
        actual: String,
    },
    /// Every backend of a failover list failed with retryable errors.
    #[error("all {} backend(s) of {name} failed; last: {last}", attempts.len())]
    Exhausted {
        /// The logical model name.
        name: String,
        /// One line per backend tried, in order.
        attempts: Vec<String>,
        /// The last error.
        last: Box<LlmError>,
    },
}

impl LlmError {
    /// True when the same request may succeed if sent again later.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Timeout { .. }
                | LlmError::Connection { .. }
        )
    }

    /// A short stable code for logs and task statuses (`rate_limited`, `timeout`, …).
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::RateLimited { .. } => "rate_limited",
            LlmError::Server { .. } => "server_error",
            LlmError::Timeout { .. } => "timeout",
            LlmError::Connection { .. } => "connection",
            LlmError::Unauthorized { .. } => "unauthorized",
            LlmError::Rejected { .. } => "rejected",
            LlmError::Malformed { .. } => "malformed_response",
            LlmError::MissingKey { .. } => "missing_key",
            LlmError::ScriptExhausted { .. } => "script_exhausted",
            LlmError::ScriptMismatch { .. } => "script_mismatch",
            LlmError::Exhausted { .. } => "all_backends_failed",
        }
    }

    /// The server's `retry-after`, when it gave one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Cuts `text` to [`MAX_SERVER_MESSAGE`] characters, marking the cut.
pub(crate) fn truncate(text: &str) -> String {
    let mut out: String = text.chars().take(MAX_SERVER_MESSAGE).collect();
    if out.len() < text.len() {
        out.push_str(" …(truncated)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_is_exactly_rate_limit_server_timeout_connection() {
        let b = || "b".to_string();
        let retry = [
            LlmError::RateLimited {
                backend: b(),
                message: String::new(),
                retry_after: None,
            },
            LlmError::Server {
                backend: b(),
                status: 503,
                message: String::new(),
            },
            LlmError::Timeout {
                backend: b(),
                after: Duration::from_secs(1),
            },
            LlmError::Connection {
                backend: b(),
                url: String::new(),
                message: String::new(),
            },
        ];
        assert!(retry.iter().all(LlmError::is_retryable));
        let fatal = [
            LlmError::Unauthorized {
                backend: b(),
                status: 401,
                message: String::new(),
            },
            LlmError::Rejected {
                backend: b(),
                status: 400,
                message: String::new(),
            },
            LlmError::Malformed {
                backend: b(),
                message: String::new(),
            },
            LlmError::MissingKey {
                backend: b(),
                variable: "X".into(),
            },
        ];
        assert!(fatal.iter().all(|e| !e.is_retryable()));
    }

    #[test]
    fn long_server_messages_are_cut() {
        let long = "x".repeat(MAX_SERVER_MESSAGE + 10);
        let cut = truncate(&long);
        assert!(cut.ends_with("(truncated)"));
        assert!(cut.chars().count() < long.chars().count() + 20);
        assert_eq!(truncate("short"), "short");
    }
}

/// A configuration that cannot be used, or a backend that cannot be built.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The YAML does not parse or has unknown keys.
    #[error("models configuration: {0}")]
    Yaml(String),
    /// A backend's fields do not fit its kind.
    #[error("models.backends.{backend}: {message}")]
    Backend {
        /// Backend name.
        backend: String,
        /// What is wrong and what would be right.
        message: String,
    },
    /// A logical name lists a backend that is not configured.
    #[error("models.logical.{logical}: unknown backend {backend:?}; configured backends: {known}")]
    UnknownBackend {
        /// Logical name.
        logical: String,
        /// The unknown backend.
        backend: String,
        /// Configured backends, comma-separated.
        known: String,
    },
    /// A logical name that `logical` does not define.
    #[error("model {name:?} is not defined under models.logical; defined: {known}")]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// Defined names, comma-separated.
        known: String,
    },
    /// Catalog experts name models the configuration does not define.
    #[error("the catalog names models that models.logical does not define: {}", missing.join(", "))]
    CatalogModels {
        /// `<expert> uses <model>` entries.
        missing: Vec<String>,
    },
    /// A script cannot be read or parsed.
    #[error("script {script}: {message}")]
    Script {
        /// Where it came from.
        script: String,
        /// What is wrong.
        message: String,
    },
    /// The HTTP client of a backend cannot be built.
    #[error("models.backends.{backend}: cannot build the HTTP client: {source}")]
    HttpClient {
        /// Backend name.
        backend: String,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
}
