//! The procedural reviewer (`/iron/memory/reviewer`): turns a role's repeated failures into a
//! lesson its next experts are shown. It follows the engine's judgements (`task_judged`); each
//! task judged not answered is counted against its role under the reason it failed for (the
//! reason with its numbers and case folded, so "timed out after 31 s" and "after 30 s" are one
//! reason). When the same reason has failed [`REPEATED`] tasks of a role, it writes one
//! `lesson_learned` to the role's own namespace (`facts/<mesh>/<role>`), with the failed tasks
//! as its evidence and the last judgement as its cause. The lesson restates what the judge
//! recorded; it invents nothing.
//!
//! Only roles that declare `procedural` memory are reviewed (no declaration, no memory), and
//! only experts whose mounts reach the role's namespace with `procedural` read access are shown
//! the lesson (see `cognition::expert::wake`).

use crate::protocol::Payload;
use crate::protocol::payload::{LessonLearned, TaskJudged};
use std::collections::BTreeMap;

use rusqlite::{Transaction, params};
use sha2::{Digest, Sha256};

use super::worker::{Derived, Deriver};
use crate::aem::Catalog;
use crate::core::envelope::Envelope;
use crate::core::ids::EventId;
use crate::core::text::clip;

/// The actor lessons are written as.
pub const ACTOR: &str = "memory/reviewer";
/// How many tasks of a role must fail for the same reason before it becomes a lesson.
pub const REPEATED: u64 = 2;
/// Characters of a reason kept in a lesson.
const REASON_CHARS: usize = 300;
/// Characters of an instruction quoted as an example.
const EXAMPLE_CHARS: usize = 160;
/// Failed tasks listed as a lesson's evidence.
const EVIDENCE: usize = 5;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS failures(
    tenant TEXT NOT NULL, role TEXT NOT NULL, reason_key TEXT NOT NULL,
    task_id TEXT NOT NULL, judged TEXT NOT NULL, reason TEXT NOT NULL,
    instruction TEXT NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY(tenant, role, reason_key, task_id));
";

/// The reviewer's rules: which roles are reviewed, and where their lessons go.
#[derive(Debug, Clone, Default)]
pub struct Reviewer {
    /// Role (`<mesh>/<role>`) → the namespace its lessons go to.
    roles: BTreeMap<String, String>,
}

impl Reviewer {
    /// The roles of `catalog` that declare procedural memory.
    pub fn new(catalog: &Catalog) -> Self {
        Self::for_roles(
            catalog
                .experts
                .values()
                .filter(|e| e.memory.iter().any(|m| m.kind == "procedural"))
                .map(|e| e.id.as_str()),
        )
    }

    /// Reviews exactly `roles` (`<mesh>/<role>`).
    pub fn for_roles<'a>(roles: impl IntoIterator<Item = &'a str>) -> Self {
        let roles = roles
            .into_iter()
            .map(|r| (r.to_string(), format!("facts/{r}")))
            .collect();
        Self { roles }
    }
}

/// A failure reason as the reviewer compares it: lowercase, every run of digits one `#`,
/// whitespace collapsed.
pub fn reason_key(reason: &str) -> String {
    let mut key = String::new();
    let mut digits = false;
    for word in reason.split_whitespace() {
        if !key.is_empty() {
            key.push(' ');
        }
        for c in word.chars().flat_map(char::to_lowercase) {
            if c.is_ascii_digit() {
                if !digits {
                    key.push('#');
                }
                digits = true;
            } else {
                key.push(c);
                digits = false;
            }
        }
        digits = false;
    }
    key.chars().take(REASON_CHARS).collect()
}

impl Deriver for Reviewer {
    type Prepared = ();

    fn schema(&self) -> &'static str {
        SCHEMA
    }

    fn derive(
        &self,
        tx: &Transaction<'_>,
        seq: u64,
        event: &Envelope,
        _: (),
    ) -> rusqlite::Result<Derived> {
        let Ok(judged) = event.payload::<TaskJudged>() else {
            return Ok(Derived::default());
        };
        if judged.answered {
            return Ok(Derived::default());
        }
        let (role, task_id) = (judged.domain.as_str(), judged.task_id.as_str());
        let Some(namespace) = self.roles.get(role) else {
            return Ok(Derived::default());
        };
        // A judgement from before reasons were recorded teaches nothing.
        let Some(reason) = judged
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty() && !task_id.is_empty())
        else {
            return Ok(Derived::default());
        };
        let key = reason_key(reason);
        let added = tx.execute(
            "INSERT OR IGNORE INTO failures
             (tenant, role, reason_key, task_id, judged, reason, instruction, seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                event.tenant,
                role,
                key,
                task_id,
                event.event_id.as_str(),
                reason,
                judged.instruction.as_deref().unwrap_or(""),
                seq as i64
            ],
        )?;
        let failures: i64 = tx.query_row(
            "SELECT count(*) FROM failures WHERE tenant = ?1 AND role = ?2 AND reason_key = ?3",
            params![event.tenant, role, key],
            |r| r.get(0),
        )?;
        // Exactly once per (role, reason): when the count reaches the threshold.
        if added == 0 || failures as u64 != REPEATED {
            return Ok(Derived::default());
        }
        let mut stmt = tx.prepare(
            "SELECT task_id, instruction FROM failures
             WHERE tenant = ?1 AND role = ?2 AND reason_key = ?3 ORDER BY seq DESC LIMIT ?4",
        )?;
        let evidence: Vec<(String, String)> = stmt
            .query_map(params![event.tenant, role, key, EVIDENCE as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<Result<_, _>>()?;
        let example = evidence
            .iter()
            .map(|(_, i)| i.trim())
            .find(|i| !i.is_empty())
            .map(|i| format!(" (e.g. \"{}\")", clip(i, EXAMPLE_CHARS)))
            .unwrap_or_default();
        let statement = format!(
            "{failures} tasks of {role} failed for the same reason: {}{example}. \
             Check for this before answering, and say so if it happens again.",
            clip(reason, REASON_CHARS)
        );
        let digest = Sha256::digest(key.as_bytes());
        let subject: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let id = EventId::computed(&["lesson_learned", &event.tenant, role, &key]);
        let lesson = Envelope::new(
            event.tenant.clone(),
            namespace.split('/'),
            ACTOR,
            LessonLearned::KIND,
            LessonLearned {
                statement,
                role: role.to_string(),
                reason: clip(reason, REASON_CHARS),
                failures: failures as u64,
                subject: format!("lesson/{subject}"),
                tasks: evidence.iter().map(|(t, _)| t.to_string()).collect(),
            }
            .to_value(),
        )
        .with_id(id)
        .with_cause(event.event_id.clone());
        Ok(Derived::from(vec![lesson]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::event_kind::EventKind;
    use rusqlite::Connection;
    use serde_json::json;

    fn judged(role: &str, task: &str, answered: bool, reason: &str) -> Envelope {
        Envelope::new(
            "t",
            ["sessions", "s1"],
            "cognition/engine",
            EventKind::TaskJudged,
            json!({"task_id": task, "domain": role, "answered": answered,
                   "instruction": format!("Summarise the harbour report {task}"),
                   "answer": "", "reason": reason}),
        )
    }

    fn run(events: &[Envelope]) -> Vec<Envelope> {
        let reviewer = Reviewer::for_roles(["newsroom/editor"]);
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(SCHEMA).unwrap();
        let tx = conn.transaction().unwrap();
        let out = events
            .iter()
            .enumerate()
            .flat_map(|(i, e)| reviewer.derive(&tx, i as u64 + 1, e, ()).unwrap().events)
            .collect();
        tx.commit().unwrap();
        out
    }

    #[test]
    fn reasons_compare_without_numbers_or_case() {
        assert_eq!(
            reason_key("Timed out after 31 s"),
            reason_key("timed out  after 30 s")
        );
        assert_ne!(reason_key("timed out"), reason_key("refused: no tool"));
    }

    #[test]
    fn a_reason_repeated_becomes_one_lesson_for_the_role() {
        let events = [
            judged("newsroom/editor", "t1", false, "Timed out after 31 s"),
            judged("newsroom/editor", "t2", true, ""),
            judged("newsroom/editor", "t1", false, "Timed out after 31 s"), // redelivered
            judged("newsroom/editor", "t3", false, "timed out after 30 s"),
            judged("newsroom/editor", "t4", false, "timed out after 29 s"),
        ];
        let lessons = run(&events);
        assert_eq!(lessons.len(), 1, "{lessons:?}");
        let l = &lessons[0];
        assert_eq!(l.kind, EventKind::LessonLearned);
        assert_eq!(l.namespace_path(), "facts/newsroom/editor");
        assert_eq!(l.actor, ACTOR);
        assert_eq!(l.cause.as_ref(), Some(&events[3].event_id));
        let lesson: LessonLearned = l.payload().unwrap();
        assert_eq!(lesson.failures, 2);
        assert_eq!(lesson.tasks, ["t3", "t1"]);
        let statement = lesson.statement.as_str();
        assert!(statement.contains("timed out after 30 s"), "{statement}");
        assert!(
            statement.contains("Summarise the harbour report"),
            "{statement}"
        );
    }

    #[test]
    fn unreviewed_roles_and_different_reasons_give_nothing() {
        let events = [
            judged("newsroom/publisher", "t1", false, "timed out"),
            judged("newsroom/publisher", "t2", false, "timed out"),
            judged("newsroom/editor", "t3", false, "timed out"),
            judged(
                "newsroom/editor",
                "t4",
                false,
                "the tool archive was refused",
            ),
            judged("newsroom/editor", "t5", false, ""),
            judged("newsroom/editor", "t6", false, ""),
        ];
        assert!(run(&events).is_empty());
    }
}
