//! What people do to jobs (the `iron jobs` commands): start, approve, signal, resume, cancel,
//! list and show. Each writes one event with a computed id to the job's diary and wakes the
//! job; the runner does the rest. Approvals, resumes and cancels carry the operator's signed
//! [`Statement`], which the runner checks before it takes them ([`super::people`]).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::core::durable::EventLog;
use crate::core::identity::{Authority, FRESH_FOR, Statement, action};
use crate::spine::durable::streams::JOBS;

use super::JobError;
use super::event::{JobEvent, Stored, check_token, diary_subject, event_id, job_of_subject};
use super::journal::{JobState, append_unfenced, read_all_diaries, read_diary, state_of, wake};
use super::people;

/// Who the CLI writes as.
const BY: &str = "cli";

/// Starts `<mesh>/<role>/<flow>` with `input`; returns the new job's id.
pub async fn start<L: EventLog>(
    log: &L,
    target: &str,
    input: Value,
    flow_hash: Option<String>,
) -> Result<(String, String), JobError> {
    let parts: Vec<&str> = target.split('/').collect();
    let [mesh, role, flow] = parts[..] else {
        return Err(JobError::Invalid(format!(
            "{target:?}: name the flow as <mesh>/<role>/<flow>, e.g. newsroom/analyst/watch_feed"
        )));
    };
    let job = format!("j-{}", uuid::Uuid::now_v7().simple());
    let start = Start {
        mesh,
        role,
        flow,
        job: &job,
        by: BY,
    };
    start.write(log, input, flow_hash).await?;
    Ok((mesh.to_string(), job))
}

/// A job to start under an id the caller computed (a trigger: from what triggered it).
#[derive(Debug, Clone, Copy)]
pub struct Start<'a> {
    /// Mesh.
    pub mesh: &'a str,
    /// Role that owns the flow.
    pub role: &'a str,
    /// Flow name.
    pub flow: &'a str,
    /// The job id.
    pub job: &'a str,
    /// Who starts it (`cli`, `trigger/<mesh>/<name>`).
    pub by: &'a str,
}

impl Start<'_> {
    /// Starts the job unless a job with this id already exists; `Ok(false)` when it did (the
    /// same trigger fired again, after a restart or from a second process). Two callers racing
    /// write the same computed event id, which the log stores once.
    pub async fn once<L: EventLog>(
        self,
        log: &L,
        input: Value,
        flow_hash: Option<String>,
    ) -> Result<bool, JobError> {
        check_token("job", self.job)?;
        if !log
            .read(JOBS, &diary_subject(self.mesh, self.job), 1, 1)
            .await?
            .is_empty()
        {
            return Ok(false);
        }
        self.write(log, input, flow_hash).await?;
        Ok(true)
    }

    async fn write<L: EventLog>(
        self,
        log: &L,
        input: Value,
        flow_hash: Option<String>,
    ) -> Result<(), JobError> {
        self.record(log, input, flow_hash).await?;
        wake(log, self.mesh, self.job, "started").await
    }

    /// Writes the `job_started` event, without waking a runner.
    async fn record<L: EventLog>(
        self,
        log: &L,
        input: Value,
        flow_hash: Option<String>,
    ) -> Result<(), JobError> {
        check_token("mesh", self.mesh)?;
        check_token("role", self.role)?;
        check_token("flow", self.flow)?;
        append_unfenced(
            log,
            self.mesh,
            self.job,
            event_id(self.job, &["job_started"]),
            self.by,
            JobEvent::JobStarted {
                mesh: self.mesh.into(),
                role: self.role.into(),
                flow: self.flow.into(),
                input,
                flow_hash,
            },
        )
        .await?;
        Ok(())
    }
}

/// The step an entry belongs to: a step's result, an effect, an expert's request and its
/// answer, a timer, an approval (the names `iron jobs show` prints).
fn step_of(event: &JobEvent) -> Option<&str> {
    match event {
        JobEvent::StepDone { step, .. }
        | JobEvent::EffectIntent { step, .. }
        | JobEvent::EffectConfirmed { step, .. } => Some(step),
        JobEvent::ExpertRequested { request, .. } => Some(request),
        // `expert:<step>`, `effect:<step>`: the answer a step waited for.
        JobEvent::Signal { name, .. } => {
            Some(name.split_once(':').map_or(name.as_str(), |(_, s)| s))
        }
        JobEvent::TimerSet { timer, .. } | JobEvent::TimerDue { timer, .. } => Some(timer),
        JobEvent::ApprovalRequested { name, .. } | JobEvent::ApprovalGiven { name, .. } => {
            Some(name)
        }
        _ => None,
    }
}

/// A forked job: where it lives, and how much of the original it took.
#[derive(Debug, Clone)]
pub struct Forked {
    /// Mesh.
    pub mesh: String,
    /// The new job.
    pub job: String,
    /// Entries of the original reused.
    pub reused: usize,
}

/// `iron jobs fork JOB --at STEP`: a new job of the same flow and input whose journal holds
/// the original's recorded results before `at` (step results, effects, experts' answers,
/// timers), so its replay reuses them and runs live from `at` on, with the flow as it is now
/// (`flow_hash`). A person's decisions are never carried over: an approval was given for its
/// own job, and the fork asks again. The copied entries are written by `fork/<job>`.
pub async fn fork<L: EventLog>(
    log: &L,
    job: &str,
    at: &str,
    flow_hash: impl FnOnce(&str) -> Option<String>,
) -> Result<Forked, JobError> {
    let (mesh, diary) = find(log, job).await?;
    let Some((_, role, flow, input, _)) = super::journal::started_of(&diary) else {
        return Err(JobError::Invalid(format!("job {job} has no start")));
    };
    let at = at.split_once(':').map_or(at, |(_, step)| step);
    let Some(stop) = diary
        .iter()
        .position(|s| step_of(&s.entry.event) == Some(at))
    else {
        let mut steps: Vec<&str> = diary
            .iter()
            .filter_map(|s| step_of(&s.entry.event))
            .collect();
        steps.dedup();
        return Err(JobError::Invalid(format!(
            "job {job} has no step {at:?}; its steps, in order: {}",
            steps.join(", ")
        )));
    };
    let new = format!("j-{}", uuid::Uuid::now_v7().simple());
    let by = format!("fork/{job}");
    let start = Start {
        mesh: &mesh,
        role: &role,
        flow: &flow,
        job: &new,
        by: &by,
    };
    start
        .record(log, input, flow_hash(&format!("{mesh}/{role}/{flow}")))
        .await?;
    let mut reused = 0;
    for (n, stored) in diary[..stop].iter().enumerate() {
        let event = &stored.entry.event;
        let carried = matches!(
            event,
            JobEvent::StepDone { .. }
                | JobEvent::EffectIntent { .. }
                | JobEvent::EffectConfirmed { .. }
                | JobEvent::ExpertRequested { .. }
                | JobEvent::Signal { .. }
                | JobEvent::TimerSet { .. }
                | JobEvent::TimerDue { .. }
        );
        if carried {
            let id = event_id(&new, &["forked", &n.to_string()]);
            append_unfenced(log, &mesh, &new, id, &by, event.clone()).await?;
            reused += 1;
        }
    }
    wake(log, &mesh, &new, "forked").await?;
    Ok(Forked {
        mesh,
        job: new,
        reused,
    })
}

/// Finds a job by id in any mesh: its mesh and diary.
pub async fn find<L: EventLog>(log: &L, job: &str) -> Result<(String, Vec<Stored>), JobError> {
    check_token("job", job)?;
    let first = log.read(JOBS, &diary_subject("*", job), 1, 1).await?;
    let Some(mesh) = first
        .first()
        .and_then(|m| job_of_subject(&m.subject))
        .map(|(mesh, _)| mesh.to_string())
    else {
        return Err(JobError::NoJob {
            mesh: "*".into(),
            job: job.into(),
        });
    };
    let diary = read_diary(log, &mesh, job).await?;
    Ok((mesh, diary))
}

fn count(diary: &[Stored], pick: impl Fn(&JobEvent) -> bool) -> usize {
    diary.iter().filter(|s| pick(&s.entry.event)).count()
}

/// The actor of a person's event: `operator/<name>`.
fn by(statement: &Statement) -> String {
    format!("operator/{}", statement.operator)
}

/// Finds `job` for a person's `event`, refusing the event when the runner would not take it
/// (its statement unsigned, stale, forged, not this decision, or from someone `people` does
/// not take it from). Returns the mesh, the diary as written (ids count everything written,
/// so an id a forged event took is never computed again for a real one) and the diary as the
/// runner reads it (for the job's state).
async fn find_for<L: EventLog>(
    log: &L,
    job: &str,
    event: &JobEvent,
    people: &Authority,
) -> Result<(String, Vec<Stored>, Vec<Stored>), JobError> {
    let (mesh, diary) = find(log, job).await?;
    if let Some(statement) = people::statement_of(event) {
        people
            .admit(statement, None, Some(FRESH_FOR))
            .map_err(|e| JobError::NotTaken(e.to_string()))?;
    }
    if let Some(why) = people::refusal(job, event, people, &people.registry()) {
        return Err(JobError::NotTaken(why));
    }
    if let JobEvent::Cancelled {
        statement: Some(s), ..
    } = event
        && !s.says(action::JOB_CANCEL, job, "cancel")
    {
        return Err(JobError::NotTaken(format!(
            "the statement says {} {} {}, not a cancel of {job}",
            s.action, s.subject, s.decision
        )));
    }
    let taken = people::checked(job, diary.clone(), people);
    Ok((mesh, diary, taken))
}

/// Answers the approval `name` (the next unanswered one of that name), as `statement` says.
pub async fn approve<L: EventLog>(
    log: &L,
    job: &str,
    name: &str,
    approved: bool,
    note: Option<String>,
    statement: Statement,
    people: &Authority,
) -> Result<(), JobError> {
    let name = name.split('#').next().unwrap_or(name);
    let actor = by(&statement);
    let event = JobEvent::ApprovalGiven {
        name: name.into(),
        approved,
        note,
        statement: Some(statement),
    };
    let (mesh, diary, taken) = find_for(log, job, &event, people).await?;
    refuse_finished(job, &taken)?;
    let n = count(
        &diary,
        |e| matches!(e, JobEvent::ApprovalGiven { name: n, .. } if n == name),
    );
    let id = event_id(job, &["approval_given", name, &n.to_string()]);
    append_unfenced(log, &mesh, job, id.clone(), &actor, event).await?;
    wake(log, &mesh, job, id.as_str()).await
}

/// Sends the signal `name` with `payload`.
pub async fn signal<L: EventLog>(
    log: &L,
    job: &str,
    name: &str,
    payload: Value,
) -> Result<(), JobError> {
    let (mesh, diary) = find(log, job).await?;
    refuse_finished(job, &diary)?;
    let n = count(
        &diary,
        |e| matches!(e, JobEvent::Signal { name: n, .. } if n == name),
    );
    let id = event_id(job, &["signal", name, &n.to_string()]);
    append_unfenced(
        log,
        &mesh,
        job,
        id.clone(),
        BY,
        JobEvent::Signal {
            name: name.into(),
            payload,
        },
    )
    .await?;
    wake(log, &mesh, job, id.as_str()).await
}

/// Resumes a parked job, as `statement` says: the runner replays it from the top.
pub async fn resume<L: EventLog>(
    log: &L,
    job: &str,
    note: Option<String>,
    statement: Statement,
    people: &Authority,
) -> Result<(), JobError> {
    let actor = by(&statement);
    let event = JobEvent::Resumed {
        note,
        statement: Some(statement),
    };
    let (mesh, diary, taken) = find_for(log, job, &event, people).await?;
    let JobState::Parked { .. } = state_of(&taken) else {
        return Err(JobError::Invalid(format!(
            "job {job} is {}, not parked; only a parked job can be resumed",
            state_of(&diary).word()
        )));
    };
    let n = count(&diary, |e| matches!(e, JobEvent::Resumed { .. }));
    let id = event_id(job, &["resumed", &n.to_string()]);
    append_unfenced(log, &mesh, job, id.clone(), &actor, event).await?;
    wake(log, &mesh, job, id.as_str()).await
}

/// Cancels a job, as `statement` says: it never runs again.
pub async fn cancel<L: EventLog>(
    log: &L,
    job: &str,
    reason: Option<String>,
    statement: Statement,
    people: &Authority,
) -> Result<(), JobError> {
    let actor = by(&statement);
    let event = JobEvent::Cancelled {
        reason,
        statement: Some(statement),
    };
    let (mesh, _, taken) = find_for(log, job, &event, people).await?;
    refuse_finished(job, &taken)?;
    append_unfenced(
        log,
        &mesh,
        job,
        event_id(job, &["cancelled"]),
        &actor,
        event,
    )
    .await?;
    Ok(())
}

fn refuse_finished(job: &str, diary: &[Stored]) -> Result<(), JobError> {
    match state_of(diary) {
        JobState::Done { .. } | JobState::Cancelled => Err(JobError::Invalid(format!(
            "job {job} is {}; nothing more can happen to it",
            state_of(diary).word()
        ))),
        _ => Ok(()),
    }
}

/// One line of `iron jobs list`.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Mesh.
    pub mesh: String,
    /// Job id.
    pub job: String,
    /// `<role>/<flow>`.
    pub flow: String,
    /// Where it stands.
    pub state: JobState,
    /// Diary entries.
    pub entries: usize,
}

/// Every job of `mesh` (`*` for all).
pub async fn list<L: EventLog>(log: &L, mesh: &str) -> Result<Vec<Summary>, JobError> {
    Ok(summaries(&read_all_diaries(log, mesh).await?))
}

/// Each job of `diaries` ([`read_all_diaries`], [`super::journal::Diaries`]) in a line.
pub fn summaries(diaries: &BTreeMap<(String, String), Vec<Stored>>) -> Vec<Summary> {
    diaries
        .iter()
        .map(|((mesh, job), diary)| {
            let flow = super::journal::started_of(diary)
                .map(|(_, role, flow, _, _)| format!("{role}/{flow}"))
                .unwrap_or_else(|| "?".into());
            Summary {
                mesh: mesh.clone(),
                job: job.clone(),
                flow,
                state: state_of(diary),
                entries: diary.len(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spine::durable::embedded::{Embedded, EmbeddedOptions};
    use crate::spine::durable::streams::StreamSpec;

    #[tokio::test]
    async fn a_fork_reuses_results_before_its_step_and_never_a_persons_decision() {
        let dir = tempfile::tempdir().unwrap();
        let log = Embedded::open(
            dir.path().join("log.db"),
            &[StreamSpec::jobs()],
            EmbeddedOptions::default(),
        )
        .await
        .unwrap();
        let (mesh, job) = start(&log, "desk/clerk/file", serde_json::json!({"n": 1}), None)
            .await
            .unwrap();
        let step = |name: &str| JobEvent::StepDone {
            step: name.into(),
            fingerprint: None,
            result: serde_json::json!(name),
        };
        for (n, event) in [
            step("fetch#0"),
            JobEvent::ApprovalRequested {
                name: "file#0".into(),
                prompt: "file it?".into(),
            },
            JobEvent::ApprovalGiven {
                name: "file#0".into(),
                approved: true,
                note: None,
                statement: None,
            },
            step("file#0"),
            step("report#0"),
        ]
        .into_iter()
        .enumerate()
        {
            let id = event_id(&job, &["test", &n.to_string()]);
            append_unfenced(&log, &mesh, &job, id, "runner", event)
                .await
                .unwrap();
        }
        let forked = fork(&log, &job, "report#0", |_| None).await.unwrap();
        assert_eq!(forked.reused, 2, "fetch#0 and file#0, not the approval");
        let diary = read_diary(&log, &mesh, &forked.job).await.unwrap();
        let kinds: Vec<&str> = diary.iter().map(|s| s.entry.event.kind()).collect();
        assert_eq!(kinds, ["job_started", "step_done", "step_done"]);
        assert!(diary.iter().all(|s| s.entry.by == format!("fork/{job}")));
        let refused = fork(&log, &job, "nothing#0", |_| None).await.unwrap_err();
        assert!(
            refused.to_string().contains("fetch#0, file#0, report#0"),
            "{refused}"
        );
    }
}
