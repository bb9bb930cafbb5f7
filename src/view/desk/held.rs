//! Bulletins held for an editor. A mesh that declares a hold (the newsroom's trigger input
//! `review`) has its flow wait on the approval [`RELEASE`] before publishing; the approval's
//! prompt carries the bulletin as JSON (`bulletin`, `text`, `channel`, and `held`: why it
//! waits). A held bulletin is one whose job waits on that approval, as the runner sees the job:
//! a person's event the runner would not take (unsigned, forged) does not count as an answer.
//!
//! The decision is the job's approval, signed by an operator: release (with the editor's
//! wording as its note, when they gave one) or drop. The same bulletin can be held by more
//! than one job (the sources changed again before anyone decided); a decision on a bulletin
//! is given to every job holding it, and the delivery bridge sends it once.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Claim, claims_of, corrects_of};
use crate::core::identity::Authority;
use crate::jobs::event::{JobEvent, Stored};
use crate::jobs::{JobState, people, state_of};

/// The approval a held bulletin's job waits on.
pub const RELEASE: &str = "release";

/// A bulletin waiting for an editor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Held {
    /// The bulletin's id.
    pub id: String,
    /// The job holding it.
    pub job: String,
    /// The job's mesh.
    pub mesh: String,
    /// Since when (ms since the epoch).
    pub held_ms: u64,
    /// The channel it is to go out on.
    pub channel: String,
    /// The text to be sent, as the newsroom worded it.
    pub text: String,
    /// Why it waits, a line per claim the hold caught.
    pub why: Vec<String>,
    /// The bulletins it would correct.
    pub corrects: Vec<String>,
    /// Its claims.
    pub claims: Vec<Claim>,
}

/// The approval's prompt, as the flow writes it.
#[derive(Deserialize)]
struct Request {
    bulletin: Proposed,
    #[serde(default)]
    text: String,
    #[serde(default)]
    channel: String,
    #[serde(default)]
    held: Vec<String>,
}

/// The bulletin in a [`Request`].
#[derive(Deserialize)]
struct Proposed {
    id: String,
    claims: Vec<Value>,
}

/// Why a decision on a held bulletin cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    /// No held bulletin has this id or starts with it.
    #[error("no bulletin {id:?} is held for an editor ({})", held_now(.held))]
    NotHeld {
        /// What was given.
        id: String,
        /// The bulletins held now.
        held: Vec<String>,
    },
    /// Several held bulletins start with this prefix.
    #[error("{prefix:?} names {} held bulletins ({}): give more of the id", .candidates.len(), .candidates.join(", "))]
    Ambiguous {
        /// What was given.
        prefix: String,
        /// The bulletins it matches.
        candidates: Vec<String>,
    },
}

fn held_now(ids: &[String]) -> String {
    match ids {
        [] => "none is held now".into(),
        ids => format!("held now: {}", ids.join(", ")),
    }
}

/// The bulletins held in `diaries` (every job's, by `(mesh, job)`), oldest first.
pub fn held(diaries: &BTreeMap<(String, String), Vec<Stored>>, people: &Authority) -> Vec<Held> {
    let registry = people.registry();
    let mut all: Vec<Held> = diaries
        .iter()
        .filter_map(|((mesh, job), diary)| {
            // Most jobs never ask for a release: only those are folded as the runner would.
            let asks = diary.iter().any(|s| {
                matches!(&s.entry.event, JobEvent::ApprovalRequested { name, .. }
                    if name.split('#').next() == Some(RELEASE))
            });
            if !asks {
                return None;
            }
            let taken: Vec<Stored> = diary
                .iter()
                .filter(|s| people::refusal(job, &s.entry.event, people, &registry).is_none())
                .cloned()
                .collect();
            let JobState::Waiting { on } = state_of(&taken) else {
                return None;
            };
            let key = on.strip_prefix("approval:")?;
            if key.split('#').next() != Some(RELEASE) {
                return None;
            }
            let (ts, prompt) = taken.iter().rev().find_map(|s| match &s.entry.event {
                JobEvent::ApprovalRequested { name, prompt } if name == key => {
                    Some((s.entry.ts, prompt))
                }
                _ => None,
            })?;
            // A `release` approval of another shape is not a bulletin; Jobs still shows it.
            let request: Request = serde_json::from_str(prompt).ok()?;
            let claims = claims_of(&request.bulletin.claims);
            Some(Held {
                id: request.bulletin.id,
                job: job.clone(),
                mesh: mesh.clone(),
                held_ms: ts,
                channel: request.channel,
                text: request.text,
                why: request.held,
                corrects: corrects_of(&claims),
                claims,
            })
        })
        .collect();
    all.sort_by_key(|h| h.held_ms);
    all
}

/// The held entries of the bulletin `id` (or of the one bulletin whose id starts with it):
/// one per job holding it.
pub fn holding<'a>(held: &'a [Held], id: &str) -> Result<Vec<&'a Held>, DeskError> {
    let of = |b: &str| held.iter().filter(|h| h.id == b).collect::<Vec<_>>();
    if held.iter().any(|h| h.id == id) {
        return Ok(of(id));
    }
    let mut ids: Vec<&str> = held
        .iter()
        .map(|h| h.id.as_str())
        .filter(|b| !id.is_empty() && b.starts_with(id))
        .collect();
    ids.sort();
    ids.dedup();
    match ids[..] {
        [one] => Ok(of(one)),
        [] => {
            let mut now: Vec<String> = held.iter().map(|h| h.id.clone()).collect();
            now.sort();
            now.dedup();
            Err(DeskError::NotHeld {
                id: id.into(),
                held: now,
            })
        }
        _ => Err(DeskError::Ambiguous {
            prefix: id.into(),
            candidates: ids.iter().map(|b| b.to_string()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::identity::{OperatorKey, Registry, Statement, action, decision};
    use crate::jobs::event::{Entry, event_id};
    use serde_json::json;

    fn stored(seq: u64, event: JobEvent) -> Stored {
        Stored {
            seq,
            entry: Entry {
                id: event_id("j1", &[&seq.to_string()]),
                ts: seq * 1000,
                job: "j1".into(),
                by: "runner".into(),
                event,
            },
        }
    }

    fn request(id: &str) -> String {
        json!({"bulletin": {"id": id, "claims": [{"claim": "c-1", "text": "bridge closed",
                "status": "confirmed", "corrects": "b-0",
                "sources": [{"outlet": "Wire", "owner": "a", "url": "u", "stance": "supports"}]}]},
               "text": "[b-1] The bridge is closed.", "channel": "bulletins",
               "held": ["confirmed on 2 independent owners: bridge closed"]})
        .to_string()
    }

    fn waiting(prompt: String) -> Vec<Stored> {
        vec![
            stored(
                1,
                JobEvent::ApprovalRequested {
                    name: "release#0".into(),
                    prompt,
                },
            ),
            stored(
                2,
                JobEvent::Waiting {
                    on: "approval:release#0".into(),
                },
            ),
        ]
    }

    fn answered(mut diary: Vec<Stored>, statement: Option<Statement>) -> Vec<Stored> {
        diary.push(stored(
            3,
            JobEvent::ApprovalGiven {
                name: RELEASE.into(),
                approved: true,
                note: None,
                statement,
            },
        ));
        diary
    }

    fn jobs(diary: Vec<Stored>) -> BTreeMap<(String, String), Vec<Stored>> {
        BTreeMap::from([(("newsroom".into(), "j1".into()), diary)])
    }

    #[test]
    fn a_bulletin_is_held_until_an_operator_answers_and_a_forged_answer_is_no_answer() {
        let dir = tempfile::tempdir().unwrap();
        let key = OperatorKey::create(&dir.path().join("keys"), "ed").unwrap();
        Registry::register(dir.path(), &key).unwrap();
        let people = Authority::new(dir.path(), &["ed".into()]);

        let first = held(&jobs(waiting(request("b-1"))), &people);
        let [h] = &first[..] else { panic!("{first:?}") };
        assert_eq!((h.id.as_str(), h.job.as_str()), ("b-1", "j1"));
        assert_eq!(h.corrects, ["b-0"]);
        assert_eq!(h.claims[0].why, "1 independent owner: a");
        assert!(h.why[0].starts_with("confirmed on 2"), "{h:?}");

        // Unsigned, or signed for something else: still held.
        let unsigned = answered(waiting(request("b-1")), None);
        assert_eq!(held(&jobs(unsigned), &people).len(), 1);
        let other = key.sign(action::JOB_APPROVE, "j2/release", decision(true));
        let forged = answered(waiting(request("b-1")), Some(other));
        assert_eq!(held(&jobs(forged), &people).len(), 1);
        // The operator's own answer ends the hold.
        let real = key.sign(action::JOB_APPROVE, "j1/release", decision(true));
        assert!(
            held(
                &jobs(answered(waiting(request("b-1")), Some(real))),
                &people
            )
            .is_empty()
        );
        // A `release` approval that carries no bulletin is not one.
        assert!(held(&jobs(waiting("publish?".into())), &people).is_empty());
    }

    #[test]
    fn a_bulletin_is_named_by_its_id_or_a_unique_prefix() {
        let people = Authority::new(std::path::Path::new("/nonexistent"), &[]);
        let mut all = held(&jobs(waiting(request("b-12"))), &people);
        all.extend(held(&jobs(waiting(request("b-13"))), &people));
        all.extend(held(&jobs(waiting(request("b-12"))), &people));
        assert_eq!(
            holding(&all, "b-12").unwrap().len(),
            2,
            "both jobs holding it"
        );
        assert_eq!(holding(&all, "b-13").unwrap().len(), 1);
        let ambiguous = holding(&all, "b-1").unwrap_err().to_string();
        assert!(ambiguous.contains("b-12, b-13"), "{ambiguous}");
        let none = holding(&all, "b-9").unwrap_err().to_string();
        assert!(none.contains("held now: b-12, b-13"), "{none}");
        assert!(
            holding(&[], "b-1")
                .unwrap_err()
                .to_string()
                .contains("none is held now")
        );
        assert!(holding(&all, "").is_err());
    }
}
