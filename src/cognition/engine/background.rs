//! What the engine knows before it routes a task, read from the projection (the memory the
//! projector derives from the log; the engine never writes it): the session's recent turns,
//! facts that share words with the instruction, and each expert's record of answered tasks.
//! The router sees all three; the expert is given the turns (the conversation it joins) and
//! recalls facts itself, through the memory mounts its declaration grants.
//! Without a projection (no projector running yet) the background is empty, never an error.

use std::path::Path;

use serde_json::{Value, json};
use tracing::debug;

use crate::memory::recall::{Recall, RecallFilter, Recalled, Score};

/// Turns of the session read back (the current one excluded).
const TURNS: usize = 5;
/// Facts recalled.
const FACTS: usize = 5;
/// Characters kept of each recalled fact.
const FACT_CHARS: usize = 300;

/// The engine's background for one task.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Background {
    /// The session's recent user turns, oldest first.
    pub turns: Vec<String>,
    /// Recalled facts (namespaces under `facts/`), best match first.
    pub facts: Vec<String>,
    /// Each expert's record, best first.
    pub scorecard: Vec<Score>,
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

    /// What the router is told: the conversation, the facts recalled across all of memory, and
    /// the experts' records.
    pub fn routing_text(&self) -> String {
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
    pub fn summary(&self) -> Value {
        json!({
            "turns": self.turns.len(),
            "facts": self.facts.len(),
            "scorecard": self.scorecard.iter().map(|s| json!({
                "domain": s.domain, "answered": s.answered, "judged": s.judged,
            })).collect::<Vec<_>>(),
        })
    }
}

fn text_of(turn: &Recalled) -> Option<String> {
    let payload: Value = serde_json::from_str(&turn.payload).ok()?;
    let text = payload.get("text")?.as_str()?.trim();
    (!text.is_empty()).then(|| text.to_string())
}
