//! The scratch of an expert process: made at `configure` when its mesh declares a
//! `workspace:` and a server it may use works in `${IRON_SCRATCH}`; that variable (which no
//! inherited environment may set) then names it for those servers, and gate 2 grants it as
//! their root. When a task ends, what changed is proposed on the log hunk by hunk for a
//! person to decide (see `crate::workspace::review`). A scratch with nothing proposed is
//! removed at shutdown. One with proposals, with a change that cannot be reviewed by hunk, or
//! whose changes could not be proposed at all (the reason is on the log and in the task's
//! result) is kept; for proposals a review job is started that removes it once every hunk is
//! decided and the approved ones landed, unless it also holds an unreviewable change (`iron
//! hunks apply` does the same by hand); a person removes what is left; one left by an expert killed outright is removed by the next
//! expert that makes a scratch (`crate::workspace::scratch::sweep`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::{info, warn};

use super::StartError;
use super::adapters::Recorder;
use crate::aem::workspace::works_in_scratch;
use crate::aem::{Catalog, ExpertEntry};
use crate::jobs::ops::Start;
use crate::workspace::flow::{REVIEW_FLOW, review_job};
use crate::workspace::review::{Proposal as ReviewProposal, changes_of, proposals, unproposable};
use crate::workspace::scratch::{Scratch, claim, keep_for_review, provider, remove_dir, sweep};

/// An expert's scratch and how it was made.
pub(super) struct ExpertScratch {
    scratch: Scratch,
    target: PathBuf,
    proposed: AtomicBool,
}

/// What became of a scratch's changes when a task ended.
#[derive(Debug, Default)]
pub(super) struct Proposal {
    /// Hunks proposed.
    hunks: usize,
    /// Changes that cannot be reviewed by hunk (never applied).
    unreviewable: usize,
    /// Why what changed could not be (wholly) proposed.
    failed: Option<String>,
}

impl Proposal {
    /// What the task's result says of it (`None`: nothing changed).
    pub(super) fn note(&self, task: &str, scratch: &Path) -> Option<String> {
        let scratch = scratch.display();
        let mut notes = Vec::new();
        if self.hunks > 0 {
            notes.push(format!(
                "[{} change(s) proposed for review: iron hunks list --task {task}]",
                self.hunks
            ));
        }
        if self.unreviewable > 0 {
            notes.push(format!(
                "[{} change(s) cannot be reviewed by hunk and are never applied (iron hunks \
                 list --task {task}); the scratch {scratch} is kept]",
                self.unreviewable
            ));
        }
        if let Some(why) = &self.failed {
            notes.push(format!(
                "[what changed could not be proposed for review: {why}; the scratch {scratch} \
                 is kept]"
            ));
        }
        (!notes.is_empty()).then(|| notes.join("\n"))
    }
}

/// Whether a server `entry` may use works in the scratch (a local server naming
/// `${IRON_SCRATCH}`, or the native sandbox).
fn uses_scratch(entry: &ExpertEntry, catalog: &Catalog) -> bool {
    let Some(mesh) = catalog.mesh(&entry.mesh) else {
        return false;
    };
    entry.servers.iter().any(|s| {
        mesh.servers
            .get(s)
            .is_some_and(|e| works_in_scratch(s, &e.descriptor))
    })
}

impl ExpertScratch {
    /// Makes the scratch of `entry`'s process (named `name`, unique per process) under
    /// `<state_dir>/scratch`, if it needs one; the target is the mesh's `workspace.target`
    /// taken against `project`.
    pub(super) async fn open(
        entry: &ExpertEntry,
        catalog: &Catalog,
        state_dir: &Path,
        project: &Path,
        name: &str,
    ) -> Result<Option<ExpertScratch>, StartError> {
        let Some(ws) = catalog.mesh(&entry.mesh).and_then(|m| m.workspace.as_ref()) else {
            return Ok(None);
        };
        if !uses_scratch(entry, catalog) {
            return Ok(None);
        }
        let path = project.join(&ws.target);
        let target = path
            .canonicalize()
            .map_err(|source| StartError::Target { path, source })?;
        let root = state_dir.join("scratch");
        // Scratches of experts that were killed outright, with nothing proposed: gone now.
        for dir in sweep(&target, &root).await {
            info!("removed the abandoned scratch {}", dir.display());
        }
        let provider = provider(ws.provider, &target, &root);
        let id = format!("{name}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let scratch = provider
            .create(&id)
            .await
            .map_err(|source| StartError::Scratch {
                expert: entry.id.clone(),
                source,
            })?;
        claim(&scratch).map_err(StartError::Owner)?;
        info!(scratch = %scratch.dir.display(), "working in a scratch of {}", target.display());
        Ok(Some(ExpertScratch {
            scratch,
            target,
            proposed: AtomicBool::new(false),
        }))
    }

    /// The scratch directory.
    pub(super) fn dir(&self) -> &Path {
        &self.scratch.dir
    }

    /// Proposes what changed in the scratch, as `expert` for `task`. What cannot be proposed
    /// keeps the scratch and says why, on the log and in what is returned: work is never
    /// removed unseen.
    pub(super) async fn propose(&self, task: &str, expert: &str, recorder: &Recorder) -> Proposal {
        let files = match changes_of(&self.scratch).await {
            Ok(f) => f,
            Err(e) => {
                let why = e.to_string();
                warn!(
                    task,
                    "what changed cannot be proposed: {why}; the scratch is kept"
                );
                self.keep(task);
                let payload = unproposable(task, expert, &self.target, &self.scratch, &why);
                if let Err(e) = recorder.record(&payload, None).await {
                    warn!(
                        task,
                        "why the change was not proposed is not on the log: {e}"
                    );
                }
                return Proposal {
                    failed: Some(why),
                    ..Proposal::default()
                };
            }
        };
        let mut out = Proposal::default();
        for proposal in proposals(task, expert, &self.target, &self.scratch, &files) {
            let hunk = matches!(proposal, ReviewProposal::Hunk(_));
            match recorder
                .write(proposal.kind(), proposal.to_value(), None)
                .await
            {
                Ok(_) if hunk => out.hunks += 1,
                Ok(_) => out.unreviewable += 1,
                Err(e) => {
                    warn!(task, "a proposal is not on the log: {e}");
                    out.failed = Some(format!("a proposal is not on the log: {e}"));
                }
            }
        }
        if out.hunks > 0 || out.unreviewable > 0 || out.failed.is_some() {
            self.keep(task);
        }
        if out.hunks > 0 {
            info!(
                task,
                proposed = out.hunks,
                "changes proposed for review (`iron hunks list --task {task}`)"
            );
            start_review_job(task, expert, recorder).await;
        }
        out
    }

    /// Keeps the scratch past this process: marked as under review, never swept.
    fn keep(&self, task: &str) {
        self.proposed.store(true, Ordering::SeqCst);
        if let Err(e) = keep_for_review(&self.scratch) {
            warn!(task, "could not mark the scratch as under review: {e}");
        }
    }

    /// Removes the scratch unless it holds proposals.
    pub(super) async fn close(&self) {
        if self.proposed.load(Ordering::SeqCst) {
            return;
        }
        let root = self.scratch.dir.parent().unwrap_or(Path::new("/"));
        if let Err(e) = remove_dir(&self.target, root, &self.scratch.dir).await {
            warn!(
                "could not remove the scratch {}: {e}",
                self.scratch.dir.display()
            );
        }
    }
}

/// Starts the review job of `task` (once: the id is computed from the task), which waits for a
/// person's decision on each hunk and lands the approved ones (see
/// `crate::workspace::flow`). The proposals are on the log either way: without the job a
/// person still decides and applies with `iron hunks`.
async fn start_review_job(task: &str, expert: &str, recorder: &Recorder) {
    let Some((mesh, role)) = expert.split_once('/') else {
        return;
    };
    let job = review_job(task);
    let by = format!("expert/{expert}");
    let start = Start {
        mesh,
        role,
        flow: REVIEW_FLOW,
        job: &job,
        by: &by,
    };
    match start
        .once(&recorder.log, serde_json::json!({"task": task}), None)
        .await
    {
        Ok(_) => info!(task, job, "review job started (`iron jobs show {job}`)"),
        Err(e) => warn!(
            task,
            "the review job did not start: {e}; decide with `iron hunks`"
        ),
    }
}
