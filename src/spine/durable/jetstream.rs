//! The JetStream backend: one handle type owning the NATS connection (`async-nats` runs the
//! connection in its own task; the handle is cheap to clone). Every wait has a timeout.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_nats::jetstream::{
    self, consumer, consumer::pull, context::PublishErrorKind, kv, message::PublishMessage,
    object_store,
};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::core::durable::{
    AppendAck, AppendRequest, ConsumerSpec, Delivery, DurableError, EventLog, KeyValue, KvEntry,
    KvSpec, LogConsumer, ObjectStore, StartAt, StoredMessage,
};

/// Connection settings.
#[derive(Debug, Clone)]
pub struct JetStreamOptions {
    /// Upper bound for every wait: connect, publish ack, API request, fetch.
    pub timeout: Duration,
    /// Connection name shown by the server.
    pub name: Option<String>,
    /// How often the server says a consumer's pull is still alive when it has nothing to
    /// deliver; two missed in a row and the pull is made again.
    pub idle_heartbeat: Duration,
    /// How many servers keep each key-value and object bucket this handle creates (the
    /// streams' count, `durable.replicas`), so that what is spilled from the log is kept as
    /// often as the log.
    pub replicas: usize,
}

impl Default for JetStreamOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            name: None,
            idle_heartbeat: Duration::from_secs(15),
            replicas: 1,
        }
    }
}

/// A handle on a NATS JetStream server: the production durable plane.
#[derive(Clone)]
pub struct JetStream {
    client: async_nats::Client,
    context: jetstream::Context,
    timeout: Duration,
    idle_heartbeat: Duration,
    replicas: usize,
    kv: Arc<Mutex<HashMap<String, kv::Store>>>,
    objects: Arc<Mutex<HashMap<String, object_store::ObjectStore>>>,
}

impl std::fmt::Debug for JetStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStream")
            .field("server", &self.client.server_info().version)
            .finish_non_exhaustive()
    }
}

/// The log cannot be reached for `op` (retryable: [`DurableError::is_retryable`]).
fn unavailable(
    op: &'static str,
    e: impl std::error::Error + Send + Sync + 'static,
) -> DurableError {
    DurableError::Unavailable {
        op,
        source: Box::new(e),
    }
}

fn backend(op: &'static str, e: impl std::error::Error + Send + Sync + 'static) -> DurableError {
    DurableError::Backend {
        op,
        source: Box::new(e),
    }
}

impl JetStream {
    /// Connects to `url` (for example `nats://127.0.0.1:4222`, or several servers of one
    /// cluster separated by commas).
    pub async fn connect(url: &str, options: JetStreamOptions) -> Result<Self, DurableError> {
        let mut connect = async_nats::ConnectOptions::new()
            .connection_timeout(options.timeout)
            .request_timeout(Some(options.timeout));
        if let Some(name) = &options.name {
            connect = connect.name(name);
        }
        // A cluster is reached through any of its servers: `url` may list several, separated
        // by commas; the client moves to another when the one it uses goes away.
        let servers: Vec<&str> = url
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if servers.is_empty() {
            return Err(DurableError::Unavailable {
                op: "connect",
                source: format!("no NATS server in {url:?}").into(),
            });
        }
        let client = within("connect", options.timeout, connect.connect(servers))
            .await?
            .map_err(|e| unavailable("connect", e))?;
        let mut context = jetstream::new(client.clone());
        context.set_timeout(options.timeout);
        Ok(Self {
            client,
            context,
            timeout: options.timeout,
            idle_heartbeat: options.idle_heartbeat,
            replicas: options.replicas.max(1),
            kv: Arc::default(),
            objects: Arc::default(),
        })
    }

    /// The underlying NATS client (for raw publishing in benchmarks and tests).
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// The underlying JetStream context.
    pub fn context(&self) -> &jetstream::Context {
        &self.context
    }

    /// The version the server announced.
    pub fn server_version(&self) -> String {
        self.client.server_info().version
    }

    /// The upper bound of every wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn within<T, E>(
        &self,
        op: &'static str,
        fut: impl Future<Output = Result<T, E>>,
    ) -> Result<Result<T, E>, DurableError> {
        within(op, self.timeout, fut).await
    }

    /// A JetStream API request answered with JSON; API errors come back as `Err(error)`.
    async fn api(
        &self,
        op: &'static str,
        subject: String,
        body: &Value,
    ) -> Result<Result<Value, Value>, DurableError> {
        let answer: Value = self
            .within(op, self.context.request(subject, body))
            .await?
            .map_err(|e| unavailable(op, e))?;
        Ok(match answer.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(answer),
        })
    }

    /// The configuration of stream `name` exactly as the server reports it, `None` if missing.
    pub async fn stream_config(&self, name: &str) -> Result<Option<Value>, DurableError> {
        match self
            .api("stream info", format!("STREAM.INFO.{name}"), &Value::Null)
            .await?
        {
            Ok(info) => Ok(info.get("config").cloned()),
            Err(error) if error.get("err_code").and_then(Value::as_u64) == Some(10059) => Ok(None),
            Err(error) => Err(DurableError::Backend {
                op: "stream info",
                source: error.to_string().into(),
            }),
        }
    }

    /// Creates a stream from a raw configuration and returns the configuration the server
    /// stored. Fails if the stream already exists with another configuration.
    pub async fn create_stream_raw(
        &self,
        name: &str,
        config: &Value,
    ) -> Result<Value, DurableError> {
        match self
            .api("stream create", format!("STREAM.CREATE.{name}"), config)
            .await?
        {
            Ok(info) => info
                .get("config")
                .cloned()
                .ok_or_else(|| DurableError::Backend {
                    op: "stream create",
                    source: "the server's answer has no config".into(),
                }),
            Err(error) => Err(DurableError::Backend {
                op: "stream create",
                source: error.to_string().into(),
            }),
        }
    }

    async fn stream(&self, name: &str) -> Result<jetstream::stream::Stream, DurableError> {
        self.within("get stream", self.context.get_stream(name))
            .await?
            .map_err(|e| match e.kind() {
                jetstream::context::GetStreamErrorKind::JetStream(_) => DurableError::NotFound {
                    what: format!("stream {name}"),
                },
                _ => unavailable("get stream", e),
            })
    }

    fn kv_store(&self, bucket: &str) -> Result<kv::Store, DurableError> {
        self.kv
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(bucket)
            .cloned()
            .ok_or_else(|| DurableError::NotFound {
                what: format!("KV bucket {bucket} (call kv_open first)"),
            })
    }

    fn object_bucket(&self, bucket: &str) -> Result<object_store::ObjectStore, DurableError> {
        self.objects
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(bucket)
            .cloned()
            .ok_or_else(|| DurableError::NotFound {
                what: format!("object bucket {bucket} (call object_open first)"),
            })
    }
}

fn deliver_policy(start: StartAt) -> consumer::DeliverPolicy {
    match start {
        StartAt::First => consumer::DeliverPolicy::All,
        StartAt::Sequence(seq) => consumer::DeliverPolicy::ByStartSequence {
            start_sequence: seq.max(1),
        },
        StartAt::New => consumer::DeliverPolicy::New,
    }
}

fn stored(message: &jetstream::Message) -> Result<StoredMessage, DurableError> {
    let info = message.info().map_err(|e| DurableError::Backend {
        op: "read delivery",
        source: e,
    })?;
    Ok(StoredMessage {
        seq: info.stream_sequence,
        subject: message.subject.to_string(),
        msg_id: message
            .headers
            .as_ref()
            .and_then(|h| h.get(async_nats::header::NATS_MESSAGE_ID))
            .map(|v| v.as_str().to_owned()),
        payload: message.payload.to_vec(),
        stored_ms: (info.published.unix_timestamp_nanos() / 1_000_000).max(0) as u64,
    })
}

impl EventLog for JetStream {
    type Consumer = JetStreamConsumer;

    async fn append(&self, request: AppendRequest) -> Result<AppendAck, DurableError> {
        let size = request.payload.len();
        let max = self.max_message_size();
        let mut publish = PublishMessage::build()
            .payload(request.payload.into())
            .message_id(&request.msg_id);
        if let Some(expected) = request.expected_last_subject_seq {
            publish = publish.expected_last_subject_sequence(expected);
        }
        let map = |e: jetstream::context::PublishError| match e.kind() {
            PublishErrorKind::TimedOut => DurableError::Timeout {
                op: "publish",
                after: self.timeout,
            },
            PublishErrorKind::BrokenPipe => unavailable("publish", e),
            PublishErrorKind::StreamNotFound => DurableError::NoStream {
                subject: request.subject.clone(),
            },
            PublishErrorKind::WrongLastSequence => DurableError::WrongLastSequence {
                subject: request.subject.clone(),
                expected: request.expected_last_subject_seq.unwrap_or(0),
            },
            PublishErrorKind::MaxPayloadExceeded => DurableError::TooLarge { size, max },
            _ => backend("publish", e),
        };
        let ack_future = self
            .within(
                "publish",
                self.context.send_publish(request.subject.clone(), publish),
            )
            .await?
            .map_err(map)?;
        let ack = self
            .within("publish ack", ack_future.into_future())
            .await?
            .map_err(map)?;
        Ok(AppendAck {
            stream: ack.stream,
            seq: ack.sequence,
            duplicate: ack.duplicate,
        })
    }

    async fn read(
        &self,
        stream: &str,
        filter_subject: &str,
        from_seq: u64,
        max: usize,
    ) -> Result<Vec<StoredMessage>, DurableError> {
        let handle = self.stream(stream).await?;
        let config = pull::Config {
            deliver_policy: deliver_policy(StartAt::Sequence(from_seq)),
            filter_subject: filter_subject.to_owned(),
            ack_policy: consumer::AckPolicy::None,
            inactive_threshold: Duration::from_secs(30),
            memory_storage: true,
            ..Default::default()
        };
        let consumer = self
            .within("read", handle.create_consumer(config))
            .await?
            .map_err(|e| {
                use async_nats::jetstream::stream::ConsumerErrorKind;
                match e.kind() {
                    // The server did not answer in time (a cluster electing a leader).
                    ConsumerErrorKind::TimedOut => DurableError::Timeout {
                        op: "read",
                        after: self.timeout,
                    },
                    // The request found no server to answer it (the stream's leader is gone
                    // and no other has taken over yet): retryable as well.
                    ConsumerErrorKind::Request => unavailable("read", e),
                    _ => backend("read", e),
                }
            })?;
        let name = consumer.cached_info().name.clone();
        let want = (consumer.cached_info().num_pending as usize).min(max);
        let mut out = Vec::with_capacity(want);
        if want > 0 {
            let mut messages = self
                .within("read", consumer.messages())
                .await?
                .map_err(|e| unavailable("read", e))?;
            while out.len() < want {
                let next = tokio::time::timeout(self.timeout, messages.next()).await;
                let next = next.map_err(|_| DurableError::Timeout {
                    op: "read",
                    after: self.timeout,
                })?;
                match next {
                    Some(Ok(message)) => out.push(stored(&message)?),
                    // The pull lost its server mid-read (no responders, consumer gone with
                    // a leader that died): the caller may read again from the same sequence.
                    Some(Err(e)) => return Err(unavailable("read", e)),
                    None => break,
                }
            }
        }
        // Best effort: the consumer also expires on its own after `inactive_threshold`.
        let _ = self.within("read", handle.delete_consumer(&name)).await;
        Ok(out)
    }

    async fn last_sequence(&self, stream: &str) -> Result<u64, DurableError> {
        let handle = self.stream(stream).await?;
        let info = self
            .within("stream info", handle.get_info())
            .await?
            .map_err(|e| backend("stream info", e))?;
        Ok(info.state.last_sequence)
    }

    async fn consumer(&self, spec: ConsumerSpec) -> Result<JetStreamConsumer, DurableError> {
        let handle = self.stream(&spec.stream).await?;
        let config = pull::Config {
            durable_name: spec.durable.clone(),
            deliver_policy: deliver_policy(spec.start),
            filter_subject: spec.filter_subject.clone(),
            ack_policy: consumer::AckPolicy::Explicit,
            ack_wait: spec.ack_wait,
            inactive_threshold: if spec.durable.is_some() {
                Duration::ZERO
            } else {
                Duration::from_secs(60)
            },
            ..Default::default()
        };
        let consumer = match &spec.durable {
            Some(name) => {
                self.within("consumer", handle.get_or_create_consumer(name, config))
                    .await?
            }
            None => {
                self.within("consumer", handle.create_consumer(config))
                    .await?
            }
        }
        .map_err(|e| backend("consumer", e))?;
        let mut pulled = JetStreamConsumer {
            consumer,
            messages: None,
            timeout: self.timeout,
            idle_heartbeat: self.idle_heartbeat,
        };
        pulled.pull().await?;
        Ok(pulled)
    }

    async fn delete_message(&self, stream: &str, seq: u64) -> Result<(), DurableError> {
        let handle = self.stream(stream).await?;
        match self.within("delete", handle.delete_message(seq)).await? {
            Ok(_) => Ok(()),
            Err(e) => match e.kind() {
                jetstream::stream::DeleteMessageErrorKind::JetStream(_) => {
                    Err(DurableError::Denied {
                        op: "delete",
                        stream: stream.to_owned(),
                        source: Some(Box::new(e)),
                    })
                }
                _ => Err(backend("delete", e)),
            },
        }
    }

    async fn purge_stream(&self, stream: &str) -> Result<(), DurableError> {
        let handle = self.stream(stream).await?;
        match self.within("purge", handle.purge().into_future()).await? {
            Ok(_) => Ok(()),
            Err(e) => match e.kind() {
                jetstream::stream::PurgeErrorKind::JetStream(_) => Err(DurableError::Denied {
                    op: "purge",
                    stream: stream.to_owned(),
                    source: Some(Box::new(e)),
                }),
                _ => Err(backend("purge", e)),
            },
        }
    }

    fn max_message_size(&self) -> usize {
        self.client.server_info().max_payload
    }
}

/// `fut`, or [`DurableError::Timeout`] for `op` when it takes longer than `after`.
async fn within<T, E>(
    op: &'static str,
    after: Duration,
    fut: impl Future<Output = Result<T, E>>,
) -> Result<Result<T, E>, DurableError> {
    tokio::time::timeout(after, fut)
        .await
        .map_err(|_| DurableError::Timeout { op, after })
}

/// A pull consumer on JetStream.
pub struct JetStreamConsumer {
    consumer: consumer::Consumer<pull::Config>,
    /// The open pull; `None` after two missed heartbeats until the next call makes it again.
    messages: Option<pull::Stream>,
    timeout: Duration,
    idle_heartbeat: Duration,
}

impl JetStreamConsumer {
    /// Opens the pull: the server sends messages as they come, and a heartbeat when it has
    /// none for `idle_heartbeat`.
    async fn pull(&mut self) -> Result<&mut pull::Stream, DurableError> {
        let messages = match self.messages.take() {
            Some(open) => open,
            None => {
                let opened = self
                    .consumer
                    .stream()
                    .heartbeat(self.idle_heartbeat)
                    .messages();
                within("consume", self.timeout, opened)
                    .await?
                    .map_err(|e| unavailable("consume", e))?
            }
        };
        Ok(self.messages.insert(messages))
    }
}

impl LogConsumer for JetStreamConsumer {
    type Ack = jetstream::message::Acker;

    async fn next(
        &mut self,
        wait: Duration,
    ) -> Result<Option<(Delivery, Self::Ack)>, DurableError> {
        let messages = self.pull().await?;
        match tokio::time::timeout(wait, messages.next()).await {
            Err(_) | Ok(None) => Ok(None),
            // Nothing came, not even the heartbeats of a pull the server should be holding:
            // the pull is made again on the next call (as the NATS clients do), and what it
            // had been sent and not acknowledged comes back after the ack wait.
            Ok(Some(Err(e))) if e.kind() == pull::MessagesErrorKind::MissingHeartbeat => {
                tracing::warn!(
                    "consume: no message or heartbeat from the server for two heartbeat \
                     intervals; pulling again"
                );
                self.messages = None;
                Ok(None)
            }
            Ok(Some(Err(e))) => Err(unavailable("consume", e)),
            Ok(Some(Ok(message))) => {
                let delivered = message
                    .info()
                    .map(|i| i.delivered.max(1) as u64)
                    .unwrap_or(1);
                let stored = stored(&message)?;
                let (_, acker) = message.split();
                Ok(Some((
                    Delivery {
                        message: stored,
                        delivered,
                    },
                    acker,
                )))
            }
        }
    }

    /// Acknowledges in one round trip: plain acks for all but the last, then a confirmed ack
    /// for the last. The server handles one connection's messages in order, so once the last
    /// is confirmed the ones before it have been applied too. (A confirmed ack each costs a
    /// subscription and a round trip per event: the projector's bottleneck.)
    async fn ack(&mut self, mut acks: Vec<Self::Ack>) -> Result<(), DurableError> {
        let Some(last) = acks.pop() else {
            return Ok(());
        };
        let timeout = self.timeout;
        let timed_out = || DurableError::Timeout {
            op: "ack",
            after: timeout,
        };
        let failed = |source| DurableError::Unavailable { op: "ack", source };
        for acker in acks {
            tokio::time::timeout(timeout, acker.ack())
                .await
                .map_err(|_| timed_out())?
                .map_err(failed)?;
        }
        tokio::time::timeout(timeout, last.double_ack())
            .await
            .map_err(|_| timed_out())?
            .map_err(failed)
    }
}

impl KeyValue for JetStream {
    async fn kv_open(&self, spec: &KvSpec) -> Result<(), DurableError> {
        let ttl = spec.ttl.unwrap_or_default();
        let store = match self
            .within("kv open", self.context.get_key_value(spec.bucket.clone()))
            .await?
        {
            Ok(store) => {
                let status = self
                    .within("kv status", store.status())
                    .await?
                    .map_err(|e| backend("kv status", e))?;
                if status.max_age() != ttl {
                    return Err(DurableError::InvalidName {
                        what: "KV bucket",
                        name: spec.bucket.clone(),
                        reason: "it exists with a different TTL (max_age); refusing to reshape it",
                    });
                }
                store
            }
            Err(_) => self
                .within(
                    "kv create",
                    self.context.create_key_value(kv::Config {
                        bucket: spec.bucket.clone(),
                        history: 1,
                        max_age: ttl,
                        storage: jetstream::stream::StorageType::File,
                        num_replicas: self.replicas,
                        ..Default::default()
                    }),
                )
                .await?
                .map_err(|e| backend("kv create", e))?,
        };
        self.kv
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(spec.bucket.clone(), store);
        Ok(())
    }

    async fn kv_get(&self, bucket: &str, key: &str) -> Result<Option<KvEntry>, DurableError> {
        let store = self.kv_store(bucket)?;
        let entry = self
            .within("kv get", store.entry(key))
            .await?
            .map_err(|e| backend("kv get", e))?;
        Ok(entry
            .filter(|e| e.operation == kv::Operation::Put)
            .map(|e| KvEntry {
                value: e.value.to_vec(),
                revision: e.revision,
            }))
    }

    async fn kv_create(
        &self,
        bucket: &str,
        key: &str,
        value: Vec<u8>,
    ) -> Result<u64, DurableError> {
        let store = self.kv_store(bucket)?;
        self.within("kv create", store.create(key, value.into()))
            .await?
            .map_err(|e| match e.kind() {
                kv::CreateErrorKind::AlreadyExists => DurableError::KeyExists {
                    bucket: bucket.to_owned(),
                    key: key.to_owned(),
                },
                _ => backend("kv create", e),
            })
    }

    async fn kv_update(
        &self,
        bucket: &str,
        key: &str,
        value: Vec<u8>,
        revision: u64,
    ) -> Result<u64, DurableError> {
        let store = self.kv_store(bucket)?;
        self.within("kv update", store.update(key, value.into(), revision))
            .await?
            .map_err(|e| match e.kind() {
                kv::UpdateErrorKind::WrongLastRevision => DurableError::WrongRevision {
                    bucket: bucket.to_owned(),
                    key: key.to_owned(),
                    expected: revision,
                },
                _ => backend("kv update", e),
            })
    }

    async fn kv_delete(&self, bucket: &str, key: &str, revision: u64) -> Result<(), DurableError> {
        let store = self.kv_store(bucket)?;
        self.within(
            "kv delete",
            store.delete_expect_revision(key, Some(revision)),
        )
        .await?
        .map_err(|e| match e.kind() {
            kv::UpdateErrorKind::WrongLastRevision => DurableError::WrongRevision {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
                expected: revision,
            },
            _ => backend("kv delete", e),
        })
    }
}

impl ObjectStore for JetStream {
    async fn object_open(&self, bucket: &str) -> Result<(), DurableError> {
        let store = match self
            .within("object open", self.context.get_object_store(bucket))
            .await?
        {
            Ok(store) => store,
            Err(_) => self
                .within(
                    "object create",
                    self.context.create_object_store(object_store::Config {
                        bucket: bucket.to_owned(),
                        storage: jetstream::stream::StorageType::File,
                        num_replicas: self.replicas,
                        ..Default::default()
                    }),
                )
                .await?
                .map_err(|e| backend("object create", e))?,
        };
        self.objects
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(bucket.to_owned(), store);
        Ok(())
    }

    async fn object_put(
        &self,
        bucket: &str,
        name: &str,
        data: Vec<u8>,
    ) -> Result<(), DurableError> {
        let store = self.object_bucket(bucket)?;
        self.within("object put", store.put(name, &mut data.as_slice()))
            .await?
            .map_err(|e| backend("object put", e))?;
        Ok(())
    }

    async fn object_get(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>, DurableError> {
        let store = self.object_bucket(bucket)?;
        let read = async {
            let mut object = match store.get(name).await {
                Ok(object) => object,
                Err(e) if e.kind() == object_store::GetErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(backend("object get", e)),
            };
            let mut data = Vec::new();
            object
                .read_to_end(&mut data)
                .await
                .map_err(|e| backend("object get", e))?;
            Ok(Some(data))
        };
        self.within("object get", read).await?
    }
}
