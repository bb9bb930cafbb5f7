//! The payloads of a change's review: the hunks an expert's scratch proposes, the decisions
//! on them, their landing on the real tree and the verification after it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Payload;
use crate::core::event_kind::EventKind;
use crate::core::identity::Statement;

/// `hunk_proposed`: one hunk of what an expert changed in its scratch, for review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HunkProposed {
    /// The hunk's id (a digest of its file header and lines).
    pub hunk: String,
    /// The task that made it.
    pub task_id: String,
    /// The expert that made it.
    pub expert: String,
    /// The file it changes.
    pub path: String,
    /// Its range line (`@@ -a,b +c,d @@`).
    pub range: String,
    /// Its lines, each with its `+`, `-` or ` ` mark.
    pub lines: Vec<String>,
    /// Its file's header lines (`diff --git …` to `+++ …`).
    pub header: Vec<String>,
    /// What the change does to the file, in words (`new file, mode 100644`, …).
    pub summary: String,
    /// Whether it touches a mesh's governance (which no one may approve).
    pub governance: bool,
    /// The tree it would land on.
    pub target: PathBuf,
    /// The scratch it was made in.
    pub scratch: PathBuf,
    /// The commit the scratch started from.
    pub base: String,
}

impl Payload for HunkProposed {
    const KIND: EventKind = EventKind::HunkProposed;
}

/// `change_unreviewable`: a change that cannot be proposed as hunks (a file whose diff is
/// not text, or a scratch that could not be read), so it cannot land.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeUnreviewable {
    /// The task that made it.
    pub task_id: String,
    /// The expert that made it.
    pub expert: String,
    /// The file, or none when nothing of the scratch could be proposed.
    pub path: Option<String>,
    /// Why it cannot be reviewed.
    pub why: String,
    /// The file's header lines, for a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Vec<String>>,
    /// What the change does to the file, in words, for a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The tree it was meant for.
    pub target: PathBuf,
    /// The scratch it was made in.
    pub scratch: PathBuf,
}

impl Payload for ChangeUnreviewable {
    const KIND: EventKind = EventKind::ChangeUnreviewable;
}

/// `hunk_decided`: a hunk approved or rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HunkDecided {
    /// The hunk.
    pub hunk: String,
    /// The task that proposed it.
    pub task_id: String,
    /// `approved` or `rejected`.
    pub decision: String,
    /// Who decided: an operator, or the node that applied the governance rule.
    pub operator: String,
    /// The file it changes.
    pub path: String,
    /// The operator's signed statement (none for the governance rule's rejection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<Statement>,
    /// Whether the governance rule decided (no one may approve a change to governance).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub governance: bool,
}

impl Payload for HunkDecided {
    const KIND: EventKind = EventKind::HunkDecided;
}

/// `hunk_applied`: an approved hunk is in the real tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HunkApplied {
    /// The hunk.
    pub hunk: String,
    /// The task that proposed it.
    pub task_id: String,
    /// The tree it was applied to.
    pub target: PathBuf,
}

impl Payload for HunkApplied {
    const KIND: EventKind = EventKind::HunkApplied;
}

/// `effect_intent`: what a landing is about to do to the real tree (written before it does).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectIntent {
    /// The task whose hunks land.
    pub task_id: String,
    /// What it is about to do.
    pub what: String,
    /// The hunks.
    pub hunks: Vec<String>,
    /// The tree.
    pub target: PathBuf,
}

impl Payload for EffectIntent {
    const KIND: EventKind = EventKind::EffectIntent;
}

/// `effect_confirmed`: a landing's effect, observed on the tree (not assumed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectConfirmed {
    /// The task whose hunks landed.
    pub task_id: String,
    /// The hunks.
    pub hunks: Vec<String>,
    /// The tree.
    pub target: PathBuf,
    /// What was observed.
    pub observed: String,
}

impl Payload for EffectConfirmed {
    const KIND: EventKind = EventKind::EffectConfirmed;
}

/// `verify_finished`: the mesh's verify command, run confined on the tree after a landing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyFinished {
    /// The task whose hunks landed.
    pub task_id: String,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Whether it ran and passed.
    pub ok: bool,
    /// How it ended (its exit status, or the signal or time limit that stopped it), when it
    /// ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// How long it ran, in seconds, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secs: Option<f64>,
    /// The end of what it printed, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_tail: Option<String>,
    /// The end of what it printed on stderr, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// Why it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Payload for VerifyFinished {
    const KIND: EventKind = EventKind::VerifyFinished;
}
