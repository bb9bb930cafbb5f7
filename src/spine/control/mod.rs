//! The control plane: ROS 2 over Zenoh (rmw_zenoh wire protocol) through `hiroz`, with the
//! lifecycle and action behaviour owned here (hiroz 0.2.1's own has known defects).

pub mod action;
pub mod call;
pub mod demo;
pub mod lifecycle;
pub mod ros_args;
pub mod router;
pub(crate) mod serve;
mod session;

use std::time::Duration;

pub use session::{ControlConfig, ControlPlane, DEFAULT_ROUTER, ROUTER_ENV};

/// Errors of the control plane. Each says what failed and, where it helps, what to do.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The Zenoh session could not be opened.
    #[error("could not open a Zenoh session for {router}: {source}")]
    Session {
        router: String,
        #[source]
        source: zenoh::Error,
    },
    /// An endpoint (node, service, topic) could not be declared.
    #[error("could not declare {what}: {source}")]
    Declare {
        what: String,
        #[source]
        source: zenoh::Error,
    },
    /// A cross-process wait ran out.
    #[error("{what}: no answer within {after:?}")]
    Timeout { what: String, after: Duration },
    /// A call reached the other side and failed there, or could not be sent.
    #[error("{what} failed: {source}")]
    Call {
        what: String,
        #[source]
        source: zenoh::Error,
    },
    /// A managed node refused or failed a transition.
    #[error("{node} did not {transition}: {reason}")]
    Transition {
        node: String,
        transition: String,
        reason: String,
    },
    /// Nothing serves the request: no node offers it (not started, or not active yet).
    #[error(
        "{what}: nothing serves it (is the node running and active? `iron node list`, `iron lifecycle get <node>`)"
    )]
    NoServer { what: String },
    /// The peer serving a request left the control plane (its process died, or it lost the
    /// router) before answering: what it was doing is lost with it.
    #[error("{what} went away {during}")]
    Gone { what: String, during: String },
    /// A peer answered something this side cannot accept.
    #[error("{what}: {detail}")]
    Protocol { what: String, detail: String },
    /// An action server refused a goal. `code` is the refusal's stable code (`inactive`,
    /// `saturated`, a handler's own …) when the server published its reason in time.
    #[error("{what}: {detail}")]
    Rejected {
        what: String,
        code: Option<String>,
        detail: String,
    },
    /// Configuration or arguments are wrong.
    #[error("{0}")]
    Config(String),
    /// The ROS arguments on the command line are malformed.
    #[error("invalid --ros-args: {0}")]
    RosArgs(#[from] ros_args::RosArgsError),
}
