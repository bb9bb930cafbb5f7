//! The delivery bridge, `/iron/tools/delivery`: the native tool server the meshes' delivery
//! blocks name (`server: delivery`, `tool: send_message`). It is how a finished reply leaves
//! the system, so every send is recorded, and it sends nowhere it was not told it may.
//!
//! `send_message {dest, text}`:
//! - `dest` an `http://` or `https://` URL: POSTs `{"text", "dest", "caller", "task_id"}` as
//!   JSON, but only to a URL the configured allow-list admits (`IRON_DELIVERY_WEBHOOKS`,
//!   comma-separated URLs, compared parsed: scheme, host, port and path, no user information;
//!   see [`super::webhooks`]); any other URL is refused. Redirects are not followed, and a
//!   non-2xx answer is an error.
//! - anything else (`terminal`, empty, a chat handle): printed on this node's terminal as
//!   `[delivery -> <dest>] <text>`.
//!
//! Optional arguments: `delivery_id`, the sender's id for this delivery (a second send with an
//! id already in the outbox sends nothing and answers with the first record, so a retried
//! publish never goes out twice), and `bulletin`, a JSON object recorded with the send (its
//! `published_at` is set to the send time when absent).
//!
//! Each successful send is appended to the outbox (`<state_dir>/outbox.jsonl`, one JSON object
//! per line: when, where, what, who asked) and synced to disk before the call returns.

use crate::spine::control::lifecycle::RunError;
use crate::tools::CallerKey;
use std::{
    collections::HashMap,
    io::Write,
    path::PathBuf,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde_json::{Value, json};
use thiserror::Error;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::{
    remote::RemoteCaller,
    ros::{Bridge, BridgeDeps, BridgeFuture},
    webhooks::{AllowList, WebhookError},
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
    webhooks: AllowList,
    http: reqwest::Client,
    /// Records of the outbox that carry a `delivery_id`, by that id; the lock also makes the
    /// bridge the outbox's one writer at a time.
    sent: tokio::sync::Mutex<HashMap<String, Value>>,
}

/// Why the bridge could not be set up, or a send did not happen (or was not recorded).
#[derive(Debug, Error)]
pub enum DeliveryError {
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// The outbox exists but could not be read.
    #[error("reading the outbox {}: {source}", path.display())]
    OutboxRead {
        /// The outbox.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An argument of `send_message` is missing or of the wrong kind.
    #[error("{0}")]
    BadArgument(String),
    /// The destination is a URL the allow-list does not admit.
    #[error("{0}; the allow-list is {WEBHOOKS_ENV}")]
    NotAllowed(#[from] WebhookError),
    /// The POST did not complete.
    #[error("posting to {dest}: {source}")]
    Post {
        /// The destination.
        dest: String,
        /// The cause.
        #[source]
        source: reqwest::Error,
    },
    /// The webhook answered with a redirect, which is not followed.
    #[error("{dest} answered {status}, a redirect, which is not followed")]
    Redirect {
        /// The destination.
        dest: String,
        /// Its answer.
        status: reqwest::StatusCode,
    },
    /// The webhook answered with an error status.
    #[error("{dest} answered {status}")]
    Status {
        /// The destination.
        dest: String,
        /// Its answer.
        status: reqwest::StatusCode,
    },
    /// Sent, but the outbox could not record it.
    #[error("sent to {dest} but could not record it in the outbox: {source}")]
    Record {
        /// The destination.
        dest: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Longest `delivery_id` accepted.
const MAX_DELIVERY_ID: usize = 200;

impl Delivery {
    /// Delivers to the terminal and to the webhooks `webhooks` allows, recording into `outbox`.
    pub fn new(
        outbox: PathBuf,
        webhooks: AllowList,
        timeout: Duration,
    ) -> Result<Self, DeliveryError> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(DeliveryError::Client)?;
        let sent = read_sent(&outbox).map_err(|source| DeliveryError::OutboxRead {
            path: outbox.clone(),
            source,
        })?;
        Ok(Self {
            outbox,
            webhooks,
            http,
            sent: tokio::sync::Mutex::new(sent),
        })
    }

    async fn send(&self, arguments: Value, caller: &RemoteCaller) -> Result<Value, DeliveryError> {
        let bad = |what: &str| DeliveryError::BadArgument(what.to_string());
        let text = arguments
            .get("text")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("send_message needs `text` (a string)"))?;
        let dest = match arguments.get("dest") {
            None | Some(Value::Null) => "terminal",
            Some(Value::String(s)) if s.trim().is_empty() => "terminal",
            Some(Value::String(s)) => s.trim(),
            Some(_) => return Err(bad("`dest` must be a string")),
        };
        let delivery_id = match arguments.get("delivery_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(Value::String(s))
                if s.len() <= MAX_DELIVERY_ID && !s.chars().any(char::is_control) =>
            {
                Some(s.trim().to_string())
            }
            Some(_) => {
                return Err(bad(&format!(
                    "`delivery_id` must be a string of at most {MAX_DELIVERY_ID} characters"
                )));
            }
        };
        let bulletin = match arguments.get("bulletin") {
            None | Some(Value::Null) => None,
            Some(Value::Object(b)) => Some(b.clone()),
            Some(_) => return Err(bad("`bulletin` must be a JSON object")),
        };
        // One send at a time: the duplicate check and the outbox append must not interleave.
        let mut sent = self.sent.lock().await;
        if let Some(id) = &delivery_id
            && let Some(first) = sent.get(id)
        {
            info!(delivery_id = %id, "already sent; not sending again");
            return Ok(json!({
                "delivered": true, "already_sent": true, "channel": first["channel"],
                "dest": first["dest"], "ts_ms": first["ts_ms"],
            }));
        }
        let channel = if dest.starts_with("http://") || dest.starts_with("https://") {
            let url = self.webhooks.check(dest)?;
            let body = json!({
                "text": text, "dest": dest, "caller": caller.caller, "task_id": caller.task_id,
            });
            let response = self
                .http
                .post(url)
                .json(&body)
                .send()
                .await
                .map_err(|source| DeliveryError::Post {
                    dest: dest.into(),
                    source,
                })?;
            let status = response.status();
            if status.is_redirection() {
                return Err(DeliveryError::Redirect {
                    dest: dest.into(),
                    status,
                });
            }
            if !status.is_success() {
                return Err(DeliveryError::Status {
                    dest: dest.into(),
                    status,
                });
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
        let mut record = json!({
            "ts_ms": ts, "channel": channel, "dest": dest, "text": text,
            "caller": caller.caller, "task_id": caller.task_id,
        });
        if let Some(id) = &delivery_id {
            record["delivery_id"] = json!(id);
        }
        if let Some(mut b) = bulletin {
            b.entry("published_at")
                .or_insert_with(|| json!(rfc3339_ms(ts)));
            record["bulletin"] = Value::Object(b);
        }
        self.record(&record)
            .map_err(|source| DeliveryError::Record {
                dest: dest.into(),
                source,
            })?;
        if let Some(id) = delivery_id {
            sent.insert(id, record);
        }
        Ok(json!({"delivered": true, "channel": channel, "dest": dest, "ts_ms": ts}))
    }

    fn record(&self, record: &Value) -> std::io::Result<()> {
        if let Some(dir) = self.outbox.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.outbox)?;
        // One write of the whole line: a reader never sees part of a record (`writeln!`
        // wrote a record in pieces).
        file.write_all(format!("{record}\n").as_bytes())?;
        file.sync_data()
    }
}

/// The outbox's records that carry a `delivery_id`, by id (a missing outbox is empty; a line
/// that is not JSON, e.g. one cut short by a crash, is skipped).
fn read_sent(outbox: &std::path::Path) -> std::io::Result<HashMap<String, Value>> {
    let text = match std::fs::read_to_string(outbox) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(e),
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| Some((r.get("delivery_id")?.as_str()?.to_string(), r)))
        .collect())
}

/// Milliseconds since the Unix epoch as RFC 3339 UTC, to the second.
fn rfc3339_ms(ms: u64) -> String {
    chrono::DateTime::from_timestamp((ms / 1000) as i64, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
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
        Box::pin(async move { Ok(self.send(arguments, caller).await?) })
    }
}

/// The delivery bridge as a managed node: `configure` reads the configuration, `run` serves
/// [`SERVICE`] while active.
#[derive(Debug, Default)]
pub struct DeliveryNode;

impl ManagedNode for DeliveryNode {
    type Deps = BridgeDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<BridgeDeps, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let outbox = config.state_path(std::path::Path::new("outbox.jsonl"));
        let webhooks = AllowList::parse(&std::env::var(WEBHOOKS_ENV).unwrap_or_default())
            .map_err(|e| CallbackError::refused_while(WEBHOOKS_ENV, e))?;
        info!(
            "delivering to the terminal and {} webhook prefix(es); outbox {}",
            webhooks.len(),
            outbox.display()
        );
        let bridge = Delivery::new(outbox, webhooks, Duration::from_secs(10))
            .map_err(CallbackError::refused_by)?;
        let key = CallerKey::open(&config.state_dir).map_err(CallbackError::refused_by)?;
        Ok(BridgeDeps {
            bridge: Arc::new(bridge),
            key,
            ctx: ctx.clone(),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<BridgeDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        deps.serve(SERVICE, shutdown).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller() -> RemoteCaller {
        RemoteCaller {
            caller: "newsroom/publisher".into(),
            task_id: "t1".into(),
        }
    }

    #[test]
    fn offers_what_the_compiler_lets_a_mesh_declare() {
        let dir = tempfile::tempdir().unwrap();
        let bridge = Delivery::new(
            dir.path().join("outbox.jsonl"),
            AllowList::default(),
            Duration::from_secs(1),
        )
        .unwrap();
        let declarable: Vec<String> = crate::aem::native_tools("delivery")
            .unwrap()
            .iter()
            .map(|t| t.to_string())
            .collect();
        assert_eq!(bridge.tools(), declarable);
        assert_eq!(SERVICE, "/iron/tools/delivery");
    }

    #[tokio::test]
    async fn a_delivery_id_is_sent_once_even_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = dir.path().join("outbox.jsonl");
        let bridge =
            Delivery::new(outbox.clone(), AllowList::default(), Duration::from_secs(1)).unwrap();
        let args = json!({
            "dest": "terminal", "text": "[b-1] bulletin", "delivery_id": "b-1",
            "bulletin": {"id": "b-1", "claims": []}
        });
        let first = bridge.send(args.clone(), &caller()).await.unwrap();
        assert_eq!(first["delivered"], true);
        assert!(first.get("already_sent").is_none());
        let again = bridge.send(args.clone(), &caller()).await.unwrap();
        assert_eq!(again["already_sent"], true);
        // A new bridge (a restarted node) reads what was sent from the outbox.
        let restarted =
            Delivery::new(outbox.clone(), AllowList::default(), Duration::from_secs(1)).unwrap();
        let third = restarted.send(args, &caller()).await.unwrap();
        assert_eq!(third["already_sent"], true);
        let text = std::fs::read_to_string(&outbox).unwrap();
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(records.len(), 1, "{text}");
        assert_eq!(records[0]["delivery_id"], "b-1");
        assert_eq!(records[0]["bulletin"]["id"], "b-1");
        assert!(
            records[0]["bulletin"]["published_at"]
                .as_str()
                .unwrap()
                .ends_with('Z')
        );
        // Without an id, every send goes out; a bulletin must be an object.
        let plain = json!({"dest": "terminal", "text": "hello"});
        bridge.send(plain.clone(), &caller()).await.unwrap();
        bridge.send(plain, &caller()).await.unwrap();
        assert_eq!(std::fs::read_to_string(&outbox).unwrap().lines().count(), 3);
        let bad = json!({"text": "x", "bulletin": "not an object"});
        assert!(matches!(
            bridge.send(bad, &caller()).await,
            Err(DeliveryError::BadArgument(why)) if why.contains("JSON object")
        ));
    }
}
