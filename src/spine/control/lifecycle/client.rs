//! Driving a managed node from outside, as `ros2 lifecycle` does: ask its state, list what it
//! may do next, and request a transition by label.

use std::time::Duration;

use hiroz::{Builder, node::ZNode, service::ZClient};
use hiroz_msgs::lifecycle_msgs::{self as wire, srv};

use super::machine::State;
use super::rosout::Watch;
use crate::spine::control::ControlError;

/// Clients for one managed node's lifecycle services.
pub struct LifecycleClient {
    target: String,
    timeout: Duration,
    change: ZClient<srv::ChangeState>,
    get_state: ZClient<srv::GetState>,
    transitions: ZClient<srv::GetAvailableTransitions>,
    /// The node's error records on /rosout, once [`with_reasons`](Self::with_reasons).
    reasons: Option<Watch>,
}

/// How long after a failed transition a reason is still waited for on /rosout: the node
/// publishes it before it answers, so it is normally there already.
pub const REASON_WAIT: Duration = Duration::from_secs(1);

/// A transition a node offers now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    pub id: u8,
    pub label: String,
    pub goal: String,
}

impl LifecycleClient {
    /// Clients for the node `target` (fully qualified, e.g. `/iron/demo`), every call bounded
    /// by `timeout`.
    pub fn new(node: &ZNode, target: &str, timeout: Duration) -> Result<Self, ControlError> {
        let target = target.trim_end_matches('/').to_string();
        if !target.starts_with('/') {
            return Err(ControlError::Config(format!(
                "node name {target:?} must be fully qualified, e.g. /iron/demo"
            )));
        }
        let declare = |name: &str| {
            let what = format!("client for {target}/{name}");
            move |source| ControlError::Declare { what, source }
        };
        Ok(Self {
            change: node
                .create_client::<srv::ChangeState>(&format!("{target}/change_state"))
                .build()
                .map_err(declare("change_state"))?,
            get_state: node
                .create_client::<srv::GetState>(&format!("{target}/get_state"))
                .build()
                .map_err(declare("get_state"))?,
            transitions: node
                .create_client::<srv::GetAvailableTransitions>(&format!(
                    "{target}/get_available_transitions"
                ))
                .build()
                .map_err(declare("get_available_transitions"))?,
            target,
            timeout,
            reasons: None,
        })
    }

    /// Also watches /rosout, so that [`transition`](Self::transition) can say why a node
    /// refused or failed (an Iron node logs the reason there; against a node that logs
    /// nothing the error just says it failed).
    pub fn with_reasons(mut self, node: &ZNode) -> Result<Self, ControlError> {
        self.reasons = Some(Watch::new(node, &self.target)?);
        Ok(self)
    }

    /// [`new`](Self::new) and [`with_reasons`](Self::with_reasons): the client of every
    /// command that drives a node and must say why it refused.
    pub fn watching(node: &ZNode, target: &str, timeout: Duration) -> Result<Self, ControlError> {
        Self::new(node, target, timeout)?.with_reasons(node)
    }

    /// Requests the transition `label` like [`set`](Self::set); a refusal or failure is
    /// [`ControlError::Transition`] with the reasons the node logged on /rosout meanwhile
    /// (when [`with_reasons`](Self::with_reasons) watches them).
    pub async fn transition(&self, label: &str) -> Result<(), ControlError> {
        let since = Watch::mark();
        if self.set(label).await? {
            return Ok(());
        }
        let reasons = match &self.reasons {
            Some(w) => w.errors_since(&since, REASON_WAIT).await,
            None => Vec::new(),
        };
        Err(ControlError::Transition {
            node: self.target.clone(),
            transition: label.to_string(),
            reason: if reasons.is_empty() {
                format!("{label} failed, and the node gave no reason on /rosout")
            } else {
                reasons.join("; ")
            },
        })
    }

    /// Takes the node from where it is to `active` (configure when unconfigured, then
    /// activate), as `iron up`, the engine and the benches start a node. A refusal or failure
    /// is [`ControlError::Transition`] with the node's own reason when the client is
    /// [`watching`](Self::watching); a node that is neither unconfigured, inactive nor active
    /// is refused with its state.
    pub async fn activate(&self) -> Result<(), ControlError> {
        let steps: &[&str] = match self.get_state().await? {
            State::Unconfigured => &["configure", "activate"],
            State::Inactive => &["activate"],
            State::Active => &[],
            other => {
                return Err(ControlError::Transition {
                    node: self.target.clone(),
                    transition: "configure".into(),
                    reason: format!("it is {other}, not ready to configure"),
                });
            }
        };
        for step in steps {
            self.transition(step).await?;
        }
        Ok(())
    }

    /// The node's current state.
    pub async fn get_state(&self) -> Result<State, ControlError> {
        let what = format!("{}/get_state", self.target);
        let resp = retry(&what, self.timeout, || {
            self.get_state
                .call_with_timeout(&wire::GetStateRequest {}, self.timeout)
        })
        .await?;
        State::from_id(resp.current_state.id).ok_or_else(|| ControlError::Protocol {
            what,
            detail: format!("unknown state id {}", resp.current_state.id),
        })
    }

    /// The transitions the node offers from its current state.
    pub async fn available_transitions(&self) -> Result<Vec<Offered>, ControlError> {
        let what = format!("{}/get_available_transitions", self.target);
        let resp = retry(&what, self.timeout, || {
            self.transitions
                .call_with_timeout(&wire::GetAvailableTransitionsRequest {}, self.timeout)
        })
        .await?;
        Ok(resp
            .available_transitions
            .into_iter()
            .map(|d| Offered {
                id: d.transition.id,
                label: d.transition.label,
                goal: d.goal_state.label,
            })
            .collect())
    }

    /// Requests the transition `label` (configure, activate, deactivate, cleanup, shutdown)
    /// the way `ros2 lifecycle set` does: looked up among the offered ones, then sent with
    /// its id and label. Returns whether the node reports success.
    pub async fn set(&self, label: &str) -> Result<bool, ControlError> {
        let offered = self.available_transitions().await?;
        let Some(t) = offered.iter().find(|t| t.label == label) else {
            let names: Vec<_> = offered.iter().map(|t| t.label.as_str()).collect();
            return Err(ControlError::Config(format!(
                "{} does not offer {label:?} now; it offers: {}",
                self.target,
                if names.is_empty() {
                    "nothing".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        let req = wire::ChangeStateRequest {
            transition: wire::Transition {
                id: t.id,
                label: t.label.clone(),
            },
        };
        // A transition is not idempotent: it is sent once, with a generous deadline.
        let what = format!("{}/change_state {label}", self.target);
        let resp = self
            .change
            .call_with_timeout(&req, self.timeout * 4)
            .await
            .map_err(|source| classify(&what, self.timeout * 4, source))?;
        Ok(resp.success)
    }
}

/// Turns a hiroz call error into a timeout or call error.
pub(crate) fn classify(what: &str, after: Duration, source: zenoh::Error) -> ControlError {
    if hiroz::error::is_timeout(source.as_ref()) {
        ControlError::Timeout {
            what: what.to_string(),
            after,
        }
    } else {
        ControlError::Call {
            what: what.to_string(),
            source,
        }
    }
}

/// Whether a call failed because no server answered at all. hiroz reports that only as a
/// message (its query ends with no reply), so the message is what is compared.
fn no_server(source: &zenoh::Error) -> bool {
    source.to_string() == "Service call ended before any response was received"
}

/// Calls an idempotent query until it answers or `deadline` passes: a freshly started peer may
/// not be routable for its first few milliseconds.
pub(crate) async fn retry<T, F, Fut>(
    what: &str,
    deadline: Duration,
    mut call: F,
) -> Result<T, ControlError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = zenoh::Result<T>>,
{
    let until = tokio::time::Instant::now() + deadline;
    let mut last = None;
    while tokio::time::Instant::now() < until {
        let left = until - tokio::time::Instant::now();
        match tokio::time::timeout(left, call()).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => last = Some(e),
            Err(_) => break,
        }
        tokio::time::sleep(
            Duration::from_millis(50)
                .min(until.saturating_duration_since(tokio::time::Instant::now())),
        )
        .await;
    }
    Err(match last {
        Some(source) if no_server(&source) => ControlError::NoServer {
            what: what.to_string(),
        },
        Some(source) if !hiroz::error::is_timeout(source.as_ref()) => ControlError::Call {
            what: what.to_string(),
            source,
        },
        _ => ControlError::Timeout {
            what: what.to_string(),
            after: deadline,
        },
    })
}
