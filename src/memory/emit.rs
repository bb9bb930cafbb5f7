//! `emit()`: capture an event on the memory log. It validates the envelope, publishes it with
//! the event id as the log's message id, and returns only after the log acknowledged the write.
//! An ambiguous failure (timeout, lost connection) is retried with the same id, so the log's
//! duplicate window keeps it to one copy; a duplicate acknowledgement is success.
//!
//! Before anything is written, every string of the payload and the result is scanned for
//! secrets (see [`crate::core::secrets`]): the values of this process's variables named like
//! keys and tokens, those the caller adds ([`Emitter::with_secrets`]), each in its encoded
//! forms, and well-known key shapes. What is cut is replaced in place and named (never its
//! value) in the payload's `redacted` list (every payload Iron writes is an object), so that a
//! redaction is itself on the log, and warned about.
//!
//! It is generic over [`EventLog`] and does not know which backend it writes to.

use std::sync::Arc;
use std::time::Duration;

use crate::core::durable::{AppendRequest, DurableError, EventLog};
use crate::core::envelope::{Envelope, EnvelopeError, MEM_SUBJECT_ROOT};
use crate::core::ids::EventId;
use crate::core::secrets::Secrets;

/// Room left for the message-id header and protocol framing when checking a payload against
/// the log's size limit before sending it.
const HEADER_ALLOWANCE: usize = 256;

/// How hard `emit()` tries.
#[derive(Debug, Clone)]
pub struct EmitPolicy {
    /// Attempts in total (the first included) for retryable failures.
    pub attempts: u32,
    /// Pause between attempts (doubled each time).
    pub backoff: Duration,
}

impl Default for EmitPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            backoff: Duration::from_millis(200),
        }
    }
}

/// A written event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emitted {
    /// Its id.
    pub event_id: EventId,
    /// Its stream sequence.
    pub seq: u64,
    /// True when the log already had it (a retry of an event that was written).
    pub duplicate: bool,
}

impl EmitError {
    /// True when writing the same event again can never succeed (it is too large, invalid or
    /// cannot be encoded), as opposed to a log that did not take it this time.
    pub fn is_permanent(&self) -> bool {
        !matches!(self, EmitError::Log { .. })
    }
}

/// Why an event was not written.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// The envelope is invalid; nothing was sent.
    #[error("event not written: {0}")]
    Envelope(#[from] EnvelopeError),
    /// The envelope could not be serialized; nothing was sent.
    #[error("event {event_id} not written: cannot serialize it: {source}")]
    Encode {
        /// Event id.
        event_id: EventId,
        /// Cause.
        #[source]
        source: serde_json::Error,
    },
    /// The envelope is larger than the log accepts; nothing was sent.
    #[error(
        "event {event_id} not written: {size} bytes is over the log's limit of {max} bytes; put large content in the object store and reference it from the payload"
    )]
    TooLarge {
        /// Event id.
        event_id: EventId,
        /// Serialized size.
        size: usize,
        /// The log's limit, less the header allowance.
        max: usize,
    },
    /// The log did not take the event.
    #[error("event {event_id} not written after {attempts} attempt(s): {source}")]
    Log {
        /// Event id (retry with it: the log deduplicates).
        event_id: EventId,
        /// Attempts made.
        attempts: u32,
        /// The last error.
        #[source]
        source: DurableError,
    },
}

/// Writes envelopes to one log under one subject root (`mem` in production).
#[derive(Debug, Clone)]
pub struct Emitter<L> {
    log: L,
    root: String,
    policy: EmitPolicy,
    secrets: Arc<Secrets>,
}

impl<L: EventLog> Emitter<L> {
    /// An emitter writing under `mem.` with the default retry policy, cutting the secrets
    /// of this process's environment.
    pub fn new(log: L) -> Self {
        Self {
            log,
            root: MEM_SUBJECT_ROOT.to_owned(),
            policy: EmitPolicy::default(),
            secrets: Arc::new(Secrets::from_environment(std::env::vars())),
        }
    }

    /// Cuts `more` secrets too (a server's `${VAR}` values, a key read from a file).
    pub fn with_secrets(mut self, more: &Secrets) -> Self {
        Arc::make_mut(&mut self.secrets).extend(more);
        self
    }

    /// Writes under another subject root (benchmarks and tests use their own stream).
    pub fn with_root(mut self, root: impl Into<String>) -> Self {
        self.root = root.into();
        self
    }

    /// Uses another retry policy.
    pub fn with_policy(mut self, policy: EmitPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The log it writes to.
    pub fn log(&self) -> &L {
        &self.log
    }

    /// Validates, publishes with `event_id` as message id, and returns after the ack.
    pub async fn emit(&self, envelope: &Envelope) -> Result<Emitted, EmitError> {
        let cut;
        let envelope = match self.redacted(envelope) {
            Some(redacted) => {
                cut = redacted;
                &cut
            }
            None => envelope,
        };
        envelope.validate()?;
        let subject = envelope.subject(&self.root)?;
        let payload = serde_json::to_vec(envelope).map_err(|source| EmitError::Encode {
            event_id: envelope.event_id.clone(),
            source,
        })?;
        let max = self.log.max_message_size().saturating_sub(HEADER_ALLOWANCE);
        if payload.len() > max {
            return Err(EmitError::TooLarge {
                event_id: envelope.event_id.clone(),
                size: payload.len(),
                max,
            });
        }
        let request = AppendRequest {
            subject,
            msg_id: envelope.event_id.to_string(),
            payload,
            expected_last_subject_seq: None,
        };
        let mut backoff = self.policy.backoff;
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.log.append(request.clone()).await {
                Ok(ack) => {
                    return Ok(Emitted {
                        event_id: envelope.event_id.clone(),
                        seq: ack.seq,
                        duplicate: ack.duplicate,
                    });
                }
                Err(e) if e.is_retryable() && attempt < self.policy.attempts => {
                    tracing::warn!(event_id = %envelope.event_id, attempt, error = %e,
                        "emit: no clear answer from the log, retrying with the same id");
                    tokio::time::sleep(backoff).await;
                    backoff = backoff.saturating_mul(2);
                }
                Err(source) => {
                    return Err(EmitError::Log {
                        event_id: envelope.event_id.clone(),
                        attempts: attempt,
                        source,
                    });
                }
            }
        }
    }
}

impl<L> Emitter<L> {
    /// `envelope` with its secrets cut and the cuts listed in its payload's `redacted`, or
    /// `None` when it holds none.
    fn redacted(&self, envelope: &Envelope) -> Option<Envelope> {
        let result_may = envelope
            .result
            .as_ref()
            .is_some_and(|r| self.secrets.may_hold(r));
        if !result_may && !self.secrets.may_hold(&envelope.payload) {
            return None;
        }
        let (mut payload, mut cuts) = self.secrets.value(envelope.payload.clone());
        let result = envelope.result.clone().map(|r| {
            let (r, mut more) = self.secrets.value(r);
            cuts.append(&mut more);
            r
        });
        if cuts.is_empty() {
            return None;
        }
        tracing::warn!(event_id = %envelope.event_id, kind = %envelope.kind.as_str(),
            cut = ?cuts, "emit: secrets cut out of an event before it was written");
        let record = serde_json::to_value(&cuts).unwrap_or_default();
        if let serde_json::Value::Object(map) = &mut payload {
            map.insert("redacted".into(), record);
        }
        Some(Envelope {
            payload,
            result,
            ..envelope.clone()
        })
    }
}

/// Writes one envelope to `log` under `mem.` with the default policy (see [`Emitter::emit`]).
pub async fn emit<L: EventLog>(log: &L, envelope: &Envelope) -> Result<Emitted, EmitError> {
    Emitter::new(log.clone()).emit(envelope).await
}
