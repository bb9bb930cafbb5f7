//! What the engine knows before it routes a task, read from the projection (the memory the
//! projector derives from the log; the engine never writes it): the session's recent turns,
//! facts that share words with the instruction, each expert's record of answered tasks, and
//! the perception sources whose items are about what the instruction asks.
//! The router sees all four; the expert is given the turns (the conversation it joins) and
//! recalls facts and reads its sources itself, through what its declaration grants.
//! Without a projection (no projector running yet) the background is empty, never an error.

use crate::protocol::payload::{self, ChatTurn, RoutingContext, SourceChanged};
use std::path::Path;

use serde_json::Value;
use tracing::debug;

use crate::core::event_kind::EventKind;
use crate::llm::offline::text::terms;
use crate::llm::router::Known;
use crate::memory::recall::{Recall, RecallError, RecallFilter, Recalled, Score};

/// Turns of the session read back (the current one excluded).
const TURNS: usize = 5;
/// Facts recalled.
const FACTS: usize = 5;
/// Characters kept of each recalled fact.
const FACT_CHARS: usize = 300;
/// Perception events (`source_changed`) searched for items about the instruction.
const PERCEPTIONS: usize = 20;

/// The engine's background for one task.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Background {
    /// The session's recent user turns, oldest first.
    pub turns: Vec<String>,
    /// Recalled facts (namespaces under `facts/`), best match first.
    pub facts: Vec<String>,
    /// Each expert's record, best first.
    pub scorecard: Vec<Score>,
    /// Perception sources (`<mesh>/<source>`) with an item about the instruction.
    pub perceived: Vec<String>,
}

impl Background {
    /// Reads the background of a task from the projection at `projection`: the turns of
    /// `session` (but not the task's own turns, `current`: event ids), facts relevant to
    /// `instruction`, and the scorecard of `tenant`.
    pub fn gather(
        projection: &Path,
        tenant: &str,
        session: &str,
        current: &[String],
        instruction: &str,
    ) -> Background {
        if !projection.is_file() {
            return Background::default();
        }
        match Self::read(projection, tenant, session, current, instruction) {
            Ok(b) => b,
            Err(e) => {
                debug!("no background from {}: {e}", projection.display());
                Background::default()
            }
        }
    }

    fn read(
        projection: &Path,
        tenant: &str,
        session: &str,
        current: &[String],
        instruction: &str,
    ) -> Result<Background, crate::memory::recall::RecallError> {
        let recall = Recall::open(projection)?;
        let turns = if session.is_empty() {
            Vec::new()
        } else {
            let namespace = format!("sessions/{session}");
            let mut turns: Vec<String> = recall
                .latest(&namespace, "chat_turn", TURNS + current.len())?
                .into_iter()
                .filter(|t| !current.contains(&t.event_id))
                .filter_map(|t| text_of(&t))
                .collect();
            let excess = turns.len().saturating_sub(TURNS);
            turns.drain(..excess);
            turns
        };
        let facts = recall
            .recall_any(
                instruction,
                &RecallFilter {
                    prefix: Some("facts".into()),
                    tenant: Some(tenant.to_string()),
                    limit: FACTS,
                    ..RecallFilter::default()
                },
            )?
            .into_iter()
            .map(|f| f.payload.chars().take(FACT_CHARS).collect())
            .collect();
        Ok(Background {
            turns,
            facts,
            scorecard: recall.scorecard(tenant)?,
            perceived: perceived(&recall, tenant, instruction)?,
        })
    }

    /// The conversation the expert joins: the session's earlier turns (empty when none).
    pub fn conversation_text(&self) -> String {
        let mut out = String::new();
        if !self.turns.is_empty() {
            out.push_str("Earlier in this conversation the user said:\n");
            for t in &self.turns {
                out.push_str(&format!("- {t}\n"));
            }
        }
        out
    }

    /// What the router is told: the conversation, the facts recalled across all of memory, the
    /// experts' records and the sources that have seen what the instruction is about.
    pub fn known(&self) -> Known {
        let mut text = self.routing_text();
        if !self.perceived.is_empty() {
            text.push_str("Perception sources with recent items about this:\n");
            for s in &self.perceived {
                text.push_str(&format!("- {s}\n"));
            }
        }
        Known {
            text,
            perceived: self.perceived.clone(),
        }
    }

    fn routing_text(&self) -> String {
        let mut out = self.conversation_text();
        if !self.facts.is_empty() {
            out.push_str("Recalled facts:\n");
            for f in &self.facts {
                out.push_str(&format!("- {f}\n"));
            }
        }
        if !self.scorecard.is_empty() {
            out.push_str("Experts' records (tasks answered / judged):\n");
            for s in &self.scorecard {
                out.push_str(&format!("- {}: {}/{}\n", s.domain, s.answered, s.judged));
            }
        }
        out
    }

    /// A summary for the `routing_decided` event.
    pub fn summary(&self) -> RoutingContext {
        RoutingContext {
            turns: self.turns.len(),
            facts: self.facts.len(),
            scorecard: self
                .scorecard
                .iter()
                .map(|s| payload::Score {
                    domain: s.domain.clone(),
                    answered: s.answered,
                    judged: s.judged,
                })
                .collect(),
            perceived: self.perceived.clone(),
        }
    }
}

/// The perception sources (`<mesh>/<source>`, first found first) with an item that shares at
/// least half of the instruction's words: the same bar the offline answer uses to quote a line,
/// so a question routed for what a source saw finds it there.
fn perceived(recall: &Recall, tenant: &str, instruction: &str) -> Result<Vec<String>, RecallError> {
    let mut wanted = terms(instruction);
    wanted.sort();
    wanted.dedup();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let need = wanted.len().div_ceil(2);
    let filter = RecallFilter {
        prefix: Some("perception".into()),
        tenant: Some(tenant.to_string()),
        limit: PERCEPTIONS,
        ..RecallFilter::default()
    };
    let mut out: Vec<String> = Vec::new();
    for event in recall.recall_any(instruction, &filter)? {
        let Some(source) = event.namespace.strip_prefix("perception/") else {
            continue;
        };
        if event.kind != EventKind::SourceChanged.as_str() || out.iter().any(|s| s == source) {
            continue;
        }
        let Ok(changed) = serde_json::from_str::<SourceChanged>(&event.payload) else {
            continue;
        };
        let about = changed.new.iter().any(|item| {
            let have = terms(&strings_of(item));
            wanted.iter().filter(|w| have.contains(w)).count() >= need
        });
        if about {
            out.push(source.to_string());
        }
    }
    Ok(out)
}

/// Every string of an item, joined: what a source's item says, whatever its fields.
fn strings_of(item: &Value) -> String {
    match item {
        Value::String(s) => s.clone(),
        Value::Object(m) => m.values().map(strings_of).collect::<Vec<_>>().join(" "),
        Value::Array(a) => a.iter().map(strings_of).collect::<Vec<_>>().join(" "),
        _ => String::new(),
    }
}

fn text_of(turn: &Recalled) -> Option<String> {
    let turn: ChatTurn = serde_json::from_str(&turn.payload).ok()?;
    let text = turn.text.trim();
    (!text.is_empty()).then(|| text.to_string())
}
