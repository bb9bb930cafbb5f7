//! Two named uses of the KV store: the perception phone book (a source registers where it can
//! be reached, under its name; readers look it up at use time, so sources can run on any free
//! port) and a scratchpad whose entries expire on their own.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::core::durable::{DurableError, KeyValue, KvSpec};

/// Bucket of the perception phone book. An entry lives 60 s past its last registration, so a
/// source that died disappears without anyone deleting it.
pub const PHONE_BOOK: &str = "msp_phone_book";
/// How long a phone-book entry lives without being registered again.
pub const PHONE_BOOK_TTL: Duration = Duration::from_secs(60);
/// Bucket of the scratchpad.
pub const SCRATCHPAD: &str = "scratchpad";
/// How long a scratchpad entry lives.
pub const SCRATCHPAD_TTL: Duration = Duration::from_secs(15 * 60);

/// Where a source can be reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    /// Endpoint, e.g. `tcp/127.0.0.1:41873` or a Zenoh key expression.
    pub endpoint: String,
    /// Who registered it (process or node).
    pub owner: String,
}

/// Registers (or refreshes) `name` → `listing`; call it more often than [`PHONE_BOOK_TTL`].
pub async fn register<K: KeyValue>(
    kv: &K,
    name: &str,
    listing: &Listing,
) -> Result<(), DurableError> {
    put(
        kv,
        PHONE_BOOK,
        PHONE_BOOK_TTL,
        name,
        serde_json::to_vec(listing).expect("listing serializes"),
    )
    .await
}

/// Looks `name` up; `None` when nobody registered it recently.
pub async fn lookup<K: KeyValue>(kv: &K, name: &str) -> Result<Option<Listing>, DurableError> {
    open(kv, PHONE_BOOK, PHONE_BOOK_TTL).await?;
    Ok(kv
        .kv_get(PHONE_BOOK, name)
        .await?
        .and_then(|e| serde_json::from_slice(&e.value).ok()))
}

/// Removes `name`'s listing (a source that stops); absent is fine.
pub async fn unregister<K: KeyValue>(kv: &K, name: &str) -> Result<(), DurableError> {
    open(kv, PHONE_BOOK, PHONE_BOOK_TTL).await?;
    match kv.kv_get(PHONE_BOOK, name).await? {
        Some(entry) => kv.kv_delete(PHONE_BOOK, name, entry.revision).await,
        None => Ok(()),
    }
}

/// Writes a scratchpad entry (it expires after [`SCRATCHPAD_TTL`]).
pub async fn scratch_put<K: KeyValue>(
    kv: &K,
    key: &str,
    value: Vec<u8>,
) -> Result<(), DurableError> {
    put(kv, SCRATCHPAD, SCRATCHPAD_TTL, key, value).await
}

/// Reads a scratchpad entry, `None` once expired.
pub async fn scratch_get<K: KeyValue>(kv: &K, key: &str) -> Result<Option<Vec<u8>>, DurableError> {
    open(kv, SCRATCHPAD, SCRATCHPAD_TTL).await?;
    Ok(kv.kv_get(SCRATCHPAD, key).await?.map(|e| e.value))
}

async fn open<K: KeyValue>(kv: &K, bucket: &str, ttl: Duration) -> Result<(), DurableError> {
    kv.kv_open(&KvSpec {
        bucket: bucket.into(),
        ttl: Some(ttl),
    })
    .await
}

/// Last writer wins: create, or update at the revision just read (retried once on a race).
async fn put<K: KeyValue>(
    kv: &K,
    bucket: &str,
    ttl: Duration,
    key: &str,
    value: Vec<u8>,
) -> Result<(), DurableError> {
    open(kv, bucket, ttl).await?;
    let mut last = None;
    for _ in 0..3 {
        let attempt = match kv.kv_get(bucket, key).await? {
            Some(e) => kv.kv_update(bucket, key, value.clone(), e.revision).await,
            None => kv.kv_create(bucket, key, value.clone()).await,
        };
        match attempt {
            Ok(_) => return Ok(()),
            Err(e @ (DurableError::WrongRevision { .. } | DurableError::KeyExists { .. })) => {
                last = Some(e)
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("three attempts failed"))
}
