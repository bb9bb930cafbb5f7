//! The console's JSON API: what the page shows (`GET /api/state`, `GET /api/nodes`) and what
//! an operator does from it (`POST /api/…`). Reads come from the log and the control plane;
//! every action goes through the same path as the `iron` CLI's (the jobs' diaries, the
//! operator topics, the lifecycle services, the review on the log), so the console adds no
//! state and no second way of doing anything.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use futures_util::future::join_all;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Shared;
use crate::core::identity;
use crate::jobs::{JobState, ops};
use crate::spine::control::lifecycle::LifecycleClient;
use crate::view::desk;
use crate::view::timeline::{TaskLog, TimelineError};
use crate::workspace::display::shown;
use crate::workspace::land::Reviewer;
use crate::workspace::review::Decision;

/// How long one control-plane request from the console may take.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);

/// An API failure: its status and what to tell the person.
type Failure = (StatusCode, String);

fn unavailable(e: impl std::fmt::Display) -> Failure {
    (StatusCode::SERVICE_UNAVAILABLE, e.to_string())
}

fn refused(e: impl std::fmt::Display) -> Failure {
    (StatusCode::BAD_REQUEST, e.to_string())
}

fn required(what: &str, value: &str) -> Result<(), Failure> {
    if value.trim().is_empty() {
        return Err(refused(format!("{what} must not be empty")));
    }
    Ok(())
}

/// `GET /api/timeline/{task}`: the task's history, as `iron task show --json` prints it (any
/// unique prefix of its id will do). Read from the log at each request.
pub(super) async fn timeline(
    State(shared): State<Arc<Shared>>,
    Path(task): Path<String>,
) -> Result<Json<Value>, Failure> {
    let tasks = TaskLog::read(&shared.log, &shared.tenant)
        .await
        .map_err(unavailable)?;
    match tasks.timeline(&task) {
        Ok(t) => Ok(Json(serde_json::to_value(t).map_err(unavailable)?)),
        Err(e @ TimelineError::NotFound(_)) => Err((StatusCode::NOT_FOUND, e.to_string())),
        Err(e) => Err(refused(e)),
    }
}

/// `GET /api/state`: the desk's bulletins, sessions, tasks, questions, sources (from MEM),
/// jobs (from their diaries) and hunks (from the review on the log), and who the console acts
/// as.
pub(super) async fn state(State(shared): State<Arc<Shared>>) -> Result<Json<Value>, Failure> {
    let mut v = {
        let mut overview = shared.overview.lock().await;
        overview.refresh(&shared.log).await.map_err(unavailable)?;
        overview.to_json()
    };
    {
        let mut desk = shared.desk.lock().await;
        desk.refresh(&shared.log).await.map_err(unavailable)?;
        v["desk"] = serde_json::to_value(desk.bulletins()).map_err(unavailable)?;
    }
    // The jobs and the bulletins they hold, from one read of the diaries.
    let (jobs, held) = shared
        .diaries(|d| (ops::summaries(d), desk::held(d, &shared.people)))
        .await
        .map_err(unavailable)?;
    v["held"] = serde_json::to_value(held).map_err(unavailable)?;
    v["jobs"] = jobs
        .iter()
        .map(|s| {
            let (on, reason) = match &s.state {
                JobState::Waiting { on } => (on.as_str(), ""),
                JobState::Parked { reason } => ("", reason.as_str()),
                _ => ("", ""),
            };
            json!({"job": s.job, "mesh": s.mesh, "flow": s.flow, "state": s.state.word(),
                   "on": on, "reason": reason, "entries": s.entries})
        })
        .collect();
    let review = shared.review().await.map_err(unavailable)?;
    v["hunks"] = review
        .hunks()
        .map(|p| {
            let (added, removed) = p.hunk.counts();
            let why = match &p.decision {
                Decision::Rejected(why) => why.as_str(),
                _ => "",
            };
            // For reading only: control characters an expert wrote are shown escaped.
            json!({"id": p.hunk.id, "task": p.task, "expert": p.expert,
                   "path": shown(&p.hunk.path), "range": shown(&p.hunk.range),
                   "file": shown(&p.hunk.meaning.summary()),
                   "decision": p.decision.word(), "note": why,
                   "governance": p.hunk.governance, "added": added, "removed": removed,
                   "patch": p.patch().split_terminator('\n').map(|l| shown(l).into_owned())
                       .collect::<Vec<_>>().join("\n")})
        })
        .collect();
    v["operator"] = shared.operator().into();
    Ok(Json(v))
}

/// `GET /api/nodes`: every managed node on the graph and its lifecycle state.
pub(super) async fn nodes(State(shared): State<Arc<Shared>>) -> Json<Value> {
    let graph = shared.control.context().graph();
    let mut names: Vec<String> = graph
        .get_service_names_and_types()
        .into_iter()
        .filter(|(name, ty)| name.ends_with("/get_state") && ty.contains("GetState"))
        .map(|(name, _)| name.trim_end_matches("/get_state").to_string())
        .collect();
    names.sort();
    names.dedup();
    let node = &shared.node;
    let states = join_all(names.iter().map(|target| async move {
        let state = match LifecycleClient::new(node, target, CONTROL_TIMEOUT) {
            Ok(client) => client
                .get_state()
                .await
                .map(|s| s.to_string())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match state {
            Ok(state) => json!({"node": target, "state": state}),
            Err(error) => json!({"node": target, "state": "unknown", "error": error}),
        }
    }))
    .await;
    Json(Value::Array(states))
}

/// The body of a job action.
#[derive(Debug, Default, Deserialize)]
pub(super) struct JobAction {
    /// The approval's name (`approve`, `reject`).
    #[serde(default)]
    name: String,
    /// A note or reason.
    #[serde(default)]
    note: Option<String>,
}

/// `POST /api/jobs/{job}/{resume|cancel|approve|reject}`.
pub(super) async fn job(
    State(shared): State<Arc<Shared>>,
    Path((job, action)): Path<(String, String)>,
    Json(body): Json<JobAction>,
) -> Result<Json<Value>, Failure> {
    let log = &shared.log;
    let done = match action.as_str() {
        "resume" => {
            let statement = shared
                .sign(identity::action::JOB_RESUME, &job, "resume")
                .await?;
            ops::resume(log, &job, body.note, statement, &shared.people).await
        }
        "cancel" => {
            let statement = shared
                .sign(identity::action::JOB_CANCEL, &job, "cancel")
                .await?;
            let reason = body
                .note
                .unwrap_or_else(|| format!("cancelled from the console by {}", shared.operator()));
            ops::cancel(log, &job, Some(reason), statement, &shared.people).await
        }
        "approve" | "reject" => {
            required("the approval's name", &body.name)?;
            let name = body.name.strip_prefix("approval:").unwrap_or(&body.name);
            let name = name.split('#').next().unwrap_or(name);
            let decision = identity::decision(action == "approve");
            let statement = shared
                .sign(
                    identity::action::JOB_APPROVE,
                    &format!("{job}/{name}"),
                    decision,
                )
                .await?;
            ops::approve(
                log,
                &job,
                name,
                action == "approve",
                body.note,
                statement,
                &shared.people,
            )
            .await
        }
        other => {
            return Err((
                StatusCode::NOT_FOUND,
                format!("no job action {other:?} (resume, cancel, approve, reject)"),
            ));
        }
    };
    done.map_err(refused)?;
    Ok(Json(json!({"job": job, "done": action})))
}

/// `POST /api/desk/{bulletin}/{release|drop}`: the editor's decision on a held bulletin (any
/// unique prefix of its id), given to every job holding it as that job's `release` approval,
/// signed as the page's operator. The note is the wording to publish instead (release) or why
/// (drop).
pub(super) async fn desk(
    State(shared): State<Arc<Shared>>,
    Path((bulletin, action)): Path<(String, String)>,
    Json(body): Json<JobAction>,
) -> Result<Json<Value>, Failure> {
    let release = match action.as_str() {
        "release" => true,
        "drop" => false,
        other => {
            return Err((
                StatusCode::NOT_FOUND,
                format!("no desk action {other:?} (release, drop)"),
            ));
        }
    };
    let held = shared.held().await.map_err(unavailable)?;
    let holders =
        desk::holding(&held, &bulletin).map_err(|e| (StatusCode::NOT_FOUND, e.to_string()))?;
    let note = body.note.filter(|n| !n.trim().is_empty());
    let decision = identity::decision(release);
    for h in &holders {
        let subject = format!("{}/{}", h.job, desk::RELEASE);
        let statement = shared
            .sign(identity::action::JOB_APPROVE, &subject, decision)
            .await?;
        ops::approve(
            &shared.log,
            &h.job,
            desk::RELEASE,
            release,
            note.clone(),
            statement,
            &shared.people,
        )
        .await
        .map_err(refused)?;
    }
    let jobs: Vec<&str> = holders.iter().map(|h| h.job.as_str()).collect();
    Ok(Json(
        json!({"bulletin": holders[0].id, "done": action, "jobs": jobs}),
    ))
}

/// The body of an answer or a correction.
#[derive(Debug, Deserialize)]
pub(super) struct OperatorText {
    /// The question answered (answers only).
    #[serde(default)]
    question_id: String,
    /// What the operator says.
    text: String,
}

/// `POST /api/tasks/{task}/{answer|interject}`: as the console's operator, to the expert
/// running the task (which refuses an operator the configuration does not name).
pub(super) async fn operator(
    State(shared): State<Arc<Shared>>,
    Path((task, action)): Path<(String, String)>,
    Json(body): Json<OperatorText>,
) -> Result<Json<Value>, Failure> {
    required("the text", &body.text)?;
    let voice = &shared.voice;
    let key = shared
        .key()
        .map_err(|why| (StatusCode::FORBIDDEN, why.to_string()))?;
    let who = key.name().to_string();
    let sent = match action.as_str() {
        "answer" => {
            required("question_id", &body.question_id)?;
            voice
                .answer(&task, &body.question_id, &key, &body.text, CONTROL_TIMEOUT)
                .await
        }
        "interject" => {
            voice
                .interject(&task, &key, &body.text, CONTROL_TIMEOUT)
                .await
        }
        other => {
            return Err((
                StatusCode::NOT_FOUND,
                format!("no task action {other:?} (answer, interject)"),
            ));
        }
    };
    sent.map_err(unavailable)?;
    Ok(Json(json!({"task": task, "done": action, "as": who})))
}

/// The body of a lifecycle request.
#[derive(Debug, Deserialize)]
pub(super) struct Transition {
    /// The node's full name (`/iron/engine`).
    node: String,
    /// `configure`, `activate`, `deactivate`, `cleanup` or `shutdown`.
    transition: String,
}

/// `POST /api/lifecycle`: one transition of one managed node.
pub(super) async fn lifecycle(
    State(shared): State<Arc<Shared>>,
    Json(body): Json<Transition>,
) -> Result<Json<Value>, Failure> {
    const LABELS: [&str; 5] = ["configure", "activate", "deactivate", "cleanup", "shutdown"];
    if !LABELS.contains(&body.transition.as_str()) {
        return Err(refused(format!(
            "no transition {:?} ({})",
            body.transition,
            LABELS.join(", ")
        )));
    }
    if !body.node.starts_with('/') {
        return Err(refused(format!(
            "{:?} is not a node's full name (/namespace/name)",
            body.node
        )));
    }
    // The console is the node that acts here (the lifecycle services are ROS 2's own, which
    // carry no signature): it checks its operator as any node checks an action.
    shared
        .sign(identity::action::LIFECYCLE, &body.node, &body.transition)
        .await?;
    let client = LifecycleClient::watching(&shared.node, &body.node, CONTROL_TIMEOUT)
        .map_err(unavailable)?;
    client
        .transition(&body.transition)
        .await
        .map_err(unavailable)?;
    let state = client.get_state().await.map_err(unavailable)?;
    Ok(Json(json!({"node": body.node, "state": state.to_string()})))
}

/// `POST /api/hunks/{hunk}/{approve|reject}`: the decision goes on the log, where the
/// task's review job (or `iron hunks apply`) takes it up.
pub(super) async fn hunk(
    State(shared): State<Arc<Shared>>,
    Path((hunk, action)): Path<(String, String)>,
) -> Result<Json<Value>, Failure> {
    let approve = match action.as_str() {
        "approve" => true,
        "reject" => false,
        other => {
            return Err((
                StatusCode::NOT_FOUND,
                format!("no hunk action {other:?} (approve, reject)"),
            ));
        }
    };
    let decision = identity::decision(approve);
    let statement = shared
        .sign(identity::action::HUNKS, &hunk, decision)
        .await?;
    let review = shared.review().await.map_err(unavailable)?;
    let reviewer = Reviewer {
        log: &shared.log,
        tenant: &shared.tenant,
        actor: format!("operator/{}", statement.operator),
    };
    reviewer
        .decide(
            &review,
            std::slice::from_ref(&hunk),
            &statement,
            &shared.people,
        )
        .await
        .map_err(refused)?;
    Ok(Json(json!({"hunk": hunk, "done": action})))
}
