//! An expert delegating to a peer: the built-in `delegate` tool, offered only to an expert with
//! peers (its catalog entry's `peers`, from the mesh's delegation scope and its own
//! exceptions). A call goes to the engine as an AolTask goal one level deeper, naming who
//! delegated, and the peer's answer comes back as the tool's result (data, like any tool
//! output). Fail closed: a domain outside the peers or a call past [`MAX_DEPTH`] is refused
//! here, and the engine checks both again.

use crate::protocol::TaskContext;
use std::{sync::Arc, time::Duration};

use hiroz::node::ZNode;
use serde_json::{Value, json};
use thiserror::Error;

use super::adapters::ManagedTools;
use super::deliver::{DELIVER, Deliveries};
use crate::{
    cognition::{
        agent::{ToolExecutor, ToolFailure},
        delegation::MAX_DEPTH,
    },
    core::{ids::EventId, trace::SpanContext},
    interfaces::{AolTask, AolTaskGoal},
    llm::{BoxFuture, ToolSpec},
    spine::control::{
        ControlError,
        action::{ActionClient, GoalStatus},
    },
};

/// Name of the built-in tool.
pub const DELEGATE: &str = "delegate";
/// The engine's action.
pub const ENGINE_ACTION: &str = "/iron/engine/task";

/// Why a `delegate` call brought no answer; the text is what the delegating model reads.
#[derive(Debug, Error)]
pub enum DelegateError {
    /// The domain is not one of the expert's peers.
    #[error("{domain:?} is not among your peers; you may delegate to: {peers}")]
    NotAPeer {
        /// The domain asked for.
        domain: String,
        /// The peers, comma-separated.
        peers: String,
    },
    /// No instruction.
    #[error("delegate needs a non-empty instruction")]
    NoInstruction,
    /// The task is as deep as delegation may go.
    #[error(
        "this task is already {depth} levels deep (the limit is {MAX_DEPTH}); finish it yourself"
    )]
    TooDeep {
        /// The running task's depth.
        depth: u8,
    },
    /// The engine could not be asked.
    #[error("cannot reach the engine: {0}")]
    NoEngine(#[source] ControlError),
    /// The goal did not complete (refused, timed out, the connection lost).
    #[error("delegating to {domain} failed: {source}")]
    Failed {
        /// The peer.
        domain: String,
        /// What the action client said.
        #[source]
        source: ControlError,
    },
    /// The peer ended without answering.
    #[error("{domain} did not answer ({status}): {text}")]
    NoAnswer {
        /// The peer.
        domain: String,
        /// Its result's status.
        status: String,
        /// Its result's text.
        text: String,
    },
}

/// Who may be asked, and on whose behalf.
pub struct Delegation {
    /// The delegating expert, `<mesh>/<role>`.
    pub expert: String,
    /// Peers, `<mesh>/<role>`, each with what it does.
    pub peers: Vec<(String, String)>,
    /// The running task's depth.
    pub depth: u8,
    /// The running task.
    pub task_id: String,
    /// Its session.
    pub session_id: String,
    /// Whose task it is (`user_id`), passed on so the owner may answer the peer too.
    pub owner: Option<String>,
    /// The event the running task descends from.
    pub cause: Option<EventId>,
    /// How long a peer may take.
    pub timeout: Duration,
    /// The node the goal is sent from.
    pub node: Arc<ZNode>,
    /// The delegating task's span: the peer's work is traced under it.
    pub trace_parent: Option<SpanContext>,
}

/// The expert's tools: the manager's, plus `delegate` when it has peers and `deliver` when it
/// holds delivery channels.
pub(super) struct ExpertTools {
    pub managed: ManagedTools,
    pub delegation: Option<Delegation>,
    pub deliveries: Option<Deliveries>,
}

impl Delegation {
    fn spec(&self) -> ToolSpec {
        let roster: Vec<String> = self
            .peers
            .iter()
            .map(|(id, what)| format!("{id}: {what}"))
            .collect();
        ToolSpec {
            name: DELEGATE.to_string(),
            description: format!(
                "Hand part of this task to a peer expert and wait for its answer. Peers:\n{}",
                roster.join("\n")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "domain": {"type": "string", "enum": self.peers.iter().map(|(id, _)| id).collect::<Vec<_>>()},
                    "instruction": {"type": "string", "description": "What the peer should do, complete in itself."}
                },
                "required": ["domain", "instruction"]
            }),
        }
    }

    async fn call(&self, arguments: &Value) -> Result<Value, DelegateError> {
        let (domain, instruction) = check(&self.peers, self.depth, arguments)?;
        // With the engine's refusals, so a refused delegation tells the model why.
        let client = ActionClient::<AolTask>::new(&self.node, ENGINE_ACTION)
            .and_then(|c| c.with_rejections(&self.node))
            .map_err(DelegateError::NoEngine)?;
        let context = TaskContext {
            delegated_by: Some(self.expert.clone()),
            cause: self.cause.clone(),
            user_id: self.owner.clone(),
            traceparent: self.trace_parent.as_ref().map(SpanContext::traceparent),
            ..TaskContext::default()
        };
        let goal = AolTaskGoal {
            task_id: uuid::Uuid::now_v7().to_string(),
            session_id: self.session_id.clone(),
            domain: domain.clone(),
            instruction,
            depth: self.depth + 1,
            parent_task_id: self.task_id.clone(),
            context_json: context.to_json(),
        };
        let outcome =
            client
                .run(goal, self.timeout)
                .await
                .map_err(|source| DelegateError::Failed {
                    domain: domain.clone(),
                    source,
                })?;
        if outcome.status == GoalStatus::Succeeded {
            Ok(json!({"expert": domain, "answer": outcome.result.text}))
        } else {
            Err(DelegateError::NoAnswer {
                domain,
                status: outcome.result.status,
                text: outcome.result.text,
            })
        }
    }
}

/// Checks a `delegate` call before anything is sent: the peer, the instruction, the depth.
pub fn check(
    peers: &[(String, String)],
    depth: u8,
    arguments: &Value,
) -> Result<(String, String), DelegateError> {
    let domain = arguments
        .get("domain")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let instruction = arguments
        .get("instruction")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    if !peers.iter().any(|(id, _)| id == domain) {
        let ids: Vec<&str> = peers.iter().map(|(id, _)| id.as_str()).collect();
        return Err(DelegateError::NotAPeer {
            domain: domain.to_string(),
            peers: ids.join(", "),
        });
    }
    if instruction.is_empty() {
        return Err(DelegateError::NoInstruction);
    }
    if depth >= MAX_DEPTH {
        return Err(DelegateError::TooDeep { depth });
    }
    Ok((domain.to_string(), instruction.to_string()))
}

impl ToolExecutor for ExpertTools {
    fn tools(&self) -> Vec<ToolSpec> {
        let mut tools = self.managed.tools();
        tools.retain(|t| t.name != DELEGATE && t.name != DELIVER);
        if let Some(d) = &self.delegation {
            tools.push(d.spec());
        }
        if let Some(d) = &self.deliveries {
            tools.push(d.spec());
        }
        tools
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolFailure>> {
        let builtin = |e: &dyn std::fmt::Display| ToolFailure::Builtin(e.to_string());
        match (name, &self.delegation, &self.deliveries) {
            (DELEGATE, Some(d), _) => {
                Box::pin(async move { d.call(arguments).await.map_err(|e| builtin(&e)) })
            }
            (DELIVER, _, Some(d)) => {
                Box::pin(async move { d.call(arguments).await.map_err(|e| builtin(&e)) })
            }
            _ => self.managed.call(name, arguments),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_peers_with_an_instruction_within_the_depth_limit() {
        let peers = vec![("lab/clerk".to_string(), "Files.".to_string())];
        let ok = json!({"domain": "lab/clerk", "instruction": " file it "});
        assert_eq!(
            check(&peers, 0, &ok).unwrap(),
            ("lab/clerk".into(), "file it".into())
        );
        let err = check(
            &peers,
            0,
            &json!({"domain": "lab/boss", "instruction": "x"}),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("not among your peers; you may delegate to: lab/clerk"),
            "{err}"
        );
        assert!(check(&peers, 0, &json!({"domain": "lab/clerk"})).is_err());
        assert!(check(&peers, MAX_DEPTH - 1, &ok).is_ok());
        assert!(matches!(
            check(&peers, MAX_DEPTH, &ok),
            Err(DelegateError::TooDeep { depth: MAX_DEPTH })
        ));
    }
}
