//! The durable-plane ports: an append-only event log, a key-value store with compare-and-set
//! and a document store. Backends (JetStream, embedded SQLite) live in `spine::durable`; code
//! above the spine is generic over these traits and never learns which backend it runs on.

use std::future::Future;
use std::time::Duration;

/// A boxed error from a backend, kept as the cause of a [`DurableError`].
pub type BackendError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What can go wrong on the durable plane. Each variant says what happened and what to do.
#[derive(Debug, thiserror::Error)]
pub enum DurableError {
    /// No answer in time. A write may or may not have happened: retry it with the same id.
    #[error(
        "{op}: no answer from the durable log within {after:?}; the write may or may not have happened, retry with the same message id"
    )]
    Timeout {
        /// The operation that waited.
        op: &'static str,
        /// How long it waited.
        after: Duration,
    },
    /// The log cannot be reached (connection lost, database unavailable).
    #[error(
        "{op}: the durable log is unavailable ({source}); check that the server or database is up"
    )]
    Unavailable {
        /// The operation.
        op: &'static str,
        /// The cause.
        #[source]
        source: BackendError,
    },
    /// No stream takes this subject.
    #[error("no stream takes subject {subject:?}; run the durable-plane bootstrap first")]
    NoStream {
        /// The subject written to.
        subject: String,
    },
    /// The message is larger than the log accepts.
    #[error(
        "message of {size} bytes is over the log's limit of {max} bytes; send less in one event, or keep the bulk in the object store and name it"
    )]
    TooLarge {
        /// Size of the message (payload plus headers where known).
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Fencing failed: someone else wrote to the subject since the expected sequence.
    #[error(
        "wrong last sequence on {subject:?}: expected {expected}; another writer got there first, re-read before writing"
    )]
    WrongLastSequence {
        /// The subject.
        subject: String,
        /// The sequence the writer expected to be last.
        expected: u64,
    },
    /// An append expected its subject's last sequence on a stream that does not declare
    /// fencing (`StreamSpec::fenced`): the embedded log keeps no index to check it with.
    #[error(
        "an append to {subject:?} expected its last sequence, but stream {stream} does not declare fencing"
    )]
    NotFenced {
        /// The stream.
        stream: String,
        /// The subject written to.
        subject: String,
    },
    /// The log is append-only and refused a delete or a purge.
    #[error("{op} refused on stream {stream}: the log is append-only (deny_delete / deny_purge)")]
    Denied {
        /// `delete` or `purge`.
        op: &'static str,
        /// The stream.
        stream: String,
        /// What the backend said, if anything.
        #[source]
        source: Option<BackendError>,
    },
    /// A KV create found the key already present.
    #[error(
        "key {key:?} already exists in bucket {bucket}; read it and update by revision instead"
    )]
    KeyExists {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
    },
    /// A KV update or delete named a revision that is not the current one.
    #[error(
        "key {key:?} in bucket {bucket} is not at revision {expected}; someone else changed it (or it expired), re-read it"
    )]
    WrongRevision {
        /// Bucket.
        bucket: String,
        /// Key.
        key: String,
        /// The revision the caller expected.
        expected: u64,
    },
    /// A stream, bucket or consumer does not exist.
    #[error("{what} does not exist; run the durable-plane bootstrap or open it first")]
    NotFound {
        /// What was looked for.
        what: String,
    },
    /// A name (stream, bucket, key, subject) is not acceptable to the log.
    #[error("invalid {what} {name:?}: {reason}")]
    InvalidName {
        /// Kind of name.
        what: &'static str,
        /// The name.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// Anything else the backend reported.
    #[error("{op} failed: {source}")]
    Backend {
        /// The operation.
        op: &'static str,
        /// The cause.
        #[source]
        source: BackendError,
    },
}

impl DurableError {
    /// True when retrying the same operation (with the same message id) may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            DurableError::Timeout { .. } | DurableError::Unavailable { .. }
        )
    }
}

/// A write to the log.
#[derive(Debug, Clone)]
pub struct AppendRequest {
    /// Subject; the stream is chosen by it.
    pub subject: String,
    /// Message id used for deduplication inside the stream's duplicate window.
    pub msg_id: String,
    /// Opaque bytes (Iron writes JSON envelopes).
    pub payload: Vec<u8>,
    /// Fencing: the write succeeds only if the last message on `subject` has this stream
    /// sequence (0 = no message on the subject yet).
    pub expected_last_subject_seq: Option<u64>,
}

/// The log's acknowledgement of a durable write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendAck {
    /// Stream that stored it.
    pub stream: String,
    /// Its stream sequence (for a duplicate, the sequence of the original).
    pub seq: u64,
    /// True when the id was already stored inside the duplicate window and nothing was written.
    pub duplicate: bool,
}

/// A message as stored in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// Stream sequence, starting at 1, without gaps in an append-only stream.
    pub seq: u64,
    /// Subject it was written to.
    pub subject: String,
    /// The message id it was written with, if any (foreign publishers may omit it).
    pub msg_id: Option<String>,
    /// The bytes.
    pub payload: Vec<u8>,
    /// When the log stored it (ms since the epoch; 0 where unknown).
    pub stored_ms: u64,
}

/// Where a consumer starts when it is first created. A durable consumer that already exists
/// resumes after its last acknowledged message, whatever this says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// From the first message.
    First,
    /// From this stream sequence.
    Sequence(u64),
    /// Only messages written after the consumer is created.
    New,
}

/// How to consume a stream.
#[derive(Debug, Clone)]
pub struct ConsumerSpec {
    /// Stream name.
    pub stream: String,
    /// Durable name; `None` for a consumer that lives only as long as its handle.
    pub durable: Option<String>,
    /// Subject filter (NATS wildcards), for example `mem.>`.
    pub filter_subject: String,
    /// Where a new consumer starts.
    pub start: StartAt,
    /// How long an unacknowledged delivery waits before it is delivered again.
    pub ack_wait: Duration,
}

/// One delivery to a consumer.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The message.
    pub message: StoredMessage,
    /// How many times it has been delivered (1 = first time), where the backend knows.
    pub delivered: u64,
}

/// The append-only event log.
pub trait EventLog: Clone + Send + Sync + 'static {
    /// The consumer handle this backend hands out.
    type Consumer: LogConsumer;

    /// Appends one message and returns only after the log acknowledged it as durable.
    fn append(
        &self,
        request: AppendRequest,
    ) -> impl Future<Output = Result<AppendAck, DurableError>> + Send;

    /// Reads up to `max` stored messages of `stream` matching `filter_subject`, from sequence
    /// `from_seq` on, in log order. Returns what is stored now; it does not wait for more.
    fn read(
        &self,
        stream: &str,
        filter_subject: &str,
        from_seq: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<StoredMessage>, DurableError>> + Send;

    /// The sequence of the last message in `stream` (0 when empty).
    fn last_sequence(&self, stream: &str)
    -> impl Future<Output = Result<u64, DurableError>> + Send;

    /// Opens a consumer (creating a durable one if it does not exist yet).
    fn consumer(
        &self,
        spec: ConsumerSpec,
    ) -> impl Future<Output = Result<Self::Consumer, DurableError>> + Send;

    /// Tries to delete one message. Iron's streams deny it; the method exists so the contract
    /// suite can prove the refusal ([`DurableError::Denied`]).
    fn delete_message(
        &self,
        stream: &str,
        seq: u64,
    ) -> impl Future<Output = Result<(), DurableError>> + Send;

    /// Tries to purge a stream. Iron's streams deny it ([`DurableError::Denied`]).
    fn purge_stream(&self, stream: &str) -> impl Future<Output = Result<(), DurableError>> + Send;

    /// The largest message (payload plus headers) the log accepts, in bytes.
    fn max_message_size(&self) -> usize;
}

/// A consumer: deliveries in log order, explicit acknowledgement.
pub trait LogConsumer: Send + 'static {
    /// What acknowledges one delivery.
    type Ack: Send + 'static;

    /// The next delivery, or `None` when nothing arrived within `wait`. Cancel-safe: a call
    /// dropped before it returns takes no delivery with it (the projector fetches while it
    /// writes, and drops the fetch when the write ends).
    fn next(
        &mut self,
        wait: Duration,
    ) -> impl Future<Output = Result<Option<(Delivery, Self::Ack)>, DurableError>> + Send;

    /// Acknowledges deliveries; a durable consumer resumes after them when reopened.
    fn ack(
        &mut self,
        acks: Vec<Self::Ack>,
    ) -> impl Future<Output = Result<(), DurableError>> + Send;
}

/// A key-value bucket's declaration. Every write resets a key's age; a key older than `ttl`
/// is gone (TTL is per bucket, which every server ≥ 2.10 supports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvSpec {
    /// Bucket name (letters, digits, `_`, `-`).
    pub bucket: String,
    /// Time to live of every entry; `None` keeps entries until deleted.
    pub ttl: Option<Duration>,
}

/// A value and its revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvEntry {
    /// The bytes.
    pub value: Vec<u8>,
    /// Revision to pass to update or delete.
    pub revision: u64,
}

/// Key-value buckets with compare-and-set: runner leases, the perception phone book, a TTL
/// scratchpad.
pub trait KeyValue: Clone + Send + Sync + 'static {
    /// Creates the bucket if missing; refuses an existing bucket with a different TTL.
    fn kv_open(&self, spec: &KvSpec) -> impl Future<Output = Result<(), DurableError>> + Send;
    /// The current value, or `None` if absent, deleted or expired.
    fn kv_get(
        &self,
        bucket: &str,
        key: &str,
    ) -> impl Future<Output = Result<Option<KvEntry>, DurableError>> + Send;
    /// Writes only if the key is absent (or deleted, or expired); returns the revision.
    fn kv_create(
        &self,
        bucket: &str,
        key: &str,
        value: Vec<u8>,
    ) -> impl Future<Output = Result<u64, DurableError>> + Send;
    /// Writes only if the key is at `revision`; returns the new revision.
    fn kv_update(
        &self,
        bucket: &str,
        key: &str,
        value: Vec<u8>,
        revision: u64,
    ) -> impl Future<Output = Result<u64, DurableError>> + Send;
    /// Deletes only if the key is at `revision`.
    fn kv_delete(
        &self,
        bucket: &str,
        key: &str,
        revision: u64,
    ) -> impl Future<Output = Result<(), DurableError>> + Send;
}

/// A store for documents too large for the log.
pub trait ObjectStore: Clone + Send + Sync + 'static {
    /// Creates the bucket if missing.
    fn object_open(&self, bucket: &str) -> impl Future<Output = Result<(), DurableError>> + Send;
    /// Stores (or replaces) a document.
    fn object_put(
        &self,
        bucket: &str,
        name: &str,
        data: Vec<u8>,
    ) -> impl Future<Output = Result<(), DurableError>> + Send;
    /// Reads a document, `None` if absent.
    fn object_get(
        &self,
        bucket: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<Vec<u8>>, DurableError>> + Send;
}

/// Everything the durable plane offers; both backends implement it.
pub trait DurablePlane: EventLog + KeyValue + ObjectStore {}
impl<T: EventLog + KeyValue + ObjectStore> DurablePlane for T {}
