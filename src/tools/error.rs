//! What can go wrong with a tool call, typed so a caller can branch on it and worded so a
//! model reading the `Display` text knows what happened and what to try instead.

use crate::core::effect::LoweringRefused;
pub use crate::protocol::tool::{DenialReason, Gate, GateDenial};
use thiserror::Error;

impl GateDenial {
    pub(crate) fn over_reach(tool: &str, refused: &LoweringRefused) -> Box<GateDenial> {
        Box::new(GateDenial {
            gate: Gate::Clearance,
            tool: tool.to_string(),
            reason: DenialReason::DeclarationOverReach {
                detail: format!(
                    "the live server's annotation raised its effect and the reviewed declaration cannot lower it that far ({refused})"
                ),
            },
        })
    }
}

/// A tool call that did not produce a result. The text of each variant is meant for the
/// model: it says what happened and what it may do next. The expert keeps running after
/// every one of them.
#[derive(Debug, Clone, Error)]
#[non_exhaustive]
pub enum ToolError {
    /// A gate refused the call; it was not made. Not retryable as is.
    #[error("{0}")]
    Denied(Box<GateDenial>),
    /// The server could not be started (missing program, bad environment, exited or
    /// failed during the MCP handshake). Retryable: the next call tries to start it again.
    #[error("tool server `{server}` could not start: {reason}{}", tail(stderr))]
    StartFailed {
        /// Server name.
        server: String,
        /// What failed.
        reason: String,
        /// Last lines the server wrote to stderr.
        stderr: Vec<String>,
    },
    /// The call did not finish within its timeout. The server was stopped; the next call
    /// starts a fresh one. Whether the tool did anything is unknown.
    #[error(
        "`{server}/{tool}` did not answer within {secs} s; the server was stopped and will be restarted on the next call (whether it did anything is unknown)"
    )]
    Timeout {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
        /// The timeout.
        secs: u64,
    },
    /// The server process ended or closed its output during the call. The next call
    /// restarts it. Whether the tool did anything is unknown.
    #[error(
        "tool server `{server}` stopped during `{tool}` ({detail}); it will be restarted on the next call{}",
        tail(stderr)
    )]
    Crashed {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
        /// How it ended.
        detail: String,
        /// Last lines the server wrote to stderr.
        stderr: Vec<String>,
    },
    /// The server wrote something that is not a JSON-RPC message. The connection was
    /// dropped; the next call restarts the server.
    #[error(
        "tool server `{server}` sent a malformed message during `{tool}` ({line:?}); the connection was dropped and will be restarted on the next call"
    )]
    Malformed {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
        /// The start of the offending line.
        line: String,
    },
    /// The server answered the call with a protocol error (unknown tool, invalid
    /// arguments, internal error). The server is still running.
    #[error("`{server}/{tool}` was rejected by the server: {message}")]
    Rejected {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
        /// The server's message.
        message: String,
    },
    /// The running server does not offer a tool the catalog grants (its tool list changed).
    #[error(
        "tool server `{server}` does not offer `{tool}` (its tools: {offered}); rebuild the catalog with --probe"
    )]
    NotOffered {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
        /// What it offers, comma-separated.
        offered: String,
    },
    /// A `native` or `remote` server was called, but no bridge is connected.
    #[error("tool server `{server}` is reached over ROS ({service}) and no bridge is connected")]
    NoBridge {
        /// Server name.
        server: String,
        /// The ROS service.
        service: String,
    },
    /// The bridge to a `native`/`remote` server reported an error.
    #[error("`{server}/{tool}` failed on its bridge: {message}")]
    Remote {
        /// Server name.
        server: String,
        /// Tool name.
        tool: String,
        /// The bridge's message.
        message: String,
    },
    /// The call could not be recorded in the event log, so it was not made (capture is
    /// never skipped). Retryable once the log is back.
    #[error("the tool call could not be recorded, so it was not made: {0}")]
    NotRecorded(String),
    /// The manager has been shut down (the expert is ending).
    #[error("the tool manager has shut down")]
    ShutDown,
}

fn tail(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last output: {}", lines.join(" | "))
    }
}

impl ToolError {
    /// Whether the same call may succeed if made again unchanged.
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            ToolError::StartFailed { .. }
                | ToolError::Timeout { .. }
                | ToolError::Crashed { .. }
                | ToolError::Malformed { .. }
                | ToolError::NotRecorded(_)
        )
    }

    /// The gate refusal, when this is one.
    pub fn denial(&self) -> Option<&GateDenial> {
        match self {
            ToolError::Denied(d) => Some(d.as_ref()),
            _ => None,
        }
    }

    /// A short snake_case word for events and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            ToolError::Denied(_) => "denied",
            ToolError::StartFailed { .. } => "start_failed",
            ToolError::Timeout { .. } => "timeout",
            ToolError::Crashed { .. } => "crashed",
            ToolError::Malformed { .. } => "malformed",
            ToolError::Rejected { .. } => "rejected",
            ToolError::NotOffered { .. } => "not_offered",
            ToolError::NoBridge { .. } => "no_bridge",
            ToolError::Remote { .. } => "remote",
            ToolError::NotRecorded(_) => "not_recorded",
            ToolError::ShutDown => "shut_down",
        }
    }
}
