//! The durable plane: the ports of `core::durable` implemented on NATS JetStream
//! ([`jetstream::JetStream`], production and multi-machine) and on SQLite
//! ([`embedded::Embedded`], the single-machine default), the stream declarations and the
//! bootstrap that creates or verifies them.

mod any;
pub mod bootstrap;
pub mod embedded;
pub mod jetstream;
pub mod lease;
pub mod registry;
pub mod spill;
pub mod streams;
pub mod subject;

pub use crate::core::durable::{
    AppendAck, AppendRequest, ConsumerSpec, Delivery, DurableError, DurablePlane, EventLog,
    KeyValue, KvEntry, KvSpec, LogConsumer, ObjectStore, StartAt, StoredMessage,
};
pub use any::{AnyAck, AnyConsumer, AnyLog, OpenError};
pub use bootstrap::{BootstrapError, BootstrapOptions, BootstrapReport, FieldDiff};
pub use embedded::{Embedded, EmbeddedOptions};
pub use jetstream::{JetStream, JetStreamOptions};
pub use streams::StreamSpec;
