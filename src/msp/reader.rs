//! Reading perception at wake: each granted source is looked up by name in the KV phone book
//! and its state read over `iron/srv/SourceState` within a bounded wait. Nothing is held
//! between wakes. A source that is not listed is *not running*; one that is listed but does not
//! answer has *failed*; both are said so in the block, so the model never mistakes silence for
//! "nothing happened".

use std::time::Duration;

use hiroz::{Builder, node::ZNode};

use crate::protocol::payload::{ReadOutcome, SourceRead};

use super::{date, phone_book_key};
use crate::{
    core::durable::KeyValue,
    interfaces::{SourceState, SourceStateRequest},
    spine::{
        control::call::{CallFailure, call_while_discovering},
        durable::registry,
    },
};

/// Characters asked of each source at most.
pub const MAX_CHARS: u32 = 6_000;
/// How long a fresh client keeps retrying while the source's service is not routable yet.
const DISCOVERY: Duration = Duration::from_secs(3);

/// What reading one source gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Its state.
    Read {
        /// The state.
        text: String,
        /// Items in it.
        items: u32,
        /// When the source refreshed it (Unix ms).
        updated_at_ms: i64,
        /// The source's own note on its last refresh (a feed that failed …).
        warning: String,
    },
    /// Not listed in the phone book.
    NotRunning,
    /// Listed, but no state came back.
    Failed {
        /// Why.
        reason: String,
    },
}

/// One granted source and what reading it gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// Source name.
    pub source: String,
    /// What it shows (from AEM.md).
    pub description: String,
    /// The outcome.
    pub outcome: Outcome,
}

impl Reading {
    /// This reading as the log records it (without the state's text).
    pub fn record(&self) -> SourceRead {
        let outcome = match &self.outcome {
            Outcome::Read {
                items,
                updated_at_ms,
                warning,
                ..
            } => ReadOutcome::Read {
                items: *items,
                updated_at_ms: *updated_at_ms,
                warning: warning.clone(),
            },
            Outcome::NotRunning => ReadOutcome::NotRunning,
            Outcome::Failed { reason } => ReadOutcome::Failed {
                reason: reason.clone(),
            },
        };
        SourceRead {
            source: self.source.clone(),
            outcome,
        }
    }
}

/// Reads each of `sources` (name, description) of `mesh` for `reader` (`<mesh>/<role>`),
/// each within `timeout`.
pub async fn read_all<K: KeyValue>(
    node: &ZNode,
    kv: &K,
    mesh: &str,
    sources: &[(String, String)],
    reader: &str,
    timeout: Duration,
) -> Vec<Reading> {
    let mut out = Vec::with_capacity(sources.len());
    for (name, description) in sources {
        let outcome = read_one(node, kv, mesh, name, reader, timeout).await;
        out.push(Reading {
            source: name.clone(),
            description: description.clone(),
            outcome,
        });
    }
    out
}

async fn read_one<K: KeyValue>(
    node: &ZNode,
    kv: &K,
    mesh: &str,
    name: &str,
    reader: &str,
    timeout: Duration,
) -> Outcome {
    let listing = match registry::lookup(kv, &phone_book_key(mesh, name)).await {
        Ok(Some(l)) => l,
        Ok(None) => return Outcome::NotRunning,
        Err(e) => {
            return Outcome::Failed {
                reason: format!("the phone book could not be read: {e}"),
            };
        }
    };
    let client = match node.create_client::<SourceState>(&listing.endpoint).build() {
        Ok(c) => c,
        Err(e) => {
            return Outcome::Failed {
                reason: format!("no client of {}: {e}", listing.endpoint),
            };
        }
    };
    let request = SourceStateRequest {
        reader: reader.to_string(),
        max_chars: MAX_CHARS,
    };
    let response = match call_while_discovering(&client, &request, timeout, DISCOVERY).await {
        Ok(r) => r,
        Err(CallFailure::TimedOut) => {
            return Outcome::Failed {
                reason: format!("{} did not answer within {timeout:?}", listing.endpoint),
            };
        }
        Err(CallFailure::Unreachable(e)) => {
            return Outcome::Failed {
                reason: format!("{} is not reachable: {e}", listing.endpoint),
            };
        }
    };
    if !response.ok {
        return Outcome::Failed {
            reason: response.error,
        };
    }
    Outcome::Read {
        text: response.text,
        items: response.items,
        updated_at_ms: response.updated_at_ms,
        warning: response.error,
    }
}

/// The perception block: one section per source, in the order given.
pub fn compose(readings: &[Reading]) -> String {
    let mut out = String::new();
    for r in readings {
        let head = if r.description.is_empty() {
            r.source.clone()
        } else {
            format!("{} ({})", r.source, r.description.trim_end_matches('.'))
        };
        match &r.outcome {
            Outcome::Read {
                text,
                items,
                updated_at_ms,
                warning,
            } => {
                out.push_str(&format!(
                    "### {head}\nAs of {}, {items} item(s):\n{}\n",
                    date::utc_minute(updated_at_ms.div_euclid(1000)),
                    text.trim_end()
                ));
                // The source's note, less what its text already says (a text cut to the
                // reader's limit may have lost it).
                let unsaid: Vec<&str> = warning
                    .lines()
                    .filter(|l| !l.trim().is_empty() && !text.contains(l.trim()))
                    .collect();
                if !unsaid.is_empty() {
                    out.push_str(&format!("Note from the source: {}\n", unsaid.join("\n")));
                }
            }
            Outcome::NotRunning => out.push_str(&format!(
                "### {head}\nNot running: nothing can be known from this source now; do not assume it is quiet.\n"
            )),
            Outcome::Failed { reason } if reason.contains('\n') => out.push_str(&format!(
                "### {head}\nUnavailable: {}\nNothing can be known from this source now; do not assume it is quiet.\n",
                reason.trim_end()
            )),
            Outcome::Failed { reason } => out.push_str(&format!(
                "### {head}\nUnavailable ({reason}): nothing can be known from this source now; do not assume it is quiet.\n"
            )),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_says_what_was_read_and_what_was_not() {
        let readings = vec![
            Reading {
                source: "official_feeds".into(),
                description: "Statements from official bodies.".into(),
                outcome: Outcome::Read {
                    text: "- 2026-11-30 14:05 UTC · Ministry · A1 closed\n".into(),
                    items: 1,
                    updated_at_ms: 1_796_047_500_000,
                    warning: String::new(),
                },
            },
            Reading {
                source: "news_wires".into(),
                description: String::new(),
                outcome: Outcome::NotRunning,
            },
            Reading {
                source: "tides".into(),
                description: String::new(),
                outcome: Outcome::Read {
                    text: "- undated · Port · Spring tide\nFeeds: 2 listed; 1 read, 0 truncated, 1 failing.\n- failing · b.xml (l.txt:2): HTTP 404 Not Found\n".into(),
                    items: 1,
                    updated_at_ms: 1_796_047_500_000,
                    warning: "failing · b.xml (l.txt:2): HTTP 404 Not Found".into(),
                },
            },
            Reading {
                source: "harbour".into(),
                description: String::new(),
                outcome: Outcome::Failed {
                    reason: "every feed fails (1 listed); nothing can be shown:\nfailing · h.xml (h.txt:1): not found".into(),
                },
            },
        ];
        let block = compose(&readings);
        assert!(block.contains("### official_feeds (Statements from official bodies)\nAs of 2026-11-30 14:05 UTC, 1 item(s):\n- 2026-11-30"), "{block}");
        assert!(block.contains("### news_wires\nNot running"), "{block}");
        assert!(
            !block.contains("Note from the source"),
            "what the text says is not said twice: {block}"
        );
        assert!(
            block.contains("### harbour\nUnavailable: every feed fails (1 listed); nothing can be shown:\nfailing · h.xml (h.txt:1): not found\nNothing can be known"),
            "{block}"
        );
        // What the log records of them (`perception_read`): the outcome, never the text.
        let recorded: Vec<SourceRead> = readings.iter().map(Reading::record).collect();
        let summary = serde_json::to_value(&recorded).unwrap();
        assert_eq!(summary[0]["status"], "read");
        assert_eq!(summary[0]["items"], 1);
        assert!(summary[0].get("text").is_none());
        assert_eq!(summary[1]["status"], "not_running");
    }
}
