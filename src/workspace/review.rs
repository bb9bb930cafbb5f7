//! Review on the log: what an expert changed is proposed hunk by hunk (`hunk_proposed`, and
//! `change_unreviewable` for a file that has no hunks to read), a person decides each
//! (`hunk_decided`), approved hunks are applied (`effect_intent`, `hunk_applied`,
//! `effect_confirmed`) and the mesh's verify command runs on the result (`verify_finished`).
//! Every proposal carries what applying it needs (its file's header and its lines, the target
//! tree and the scratch), so a review can be decided days later, from any process, after any
//! restart: the state of a review is a fold over these events ([`Review::fold`]).
//!
//! The fold trusts no id and no summary an event carries: it reads the proposal's header
//! lines for their meaning and computes the hunk's id again from them and its lines; a
//! proposal whose id does not match is not a hunk of the review. What a person approves is
//! what is applied. Nor does it trust who a decision says decided: a `hunk_decided` counts
//! only with the operator's signed statement deciding that hunk (directly, or as the answer
//! to the hunk's approval in its review job), verified against the deployment's registered
//! keys ([`crate::core::identity`]); anything else on the log is ignored with a warning.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::display::shown;
use super::hunks::{FileChange, Hunk, HunkError, parse_bytes, reread};
use super::scratch::{Scratch, ScratchError};
use crate::core::envelope::Envelope;
use crate::core::event_kind::EventKind;
use crate::core::identity::{self, Authority, Registry};
use crate::protocol::Payload;
use crate::protocol::payload::{ChangeUnreviewable, HunkApplied, HunkDecided, HunkProposed};

/// The review job of `task`.
pub fn review_job(task: &str) -> String {
    format!("review-{task}")
}

/// The approval a review job waits on for hunk `id`.
pub fn approval_of(id: &str) -> String {
    format!("{}{id}", identity::HUNK_APPROVAL)
}

/// The kinds of event a review is made of.
pub const REVIEW_KINDS: &[EventKind] = &[
    EventKind::HunkProposed,
    EventKind::ChangeUnreviewable,
    EventKind::HunkDecided,
    EventKind::HunkApplied,
    EventKind::VerifyFinished,
];

/// Where a hunk stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Waiting for a person.
    Pending,
    /// Approved (by whom), not applied yet.
    Approved(String),
    /// Rejected (by whom): never applied.
    Rejected(String),
    /// Applied to the real tree.
    Applied,
}

impl Decision {
    /// One word for it.
    pub fn word(&self) -> &'static str {
        match self {
            Decision::Pending => "pending",
            Decision::Approved(_) => "approved",
            Decision::Rejected(_) => "rejected",
            Decision::Applied => "applied",
        }
    }
}

/// A proposed hunk with what applying it needs and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposed {
    /// The hunk.
    pub hunk: Hunk,
    /// Its file's header lines.
    pub header: Vec<String>,
    /// The task whose expert changed it.
    pub task: String,
    /// The expert, `<mesh>/<role>`.
    pub expert: String,
    /// The real tree it would be applied to.
    pub target: PathBuf,
    /// The scratch it was made in.
    pub scratch: PathBuf,
    /// Where it stands.
    pub decision: Decision,
}

impl Proposed {
    /// The patch of this hunk alone (its file's header and its lines), for reading.
    pub fn patch(&self) -> String {
        let mut out = self.header.join("\n");
        out.push('\n');
        out.push_str(&self.hunk.range);
        out.push('\n');
        for l in &self.hunk.lines {
            out.push_str(l);
            out.push('\n');
        }
        out
    }
}

/// Why what changed in a scratch cannot be proposed. Its scratch is then kept, and this is said
/// on the log (see [`unproposable`]) and in the task's result.
#[derive(Debug, thiserror::Error)]
pub enum ProposeError {
    /// Git could not write the diff (e.g. the scratch's index is locked).
    #[error("reading what changed in the scratch: {0}")]
    Diff(#[from] ScratchError),
    /// The diff could not be read.
    #[error("reading the scratch's diff: {0}")]
    Parse(#[from] HunkError),
}

/// What changed in `scratch` since its base, as file changes (a file whose diff is not UTF-8
/// is one that cannot be reviewed by hunk, see [`parse_bytes`]).
pub async fn changes_of(scratch: &Scratch) -> Result<Vec<FileChange>, ProposeError> {
    Ok(parse_bytes(&scratch.diff_bytes().await?)?)
}

/// A change that cannot be reviewed by hunk (a binary file, a mode change alone), or a scratch
/// whose changes could not be proposed at all (`path` is `None`): never applied; its scratch
/// is kept for a person to take by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreviewable {
    /// The task.
    pub task: String,
    /// The expert, `<mesh>/<role>`.
    pub expert: String,
    /// The file, if one.
    pub path: Option<String>,
    /// Why.
    pub why: String,
    /// The scratch that holds it.
    pub scratch: PathBuf,
}

/// The `change_unreviewable` saying that nothing of `scratch` could be proposed, and why.
pub fn unproposable(
    task: &str,
    expert: &str,
    target: &Path,
    scratch: &Scratch,
    why: &str,
) -> ChangeUnreviewable {
    ChangeUnreviewable {
        task_id: task.to_string(),
        expert: expert.to_string(),
        path: None,
        why: format!("what changed could not be proposed: {why}"),
        header: None,
        summary: None,
        target: target.to_path_buf(),
        scratch: scratch.dir.clone(),
    }
}

/// One event proposing part of a scratch for review.
#[derive(Debug, Clone, PartialEq)]
pub enum Proposal {
    /// A hunk (`hunk_proposed`).
    Hunk(HunkProposed),
    /// A file without hunks (`change_unreviewable`).
    Unreviewable(ChangeUnreviewable),
}

impl Proposal {
    /// Its kind.
    pub fn kind(&self) -> EventKind {
        match self {
            Proposal::Hunk(_) => HunkProposed::KIND,
            Proposal::Unreviewable(_) => ChangeUnreviewable::KIND,
        }
    }

    /// Its payload.
    pub fn to_value(&self) -> Value {
        match self {
            Proposal::Hunk(p) => p.to_value(),
            Proposal::Unreviewable(p) => p.to_value(),
        }
    }
}

/// The events that propose what `scratch` holds: one `hunk_proposed` per hunk, one
/// `change_unreviewable` per file without hunks.
pub fn proposals(
    task: &str,
    expert: &str,
    target: &Path,
    scratch: &Scratch,
    files: &[FileChange],
) -> Vec<Proposal> {
    let mut out = Vec::new();
    for file in files {
        if let Some(why) = &file.unreadable {
            out.push(Proposal::Unreviewable(ChangeUnreviewable {
                task_id: task.to_string(),
                expert: expert.to_string(),
                path: Some(file.path.clone()),
                why: why.clone(),
                header: Some(file.header.clone()),
                summary: Some(file.meaning.summary()),
                target: target.to_path_buf(),
                scratch: scratch.dir.clone(),
            }));
        }
        for hunk in &file.hunks {
            out.push(Proposal::Hunk(HunkProposed {
                hunk: hunk.id.clone(),
                task_id: task.to_string(),
                expert: expert.to_string(),
                path: hunk.path.clone(),
                range: hunk.range.clone(),
                lines: hunk.lines.clone(),
                header: file.header.clone(),
                summary: file.meaning.summary(),
                governance: hunk.governance,
                target: target.to_path_buf(),
                scratch: scratch.dir.clone(),
                base: scratch.base.clone(),
            }));
        }
    }
    out
}

/// Why a `hunk_decided` event is not taken.
#[derive(Debug, thiserror::Error)]
enum NotTaken {
    /// It carries no statement.
    #[error("not signed by an operator")]
    Unsigned,
    /// Its statement is about something else.
    #[error("its statement ({0}) does not decide it so")]
    OtherDecision(String),
    /// Its statement does not verify.
    #[error(transparent)]
    Unverified(#[from] identity::IdentityError),
}

/// Who decided `p` as `decision` by the `hunk_decided` event `e`: the operator whose signed
/// statement (the event's `statement`) decides that hunk, or answers its approval in the
/// task's review job, and verifies with `people`.
fn decided_by(
    e: &HunkDecided,
    p: &Proposed,
    people: &Authority,
    registry: &Registry,
) -> Result<String, NotTaken> {
    let statement = e.statement.as_ref().ok_or(NotTaken::Unsigned)?;
    let decision = e.decision.as_str();
    let approval = format!("{}/{}", review_job(&p.task), approval_of(&p.hunk.id));
    if !statement.decides_hunk(&p.hunk.id, decision)
        && !statement.says(identity::action::JOB_APPROVE, &approval, decision)
    {
        return Err(NotTaken::OtherDecision(format!(
            "{} {} {}",
            statement.action, statement.subject, statement.decision
        )));
    }
    people.check(registry, statement, None, None)?;
    Ok(statement.operator.clone())
}

/// Every hunk of the log's review events, in the order they were proposed.
#[derive(Debug, Clone, Default)]
pub struct Review {
    order: Vec<String>,
    hunks: BTreeMap<String, Proposed>,
    unreviewable: Vec<Unreviewable>,
}

impl Review {
    /// Folds review events (others are ignored) in log order. A decision or application of
    /// a hunk never proposed is ignored, and so is a second proposal of one, and a proposal
    /// whose header cannot be read or whose id is not that of its header and lines; a later
    /// decision replaces an earlier one, except that an applied hunk stays applied. A decision
    /// counts only when `people` takes its signed statement ([`decided_by`]).
    /// Takes a proposal: judged here, never taken from the event. The proposal is written as
    /// the patch it would apply and read back; its id must be that hunk's. A hunk proposed
    /// again (the same change, from a later task of a resident expert) keeps its first
    /// proposal and whatever was decided about it.
    fn propose(&mut self, e: HunkProposed) {
        let id = e.hunk;
        let hunk = match reread(&e.header, &e.range, &e.lines) {
            Ok(h) if h.id == id => h,
            Ok(_) => {
                tracing::warn!(
                    "hunk {} on the log is not its content's id: ignored",
                    shown(&id)
                );
                return;
            }
            Err(why) => {
                tracing::warn!(
                    "hunk {} on the log cannot be read back ({}): ignored",
                    shown(&id),
                    shown(&why.to_string())
                );
                return;
            }
        };
        if let std::collections::btree_map::Entry::Vacant(slot) = self.hunks.entry(id.clone()) {
            slot.insert(Proposed {
                hunk,
                header: e.header,
                task: e.task_id,
                expert: e.expert,
                target: e.target,
                scratch: e.scratch,
                decision: Decision::Pending,
            });
            self.order.push(id);
        }
    }

    /// Takes a decision written by `actor`, unless its hunk was never proposed or is applied
    /// already, or `people` do not take its statement. Nobody may approve governance: its
    /// rejection is the rule's, not a person's, and needs no statement.
    fn decide(&mut self, e: &HunkDecided, actor: &str, people: &Authority, registry: &Registry) {
        let Some(p) = self.hunks.get_mut(&e.hunk) else {
            return;
        };
        if p.decision == Decision::Applied {
            return;
        }
        let by = if p.hunk.governance && e.decision == "rejected" {
            Ok(actor.to_string())
        } else {
            decided_by(e, p, people, registry)
        };
        match by {
            Ok(by) if e.decision == "approved" => p.decision = Decision::Approved(by),
            Ok(by) if e.decision == "rejected" => p.decision = Decision::Rejected(by),
            Ok(_) => {}
            Err(why) => tracing::warn!("a decision on hunk {} is not taken: {why}", shown(&e.hunk)),
        }
    }

    pub fn fold<'a>(events: impl IntoIterator<Item = &'a Envelope>, people: &Authority) -> Review {
        let registry = people.registry();
        let mut review = Review::default();
        for e in events {
            match e.kind {
                EventKind::HunkProposed => match e.payload::<HunkProposed>() {
                    Ok(proposed) => review.propose(proposed),
                    Err(why) => tracing::warn!("a proposal on the log is ignored: {why}"),
                },
                EventKind::HunkDecided => match e.payload::<HunkDecided>() {
                    Ok(decided) => review.decide(&decided, &e.actor, people, &registry),
                    Err(why) => tracing::warn!("a decision on the log is ignored: {why}"),
                },
                EventKind::ChangeUnreviewable => match e.payload::<ChangeUnreviewable>() {
                    Ok(u) => review.unreviewable.push(Unreviewable {
                        task: u.task_id,
                        expert: u.expert,
                        path: u.path,
                        why: u.why,
                        scratch: u.scratch,
                    }),
                    Err(why) => {
                        tracing::warn!("an unreviewable change on the log is ignored: {why}")
                    }
                },
                EventKind::HunkApplied => match e.payload::<HunkApplied>() {
                    Ok(applied) => {
                        if let Some(p) = review.hunks.get_mut(&applied.hunk) {
                            p.decision = Decision::Applied;
                        }
                    }
                    Err(why) => tracing::warn!("an application on the log is ignored: {why}"),
                },
                _ => {}
            }
        }
        review
    }

    /// The hunks, in the order they were proposed.
    pub fn hunks(&self) -> impl Iterator<Item = &Proposed> {
        self.order.iter().filter_map(|id| self.hunks.get(id))
    }

    /// One hunk.
    pub fn get(&self, id: &str) -> Option<&Proposed> {
        self.hunks.get(id)
    }

    /// The hunks of `task`.
    pub fn of_task<'a>(&'a self, task: &'a str) -> impl Iterator<Item = &'a Proposed> {
        self.hunks().filter(move |p| p.task == task)
    }

    /// What could not be reviewed by hunk, in log order.
    pub fn unreviewable(&self) -> impl Iterator<Item = &Unreviewable> {
        self.unreviewable.iter()
    }

    /// What of `task` could not be reviewed by hunk.
    pub fn unreviewable_of<'a>(&'a self, task: &'a str) -> impl Iterator<Item = &'a Unreviewable> {
        self.unreviewable.iter().filter(move |u| u.task == task)
    }

    /// The hunks of `task` as file changes (headers with their hunks), for
    /// [`super::hunks::apply`]. Hunks are grouped under the very header they were proposed
    /// with: two different headers of one path stay two changes (which `git apply` then
    /// refuses together), never one hunk applied under another's header.
    pub fn files_of(&self, task: &str) -> Vec<FileChange> {
        let mut files: Vec<FileChange> = Vec::new();
        for p in self.of_task(task) {
            match files
                .iter_mut()
                .find(|f| f.path == p.hunk.path && f.header == p.header)
            {
                Some(f) => f.hunks.push(p.hunk.clone()),
                None => files.push(FileChange {
                    path: p.hunk.path.clone(),
                    header: p.header.clone(),
                    meaning: p.hunk.meaning.clone(),
                    hunks: vec![p.hunk.clone()],
                    unreadable: None,
                }),
            }
        }
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::identity::{OperatorKey, Statement};
    use crate::workspace::hunks::parse;

    const DIFF: &str = "diff --git a/a.txt b/a.txt
index 1..2 100644
--- a/a.txt
+++ b/a.txt
@@ -1 +1 @@
-x
+y
@@ -9 +9 @@
-p
+q
";

    fn event(kind: EventKind, payload: Value) -> Envelope {
        Envelope::new("t", ["tasks", "t1"], "test", kind, payload)
    }

    /// A deployment with nobody registered yet, in a directory of its own.
    fn people() -> (tempfile::TempDir, Authority) {
        let dir = tempfile::tempdir().unwrap();
        let people = Authority::new(dir.path(), &[]);
        (dir, people)
    }

    #[test]
    fn a_review_is_a_fold_of_its_events() {
        let files = parse(DIFF).unwrap();
        let scratch = Scratch {
            task: "s".into(),
            dir: "/s".into(),
            base: "abc".into(),
        };
        let mut events: Vec<Envelope> =
            proposals("t1", "dev/engineer", Path::new("/r"), &scratch, &files)
                .into_iter()
                .map(|p| event(p.kind(), p.to_value()))
                .collect();
        let (a, b) = (files[0].hunks[0].id.clone(), files[0].hunks[1].id.clone());
        let (dir, people) = people();
        let keys = dir.path().join("keys");
        let ana = OperatorKey::create(&keys, "ana").unwrap();
        let bo = OperatorKey::create(&keys, "bo").unwrap();
        Registry::register(dir.path(), &ana).unwrap();
        Registry::register(dir.path(), &bo).unwrap();
        let decided = |id: &str, decision: &str, statement: Option<Statement>| {
            let decided = HunkDecided {
                hunk: id.to_string(),
                task_id: "t1".into(),
                decision: decision.to_string(),
                operator: "ana".into(),
                path: "a.txt".into(),
                statement,
                governance: false,
            };
            event(HunkDecided::KIND, decided.to_value())
        };
        let applied = |id: &str| {
            let applied = HunkApplied {
                hunk: id.to_string(),
                task_id: "t1".into(),
                target: "/r".into(),
            };
            event(HunkApplied::KIND, applied.to_value())
        };
        let ana_approves_a = ana.sign(identity::action::HUNKS, &format!("{a} x"), "approved");
        events.push(decided(&a, "approved", Some(ana_approves_a.clone())));
        events.push(decided(
            &b,
            "rejected",
            Some(ana.sign(identity::action::HUNKS, &b, "rejected")),
        ));
        // Not taken: unsigned, a statement about another hunk, one saying otherwise, one
        // signed by a key that is not registered.
        events.push(decided(&b, "approved", None));
        events.push(decided(&b, "approved", Some(ana_approves_a.clone())));
        events.push(decided(
            &b,
            "approved",
            Some(Statement {
                decision: "approved".into(),
                ..ana.sign(identity::action::HUNKS, &b, "rejected")
            }),
        ));
        let eve = OperatorKey::create(&keys, "eve").unwrap();
        events.push(decided(
            &b,
            "approved",
            Some(eve.sign(identity::action::HUNKS, &b, "approved")),
        ));
        assert_eq!(
            Review::fold(&events, &people).get(&b).unwrap().decision,
            Decision::Rejected("ana".into())
        );
        events.push(applied(&a));
        // A late decision does not undo an application; an unknown hunk is ignored.
        events.push(decided(
            &a,
            "rejected",
            Some(bo.sign(identity::action::HUNKS, &a, "rejected")),
        ));
        events.push(applied("nope"));
        // The same changes proposed again by a later task change nothing.
        let again: Vec<Envelope> =
            proposals("t2", "dev/engineer", Path::new("/r"), &scratch, &files)
                .into_iter()
                .map(|p| event(p.kind(), p.to_value()))
                .collect();
        events.extend(again);
        let review = Review::fold(&events, &people);
        let states: Vec<&str> = review.hunks().map(|p| p.decision.word()).collect();
        assert_eq!(states, ["applied", "rejected"]);
        let files_again = review.files_of("t1");
        assert_eq!(files_again.len(), 1);
        assert_eq!(files_again[0].header, files[0].header);
        assert_eq!(files_again[0].hunks, files[0].hunks);
        assert_eq!(review.get(&a).unwrap().target, PathBuf::from("/r"));
    }

    #[test]
    fn a_proposal_whose_header_was_changed_under_its_id_is_not_a_hunk() {
        let (_dir, people) = people();
        let files = parse(DIFF).unwrap();
        let scratch = Scratch {
            task: "s".into(),
            dir: "/s".into(),
            base: "abc".into(),
        };
        let hunks: Vec<HunkProposed> =
            proposals("t1", "dev/engineer", Path::new("/r"), &scratch, &files)
                .into_iter()
                .filter_map(|p| match p {
                    Proposal::Hunk(h) => Some(h),
                    Proposal::Unreviewable(_) => None,
                })
                .collect();
        let header = |lines: &[&str]| lines.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        let proposed = |h: &HunkProposed| event(HunkProposed::KIND, h.to_value());
        // The first proposal keeps its id and lines but now says the file is a symlink.
        let mut events = vec![
            proposed(&HunkProposed {
                header: header(&[
                    "diff --git a/a.txt b/a.txt",
                    "index 1..2 120000",
                    "--- a/a.txt",
                    "+++ b/a.txt",
                ]),
                ..hunks[0].clone()
            }),
            proposed(&HunkProposed {
                header: header(&["diff --git a/a.txt b/a.txt", "from: nowhere"]),
                ..hunks[1].clone()
            }),
        ];
        // Lines that would smuggle a second file into the patch, with the ids recomputed: a
        // newline inside a header or hunk line, and a hunk line that is a header.
        let smuggled = |h: Vec<String>, l: &[&str]| {
            let l = header(l);
            let meaning = crate::workspace::header::FileHeader::read(&h).unwrap();
            let id = crate::workspace::hunks::hunk_id(&meaning, "@@ -1 +1 @@", &l);
            proposed(&HunkProposed {
                hunk: id,
                range: "@@ -1 +1 @@".into(),
                lines: l,
                header: h,
                ..hunks[0].clone()
            })
        };
        let plain = header(&[
            "diff --git a/a.txt b/a.txt",
            "index 1..2 100644",
            "--- a/a.txt",
            "+++ b/a.txt",
        ]);
        events.push(smuggled(
            plain.clone(),
            &["-x", "+y\ndiff --git a/aem/dev/AEM.md b/aem/dev/AEM.md"],
        ));
        events.push(smuggled(
            plain.clone(),
            &["-x", "+y", "diff --git a/aem/dev/AEM.md b/aem/dev/AEM.md"],
        ));
        events.push(smuggled(
            header(&[
                "diff --git a/a.txt b/a.txt\nnew file mode 120000",
                "index 1..2 100644",
                "--- a/a.txt",
                "+++ b/a.txt",
            ]),
            &["-x", "+y"],
        ));
        let review = Review::fold(&events, &people);
        assert_eq!(
            review.hunks().count(),
            0,
            "{:?}",
            review.hunks().collect::<Vec<_>>()
        );
        let untouched = Review::fold(
            &proposals("t1", "dev/engineer", Path::new("/r"), &scratch, &files)
                .into_iter()
                .map(|p| event(p.kind(), p.to_value()))
                .collect::<Vec<_>>(),
            &people,
        );
        assert_eq!(untouched.hunks().count(), 2);
    }
}
