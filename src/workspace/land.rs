//! Deciding and landing a review: the one implementation behind `iron hunks`, the review flow
//! ([`super::flow`]) and the ROS service ([`super::ros`]). A decision is written to the log
//! and answers the task's review job; approved hunks are applied to the real tree between
//! `effect_intent` and `effect_confirmed`; the mesh's verify command then runs confined on a
//! copy of the result and its outcome is an event.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::display::shown;
use super::hunks::{self, HunkError};
use super::review::{Decision, Proposed, REVIEW_KINDS, Review};
use super::sandbox::{Confined, Ended, RunPolicy, Sandbox};
use super::scratch::provider;
use crate::aem::{Catalog, WorkspaceEntry, WorkspaceProvider};
use crate::core::durable::{DurableError, EventLog};
use crate::core::envelope::Envelope;
use crate::core::identity::{self, Authority, FRESH_FOR, IdentityError, Statement};
use crate::jobs::{self, JobError, JobState};
use crate::memory::{EmitError, emit};
use crate::protocol::Payload;
use crate::protocol::payload::{
    EffectConfirmed, EffectIntent, HunkApplied, HunkDecided, OperatorRefused, VerifyFinished,
};
use crate::spine::durable::AnyLog;

/// The flow of a review job (registered in every runner for any role).
pub const REVIEW_FLOW: &str = "workspace_review";

pub use super::review::{approval_of, review_job};

/// Why a review step did not happen. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum LandError {
    /// The log could not be read.
    #[error("reading the log: {0}")]
    Read(#[source] DurableError),
    /// A review event could not be written.
    #[error("recording the review: {0}")]
    Emit(#[from] EmitError),
    /// No such hunk.
    #[error("no hunk {0} on the log (`iron hunks list --all`)")]
    NoHunk(String),
    /// The hunk is in the real tree already.
    #[error("hunk {0} is applied already")]
    Applied(String),
    /// A governance hunk cannot be approved.
    #[error(
        "hunk {id} changes {}, which is governance; it can only be rejected",
        shown(path)
    )]
    Governance {
        /// The hunk.
        id: String,
        /// Its file.
        path: String,
    },
    /// No hunks of the task.
    #[error("no hunks of task {0} on the log")]
    NoTask(String),
    /// The proposal names a tree other than its mesh's workspace, or there is none.
    #[error("{0}")]
    Target(String),
    /// The approved hunks do not apply.
    #[error(transparent)]
    Apply(#[from] HunkError),
    /// The operator's statement is not taken: unsigned, forged, stale, not allowed.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// The statement does not say this decision.
    #[error("the operator's statement {0}")]
    Statement(String),
    /// The task's review job did not take the decision.
    #[error("answering the review job {job}: {source}")]
    Job {
        /// The job.
        job: String,
        /// The cause.
        #[source]
        source: JobError,
    },
}

/// Records that `operator`'s `what` was not taken, and why (`operator_refused`, under the
/// namespace `operators`): a refused operator action leaves a trace on the log whichever
/// node refused it.
pub async fn record_refused(
    log: &AnyLog,
    tenant: &str,
    actor: &str,
    what: &str,
    operator: &str,
    why: &str,
) -> Result<(), EmitError> {
    let refused = OperatorRefused {
        task_id: None,
        operator_id: operator.to_string(),
        what: what.to_string(),
        reason: why.to_string(),
    };
    let event = Envelope::new(
        tenant,
        ["operators"],
        actor,
        OperatorRefused::KIND,
        refused.to_value(),
    );
    emit(log, &event).await.map(|_| ())
}

/// Every review event of the log, folded; decisions count when `people` takes them.
pub async fn read_review(log: &AnyLog, people: &Authority) -> Result<Review, LandError> {
    ReviewReader::new(people.clone()).read(log).await
}

/// The review kept up to date from the log: each [`ReviewReader::read`] reads only what MEM
/// gained since the one before (a reader that looks again and again, the console, would
/// otherwise read the whole stream each time), and keeps only the review's own events.
#[derive(Debug)]
pub struct ReviewReader {
    events: Vec<Envelope>,
    /// The last sequence read.
    read_to: u64,
    /// Whose decisions count.
    people: Authority,
}

impl ReviewReader {
    /// A reader that has read nothing yet; decisions count when `people` takes them.
    pub fn new(people: Authority) -> Self {
        Self {
            events: Vec::new(),
            read_to: 0,
            people,
        }
    }

    /// Reads what MEM gained since the last call, and folds every review event read so far.
    pub async fn read(&mut self, log: &AnyLog) -> Result<Review, LandError> {
        loop {
            let page = log
                .read("MEM", "mem.>", self.read_to + 1, 10_000)
                .await
                .map_err(LandError::Read)?;
            let Some(last) = page.last() else { break };
            self.read_to = last.seq;
            self.events.extend(
                page.iter()
                    .filter_map(|m| serde_json::from_slice::<Envelope>(&m.payload).ok())
                    .filter(|e| REVIEW_KINDS.contains(&e.kind)),
            );
        }
        Ok(Review::fold(&self.events, &self.people))
    }
}

/// The tree `p` is applied to, and the workspace declaration of its mesh: the tree its
/// proposal names, which must be the workspace target its mesh declares, taken against
/// `project` (where `iron up` runs). A proposal naming any other tree is refused, whoever
/// wrote it.
pub fn checked_target(
    catalog: &Catalog,
    project: &Path,
    p: &Proposed,
) -> Result<(PathBuf, WorkspaceEntry), LandError> {
    let mesh = p.expert.split('/').next().unwrap_or_default();
    let ws = catalog
        .mesh(mesh)
        .and_then(|m| m.workspace.clone())
        .ok_or_else(|| LandError::Target(format!("mesh {mesh} declares no workspace")))?;
    let declared = project.join(&ws.target).canonicalize().map_err(|e| {
        LandError::Target(format!(
            "resolving the workspace target `{}` of {mesh} in {}: {e} (run from the project directory)",
            ws.target,
            project.display()
        ))
    })?;
    if p.target != declared {
        return Err(LandError::Target(format!(
            "the review of task {} names the tree {}, but the workspace of {mesh} is {}; run \
             from the project directory",
            p.task,
            p.target.display(),
            declared.display()
        )));
    }
    Ok((declared, ws))
}

/// What [`Reviewer::apply`] did.
#[derive(Debug, Clone, Default)]
pub struct Landed {
    /// The hunks applied now.
    pub applied: Vec<String>,
    /// Whether a fresh look at the tree showed them there (`effect_confirmed`).
    pub confirmed: bool,
    /// Hunks of the task still waiting for a person.
    pub pending: usize,
}

/// How the verify command ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Verified {
    /// It succeeded.
    Passed,
    /// It failed (how it ended, the end of its stderr).
    Failed(Ended, String),
    /// It could not run (why).
    DidNotRun(String),
}

impl Verified {
    /// One line for a person.
    pub fn line(&self, command: &[String]) -> String {
        let command = command.join(" ");
        match self {
            Verified::Passed => format!("verify `{command}` passed"),
            Verified::Failed(ended, tail) => {
                format!("verify `{command}` FAILED ({ended:?}):\n{tail}")
            }
            Verified::DidNotRun(why) => format!("verify `{command}` did not run: {why}"),
        }
    }
}

/// Who writes the review's events (`operator/<name>`, `job/<id>`) and where.
pub struct Reviewer<'a> {
    /// The log.
    pub log: &'a AnyLog,
    /// The deployment's tenant.
    pub tenant: &'a str,
    /// The actor of every event written.
    pub actor: String,
}

impl Reviewer<'_> {
    async fn record<T: Payload>(&self, task: &str, payload: &T) -> Result<(), LandError> {
        let event = Envelope::new(
            self.tenant,
            ["tasks", task],
            self.actor.clone(),
            T::KIND,
            payload.to_value(),
        );
        emit(self.log, &event).await?;
        Ok(())
    }

    /// Approves or rejects `ids` as the operator's `statement` says (it must decide exactly
    /// these ids, be fresh, and verify with `people`; every id is checked before anything is
    /// written); each decision is recorded with the statement and answers its task's review
    /// job when one waits. Returns the hunks decided.
    pub async fn decide<'r>(
        &self,
        review: &'r Review,
        ids: &[String],
        statement: &Statement,
        people: &Authority,
    ) -> Result<Vec<&'r Proposed>, LandError> {
        let approve = match statement.decision.as_str() {
            "approved" => true,
            "rejected" => false,
            other => return Err(LandError::Statement(format!("decides {other:?}"))),
        };
        if !statement.says(identity::action::HUNKS, &ids.join(" "), &statement.decision) {
            return Err(LandError::Statement(format!(
                "says {} {}, not a decision on {}",
                statement.action,
                statement.subject,
                ids.join(" ")
            )));
        }
        people.admit(statement, None, Some(FRESH_FOR))?;
        let mut chosen = Vec::new();
        for id in ids {
            let p = review
                .get(id)
                .ok_or_else(|| LandError::NoHunk(id.clone()))?;
            if p.decision == Decision::Applied {
                return Err(LandError::Applied(id.clone()));
            }
            if approve && p.hunk.governance {
                return Err(LandError::Governance {
                    id: id.clone(),
                    path: p.hunk.path.clone(),
                });
            }
            chosen.push(p);
        }
        for p in &chosen {
            self.record_decision(p, statement).await?;
            self.answer_job(p, approve, statement, people).await?;
        }
        Ok(chosen)
    }

    /// Rejects governance hunk `p`, which nobody may approve: the rule decides, so no
    /// operator's statement is needed (the fold takes a governance rejection from anyone).
    pub async fn reject_governance(&self, p: &Proposed) -> Result<(), LandError> {
        let decided = HunkDecided {
            hunk: p.hunk.id.clone(),
            task_id: p.task.clone(),
            decision: "rejected".into(),
            operator: self.actor.clone(),
            path: p.hunk.path.clone(),
            statement: None,
            governance: true,
        };
        self.record(&p.task, &decided).await
    }

    /// Records the decision `statement` takes on `p` (without answering its job).
    pub async fn record_decision(
        &self,
        p: &Proposed,
        statement: &Statement,
    ) -> Result<(), LandError> {
        let decided = HunkDecided {
            hunk: p.hunk.id.clone(),
            task_id: p.task.clone(),
            decision: statement.decision.clone(),
            operator: statement.operator.clone(),
            path: p.hunk.path.clone(),
            statement: Some(statement.clone()),
            governance: false,
        };
        self.record(&p.task, &decided).await
    }

    /// Answers the approval of `p` in its task's review job, when that job exists and is
    /// not over (a review from before review jobs, or one landed already, has none to answer).
    async fn answer_job(
        &self,
        p: &Proposed,
        approve: bool,
        statement: &Statement,
        people: &Authority,
    ) -> Result<(), LandError> {
        let job = review_job(&p.task);
        let failed = |source| LandError::Job {
            job: job.clone(),
            source,
        };
        let diary = match jobs::ops::find(self.log, &job).await {
            Ok((_, diary)) => diary,
            Err(JobError::NoJob { .. } | JobError::Invalid(_)) => return Ok(()),
            Err(e) => return Err(failed(e)),
        };
        if matches!(
            jobs::state_of(&diary),
            JobState::Done { .. } | JobState::Cancelled
        ) {
            return Ok(());
        }
        let note = Some(format!("decided by {}", self.actor));
        let name = approval_of(&p.hunk.id);
        jobs::ops::approve(
            self.log,
            &job,
            &name,
            approve,
            note,
            statement.clone(),
            people,
        )
        .await
        .map_err(failed)
    }

    /// Applies the approved hunks of `task` not applied yet to `target` (all or none: a hunk
    /// that no longer applies is named and nothing is applied), recording `effect_intent`,
    /// `hunk_applied` and, when a fresh look shows them in the tree, `effect_confirmed`.
    pub async fn apply(
        &self,
        review: &Review,
        task: &str,
        target: &Path,
    ) -> Result<Landed, LandError> {
        let of_task: Vec<&Proposed> = review.of_task(task).collect();
        if of_task.is_empty() {
            return Err(LandError::NoTask(task.to_string()));
        }
        let approved: BTreeSet<String> = of_task
            .iter()
            .filter(|p| matches!(p.decision, Decision::Approved(_)))
            .map(|p| p.hunk.id.clone())
            .collect();
        let pending = of_task
            .iter()
            .filter(|p| p.decision == Decision::Pending)
            .count();
        let mut landed = Landed {
            pending,
            ..Landed::default()
        };
        if approved.is_empty() {
            return Ok(landed);
        }
        let ids: Vec<String> = approved.iter().cloned().collect();
        let intent = EffectIntent {
            task_id: task.to_string(),
            what: "apply approved hunks".into(),
            hunks: ids.clone(),
            target: target.to_path_buf(),
        };
        self.record(task, &intent).await?;
        let files = review.files_of(task);
        match hunks::apply(target, &files, &approved).await {
            Ok(()) => {}
            // An apply interrupted before it was recorded left them in the tree: not again.
            Err(HunkError::Stale { .. }) if hunks::are_applied(target, &files, &approved).await => {
            }
            Err(e) => return Err(e.into()),
        }
        for id in &approved {
            let applied = HunkApplied {
                hunk: id.clone(),
                task_id: task.to_string(),
                target: target.to_path_buf(),
            };
            self.record(task, &applied).await?;
        }
        // Observed, not assumed: the applied patch now reverses cleanly on the tree.
        if hunks::are_applied(target, &files, &approved).await {
            let confirmed = EffectConfirmed {
                task_id: task.to_string(),
                hunks: ids,
                target: target.to_path_buf(),
                observed: "every applied hunk reverses cleanly on the tree".into(),
            };
            self.record(task, &confirmed).await?;
            landed.confirmed = true;
        }
        landed.applied = approved.into_iter().collect();
        Ok(landed)
    }

    /// Runs the mesh's verify command confined on a copy of `target` (made under
    /// `<state_dir>/scratch`) and records the outcome; `None` when the mesh declares none.
    pub async fn verify(
        &self,
        task: &str,
        ws: &WorkspaceEntry,
        target: &Path,
        state_dir: &Path,
    ) -> Result<Option<Verified>, LandError> {
        if ws.verify.is_empty() {
            return Ok(None);
        }
        let outcome = async {
            let sandbox = Sandbox::locate().await.map_err(|e| e.to_string())?;
            let copies = provider(WorkspaceProvider::Copy, target, &state_dir.join("scratch"));
            let id = format!(
                "verify-{}",
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            );
            let args: Vec<&str> = ws.verify[1..].iter().map(String::as_str).collect();
            let copy = copies.create(&id).await.map_err(|e| e.to_string())?;
            let out = match Confined::new(&ws.verify[0], &args, &copy.dir)
                .under(&RunPolicy::of(ws, state_dir))
            {
                Ok(mut run) => {
                    run.timeout = Duration::from_secs(ws.verify_secs);
                    sandbox.run(&run).await.map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            let _ = copies.remove(&copy).await;
            out
        }
        .await;
        let tail = |b: &[u8]| {
            let text = String::from_utf8_lossy(b);
            let start = text.len().saturating_sub(4000);
            text[text.floor_char_boundary(start)..].to_string()
        };
        let (verified, payload) = match &outcome {
            Ok(out) => (
                if out.success() {
                    Verified::Passed
                } else {
                    Verified::Failed(out.ended.clone(), tail(&out.stderr))
                },
                VerifyFinished {
                    task_id: task.to_string(),
                    command: ws.verify.clone(),
                    ok: out.success(),
                    ended: Some(format!("{:?}", out.ended)),
                    secs: Some(out.elapsed.as_secs_f64()),
                    stdout_tail: Some(tail(&out.stdout)),
                    stderr_tail: Some(tail(&out.stderr)),
                    error: None,
                },
            ),
            Err(why) => (
                Verified::DidNotRun(why.clone()),
                VerifyFinished {
                    task_id: task.to_string(),
                    command: ws.verify.clone(),
                    ok: false,
                    ended: None,
                    secs: None,
                    stdout_tail: None,
                    stderr_tail: None,
                    error: Some(why.clone()),
                },
            ),
        };
        self.record(task, &payload).await?;
        Ok(Some(verified))
    }
}
