//! The streams Iron declares in code. Bootstrap creates them or verifies them field by field.

use std::time::Duration;

use serde_json::{Value, json};

use super::subject;

/// A stream's declaration. Everything not named here is the server default, spelled out in
/// [`StreamSpec::server_config`] so that verification can compare every field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    /// Stream name.
    pub name: String,
    /// Subjects it takes.
    pub subjects: Vec<String>,
    /// Window inside which a repeated message id is dropped.
    pub duplicate_window: Duration,
    /// Refuse deleting single messages.
    pub deny_delete: bool,
    /// Refuse purging.
    pub deny_purge: bool,
    /// Most messages kept (the oldest go first); `-1`: no limit.
    pub max_msgs: i64,
    /// Oldest message kept; zero: no limit.
    pub max_age: Duration,
    /// Copies JetStream keeps, each on another server of a cluster (1 to 5).
    pub replicas: u8,
    /// Appends may expect their subject's last sequence (fencing: the jobs journal's steps).
    /// JetStream checks that on any stream; the embedded log indexes subjects, a cost to every
    /// append, only of streams that declare it, and refuses it elsewhere.
    pub fenced: bool,
}

/// Name of the memory ledger stream.
pub const MEM: &str = "MEM";
/// Name of the durable-jobs stream.
pub const JOBS: &str = "JOBS";
/// Name of the processes' output stream.
pub const LOGS: &str = "LOGS";
/// Most messages (batches of lines) `LOGS` keeps.
pub const LOGS_MAX_MSGS: i64 = 1_000_000;
/// How long `LOGS` keeps a batch.
pub const LOGS_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

impl StreamSpec {
    /// `MEM`: `mem.>`, duplicate window 120 s, append-only.
    pub fn mem() -> Self {
        Self {
            name: MEM.into(),
            subjects: vec!["mem.>".into()],
            duplicate_window: Duration::from_secs(120),
            deny_delete: true,
            deny_purge: true,
            max_msgs: -1,
            max_age: Duration::ZERO,
            replicas: 1,
            fenced: false,
        }
    }

    /// `JOBS`: `jobs.>` (journal `jobs.<mesh>.evt.<job>`, wake queue `jobs.<mesh>.wake.<job>`),
    /// duplicate window 900 s, append-only, fenced (each journal step expects the last).
    pub fn jobs() -> Self {
        Self {
            name: JOBS.into(),
            subjects: vec!["jobs.>".into()],
            duplicate_window: Duration::from_secs(900),
            deny_delete: true,
            deny_purge: true,
            max_msgs: -1,
            max_age: Duration::ZERO,
            replicas: 1,
            fenced: true,
        }
    }

    /// `LOGS`: `iron.log.>` (`iron.log.<node name tokens>`: what each process printed, in
    /// batches of lines), not a ledger: the oldest batches go past [`LOGS_MAX_MSGS`] or
    /// [`LOGS_MAX_AGE`].
    pub fn logs() -> Self {
        Self {
            name: LOGS.into(),
            subjects: vec!["iron.log.>".into()],
            duplicate_window: Duration::from_secs(120),
            deny_delete: false,
            deny_purge: false,
            max_msgs: LOGS_MAX_MSGS,
            max_age: LOGS_MAX_AGE,
            replicas: 1,
            fenced: false,
        }
    }

    /// Iron's streams.
    pub fn all() -> Vec<Self> {
        vec![Self::mem(), Self::jobs(), Self::logs()]
    }

    /// Iron's streams, each kept in `replicas` copies (`durable.replicas`).
    pub fn all_replicated(replicas: u8) -> Vec<Self> {
        Self::all()
            .into_iter()
            .map(|s| Self { replicas, ..s })
            .collect()
    }

    /// The same declaration under another name and subject root (benchmarks, tests).
    pub fn renamed(&self, name: &str, subjects: Vec<String>) -> Self {
        Self {
            name: name.into(),
            subjects,
            ..self.clone()
        }
    }

    /// True when the stream takes `subject`.
    pub fn takes(&self, subject_name: &str) -> bool {
        self.subjects
            .iter()
            .any(|pattern| subject::matches(pattern, subject_name))
    }

    /// The full JetStream configuration (the JSON of `$JS.API.STREAM.CREATE`), file storage,
    /// limits retention (the declared message count and age, no other limit), the declared
    /// number of replicas.
    pub fn server_config(&self) -> Value {
        json!({
            "name": self.name,
            "subjects": self.subjects,
            "retention": "limits",
            "max_consumers": -1,
            "max_msgs": self.max_msgs,
            "max_bytes": -1,
            "max_age": self.max_age.as_nanos() as u64,
            "max_msgs_per_subject": -1,
            "max_msg_size": -1,
            "discard": "old",
            "storage": "file",
            "num_replicas": self.replicas,
            "duplicate_window": self.duplicate_window.as_nanos() as u64,
            "compression": "none",
            "deny_delete": self.deny_delete,
            "deny_purge": self.deny_purge,
            "allow_rollup_hdrs": false,
            "allow_direct": false,
            "sealed": false,
        })
    }
}
