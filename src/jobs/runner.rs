//! The runner of one mesh (`/iron/jobs/<mesh>/runner`): takes the mesh's lease, replays every
//! job that was left runnable, then consumes the wake queue, running each woken job until it
//! returns, waits or parks, and only then acknowledges the wake. It stops the moment it cannot
//! prove the lease is its own; its fenced writes are refused from then on anyway.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::core::durable::{ConsumerSpec, EventLog, LogConsumer, StartAt};
use crate::spine::durable::AnyLog;
use crate::spine::durable::lease::{self, Lease, LeaseError};
use crate::spine::durable::streams::JOBS;

use super::JobError;
use super::awake::KeepAwake;
use super::event::{job_of_subject, wakes_filter};
use super::journal::{Fence, JobState, read_all_diaries, state_of};
use super::people;
use super::run::{Flows, run_job};
use crate::core::identity::Authority;

/// How long [`RunnerDeps::hold_before_ack`] holds at most before it acknowledges anyway.
const HOLD_LIMIT: Duration = Duration::from_secs(300);

/// What the runner needs.
#[derive(Clone)]
pub struct RunnerDeps {
    /// The durable plane.
    pub log: AnyLog,
    /// The flows it can run.
    pub flows: Flows,
    /// The mesh it runs jobs for.
    pub mesh: String,
    /// Its name in the lease (unique per process).
    pub holder: String,
    /// How long to wait between attempts to take a lease someone else holds.
    pub standby_poll: Duration,
    /// How long a woken job may stay unacknowledged before the queue hands it out again.
    pub ack_wait: Duration,
    /// Inhibits system sleep while a job runs.
    pub awake: KeepAwake,
    /// Whose approvals, resumes and cancels the runner takes ([`super::people`]).
    pub authority: Authority,
    /// Test seam: after running a woken job and before acknowledging the wake, wait until this
    /// file exists (so a test can kill the runner exactly there).
    pub hold_before_ack: Option<PathBuf>,
}

impl RunnerDeps {
    /// Defaults for `mesh`, taking people's decisions from `authority`.
    pub fn new(log: AnyLog, flows: Flows, mesh: &str, authority: Authority) -> Self {
        Self {
            authority,
            log,
            flows,
            mesh: mesh.to_string(),
            holder: format!(
                "runner/{mesh}/{}-{}",
                std::process::id(),
                uuid::Uuid::new_v4().simple()
            ),
            standby_poll: Duration::from_secs(1),
            ack_wait: Duration::from_secs(60),
            hold_before_ack: None,
            awake: KeepAwake::detect(),
        }
    }
}

/// How the runner stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunnerExit {
    /// Told to stop; the lease was released.
    Stopped,
    /// The lease could not be proven ours: the process must exit and be restarted.
    LeaseLost,
}

/// The lease key of a mesh's runner.
pub fn lease_key(mesh: &str) -> String {
    format!("jobs-runner.{mesh}")
}

/// Runs until `shutdown` or until the lease is lost.
pub async fn run(deps: RunnerDeps, shutdown: CancellationToken) -> Result<RunnerExit, JobError> {
    let key = lease_key(&deps.mesh);
    let mut said = false;
    let lease = loop {
        match Lease::acquire(&deps.log, &key, &deps.holder).await {
            Ok(lease) => break lease,
            Err(LeaseError::Held { holder, epoch, .. }) => {
                if !said {
                    info!(
                        mesh = deps.mesh,
                        holder, epoch, "lease held by another runner; standing by"
                    );
                    said = true;
                }
            }
            Err(e) => warn!("taking the runner lease: {e}; retrying"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Ok(RunnerExit::Stopped),
            _ = tokio::time::sleep(deps.standby_poll) => {}
        }
    };
    let stop_hold = CancellationToken::new();
    let fence = Fence {
        key: key.clone(),
        holder: lease.holder().to_string(),
        epoch: lease.epoch(),
        lost: CancellationToken::new(),
    };
    let lost = lease::hold(
        deps.log.clone(),
        lease,
        lease::RENEW_EVERY,
        stop_hold.clone(),
    );
    let fence = Fence { lost, ..fence };
    info!(
        mesh = deps.mesh,
        epoch = fence.epoch,
        holder = fence.holder,
        "runner holds the lease"
    );
    let exit = work(&deps, &fence, &shutdown).await;
    stop_hold.cancel();
    match &exit {
        Ok(RunnerExit::LeaseLost) | Err(JobError::LeaseLost { .. }) => {
            warn!(
                mesh = deps.mesh,
                "runner lost its lease; exiting without another write"
            );
            Ok(RunnerExit::LeaseLost)
        }
        _ => exit,
    }
}

async fn work(
    deps: &RunnerDeps,
    fence: &Fence,
    shutdown: &CancellationToken,
) -> Result<RunnerExit, JobError> {
    // Jobs left runnable by a crash (a wake may have been acknowledged by no one, or lost).
    let all = read_all_diaries(&deps.log, &deps.mesh).await?;
    for ((mesh, job), diary) in all {
        if state_of(&people::checked(&job, diary, &deps.authority)) == JobState::Runnable {
            if fence.lost.is_cancelled() || shutdown.is_cancelled() {
                break;
            }
            info!(job, "recovering a runnable job");
            run_one(deps, fence, &mesh, &job).await?;
        }
    }
    let mut consumer = deps
        .log
        .consumer(ConsumerSpec {
            stream: JOBS.into(),
            durable: Some(format!("jobs-runner-{}", deps.mesh)),
            filter_subject: wakes_filter(&deps.mesh),
            start: StartAt::First,
            ack_wait: deps.ack_wait,
        })
        .await?;
    info!(mesh = deps.mesh, "runner consuming the wake queue");
    loop {
        let next = tokio::select! {
            _ = shutdown.cancelled() => return Ok(RunnerExit::Stopped),
            _ = fence.lost.cancelled() => return Ok(RunnerExit::LeaseLost),
            next = consumer.next(Duration::from_secs(1)) => next,
        };
        let Some((delivery, ack)) = (match next {
            Ok(d) => d,
            Err(e) => {
                warn!("reading the wake queue: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        }) else {
            continue;
        };
        let Some((mesh, job)) = job_of_subject(&delivery.message.subject) else {
            consumer.ack(vec![ack]).await?;
            continue;
        };
        let (mesh, job) = (mesh.to_string(), job.to_string());
        match run_one(deps, fence, &mesh, &job).await {
            Ok(()) => {}
            Err(JobError::LeaseLost { .. }) => return Ok(RunnerExit::LeaseLost),
            Err(e) => {
                // Not acknowledged: the queue hands the wake out again after ack_wait.
                warn!(job, "running the job failed: {e}; it will be retried");
                continue;
            }
        }
        if let Some(gate) = &deps.hold_before_ack {
            info!(
                job,
                "test seam: holding before the ack until {} exists",
                gate.display()
            );
            let opened = tokio::time::timeout(HOLD_LIMIT, async {
                while !gate.exists() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            });
            if opened.await.is_err() {
                warn!(
                    job,
                    "test seam: {} never appeared; acknowledging",
                    gate.display()
                );
            }
        }
        if fence.lost.is_cancelled() {
            return Ok(RunnerExit::LeaseLost);
        }
        if let Err(e) = consumer.ack(vec![ack]).await {
            // The wake comes back after ack_wait; replaying a finished run writes nothing.
            warn!(
                job,
                "acknowledging the wake: {e}; it will be delivered again"
            );
        }
    }
}

async fn run_one(deps: &RunnerDeps, fence: &Fence, mesh: &str, job: &str) -> Result<(), JobError> {
    let _awake = deps.awake.hold();
    // Stop work the moment the lease is lost: the run (a step in flight, a Python child) is
    // dropped, and nothing more is written.
    let report = tokio::select! {
        report = run_job(&deps.log, &deps.flows, &deps.authority, fence, mesh, job) => report?,
        _ = fence.lost.cancelled() => {
            return Err(JobError::LeaseLost { key: fence.key.clone() });
        }
    };
    info!(
        job,
        state = report.state.word(),
        steps_run = report.steps_run,
        "job run ended"
    );
    Ok(())
}
