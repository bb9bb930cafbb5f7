//! The seam to `native` and `remote` servers: both are reached over the ROS service
//! `iron/srv/ToolCall` (request: tool, arguments_json, caller, task_id → response: ok,
//! result_json, error). The manager only needs [`RemoteTools`]; [`super::ros::RosTools`] is
//! the ROS implementation, and tests may plug in their own.

use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use thiserror::Error;

use crate::spine::control::ControlError;

/// Where a `native`/`remote` server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteServer {
    /// Server name in the mesh.
    pub server: String,
    /// The ROS service to call: `/iron/tools/<server>` for a native bridge, the
    /// descriptor's `service` for a remote one.
    pub service: String,
    /// True for `native` (a bridge node of this system), false for `remote`.
    pub native: bool,
}

/// Who is calling, for the `caller` and `task_id` fields of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteCaller {
    /// The expert id, `<mesh>/<role>`.
    pub caller: String,
    /// The task.
    pub task_id: String,
}

/// Why a call to a `native` or `remote` server gave no result.
#[derive(Debug, Error)]
pub enum RemoteError {
    /// No client of the service could be made.
    #[error("cannot call {service}: {source}")]
    NoClient {
        /// The service.
        service: String,
        /// The cause.
        #[source]
        source: ControlError,
    },
    /// The bridge answered the call with an error (its words).
    #[error("{message}")]
    Refused {
        /// The bridge's `error`, or a sentence saying it gave none.
        message: String,
    },
    /// The bridge answered with a result that is not JSON.
    #[error("{service} answered {tool} with a result that is not JSON: {source}")]
    NotJson {
        /// The service.
        service: String,
        /// The tool.
        tool: String,
        /// The parser's reason.
        #[source]
        source: serde_json::Error,
    },
    /// No answer in time; the call may have run.
    #[error("{service}: no answer within {after:?}")]
    TimedOut {
        /// The service.
        service: String,
        /// The bound.
        after: Duration,
    },
    /// The service could not be reached.
    #[error("{service} is not reachable: {detail}")]
    Unreachable {
        /// The service.
        service: String,
        /// The transport's words.
        detail: String,
    },
}

/// The future a [`RemoteTools`] call returns.
pub type RemoteFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, RemoteError>> + Send + 'a>>;

/// Calls a tool on a `native` or `remote` server. `Ok` carries the parsed `result_json`;
/// `Err` the response's `error` or why the call did not complete. The manager
/// wraps every call in the expert's tool timeout, and runs both gates before it.
pub trait RemoteTools: Send + Sync {
    /// One `iron/srv/ToolCall` round trip.
    fn call<'a>(
        &'a self,
        server: &'a RemoteServer,
        tool: &'a str,
        arguments: &'a Value,
        caller: &'a RemoteCaller,
    ) -> RemoteFuture<'a>;
}
