//! Running one job: read its diary, replay its flow from the top against it, and write how the
//! run ended (done, waiting, parked). Every write goes through the runner's fence.

use std::sync::Arc;

use serde_json::Value;
use tracing::{info, warn};

use crate::spine::durable::AnyLog;

use super::JobError;
use super::ctx::{Ctx, Exit};
use super::event::{JobEvent, event_id};
use super::flow::{Flow, Registry};
use super::journal::{DiaryWriter, Fence, JobState, read_diary, started_of, state_of};
use super::people::checked;
use super::python::PythonFlows;
use crate::core::identity::Authority;

/// Where flows come from: Rust flows registered in the binary, then Python flows on disk, then
/// the built-in flows any role may start (a mesh's own flow of the same name wins).
#[derive(Clone, Default)]
pub struct Flows {
    /// Rust flows.
    pub registry: Registry,
    /// Python flows (`aem/<mesh>/skills/<role>/flows/<flow>.py`), when configured.
    pub python: Option<PythonFlows>,
}

/// What one run of a job did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// Where the job stands after the run.
    pub state: JobState,
    /// Steps executed (not replayed) in this run.
    pub steps_run: u64,
}

/// Runs (or replays) one job until it returns, waits or parks.
/// Only the approvals, resumes and cancels `authority` takes are read
/// ([`super::people::checked`]).
pub async fn run_job(
    log: &AnyLog,
    flows: &Flows,
    authority: &Authority,
    fence: &Fence,
    mesh: &str,
    job: &str,
) -> Result<RunReport, JobError> {
    let read =
        async || Ok::<_, JobError>(checked(job, read_diary(log, mesh, job).await?, authority));
    let diary = read().await?;
    let state = state_of(&diary);
    let settled = |state| RunReport {
        state,
        steps_run: 0,
    };
    if state.is_settled() || state == JobState::Unknown {
        return Ok(settled(state));
    }
    let Some((_, role, flow_name, input, _)) = started_of(&diary) else {
        return Ok(settled(state));
    };
    let name = format!("{mesh}/{role}/{flow_name}");
    // Take the job for this lease epoch before anything else: a runner of an earlier epoch
    // (paused past its lease) can no longer write to it. What it wrote before is read again.
    let mut writer = DiaryWriter::new(log.clone(), mesh, job, &diary, fence.clone());
    let (diary, writer) = if writer.claim().await? {
        let diary = read().await?;
        let writer = DiaryWriter::new(log.clone(), mesh, job, &diary, fence.clone());
        (diary, writer)
    } else {
        (diary, writer)
    };
    let parked_before = diary
        .iter()
        .filter(|s| matches!(s.entry.event, JobEvent::Parked { .. }))
        .count();
    let mut ctx = Ctx::new(job, &diary, writer);
    let outcome = match flow_for(flows, &name) {
        Some(FlowRef::Rust(flow)) => flow.run(&mut ctx, input).await,
        Some(FlowRef::Python(python)) => python.run(&mut ctx, mesh, &role, &flow_name, input).await,
        None => Err(Exit::Parked {
            reason: format!(
                "flow {name} is not known to this runner (no Rust flow registered, no flows/{flow_name}.py); deploy it and resume, or cancel"
            ),
        }),
    };
    let steps_run = ctx.steps_run();
    let (id, event, state) = match outcome {
        Ok(output) => {
            info!(job, "job done");
            (
                event_id(job, &["done"]),
                JobEvent::Done {
                    output: output.clone(),
                },
                JobState::Done { output },
            )
        }
        Err(Exit::Waiting { on }) => {
            info!(job, on, "job waiting");
            (
                event_id(job, &["waiting", &on]),
                JobEvent::Waiting { on: on.clone() },
                JobState::Waiting { on },
            )
        }
        Err(Exit::Parked { reason }) => {
            warn!(job, reason, "job parked");
            (
                event_id(job, &["parked", &parked_before.to_string()]),
                JobEvent::Parked {
                    reason: reason.clone(),
                },
                JobState::Parked { reason },
            )
        }
        Err(Exit::Cancelled) => (
            event_id(job, &["cancelled"]),
            // The same id as the person's cancel this follows: stored once.
            JobEvent::Cancelled {
                reason: None,
                statement: None,
            },
            JobState::Cancelled,
        ),
        Err(Exit::Fatal(e)) => return Err(e),
    };
    let state = if state == JobState::Cancelled || ctx.has(&id) {
        state
    } else {
        match ctx.record(id, event).await {
            Ok(()) => state,
            Err(Exit::Cancelled) => JobState::Cancelled,
            Err(Exit::Fatal(e)) => return Err(e),
            Err(other) => return Err(JobError::Invalid(format!("closing the run: {other:?}"))),
        }
    };
    Ok(RunReport { state, steps_run })
}

enum FlowRef {
    Rust(Arc<dyn Flow>),
    Python(PythonFlows),
}

fn flow_for(flows: &Flows, name: &str) -> Option<FlowRef> {
    if let Some(flow) = flows.registry.get(name) {
        return Some(FlowRef::Rust(flow));
    }
    if let Some(python) = flows.python.as_ref().filter(|p| p.has(name)) {
        return Some(FlowRef::Python(python.clone()));
    }
    flows.registry.builtin(name).map(FlowRef::Rust)
}

/// Runs the flow of a job whose output is plain `Value` (used by tests and the bench).
pub fn output_of(report: &RunReport) -> Option<&Value> {
    match &report.state {
        JobState::Done { output } => Some(output),
        _ => None,
    }
}
