//! What a tool call leaves on the log: `tool_call`, `tool_result` and `gate_denied` share one
//! payload ([`ToolRecord`]): the task, the tool, the arguments as the model gave them, and what
//! happened ([`ToolOutcome`]), a refusal with the gate and its reason ([`GateDenial`]). The tools
//! layer writes it; memory's extractor and the console read it back.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Payload;
use crate::core::effect::{Clearance, Effect};
use crate::core::event_kind::EventKind;

/// Which of the two gates refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// the tools layer's list of secret files) or the state directory; no tool, of any
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// What the event says happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ToolOutcome {
    /// (`tool_call`) Both gates admitted the call with this effect.
    Admitted {
        /// The effect gate 1 enforced.
        effect: Effect,
    },
    /// (`tool_result`) The server answered; `is_error` is the tool's own error flag.
    Answered {
        /// The tool reported an error in its result.
        is_error: bool,
        /// The result as returned.
        result: Value,
    },
    /// (`tool_result`) The call failed: timeout, crash, malformed answer, protocol error.
    Failed {
        /// the tools layer's `ToolError::kind`.
        error_kind: String,
        /// The error text the model sees.
        message: String,
    },
    /// (`gate_denied`) Refused.
    Denied {
        /// Which gate.
        gate: Gate,
        /// The gate's number, 1 or 2.
        gate_number: u8,
        /// The refusal, with its reason and path.
        denial: GateDenial,
        /// The refusal in words.
        message: String,
    },
}

impl ToolOutcome {
    /// Whether the tool answered without reporting an error.
    pub fn succeeded(&self) -> bool {
        matches!(
            self,
            ToolOutcome::Answered {
                is_error: false,
                ..
            }
        )
    }
}

/// The payload of `tool_call`, `tool_result` and `gate_denied` events (their kind, actor and
/// cause are the envelope's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRecord {
    /// The task the call belongs to.
    pub task: String,
    /// `server/tool`; for a name that maps to nothing, the name as given.
    pub tool: String,
    /// The arguments as the model gave them.
    pub arguments: Value,
    /// What happened.
    pub outcome: ToolOutcome,
}

impl Payload for ToolRecord {
    /// Named in a refusal; any of the three kinds is read ([`ToolRecord::is_kind`]).
    const KIND: EventKind = EventKind::ToolResult;

    fn is_kind(kind: &EventKind) -> bool {
        matches!(
            kind,
            EventKind::ToolCall | EventKind::ToolResult | EventKind::GateDenied
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_outcome_is_read_back_as_it_was_written() {
        let denial = GateDenial {
            gate: Gate::Path,
            tool: "files/write_file".into(),
            reason: DenialReason::OutsideRoots {
                argument: "path".into(),
                path: "../x".into(),
                resolved: "/tmp/x".into(),
                roots: vec!["/work".into()],
            },
        };
        let outcomes = [
            ToolOutcome::Admitted {
                effect: Effect::Write,
            },
            ToolOutcome::Answered {
                is_error: false,
                result: json!({"content": [{"type": "text", "text": "{}"}]}),
            },
            ToolOutcome::Failed {
                error_kind: "timeout".into(),
                message: "no answer".into(),
            },
            ToolOutcome::Denied {
                gate: Gate::Path,
                gate_number: 2,
                message: denial.to_string(),
                denial,
            },
        ];
        for outcome in outcomes {
            let record = ToolRecord {
                task: "t-1".into(),
                tool: "files/write_file".into(),
                arguments: json!({"path": "../x"}),
                outcome,
            };
            let written = record.to_value();
            assert!(written["outcome"]["status"].is_string());
            let read: ToolRecord = serde_json::from_value(written.clone()).unwrap();
            assert_eq!(read, record);
            assert_eq!(read.to_value().to_string(), written.to_string());
        }
    }
}
