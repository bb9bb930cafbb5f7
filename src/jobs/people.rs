//! Which of a person's events on a diary the runner takes. An approval or a resume makes a
//! job go on, and anything that can write to the log (an expert process included) could write
//! one; so each must carry a [`Statement`] signed by an operator this deployment takes it from
//! ([`Authority`]) that says exactly this: the approval's job, name and answer, or the job and
//! the action. Anything else is left out of the diary the runner folds, with a warning, and
//! the job goes on as if it had not been written.
//!
//! A cancel is the exception, on purpose: it only ever stops a job, the safe direction, and
//! diaries written before operators signed hold unsigned cancels whose jobs must stay stopped.
//! The CLI and the console sign cancels (and refuse to write one they cannot sign), so who
//! cancelled is proven whenever a person did; an unsigned cancel still stops the job, with
//! its writer on the diary.

use tracing::warn;

use crate::core::identity::{Authority, Registry, Statement, action, decision};

use super::event::{JobEvent, Stored};

/// What a statement must say to carry `event` on `job`; `None` for events no person writes.
fn required(job: &str, event: &JobEvent) -> Option<(&'static str, String, String)> {
    match event {
        JobEvent::ApprovalGiven { name, approved, .. } => Some((
            action::JOB_APPROVE,
            format!("{job}/{name}"),
            decision(*approved).into(),
        )),
        JobEvent::Resumed { .. } => Some((action::JOB_RESUME, job.into(), "resume".into())),
        _ => None,
    }
}

/// The statement a person's event carries, if any.
pub(super) fn statement_of(event: &JobEvent) -> Option<&Statement> {
    match event {
        JobEvent::ApprovalGiven { statement, .. }
        | JobEvent::Resumed { statement, .. }
        | JobEvent::Cancelled { statement, .. } => statement.as_ref(),
        _ => None,
    }
}

/// Why a person's event is not taken, or `None` when it is.
pub fn refusal(
    job: &str,
    event: &JobEvent,
    authority: &Authority,
    registry: &Registry,
) -> Option<String> {
    let (what, subject, decision) = required(job, event)?;
    let Some(statement) = statement_of(event) else {
        return Some("not signed by an operator".into());
    };
    let covers = statement.says(what, &subject, &decision)
        || matches!(event, JobEvent::ApprovalGiven { name, .. }
            if statement.decides_hunk_approval(name, &decision));
    if !covers {
        return Some(format!(
            "its statement says {} {} {}, not {what} {subject} {decision}",
            statement.action, statement.subject, statement.decision
        ));
    }
    authority
        .check(registry, statement, None, None)
        .err()
        .map(|e| e.to_string())
}

/// `diary` without the person's events this deployment does not take (each named in a
/// warning).
pub fn checked(job: &str, diary: Vec<Stored>, authority: &Authority) -> Vec<Stored> {
    let registry = authority.registry();
    diary
        .into_iter()
        .filter(
            |s| match refusal(job, &s.entry.event, authority, &registry) {
                None => true,
                Some(why) => {
                    warn!(job, seq = s.seq, by = %s.entry.by, kind = s.entry.event.kind(),
                      "a person's event on the diary is not taken: {why}");
                    false
                }
            },
        )
        .collect()
}
