//! Delegation: run one task in a freshly spawned expert process. The process is a managed node
//! (`/iron/experts/<mesh>/<role>_<id>`) that is configured and activated from here, given the
//! goal on its `task` action, followed to the result, and shut down. Guards: a bound on
//! delegation depth, a bound on delegations running at once, and a deadline on every wait (a
//! new process may miss its first requests while discovery settles: idempotent calls are
//! retried inside the deadline, then the task fails with a clear error).

use std::{path::PathBuf, sync::Arc, time::Duration};

use tokio::{process::Command, sync::Semaphore};
use tracing::{info, warn};

use crate::{
    interfaces::{AolTask, AolTaskFeedback, AolTaskGoal, AolTaskResult},
    spine::control::{
        ControlError, ROUTER_ENV,
        action::{ActionClient, GoalStatus},
        lifecycle::LifecycleClient,
    },
};

/// Deepest chain of delegations (a person's task is depth 0).
pub const MAX_DEPTH: u8 = 4;
/// Most delegations running at once at one depth.
pub const MAX_CONCURRENT: usize = 5;

/// How experts are started.
#[derive(Debug, Clone)]
pub struct DelegationOptions {
    /// The expert executable.
    pub executable: PathBuf,
    /// Arguments before `--ros-args` (the expert id is appended as `--expert <mesh>/<role>`).
    pub args: Vec<String>,
    /// The router endpoint passed to the expert.
    pub router: String,
    /// Bound on start-up (process up → active).
    pub startup_timeout: Duration,
    /// What a sixth concurrent delegation does: wait this long for a slot, then fail.
    pub slot_wait: Duration,
}

/// Why a delegation failed.
#[derive(Debug, thiserror::Error)]
pub enum DelegationError {
    #[error("delegation depth {depth} exceeds the limit of {MAX_DEPTH}")]
    TooDeep { depth: u8 },
    #[error(
        "{MAX_CONCURRENT} delegations are already running at this depth; none finished within {waited:?}"
    )]
    Saturated { waited: Duration },
    #[error("cannot start the expert {expert} ({executable}): {source}")]
    Spawn {
        expert: String,
        executable: String,
        #[source]
        source: std::io::Error,
    },
    #[error("expert {expert} did not become active: {why}")]
    Startup { expert: String, why: String },
    #[error("expert {expert}: {why}")]
    Task { expert: String, why: String },
    #[error("expert {expert} crashed mid-task: its process {node} (pid {pid}) {how}")]
    Crashed {
        expert: String,
        node: String,
        pid: u32,
        /// How the process ended, e.g. "was killed by signal 9".
        how: String,
    },
}

/// How a process ended, in words: "was killed by signal 9", "exited with code 3".
fn ended(status: std::io::Result<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            (None, None) => format!("ended ({s})"),
        },
        Err(e) => format!("could not be waited for: {e}"),
    }
}

/// Runs delegations within the guards.
#[derive(Clone)]
pub struct Delegator {
    options: DelegationOptions,
    /// [`MAX_CONCURRENT`] slots per delegation depth. A task waiting on its own delegation
    /// holds a slot of its depth while the delegation takes one of the next, so tasks that all
    /// delegate can never take every slot their delegations need (one pool for all depths
    /// deadlocked five delegating tasks until every delegation failed `saturated`).
    slots: Arc<Vec<Arc<Semaphore>>>,
    me: Arc<hiroz::node::ZNode>,
}

/// How a delegated task ended.
#[derive(Debug, Clone)]
pub struct Delegated {
    /// The expert node that ran it.
    pub node: String,
    pub status: GoalStatus,
    pub result: AolTaskResult,
}

impl Delegator {
    /// A delegator whose clients live on `me`.
    pub fn new(me: Arc<hiroz::node::ZNode>, options: DelegationOptions) -> Self {
        Self {
            options,
            slots: Arc::new(
                (0..=MAX_DEPTH)
                    .map(|_| Arc::new(Semaphore::new(MAX_CONCURRENT)))
                    .collect(),
            ),
            me,
        }
    }

    /// Runs `goal` on a new process of expert `mesh/role`, waiting at most `task_timeout` for
    /// its result once it is running, and forwarding feedback to `feedback`.
    pub async fn run(
        &self,
        mesh: &str,
        role: &str,
        goal: AolTaskGoal,
        task_timeout: Duration,
        feedback: tokio::sync::mpsc::UnboundedSender<AolTaskFeedback>,
    ) -> Result<Delegated, DelegationError> {
        if goal.depth > MAX_DEPTH {
            return Err(DelegationError::TooDeep { depth: goal.depth });
        }
        let slots = self.slots[usize::from(goal.depth)].clone();
        let _slot = tokio::time::timeout(self.options.slot_wait, slots.acquire_owned())
            .await
            .map_err(|_| DelegationError::Saturated {
                waited: self.options.slot_wait,
            })?
            .expect("the semaphore is never closed");

        let expert = format!("{mesh}/{role}");
        let short = goal
            .task_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .rev()
            .take(8)
            .collect::<String>();
        let name = format!(
            "{}_{}",
            role.replace('-', "_"),
            if short.is_empty() {
                "task".into()
            } else {
                short
            }
        );
        let ns = format!("/iron/experts/{mesh}");
        let fqn = format!("{ns}/{name}");
        let mut cmd = Command::new(&self.options.executable);
        // The expert dies with the engine, even when the engine is killed outright.
        crate::core::exe::die_with_parent(&mut cmd, false);
        let mut child = cmd
            .args(&self.options.args)
            .args(["--expert", &expert])
            .args([
                "--ros-args",
                "-r",
                &format!("__node:={name}"),
                "-r",
                &format!("__ns:={ns}"),
            ])
            .env(ROUTER_ENV, &self.options.router)
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| DelegationError::Spawn {
                expert: expert.clone(),
                executable: self.options.executable.display().to_string(),
                source,
            })?;
        info!(%fqn, "expert process started for task {}", goal.task_id);

        // The process is watched while the task runs: a crash ends the task at once, with
        // what happened to the process, instead of at the task's deadline.
        let pid = child.id().unwrap_or_default();
        let outcome = tokio::select! {
            outcome = self.drive(&fqn, &expert, goal, task_timeout, feedback) => outcome,
            status = child.wait() => {
                let how = ended(status);
                warn!(%fqn, pid, "expert process {how} mid-task");
                Err(DelegationError::Crashed { expert: expert.clone(), node: fqn.clone(), pid, how })
            }
        };

        // The expert is disposable: shut it down whatever happened, and make sure it is gone.
        let crashed = matches!(outcome, Err(DelegationError::Crashed { .. }));
        if !crashed
            && let Ok(life) = LifecycleClient::new(&self.me, &fqn, Duration::from_secs(2))
            && let Ok(crate::spine::control::lifecycle::State::Active) = life.get_state().await
        {
            let _ = life.set("shutdown").await;
        }
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            warn!(%fqn, "expert still running after shutdown; killing it");
            let _ = child.kill().await;
        }
        outcome
    }

    async fn drive(
        &self,
        fqn: &str,
        expert: &str,
        goal: AolTaskGoal,
        task_timeout: Duration,
        feedback: tokio::sync::mpsc::UnboundedSender<AolTaskFeedback>,
    ) -> Result<Delegated, DelegationError> {
        let startup = |why: String| DelegationError::Startup {
            expert: expert.to_string(),
            why,
        };
        // A refusal carries the expert's own words, as it logged them on /rosout.
        LifecycleClient::watching(&self.me, fqn, self.options.startup_timeout)
            .map_err(|e| startup(e.to_string()))?
            .activate()
            .await
            .map_err(|e| match e {
                ControlError::Transition { reason, .. } => startup(reason),
                other => startup(other.to_string()),
            })?;
        let task = |why: String| DelegationError::Task {
            expert: expert.to_string(),
            why,
        };
        let actions = ActionClient::<AolTask>::new(&self.me, &format!("{fqn}/task"))
            .map_err(|e| task(e.to_string()))?;
        let mut sent = actions
            .send(goal, self.options.startup_timeout)
            .await
            .map_err(|e| task(e.to_string()))?;
        let result = actions.result(sent.id, task_timeout);
        tokio::pin!(result);
        let outcome = loop {
            tokio::select! {
                biased;
                Some(fb) = sent.feedback.recv() => { let _ = feedback.send(fb); }
                r = &mut result => break r,
            }
        };
        // Feedback that arrived with the result is passed on, not dropped by the race.
        while let Ok(fb) = sent.feedback.try_recv() {
            let _ = feedback.send(fb);
        }
        let outcome = outcome.map_err(|e| task(format!("no result: {e}")))?;
        Ok(Delegated {
            node: fqn.to_string(),
            status: outcome.status,
            result: outcome.result,
        })
    }
}
