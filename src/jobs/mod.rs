//! Durable jobs: flows that survive restarts. A job's diary on the JOBS stream
//! (`jobs.<mesh>.evt.<job>`) records every step result, wait and decision under computed ids;
//! after any restart the runner replays the flow from the top against it. One runner per mesh
//! holds a KV lease, claims each job for its lease epoch and fences every diary write with the
//! diary's last sequence; the clock
//! turns due timers into `timer_due` events. See ARCHITECTURE.md §8.

pub mod awake;
pub mod clock;
pub mod ctx;
pub mod event;
pub mod flow;
pub mod gateway;
pub mod journal;
pub mod node;
pub mod ops;
pub mod people;
pub mod python;
pub mod run;
pub mod runner;
#[cfg(feature = "test-support")]
pub mod testflows;
pub mod triggers;

pub use ctx::{Approval, Ctx, Exit, StepError};
pub use event::{Entry, JobEvent, Stored};
pub use flow::{Flow, FlowFuture, Registry};
pub use journal::{JobState, state_of};

use crate::core::durable::DurableError;

/// What can go wrong with a job. Each variant says what happened and what to do.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The durable log failed.
    #[error(transparent)]
    Log(#[from] DurableError),
    /// The runner cannot prove its lease is still its own: it must stop writing and exit.
    #[error(
        "lease {key} is no longer this runner's; stopping without writing (the supervisor restarts the runner)"
    )]
    LeaseLost {
        /// The lease key.
        key: String,
    },
    /// Others kept writing to the diary faster than the runner could append.
    #[error("job {job}: the diary kept changing under the runner; it will be retried")]
    Contended {
        /// The job.
        job: String,
    },
    /// A diary message is not a job entry.
    #[error("{subject} seq {seq} is not a job entry: {source}")]
    Corrupt {
        /// Subject.
        subject: String,
        /// Sequence.
        seq: u64,
        /// Cause.
        #[source]
        source: serde_json::Error,
    },
    /// An entry could not be serialized.
    #[error("cannot encode a job entry: {0}")]
    Encode(#[source] serde_json::Error),
    /// The request is not acceptable (bad name, bad input, wrong state).
    #[error("{0}")]
    Invalid(String),
    /// A person's decision this deployment does not take (unsigned, forged, not allowed).
    #[error("not taken: {0}")]
    NotTaken(String),
    /// No such job.
    #[error("no job {job} in mesh {mesh}; `iron jobs list` shows the jobs")]
    NoJob {
        /// Mesh.
        mesh: String,
        /// Job id.
        job: String,
    },
}
