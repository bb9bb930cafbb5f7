//! The gateway (`/iron/jobs/gateway`): the one process that speaks both planes. It follows
//! every diary for `expert_requested`, sends each request as an AolTask goal over ROS (to the
//! engine, which spawns the expert for the domain), and signals the task's outcome back into
//! the job. Runners never touch ROS. A request whose answer is in the diary is never sent
//! again; one that failed to reach the control plane is retried with backoff.

use crate::protocol::TaskContext;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::core::durable::EventLog;
use crate::interfaces::{AolTask, AolTaskGoal};
use crate::spine::control::{ControlError, action::ActionClient};
use crate::spine::durable::AnyLog;
use crate::spine::durable::streams::JOBS;

use super::JobError;
use crate::core::backoff::Backoff;

/// Pauses before a request that failed is asked again: 2 s, doubling, at most 64 s.
const ASK_RETRY: Backoff = Backoff::new(Duration::from_secs(2), Duration::from_secs(64));
use super::event::{Entry, JobEvent, diaries_filter, event_id, job_of_subject};
use super::ops;

/// What the gateway needs.
#[derive(Clone)]
pub struct GatewayDeps {
    /// The durable plane.
    pub log: AnyLog,
    /// Client of the action that runs experts (`/iron/engine/task`).
    pub client: Arc<ActionClient<AolTask>>,
    /// How long to wait for a goal to be accepted.
    pub send_timeout: Duration,
    /// How long an expert may take.
    pub goal_wait: Duration,
    /// How often to look for new requests.
    pub poll: Duration,
}

#[derive(Debug, Clone)]
struct Request {
    domain: String,
    instruction: String,
    not_before: Instant,
    backoff: Backoff,
}

type Key = (String, String, String); // mesh, job, signal

/// Runs until `shutdown`.
pub async fn run(deps: GatewayDeps, shutdown: CancellationToken) -> Result<(), JobError> {
    let mut pending: BTreeMap<Key, Request> = BTreeMap::new();
    let mut in_flight: HashMap<Key, ()> = HashMap::new();
    let mut tasks: JoinSet<(Key, Result<(), AskError>)> = JoinSet::new();
    let filter = diaries_filter("*");
    let mut from = 1;
    info!("gateway following every job diary for expert requests");
    loop {
        loop {
            let page = match deps.log.read(JOBS, &filter, from, 1000).await {
                Ok(p) => p,
                Err(e) => {
                    warn!("gateway: reading the diaries: {e}; retrying");
                    break;
                }
            };
            let n = page.len();
            for message in page {
                from = message.seq + 1;
                let Some((mesh, job)) = job_of_subject(&message.subject) else {
                    continue;
                };
                let Ok(entry) = serde_json::from_slice::<Entry>(&message.payload) else {
                    continue;
                };
                match entry.event {
                    JobEvent::ExpertRequested {
                        domain,
                        instruction,
                        signal,
                        ..
                    } => {
                        pending.insert(
                            (mesh.into(), job.into(), signal),
                            Request {
                                domain,
                                instruction,
                                not_before: Instant::now(),
                                backoff: ASK_RETRY,
                            },
                        );
                    }
                    JobEvent::Signal { name, .. } => {
                        pending.remove(&(mesh.into(), job.into(), name));
                    }
                    JobEvent::Done { .. } | JobEvent::Cancelled { .. } => {
                        pending.retain(|(m, j, _), _| !(m == mesh && j == job));
                    }
                    _ => {}
                }
            }
            if n < 1000 {
                break;
            }
        }
        let now = Instant::now();
        for (key, request) in &pending {
            if in_flight.contains_key(key) || request.not_before > now {
                continue;
            }
            in_flight.insert(key.clone(), ());
            let (deps, key, request) = (deps.clone(), key.clone(), request.clone());
            tasks.spawn(async move {
                let result = ask(&deps, &key, &request).await;
                (key, result)
            });
        }
        tokio::select! {
            _ = shutdown.cancelled() => {
                tasks.abort_all();
                return Ok(());
            }
            Some(done) = tasks.join_next() => {
                if let Ok((key, result)) = done {
                    in_flight.remove(&key);
                    match result {
                        Ok(()) => { pending.remove(&key); }
                        Err(e) => if let Some(r) = pending.get_mut(&key) {
                            let backoff = r.backoff.fail();
                            warn!(job = key.1, signal = key.2, "gateway: {e}; retrying in {backoff:?}");
                            r.not_before = Instant::now() + backoff;
                        },
                    }
                }
            }
            _ = tokio::time::sleep(deps.poll) => {}
        }
    }
}

/// Why one request did not get its answer signalled back (it is asked again later).
#[derive(Debug, thiserror::Error)]
enum AskError {
    #[error("sending the goal: {0}")]
    Send(#[source] ControlError),
    #[error("waiting for the expert: {0}")]
    Wait(#[source] ControlError),
    #[error("signalling the answer back: {0}")]
    Signal(#[source] JobError),
}

/// Sends one request as a goal and signals the outcome back into the job.
async fn ask(deps: &GatewayDeps, key: &Key, request: &Request) -> Result<(), AskError> {
    let (mesh, job, signal) = key;
    let goal = AolTaskGoal {
        task_id: event_id(job, &[signal, "expert_task"]).to_string(),
        session_id: String::new(),
        domain: request.domain.clone(),
        instruction: request.instruction.clone(),
        depth: 0,
        parent_task_id: String::new(),
        context_json: TaskContext {
            job: Some(job.clone()),
            mesh: Some(mesh.clone()),
            signal: Some(signal.clone()),
            ..TaskContext::default()
        }
        .to_json(),
    };
    info!(
        job,
        signal,
        domain = request.domain,
        "gateway: asking an expert"
    );
    let sent = deps
        .client
        .send(goal, deps.send_timeout)
        .await
        .map_err(AskError::Send)?;
    let outcome = deps
        .client
        .result(sent.id, deps.goal_wait)
        .await
        .map_err(AskError::Wait)?;
    let r = outcome.result;
    let answer = json!({
        "goal_status": format!("{:?}", outcome.status).to_lowercase(),
        "status": r.status,
        "text": r.text,
        "result": serde_json::from_str::<Value>(&r.result_json).unwrap_or(Value::String(r.result_json.clone())),
    });
    ops::signal(&deps.log, job, signal, answer)
        .await
        .map_err(AskError::Signal)?;
    info!(job, signal, "gateway: answer signalled back");
    Ok(())
}
