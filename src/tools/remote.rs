//! The seam to `native` and `remote` servers: both are reached over the ROS service
//! `iron/srv/ToolCall` (request: tool, arguments_json, caller, task_id → response: ok,
//! result_json, error). The manager only needs [`RemoteTools`]; [`super::ros::RosTools`] is
//! the ROS implementation, and tests may plug in their own.

use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

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

/// The future a [`RemoteTools`] call returns.
pub type RemoteFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'a>>;

/// Calls a tool on a `native` or `remote` server. `Ok` carries the parsed `result_json`;
/// `Err` carries the response's `error` (or a transport failure) in words. The manager
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
