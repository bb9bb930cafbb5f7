//! The trigger node (`/iron/jobs/triggers`): runs the catalog's source and webhook triggers
//! (schedule triggers are the clock's). At start it reads every `source_changed` event from the
//! beginning of the log, so it knows what each source shows and every item ever seen, and
//! fires what had not fired; then it follows the log. Webhooks are served on `listen` only
//! when some trigger declares one.

use crate::protocol::payload::SourceChanged;
use crate::spine::control::lifecycle::RunError;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::Trigger;
use super::sources::{Change, Watch};
use super::webhook::{self, Hooks};
use crate::aem::TriggerOn;
use crate::core::backoff::Backoff;
use crate::core::config::Config;
use crate::core::durable::EventLog;
use crate::core::envelope::{Envelope, MEM_SUBJECT_ROOT, now_ms};
use crate::core::event_kind::EventKind;
use crate::spine::control::lifecycle::{CallbackError, ManagedNode, NodeContext};
use crate::spine::durable::AnyLog;
use crate::spine::durable::streams::MEM;
use crate::tools::env::expand;

/// Where webhooks are served unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7480";
/// Environment variable naming the webhook address.
pub const LISTEN_ENV: &str = "IRON_WEBHOOK_LISTEN";
/// How often the log is read for new source changes.
const POLL: Duration = Duration::from_millis(200);

/// The trigger node.
#[derive(Debug, Default)]
pub struct TriggerNode {
    /// Webhook address (`--listen`); `IRON_WEBHOOK_LISTEN` or [`DEFAULT_LISTEN`] otherwise.
    pub listen: Option<SocketAddr>,
}

/// What `configure` prepared.
pub struct TriggerDeps {
    log: AnyLog,
    tenant: String,
    /// Source triggers, each with an empty watch (rebuilt from the log at every activation).
    watched: Vec<(Trigger, Watch)>,
    /// Webhook triggers, with where they are served and the socket bound at `configure`.
    webhooks: Option<Webhooks>,
}

struct Webhooks {
    hooks: Arc<Hooks>,
    addr: SocketAddr,
    bound: tokio::sync::Mutex<Option<tokio::net::TcpListener>>,
}

impl ManagedNode for TriggerNode {
    type Deps = TriggerDeps;

    async fn configure(&self, _ctx: &NodeContext) -> Result<TriggerDeps, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let catalog = crate::aem::read_state_catalog(&config).map_err(CallbackError::refused_by)?;
        let log = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        let env: crate::tools::env::EnvMap = std::env::vars().collect();
        let mut watched = Vec::new();
        let mut hooks = BTreeMap::new();
        for t in Trigger::all(&catalog) {
            match &t.entry.on {
                TriggerOn::Sources {
                    sources,
                    settle_secs,
                } => watched.push((t.clone(), Watch::new(sources, *settle_secs))),
                TriggerOn::Webhook { token } => {
                    // Fail closed: a webhook whose secret is not set is not served at all.
                    let secret = expand(token, &env)
                        .ok()
                        .filter(|s| !s.is_empty())
                        .ok_or_else(|| {
                            CallbackError::refused(format!(
                                "webhook trigger {}: its token {token} is not set in the environment",
                                t.label()
                            ))
                        })?;
                    hooks.insert((t.mesh.clone(), t.name.clone()), (t.clone(), secret));
                }
                TriggerOn::Schedule { .. } => {}
            }
        }
        let webhooks = if hooks.is_empty() {
            None
        } else {
            let addr = match self.listen {
                Some(a) => a,
                None => std::env::var(LISTEN_ENV)
                    .unwrap_or_else(|_| DEFAULT_LISTEN.into())
                    .parse()
                    .map_err(|e| CallbackError::refused_while(LISTEN_ENV, e))?,
            };
            let listener = bind(addr).await.map_err(CallbackError::refused_by)?;
            Some(Webhooks {
                hooks: Arc::new(Hooks {
                    hooks,
                    log: log.clone(),
                    tenant: config.tenant.clone(),
                }),
                addr,
                bound: tokio::sync::Mutex::new(Some(listener)),
            })
        };
        info!(
            "{} source trigger(s); {}",
            watched.len(),
            match &webhooks {
                Some(w) => format!(
                    "{} webhook trigger(s) at http://{}/hooks/<mesh>/<trigger>",
                    w.hooks.hooks.len(),
                    w.addr
                ),
                None => "no webhook triggers".into(),
            }
        );
        Ok(TriggerDeps {
            log,
            tenant: config.tenant,
            watched,
            webhooks,
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<TriggerDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let server = match &deps.webhooks {
            Some(w) => {
                let listener = match w.bound.lock().await.take() {
                    Some(l) => l,
                    None => bind(w.addr)
                        .await
                        .map_err(|e| RunError::new("listening for webhooks", e))?,
                };
                Some(tokio::spawn(webhook::serve(
                    listener,
                    w.hooks.clone(),
                    shutdown.child_token(),
                )))
            }
            None => None,
        };
        follow(&deps, &shutdown).await;
        if let Some(s) = server {
            match s.await {
                Ok(Err(e)) => warn!("webhook server: {e}"),
                Err(e) => warn!("webhook server: {e}"),
                Ok(Ok(())) => {}
            }
        }
        Ok(())
    }
}

/// The webhook endpoint's address could not be bound.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen for webhooks on {addr}: {source} (set {LISTEN_ENV})")]
struct BindError {
    addr: SocketAddr,
    #[source]
    source: std::io::Error,
}

async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, BindError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| BindError { addr, source })
}

/// Follows `source_changed` from the start of the log until `stop`, firing each source
/// trigger's groups as they settle.
async fn follow(deps: &TriggerDeps, stop: &CancellationToken) {
    if deps.watched.is_empty() {
        stop.cancelled().await;
        return;
    }
    let mut watched = deps.watched.clone();
    let filter = format!("{MEM_SUBJECT_ROOT}.{}.perception.>", deps.tenant);
    let mut from = 1;
    loop {
        loop {
            let page = match deps.log.read(MEM, &filter, from, 500).await {
                Ok(p) => p,
                Err(e) => {
                    warn!("triggers: reading source changes: {e}; retrying");
                    break;
                }
            };
            let n = page.len();
            for message in page {
                from = message.seq + 1;
                let Ok(event) = serde_json::from_slice::<Envelope>(&message.payload) else {
                    continue;
                };
                if event.kind != EventKind::SourceChanged {
                    continue;
                }
                let changed = match event.payload::<SourceChanged>() {
                    Ok(changed) => changed,
                    Err(e) => {
                        warn!("{e}; no trigger fires on it");
                        continue;
                    }
                };
                let mesh = changed.mesh.clone();
                let change = Change::of(event.ts, changed);
                for (trigger, watch) in &mut watched {
                    if mesh != trigger.mesh {
                        continue;
                    }
                    if let Some(firing) = watch.apply(change.clone()) {
                        fire(deps, trigger, firing).await;
                    }
                }
            }
            if n < 500 {
                break;
            }
        }
        let now = now_ms();
        let mut next = now + POLL.as_millis() as u64;
        for (trigger, watch) in &mut watched {
            if let Some(firing) = watch.due(now) {
                fire(deps, trigger, firing).await;
            }
            if let Some(at) = watch.due_at() {
                next = next.min(at.max(now + 10));
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(next - now)) => {}
        }
    }
}

/// Pauses between attempts to start a fired trigger's job.
const FIRE_RETRY: Backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(2));

async fn fire(deps: &TriggerDeps, trigger: &Trigger, firing: super::sources::Firing) {
    let what = firing.new.join(",");
    let summary = format!("{} new item(s)", firing.new.len());
    // A failed start is retried: the group stays due until its job is on the log.
    for attempt in 1..=5u32 {
        match trigger
            .fire(
                &deps.log,
                &deps.tenant,
                &what,
                firing.fired.clone(),
                &summary,
            )
            .await
        {
            Ok(_) => return,
            Err(e) => {
                warn!(trigger = %trigger.label(), attempt, "could not start the job: {e}");
                tokio::time::sleep(FIRE_RETRY.delay(attempt)).await;
            }
        }
    }
    warn!(trigger = %trigger.label(), "gave up starting a job for {summary}; a restart of the trigger node tries again");
}
