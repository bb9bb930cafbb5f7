//! The delivery bridge, `/iron/tools/delivery`: the native tool server the meshes' delivery
//! blocks name (`server: delivery`, `tool: send_message`). It is how a finished reply leaves
//! the system, so every send is recorded, and it sends nowhere it was not told it may.
//!
//! `send_message {dest, text}`:
//! - `dest` an `http://` or `https://` URL: POSTs `{"text", "dest", "caller", "task_id"}` as
//!   JSON, but only to a URL that starts with one of the configured webhook prefixes
//!   (`IRON_DELIVERY_WEBHOOKS`, comma-separated); any other URL is refused. A non-2xx answer
//!   is an error.
//! - anything else (`terminal`, empty, a chat handle): printed on this node's terminal as
//!   `[delivery -> <dest>] <text>`.
//!
//! Each successful send is appended to the outbox (`<state_dir>/outbox.jsonl`, one JSON object
//! per line: when, where, what, who asked) before the call returns.

use std::{
    io::Write,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::{
    remote::RemoteCaller,
    ros::{Bridge, BridgeFuture, serve_bridge},
};
use crate::{
    core::config::Config,
    spine::control::lifecycle::{CallbackError, ManagedNode, NodeContext},
};

/// The service (and node) name of the delivery bridge.
pub const SERVICE: &str = "/iron/tools/delivery";
/// The one tool it offers.
pub const SEND_MESSAGE: &str = "send_message";
/// Environment variable listing the URL prefixes webhooks may be sent to.
pub const WEBHOOKS_ENV: &str = "IRON_DELIVERY_WEBHOOKS";

/// The bridge's behaviour, independent of ROS.
pub struct Delivery {
    outbox: PathBuf,
    webhooks: Vec<String>,
    http: reqwest::Client,
    write: Mutex<()>,
}

impl Delivery {
    /// Delivers to the terminal and to webhooks under `webhooks`, recording into `outbox`.
    pub fn new(outbox: PathBuf, webhooks: Vec<String>, timeout: Duration) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Self {
            outbox,
            webhooks,
            http,
            write: Mutex::new(()),
        })
    }

    /// The webhook prefixes from a comma-separated list (empty entries ignored).
    pub fn parse_webhooks(list: &str) -> Vec<String> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    async fn send(&self, arguments: Value, caller: &RemoteCaller) -> Result<Value, String> {
        let text = arguments
            .get("text")
            .and_then(Value::as_str)
            .ok_or("send_message needs `text` (a string)")?;
        let dest = match arguments.get("dest") {
            None | Some(Value::Null) => "terminal",
            Some(Value::String(s)) if s.trim().is_empty() => "terminal",
            Some(Value::String(s)) => s.trim(),
            Some(_) => return Err("`dest` must be a string".into()),
        };
        let channel = if dest.starts_with("http://") || dest.starts_with("https://") {
            if !self.webhooks.iter().any(|p| dest.starts_with(p.as_str())) {
                return Err(format!(
                    "{dest} is not an allowed webhook; allowed prefixes come from {WEBHOOKS_ENV} ({})",
                    if self.webhooks.is_empty() {
                        "none set".to_string()
                    } else {
                        self.webhooks.join(", ")
                    }
                ));
            }
            let body = json!({
                "text": text, "dest": dest, "caller": caller.caller, "task_id": caller.task_id,
            });
            let response = self
                .http
                .post(dest)
                .json(&body)
                .send()
                .await
                .map_err(|e| format!("posting to {dest}: {e}"))?;
            if !response.status().is_success() {
                return Err(format!("{dest} answered {}", response.status()));
            }
            "webhook"
        } else {
            println!("[delivery -> {dest}] {text}");
            "terminal"
        };
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let record = json!({
            "ts_ms": ts, "channel": channel, "dest": dest, "text": text,
            "caller": caller.caller, "task_id": caller.task_id,
        });
        self.record(&record)
            .map_err(|e| format!("sent to {dest} but could not record it in the outbox: {e}"))?;
        Ok(json!({"delivered": true, "channel": channel, "dest": dest}))
    }

    fn record(&self, record: &Value) -> std::io::Result<()> {
        let _one_writer = self.write.lock().expect("outbox lock");
        if let Some(dir) = self.outbox.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.outbox)?;
        writeln!(file, "{record}")?;
        file.sync_data()
    }
}

impl Bridge for Delivery {
    fn tools(&self) -> Vec<String> {
        vec![SEND_MESSAGE.to_string()]
    }

    fn call<'a>(
        &'a self,
        _tool: &'a str,
        arguments: Value,
        caller: &'a RemoteCaller,
    ) -> BridgeFuture<'a> {
        Box::pin(self.send(arguments, caller))
    }
}

/// The delivery bridge as a managed node: `configure` reads the configuration, `run` serves
/// [`SERVICE`] while active.
#[derive(Debug, Default)]
pub struct DeliveryNode;

/// What `configure` prepared.
pub struct DeliveryDeps {
    bridge: Arc<Delivery>,
    ctx: NodeContext,
}

impl ManagedNode for DeliveryNode {
    type Deps = DeliveryDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<DeliveryDeps, CallbackError> {
        let config = Config::load().map_err(|e| CallbackError::Failure(e.to_string()))?;
        let outbox = config.state_path(std::path::Path::new("outbox.jsonl"));
        let webhooks = Delivery::parse_webhooks(&std::env::var(WEBHOOKS_ENV).unwrap_or_default());
        info!(
            "delivering to the terminal and {} webhook prefix(es); outbox {}",
            webhooks.len(),
            outbox.display()
        );
        let bridge = Delivery::new(outbox, webhooks, Duration::from_secs(10))
            .map_err(CallbackError::Failure)?;
        Ok(DeliveryDeps {
            bridge: Arc::new(bridge),
            ctx: ctx.clone(),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<DeliveryDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), String> {
        serve_bridge(
            &deps.ctx.node,
            SERVICE,
            deps.bridge.clone(),
            shutdown.child_token(),
        )
        .map_err(|e| e.to_string())?;
        shutdown.cancelled().await;
        Ok(())
    }
}
