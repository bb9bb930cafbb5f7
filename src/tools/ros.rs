//! `iron/srv/ToolCall` over ROS 2, both ends: [`RosTools`] calls `native`/`remote` tool
//! servers for the manager (and the engine's deliveries), [`serve_bridge`] serves one from a
//! lifecycle node. Tool names, arguments and results travel as JSON text; every failure —
//! an unknown tool, arguments that are not a JSON object, the bridge's own error — comes back
//! as `ok = false` with a sentence, never as a hang or a dropped request.

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    time::Duration,
};

use hiroz::{Builder, node::ZNode, service::ZClient};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::caller::CallerKey;
use super::remote::{RemoteCaller, RemoteError, RemoteFuture, RemoteServer, RemoteTools};
use crate::{
    interfaces::{ToolCall, ToolCallRequest, ToolCallResponse},
    spine::control::lifecycle::{NodeContext, RunError},
    spine::control::{
        ControlError,
        call::{CallFailure, call_while_discovering},
        serve::{answer, serve_service},
    },
};

/// How long a call keeps retrying while the service is not routable yet (a bridge that has
/// just started). A call that reached the bridge is never sent twice.
const DISCOVERY: Duration = Duration::from_secs(3);

/// Calls `iron/srv/ToolCall` services from one node, a client per service, made on first use.
pub struct RosTools {
    node: Arc<ZNode>,
    timeout: Duration,
    key: CallerKey,
    clients: Mutex<HashMap<String, Arc<ZClient<ToolCall>>>>,
}

impl RosTools {
    /// A bridge caller on `node` proving who calls with `key`; each call waits at most
    /// `timeout` for the answer.
    pub fn new(node: Arc<ZNode>, timeout: Duration, key: CallerKey) -> Self {
        Self {
            node,
            timeout,
            key,
            clients: Mutex::default(),
        }
    }

    fn client(&self, service: &str) -> Result<Arc<ZClient<ToolCall>>, ControlError> {
        let mut clients = self.clients.lock().expect("tool clients lock");
        if let Some(c) = clients.get(service) {
            return Ok(c.clone());
        }
        let client = self
            .node
            .create_client::<ToolCall>(service)
            .build()
            .map_err(|source| ControlError::Declare {
                what: format!("client of {service}"),
                source,
            })?;
        let client = Arc::new(client);
        clients.insert(service.to_string(), client.clone());
        Ok(client)
    }

    /// One call of `tool` on the bridge `service`. `Ok` holds the parsed result; `Err` the
    /// bridge's error or why the call did not complete.
    pub async fn call_service(
        &self,
        service: &str,
        tool: &str,
        arguments: &Value,
        caller: &RemoteCaller,
    ) -> Result<Value, RemoteError> {
        let client = self
            .client(service)
            .map_err(|source| RemoteError::NoClient {
                service: service.to_string(),
                source,
            })?;
        let request = ToolCallRequest {
            tool: tool.to_string(),
            arguments_json: arguments.to_string(),
            caller: caller.caller.clone(),
            task_id: caller.task_id.clone(),
            credential: self.key.credential(&caller.caller, &caller.task_id),
        };
        let response = self.round_trip(&client, service, &request).await?;
        if !response.ok {
            return Err(RemoteError::Refused {
                message: if response.error.is_empty() {
                    format!("{service} refused {tool} without saying why")
                } else {
                    response.error
                },
            });
        }
        if response.result_json.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&response.result_json).map_err(|source| RemoteError::NotJson {
            service: service.to_string(),
            tool: tool.to_string(),
            source,
        })
    }

    /// Sends the request; while the service is not routable (an error that is not a timeout,
    /// within [`DISCOVERY`]) it is sent again. A timeout is final: the request may have run.
    async fn round_trip(
        &self,
        client: &ZClient<ToolCall>,
        service: &str,
        request: &ToolCallRequest,
    ) -> Result<ToolCallResponse, RemoteError> {
        call_while_discovering(client, request, self.timeout, DISCOVERY)
            .await
            .map_err(|failure| match failure {
                CallFailure::TimedOut => RemoteError::TimedOut {
                    service: service.to_string(),
                    after: self.timeout,
                },
                CallFailure::Unreachable(detail) => RemoteError::Unreachable {
                    service: service.to_string(),
                    detail,
                },
            })
    }
}

impl RemoteTools for RosTools {
    fn call<'a>(
        &'a self,
        server: &'a RemoteServer,
        tool: &'a str,
        arguments: &'a Value,
        caller: &'a RemoteCaller,
    ) -> RemoteFuture<'a> {
        Box::pin(self.call_service(&server.service, tool, arguments, caller))
    }
}

/// Why a bridge did not run a call; its text is the response's `error`. Each bridge has
/// its own typed error (e.g. [`super::delivery::DeliveryError`]), boxed here.
pub type BridgeError = Box<dyn std::error::Error + Send + Sync>;

/// The future a [`Bridge`] call returns.
pub type BridgeFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, BridgeError>> + Send + 'a>>;

/// A native tool server: the tools it offers and how it runs one.
pub trait Bridge: Send + Sync + 'static {
    /// The tools this bridge answers to.
    fn tools(&self) -> Vec<String>;
    /// Runs `tool` with `arguments` (a JSON object) for `caller`.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        caller: &'a RemoteCaller,
    ) -> BridgeFuture<'a>;
}

/// What a bridge node prepares at `configure`: the bridge, the key its callers must prove
/// themselves with, and its node. A bridge node's `run` is [`BridgeDeps::serve`].
pub struct BridgeDeps {
    /// The bridge.
    pub bridge: Arc<dyn Bridge>,
    /// The deployment's caller key.
    pub key: CallerKey,
    /// The node it is served from.
    pub ctx: NodeContext,
}

impl BridgeDeps {
    /// Serves the bridge as `service` until `shutdown`.
    pub async fn serve(&self, service: &str, shutdown: CancellationToken) -> Result<(), RunError> {
        serve_bridge(
            &self.ctx.node,
            service,
            self.bridge.clone(),
            self.key.clone(),
            shutdown.child_token(),
        )
        .map_err(|e| RunError::new("serving the bridge", e))?;
        shutdown.cancelled().await;
        Ok(())
    }
}

/// Serves `bridge` as the `iron/srv/ToolCall` service `service` on `node` until `stop`,
/// answering only callers whose credential `key` verifies. Calls run concurrently, each in
/// its own task.
pub fn serve_bridge(
    node: &ZNode,
    service: &str,
    bridge: Arc<dyn Bridge>,
    key: CallerKey,
    stop: CancellationToken,
) -> Result<(), ControlError> {
    let what = service.to_string();
    serve_service::<ToolCall, _, _>(node, service, stop, move |req| {
        let (bridge, what, key) = (bridge.clone(), what.clone(), key.clone());
        async move {
            tokio::spawn(async move {
                let response = handle(bridge.as_ref(), &key, req.message()).await;
                if !response.ok {
                    warn!(service = %what, tool = %req.message().tool, "tool call refused: {}", response.error);
                }
                answer(req, &response, &what).await;
            });
        }
    })
}

async fn handle(
    bridge: &dyn Bridge,
    key: &CallerKey,
    request: &ToolCallRequest,
) -> ToolCallResponse {
    let refuse = |error: String| ToolCallResponse {
        ok: false,
        result_json: String::new(),
        error,
    };
    if !key.verify(&request.caller, &request.task_id, &request.credential) {
        return refuse(format!(
            "caller {:?} is not proven: its credential does not match this deployment's caller key",
            request.caller
        ));
    }
    if !bridge.tools().contains(&request.tool) {
        return refuse(format!(
            "no tool {:?} here; this bridge offers {}",
            request.tool,
            bridge.tools().join(", ")
        ));
    }
    let arguments = match serde_json::from_str::<Value>(&request.arguments_json) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return refuse("arguments_json must be a JSON object".into()),
        Err(e) => return refuse(format!("arguments_json is not JSON: {e}")),
    };
    let caller = RemoteCaller {
        caller: request.caller.clone(),
        task_id: request.task_id.clone(),
    };
    match bridge.call(&request.tool, arguments, &caller).await {
        Ok(result) => ToolCallResponse {
            ok: true,
            result_json: result.to_string(),
            error: String::new(),
        },
        Err(error) => refuse(error.to_string()),
    }
}
