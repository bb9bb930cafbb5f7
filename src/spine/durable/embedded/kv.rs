//! The embedded log's key-value buckets (compare-and-set, per-bucket TTL) and documents.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{Embedded, check_name, sql};
use crate::core::durable::{DurableError, KeyValue, KvEntry, KvSpec, ObjectStore};
use crate::core::envelope::now_ms;

fn live(ttl_ms: Option<i64>, written_ms: i64, deleted: bool, now: u64) -> bool {
    !deleted && ttl_ms.is_none_or(|ttl| now.saturating_sub(written_ms as u64) < ttl as u64)
}

/// The bucket's TTL, or `NotFound`.
fn bucket_ttl(conn: &Connection, bucket: &str) -> Result<Option<i64>, DurableError> {
    conn.query_row(
        "SELECT ttl_ms FROM kv_buckets WHERE bucket = ?1",
        [bucket],
        |row| row.get::<_, Option<i64>>(0),
    )
    .optional()
    .map_err(sql("kv"))?
    .ok_or_else(|| DurableError::NotFound {
        what: format!("KV bucket {bucket} (call kv_open first)"),
    })
}

/// `(revision, written_ms, deleted)` of a key.
fn kv_row(
    conn: &Connection,
    bucket: &str,
    key: &str,
) -> Result<Option<(i64, i64, bool)>, DurableError> {
    conn.query_row(
        "SELECT revision, written_ms, deleted FROM kv WHERE bucket = ?1 AND key = ?2",
        [bucket, key],
        |row| Ok((row.get(0)?, row.get(1)?, row.get::<_, i64>(2)? != 0)),
    )
    .optional()
    .map_err(sql("kv"))
}

/// Writes a key with the bucket's next revision.
fn kv_write(
    conn: &Connection,
    bucket: &str,
    key: &str,
    value: &[u8],
    deleted: bool,
) -> Result<u64, DurableError> {
    conn.execute(
        "UPDATE kv_buckets SET last_rev = last_rev + 1 WHERE bucket = ?1",
        [bucket],
    )
    .map_err(sql("kv"))?;
    let revision: i64 = conn
        .query_row(
            "SELECT last_rev FROM kv_buckets WHERE bucket = ?1",
            [bucket],
            |row| row.get(0),
        )
        .map_err(sql("kv"))?;
    conn.execute(
        "INSERT INTO kv(bucket, key, value, revision, written_ms, deleted) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(bucket, key) DO UPDATE SET value = excluded.value, revision = excluded.revision,
             written_ms = excluded.written_ms, deleted = excluded.deleted",
        params![bucket, key, value, revision, now_ms() as i64, deleted as i64],
    )
    .map_err(sql("kv"))?;
    Ok(revision as u64)
}

impl KeyValue for Embedded {
    async fn kv_open(&self, spec: &KvSpec) -> Result<(), DurableError> {
        check_name("KV bucket", &spec.bucket, false)?;
        let bucket = spec.bucket.clone();
        let ttl = spec.ttl.map(|t| t.as_millis() as i64);
        self.call("kv open", move |conn, _| {
            conn.execute(
                "INSERT OR IGNORE INTO kv_buckets(bucket, ttl_ms, last_rev) VALUES (?1, ?2, 0)",
                params![bucket, ttl],
            )
            .map_err(sql("kv open"))?;
            if bucket_ttl(conn, &bucket)? != ttl {
                return Err(DurableError::InvalidName {
                    what: "KV bucket",
                    name: bucket,
                    reason: "it exists with a different TTL; refusing to reshape it",
                });
            }
            Ok(())
        })
        .await
    }

    async fn kv_get(&self, bucket: &str, key: &str) -> Result<Option<KvEntry>, DurableError> {
        check_name("KV key", key, true)?;
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        self.call("kv get", move |conn, _| {
            let ttl = bucket_ttl(conn, &bucket)?;
            let row: Option<(Vec<u8>, i64, i64, i64)> = conn
                .query_row(
                    "SELECT value, revision, written_ms, deleted FROM kv WHERE bucket = ?1 AND key = ?2",
                    [&bucket, &key],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
                )
                .optional()
                .map_err(sql("kv get"))?;
            Ok(row
                .filter(|(_, _, written, deleted)| live(ttl, *written, *deleted != 0, now_ms()))
                .map(|(value, revision, _, _)| KvEntry {
                    value,
                    revision: revision as u64,
                }))
        })
        .await
    }

    async fn kv_create(
        &self,
        bucket: &str,
        key: &str,
        value: Vec<u8>,
    ) -> Result<u64, DurableError> {
        check_name("KV key", key, true)?;
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        self.call("kv create", move |conn, _| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql("kv create"))?;
            let ttl = bucket_ttl(&tx, &bucket)?;
            if let Some((_, written, deleted)) = kv_row(&tx, &bucket, &key)?
                && live(ttl, written, deleted, now_ms())
            {
                return Err(DurableError::KeyExists { bucket, key });
            }
            let revision = kv_write(&tx, &bucket, &key, &value, false)?;
            tx.commit().map_err(sql("kv create"))?;
            Ok(revision)
        })
        .await
    }

    async fn kv_update(
        &self,
        bucket: &str,
        key: &str,
        value: Vec<u8>,
        revision: u64,
    ) -> Result<u64, DurableError> {
        check_name("KV key", key, true)?;
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        self.call("kv update", move |conn, _| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql("kv update"))?;
            let ttl = bucket_ttl(&tx, &bucket)?;
            match kv_row(&tx, &bucket, &key)? {
                Some((current, written, deleted))
                    if current as u64 == revision && live(ttl, written, deleted, now_ms()) => {}
                _ => {
                    return Err(DurableError::WrongRevision {
                        bucket,
                        key,
                        expected: revision,
                    });
                }
            }
            let new = kv_write(&tx, &bucket, &key, &value, false)?;
            tx.commit().map_err(sql("kv update"))?;
            Ok(new)
        })
        .await
    }

    async fn kv_delete(&self, bucket: &str, key: &str, revision: u64) -> Result<(), DurableError> {
        check_name("KV key", key, true)?;
        let (bucket, key) = (bucket.to_owned(), key.to_owned());
        self.call("kv delete", move |conn, _| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql("kv delete"))?;
            let ttl = bucket_ttl(&tx, &bucket)?;
            match kv_row(&tx, &bucket, &key)? {
                Some((current, written, deleted))
                    if current as u64 == revision && live(ttl, written, deleted, now_ms()) => {}
                _ => {
                    return Err(DurableError::WrongRevision {
                        bucket,
                        key,
                        expected: revision,
                    });
                }
            }
            kv_write(&tx, &bucket, &key, &[], true)?;
            tx.commit().map_err(sql("kv delete"))?;
            Ok(())
        })
        .await
    }
}

impl ObjectStore for Embedded {
    async fn object_open(&self, bucket: &str) -> Result<(), DurableError> {
        check_name("object bucket", bucket, false)?;
        let bucket = bucket.to_owned();
        self.call("object open", move |conn, _| {
            conn.execute(
                "INSERT OR IGNORE INTO object_buckets(bucket) VALUES (?1)",
                [&bucket],
            )
            .map_err(sql("object open"))?;
            Ok(())
        })
        .await
    }

    async fn object_put(
        &self,
        bucket: &str,
        name: &str,
        data: Vec<u8>,
    ) -> Result<(), DurableError> {
        let (bucket, name) = (bucket.to_owned(), name.to_owned());
        self.call("object put", move |conn, _| {
            let known: Option<String> = conn
                .query_row(
                    "SELECT bucket FROM object_buckets WHERE bucket = ?1",
                    [&bucket],
                    |row| row.get(0),
                )
                .optional()
                .map_err(sql("object put"))?;
            if known.is_none() {
                return Err(DurableError::NotFound {
                    what: format!("object bucket {bucket} (call object_open first)"),
                });
            }
            conn.execute(
                "INSERT INTO objects(bucket, name, data) VALUES (?1, ?2, ?3)
                 ON CONFLICT(bucket, name) DO UPDATE SET data = excluded.data",
                params![bucket, name, data],
            )
            .map_err(sql("object put"))?;
            Ok(())
        })
        .await
    }

    async fn object_get(&self, bucket: &str, name: &str) -> Result<Option<Vec<u8>>, DurableError> {
        let (bucket, name) = (bucket.to_owned(), name.to_owned());
        self.call("object get", move |conn, _| {
            conn.query_row(
                "SELECT data FROM objects WHERE bucket = ?1 AND name = ?2",
                [&bucket, &name],
                |row| row.get(0),
            )
            .optional()
            .map_err(sql("object get"))
        })
        .await
    }
}
