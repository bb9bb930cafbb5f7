//! Webhook triggers: `POST /hooks/<mesh>/<trigger>` with `Authorization: Bearer <token>` and a
//! JSON body (at most [`MAX_BODY`] bytes) starts the trigger's flow with the body as
//! `input.webhook`. The job id is computed from the `Idempotency-Key` header when the caller
//! sends one, else from the body, so a retried delivery starts nothing new. Answers: 202 with
//! `{"job", "started"}`; 401 without the right token; 404 for a hook nobody declared; 400 for
//! a body that is not JSON; 413 past the size limit; 503 when the job could not be written.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::{
    Json, Router,
    body::Bytes,
    extract::{DefaultBodyLimit, Path, State},
    http::{HeaderMap, StatusCode},
    routing::post,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::Trigger;
use crate::core::token::same;
use crate::spine::durable::AnyLog;

/// Largest body accepted.
pub const MAX_BODY: usize = 1024 * 1024;
/// Longest `Idempotency-Key` accepted.
const MAX_KEY: usize = 200;

/// The declared webhooks, each with its token (already read from the environment).
pub struct Hooks {
    /// `(mesh, trigger)` → the trigger and the token callers must present.
    pub hooks: BTreeMap<(String, String), (Trigger, String)>,
    /// Where jobs are started.
    pub log: AnyLog,
    /// Tenant of the `trigger_fired` events.
    pub tenant: String,
}

type Reply = (StatusCode, Json<Value>);

fn reply(status: StatusCode, body: Value) -> Reply {
    (status, Json(body))
}

/// The HTTP routes for `hooks`.
pub fn router(hooks: Arc<Hooks>) -> Router {
    Router::new()
        .route("/hooks/{mesh}/{trigger}", post(receive))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(hooks)
}

/// Serves `router(hooks)` on `listener` until `stop`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    hooks: Arc<Hooks>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    axum::serve(listener, router(hooks))
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
}

async fn receive(
    State(hooks): State<Arc<Hooks>>,
    Path((mesh, trigger)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Reply {
    let Some((hook, token)) = hooks.hooks.get(&(mesh.clone(), trigger.clone())) else {
        return reply(
            StatusCode::NOT_FOUND,
            json!({"error": format!("no webhook trigger {mesh}/{trigger}")}),
        );
    };
    let presented = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if !same(presented.as_bytes(), token.as_bytes()) {
        warn!(trigger = %hook.label(), "webhook refused: missing or wrong bearer token");
        return reply(
            StatusCode::UNAUTHORIZED,
            json!({"error": "send the trigger's token as `Authorization: Bearer <token>`"}),
        );
    }
    let payload: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                return reply(
                    StatusCode::BAD_REQUEST,
                    json!({"error": format!("the body is not JSON: {e}")}),
                );
            }
        }
    };
    let what = match headers.get("idempotency-key").and_then(|v| v.to_str().ok()) {
        Some(key) if !key.is_empty() && key.len() <= MAX_KEY => format!("key:{key}"),
        Some(_) => {
            return reply(
                StatusCode::BAD_REQUEST,
                json!({"error": format!("Idempotency-Key must be 1 to {MAX_KEY} visible characters")}),
            );
        }
        None => format!("body:{}", hex::encode(Sha256::digest(&body))),
    };
    match hook
        .fire(
            &hooks.log,
            &hooks.tenant,
            &what,
            json!({"webhook": payload}),
            "webhook call",
        )
        .await
    {
        Ok(started) => reply(
            StatusCode::ACCEPTED,
            json!({"job": hook.job_id(&what), "started": started.is_some()}),
        ),
        Err(e) => {
            warn!(trigger = %hook.label(), "webhook: could not start the job: {e}");
            reply(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": format!("could not start the job: {e}")}),
            )
        }
    }
}
