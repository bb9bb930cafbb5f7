//! Event ids: time-ordered random ids for captured events, computed ids for events whose
//! identity is logical (a job step, a timer tick), so that a retried write is the same write.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Longest id accepted; JetStream message ids travel in a header and are kept in a dedup table.
pub const MAX_EVENT_ID_LEN: usize = 128;

/// The id of one event. It is also the log's message id, so a retried publish is deduplicated.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EventId(String);

/// An id that cannot be used as an event id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid event id {id:?}: {reason}; use EventId::capture() or EventId::computed(..)")]
pub struct InvalidEventId {
    /// The rejected text.
    pub id: String,
    /// Why it was rejected.
    pub reason: &'static str,
}

impl EventId {
    /// A fresh, time-ordered id (UUIDv7) for a captured event. Create it once per event and keep
    /// it across retries.
    pub fn capture() -> Self {
        Self(uuid::Uuid::now_v7().to_string())
    }

    /// An id computed from the logical identity of an event (for example mesh, job, step), so
    /// that every attempt to record the same thing yields the same id. Parts are length-prefixed
    /// before hashing, so `["ab", "c"]` and `["a", "bc"]` differ.
    pub fn computed(parts: &[&str]) -> Self {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part.as_bytes());
        }
        Self(hex::encode(hasher.finalize()))
    }

    /// Accepts an id from outside (a stored event): non-empty, at most [`MAX_EVENT_ID_LEN`]
    /// bytes, printable ASCII without spaces.
    pub fn parse(id: &str) -> Result<Self, InvalidEventId> {
        let reason = if id.is_empty() {
            Some("it is empty")
        } else if id.len() > MAX_EVENT_ID_LEN {
            Some("it is longer than 128 bytes")
        } else if !id.bytes().all(|b| b.is_ascii_graphic()) {
            Some("it contains whitespace, control or non-ASCII characters")
        } else {
            None
        };
        match reason {
            Some(reason) => Err(InvalidEventId {
                id: id.to_owned(),
                reason,
            }),
            None => Ok(Self(id.to_owned())),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for EventId {
    type Error = InvalidEventId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<EventId> for String {
    fn from(id: EventId) -> Self {
        id.0
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_ids_are_unique_and_time_ordered() {
        let a = EventId::capture();
        let b = EventId::capture();
        assert_ne!(a, b);
        assert!(a < b, "UUIDv7 ids sort by creation time: {a} then {b}");
    }

    #[test]
    fn computed_ids_depend_on_every_part_and_its_boundaries() {
        let one = EventId::computed(&["newsroom", "job-1", "fetch"]);
        assert_eq!(one, EventId::computed(&["newsroom", "job-1", "fetch"]));
        assert_ne!(one, EventId::computed(&["newsroom", "job-1", "fetch2"]));
        assert_ne!(
            EventId::computed(&["ab", "c"]),
            EventId::computed(&["a", "bc"])
        );
        assert_eq!(one.as_str().len(), 64);
    }

    #[test]
    fn parse_rejects_bad_ids() {
        assert!(EventId::parse("").is_err());
        assert!(EventId::parse("a b").is_err());
        assert!(EventId::parse(&"x".repeat(129)).is_err());
        assert!(EventId::parse("0190-abc").is_ok());
    }
}
