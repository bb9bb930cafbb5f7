//! What can go wrong with a tool call, typed so a caller can branch on it and worded so a
//! model reading the `Display` text knows what happened and what to try instead.

use crate::core::effect::{Clearance, Effect, LoweringRefused};
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;
use thiserror::Error;

/// Which of the two gates refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// Gate 1: may this expert hold a tool this powerful?
    Clearance,
    /// Gate 2: may it point that tool at this path?
    Path,
}

impl Gate {
    /// `1` or `2`, as the architecture numbers them.
    pub fn number(self) -> u8 {
        match self {
            Gate::Clearance => 1,
            Gate::Path => 2,
        }
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gate::Clearance => f.write_str("gate 1 (clearance)"),
            Gate::Path => f.write_str("gate 2 (path guard)"),
        }
    }
}

/// Why a gate refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum DenialReason {
    /// The tool is not among the expert's resolved grants (or the name maps to no tool).
    NotGranted,
    /// The tool's effect needs more than the expert's clearance.
    AboveClearance {
        /// Effect enforced for this call.
        effect: Effect,
        /// The expert's clearance.
        clearance: Clearance,
    },
    /// The live server's annotation raised the effect beyond what the reviewed
    /// declaration in `capabilities.md` may lower.
    DeclarationOverReach {
        /// The cap's verdict, in words.
        detail: String,
    },
    /// The path is, or contains, a governance file (`aem/**`, the catalog, `config/**`,
    /// `.git/**`); no clearance may write it.
    Governance {
        /// The argument that carried the path.
        argument: String,
        /// The path as given.
        path: String,
        /// Where it resolved to (after `..` and symbolic links).
        resolved: PathBuf,
        /// The protected path it hit.
        protected: PathBuf,
    },
    /// The path resolves outside every root granted to the expert.
    OutsideRoots {
        /// The argument that carried the path.
        argument: String,
        /// The path as given.
        path: String,
        /// Where it resolved to.
        resolved: PathBuf,
        /// The granted roots.
        roots: Vec<PathBuf>,
    },
    /// The path names a file that holds credentials (see
    /// [`crate::tools::paths::secrets::SECRETS`]) or the state directory; no tool, of any
    /// effect, may read or write it.
    Secret {
        /// The argument that carried the path.
        argument: String,
        /// The path as given.
        path: String,
        /// Where it resolved to.
        resolved: PathBuf,
        /// What kind of secret it is, in words.
        secret: String,
    },
    /// A value where a path or a git ref is expected starts with `-`: the program behind
    /// the tool would take it for an option (`--output=…`, `--upload-pack=…`).
    OptionLike {
        /// The argument that carried it.
        argument: String,
        /// The value as given.
        value: String,
    },
    /// The path uses the home directory (`~`, `$HOME`, `${HOME}`) and the server's home is
    /// not known (its descriptor declares no `HOME`), or it names another user's home.
    UnexpandableHome {
        /// The argument that carried the path.
        argument: String,
        /// The path as given.
        path: String,
    },
    /// The path could not be resolved safely (a symbolic-link loop, an unreadable
    /// directory, a value that is not a string, a `file:` URI of another host).
    Unresolvable {
        /// The argument that carried the path.
        argument: String,
        /// The value as given.
        path: String,
        /// What went wrong.
        detail: String,
    },
}

/// A refusal by one of the gates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateDenial {
    /// Which gate.
    pub gate: Gate,
    /// `server/tool`, or the name as the model gave it when it maps to no tool.
    pub tool: String,
    /// Why.
    #[serde(flatten)]
    pub reason: DenialReason,
}

impl fmt::Display for GateDenial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (gate, tool) = (self.gate, &self.tool);
        match &self.reason {
            DenialReason::NotGranted => write!(
                f,
                "{gate} refused `{tool}`: this expert is not granted that tool; use one of the tools offered"
            ),
            DenialReason::AboveClearance { effect, clearance } => write!(
                f,
                "{gate} refused `{tool}`: its effect is `{effect}`, which needs clearance `{}`, and this expert has `{clearance}`",
                effect.required_clearance()
            ),
            DenialReason::DeclarationOverReach { detail } => {
                write!(f, "{gate} refused `{tool}`: {detail}")
            }
            DenialReason::Governance {
                argument,
                path,
                resolved,
                protected,
            } => write!(
                f,
                "{gate} refused `{tool}`: argument `{argument}` = `{path}` resolves to `{}`, which is governance (`{}`) and never writable",
                resolved.display(),
                protected.display()
            ),
            DenialReason::OutsideRoots {
                argument,
                path,
                resolved,
                roots,
            } => {
                let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
                write!(
                    f,
                    "{gate} refused `{tool}`: argument `{argument}` = `{path}` resolves to `{}`, outside the roots this expert may write ({})",
                    resolved.display(),
                    if roots.is_empty() {
                        "none granted; gate 2 checks every argument of a write tool that is not prose as a path".to_string()
                    } else {
                        roots.join(", ")
                    }
                )
            }
            DenialReason::Secret {
                argument,
                path,
                resolved,
                secret,
            } => write!(
                f,
                "{gate} refused `{tool}`: argument `{argument}` = `{path}` resolves to `{}`, which is {secret} and holds credentials no tool may read or write",
                resolved.display()
            ),
            DenialReason::OptionLike { argument, value } => write!(
                f,
                "{gate} refused `{tool}`: argument `{argument}` = `{value}` starts with `-`, which the program would take for an option; a path or ref never starts with `-` (write `./{value}` for a file of that name)"
            ),
            DenialReason::UnexpandableHome { argument, path } => write!(
                f,
                "{gate} refused `{tool}`: argument `{argument}` = `{path}` is relative to a home directory this server's declaration does not name (no `HOME` in its env, or another user's); give a path inside the root"
            ),
            DenialReason::Unresolvable {
                argument,
                path,
                detail,
            } => write!(
                f,
                "{gate} refused `{tool}`: argument `{argument}` = `{path}` cannot be resolved safely: {detail}"
            ),
        }
    }
}

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
