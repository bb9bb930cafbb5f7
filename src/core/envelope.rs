//! The envelope every memory event travels in, namespace validation and subject building.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::event_kind::EventKind;
use super::ids::EventId;

/// First token of every memory subject (`mem.<tenant>.<namespace tokens>`).
pub const MEM_SUBJECT_ROOT: &str = "mem";

/// One event on the memory log. `ts` is milliseconds since the Unix epoch (UTC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Unique id; also the log's message id, so a retried publish is dropped by dedup.
    pub event_id: EventId,
    /// When the event was captured, in milliseconds since the Unix epoch.
    pub ts: u64,
    /// The tenant the event belongs to (one subject token).
    pub tenant: String,
    /// Namespace path, for example `["facts", "newsroom", "analyst"]`; scopes are its prefixes.
    pub namespace: Vec<String>,
    /// Who wrote it (node name, expert id, user).
    pub actor: String,
    /// What it records.
    pub kind: EventKind,
    /// The event's content.
    pub payload: Value,
    /// The outcome, when the event records something that has one.
    #[serde(default)]
    pub result: Option<Value>,
    /// The event that caused this one.
    #[serde(default)]
    pub cause: Option<EventId>,
}

/// Why an envelope cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// A tenant or namespace token would corrupt the subject hierarchy.
    #[error(
        "invalid {field} token {token:?}: {reason}; tokens must be non-empty and contain no '.', '*', '>' or whitespace"
    )]
    InvalidToken {
        /// `tenant` or `namespace[i]`.
        field: String,
        /// The rejected token.
        token: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The namespace has no tokens.
    #[error("namespace is empty; give at least one token, for example [\"facts\", \"system\"]")]
    EmptyNamespace,
    /// The actor is empty.
    #[error("actor is empty; name the node, expert or user that wrote the event")]
    EmptyActor,
    /// The kind is not one this build declares.
    #[error(
        "event kind {0:?} is not declared in core::event_kind::EventKind; add it there before writing it"
    )]
    UnknownKind(String),
}

/// Checks one subject token. `field` names it in the error (`tenant`, `namespace[2]`).
pub fn validate_token(field: &str, token: &str) -> Result<(), EnvelopeError> {
    let reason = if token.is_empty() {
        Some("it is empty")
    } else if token.contains('.') {
        Some("it contains '.'")
    } else if token.contains('*') {
        Some("it contains '*'")
    } else if token.contains('>') {
        Some("it contains '>'")
    } else if token.chars().any(char::is_whitespace) {
        Some("it contains whitespace")
    } else if token.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(EnvelopeError::InvalidToken {
            field: field.to_owned(),
            token: token.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Checks a tenant and namespace and builds `<root>.<tenant>.<tokens…>`.
pub fn subject_for(
    root: &str,
    tenant: &str,
    namespace: &[String],
) -> Result<String, EnvelopeError> {
    validate_token("tenant", tenant)?;
    if namespace.is_empty() {
        return Err(EnvelopeError::EmptyNamespace);
    }
    let mut subject = format!("{root}.{tenant}");
    for (i, token) in namespace.iter().enumerate() {
        validate_token(&format!("namespace[{i}]"), token)?;
        subject.push('.');
        subject.push_str(token);
    }
    Ok(subject)
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Envelope {
    /// A new captured event with a fresh UUIDv7 id, the current time, no result and no cause.
    pub fn new(
        tenant: impl Into<String>,
        namespace: impl IntoIterator<Item = impl Into<String>>,
        actor: impl Into<String>,
        kind: EventKind,
        payload: Value,
    ) -> Self {
        Self {
            event_id: EventId::capture(),
            ts: now_ms(),
            tenant: tenant.into(),
            namespace: namespace.into_iter().map(Into::into).collect(),
            actor: actor.into(),
            kind,
            payload,
            result: None,
            cause: None,
        }
    }

    /// Replaces the id (for events whose id is computed from their logical identity).
    pub fn with_id(mut self, id: EventId) -> Self {
        self.event_id = id;
        self
    }

    /// Sets the event that caused this one.
    pub fn with_cause(mut self, cause: EventId) -> Self {
        self.cause = Some(cause);
        self
    }

    /// Sets the result.
    pub fn with_result(mut self, result: Value) -> Self {
        self.result = Some(result);
        self
    }

    /// Checks everything that can be checked without the log: tokens, actor, kind.
    pub fn validate(&self) -> Result<(), EnvelopeError> {
        subject_for(MEM_SUBJECT_ROOT, &self.tenant, &self.namespace)?;
        if self.actor.trim().is_empty() {
            return Err(EnvelopeError::EmptyActor);
        }
        if let EventKind::Unknown(name) = &self.kind {
            return Err(EnvelopeError::UnknownKind(name.clone()));
        }
        Ok(())
    }

    /// The subject under `root` (normally [`MEM_SUBJECT_ROOT`]): `<root>.<tenant>.<tokens…>`.
    pub fn subject(&self, root: &str) -> Result<String, EnvelopeError> {
        subject_for(root, &self.tenant, &self.namespace)
    }

    /// The namespace joined with `/`, the form scopes and replay prefixes use.
    pub fn namespace_path(&self) -> String {
        self.namespace.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(ns: &[&str]) -> Envelope {
        Envelope::new(
            "acme",
            ns.iter().copied(),
            "tester",
            EventKind::FactLearned,
            json!({}),
        )
    }

    #[test]
    fn subject_is_root_tenant_and_tokens() {
        let e = env(&["facts", "newsroom", "analyst"]);
        assert_eq!(e.subject("mem").unwrap(), "mem.acme.facts.newsroom.analyst");
        assert_eq!(e.namespace_path(), "facts/newsroom/analyst");
    }

    #[test]
    fn bad_tokens_are_rejected_with_the_field_named() {
        for (token, reason) in [
            ("", "empty"),
            ("a.b", "'.'"),
            ("a*", "'*'"),
            ("x>", "'>'"),
            ("a b", "whitespace"),
            ("tab\t", "whitespace"),
        ] {
            let err = env(&["facts", token]).validate().unwrap_err();
            let text = err.to_string();
            assert!(text.contains("namespace[1]"), "{text}");
            assert!(text.contains(reason), "{text}");
        }
        let err = Envelope::new("a.b", ["facts"], "t", EventKind::Decision, json!(1))
            .validate()
            .unwrap_err();
        assert!(err.to_string().contains("tenant"));
        assert_eq!(
            env(&[]).validate().unwrap_err(),
            EnvelopeError::EmptyNamespace
        );
    }

    #[test]
    fn unknown_kinds_and_empty_actors_are_refused() {
        let mut e = env(&["facts"]);
        e.kind = EventKind::Unknown("mystery".into());
        assert!(matches!(e.validate(), Err(EnvelopeError::UnknownKind(_))));
        let mut e = env(&["facts"]);
        e.actor = " ".into();
        assert_eq!(e.validate(), Err(EnvelopeError::EmptyActor));
    }

    #[test]
    fn envelope_json_has_the_documented_fields() {
        let e = env(&["facts"]).with_cause(EventId::computed(&["x"]));
        let v = serde_json::to_value(&e).unwrap();
        for field in [
            "event_id",
            "ts",
            "tenant",
            "namespace",
            "actor",
            "kind",
            "payload",
            "result",
            "cause",
        ] {
            assert!(v.get(field).is_some(), "missing {field}");
        }
        assert_eq!(v["kind"], "fact_learned");
        let back: Envelope = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
    }
}
