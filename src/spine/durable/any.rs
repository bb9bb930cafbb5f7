//! One handle for whichever backend the configuration chose, so nodes and commands are written
//! once: `AnyLog` implements the durable-plane ports by delegating to the backend inside, and
//! spills events larger than one of its messages to the object store ([`super::spill`]).

use std::time::Duration;

use tracing::info;

use super::{
    BootstrapError, BootstrapOptions, Embedded, EmbeddedOptions, JetStream, JetStreamOptions,
    StreamSpec, bootstrap, embedded::EmbeddedConsumer, jetstream::JetStreamConsumer, spill,
};
use crate::core::{
    config::{Backend, Config},
    durable::{
        AppendAck, AppendRequest, ConsumerSpec, Delivery, DurableError, EventLog, KeyValue,
        KvEntry, KvSpec, LogConsumer, ObjectStore, StoredMessage,
    },
};

/// The configured backend.
#[derive(Clone, Debug)]
pub enum AnyLog {
    Embedded(Embedded),
    JetStream(Box<JetStream>),
}

impl From<Embedded> for AnyLog {
    fn from(log: Embedded) -> Self {
        AnyLog::Embedded(log)
    }
}

impl From<JetStream> for AnyLog {
    fn from(log: JetStream) -> Self {
        AnyLog::JetStream(Box::new(log))
    }
}

/// A consumer of either backend, putting spilled payloads back as it delivers.
pub struct AnyConsumer {
    inner: Consumer,
    log: AnyLog,
    /// A delivery taken from the backend whose spilled payload is still being read: kept here
    /// so that a `next` dropped meanwhile loses nothing (the next call finishes it).
    pending: Option<(Delivery, AnyAck)>,
}

enum Consumer {
    Embedded(EmbeddedConsumer),
    JetStream(Box<JetStreamConsumer>),
}

/// An acknowledgement token of either backend (short-lived: one per delivery, acked at once).
#[allow(clippy::large_enum_variant)]
pub enum AnyAck {
    Embedded(<EmbeddedConsumer as LogConsumer>::Ack),
    JetStream(<JetStreamConsumer as LogConsumer>::Ack),
}

/// Why the configured backend could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot create the state directory {path}: {source}")]
    StateDir {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "cannot reach NATS at {url}: {source} (start one with `iron up --nats auto`, or set durable.backend: embedded)"
    )]
    Connect {
        url: String,
        #[source]
        source: DurableError,
    },
    #[error(transparent)]
    Bootstrap(#[from] BootstrapError),
    #[error("durable.replicas is {replicas}: {why}")]
    Replicas { replicas: u8, why: &'static str },
}

impl AnyLog {
    /// Opens the backend `config` names and makes sure Iron's streams exist as declared
    /// (refusing to start when they differ).
    pub async fn open(config: &Config) -> Result<Self, OpenError> {
        let timeout = Duration::from_secs_f64(config.durable.timeout_secs.max(0.1));
        let replicas = config.durable.replicas;
        let refuse = |why| Err(OpenError::Replicas { replicas, why });
        if !(1..=5).contains(&replicas) {
            return refuse("JetStream keeps 1 to 5 copies of a stream");
        }
        match config.durable.backend {
            Backend::Embedded if replicas != 1 => {
                refuse("the embedded log keeps one copy; more need JetStream on a cluster")
            }
            Backend::Embedded => {
                let path = config.state_path(&config.durable.embedded_path);
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|source| OpenError::StateDir {
                        path: dir.to_path_buf(),
                        source,
                    })?;
                }
                let log = Embedded::open(
                    &path,
                    &StreamSpec::all(),
                    EmbeddedOptions {
                        timeout,
                        ..EmbeddedOptions::default()
                    },
                )
                .await?;
                Ok(AnyLog::Embedded(log))
            }
            Backend::Jetstream => {
                let url = config.durable.nats_url.clone();
                let log = JetStream::connect(
                    &url,
                    JetStreamOptions {
                        timeout,
                        name: Some(format!("iron-{}", std::process::id())),
                        replicas: usize::from(replicas),
                        ..JetStreamOptions::default()
                    },
                )
                .await
                .map_err(|source| OpenError::Connect { url, source })?;
                let report = bootstrap::bootstrap(
                    &log,
                    &StreamSpec::all_replicated(replicas),
                    &BootstrapOptions {
                        monitor: config.durable.nats_monitor.clone(),
                        quiet: config.durable.checked,
                    },
                )
                .await?;
                info!(
                    "JetStream {}: streams created {:?}, verified {:?}",
                    report.server_version, report.created, report.verified
                );
                Ok(AnyLog::JetStream(Box::new(log)))
            }
        }
    }
}

macro_rules! delegate {
    ($self:ident, $log:ident => $e:expr) => {
        match $self {
            AnyLog::Embedded($log) => $e,
            AnyLog::JetStream($log) => $e,
        }
    };
}

impl EventLog for AnyLog {
    type Consumer = AnyConsumer;

    async fn append(&self, request: AppendRequest) -> Result<AppendAck, DurableError> {
        let limit = delegate!(self, log => log.max_message_size());
        let request = spill::spill(self, limit, request).await?;
        delegate!(self, log => log.append(request).await)
    }

    async fn read(
        &self,
        stream: &str,
        filter_subject: &str,
        from_seq: u64,
        max: usize,
    ) -> Result<Vec<StoredMessage>, DurableError> {
        let stored = delegate!(self, log => log.read(stream, filter_subject, from_seq, max).await)?;
        let mut read = Vec::with_capacity(stored.len());
        for mut message in stored {
            if let Some(payload) = spill::restored(self, &message).await? {
                message.payload = payload;
            }
            read.push(message);
        }
        Ok(read)
    }

    async fn last_sequence(&self, stream: &str) -> Result<u64, DurableError> {
        delegate!(self, log => log.last_sequence(stream).await)
    }

    async fn consumer(&self, spec: ConsumerSpec) -> Result<AnyConsumer, DurableError> {
        let inner = match self {
            AnyLog::Embedded(log) => Consumer::Embedded(log.consumer(spec).await?),
            AnyLog::JetStream(log) => Consumer::JetStream(Box::new(log.consumer(spec).await?)),
        };
        Ok(AnyConsumer {
            inner,
            log: self.clone(),
            pending: None,
        })
    }

    async fn delete_message(&self, stream: &str, seq: u64) -> Result<(), DurableError> {
        delegate!(self, log => log.delete_message(stream, seq).await)
    }

    async fn purge_stream(&self, stream: &str) -> Result<(), DurableError> {
        delegate!(self, log => log.purge_stream(stream).await)
    }

    /// What an event may weigh: larger than one message of the backend, as it spills.
    fn max_message_size(&self) -> usize {
        spill::MAX_EVENT_BYTES
    }
}

impl LogConsumer for AnyConsumer {
    type Ack = AnyAck;

    async fn next(&mut self, wait: Duration) -> Result<Option<(Delivery, AnyAck)>, DurableError> {
        if self.pending.is_none() {
            self.pending = match &mut self.inner {
                Consumer::Embedded(c) => c.next(wait).await?.map(|(d, a)| (d, AnyAck::Embedded(a))),
                Consumer::JetStream(c) => {
                    c.next(wait).await?.map(|(d, a)| (d, AnyAck::JetStream(a)))
                }
            };
        }
        let Some((delivery, _)) = &self.pending else {
            return Ok(None);
        };
        let payload = spill::restored(&self.log, &delivery.message).await?;
        let next = self.pending.take().map(|(mut delivery, ack)| {
            if let Some(payload) = payload {
                delivery.message.payload = payload;
            }
            (delivery, ack)
        });
        Ok(next)
    }

    async fn ack(&mut self, acks: Vec<AnyAck>) -> Result<(), DurableError> {
        match &mut self.inner {
            Consumer::Embedded(c) => {
                let acks = acks
                    .into_iter()
                    .filter_map(|a| match a {
                        AnyAck::Embedded(a) => Some(a),
                        AnyAck::JetStream(_) => None,
                    })
                    .collect();
                c.ack(acks).await
            }
            Consumer::JetStream(c) => {
                let acks = acks
                    .into_iter()
                    .filter_map(|a| match a {
                        AnyAck::JetStream(a) => Some(a),
                        AnyAck::Embedded(_) => None,
                    })
                    .collect();
                c.ack(acks).await
            }
        }
    }
}

impl KeyValue for AnyLog {
    async fn kv_open(&self, spec: &KvSpec) -> Result<(), DurableError> {
        delegate!(self, log => log.kv_open(spec).await)
    }

    async fn kv_get(&self, bucket: &str, key: &str) -> Result<Option<KvEntry>, DurableError> {
        delegate!(self, log => log.kv_get(bucket, key).await)
    }

    async fn kv_create(
        &self,
        bucket: &str,
        key: &str,
        value: Vec<u8>,
    ) -> Result<u64, DurableError> {
        delegate!(self, log => log.kv_create(bucket, key, value).await)
    }

    async fn kv_update(
        &self,
        bucket: &str,
        key: &str,
        value: Vec<u8>,
        revision: u64,
    ) -> Result<u64, DurableError> {
        delegate!(self, log => log.kv_update(bucket, key, value, revision).await)
    }

    async fn kv_delete(&self, bucket: &str, key: &str, revision: u64) -> Result<(), DurableError> {
        delegate!(self, log => log.kv_delete(bucket, key, revision).await)
    }
}

impl ObjectStore for AnyLog {
    async fn object_open(&self, bucket: &str) -> Result<(), DurableError> {
        delegate!(self, log => log.object_open(bucket).await)
    }

    async fn object_put(
        &self,
        bucket: &str,
        name: &str,
        data: Vec<u8>,
    ) -> Result<(), DurableError> {
        delegate!(self, log => log.object_put(bucket, name, data).await)
    }

    async fn object_get(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>, DurableError> {
        delegate!(self, log => log.object_get(bucket, name).await)
    }
}
