//! Leases on the KV store: one holder at a time, fenced by revision. A holder creates the key,
//! renews it by revision well inside the bucket's TTL, and deletes it by revision when done.
//! A holder that cannot prove the lease is still its own must stop: [`Lease::renew`] fails
//! when anyone else wrote the key, and [`hold`] cancels its token at the first doubt.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::core::durable::{DurableError, KeyValue, KvSpec};

/// The bucket of runner leases; entries expire 30 s after their last renewal.
pub const LEASE_BUCKET: &str = "leases";
/// TTL of a lease.
pub const LEASE_TTL: Duration = Duration::from_secs(30);
/// How often a holder renews.
pub const RENEW_EVERY: Duration = Duration::from_secs(10);

/// What a lease key holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseValue {
    /// Who holds it (e.g. `runner/newsroom/<pid>-<uuid>`).
    pub holder: String,
    /// Increases every time the lease changes hands; fences work done under an older one.
    pub epoch: u64,
}

/// Why a lease could not be taken or kept.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Someone else holds it.
    #[error("lease {key} is held by {holder} (epoch {epoch})")]
    Held {
        key: String,
        holder: String,
        epoch: u64,
    },
    /// The lease changed under us (expired and taken, or deleted).
    #[error("lease {key} is no longer ours")]
    Lost { key: String },
    /// The store failed; the holder cannot know, so it must act as if lost.
    #[error("lease {key}: {source}")]
    Store {
        key: String,
        #[source]
        source: DurableError,
    },
}

/// A lease this process holds.
#[derive(Debug, Clone)]
pub struct Lease {
    key: String,
    value: LeaseValue,
    revision: u64,
}

impl Lease {
    /// Takes the lease `key` for `holder`, if nobody holds it.
    pub async fn acquire<K: KeyValue>(kv: &K, key: &str, holder: &str) -> Result<Self, LeaseError> {
        let store = |source| LeaseError::Store {
            key: key.to_string(),
            source,
        };
        kv.kv_open(&KvSpec {
            bucket: LEASE_BUCKET.into(),
            ttl: Some(LEASE_TTL),
        })
        .await
        .map_err(store)?;
        // The epoch continues from the last holder's when its entry is still readable.
        let previous = kv.kv_get(LEASE_BUCKET, key).await.map_err(store)?;
        if let Some(entry) = &previous {
            let held: LeaseValue = serde_json::from_slice(&entry.value).unwrap_or(LeaseValue {
                holder: "?".into(),
                epoch: 0,
            });
            return Err(LeaseError::Held {
                key: key.to_string(),
                holder: held.holder,
                epoch: held.epoch,
            });
        }
        let epoch = epoch_hint(kv, key).await + 1;
        let value = LeaseValue {
            holder: holder.to_string(),
            epoch,
        };
        let bytes = serde_json::to_vec(&value).expect("lease value serializes");
        match kv.kv_create(LEASE_BUCKET, key, bytes).await {
            Ok(revision) => {
                remember_epoch(kv, key, epoch).await;
                Ok(Self {
                    key: key.to_string(),
                    value,
                    revision,
                })
            }
            Err(DurableError::KeyExists { .. }) => Err(LeaseError::Held {
                key: key.to_string(),
                holder: "another holder".into(),
                epoch,
            }),
            Err(source) => Err(store(source)),
        }
    }

    /// Renews the lease; fails if anyone else wrote the key since our last write.
    pub async fn renew<K: KeyValue>(&mut self, kv: &K) -> Result<(), LeaseError> {
        let bytes = serde_json::to_vec(&self.value).expect("lease value serializes");
        match kv
            .kv_update(LEASE_BUCKET, &self.key, bytes, self.revision)
            .await
        {
            Ok(revision) => {
                self.revision = revision;
                Ok(())
            }
            Err(DurableError::WrongRevision { .. }) | Err(DurableError::NotFound { .. }) => {
                Err(LeaseError::Lost {
                    key: self.key.clone(),
                })
            }
            Err(source) => Err(LeaseError::Store {
                key: self.key.clone(),
                source,
            }),
        }
    }

    /// Gives the lease up (only if it is still ours).
    pub async fn release<K: KeyValue>(self, kv: &K) -> Result<(), LeaseError> {
        kv.kv_delete(LEASE_BUCKET, &self.key, self.revision)
            .await
            .map_err(|source| LeaseError::Store {
                key: self.key.clone(),
                source,
            })
    }

    /// The epoch this holder works under.
    pub fn epoch(&self) -> u64 {
        self.value.epoch
    }

    /// The holder.
    pub fn holder(&self) -> &str {
        &self.value.holder
    }
}

/// Renews `lease` every `every` until `stop` fires (then releases it). Returns a token that is
/// cancelled the moment the lease cannot be proven ours: the holder must stop working then.
pub fn hold<K: KeyValue>(
    kv: K,
    mut lease: Lease,
    every: Duration,
    stop: CancellationToken,
) -> CancellationToken {
    let lost = CancellationToken::new();
    let signal = lost.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => {
                    if let Err(e) = lease.release(&kv).await {
                        warn!("releasing the lease: {e}");
                    }
                    return;
                }
                _ = tokio::time::sleep(every) => {}
            }
            if let Err(e) = lease.renew(&kv).await {
                warn!("{e}; stopping work under it");
                signal.cancel();
                return;
            }
        }
    });
    lost
}

/// Epochs survive the lease entry's expiry in a bucket without TTL.
const EPOCH_BUCKET: &str = "lease_epochs";

async fn epoch_hint<K: KeyValue>(kv: &K, key: &str) -> u64 {
    let spec = KvSpec {
        bucket: EPOCH_BUCKET.into(),
        ttl: None,
    };
    if kv.kv_open(&spec).await.is_err() {
        return 0;
    }
    match kv.kv_get(EPOCH_BUCKET, key).await {
        Ok(Some(e)) => std::str::from_utf8(&e.value)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        _ => 0,
    }
}

async fn remember_epoch<K: KeyValue>(kv: &K, key: &str, epoch: u64) {
    let value = epoch.to_string().into_bytes();
    let result = match kv.kv_get(EPOCH_BUCKET, key).await {
        Ok(Some(e)) => kv
            .kv_update(EPOCH_BUCKET, key, value, e.revision)
            .await
            .map(|_| ()),
        Ok(None) => kv.kv_create(EPOCH_BUCKET, key, value).await.map(|_| ()),
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        warn!("could not record lease epoch {epoch} for {key}: {e}");
    }
}
