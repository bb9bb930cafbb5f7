//! Hunk decisions over ROS 2: the service `iron/srv/DecideHunks` at [`DECIDE_SERVICE`], so a
//! person with the stock tools decides what an expert changed:
//! `ros2 service call /iron/workspace/decide_hunks iron/srv/DecideHunks "{hunks: [<id>],
//! approve: true, operator: ana, proof: <proof>}"`, the proof printed by `iron operator sign
//! hunks.decide "<id>" approved` (the operator's signature: nothing is decided without it).
//! It decides exactly as `iron hunks approve|reject` does ([`super::land::Reviewer::decide`]).
//! Served by the jobs gateway's process (see `crate::spine::control::lifecycle::Both`): the one
//! process on both planes.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::display::shown;
use super::land::{Reviewer, read_review, record_refused};
use crate::core::config::Config;
use crate::core::identity::{Authority, Statement, action};
use crate::interfaces::{DecideHunks, DecideHunksRequest, DecideHunksResponse};
use crate::spine::control::lifecycle::{CallbackError, ManagedNode, NodeContext, RunError};
use crate::spine::control::serve::{answer, serve_service};
use crate::spine::durable::AnyLog;

/// Where the service is.
pub const DECIDE_SERVICE: &str = "/iron/workspace/decide_hunks";

/// The longest hunk list one request may carry.
const MAX_HUNKS: usize = 1000;

/// Serves [`DECIDE_SERVICE`] while active.
#[derive(Debug, Default)]
pub struct DecideService;

/// What `configure` opened.
pub struct DecideDeps {
    log: AnyLog,
    tenant: String,
    people: Authority,
    node: Arc<hiroz::node::ZNode>,
}

impl ManagedNode for DecideService {
    type Deps = DecideDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<DecideDeps, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let log = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        Ok(DecideDeps {
            log,
            people: Authority::new(&config.state_dir, &config.operators),
            tenant: config.tenant,
            node: ctx.node.clone(),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<DecideDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let served = deps.clone();
        serve_service::<DecideHunks, _, _>(
            &deps.node,
            DECIDE_SERVICE,
            shutdown.child_token(),
            move |req| {
                let deps = served.clone();
                async move {
                    let response = decide(&deps, req.message()).await;
                    if !response.ok {
                        warn!("hunk decision refused: {}", response.error);
                        let operator = req.message().operator.trim();
                        if let Err(e) = record_refused(
                            &deps.log,
                            &deps.tenant,
                            &format!("node{DECIDE_SERVICE}"),
                            "hunk decision",
                            operator,
                            &response.error,
                        )
                        .await
                        {
                            warn!("recording the refusal: {e}");
                        }
                    }
                    answer(req, &response, DECIDE_SERVICE).await;
                }
            },
        )
        .map_err(|e| RunError::new("serving hunk decisions", e))?;
        info!("deciding hunks at {DECIDE_SERVICE}");
        shutdown.cancelled().await;
        Ok(())
    }
}

async fn decide(deps: &DecideDeps, req: &DecideHunksRequest) -> DecideHunksResponse {
    let refuse = |error: String| DecideHunksResponse {
        ok: false,
        error,
        decided: Vec::new(),
    };
    let operator = req.operator.trim();
    if operator.is_empty() || operator.len() > 64 || operator.chars().any(char::is_control) {
        return refuse("name the operator who decides (1 to 64 printable characters)".into());
    }
    if req.hunks.is_empty() || req.hunks.len() > MAX_HUNKS {
        return refuse(format!("name 1 to {MAX_HUNKS} hunks (`iron hunks list`)"));
    }
    let word = crate::core::identity::decision(req.approve);
    let statement = match Statement::from_proof(
        action::HUNKS,
        &req.hunks.join(" "),
        word,
        operator,
        &req.proof,
    ) {
        Ok(s) => s,
        Err(e) => return refuse(e.to_string()),
    };
    let review = match read_review(&deps.log, &deps.people).await {
        Ok(r) => r,
        Err(e) => return refuse(e.to_string()),
    };
    let reviewer = Reviewer {
        log: &deps.log,
        tenant: &deps.tenant,
        actor: format!("operator/{operator}"),
    };
    match reviewer
        .decide(&review, &req.hunks, &statement, &deps.people)
        .await
    {
        Ok(decided) => DecideHunksResponse {
            ok: true,
            error: String::new(),
            decided: decided
                .iter()
                .map(|p| format!("{} {word} {}", p.hunk.id, shown(&p.hunk.path)))
                .collect(),
        },
        Err(e) => refuse(e.to_string()),
    }
}
